package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/server"
)

const tokenUsage = `Usage: braid token create --role admin|submit|read [--name N] [--expires D]
       braid token list
       braid token revoke ID...

Tokens are how clients prove who they are to a server that checks them (the
default). Roles: read sees everything and changes nothing (dashboards,
Prometheus); submit uploads objects, submits jobs, and sees and cancels its
own jobs; admin does everything, tokens included. These commands need an
admin token. A new server writes its first admin token to DATA/admin.token.

A server is one trust domain: every token, whatever its role, may list and
download every object (other tokens' uploads and job results included), and
a read token sees every job with its parameters. Give tokens only to people
who may see all of it, keep secrets out of job parameters, and run a server
per tenant where that does not hold (docs/security.md).

` + configHelp + "\n"

// runToken is `braid token create|list|revoke`.
func runToken(ctx context.Context, args []string, e *env) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprint(e.stderr, tokenUsage)
		fmt.Fprintln(e.stderr, "Flags of braid token create (list and revoke take the client flags):")
		fs, _, _ := tokenCreateFlags(e)
		fs.PrintDefaults()
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	switch args[0] {
	case "create":
		return runTokenCreate(ctx, args[1:], e)
	case "list":
		return runList(ctx, "token list", "", args[1:], e, session.Tokens, printTokens)
	case "revoke":
		return runTokenRevoke(ctx, args[1:], e)
	}
	return unknownSubcommand("token", args[0], "create", "list", "revoke")
}

// tokenCreateFlags is the flag set of `braid token create`.
func tokenCreateFlags(e *env) (*flag.FlagSet, *clientFlags, *api.TokenSpec) {
	fs := newFlagSet("token create", "--role admin|submit|read [--name N] [--expires D]", e)
	var cf clientFlags
	cf.register(fs, e)
	var spec api.TokenSpec
	fs.StringVar(&spec.Role, "role", "", "what the token may do: admin, submit or read (required)")
	fs.StringVar(&spec.Name, "name", "", "a name to know the token by in `braid token list`")
	fs.StringVar(&spec.ExpiresIn, "expires", "", "the token stops working after this `duration` (e.g. 36h, 30d; default never)")
	return fs, &cf, &spec
}

func runTokenCreate(ctx context.Context, args []string, e *env) error {
	fs, cf, spec := tokenCreateFlags(e)
	if err := parse(fs, args); err != nil {
		return err
	}
	switch spec.Role {
	case api.RoleAdmin, api.RoleSubmit, api.RoleRead:
	case "":
		return usageErrorf("token create: --role is required (admin, submit or read)")
	default:
		return usageErrorf("token create: --role %q: want admin, submit or read", spec.Role)
	}
	if spec.ExpiresIn != "" {
		if _, err := server.ParseTTL(spec.ExpiresIn); err != nil {
			return usageErrorf("token create: --expires %v", err)
		}
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		t, err := s.CreateToken(ctx, *spec)
		switch {
		case err != nil:
			return err
		case cf.json:
			return printJSON(e.stdout, t)
		}
		// The token alone on stdout, for $(braid token create ...).
		fmt.Fprintln(e.stdout, t.Token)
		fmt.Fprintf(e.stderr, "token %s, role %s%s: keep it secret; the server cannot show it again\n",
			t.ID, t.Role, expiry(t.ExpiresAt))
		return nil
	})
}

func runTokenRevoke(ctx context.Context, args []string, e *env) error {
	return removeArgs(ctx, "token revoke", "ID...", "token", "revoked", args, e, printRevoked,
		func(ctx context.Context, s session, id string) error { return s.RevokeToken(ctx, id) }, apiMessage)
}

func printRevoked(e *env, d deleted) {
	if d.Error != "" {
		fmt.Fprintf(e.stderr, "braid token revoke: %s: %s\n", d.ID, d.Error)
		return
	}
	fmt.Fprintf(e.stdout, "revoked token %s\n", d.ID)
}

func printTokens(e *env, ts []api.Token) error {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tROLE\tNAME\tCREATED\tEXPIRES")
	for _, t := range ts {
		exp := "never"
		if t.ExpiresAt != nil {
			exp = t.ExpiresAt.Local().Format(time.DateTime)
			if !time.Now().Before(*t.ExpiresAt) {
				exp += " (expired)"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Role, t.Name, t.CreatedAt.Local().Format(time.DateTime), exp)
	}
	return w.Flush()
}

func expiry(at *time.Time) string {
	if at == nil {
		return ", no expiry"
	}
	return ", expires " + at.Local().Format(time.DateTime)
}
