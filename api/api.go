// Package api holds the JSON types of braid's HTTP control plane, shared by
// the server, the worker and the client library. The OpenAPI document the
// server serves at /v1/openapi.json describes the same shapes.
package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrorBody is the body of every non-2xx response.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is a stable machine-readable code and a message for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Error codes. They are part of the API: never change one's meaning.
const (
	CodeMalformedJSON    = "malformed_json"
	CodeBadRequest       = "bad_request"
	CodeBadParameter     = "bad_parameter"
	CodeUnknownOp        = "unknown_operation"
	CodeNoObject         = "object_not_found"
	CodeBadImage         = "bad_image"
	CodeBadModule        = "bad_module" // a user operation's module would not run
	CodeTooLarge         = "too_large"
	CodeTimeout          = "timeout"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed" // 405: the path exists, not with this method; Allow lists the methods
	CodeConflict         = "conflict"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// Object describes a stored object.
type Object struct {
	ID   string `json:"id"`
	Size int64  `json:"size"`
	// Created, in the answer to an upload, is when a client first uploaded
	// these bytes; in listings, when the object was last stored or touched
	// (the store's lease time for its collector).
	Created time.Time `json:"created"`
	// Existing, in the answer to an upload, says the bytes were already
	// stored (content addressing): nothing new was written.
	Existing bool `json:"existing,omitempty"`
	// Owner is the id of the token that first uploaded the bytes, on a
	// server that checks tokens; empty for objects the server wrote.
	Owner string `json:"owner,omitempty"`
}

// Operation is one entry of the operations catalogue: a built-in
// operation, or the current version of a user operation.
type Operation struct {
	Name     string      `json:"name"`
	Summary  string      `json:"summary"`
	Params   []Parameter `json:"params"`
	Tileable bool        `json:"tileable"`
	// Kind is OpBuiltin or OpWasm.
	Kind string `json:"kind"`
	// The rest describe user operations only. Digest is the module's
	// object id (sha256); Version counts the registrations of Name, from
	// 1; Reach is the halo a tiled job gives each tile (nil: the
	// operation is not tileable).
	Digest      string    `json:"digest,omitempty"`
	Version     int       `json:"version,omitempty"`
	ABI         string    `json:"abi,omitempty"`
	Interpreter string    `json:"interpreter,omitempty"` // ABIExec: the program that runs the script
	Reach       *int      `json:"reach,omitempty"`
	Limits      *OpLimits `json:"limits,omitempty"`
	Owner       string    `json:"owner,omitempty"`
	Created     time.Time `json:"created,omitzero"`
}

// Operation kinds.
const (
	OpBuiltin = "builtin"
	OpWasm    = "wasm"
	// OpExec: a script run by an interpreter on workers whose owners allow
	// it (braid worker --allow-exec), each unit in a sandbox of its own.
	OpExec = "exec"
)

// User operation ABIs (docs/user-ops.md).
const (
	// ABICommand: a WASI command run once per unit, the unit's input on
	// stdin, its output on stdout, parameters as arguments.
	ABICommand = "command"
	// ABIReactor: a WASI reactor instantiated once per worker thread,
	// whose exported braid_run is called once per unit.
	ABIReactor = "reactor"
	// ABIExec: a script (the "module" object) run by an interpreter, the
	// command ABI's stdin, stdout, arguments and exit status.
	ABIExec = "exec"
)

// Parameter documents one operation parameter. Type is "float", "int",
// "string" or (user operations) "bool". Min and Max bound a number,
// inclusively.
type Parameter struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Default string   `json:"default,omitempty"`
	Doc     string   `json:"doc"`
	Min     *float64 `json:"min,omitempty"`
	Max     *float64 `json:"max,omitempty"`
}

// OperationSpec registers a user operation (POST /v1/operations): the
// WebAssembly module, uploaded before as an object, and what the server
// needs to validate jobs and workers need to run them. Registering a
// name again makes a new version; jobs keep the version they started
// with.
type OperationSpec struct {
	Name string `json:"name"`
	// Module is the object id of the WebAssembly module, or with ABIExec
	// of the script.
	Module string `json:"module"`
	ABI    string `json:"abi,omitempty"` // ABICommand (default), ABIReactor or ABIExec
	// Interpreter is, with ABIExec, the program that runs the script, by
	// name ("python3", "sh"): a worker runs the operation only if its
	// owner allows that program (braid worker --allow-exec).
	Interpreter string      `json:"interpreter,omitempty"`
	Summary     string      `json:"summary,omitempty"`
	Params      []Parameter `json:"params,omitempty"`
	// Reach, when set, makes the operation tileable: each tile carries a
	// halo this many pixels wide. Only for operations on images whose
	// output pixel depends on input pixels at most Reach away.
	Reach  *int     `json:"reach,omitempty"`
	Limits OpLimits `json:"limits,omitzero"`
}

