"""PNG files from pixels: the explorer's pictures, encoded fast (the standard library only)."""

import struct
import zlib

import numpy as np


def png_bytes(rgb):
    """Encode an ``(height, width, 3)`` uint8 array as PNG, fast: no row filter, zlib's fastest level.

    Pillow's encoder tries a filter per row and takes about twice as long on the explorer's
    pictures, for files a few percent smaller. ``rgb`` is a picture's pixels, as the figure's
    canvas gives them (a view is fine; height and width at least 1).
    """
    height, width, _ = rgb.shape
    rows = np.zeros((height, 1 + 3 * width), np.uint8)  # each row: filter type 0, then its pixels
    rows[:, 1:] = rgb.reshape(height, 3 * width)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits per channel, RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1))
            + chunk(b"IEND", b""))
