package tperf

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes r as a human-readable table (header and one row).
func (r Result) WriteTable(w io.Writer) error {
	return WriteTable(w, []Result{r})
}

// WriteTable writes rs as one table.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "transport\tmode\tstreams\tsize\tseconds\tMB\tmessages\tGbit/s\tmsg/s\tCPU s\tCPU s/GB\tp50 ms\tp99 ms\tmax ms\t")
	for _, r := range rs {
		lat := "-\t-\t-"
		if r.LatencyMax > 0 {
			lat = fmt.Sprintf("%.2f\t%.2f\t%.2f", r.LatencyP50, r.LatencyP99, r.LatencyMax)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.1f\t%d\t%.3f\t%.0f\t%.2f\t%.2f\t%s\t\n",
			r.Transport, r.Mode, r.Streams, r.Size, r.Seconds, float64(r.Bytes)/1e6, r.Messages,
			r.Gbps, r.MsgPerSec, r.CPUSeconds, r.CPUSecPerGB, lat)
	}
	return tw.Flush()
}

// WriteJSON writes rs as an indented JSON array.
func WriteJSON(w io.Writer, rs []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}