// OpLimits bound one unit of a user operation. Zero means the default.
type OpLimits struct {
	// TimeoutMS is the wall time a unit may run (default 60 s); a job's
	// UnitTimeoutMS overrides it.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// MemoryMiB caps the module's linear memory (default 256 MiB).
	MemoryMiB int `json:"memory_mib,omitempty"`
	// MaxOutput caps a unit's output in bytes (default and most: a
	// data-plane message, 64 MiB).
	MaxOutput int64 `json:"max_output,omitempty"`
	// Network (scripts only) gives a unit the worker's network; its units
	// run only on workers whose owners allow that (braid worker
	// --exec-network). Without it a script has a loopback of its own and
	// nothing else.
	Network bool `json:"network,omitempty"`
}

// JobSpec is what a client submits. Exactly one of Repeat and Tiles may be
// set, on a job of one Input; with neither the job is one unit on the whole
// input.
type JobSpec struct {
	// Op is the operation, or a pipeline of up to 8 run back to back on
	// the worker that holds each unit, "blur,sobel": its parameters name
	// their step, "blur.sigma" or "1.sigma", and "format" alone is the
	// output encoding. Pipeline units go to workers that run every step.
	Op string `json:"op"`
	// OpVersions pins the versions of a pipeline's user operations, by
	// name; the server fills it in at submit, as OpVersion.
	OpVersions map[string]int `json:"op_versions,omitempty"`
	// OpVersion pins a user operation's version; the server fills it in
	// (with OpDigest, the module's id) with the version current at
	// submit, and a resumed job runs the same one.
	OpVersion int    `json:"op_version,omitempty"`
	OpDigest  string `json:"op_digest,omitempty"`
	// UnitTimeoutMS overrides a user operation's wall-time limit per unit.
	UnitTimeoutMS int64 `json:"unit_timeout_ms,omitempty"`
	// Input is the object the job works on. A job over many objects
	// gives instead Inputs (one unit per object, in order, at most
	// MaxInputs) or InputList, the id of an object listing object ids one
	// per line (blank lines and lines starting with # are skipped; up to
	// MaxUnits). Exactly one of Input, Inputs, InputList and InputJob
	// is given.
	Input     string   `json:"input,omitempty"`
	Inputs    []string `json:"inputs,omitempty"`
	InputList string   `json:"input_list,omitempty"`
	// InputNames names Inputs for people, in the same order (the CLI sends
	// the files' names): the manifest gives each unit its input's name,
	// and `braid get --job J -o DIR` names the outputs after them.
	// Optional; an empty entry names nothing. Each is a file name, as
	// ValidInputName says.
	InputNames []string `json:"input_names,omitempty"`
	// InputJob makes one unit per unit of another job, on that unit's
	// output, each sent as soon as the output exists: the job overlaps
	// the other. If the other job fails or is cancelled, so does this.
	InputJob string            `json:"input_job,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
	// Repeat runs the op Repeat times on the whole input (the paper's
	// workload), 1 to 10,000,000 (server.MaxRepeat); 0 (or absent) means one unit, like 1. The
	// result of a job of several units is a manifest listing each unit's
	// output; the result of a job of one unit is that unit's output.
	Repeat int `json:"repeat,omitempty"`
	// Tiles "RxC" cuts the image into R×C tiles with a halo as wide as the
	// op's reach; the result is the stitched image.
	Tiles string `json:"tiles,omitempty"`
	// Policy is the assignment policy: equal, threads, speed or dynamic
	// (default).
	Policy string `json:"policy,omitempty"`
	// Speculate re-runs the last straggling units on idle workers (default
	// true under dynamic and speed).
	Speculate *bool `json:"speculate,omitempty"`
}

// Job states.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobDone      = "done"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// Progress counts a job's units. While the job runs, Done + Failed +
// Sent + Pending == Total. Once it is terminal nothing is sent, running or
// pending any more, and Done + Failed + Cancelled == Total.
type Progress struct {
	Total int `json:"total"`
	// Done counts the units whose result the server has stored durably: a
	// unit counted here survives a crash of the server.
	Done int `json:"done"`
	// Running counts the units executing on a worker thread now, as far as
	// the server can tell: a worker runs a server's units in the order
	// they arrive on as many threads as it lends the server, so on each
	// worker the oldest units in flight, up to its lease, are counted. A
	// unit on the wire to a free thread, or whose result is on its way
	// back, may be among them. Running <= Sent. It is as the server last
	// counted it, at most 0.1 s ago (a second with 10,000 workers).
	// (Before Sent existed, running counted every unit in flight.)
	Running int `json:"running"`
	// Sent counts the units handed to workers and not yet done: running,
	// queued at a worker, on the wire, or answered and being stored (for
	// up to a group commit, about 10 ms).
	Sent    int `json:"sent"`
	Failed  int `json:"failed"`
	Pending int `json:"pending"`
	// Cancelled counts, in a failed or cancelled job, the units that will
	// never have a result: never sent, or in flight when the job ended.
	Cancelled int `json:"cancelled"`
}

// Job is a job's status.
type Job struct {
	ID       string   `json:"id"`
	Spec     JobSpec  `json:"spec"`
	State    string   `json:"state"`
	Progress Progress `json:"progress"`
	// Waiting says why pending units are not running, e.g. that no
	// registered worker can run the operation.
	Waiting string `json:"waiting,omitempty"`
	Error   string `json:"error,omitempty"`
	// Result is the output object: the unit's output for a job of one unit
	// (no repeat, or repeat 1), the stitched image for a tiled job, a
	// Manifest for a repeat job of several units.
	Result string `json:"result,omitempty"`
	// Owner is the id of the token that submitted the job, on a server
	// that checks tokens.
	Owner      string     `json:"owner,omitempty"`
	ReceivedAt time.Time  `json:"received_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// MakespanMS is the time from receiving the job to receiving its last
	// result; AvgUnitMS is MakespanMS / units, the paper's metric.
	MakespanMS float64 `json:"makespan_ms,omitempty"`
	AvgUnitMS  float64 `json:"avg_unit_ms,omitempty"`
	// UnitsPerWorker counts accepted results by worker.
	UnitsPerWorker map[string]int `json:"units_per_worker,omitempty"`
	Units          []UnitStat     `json:"units,omitempty"`
}

