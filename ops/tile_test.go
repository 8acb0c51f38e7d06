package ops_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"maps"
	"testing"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

// runTiled is what the server and workers do together: split, run every
// tile as a PNG unit, stitch.
func runTiled(t *testing.T, op string, p ops.Params, input []byte, rows, cols, halo int) []byte {
	t.Helper()
	tiles, format, bounds, err := ops.SplitTiles(input, rows, cols, halo)
	if err != nil {
		t.Fatalf("SplitTiles(%d×%d, halo %d): %v", rows, cols, halo, err)
	}
	if len(tiles) != rows*cols {
		t.Fatalf("SplitTiles: %d tiles, want %d", len(tiles), rows*cols)
	}
	unit := maps.Clone(p)
	if unit == nil {
		unit = ops.Params{}
	}
	unit["format"] = "png"
	outputs := make([][]byte, len(tiles))
	for i, tile := range tiles {
		if tile.Index != i || tile.Index != tile.Row*cols+tile.Col {
			t.Fatalf("tile %d: Index %d Row %d Col %d", i, tile.Index, tile.Row, tile.Col)
		}
		if outputs[i], err = ops.Run(op, unit, tile.Data); err != nil {
			t.Fatalf("Run(%s) on tile %d: %v", op, i, err)
		}
	}
	if f := p["format"]; f != "" {
		format = f
	}
	out, err := ops.Stitch(tiles, outputs, format, bounds)
	if err != nil {
		t.Fatalf("Stitch: %v", err)
	}
	return out
}

func tileInputs(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"gif":  samples.GIF(),
		"png":  encodePNG(t, pattern(37, 23, true)),
		"jpeg": encodeJPEG(t, pattern(41, 29, false)),
	}
}

func TestTilesEqualWholeImage(t *testing.T) {
	cases := []struct {
		op string
		p  ops.Params
	}{
		{"blur", nil},
		{"blur", ops.Params{"sigma": "1.3"}},
		{"blur", ops.Params{"sigma": "5", "radius": "9"}},
		{"blur", ops.Params{"format": "png"}},
		{"boxblur", ops.Params{"radius": "3"}},
		{"sharpen", ops.Params{"amount": "2"}},
		{"grayscale", nil},
		{"grayscale", ops.Params{"format": "jpeg"}},
		{"sobel", nil},
		{"sobel", ops.Params{"format": "gif"}},
		{"noop", nil},
	}
	grids := []struct{ rows, cols, extraHalo int }{
		{1, 1, 0}, {2, 2, 0}, {3, 5, 0}, {3, 5, 2}, {4, 7, 40},
		{23, 1, 0}, {1, 37, 1}, // one-pixel tiles; used on the small inputs only
	}
	for inFormat, input := range tileInputs(t) {
		t.Run(inFormat, func(t *testing.T) {
			t.Parallel()
			grids := grids
			if inFormat == "gif" {
				grids = []struct{ rows, cols, extraHalo int }{{2, 2, 0}, {3, 5, 0}, {4, 7, 40}} // keep -race short
			}
			for _, c := range cases {
				if c.op == "noop" && inFormat == "jpeg" {
					continue // noop returns the JPEG bytes; re-encoding them is lossy
				}
				op, _ := ops.Lookup(c.op)
				reach, err := op.Reach(c.p)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ops.Run(c.op, c.p, input)
				if err != nil {
					t.Fatal(err)
				}
				for _, g := range grids {
					name := fmt.Sprintf("%s%v/%dx%d+%d", c.op, c.p, g.rows, g.cols, reach+g.extraHalo)
					got := runTiled(t, c.op, c.p, input, g.rows, g.cols, reach+g.extraHalo)
					switch {
					case bytes.Equal(got, want):
						// Equal bytes, so equal pixels.
					case !samePixels(t, got, want):
						t.Errorf("%s: stitched pixels differ from the whole-image result", name)
					case c.op != "noop":
						t.Errorf("%s: stitched bytes differ from the whole-image result (pixels equal)", name)
					}
				}
			}
		})
	}
}

func samePixels(t *testing.T, a, b []byte) bool {
	x, y := decodeNRGBA(t, a), decodeNRGBA(t, b)
	return x.Rect == y.Rect && bytes.Equal(x.Pix, y.Pix)
}

