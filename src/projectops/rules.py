"""The protovalidate rules of the schema (``buf.validate``, docs/contract.md §4.6), read from the
descriptors: what the JSON Schemas, the OpenAPI document, ``--help`` and ``describe`` show.

Checking a message against them is :func:`projectops.validation.rule_violations` (the official
engine). Reading them here needs no engine: the ``buf.validate`` options are parsed through a
private descriptor pool that holds the vendored ``buf/validate/validate.proto``
(:mod:`projectops.v1.buf_validate`), so the answer is the same whichever ``buf.validate``
package (ours, or buf's own generated one, any version) registered the file in the default pool,
and reading costs nothing until the first call.

REQUIRED is not one of these rules: it is ``(google.api.field_behavior) = REQUIRED``
(:func:`projectops.validation.is_required`), the one place it is declared; the rules never say
``required`` (``tests/schema/test_rules.py`` holds that).
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from projectops.v1 import buf_validate

__all__ = ["CelRule", "cel_rules", "field_rules", "message_rules", "rule_kind", "rule_phrases"]


class CelRule(NamedTuple):
    """One CEL rule of a field or a message: its ``id``, its ``message`` (what a violation
    says; the schemas put it in the description) and its CEL ``expression``."""

    id: str
    message: str
    expression: str


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    """A private pool with descriptor.proto, the well-known types validate.proto imports, and
    the vendored validate.proto: its ``FieldOptions`` knows the ``buf.validate`` extensions."""
    from google.protobuf import duration_pb2, field_mask_pb2, timestamp_pb2

    pool = descriptor_pool.DescriptorPool()
    for module in (descriptor_pb2, duration_pb2, field_mask_pb2, timestamp_pb2):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(buf_validate.SERIALIZED)
    return pool


def _extension(options_name: str, extension: str, of: FieldDescriptor | Descriptor) -> Any:
    """The `extension` (``buf.validate.field``, ...) of the options of `of` (of type
    ``google.protobuf.<options_name>``); None when unset. Read as they are when `of` is of the
    default pool and the vendored file is the one registered there (0.1 ms for the first read,
    the CLI's case); otherwise re-parsed in the private pool (1.4 ms to build it)."""
    options = of.GetOptions()
    default = descriptor_pool.Default()
    message = of if isinstance(of, Descriptor) else of.containing_type
    if buf_validate.REGISTERED_HERE and message is not None and message.file.pool is default:
        handle: Any = default.FindExtensionByName(extension)  # an extension's FieldDescriptor
        return options.Extensions[handle] if options.HasExtension(handle) else None
    pool = _pool()
    cls = message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"google.protobuf.{options_name}")
    )
    parsed = cls.FromString(options.SerializeToString())
    handle = pool.FindExtensionByName(extension)
    if not parsed.HasExtension(handle):
        return None
    return parsed.Extensions[handle]


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
    return _extension("FieldOptions", "buf.validate.field", fd)


@cache
def message_rules(message: Descriptor) -> Any:
    """The ``buf.validate.MessageRules`` message of `message` (read-only; cached), or None when
    it has no rules (its ``cel`` holds the message-level CEL rules).

    Args:
        message: a message of this package's schema.

    Returns:
        The message's ``MessageRules`` message, or ``None`` when it has no rules.
    """
    return _extension("MessageOptions", "buf.validate.message", message)


def cel_rules(of: FieldDescriptor | Descriptor) -> tuple[CelRule, ...]:
    """The CEL rules of a field or of a message, in the proto's order; empty when none.

    Args:
        of: a field's or a message's descriptor.

    Returns:
        Its CEL rules (id, message, expression), in the proto's order; empty when it has none.
    """
    rules = field_rules(of) if isinstance(of, FieldDescriptor) else message_rules(of)
    if rules is None:
        return ()
    return tuple(CelRule(r.id, r.message, r.expression) for r in rules.cel)


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


# What a standard rule says, in words (docs/contract.md §4.6): `{}` is the rule's value; a rule
# not named here reads as its name (`email`) or its name and value (`prefix v`).
_WORDS = {
    "const": "equals {}",
    "in": "one of {}",
    "not_in": "none of {}",
    "gt": "greater than {}",
    "gte": "at least {}",
    "lt": "less than {}",
    "lte": "at most {}",
    "len": "exactly {} {unit}",
    "min_len": "at least {} {unit}",
    "max_len": "at most {} {unit}",
    "pattern": "matches the pattern {}",
    "min_items": "at least {} items",
    "max_items": "at most {} items",
    "unique": "each item once",
    "min_pairs": "at least {} entries",
    "max_pairs": "at most {} entries",
}


def rule_phrases(of: FieldDescriptor | Descriptor) -> tuple[str, ...]:
    """The protovalidate rules of a field or a message in words, as ``projectops <command>
    --help`` and ``projectops describe`` show them (docs/contract.md §4.6).

    Args:
        of: a field's or a message's descriptor.

    Returns:
        One phrase per rule: the standard rules of a field first (``at most 128 characters``,
        ``at least 0``, ``matches the pattern ^([0-9a-f]{40})?$``; a list's item rules as
        ``each item: ...``), then each CEL rule's ``message``; empty when there are none.
        REQUIRED is not among them (it is no protovalidate rule here).
    """
    if isinstance(of, Descriptor):
        return tuple(rule.message or rule.expression for rule in cel_rules(of))
    found = field_rules(of)
    if found is None:
        return ()
    return tuple(_phrases(found)) + tuple(r.message or r.expression for r in cel_rules(of))


def _phrases(rules: Any) -> list[str]:
    """The standard rules of a ``FieldRules`` message in words; a list's or a map's element
    rules as ``each item: ...``, ``each value: ...``."""
    kind = rules.WhichOneof("type")
    out: list[str] = []
    for fd, value in getattr(rules, kind).ListFields() if kind else ():
        if fd.name in ("items", "keys", "values"):
            nested = _phrases(value) + [c.message or c.expression for c in value.cel]
            out += [f"each {fd.name.removesuffix('s')}: {words}" for words in nested]
        elif fd.name != "example" and value is not False:
            out.append(phrase(kind, fd.name, value))
    return out


def phrase(kind: str, rule: str, value: Any) -> str:
    """One standard rule in words (docs/contract.md §4.6).

    Args:
        kind: the rules' kind, the member of ``FieldRules.type`` (``"string"``, ``"int64"``).
        rule: the rule's name in the ``<Kind>Rules`` message (``"max_len"``, ``"gte"``).
        value: the rule's value as that message holds it.

    Returns:
        The phrase, such as ``at most 128 characters`` or ``at least 0``.
    """
    name = rule.replace("_", " ")
    words = _WORDS.get(rule, name if value is True else name + " {}")
    unit = "byte" if kind == "bytes" else "character"
    unit += "" if value == 1 else "s"
    return words.format(_shown(value), unit=unit)


def _shown(value: Any) -> str:
    """A rule's value as the phrases show it (a duration as ``60s``)."""
    if hasattr(value, "ToJsonString"):  # Duration, Timestamp
        return str(value.ToJsonString())
    return (
        str(list(value)) if hasattr(value, "__len__") and not isinstance(value, str) else str(value)
    )
