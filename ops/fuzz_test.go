package ops_test

import (
	"testing"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

// FuzzRun feeds arbitrary bytes to every operation: Run must return an
// error or an image, never panic, and must reject oversized headers before
// decoding.
func FuzzRun(f *testing.F) {
	f.Add(samples.GIF())
	f.Add(encodePNG(f, pattern(9, 7, true)))
	f.Add(encodeJPEG(f, pattern(9, 7, false)))
	f.Add(encodeGIF(f, pattern(3, 2, false)))
	f.Add(gifHeader(16385, 2))
	f.Add([]byte("GIF89a"))
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte("\xff\xd8\xff"))
	names := []string{"blur", "boxblur", "sharpen", "grayscale", "sobel", "resize", "noop"}
	f.Fuzz(func(t *testing.T, input []byte) {
		for _, name := range names {
			p := ops.Params{"format": "png"}
			if name == "resize" {
				p["width"] = "5"
			}
			out, err := ops.Run(name, p, input)
			if err == nil && len(out) == 0 && name != "noop" {
				t.Fatalf("Run(%s) returned no output and no error", name)
			}
		}
		if tiles, format, bounds, err := ops.SplitTiles(input, 2, 2, 1); err == nil {
			outputs := make([][]byte, len(tiles))
			for i, tile := range tiles {
				outputs[i] = tile.Data
			}
			if _, err := ops.Stitch(tiles, outputs, format, bounds); err != nil {
				t.Fatalf("Stitch of unprocessed tiles: %v", err)
			}
		}
	})
}
