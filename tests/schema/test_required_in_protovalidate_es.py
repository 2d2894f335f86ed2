"""REQUIRED as another language's engine sees it (issue 40 item 4; docs/contract.md §4.1, §4.2).

A REQUIRED field is declared with ``google.api.field_behavior`` and restated for protovalidate
(``(buf.validate.field).required``, and on a singular string the CEL rule that a blank string
breaks), so that protovalidate in any language requires it too. This runs the real
protovalidate-es (pinned in tests/mcp/node/package-lock.json, under the Node pinned there) on
every request and response message of our service and of the tests' schema of every kind: a
message the generator builds valid is valid there; with a REQUIRED field removed, or a REQUIRED
string blank, it is invalid, with a violation at that field's path; and the Python engine
(:func:`projectops.validation.rule_violations`) gives the same verdict at the same paths. The
descriptors reach Node as a FileDescriptorSet that protoc compiles from the same .proto files
as the generated modules: nothing is generated for TypeScript. Every case goes to one Node
process (a JSON file in, one out).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops import to_dict
from projectops._generate import generate
from projectops._wire import elements, join, value_form
from projectops.registry import REGISTRY
from projectops.validation import is_required, rule_violations
from tests.kinds.v1 import kinds_client
from tests.mcp.support import install_npm_tools

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import protolib  # noqa: E402
from codegen import KINDS_PROTO  # noqa: E402

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("protovalidate_es.cjs")
#: Seconds the one Node process may take (about 2 s on an idle machine).
NODE_TIMEOUT = 120.0
#: Our service, and the tests' schema of every kind (tests/kinds/v1/kinds.proto).
REGISTRIES = (REGISTRY, kinds_client.REGISTRY)
#: What a REQUIRED singular string is set to besides being removed: each counts as missing.
BLANKS = ("", " ", "\t\u3000")


@dataclass(frozen=True)
class Case:
    """A message for both engines: `missing` is the JSON path (§4.4) of the REQUIRED field
    removed or blanked, ``None`` for the valid message it was made from."""

    label: str
    message: Message
    missing: str | None


def message_types() -> Iterator[type[Message]]:
    """The request and response message of every operation of :data:`REGISTRIES`, each once."""
    seen: dict[str, type[Message]] = {}
    for registry in REGISTRIES:
        for op in registry.operations():
            for cls in (op.request_type, op.response_type):
                seen.setdefault(cls.DESCRIPTOR.full_name, cls)
    yield from seen.values()


def changes(fd: FieldDescriptor) -> Iterator[tuple[str, str | None]]:
    """What makes REQUIRED field `fd` missing: removed (``None``), or (a singular string) set to
    a blank value."""
    yield "removed", None
    if fd.type == fd.TYPE_STRING and not fd.is_repeated:
        for blank in BLANKS:
            yield f"set to {blank!r}", blank


def cases(valid: Message) -> Iterator[Case]:
    """`valid`, then one copy per change of each REQUIRED field anywhere in its tree (nested
    messages, list elements and map values), the rest of the tree left valid."""
    name = valid.DESCRIPTOR.full_name
    yield Case(f"{name} as generated", valid, None)

    def walk(held: Message, path: str) -> Iterator[Case]:
        for fd in cast(Descriptor, held.DESCRIPTOR).fields:
            if not is_required(fd):
                continue
            field_path = join(path, fd.json_name)
            for what, blank in changes(fd):
                kept = type(held)()
                kept.CopyFrom(held)
                if blank is None:
                    held.ClearField(fd.name)
                else:
                    setattr(held, fd.name, blank)
                changed = type(valid)()
                changed.CopyFrom(valid)
                held.CopyFrom(kept)
                yield Case(f"{name} with {field_path} {what}", changed, field_path)
        for fd in cast(Descriptor, held.DESCRIPTOR).fields:
            if value_form(fd).message and (fd.is_repeated or held.HasField(fd.name)):
                value = getattr(held, fd.name)
                for item_path, _, item in elements(fd, value, join(path, fd.json_name)):
                    yield from walk(item, item_path)

    yield from walk(valid, "")


def descriptor_set(tmp_path: Path) -> bytes:
    """The FileDescriptorSet of our proto/ (the image scripts/check-proto builds) and of the
    tests' schema, each file once, imports included (buf.validate's, google.api's, the
    well-known types): what protoc writes, ``json_name`` and every option as it compiles them
    (the generated modules' embedded descriptors leave ``json_name`` out)."""
    ours = tmp_path / "ours.binpb"
    kinds = tmp_path / "kinds.binpb"
    protolib.build_image(REPO / "proto", ours)
    protolib.protoc(REPO, ["--include_imports", f"--descriptor_set_out={kinds}"], [KINDS_PROTO])
    found = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()
    for image in (ours, kinds):
        for file in descriptor_pb2.FileDescriptorSet.FromString(image.read_bytes()).file:
            if file.name not in seen:
                seen.add(file.name)
                found.file.append(file)
    return found.SerializeToString()


def protovalidate_es(all_cases: list[Case], tmp_path: Path) -> list[dict[str, Any]]:
    """The verdicts of protovalidate-es on `all_cases`, in order, from one Node process."""
    tools = install_npm_tools()
    batch = {
        "descriptors": base64.b64encode(descriptor_set(tmp_path)).decode(),
        "cases": [
            {"type": case.message.DESCRIPTOR.full_name, "json": to_dict(case.message)}
            for case in all_cases
        ],
    }
    sent = tmp_path / "cases.json"
    received = tmp_path / "verdicts.json"
    sent.write_text(json.dumps(batch), encoding="utf-8")
    try:
        done = subprocess.run(
            [str(tools.node), str(SCRIPT), str(sent), str(received)],
            env={"NODE_PATH": str(tools.modules)},
            capture_output=True,
            text=True,
            timeout=NODE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"protovalidate-es did not finish {len(all_cases)} cases in {NODE_TIMEOUT} s")
    assert done.returncode == 0, done.stderr[-4000:]
    verdicts: list[dict[str, Any]] = json.loads(received.read_text(encoding="utf-8"))
    assert len(verdicts) == len(all_cases)
    return verdicts


def json_path(elements: list[dict[str, Any]]) -> str:
    """A path of protovalidate_es.cjs (field JSON names, list indexes, map keys as text) as
    docs/contract.md §4.4 writes it."""
    path = ""
    for element in elements:
        if "field" in element:
            path = join(path, element["field"])
        elif "index" in element:
            path += f"[{element['index']}]"
        elif "key" in element:
            path += f"[{json.dumps(element['key'], ensure_ascii=False)}]"
        else:
            path += f"<{element['other']}>"  # no JSON path: disagrees with any Python one
    return path


def test_protovalidate_es_requires_every_required_field_where_the_python_engine_does(
    tmp_path: Path,
) -> None:
    all_cases = [
        case for cls in message_types() for case in cases(generate(cls, "es", minimal=True))
    ]
    assert any(case.missing for case in all_cases)
    problems = []
    for case, verdict in zip(all_cases, protovalidate_es(all_cases, tmp_path), strict=True):
        if verdict["kind"] == "error":
            problems.append(f"{case.label}: protovalidate-es failed: {verdict['error']}")
            continue
        in_es = sorted({json_path(v["path"]) for v in verdict["violations"]})
        in_python = sorted({v.field for v in rule_violations(case.message)})
        if case.missing is None:
            if in_python or in_es:
                problems.append(f"{case.label}: invalid (python {in_python}, es {in_es})")
        elif case.missing not in in_es:
            problems.append(f"{case.label}: protovalidate-es does not name it: {in_es}")
        elif in_python != in_es:
            problems.append(f"{case.label}: python names {in_python}, protovalidate-es {in_es}")
    assert not problems, f"{len(problems)} of {len(all_cases)} cases:\n" + "\n".join(problems)
