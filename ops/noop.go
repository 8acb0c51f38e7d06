package ops

func init() {
	register(&op{
		info:        Info{Name: "noop", Summary: "returns the input unchanged, without decoding it (measures system overhead)"},
		reach:       func(*args) int { return 0 },
		passthrough: true,
	})
}
