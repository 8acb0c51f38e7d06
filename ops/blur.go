package ops

import (
	"image"
	"math"
)

func init() {
	register(&op{
		info: Info{Name: "blur", Summary: "Gaussian blur"},
		params: []paramSpec{
			floatParam("sigma", "2", "standard deviation in pixels, in (0, 64]; default radius/3 when only radius is given", 0, 64, true),
			intParam("radius", "", "kernel radius in pixels, 1..64; default ceil(3·sigma)", 1, 64),
		},
		reach: func(a *args) int { _, r := blurShape(a); return r },
		apply: func(src *image.NRGBA, a *args) (image.Image, error) {
			sigma, r := blurShape(a)
			return convolve(toFloat(src), gaussian(sigma, r)).toNRGBA(), nil
		},
	})
}

// blurShape returns the Gaussian's sigma and radius from the parameters.
func blurShape(a *args) (sigma float64, radius int) {
	sigma, sigmaSet := a.float("sigma")
	radius, radiusSet := a.int("radius")
	switch {
	case radiusSet && !sigmaSet:
		sigma = float64(radius) / 3
	case !radiusSet:
		radius = min(max(int(math.Ceil(3*sigma)), 1), 192)
	}
	return sigma, radius
}

// gaussian returns the normalized half kernel of radius r: k[0] the centre.
func gaussian(sigma float64, r int) []float32 {
	w := make([]float64, r+1)
	sum := 0.0
	for j := range w {
		w[j] = math.Exp(-float64(j*j) / (2 * sigma * sigma))
		sum += w[j]
		if j > 0 {
			sum += w[j]
		}
	}
	k := make([]float32, r+1)
	for j := range k {
		k[j] = float32(w[j] / sum)
	}
	return k
}
