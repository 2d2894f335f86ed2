"""One proto edit adds an operation everywhere (issue 25 item 1, issue 40 item 3, ARCHITECTURE.md
"Adding an operation"), wherever in the service it stands and whatever field kinds it holds.

In process (the fast suite): each rpc of ``planting.PLANTS`` planted first, in the middle and
last of a copy of proto/, compiled by the pinned protoc: the contract gate and the REQUIRED
drift check pass, the rpc stands where it was put, and served by ``create_app`` with generated
responses it passes the conformance runner. So do the rpcs of ``planting.COMPOSED``, whose request
and response are composed of the field kinds of the test schema (tests/kinds/v1/kinds.proto;
every one of its kinds among them): besides, the limits gate passes them, the codec writes and
reads their messages as json_format does, generated messages keep REQUIRED and every rule, each
REQUIRED field left out is named, the CLI lists the operation and sends each flag as the JSON
mapping has it, and the mock answers with a generated response that keeps every rule. A
composed rpc of the refused kinds is refused, a limit line naming each field and the reason.

Slow: at a place drawn by a seed, an rpc of PLANTS or one composed of kinds drawn by the seed
(``planting.random_plant``; one time in four with a refused kind: then ``scripts/check-proto``
must refuse it, naming the field). The seeds are :data:`SEEDS` (a run of CI is repeatable);
``PROJECTOPS_PLANT_SEED=random`` draws a new one, in the test's id and printed first, to go
on searching for what assumes an operation's shape, and
``PROJECTOPS_PLANT_SEED=<number>`` repeats a run. In a copy of the repository,
``scripts/check-proto`` and scripts/generate run: the in-process suite
passes with no other edit, and the new operation is listed, served by the mock with a generated
answer, documented, a CLI command, checked by the conformance runner, and mypy still accepts
everything it checks (tests/typing's one-rpc server among it); the slow tests that go over the
operations run in the copy too (planting.SLOW_OVER_OPERATIONS).

The copy's own package is imported (``PYTHONPATH=<copy>/src``); the suite being registry-driven,
most of what the new operation gets is asserted there, and only a few facts here by name.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import protovalidate
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from projectops import codec, contract
from projectops.cli import main
from projectops.client import Client
from projectops.conformance import run_checks
from projectops.fixtures import FixtureProject, FixtureResponse, request_key
from projectops.mock import MockProject, create_mock_app, generate
from projectops.registry import Registry, operation_of
from projectops.server import create_app
from projectops.validation import is_required, rule_violations, violations
from tests.core.test_codec_differential import reference_to_dict
from tests.kinds.v1 import kinds_pb2
from tests.mcp.support import install_npm_tools
from tests.openapi.support import serving
from tests.schema import planting
from tests.schema.planting import (
    COMPOSED,
    ECHO_KINDS,
    GET_REFUSED_KINDS,
    PLANTS,
    PROTO,
    REFUSED_KINDS,
    REPO,
    SLOW_LEFT_OUT,
    SLOW_OVER_OPERATIONS,
    Plant,
    copy_repository,
    environment,
    plant,
    pytest_in,
    random_plant,
    rpc_count,
)
from tests.schema.test_contract import ACCEPTED, protolib, required_drift

sys.path.insert(0, str(REPO / "scripts"))
import schema_limits

# What the copy answers about the planted operation, from the copy's own package.
PROBE = """
import sys
import projectops
from projectops.conformance import run_checks
from projectops.mock import MockServer, generate, generated_response
from projectops.openapi import document
from projectops.server import OperationsServiceHandler
from projectops.validation import is_required

assert projectops.__file__.startswith(sys.argv[1]), projectops.__file__
op = projectops.operation(sys.argv[2])
assert op.path in document()["paths"], "the OpenAPI document lacks the path"
assert hasattr(OperationsServiceHandler, op.name), "the handler base lacks the method"
# A request derived from the schema: its REQUIRED fields set, every rule kept.
request = generate(op.request_type, "probe", minimal=True)
required = [fd for fd in op.request_type.DESCRIPTOR.fields if is_required(fd)]
set_fields = {fd.name for fd, _ in request.ListFields()}
assert all(fd.name in set_fields for fd in required), set_fields
mock = MockServer()
try:
    with mock.client() as client:  # the typed client's method, a keyword per field
        answer = getattr(client, op.name)(**{fd.name: v for fd, v in request.ListFields()})
        try:
            if required:
                getattr(client, op.name)()
                raise AssertionError("a call without the REQUIRED fields was sent")
        except projectops.InvalidArgument:
            pass
    assert answer == generated_response(op, request), answer
    report = run_checks("http://mock.invalid", mock.api_key, transport=mock.transport)
