package ops

import "image"

func init() {
	register(&op{
		info:  Info{Name: "grayscale", Summary: "luma (ITU-R BT.601, as image/color.GrayModel); opaque results are 8-bit gray images"},
		reach: func(*args) int { return 0 },
		apply: func(src *image.NRGBA, _ *args) (image.Image, error) { return grayscale(src), nil },
	})
}

// luma matches color.GrayModel.
func luma(r, g, b uint8) uint8 {
	return uint8((19595*uint32(r) + 38470*uint32(g) + 7471*uint32(b) + 1<<15) >> 16)
}

// grayscale returns an *image.Gray for an opaque image and an *image.NRGBA
// with equal colour channels, keeping alpha, otherwise.
func grayscale(src *image.NRGBA) image.Image {
	if opaque(src) {
		dst := image.NewGray(src.Rect)
		for i, j := 0, 0; i < len(src.Pix); i, j = i+4, j+1 {
			dst.Pix[j] = luma(src.Pix[i], src.Pix[i+1], src.Pix[i+2])
		}
		return dst
	}
	dst := image.NewNRGBA(src.Rect)
	for i := 0; i < len(src.Pix); i += 4 {
		y := luma(src.Pix[i], src.Pix[i+1], src.Pix[i+2])
		dst.Pix[i], dst.Pix[i+1], dst.Pix[i+2], dst.Pix[i+3] = y, y, y, src.Pix[i+3]
	}
	return dst
}
