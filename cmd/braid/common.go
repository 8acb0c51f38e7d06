package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/sctp"
)

// clientFlags are the flags every client command shares.
type clientFlags struct {
	server string
	token  string
	// envToken is $BRAID_TOKEN; cfgToken and cfgServer are the
	// configuration file's.
	envToken, cfgToken, cfgServer string
	json                          bool
	timeout                       timeoutFlag
	cfgErr                        error // the configuration file could not be read
	trust                         trustFlags
}

// trustFlags say which server certificates a client trusts: --ca and
// --ca-fingerprint, shared by the client commands and the worker.
type trustFlags struct {
	ca, fingerprint       string // the flags
	envCA, envFingerprint string // $BRAID_CA..., else the configuration file's
}

func (tf *trustFlags) register(fs *flag.FlagSet, e *env, cfg clientConfig) {
	tf.envCA = cmp.Or(e.getenv("BRAID_CA"), cfg.ca)
	tf.envFingerprint = cmp.Or(e.getenv("BRAID_CA_FINGERPRINT"), cfg.caFP)
	fs.StringVar(&tf.ca, "ca", "",
		"trust an HTTPS server whose certificate this CA `file` (PEM) signed, e.g. the server's DATA/tls/ca.pem (default $BRAID_CA, else the configuration file's)")
	fs.StringVar(&tf.fingerprint, "ca-fingerprint", "",
		"trust an HTTPS server whose certificate chain holds the CA with this `sha256:HEX` fingerprint, as the server logs it (default $BRAID_CA_FINGERPRINT, else the configuration file's)")
}

// config is the tls.Config the flags ask for (nil: the system's roots). A
// flag wins over both settings from the environment or the file: --ca
// alone is not overridden by a fingerprint from there.
func (tf *trustFlags) config() (*tls.Config, error) {
	if tf.ca != "" || tf.fingerprint != "" {
		return client.TLSConfig(tf.ca, tf.fingerprint)
	}
	return client.TLSConfig(tf.envCA, tf.envFingerprint)
}

// defaultTimeout is a client command's --timeout unless it waits for a job.
const defaultTimeout = time.Minute

func (c *clientFlags) register(fs *flag.FlagSet, e *env) {
	cfg, err := loadConfig(e.getenv)
	c.cfgErr = err
	def := cmp.Or(e.getenv("BRAID_SERVER"), cfg.server, client.DefaultServer)
	fs.StringVar(&c.server, "server", def, "server URL ($BRAID_SERVER, else the configuration file's server)")
	// The token is not the flag's default: --help would print it. The
	// configuration file's token goes only to the file's server (or to any,
	// if the file names none), never to another --server.
	c.envToken = e.getenv("BRAID_TOKEN")
	c.cfgToken, c.cfgServer = cfg.token, cfg.server
	fs.StringVar(&c.token, "token", "", "the `token` to show the server (default $BRAID_TOKEN, else the configuration file's token)")
	c.trust.register(fs, e, cfg)
	fs.BoolVar(&c.json, "json", false, "print JSON for scripts; errors too, on stderr: {\"error\": ..., \"code\": ...}")
	e.json = &c.json
	fs.Var(&c.timeout, "timeout", "give up after this `duration` (e.g. 30s, 10m; 0 means never); until then ride through\n"+
		"a server that is unreachable, e.g. restarting (default 1m, but never for wait and submit --wait)")
}

// tokenFor is the token to show c.server: --token, else $BRAID_TOKEN,
// else the configuration file's if that is the file's server.
func (c *clientFlags) tokenFor() string {
	if t := cmp.Or(c.token, c.envToken); t != "" {
		return t
	}
	if c.cfgServer == "" || strings.TrimRight(c.cfgServer, "/") == strings.TrimRight(c.server, "/") {
		return c.cfgToken
	}
	return ""
}

// session is what a client command's body works with: a client that rides
// through a server that is away, and the status line that says so.
type session struct {
	*client.Client
	line *statusLine
}

// run runs a client command's body within its --timeout, def if none was
// given (0: no limit). Until then the client rides through a server that
// is away, and says so on stderr.
func (c *clientFlags) run(ctx context.Context, e *env, def time.Duration, body func(context.Context, session) error) error {
	d := c.timeout.or(def)
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if c.cfgErr != nil {
		return c.cfgErr
	}
	tc, err := c.trust.config()
	if err != nil {
		return err
	}
	cl := client.New(c.server).WithToken(c.tokenFor()).WithTLS(tc)
	line := newStatusLine(e.stderr, cl.URL())
	cl = cl.WithRetry(client.Retry{For: math.MaxInt64, Notify: line.notify, Recovered: line.recovered})
	err = body(ctx, session{cl, line})
	line.end()
	if c.tokenFor() == "" {
		err = tokenHint(err)
	}
	return explain(ctx, err, d)
}

