"""The mock fixtures format, ``projectops.v1.MockFixtures`` in the JSON mapping (its rules:
``mock_fixtures.proto``, docs/mock.md), and its one strict, bounded decoder, shared by the mock,
the OpenAPI examples and conformance. Every error is one :class:`FixtureError` line naming the
field path, never a key.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from typing import Any, TypeVar

from google.protobuf.message import Message

from projectops._text import cut_to_width
from projectops.codec import _collector_paused, check_decode_cost, from_json, to_dict
from projectops.conventions import API_KEY_HEADER
from projectops.errors import HTTP_STATUS_BY_CODE, Code, InvalidArgument
from projectops.registry import REGISTRY, Operation, Registry
from projectops.v1.error_pb2 import ErrorResponse
from projectops.v1.mock_fixtures_pb2 import MockAnswer, MockFixtures
from projectops.validation import validate

__all__ = [
    "MAX_DELAY_SECONDS",
    "MAX_FIXTURES_BYTES",
    "FixtureError",
    "FixtureProject",
    "FixtureResponse",
    "decode_fixture_response",
    "decode_fixtures",
    "default_fixtures",
    "read_fixtures_file",
    "request_key",
    "trimmed",
]

M = TypeVar("M", bound=Message)

#: The longest ``delay`` of a response, in seconds.
MAX_DELAY_SECONDS = 60.0
#: The largest fixtures file read, in bytes (64 MiB).
MAX_FIXTURES_BYTES = 64 * 1024 * 1024
# Longest outside text (a key in a path, a code) quoted in a message.
_SHOWN_CHARS = 60
_DEFAULT = ("default_fixtures.json",)  # package data of projectops
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device"}


class FixtureError(ValueError):
    """Fixtures are unreadable or invalid: one line naming the field path (and the file)."""


@dataclass(frozen=True)
class FixtureResponse:
    """One answer of a fixtures file (a ``MockAnswer``), decoded and checked.

    Attributes:
        request: the request it answers, a message of the operation's request type (the empty
            request when the file gives none).
        response: the response it responses with, a message of the operation's response type.
        key: ``request``'s :func:`request_key`, what an exact answer is matched by.
        error: the error to answer with instead of `response`; ``None`` (the default): none.
        delay: seconds to wait before answering, at most :data:`MAX_DELAY_SECONDS`; ``0.0`` (the
            default): no wait.
        partial: match requests by the fields `request` sets, not by equality; ``False`` by
            default.
    """

    request: Message
    response: Message
    key: str
    error: ErrorResponse | None = None
    delay: float = 0.0
    partial: bool = False


@dataclass(frozen=True)
class FixtureProject:
    """One project of a fixtures file (a ``MockProject``), decoded and checked.

    Attributes:
        name: the project's name (what :class:`~projectops.server.RequestContext` calls
            ``project``).
        api_key: the project's API key, visible ASCII; never in its ``repr``.
        answers: operation name -> its responses in the file's order; the names sorted.
    """

    name: str
    api_key: str = field(repr=False)
    answers: Mapping[str, tuple[FixtureResponse, ...]]


def read_fixtures_file(path: str | os.PathLike[str]) -> bytes:
    """Read a fixtures file within its cap (docs/contract.md §9.2).

    Args:
        path: the file's path.

    Returns:
        Its bytes, at most :data:`MAX_FIXTURES_BYTES` (the size is checked before a byte is read).

    Raises:
        FixtureError: ``cannot read the file: <why>``: missing, not a regular file, unreadable or
            too large. The message never names `path` (the caller adds it, escaped).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            kind = stat.S_IFMT(os.fstat(fd).st_mode)
            if kind != stat.S_IFREG:
                what = _KINDS.get(kind, "not a file")
                raise FixtureError(f"cannot read the file: not a regular file ({what})")
            with os.fdopen(fd, "rb", closefd=False) as file:
                data = file.read(MAX_FIXTURES_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise FixtureError(f"cannot read the file: {exc.strerror or exc}") from None
    if len(data) > MAX_FIXTURES_BYTES:
        raise FixtureError(f"cannot read the file: larger than {MAX_FIXTURES_BYTES >> 20} MiB")
    return data


def default_fixtures() -> tuple[FixtureProject, ...]:
    """The fixtures embedded in the package: the mock server's default projects.

    Returns:
        The projects (keys ``demo-key`` and ``other-key``), decoded anew on each call.

    Raises:
        FixtureError: the embedded file is invalid (a bug of the package).
    """
    text = resources.files(__package__).joinpath(*_DEFAULT).read_text("utf-8")
    try:
        return decode_fixtures(text)
    except FixtureError as exc:
        raise FixtureError(f"default fixtures: {exc}") from None


def decode_fixtures(
    data: str | bytes | Mapping[str, Any], *, registry: Registry = REGISTRY
) -> tuple[FixtureProject, ...]:
    """Decode and check a fixtures document (``MockFixtures`` in the JSON mapping).

    Args:
        data: JSON text (``str`` or UTF-8 ``bytes``) or an already parsed JSON object.
        registry: the operations its responses are of; :data:`projectops.registry.REGISTRY` by
            default.

    Returns:
        Its projects, in the document's order.

    Raises:
        FixtureError: (a ``ValueError``) one line, ``<field path>: <what is wrong>``: not JSON, a
            duplicate name, key or project, an invalid request or response, or text whose
            decoding would cost too much memory (docs/contract.md §6).
    """
    duplicates: list[tuple[int, str]] = []
    if isinstance(data, str | bytes):
        try:  # before parsing: 15 MiB of "{}," would cost gigabytes
            check_decode_cost(data, MockFixtures)
        except InvalidArgument as exc:
            raise FixtureError(exc.message.replace("the body", "the file", 1)) from None
        try:
            data = json.loads(data, object_pairs_hook=partial(_object, duplicates))
        except RecursionError:  # before 3.13, json stops at the interpreter's recursion limit
            raise FixtureError("nested too deep") from None
        except ValueError as exc:
            raise FixtureError(f"not valid JSON: {exc}") from None
    if _deeper_than(data, _MAX_NESTING):
        raise FixtureError("nested too deep")
    if duplicates:
        _raise_at_duplicate(data, dict(duplicates))
    try:  # collector paused: the responses are many containers it would walk again and again
        return _collector_paused(_parse, data, registry)
    except RecursionError:  # the codec stops at 100 levels; this is the last guard
        raise FixtureError("nested too deep") from None


#: Levels of JSON a fixtures file may nest. Python 3.13's json parser takes thousands; earlier
#: ones stop near 1,000 with a RecursionError. Checked on the parsed data, so every Python says
#: the same past it; below it, the codec names the field that holds too much (its 100 levels).
_MAX_NESTING = 800


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether `data` (parsed JSON) nests more than `limit` levels, walked without recursion."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        children: Any = ()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        stack.extend((child, depth + 1) for child in children)
    return False


def _object(duplicates: list[tuple[int, str]], pairs: list[tuple[str, Any]]) -> Any:
    found = dict(pairs)
    if len(found) != len(pairs):
        counts = Counter(key for key, _ in pairs)
        repeated = next(key for key, count in counts.items() if count > 1)
        duplicates.append((id(found), repeated))
    return found


def _raise_at_duplicate(data: Any, repeated: dict[int, str]) -> None:
    stack: list[tuple[Any, Any]] = [(data, None)]  # (value, (parent's where, key or index))
    while stack:
        value, where = stack.pop()
        if id(value) in repeated:
            raise FixtureError(
                f"{_path(where)}: the key {_quoted(repeated[id(value)])} appears twice"
            )
        if isinstance(value, dict | list):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((item, (where, key)) for key, item in items)


def _path(where: Any) -> str:
    steps: list[str] = []
    while where is not None:
        where, step = where
        if isinstance(step, int):
            steps.append(f"[{step}]")
        elif _NAME.fullmatch(step):
            steps.append(f".{step}")
        else:
            steps.append(f"[{_quoted(step)}]")
    path = "".join(reversed(steps)).removeprefix(".") or "the top level"
    return path if len(path) <= 120 else f"{path[:60]}...{path[-57:]}"


def _quoted(text: str) -> str:
    return json.dumps(cut_to_width(text, _SHOWN_CHARS), ensure_ascii=True)


def _parse(data: Any, registry: Registry) -> tuple[FixtureProject, ...]:
    # Responses are decoded from the JSON as written (decode_fixture_response), not as slow
    # ListValues.
    hollow = data
    if isinstance(data, dict) and isinstance(data.get("projects"), list):
        hollow = {**data, "projects": [_without_answers(p) for p in data["projects"]]}
    fixtures = _decode(hollow, MockFixtures, "")
    by_name = {op.name: op for op in registry.operations()}
    projects: list[FixtureProject] = []
    seen: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(fixtures.projects):
        path = f"projects[{i}]"
        for name, value in (("project", entry.project), ("apiKey", entry.api_key)):
            if (name, value) in seen:  # where the other one is, never what a key is
                raise FixtureError(
                    f"{path}.{name}: duplicate of projects[{seen[name, value]}].{name}"
                )
            seen[name, value] = i
        problem = _header_problem(entry.api_key)
        if problem:
            raise FixtureError(
                f"{path}.apiKey: {problem}; a key travels in the {API_KEY_HEADER} header as "
                "visible ASCII"
            )
        answers: dict[str, tuple[FixtureResponse, ...]] = {}
        for op_name in sorted(entry.operations):
            op_path = f"{path}.operations.{op_name}"
            op = by_name.get(op_name)
            if op is None:
                raise FixtureError(
                    f"{op_path}: unknown operation {op_name!r}; known operations: "
                    f"{', '.join(by_name)}"
                )
            decoded: dict[tuple[bool, str], tuple[int, FixtureResponse]] = {}
            for j, item in enumerate(data["projects"][i]["operations"][op_name] or ()):
                answer = decode_fixture_response(op, item, f"{op_path}[{j}]")
                first = decoded.setdefault((answer.partial, answer.key), (j, answer))[0]
                if first != j:
                    raise FixtureError(
                        f"{op_path}[{j}].request: the same request as {op_path}[{first}]"
                    )
            answers[op_name] = tuple(answer for _, answer in decoded.values())
        projects.append(FixtureProject(entry.project, entry.api_key, answers))
    return tuple(projects)


def _without_answers(entry: Any) -> Any:
    ops = entry.get("operations") if isinstance(entry, dict) else None
    if not isinstance(ops, dict):
        return entry
    emptied = {k: [] if isinstance(v, list) else v for k, v in ops.items()}
    return {**entry, "operations": emptied}


def _header_problem(key: str) -> str:
    """Why `key` is no usable key header value (visible ASCII, docs/contract.md §2.5), or ``""``:
    the rule of ``projectops.client.usable_api_key``, so every project can be called."""
    if key != key.strip(" \t"):
        return "has white space around it"
    bad = next((char for char in key if not "!" <= char <= "~"), None)
    if bad is None:
        return ""
    if bad < " " or "\x7f" <= bad <= "\x9f":
        return "holds a control character"
    if bad == " ":
        return "holds white space"
    return "holds a non-ASCII character"


def decode_fixture_response(op: Operation, item: Any, path: str) -> FixtureResponse:
    """Decode and check one response of an operation (a ``MockAnswer`` in the JSON mapping).

    Args:
        op: the operation the response is for.
        item: the response as parsed JSON (an object).
        path: its field path in the document, for messages (``projects[0].answers.x[2]``).

    Returns:
        The checked answer.

    Raises:
        FixtureError: ``<path>.<field>: <what is wrong>``.
    """
    envelope = item
    if isinstance(item, dict):  # request and response are decoded as the operation's messages
        envelope = {k: v for k, v in item.items() if k not in ("request", "response")}
    answer = _decode(envelope, MockAnswer, path, validated=False)
    here = f"{path}." if path else ""
    raw = {} if item.get("request") is None else item["request"]
    request = _decode(raw, op.request_type, here + "request", validated=not answer.partial)
    # Presence as written: `{}` is a response, whatever the codec's path for it.
    has_response, has_error = (item.get(name) is not None for name in ("response", "error"))
    if has_response == has_error:
        if has_error:
            raise FixtureError(f"{path or 'the answer'}: set one of response and error, not both")
        raise FixtureError(f"{here}response: is required (or an error instead)")
    error = answer.error if has_error else None
    # A Code is a StrEnum: its wire name finds it in the table of every code.
    if error is not None and error.code not in HTTP_STATUS_BY_CODE:
        codes = ", ".join(sorted(Code))
        raise FixtureError(
            f"{here}error.code: {_quoted(error.code)} is no error code; known codes: {codes}"
        )
    if error is not None and not error.message.strip():
        raise FixtureError(f"{here}error.message: is required")
    response = op.response_type()
    if has_response:
        response = _decode(item["response"], op.response_type, here + "response", validated=False)
    delay = answer.delay.seconds + answer.delay.nanos / 1e9
    if delay < 0:
        raise FixtureError(f"{here}delay: a delay cannot be negative")
    if delay > MAX_DELAY_SECONDS:
        longest = f"the longest delay, {MAX_DELAY_SECONDS:g}s"
        raise FixtureError(f"{here}delay: {delay:g}s is longer than {longest}")
    return FixtureResponse(request, response, request_key(request), error, delay, answer.partial)


def _decode(
    value: Any,
    message_type: type[M],
    path: str,
    *,
    validated: bool = True,
) -> M:
    try:
        message = from_json(value, message_type, strict=True)
        if validated:
            validate(message)
    except InvalidArgument as exc:
        parts = [_under(path, v.field, v.description) for v in exc.violations]
        raise FixtureError("; ".join(parts) or _under(path, "", exc.message)) from None
    return message


def _under(path: str, name: str, text: str) -> str:
    where = f"{path}.{name}" if path and name else path or name or "the top level"
    return f"{where}: {text}"


def trimmed(value: Any) -> Any:
    """A value with every string stripped of white space: what matching compares.

    Args:
        value: a JSON value, or a message (taken as its JSON mapping).

    Returns:
        A new value of the same shape (JSON values; a message becomes its ``dict``).
    """
    if isinstance(value, Message):
        value = to_dict(value)
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return {k: trimmed(v) for k, v in value.items()}
    return [trimmed(v) for v in value] if isinstance(value, list) else value


def request_key(request: Message) -> str:
    """The key an exact answer matches a request by.

    Args:
        request: a request message.

    Returns:
        The compact JSON of its :func:`trimmed` JSON mapping, keys sorted.
    """
    if not request.ListFields():
        return "{}"
    return json.dumps(trimmed(request), sort_keys=True, ensure_ascii=False)
