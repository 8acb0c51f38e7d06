package ops

import (
	"cmp"
	"image"
	"image/color"
	"slices"
)

// GIF output: quantize turns an operation's result into a paletted image.
// It is deterministic, so equal pixels always give equal GIF bytes.
//
//   - Pixels with alpha below 128 map to a transparent palette entry; the
//     others are treated as opaque.
//   - A result with at most 256 colours (counting transparent) gets an exact
//     palette, sorted by colour.
//   - Otherwise a median-cut palette is built from a 5-bit-per-channel
//     histogram and pixels are mapped with Floyd–Steinberg dithering.

const binBits = 5

func binKey(r, g, b uint8) int {
	return int(r>>(8-binBits))<<(2*binBits) | int(g>>(8-binBits))<<binBits | int(b>>(8-binBits))
}

func quantize(img image.Image) *image.Paletted {
	switch m := img.(type) {
	case *image.Gray:
		return quantizeGray(m)
	case *image.NRGBA:
		if p := exactPalette(m); p != nil {
			return p
		}
		return medianCut(m)
	default:
		return quantize(toNRGBA(img))
	}
}

func quantizeGray(m *image.Gray) *image.Paletted {
	var used [256]bool
	for _, g := range m.Pix {
		used[g] = true
	}
	var index [256]uint8
	var pal color.Palette
	for g := range used {
		if used[g] {
			index[g] = uint8(len(pal))
			pal = append(pal, color.Gray{Y: uint8(g)})
		}
	}
	dst := image.NewPaletted(m.Rect, pal)
	for i, g := range m.Pix {
		dst.Pix[i] = index[g]
	}
	return dst
}

var transparent = color.NRGBA{}

// exactPalette returns m on an exact palette, or nil if m has too many
// colours for one.
func exactPalette(m *image.NRGBA) *image.Paletted {
	colors := make(map[uint32]uint8, 256)
	hasTransparent := false
	last := uint32(1 << 31) // never a packed RGB value
	for i := 0; i < len(m.Pix); i += 4 {
		if m.Pix[i+3] < 128 {
			hasTransparent = true
			continue
		}
		c := uint32(m.Pix[i])<<16 | uint32(m.Pix[i+1])<<8 | uint32(m.Pix[i+2])
		if c == last {
			continue
		}
		last = c
		if _, ok := colors[c]; !ok {
			if len(colors) == 256 {
				return nil
			}
			colors[c] = 0
		}
	}
	n := len(colors)
	if hasTransparent {
		n++
	}
	if n > 256 {
		return nil
	}
	keys := make([]uint32, 0, len(colors))
	for c := range colors {
		keys = append(keys, c)
	}
	slices.Sort(keys)
	pal := make(color.Palette, 0, n)
	for i, c := range keys {
		colors[c] = uint8(i)
		pal = append(pal, color.NRGBA{uint8(c >> 16), uint8(c >> 8), uint8(c), 0xff})
	}
	tIndex := uint8(len(pal))
	if hasTransparent {
		pal = append(pal, transparent)
	}
	dst := image.NewPaletted(m.Rect, pal)
	for i, j := 0, 0; i < len(m.Pix); i, j = i+4, j+1 {
		if m.Pix[i+3] < 128 {
			dst.Pix[j] = tIndex
			continue
		}
		dst.Pix[j] = colors[uint32(m.Pix[i])<<16|uint32(m.Pix[i+1])<<8|uint32(m.Pix[i+2])]
	}
	return dst
}

// bin is one occupied histogram cell.
type bin struct {
	key   int32
	count uint32
}

func (b bin) channel(c int) int32 { return b.key >> (binBits * (2 - c)) & (1<<binBits - 1) }

// box is a run of bins, bins[lo:hi], that median cut may split further.
type box struct {
	lo, hi   int
	count    uint64
	min, max [3]int32 // per channel
	axis     int      // channel with the widest range
	span     int32    // that range
}

// quantScratch is the reusable working memory of medianCut.
type quantScratch struct {
	hist  [1 << (3 * binBits)]uint32
	cache [1 << (3 * binBits)]int16 // nearest palette index per bin, -1 unknown
}

var quantPool syncPool[quantScratch]

func medianCut(m *image.NRGBA) *image.Paletted {
	s := quantPool.Get()
	defer quantPool.Put(s)
	clear(s.hist[:])
	hasTransparent := false
	for i := 0; i < len(m.Pix); i += 4 {
		if m.Pix[i+3] < 128 {
			hasTransparent = true
			continue
		}
		s.hist[binKey(m.Pix[i], m.Pix[i+1], m.Pix[i+2])]++
	}
	k := 256
	if hasTransparent {
		k--
	}
	var bins []bin
	for key, n := range s.hist {
		if n > 0 {
			bins = append(bins, bin{int32(key), n})
		}
	}
	pal := make(color.Palette, 0, 256)
	for _, bx := range splitBoxes(bins, k) {
		pal = append(pal, boxColor(bins[bx.lo:bx.hi]))
	}
	tIndex := len(pal)
	if hasTransparent {
		pal = append(pal, transparent)
	}
	for i := range s.cache {
		s.cache[i] = -1
	}
	dst := image.NewPaletted(m.Rect, pal)
	dither(dst, m, pal[:tIndex], tIndex, &s.cache)
	return dst
}

func newBox(bins []bin, lo, hi int) box {
	b := box{lo: lo, hi: hi, min: [3]int32{1 << binBits, 1 << binBits, 1 << binBits}}
	for _, e := range bins[lo:hi] {
		b.count += uint64(e.count)
		for c := range 3 {
			v := e.channel(c)
			b.min[c], b.max[c] = min(b.min[c], v), max(b.max[c], v)
		}
	}
	for c := range 3 {
		if b.max[c]-b.min[c] > b.span {
			b.axis, b.span = c, b.max[c]-b.min[c]
		}
	}
	return b
}

