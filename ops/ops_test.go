package ops_test

import (
	"errors"
	"image"
	"image/color"
	"slices"
	"strings"
	"testing"

	"github.com/braidhq/braid/ops"
)

func TestCatalogue(t *testing.T) {
	infos := ops.Catalogue()
	var names []string
	for _, info := range infos {
		names = append(names, info.Name)
		op, ok := ops.Lookup(info.Name)
		if !ok || op.Name() != info.Name {
			t.Errorf("Lookup(%q) = %v, %v", info.Name, op, ok)
		}
		if !slices.ContainsFunc(info.Params, func(p ops.ParamInfo) bool { return p.Name == "format" }) {
			t.Errorf("%s: no format parameter", info.Name)
		}
		_, err := op.Reach(defaultParams(info.Name))
		if tileable := err == nil; tileable != info.Tileable {
			t.Errorf("%s: Tileable = %v, but Reach error %v", info.Name, info.Tileable, err)
		}
	}
	want := []string{"blur", "boxblur", "grayscale", "noop", "resize", "sharpen", "sobel"}
	if !slices.Equal(names, want) {
		t.Errorf("Catalogue names = %v, want %v", names, want)
	}
	if _, ok := ops.Lookup("nope"); ok {
		t.Error(`Lookup("nope") succeeded`)
	}
}

// defaultParams returns the minimal valid parameters for an op.
func defaultParams(name string) ops.Params {
	if name == "resize" {
		return ops.Params{"width": "10"}
	}
	return nil
}

func TestValidate(t *testing.T) {
	tests := []struct {
		op      string
		p       ops.Params
		wantErr string // substring; "" means valid
	}{
		{"blur", nil, ""},
		{"blur", ops.Params{"sigma": "0.5"}, ""},
		{"blur", ops.Params{"sigma": "64"}, ""},
		{"blur", ops.Params{"radius": "64"}, ""},
		{"blur", ops.Params{"sigma": "3", "radius": "4", "format": "png"}, ""},
		{"blur", ops.Params{"sigma": "abc"}, `blur: sigma "abc" is not a number`},
		{"blur", ops.Params{"sigma": "NaN"}, `blur: sigma "NaN" is not a number`},
		{"blur", ops.Params{"sigma": "0"}, `blur: sigma 0 is out of range (0, 64]`},
		{"blur", ops.Params{"sigma": "64.5"}, `out of range`},
		{"blur", ops.Params{"sigma": "+Inf"}, `out of range`},
		{"blur", ops.Params{"radius": "0"}, `blur: radius 0 is out of range [1, 64]`},
		{"blur", ops.Params{"radius": "65"}, `out of range`},
		{"blur", ops.Params{"radius": "2.5"}, `blur: radius "2.5" is not an integer`},
		{"blur", ops.Params{"sigmaa": "1"}, `blur: unknown parameter "sigmaa" (known: sigma, radius, format)`},
		{"blur", ops.Params{"format": "bmp"}, `blur: format "bmp" is not one of`},
		{"boxblur", ops.Params{"radius": "1"}, ""},
		{"boxblur", ops.Params{"radius": "-1"}, "out of range"},
		{"sharpen", ops.Params{"amount": "2.5"}, ""},
		{"sharpen", ops.Params{"amount": "-1"}, "out of range"},
		{"grayscale", ops.Params{"format": "gif"}, ""},
		{"grayscale", ops.Params{"sigma": "1"}, `unknown parameter "sigma"`},
		{"sobel", nil, ""},
		{"noop", ops.Params{"format": "jpeg"}, ""},
		{"noop", ops.Params{"x": "1"}, "unknown parameter"},
		{"noop", ops.Params{"": "1"}, `noop: unknown parameter "" (known: format)`},
		{"blur", ops.Params{"": "1", "sigma": "1"}, `unknown parameter ""`},
		{"resize", ops.Params{"width": "100"}, ""},
		{"resize", ops.Params{"height": "16384"}, ""},
		{"resize", ops.Params{"width": "3", "height": "4"}, ""},
		{"resize", nil, "resize: give width, height or both"},
		{"resize", ops.Params{"width": "0"}, "resize: width 0 is out of range [1, 16384]"},
		{"resize", ops.Params{"height": "16385"}, "out of range"},
		{"resize", ops.Params{"width": "wide"}, "not an integer"},
	}
	for _, tt := range tests {
		op, _ := ops.Lookup(tt.op)
		err := op.Validate(tt.p)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s.Validate(%v) = %v, want nil", tt.op, tt.p, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s.Validate(%v) = %v, want error containing %q", tt.op, tt.p, err, tt.wantErr)
		case err != nil && !errors.Is(err, ops.ErrBadParam):
			t.Errorf("%s.Validate(%v) = %v, does not wrap ErrBadParam", tt.op, tt.p, err)
		}
	}
}

