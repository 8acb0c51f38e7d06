package ops_test

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// pattern returns a deterministic w×h image with gradients, edges and, if
// alpha, transparent and translucent regions.
func pattern(w, h int, alpha bool) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{uint8(x * 255 / max(w-1, 1)), uint8(y * 255 / max(h-1, 1)), uint8((x*7 + y*13) % 256), 255}
			if (x/5+y/7)%3 == 0 {
				c.R, c.G = 255-c.R, 40
			}
			if alpha {
				c.A = uint8((x*3 + y*5) % 256)
				if x%11 == 0 {
					c.A = 0
				}
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

func encodePNG(tb testing.TB, m image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func encodeJPEG(tb testing.TB, m image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, nil); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func encodeGIF(tb testing.TB, m image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := gif.Encode(&buf, m, nil); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// decodeNRGBA decodes data and converts it to NRGBA for comparisons.
func decodeNRGBA(tb testing.TB, data []byte) *image.NRGBA {
	tb.Helper()
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		tb.Fatalf("decoding result: %v", err)
	}
	return toNRGBA(img)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