// localAdminToken is where `braid server` run here with its default --data
// writes its first admin token.
var localAdminToken = filepath.Join("braid-data", api.AdminTokenFile)

// tokenHint adds to a server's refusal of a call that showed no token
// where the token of a server started in this directory is. The CLI does
// not send that token by itself: the server at --server may be another.
func tokenHint(err error) error {
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeUnauthorized {
		return err
	}
	if _, serr := os.Stat(localAdminToken); serr != nil {
		return err
	}
	msg := fmt.Sprintf("%v\n(%s is here: if its server is the one at --server, export BRAID_TOKEN=$(cat %s))", err, localAdminToken, localAdminToken)
	return &hinted{msg, err}
}

// explain says what a client command's error means to its user: that no
// server answered and how to name another, that --timeout ran out.
func explain(ctx context.Context, err error, timeout time.Duration) error {
	if err == nil {
		return nil
	}
	gaveUp := timeout > 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil
	var ns *client.NoServerError
	switch {
	case errors.As(err, &ns):
		msg := fmt.Sprintf("no braid server at %s (set --server or $BRAID_SERVER): %s", ns.URL, client.DialReason(ns.Err))
		if gaveUp {
			msg += fmt.Sprintf("; gave up after --timeout %v", timeout)
		}
		return &hinted{msg, err}
	case gaveUp:
		return fmt.Errorf("gave up after --timeout %v: %w", timeout, err)
	}
	return err
}

// hinted is an error told in other words than err's own.
type hinted struct {
	msg string
	err error
}

func (h *hinted) Error() string { return h.msg }
func (h *hinted) Unwrap() error { return h.err }

// timeoutFlag is --timeout: a duration, or not given.
type timeoutFlag struct {
	d   time.Duration
	set bool
}

func (t *timeoutFlag) String() string {
	if !t.set {
		return ""
	}
	return t.d.String()
}

func (t *timeoutFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 30s or 10m, or 0 for no limit")
	}
	t.d, t.set = d, true
	return nil
}

// or is the timeout given, else def.
func (t *timeoutFlag) or(def time.Duration) time.Duration {
	if t.set {
		return t.d
	}
	return def
}

// printJSON prints v as indented JSON for scripts and people alike: < > &
// stay as they are (json's default escapes them for HTML).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// secretFlags read the cluster secret from --secret-file or $BRAID_SECRET.
// --secret is refused: a process's command line is readable by every
// local user (/proc/PID/cmdline, ps) and by the scripts a worker runs.
type secretFlags struct {
	secret, file string
}

func (s *secretFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.secret, "secret", "", "refused: the command line is public (ps, /proc); give --secret-file or $BRAID_SECRET")
	fs.StringVar(&s.file, "secret-file", "", "read the cluster secret from this file (or set $BRAID_SECRET)")
}

// errSecretOnCommandLine is the usage error for --secret.
var errSecretOnCommandLine = usageErrorf("--secret puts the cluster secret on the command line, where every local user can read it " +
	"(ps, /proc/PID/cmdline): write it to a file only you can read and give --secret-file FILE, or set $BRAID_SECRET")

