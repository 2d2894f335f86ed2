"""The API contract check (docs/contract.md §7.6): what ``buf breaking`` cannot see. Each schema
goes into a private pool; its descriptors' options are parsed with the extensions the default
pool knows (``google.api``, ``buf.validate``), by either protobuf implementation, so REQUIRED is
read by :func:`projectops.validation.is_required` and the rules by :mod:`projectops.rules` as
for the runtime schema.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import google.api.annotations_pb2 as annotations_pb2
from google.api import http_pb2
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, MethodDescriptor

from projectops import rules
from projectops._wire import join, scalar_type
from projectops.conventions import rpc_operation_name
from projectops.validation import is_required

__all__ = ["HttpBinding", "Operation", "check", "check_files", "load", "operations"]


@dataclass(frozen=True)
class HttpBinding:
    """The ``google.api.http`` binding of an rpc (docs/contract.md §8.3).

    Attributes:
        method: the HTTP method, upper case (``POST``); ``""`` without a binding.
        path: the path template (``/api/mcp/get_release_details``); ``""`` without one.
        body: the body field (``*``); ``""`` without one.
    """

    method: str
    path: str
    body: str


@dataclass(frozen=True)
class Operation:
    """One rpc of a schema, as the contract check sees it (docs/contract.md §7.3).

    Attributes:
        name: its operation name in snake_case.
        method: its ``MethodDescriptor`` in the schema's pool.
        http: its ``google.api.http`` binding.
    """

    name: str
    method: MethodDescriptor
    http: HttpBinding

    @property
    def full_name(self) -> str:
        """The rpc's full proto name, e.g. ``projectops.v1.OperationsService.GetReleaseDetails``."""
        return self.method.full_name


def load(data: bytes | descriptor_pb2.FileDescriptorSet) -> descriptor_pool.DescriptorPool:
    """A private descriptor pool of a schema image (docs/contract.md §7.6).

    Args:
        data: a ``FileDescriptorSet``, serialized (``buf build -o x.binpb``) or parsed, built
            with its imports.

    Returns:
        A new ``DescriptorPool`` holding every file of `data` (the process's default pool is
        left alone).

    Raises:
        ValueError: the set lacks a file one of its files imports (build it with
            ``--include_imports``).
    """
    if not isinstance(data, descriptor_pb2.FileDescriptorSet):
        data = descriptor_pb2.FileDescriptorSet.FromString(data)
    by_name = {f.name: f for f in data.file}
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str) -> None:  # dependencies first, whatever the order of the set
        if name in added:
            return
        added.add(name)
        proto = by_name.get(name)
        if proto is None:
            raise ValueError(f"descriptor set lacks {name}; build it with --include_imports")
        for dependency in proto.dependency:
            add(dependency)
        pool.Add(proto)

    for name in by_name:
        add(name)
    return pool


def _http(method: MethodDescriptor) -> HttpBinding:
    options = descriptor_pb2.MethodOptions.FromString(method.GetOptions().SerializeToString())
    # Without the option, the rule is the default: no pattern, no body.
    rule: http_pb2.HttpRule = options.Extensions[annotations_pb2.http]  # type: ignore[index]
    pattern = rule.WhichOneof("pattern")
    if pattern is None:
        return HttpBinding("", "", rule.body)
    if pattern == "custom":
        return HttpBinding(rule.custom.kind.upper(), rule.custom.path, rule.body)
    return HttpBinding(pattern.upper(), getattr(rule, pattern), rule.body)


def operations(
    pool: descriptor_pool.DescriptorPool,
    files: Iterable[str],
) -> dict[str, Operation]:
    """The rpcs of a schema's services (docs/contract.md §7.6).

    Args:
        pool: a pool from :func:`load`.
        files: the names of the files whose services count (``projectops/v1/operations.proto``).

    Returns:
        ``<service full name>/<operation name>`` -> :class:`Operation`.
    """
    found: dict[str, Operation] = {}
    services = [s for f in files for s in pool.FindFileByName(f).services_by_name.values()]
    for service in services:
        for method in service.methods:
            name = rpc_operation_name(method.name)
            found[f"{service.full_name}/{name}"] = Operation(name, method, _http(method))
    return found


