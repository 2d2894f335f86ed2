"""Hostile Duration texts from a peer (docs/contract.md §3.1, §6): the decoder's fast reading of
``"42.500s"`` and its cache of fractions met before (``_fastcodec._timefmt``) read exactly what
json_format reads, a 400 for what it refuses, however often a text comes back, and the cache
stays bounded whatever fractions a peer sends."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

import projectops
from projectops._fastcodec import _timefmt
from tests.core.test_codec_differential import WKTS_TYPE

HOSTILE = [
    "1" * 5000 + "s",  # int() of over 4,300 digits raises, over 12 is out of range anyway
    "1." + "5" * 5000 + "s",
    "315576000001.5s",  # beyond the range, with a fraction the cache holds
    "315576000000.999999999s",
    "-315576000000.999999999s",
    "1.\u0661s",  # another script's digit in the fraction
    "\u0661.5s",
    "1.5\x00s",
    "1.5s\n",
    "+1.5s",
    "1.5e3s",
    "1.-5s",
    "1..5s",
    "s",
    ".s",
]


def reference(text: str) -> Any:
    """json_format's reading of ``{"duration": text}``: the message, or None if it refuses."""
    message = WKTS_TYPE()
    try:
        json_format.ParseDict({"duration": text}, message)
    except json_format.ParseError:
        return None
    return message


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_duration_reads_as_json_format_reads_it_however_often_it_comes(text: str) -> None:
    projectops.from_json({"duration": "1.5s"}, WKTS_TYPE)  # "5" is now a cached fraction
    expected = reference(text)
    for _ in range(3):  # the first body by json_format, then the fast path, then its cache
        try:
            got = projectops.from_json({"duration": text}, WKTS_TYPE)
        except projectops.InvalidArgument as exc:
            assert expected is None, (text, exc.message)
            assert exc.violations[0].field == "duration"
        else:
            assert got == expected, text


def test_a_peer_sending_distinct_fractions_leaves_the_cache_bounded() -> None:
    for nanos in range(1, 3 * _timefmt.CACHE_SIZE):
        text = f"0.{nanos:09d}s"
        assert projectops.from_json({"duration": text}, WKTS_TYPE).duration.nanos == nanos
    assert len(_timefmt._NANOS) <= _timefmt.CACHE_SIZE