// TestValidateUnknownNamesInAnyOrder: with several unknown names, one of
// them empty, Validate refuses and names the smallest, "", whatever order
// the map gives (the API fuzzer found jobs accepted at submit and failed by
// the worker when the empty name came after another).
func TestValidateUnknownNamesInAnyOrder(t *testing.T) {
	op, _ := ops.Lookup("grayscale")
	for range 50 {
		err := op.Validate(ops.Params{"__main__": "1", "": "2", "zz": "3"})
		if err == nil || !strings.Contains(err.Error(), `unknown parameter ""`) {
			t.Fatalf("Validate = %v, want unknown parameter \"\"", err)
		}
	}
}

func TestReach(t *testing.T) {
	tests := []struct {
		op   string
		p    ops.Params
		want int
	}{
		{"blur", nil, 6},
		{"blur", ops.Params{"sigma": "1"}, 3},
		{"blur", ops.Params{"sigma": "0.1"}, 1},
		{"blur", ops.Params{"sigma": "64"}, 192},
		{"blur", ops.Params{"radius": "9"}, 9},
		{"blur", ops.Params{"sigma": "5", "radius": "2"}, 2},
		{"boxblur", nil, 2},
		{"boxblur", ops.Params{"radius": "7"}, 7},
		{"sharpen", ops.Params{"amount": "3"}, 3},
		{"grayscale", nil, 0},
		{"sobel", nil, 1},
		{"noop", nil, 0},
	}
	for _, tt := range tests {
		op, _ := ops.Lookup(tt.op)
		if got, err := op.Reach(tt.p); err != nil || got != tt.want {
			t.Errorf("%s.Reach(%v) = %d, %v, want %d", tt.op, tt.p, got, err, tt.want)
		}
	}
	resize, _ := ops.Lookup("resize")
	if _, err := resize.Reach(ops.Params{"width": "5"}); !errors.Is(err, ops.ErrNotTileable) {
		t.Errorf("resize.Reach error = %v, want ErrNotTileable", err)
	}
	blur, _ := ops.Lookup("blur")
	if _, err := blur.Reach(ops.Params{"sigma": "x"}); !errors.Is(err, ops.ErrBadParam) {
		t.Errorf("blur.Reach(bad) error = %v, want ErrBadParam", err)
	}
}

func uniform(w, h int, c color.NRGBA) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(m.Pix); i += 4 {
		m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return m
}

func apply(t *testing.T, name string, img image.Image, p ops.Params) image.Image {
	t.Helper()
	op, ok := ops.Lookup(name)
	if !ok {
		t.Fatalf("no op %q", name)
	}
	out, err := op.Apply(img, p)
	if err != nil {
		t.Fatalf("%s.Apply: %v", name, err)
	}
	return out
}

func TestConstantImages(t *testing.T) {
	colors := []color.NRGBA{{0, 0, 0, 255}, {255, 255, 255, 255}, {12, 200, 77, 255}, {12, 200, 77, 128}, {250, 3, 90, 7}}
	tests := []struct {
		op string
		p  ops.Params
	}{
		{"blur", nil}, {"blur", ops.Params{"sigma": "10"}}, {"blur", ops.Params{"radius": "1"}},
		{"boxblur", nil}, {"boxblur", ops.Params{"radius": "64"}},
		{"sharpen", ops.Params{"amount": "5"}},
		{"resize", ops.Params{"width": "7", "height": "31"}},
		{"resize", ops.Params{"width": "40"}},
		{"noop", nil},
	}
	for _, tt := range tests {
		for _, c := range colors {
			out := apply(t, tt.op, uniform(17, 13, c), tt.p)
			b := out.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					if got := color.NRGBAModel.Convert(out.At(x, y)); got != c {
						t.Fatalf("%s %v of constant %v: pixel (%d,%d) = %v", tt.op, tt.p, c, x, y, got)
					}
				}
			}
		}
	}
}