finally:
    mock.close()
checked = [c for c in report.checks if c.operation == op.name]
assert checked and all(c.status != "failed" for c in checked), checked
print("probe ok")
"""


def _run(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=root,
        env=environment(root),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


#: The seeds when ``PROJECTOPS_PLANT_SEED`` is unset, each a composed rpc planted first in the
#: service: one of about twenty kinds (a seed CI once drew), one of a oneof, a REQUIRED map keyed
#: by bools and a recursive message. A random seed drawn in every run of CI made CI fail on
#: whatever the next draw found; the finds of these two are mended.
SEEDS = (4291813432, 1097)


def _seeds() -> tuple[int, ...]:
    wanted = os.environ.get("PROJECTOPS_PLANT_SEED")
    if wanted is None:
        return SEEDS
    if wanted == "random":  # one draw for every xdist worker of a run: they collect the same
        return (random.Random(os.environ.get("PYTEST_XDIST_TESTRUNUID")).randrange(2**32),)
    return (int(wanted),)


@pytest.mark.slow
@pytest.mark.parametrize("seed", _seeds())
def test_an_rpc_added_to_the_proto_is_everywhere_and_the_suite_stays_green(
    tmp_path: Path, seed: int
) -> None:
    # One rpc drawn at one place of the service: half the time an rpc of PLANTS, else one
    # composed of kinds of the test schema (planting.random_plant).
    rng = random.Random(seed)
    what, refused = (rng.choice(PLANTS), ()) if rng.random() < 0.5 else random_plant(rng)
    at = rng.randint(0, rpc_count(REPO))
    print(f"PROJECTOPS_PLANT_SEED={seed}: {what.rpc} planted at index {at}")
    print(what.messages_text)
    root = copy_repository(tmp_path / "repo")
    plant(root, what, at)
    # The schema gates: a refused kind is refused, a line naming its field and the reason.
    gates = _run(root, "scripts/check-proto")
    assert refused or gates.returncode == 0, gates.stdout + gates.stderr
    if refused:
        limits = [line for line in gates.stdout.splitlines() if line.startswith("limit: ")]
        assert gates.returncode == 1 and len(limits) == len(refused), gates.stdout
        assert all(
            f".{what.rpc}" in line and k.limit in line
            for line, k in zip(limits, refused, strict=True)
        )
        return
    generated = planting.generate(root)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    src = str(root / "src")

    listed = _run(root, "-m", "projectops", "operations")
    assert listed.returncode == 0, listed.stderr
    tool = what.operation.replace("_", "-")
    assert tool in listed.stdout.split(), listed.stdout
    helped = _run(root, "-m", "projectops", tool, "--help")
    assert helped.returncode == 0 and tool in helped.stdout, helped.stdout + helped.stderr

    probe = _run(root, "-c", PROBE, src, what.operation)
    assert probe.returncode == 0 and "probe ok" in probe.stdout, probe.stdout + probe.stderr

    # A server written against the handler base (tests/typing) still type-checks, and so does
    # everything else mypy checks (pyproject's files: the copy's src, where its bindings are).
    typed = _run(root, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache"))
    assert typed.returncode == 0, typed.stdout[-4000:] + typed.stderr[-2000:]

    # The whole in-process suite of the copy, the copy's package imported (its conftest would
    # not know otherwise: it is checked first).
    where = _run(root, "-c", "import projectops; print(projectops.__file__)")
    assert where.stdout.startswith(src), where.stdout + where.stderr
    suite = pytest_in(
        root, "-m", "not slow", "-x", "-q", "-n", "2", "--hypothesis-profile=fast", timeout=600
    )
    assert suite.returncode == 0, suite.stdout[-6000:] + suite.stderr[-2000:]
    # And the slow tests that go over the operations (entry points, the conformance runner and
    # the proxy against the mock, the CLI, the tool server, the MCP Inspector). The npm tools are
    # this checkout's, installed once (under its lock) and lent to the copy, which finds them
    # installed from the same package-lock.json and installs nothing.
    modules = install_npm_tools().modules
    (root / modules.relative_to(REPO)).symlink_to(modules, target_is_directory=True)
    slow = pytest_in(root, "-m", "slow", "-x", "-q", "-n", "2", *SLOW_OVER_OPERATIONS)
    assert slow.returncode == 0, slow.stdout[-6000:] + slow.stderr[-2000:]


def test_the_planted_run_covers_every_module_whose_slow_tests_go_over_the_operations() -> None:
    over: set[str] = set()
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if "mark.slow" in text and re.search(r"\boperations\(\)|\bOPS\b|\bOPERATIONS\b", text):
            over.add(str(path.relative_to(REPO)))
    assert over == set(SLOW_OVER_OPERATIONS) | set(SLOW_LEFT_OUT)


# --- every place in the service, in process ---------------------------------------------------

#: The fast suite's fixed plants: each rpc first, in the middle and last in the service.
PLACES = ("start", "middle", "end")


def _index(place: str, count: int) -> int:
    """The index among `count` rpcs of a plant at `place` (``count``: after the last)."""
    return {"start": 0, "middle": count // 2, "end": count}[place]


def _planted_image(root: Path, what: Plant, at: int) -> bytes:
    """The image of a copy of proto/ (in `root`) with `what` planted at index `at`."""
    shutil.copytree(REPO / "proto", root / "proto", ignore=shutil.ignore_patterns("*.binpb"))
    plant(root, what, at)
    protolib.build_image(root / "proto", root / "planted.binpb")
    return (root / "planted.binpb").read_bytes()


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("what", PLANTS, ids=lambda p: p.rpc)
def test_a_planted_rpc_anywhere_passes_the_gates_and_the_runner(
    tmp_path: Path, what: Plant, place: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # protovalidate's shared validator keeps each file it met by name, and every plant's
    # operations.proto has our file's name: this schema gets a validator of its own.
    monkeypatch.setattr(
        protovalidate, "collect_violations", protovalidate.Validator().collect_violations
    )
    if f"rpc {what.rpc}(" in (REPO / PROTO).read_text(encoding="utf-8"):
        pytest.skip(f"{what.rpc} is in the service already (a planted copy's own run)")
    at = _index(place, rpc_count(REPO))
    image = _planted_image(tmp_path, what, at)
    # The gates of scripts/check-proto: a new operation breaks nothing released, and its
    # REQUIRED fields are declared for every engine.
    released = (REPO / "proto" / "released.binpb").read_bytes()
    assert [f for f in contract.check(released, image) if f not in ACCEPTED] == []
    assert required_drift(image) == []
    pool = contract.load(descriptor_pb2.FileDescriptorSet.FromString(image))
    methods = pool.FindServiceByName("projectops.v1.OperationsService").methods
    assert [m.name for m in methods].index(what.rpc) == at
    op = operation_of(methods[at])
    assert (op.name, op.path) == (what.operation, f"/api/mcp/{what.operation}")
    # Served by create_app with generated responses, the runner finds nothing wrong with it.
    request = generate(op.request_type, "plant", minimal=True)
    assert rule_violations(request) == []  # a request derived from the schema keeps its rules

    def answer(request: Message, context: object) -> Message:
        return generate(op.response_type, request_key(request))

    app = create_app(
        SimpleNamespace(**{op.name: answer}), authenticate={"k": "p"}.get, operations=[op]
    )  # type: ignore[arg-type]
    fixture = FixtureResponse(request, answer(request, None), request_key(request))
    project = FixtureProject("p", "k", {op.name: (fixture,)})
    with serving(app) as url:
        report = run_checks(url, "k", project=project, timeout=20, operations=[op])
    failed = [c for c in report.checks if c.status == "failed"]
    assert failed == [] and any(c.status == "passed" for c in report.checks)


# --- rpcs composed of the test schema's kinds, in process ---------------------------------------


def _gates(image: bytes) -> list[str]:
    """What scripts/check-proto's own gates (bar buf's) find in `image`: the limits, the
    contract against the released schema, the REQUIRED drift; one line each."""
    released = (REPO / "proto" / "released.binpb").read_bytes()
    files = descriptor_pb2.FileDescriptorSet.FromString(image)
    return [
        *(f"limit: {line}" for line in schema_limits.findings(files, "projectops")),
        *(f for f in contract.check(released, image) if f not in ACCEPTED),
        *required_drift(image),
    ]


def _flags(request: Message) -> tuple[list[str], dict[str, Any]]:
    """The CLI's flags for `request`'s top-level scalars and enums that are set (their JSON
    mapping's text; a bool, the bare flag), and the rest of its JSON for --json-input."""
    data = codec.to_dict(request)
    flags: list[str] = []
    for fd in request.DESCRIPTOR.fields:
        if fd.json_name not in data or fd.message_type is not None or fd.is_repeated:
            continue
        value = data.pop(fd.json_name)
        flag = "--" + fd.name.replace("_", "-")
        if fd.type == fd.TYPE_BOOL:
            flags.append(flag)  # a REQUIRED bool is set: true
        else:
            flags.append(f"{flag}={value}")  # one word: a value may start with "-"
    return flags, data


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("what", COMPOSED, ids=lambda p: p.rpc)
def test_a_composed_rpc_anywhere_is_served_by_every_feature(
    tmp_path: Path,
    what: Plant,
    place: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(
        protovalidate, "collect_violations", protovalidate.Validator().collect_violations
    )
    at = _index(place, rpc_count(REPO))
    image = _planted_image(tmp_path, what, at)
    assert _gates(image) == []
    pool = contract.load(descriptor_pb2.FileDescriptorSet.FromString(image))
    registry = Registry(pool.FindServiceByName("projectops.v1.OperationsService"))
    op = registry.operations()[at]
    assert (op.name, registry.operation(op.path)) == (what.operation, op)
    # The codec both ways, strict, as json_format writes; generated messages keep every rule.
    for cls in (op.request_type, op.response_type):
        for seed, minimal in [("a", False), ("b", False), ("c", True)]:
            message = generate(cls, seed, minimal=minimal)
            assert list(violations(message)) == [] and rule_violations(message) == []
            text = codec.to_json(message)
            assert json.loads(text) == reference_to_dict(message)
            assert codec.from_json(text, cls, strict=True) == message
    # Each REQUIRED field left out is named (docs/contract.md §4.3), whichever its kind.
    for cls in (op.request_type, op.response_type):
        required = [fd.json_name for fd in cls.DESCRIPTOR.fields if is_required(fd)]
        assert [v.field for v in violations(cls())] == required
    # The CLI lists it, helps with it, and sends each flag as the JSON mapping has it.
    request = generate(op.request_type, "cli")
    assert main(["operations", "--json"], registry=registry) == 0
    listed = [row["toolName"] for row in json.loads(capsys.readouterr().out)]
    assert listed == [o.tool_name for o in registry.operations()]
    assert main([op.tool_name, "--help"], registry=registry) == 0
    flags, rest = _flags(request)
    helped = capsys.readouterr().out
    assert all(flag.split("=")[0] in helped for flag in flags)
    monkeypatch.setenv("SERVICE_API_KEY", "k")
    monkeypatch.setenv("SERVICE_BACKEND_URL", "http://plant.test")
    argv = [op.tool_name, *flags, "--json-input", json.dumps(rest), "--dry-run"]
    code = main(argv, registry=registry)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert codec.from_json(out.split("\n\n", 1)[1], op.request_type, strict=True) == request
    # The mock responses it with a generated response that keeps every rule, and the runner
    # finds nothing wrong with the mock.
    app = create_mock_app({"k": MockProject("p", {})}, docs=False, registry=registry)
    with serving(app) as url:
        with Client(url, api_key="k") as client:
            response = client.call(op, request, response_type=op.response_type)
        report = run_checks(url, "k", timeout=20, operations=[op])
    assert list(violations(response)) == [] and rule_violations(response) == []
    failed = [c for c in report.checks if c.status == "failed"]
    assert failed == [] and any(c.status == "passed" for c in report.checks)


def test_a_composed_rpc_of_refused_kinds_is_refused_naming_each_field(tmp_path: Path) -> None:
    found = _gates(_planted_image(tmp_path, GET_REFUSED_KINDS, 0))
    # Each refused kind's line names the field that holds it (the Loop: its REQUIRED field).
    fields = {"anything": "GetRefusedKindsRequest.anything", "loop": "GetRefusedKindsLoop.again"}
    expected = [f"limit: projectops.v1.{fields[k.name]}: {k.limit}" for k in REFUSED_KINDS]
    assert sorted(found) == sorted(expected)


def _shape(fd: FieldDescriptor) -> tuple[object, ...]:
    """What kind of field `fd` is: its type, a well-known type's name, repeated or `optional`,
    a map's key type and value kind; not its name, number or messages' names."""
    message = fd.message_type
    if message is not None and message.GetOptions().map_entry:
        fields = message.fields_by_name
        return ("map", fields["key"].type, _shape(fields["value"]))
    known = message.full_name if message and message.full_name.startswith("google.") else None
    return (fd.type, known, fd.is_repeated, fd.has_presence and message is None)


def test_the_composed_rpcs_hold_every_kind_of_the_test_schema(tmp_path: Path) -> None:
    # ECHO_KINDS answers every served kind: the kinds of kinds.proto are all among them.
    pool = contract.load(
        descriptor_pb2.FileDescriptorSet.FromString(_planted_image(tmp_path, ECHO_KINDS, 0))
    )
    composed = {
        _shape(fd) for fd in pool.FindMessageTypeByName("projectops.v1.EchoKindsResponse").fields
    }
    kinds = {
        _shape(fd)
        for message in kinds_pb2.DESCRIPTOR.message_types_by_name.values()
        for fd in message.fields
    }
    assert kinds - composed == set()
