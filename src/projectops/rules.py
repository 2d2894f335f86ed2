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
from google.protobuf.message import Message

from projectops.v1 import buf_validate

__all__ = ["CelRule", "cel_rules", "field_rules", "message_rules", "rule_kind"]


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


def _extension(options_name: str, extension: str, options: Message) -> Any:
    """The `extension` (``buf.validate.field``, ...) of `options` (a descriptor's options of
    type ``google.protobuf.<options_name>``), re-parsed in the private pool; None when unset."""
    pool = _pool()
    cls = message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"google.protobuf.{options_name}")
    )
    parsed = cls.FromString(options.SerializeToString())
    handle: Any = pool.FindExtensionByName(extension)  # an extension's FieldDescriptor
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
    return _extension("FieldOptions", "buf.validate.field", fd.GetOptions())


@cache
def message_rules(message: Descriptor) -> Any:
    """The ``buf.validate.MessageRules`` message of `message` (read-only; cached), or None when
    it has no rules (its ``cel`` holds the message-level CEL rules).

    Args:
        message: a message of this package's schema.

    Returns:
        The message's ``MessageRules`` message, or ``None`` when it has no rules.
    """
    return _extension("MessageOptions", "buf.validate.message", message.GetOptions())


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
