"""The mock server's fixtures format: the one place that reads and checks it.

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

An answer may also be an error (``{"error": {"code": "not_found", "message": "..."}}``, whose
code gives the HTTP status through :data:`projectops.HTTP_STATUS_BY_CODE`), wait first
(``"delay": "1.5s"``, at most :data:`MAX_DELAY_SECONDS`), and match requests partially
(``"partial": true``: by the fields its request sets); ``mock_fixtures.proto`` states the rules
in its comments. An operation a project lists no answers for is answered by
:func:`generated_answer`.

The text must be UTF-8 JSON with no key repeated in an object and no value nested deeper than
:data:`MAX_DEPTH` levels. Reading is strict at every level (an unknown key, an unknown enum name
or a value of the wrong type is an error) and in three steps: the text as a ``MockFixtures``;
each answer (an element of an operation's list, a ``google.protobuf.Value``) as a
``MockAnswer``; its ``request`` and ``response`` (``Struct``) as the operation's request and
response messages, the request also validated (REQUIRED fields) unless the answer is partial.
The last two steps decode the answer's JSON as written, not its ``Struct`` form, so a 64-bit
integer given as a number stays exact. Then the rules a message cannot state: project names and
keys are unique, a key can travel in the ``Service-Api-Key`` header (printable ASCII, no
surrounding white space: h11 strips that, and rejects control characters), operation names are
the registry's, and two answers of one operation never have the same request and partiality
(:func:`match_key`), exactly one of ``response`` and ``error`` is set, an error's code is known
and its message not blank, and a delay is between 0 and :data:`MAX_DELAY_SECONDS`. Every error
is one line that names the field path, never a key's value.

The mock server (:mod:`projectops.mock._matching`) serves what :func:`decode_fixtures` returns,
and the OpenAPI document (:mod:`projectops.openapi`) shows :func:`default_fixtures` as its
examples. This module only decodes: reading a file within bounds is the server's.
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
from typing import Any, TypeVar, cast

from google.protobuf.message import Message

from projectops.codec import from_json, to_dict
from projectops.conventions import API_KEY_HEADER
from projectops.errors import Code, InvalidArgument
from projectops.registry import Operation, operations
from projectops.v1.error_pb2 import ErrorResponse
from projectops.v1.mock_fixtures_pb2 import MockAnswer, MockFixtures
from projectops.validation import validate

__all__ = [
    "DEFAULT_FIXTURES_NAME",
    "MAX_DELAY_SECONDS",
    "MAX_DEPTH",
    "MAX_FIXTURES_BYTES",
    "FixtureAnswer",
    "FixtureError",
    "FixtureProject",
    "decode_fixtures",
    "default_fixtures",
    "is_subset",
    "match_key",
    "matches_partially",
    "read_fixtures_file",
    "request_fields",
    "request_json",
    "request_key",
]

M = TypeVar("M", bound=Message)

#: Name of the embedded fixtures in messages.
DEFAULT_FIXTURES_NAME = "default fixtures"
#: The deepest nesting of JSON objects and arrays in a fixtures file (protobuf's own limit).
MAX_DEPTH = 100
#: The longest ``delay`` of an answer, in seconds: a fixture cannot hold a connection longer.
MAX_DELAY_SECONDS = 60.0
#: The largest fixtures file read, in bytes (64 MiB).
MAX_FIXTURES_BYTES = 64 * 1024 * 1024
#: The embedded default fixtures, package data of ``projectops``.
_DEFAULT = ("default_fixtures.json",)
# Longest request value, or key in a field path, quoted in a message.
_SHOWN_CHARS = 60


class FixtureError(ValueError):
    """Fixtures are unreadable or invalid; the message names the field path (and the file,
    when one was read)."""


def read_fixtures_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the fixtures file at `path`: a regular file of at most
    :data:`MAX_FIXTURES_BYTES`, read in bounded memory.

    Opened without blocking (a FIFO with no writer would block an ordinary open) and checked
    with ``fstat`` before a byte is read.

    Raises:
        FixtureError: ``cannot read the file: <why>`` (the system's reason, not a regular file
            and what it is instead, or larger than the limit); the message never names `path`.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise FixtureError(f"cannot read the file: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FixtureError(f"cannot read the file: not a regular file ({_file_kind(mode)})")
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


def _file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a file")


@dataclass(frozen=True)
class FixtureAnswer:
    """One answer of an operation, decoded.

    Attributes:
        request: the operation's request message (decoded strictly; validated unless
            `partial`).
        response: the operation's response message (decoded strictly); the empty message
            when `error` is set.
        key: the request's :func:`request_key`, under which a request matches this answer
            (when not `partial`).
        error: the error to answer with instead of `response`, or ``None``; its ``code`` is a
            :class:`projectops.Code` value and its message is not blank.
        delay: seconds to wait before answering, 0 to :data:`MAX_DELAY_SECONDS`.
        partial: a request matches when each field `request` sets equals the request's
            (:func:`matches_partially`), not by equality.
    """

    request: Message
    response: Message
    key: str
    error: ErrorResponse | None = None
    delay: float = 0.0
    partial: bool = False


@dataclass(frozen=True)
class FixtureProject:
    """One project of the fixtures, decoded.

    Attributes:
        name: the project's name (``"demo"``).
        api_key: the key that selects it (left out of the repr).
        answers: operation name -> its answers, in the order of the file (operations sorted
            by name).
    """

    name: str
    api_key: str = field(repr=False)
    answers: Mapping[str, tuple[FixtureAnswer, ...]]


def default_fixtures() -> tuple[FixtureProject, ...]:
    """The embedded default fixtures (projects ``demo``, key ``demo-key``, and ``other``, key
    ``other-key``), decoded anew each call.

    Raises:
        FixtureError: the package's own file is broken, ``default fixtures: <field path>: ...``.
    """
    source = resources.files(__package__)
    for part in _DEFAULT:
        source = source.joinpath(part)
    try:
        return decode_fixtures(source.read_text(encoding="utf-8"))
    except FixtureError as exc:
        raise FixtureError(f"{DEFAULT_FIXTURES_NAME}: {exc}") from None


def decode_fixtures(data: str | bytes | Mapping[str, Any]) -> tuple[FixtureProject, ...]:
    """Decode and check fixtures given as JSON text or a parsed object (module docstring).

    Returns:
        The projects, in the order of the file.

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


