"""The mock server's fixtures: loading a file within bounds, and matching requests.

The format, and the one decoder of it, is :mod:`projectops.mock_fixtures` (the proto message
``projectops.v1.MockFixtures`` in the protobuf JSON mapping; ``pydoc projectops.mock_fixtures``
shows an example). A JSON object::

    {
      "projects": [
        {
          "project": "demo",
          "apiKey": "demo-key",
          "operations": {
            "list_rum_environments": [{"request": {}, "response": {"environments": []}}],
            "get_release_details": [
              {"request": {"version": "1.0.0"}, "response": {"summary": {}}}
            ]
          }
        }
      ]
    }

Reading is bounded: the file must be a regular file (not a directory, FIFO or device) of at most
:data:`MAX_FIXTURES_BYTES` (64 MiB); then :func:`projectops.mock_fixtures.decode_fixtures`
checks it strictly (no repeated key, at most :data:`MAX_DEPTH` levels, every request and
response decoded as its operation's message, names and keys unique). Every error is one line
that names the file and the field path, never a key's value.

Matching: a request is decoded and validated like any request of the adapter, then the
surrounding white space of each of its strings is removed (a version is compared trimmed) and
it is compared with each answer's request, normalised the same way
(:func:`~projectops.mock_fixtures.request_key`); the equal one's response is the answer (see
:meth:`MockProject.answer`); :meth:`MockProject.encoded_answer` gives its JSON, encoded once,
on first use.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from projectops.codec import to_json
from projectops.errors import FailedPrecondition
from projectops.mock_fixtures import (
    DEFAULT_FIXTURES_NAME,
    MAX_DEPTH,
    FixtureError,
    FixtureProject,
    decode_fixtures,
    default_fixtures,
    match_key,
    request_key,
)
from projectops.registry import Operation

__all__ = [
    "DEFAULT_FIXTURES_NAME",
    "MAX_DEPTH",
    "MAX_FIXTURES_BYTES",
    "FixtureError",
    "MockProject",
    "load_fixtures",
    "parse_fixtures",
]

#: The largest fixtures file read, in bytes (64 MiB).
MAX_FIXTURES_BYTES = 64 * 1024 * 1024
# Distinct requests whose match key is remembered, per project.
_KEY_CACHE_SIZE = 4096
#: Longest request (wire bytes) whose match key is remembered.
_KEY_CACHE_REQUEST_BYTES = 1024


@dataclass(frozen=True)
class MockProject:
    """One project of the fixtures.

    Attributes:
        name: the project's name (``"demo"``).
        answers: operation name -> {normalised request
            (:func:`~projectops.mock_fixtures.request_key`) -> response}.
    """

    name: str
    answers: Mapping[str, Mapping[str, Message]]
    # (operation name, match key) -> the response's JSON, filled on first use.
    _encoded: dict[tuple[str, str], bytes] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # (operation name, request's deterministic wire bytes) -> match key: equal bytes are equal
    # messages, so a request seen before skips the JSON walk of match_key. Only matched requests
    # of at most _KEY_CACHE_REQUEST_BYTES, at most _KEY_CACHE_SIZE of them.
    _keys: dict[tuple[str, bytes], str] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __repr__(self) -> str:  # no key is held, but keep reprs short
        return f"MockProject({self.name!r})"

    def answer(self, op: Operation, request: Message) -> Message:
        """The response of the answer whose request equals `request` once normalised.

        Raises:
            FailedPrecondition: no answer of `op` has that request, e.g. ``project demo has no
                get_release_details answer for version "9.9.9"`` (a long value is cut).
        """
        return self._find(op, request, request_key(request))

    def encoded_answer(self, op: Operation, request: Message) -> bytes:
        """:meth:`answer` as UTF-8 JSON (:func:`projectops.codec.to_json`), encoded once per
        answer and then served from a cache.

        Raises:
            FailedPrecondition: as :meth:`answer`.
        """
        wire = (op.name, request.SerializeToString(deterministic=True))
        key = self._keys.get(wire)
        if key is None:
            key = request_key(request)
        body = self._encoded.get((op.name, key))
        if body is None:
            body = to_json(self._find(op, request, key)).encode("utf-8")  # or FailedPrecondition
            self._encoded[(op.name, key)] = body
        # Only requests that matched an answer, and short ones: a client cannot grow the cache
        # with requests of its own making (their memory would be the client's to choose).
        if len(wire[1]) <= _KEY_CACHE_REQUEST_BYTES and len(self._keys) < _KEY_CACHE_SIZE:
            self._keys[wire] = key
        return body

    def _find(self, op: Operation, request: Message, key: str) -> Message:
        response = self.answers.get(op.name, {}).get(key)
        if response is None:
            shown = match_key(request)[1]
            raise FailedPrecondition(
                f"project {self.name} has no {op.name} answer for {shown or 'the empty request'}"
            )
        return response


def load_fixtures(path: str | Path | None = None) -> dict[str, MockProject]:
    """Read and check a fixtures file (the module docstring gives its format).

    Args:
        path: the file; ``None`` reads the embedded default fixtures (projects ``demo``, key
            ``demo-key``, and ``other``, key ``other-key``).

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        FixtureError: the file cannot be read, is not JSON, or breaks the format; the message is
            one line, ``<file>: <field path>: <what is wrong>``.
    """
    if path is None:
        return _projects(default_fixtures())  # its errors already name DEFAULT_FIXTURES_NAME
    name = str(path)
    try:
        text = _read(Path(path)).decode("utf-8")
    except FixtureError as exc:
        raise FixtureError(f"{name}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise FixtureError(f"{name}: cannot read the file: not UTF-8 ({exc.reason})") from None
    try:
        return parse_fixtures(text)
    except FixtureError as exc:
        raise FixtureError(f"{name}: {exc}") from None


def _read(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_FIXTURES_BYTES, read in bounded memory.

    Opened without blocking (a FIFO with no writer would block an ordinary open) and checked
    with ``fstat`` before a byte is read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise FixtureError(f"cannot read the file: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FixtureError(f"cannot read the file: not a regular file ({_kind(mode)})")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_FIXTURES_BYTES + 1)
    except OSError as exc:
        raise FixtureError(f"cannot read the file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FIXTURES_BYTES:
        raise FixtureError(
            f"cannot read the file: larger than {MAX_FIXTURES_BYTES // (1024 * 1024)} MiB"
        )
    return data


def _kind(mode: int) -> str:
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a file")


def parse_fixtures(data: str | bytes | Mapping[str, Any]) -> dict[str, MockProject]:
    """Check fixtures given as JSON text or a parsed object (see :func:`load_fixtures`), with
    :func:`projectops.mock_fixtures.decode_fixtures`.

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        FixtureError: ``<field path>: <what is wrong>``, e.g.
            ``projects[0].operations.get_release_details[0].request.version: is required``.
    """
    return _projects(decode_fixtures(data))


def _projects(decoded: Iterable[FixtureProject]) -> dict[str, MockProject]:
    """API key -> the project that serves `decoded`'s answers (keys are unique once decoded)."""
    return {
        project.api_key: MockProject(
            name=project.name,
            answers={
                op_name: {answer.key: answer.response for answer in answers}
                for op_name, answers in project.answers.items()
            },
        )
        for project in decoded
    }
