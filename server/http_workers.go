package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/userop"
)

// badRuntime reports a runtime a worker cannot advertise.
func badRuntime(r string) bool {
	name, ok := strings.CutPrefix(r, "exec:")
	if !ok {
		name, ok = strings.CutPrefix(r, "exec-net:")
	}
	return r != api.OpWasm && (!ok || !userop.ValidInterpreter(name))
}

func validateWorker(info *api.WorkerInfo) error {
	switch {
	case !api.ValidWorkerName(info.Name):
		return badRequest(api.CodeBadParameter, "worker name %q: want 1 to %d characters, no spaces, slashes or control characters", info.Name, api.MaxWorkerName)
	case info.MaxThreads < 1 || info.MaxThreads > transport.MaxStreams:
		return badRequest(api.CodeBadParameter, "max_threads %d: want 1 to %d", info.MaxThreads, transport.MaxStreams)
	case len(info.Endpoints) == 0:
		return badRequest(api.CodeBadParameter, "worker %s lists no data-plane endpoints", info.Name)
	case len(info.Ops) == 0:
		return badRequest(api.CodeBadParameter, "worker %s lists no operations", info.Name)
	case len(info.Runtimes) > 16 || slices.ContainsFunc(info.Runtimes, badRuntime):
		return badRequest(api.CodeBadParameter, "runtimes %q: want %q, \"exec:NAME\" and \"exec-net:NAME\" entries, at most 16", info.Runtimes, api.OpWasm)
	case info.HoldBytes < 0:
		return badRequest(api.CodeBadParameter, "hold_bytes %d: want the bytes of unit inputs the worker can hold, or 0 to say nothing", info.HoldBytes)
	case min(info.Cores, info.ClockMHz, info.FreeThreads, info.LeasedThreads) < 0 || min(info.RAMBytes, info.DiskFreeBytes) < 0:
		return badRequest(api.CodeBadParameter, "cores, clock_mhz, ram_bytes, disk_free_bytes, free_threads and leased_threads are counts: none may be negative")
	case info.InfoURL != "" && !infoURLRE.MatchString(info.InfoURL):
		return badRequest(api.CodeBadParameter, "info_url %q: want an http:// or https:// URL such as http://10.0.0.5:7171, or none", info.InfoURL)
	}
	for _, ep := range info.Endpoints {
		if ep.Addr == "" || ep.Transport == "" {
			return badRequest(api.CodeBadParameter, "endpoint %+v: want transport and addr", ep)
		}
		if err := validateRoutes(ep.Routes); err != nil {
			return badRequest(api.CodeBadParameter, "endpoint %s %s: %v", ep.Transport, ep.Addr, err)
		}
	}
	return nil
}

// infoURLRE is what a worker's info_url may be, as the OpenAPI document
// says: http or https, a host (a name, an address, or an IPv6 address in
// brackets), a port, and a path of printable ASCII.
var infoURLRE = regexp.MustCompile(`^https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?(/[!-~]*)?$`)

// validateRoutes checks an endpoint's routes: hosts, without ports.
func validateRoutes(routes []string) error {
	if len(routes) > api.MaxRoutes {
		return fmt.Errorf("%d routes: want at most %d", len(routes), api.MaxRoutes)
	}
	for _, r := range routes {
		if _, err := netip.ParseAddr(r); err == nil {
			continue
		}
		if r == "" || utf8.RuneCountInString(r) > 253 || strings.ContainsAny(r, ":/ \t\n[]@") {
			return fmt.Errorf("route %q: want a host (an IP address or a name), without a port", r)
		}
	}
	return nil
}

// handleRegister serves POST /v1/workers and PUT /v1/workers/{name}: both
// register the worker or replace its figures. A registration under a name
// that another live process holds is refused with 409 (names.go); deciding
// that may take up to two heartbeat intervals.
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	var info api.WorkerInfo
	err := readJSON(w, r, &info)
	if name := r.PathValue("name"); err == nil && name != "" && name != info.Name {
		err = badRequest(api.CodeBadRequest, "path names worker %q but body names %q", name, info.Name)
	}
	if err == nil {
		err = validateWorker(&info)
	}
	if err == nil {
		err = s.claim(r.Context(), info)
	}
	if err != nil {
		s.log.Warn("worker registration refused", "worker", info.Name, "from", r.RemoteAddr, "reason", err)
		writeError(w, err)
		return
	}
	writeJSON(w, 200, api.Registration{Name: info.Name, HeartbeatMS: int(s.disp.roster.interval().Milliseconds()), ServerID: s.ID()})
}

// claim registers info, waiting if another process holds its name until
// it is known whether that one is alive (dispatcher.claim).
func (s *Server) claim(ctx context.Context, info api.WorkerInfo) error {
	asked := time.Now()
	var hw *holderWait
	for {
		var err error
		if e := s.disp.do(ctx, func() { hw, err = s.disp.claim(info, asked, hw) }); e != nil {
			return e
		}
		if hw == nil {
			return err
		}
		if err := hw.await(ctx); err != nil {
			return err
		}
	}
}

