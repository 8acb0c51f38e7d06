package server_test

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/ops/samples"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs url's /metrics and parses the text format.
func scrape(t *testing.T, base string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s/metrics: %s, Content-Type %q\n%s", base, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing %s/metrics: %v", base, err)
	}
	return string(body), fams
}

// metric finds the series of family name whose labels include the given
// name=value pairs; ok is false if there is none.
func metric(fams map[string]*dto.MetricFamily, name string, labels ...string) (*dto.Metric, bool) {
	f := fams[name]
	if f == nil {
		return nil, false
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
			}
			if !found {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

// value is a counter's or gauge's value, or a histogram's sample count.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m, ok := metric(fams, name, labels...)
	if !ok {
		t.Fatalf("no series %s%v", name, labels)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatalf("%s%v has no value", name, labels)
	return 0
}

// storeUsage counts the objects under a server data directory's store.
func storeUsage(t *testing.T, dataDir string) (objects, size int64) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(dataDir, "store", "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			objects, size = objects+1, size+fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return objects, size
}

// TestMetrics runs a job on a real cluster and checks that the server's
// and the workers' /metrics moved by what the job did.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Workers: []cluster.WorkerSpec{
		{Threads: 2, MetricsListen: "127.0.0.1:0"}, {Threads: 1, MetricsListen: "127.0.0.1:0"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Errorf("cluster close: %v", err)
		}
	})
	srvURL := cl.Server.URL()
	workerURL := map[string]string{}
	for i, w := range cl.Workers {
		workerURL[[]string{"w1", "w2"}[i]] = "http://" + w.MetricsAddr().String()
	}
	tname := transports.Default

	_, before := scrape(t, srvURL)
	if v := value(t, before, "braid_units_sent_total"); v != 0 {
		t.Fatalf("braid_units_sent_total = %v before any job", v)
	}
	const units = 12
	input := samples.GIF()
	in := put(t, cl.Client, input)
	no := false
	j := runJob(t, cl.Client, api.JobSpec{Op: "blur", Input: in, Repeat: units, Policy: "equal", Speculate: &no})
	if j.State != api.JobDone {
		t.Fatalf("job %s: %s", j.State, j.Error)
	}

	text, fams := scrape(t, srvURL)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"braid_units_sent_total", nil, units},
		{"braid_units_finished_total", []string{"outcome", "done"}, units},
		{"braid_units_finished_total", []string{"outcome", "failed"}, 0},
		{"braid_unit_queued_seconds", nil, units},
		{"braid_unit_compute_seconds", nil, units},
		{"braid_unit_transit_seconds", nil, units},
		{"braid_units_requeued_total", []string{"reason", "worker_down"}, 0},
		{"braid_units_requeued_total", []string{"reason", "handed_back"}, 0},
		{"braid_liveness_failures_total", []string{"check", "association"}, 0},
		{"braid_liveness_failures_total", []string{"check", "heartbeat"}, 0},
		{"braid_jobs", []string{"state", "done"}, 1},
		{"braid_jobs", []string{"state", "running"}, 0},
		{"braid_units", []string{"state", "pending"}, 0},
		{"braid_units", []string{"state", "in_flight"}, 0},
		{"braid_workers", []string{"state", "up"}, 2},
		{"braid_associations", []string{"transport", tname}, 2},
		{"braid_streams", []string{"transport", tname}, 3},
		{"braid_worker_units_completed_total", []string{"worker", "w1"}, float64(j.UnitsPerWorker["w1"])},
		{"braid_worker_units_completed_total", []string{"worker", "w2"}, float64(j.UnitsPerWorker["w2"])},
		{"braid_worker_units_in_flight", []string{"worker", "w1"}, 0},
		{"braid_worker_in_flight_input_bytes", []string{"worker", "w1"}, 0},
		{"braid_worker_input_bytes_in_flight", []string{"worker", "w1"}, 0}, // deprecated, kept one release
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("server: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if transports.Stack(transports.Options{}) == transports.StackUser {
		// The userspace stack's associations report their flows: one, to a
		// worker on this host.
		if got := value(t, fams, "braid_worker_sctp_flows", "worker", "w1"); got != 1 {
			t.Errorf("braid_worker_sctp_flows{worker=w1} = %v, want 1 on loopback", got)
		}
	}
	if lease := value(t, fams, "braid_worker_leased_streams", "worker", "w2"); lease < 0 || lease > 1 {
		t.Errorf("braid_worker_leased_streams{worker=w2} = %v; w2 has 1 thread", lease)
	}
	if m, _ := metric(fams, "braid_unit_compute_seconds"); m.Histogram.GetSampleSum() <= 0 {
		t.Errorf("braid_unit_compute_seconds sums to %v over %d units", m.Histogram.GetSampleSum(), units)
	}
	objects, size := storeUsage(t, dir)
	if got := value(t, fams, "braid_store_objects"); got != float64(objects) || objects < 2 {
		t.Errorf("braid_store_objects = %v; the store directory holds %d", got, objects)
	}
	if got := value(t, fams, "braid_store_bytes"); got != float64(size) {
		t.Errorf("braid_store_bytes = %v; the store directory holds %d", got, size)
	}
	if !strings.Contains(text, "# HELP braid_worker_input_bytes_in_flight Deprecated: braid_worker_in_flight_input_bytes") {
		t.Error("the old name of braid_worker_in_flight_input_bytes does not say it is deprecated")
	}
	if !strings.Contains(text, "go_goroutines") || !strings.Contains(text, "process_cpu_seconds_total") {
		t.Error("server metrics lack the Go or process collector")
	}

	// Each worker's own count, and the bytes each end of the data plane
	// counted: what the server sent is what the workers received, once
	// the last wants and leases have arrived.
	var workerTexts []string
	served := map[string]bool{}
	for name := range fams {
		served[name] = true
	}
	for name, url := range workerURL {
		text, wf := scrape(t, url)
		workerTexts = append(workerTexts, text)
		for name := range wf {
			served[name] = true
		}
		n := float64(j.UnitsPerWorker[name])
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"braid_worker_units_run_total", []string{"outcome", "done"}, n},
			{"braid_worker_units_run_total", []string{"outcome", "failed"}, 0},
			{"braid_worker_unit_compute_seconds", nil, n},
			{"braid_worker_unit_queued_seconds", nil, n},
			{"braid_worker_units_handed_back_total", nil, 0},
			{"braid_worker_associations", nil, 1},
			{"braid_worker_threads", nil, map[string]float64{"w1": 2, "w2": 1}[name]},
			{"braid_worker_threads_busy", nil, 0},
			{"braid_worker_units_queued", nil, 0},
		} {
			if got := value(t, wf, c.name, c.labels...); got != c.want {
				t.Errorf("worker %s: %s%v = %v, want %v", name, c.name, c.labels, got, c.want)
			}
		}
		if got := value(t, wf, "braid_transport_bytes_total", "transport", tname, "direction", "received"); got < n*float64(len(input)) {
			t.Errorf("worker %s received %v bytes for %v units of %d bytes", name, got, n, len(input))
		}
	}
	checkTrafficAgrees(t, srvURL, workerURL, tname)
	checkDocs(t, served)

	t.Run("promtool", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool is not on PATH: install Debian's prometheus package (`make test-deps` does, as root)")
		}
		for i, text := range append([]string{text}, workerTexts...) {
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = strings.NewReader(text)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("promtool check metrics on scrape %d (0: server): %v\n%s", i, err, out)
			}
		}
	})
}

