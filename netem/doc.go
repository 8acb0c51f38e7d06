// Package netem is braid's WAN test bed: two host network namespaces joined
// by a userspace link emulator, for measuring transports and whole clusters
// under delay, loss and limited rate on a kernel without the netem qdisc.
//
// # Topology
//
// Up creates the namespaces braid-a and braid-b (loopback up in each) and,
// for every path of the Spec, one TUN device in each namespace: path i is
// braid-a<i> with address 10.77.i.1 in braid-a and braid-b<i> with
// 10.77.i.2 in braid-b, point to point. The emulator reads every IP packet
// the kernel sends into one TUN and writes it into the other after the
// path's model of that direction let it through. Programs reach the other
// host at its path address: a listener in braid-a on 10.77.0.1 is reached
// from braid-b through path 0; on 10.77.1.1 through path 1. With several
// paths the kernel's MPTCP path manager is set up too: braid-a announces
// its address on every path but the first, so that a Multipath TCP
// connection to 10.77.0.1 gets a subflow through each path (to a listener
// bound to 0.0.0.0).
//
// # The model of one direction
//
// A packet first meets random loss and, if configured, a Gilbert–Elliott
// two-state channel (bursty loss); then a bottleneck of the given rate with
// a FIFO queue of bounded size (tail drop), which counts IP bytes (no
// link-layer overhead); then a fixed one-way propagation delay plus jitter.
// Jitter draws a uniform extra delay in [-J, +J] per packet but never
// reorders: a packet leaves no earlier than the one before it. Without a
// rate the bottleneck is the emulator itself.
//
// # Fidelity and ceiling
//
// The fidelity tests (root) hold the emulator to its spec with real
// sockets: a TCP flow within 5% of rate caps of 50 and 200 Mbit/s, a UDP
// echo within 1 ms of RTTs of 20 and 50 ms (the emulator adds 0.3–0.7 ms:
// its writer sleeps in clock_nanosleep on a locked thread, as Go's timers
// wake up to a millisecond late), and with BRAID_NETEM_MATHIS=1 a reno
// flow against the Mathis formula. On a 2-core machine it is trusted up to
// 500 Mbit/s per direction; a TCP flow through an unlimited path peaks at
// about 1.8 Gbit/s, the emulator's own ceiling. DirStats report its own
// drops (DroppedOverflow) and its worst lateness (MaxLateUs).
//
// # Spec strings
//
// A Spec is written as in `--net "rtt=50ms,loss=1%,rate=100M"`; see Parse
// for the grammar. Paths are separated by ';', settings by ','; a setting
// applies to both directions unless prefixed "ab." (braid-a to braid-b) or
// "ba.".
//
// # Ownership and cleanup
//
// One test bed runs on a machine at a time: Up takes an exclusive lock
// (/run/braid-net/lock) held for the life of the process that owns the
// emulator, removes what a killed owner left (its namespaces and the
// processes still inside them), and writes the bed's state and live
// counters to /run/braid-net/state.json for `braid net status`. Close
// removes the namespaces and the TUN devices; the TUN devices also vanish
// with the owner process, however it dies.
//
// A spec's cc=NAME may need the root namespace's
// net.ipv4.tcp_allowed_congestion_control widened (a namespace may only
// pick a congestion control the root one allows; a stock machine allows
// its default and reno). Up does that, loading the module tcp_NAME first
// if needed, and records the old value in /run/braid-net/sysctl.json
// before it changes anything; Close, Down (after a killed owner) and the
// next Up put it back, unless someone changed it again meanwhile.
//
// Everything here needs root on Linux and the ip command (iproute2).
package netem
