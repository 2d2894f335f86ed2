"""The JSON number of a ``float`` (32-bit) field, as ``json_format`` writes it: the shortest
decimal of 6 to 9 significant digits that stores back as the same 32-bit value (0.9, not
0.8999999761581421), without a private part of protobuf.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = ["shortest_float32"]

_FLOAT32: Final = struct.Struct("<f")
_pack: Final = _FLOAT32.pack
_unpack: Final = _FLOAT32.unpack


def shortest_float32(value: float) -> float:
    """``float(f"{value:.{p}g}")`` for the least ``p`` from 6 that stores back as the 32-bit
    `value` (else `value`). Raises OverflowError: infinite or beyond the 32-bit range."""
    for precision in range(6, 18):  # most values: one try, 6
        rounded = float(f"{value:.{precision}g}")
        if _unpack(_pack(rounded))[0] == value:
            return rounded
    return value
