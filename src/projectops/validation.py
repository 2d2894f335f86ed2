"""``google.api.field_behavior = REQUIRED`` (AIP-203) checked over a whole message tree
(docs/contract.md §4): protobuf does not enforce it; and every rule of the schema, REQUIRED and
the protovalidate rules together, checked by the official engine (:func:`rule_violations`, §4.6).

:func:`validate` and :func:`violations` are the cheap REQUIRED check of the clients and the CLI
(no engine is imported on their path: importing protovalidate costs 0.5-1 s);
:func:`rule_violations` is the whole check of the server adapter, the conformance runner and
the proxy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import groupby
from typing import Any, cast

import google.api.field_behavior_pb2 as field_behavior_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops._text import cut_counting, escape
from projectops._wire import elements, join, value_form
from projectops.errors import FieldViolation, InvalidArgument

__all__ = [
    "BLANK",
    "EVALUATION_RULE",
    "MAX_RULED_ELEMENTS",
    "NOT_BLANK_EXPRESSION",
    "NOT_BLANK_PATTERN",
    "REQUIRED_RULE",
    "RuleViolation",
    "is_blank",
    "is_required",
    "required_rules",
    "rule_violations",
    "validate",
    "validate_rules",
    "violations",
]

_REQUIRED = field_behavior_pb2.REQUIRED

#: White space (``str.isspace``) spelled out, since regex dialects disagree on ``\s`` (§4.2):
#: a REQUIRED string made of these counts as missing.
BLANK = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _not_blank_pattern(blank: str) -> str:
    """A regex class of one character outside `blank`, as ``\\uXXXX`` escapes and ranges,
    read alike by Python's ``re`` and ECMA-262 (no ``\\s``, no literal control character)."""
    codes = enumerate(sorted({ord(c) for c in blank}))
    # Consecutive codes share code - index: each group is a run, written as a range.
    parts = []
    for _, run in groupby(codes, lambda ic: ic[1] - ic[0]):
        run_codes = [code for _, code in run]
        parts.append(f"\\u{run_codes[0]:04x}")
        if len(run_codes) > 1:
            parts.append(f"-\\u{run_codes[-1]:04x}")
    return "[^" + "".join(parts) + "]"


#: The JSON Schema ``pattern`` of a string that is not blank (the schemas' :func:`is_blank`).
NOT_BLANK_PATTERN = _not_blank_pattern(BLANK)
#: The CEL expression of the rule :data:`projectops.rules.NOT_BLANK_RULE_ID` that a REQUIRED
#: singular string declares: CEL reads the pattern's ``\uXXXX`` escapes as the
#: characters themselves, so each engine's regex dialect sees a class of literal characters.
NOT_BLANK_EXPRESSION = f"this.matches('{NOT_BLANK_PATTERN}')"


def is_blank(text: str) -> bool:
    """Whether a string counts as missing (docs/contract.md §4.2).

    Args:
        text: a string field's value.

    Returns:
        ``True`` when `text` is empty or holds only :data:`BLANK` characters.
    """
    return not text.strip(BLANK)


@cache
def is_required(fd: FieldDescriptor) -> bool:
    """Whether a field is REQUIRED (docs/contract.md §4.1, §8.4).

    Args:
        fd: a field's descriptor.

    Returns:
        Whether `fd` carries ``(google.api.field_behavior) = REQUIRED``.
    """
    behaviors: list[int] = fd.GetOptions().Extensions[field_behavior_pb2.field_behavior]  # type: ignore[index]
    return _REQUIRED in behaviors


def required_rules(fd: FieldDescriptor) -> dict[str, Any]:
    """The ``buf.validate`` rules that REQUIRED on `fd` means for protovalidate, flattened as
    ``projectops.rules.rule_items(fd, restated=True)`` reads them (docs/contract.md §4.1,
    §4.2): what a REQUIRED field must declare beside ``google.api.field_behavior``, and a field
    that is not REQUIRED must not.

    Args:
        fd: a field's descriptor (of the default pool or a private one).

    Returns:
        ``{}`` when `fd` is not REQUIRED; else ``{"required": True}``, and for a singular string
        also ``{"cel[required.not_blank]": NOT_BLANK_EXPRESSION}``.
    """
    if not is_required(fd):
        return {}
    derived: dict[str, Any] = {"required": True}
    if fd.type == fd.TYPE_STRING and not fd.is_repeated:
        derived["cel[required.not_blank]"] = NOT_BLANK_EXPRESSION
    return derived


def validate(message: Message) -> None:
    """Check every REQUIRED field in the tree of a message (docs/contract.md §4).

    Args:
        message: a request (or any message); nested messages, lists and maps are checked too.

    Raises:
        projectops.InvalidArgument: (a ``ValueError``, ``http_status=None``) one or more fields
            are missing: one violation each, ``"is required"`` (§4.3), at its JSON field path
            (§4.4).
    """
    _refuse(list(violations(message)))


