package userop_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // image.Decode of the sample GIF
	"image/png"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/userop"
	"github.com/braidhq/braid/userop/wasmtest"
)

// cblurSource is the C example, built with clang and wasi-libc.
const cblurSource = "examples/ops/cblur/cblur.c"

// TestCBlurExample: examples/ops/cblur, a Gaussian blur in C compiled
// with clang and wasi-libc, registers as the server checks it, and run by
// the runtime gives the built-in blur's pixels exactly, for RGB (the
// sample GIF as PPM) and gray (a corner of the large sample as PGM) at
// several sigmas.
// Input that is no PPM or PGM fails the unit, saying so.
func TestCBlurExample(t *testing.T) {
	module := wasmtest.BuildC(t, cblurSource)
	if err := userop.Check(t.Context(), module, api.ABICommand, 0); err != nil {
		t.Fatalf("the server would refuse the module: %v", err)
	}
	var st store
	d := st.add(module)
	r := newRuntime(t, userop.Config{Fetch: st.fetch})
	rgb := decodeNRGBA(t, samples.GIF())
	gray := image.NewGray(image.Rect(0, 0, 96, 80)) // a corner of the large sample: enough, and quick under -race
	draw.Draw(gray, gray.Rect, decodeNRGBA(t, samples.PNG()), image.Point{}, draw.Src)
	var grayPNG bytes.Buffer
	if err := png.Encode(&grayPNG, gray); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		builtin []byte // the built-in's input
		pnm     []byte // cblur's: the same pixels
	}{
		{"rgb", samples.GIF(), ppm(rgb)},
		{"gray", grayPNG.Bytes(), pgm(gray)},
	} {
		for _, sigma := range []string{"2", "1.5", "0.4", "7"} {
			t.Run(fmt.Sprintf("%s/sigma=%s", c.name, sigma), func(t *testing.T) {
				in := userop.NewInvocation(api.ABICommand, api.OpLimits{MemoryMiB: 64, TimeoutMS: 60_000}, 0, [][2]string{{"sigma", sigma}})
				out, err := r.Run(t.Context(), "cblur", d, in, c.pnm)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ops.Run("blur", ops.Params{"sigma": sigma, "format": "png"}, c.builtin)
				if err != nil {
					t.Fatal(err)
				}
				comparePNM(t, out, decodeNRGBA(t, want))
			})
		}
	}
	in := userop.NewInvocation(api.ABICommand, api.OpLimits{}, 0, [][2]string{{"sigma", "2"}})
	if _, err := r.Run(t.Context(), "cblur", d, in, samples.GIF()); err == nil || !strings.Contains(err.Error(), "not a binary PPM (P6) or PGM (P5)") {
		t.Errorf("a GIF given to cblur: %v, want the unit to fail saying it is no PPM or PGM", err)
	}
	in = userop.NewInvocation(api.ABICommand, api.OpLimits{}, 0, [][2]string{{"sigma", "x"}})
	if _, err := r.Run(context.Background(), "cblur", d, in, ppm(rgb)); err == nil || !strings.Contains(err.Error(), "sigma must be a number") {
		t.Errorf("sigma x: %v, want the unit to fail saying sigma must be a number", err)
	}
}

// comparePNM checks that the PPM or PGM got has want's pixels (a PGM's
// sample against each of the R, G and B).
func comparePNM(t *testing.T, got []byte, want *image.NRGBA) {
	t.Helper()
	var magic string
	var w, h, maxval int
	n, err := fmt.Fscan(bytes.NewReader(got), &magic, &w, &h, &maxval)
	if err != nil || n != 4 || (magic != "P6" && magic != "P5") || maxval != 255 {
		t.Fatalf("the output is not an 8-bit PPM or PGM: %q… (%v)", got[:min(len(got), 20)], err)
	}
	if w != want.Rect.Dx() || h != want.Rect.Dy() {
		t.Fatalf("the output is %d×%d, want %v", w, h, want.Rect.Size())
	}
	nc := 3
	if magic == "P5" {
		nc = 1
	}
	pix := got[len(got)-w*h*nc:]
	diffs := 0
	for i := range w * h {
		for ch := range 3 {
			if pix[i*nc+ch%nc] != want.Pix[4*i+ch] {
				if diffs++; diffs <= 3 {
					t.Errorf("pixel (%d, %d) channel %d: %d, the built-in's %d", i%w, i/w, ch, pix[i*nc+ch%nc], want.Pix[4*i+ch])
				}
			}
		}
	}
	if diffs > 0 {
		t.Errorf("%d of %d samples differ from the built-in's", diffs, w*h*3)
	}
}

func decodeNRGBA(t *testing.T, b []byte) *image.NRGBA {
	t.Helper()
	m, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewNRGBA(image.Rect(0, 0, m.Bounds().Dx(), m.Bounds().Dy()))
	draw.Draw(out, out.Rect, m, m.Bounds().Min, draw.Src)
	return out
}

// ppm encodes an opaque image as a binary PPM.
func ppm(m *image.NRGBA) []byte {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	b := fmt.Appendf(nil, "P6\n%d %d\n255\n", w, h)
	for i := 0; i < len(m.Pix); i += 4 {
		b = append(b, m.Pix[i:i+3]...)
	}
	return b
}

// pgm encodes a gray image as a binary PGM.
func pgm(m *image.Gray) []byte {
	return append(fmt.Appendf(nil, "P5\n%d %d\n255\n", m.Rect.Dx(), m.Rect.Dy()), m.Pix...)
}
