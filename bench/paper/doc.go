// Package paper is the engine behind `braid bench paper`: it regenerates the
// measurements of section IV of Ghinea et al. (CSCS 2013) on one machine and
// goes past them with the policies the paper left as future work.
//
// Run starts a braid server in this process and every worker as a separate
// `braid worker` process on loopback, restarted for each worker set. A
// slower machine is emulated by a worker process in a cgroup v1 CPU quota.
// For each figure's lines and each number of units it submits a repeat job
// of the blur operation on the ~19 KB sample GIF, several times, and reads
// the paper's metric from the job status: (time the server received the
// last result − time it received the job) / units. Each figure is written
// as CSV and JSON (every run), drawn as SVG and PNG, and REPORT.md sets the
// results beside the paper's claims.
package paper
