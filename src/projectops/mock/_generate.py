"""The mock's generated responses: a response derived from the descriptors
(:func:`projectops._generate.generate`: REQUIRED fields set, the ``buf.validate`` rules kept,
every list holding at least one element), the same for the same request; the response to an
operation its fixtures do not list."""

from __future__ import annotations

from google.protobuf.message import Message

from projectops._generate import MAX_DEPTH, MAX_REPEATED, generate
from projectops.fixtures import request_key
from projectops.registry import Operation

__all__ = ["MAX_DEPTH", "MAX_REPEATED", "generate", "generated_response"]


def generated_response(op: Operation, request: Message) -> Message:
    """The mock's generated response of an operation for a request.

    Args:
        op: the operation called.
        request: its request.

    Returns:
        A response message of `op`, seeded by the operation and the request's
        :func:`~projectops.fixtures.request_key`: the same request gets the same response.
    """
    return generate(op.response_type, f"{op.name}\n{request_key(request)}")
