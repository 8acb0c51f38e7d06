package userop

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/braidhq/braid/api"
)

// ErrBadSpec is wrapped by errors about an operation's registration: its
// name, parameters, limits or module.
var ErrBadSpec = errors.New("userop: bad operation")

// ErrBadParam is wrapped by errors about a job's parameters for a user
// operation.
var ErrBadParam = errors.New("userop: bad parameter")

// Limits on a registration.
const (
	MaxParams     = 16
	MaxReach      = 1024
	MaxSummary    = 200
	MaxParamValue = 1024

	DefaultTimeout = 60 * time.Second
	MaxTimeout     = time.Hour
	DefaultMemory  = 256 // MiB
	MaxMemory      = 4096
	// MaxOutput is the most a unit may write: what fits a data-plane
	// message with its header.
	MaxOutput = 64 << 20
)

var (
	interpRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,31}$`)
	nameRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,47}$`)
	paramRE  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
)

// ValidInterpreter reports whether name is an interpreter's name as an
// exec operation and worker --allow-exec give it: a program name, no path.
func ValidInterpreter(name string) bool { return interpRE.MatchString(name) }

// ParamTypes are the types a user operation's parameter may have.
var ParamTypes = []string{"bool", "int", "float", "string"}

// CheckSpec checks a registration, except its module, and fills in the
// default ABI. builtin reports whether a name is a built-in operation's,
// which a user operation may not take.
func CheckSpec(spec *api.OperationSpec, builtin func(string) bool) error {
	if !nameRE.MatchString(spec.Name) {
		return badSpec("name %q: want a lowercase letter, then up to 47 lowercase letters, digits, '_' or '-'", spec.Name)
	}
	if builtin(spec.Name) {
		return badSpec("name %q is a built-in operation's", spec.Name)
	}
	switch spec.ABI {
	case "":
		spec.ABI = api.ABICommand
	case api.ABICommand, api.ABIReactor, api.ABIExec:
	default:
		return badSpec("abi %q: want %q, %q or %q", spec.ABI, api.ABICommand, api.ABIReactor, api.ABIExec)
	}
	switch {
	case spec.ABI == api.ABIExec && !ValidInterpreter(spec.Interpreter):
		return badSpec("interpreter %q: want a program's name, e.g. python3 or sh (letters, digits, '.', '_', '+', '-'; no path: each worker finds it on its own PATH)", spec.Interpreter)
	case spec.ABI != api.ABIExec && spec.Interpreter != "":
		return badSpec("an interpreter is for scripts (abi exec); a WebAssembly module needs none")
	case spec.ABI != api.ABIExec && spec.Limits.Network:
		return badSpec("network is for scripts (abi exec); a WebAssembly module has none")
	}
	if n := utf8.RuneCountInString(spec.Summary); n > MaxSummary {
		return badSpec("summary is %d characters, at most %d", n, MaxSummary)
	}
	if spec.Reach != nil && (*spec.Reach < 0 || *spec.Reach > MaxReach) {
		return badSpec("reach %d: want 0 to %d pixels", *spec.Reach, MaxReach)
	}
	if err := checkLimits(spec.Limits); err != nil {
		return err
	}
	return checkParamSpecs(spec.Params)
}

func checkLimits(l api.OpLimits) error {
	switch {
	case l.TimeoutMS < 0 || l.TimeoutMS > MaxTimeout.Milliseconds():
		return badSpec("timeout %d ms: want up to %v", l.TimeoutMS, MaxTimeout)
	case l.MemoryMiB < 0 || l.MemoryMiB > MaxMemory:
		return badSpec("memory %d MiB: want up to %d", l.MemoryMiB, MaxMemory)
	case l.MaxOutput < 0 || l.MaxOutput > MaxOutput:
		return badSpec("max output %d bytes: want up to %d", l.MaxOutput, MaxOutput)
	}
	return nil
}

