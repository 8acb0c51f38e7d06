// cblur is braid's Gaussian blur written in C, a user operation (command
// ABI, docs/user-ops.md) built with clang and wasi-libc:
//
//	make examples    # sh mk/wasi-c.sh build bin/ops/cblur.wasm examples/ops/cblur/cblur.c
//	braid op add cblur --wasm bin/ops/cblur.wasm --param 'sigma:float=2@0..64'
//
// Its input is a binary netpbm image, PPM (P6, RGB) or PGM (P5, gray), 8
// bits a sample; its output is the blurred image in the same format. It
// computes as the built-in blur does on an opaque image: float32 samples,
// the same normalized kernel of radius ceil(3·sigma), rows then columns,
// edges clamped, each output sample the same sums in the same order, and
// rounding to 8 bits; so its pixels are the built-in's (TestCBlurExample).
// What it does not do is decode GIF, PNG or JPEG: netpbm keeps the example
// to the arithmetic that the comparison with the built-in is about.
//
// Parameters arrive as arguments: --sigma=S, the standard deviation in
// pixels, in (0, 64] (default 2). Errors go to stderr with exit status 1
// (bad input) or 2 (bad arguments).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// HOT marks a loop over samples: vectorized 4 wide and unrolled 8 times,
// 32 samples an iteration. Beyond speed, braid's sandbox stops a module
// at its time limit by checking at every loop back-edge, a call each
// time: with 32 samples an iteration that check costs little (a unit of
// the sample GIF's pixels took 4.0 ms of CPU without, 1.85 with;
// docs/user-ops.md).
#ifndef HOT // -DHOT= builds without, to measure the difference
#define HOT _Pragma("clang loop vectorize_width(4) interleave_count(8)")
#endif

// An image: w×h pixels of nc interleaved channels (3: RGB, 1: gray).
typedef struct {
	int w, h, nc;
	float *pix;
} image;

static void die(int status, const char *msg, const char *detail) {
	fprintf(stderr, "cblur: %s%s\n", msg, detail ? detail : "");
	exit(status);
}

static void *alloc(size_t n) {
	void *p = malloc(n);
	if (!p)
		die(1, "out of memory", NULL);
	return p;
}

// read_all reads stdin to its end; *n is its length.
static uint8_t *read_all(size_t *n) {
	size_t cap = 1 << 16, len = 0;
	uint8_t *buf = alloc(cap);
	for (;;) {
		size_t got = fread(buf + len, 1, cap - len, stdin);
		len += got;
		if (got == 0)
			break;
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				die(1, "out of memory", NULL);
		}
	}
	if (ferror(stdin))
		die(1, "reading the input failed", NULL);
	*n = len;
	return buf;
}

// header_int reads one decimal field of a netpbm header at *p, skipping
// whitespace and # comments before it; -1 if there is none.
static long header_int(const uint8_t *b, size_t n, size_t *p) {
	for (;;) {
		while (*p < n && (b[*p] == ' ' || b[*p] == '\t' || b[*p] == '\n' || b[*p] == '\r'))
			(*p)++;
		if (*p < n && b[*p] == '#') {
			while (*p < n && b[*p] != '\n')
				(*p)++;
			continue;
		}
		break;
	}
	long v = -1;
	while (*p < n && b[*p] >= '0' && b[*p] <= '9' && v < 1000000)
		v = (v < 0 ? 0 : v * 10) + (b[(*p)++] - '0');
	return v;
}

// decode parses a binary PPM or PGM with 8-bit samples into a float image.
static image decode(const uint8_t *b, size_t n) {
	if (n < 2 || b[0] != 'P' || (b[1] != '6' && b[1] != '5'))
		die(1, "the input is not a binary PPM (P6) or PGM (P5) image", NULL);
	image m = {.nc = b[1] == '6' ? 3 : 1};
	size_t p = 2;
	long w = header_int(b, n, &p), h = header_int(b, n, &p), maxval = header_int(b, n, &p);
	if (w <= 0 || h <= 0 || w > 16384 || h > 16384 || w * h > 64000000)
		die(1, "the image's size is missing, zero or too large (at most 16384 a side, 64 megapixels)", NULL);
	if (maxval != 255)
		die(1, "only 8-bit samples (maxval 255) are supported", NULL);
	p++; // the single whitespace byte before the samples
	size_t count = (size_t)w * (size_t)h * (size_t)m.nc;
	if (p > n || n - p < count)
		die(1, "the image's samples are cut short", NULL);
	m.w = (int)w, m.h = (int)h;
	m.pix = alloc(count * sizeof(float));
	HOT for (size_t i = 0; i < count; i++)
		m.pix[i] = (float)b[p + i];
	return m;
}

