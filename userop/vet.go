package userop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Bounds vet enforces, those of the browsers' engines (V8's wasm-limits.h),
// which every toolchain's output respects.
const (
	maxItems     = 1_000_000 // functions, types, imports, exports, globals, segments, names
	maxLocals    = 50_000    // per function
	maxNameBytes = 100_000
	// MaxFunction bounds one function's body, in bytes (V8's
	// kV8MaxWasmFunctionSize): compiling a function costs memory in
	// proportion to its size (CompileCost).
	MaxFunction = 7_654_321
	// maxTableElems bounds the entries of all a module's tables together:
	// wazero keeps 8 bytes per entry outside the memory limit.
	maxTableElems = 10_000_000
)

// ErrFunctionTooLarge is wrapped by the error of a module with a function
// over MaxFunction bytes.
var ErrFunctionTooLarge = errors.New("the module has a function too large to compile")

// errCut reports a module whose structure runs past its end.
var errCut = errors.New("a size runs past the end of its section")

// vet walks a module's sections before wazero decodes it, and rejects one
// whose declared counts and lengths are bigger than its bytes or the
// engines' limits: wazero's decoder allocates what a count says before it
// reads the items, so a module of sixty bytes can ask it for hundreds of
// gigabytes. Sections and items vet does not know are left to wazero.
func vet(m []byte) error {
	_, err := vetLargest(m)
	return err
}

// vetLargest is vet that also returns the size of the module's largest
// function body.
func vetLargest(m []byte) (largest int, err error) {
	r := vreader{b: m[8:]}
	var tables uint64 // entries of every table, at their maximum
	for len(r.b) > 0 && r.err == nil {
		id := r.byte()
		sec := vreader{b: r.take(r.u32()), tables: tables}
		if r.err != nil {
			return 0, badSpec("the module is malformed: %s section: %v", sectionName(id), r.err)
		}
		if err := vetSection(id, &sec); errors.Is(err, ErrFunctionTooLarge) {
			return 0, fmt.Errorf("%w: %w", ErrBadSpec, err)
		} else if err != nil {
			return 0, badSpec("the module is malformed: %s section: %v", sectionName(id), err)
		}
		tables, largest = sec.tables, max(largest, sec.largest)
	}
	return largest, nil
}

var sectionNames = []string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count", "tag"}

func sectionName(id byte) string {
	if int(id) < len(sectionNames) {
		return sectionNames[id]
	}
	return fmt.Sprintf("unknown (%d)", id)
}

func vetSection(id byte, r *vreader) error {
	if id == 0 { // custom
		if r.name() == "name" {
			vetNames(r)
		}
		return r.err
	}
	if id == 8 || id == 12 || id > 13 { // start, data count; unknown
		return nil
	}
	n := r.count()
	switch id {
	case 1:
		for i := uint32(0); i < n && r.ok(); i++ {
			vetType(r)
		}
	case 2:
		for i := uint32(0); i < n && r.ok(); i++ {
			r.name()
			r.name()
			vetImportDesc(r)
		}
	case 4:
		for i := uint32(0); i < n && r.ok(); i++ {
			if r.byte() == 0x40 { // a table with an initializer expression
				r.merge(errors.New("tables with initializer expressions are not supported"))
				break
			}
			vetTable(r)
		}
	case 7:
		for i := uint32(0); i < n && r.ok(); i++ {
			r.name()
			r.byte()
			r.u32()
		}
	case 10:
		for i := uint32(0); i < n && r.ok(); i++ {
			size := r.u32()
			if size > MaxFunction {
				r.merge(fmt.Errorf("%w: function %d's body is %d bytes, at most %d (compiling a function takes about 50 times its size in memory)",
					ErrFunctionTooLarge, i, size, MaxFunction))
				break
			}
			r.largest = max(r.largest, int(size))
			body := vreader{b: r.take(size)}
			vetLocals(&body)
			r.merge(body.err)
		}
	case 9:
		for i := uint32(0); i < n && r.ok(); i++ {
			vetElem(r)
		}
	case 11:
		for i := uint32(0); i < n && r.ok(); i++ {
			vetData(r)
		}
	}
	return r.err
}