func checkParamSpecs(params []api.Parameter) error {
	if len(params) > MaxParams {
		return badSpec("%d parameters, at most %d", len(params), MaxParams)
	}
	seen := map[string]bool{}
	for _, p := range params {
		if !paramRE.MatchString(p.Name) {
			return badSpec("parameter name %q: want a lowercase letter, then up to 31 lowercase letters, digits or '_'", p.Name)
		}
		if seen[p.Name] {
			return badSpec("parameter %q is declared twice", p.Name)
		}
		seen[p.Name] = true
		if !slices.Contains(ParamTypes, p.Type) {
			return badSpec("parameter %s: type %q, want one of %s", p.Name, p.Type, strings.Join(ParamTypes, ", "))
		}
		number := p.Type == "int" || p.Type == "float"
		if !number && (p.Min != nil || p.Max != nil) {
			return badSpec("parameter %s: only int and float parameters have bounds", p.Name)
		}
		for _, b := range []*float64{p.Min, p.Max} {
			if b != nil && (math.IsNaN(*b) || math.IsInf(*b, 0)) {
				return badSpec("parameter %s: bounds must be finite numbers", p.Name)
			}
		}
		if p.Min != nil && p.Max != nil && *p.Min > *p.Max {
			return badSpec("parameter %s: min %g is above max %g", p.Name, *p.Min, *p.Max)
		}
		if p.Default != "" {
			if err := checkValue("", p, p.Default); err != nil {
				return badSpec("parameter %s: default: %v", p.Name, strings.TrimPrefix(err.Error(), ErrBadParam.Error()+": "))
			}
		}
	}
	return nil
}

// ParseParam reads the command line's parameter declaration
// NAME:TYPE[=DEFAULT][@MIN..MAX], e.g. "lower:bool=false" or
// "sigma:float=1@0..10" (either bound may be left out: "@0..").
func ParseParam(s string) (api.Parameter, error) {
	name, rest, ok := strings.Cut(s, ":")
	if !ok {
		return api.Parameter{}, badSpec("parameter %q: want NAME:TYPE[=DEFAULT][@MIN..MAX], e.g. lower:bool=false", s)
	}
	p := api.Parameter{Name: name}
	if i := strings.LastIndex(rest, "@"); i >= 0 && strings.Contains(rest[i:], "..") {
		lo, hi, _ := strings.Cut(rest[i+1:], "..")
		var err error
		if p.Min, err = bound(lo); err == nil {
			p.Max, err = bound(hi)
		}
		if err != nil {
			return p, badSpec("parameter %s: bounds %q: %v", name, rest[i+1:], err)
		}
		rest = rest[:i]
	}
	p.Type, p.Default, _ = strings.Cut(rest, "=")
	return p, checkParamSpecs([]api.Parameter{p})
}

func bound(s string) (*float64, error) {
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not a number", s)
	}
	return &v, nil
}

// Values checks a job's parameters against the operation's declarations
// and returns every parameter's value, defaults filled in, in declaration
// order (parameters without a default that the job does not give are
// left out).
func Values(op string, decl []api.Parameter, given map[string]string) ([][2]string, error) {
	var unknown []string
	for k := range given {
		if !slices.ContainsFunc(decl, func(p api.Parameter) bool { return p.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("%w: %s: unknown parameter %q (known: %s)", ErrBadParam, op, unknown[0], paramNames(decl))
	}
	var out [][2]string
	for _, p := range decl {
		v, ok := given[p.Name]
		if !ok {
			v = p.Default
			if v == "" {
				continue
			}
		}
		if err := checkValue(op, p, v); err != nil {
			return nil, err
		}
		out = append(out, [2]string{p.Name, v})
	}
	return out, nil
}

func paramNames(decl []api.Parameter) string {
	if len(decl) == 0 {
		return "none"
	}
	names := make([]string, len(decl))
	for i, p := range decl {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// checkValue checks one value against its declaration.
func checkValue(op string, p api.Parameter, v string) error {
	prefix := p.Name
	if op != "" {
		prefix = op + ": " + p.Name
	}
	if len(v) > MaxParamValue {
		return fmt.Errorf("%w: %s is %d bytes, at most %d", ErrBadParam, prefix, len(v), MaxParamValue)
	}
	if strings.ContainsFunc(v, unicode.IsControl) {
		return fmt.Errorf("%w: %s has a control character (a newline, a tab, ...): values are one line of text", ErrBadParam, prefix)
	}
	var x float64
	switch p.Type {
	case "bool":
		if v != "true" && v != "false" {
			return fmt.Errorf("%w: %s %q is not true or false", ErrBadParam, prefix, v)
		}
		return nil
	case "string":
		return nil
	case "int":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %s %q is not an integer", ErrBadParam, prefix, v)
		}
		x = float64(n)
	case "float":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: %s %q is not a number", ErrBadParam, prefix, v)
		}
		x = f
	}
	if p.Min != nil && x < *p.Min {
		return fmt.Errorf("%w: %s %s is below its minimum %g", ErrBadParam, prefix, v, *p.Min)
	}
	if p.Max != nil && x > *p.Max {
		return fmt.Errorf("%w: %s %s is above its maximum %g", ErrBadParam, prefix, v, *p.Max)
	}
	return nil
}

func badSpec(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSpec, fmt.Sprintf(format, args...))
}
