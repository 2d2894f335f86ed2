"""Hypothesis profiles: ``full`` for ``./scripts/test`` (and CI), ``fast`` for the inner loop.

Hypothesis's own advice is a profile per use: the same properties, searched less deeply where
the response is wanted in seconds. ``./scripts/test --fast`` passes ``--hypothesis-profile=fast``;
every property test still runs, on a quarter of the examples it gets in ``full``. The full
suite keeps every count. A test asks for its count in ``full`` terms with :func:`examples`, so
both profiles apply to it (an explicit ``max_examples`` would override either).
"""

from __future__ import annotations

from hypothesis import settings

#: Examples a test without its own count gets in ``full`` (Hypothesis's default).
FULL_EXAMPLES = 100

settings.register_profile("full", max_examples=FULL_EXAMPLES)
settings.register_profile("fast", max_examples=FULL_EXAMPLES // 4)


def examples(full: int) -> int:
    """`full`, the examples a property gets in the ``full`` profile, scaled to the loaded one
    (a quarter in ``fast``, at least 10). Call it where the test is defined: the profile is
    loaded before pytest collects."""
    scaled = full * settings.default.max_examples // FULL_EXAMPLES
    return full if scaled >= full else max(10, scaled)
