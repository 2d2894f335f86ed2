"""Judging survives any depth the JSON parser accepts (issue 39, finding 2): a response nested
about 980 levels deep (4 KB) used to raise RecursionError in the codec's walk for unpaired
surrogates, which starts from a deeper stack than the ``json.loads`` that accepted it. The
conformance runner then took its dead judging thread for ``--deadline``, the proxy's background
judge printed a traceback and no drift line, both with the key and raw terminal escapes.

Here the nested answers carry the key and ``ESC[2J ESC[31m`` in an unknown field's name:

- :func:`projectops.codec.from_json` of parsed JSON raises only InvalidArgument, from any stack
  deeper than the parse's;
- ``projectops conformance`` judges every such answer (``response.decodes`` fails), is not
  stopped, and its outputs hold neither the key (nor 8 characters of it) nor a raw escape;
- ``projectops proxy`` draws a drift line for each such call, and prints no traceback
  (:mod:`tests.adversarial.test_conformance_proxy_drift`).
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

import projectops
from projectops.codec import from_json
from projectops.registry import operations
from tests.adversarial.hostile import Request, answer, hostile_server
from tests.adversarial.test_clipped_key import KEY_40, KEY_50, shown_part
from tests.support import RunCli

#: Around the nesting json.loads accepts from a thread's fresh stack: 984-988 broke the runner,
#: 978-987 the proxy.
DEPTHS = range(976, 992)
ESCAPES = "\x1b[2J\x1b[31m"


def nested(depth: int, key: str) -> bytes:
    """A response of `depth` nested arrays under an unknown field named with escapes and `key`."""
    name = json.dumps(f"{ESCAPES}{key}")
    return f"{{{name}:{'[' * depth}{']' * depth}}}".encode()


def _on_a_stack(frames: int, work: Callable[[], Any]) -> Any:
    """`work()` called `frames` Python frames deeper than here."""
    return work() if frames == 0 else _on_a_stack(frames - 1, work)


def _parse(frames: int, depth: int) -> Any:
    """:func:`nested` answer of `depth` parsed by json.loads `frames` frames deeper than here;
    ``None``: deeper than it accepts from there."""
    try:
        return _on_a_stack(frames, partial(json.loads, nested(depth, KEY_50)))
    except RecursionError:
        return None


def _deepest(frames: int) -> int:
    """The deepest :func:`nested` answer that json.loads accepts `frames` frames deeper."""
    accepted, refused = 1, sys.getrecursionlimit()
    while refused - accepted > 1:
        middle = (accepted + refused) // 2
        if _parse(frames, middle) is None:
            refused = middle
        else:
            accepted = middle
    return accepted


def test_decoding_parsed_json_raises_only_invalid_argument_from_a_deeper_stack() -> None:
    response_type = operations()[0].response_type
    for frames in range(0, 40, 8):
        deepest = _deepest(frames)
        for depth in range(deepest - 4, deepest + 1):
            data = _parse(frames, depth)
            for deeper in (2, 16):
                # Lenient: the unknown field is ignored, the message decodes.
                _on_a_stack(frames + deeper, partial(from_json, data, response_type))
                strict = partial(from_json, data, response_type, strict=True)
                with pytest.raises(projectops.InvalidArgument) as refused:
                    _on_a_stack(frames + deeper, strict)
                assert refused.value.violations[0].field.startswith(ESCAPES)  # the unknown one


def _deep_answers(key: str) -> Any:
    """Every request gets a 200 nested one level deeper than the last, cycling through
    :data:`DEPTHS`."""
    depths = itertools.cycle(DEPTHS)

    def behave(sock: socket.socket, request: Request) -> None:
        answer(200, nested(next(depths), key))(sock, request)

    return behave


@pytest.mark.parametrize("key", [KEY_50, KEY_40], ids=["50 characters", "40 characters"])
def test_conformance_judges_every_deep_answer_and_names_no_deadline(
    run_cli: RunCli, key: str
) -> None:
    with hostile_server(_deep_answers(key)) as server:
        args = ["conformance", "--operation", operations()[0].name, "--deadline", "600"]
        text = run_cli(*args, key=key, base_url=server.base_url)
        as_json = run_cli(*args, "--json", key=key, base_url=server.base_url)
    report = json.loads(as_json.stdout)
    assert report["stopped"] is False
    assert "--deadline" not in text.stdout
    checks = {check["id"]: check for check in report["checks"]}
    assert checks["response.decodes"]["status"] == "failed"
    for output in (text.stdout, text.stderr, as_json.stdout, as_json.stderr):
        assert "Traceback" not in output
        assert "\x1b" not in output
        assert shown_part(output, key) is None, output
    assert "\\x1b[2J" in text.stdout  # the name was quoted, escaped
