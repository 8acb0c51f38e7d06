package server_test

// Regression tests for what the API fuzzer (mk/apifuzz.sh, make test-api)
// found where the server and its OpenAPI document disagreed.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
)

// call sends one request to the cluster's server and returns the response
// with its body read.
func call(t *testing.T, cl *cluster.Cluster, method, path, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, cl.Client.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func errorCode(t *testing.T, body string) string {
	t.Helper()
	var eb api.ErrorBody
	if err := json.Unmarshal([]byte(body), &eb); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return eb.Error.Code
}

// TestUndeclaredMethodIs405: a path the server serves, called with a method
// it does not serve it with, is 405 with an Allow header (RFC 9110), not
// 404; an unknown path stays 404.
func TestUndeclaredMethodIs405(t *testing.T) {
	cl := startCluster(t)
	obj := "/v1/objects/" + strings.Repeat("0", 64)
	for _, c := range []struct{ method, path, allow string }{
		{"TRACE", "/v1/jobs", "GET, HEAD, POST"},
		{"PUT", "/healthz", "GET, HEAD"},
		{"PATCH", obj, "GET, HEAD, DELETE"},
		{"POST", "/v1/jobs/j-000000000000", "GET, HEAD, DELETE"},
		{"GET", "/v1/workers/w1/heartbeat", "POST"},
		{"OPTIONS", "/v1/workers/w1", "PUT, DELETE"},
	} {
		resp, body := call(t, cl, c.method, c.path, "")
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		} else if code := errorCode(t, body); code != api.CodeMethodNotAllowed {
			t.Errorf("%s %s: code %q, want %q", c.method, c.path, code, api.CodeMethodNotAllowed)
		}
	}
	for _, p := range []string{"/v2/jobs", "/v1/jobs/j-1/nothing", "/nowhere"} {
		if resp, body := call(t, cl, "GET", p, ""); resp.StatusCode != 404 || resp.Header.Get("Allow") != "" || errorCode(t, body) != api.CodeNotFound {
			t.Errorf("GET %s: %d, Allow %q, %s; want 404 not_found and no Allow", p, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	}
}

// TestIntegralNumbersAreIntegers: JSON has one kind of number and the
// document's "integer" is any number with an integral value, so 2.0 and
// 2e0 are 2 (Python's json writes floats so); 2.5 is still refused.
func TestIntegralNumbersAreIntegers(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2})
	in := put(t, cl.Client, samples.PNG())
	for _, repeat := range []string{"2.0", "2e0", "20E-1"} {
		resp, body := call(t, cl, "POST", "/v1/jobs", `{"op": "noop", "input": "`+in+`", "repeat": `+repeat+`}`)
		var j api.Job
		if resp.StatusCode != 201 || json.Unmarshal([]byte(body), &j) != nil || j.Spec.Repeat != 2 {
			t.Errorf("repeat %s: %d %s; want 201 and repeat 2", repeat, resp.StatusCode, body)
		}
	}
	for _, repeat := range []string{"2.5", "1e300", `"2"`} {
		resp, body := call(t, cl, "POST", "/v1/jobs", `{"op": "noop", "input": "`+in+`", "repeat": `+repeat+`}`)
		if resp.StatusCode != 400 || errorCode(t, body) != api.CodeMalformedJSON {
			t.Errorf("repeat %s: %d %s; want 400 malformed_json", repeat, resp.StatusCode, body)
		}
	}
	// The same for the workers' registry.
	wt := api.WorkerToken([]byte("braid-cluster-secret"))
	reg := `{"name": "floaty", "cores": 4.0, "clock_mhz": 2000, "ram_bytes": 1e9, "disk_free_bytes": 0,
		"max_threads": 2.0, "free_threads": 2, "ops": ["noop"], "endpoints": [{"transport": "tcp", "addr": "127.0.0.1:1"}]}`
	if resp, body := call(t, cl, "POST", "/v1/workers", reg, api.WorkerTokenHeader, wt); resp.StatusCode != 200 {
		t.Errorf("registration with max_threads 2.0: %d %s", resp.StatusCode, body)
	}
}