def _parse(data: Any) -> tuple[FixtureProject, ...]:
    fixtures = _decode(data, MockFixtures, "")
    # The answers are decoded from the JSON as written (module docstring), beside the message.
    raw_projects: list[dict[str, Any]] = cast(Mapping[str, Any], data)["projects"]
    by_name = {op.name: op for op in operations()}
    projects: list[FixtureProject] = []
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
                f"{path}.apiKey: {problem}; a key travels in the {API_KEY_HEADER} header, which "
                "carries printable ASCII without surrounding white space"
            )
        names[entry.project] = key_index[entry.api_key] = i
        answers: dict[str, tuple[FixtureAnswer, ...]] = {}
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
        projects.append(FixtureProject(entry.project, entry.api_key, answers))
    return tuple(projects)


def _header_problem(key: str) -> str:
    """Why `key` can never arrive in an HTTP header as it is written, or ``""``."""
    if key != key.strip(" \t"):
        return "has white space around it"
    for char in key:
        if not " " <= char <= "~":
            control = char < " " or "\x7f" <= char <= "\x9f"
            return "holds a control character" if control else "holds a non-ASCII character"
    return ""


def _answers(op: Operation, items: list[Any], path: str) -> tuple[FixtureAnswer, ...]:
    found: list[FixtureAnswer] = []
    index: dict[tuple[bool, str], int] = {}
    for j, item in enumerate(items):
        answer_path = f"{path}[{j}]"
        answer = _decode(item, MockAnswer, answer_path)
        request = _decode(
            item.get("request") or {},
            op.request_type,
            f"{answer_path}.request",
            validated=not answer.partial,  # a partial request names only what it matches on
        )
        # Presence as written: an empty object `{}` is a response, whatever the codec's path.
        has_response, has_error = (item.get(name) is not None for name in ("response", "error"))
        if not has_response and not has_error:
            raise FixtureError(f"{answer_path}.response: is required (or an error instead)")
        if has_response and has_error:
            raise FixtureError(f"{answer_path}: set one of response and error, not both")
        error: ErrorResponse | None = None
        if has_error:
            error = answer.error
            _check_error(error, f"{answer_path}.error")
            response = op.response_type()
        else:
            response = _decode(
                item["response"], op.response_type, f"{answer_path}.response", validated=False
            )
        delay = _delay(answer, f"{answer_path}.delay")
        wanted = request_key(request)
        if (answer.partial, wanted) in index:
            raise FixtureError(
                f"{answer_path}.request: the same request as "
                f"{path}[{index[(answer.partial, wanted)]}]"
            )
        index[(answer.partial, wanted)] = j
        found.append(FixtureAnswer(request, response, wanted, error, delay, answer.partial))
    return tuple(found)


