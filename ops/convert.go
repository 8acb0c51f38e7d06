package ops

import (
	"image"
	"image/color"
	"image/draw"
)

// toNRGBA returns img as a packed, origin-based *image.NRGBA. An image that
// already is one is returned as is, so callers must not modify the result.
func toNRGBA(img image.Image) *image.NRGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if m, ok := img.(*image.NRGBA); ok && b.Min == (image.Point{}) && m.Stride == 4*w {
		return m
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	switch m := img.(type) {
	case *image.Paletted:
		palettedToNRGBA(dst, m)
	case *image.Gray:
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:w]
			out := dst.Pix[y*dst.Stride:][:4*w]
			for x, g := range row {
				out[4*x], out[4*x+1], out[4*x+2], out[4*x+3] = g, g, g, 0xff
			}
		}
	case *image.NRGBA:
		for y := range h {
			copy(dst.Pix[y*dst.Stride:][:4*w], m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):])
		}
	case *image.RGBA:
		rgbaToNRGBA(dst, m)
	case *image.YCbCr:
		// YCbCr is opaque, so premultiplied and straight alpha coincide and
		// draw's fast YCbCr→RGBA path yields NRGBA bytes.
		draw.Draw((*image.RGBA)(dst), dst.Rect, m, b.Min, draw.Src)
	default:
		draw.Draw(dst, dst.Rect, img, b.Min, draw.Src)
	}
	return dst
}

func palettedToNRGBA(dst *image.NRGBA, m *image.Paletted) {
	var lut [256][4]uint8 // indexes beyond the palette read as transparent black
	for i, c := range m.Palette {
		if i == len(lut) {
			break
		}
		n := color.NRGBAModel.Convert(c).(color.NRGBA)
		lut[i] = [4]uint8{n.R, n.G, n.B, n.A}
	}
	b := m.Bounds()
	w := b.Dx()
	for y := range b.Dy() {
		row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:w]
		out := dst.Pix[y*dst.Stride:][:4*w]
		for x, idx := range row {
			copy(out[4*x:4*x+4], lut[idx][:])
		}
	}
}

func rgbaToNRGBA(dst *image.NRGBA, m *image.RGBA) {
	b := m.Bounds()
	w := b.Dx()
	for y := range b.Dy() {
		row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:4*w]
		out := dst.Pix[y*dst.Stride:][:4*w]
		for i := 0; i < len(row); i += 4 {
			r, g, bl, a := row[i], row[i+1], row[i+2], row[i+3]
			switch a {
			case 0xff:
			case 0:
				r, g, bl = 0, 0, 0
			default:
				r, g, bl = unpremul(r, a), unpremul(g, a), unpremul(bl, a)
			}
			out[i], out[i+1], out[i+2], out[i+3] = r, g, bl, a
		}
	}
}

// unpremul matches color.NRGBAModel's conversion of an 8-bit RGBA value.
func unpremul(c, a uint8) uint8 {
	v := uint32(c) * 0x101 * 0xffff / (uint32(a) * 0x101)
	return uint8(v >> 8)
}

// opaque reports whether every pixel of m has alpha 0xff.
func opaque(m *image.NRGBA) bool {
	for i := 3; i < len(m.Pix); i += 4 {
		if m.Pix[i] != 0xff {
			return false
		}
	}
	return true
}
