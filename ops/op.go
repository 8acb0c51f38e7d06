package ops

import (
	"fmt"
	"image"
)

// op is the one implementation of Op: a table of parameters plus functions.
type op struct {
	info   Info
	params []paramSpec
	// check validates combinations of parameters; nil means none to check.
	check func(a args) error
	// reach returns the halo width; nil means the op is not tileable.
	reach func(a *args) int
	// apply computes the result from a normalized image (origin-based,
	// packed NRGBA). It must not modify src.
	apply func(src *image.NRGBA, a *args) (image.Image, error)
	// passthrough ops return Run's input bytes without decoding them.
	passthrough bool
}

var _ Op = (*op)(nil)

func (o *op) Name() string { return o.info.Name }

// Info returns the operation's description, including its parameters.
func (o *op) Info() Info {
	info := o.info
	info.Tileable = o.reach != nil
	info.Params = make([]ParamInfo, len(o.params))
	for i, s := range o.params {
		info.Params[i] = s.ParamInfo
	}
	return info
}

func (o *op) Validate(p Params) error {
	_, err := o.parse(p)
	return err
}

func (o *op) Reach(p Params) (int, error) {
	a, err := o.parse(p)
	if err != nil {
		return 0, err
	}
	if o.reach == nil {
		return 0, fmt.Errorf("%w: %s", ErrNotTileable, o.info.Name)
	}
	return o.reach(&a), nil
}

func (o *op) Apply(img image.Image, p Params) (image.Image, error) {
	a, err := o.parse(p)
	if err != nil {
		return nil, err
	}
	if img == nil {
		return nil, fmt.Errorf("%w: %s: nil image", ErrBadImage, o.info.Name)
	}
	if o.passthrough {
		return img, nil
	}
	if err := checkSize(img.Bounds().Dx(), img.Bounds().Dy()); err != nil {
		return nil, err
	}
	return o.apply(toNRGBA(img), &a)
}
