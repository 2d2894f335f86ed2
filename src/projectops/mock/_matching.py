"""The mock's fixtures served: loading a file (:mod:`projectops.fixtures` is the format) and
matching requests to answers.

A request (decoded and validated by the adapter) matches the exact answer whose request equals
it once every string is trimmed (:func:`~projectops.fixtures.request_key`), else the first
partial answer, in file order, whose request's set fields it holds with equal values. Both are
looked up in indexes built once: exact answers by key, partial ones by the set of field names
they set and then by those fields' values, so a request costs one lookup per distinct set of
names, never a scan of the answers. No match is 400 ``failed_precondition``; an operation the
project lists no answers for gets :func:`~projectops.mock._generate.generated_answer`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn

from google.protobuf.message import Message

from projectops.codec import to_json
from projectops.errors import ERROR_CLASSES, ApiError, Code, FailedPrecondition
from projectops.fixtures import (
    FixtureAnswer,
    FixtureError,
    decode_fixtures,
    default_fixtures,
    read_fixtures_file,
    request_key,
    trimmed,
)
from projectops.mock._generate import generated_answer
from projectops.registry import Operation
from projectops.v1.error_pb2 import ErrorResponse

__all__ = ["MockProject", "Reply", "load_fixtures"]

# Matched requests remembered by their wire bytes, so a repeated one skips the JSON walk: short
# ones only, and a bounded number, so a client cannot grow the cache with requests it makes up.
_CACHE_SIZE = 4096
_CACHE_REQUEST_BYTES = 1024
_SHOWN_CHARS = 60


@dataclass(frozen=True)
class Reply:
    """What a request gets: `body` (UTF-8 JSON) or `error`, after `delay` seconds."""

    body: bytes
    error: ApiError | None = None
    delay: float = 0.0


class MockProject:
    """One project: `scenario` maps an operation name to its answers (file order); with
    `generate` off, an operation without answers is a ``failed_precondition`` too."""

    def __init__(
        self, name: str, scenario: Mapping[str, tuple[FixtureAnswer, ...]], generate: bool = True
    ) -> None:
        self.name, self.scenario, self.generate = name, scenario, generate
        self._exact: dict[str, dict[str, int]] = {}
        # Operation -> names a partial answer sets -> their values' JSON -> its index.
        self._partial: dict[str, dict[tuple[str, ...], dict[str, int]]] = {}
        self._encoded: dict[tuple[str, int], bytes] = {}
        self._seen: dict[tuple[str, bytes], int] = {}
        for op_name, answers in scenario.items():
            exact = self._exact[op_name] = {}
            partial = self._partial[op_name] = {}
            for i, answer in enumerate(answers):
                if answer.partial:
                    names = tuple(fd.json_name for fd, _ in answer.request.ListFields())
                    values = _values(json.loads(answer.key), names)  # trimmed JSON
                    partial.setdefault(names, {}).setdefault(values or "", i)
                else:
                    exact.setdefault(answer.key, i)

    def __repr__(self) -> str:
        return f"MockProject({self.name!r})"

    def answer(self, op: Operation, request: Message) -> Message:
        """The response `request` of `op` gets (its delay not waited).

        Raises:
            ApiError: the matching answer is an error (its code's class).
            FailedPrecondition: no answer matches, e.g. ``project demo has no
                get_release_details answer for version "9.9.9"``.
        """
        found = self._find(op, request)
        if found is None:
            return generated_answer(op, request)
        answer = self.scenario[op.name][found]
        if answer.error is not None:
            raise _error(answer.error)
        return answer.response

    def reply(self, op: Operation, request: Message) -> Reply:
        """:meth:`answer` as a :class:`Reply` (a fixture's JSON is encoded once, on first use).

        Raises:
            FailedPrecondition: no answer matches.
        """
        wire = (op.name, request.SerializeToString(deterministic=True))
        found = self._seen.get(wire)
        if found is None:
            found = self._find(op, request)
            if found is None:
                return Reply(to_json(generated_answer(op, request)).encode())
            if len(wire[1]) <= _CACHE_REQUEST_BYTES and len(self._seen) < _CACHE_SIZE:
                self._seen[wire] = found
        answer = self.scenario[op.name][found]
        if answer.error is not None:
            return Reply(b"", _error(answer.error), answer.delay)
        body = self._encoded.get((op.name, found))
        if body is None:
            body = self._encoded[(op.name, found)] = to_json(answer.response).encode()
        return Reply(body, None, answer.delay)

    def _find(self, op: Operation, request: Message) -> int | None:
        """The index of the answer `request` matches; ``None``: to be generated."""
        if not self.scenario.get(op.name):
            if self.generate:
                return None
            self._no_answer(op, request)
        found = self._exact[op.name].get(request_key(request))
        if found is None:
            data = trimmed(request)
            hits = (
                by_value.get(key)
                for names, by_value in self._partial[op.name].items()
                if (key := _values(data, names)) is not None
            )
            found = min((i for i in hits if i is not None), default=None)
        if found is None:
            self._no_answer(op, request)
        return found

    def _no_answer(self, op: Operation, request: Message) -> NoReturn:
        data = trimmed(request)
        shown = ", ".join(
            f"{fd.json_name} {_shown(data[fd.json_name])}" for fd, _ in request.ListFields()
        )
        raise FailedPrecondition(
            f"project {self.name} has no {op.name} answer for {shown or 'the empty request'}"
        )


def _values(data: Mapping[str, object], names: tuple[str, ...]) -> str | None:
    """The JSON of `data`'s values of `names`, or ``None`` when it lacks one of them."""
    if not all(name in data for name in names):
        return None
    return json.dumps([data[name] for name in names], sort_keys=True, ensure_ascii=False)


def _shown(value: object) -> str:
    """A request value as JSON, cut to a short prefix, C1 control characters escaped."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 3] + "..."
    return re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text)


def _error(error: ErrorResponse) -> ApiError:
    """A new exception of an error answer (the decoder checked its code)."""
    return ERROR_CLASSES[Code(error.code)](error.message, error.violations)


def load_fixtures(
    path: str | os.PathLike[str] | None = None, *, generate: bool = True
) -> dict[str, MockProject]:
    """API key -> :class:`MockProject` of a fixtures file (``None``: the embedded default).

    Raises:
        FixtureError: one line, ``<file>: <field path>: <what is wrong>``.
    """
    if path is None:
        decoded = default_fixtures()
    else:
        try:
            decoded = decode_fixtures(read_fixtures_file(path).decode("utf-8"))
        except FixtureError as exc:
            raise FixtureError(f"{path}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise FixtureError(f"{path}: cannot read the file: not UTF-8 ({exc.reason})") from None
    return {p.api_key: MockProject(p.name, p.answers, generate) for p in decoded}
