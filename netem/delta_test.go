package netem

import (
	"strings"
	"testing"
)

func TestWriteDelta(t *testing.T) {
	before := []PathStats{{AB: DirStats{InPackets: 10, LostRandom: 1}}, {}}
	after := []PathStats{{AB: DirStats{InPackets: 110, LostRandom: 3, LostBurst: 2, DroppedQueue: 4}, BA: DirStats{InPackets: 7}},
		{AB: DirStats{DroppedCut: 5}}}
	var b strings.Builder
	WriteDelta(&b, before, after)
	want := "  net path 0: a→b 100 packets, 4 lost, 4 queue drops, 0 emulator drops; b→a 7 packets, 0 lost, 0 queue drops, 0 emulator drops\n" +
		"  net path 1: a→b 0 packets, 0 lost, 0 queue drops, 0 emulator drops, 5 dropped by the cut; b→a 0 packets, 0 lost, 0 queue drops, 0 emulator drops\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
