package userop

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
)

// Invocation is how a worker runs one unit of a user operation: the ABI,
// the limits and the parameters. It travels in the unit's parameters, the
// settings under reserved "braid." keys, so a unit says everything the
// worker needs besides the module.
type Invocation struct {
	ABI         string
	Interpreter string // ABIExec
	Timeout     time.Duration
	MemoryMiB   int
	MaxOutput   int64
	// Network (ABIExec) gives the unit the worker's network.
	Network bool
	// Params are the operation's parameters, defaults filled in.
	Params map[string]string
}

// Reserved unit parameters. User parameter names cannot contain '.'.
const (
	keyABI       = "braid.abi"
	keyTimeout   = "braid.timeout_ms"
	keyMemory    = "braid.memory_mib"
	keyMaxOutput = "braid.max_output"
	keyInterp    = "braid.interpreter"
	keyNetwork   = "braid.network"
)

// NewExecInvocation is NewInvocation for a script run by interpreter.
func NewExecInvocation(interpreter string, l api.OpLimits, jobTimeoutMS int64, values [][2]string) Invocation {
	inv := NewInvocation(api.ABIExec, l, jobTimeoutMS, values)
	inv.Interpreter, inv.Network = interpreter, l.Network
	return inv
}

// NewInvocation resolves an operation's limits (jobTimeoutMS, when not 0,
// overrides its timeout) and a job's checked parameter values.
func NewInvocation(abi string, l api.OpLimits, jobTimeoutMS int64, values [][2]string) Invocation {
	inv := Invocation{ABI: abi, Timeout: DefaultTimeout, MemoryMiB: DefaultMemory, MaxOutput: MaxOutput, Params: map[string]string{}}
	if l.TimeoutMS > 0 {
		inv.Timeout = time.Duration(l.TimeoutMS) * time.Millisecond
	}
	if jobTimeoutMS > 0 {
		inv.Timeout = time.Duration(jobTimeoutMS) * time.Millisecond
	}
	if l.MemoryMiB > 0 {
		inv.MemoryMiB = l.MemoryMiB
	}
	if l.MaxOutput > 0 {
		inv.MaxOutput = l.MaxOutput
	}
	for _, kv := range values {
		inv.Params[kv[0]] = kv[1]
	}
	return inv
}

// CheckJobTimeout checks a job's UnitTimeoutMS.
func CheckJobTimeout(ms int64) error {
	if ms < 0 || ms > MaxTimeout.Milliseconds() {
		return fmt.Errorf("%w: unit timeout %d ms: want up to %v", ErrBadParam, ms, MaxTimeout)
	}
	return nil
}

// UnitParams encodes inv as a unit's parameters.
func (inv Invocation) UnitParams() map[string]string {
	p := maps.Clone(inv.Params)
	if p == nil {
		p = map[string]string{}
	}
	p[keyABI] = inv.ABI
	p[keyTimeout] = strconv.FormatInt(inv.Timeout.Milliseconds(), 10)
	p[keyMemory] = strconv.Itoa(inv.MemoryMiB)
	p[keyMaxOutput] = strconv.FormatInt(inv.MaxOutput, 10)
	if inv.Interpreter != "" {
		p[keyInterp] = inv.Interpreter
	}
	if inv.Network {
		p[keyNetwork] = "true"
	}
	return p
}

// ParseInvocation decodes a unit's parameters, checking the settings
// against the package's bounds: a worker trusts no server to have done so.
func ParseInvocation(p map[string]string) (Invocation, error) {
	inv := Invocation{ABI: p[keyABI], Interpreter: p[keyInterp], Params: map[string]string{}}
	ms, err1 := strconv.ParseInt(p[keyTimeout], 10, 64)
	mem, err2 := strconv.Atoi(p[keyMemory])
	out, err3 := strconv.ParseInt(p[keyMaxOutput], 10, 64)
	switch {
	case inv.ABI != api.ABICommand && inv.ABI != api.ABIReactor && inv.ABI != api.ABIExec:
		return inv, fmt.Errorf("%w: unit names ABI %q", ErrBadParam, inv.ABI)
	case (inv.ABI == api.ABIExec) != ValidInterpreter(inv.Interpreter):
		return inv, fmt.Errorf("%w: unit names interpreter %q for ABI %s", ErrBadParam, inv.Interpreter, inv.ABI)
	case err1 != nil || ms <= 0 || ms > MaxTimeout.Milliseconds():
		return inv, fmt.Errorf("%w: unit timeout %q", ErrBadParam, p[keyTimeout])
	case err2 != nil || mem <= 0 || mem > MaxMemory:
		return inv, fmt.Errorf("%w: unit memory %q", ErrBadParam, p[keyMemory])
	case err3 != nil || out <= 0 || out > MaxOutput:
		return inv, fmt.Errorf("%w: unit output limit %q", ErrBadParam, p[keyMaxOutput])
	case p[keyNetwork] != "" && (p[keyNetwork] != "true" || inv.ABI != api.ABIExec):
		return inv, fmt.Errorf("%w: unit network %q for ABI %s", ErrBadParam, p[keyNetwork], inv.ABI)
	}
	inv.Network = p[keyNetwork] == "true"
	inv.Timeout, inv.MemoryMiB, inv.MaxOutput = time.Duration(ms)*time.Millisecond, mem, out
	for k, v := range p {
		if strings.HasPrefix(k, "braid.") {
			continue
		}
		if strings.ContainsAny(k+v, "\n\r\x00") {
			return inv, fmt.Errorf("%w: parameter %.40q has a line break", ErrBadParam, k)
		}
		inv.Params[k] = v
	}
	return inv, nil
}

// Args are a command's arguments: argv[0] is the operation's name, then
// one --name=value per parameter, sorted by name.
func (inv Invocation) Args(op string) []string {
	args := []string{op}
	for _, k := range slices.Sorted(maps.Keys(inv.Params)) {
		args = append(args, "--"+k+"="+inv.Params[k])
	}
	return args
}