// vetType checks a function type's parameter and result counts; other
// forms stop the walk.
func vetType(r *vreader) {
	if r.byte() != 0x60 {
		r.stop()
		return
	}
	for range 2 {
		r.take(r.count()) // value types are one byte each (the ref types it stops at are rare)
	}
}

// vetElem checks an element segment's vector.
func vetElem(r *vreader) {
	flags := r.u32()
	if flags > 7 {
		r.stop()
		return
	}
	if flags&2 != 0 && flags&1 == 0 { // an explicit table index
		r.u32()
	}
	if flags&1 == 0 { // active: an offset
		vetConstExpr(r)
	}
	if flags&3 != 0 { // an element kind or reference type
		r.byte()
	}
	n := r.count()
	for i := uint32(0); i < n && r.ok(); i++ {
		if flags&4 == 0 {
			r.u32()
		} else {
			vetConstExpr(r)
		}
	}
}

func vetImportDesc(r *vreader) {
	switch r.byte() {
	case 0, 4: // func, tag: type index (a tag has an attribute byte first)
		r.u32()
	case 1: // table: ref type, limits
		r.byte()
		vetTable(r)
	case 2: // memory: limits
		vetLimits(r)
	case 3: // global: value type, mutability
		r.byte()
		r.byte()
	default:
		r.stop()
	}
}

// vetLimits reads limits: flags, min, and max when flag 1 says so (64-bit
// numbers with memory64's flag 4).
func vetLimits(r *vreader) (min, max uint64, hasMax bool) {
	flags := r.byte()
	min = r.u64()
	if flags&1 != 0 {
		max, hasMax = r.u64(), true
	}
	return min, max, hasMax
}

// vetTable reads a table's limits (its reference type read already) and
// counts its entries: a table must say its maximum, and the module's
// tables together hold at most maxTableElems.
func vetTable(r *vreader) {
	_, max, hasMax := vetLimits(r)
	switch {
	case !r.ok():
	case !hasMax:
		r.merge(errors.New("a table without a maximum size (its entries are not bounded by the memory limit)"))
	case max > maxTableElems-r.tables:
		r.merge(fmt.Errorf("tables of more than %d entries in all", maxTableElems))
	default:
		r.tables += max
	}
}

// vetLocals checks a function body's local declarations.
func vetLocals(r *vreader) {
	decls := r.count()
	total := uint64(0)
	for i := uint32(0); i < decls && r.ok(); i++ {
		total += uint64(r.u32())
		if t := r.byte(); t == 0x63 || t == 0x64 { // (ref null? ht): a heap type follows
			r.u32()
		}
	}
	if r.err == nil && total > maxLocals {
		r.err = fmt.Errorf("a function declares %d locals, at most %d", total, maxLocals)
	}
}

// vetData checks a data segment's length.
func vetData(r *vreader) {
	switch r.u32() {
	case 0:
		vetConstExpr(r)
	case 1:
	case 2:
		r.u32()
		vetConstExpr(r)
	default:
		r.stop()
		return
	}
	r.take(r.u32())
}

// vetConstExpr skips a constant expression, or stops at an instruction it
// does not know (wazero will reject or decode it).
func vetConstExpr(r *vreader) {
	for r.ok() {
		switch op := r.byte(); op {
		case 0x0b: // end
			return
		case 0x41, 0x42, 0xd0: // i32.const, i64.const (signed), ref.null (a heap type)
			r.skipLEB()
		case 0x23, 0xd2: // global.get, ref.func
			r.u32()
		case 0x43:
			r.take(4)
		case 0x44:
			r.take(8)
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		default:
			r.stop()
		}
	}
}

// vetNames checks the name section's subsections.
func vetNames(r *vreader) {
	for len(r.b) > 0 && r.ok() {
		id := r.byte()
		sub := vreader{b: r.take(r.u32())}
		switch id {
		case 1: // function names: (index, name)*
			vetNameMap(&sub)
		case 2: // local names: (index, (index, name)*)*
			n := sub.count()
			for i := uint32(0); i < n && sub.ok(); i++ {
				sub.u32()
				vetNameMap(&sub)
			}
		}
		r.merge(sub.err)
	}
}

