package paper

import (
	"os"
	"testing"
	"time"
)

// One thread cannot spend more CPU time than wall-clock time; a clock too
// coarse for the operation breaks that.
func TestFloorCPUWithinWall(t *testing.T) {
	f, err := measureFloor(5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if f.OpCPUMS <= 0 || f.OpCPUMS > f.OpMS*1.01 {
		t.Fatalf("op %.3f ms wall, %.3f ms CPU: CPU must be positive and at most the wall time", f.OpMS, f.OpCPUMS)
	}
	if f.FloorMS != f.OpMS/2 || f.CPUFloorMS != f.OpCPUMS/2 {
		t.Fatalf("floor %+v is not the op time ÷ 2 cores", f)
	}
}

// procCPU reads what getrusage reports for the same process, to a tick.
func TestProcCPU(t *testing.T) {
	// Spin until getrusage has counted 200 ms more (not for 200 ms of wall
	// time: on a loaded machine this thread gets less than that).
	before, self0 := procCPU(os.Getpid()), selfCPU()
	for t0 := time.Now(); selfCPU()-self0 < 200*time.Millisecond; {
		if time.Since(t0) > 20*time.Second {
			t.Fatal("200 ms of CPU not had in 20 s")
		}
	}
	p, s := procCPU(os.Getpid()), selfCPU()
	if p-before < 100*time.Millisecond {
		t.Fatalf("procCPU rose by %v over 200 ms of spinning", p-before)
	}
	if d := s - p; d < -20*time.Millisecond || d > 50*time.Millisecond {
		t.Fatalf("procCPU %v, getrusage %v: they should agree to a few ticks", p, s)
	}
}