// to8 rounds v to the nearest byte, clamping to [0, 255].
static uint8_t to8(float v) {
	if (v <= 0)
		return 0;
	if (v >= 255)
		return 255;
	return (uint8_t)(v + 0.5f);
}

// encode writes m to stdout in its netpbm format.
static void encode(image m) {
	size_t count = (size_t)m.w * m.h * m.nc;
	uint8_t *out = alloc(count);
	HOT for (size_t i = 0; i < count; i++)
		out[i] = to8(m.pix[i]);
	printf("P%c\n%d %d\n255\n", m.nc == 3 ? '6' : '5', m.w, m.h);
	if (fwrite(out, 1, count, stdout) != count || fflush(stdout) != 0)
		die(1, "writing the output failed", NULL);
}

// gaussian returns the normalized half kernel of radius r, k[0] the
// centre: weights computed in double, as the built-in does.
static float *gaussian(double sigma, int r) {
	double *w = alloc((r + 1) * sizeof(double)), sum = 0;
	for (int j = 0; j <= r; j++) {
		w[j] = exp(-(double)(j * j) / (2 * sigma * sigma));
		sum += w[j];
		if (j > 0)
			sum += w[j]; // twice, not 2·w: the built-in's rounding
	}
	float *k = alloc((r + 1) * sizeof(float));
	for (int j = 0; j <= r; j++)
		k[j] = (float)(w[j] / sum);
	free(w);
	return k;
}

// axpy2 adds k·(a[i]+b[i]) to out[i]: the inner loop.
static void axpy2(float *restrict out, float k, const float *a, const float *b, size_t n) {
	HOT for (size_t i = 0; i < n; i++)
		out[i] += k * (a[i] + b[i]);
}

static void scale(float *restrict out, float k, const float *a, size_t n) {
	HOT for (size_t i = 0; i < n; i++)
		out[i] = k * a[i];
}

// convolve applies the symmetric kernel k of radius r along rows, then
// columns, clamping at the edges, summing one tap at a time from the
// centre out, as the built-in does.
static image convolve(image src, const float *k, int r) {
	size_t row = (size_t)src.w * src.nc, nc = src.nc;
	image tmp = src, dst = src;
	tmp.pix = alloc(row * src.h * sizeof(float));
	dst.pix = alloc(row * src.h * sizeof(float));
	float *pad = alloc((row + 2 * r * nc) * sizeof(float));
	for (int y = 0; y < src.h; y++) {
		const float *in = src.pix + y * row;
		float *out = tmp.pix + y * row;
		memcpy(pad + r * nc, in, row * sizeof(float));
		for (int j = 0; j < r; j++) {
			memcpy(pad + j * nc, in, nc * sizeof(float));
			memcpy(pad + (r + src.w + j) * nc, in + row - nc, nc * sizeof(float));
		}
		scale(out, k[0], pad + r * nc, row);
		for (int j = 1; j <= r; j++)
			axpy2(out, k[j], pad + (r - j) * nc, pad + (r + j) * nc, row);
	}
	for (int y = 0; y < src.h; y++) {
		float *out = dst.pix + y * row;
		scale(out, k[0], tmp.pix + y * row, row);
		for (int j = 1; j <= r; j++) {
			int up = y - j < 0 ? 0 : y - j, down = y + j > src.h - 1 ? src.h - 1 : y + j;
			axpy2(out, k[j], tmp.pix + up * row, tmp.pix + down * row, row);
		}
	}
	free(pad);
	free(tmp.pix);
	return dst;
}

// parse_sigma reads the --sigma=S argument (default 2).
static double parse_sigma(int argc, char **argv) {
	double sigma = 2;
	for (int i = 1; i < argc; i++) {
		char *end;
		if (strncmp(argv[i], "--sigma=", 8) != 0)
			die(2, "unknown argument (want --sigma=S): ", argv[i]);
		sigma = strtod(argv[i] + 8, &end);
		if (end == argv[i] + 8 || *end != '\0' || !(sigma > 0 && sigma <= 64))
			die(2, "sigma must be a number in (0, 64]: ", argv[i]);
	}
	return sigma;
}

int main(int argc, char **argv) {
	double sigma = parse_sigma(argc, argv);
	int r = (int)ceil(3 * sigma);
	r = r < 1 ? 1 : r > 192 ? 192 : r;
	size_t n;
	uint8_t *in = read_all(&n);
	image src = decode(in, n);
	free(in);
	float *k = gaussian(sigma, r);
	encode(convolve(src, k, r));
	return 0;
}
