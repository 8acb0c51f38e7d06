package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops/samples"
)

// TestDashboard drives the web dashboard in headless Chromium against a
// live cluster: it logs in with a read token, sees the workers, follows a
// job that waits (no worker runs its operation) until a worker that runs it
// joins, and checks that the page's progress and unit timeline follow the
// job to its end without a reload. It saves a screenshot of the job's page
// in the test's directory, or to $BRAID_UI_SCREENSHOT (how
// docs/dashboard.png is made).
func TestDashboard(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium on PATH: install Debian's chromium package (`make test-deps` does, as root)")
	}
	_, c := startServer(t)
	for _, name := range []string{"w1", "w2"} {
		start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", name, "--ops", "grayscale,noop", "--transport", "tcp")
	}
	waitWorkersUp(t, c, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	reader, err := c.CreateToken(ctx, api.TokenSpec{Role: api.RoleRead, Name: "dashboard test"})
	if err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.WindowSize(1200, 820), chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()

	// CSS selectors (chromedp.CSS: DOM.querySelector).
	type css = chromedp.CSS
	err = chromedp.Do(bctx,
		chromedp.Navigate(c.URL()+"/ui/"),
		chromedp.WaitVisible(css("#login-form")),
		chromedp.SendKeys(css("#token"), reader.Token),
		chromedp.Click(css(`#login-form button[type=submit]`)),
		chromedp.WaitVisible(css(`#workers tr[data-worker="w2"]`)),
	)
	if err != nil {
		t.Fatalf("log in and list workers: %v", err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#workers tr[data-worker]").length`)); err != nil || n != 2 {
		t.Errorf("the page lists %d workers (%v), want 2", n, err)
	}

	// A job no worker can run yet: the page shows it queued.
	const units = 12
	in, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.Submit(ctx, api.JobSpec{Op: "sobel", Input: in.ID, Repeat: units})
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(bctx,
		chromedp.WaitVisible(css(fmt.Sprintf(`#jobs tr[data-job=%q] a`, job.ID))),
		chromedp.Click(css(fmt.Sprintf(`#jobs tr[data-job=%q] a`, job.ID))),
		chromedp.WaitVisible(css("#job-state")),
	)
	if err != nil {
		t.Fatalf("open the job's page: %v", err)
	}
	if state, err := chromedp.Run(bctx, chromedp.Text(css("#job-state"))); err != nil || state != api.JobQueued {
		t.Fatalf("job page shows state %q (%v), want %s", state, err, api.JobQueued)
	}

	// A worker that runs sobel joins; the open page follows the job.
	start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "w3", "--ops", "sobel", "--transport", "tcp")
	err = chromedp.Do(bctx,
		chromedp.WaitVisible(css(`#job-state.state-done`)),
		chromedp.WaitVisible(css(fmt.Sprintf(`#gantt rect.unit[data-unit="%d"]`, units-1))),
	)
	if err != nil {
		t.Fatalf("follow the job to its end: %v", err)
	}
	if done, err := chromedp.Run(bctx, chromedp.Text(css("#job-done"))); err != nil || done != strconv.Itoa(units) {
		t.Errorf("the page says %q units done (%v), want %d", done, err, units)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#gantt rect.unit").length`)); err != nil || n != units {
		t.Errorf("the timeline has %d unit bars (%v), want %d", n, err, units)
	}
	final, err := c.Job(ctx, job.ID, false)
	if err != nil || final.State != api.JobDone {
		t.Fatalf("the job by the API: %+v, %v", final, err)
	}

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: PNG; less: JPEG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := os.Getenv("BRAID_UI_SCREENSHOT")
	if path == "" {
		path = filepath.Join(t.TempDir(), "dashboard.png")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the job's page: %s (%d bytes)", path, len(png))

	// The page itself needs no token, and forbids other origins.
	resp, err := http.Get(c.URL() + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("GET /ui/: %s, Content-Security-Policy %q", resp.Status, resp.Header.Get("Content-Security-Policy"))
	}
}
