package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"

	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/server"
)

func runServer(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("server", "[--listen ADDR] [--data DIR] [--secret-file FILE]", e)
	listen := fs.String("listen", "127.0.0.1:7070", "HTTP control-plane address")
	data := fs.String("data", "braid-data", "directory for objects and job state")
	name := fs.String("name", "braid-server", "this server's name, as workers see it")
	maxObj := fs.Int64("max-object", 1<<30, "largest object an upload may create, in bytes")
	uploadIdle := fs.Duration("upload-idle-timeout", 30*time.Second, "an upload that sends no bytes this long fails with 408")
	hbTimeout := fs.Duration("heartbeat-timeout", 5*time.Second, "a worker silent this long loses its units")
	forgetWorkers := fs.Duration("forget-workers-after", server.DefaultForgetWorkersAfter,
		"remove a worker from the list once it has been down (no heartbeat) this long (negative: never; braid workers rm removes one at once)")
	window := fs.Int("window", 0, fmt.Sprintf("units in flight per stream to start with, 1 to %d (0: the scheduler's 2); a worker's feedback\n"+
		"grows it while the worker waits for input (a long path), up to %d", server.MaxWindow, scheduler.DefaultMaxWindow))
	byteHorizon := fs.Duration("byte-horizon", scheduler.DefaultByteHorizon, "keep at most this much of a worker's measured work, in input bytes, in flight to it (0: no budget but what each worker says it can hold)")
	retainFor := fs.Duration("retain-for", server.DefaultRetainFor, "keep a finished job (and its unit statistics) this long (negative: no age limit)")
	retainJobs := fs.Int("retain-jobs", server.DefaultRetainJobs, "keep at most this many finished jobs, removing the oldest first (negative: no limit)")
	gcGrace := fs.Duration("gc-grace", server.DefaultGCGrace, "delete objects the server wrote once no retained job has referenced them for this long (negative: never)")
	drainTimeout := fs.Duration("drain-timeout", server.DefaultDrainTimeout, "on stop, wait this long for the results of units in flight (0: do not wait)")
	auth := fs.Bool("auth", true, "clients need a token (braid token); --auth=false lets anyone who reaches --listen do anything, for trusted networks only")
	var tf serverTLSFlags
	tf.register(fs)
	liveness := fs.Duration("liveness", 3*time.Second, "a worker silent this long on its association is taken for dead and its units go elsewhere (the smaller of the two ends' values applies)")
	schedTarget := fs.Duration("sched-target", server.DefaultSchedTarget, "while the server's goroutines wait longer than this to run (p99), send fewer units at once, so that the API is answered\n"+
		"within about as long on a saturated server (0: send every unit at once)")
	maxConns := fs.Int("max-conns", 0, "control API connections open at once (0: half the open-file limit, at most 65536); past it the oldest idle one is closed, or the newcomer told 503")
	maxConnsPerSource := fs.Int("max-conns-per-source", server.DefaultMaxConnsPerSource, "control API connections open at once from one IP address (-1: only --max-conns)")
	var sec secretFlags
	var logs logFlags
	var topts transports.Options
	var prof pprofFlag
	var stf storeFlags
	stf.register(fs)
	sec.register(fs)
	logs.register(fs)
	prof.register(fs)
	registerTransportFlags(fs, &topts)
	if err := parse(fs, args); err != nil {
		return err
	}
	secret, err := sec.value(e)
	if err != nil {
		return err
	}
	if *window < 0 || *window > server.MaxWindow {
		return usageErrorf("--window %d: want 1 to %d units in flight per stream (what a stream's send queue holds), or 0 for the default",
			*window, server.MaxWindow)
	}
	if err := checkRetention(*retainFor, *retainJobs, *gcGrace); err != nil {
		return err
	}
	if *forgetWorkers == 0 {
		return usageErrorf("--forget-workers-after 0 would forget a worker as soon as it is down; give a duration, or a negative one never to forget")
	}
	if *drainTimeout == 0 {
		*drainTimeout = -1 // the library's zero is its default; on the command line 0 means 0
	}
	log, err := logs.logger(e.stderr)
	if err != nil {
		return err
	}
	topts.Logger = log
	if err := prof.start(ctx, log); err != nil {
		return err
	}
	ts, err := transports.All(topts)
	if err != nil {
		return err
	}
	if !*auth {
		log.Warn("--auth=false: the control API checks no tokens; anyone who can reach it can read, submit and delete", "listen", *listen)
	}
	tlsCfg, err := tf.config(*listen, *data, log)
	if err != nil {
		return err
	}
	cfg := server.Config{Listen: *listen, DataDir: *data, Secret: secret, Name: *name, Auth: *auth, TLS: tlsCfg,
		Transports: ts, MaxObjectSize: *maxObj, UploadIdleTimeout: *uploadIdle, HeartbeatTimeout: *hbTimeout, Window: *window, ByteHorizon: byteHorizonConfig(*byteHorizon),
		RetainFor: *retainFor, RetainJobs: *retainJobs, GCGrace: *gcGrace, DrainTimeout: *drainTimeout, Liveness: *liveness, ForgetWorkersAfter: *forgetWorkers, Logger: log,
		MaxConns: *maxConns, MaxConnsPerSource: *maxConnsPerSource, SchedTarget: schedTargetConfig(*schedTarget)}
	if err := stf.apply(&cfg, log); err != nil {
		return err
	}
	s, err := server.New(cfg)
	if err != nil {
		return err
	}
	if secret == nil {
		log.Info("no --secret given; using the data directory's secret (give workers --secret-file)",
			"secret_file", filepath.Join(*data, server.SecretFile))
	}
	return s.Run(ctx)
}

func randomSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// minGCGrace is the least --gc-grace: an output is referenced by its unit's
// record some time after it is stored (the result waits its turn on the
// dispatch loop and in a group commit), and the collector relies on a
// reference coming within a tenth of the grace.
const minGCGrace = time.Minute

// checkRetention refuses retention flags whose zero would otherwise mean
// the library's default, or that would make results vanish.
func checkRetention(retainFor time.Duration, retainJobs int, gcGrace time.Duration) error {
	switch {
	case retainFor == 0:
		return usageErrorf("--retain-for 0 would forget every job as it ends, before its client reads it; give a duration, or a negative one for no age limit")
	case retainJobs == 0:
		return usageErrorf("--retain-jobs 0 would forget every job as it ends, before its client reads it; give at least 1, or a negative number for no limit")
	case gcGrace >= 0 && gcGrace < minGCGrace:
		return usageErrorf("--gc-grace %v: want at least %v (or a negative value never to collect)", gcGrace, minGCGrace)
	}
	return nil
}

// byteHorizonConfig is server.Config.ByteHorizon for --byte-horizon d,
// where 0 (or less) turns rate-based byte budgets off.
func byteHorizonConfig(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// schedTargetConfig maps --sched-target to Config.SchedTarget: 0 (or less)
// turns the bound off.
func schedTargetConfig(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