func (s *secretFlags) value(e *env) ([]byte, error) {
	switch {
	case s.secret != "":
		return nil, errSecretOnCommandLine
	case s.file != "":
		b, err := os.ReadFile(s.file)
		if err != nil {
			return nil, fmt.Errorf("read secret: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return nil, fmt.Errorf("secret file %s is empty", s.file)
		}
		return []byte(v), nil
	case e.getenv("BRAID_SECRET") != "":
		return []byte(e.getenv("BRAID_SECRET")), nil
	}
	return nil, nil
}

// logFlags choose the log level and format.
type logFlags struct {
	level string
	json  bool
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn, error")
	fs.BoolVar(&l.json, "log-json", false, "log as JSON lines")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if l.json {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// registerTransportFlags adds the flags that tune transports.
func registerTransportFlags(fs *flag.FlagSet, o *transports.Options) {
	o.SCTPCC = sctp.CCAuto
	fs.StringVar(&o.SCTPStack, "sctp-stack", transports.StackAuto,
		"SCTP implementation: auto (kernel SCTP between hosts that have it, userspace over UDP with the others), kernel or user")
	fs.Func("tcp-cc", "tcp, tcpn and ptcp: the TCP congestion control of every connection (Linux), e.g. reno, cubic or bbr: any the kernel has\n"+
		"for root, else those net.ipv4.tcp_allowed_congestion_control lists; empty (the default): the host's own (net.ipv4.tcp_congestion_control)", func(v string) error {
		if !validCCName(v) {
			return fmt.Errorf("want a congestion control name such as cubic or bbr, not %q", v)
		}
		o.TCPCC = v
		return nil
	})
	fs.IntVar(&o.IdleFactor, "idle-factor", 0, fmt.Sprintf("tcp, tcpn and ptcp: an association that has carried nothing for the liveness bound, with no unit under way,\n"+
		"is watched with this many liveness bounds (the smaller of the two sides' offers, at most %d) and pinged every half of that;\n"+
		"0: %d; -1: none (pinged every half liveness bound while idle, as before)", transport.MaxIdleFactor, transport.DefaultIdleFactor))
	fs.BoolVar(&o.MPTCP, "mptcp", false, "run tcp, tcpn and ptcp over Multipath TCP (Linux) where both ends' kernels take it, plain TCP otherwise;\nthe kernel's path manager ('ip mptcp') decides which paths its subflows take")
	fs.Func("sctp-cc", fmt.Sprintf("sctp (userspace stack): congestion control towards peers on other hosts: reno (RFC 9260's, standing for --sctp-flows reno flows),\n"+
		"cubic (RFC 9438), bbr (BBRv1, as Linux's), bbr-cubic (bbr bounded by a CUBIC window where a queue stands: it shares a path with CUBIC flows)\n"+
		"or auto (the default: %s, or reno with a fixed --sctp-flows); a peer on this host always gets reno", sctp.DefaultCC), func(v string) error {
		if !slices.Contains(sctp.CCNames, v) {
			return fmt.Errorf("want %s, not %q", strings.Join(sctp.CCNames, ", "), v)
		}
		o.SCTPCC = v
		return nil
	})
	fs.Func("sctp-flows", fmt.Sprintf("sctp (userspace stack): how many reno flows each association's congestion control stands for, 1 to %d,\n", sctp.MaxFlows)+
		fmt.Sprintf("or auto (the default: tuned per association between %d and %d while it sends; one to a peer on this host). Under random loss N flows carry about N times one", sctp.MinTunedFlows, sctp.MaxFlows), func(v string) error {
		n, err := parseCount(v, sctp.MaxFlows)
		o.SCTPFlows = n
		return err
	})
	onByDefault(fs, "sctp-pacing", "sctp (userspace stack): on (the default) spreads new data over the round trip at 1.25 times what the window carries in one,\n"+
		"so that a burst of acknowledgements does not send a burst into the bottleneck's queue; off sends as soon as the window opens (a peer on the same host is never paced)", &o.SCTPUnpaced)
	onByDefault(fs, "sctp-hystart", "sctp (userspace stack): on (the default) ends slow start when the round trip time shows the bottleneck's queue filling (HyStart++, RFC 9406),\n"+
		"before it overflows; off leaves slow start to run until a packet is lost (a peer on the same host never uses it)", &o.SCTPNoHyStart)
	fs.Func("ptcp-stripes", fmt.Sprintf("ptcp: TCP connections per association this side recommends and sends on, 1 to %d (the two sides' offers decide how many open),\n", ptcp.MaxStripes)+
		fmt.Sprintf("or auto (the default: recommend %d, send on as many as the network shows it needs, at least %d;\n"+
			"recommend and keep %[2]d to a loopback peer, on other systems than Linux, and with --mptcp)", ptcp.MaxStripes, ptcp.AutoStartStripes), func(v string) error {
		n, err := parseCount(v, ptcp.MaxStripes)
		o.PTCP.RecStripes = n
		return err
	})
	fs.StringVar(&o.PTCP.Driver, "ptcp-driver", ptcp.DriverPollAll, "ptcp: how blocks are spread over the connections: pollall (whichever can take data now) or rr (in turn)")
	fs.Func("ptcp-routes", "ptcp, dialing side: comma-separated other hosts of every listener dialed, one per further path, on the dialed port;\nthe connections go to the dialed host and to these in turn (a worker's --advertise-routes take their place)", func(s string) error {
		o.PTCP.Routes = splitList(s)
		return nil
	})
	fs.Func("data-plane-tls", "encryption keyed to the cluster secret: TLS 1.3 on tcp, tcpn and ptcp, DTLS on sctp (its userspace stack). auto (between hosts,\n"+
		"not on loopback; the default), on or off (trusted networks; a listener still takes it). quic is always encrypted", func(s string) error {
		m, err := transport.ParseTLSMode(s)
		o.DataPlaneTLS = m
		return err
	})
}

// validCCName reports whether s could name a kernel congestion control
// (empty: the host's default).
func validCCName(s string) bool {
	if len(s) > 15 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parseCount reads --sctp-flows and --ptcp-stripes: "auto" is 0, else a
// count from 1 to most.
func parseCount(v string, most int) (int, error) {
	if v == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, fmt.Errorf("want auto or a count from 1 to %d, not %q", most, v)
	}
	return n, nil
}

// onByDefault adds a flag that takes on or off, on by default; off sets
// *off.
func onByDefault(fs *flag.FlagSet, name, usage string, off *bool) {
	fs.Func(name, usage, func(v string) error {
		switch v {
		case "on":
			*off = false
		case "off":
			*off = true
		default:
			return fmt.Errorf("want on or off")
		}
		return nil
	})
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
