package ops

import "image"

// fimage is a float32 working copy of an image: channels interleaved, three
// (RGB) for opaque images and four (alpha-premultiplied RGBA) otherwise,
// values in [0, 255].
type fimage struct {
	w, h, nc int
	pix      []float32
}

func newFimage(w, h, nc int) fimage {
	return fimage{w: w, h: h, nc: nc, pix: make([]float32, w*h*nc)}
}

func (f fimage) row(y int) []float32 { return f.pix[y*f.w*f.nc:][:f.w*f.nc] }

// toFloat converts a packed NRGBA image, premultiplying alpha unless the
// image is opaque.
func toFloat(m *image.NRGBA) fimage {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	if opaque(m) {
		f := newFimage(w, h, 3)
		for i, j := 0, 0; i < len(m.Pix); i, j = i+4, j+3 {
			p := m.Pix[i : i+3 : i+3]
			q := f.pix[j : j+3 : j+3]
			q[0], q[1], q[2] = float32(p[0]), float32(p[1]), float32(p[2])
		}
		return f
	}
	f := newFimage(w, h, 4)
	for i := 0; i < len(m.Pix); i += 4 {
		p := m.Pix[i : i+4 : i+4]
		q := f.pix[i : i+4 : i+4]
		a := float32(p[3])
		s := a * (1.0 / 255)
		q[0], q[1], q[2], q[3] = float32(p[0])*s, float32(p[1])*s, float32(p[2])*s, a
	}
	return f
}

// toNRGBA rounds f to 8 bits, clamping out-of-range values, and undoes the
// alpha premultiplication.
func (f fimage) toNRGBA() *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, f.w, f.h))
	if f.nc == 3 {
		for i, j := 0, 0; i < len(m.Pix); i, j = i+4, j+3 {
			q := f.pix[j : j+3 : j+3]
			p := m.Pix[i : i+4 : i+4]
			p[0], p[1], p[2], p[3] = to8(q[0]), to8(q[1]), to8(q[2]), 0xff
		}
		return m
	}
	for i := 0; i < len(m.Pix); i += 4 {
		q := f.pix[i : i+4 : i+4]
		p := m.Pix[i : i+4 : i+4]
		a := to8(q[3])
		if a == 0 {
			continue // transparent black
		}
		s := 255 / q[3]
		p[0], p[1], p[2], p[3] = to8(q[0]*s), to8(q[1]*s), to8(q[2]*s), a
	}
	return m
}

// to8 rounds v to the nearest uint8, clamping to [0, 255].
func to8(v float32) uint8 {
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	}
	return uint8(v + 0.5)
}

// convolve applies the symmetric kernel k (k[0] the centre, k[j] the weight
// at distance ±j) along rows then columns, clamping at the edges. Every
// output value is computed from the same inputs in the same order whatever
// the image's size, which keeps tiled results exact.
func convolve(src fimage, k []float32) fimage {
	tmp := newFimage(src.w, src.h, src.nc)
	r, nc := len(k)-1, src.nc
	pad := make([]float32, (src.w+2*r)*nc)
	for y := range src.h {
		in := src.row(y)
		copy(pad[r*nc:], in)
		for j := range r {
			copy(pad[j*nc:(j+1)*nc], in[:nc])
			copy(pad[(r+src.w+j)*nc:][:nc], in[len(in)-nc:])
		}
		convolveRow(tmp.row(y), pad, k, nc)
	}
	dst := newFimage(src.w, src.h, src.nc)
	for y := range src.h {
		out := dst.row(y)
		centre := tmp.row(y)
		for i, v := range centre {
			out[i] = k[0] * v
		}
		for j := 1; j <= r; j++ {
			up, down := tmp.row(max(y-j, 0)), tmp.row(min(y+j, src.h-1))
			axpy2(out, k[j], up, down)
		}
	}
	return dst
}

// convolveRow sets out[i] = k[0]·pad[i+r·nc] + Σ k[j]·(pad[i+(r-j)·nc] + pad[i+(r+j)·nc]),
// summing in order of j, one kernel tap at a time across the row.
func convolveRow(out, pad, k []float32, nc int) {
	r := len(k) - 1
	centre := pad[r*nc:][:len(out)]
	for i, v := range centre {
		out[i] = k[0] * v
	}
	for j := 1; j <= r; j++ {
		axpy2(out, k[j], pad[(r-j)*nc:], pad[(r+j)*nc:])
	}
}

// axpy2 adds w·(a[i]+b[i]) to out[i].
func axpy2(out []float32, w float32, a, b []float32) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] += w * (a[i] + b[i])
	}
}