// Terminal reports whether the job will not change any more.
func (j *Job) Terminal() bool {
	return j.State == JobDone || j.State == JobFailed || j.State == JobCancelled
}

// UnitStat is one unit's statistics.
type UnitStat struct {
	Index    int        `json:"index"`
	State    string     `json:"state"` // pending, running, done, failed
	Worker   string     `json:"worker,omitempty"`
	Stream   int        `json:"stream"`
	Attempts int        `json:"attempts"`
	Sent     *time.Time `json:"sent,omitempty"`
	Returned *time.Time `json:"returned,omitempty"`
	// QueuedMS and ComputeMS are the worker's own timings.
	QueuedMS  float64 `json:"queued_ms"`
	ComputeMS float64 `json:"compute_ms"`
	Output    string  `json:"output,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// Manifest is the result object of a repeat job.
type Manifest struct {
	Job   string         `json:"job"`
	Op    string         `json:"op"`
	Input string         `json:"input,omitempty"`
	Units []ManifestUnit `json:"units"`
}

// ManifestUnit names one unit's output object, and in a job of many
// inputs the unit's input. In a repeat job, Count consecutive units from
// Index that have the same output share one entry; 0 (absent) means one
// unit.
type ManifestUnit struct {
	Index  int    `json:"index"`
	Count  int    `json:"count,omitempty"`
	Input  string `json:"input,omitempty"`
	Name   string `json:"name,omitempty"` // the input's, from JobSpec.InputNames
	Output string `json:"output"`
	Size   int64  `json:"size"`
}

// MaxWorkerName bounds a worker's name, in characters.
const MaxWorkerName = 128

// ValidWorkerName reports whether name may name a worker: 1 to
// MaxWorkerName characters, none a space, a slash or a control character
// (no newline or terminal escape reaches a log or a table through it).
func ValidWorkerName(name string) bool {
	n := utf8.RuneCountInString(name)
	return n >= 1 && n <= MaxWorkerName && utf8.ValidString(name) &&
		!strings.ContainsFunc(name, func(r rune) bool { return r == ' ' || r == '/' || unicode.IsControl(r) })
}

// MaxInputName bounds an entry of JobSpec.InputNames, in characters.
const MaxInputName = 255

// ValidInputName reports whether name may name an input: a file name of
// 1 to MaxInputName characters of UTF-8 that is no path (no '/' or '\\'), not
// hidden (no leading '.', so neither "." nor ".."), without control
// characters. A client may write a file of that name into the directory
// it was asked to, and nowhere else.
func ValidInputName(name string) bool {
	return name != "" && utf8.RuneCountInString(name) <= MaxInputName && utf8.ValidString(name) && name[0] != '.' &&
		!strings.ContainsAny(name, "/\\") && !strings.ContainsFunc(name, unicode.IsControl)
}

// Units is how many units the entry stands for (Count, at least 1).
func (u ManifestUnit) Units() int { return max(u.Count, 1) }

// Expand returns the manifest's entries one per unit, in order: an entry
// of Count units becomes Count entries of one.
func (m *Manifest) Expand() []ManifestUnit {
	var out []ManifestUnit
	for _, u := range m.Units {
		for k := range u.Units() {
			one := u
			one.Index, one.Count = u.Index+k, 0
			out = append(out, one)
		}
	}
	return out
}

// MaxInputs bounds JobSpec.Inputs; a bigger job lists its inputs in an
// object (JobSpec.InputList).
const MaxInputs = 1000

// Endpoint is a data-plane address and the transport that serves it.
type Endpoint struct {
	Transport string `json:"transport"`
	Addr      string `json:"addr"`
	// Routes are other hosts (addresses or names, no port) at which the
	// worker takes connections on Addr's port, one per further network
	// path; a transport that spreads an association over paths (ptcp)
	// sends some of its connections through them. At most MaxRoutes.
	Routes []string `json:"routes,omitempty"`
}

// MaxRoutes bounds an Endpoint's Routes.
const MaxRoutes = 15

// WorkerInfo is what a worker tells servers about itself, at registration,
// on every change, and from its GET /v1/info.
type WorkerInfo struct {
	Name          string `json:"name"`
	Cores         int    `json:"cores"`
	ClockMHz      int    `json:"clock_mhz"`
	RAMBytes      int64  `json:"ram_bytes"`
	DiskFreeBytes int64  `json:"disk_free_bytes"`
	MaxThreads    int    `json:"max_threads"`
	// FreeThreads are the threads not running a unit when the worker
	// announced itself (registration, a change, a refresh); a server's
	// Worker.BusyThreads is current.
	FreeThreads int `json:"free_threads"`
	// LeasedThreads are the threads lent to servers right now (the sum of
	// the leases; docs/leases.md).
	LeasedThreads int      `json:"leased_threads"`
	Ops           []string `json:"ops"`
	// Runtimes are the kinds of user operation the worker runs: OpWasm,
	// and "exec:NAME" for each interpreter its owner allows; it fetches
	// their code from the server.
	Runtimes  []string   `json:"runtimes,omitempty"`
	Endpoints []Endpoint `json:"endpoints"`
	// InfoURL is the worker's own HTTP address for GET /v1/info.
	InfoURL string `json:"info_url,omitempty"`
	// Epoch changes when the worker process restarts, so that a server
	// drops an association with the previous process at once.
	Epoch uint64 `json:"epoch,omitempty"`
	// Version is the worker's braid build (package version).
	Version string `json:"version,omitempty"`
	// HoldBytes is how many bytes of unit inputs the worker can hold at
	// once for this server (a worker of several servers tells each its
	// share): the server keeps no more than that in flight there (beyond
	// one unit, which it may always send; of units whose size it knows when
	// it places them). A re-announcement (PUT) may change it. 0: the
	// worker does not say.
	HoldBytes int64 `json:"hold_bytes,omitempty"`
}

// Worker states as a server sees them.
const (
	WorkerConnecting = "connecting"
	WorkerUp         = "up"
	WorkerDown       = "down"
)

// Worker is a registered worker as a server sees it.
type Worker struct {
	Info      WorkerInfo `json:"info"`
	State     string     `json:"state"`
	Transport string     `json:"transport,omitempty"`
	Streams   int        `json:"streams"`
	// Lease is how many of the streams the worker lends this server now
	// (a worker shared by several servers divides its threads by demand).
	Lease int `json:"lease"`
	// BusyThreads is how many of the worker's threads run this server's
	// units now: its streams that hold a unit sent and not yet answered.
	// (Info.FreeThreads is the worker's own figure from when it last
	// announced itself.)
	BusyThreads int `json:"busy_threads"`
	// InFlightUnits is how many of this server's units the worker holds
	// now, running or queued behind a running one. BusyThreads,
	// InFlightUnits and UnitsDone are as the server last counted them, at
	// most 0.1 s ago (a second with 10,000 workers); the other fields are
	// current.
	InFlightUnits int       `json:"in_flight_units"`
	UnitsDone     int       `json:"units_done"`
	Error         string    `json:"error,omitempty"`
	RegisteredAt  time.Time `json:"registered_at"`
	LastSeen      time.Time `json:"last_seen"`
}

// Beat is the server's answer to a heartbeat: how often it wants the next
// ones, which grows with the number of workers it has (a server keeps
// their heartbeats to a budget per second).
//
// LinkedHeartbeatMS, from servers that take a worker's live data-plane
// association for its sign of life, is the interval for the next
// heartbeats while the worker's association with the server lasts (much
// longer than HeartbeatMS); the worker goes back to HeartbeatMS, with a
// heartbeat at once, as soon as that association ends. 0 (a server that
// does not, or does not for this worker now): HeartbeatMS always.
type Beat struct {
	HeartbeatMS       int `json:"heartbeat_ms"`
	LinkedHeartbeatMS int `json:"linked_heartbeat_ms,omitempty"`
}

// Registration is the server's answer to a worker's registration.
type Registration struct {
	Name string `json:"name"`
	// HeartbeatMS is how often the server expects a heartbeat.
	HeartbeatMS int `json:"heartbeat_ms"`
	// ServerID is the server's persistent id, the one its associations
	// name (transport.PeerInfo.ID): a worker knows by it which of its
	// associations are with this server (Beat.LinkedHeartbeatMS). Empty
	// from older servers.
	ServerID string `json:"server_id,omitempty"`
}

// Event is one server-sent event of a job's event stream.
type Event struct {
	Type string `json:"type"` // progress, done
	Job  Job    `json:"job"`
}

// WorkerTokenHeader carries the worker token on the calls that change the
// worker registry (register, update, heartbeat, deregister, refresh).
const WorkerTokenHeader = "X-Braid-Worker-Token"

// WorkerToken derives the worker token from the cluster secret, so that only
// holders of the secret can add, change or remove workers, while the secret
// itself never crosses the control plane.
func WorkerToken(secret []byte) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("braid worker control v1"))
	return hex.EncodeToString(h.Sum(nil))
}

// Token roles, from least to most: read sees everything and changes
// nothing (dashboards, Prometheus); submit uploads objects and submits
// jobs, and sees and cancels its own jobs; admin does everything,
// tokens included.
const (
	RoleRead   = "read"
	RoleSubmit = "submit"
	RoleAdmin  = "admin"
)

// TokenSpec asks for a new token (POST /v1/tokens).
type TokenSpec struct {
	Role string `json:"role"`
	Name string `json:"name,omitempty"`
	// ExpiresIn is a duration such as "720h" or "30d"; empty: never.
	ExpiresIn string `json:"expires_in,omitempty"`
}

// Token describes a token. The secret (Token) is in the answer to its
// creation only: the server keeps a hash of it.
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name,omitempty"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Token     string     `json:"token,omitempty"`
}

// AdminTokenFile is the file in a server's data directory where it writes
// the first admin token it makes (mode 0600).
const AdminTokenFile = "admin.token"

// MaxTiles is the most rows, and the most columns, of JobSpec.Tiles.
const MaxTiles = 64

// ParseTiles reads JobSpec.Tiles, "RxC" with R and C from 1 to MaxTiles.
func ParseTiles(s string) (rows, cols int, err error) {
	r, c, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		rows, err = strconv.Atoi(r)
		if err == nil {
			cols, err = strconv.Atoi(c)
		}
	}
	if !ok || err != nil || rows < 1 || cols < 1 || rows > MaxTiles || cols > MaxTiles {
		return 0, 0, fmt.Errorf("tiles %q: want RxC with R and C between 1 and %d, e.g. 2x3", s, MaxTiles)
	}
	return rows, cols, nil
}