// splitBoxes divides bins into at most k boxes by repeatedly splitting the
// box with the largest count × span at its median along its widest axis.
func splitBoxes(bins []bin, k int) []box {
	boxes := make([]box, 1, k)
	boxes[0] = newBox(bins, 0, len(bins))
	for len(boxes) < k {
		best, bestScore := -1, uint64(0)
		for i, b := range boxes {
			if score := b.count * uint64(b.span); b.span > 0 && score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			break
		}
		b := boxes[best]
		part := bins[b.lo:b.hi]
		// The median value along the axis, from a histogram of the box.
		var hist [1 << binBits]uint64
		for _, e := range part {
			hist[e.channel(b.axis)] += uint64(e.count)
		}
		cut, acc := b.min[b.axis], uint64(0)
		for ; cut < b.max[b.axis]-1; cut++ {
			acc += hist[cut]
			if 2*acc >= b.count {
				break
			}
		}
		// Partition: channel ≤ cut first.
		i, j := 0, len(part)-1
		for i <= j {
			if part[i].channel(b.axis) <= cut {
				i++
			} else {
				part[i], part[j] = part[j], part[i]
				j--
			}
		}
		boxes[best] = newBox(bins, b.lo, b.lo+i)
		boxes = append(boxes, newBox(bins, b.lo+i, b.hi))
	}
	return boxes
}

func expand(v int32) int64 { return int64(v<<(8-binBits) | v>>(2*binBits-8)) }

func boxColor(bins []bin) color.Color {
	var sum [3]int64
	n := int64(0)
	for _, e := range bins {
		for c := range 3 {
			sum[c] += expand(e.channel(c)) * int64(e.count)
		}
		n += int64(e.count)
	}
	if n == 0 {
		return color.NRGBA{A: 0xff}
	}
	return color.NRGBA{uint8((sum[0] + n/2) / n), uint8((sum[1] + n/2) / n), uint8((sum[2] + n/2) / n), 0xff}
}

// dither maps m onto pal with Floyd–Steinberg error diffusion; pixels with
// alpha below 128 get index tIndex.
func dither(dst *image.Paletted, m *image.NRGBA, pal color.Palette, tIndex int, cache *[1 << (3 * binBits)]int16) {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	search := newPaletteSearch(pal)
	// Errors in 1/16ths, for this row and the next, with a pixel of padding
	// on either side.
	cur := make([][3]int32, w+2)
	next := make([][3]int32, w+2)
	for y := range h {
		row := m.Pix[y*m.Stride:][:4*w]
		out := dst.Pix[y*dst.Stride:][:w]
		for x := range w {
			p := row[4*x:][:4]
			if p[3] < 128 {
				out[x] = uint8(tIndex)
				continue
			}
			var t [3]int32
			for c := range 3 {
				t[c] = min(max(int32(p[c])+(cur[x+1][c]+8)>>4, 0), 255)
			}
			key := binKey(uint8(t[0]), uint8(t[1]), uint8(t[2]))
			idx := cache[key]
			if idx < 0 {
				idx = int16(search.nearest(binCenter(key)))
				cache[key] = idx
			}
			out[x] = uint8(idx)
			for c := range 3 {
				e := t[c] - search.rgb[idx][c]
				cur[x+2][c] += 7 * e
				next[x][c] += 3 * e
				next[x+1][c] += 5 * e
				next[x+2][c] += e
			}
		}
		cur, next = next, cur
		clear(next)
	}
}

// binCenter is the colour a histogram cell stands for.
func binCenter(key int) [3]int32 {
	e := bin{key: int32(key)}
	return [3]int32{int32(expand(e.channel(0))), int32(expand(e.channel(1))), int32(expand(e.channel(2)))}
}

// paletteSearch finds the nearest palette colour (Euclidean RGB) by
// scanning outwards from the target's red value in a red-sorted palette,
// stopping once the red distance alone exceeds the best match.
type paletteSearch struct {
	rgb   [][3]int32 // by palette index
	order []int      // palette indexes sorted by red, then index
}

func newPaletteSearch(pal color.Palette) *paletteSearch {
	s := &paletteSearch{rgb: make([][3]int32, len(pal)), order: make([]int, len(pal))}
	for i, c := range pal {
		n := c.(color.NRGBA)
		s.rgb[i] = [3]int32{int32(n.R), int32(n.G), int32(n.B)}
		s.order[i] = i
	}
	slices.SortFunc(s.order, func(a, b int) int {
		return cmp.Or(cmp.Compare(s.rgb[a][0], s.rgb[b][0]), cmp.Compare(a, b))
	})
	return s
}

func (s *paletteSearch) nearest(t [3]int32) int {
	start, _ := slices.BinarySearchFunc(s.order, t[0], func(i int, r int32) int { return cmp.Compare(s.rgb[i][0], r) })
	best, bestD := -1, int32(1<<31-1)
	try := func(i int) bool {
		c := s.rgb[i]
		dr := c[0] - t[0]
		if dr*dr > bestD {
			return false
		}
		dg, db := c[1]-t[1], c[2]-t[2]
		if d := dr*dr + dg*dg + db*db; d < bestD || d == bestD && i < best {
			best, bestD = i, d
		}
		return true
	}
	for up, down := start, start-1; up < len(s.order) || down >= 0; {
		if up < len(s.order) && !try(s.order[up]) {
			up = len(s.order)
		} else {
			up++
		}
		if down >= 0 && !try(s.order[down]) {
			down = -1
		} else {
			down--
		}
	}
	return best
}