// TestTilesNeedHalo checks that the equality test above can fail: without
// a halo, blurred tiles show their seams.
func TestTilesNeedHalo(t *testing.T) {
	input := samples.GIF()
	want, _ := ops.Run("blur", ops.Params{"format": "png"}, input)
	got := runTiled(t, "blur", ops.Params{"format": "png"}, input, 2, 2, 2)
	if bytes.Equal(decodeNRGBA(t, got).Pix, decodeNRGBA(t, want).Pix) {
		t.Error("blur tiles with a halo below the reach match the whole image")
	}
}

func TestSplitTilesGeometry(t *testing.T) {
	tiles, format, bounds, err := ops.SplitTiles(encodePNG(t, pattern(10, 7, false)), 2, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if format != "png" || bounds != image.Rect(0, 0, 10, 7) {
		t.Errorf("format %q bounds %v", format, bounds)
	}
	wantInner := []image.Rectangle{
		image.Rect(0, 0, 3, 3), image.Rect(3, 0, 6, 3), image.Rect(6, 0, 10, 3),
		image.Rect(0, 3, 3, 7), image.Rect(3, 3, 6, 7), image.Rect(6, 3, 10, 7),
	}
	for i, tile := range tiles {
		wantOuter := wantInner[i].Inset(-2).Intersect(bounds)
		if tile.Inner != wantInner[i] || tile.Outer != wantOuter {
			t.Errorf("tile %d: inner %v outer %v, want %v %v", i, tile.Inner, tile.Outer, wantInner[i], wantOuter)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(tile.Data))
		if err != nil || cfg.Width != wantOuter.Dx() || cfg.Height != wantOuter.Dy() {
			t.Errorf("tile %d: data %dx%d, %v", i, cfg.Width, cfg.Height, err)
		}
	}
}

func TestSplitTilesErrors(t *testing.T) {
	input := encodePNG(t, pattern(10, 7, false))
	tests := []struct {
		rows, cols, halo int
		input            []byte
		want             error
	}{
		{0, 1, 0, input, ops.ErrBadParam},
		{1, 0, 0, input, ops.ErrBadParam},
		{65, 1, 0, input, ops.ErrBadParam},
		{1, 65, 0, input, ops.ErrBadParam},
		{8, 1, 0, input, ops.ErrBadParam},  // more rows than pixels
		{1, 11, 0, input, ops.ErrBadParam}, // more columns than pixels
		{1, 1, -1, input, ops.ErrBadParam},
		{1, 1, 0, []byte("nope"), ops.ErrBadImage},
	}
	for _, tt := range tests {
		if _, _, _, err := ops.SplitTiles(tt.input, tt.rows, tt.cols, tt.halo); !errors.Is(err, tt.want) {
			t.Errorf("SplitTiles(%d, %d, %d): %v, want %v", tt.rows, tt.cols, tt.halo, err, tt.want)
		}
	}
	if _, _, _, err := ops.SplitTiles(input, 7, 10, 0); err != nil {
		t.Errorf("one pixel per tile: %v", err)
	}
}

func TestStitchErrors(t *testing.T) {
	tiles, _, bounds, err := ops.SplitTiles(encodePNG(t, pattern(10, 7, false)), 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	outputs := make([][]byte, len(tiles))
	for i, tile := range tiles {
		outputs[i] = tile.Data
	}
	if _, err := ops.Stitch(tiles, outputs, "png", bounds); err != nil {
		t.Fatalf("Stitch of unprocessed tiles: %v", err)
	}
	wrongSize := append([][]byte{encodePNG(t, pattern(2, 2, false))}, outputs[1:]...)
	overlap := append([]ops.Tile{}, tiles...)
	overlap[1].Inner = overlap[0].Inner
	tests := []struct {
		name    string
		tiles   []ops.Tile
		outputs [][]byte
		format  string
		want    error
	}{
		{"format", tiles, outputs, "bmp", ops.ErrBadParam},
		{"count", tiles, outputs[:3], "png", ops.ErrBadImage},
		{"size", tiles, wrongSize, "png", ops.ErrBadImage},
		{"garbage", tiles, append([][]byte{[]byte("x")}, outputs[1:]...), "png", ops.ErrBadImage},
		{"gap", tiles[:3], outputs[:3], "png", ops.ErrBadImage},
		{"overlap", overlap, outputs, "png", ops.ErrBadImage},
	}
	for _, tt := range tests {
		if _, err := ops.Stitch(tt.tiles, tt.outputs, tt.format, bounds); !errors.Is(err, tt.want) {
			t.Errorf("%s: Stitch error %v, want %v", tt.name, err, tt.want)
		}
	}
}
