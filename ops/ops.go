package ops

import (
	"errors"
	"image"
	"slices"
	"strings"
)

// Sentinel errors. Errors returned by this package wrap one of them (or
// [ErrBadParam]) so callers can tell a client's mistake from a fault.
var (
	// ErrNotTileable is returned by [Op.Reach] for operations whose output
	// pixels depend on the whole image (resize).
	ErrNotTileable = errors.New("ops: operation cannot be tiled")
	// ErrUnknownOp is returned for an operation name that [Lookup] does not know.
	ErrUnknownOp = errors.New("ops: unknown operation")
	// ErrBadImage is wrapped by errors about undecodable, oversized or
	// inconsistent image data.
	ErrBadImage = errors.New("ops: bad image")
	// ErrBadParam is wrapped by errors about unknown, malformed or
	// out-of-range parameters.
	ErrBadParam = errors.New("ops: bad parameter")
)

// Params are an operation's parameters by name, as given on the command line
// with --param k=v. Every operation accepts "format" ("png", "jpeg" or
// "gif") to choose the output encoding.
type Params map[string]string

// Info describes an operation for catalogues and help text.
type Info struct {
	Name, Summary string
	Params        []ParamInfo
	// Tileable reports whether the operation can run on tiles with a halo
	// (see [SplitTiles]).
	Tileable bool
}

// ParamInfo describes one parameter. Type is "float", "int" or "string";
// Default is empty when the parameter has no fixed default.
type ParamInfo struct {
	Name, Type, Default, Doc string
}

// Op is an image operation. Implementations are stateless and safe for
// concurrent use; none of the methods modifies its arguments.
type Op interface {
	Name() string
	// Validate checks params at submit time: unknown names, malformed numbers
	// and out-of-range values are reported as an error wrapping ErrBadParam
	// whose text a person understands, e.g. `blur: sigma "abc" is not a number`.
	Validate(p Params) error
	// Reach is how many pixels beyond a tile the operation reads (the halo
	// width needed for exact tiling). It returns ErrNotTileable for
	// operations that cannot be tiled, and the Validate error for bad params.
	Reach(p Params) (int, error)
	// Apply runs the operation on a decoded image and returns a new image
	// whose bounds start at the origin. The "format" parameter is ignored.
	Apply(img image.Image, p Params) (image.Image, error)
}

// registry holds every built-in operation by name; it is filled at init and
// read-only afterwards.
var registry = map[string]*op{}

func register(o *op) {
	o.params = append(o.params, formatParam)
	registry[o.info.Name] = o
}

// Lookup returns the built-in operation called name.
func Lookup(name string) (Op, bool) {
	o, ok := registry[name]
	if !ok {
		return nil, false
	}
	return o, true
}

// Catalogue describes every built-in operation, sorted by name. The result
// is a fresh copy the caller may modify.
func Catalogue() []Info {
	infos := make([]Info, 0, len(registry))
	for _, o := range registry {
		infos = append(infos, o.Info())
	}
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return infos
}
