// Command gensamples writes braid's deterministic sample images:
// small.gif (160×120, about 19 KB, the paper's workload) and large.png
// (512×384). Run it from the module root:
//
//	go run ./ops/internal/gensamples
//
// It writes both files to ops/testdata and ops/samples.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"math"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", "ops", "the ops package directory")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gensamples:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	var g, p bytes.Buffer
	if err := gif.Encode(&g, scene(160, 120, 1, 40), nil); err != nil {
		return err
	}
	if err := png.Encode(&p, scene(512, 384, 2, 1)); err != nil {
		return err
	}
	for _, sub := range []string{"testdata", "samples"} {
		for name, data := range map[string][]byte{"small.gif": g.Bytes(), "large.png": p.Bytes()} {
			path := filepath.Join(dir, sub, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return err
			}
			fmt.Printf("%s: %d bytes\n", path, len(data))
		}
	}
	return nil
}

// rng is a xorshift generator, so the images never change with Go versions.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = rng(x)
	return x
}

// scene draws a w×h test image: a colour gradient with rings, discs, a
// checkerboard, thin stripes and ±noise — edges and smooth areas
// for every operation to act on.
func scene(w, h int, seed, noise uint64) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rng(0x9e3779b97f4a7c15 ^ seed)
	fw, fh := float64(w), float64(h)
	for y := range h {
		for x := range w {
			u, v := float64(x)/fw, float64(y)/fh
			d := math.Hypot(u-0.35, v-0.45)
			c := [3]float64{
				255 * u,
				255 * (0.5 + 0.5*math.Sin(12*d*math.Pi)),
				255 * v,
			}
			switch {
			case math.Hypot(u-0.75, v-0.3) < 0.15:
				c = [3]float64{230, 40, 40}
			case math.Hypot(u-0.7, v-0.75) < 0.12:
				c = [3]float64{250, 220, 30}
			case u < 0.25 && v > 0.6 && (x/(w/40)+y/(h/30))%2 == 0:
				c = [3]float64{20, 20, 20}
			case u > 0.45 && u < 0.55 && x%3 == 0:
				c = [3]float64{255, 255, 255}
			}
			for i := range c {
				c[i] += float64(r.next()%(2*noise+1)) - float64(noise)
			}
			m.Set(x, y, color.RGBA{clamp(c[0]), clamp(c[1]), clamp(c[2]), 255})
		}
	}
	return m
}

func clamp(v float64) uint8 { return uint8(math.Min(math.Max(v, 0), 255)) }
