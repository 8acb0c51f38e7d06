package ops

import (
	"image"
	"math"
)

func init() {
	register(&op{
		info:  Info{Name: "sobel", Summary: "Sobel edge magnitude of the luma (over black), as an 8-bit gray image"},
		reach: func(*args) int { return 1 },
		apply: func(src *image.NRGBA, _ *args) (image.Image, error) { return sobel(src), nil },
	})
}

// sobel returns min(255, round(√(gx²+gy²))) of the 3×3 Sobel gradients.
func sobel(src *image.NRGBA) *image.Gray {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	// Luma with a one-pixel clamped border.
	pw := w + 2
	l := make([]int32, pw*(h+2))
	for y := -1; y <= h; y++ {
		row := src.Pix[min(max(y, 0), h-1)*src.Stride:]
		out := l[(y+1)*pw:][:pw]
		for x := -1; x <= w; x++ {
			p := row[4*min(max(x, 0), w-1):][:4]
			out[x+1] = (int32(luma(p[0], p[1], p[2]))*int32(p[3]) + 127) / 255
		}
	}
	dst := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		up, mid, down := l[y*pw:][:pw], l[(y+1)*pw:][:pw], l[(y+2)*pw:][:pw]
		out := dst.Pix[y*dst.Stride:][:w]
		for x := range w {
			gx := up[x+2] + 2*mid[x+2] + down[x+2] - up[x] - 2*mid[x] - down[x]
			gy := down[x] + 2*down[x+1] + down[x+2] - up[x] - 2*up[x+1] - up[x+2]
			m := math.Sqrt(float64(gx*gx + gy*gy))
			out[x] = uint8(min(m+0.5, 255))
		}
	}
	return dst
}
