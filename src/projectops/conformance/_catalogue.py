"""The checks of ``projectops conformance`` that need no HTTP: the catalogue, the judging of one
answer (:func:`judge_response`, shared by the runner and the proxy), and the request variants, all
derived from the descriptors. The JSON-mapping checks (§3.1) read the parsed JSON, not a decoded
message: a lenient decoder accepts the very forms they refuse.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, Literal, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops._text import cut_to_width
from projectops._wire import INT_TYPES_64, elements, is_map, join, shape, value_form
from projectops.codec import from_json, parse_json, read_error_body, to_dict
from projectops.error_cases import ERROR_CASES
from projectops.errors import HTTP_STATUS_BY_CODE, InvalidArgument
from projectops.registry import Operation
from projectops.rules import cel_rules, rule_kind
from projectops.v1.error_pb2 import ErrorResponse
from projectops.validation import BLANK, is_required, rule_violations

__all__ = [
    "ABSENT",
    "BLANK_TRIES",
    "CAMEL_CASE",
    "CHECKS",
    "DECODES",
    "ENUM_NAMES",
    "ERRORS",
    "INT64_STRINGS",
    "JSON_CHECKS",
    "RULES",
    "TIMESTAMPS",
    "ZERO_VALUES",
    "CheckSpec",
    "Problem",
    "Verdict",
    "broken_requests",
    "decode_problem",
    "error_problem",
    "int64_as_numbers",
    "judge_response",
    "mapping_problems",
    "proto_names",
    "required_fields",
    "response_differences",
    "rfc3339_utc",
    "unknown_field_name",
]

#: How binding a check is: ``must`` (the contract) or ``should`` (this package's design).
Level = Literal["must", "should"]

#: Problems of one kind kept per answer (the first ones, in the order of the walk).
MAX_PROBLEMS = 5

#: The blank values a REQUIRED string is sent with: a space, then every character of
#: ``docs/contract.md`` §4.2 (:data:`projectops.validation.BLANK`) in two strings.
BLANK_TRIES = (" ", BLANK[: len(BLANK) // 2], BLANK[len(BLANK) // 2 :])


@dataclass(frozen=True)
class CheckSpec:
    """One check of the conformance catalogue (docs/conformance.md).

    Attributes:
        id: the check's id, ``auth.no-key``.
        level: ``"must"`` (a failure fails the run) or ``"should"``.
        rule: the rule checked, one sentence ending with its docs/contract.md section.
        needs_success: the check judges 200 responses, so it needs a request the server accepts;
            ``False`` by default.
    """

    id: str
    level: Level
    rule: str
    needs_success: bool = False


@dataclass(frozen=True)
class Problem:
    """What one response (or request) shows against one check: data until the edge, where
    :meth:`text` says it to a person (the runner's detail) and the proxy's drift line reads
    its fields (docs/conformance.md).

    Attributes:
        path: the field's path as violations name it (docs/contract.md §4.4; ``""``: the whole
            body); ``None`` when `what` is a sentence of its own, about no one field.
        what: what is wrong there, one clause (outside text inside, not yet escaped).
        rule: the rule broken (a protovalidate rule id such as ``string.max_len``), or ``None``.
        decoding: the message the body did not decode as (``response.decodes``), else ``""``.
    """

    path: str | None
    what: str
    rule: str | None = None
    decoding: str = ""

    def text(self) -> str:
        """The problem for a person: ``[not a <decoding>: ][<path or "the body">: ]<what>``.

        Returns:
            One line, not yet redacted, escaped or cut (the caller's, at the edge).
        """
        located = self.what
        if self.path is not None:
            located = f"{self.path or 'the body'}: {self.what}"
        if not self.decoding:
            return located
        return f"not a {self.decoding}: {located}"


def decode_problem(exc: InvalidArgument, decoding: str = "") -> Problem:
    """The problem of a body that did not decode (docs/contract.md §3.4): the codec's one
    violation when its message says just that, else the message, about no one field (the body
    is not JSON, would cost too much to decode, ...).

    Args:
        exc: the codec's error.
        decoding: the name of the message type the body was decoded as; ``""`` (the default):
            not named in the problem's text.

    Returns:
        The :class:`Problem`; its :meth:`Problem.text` is ``exc.message``, after ``not a
        <decoding>: `` when `decoding` is given.
    """
    whole = Problem(None, exc.message, decoding=decoding)
    if len(exc.violations) != 1:
        return whole
    violation = exc.violations[0]
    located = Problem(violation.field, violation.description, decoding=decoding)
    if located.text() == whole.text():
        return located
    return whole


# The catalogue (docs/conformance.md), in the order a report lists the checks per operation.
_CATALOGUE = (
    CheckSpec(
        "auth.no-key",
        "must",
        "a request without the key header gets 401 (§2.3)",
    ),
    CheckSpec(
        "auth.wrong-key",
        "must",
        "a request with an unknown key gets 401 (§2.3)",
    ),
    CheckSpec(
        "auth.before-body",
        "must",
        "no key and a malformed body get 401, not 400 (§2.4)",
    ),
    CheckSpec(
        "request.required",
        "must",
        "a REQUIRED field missing, or blank in any white space of §4.2, gets 400 "
        "invalid_argument with a message (§4.1, §4.2, §4.3)",
    ),
    CheckSpec(
        "request.not-object",
        "must",
        "a body that is not a JSON object gets 400 (§1.2, §3.5)",
    ),
    CheckSpec(
        "request.rules",
        "must",
        "a request breaking one rule of a field (over its max_len, outside its range, ...) "
        "gets 400 invalid_argument naming the field (§4.3, §4.6)",
    ),
    CheckSpec(
        "fixtures.response",
        "must",
        "each fixture request is answered 200 with the fixture's response",
        needs_success=True,
    ),
    CheckSpec(
        "response.decodes",
        "must",
        "every 200 answer decodes strictly as the response message (§1.2, §3.4)",
        needs_success=True,
    ),
    CheckSpec(
        "response.rules",
        "must",
        "every 200 answer keeps the response's rules: REQUIRED fields set, each protovalidate"
        " rule kept (§4.1, §4.6)",
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
        "json.zero-values",
        "must",
        "answers write every field without presence, zero values too (§3.1)",
        needs_success=True,
    ),
    CheckSpec(
        "errors.error-response",
        "should",
        "every non-2xx answer is an ErrorResponse whose code is known and whose status is "
        "that code's (§5.1, §5.2, §5.4)",
    ),
    CheckSpec(
        "errors.violation-paths",
        "should",
        "a missing or blank REQUIRED field's 400 names its path in a violation (§4.3, §4.4)",
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
    CheckSpec(
        "http.method",
        "should",
        "any method but POST gets 405 with Allow: POST (§5.4)",
    ),
    CheckSpec(
        "http.unknown-path",
        "should",
        "a path under /api/mcp/ that is no operation's gets 404 (§5.4)",
    ),
    CheckSpec(
        "http.body-limit",
        "should",
        "a body over the server's body limit gets 413 (§6)",
    ),
)

#: Check id -> its spec, in the order a report lists them per operation.
CHECKS: Mapping[str, CheckSpec] = {spec.id: spec for spec in _CATALOGUE}

#: The checks judged on every response besides :data:`JSON_CHECKS`: a 200 decodes strictly,
#: keeps the response's rules; a non-2xx is an ErrorResponse.
DECODES = "response.decodes"
RULES = "response.rules"
ERRORS = "errors.error-response"
#: The JSON-mapping checks :func:`mapping_problems` reports on (§3.1), by name.
CAMEL_CASE = "json.camel-case"
INT64_STRINGS = "json.int64-strings"
ENUM_NAMES = "json.enum-names"
TIMESTAMPS = "json.timestamps"
ZERO_VALUES = "json.zero-values"
JSON_CHECKS = (CAMEL_CASE, INT64_STRINGS, ENUM_NAMES, TIMESTAMPS, ZERO_VALUES)
# ASCII digits only (\d matches any script's); 0, 3, 6 or 9 fraction digits.
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.([0-9]{3}){1,3})?Z")
_INT64_WRAPPERS = frozenset({"google.protobuf.Int64Value", "google.protobuf.UInt64Value"})
_WHAT = {
    TIMESTAMPS: "{} is not RFC 3339 in UTC with Z",
    INT64_STRINGS: "the 64-bit integer {} is a JSON number, not a string",
    ENUM_NAMES: "the enum value {} is a number, not a name",
}


@cache
def _by_json_name(message: Descriptor) -> dict[str, FieldDescriptor]:
    """The fields of `message` by JSON name (by proto name: its ``fields_by_name``)."""
    return {fd.json_name: fd for fd in message.fields}


@cache
def _kind(fd: FieldDescriptor) -> str | None:
    """The check that one value of `fd` (of a map value, for a map) falls under."""
    if is_map(fd):
        fd = cast(Descriptor, fd.message_type).fields_by_name["value"]
    name = fd.message_type.full_name if fd.message_type is not None else ""
    if name == "google.protobuf.Timestamp":
        return TIMESTAMPS
    if name in _INT64_WRAPPERS or fd.type in INT_TYPES_64:
        return INT64_STRINGS
    if fd.enum_type is not None and fd.enum_type.full_name != "google.protobuf.NullValue":
        return ENUM_NAMES
    return None


def mapping_problems(
    data: Any, descriptor: Descriptor, examined: set[str]
) -> dict[str, list[Problem]]:
    """Check id of :data:`JSON_CHECKS` (each present) -> up to :data:`MAX_PROBLEMS` problems
    (each a field path and what) of the parsed JSON `data` of a `descriptor` message. Unknown
    keys (§3.3) and wrong JSON types (the decoder's) are skipped. `examined` gets the ids `data`
    held something for."""
    found: dict[str, list[Problem]] = {check: [] for check in JSON_CHECKS}

    def note(check: str, path: str, what: str) -> None:
        if len(found[check]) < MAX_PROBLEMS:
            found[check].append(Problem(path, what))

    # Iterative: a recursive message type nests as deep as the response does.
    # A stack of (iterator over (path, key, value) as _wire.elements yields them, the values'
    # message type): memory in proportion to the depth, not to the number of elements.
    stack: list[tuple[Iterator[tuple[str, Any, Any]], Descriptor]] = [
        (iter([("", None, data)]), descriptor)
    ]
    while stack:
        top = next(stack[-1][0], None)
        if top is None:
            stack.pop()
            continue
        path, _, value = top
        message = stack[-1][1]
        if not isinstance(value, dict):
            continue
        by_json = _by_json_name(message)
        for declared in message.fields:
            json_name = declared.json_name
            written = json_name in value or declared.name in value
            if not declared.has_presence:
                examined.add(ZERO_VALUES)
                if not written:
                    note(ZERO_VALUES, join(path, json_name), "not written (it has no presence)")
            if written and json_name != declared.name:
                examined.add(CAMEL_CASE)
        for key, item in value.items():
            fd = by_json.get(key) or message.fields_by_name.get(key)
            if fd is None:
                continue
            if key != fd.json_name:
                note(CAMEL_CASE, join(path, key), f"written {key!r}, not {fd.json_name!r}")
            if item is None or (
                fd.is_repeated and not isinstance(item, dict if is_map(fd) else list)
            ):
                continue
            kind = _kind(fd)
            inner = value_form(fd).message
            field_elements = elements(fd, item, join(path, key))
            # Well-known types have forms of their own, checked below or not at all.
            if inner is not None and not inner.full_name.startswith("google.protobuf."):
                # Walked lazily: a list of a million messages is never a million entries here.
                stack.append((field_elements, inner))
                continue
            for element_path, _, element in field_elements:
                if kind is not None and element is not None:
                    examined.add(kind)
                    if kind == TIMESTAMPS:
                        bad = isinstance(element, str) and not rfc3339_utc(element)
                    else:
                        bad = isinstance(element, int | float) and not isinstance(element, bool)
                    if bad:
                        note(kind, element_path, _WHAT[kind].format(cut_to_width(repr(element))))
    return found


#: (code, status) of every response the contract allows: the table's, and the transport
#: responses of projectops.error_cases with a status of their own (the 405 of a wrong method).
#: A Code is a StrEnum: its wire name finds it.
_ALLOWED_ERRORS = frozenset(HTTP_STATUS_BY_CODE.items()) | {
    (case.code, case.http_status) for case in ERROR_CASES
}


def error_problem(status: int, error: ErrorResponse | None) -> Problem | None:
    """What is wrong with a non-2xx response of `status` whose body read as `error` (``None``: not
    an ErrorResponse), docs/contract.md §5.1-§5.4; ``None`` when nothing is."""
    if error is None:
        return Problem(None, "not an ErrorResponse")
    if error.code not in HTTP_STATUS_BY_CODE:  # every code has its status in the table
        return Problem(None, f"unknown code {cut_to_width(repr(error.code))}")
    if (error.code, status) not in _ALLOWED_ERRORS:
        return Problem(None, f"the code {error.code} is not answered with {status}")
    return None


@dataclass
class Verdict:
    """What one response showed: its :class:`Problem` records per check id, the ids it
    `examined`, a 200's `message` (decoded leniently), a non-2xx's `error`, and a `digest` of
    its canonical JSON (of its bytes when not JSON) to tell two responses apart."""

    problems: dict[str, list[Problem]] = field(default_factory=dict)
    examined: set[str] = field(default_factory=set)
    message: Message | None = None
    error: ErrorResponse | None = None
    digest: str = ""


def judge_response(response_type: type[Message], status: int, body: bytes) -> Verdict:
    """Judge one whole response: ``response.decodes`` and :data:`JSON_CHECKS` for a 200,
    ``errors.error-response`` for a non-2xx. Parses `body` once, after the codec's decode-cost
    guard. Never raises."""
    verdict = Verdict(digest=hashlib.sha256(body).hexdigest())
    if status != 200:
        if not 200 <= status < 300:
            verdict.examined.add(ERRORS)
            verdict.error = read_error_body(body)
            problem = error_problem(status, verdict.error)
            if problem is not None:
                verdict.problems[ERRORS] = [problem]
        return verdict
    verdict.examined.add(DECODES)
    name = response_type.__name__
    try:
        data = parse_json(body, response_type)
    except InvalidArgument as exc:
        verdict.problems[DECODES] = [decode_problem(exc, name)]
        return verdict
    verdict.digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    try:
        verdict.message = _decode(data, response_type, strict=True)
    except InvalidArgument as exc:
        verdict.problems[DECODES] = [decode_problem(exc, name)]
        with suppress(InvalidArgument):
            verdict.message = _decode(data, response_type, strict=False)
    descriptor = cast(Descriptor, response_type.DESCRIPTOR)
    for check, found in mapping_problems(data, descriptor, verdict.examined).items():
        if found:
            verdict.problems[check] = found
    with suppress(ImportError):  # no engine (extra `server`): the check is not examined
        broken = rule_violations(verdict.message) if verdict.message else []
        verdict.examined.add(RULES)
        if broken:
            verdict.problems[RULES] = [Problem(v.field, v.description, v.rule) for v in broken]
    return verdict


#: Elements of a top-level list of messages decoded at a time by :func:`_decode`.
_SLICE = 10_000


def _decode(data: Any, response_type: type[Message], *, strict: bool) -> Message:
    """`data` decoded as :func:`projectops.codec.from_json` decodes it, but each top-level list
    of more than :data:`_SLICE` messages a slice at a time, merged into the message: the
    decoder's whole intermediate tree never stands beside the parsed answer (for 31.9 MiB of
    small elements, 310 MiB less at the peak). The same message, or the same error: that of the
    whole decode. Raises InvalidArgument."""
    by_json = _by_json_name(response_type.DESCRIPTOR)
    long = []
    if isinstance(data, dict):
        for key, value in data.items():
            fd = by_json.get(key)
            if fd is None or fd.message_type is None or shape(fd) != "list":
                continue
            if not isinstance(value, list) or len(value) <= _SLICE:
                continue
            if fd.name != key and fd.name in data:  # given under both names: decoded whole,
                continue  # the decoder's to refuse
            long.append(key)
    if not long:
        return from_json(data, response_type, strict=strict)
    rest = {key: value for key, value in data.items() if key not in long}
    message = from_json(rest, response_type, strict=strict)
    for key in long:
        items = data[key]
        for start in range(0, len(items), _SLICE):
            try:
                part = from_json({key: items[start : start + _SLICE]}, response_type, strict=strict)
            except InvalidArgument:
                # The slice's error names the index in the slice. The whole decode, run again
                # only on this path (the decode-cost guard still bounds it), raises the error
                # naming it in the whole list, as the codec formats it: no path is rewritten.
                return from_json(data, response_type, strict=strict)
            message.MergeFrom(part)
    return message


def rfc3339_utc(text: str) -> bool:
    """Whether `text` is a timestamp as §3.1 writes it (UTC, ``Z``, 0/3/6/9 fraction digits)."""
    if len(text) > 30 or not _RFC3339.fullmatch(text):  # bounded before any pattern runs
        return False
    with suppress(ValueError):
        datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")
        return True
    return False


#: The value of a field one of two compared responses does not have.
ABSENT: Any = object()


def response_differences(
    expected: Message, received: Message
) -> tuple[int, list[tuple[str, Any, Any]]]:
    """Where two messages of one type differ, field by field in their JSON forms.

    Args:
        expected: the fixture's response.
        received: the server's response, decoded.

    Returns:
        How many fields differ, and the first :data:`MAX_PROBLEMS` of them in the order of the
        walk as ``(path, expected JSON value, received JSON value)``: the path as violations
        name a field (docs/contract.md §4.4, ``environments[0].name``), :data:`ABSENT` for a
        side without the field.
    """
    walk = _differences(to_dict(expected), to_dict(received), "")
    first = list(itertools.islice(walk, MAX_PROBLEMS))
    return len(first) + sum(1 for _ in walk), first


def _differences(expected: Any, received: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    # Recursive: as deep as the decoded message, which the codec's depth limit bounds.
    if expected == received:
        return
    if isinstance(expected, dict) and isinstance(received, dict):
        for key in dict.fromkeys([*expected, *received]):
            inner = join(path, key)
            yield from _differences(expected.get(key, ABSENT), received.get(key, ABSENT), inner)
    elif isinstance(expected, list) and isinstance(received, list):
        pairs = itertools.zip_longest(expected, received, fillvalue=ABSENT)
        for index, (mine, theirs) in enumerate(pairs):
            yield from _differences(mine, theirs, f"{path}[{index}]")
    else:
        yield path or "the response", expected, received


def required_fields(op: Operation) -> tuple[FieldDescriptor, ...]:
    """The top-level REQUIRED request fields of `op` (a nested one needs its parent set)."""
    descriptor = cast(Descriptor, op.request_type.DESCRIPTOR)
    return tuple(fd for fd in descriptor.fields if is_required(fd))


# A value breaking a rule, from the rule's value (a length, a bound, a pattern, a list); one
# the request keeps anyway (a length past the body's limit, say), or that breaks REQUIRED too
# (0 for `gte: 1` of a REQUIRED number: missing), is found out by the engine, and not sent.
_BREAK: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(("max_len", "len", "max_bytes"), lambda n: "x" * (min(n, 2**20) + 1)),
    **dict.fromkeys(("min_len", "min_bytes"), lambda n: "x" * (n - 1)),
    "gt": lambda v: v,
    "lt": lambda v: v,
    "gte": lambda v: v - 1,
    "lte": lambda v: v + 1,
    "not_in": lambda v: v[0],
    "pattern": lambda p: next(t for t in ("", "~", "x", "0") if not re.search(p, t)),
}


def broken_requests(op: Operation, base: Message) -> Iterator[tuple[str, str, Message | None]]:
    """One request per rule of a top-level field of `op`'s request (docs/contract.md §4.6):
    `base` (a request that keeps every rule) with that field set to a value breaking the rule,
    and no other rule but that field's (REQUIRED has its own check, §4.1).

    Yields:
        ``(field's JSON name, rule id, request)``, the request ``None`` when no value breaking
        that rule alone was derived (a CEL rule, a rule of a list, a bound at the type's end).

    Raises:
        ImportError: protovalidate is not installed (each request is checked with the engine).
    """
    for fd in cast(Descriptor, op.request_type.DESCRIPTOR).fields:
        k = rule_kind(fd)  # (kind, its rules)
        named = [(f"{k[0]}.{r.name}", r.name, v) for r, v in k[1].ListFields()] if k else []
        for rule, name, value in named + [(rule.id, "", None) for rule in cel_rules(fd)]:
            request = copy.deepcopy(base)
            try:
                setattr(request, fd.name, _BREAK[name](value))
                # That field's rules only, REQUIRED not among them (request.required's).
                found = {(v.field, v.rule == "required") for v in rule_violations(request)}
                broken = found == {(fd.json_name, False)}
            except (KeyError, AttributeError, TypeError, ValueError, StopIteration):
                broken = False
            if name != "example":  # no rule: a value the schema shows
                yield fd.json_name, rule, request if broken else None


def unknown_field_name(descriptor: Descriptor) -> str:
    """A field name that `descriptor` does not know by either of its names."""
    name = "conformanceUnknownField"
    while name in _by_json_name(descriptor) or name in descriptor.fields_by_name:
        name += "X"
    return name


def _rewrite(data: Any, descriptor: Descriptor, proto: bool, numbers: bool) -> tuple[Any, int]:
    """`data` with proto field names (`proto`) and 64-bit integers as numbers (`numbers`); and
    how many names or values changed."""
    changed = 0
    out: dict[str, Any] = {}
    by_json = _by_json_name(descriptor)
    for key, value in data.items():
        fd = by_json[key]  # `data` is to_dict's: only the fields' JSON names
        name = fd.name if proto else key
        changed += name != key
        inner = value_form(fd).message
        converted = {}
        for _, at, item in elements(fd, value, ""):
            if (
                inner is not None
                and isinstance(item, dict)
                and not inner.full_name.startswith("google.protobuf.")
            ):
                item, count = _rewrite(item, inner, proto, numbers)
                changed += count
            elif numbers and _kind(fd) == INT64_STRINGS and isinstance(item, str):
                item = int(item)
                changed += 1
            converted[at] = item
        if is_map(fd):
            out[name] = converted
        elif fd.is_repeated:
            out[name] = list(converted.values())
        else:
            out[name] = converted[None]
    return out, changed


def proto_names(request: Message) -> tuple[dict[str, Any], int]:
    """`request`'s JSON object with proto field names; and how many names changed."""
    return _rewrite(to_dict(request), cast(Descriptor, request.DESCRIPTOR), True, False)


def int64_as_numbers(request: Message) -> tuple[dict[str, Any], int]:
    """`request`'s JSON object with 64-bit integers as numbers; and how many changed."""
    return _rewrite(to_dict(request), cast(Descriptor, request.DESCRIPTOR), False, True)
