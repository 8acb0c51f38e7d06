package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/transports"
)

// clientFlags are the flags every client command shares.
type clientFlags struct {
	server string
	json   bool
}

func (c *clientFlags) register(fs *flag.FlagSet, e *env) {
	def := e.getenv("BRAID_SERVER")
	if def == "" {
		def = client.DefaultServer
	}
	fs.StringVar(&c.server, "server", def, "server URL ($BRAID_SERVER)")
	fs.BoolVar(&c.json, "json", false, "print JSON for scripts")
}

func (c *clientFlags) client() *client.Client { return client.New(c.server) }

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// secretFlags read the cluster secret from --secret, --secret-file or
// $BRAID_SECRET, in that order.
type secretFlags struct {
	secret, file string
}

func (s *secretFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.secret, "secret", "", "cluster secret shared by servers and workers ($BRAID_SECRET)")
	fs.StringVar(&s.file, "secret-file", "", "read the cluster secret from this file")
}

func (s *secretFlags) value(e *env) ([]byte, error) {
	switch {
	case s.secret != "":
		return []byte(s.secret), nil
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
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if l.json {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// registerTransportFlags adds the flags that tune transports.
func registerTransportFlags(fs *flag.FlagSet, o *transports.Options) {
	fs.StringVar(&o.SCTPStack, "sctp-stack", transports.StackAuto,
		"SCTP implementation: auto (kernel SCTP where it works, else userspace over UDP), kernel or user")
}
