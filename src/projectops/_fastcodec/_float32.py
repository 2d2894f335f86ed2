"""The JSON number of a ``float`` (32-bit) field, as ``json_format`` writes it.

A ``float`` field holds a 32-bit value, which Python reads as the double nearest it: 0.9 stored
reads back as 0.8999999761581421. ``json_format`` writes instead the shortest decimal of 6 to 9
significant digits that stores back as the same 32-bit value (0.9). This is that rule, written
here so that the fast path relies on no private part of protobuf; the tests hold it to
``json_format``'s output over many 32-bit values.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = ["shortest_float32"]

_FLOAT32: Final = struct.Struct("<f")
_pack: Final = _FLOAT32.pack
_unpack: Final = _FLOAT32.unpack


def shortest_float32(value: float) -> float:
    """The shortest decimal, as a ``float``, that stores back as the 32-bit `value`.

    Args:
        value: a finite number that a 32-bit float holds exactly (what a ``float`` field
            reads as).

    Returns:
        ``float(f"{value:.{p}g}")`` for the least precision ``p`` from 6 on whose 32-bit
        rounding is `value` again; ``json.dumps`` writes it with ``repr``. Every 32-bit value
        needs at most 9 digits; a value that is no 32-bit value comes back unchanged after 17.

    Raises:
        OverflowError: `value` is infinite or beyond the 32-bit range (``struct``'s error).
    """
    # protobuf's own search: 6 significant digits always survive a trip through 32 bits, 9
    # always tell two 32-bit values apart. Each candidate is checked rather than taken from
    # repr, which gives the shortest text of the 64-bit value (0.8999999761581421).
    rounded = float(f"{value:.6g}")
    if _unpack(_pack(rounded))[0] == value:  # most values: one try
        return rounded
    for precision in range(7, 18):
        rounded = float(f"{value:.{precision}g}")
        if _unpack(_pack(rounded))[0] == value:
            return rounded
    return value
