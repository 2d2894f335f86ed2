"""The operation registry, derived from the proto service at import time (never listed by hand):
one :class:`Operation` per rpc of ``projectops.v1.OperationsService`` (docs/contract.md §1, §8.2).
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
    "REGISTRY",
    "SERVICE",
    "Operation",
    "Registry",
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
    """One operation of the API, derived from one rpc of the proto service (docs/contract.md §1.1,
    §1.6, §8.2); get one from :func:`operation` or :func:`operations`, never build one by hand.

    Attributes:
        name: the operation name in snake_case, ``get_release_details``.
        tool_name: the CLI command and MCP tool name in kebab-case, ``get-release-details``.
        path: the HTTP path of the rpc's ``google.api.http`` post binding,
            ``/api/mcp/get_release_details``.
        request_type: the generated request message class.
        response_type: the generated response message class.
        description: the rpc's proto comment as plain text (``""`` without one).
        method: the rpc's ``MethodDescriptor``, from which the other fields and the properties
            are derived.
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
        """First sentence of :attr:`description` (also :attr:`title`)."""
        return summary(self.method)

    title = summary

    @property
    def idempotency(self) -> str:
        """The rpc's ``idempotency_level`` by name: ``"IDEMPOTENCY_UNKNOWN"`` (unset),
        ``"NO_SIDE_EFFECTS"`` or ``"IDEMPOTENT"``."""
        level = self.method.GetOptions().idempotency_level
        return descriptor_pb2.MethodOptions.IdempotencyLevel.Name(level)

    @property
    def read_only(self) -> bool:
        """Whether the rpc is ``NO_SIDE_EFFECTS`` (MCP's ``readOnlyHint``)."""
        return self.idempotency == "NO_SIDE_EFFECTS"

    @property
    def idempotent(self) -> bool:
        """Whether the rpc is ``NO_SIDE_EFFECTS`` or ``IDEMPOTENT``: a client may retry it (MCP's
        ``idempotentHint``)."""
        return self.idempotency in ("NO_SIDE_EFFECTS", "IDEMPOTENT")

    @property
    def deprecated(self) -> bool:
        """The rpc's standard ``deprecated`` option (``option deprecated = true;``)."""
        return bool(self.method.GetOptions().deprecated)


def operation_of(method: MethodDescriptor) -> Operation:
    """The :class:`Operation` of one rpc, from its descriptor alone (docs/contract.md §1.1, §8.3).

    Args:
        method: an rpc's ``MethodDescriptor``, of this package's service or of another schema
            (a test's).

    Returns:
        Its operation; the path is that of its ``google.api.http`` post binding, or
        ``/api/mcp/<name>`` (§1.1) when it has none, as an rpc of a test schema may.
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


class Registry:
    """The operations of one proto service, derived from its descriptor (docs/contract.md §1,
    §8.2): this package's service is :data:`REGISTRY`; a test builds one of its own schema and
    hands it to the features, which serve :data:`REGISTRY` by default.

    Args:
        service: the ``ServiceDescriptor`` of the service, from a generated ``*_pb2`` module's
            ``DESCRIPTOR.services_by_name`` or any descriptor pool.
    """

    def __init__(self, service: ServiceDescriptor) -> None:
        #: The service descriptor every operation is derived from.
        self.service = service
        by_name = {op.name: op for op in map(operation_of, service.methods)}
        self._by_name: Mapping[str, Operation] = MappingProxyType(by_name)
        by_key: dict[str, Operation] = {}
        for op in by_name.values():
            for key in (op.name, op.tool_name, op.path):
                by_key[key] = op
        self._by_key: Mapping[str, Operation] = MappingProxyType(by_key)

    def operations(self) -> tuple[Operation, ...]:
        """Every operation of the service (docs/contract.md §10).

        Returns:
            One :class:`Operation` per rpc, in the order of the proto service.
        """
        return tuple(self._by_name.values())

    def operation(self, key: str | Operation) -> Operation:
        """Look an operation up by any of its names (docs/contract.md §1.1, §1.6).

        Args:
            key: an operation name (``get_release_details``), a tool name
                (``get-release-details``), a path (``/api/mcp/get_release_details``), or an
                :class:`Operation`, returned as it is.

        Returns:
            The operation.

        Raises:
            UnknownOperationError: (a ``LookupError``) no operation matches; the message lists
                the known operation names.
        """
        if isinstance(key, Operation):
            return key
        found = self._by_key.get(key) or self._by_key.get(operation_name(key))
        if found is None:
            known = ", ".join(self._by_name)
            raise UnknownOperationError(f"unknown operation {key!r}; known operations: {known}")
        return found


#: The registry of this package's service, ``projectops.v1.OperationsService``: what every
#: feature serves unless given another.
REGISTRY = Registry(SERVICE)


def operations() -> tuple[Operation, ...]:
    """Every operation of the API (docs/contract.md §10): those of :data:`REGISTRY`.

    Returns:
        One :class:`Operation` per rpc, in the order of the proto service.
    """
    return REGISTRY.operations()


def operation(key: str | Operation) -> Operation:
    """Look an operation of :data:`REGISTRY` up by any of its names (docs/contract.md §1.1,
    §1.6).

    Args:
        key: an operation name (``get_release_details``), a tool name
            (``get-release-details``), a path (``/api/mcp/get_release_details``), or an
            :class:`Operation`, returned as it is.

    Returns:
        The operation.

    Raises:
        UnknownOperationError: (a ``LookupError``) no operation matches; the message lists the
            known operation names.
    """
    return REGISTRY.operation(key)