def _own_operations(data: bytes) -> dict[str, Operation]:
    fds = descriptor_pb2.FileDescriptorSet.FromString(data)
    own_files = [f.name for f in fds.file if f.name.startswith("projectops/")]
    return operations(load(fds), own_files)


def check(
    released: bytes,
    current: bytes,
) -> list[str]:
    """Every way a schema breaks the released contract that ``buf breaking`` does not see: custom
    options, HTTP bindings, REQUIRED fields (docs/contract.md §7.3, §7.6). Only the services of
    files whose name starts with ``projectops/`` count.

    Args:
        released: the released schema, a serialized ``FileDescriptorSet`` built with
            ``--include_imports``.
        current: the schema to check, in the same form.

    Returns:
        One sentence per finding; empty when the released contract is kept.

    Raises:
        ValueError: an image lacks an imported file.
    """
    old_ops = _own_operations(released)
    new_ops = _own_operations(current)
    findings: list[str] = []
    for key, old in old_ops.items():
        new = new_ops.get(key)
        if new is None:
            findings.append(
                f"{old.full_name}: released operation {old.name} was removed "
                f"(was {old.http.method} {old.http.path})"
            )
            continue
        for part in ("method", "path", "body"):
            before = getattr(old.http, part)
            after = getattr(new.http, part)
            if before != after:
                findings.append(
                    f"{old.full_name}: HTTP {part} of operation {old.name} changed "
                    f"from {before!r} to {after!r}"
                )
        findings.extend(_request_findings(old, new))
        findings.extend(_response_findings(old, new))
    return list(dict.fromkeys(findings))  # a message shared by two operations is named once


def check_files(
    released: Path,
    current: Path,
) -> list[str]:
    """:func:`check` of two image files (``scripts/check-proto``).

    Args:
        released: the path of the released image (``proto/released.binpb``).
        current: the path of the image to check.

    Returns:
        As :func:`check`.

    Raises:
        OSError: a file cannot be read.
        ValueError: as :func:`check`.
    """
    return check(released.read_bytes(), current.read_bytes())


def _pairs(
    old: Descriptor,
    new: Descriptor,
) -> Iterator[tuple[Descriptor, Descriptor, str]]:
    """(released, current, shortest path) of each pair of messages reachable from both roots
    through fields of the same number, once each."""
    seen: set[tuple[str, str]] = set()
    queue: deque[tuple[Descriptor, Descriptor, str]] = deque([(old, new, "")])
    while queue:
        o, n, path = queue.popleft()
        if (o.full_name, n.full_name) in seen:
            continue
        seen.add((o.full_name, n.full_name))
        yield o, n, path
        for old_field in o.fields:
            new_field = n.fields_by_number.get(old_field.number)
            if (
                new_field is not None
                and old_field.message_type is not None
                and new_field.message_type is not None
            ):
                step = join(path, old_field.name)
                queue.append((old_field.message_type, new_field.message_type, step))


def _request_findings(old: Operation, new: Operation) -> Iterator[str]:
    for o, n, path in _pairs(old.method.input_type, new.method.input_type):
        yield from _rule_findings("request", old.name, path, o, n)
        for field in n.fields:
            if not is_required(field):
                continue
            released = o.fields_by_number.get(field.number)
            if released is not None and is_required(released):
                continue
            where = join(path, field.name)
            was = "a new field" if released is None else "was optional"
            yield (
                f"{field.full_name}: request of operation {old.name} gained a REQUIRED field "
                f"at {where} ({was}; released clients do not send it)"
            )


