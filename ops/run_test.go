package ops_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"slices"
	"strings"
	"testing"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

func TestRunFormats(t *testing.T) {
	inputs := map[string][]byte{
		"gif":  samples.GIF(),
		"png":  encodePNG(t, pattern(33, 21, true)),
		"jpeg": encodeJPEG(t, pattern(33, 21, false)),
	}
	for inFormat, input := range inputs {
		for _, outFormat := range []string{"", "gif", "png", "jpeg"} {
			p := ops.Params{}
			want := inFormat
			if outFormat != "" {
				p["format"], want = outFormat, outFormat
			}
			for _, name := range []string{"blur", "grayscale", "sobel", "sharpen"} {
				out, err := ops.Run(name, p, input)
				if err != nil {
					t.Fatalf("Run(%s, %v) on %s: %v", name, p, inFormat, err)
				}
				cfg, got, err := image.DecodeConfig(bytes.NewReader(out))
				if err != nil || got != want {
					t.Fatalf("Run(%s, %v) on %s: output format %q, %v; want %q", name, p, inFormat, got, err, want)
				}
				in, _, _ := image.DecodeConfig(bytes.NewReader(input))
				if cfg.Width != in.Width || cfg.Height != in.Height {
					t.Errorf("Run(%s) on %s: %dx%d, want %dx%d", name, inFormat, cfg.Width, cfg.Height, in.Width, in.Height)
				}
			}
		}
	}
}

func TestRunResizeGIF(t *testing.T) {
	out, err := ops.Run("resize", ops.Params{"width": "80"}, samples.GIF())
	if err != nil {
		t.Fatal(err)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(out))
	if err != nil || format != "gif" || cfg.Width != 80 || cfg.Height != 60 {
		t.Errorf("resize width 80 of 160x120 GIF: %s %dx%d, %v", format, cfg.Width, cfg.Height, err)
	}
}

func TestRunErrors(t *testing.T) {
	gifData := samples.GIF()
	tests := []struct {
		name, op string
		p        ops.Params
		input    []byte
		want     error
		text     string
	}{
		{"not an image", "blur", nil, []byte("hello, world"), ops.ErrBadImage, "not a GIF, PNG or JPEG image"},
		{"empty", "blur", nil, nil, ops.ErrBadImage, "not a GIF, PNG or JPEG image"},
		{"truncated gif", "blur", nil, gifData[:len(gifData)/2], ops.ErrBadImage, "ops: bad image"},
		{"truncated header", "blur", nil, gifData[:8], ops.ErrBadImage, "ops: bad image"},
		{"too wide", "blur", nil, gifHeader(16385, 1), ops.ErrBadImage, "more than 16384 pixels on a side"},
		{"too many pixels", "grayscale", nil, gifHeader(16000, 16000), ops.ErrBadImage, "more than 64000000 pixels"},
		{"huge png", "sobel", nil, pngHeader(t, 20000, 20000), ops.ErrBadImage, "more than 16384 pixels on a side"},
		{"unknown op", "fft", nil, gifData, ops.ErrUnknownOp, `ops: unknown operation "fft"`},
		{"bad param", "blur", ops.Params{"sigma": "abc"}, gifData, ops.ErrBadParam, `blur: sigma "abc" is not a number`},
		{"noop bad param", "noop", ops.Params{"format": "tiff"}, gifData, ops.ErrBadParam, `noop: format "tiff"`},
	}
	for _, tt := range tests {
		_, err := ops.Run(tt.op, tt.p, tt.input)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: Run error = %v, want %v containing %q", tt.name, err, tt.want, tt.text)
		}
	}
}

// gifHeader returns a GIF header declaring a w×h screen and nothing else.
func gifHeader(w, h int) []byte {
	b := []byte("GIF89a")
	b = binary.LittleEndian.AppendUint16(b, uint16(w))
	b = binary.LittleEndian.AppendUint16(b, uint16(h))
	return append(b, 0, 0, 0, ';')
}

// pngHeader returns a small PNG whose header claims w×h.
func pngHeader(t *testing.T, w, h int) []byte {
	b := encodePNG(t, image.NewGray(image.Rect(0, 0, 1, 1)))
	// Signature (8), IHDR length and type (8), then width and height.
	binary.BigEndian.PutUint32(b[16:], uint32(w))
	binary.BigEndian.PutUint32(b[20:], uint32(h))
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

func TestRunNoop(t *testing.T) {
	input := []byte("not even an image")
	out, err := ops.Run("noop", nil, input)
	if err != nil || !bytes.Equal(out, input) {
		t.Fatalf("Run(noop) = %q, %v", out, err)
	}
	p := ops.Params{"format": "png"}
	if allocs := testing.AllocsPerRun(100, func() { ops.Run("noop", p, input) }); allocs != 0 {
		t.Errorf("Run(noop) allocates %v times", allocs)
	}
}

func TestRunGIFTransparency(t *testing.T) {
	// Transparent pixels stay transparent through a GIF round trip, and an
	// image with few colours keeps them exactly.
	m := uniform(20, 10, color.NRGBA{200, 10, 10, 255})
	for x := range 10 {
		for y := range 10 {
			m.SetNRGBA(x, y, color.NRGBA{})
		}
	}
	out, err := ops.Run("grayscale", ops.Params{"format": "gif"}, encodePNG(t, m))
	if err != nil {
		t.Fatal(err)
	}
	got := decodeNRGBA(t, out)
	if c := got.NRGBAAt(2, 2); c.A != 0 {
		t.Errorf("transparent pixel became %v", c)
	}
	if c := got.NRGBAAt(15, 5); c != (color.NRGBA{67, 67, 67, 255}) {
		t.Errorf("opaque pixel became %v, want gray 67", c)
	}
}

func TestRunGIFQuality(t *testing.T) {
	// Median cut with dithering keeps a smooth many-coloured image close to
	// the original on average.
	src := pattern(64, 64, false)
	out, err := ops.Run("blur", ops.Params{"sigma": "0.3", "format": "gif"}, encodePNG(t, src))
	if err != nil {
		t.Fatal(err)
	}
	exact, err := ops.Run("blur", ops.Params{"sigma": "0.3", "format": "png"}, encodePNG(t, src))
	if err != nil {
		t.Fatal(err)
	}
	a, b := decodeNRGBA(t, out), decodeNRGBA(t, exact)
	var sum int
	for i := range a.Pix {
		sum += abs(int(a.Pix[i]) - int(b.Pix[i]))
	}
	if mean := float64(sum) / float64(len(a.Pix)); mean > 6 {
		t.Errorf("mean GIF error %.2f per channel, want ≤ 6", mean)
	}
}

func abs(x int) int { return max(x, -x) }

func TestRunDeterministic(t *testing.T) {
	input := samples.GIF()
	first, err := ops.Run("blur", nil, input)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, _ := ops.Run("blur", nil, input)
		if !slices.Equal(first, again) {
			t.Fatal("Run(blur) is not deterministic")
		}
	}
}
