// Package fair is `braid bench fair`: what braid's association takes from
// the traffic it shares a bottleneck with. Each case brings up the WAN test
// bed (package netem) with one path, runs braid's association (a `bench
// transport` pair of processes, bulk, several streams, any transport and
// congestion control) and beside it a competitor: long-lived bulk TCP
// flows of this process's own with TCP_CONGESTION set (reno, cubic, bbr),
// iperf3 -C, or more braid associations. Every receiver records the bytes
// it has received every 100 ms; the rates are taken over the interval in
// which all ran, less a warm-up at its start and a second at its end, and
// with them braid's rate over a competing flow's and Jain's index.
//
// The goal it reports against: on a clean path braid's association takes
// at most Config.Goal (1.3) times a competing CUBIC or BBR flow's rate;
// under random loss it may take more, which is what it is for, and the
// tables say how much.
//
// Run runs a grid of loss rates × settings × competitors, repeated; Write
// lays out results.json (with the run's provenance), results.csv,
// RESULTS.md and SVG plots. Root on Linux, as the bed is.
package fair
