"""The schema's limits: what the features cannot serve, refused by ``scripts/check-proto`` before
anything is generated or fails obscurely (docs/schema.md, "Limits"; issue 40).

Each finding names the rpc or field and the reason, one line each:

- a streaming rpc: an operation is one JSON request and one JSON response per POST (§1.1);
- two rpcs of one operation name (``GetFlat`` and ``GetFLAT`` are both ``get_flat``): the
  registry, the CLI and the MCP tools name an operation by it;
- an rpc whose tool name is one of the command line's own commands (``describe``, ``schema``,
  ``mock-server``, ...): the CLI has no room for both;
- a request field named ``request``, ``self`` or a Python keyword: the typed clients take the
  request's fields as keyword arguments;
- a ``google.protobuf.Any`` in a request or response: its JSON names a type by URL, which the
  codec does not resolve;
- a message that holds itself through REQUIRED singular message fields: no finite message is
  valid, so neither the mock nor the conformance runner can make one.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterator

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor

from projectops.conventions import rpc_operation_name, tool_name
from projectops.validation import is_required

#: The names a request field cannot have: the generated methods' own parameters.
RESERVED_PARAMETERS = ("request", "self")


def cli_commands() -> set[str]:
    """The command line's own command names (not the operations'), as the program builds them."""
    from projectops.cli._main import _commands
    from projectops.registry import REGISTRY

    every = {command.name for command in _commands(None, [], REGISTRY)}
    return every - {op.tool_name for op in REGISTRY.operations()}


def findings(files: descriptor_pb2.FileDescriptorSet, package: str) -> list[str]:
    """The limits the services of `package` (and the packages under it) run into.

    Args:
        files: a descriptor set holding the schema and every file it imports (protoc's
            ``--include_imports``, as ``scripts/check-proto`` builds its image), dependencies
            first.
        package: the proto package of the schema, ``projectops``.

    Returns:
        One line per finding, ``<element>: <reason>``; empty when the features serve it all.
    """
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    methods = [
        method
        for file in files.file
        if file.package == package or file.package.startswith(package + ".")
        for service in pool.FindFileByName(file.name).services_by_name.values()
        for method in service.methods
    ]
    out: list[str] = []
    own = cli_commands()
    names: dict[str, str] = {}
    for method in methods:
        out += _rpc_findings(method, own, names)
    seen: set[str] = set()
    for method in methods:
        for message in (method.input_type, method.output_type):
            out += _message_findings(message, seen)
    return out


def _rpc_findings(method: MethodDescriptor, own: set[str], names: dict[str, str]) -> list[str]:
    out = []
    where = method.full_name
    proto = descriptor_pb2.MethodDescriptorProto()
    method.CopyToProto(proto)
    if proto.client_streaming or proto.server_streaming:
        out.append(f"{where}: a streaming rpc; an operation is one JSON request and response")
    name = rpc_operation_name(method.name)
    if name in names:
        out.append(f"{where}: its operation name {name} is {names[name]}'s too")
    names[name] = where
    if tool_name(name) in own:
        out.append(f"{where}: its tool name {tool_name(name)} is a command of the CLI")
    for fd in method.input_type.fields:
        if keyword.iskeyword(fd.name) or fd.name in RESERVED_PARAMETERS:
            out.append(
                f"{fd.full_name}: a request field named {fd.name!r} cannot be a keyword "
                "argument of the typed clients"
            )
    return out


def _message_findings(message: Descriptor, seen: set[str]) -> Iterator[str]:
    """Any fields, and REQUIRED cycles, of `message` and every message under it (once each)."""
    if message.full_name in seen:
        return
    seen.add(message.full_name)
    cycle = _required_cycle(message, [])
    if cycle:
        yield f"{cycle[0].full_name}: REQUIRED message fields hold their message again: " + (
            " -> ".join(fd.name for fd in cycle)
        )
    for fd in message.fields:
        held = _held(fd)
        if held is None:
            continue
        if held.full_name == "google.protobuf.Any":
            yield f"{fd.full_name}: a google.protobuf.Any, whose type the codec cannot resolve"
        elif not held.full_name.startswith("google.protobuf."):
            yield from _message_findings(held, seen)


def _held(fd: FieldDescriptor) -> Descriptor | None:
    """The message `fd` holds (a map's value message), or None."""
    message = fd.message_type
    if message is not None and message.GetOptions().map_entry:
        message = message.fields_by_name["value"].message_type
    return message


def _required_cycle(message: Descriptor, path: list[FieldDescriptor]) -> list[FieldDescriptor]:
    """The REQUIRED singular message fields leading from `message` back to the first message of
    `path` (or to `message` itself), or ``[]``."""
    start = path[0].containing_type if path else message
    for fd in message.fields:
        if fd.message_type is None or fd.is_repeated or not is_required(fd):
            continue
        if fd.message_type is start:
            return [*path, fd]
        if fd not in path:
            found = _required_cycle(fd.message_type, [*path, fd])
            if found:
                return found
    return []