func TestGrayscale(t *testing.T) {
	tests := []struct {
		in   color.NRGBA
		want color.Color
	}{
		{color.NRGBA{255, 0, 0, 255}, color.Gray{76}},
		{color.NRGBA{0, 255, 0, 255}, color.Gray{150}},
		{color.NRGBA{0, 0, 255, 255}, color.Gray{29}},
		{color.NRGBA{255, 255, 255, 255}, color.Gray{255}},
		{color.NRGBA{100, 100, 100, 255}, color.Gray{100}},
		{color.NRGBA{255, 0, 0, 100}, color.NRGBA{76, 76, 76, 100}},
	}
	for _, tt := range tests {
		out := apply(t, "grayscale", uniform(3, 2, tt.in), nil)
		if got := out.At(1, 1); got != tt.want {
			t.Errorf("grayscale(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestSobel(t *testing.T) {
	flat := apply(t, "sobel", uniform(9, 9, color.NRGBA{90, 30, 200, 255}), nil).(*image.Gray)
	for i, v := range flat.Pix {
		if v != 0 {
			t.Fatalf("sobel of a flat image: pixel %d = %d", i, v)
		}
	}
	// A vertical step from black to white: |gx| = 4·255 beside it, 0 elsewhere.
	step := uniform(8, 4, color.NRGBA{0, 0, 0, 255})
	for y := range 4 {
		for x := 4; x < 8; x++ {
			step.SetNRGBA(x, y, color.NRGBA{255, 255, 255, 255})
		}
	}
	edges := apply(t, "sobel", step, nil).(*image.Gray)
	for x, want := range []uint8{0, 0, 0, 255, 255, 0, 0, 0} {
		if got := edges.GrayAt(x, 2).Y; got != want {
			t.Errorf("sobel step: pixel (%d,2) = %d, want %d", x, got, want)
		}
	}
}

func TestBlurSpreads(t *testing.T) {
	// One white pixel on black: blur spreads it symmetrically, no further
	// than the radius.
	m := uniform(21, 21, color.NRGBA{0, 0, 0, 255})
	m.SetNRGBA(10, 10, color.NRGBA{255, 255, 255, 255})
	for _, name := range []string{"blur", "boxblur"} {
		out := toNRGBA(apply(t, name, m, ops.Params{"radius": "3"}))
		at := func(x, y int) uint8 { return out.NRGBAAt(x, y).R }
		if at(10, 10) == 0 || at(10, 10) == 255 || at(12, 10) == 0 || at(14, 10) != 0 || at(10, 14) != 0 {
			t.Errorf("%s: centre %d, at 2 %d, beyond radius %d", name, at(10, 10), at(12, 10), at(14, 10))
		}
		if at(8, 10) != at(12, 10) || at(10, 8) != at(10, 12) || at(8, 10) != at(10, 8) {
			t.Errorf("%s: not symmetric", name)
		}
	}
}

func TestSharpen(t *testing.T) {
	// A step gets overshoot on both sides; amount 0 is the identity.
	m := uniform(10, 3, color.NRGBA{100, 100, 100, 255})
	for y := range 3 {
		for x := 5; x < 10; x++ {
			m.SetNRGBA(x, y, color.NRGBA{150, 150, 150, 255})
		}
	}
	out := toNRGBA(apply(t, "sharpen", m, nil))
	if dark, light := out.NRGBAAt(4, 1).R, out.NRGBAAt(5, 1).R; dark >= 100 || light <= 150 {
		t.Errorf("sharpen step: %d, %d; want < 100, > 150", dark, light)
	}
	if same := toNRGBA(apply(t, "sharpen", m, ops.Params{"amount": "0"})); !slices.Equal(same.Pix, m.Pix) {
		t.Error("sharpen amount 0 changed the image")
	}
}

func TestResize(t *testing.T) {
	src := pattern(40, 30, true)
	tests := []struct {
		p    ops.Params
		w, h int
	}{
		{ops.Params{"width": "20"}, 20, 15},
		{ops.Params{"height": "60"}, 80, 60},
		{ops.Params{"width": "7", "height": "100"}, 7, 100},
		{ops.Params{"width": "1"}, 1, 1},
		{ops.Params{"width": "40", "height": "30"}, 40, 30},
	}
	for _, tt := range tests {
		if got := apply(t, "resize", src, tt.p).Bounds(); got != image.Rect(0, 0, tt.w, tt.h) {
			t.Errorf("resize %v: bounds %v, want %dx%d", tt.p, got, tt.w, tt.h)
		}
	}
	op, _ := ops.Lookup("resize")
	if _, err := op.Apply(uniform(1, 1000, color.NRGBA{A: 255}), ops.Params{"width": "1000"}); !errors.Is(err, ops.ErrBadParam) {
		t.Errorf("resize to 1000×1000000: error %v, want ErrBadParam", err)
	}
}

// TestApplyInputTypes checks that every image type gives the same result as
// its NRGBA equivalent, including sub-images off the origin.
func TestApplyInputTypes(t *testing.T) {
	base := pattern(30, 20, false)
	rgba := image.NewRGBA(image.Rect(5, 5, 35, 25))
	gray := image.NewGray(image.Rect(0, 0, 30, 20))
	for y := range 20 {
		for x := range 30 {
			rgba.Set(x+5, y+5, base.At(x, y))
			gray.Set(x, y, base.At(x, y))
		}
	}
	pal := image.NewPaletted(image.Rect(0, 0, 30, 20), color.Palette{color.NRGBA{1, 2, 3, 255}, color.NRGBA{200, 100, 0, 255}})
	for i := range pal.Pix {
		pal.Pix[i] = uint8(i % 3 % 2)
	}
	jpegImg, _, _ := image.Decode(bytesReader(encodeJPEG(t, base)))
	big := pattern(50, 40, false)
	inputs := []image.Image{rgba, gray, pal, jpegImg, big.SubImage(image.Rect(10, 10, 40, 30))}
	for _, in := range inputs {
		want := toNRGBA(in)
		for _, name := range []string{"blur", "sobel", "grayscale"} {
			got := toNRGBA(apply(t, name, in, nil))
			if ref := toNRGBA(apply(t, name, want, nil)); !slices.Equal(got.Pix, ref.Pix) {
				t.Errorf("%s of %T differs from %s of its NRGBA copy", name, in, name)
			}
		}
	}
}

// toNRGBA converts with the standard library, as a reference.
func toNRGBA(img image.Image) *image.NRGBA {
	b := img.Bounds()
	m := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			m.Set(x, y, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return m
}
