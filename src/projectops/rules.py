"""The protovalidate rules of the schema (``buf.validate``, docs/contract.md §4.6), read from the
descriptors: what the JSON Schemas, the OpenAPI document, ``--help``, ``describe`` and the
contract gate read.

Checking a message against them is :func:`projectops.validation.rule_violations` (the official
engine). Reading them here needs no engine: the ``buf.validate`` options are extensions that
``buf/validate/validate.proto`` declares in the default descriptor pool
(``projectops.v1.buf_validate`` put it there, or buf's own generated package did, in which
case its version's rule fields are the ones read); 0.06 ms for the first read, so ``--help``
and the CLI's path pay nothing worth counting.

REQUIRED is not one of these rules: it is ``(google.api.field_behavior) = REQUIRED``
(:func:`projectops.validation.is_required`). So that protovalidate in any language sees it too,
a REQUIRED field also declares ``(buf.validate.field).required = true`` and, a singular string,
the CEL rule :data:`NOT_BLANK_RULE_ID` (a blank string counts as missing, docs/contract.md
§4.2): these restate REQUIRED, so the readers here leave them out (``rule_items(of,
restated=True)`` gives them), and ``scripts/check-proto`` checks that both declarations agree.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from projectops.v1 import buf_validate  # noqa: F401  (registers validate.proto, see above)

__all__ = [
    "NOT_BLANK_RULE_ID",
    "REQUIRED_ITEMS",
    "cel_rules",
    "described",
    "field_rules",
    "message_rules",
    "rule_items",
    "rule_kind",
    "rule_phrases",
    "typed_rules",
    "zero_breaks_rule",
]

#: The id of the CEL rule by which a REQUIRED singular string says, to protovalidate, that a
#: blank value is missing (docs/contract.md §4.2); its expression is
#: :data:`projectops.validation.NOT_BLANK_EXPRESSION`.
NOT_BLANK_RULE_ID = "required.not_blank"
#: The flattened names (as :func:`rule_items` names rules) of the ``buf.validate`` rules that
#: restate REQUIRED: left out of :func:`rule_items` and :func:`cel_rules`.
REQUIRED_ITEMS = ("required", f"cel[{NOT_BLANK_RULE_ID}]")


def cel_rules(of: FieldDescriptor | Descriptor) -> tuple[Any, ...]:
    """The CEL rules of a field or of a message (docs/contract.md §4.6).

    Args:
        of: a field's or a message's descriptor.

    Returns:
        Its ``buf.validate.Rule`` messages (read-only), in the proto's order: each rule's
        ``id``, ``message`` (what a violation says; the schemas put it in the description) and
        CEL ``expression``; empty when it has none.
    """
    found = field_rules(of) if isinstance(of, FieldDescriptor) else message_rules(of)
    if not found:
        return ()
    return tuple(rule for rule in found.cel if rule.id != NOT_BLANK_RULE_ID)


def _extension(extension: str, of: FieldDescriptor | Descriptor) -> Any:
    """The `extension` (``buf.validate.field``, ...) of the options of `of`; None when unset.
    A descriptor of a private pool (the contract gate's) has its options parsed with the
    default pool's extensions too."""
    handle: Any = descriptor_pool.Default().FindExtensionByName(extension)  # a FieldDescriptor
    options = of.GetOptions()
    if not options.HasExtension(handle):
        return None
    return options.Extensions[handle]


@cache
def field_rules(fd: FieldDescriptor) -> Any:
    """The ``buf.validate.FieldRules`` message of field `fd` (read-only; cached), or None when
    it has no rules. Its set fields are the rules: ``rules.string.max_len``, ``rules.cel``, ...
    (the fields of ``buf.validate.FieldRules`` in third_party/protovalidate).

    Args:
        fd: a field of this package's schema.

    Returns:
        The field's ``FieldRules`` message, or ``None`` when it has no rules.
    """
    return _extension("buf.validate.field", fd)


@cache
def message_rules(message: Descriptor) -> Any:
    """The ``buf.validate.MessageRules`` message of `message` (read-only; cached), or None when
    it has no rules (its ``cel`` holds the message-level CEL rules).

    Args:
        message: a message of this package's schema.

    Returns:
        The message's ``MessageRules`` message, or ``None`` when it has no rules.
    """
    return _extension("buf.validate.message", message)


def rule_kind(fd: FieldDescriptor) -> tuple[str, Any] | None:
    """``(kind, rules)`` of the type-specific rules of `fd`: the name of the set member of
    ``FieldRules.type`` (``"string"``, ``"int64"``, ``"repeated"``, ``"map"``,
    ``"duration"``, ...) and that message (``StringRules``, ...); None when there are none.

    Args:
        fd: a field of this package's schema.

    Returns:
        ``(kind, rules)``, or ``None`` when the field has no type-specific rules.
    """
    rules = field_rules(fd)
    if rules is None:
        return None
    kind = rules.WhichOneof("type")
    if kind is None:
        return None
    return kind, getattr(rules, kind)


@cache  # fixed per field; the generator reads it for every value it makes
def typed_rules(fd: FieldDescriptor) -> dict[str, Any]:
    """The type-specific rules set on `fd` by name (docs/contract.md §4.6).

    Args:
        fd: a field of this package's schema.

    Returns:
        Rule name -> value: ``{"max_len": 128}``, ``{"gte": 0}``; empty if none.
    """
    found = rule_kind(fd)
    if not found:
        return {}
    _, rules = found
    return {f.name: value for f, value in rules.ListFields()}


@cache  # fixed per field
def zero_breaks_rule(fd: FieldDescriptor) -> bool:
    """Whether protovalidate refuses the default (0, false, "", b"") of the singular scalar field
    `fd`: it judges the default of a field without presence, so such a field is as good as
    REQUIRED (docs/contract.md §4.6): a range from 1, ``not_in: [0]``, a ``min_len``.

    Args:
        fd: a field of this package's schema.

    Returns:
        ``True`` when one of its type-specific rules refuses the default and no ``ignore``
        spares it; ``False`` for a list, a map, a message and a field without such a rule.
    """
    ignored = getattr(field_rules(fd), "ignore", 0)  # any ignore spares the default
    if fd.is_repeated or fd.message_type is not None or ignored:
        return False
    rules = typed_rules(fd)
    if fd.cpp_type == FieldDescriptor.CPPTYPE_STRING:
        pattern = rules.get("pattern")
        empty_refused = pattern is not None and re.search(pattern, "") is None
        too_short = rules.get("min_len", 0) > 0 or rules.get("len", 0) > 0
        return too_short or empty_refused
    outside = "in" in rules and 0 not in rules["in"]
    excluded = 0 in rules.get("not_in", ())
    below = rules.get("gt", -1) >= 0 or rules.get("gte", 0) > 0
    above = rules.get("lt", 1) <= 0 or rules.get("lte", 0) < 0
    return below or above or outside or excluded


def rule_items(
    of: FieldDescriptor | Descriptor,
    *,
    restated: bool = False,
) -> dict[str, Any]:
    """The protovalidate rules of a field or a message, flattened (docs/contract.md §4.6): what
    the contract gate compares, the schemas turn into keywords and the help shows.

    Args:
        of: a field's or a message's descriptor (of the default pool or a private one).
        restated: give only the rules that restate REQUIRED (:data:`REQUIRED_ITEMS`:
            ``{"required": True, "cel[required.not_blank]": "this.matches(...)"}``) instead of
            every other; ``False`` by default.

    Returns:
        Rule name -> value, in the proto's order: ``{"string.max_len": 128}``, a list's item
        rules as ``{"repeated.items.string.min_len": 1}``, each CEL rule as
        ``{"cel[issues.unique_issue_id]": "this.map(i, i.issue_id).unique()"}`` (its expression),
        a duration or a timestamp in seconds (``{"duration.lte": 60.0}``); empty when none.
    """
    found = field_rules(of) if isinstance(of, FieldDescriptor) else message_rules(of)
    items: dict[str, Any] = {}

    def walk(message: Any, prefix: str) -> None:
        for fd, value in message.ListFields():
            name = f"{prefix}.{fd.name}" if prefix else fd.name
            if fd.message_type is not None and fd.is_repeated:  # CEL rules, by id
                for rule in value:
                    items[f"{name}[{rule.id}]"] = rule.expression
            elif hasattr(value, "ToNanoseconds"):  # a Duration or a Timestamp
                items[name] = value.ToNanoseconds() / 1e9
            elif fd.message_type is not None:
                walk(value, name)
            else:
                items[name] = tuple(value) if fd.is_repeated else value

    if found is not None:
        walk(found, "")
    return {name: value for name, value in items.items() if (name in REQUIRED_ITEMS) == restated}


def rule_phrases(of: FieldDescriptor | Descriptor) -> tuple[str, ...]:
    """The protovalidate rules of a field or a message as ``projectops <command> --help`` and
    ``projectops describe`` show them (docs/contract.md §4.6).

    Args:
        of: a field's or a message's descriptor.

    Returns:
        One phrase per rule, in the proto's order: a standard rule as its name and value in
        protovalidate's words (``string.max_len = 128``), a CEL rule as its ``message``
        (``holds each issueId once``); empty when there are none. REQUIRED is not among them.
    """
    messages = {f"cel[{rule.id}]": rule.message for rule in cel_rules(of)}
    return tuple(
        messages.get(name) or (value if name.endswith("]") else f"{name} = {value!r}")
        for name, value in rule_items(of).items()
    )


def described(text: str, phrases: tuple[str, ...] | list[str]) -> str:
    """A description followed by a paragraph naming rules (docs/contract.md §4.6): what the
    schemas, ``--help`` and ``describe`` show.

    Args:
        text: the description (a proto comment); may be empty.
        phrases: rules in words, as :func:`rule_phrases` gives them; may be empty.

    Returns:
        `text`, then ``Rule: string.max_len = 128.`` or ``Rules: a; b.`` as a paragraph of its
        own (after a blank line); `text` alone when there is no phrase.
    """
    rule = ("Rule: " if len(phrases) == 1 else "Rules: ") + "; ".join(phrases) + "."
    return "\n\n".join(part for part in (text, rule if phrases else "") if part)