// await waits for what w names, or ctx's end.
func (w *holderWait) await(ctx context.Context) error {
	t := time.NewTimer(w.wait)
	defer t.Stop()
	select {
	case <-w.beat:
	case <-w.ended:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// workerEpoch reads the ?epoch= a worker names its process with (0 if
// none).
func workerEpoch(r *http.Request) (uint64, error) {
	v := r.URL.Query().Get("epoch")
	if v == "" {
		return 0, nil
	}
	e, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badRequest(api.CodeBadParameter, "epoch %q: want a decimal number", v)
	}
	return e, nil
}

// handleHeartbeat serves POST /v1/workers/{name}/heartbeat[?epoch=N]. The
// roster takes a live worker's heartbeat by itself; the loop handles the
// others (unknown, superseded, down, or holding a name a registration
// waits for).
func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request) {
	s.metrics.heartbeats.Inc()
	name, known := r.PathValue("name"), false
	epoch, err := workerEpoch(r)
	if err == nil {
		if answer := s.disp.roster.beat(name, epoch, time.Now()); answer != nil {
			writeBeat(w, answer)
			return
		}
	}
	answer := *s.disp.roster.answer.Load()
	if err == nil {
		if e := s.disp.do(r.Context(), func() {
			if known, err = s.disp.heartbeat(name, epoch); known && err == nil {
				answer = s.disp.roster.answerFor(s.disp.workers[name].live)
			}
		}); e != nil {
			err = e
		}
	}
	if err == nil && !known {
		err = &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("worker %q is not registered; register again", name)}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeBeat(w, answer)
}

// writeBeat answers a heartbeat with an api.Beat, already encoded.
func writeBeat(w http.ResponseWriter, answer []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(answer)
}

// handleDeregister serves DELETE /v1/workers/{name}[?epoch=N]: a worker
// deregistering itself names its epoch; without one (`braid workers rm`)
// only a worker that is down is removed.
func (s *Server) handleDeregister(w http.ResponseWriter, r *http.Request) {
	name, known := r.PathValue("name"), false
	epoch, err := workerEpoch(r)
	if err == nil {
		if e := s.disp.do(r.Context(), func() { known, err = s.disp.deregister(name, epoch) }); e != nil {
			err = e
		}
	}
	if err == nil && !known {
		err = &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("worker %q is not registered", name)}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleListWorkers serves GET /v1/workers, by name, a page at a time
// (paging.go), from the records the loop publishes (views.go): it never
// waits for the loop.
func (s *Server) handleListWorkers(w http.ResponseWriter, r *http.Request) {
	p, err := readPage(r, maxPage)
	if err != nil {
		writeError(w, err)
		return
	}
	out, next := s.disp.views.workersPage(p)
	if next != "" {
		setNext(w, r, p, next)
	}
	writeJSON(w, 200, out)
}

// handleRefresh asks the worker itself for its current figures (its GET
// /v1/info), records them, and returns the worker as now known.
func (s *Server) handleRefresh(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var infoURL string
	known := false
	if err := s.disp.do(r.Context(), func() {
		if wc := s.disp.workers[name]; wc != nil {
			known, infoURL = true, wc.info.InfoURL
		}
	}); err != nil {
		writeError(w, err)
		return
	}
	switch {
	case !known:
		writeError(w, &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("worker %q is not registered", name)})
		return
	case infoURL == "":
		writeError(w, conflict("worker %q registered without an info_url, so there is no one to ask; it must register again with one", name))
		return
	}
	info, err := fetchInfo(r.Context(), infoURL)
	if err == nil && info.Name != name {
		err = fmt.Errorf("%s answers as worker %q", infoURL, info.Name)
	}
	if err == nil {
		err = validateWorker(&info)
	}
	if err != nil {
		writeError(w, &apiError{status: 502, code: api.CodeUnavailable, msg: fmt.Sprintf("asking worker %s for its figures: %v", name, err)})
		return
	}
	var out api.Worker
	if err := s.claim(r.Context(), info); err != nil {
		writeError(w, err)
		return
	}
	if err := s.disp.do(r.Context(), func() {
		if wc := s.disp.workers[name]; wc != nil {
			out = s.disp.workerStatus(wc)
		}
	}); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, 200, out)
}

// fetchInfo GETs a worker's /v1/info.
func fetchInfo(ctx context.Context, base string) (api.WorkerInfo, error) {
	var info api.WorkerInfo
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/info", nil)
	if err != nil {
		return info, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return info, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("GET /v1/info: %s", resp.Status)
	}
	return info, json.NewDecoder(io.LimitReader(resp.Body, maxJSONBody)).Decode(&info)
}
