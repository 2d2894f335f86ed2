"""Operations of small synthetic schemas, built in a private descriptor pool, for tests of what
the registry and the OpenAPI document derive from an rpc's options."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool

from projectops.registry import Operation, operation_of


def rpc_with(level: str, deprecated: bool) -> Operation:
    """An operation of a private pool whose rpc carries the given standard options."""
    file = descriptor_pb2.FileDescriptorProto(
        name="synthetic/v1/x.proto", package="synthetic.v1", syntax="proto3"
    )
    file.message_type.add(name="PingRequest")
    file.message_type.add(name="PingResponse")
    method = file.service.add(name="S").method.add(
        name="Ping",
        input_type=".synthetic.v1.PingRequest",
        output_type=".synthetic.v1.PingResponse",
    )
    method.options.idempotency_level = descriptor_pb2.MethodOptions.IdempotencyLevel.Value(level)
    method.options.deprecated = deprecated
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    rpc = pool.FindServiceByName("synthetic.v1.S").methods_by_name["Ping"]
    return operation_of(rpc)