def _response_findings(old: Operation, new: Operation) -> Iterator[str]:
    enums: set[tuple[str, str]] = set()
    for o, n, path in _pairs(old.method.output_type, new.method.output_type):
        yield from _rule_findings("response", old.name, path, o, n)
        for field in o.fields:
            where = join(path, field.name)
            current = n.fields_by_number.get(field.number)
            if current is None:
                yield (
                    f"{field.full_name}: response of operation {old.name} lost field {where} "
                    f"(number {field.number}; was {_type_name(field)}, now absent)"
                )
                continue
            if dropped := sorted(_required(field) - _required(current)):
                yield (
                    f"{field.full_name}: response of operation {old.name} no longer promises "
                    f"{where} (its REQUIRED lost {', '.join(dropped)}; released clients and "
                    "their engines rely on it)"
                )
            if field.enum_type is not None and current.enum_type is not None:
                key = (field.enum_type.full_name, current.enum_type.full_name)
                if key not in enums:
                    enums.add(key)
                    yield from _enum_findings(old.name, where, field.enum_type, current.enum_type)


def _required(fd: FieldDescriptor) -> set[str]:
    """The declarations of REQUIRED a field carries: ``google.api.field_behavior``, and the
    ``buf.validate`` rules restating it (:data:`projectops.rules.REQUIRED_ITEMS`)."""
    behavior = {"google.api.field_behavior"} if is_required(fd) else set()
    return behavior | set(rules.rule_items(fd, restated=True))


# Rules whose value bounds from above or from below: a change of value loosens or tightens.
_UPPER = ("max_len", "max_bytes", "max_items", "max_pairs", "lte", "lt")
_LOWER = ("min_len", "min_bytes", "min_items", "min_pairs", "gte", "gt")


def _rule_findings(
    side: str,
    operation: str,
    path: str,
    old: Descriptor,
    new: Descriptor,
) -> Iterator[str]:
    """The protovalidate rules of a released message (at `path`) and of its released fields
    that got stricter on a request (a request a released client sends may now be refused) or
    looser on a response (a response a released client relies on may now break them): each rule
    added, removed or changed, by its flattened name (``string.max_len``,
    ``cel[issues.unique_issue_id]``). A bound that moves is judged by its direction; any other
    change counts both ways."""
    pairs: list[tuple[str, Any, Any]] = [(path or f"(the {side} message)", old, new)]
    for field in old.fields:
        if (current := new.fields_by_number.get(field.number)) is not None:
            pairs.append((join(path, field.name), field, current))
    for where, o, n in pairs:
        before = rules.rule_items(o)
        after = rules.rule_items(n)
        for name in sorted(before.keys() | after.keys()):
            was = before.get(name)
            now = after.get(name)
            stricter = was is None or (now is not None and _tighter(name, was, now))
            looser = now is None or (was is not None and _tighter(name, now, was))
            if was != now and (stricter if side == "request" else looser):
                verb = "tightened" if side == "request" else "loosened"
                yield (
                    f"{n.full_name}: {side} of operation {operation} {verb} rule {name} at "
                    f"{where} (was {_shown(was)}, now {_shown(now)})"
                )


def _tighter(name: str, was: Any, now: Any) -> bool:
    """Whether `now` is stricter than `was` for rule `name` (True for any change that is not a
    bound moving the loose way)."""
    leaf = name.rsplit(".", 1)[-1]
    if not isinstance(was, int | float) or leaf not in _UPPER + _LOWER:
        return True
    return bool(now < was if leaf in _UPPER else now > was)


def _shown(value: Any) -> str:
    return "unset" if value is None else repr(value)


def _enum_findings(
    operation: str,
    where: str,
    old: EnumDescriptor,
    new: EnumDescriptor,
) -> Iterator[str]:
    for value in old.values:
        if value.name not in new.values_by_name:
            yield (
                f"{old.full_name}.{value.name}: response of operation {operation} lost enum value "
                f"{value.name} of {old.full_name} at {where} (was {value.number}, now absent)"
            )


def _type_name(field: FieldDescriptor) -> str:
    if field.message_type is not None:
        return field.message_type.full_name
    if field.enum_type is not None:
        return field.enum_type.full_name
    return scalar_type(field)
