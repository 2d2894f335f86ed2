"""The mock server's fixtures: format, loading and matching.

The format is the proto message ``projectops.v1.MockFixtures`` (``mock_fixtures.proto``) in the
protobuf JSON mapping, so the file is read by the same codec as every payload and every error
names its field path. A JSON object::

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
:data:`MAX_FIXTURES_BYTES` (64 MiB), UTF-8 JSON with no key repeated in an object and no value
nested deeper than :data:`MAX_DEPTH` levels. Reading is strict at every level (an unknown key,
an unknown enum name or a value of the wrong type is an error) and in three steps: the file as a
``MockFixtures``; each answer (an element of an operation's list, a ``google.protobuf.Value``)
as a ``MockAnswer``; its ``request`` and ``response`` (``Struct``) as the operation's request
and response messages, the request also validated (REQUIRED fields). The last two steps decode
the answer's JSON as written, not its ``Struct`` form, so a 64-bit integer given as a number
stays exact. Then the rules a message cannot state: project names and keys are unique, a key can
travel in the ``Service-Api-Key`` header (printable ASCII, no surrounding white space: h11
strips that, and rejects control characters), operation names are the registry's, and two
answers of one operation never have the same request. Every error is one line that names the
field path, never a key's value.

Matching: a request is decoded and validated like any request of the adapter, then the
surrounding white space of each of its strings is removed (the spec trims the version) and it is
compared with each answer's request, normalised the same way; the equal one's response is the
answer (see :meth:`MockProject.answer`); :meth:`MockProject.encoded_answer` gives its JSON,
encoded once, on first use.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar, cast

from google.protobuf.message import Message

from projectops.codec import from_json, to_dict, to_json
from projectops.errors import FailedPrecondition, InvalidArgument
from projectops.registry import Operation, operations
from projectops.v1.mock_fixtures_pb2 import MockAnswer, MockFixtures
from projectops.validation import validate

__all__ = [
    "DEFAULT_FIXTURES_NAME",
    "MAX_DEPTH",
    "MAX_FIXTURES_BYTES",
    "FixtureError",
    "MockProject",
    "load_fixtures",
    "parse_fixtures",
]

M = TypeVar("M", bound=Message)

#: Name of the embedded fixtures in messages.
DEFAULT_FIXTURES_NAME = "default fixtures"
#: The largest fixtures file read, in bytes (64 MiB).
MAX_FIXTURES_BYTES = 64 * 1024 * 1024
#: The deepest nesting of JSON objects and arrays in a fixtures file (protobuf's own limit).
MAX_DEPTH = 100
# Distinct requests whose match key is remembered, per project.
_KEY_CACHE_SIZE = 4096
#: Longest request (wire bytes) whose match key is remembered.
_KEY_CACHE_REQUEST_BYTES = 1024
# Longest request value quoted in a no-match message.
_SHOWN_CHARS = 60


class FixtureError(ValueError):
    """A fixtures file is unreadable or invalid; the message names the file and the field path."""


@dataclass(frozen=True)
class MockProject:
    """One project of the fixtures.

    Attributes:
        name: the project's name (``"demo"``).
        answers: operation name -> {normalised request (:func:`match_key`) -> response}.
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
        return self._find(op, request, _key(request))

    def encoded_answer(self, op: Operation, request: Message) -> bytes:
        """:meth:`answer` as UTF-8 JSON (:func:`projectops.codec.to_json`), encoded once per
        answer and then served from a cache.

        Raises:
            FailedPrecondition: as :meth:`answer`.
        """
        wire = (op.name, request.SerializeToString(deterministic=True))
        key = self._keys.get(wire)
        if key is None:
            key = _key(request)
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
        name = DEFAULT_FIXTURES_NAME
        text = (
            resources.files(__package__)
            .joinpath("fixtures", "default.json")
            .read_text(encoding="utf-8")
        )
    else:
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
    """Check fixtures given as JSON text or a parsed object (see :func:`load_fixtures`).

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        FixtureError: ``<field path>: <what is wrong>``, e.g.
            ``projects[0].operations.get_release_details[0].request.version: is required``.
    """
    if isinstance(data, str | bytes):
        duplicates: list[tuple[dict[str, Any], str]] = []
        try:
            data = json.loads(data, object_pairs_hook=partial(_object, duplicates))
        except (ValueError, RecursionError) as exc:
            raise FixtureError(f"not valid JSON: {exc}") from None
        _check_shape(data, duplicates)
    else:
        _check_shape(data, [])
    try:
        return _parse(data)
    except RecursionError:  # _check_shape bounds the depth; this is the last guard
        raise FixtureError(f"nested deeper than {MAX_DEPTH} levels") from None


