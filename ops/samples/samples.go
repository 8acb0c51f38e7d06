// Package samples embeds braid's sample images, generated deterministically
// by ops/internal/gensamples.
package samples

import _ "embed"

var (
	//go:embed small.gif
	smallGIF []byte
	//go:embed large.png
	largePNG []byte
)

// GIF returns a 160×120 GIF of about 19 KB, the paper's blur workload. The
// caller may modify the returned slice; it is a fresh copy.
func GIF() []byte { return clone(smallGIF) }

// PNG returns a 512×384 PNG. The caller may modify the returned slice; it is
// a fresh copy.
func PNG() []byte { return clone(largePNG) }

func clone(b []byte) []byte { return append([]byte(nil), b...) }
