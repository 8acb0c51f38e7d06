package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/worker"
)

func runWorker(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("worker", "--server URL [--server URL2 ...] [--threads N] [--listen ADDR] [--transport NAME] [--name NAME]", e)
	var servers multiFlag
	fs.Var(&servers, "server", "server URL to register with (repeatable; default $BRAID_SERVER)")
	threads := fs.Int("threads", 0, fmt.Sprintf("processing threads, 1 to %d (default: number of CPUs)", transport.MaxStreams))
	listen := fs.String("listen", "127.0.0.1:0", "data-plane address to listen on")
	infoListen := fs.String("info-listen", "127.0.0.1:0", "HTTP address serving GET /v1/info")
	metricsAddr := fs.String("metrics-addr", "", "HTTP address serving GET /metrics, the worker's Prometheus metrics (docs/metrics.md), e.g. 127.0.0.1:9101; off when empty")
	tname := fs.String("transport", transports.Default, "data-plane transport: "+strings.Join(transports.Names, ", "))
	name := fs.String("name", "", "worker name (default: hostname-pid)")
	opsList := fs.String("ops", "", "comma-separated operations this worker runs (default: all)")
	advertise := fs.String("advertise", "", "data-plane address to announce to servers, if they must reach this worker through another address than --listen (NAT, relay)")
	routes := fs.String("advertise-routes", "", "other hosts of this worker, comma-separated, one per further network path, at which servers reach the data-plane\nlistener on the same port (bind it to all of them: --listen 0.0.0.0:PORT); ptcp sends some of its connections through them")
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM or Ctrl-C, wait this long for running units to finish (a second signal stops at once)")
	leaseIdle := fs.Duration("lease-idle", time.Second, "a server that stops asking for threads keeps them this long before they go to other servers")
	noWasm := fs.Bool("no-wasm", false, "do not run WebAssembly user operations (modules fetched from servers, run sandboxed)")
	wasmCache := fs.String("wasm-cache", defaultWasmCache(), "`DIR` keeping user operations' compiled code across restarts (empty: compile in memory)")
	allowExec := fs.String("allow-exec", "", "run script operations of these interpreters, comma-separated (python3,sh), found on PATH, or NAME=/PATH;\neach unit in a sandbox of its own (a user id, namespaces, a cgroup; Linux, root; docs/user-ops.md). Default: none")
	execNetwork := fs.Bool("exec-network", false, "give the worker's network to script units whose operation asks for it (braid op add --network); others have none")
	wasmCacheMax := fs.Int64("wasm-cache-max", 1<<30, "bound on --wasm-cache in `BYTES`; the least recently loaded code goes first")
	hold := fs.Int64("hold", 0, "`BYTES` of unit inputs this worker can hold at once, shared equally by its servers, which send no more (0: a quarter of the memory the process could have, at least 64 MiB, re-read every 30 s; -1: no limit beyond unit windows)")
	liveness := fs.Duration("liveness", 3*time.Second, "a server silent this long on an association is taken for dead and its units are dropped (the smaller of the two ends' values applies)")
	var sec secretFlags
	var logs logFlags
	var topts transports.Options
	var prof pprofFlag
	var trust trustFlags
	sec.register(fs)
	logs.register(fs)
	prof.register(fs)
	cfg, cfgErr := loadConfig(e.getenv)
	trust.register(fs, e, cfg)
	registerTransportFlags(fs, &topts)
	if err := parse(fs, args); err != nil {
		return err
	}
	secret, err := sec.value(e)
	if err != nil {
		return err
	}
	if cfgErr != nil {
		return cfgErr
	}
	tc, err := trust.config()
	if err != nil {
		return err
	}
	if err := checkThreads(fs, *threads); err != nil {
		return err
	}
	if len(servers) == 0 {
		if v := e.getenv("BRAID_SERVER"); v != "" {
			servers = append(servers, v)
		}
	}
	if len(servers) == 0 {
		return usageErrorf("no server to register with: give --server URL (or set $BRAID_SERVER)")
	}
	log, err := logs.logger(e.stderr)
	if err != nil {
		return err
	}
	topts.Logger = log
	if err := prof.start(ctx, log); err != nil {
		return err
	}
	if secret == nil {
		return usageErrorf("a cluster secret is required: --secret-file FILE or $BRAID_SECRET")
	}
	t, err := transports.New(*tname, topts)
	if err != nil {
		return err
	}
	var opNames []string
	if *opsList != "" {
		opNames = strings.Split(*opsList, ",")
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	if tc != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tc
		hc.Transport = tr
	}
	w, err := worker.New(worker.Config{Name: *name, Servers: servers, Threads: *threads, Transport: t,
		Listen: *listen, Advertise: *advertise, Routes: splitList(*routes), InfoListen: *infoListen, MetricsListen: *metricsAddr, Secret: secret, Ops: opNames, Logger: log,
		DrainTimeout: *drain, LeaseIdle: *leaseIdle, Liveness: *liveness, HTTPClient: hc,
		NoWasm: *noWasm, WasmCache: *wasmCache, WasmCacheMax: *wasmCacheMax, AllowExec: splitList(*allowExec), ExecNetwork: *execNetwork, HoldBytes: *hold})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// defaultWasmCache is $XDG_CACHE_HOME/braid/wasm (~/.cache/braid/wasm),
// or none when there is no cache directory.
func defaultWasmCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "braid", "wasm")
}

// checkThreads refuses a --threads given out of range; left out, the
// worker runs one thread per CPU.
func checkThreads(fs *flag.FlagSet, n int) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "threads" })
	if given && (n < 1 || n > transport.MaxStreams) {
		return usageErrorf("--threads %d: want 1 to %d processing threads (leave it out for one per CPU)", n, transport.MaxStreams)
	}
	return nil
}