// TestRefreshOfWorkerWithoutInfoURL: a registered worker that gave no
// info_url cannot be asked for its figures; that is a conflict with its
// registration (409), not a missing worker (404).
func TestRefreshOfWorkerWithoutInfoURL(t *testing.T) {
	cl := startCluster(t)
	wt := api.WorkerToken([]byte("braid-cluster-secret"))
	reg := `{"name": "mute", "cores": 1, "clock_mhz": 1, "ram_bytes": 1, "disk_free_bytes": 1,
		"max_threads": 1, "free_threads": 1, "ops": ["noop"], "endpoints": [{"transport": "tcp", "addr": "127.0.0.1:1"}]}`
	if resp, body := call(t, cl, "POST", "/v1/workers", reg, api.WorkerTokenHeader, wt); resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	resp, body := call(t, cl, "POST", "/v1/workers/mute/refresh", "", api.WorkerTokenHeader, wt)
	if resp.StatusCode != 409 || errorCode(t, body) != api.CodeConflict || !strings.Contains(body, "info_url") {
		t.Errorf("refresh of a worker without info_url: %d %s; want 409 conflict naming info_url", resp.StatusCode, body)
	}
	resp, body = call(t, cl, "POST", "/v1/workers/nobody/refresh", "", api.WorkerTokenHeader, wt)
	if resp.StatusCode != 404 || errorCode(t, body) != api.CodeNotFound {
		t.Errorf("refresh of an unknown worker: %d %s; want 404 not_found", resp.StatusCode, body)
	}
}

// TestRegistrationChecksInfoURL: a worker's info_url is where a refresh
// asks it for its figures; one that is not an http(s) URL is refused at
// registration rather than accepted and then failing every refresh (502).
func TestRegistrationChecksInfoURL(t *testing.T) {
	cl := startCluster(t)
	wt := api.WorkerToken([]byte("braid-cluster-secret"))
	reg := func(infoURL string) string {
		u, _ := json.Marshal(infoURL)
		return `{"name": "w", "cores": 1, "clock_mhz": 1, "ram_bytes": 1, "disk_free_bytes": 1, "max_threads": 1,
			"free_threads": 1, "ops": ["noop"], "endpoints": [{"transport": "tcp", "addr": "127.0.0.1:1"}], "info_url": ` + string(u) + `}`
	}
	for _, bad := range []string{"\x01\x05", "127.0.0.1:7171", "ftp://127.0.0.1/", "http://", "/v1/info"} {
		resp, body := call(t, cl, "POST", "/v1/workers", reg(bad), api.WorkerTokenHeader, wt)
		if resp.StatusCode != 400 || errorCode(t, body) != api.CodeBadParameter || !strings.Contains(body, "info_url") {
			t.Errorf("info_url %q: %d %s; want 400 bad_parameter naming info_url", bad, resp.StatusCode, body)
		}
	}
	for _, good := range []string{"", "http://127.0.0.1:7171", "https://w1.example:8443/"} {
		if resp, body := call(t, cl, "POST", "/v1/workers", reg(good), api.WorkerTokenHeader, wt); resp.StatusCode != 200 {
			t.Errorf("info_url %q: %d %s; want 200", good, resp.StatusCode, body)
		}
	}
}

// TestRegistrationChecksRoutes: an endpoint's routes are hosts the server
// dials on the endpoint's port; one with a port, a path or spaces, or too
// many of them, is refused at registration, not dialed and failed later.
func TestRegistrationChecksRoutes(t *testing.T) {
	cl := startCluster(t)
	wt := api.WorkerToken([]byte("braid-cluster-secret"))
	reg := func(routes ...string) string {
		r, _ := json.Marshal(routes)
		return `{"name": "w", "cores": 1, "clock_mhz": 1, "ram_bytes": 1, "disk_free_bytes": 1, "max_threads": 1,
			"free_threads": 1, "ops": ["noop"], "endpoints": [{"transport": "ptcp", "addr": "10.0.0.5:7171", "routes": ` + string(r) + `}]}`
	}
	many := make([]string, api.MaxRoutes+1)
	for i := range many {
		many[i] = fmt.Sprintf("10.0.%d.5", i)
	}
	for _, bad := range [][]string{{"10.0.1.5:7171"}, {""}, {"w1.example/x"}, {"a b"}, {"[::1]"}, many} {
		resp, body := call(t, cl, "POST", "/v1/workers", reg(bad...), api.WorkerTokenHeader, wt)
		if resp.StatusCode != 400 || errorCode(t, body) != api.CodeBadParameter || !strings.Contains(body, "route") {
			t.Errorf("routes %q: %d %s; want 400 bad_parameter naming the route", bad, resp.StatusCode, body)
		}
	}
	for _, good := range [][]string{{}, {"10.0.1.5"}, {"fe80::1", "w1-b.example"}} {
		if resp, body := call(t, cl, "POST", "/v1/workers", reg(good...), api.WorkerTokenHeader, wt); resp.StatusCode != 200 {
			t.Errorf("routes %q: %d %s; want 200", good, resp.StatusCode, body)
		}
	}
}

