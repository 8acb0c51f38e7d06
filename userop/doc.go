// Package userop runs user operations: WebAssembly modules (WASI preview
// 1) that users register with a server and workers download, check and
// run in a wazero sandbox, one unit at a time (docs/user-ops.md).
//
// The server uses [CheckSpec] and [Check] when an operation is registered,
// [Values] to validate a job's parameters and [NewInvocation] to encode
// what every unit carries; the worker decodes that with
// [ParseInvocation] and runs the unit with [Runtime.Run], which fetches
// the module through the injected [Fetcher] the first time, checks its
// digest, compiles it (keeping the code in Config.CacheDir across
// restarts) and runs it with no filesystem, network or environment,
// within the unit's memory, wall-time and output limits.
//
// Two ABIs: a command (_start per unit: input on stdin, output on stdout,
// parameters as --name=value arguments, exit status, stderr as the
// reason) and a reactor (an instance per thread, braid_run per unit).
//
// A third, exec, runs a script with an interpreter the worker's owner
// allows (Config.Exec), the command ABI's way, each unit in a sandbox of
// its own (package sandbox: a user id, namespaces, a cgroup and a
// filesystem of its own; Linux and root).
//
// The package never touches the network itself.
package userop
