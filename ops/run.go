package ops

import (
	"bytes"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
)

// Input size limits, checked against the image header before decoding.
const (
	MaxDimension = 16384      // pixels on either side
	MaxPixels    = 64_000_000 // width × height
)

// JPEGQuality is the quality Run and Stitch encode JPEG output with.
const JPEGQuality = 90

// Run decodes input (GIF, PNG or JPEG, sniffed from its content), applies
// the operation called name and encodes the result in the input's format,
// or in p["format"] when given. Only the first frame of a GIF is used.
//
// The "noop" operation returns input itself without decoding it, so the
// result may alias input. Errors wrap ErrUnknownOp, ErrBadParam or
// ErrBadImage. Run is safe for concurrent use.
func Run(name string, p Params, input []byte) ([]byte, error) {
	o, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownOp, name)
	}
	a, err := o.parse(p)
	if err != nil {
		return nil, err
	}
	if o.passthrough {
		return input, nil
	}
	return o.run(a, input)
}

// run is Run after validation; a separate function so that Run's args stay
// on the stack and noop does not allocate.
func (o *op) run(a args, input []byte) ([]byte, error) {
	src, format, err := decode(input)
	if err != nil {
		return nil, err
	}
	out, err := o.apply(src, &a)
	if err != nil {
		return nil, err
	}
	if f := a.format(); f != "" {
		format = f
	}
	return encode(out, format)
}

// Format names the image format of data from its magic number: "gif",
// "png", "jpeg", or "" for anything else.
func Format(data []byte) string { return sniff(data) }

// sniff names the format of data from its magic number, or returns "".
func sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "gif"
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(data, []byte("\xff\xd8")):
		return "jpeg"
	}
	return ""
}

type codec struct {
	decodeConfig func(io.Reader) (image.Config, error)
	decode       func(io.Reader) (image.Image, error)
}

var codecs = map[string]codec{
	"gif":  {gif.DecodeConfig, gif.Decode},
	"png":  {png.DecodeConfig, png.Decode},
	"jpeg": {jpeg.DecodeConfig, jpeg.Decode},
}

// decode checks the header of data against the size limits, then decodes
// it into a packed, origin-based NRGBA image.
func decode(data []byte) (*image.NRGBA, string, error) {
	img, format, err := decodeImage(data)
	if err != nil {
		return nil, "", err
	}
	return toNRGBA(img), format, nil
}

// decodeImage checks the header of data against the size limits, then
// decodes it.
func decodeImage(data []byte) (image.Image, string, error) {
	format, err := checkHeader(data)
	if err != nil {
		return nil, "", err
	}
	img, err := codecs[format].decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	if err := checkSize(img.Bounds().Dx(), img.Bounds().Dy()); err != nil {
		return nil, "", err
	}
	return img, format, nil
}

// checkHeader names the format of data and checks its header (never the
// pixels) against the size limits.
func checkHeader(data []byte) (string, error) {
	format := sniff(data)
	if format == "" {
		return "", fmt.Errorf("%w: not a GIF, PNG or JPEG image", ErrBadImage)
	}
	cfg, err := codecs[format].decodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	return format, checkSize(cfg.Width, cfg.Height)
}

func checkSize(w, h int) error {
	switch {
	case w <= 0 || h <= 0:
		return fmt.Errorf("%w: image is empty (%d×%d)", ErrBadImage, w, h)
	case w > MaxDimension || h > MaxDimension:
		return fmt.Errorf("%w: image is %d×%d, more than %d pixels on a side", ErrBadImage, w, h, MaxDimension)
	case w*h > MaxPixels:
		return fmt.Errorf("%w: image is %d×%d, more than %d pixels", ErrBadImage, w, h, MaxPixels)
	}
	return nil
}

// pngEncoder favours speed over size: outputs of tile units and of repeated
// jobs are mostly intermediate, and BestSpeed skips the per-row filter
// search, which costs more than the operations themselves.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngPool{}}

// encode encodes an operation's result (*image.NRGBA or *image.Gray) in
// format. Run and Stitch share it, so equal pixels give equal bytes.
func encode(img image.Image, format string) ([]byte, error) {
	var buf bytes.Buffer
	b := img.Bounds()
	buf.Grow(b.Dx()*b.Dy()/2 + 1024)
	var err error
	switch format {
	case "png":
		err = pngEncoder.Encode(&buf, img)
	case "jpeg":
		if m, ok := img.(*image.NRGBA); ok && opaque(m) {
			img = (*image.RGBA)(m) // same bytes; takes the encoder's fast path
		}
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: JPEGQuality})
	case "gif":
		err = gif.Encode(&buf, quantize(img), nil)
	default:
		return nil, fmt.Errorf("ops: unknown output format %q", format)
	}
	if err != nil {
		return nil, fmt.Errorf("ops: encoding %s: %w", format, err)
	}
	return buf.Bytes(), nil
}

// pngPool reuses the PNG encoder's buffers across calls.
type pngPool struct{ pool syncPool[png.EncoderBuffer] }

func (p *pngPool) Get() *png.EncoderBuffer  { return p.pool.Get() }
func (p *pngPool) Put(b *png.EncoderBuffer) { p.pool.Put(b) }
