"""The checks of ``projectops conformance``, as far as they need no HTTP: the catalogue of check
ids, the walk of an answer's raw JSON alongside its descriptor, and the request variants.

Everything is derived from the descriptors (no operation, path or field name is written here).
The client layer's runner (:mod:`projectops.conformance._runner`) sends the requests and
judges the answers with these functions.

The JSON-mapping checks (``docs/contract.md`` §3.1) read the answer as parsed JSON, before any
decoding into a message, since a lenient decoder accepts the very forms they refuse (a proto
field name, a 64-bit integer as a number, an enum as a number, any RFC 3339 offset). No regular
expression runs over the answer: the walk goes field by field, and timestamps are checked
character by character.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops._wire import elements, is_map, join
from projectops.answers import ERROR_CASES
from projectops.codec import read_error_body, to_dict
from projectops.errors import HTTP_STATUS_BY_CODE, Code
from projectops.registry import Operation
from projectops.validation import is_required

__all__ = [
    "CHECKS",
    "JSON_CHECKS",
    "MAX_PROBLEMS",
    "CheckSpec",
    "Level",
    "error_problem",
    "int64_as_numbers",
    "mapping_problems",
    "proto_names",
    "required_fields",
    "rfc3339_utc",
    "unknown_field_name",
]

#: How binding a check is: ``must`` (the contract) or ``should`` (this package's design).
Level = Literal["must", "should"]

#: Problems of one kind kept per answer (the first ones, in the order of the walk).
MAX_PROBLEMS = 5


@dataclass(frozen=True)
class CheckSpec:
    """One check of the catalogue.

    Attributes:
        id: the check's id in the report, e.g. ``auth.no-key``.
        level: ``must`` or ``should``.
        rule: what it holds the server to, one sentence, with the contract's section.
        needs_success: whether it judges 200 answers, so it is skipped for an operation
            without a request known to succeed (``--fixtures``).
    """

    id: str
    level: Level
    rule: str
    needs_success: bool = False


_CATALOGUE = (
    CheckSpec("auth.no-key", "must", "a request without the key header gets 401 (§2.3)"),
    CheckSpec("auth.wrong-key", "must", "a request with an unknown key gets 401 (§2.3)"),
    CheckSpec("auth.before-body", "must", "no key and a malformed body get 401, not 400 (§2.4)"),
    CheckSpec(
        "request.required",
        "must",
        "a REQUIRED field missing or blank gets 400 with a message (§4.1, §4.2, §4.3)",
    ),
    CheckSpec(
        "request.not-object", "must", "a body that is not a JSON object gets 400 (§1.2, §3.5)"
    ),
    CheckSpec(
        "fixtures.response",
        "must",
        "each fixture request is answered 200 with the fixture's response message",
        needs_success=True,
    ),
    CheckSpec(
        "response.decodes",
        "must",
        "every 200 answer decodes strictly as the response message (§1.2, §3.4)",
        needs_success=True,
    ),
    CheckSpec(
        "auth.scope-headers",
        "must",
        "Project-Id/Organization-Id headers that disagree with the key change nothing (§2.2)",
        needs_success=True,
    ),
    CheckSpec(
        "json.camel-case",
        "must",
        "answers name fields in lowerCamelCase (§3.1)",
        needs_success=True,
    ),
    CheckSpec(
        "json.int64-strings",
        "must",
        "answers write 64-bit integers as decimal strings (§3.1)",
        needs_success=True,
    ),
    CheckSpec(
        "json.enum-names",
        "must",
        "answers write enum values as their names (§3.1)",
        needs_success=True,
    ),
    CheckSpec(
        "json.timestamps",
        "must",
        "answers write timestamps as RFC 3339 in UTC with Z and 0, 3, 6 or 9 fraction digits "
        "(§3.1)",
        needs_success=True,
    ),
    CheckSpec(
        "errors.error-response",
        "should",
        "every non-2xx answer is an ErrorResponse whose code is known and whose status is that "
        "code's (§5.1, §5.2, §5.4)",
    ),
    CheckSpec(
        "errors.violation-paths",
        "should",
        "a missing REQUIRED field's 400 names the field's path in a violation (§4.3, §4.4)",
    ),
    CheckSpec(
        "request.proto-names",
        "should",
        "a request with proto field names gets the answer of its camelCase form (§3.2)",
        needs_success=True,
    ),
    CheckSpec(
        "request.int64-numbers",
        "should",
        "a request with 64-bit integers as numbers gets the answer of its canonical form (§3.2)",
        needs_success=True,
    ),
    CheckSpec(
        "request.unknown-fields",
        "should",
        "a request with an unknown field gets the answer of the request without it (§3.3)",
        needs_success=True,
    ),
    CheckSpec("http.method", "should", "any method but POST gets 405 with Allow: POST (§5.4)"),
    CheckSpec(
        "http.unknown-path", "should", "a path under /api/mcp/ that is no operation's gets 404"
    ),
    CheckSpec("http.body-limit", "should", "a body over 1 MiB gets 413 (§6)"),
)

#: Check id -> its spec, in the order a report lists them per operation.
CHECKS: Mapping[str, CheckSpec] = {spec.id: spec for spec in _CATALOGUE}

_CAMEL, _INT64, _ENUM, _TIME = (
    "json.camel-case",
    "json.int64-strings",
    "json.enum-names",
    "json.timestamps",
)
#: The ids of the JSON-mapping checks :func:`mapping_problems` reports on.
JSON_CHECKS = (_CAMEL, _INT64, _ENUM, _TIME)

_INT64_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
_INT64_WRAPPERS = frozenset({"google.protobuf.Int64Value", "google.protobuf.UInt64Value"})
_TIMESTAMP = "google.protobuf.Timestamp"


def mapping_problems(data: Any, descriptor: Descriptor) -> dict[str, list[str]]:
    """What in the parsed JSON `data` of a message of `descriptor` breaks the JSON mapping.

    Args:
        data: the answer as ``json.loads`` returned it (an object is a ``dict``).
        descriptor: the message it should be (the operation's response).

    Returns:
        Check id of :data:`JSON_CHECKS` -> up to :data:`MAX_PROBLEMS` problems, each
        ``"<field path>: <what>"`` (the path in the answer's own names); every id is present.
        A key that is no field of the message (by either name) is skipped: a newer server may
        add fields (§3.3). Values of the wrong JSON type are the decoder's to report.
    """
    found: dict[str, list[str]] = {check: [] for check in JSON_CHECKS}

    def note(check: str, path: str, what: str) -> None:
        if len(found[check]) < MAX_PROBLEMS:
            found[check].append(f"{path or 'the body'}: {what}")

    # Iterative: a recursive message type nests as deep as the answer does.
    stack: list[tuple[Any, Descriptor, str]] = [(data, descriptor, "")]
    while stack:
        value, message, path = stack.pop()
        if not isinstance(value, dict):
            continue
        by_json = {fd.json_name: fd for fd in message.fields}
        by_name = {fd.name: fd for fd in message.fields}
        for key, item in value.items():
            fd = by_json.get(key)
            if fd is None:
                fd = by_name.get(key)
                if fd is None:
                    continue
                note(_CAMEL, join(path, key), f"written {key!r}, not {fd.json_name!r}")
            if item is None:
                continue
            field_path = join(path, key)
            if is_map(fd):
                if not isinstance(item, dict):
                    continue
                target = cast(Descriptor, fd.message_type).fields_by_name["value"]
            else:
                if fd.is_repeated and not isinstance(item, list):
                    continue
                target = fd
            for element_path, _, element in elements(fd, item, field_path):
                for check, what in _value_problems(target, element):
                    note(check, element_path, what)
                # Well-known types have forms of their own, checked above or not at all.
                inner = target.message_type
                if inner is not None and not inner.full_name.startswith("google.protobuf."):
                    stack.append((element, inner, element_path))
    return found


_CODES = frozenset(code.value for code in Code)
#: (code, status) of every answer the contract allows: the table's, and the transport
#: answers of projectops.answers with a status of their own (the 405 of a wrong method).
_ALLOWED_ERRORS = frozenset(
    {(code.value, status) for code, status in HTTP_STATUS_BY_CODE.items()}
    | {(str(case.code), case.http_status) for case in ERROR_CASES}
)


def error_problem(status: int, body: bytes | str) -> str | None:
    """Why a non-2xx answer of `status` with `body` breaks ``errors.error-response`` (§5.1,
    §5.2, §5.4): not an ErrorResponse, an unknown code, or a code answered with another
    status; ``None`` when it keeps the rule."""
    error = read_error_body(body)
    if error is None:
        return "not an ErrorResponse"
    if error.code not in _CODES:
        return f"unknown code {_shown(error.code)}"
    if (error.code, status) not in _ALLOWED_ERRORS:
        return f"the code {error.code} is not answered with {status}"
    return None


def _value_problems(fd: FieldDescriptor, value: Any) -> Iterator[tuple[str, str]]:
    """``(check id, what)`` for one value of `fd` (an element, for a list or map)."""
    if value is None:
        return
    kind = fd.message_type.full_name if fd.message_type is not None else ""
    if kind == _TIMESTAMP:
        if isinstance(value, str) and not rfc3339_utc(value):
            yield _TIME, f"{_shown(value)} is not RFC 3339 in UTC with Z"
    elif kind in _INT64_WRAPPERS or (fd.message_type is None and fd.type in _INT64_TYPES):
        if isinstance(value, int | float) and not isinstance(value, bool):
            yield _INT64, f"the 64-bit integer {_shown(value)} is a JSON number, not a string"
    elif fd.enum_type is not None and fd.enum_type.full_name != "google.protobuf.NullValue":
        if isinstance(value, int | float) and not isinstance(value, bool):
            yield _ENUM, f"the enum value {_shown(value)} is a number, not a name"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def rfc3339_utc(text: str) -> bool:
    """Whether `text` is a timestamp as §3.1 writes it: ``YYYY-MM-DDTHH:MM:SS``, then no
    fraction or one of 3, 6 or 9 digits, then ``Z``, naming a real date and time."""
    if len(text) > 30 or not text.endswith("Z"):
        return False
    whole, fraction = text[:19], text[19:-1]
    if fraction:
        digits = fraction[1:]
        if fraction[0] != "." or len(digits) not in (3, 6, 9) or not _digits(digits):
            return False
    if len(whole) != 19:
        return False
    separators = {4: "-", 7: "-", 10: "T", 13: ":", 16: ":"}
    for i, char in enumerate(whole):
        if i in separators:
            if char != separators[i]:
                return False
        elif not "0" <= char <= "9":
            return False
    try:
        datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return True


def _digits(text: str) -> bool:
    return all("0" <= char <= "9" for char in text)


def required_fields(op: Operation) -> tuple[FieldDescriptor, ...]:
    """The top-level request fields of `op` marked ``(google.api.field_behavior) = REQUIRED``
    (a nested one is required only once its parent is set, which no generic request does)."""
    descriptor = cast(Descriptor, op.request_type.DESCRIPTOR)
    return tuple(fd for fd in descriptor.fields if is_required(fd))


def unknown_field_name(descriptor: Descriptor) -> str:
    """A field name that `descriptor` does not know by either of its names."""
    known = {fd.json_name for fd in descriptor.fields} | {fd.name for fd in descriptor.fields}
    name = "conformanceUnknownField"
    while name in known:
        name += "X"
    return name


def _rewrite(
    data: Mapping[str, Any], descriptor: Descriptor, *, proto: bool, numbers: bool
) -> tuple[dict[str, Any], int]:
    """A copy of the canonical JSON `data` of a `descriptor` message with fields named by their
    proto names (`proto`) and 64-bit integers as JSON numbers (`numbers`); and how many values
    or names changed."""
    changed = 0
    out: dict[str, Any] = {}
    by_json = {fd.json_name: fd for fd in descriptor.fields}
    for key, value in data.items():
        fd = by_json.get(key)
        if fd is None:
            out[key] = value
            continue
        name = fd.name if proto else key
        changed += name != key
        target = fd.message_type.fields_by_name["value"] if is_map(fd) else fd  # type: ignore[union-attr]

        def convert(item: Any, target: FieldDescriptor = target) -> Any:
            nonlocal changed
            if target.message_type is not None:
                full = target.message_type.full_name
                if isinstance(item, dict) and not full.startswith("google.protobuf."):
                    inner, count = _rewrite(item, target.message_type, proto=proto, numbers=numbers)
                    changed += count
                    return inner
                if numbers and full in _INT64_WRAPPERS and isinstance(item, str):
                    changed += 1
                    return int(item)
                return item
            if numbers and target.type in _INT64_TYPES and isinstance(item, str):
                changed += 1
                return int(item)
            return item

        if is_map(fd) and isinstance(value, dict):
            out[name] = {k: convert(v) for k, v in value.items()}
        elif fd.is_repeated and isinstance(value, list):
            out[name] = [convert(v) for v in value]
        else:
            out[name] = convert(value)
    return out, changed


def proto_names(request: Message) -> tuple[dict[str, Any], int]:
    """`request`'s JSON object with every field named by its proto name (``detailed_results``,
    not ``detailedResults``); and how many names differ from the canonical form."""
    descriptor = cast(Descriptor, request.DESCRIPTOR)
    return _rewrite(to_dict(request), descriptor, proto=True, numbers=False)


def int64_as_numbers(request: Message) -> tuple[dict[str, Any], int]:
    """`request`'s JSON object with every 64-bit integer as a JSON number, not a string; and
    how many values changed (0: the request sets no 64-bit integer)."""
    descriptor = cast(Descriptor, request.DESCRIPTOR)
    return _rewrite(to_dict(request), descriptor, proto=False, numbers=True)
