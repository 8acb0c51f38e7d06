// Command recode rewrites a GIF, PNG or JPEG image on stdin, on stdout, as
// the binary netpbm image the C blur example (examples/ops/cblur) reads,
// PGM (P5) for a gray image and PPM (P6) otherwise, or as PNG: the same
// pixels for the built-in blur, to compare the two on equal input (docs/user-ops.md).
// Alpha is dropped from netpbm, so give it opaque images (the built-in blur
// treats others as premultiplied RGBA).
//
//	go run ./examples/ops/cblur/recode pnm < ops/samples/small.gif > small.ppm
//	go run ./examples/ops/cblur/recode png < ops/samples/small.gif > small.png
package main

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/gif"
	_ "image/jpeg"
	"image/png"
	"os"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] != "pnm" && os.Args[1] != "png" {
		fmt.Fprintln(os.Stderr, "usage: recode pnm|png < IMAGE > OUT")
		os.Exit(2)
	}
	m, _, err := image.Decode(bufio.NewReader(os.Stdin))
	if err != nil {
		fmt.Fprintln(os.Stderr, "recode: reading the image:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	if os.Args[1] == "png" {
		err = png.Encode(w, nrgba(m))
	} else {
		writePNM(w, m)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "recode:", err)
		os.Exit(1)
	}
}

// nrgba is m as an NRGBA image, the form the built-in operations decode
// every input to.
func nrgba(m image.Image) *image.NRGBA {
	out := image.NewNRGBA(image.Rect(0, 0, m.Bounds().Dx(), m.Bounds().Dy()))
	draw.Draw(out, out.Rect, m, m.Bounds().Min, draw.Src)
	return out
}

// writePNM writes m as PGM if it is gray, else as PPM.
func writePNM(w *bufio.Writer, m image.Image) {
	b := m.Bounds()
	gray, isGray := m.(*image.Gray)
	magic := "P6"
	if isGray {
		magic = "P5"
	}
	fmt.Fprintf(w, "%s\n%d %d\n255\n", magic, b.Dx(), b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if isGray {
				w.WriteByte(gray.GrayAt(x, y).Y)
				continue
			}
			c := color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
			w.Write([]byte{c.R, c.G, c.B})
		}
	}
}
