package ops

import (
	"bytes"
	"fmt"
	"image"
	"slices"
)

// Tiling limits.
const (
	MaxTileRows = 64
	MaxTileCols = 64
)

// Tile is one unit of a tiled job. Inner is the part of the image the tile
// is responsible for; Outer is Inner grown by the halo and clipped to the
// image bounds, and Data is a PNG of the Outer region (lossless), with its
// origin at Outer.Min. Index is Row*cols + Col.
type Tile struct {
	Index, Row, Col int
	Outer, Inner    image.Rectangle
	Data            []byte
}

// SplitTiles decodes input and cuts it into rows×cols tiles, row-major, with
// a halo of halo pixels. It returns the input's format and bounds (at the
// origin) for Stitch. Processing each tile's Data with an operation whose
// Reach is at most halo and stitching the results gives exactly the
// whole-image result. rows and cols must be in 1..64 and at most the image's
// height and width.
func SplitTiles(input []byte, rows, cols, halo int) (tiles []Tile, format string, bounds image.Rectangle, err error) {
	switch {
	case rows < 1 || rows > MaxTileRows || cols < 1 || cols > MaxTileCols:
		return nil, "", image.Rectangle{}, badParam("tiles: %d×%d tiles, want 1..%d rows and 1..%d columns",
			rows, cols, MaxTileRows, MaxTileCols)
	case halo < 0 || halo > MaxDimension:
		return nil, "", image.Rectangle{}, badParam("tiles: halo %d is out of range [0, %d]", halo, MaxDimension)
	}
	src, format, err := decode(input)
	if err != nil {
		return nil, "", image.Rectangle{}, err
	}
	bounds = src.Rect
	w, h := bounds.Dx(), bounds.Dy()
	if rows > h || cols > w {
		return nil, "", image.Rectangle{}, badParam("tiles: %d×%d tiles is more than the %d×%d image's pixels",
			rows, cols, w, h)
	}
	tiles = make([]Tile, 0, rows*cols)
	for r := range rows {
		for c := range cols {
			inner := image.Rect(c*w/cols, r*h/rows, (c+1)*w/cols, (r+1)*h/rows)
			outer := inner.Inset(-halo).Intersect(bounds)
			var buf bytes.Buffer
			if err := pngEncoder.Encode(&buf, src.SubImage(outer)); err != nil {
				return nil, "", image.Rectangle{}, fmt.Errorf("ops: encoding tile: %w", err)
			}
			tiles = append(tiles, Tile{Index: len(tiles), Row: r, Col: c, Outer: outer, Inner: inner, Data: buf.Bytes()})
		}
	}
	return tiles, format, bounds, nil
}

// Stitch assembles the processed tiles into one image and encodes it in
// format ("gif", "png" or "jpeg") exactly as Run would encode the
// whole-image result. outputs[i] is tiles[i]'s processed Data: an image
// (normally PNG) the size of tiles[i].Outer. The tiles' Inner rectangles
// must cover bounds without overlapping. Errors about the outputs wrap
// ErrBadImage.
func Stitch(tiles []Tile, outputs [][]byte, format string, bounds image.Rectangle) ([]byte, error) {
	if err := checkTiles(tiles, outputs, format, bounds); err != nil {
		return nil, err
	}
	imgs := make([]image.Image, len(outputs))
	allGray := true
	for i, data := range outputs {
		img, _, err := decodeImage(data)
		if err != nil {
			return nil, fmt.Errorf("tile %d: %w", tiles[i].Index, err)
		}
		if img.Bounds().Size() != tiles[i].Outer.Size() {
			return nil, fmt.Errorf("%w: tile %d output is %v, want the outer size %v",
				ErrBadImage, tiles[i].Index, img.Bounds().Size(), tiles[i].Outer.Size())
		}
		_, gray := img.(*image.Gray)
		allGray = allGray && gray
		imgs[i] = img
	}
	// Results are gray only if every tile's is, as Apply's would be.
	size := image.Rectangle{Max: bounds.Size()}
	var out image.Image
	if allGray {
		dst := image.NewGray(size)
		for i, t := range tiles {
			src := imgs[i].(*image.Gray)
			off := src.Rect.Min.Sub(t.Outer.Min)
			for y := t.Inner.Min.Y; y < t.Inner.Max.Y; y++ {
				copy(dst.Pix[dst.PixOffset(t.Inner.Min.X-bounds.Min.X, y-bounds.Min.Y):][:t.Inner.Dx()],
					src.Pix[src.PixOffset(t.Inner.Min.X+off.X, y+off.Y):])
			}
		}
		out = dst
	} else {
		dst := image.NewNRGBA(size)
		for i, t := range tiles {
			src := toNRGBA(imgs[i]) // origin-based, so Outer.Min maps to (0, 0)
			for y := t.Inner.Min.Y; y < t.Inner.Max.Y; y++ {
				copy(dst.Pix[dst.PixOffset(t.Inner.Min.X-bounds.Min.X, y-bounds.Min.Y):][:4*t.Inner.Dx()],
					src.Pix[src.PixOffset(t.Inner.Min.X-t.Outer.Min.X, y-t.Outer.Min.Y):])
			}
		}
		out = dst
	}
	return encode(out, format)
}

func checkTiles(tiles []Tile, outputs [][]byte, format string, bounds image.Rectangle) error {
	if !slices.Contains(formatParam.choices, format) {
		return badParam("stitch: format %q is not one of %q", format, formatParam.choices)
	}
	if err := checkSize(bounds.Dx(), bounds.Dy()); err != nil {
		return err
	}
	switch {
	case len(outputs) != len(tiles):
		return fmt.Errorf("%w: stitch: %d outputs for %d tiles", ErrBadImage, len(outputs), len(tiles))
	case len(tiles) > MaxTileRows*MaxTileCols:
		return fmt.Errorf("%w: stitch: %d tiles, more than %d", ErrBadImage, len(tiles), MaxTileRows*MaxTileCols)
	}
	area := 0
	for i, t := range tiles {
		if t.Inner.Empty() || !t.Inner.In(t.Outer) || !t.Outer.In(bounds) {
			return fmt.Errorf("%w: stitch: tile %d has inner %v, outer %v in bounds %v",
				ErrBadImage, t.Index, t.Inner, t.Outer, bounds)
		}
		for _, u := range tiles[:i] {
			if t.Inner.Overlaps(u.Inner) {
				return fmt.Errorf("%w: stitch: tiles %d and %d overlap", ErrBadImage, u.Index, t.Index)
			}
		}
		area += t.Inner.Dx() * t.Inner.Dy()
	}
	if area != bounds.Dx()*bounds.Dy() {
		return fmt.Errorf("%w: stitch: tiles cover %d of %d pixels", ErrBadImage, area, bounds.Dx()*bounds.Dy())
	}
	return nil
}
