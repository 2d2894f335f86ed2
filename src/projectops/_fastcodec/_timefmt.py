"""Timestamp and Duration JSON text, read and written as ``json_format`` does (through their
``FromJsonString``/``ToJsonString``), fast: a UTC timestamp whose hour was met before costs two
dictionary lookups, a duration whose fraction was met before one, and every rarer form goes to
``FromJsonString`` itself. No backtracking pattern; the caches are bounded (:data:`CACHE_SIZE`
entries each).
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Final

__all__ = ["format_duration", "format_timestamp", "parse_duration", "parse_timestamp"]

_TIMESTAMP: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
TIMESTAMP_SECONDS_MIN: Final = -62135596800  # 0001-01-01T00:00:00Z
TIMESTAMP_SECONDS_MAX: Final = 253402300799  # 9999-12-31T23:59:59Z
DURATION_SECONDS_MAX: Final = 315576000000  # about 10,000 years, either sign
_EPOCH_ORDINAL: Final = datetime.date(1970, 1, 1).toordinal()
CACHE_SIZE: Final = 8192  # entries of each cache (times, fractions) before it starts over

# "YYYY-MM-DDTHH:" -> seconds since the epoch, and "MM:SS" -> seconds; filled as met (the
# minutes too, at most 3,600 entries: a program that reads or writes one time builds no table).
_HOUR_SECONDS: dict[str, int] = {}
_MINUTE_SECONDS: dict[str, int] = {}
_HOUR_TEXT: dict[int, str] = {}  # hours since the epoch -> "YYYY-MM-DDTHH:"
_MINUTE_TEXT: dict[int, str] = {}  # seconds into the hour -> "MM:SS"
_NANOS: dict[str, int] = {}  # a Duration's fraction digits ("500") -> nanoseconds


def parse_timestamp(value: str) -> dict[str, int]:
    """``Timestamp.FromJsonString(value)`` as constructor arguments: ``seconds`` since the epoch,
    ``nanos`` when the text has a fraction. Raises ValueError: refused, or out of range."""
    # The usual form first: an hour and a minute met before (their texts checked then), UTC.
    hour = _HOUR_SECONDS.get(value[:14])  # "YYYY-MM-DDTHH:"
    if hour is not None:
        rest = _MINUTE_SECONDS.get(value[14:19])  # "MM:SS"
        if rest is not None:
            if len(value) == 20 and value[19] == "Z":
                return {"seconds": hour + rest}
            fraction = value[20:-1]
            if value[19:20] == "." and value[-1] == "Z" and len(fraction) <= 9:
                if fraction.isdigit() and fraction.isascii():
                    return {"seconds": hour + rest, "nanos": int(fraction.ljust(9, "0"))}
    match = _TIMESTAMP.fullmatch(value)
    if match is None:
        return _from_json_string("Timestamp", value)
    year, month, day, hours, minutes, secs, fraction, offset = match.groups()
    h = int(hours)
    m = int(minutes)
    s = int(secs)
    if h > 23 or m > 59 or s > 59:
        return _from_json_string("Timestamp", value)
    date = datetime.date(int(year), int(month), int(day))
    days = date.toordinal() - _EPOCH_ORDINAL
    hour = days * 86400 + h * 3600
    if len(_HOUR_SECONDS) >= CACHE_SIZE:
        _HOUR_SECONDS.clear()
    _HOUR_SECONDS[value[:14]] = hour
    _MINUTE_SECONDS[value[14:19]] = m * 60 + s  # "MM:SS", checked above
    seconds = hour + m * 60 + s
    if offset != "Z":
        offset_minutes = int(offset[1:3]) * 60 + int(offset[4:6])
        shift = offset_minutes * 60
        if offset[0] == "+":
            shift = -shift
        seconds += shift
    if not TIMESTAMP_SECONDS_MIN <= seconds <= TIMESTAMP_SECONDS_MAX:
        raise ValueError("Timestamp out of range")
    if fraction is None:
        return {"seconds": seconds}
    return {"seconds": seconds, "nanos": int(fraction.ljust(9, "0"))}


def parse_duration(value: str) -> dict[str, int]:
    """``Duration.FromJsonString(value)`` as constructor arguments (both with the text's sign).
    Raises ValueError: refused, or beyond :data:`DURATION_SECONDS_MAX` either way."""
    whole, point, fraction = value[:-1].partition(".")
    # The usual forms first ("38s", "42.500s"): not negative, and a fraction met before (checked
    # then; a millisecond's has at most 1,000 texts). A third faster than the general path.
    if value[-1:] == "s" and whole.isdigit() and whole.isascii() and len(whole) <= 12:
        seconds = int(whole)
        nanos = _NANOS.get(fraction) if point else 0
        if nanos is not None and seconds <= DURATION_SECONDS_MAX:
            if not nanos:
                return {"seconds": seconds}
            return {"seconds": seconds, "nanos": nanos}
    negative = whole[:1] == "-"
    digits = whole
    if negative:
        digits = whole[1:]
    if value[-1:] == "s" and digits.isdigit() and digits.isascii() and len(digits) <= 12:
        seconds = int(digits)
        if seconds > DURATION_SECONDS_MAX:
            raise ValueError("Duration out of range")
        # Nanoseconds of 1 to 9 fractional digits (FromJsonString's rounding gives the same),
        # inline here and above: a call per value costs more than the conversion.
        if not point:
            nanos = 0
        elif len(fraction) <= 9 and fraction.isdigit() and fraction.isascii():
            if len(_NANOS) >= CACHE_SIZE:
                _NANOS.clear()
            nanos = int(fraction.ljust(9, "0"))
            _NANOS[fraction] = nanos
        else:
            return _from_json_string("Duration", value)
        if negative:  # both with the sign of the string
            return {"seconds": -seconds, "nanos": -nanos}
        return {"seconds": seconds, "nanos": nanos}
    return _from_json_string("Duration", value)


def _from_json_string(name: str, value: str) -> dict[str, int]:
    """The rarer forms: the type's own FromJsonString, exactly what json_format calls."""
    from google.protobuf import duration_pb2, timestamp_pb2

    message: Any
    if name == "Timestamp":
        message = timestamp_pb2.Timestamp()
    else:
        message = duration_pb2.Duration()
    try:
        message.FromJsonString(value)
    except Exception:  # its ValueError, or whatever else a future release raises
        raise ValueError(f"not a {name}") from None
    return {"seconds": message.seconds, "nanos": message.nanos}


def format_timestamp(timestamp: Any) -> str:
    """``Timestamp.ToJsonString`` of anything with ``seconds`` and ``nanos``. Raises ValueError:
    out of range (the encoder then lets json_format raise its own error)."""
    seconds: int = timestamp.seconds
    nanos: int = timestamp.nanos
    seconds_in_range = TIMESTAMP_SECONDS_MIN <= seconds <= TIMESTAMP_SECONDS_MAX
    if not (seconds_in_range and 0 <= nanos < 10**9):
        raise ValueError("Timestamp out of range")
    hours, rest = divmod(seconds, 3600)
    prefix = _HOUR_TEXT.get(hours)
    if prefix is None:
        days, hour = divmod(hours, 24)
        prefix = f"{datetime.date.fromordinal(days + _EPOCH_ORDINAL).isoformat()}T{hour:02d}:"
        if len(_HOUR_TEXT) >= CACHE_SIZE:
            _HOUR_TEXT.clear()
        _HOUR_TEXT[hours] = prefix
    minutes = _MINUTE_TEXT.get(rest)
    if minutes is None:
        minutes = f"{rest // 60:02d}:{rest % 60:02d}"
        _MINUTE_TEXT[rest] = minutes
    text = prefix + minutes
    if nanos == 0:
        return text + "Z"
    if nanos % 1_000_000 == 0:
        return f"{text}.{nanos // 1_000_000:03d}Z"
    if nanos % 1000 == 0:
        return f"{text}.{nanos // 1000:06d}Z"
    return f"{text}.{nanos:09d}Z"


def format_duration(duration: Any) -> str:
    """``Duration.ToJsonString`` of anything with ``seconds`` and ``nanos``. Raises ValueError:
    out of range, or seconds and nanos of opposite signs."""
    seconds: int = duration.seconds
    nanos: int = duration.nanos
    if not -DURATION_SECONDS_MAX <= seconds <= DURATION_SECONDS_MAX:
        raise ValueError("Duration out of range")
    if nanos == 0:
        return f"{seconds}s"
    nanos_in_range = -1_000_000_000 < nanos < 1_000_000_000
    opposite_signs = seconds < 0 < nanos or nanos < 0 < seconds
    if not nanos_in_range or opposite_signs:
        raise ValueError("Duration out of range")
    sign = ""
    if nanos < 0:  # and seconds <= 0
        sign = "-"
        seconds = -seconds
        nanos = -nanos
    if nanos % 1_000_000 == 0:
        return f"{sign}{seconds}.{nanos // 1_000_000:03d}s"
    if nanos % 1000 == 0:
        return f"{sign}{seconds}.{nanos // 1000:06d}s"
    return f"{sign}{seconds}.{nanos:09d}s"
