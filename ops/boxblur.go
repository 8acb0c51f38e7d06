package ops

import "image"

func init() {
	register(&op{
		info: Info{Name: "boxblur", Summary: "box blur: the mean of a (2·radius+1)² square"},
		params: []paramSpec{
			intParam("radius", "2", "half the side of the square, 1..64", 1, 64),
		},
		reach: func(a *args) int { r, _ := a.int("radius"); return r },
		apply: func(src *image.NRGBA, a *args) (image.Image, error) {
			r, _ := a.int("radius")
			return boxBlur(src, r), nil
		},
	})
}

// boxBlur works in integers with running sums, so results are exact and do
// not depend on where a row or column starts. Colours are weighted by alpha:
// sums of c·a and of a are divided at the end. With r ≤ 64 the sums stay
// below 255·255·129·129 < 2³².
func boxBlur(src *image.NRGBA, r int) *image.NRGBA {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	v := make([]uint32, w*h*4)
	for i := 0; i < len(src.Pix); i += 4 {
		a := uint32(src.Pix[i+3])
		v[i], v[i+1], v[i+2], v[i+3] = uint32(src.Pix[i])*a, uint32(src.Pix[i+1])*a, uint32(src.Pix[i+2])*a, a
	}
	tmp := make([]uint32, len(v))
	for y := range h {
		boxSums(tmp[y*w*4:], v[y*w*4:], w, 4, r)
	}
	for x := range w {
		boxSums(v[x*4:], tmp[x*4:], h, w*4, r)
	}
	n := uint32((2*r + 1) * (2*r + 1))
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(v); i += 4 {
		sa := v[i+3]
		a := (sa + n/2) / n
		if a == 0 {
			continue
		}
		p := dst.Pix[i : i+4 : i+4]
		p[0], p[1], p[2], p[3] = uint8((v[i]+sa/2)/sa), uint8((v[i+1]+sa/2)/sa), uint8((v[i+2]+sa/2)/sa), uint8(a)
	}
	return dst
}

// boxSums writes to dst the windowed sums of n 4-channel pixels of src,
// pixel i at offset i·stride, over [i-r, i+r] clamped to [0, n).
func boxSums(dst, src []uint32, n, stride, r int) {
	at := func(i int) int { return min(max(i, 0), n-1) * stride }
	var s [4]uint32
	for i := -r; i <= r; i++ {
		o := at(i)
		for c := range 4 {
			s[c] += src[o+c]
		}
	}
	for i := range n {
		o := i * stride
		copy(dst[o:o+4], s[:])
		in, out := at(i+r+1), at(i-r)
		for c := range 4 {
			s[c] += src[in+c] - src[out+c]
		}
	}
}
