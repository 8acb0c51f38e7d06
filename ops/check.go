package ops

import "fmt"

// CheckInput reports whether the operation called name can run on input,
// reading only the image header (the format's DecodeConfig), never the
// pixels: a server checks a job's input this way at submit, whatever the
// job's split, so that an input no worker could decode is refused at once
// rather than failing later on a worker. It returns nil for operations
// that do not decode their input (noop), an error wrapping ErrUnknownOp
// for an unknown name, and otherwise an error wrapping ErrBadImage when
// input is not a GIF, PNG or JPEG image or its header declares an empty
// image or one over MaxDimension or MaxPixels. A nil result does not
// promise that the rest of the image decodes.
func CheckInput(name string, input []byte) error {
	o, ok := registry[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownOp, name)
	}
	if o.passthrough {
		return nil
	}
	_, err := checkHeader(input)
	return err
}
