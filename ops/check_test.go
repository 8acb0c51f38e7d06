package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

// TestCheckInput: every decoding operation refuses what Run would refuse
// for its header, accepts the samples, and noop accepts anything.
func TestCheckInput(t *testing.T) {
	gifData := samples.GIF()
	bad := []struct {
		name  string
		input []byte
		text  string
	}{
		{"text", []byte("hello, world"), "not a GIF, PNG or JPEG image"},
		{"empty", nil, "not a GIF, PNG or JPEG image"},
		{"truncated header", gifData[:8], "ops: bad image"},
		{"too wide", gifHeader(16385, 1), "more than 16384 pixels on a side"},
		{"too many pixels", gifHeader(16000, 16000), "more than 64000000 pixels"},
		{"huge png", pngHeader(t, 20000, 20000), "more than 16384 pixels on a side"},
	}
	for _, info := range ops.Catalogue() {
		if info.Name == "noop" {
			continue
		}
		for _, tt := range bad {
			err := ops.CheckInput(info.Name, tt.input)
			if !errors.Is(err, ops.ErrBadImage) || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("%s on %s: %v, want ErrBadImage containing %q", info.Name, tt.name, err, tt.text)
			}
		}
		for name, input := range map[string][]byte{"gif": gifData, "png": samples.PNG(),
			"jpeg": encodeJPEG(t, pattern(9, 7, false))} {
			if err := ops.CheckInput(info.Name, input); err != nil {
				t.Errorf("%s on a %s sample: %v", info.Name, name, err)
			}
		}
	}
	if err := ops.CheckInput("noop", []byte("not an image")); err != nil {
		t.Errorf("noop on text: %v, want nil (noop does not decode)", err)
	}
	if err := ops.CheckInput("fft", gifData); !errors.Is(err, ops.ErrUnknownOp) {
		t.Errorf("unknown op: %v, want ErrUnknownOp", err)
	}
}
