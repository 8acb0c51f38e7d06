package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// poller GETs a list API's first page again and again while the job runs,
// as a dashboard or `braid workers` would, and keeps each answer's latency
// (to the last byte of the body).
type poller struct {
	hc    *http.Client
	url   string
	token string
	every time.Duration

	mu   sync.Mutex // guards lat, at and errs
	lat  []time.Duration
	at   []time.Time // when each poll of lat began
	errs int
}

func newPoller(hc *http.Client, base, path, token string, every time.Duration) *poller {
	return &poller{hc: hc, url: base + path, token: token, every: every}
}

// run polls until ctx ends.
func (p *poller) run(ctx context.Context) {
	for ctx.Err() == nil {
		began := time.Now()
		d, err := p.once(ctx)
		p.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				p.errs++
			}
		} else {
			p.lat = append(p.lat, d)
			p.at = append(p.at, began)
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(p.every):
		}
	}
}

func (p *poller) once(ctx context.Context) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	start := time.Now()
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("scale: GET %s: %s", p.url, resp.Status)
	}
	return time.Since(start), nil
}

// taken returns the latencies so far in milliseconds, in the order
// taken, when each began (Unix seconds), and the count of failed polls.
func (p *poller) taken() (ms, at []float64, errs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ms, at = make([]float64, len(p.lat)), make([]float64, len(p.lat))
	for i, d := range p.lat {
		ms[i] = float64(d) / float64(time.Millisecond)
		at[i] = float64(p.at[i].UnixNano()) / 1e9
	}
	return ms, at, p.errs
}
