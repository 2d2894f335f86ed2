"""Operations of small synthetic schemas, built in a private descriptor pool, for tests of what
the registry and the OpenAPI document derive from an rpc's options; and operations of the
registry picked by property, for tests that need one of a kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops.registry import Operation, operation_of, operations
from projectops.rules import zero_breaks_rule
from projectops.validation import is_required


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


# --- operations of the registry, picked by property (no test names which operations exist) ----


def required_string(op: Operation) -> FieldDescriptor | None:
    """A top-level REQUIRED, singular string field of `op`'s request (the first), or None."""
    request = cast(Descriptor, op.request_type.DESCRIPTOR)
    for fd in request.fields:
        if is_required(fd) and fd.type == fd.TYPE_STRING and not fd.is_repeated:
            return fd
    return None


def with_required_string(
    also: Callable[[Operation], bool] = lambda op: True,
) -> tuple[Operation, FieldDescriptor]:
    """The first operation of the registry whose request has a REQUIRED string field and
    requires no other (so that a request of that field alone is whole: tests send one), and
    that `also` holds for (a test's other needs); and that field."""
    for op in operations():
        fd = required_string(op)
        fields = op.request_type.DESCRIPTOR.fields
        others = [f for f in fields if f is not fd and (is_required(f) or zero_breaks_rule(f))]
        if fd is not None and not others and also(op):
            return op, fd
    raise LookupError("no operation of the registry requires one REQUIRED string field alone")


def reaches(message: Descriptor, test: Callable[[FieldDescriptor], bool]) -> bool:
    """Whether a field of `message`, or of a message under it, passes `test`."""
    seen, todo = set(), [message]
    while todo:
        descriptor = todo.pop()
        if descriptor.full_name not in seen:
            seen.add(descriptor.full_name)
            if any(test(fd) for fd in descriptor.fields):
                return True
            todo += [fd.message_type for fd in descriptor.fields if fd.message_type]
    return False


def has_fixtures(op: Operation) -> bool:
    """Whether the default fixtures' first project answers `op` with a response."""
    from projectops.fixtures import default_fixtures

    answers = default_fixtures()[0].answers.get(op.name, ())
    return any(a.error is None and not a.partial for a in answers)


def known_request(op: Operation) -> Message:
    """The first request of `op` that the default fixtures' first project answers with a
    response (the mock refuses other requests of an operation its fixtures list)."""
    from projectops.fixtures import default_fixtures

    answers = default_fixtures()[0].answers.get(op.name, ())
    return next(a.request for a in answers if a.error is None and not a.partial)


def without_request_fields(
    also: Callable[[Operation], bool] = lambda op: True,
) -> Operation:
    """The first operation of the registry whose request has no fields (the body ``{}``), and
    that `also` holds for (a test's other needs)."""
    for op in operations():
        if not op.request_type.DESCRIPTOR.fields and also(op):
            return op
    raise LookupError("no operation of the registry has a request without fields")


def with_max_length_string() -> tuple[Operation, FieldDescriptor, int]:
    """The first operation of the registry whose request has a top-level singular string field
    with a protovalidate ``string.max_len``: the operation, the field and the maximum."""
    from projectops import rules

    for op in operations():
        for fd in cast(Descriptor, op.request_type.DESCRIPTOR).fields:
            kind = rules.rule_kind(fd)
            if kind and kind[0] == "string" and kind[1].HasField("max_len") and not fd.is_repeated:
                return op, fd, int(kind[1].max_len)
    raise LookupError("no request of the registry has a string field with a maximum length")


def valid_request(op: Operation) -> Message:
    """The smallest request of `op` that keeps every rule, whatever its fields: its REQUIRED
    fields and the minimums of its rules set (the generator the mock and the runner use)."""
    from projectops.mock import generate
    from projectops.validation import rule_violations

    request = generate(op.request_type, op.name, minimal=True)
    assert rule_violations(request) == [], f"valid_request cannot keep the rules of {op.name}"
    return request


def with_required_answer_field() -> tuple[Operation, FieldDescriptor]:
    """The first operation of the registry whose response has a top-level REQUIRED field."""
    for op in operations():
        for fd in cast(Descriptor, op.response_type.DESCRIPTOR).fields:
            if is_required(fd):
                return op, fd
    raise LookupError("no response of the registry has a REQUIRED field")


def minimal_response(op: Operation) -> Message:
    """The smallest response of `op` that keeps every rule of the schema, whatever its fields:
    its REQUIRED fields and the minimums of its rules set (the generator the mock uses, as
    :func:`valid_request`); what a test's handler returns when its response's content does not
    matter (the pytest plugin turns on ``create_app``'s check of its responses). Asserts that it
    keeps the rules."""
    from projectops.mock import generate
    from projectops.validation import rule_violations

    response = generate(op.response_type, op.name, minimal=True)
    assert rule_violations(response) == [], f"minimal_response cannot keep the rules of {op.name}"
    return response


def _orjson_schema() -> descriptor_pool.DescriptorPool:
    """For the codec's orjson path (tests/core/test_codec_orjson.py, tests/adversarial/): a
    float-free recursive type (``Node``: a child, a label, an int64 count, children), which
    orjson reads and writes, and a proto2 ``Host`` with a double extension, which it must not."""
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="orjson_test.proto", package="oj", syntax="proto2"
    )
    node = file.message_type.add(name="Node")
    node.field.add(name="child", number=1, type=field.TYPE_MESSAGE, type_name=".oj.Node")
    node.field.add(name="label", number=2, type=field.TYPE_STRING)
    node.field.add(name="count", number=3, type=field.TYPE_INT64)
    node.field.add(name="children", number=4, type=field.TYPE_MESSAGE, type_name=".oj.Node")
    host = file.message_type.add(name="Host")
    host.field.add(name="label", number=1, type=field.TYPE_STRING)
    host.extension_range.add(start=100, end=200)
    file.extension.add(name="ratio", number=100, type=field.TYPE_DOUBLE, extendee=".oj.Host")
    for added in (*node.field, *host.field, *file.extension):
        added.label = field.LABEL_OPTIONAL
    node.field[3].label = field.LABEL_REPEATED
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return pool


ORJSON_POOL = _orjson_schema()
NODE = message_factory.GetMessageClass(ORJSON_POOL.FindMessageTypeByName("oj.Node"))
HOST = message_factory.GetMessageClass(ORJSON_POOL.FindMessageTypeByName("oj.Host"))


def rules_in_words(of: FieldDescriptor | Descriptor) -> frozenset[str]:
    """``json_schema.rules_in_words(of)`` as violations name the rules (``RuleViolation.rule``):
    a CEL rule by its id, any other by its name."""
    from projectops import json_schema

    return frozenset(
        name.removeprefix("cel[").removesuffix("]") for name in json_schema.rules_in_words(of)
    )
