"""Small PNG images, made and read with the standard library, for the tests."""

from __future__ import annotations

import binascii
import struct
import zlib
from typing import Tuple

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def make_png(width: int, height: int, seed: int = 0) -> bytes:
    """An 8-bit RGB PNG with a pattern that seed varies; distinct seeds give distinct bytes.

    The pattern takes seed modulo 256, so a seed from 256 up is also written in a tEXt chunk:
    without it seeds 256 apart made the same image, and a test wanting bytes nobody uploaded
    yet got another test's object (and its owner)."""
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            row += bytes(((x * 7 + seed) % 256, (y * 5 + seed) % 256, (x * y + seed) % 256))
        rows.append(bytes(row))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    text = _chunk(b"tEXt", b"seed\0" + str(seed).encode()) if seed >= 256 else b""
    return SIGNATURE + _chunk(b"IHDR", ihdr) + text + _chunk(b"IDAT", zlib.compress(b"".join(rows))) + _chunk(b"IEND", b"")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", binascii.crc32(kind + data))


def png_header(b: bytes) -> Tuple[int, int, int]:
    """The width, height and color type of a PNG (0 gray, 2 RGB, 6 RGBA, ...); ValueError if b is not one."""
    if not b.startswith(SIGNATURE) or b[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height, _depth, color = struct.unpack(">IIBB", b[16:26])
    return width, height, color
