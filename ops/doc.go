// Package ops holds braid's built-in image operations: Gaussian and box
// blur, sharpen, grayscale, Sobel edges, resize, and noop.
//
// Operations never touch the network; the server validates a job's
// parameters with [Op.Validate] at submit time and the worker runs units with
// [Run], which decodes the input (GIF, PNG or JPEG, sniffed from content),
// applies the operation and encodes the result in the input's format unless
// the "format" parameter asks for "png", "jpeg" or "gif".
//
//	out, err := ops.Run("blur", ops.Params{"sigma": "1.5"}, gifBytes)
//
// # Pixels
//
// Every operation works on a flat 8-bit non-premultiplied RGBA buffer
// ([image.NRGBA]); inputs of other types are converted once, with fast paths
// for paletted (GIF), RGBA, gray and YCbCr (JPEG) images. Filters weight
// colours by alpha, so transparent pixels do not bleed into their
// neighbours. Pixels beyond the image border are clamped to the nearest edge
// pixel. GIF output uses an exact palette when the result has at most 256
// colours and a median-cut palette with Floyd–Steinberg dithering otherwise;
// pixels with alpha below 128 become the transparent index. Only the first
// frame of an animated GIF is used.
//
// # Tiling
//
// [SplitTiles] cuts an image into rows×cols tiles, each carrying a halo of
// neighbouring pixels; [Stitch] reassembles the processed tiles. Every
// operation computes an output pixel from input pixels at most [Op.Reach]
// away, with the same arithmetic whatever the surrounding tile, so with a
// halo of at least Reach the stitched image equals the whole-image result
// pixel for pixel, and Stitch encodes it exactly as Run would. Operations
// that cannot be tiled (resize) report [ErrNotTileable].
//
// # Limits
//
// Inputs larger than [MaxPixels] pixels or [MaxDimension] pixels on a side
// are rejected from their header, before the pixel data is decoded.
package ops