def violations(message: Message, path: str = "") -> Iterator[FieldViolation]:
    """The missing REQUIRED fields under a message (docs/contract.md §4.2-§4.4).

    Args:
        message: the message to check.
        path: the JSON field path of `message` in its tree; ``""`` (the default) for the root.

    Yields:
        One :class:`FieldViolation` per missing field, ``"is required"``, in field order.
    """
    for held, fd, field_path in _fields(message, path):
        if is_required(fd) and _is_missing(held, fd):
            yield FieldViolation(field=field_path, description="is required")


@cache
def _walked(descriptor: Descriptor) -> tuple[tuple[FieldDescriptor, bool], ...]:
    """The fields of `descriptor` that the walks look at (REQUIRED ones, lists, and the fields
    of a message type), each with whether it holds messages (not a scalar or a WKT)."""
    walked = []
    for fd in descriptor.fields:
        holds = bool(value_form(fd).message)
        if holds or fd.is_repeated or is_required(fd):
            walked.append((fd, holds))
    return tuple(walked)


def _fields(
    message: Message,
    path: str,
) -> Iterator[tuple[Message, FieldDescriptor, str]]:
    """Each field of :func:`_walked` in `message` and in every message under it, depth first in
    field order: the message holding it, the field and its JSON path (`path` is `message`'s)."""
    for fd, holds in _walked(message.DESCRIPTOR):
        field_path = join(path, fd.json_name)
        yield message, fd, field_path
        if holds and (fd.is_repeated or message.HasField(fd.name)):  # not an unset message
            for item_path, _, item in elements(fd, getattr(message, fd.name), field_path):
                yield from _fields(item, item_path)


def _is_missing(message: Message, fd: FieldDescriptor) -> bool:
    if fd.is_repeated:
        return len(getattr(message, fd.name)) == 0
    if fd.has_presence:
        if not message.HasField(fd.name):
            return True
    value = getattr(message, fd.name)
    if isinstance(value, str):
        return is_blank(value)
    if isinstance(value, (bytes, int, float)):
        return not value and not fd.has_presence
    return False


# The engine's rule ids of the buf.validate rules that restate REQUIRED (required_rules).
_RESTATED = frozenset({"required", "required.not_blank"})

#: The rule id of a missing REQUIRED field in a :class:`RuleViolation` (the engine's own name
#: for the rule, though REQUIRED is declared with ``google.api.field_behavior``).
REQUIRED_RULE = "required"

#: The rule id of a rule the engine could not evaluate (an integer overflow in a CEL sum, say),
#: or was not given to evaluate (a list longer than :data:`MAX_RULED_ELEMENTS`).
EVALUATION_RULE = "evaluation"

#: The engine's budget, in list elements (docs/contract.md §4.6): the lists a CEL rule of their
#: own iterates over (no message-level rule iterates: tests/core/test_rules.py holds that) are
#: given to the engine when the squares of their lengths, once per rule, add up to at most this
#: number squared (one list of 3,000 under one rule, two of 2,100, one of 2,100 under two,
#: ...). Its ``map`` and ``filter`` cost memory and time with the square of a list's length:
#: measured with protovalidate 2.1, 3,000 elements take 150 MB and 0.29 s, 9,000 take 1.3 GB
#: and 2.3 s, 20 lists of 2,000 take 2.6 s (the memory peaks per list and rule, the time adds
#: up), and from about 10,000 elements in one list it gives up
#: ("Iteration budget exceeded") after paying that. Over the budget, each list over it alone
#: (or, when none is, the message as a whole) is one :data:`EVALUATION_RULE` violation, found
#: by the REQUIRED walk's walker, and the engine is not called.
MAX_RULED_ELEMENTS = 3_000


@dataclass(frozen=True)
class RuleViolation:
    """One broken rule of a message (docs/contract.md §4.6).

    Attributes:
        field: the JSON path of the field (§4.4: ``summary.testCounts[0].environment``); ``""``
            for a rule of the top-level message as a whole.
        description: what the rule says, in English: ``is required`` for REQUIRED (§4.3), the
            engine's message for a standard rule (``must be at most 128 characters``), the
            ``message`` of a CEL rule (``holds each issueId once``).
        rule: the rule's id: :data:`REQUIRED_RULE`, a standard rule's (``string.max_len``,
            ``int64.gte``), a CEL rule's own (``issues.unique_issue_id``), or
            :data:`EVALUATION_RULE`.
    """

    field: str
    description: str
    rule: str


