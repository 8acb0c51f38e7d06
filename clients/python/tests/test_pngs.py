"""The test images themselves (pngs.py): no server needed."""

from __future__ import annotations

import unittest
import zlib

from pngs import make_png, png_header


class TestMakePNG(unittest.TestCase):
    def test_seeds_256_apart_differ(self) -> None:
        # test_roles uploads make_png(8, 8, random seed) as bytes nobody uploaded yet;
        # seeds 7 and 263 once made the same image.
        for seed in (0, 7, 8, 99):
            self.assertNotEqual(make_png(8, 8, seed), make_png(8, 8, seed + 256), seed)
            self.assertNotEqual(make_png(8, 8, seed + 256), make_png(8, 8, seed + 512), seed)

    def test_still_a_png(self) -> None:
        for seed in (7, 2**32 - 1):
            b = make_png(8, 8, seed)
            self.assertEqual(png_header(b), (8, 8, 2))
            # every chunk's CRC holds
            i = 8
            while i < len(b):
                n = int.from_bytes(b[i : i + 4], "big")
                kind, data = b[i + 4 : i + 8], b[i + 8 : i + 8 + n]
                self.assertEqual(int.from_bytes(b[i + 8 + n : i + 12 + n], "big"), zlib.crc32(kind + data), kind)
                i += 12 + n
            self.assertEqual(i, len(b))


if __name__ == "__main__":
    unittest.main()
