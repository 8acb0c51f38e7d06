package ops

import (
	"image"
	"math"
)

func init() {
	register(&op{
		info: Info{Name: "resize", Summary: "Catmull-Rom resampling to width×height; give one to keep the aspect ratio"},
		params: []paramSpec{
			intParam("width", "", "output width, 1..16384; default: kept in proportion to height", 1, MaxDimension),
			intParam("height", "", "output height, 1..16384; default: kept in proportion to width", 1, MaxDimension),
		},
		check: func(a args) error {
			_, w := a.int("width")
			_, h := a.int("height")
			if !w && !h {
				return badParam("resize: give width, height or both")
			}
			return nil
		},
		apply: func(src *image.NRGBA, a *args) (image.Image, error) {
			w, h, err := resizeDims(src.Rect.Dx(), src.Rect.Dy(), a)
			if err != nil {
				return nil, err
			}
			return resize(src, w, h), nil
		},
	})
}

// resizeDims returns the output size, deriving a missing side from the
// input's aspect ratio.
func resizeDims(sw, sh int, a *args) (w, h int, err error) {
	w, wSet := a.int("width")
	h, hSet := a.int("height")
	if !wSet {
		w = max(1, int(math.Round(float64(sw)*float64(h)/float64(sh))))
	}
	if !hSet {
		h = max(1, int(math.Round(float64(sh)*float64(w)/float64(sw))))
	}
	if w > MaxDimension || h > MaxDimension || w*h > MaxPixels {
		return 0, 0, badParam("resize: output would be %d×%d, over the limit of %d per side and %d pixels",
			w, h, MaxDimension, MaxPixels)
	}
	return w, h, nil
}

func resize(src *image.NRGBA, w, h int) *image.NRGBA {
	f := toFloat(src)
	// Columns first: tmp is f.h rows of w pixels.
	tmp := newFimage(w, f.h, f.nc)
	xs := resampleWeights(f.w, w)
	for y := range f.h {
		in, out := f.row(y), tmp.row(y)
		for x, t := range xs {
			for c := range f.nc {
				s := float32(0)
				for j, wt := range t.w {
					s += wt * in[(t.first+j)*f.nc+c]
				}
				out[x*f.nc+c] = s
			}
		}
	}
	dst := newFimage(w, h, f.nc)
	for y, t := range resampleWeights(f.h, h) {
		out := dst.row(y)
		for j, wt := range t.w {
			in := tmp.row(t.first + j)
			for i := range out {
				out[i] += wt * in[i]
			}
		}
	}
	if dst.nc == 4 {
		for i := 0; i < len(dst.pix); i += 4 {
			p := dst.pix[i : i+4 : i+4]
			a := min(max(p[3], 0), 255)
			p[0], p[1], p[2], p[3] = min(p[0], a), min(p[1], a), min(p[2], a), a
		}
	}
	return dst.toNRGBA()
}

// taps are the weights of source pixels first, first+1, … for one output pixel.
type taps struct {
	first int
	w     []float32
}

// resampleWeights returns normalized Catmull-Rom weights mapping n source
// pixels onto m, widening the filter by the scale factor when shrinking.
func resampleWeights(n, m int) []taps {
	scale := float64(n) / float64(m)
	support := 2 * max(scale, 1)
	out := make([]taps, m)
	for i := range out {
		centre := (float64(i)+0.5)*scale - 0.5
		lo := max(int(math.Ceil(centre-support)), 0)
		hi := min(int(math.Floor(centre+support)), n-1)
		ws := make([]float64, 0, hi-lo+1)
		sum := 0.0
		for j := lo; j <= hi; j++ {
			v := catmullRom((float64(j) - centre) / max(scale, 1))
			ws = append(ws, v)
			sum += v
		}
		t := taps{first: lo, w: make([]float32, len(ws))}
		for j, v := range ws {
			t.w[j] = float32(v / sum)
		}
		out[i] = t
	}
	return out
}

func catmullRom(x float64) float64 {
	x = math.Abs(x)
	switch {
	case x < 1:
		return (1.5*x-2.5)*x*x + 1
	case x < 2:
		return ((-0.5*x+2.5)*x-4)*x + 2
	}
	return 0
}