_CODES = frozenset(code.value for code in Code)


def _check_error(error: ErrorResponse, path: str) -> None:
    if error.code not in _CODES:
        shown = json.dumps(_cut(error.code), ensure_ascii=True)
        raise FixtureError(
            f"{path}.code: {shown} is no error code; known codes: {', '.join(sorted(_CODES))}"
        )
    if not error.message.strip():
        raise FixtureError(f"{path}.message: is required")


def _delay(answer: MockAnswer, path: str) -> float:
    if not answer.HasField("delay"):
        return 0.0
    seconds = answer.delay.seconds + answer.delay.nanos / 1e9
    if seconds < 0:
        raise FixtureError(f"{path}: a delay cannot be negative")
    if seconds > MAX_DELAY_SECONDS:
        raise FixtureError(
            f"{path}: {seconds:g}s is longer than the longest delay, {MAX_DELAY_SECONDS:g}s"
        )
    return seconds


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
    """``(key, shown)`` of a request: its :func:`request_key` and the fields it sets, as shown
    in a no-match message (``version "9.9.9"``; empty for the empty request)."""
    data = _stripped(to_dict(request))
    shown = ", ".join(
        f"{fd.json_name} {_shown(data[fd.json_name])}" for fd, _ in request.ListFields()
    )
    return json.dumps(data, sort_keys=True, ensure_ascii=False), shown


def matches_partially(answer: FixtureAnswer, request: Message) -> bool:
    """Whether `request` sets each field `answer.request` sets to the same value (strings
    compared trimmed, a message field as a whole); other fields of `request` do not count."""
    return is_subset(request_fields(answer.request), request_json(request))


def request_json(request: Message) -> dict[str, Any]:
    """`request` in the protobuf JSON mapping (every field, defaults included) with every
    string trimmed: what :func:`request_key` spells and :func:`is_subset` searches."""
    return cast(dict[str, Any], _stripped(to_dict(request)))


def request_fields(request: Message) -> dict[str, Any]:
    """The fields `request` sets (``ListFields``: a default value counts as unset), by JSON
    name, in the protobuf JSON mapping with every string trimmed: what
    :func:`matches_partially` compares."""
    data = _stripped(to_dict(request))
    return {fd.json_name: data[fd.json_name] for fd, _ in request.ListFields()}


def is_subset(wanted: Mapping[str, Any], given: Mapping[str, Any]) -> bool:
    """Whether `given` (a request's trimmed JSON object) holds each field of `wanted` (an
    answer's :func:`request_fields`) with an equal value."""
    return all(name in given and given[name] == value for name, value in wanted.items())


def request_key(request: Message) -> str:
    """The key under which `request` matches an answer: its JSON with the surrounding white
    space of every string removed (a version is compared trimmed), keys sorted."""
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
