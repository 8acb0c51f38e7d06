package ops

import "image"

// sharpenSigma is the Gaussian the unsharp mask subtracts; its radius,
// ceil(3·sigma), is sharpen's reach.
const (
	sharpenSigma  = 1.0
	sharpenRadius = 3
)

func init() {
	register(&op{
		info: Info{Name: "sharpen", Summary: "unsharp mask: out = in + amount·(in − Gaussian(in, sigma 1))"},
		params: []paramSpec{
			floatParam("amount", "1", "strength, 0..16", 0, 16, false),
		},
		reach: func(*args) int { return sharpenRadius },
		apply: func(src *image.NRGBA, a *args) (image.Image, error) {
			amount, _ := a.float("amount")
			return sharpen(src, float32(amount)), nil
		},
	})
}

func sharpen(src *image.NRGBA, amount float32) *image.NRGBA {
	f := toFloat(src)
	blurred := convolve(f, gaussian(sharpenSigma, sharpenRadius))
	out := blurred.pix
	for i, v := range f.pix {
		out[i] = v + amount*(v-out[i])
	}
	if f.nc == 4 {
		// Keep premultiplied colours within their alpha.
		for i := 0; i < len(out); i += 4 {
			p := out[i : i+4 : i+4]
			a := min(max(p[3], 0), 255)
			p[0], p[1], p[2], p[3] = min(p[0], a), min(p[1], a), min(p[2], a), a
		}
	}
	return blurred.toNRGBA()
}