// TestRegistrationChecksHoldBytes: a negative hold_bytes is refused with
// a reason; 0 (unsaid) and a size are taken.
func TestRegistrationChecksHoldBytes(t *testing.T) {
	cl := startCluster(t)
	wt := api.WorkerToken([]byte("braid-cluster-secret"))
	reg := func(hold int64) string {
		return fmt.Sprintf(`{"name": "w", "cores": 1, "max_threads": 1, "free_threads": 1, "ops": ["noop"],
			"endpoints": [{"transport": "tcpn", "addr": "10.0.0.5:7171"}], "hold_bytes": %d}`, hold)
	}
	if resp, body := call(t, cl, "POST", "/v1/workers", reg(-1), api.WorkerTokenHeader, wt); resp.StatusCode != 400 ||
		errorCode(t, body) != api.CodeBadParameter || !strings.Contains(body, "hold_bytes") {
		t.Errorf("hold_bytes -1: %d %s; want 400 bad_parameter naming hold_bytes", resp.StatusCode, body)
	}
	for _, good := range []int64{0, 512 << 20} {
		if resp, body := call(t, cl, "POST", "/v1/workers", reg(good), api.WorkerTokenHeader, wt); resp.StatusCode != 200 {
			t.Errorf("hold_bytes %d: %d %s; want 200", good, resp.StatusCode, body)
		}
	}
}

// TestEmptyParameterNameIsRefused: a parameter named "" is unknown to every
// operation. It was accepted at submit (always alone, half the time beside
// another unknown name), and then the worker failed the job on it.
func TestEmptyParameterNameIsRefused(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 1})
	in := put(t, cl.Client, samples.PNG())
	for _, params := range []string{`{"": "x"}`, `{"": "x", "__main__": "y"}`, `{"__main__": "y", "": "x", "zz": "z"}`} {
		for range 10 {
			resp, body := call(t, cl, "POST", "/v1/jobs", `{"op": "grayscale", "input": "`+in+`", "params": `+params+`}`)
			if resp.StatusCode != 400 || errorCode(t, body) != api.CodeBadParameter || !strings.Contains(body, `unknown parameter \"\"`) {
				t.Fatalf("params %s: %d %s; want 400 bad_parameter naming the parameter \"\"", params, resp.StatusCode, body)
			}
		}
	}
}

