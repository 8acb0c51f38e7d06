package ops

import (
	"fmt"
	"math"
	"strconv"
)

// maxParams bounds the number of parameters of one operation, so parsed
// arguments live on the stack.
const maxParams = 4

// paramSpec is a parameter's description plus the rules Validate enforces.
type paramSpec struct {
	ParamInfo
	min, max float64 // inclusive range for "int" and "float"
	minOpen  bool    // min itself is excluded
	choices  []string
}

func floatParam(name, def, doc string, min, max float64, minOpen bool) paramSpec {
	return paramSpec{ParamInfo: ParamInfo{Name: name, Type: "float", Default: def, Doc: doc},
		min: min, max: max, minOpen: minOpen}
}

func intParam(name, def, doc string, min, max int) paramSpec {
	return paramSpec{ParamInfo: ParamInfo{Name: name, Type: "int", Default: def, Doc: doc},
		min: float64(min), max: float64(max)}
}

// formatParam is accepted by every operation.
var formatParam = paramSpec{
	ParamInfo: ParamInfo{Name: "format", Type: "string",
		Doc: `output encoding: "png", "jpeg" or "gif"; default: the input's`},
	choices: []string{"png", "jpeg", "gif"},
}

// args are parsed parameters, indexed like op.params.
type args struct {
	o    *op
	vals [maxParams]float64
	set  [maxParams]bool
	str  [maxParams]string
}

// parse validates p and returns the parsed values. Errors name the first
// offending parameter in a stable order: unknown names first (smallest
// name), then the op's parameters in declaration order.
func (o *op) parse(p Params) (args, error) {
	a := args{o: o}
	unknown, found := "", false // "" is a name too: an unknown one
	for k := range p {
		if o.index(k) < 0 && (!found || k < unknown) {
			unknown, found = k, true
		}
	}
	if found {
		return a, badParam("%s: unknown parameter %q (known: %s)", o.info.Name, unknown, o.paramNames())
	}
	for i, s := range o.params {
		v, ok := p[s.Name]
		if !ok {
			continue
		}
		if err := a.setValue(i, s, v); err != nil {
			return a, err
		}
	}
	if o.check != nil {
		if err := o.check(a); err != nil {
			return a, err
		}
	}
	return a, nil
}

func (a *args) setValue(i int, s paramSpec, v string) error {
	name := a.o.info.Name
	a.set[i] = true
	a.str[i] = v
	switch s.Type {
	case "string":
		for _, c := range s.choices {
			if v == c {
				return nil
			}
		}
		return badParam("%s: %s %q is not one of %q", name, s.Name, v, s.choices)
	case "int":
		n, err := strconv.Atoi(v)
		if err != nil {
			return badParam("%s: %s %q is not an integer", name, s.Name, v)
		}
		a.vals[i] = float64(n)
	default:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return badParam("%s: %s %q is not a number", name, s.Name, v)
		}
		a.vals[i] = f
	}
	f := a.vals[i]
	if f > s.max || f < s.min || (s.minOpen && f == s.min) {
		lo := "["
		if s.minOpen {
			lo = "("
		}
		return badParam("%s: %s %s is out of range %s%g, %g]", name, s.Name, v, lo, s.min, s.max)
	}
	return nil
}

func (o *op) index(name string) int {
	for i, s := range o.params {
		if s.Name == name {
			return i
		}
	}
	return -1
}

func (o *op) paramNames() string {
	names := ""
	for i, s := range o.params {
		if i > 0 {
			names += ", "
		}
		names += s.Name
	}
	return names
}

// float returns the named parameter and whether it was given; absent
// parameters yield their default.
func (a *args) float(name string) (float64, bool) {
	i := a.o.index(name)
	if i < 0 {
		panic("ops: no parameter " + name) // programming error in this package
	}
	if a.set[i] {
		return a.vals[i], true
	}
	d, _ := strconv.ParseFloat(a.o.params[i].Default, 64)
	return d, false
}

func (a *args) int(name string) (int, bool) {
	f, ok := a.float(name)
	return int(f), ok
}

// format returns the "format" parameter, or "" when absent.
func (a *args) format() string {
	return a.str[a.o.index("format")]
}

// paramError is a parameter error: its text is meant for the person who
// submitted the job, and it matches ErrBadParam with errors.Is.
type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }
func (e *paramError) Unwrap() error { return ErrBadParam }

func badParam(format string, v ...any) error {
	return &paramError{msg: fmt.Sprintf(format, v...)}
}
