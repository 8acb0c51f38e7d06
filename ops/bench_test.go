package ops_test

import (
	"testing"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

// benchParams gives every op parameters that make it do real work.
var benchParams = map[string]ops.Params{
	"resize": {"width": "128"},
}

func BenchmarkOps(b *testing.B) {
	src := pattern(256, 256, false)
	for _, info := range ops.Catalogue() {
		op, _ := ops.Lookup(info.Name)
		p := benchParams[info.Name]
		b.Run(info.Name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src.Pix)))
			for b.Loop() {
				if _, err := op.Apply(src, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRunBlurGIF(b *testing.B) {
	input := samples.GIF()
	b.ReportAllocs()
	b.SetBytes(int64(len(input)))
	for b.Loop() {
		if _, err := ops.Run("blur", nil, input); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun measures Run end to end on the sample images, including
// decoding and encoding.
func BenchmarkRun(b *testing.B) {
	inputs := []struct {
		name string
		data []byte
	}{{"gif", samples.GIF()}, {"png", samples.PNG()}, {"jpeg", encodeJPEG(b, pattern(160, 120, false))}}
	for _, in := range inputs {
		for _, name := range []string{"noop", "blur", "grayscale"} {
			b.Run(in.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ops.Run(name, nil, in.data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
