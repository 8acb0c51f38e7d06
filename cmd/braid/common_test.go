package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ptcp"
)

// parseTransportFlags parses args with the transport flags alone.
func parseTransportFlags(args ...string) (transports.Options, error) {
	var o transports.Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	registerTransportFlags(fs, &o)
	return o, fs.Parse(args)
}

// TestTransportFlags: the on/off flags default to on, take on and off and
// nothing else; and the arguments a bench gives its child processes
// (transports.Options.Args) parse back to the settings they came from, so that a
// child runs what the bench was told.
func TestTransportFlags(t *testing.T) {
	o, err := parseTransportFlags()
	if err != nil || o.SCTPUnpaced || o.SCTPNoHyStart {
		t.Fatalf("defaults: %+v, %v; want pacing and HyStart++ on", o, err)
	}
	o, err = parseTransportFlags("--sctp-pacing", "off", "--sctp-hystart", "off")
	if err != nil || !o.SCTPUnpaced || !o.SCTPNoHyStart {
		t.Fatalf("off: %+v, %v", o, err)
	}
	o, err = parseTransportFlags("--sctp-pacing", "off", "--sctp-pacing", "on", "--sctp-hystart", "on")
	if err != nil || o.SCTPUnpaced || o.SCTPNoHyStart {
		t.Fatalf("on again: %+v, %v", o, err)
	}
	if _, err := parseTransportFlags("--sctp-cc", "vegas"); err == nil || !strings.Contains(err.Error(), "auto, reno, cubic, bbr") {
		t.Errorf("--sctp-cc vegas: %v, want an error that lists the choices", err)
	}
	if _, err := parseTransportFlags("--tcp-cc", "Cubic!"); err == nil || !strings.Contains(err.Error(), "congestion control name") {
		t.Errorf("--tcp-cc Cubic!: %v, want an error that asks for a name", err)
	}
	for _, name := range []string{"sctp-pacing", "sctp-hystart"} {
		if _, err := parseTransportFlags("--"+name, "maybe"); err == nil || !strings.Contains(err.Error(), "want on or off") {
			t.Errorf("--%s maybe: %v, want an error that says on or off", name, err)
		}
	}

	for _, want := range []transports.Options{
		{SCTPStack: transports.StackAuto, DataPlaneTLS: transport.TLSAuto, SCTPCC: "auto", PTCP: ptcp.Config{Driver: ptcp.DriverPollAll}},
		{SCTPStack: transports.StackAuto, DataPlaneTLS: transport.TLSAuto, SCTPCC: "cubic", PTCP: ptcp.Config{Driver: ptcp.DriverPollAll}},
		{SCTPStack: "user", DataPlaneTLS: transport.TLSOff, SCTPCC: "reno", SCTPFlows: 3, SCTPUnpaced: true, SCTPNoHyStart: true, MPTCP: true, TCPCC: "cubic", IdleFactor: -1,
			PTCP: ptcp.Config{RecStripes: 4, Driver: ptcp.DriverRR}},
	} {
		got, err := parseTransportFlags(want.Args()...)
		if err != nil {
			t.Fatalf("Args of %+v: %v", want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Args round trip:\n got %+v\nwant %+v", got, want)
		}
	}
}