def rule_violations(message: Message) -> list[RuleViolation]:
    """Every broken rule of `message` (a request or a response), REQUIRED first (:func:`violations`,
    blank strings included), then the protovalidate rules as the engine reports them, each
    with its JSON path; empty when `message` keeps every rule (docs/contract.md §4.6).

    Imports protovalidate on the first call (0.5-1 s; it comes with the `server` extra). A rule
    the engine cannot evaluate (an integer overflow in a CEL rule over hostile counts) is one
    violation with the rule :data:`EVALUATION_RULE`, the engine's message cut to 200
    characters: a message that cannot be checked does not keep the rules. So are lists a CEL
    rule iterates over that would cost the engine more than :data:`MAX_RULED_ELEMENTS` says,
    found first: each list over it alone (``environments: 9,000 elements, more than the 3,000
    elements a CEL rule is evaluated over``; ``2,500 elements under 2 CEL rules, ...`` for a
    list with two), or else the message as a whole (``lists that CEL rules iterate over (20),
    costing together more than one list of 3,000 under one rule``: a list with two rules costs
    twice); the engine is then not called at all.

    Args:
        message: the message to check, with every message nested in it.

    Returns:
        One :class:`RuleViolation` per broken rule, in that order; empty when none is broken.

    Raises:
        ImportError: protovalidate is not installed (``pip install 'projectops[server]'``).
    """
    found = [RuleViolation(v.field, v.description, REQUIRED_RULE) for v in violations(message)]
    import protovalidate

    from projectops.rules import cel_rules  # the engine's path only, not the CLI's

    # The lists holding elements that a CEL rule of their own iterates over, each with how many
    # do: each rule is one more pass of the square's cost. A second walk (the first is
    # violations'): 5 ms of the 80 that checking a 0.6 MB answer takes, engine included.
    ruled = []
    for held, fd, path in _fields(message, ""):
        if not fd.is_repeated:
            continue
        k = len(cel_rules(fd))
        n = len(getattr(held, fd.name))
        if k and n:
            ruled.append((path, n, k))  # elements, rules
    if sum(k * n * n for _, n, k in ruled) > MAX_RULED_ELEMENTS**2:  # gigabytes, seconds
        too_many = f"more than the {MAX_RULED_ELEMENTS:,} elements a CEL rule is evaluated over"
        over = []
        for p, n, k in ruled:
            if k * n * n > MAX_RULED_ELEMENTS**2:  # over the budget alone
                under = f" under {k} CEL rules" if k > 1 else ""
                over.append((p, f"{n:,} elements{under}, {too_many}"))
        cost = f"costing together more than one list of {MAX_RULED_ELEMENTS:,} under one rule"
        over = over or [("", f"lists that CEL rules iterate over ({len(ruled):,}), {cost}")]
        return found + [RuleViolation(p, text, EVALUATION_RULE) for p, text in over]
    try:
        engine = protovalidate.collect_violations(message)
    except protovalidate.EvaluationError as exc:
        found.append(RuleViolation("", escape(cut_counting(str(exc), 200)), EVALUATION_RULE))
        return found
    for proto in (violation.proto for violation in engine):
        if proto.rule_id in _RESTATED:  # REQUIRED's, found first by its own walk
            continue
        path = _json_path(message.DESCRIPTOR, proto.field.elements if proto.field else ())
        found.append(RuleViolation(path, proto.message, proto.rule_id))
    return found


def validate_rules(message: Message) -> None:
    """Check every rule of a message (:func:`rule_violations`; docs/contract.md §4.6): what
    the server adapter does with a request after decoding it.

    Args:
        message: any message of the schema, as decoded; it is not changed.

    Raises:
        InvalidArgument: a rule is broken; one violation per broken rule, REQUIRED first, the
            message joining them (``version: must be at most 128 characters``).
        ImportError: protovalidate is not installed.
    """
    found = rule_violations(message)
    _refuse([FieldViolation(field=v.field, description=v.description) for v in found])


def _refuse(found: list[FieldViolation]) -> None:
    """Raise the ``InvalidArgument`` of `found`, its message joining them; nothing when empty."""
    if found:
        text = "; ".join(f"{v.field}: {v.description}".removeprefix(": ") for v in found)
        raise InvalidArgument(text, found)


def _json_path(root: object, path_elements: Any) -> str:
    """The JSON path (§4.4) of a ``buf.validate.FieldPath``'s elements under `root`."""
    path = ""
    descriptor = cast(Descriptor | None, root)
    for element in path_elements:
        fd = descriptor.fields_by_number.get(element.field_number) if descriptor else None
        path = join(path, fd.json_name if fd is not None else element.field_name)
        subscript = element.subscript
        kind = getattr(subscript, "field", None)
        if kind == "index":
            path += f"[{subscript.value}]"
        elif kind is not None and fd is not None:  # a map's key, as §4.4 writes it
            path = next(elements(fd, {subscript.value: None}, path))[0]
        descriptor = value_form(fd).message if fd is not None else None
    return path
