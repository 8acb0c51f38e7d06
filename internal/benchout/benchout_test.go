package benchout

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]float64{0: 1, 0.5: 5.5, 1: 10, 0.25: 3.25} {
		if got := Quantile(v, q); math.Abs(got-want) > 1e-9 {
			t.Errorf("Quantile(1..10, %v) = %v, want %v", q, got, want)
		}
	}
	if got := Quantile([]float64{1, 2, 4}, 0.5); got != 2 {
		t.Errorf("median of 1, 2, 4 = %v", got)
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile(nil) is not NaN")
	}
}

// TestUnitRate: a job over a slow link shows its rate, not 0.
func TestUnitRate(t *testing.T) {
	for v, want := range map[float64]string{0.4987: "0.50", 12.345: "12.35", 99.994: "99.99", 100: "100", 35030.4: "35030"} {
		if got := UnitRate(v); got != want {
			t.Errorf("UnitRate(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	if err := WriteCSV(filepath.Join(dir, "a.csv"), [][]string{{"x", "y"}, {"1", "a,b"}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.csv")); string(b) != "x,y\n1,\"a,b\"\n" {
		t.Errorf("a.csv = %q", b)
	}
	if err := WriteJSON(filepath.Join(dir, "a.json"), map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.json")); string(b) != "{\n  \"n\": 1\n}\n" {
		t.Errorf("a.json = %q", b)
	}
	if err := WriteCSV(filepath.Join(dir, "none", "a.csv"), nil); err == nil {
		t.Error("WriteCSV into a missing directory succeeded")
	}
}

// TestSavePlotOneFormat: a plot is written once, as SVG, and nothing else.
func TestSavePlotOneFormat(t *testing.T) {
	dir := t.TempDir()
	p := plot.New()
	p.Title.Text = "t"
	if err := SavePlot(p, 2*vg.Inch, 2*vg.Inch, filepath.Join(dir, "fig")); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Name() != "fig.svg" {
		t.Fatalf("files %v, want fig.svg alone", files)
	}
	b, err := os.ReadFile(filepath.Join(dir, "fig.svg"))
	if err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("fig.svg is no SVG (%v): %.80s", err, b)
	}
}