func vetNameMap(r *vreader) {
	n := r.count()
	for i := uint32(0); i < n && r.ok(); i++ {
		r.u32()
		r.name()
	}
}

// vreader reads LEB128 numbers and length-prefixed bytes; its first error
// sticks, and stop ends reading without one.
type vreader struct {
	b       []byte
	err     error
	stopped bool
	tables  uint64 // table entries counted so far (vetTable)
	largest int    // the largest function body seen (code section)
}

func (r *vreader) stop() { r.stopped = true }

// ok says whether reading goes on.
func (r *vreader) ok() bool { return r.err == nil && !r.stopped }

func (r *vreader) merge(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *vreader) byte() byte {
	if !r.ok() {
		return 0
	}
	if len(r.b) == 0 {
		r.merge(errCut)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *vreader) u32() uint32 {
	if !r.ok() {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxUint32 {
		r.merge(errCut)
		return 0
	}
	r.b = r.b[n:]
	return uint32(v)
}

// u64 reads an unsigned LEB128 number of up to 64 bits.
func (r *vreader) u64() uint64 {
	if !r.ok() {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.merge(errCut)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// skipLEB skips a LEB128 number, signed or not, of up to 64 bits.
func (r *vreader) skipLEB() {
	for i := 0; r.ok(); i++ {
		if i == 10 {
			r.merge(errors.New("a number longer than 10 bytes"))
			return
		}
		if r.byte()&0x80 == 0 {
			return
		}
	}
}

func (r *vreader) take(n uint32) []byte {
	if !r.ok() {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) {
		r.merge(errCut)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// count reads a vector's length: no more items than bytes left, nor
// than the engines' limit.
func (r *vreader) count() uint32 {
	n := r.u32()
	switch {
	case !r.ok():
	case n > maxItems:
		r.err = fmt.Errorf("%d items, at most %d", n, maxItems)
	case uint64(n) > uint64(len(r.b)):
		r.err = fmt.Errorf("%d items in %d bytes", n, len(r.b))
	}
	return n
}

func (r *vreader) name() string {
	n := r.u32()
	if n > maxNameBytes {
		r.merge(fmt.Errorf("a name of %d bytes, at most %d", n, maxNameBytes))
		return ""
	}
	return string(r.take(n))
}

// boundTables returns m with every table that declares no maximum size
// given its minimum as maximum, or m itself when there is none (or when
// it cannot tell: vet then says what is wrong). wazero grows a table
// without a maximum up to 2³² entries of 8 bytes, outside the memory
// limit; Go's toolchain declares its table so, and never grows it. Both
// the server's check and the worker's compile see the bounded module; the
// digest is the uploaded one's.
func boundTables(m []byte) []byte {
	if len(m) < 8 {
		return m
	}
	r := vreader{b: m[8:]}
	out := append([]byte(nil), m[:8]...)
	changed := false
	for len(r.b) > 0 {
		id := r.byte()
		body := r.take(r.u32())
		if r.err != nil {
			return m
		}
		if id == 4 {
			if nb, ok := boundTableSection(body); ok {
				body, changed = nb, true
			}
		}
		out = append(binary.AppendUvarint(append(out, id), uint64(len(body))), body...)
	}
	if !changed {
		return m
	}
	return out
}

// boundTableSection rewrites a table section's entries that lack a
// maximum; ok is false when none does or the section is not one it reads.
func boundTableSection(b []byte) (out []byte, ok bool) {
	r := vreader{b: b}
	n := r.u32()
	out = binary.AppendUvarint(nil, uint64(n))
	for i := uint32(0); i < n && r.ok(); i++ {
		rt, flags := r.byte(), r.byte()
		if rt != 0x70 && rt != 0x6f || flags&^1 != 0 { // funcref or externref, 32-bit limits
			return nil, false
		}
		min, max := r.u64(), uint64(0)
		if flags&1 != 0 {
			max = r.u64()
		} else {
			max, ok = min, true
		}
		out = binary.AppendUvarint(binary.AppendUvarint(append(out, rt, flags|1), min), max)
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, false
	}
	return out, ok
}
