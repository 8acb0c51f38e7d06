// Package sandbox runs one program in a world of its own: the way a
// worker runs each unit of a script operation (docs/user-ops.md).
//
// [Sandbox.Run] gives the program
//
//   - a user id of its own, taken from a range (Config.FirstUID, UIDs) and
//     held, through a lock file per id, by one unit at a time on the host;
//   - a PID namespace whose init is this package re-executed from
//     /proc/self/exe: it builds the unit's filesystem, starts the program,
//     reaps orphans and, when the program ends, exits, and the kernel then
//     kills every process left in the namespace (a setsid daemon too);
//   - a cgroup (v2 where its memory, pids and cpu controllers are
//     available, else v1) bounding memory (swap included), processes and
//     CPU, removed after the unit;
//   - a mount namespace whose root is an empty tmpfs holding the system's
//     programs and libraries read-only (Config.ReadOnly), a fresh /proc, a
//     few devices, a generated /etc/passwd and its own empty /tmp, /var/tmp,
//     /dev/shm and working directory /work, all gone with the unit;
//   - IPC, UTS and cgroup namespaces of its own, and a network namespace
//     with only loopback unless Spec.Network;
//   - no new privileges, a seccomp filter refusing namespaces, the kernel
//     keyring, io_uring, bpf and perf events, and the rlimits of Spec.
//
// It needs Linux and root. [New] tries all of that once and says what is
// missing. The init is the calling binary itself: the package's init
// function takes over a process started as a sandbox's init (os.Args
// being just "braid-sandbox-init") before main runs, so a binary that
// links the package needs nothing more.
package sandbox
