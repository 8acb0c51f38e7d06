package ops_test

import (
	"bytes"
	"fmt"
	"image"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

func Example() {
	input := samples.GIF()
	op, _ := ops.Lookup("blur")
	p := ops.Params{"sigma": "1.5"}
	if err := op.Validate(p); err != nil { // at submit time
		fmt.Println(err)
		return
	}
	halo, _ := op.Reach(p)

	out, err := ops.Run("blur", p, input) // on a worker
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, format, _ := image.DecodeConfig(bytes.NewReader(out))
	fmt.Printf("blur: %s %dx%d, halo %d\n", format, cfg.Width, cfg.Height, halo)

	err = op.Validate(ops.Params{"sigma": "abc"})
	fmt.Println(err)
	// Output:
	// blur: gif 160x120, halo 5
	// blur: sigma "abc" is not a number
}

func ExampleSplitTiles() {
	input := samples.PNG()
	tiles, format, bounds, err := ops.SplitTiles(input, 2, 3, 6)
	if err != nil {
		fmt.Println(err)
		return
	}
	outputs := make([][]byte, len(tiles))
	for i, t := range tiles { // each tile is a unit a worker runs
		outputs[i], err = ops.Run("blur", ops.Params{"format": "png"}, t.Data)
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	out, err := ops.Stitch(tiles, outputs, format, bounds)
	if err != nil {
		fmt.Println(err)
		return
	}
	whole, _ := ops.Run("blur", nil, input)
	fmt.Println(len(tiles), "tiles; same as whole image:", bytes.Equal(out, whole))
	// Output: 6 tiles; same as whole image: true
}
