package main

import (
	"context"
	"fmt"
)

// deleted is the outcome of deleting one job or object, as --json prints it.
type deleted struct {
	Kind  string `json:"kind"` // job, object, worker or token
	ID    string `json:"id"`
	Error string `json:"error,omitempty"`
}

func runDelete(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("delete", "OBJECT...  |  braid delete --job JOB...", e)
	var cf clientFlags
	cf.register(fs, e)
	jobs := fs.Bool("job", false, "delete the finished jobs named, not objects (cancel a running job first)")
	if err := parseArgs(fs, args, -1); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		kind, resolve, del := "object", s.objectID, s.DeleteObject
		if *jobs {
			kind, resolve, del = "job", s.jobID, s.DeleteJob
		}
		return eachRemoved(e, cf.json, "deleted", fs.Args(), printDeleted, func(arg string) deleted {
			d := deleted{Kind: kind, ID: arg}
			id, err := resolve(ctx, arg)
			if err == nil {
				d.ID = id
				err = del(ctx, id)
			}
			if err != nil {
				d.Error = err.Error()
			}
			return d
		})
	})
}

// removeArgs is a command that removes each of its arguments with remove:
// it parses the client flags, wants at least one argument, and prints as
// eachRemoved does. kind names what an argument is ("token").
func removeArgs(ctx context.Context, name, synopsis, kind, verb string, args []string, e *env,
	print func(*env, deleted), remove func(context.Context, session, string) error, reason func(error) string) error {
	fs := newFlagSet(name, synopsis, e)
	var cf clientFlags
	cf.register(fs, e)
	if err := parseArgs(fs, args, -1); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		return eachRemoved(e, cf.json, verb, fs.Args(), print, func(arg string) deleted {
			d := deleted{Kind: kind, ID: arg}
			if err := remove(ctx, s, arg); err != nil {
				d.Error = reason(err)
			}
			return d
		})
	})
}

// eachRemoved removes each of args with remove and prints each outcome as
// it comes, or with --json all of them at the end; it fails if any was not
// removed (verb says how: "deleted", "removed").
func eachRemoved(e *env, asJSON bool, verb string, args []string, print func(*env, deleted), remove func(string) deleted) error {
	var out []deleted
	failed := 0
	for _, arg := range args {
		d := remove(arg)
		if d.Error != "" {
			failed++
		}
		out = append(out, d)
		if !asJSON {
			print(e, d)
		}
	}
	if asJSON {
		if err := printJSON(e.stdout, out); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d not %s", failed, len(out), verb)
	}
	return nil
}

// printDeleted prints what was deleted on stdout, and what was not on
// stderr.
func printDeleted(e *env, d deleted) {
	if d.Error != "" {
		fmt.Fprintf(e.stderr, "braid delete: %s %s: %s\n", d.Kind, d.ID, d.Error)
		return
	}
	fmt.Fprintf(e.stdout, "deleted %s %s\n", d.Kind, d.ID)
}