// TestRepeatJobWhoseManifestCannotBeStored: a repeat job's result is a
// manifest with an entry per unit; one that cannot fit the server's object
// size limit is refused at submit, not run to the end and failed.
func TestRepeatJobWhoseManifestCannotBeStored(t *testing.T) {
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), MaxObjectSize: 100_000,
		Workers: []cluster.WorkerSpec{{Threads: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	in := put(t, cl.Client, []byte("noop takes any bytes"))
	resp, body := call(t, cl, "POST", "/v1/jobs", `{"op": "noop", "input": "`+in+`", "repeat": 2000}`)
	if resp.StatusCode != 400 || errorCode(t, body) != api.CodeTooLarge || !strings.Contains(body, "--max-object") {
		t.Errorf("repeat 2000 with a 100,000-byte object limit: %d %s; want 400 too_large naming --max-object", resp.StatusCode, body)
	}
	if j := runJob(t, cl.Client, api.JobSpec{Op: "noop", Input: in, Repeat: 500}); j.State != api.JobDone {
		t.Errorf("repeat 500 (a manifest of about 60,000 bytes): %s %s; want done", j.State, j.Error)
	}
}

// TestContractOfIssue45: what schemathesis's default checks found where the
// server and its OpenAPI document disagreed (issue 45, finding 20), and
// names with control characters (issue 43, finding 9).
func TestContractOfIssue45(t *testing.T) {
	dir := t.TempDir()
	cl := startAuthCluster(t, dir)
	tok, err := os.ReadFile(filepath.Join(dir, api.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	admin := "Bearer " + strings.TrimSpace(string(tok))
	in := put(t, cl.Client, samples.GIF())
	wt := api.WorkerToken([]byte("braid-cluster-secret"))
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		// A null is no value of any field; Go would take it for absent.
		{"POST", "/v1/tokens", `{"role": "read", "expires_in": null}`, 400, api.CodeMalformedJSON},
		{"POST", "/v1/tokens", `{"role": "read", "expires_in": 5}`, 400, api.CodeMalformedJSON},
		{"POST", "/v1/jobs", `{"op": "noop", "input": "` + in + `", "params": null}`, 400, api.CodeMalformedJSON},
		// The lifetime's grammar is the schema's pattern.
		{"POST", "/v1/tokens", `{"role": "read", "expires_in": "1.5d"}`, 400, api.CodeBadParameter},
		{"POST", "/v1/tokens", `{"role": "read", "expires_in": "0h"}`, 400, api.CodeBadParameter},
		{"POST", "/v1/tokens", `{"role": "read", "expires_in": "100000d"}`, 400, api.CodeBadParameter},
		{"POST", "/v1/tokens", `{"role": "read", "expires_in": "99999d"}`, 201, ""},
		{"POST", "/v1/tokens", `{"role": "read", "expires_in": ""}`, 201, ""},
		// A token's name: 64 characters (not bytes), no control character.
		{"POST", "/v1/tokens", `{"role": "read", "name": "` + strings.Repeat("é", 64) + `"}`, 201, ""},
		{"POST", "/v1/tokens", `{"role": "read", "name": "` + strings.Repeat("é", 65) + `"}`, 400, api.CodeBadParameter},
		{"POST", "/v1/tokens", `{"role": "read", "name": "ci\u001b[31m"}`, 400, api.CodeBadParameter},
		{"POST", "/v1/tokens", `{"role": "read", "name": "ci\u009b31m"}`, 400, api.CodeBadParameter},
		// Exactly one source of inputs, and inputs not empty.
		{"POST", "/v1/jobs", `{"op": "noop", "input": "` + in + `", "inputs": ["` + in + `"]}`, 400, api.CodeBadRequest},
		{"POST", "/v1/jobs", `{"op": "noop", "inputs": []}`, 400, api.CodeBadRequest},
		{"POST", "/v1/jobs", `{"op": "noop", "input": "` + in + `", "input_names": ["a"]}`, 400, api.CodeBadRequest},
		{"POST", "/v1/jobs", `{"op": "noop", "input": "` + in + `", "input_list": ""}`, 201, ""},
		// An interpreter goes with abi exec only.
		{"POST", "/v1/operations", `{"name": "x", "module": "` + in + `", "interpreter": "sh"}`, 400, api.CodeBadParameter},
		// ?from= given is an import, and must name a bucket and a key.
		{"POST", "/v1/objects?from=", "", 400, api.CodeBadRequest},
		{"POST", "/v1/objects?from=s3://", "", 400, api.CodeBadRequest},
		// A built-in operation cannot be removed: a conflict, not a bad request.
		{"DELETE", "/v1/operations/blur", "", 409, api.CodeConflict},
		// Worker names: no control characters (terminal escapes) either.
		{"POST", "/v1/workers", workerBody("w\u001b[2J"), 400, api.CodeBadParameter},
		{"POST", "/v1/workers", workerBody("w\u0085"), 400, api.CodeBadParameter},
		{"POST", "/v1/workers", workerBody(strings.Repeat("ö", 128)), 200, ""},
		{"POST", "/v1/workers", workerBody(strings.Repeat("ö", 129)), 400, api.CodeBadParameter},
		// A registration's counts are not negative; leaving them out is 0.
		{"POST", "/v1/workers", `{"name": "w-min", "max_threads": 1, "ops": ["noop"], "endpoints": [{"transport": "tcp", "addr": "127.0.0.1:1"}], "leased_threads": -1}`, 400, api.CodeBadParameter},
		{"POST", "/v1/workers", `{"name": "w-min", "max_threads": 1, "ops": ["noop"], "endpoints": [{"transport": "tcp", "addr": "127.0.0.1:1"}]}`, 200, ""},
	} {
		resp, body := call(t, cl, c.method, c.path, c.body, "Authorization", admin, api.WorkerTokenHeader, wt)
		if resp.StatusCode != c.status || c.code != "" && errorCode(t, body) != c.code {
			t.Errorf("%s %s %s: %d %s; want %d %s", c.method, c.path, c.body, resp.StatusCode, body, c.status, c.code)
		}
	}
	var doc struct {
		Paths map[string]map[string]struct{ Responses map[string]json.RawMessage }
	}
	b, err := os.ReadFile("openapi.json")
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	del := doc.Paths["/v1/operations/{name}"]["delete"]
	if err != nil || del.Responses["409"] == nil || del.Responses["400"] != nil {
		t.Errorf("DELETE /v1/operations/{name} documents %v (%v); want a 409 for a built-in, no 400", slices.Collect(maps.Keys(del.Responses)), err)
	}
}

// workerBody is a registration of a worker of that name.
func workerBody(name string) string {
	n, _ := json.Marshal(name)
	return `{"name": ` + string(n) + `, "max_threads": 1, "ops": ["noop"], "endpoints": [{"transport": "tcp", "addr": "127.0.0.1:1"}]}`
}
