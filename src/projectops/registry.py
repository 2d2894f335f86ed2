"""The operation registry, derived from the proto service at import time (never listed by hand).

Each rpc of ``projectops.v1.OperationsService`` is one :class:`Operation`: its operation name is
the rpc name in snake_case (``GetReleaseDetails`` -> ``get_release_details``), its path comes
from the rpc's ``google.api.http`` option, its tool name is the operation name in kebab-case
(docs/contract.md §1.6), and its description is the rpc's proto comment. What the rpc's
standard options say of its behaviour (``idempotency_level``, ``deprecated``) is read from
the same descriptor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import google.api.annotations_pb2 as annotations_pb2
from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message

from projectops.conventions import operation_name, operation_path, rpc_operation_name, tool_name
from projectops.descriptions import description, summary
from projectops.v1 import operations_pb2

__all__ = [
    "SERVICE",
    "Operation",
    "UnknownOperationError",
    "operation",
    "operation_of",
    "operations",
]

#: The service descriptor every operation is derived from.
SERVICE: ServiceDescriptor = operations_pb2.DESCRIPTOR.services_by_name["OperationsService"]


class UnknownOperationError(LookupError):
    """No operation has that name, tool name or path; the message lists the known names."""


@dataclass(frozen=True)
class Operation:
    """One operation of the API.

    Attributes:
        name: operation name in snake_case, e.g. ``get_release_details``.
        tool_name: the CLI and MCP tool name in kebab-case, e.g. ``get-release-details``.
        path: HTTP path from the rpc's ``google.api.http`` option, e.g.
            ``/api/mcp/get_release_details``.
        request_type: generated request message class (``<Rpc>Request``).
        response_type: generated response message class (``<Rpc>Response``).
        description: the rpc's proto comment, as plain text.
        method: the rpc's method descriptor.

    The properties :attr:`summary`/:attr:`title`, :attr:`idempotency`, :attr:`read_only`,
    :attr:`idempotent` and :attr:`deprecated` are derived from `method` (its comment and its
    standard options), so they never disagree with the proto.
    """

    name: str
    tool_name: str
    path: str
    request_type: type[Message]
    response_type: type[Message]
    description: str
    method: MethodDescriptor

    @property
    def summary(self) -> str:
        """First sentence of :attr:`description`."""
        return summary(self.method)

    @property
    def title(self) -> str:
        """A human title of the operation: the first sentence of the rpc comment (as
        :attr:`summary`), e.g. ``"List the RUM environments of the project."``."""
        return summary(self.method)

    @property
    def idempotency(self) -> str:
        """The rpc's ``idempotency_level`` option (``google/protobuf/descriptor.proto``) by its
        enum name: ``"IDEMPOTENCY_UNKNOWN"`` (unset), ``"NO_SIDE_EFFECTS"`` or
        ``"IDEMPOTENT"``."""
        level = self.method.GetOptions().idempotency_level
        return descriptor_pb2.MethodOptions.IdempotencyLevel.Name(level)

    @property
    def read_only(self) -> bool:
        """Whether the rpc is marked ``NO_SIDE_EFFECTS``: calling it changes nothing (MCP's
        ``readOnlyHint``)."""
        return self.idempotency == "NO_SIDE_EFFECTS"

    @property
    def idempotent(self) -> bool:
        """Whether repeating a call has no effect beyond the first: the rpc is marked
        ``NO_SIDE_EFFECTS`` or ``IDEMPOTENT`` (MCP's ``idempotentHint``); a client may retry it."""
        return self.idempotency in ("NO_SIDE_EFFECTS", "IDEMPOTENT")

    @property
    def deprecated(self) -> bool:
        """The rpc's standard ``deprecated`` option (``option deprecated = true;``)."""
        return bool(self.method.GetOptions().deprecated)


def operation_of(method: MethodDescriptor) -> Operation:
    """The :class:`Operation` of one rpc, from its descriptor alone: name in snake_case,
    kebab-case tool name (docs/contract.md §1.6), the path of its ``google.api.http`` post
    binding (``/api/mcp/<name>`` of §1.1 when it has none, as an rpc of a test schema may), the
    generated request and response classes, and its comment as description.
    """
    name = rpc_operation_name(method.name)
    # googleapis-common-protos types its extensions as plain FieldDescriptors.
    path: str = method.GetOptions().Extensions[annotations_pb2.http].post  # type: ignore[index]
    return Operation(
        name=name,
        tool_name=tool_name(name),
        path=path or operation_path(name),
        request_type=message_factory.GetMessageClass(method.input_type),
        response_type=message_factory.GetMessageClass(method.output_type),
        description=description(method),
        method=method,
    )


def _build(service: ServiceDescriptor) -> dict[str, Operation]:
    ops = [operation_of(method) for method in service.methods]
    return {op.name: op for op in ops}


_BY_NAME: Mapping[str, Operation] = MappingProxyType(_build(SERVICE))
_BY_KEY: Mapping[str, Operation] = MappingProxyType(
    {key: op for op in _BY_NAME.values() for key in (op.name, op.tool_name, op.path)}
)


def operations() -> tuple[Operation, ...]:
    """Every operation of the API, in the order of the proto service."""
    return tuple(_BY_NAME.values())


def operation(key: str | Operation) -> Operation:
    """Look an operation up by operation name, tool name or path.

    ``"get_release_details"``, ``"get-release-details"`` and ``"/api/mcp/get_release_details"``
    all name the same operation; an :class:`Operation` is returned as it is.

    Raises:
        UnknownOperationError: nothing matches; the message lists the known tool names.
    """
    if isinstance(key, Operation):
        return key
    found = _BY_KEY.get(key) or _BY_KEY.get(operation_name(key))
    if found is None:
        known = ", ".join(op.name for op in _BY_NAME.values())
        raise UnknownOperationError(f"unknown operation {key!r}; known operations: {known}")
    return found