// checkTrafficAgrees waits (up to 60 s; a moment unless it never will) for the server's sent counts to
// equal the sum of the workers' received counts, and the other way round.
func checkTrafficAgrees(t *testing.T, srvURL string, workerURL map[string]string, tname string) {
	t.Helper()
	var diffs []string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, sf := scrape(t, srvURL)
		sums := map[string]float64{}
		for _, url := range workerURL {
			_, wf := scrape(t, url)
			for _, name := range []string{"braid_transport_bytes_total", "braid_transport_messages_total"} {
				for _, dir := range []string{"sent", "received"} {
					sums[name+dir] += value(t, wf, name, "transport", tname, "direction", dir)
				}
			}
		}
		diffs = diffs[:0]
		for _, name := range []string{"braid_transport_bytes_total", "braid_transport_messages_total"} {
			for dir, other := range map[string]string{"sent": "received", "received": "sent"} {
				s := value(t, sf, name, "transport", tname, "direction", dir)
				if s != sums[name+other] || s == 0 {
					diffs = append(diffs, name+" server "+dir+" "+ftoa(s)+", workers "+other+" "+ftoa(sums[name+other]))
				}
			}
		}
		if len(diffs) == 0 {
			return
		}
	}
	t.Errorf("the two ends' traffic counts disagree: %v", diffs)
}

// checkDocs checks that docs/metrics.md lists every braid_ metric served
// and no other, and that the Grafana dashboard queries only served ones.
func checkDocs(t *testing.T, served map[string]bool) {
	t.Helper()
	names := regexp.MustCompile(`braid_[a-z_]+[a-z]`)
	for _, doc := range []string{"../docs/metrics.md", "../docs/grafana-braid.json"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, name := range names.FindAllString(string(b), -1) {
			name = strings.TrimSuffix(name, "_bucket")
			seen[name] = true
			if !served[name] {
				t.Errorf("%s names %s, which neither the server nor the worker serves", doc, name)
			}
		}
		for name := range served {
			if strings.HasPrefix(name, "braid_") && doc == "../docs/metrics.md" && !seen[name] {
				t.Errorf("%s does not list %s", doc, name)
			}
		}
	}
}

func ftoa(v float64) string { return strings.TrimSuffix(model.SampleValue(v).String(), ".0") }
