package netem

import (
	"fmt"
	"io"
)

// WriteDelta writes what the emulator did between two readings of
// Bed.Stats, a line per path: packets in, lost, dropped at the queue, by
// the emulator and by a cut.
func WriteDelta(w io.Writer, before, after []PathStats) {
	d := func(a, b DirStats) string {
		s := fmt.Sprintf("%d packets, %d lost, %d queue drops, %d emulator drops",
			b.InPackets-a.InPackets, b.LostRandom+b.LostBurst-a.LostRandom-a.LostBurst,
			b.DroppedQueue-a.DroppedQueue, b.DroppedOverflow-a.DroppedOverflow)
		if cut := b.DroppedCut - a.DroppedCut; cut > 0 {
			s += fmt.Sprintf(", %d dropped by the cut", cut)
		}
		return s
	}
	for i := range after {
		fmt.Fprintf(w, "  net path %d: a→b %s; b→a %s\n", i, d(before[i].AB, after[i].AB), d(before[i].BA, after[i].BA))
	}
}