def _object(duplicates: list[tuple[dict[str, Any], str]], pairs: list[tuple[str, Any]]) -> Any:
    """A JSON object as a dict; the first repeated key of each object is noted."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                duplicates.append((found, key))
                break
            seen.add(key)
    return found


def _check_shape(data: Any, duplicates: list[tuple[dict[str, Any], str]]) -> None:
    """Raise FixtureError at a value nested deeper than MAX_DEPTH, or an object among
    `duplicates` (noted while parsing), naming its path; walks without recursion, and spells
    a path only for the value it reports."""
    repeated = {id(obj): key for obj, key in duplicates}
    # (value, depth, where): `where` is (parent's where, key or index), None at the top.
    stack: list[tuple[Any, int, Any]] = [(data, 0, None)]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        if depth >= MAX_DEPTH:
            raise FixtureError(f"{_short(_path(where))}: nested deeper than {MAX_DEPTH} levels")
        if id(value) in repeated:
            key = json.dumps(_cut(repeated[id(value)]), ensure_ascii=True)
            raise FixtureError(f"{_short(_path(where))}: the key {key} appears twice")
        stack.extend((item, depth + 1, (where, key)) for key, item in items)


def _path(where: Any) -> str:
    """The field path of a `where` chain of :func:`_check_shape` (``a.b[0]["x y"]``)."""
    steps: list[str | int] = []
    while where is not None:
        where, step = where
        steps.append(step)
    path = ""
    for step in reversed(steps):
        if isinstance(step, int):
            path += f"[{step}]"
        elif _NAME.fullmatch(step):
            path += f".{step}" if path else step
        else:
            path += f"[{json.dumps(_cut(step), ensure_ascii=True)}]"
    return path or "the top level"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _short(path: str) -> str:
    """A field path of at most 120 characters (a deep one loses its middle)."""
    return path if len(path) <= 120 else f"{path[:60]}...{path[-57:]}"


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _parse(data: Any) -> dict[str, MockProject]:
    fixtures = _decode(data, MockFixtures, "")
    raw_projects: list[dict[str, Any]] = cast(Mapping[str, Any], data)["projects"]
    by_name = {op.name: op for op in operations()}
    by_key: dict[str, MockProject] = {}
    key_index: dict[str, int] = {}
    names: dict[str, int] = {}
    for i, entry in enumerate(fixtures.projects):
        path = f"projects[{i}]"
        if entry.project in names:
            raise FixtureError(
                f"{path}.project: duplicate of projects[{names[entry.project]}].project"
            )
        if entry.api_key in key_index:
            # Say where the other one is, never what the key is.
            raise FixtureError(
                f"{path}.apiKey: duplicate of projects[{key_index[entry.api_key]}].apiKey"
            )
        problem = _header_problem(entry.api_key)
        if problem:
            raise FixtureError(
                f"{path}.apiKey: {problem}; a key travels in the Service-Api-Key header, which "
                "carries printable ASCII without surrounding white space"
            )
        names[entry.project] = key_index[entry.api_key] = i
        answers: dict[str, Mapping[str, Message]] = {}
        for op_name in sorted(entry.operations):
            op_path = f"{path}.operations.{op_name}"
            op = by_name.get(op_name)
            if op is None:
                raise FixtureError(
                    f"{op_path}: unknown operation {op_name!r}; known operations: "
                    f"{', '.join(by_name)}"
                )
            raw_answers = raw_projects[i]["operations"][op_name]
            answers[op_name] = _answers(op, raw_answers or [], op_path)
        by_key[entry.api_key] = MockProject(name=entry.project, answers=answers)
    return by_key


def _header_problem(key: str) -> str:
    """Why `key` can never arrive in an HTTP header as it is written, or ``""``."""
    if key != key.strip(" \t"):
        return "has white space around it"
    for char in key:
        if not " " <= char <= "~":
            control = char < " " or "\x7f" <= char <= "\x9f"
            return "holds a control character" if control else "holds a non-ASCII character"
    return ""


def _answers(op: Operation, items: list[Any], path: str) -> dict[str, Message]:
    found: dict[str, Message] = {}
    index: dict[str, int] = {}
    for j, item in enumerate(items):
        answer_path = f"{path}[{j}]"
        _decode(item, MockAnswer, answer_path)
        request = _decode(item.get("request") or {}, op.request_type, f"{answer_path}.request")
        response = _decode(
            item["response"], op.response_type, f"{answer_path}.response", validated=False
        )
        wanted, _ = match_key(request)
        if wanted in index:
            raise FixtureError(
                f"{answer_path}.request: the same request as {path}[{index[wanted]}]"
            )
        index[wanted] = j
        found[wanted] = response
    return found


def _decode(value: Any, message_type: type[M], path: str, *, validated: bool = True) -> M:
    """`value` decoded strictly (and validated) as `message_type`; errors under `path`."""
    try:
        message = from_json(value, message_type, strict=True)
        if validated:
            validate(message)
    except InvalidArgument as exc:
        parts = [_under(path, v.field, v.description) for v in exc.violations]
        raise FixtureError("; ".join(parts) or _under(path, "", exc.message)) from None
    return message


def _under(path: str, field: str, text: str) -> str:
    where = f"{path}.{field}" if path and field else path or field or "the top level"
    return f"{where}: {text}"


def match_key(request: Message) -> tuple[str, str]:
    """``(key, shown)`` of a request: the key under which it matches an answer (its JSON with
    the surrounding white space of every string removed, keys sorted) and the fields it sets,
    as shown in a no-match message (``version "9.9.9"``; empty for the empty request)."""
    data = _stripped(to_dict(request))
    shown = ", ".join(
        f"{fd.json_name} {_shown(data[fd.json_name])}" for fd, _ in request.ListFields()
    )
    return json.dumps(data, sort_keys=True, ensure_ascii=False), shown


def _key(request: Message) -> str:
    """The first part of :func:`match_key`, all a lookup needs."""
    if not request.ListFields():
        return "{}"
    return json.dumps(_stripped(to_dict(request)), sort_keys=True, ensure_ascii=False)


def _shown(value: Any) -> str:
    """A request value as JSON, cut to a short prefix, C1 control characters escaped."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 3] + "..."
    return re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text)


def _stripped(value: Any) -> Any:
    # A walk of plain JSON, not of the message: every string is trimmed, wherever it stands.
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value
