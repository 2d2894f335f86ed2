"""Schema text is data, never code: hostile proto comments through the code generator, the
typed bindings, ``--help`` and ``describe``.

The proto comments become docstrings of the generated ``client/_services.py`` and
``server/_services.py``, the CLI's help and the reference text of ``projectops describe``.
Whoever writes a comment must not be able to run code when a typed method is called, break the
import of the generated modules, drive the reader's terminal, or crash argparse with a ``%``.

The schema here is a scratch copy of ``proto/`` with hostile comments on the service, both rpcs,
a request message and its fields; it is generated in-process (``scripts/codegen.generate``) into
a temporary folder and its modules imported from there. protoc itself refuses a NUL in a
comment, so NUL is tried on the docstring renderer directly.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import dataclasses
import importlib.util
import shutil
import sys
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType

import httpx2
import pytest
from google.protobuf import descriptor_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from projectops import descriptions, registry
from projectops.cli import build_parser, main
from tests.hypothesis_profiles import examples

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import bindings  # noqa: E402
import codegen  # noqa: E402

OPERATIONS_PROTO = Path("projectops/v1/operations.proto")
SERVICE = "projectops.v1.OperationsService"
MARKER_ENV = "PROJECTOPS_TEST_MARKER"

#: Code that creates the marker file if it ever runs. Under the old generator, an rpc comment
#: ending in a backslash made the next rpc's comment (this one) a statement of the first method.
PAYLOAD = f';open(__import__("os").environ["{MARKER_ENV}"],"w") #'
OSC = "\x1b]0;pwned\x07"
#: 200 KB of quotes, triple quotes, backslashes and % in one paragraph.
LONG = ('he said "hi" """ C:\\Users\\me 50% done %(prog)s \\ ' * 5000)[:200_000].strip()

#: Comment text per element (the line it precedes), per case. Lines of a comment are split on
#: "\n"; each becomes one `//` line of the proto.
CASES: dict[str, dict[str, str]] = {
    # Only the pair that made the old generator run a comment as code.
    "code": {
        "rpc ListRumEnvironments": "Lists the environments; ends in a backslash \\",
        "rpc GetReleaseDetails": PAYLOAD,
    },
    "everything": {
        "service OperationsService": (
            f'He said "hi" and """ then C:\\Users\\me %(prog)s, 50% done {OSC}. '
            f'caf\u00e9 \u65e5\u672c \u202eevil ends with a quote "\n\n'
            + "\n".join(LONG[i : i + 90] for i in range(0, len(LONG), 90))
        ),
        "rpc ListRumEnvironments": (
            'List the environments \x1b[2J\x1b[H, 50% done. """ \\" ends in a backslash \\'
        ),
        "rpc GetReleaseDetails": (
            f'Get one release, 50% done, as %(prog)s says. {OSC} C:\\Users\\x "\n{PAYLOAD}'
        ),
        "message GetReleaseDetailsRequest": f'The request """ with {OSC} and a quote "',
        "string version": f'The version %(prog)s 50% done {OSC} \u202e caf\u00e9 "x" C:\\Users\\',
        "ReleaseSummary summary": "\n".join(LONG[i : i + 90] for i in range(0, 20_000, 90)),
    },
}


def _inject(path: Path, element: str, text: str) -> None:
    """Replace the comment above the line starting with `element` by `text`."""
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(element))
    start = at
    while lines[start - 1].strip().startswith("//"):
        start -= 1
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[start:at] = [f"{indent}// {line}" for line in text.split("\n")]
    path.write_text("\n".join(lines), encoding="utf-8")


@dataclass(frozen=True)
class Generated:
    """One hostile schema, generated: its comments and its typed binding modules."""

    comments: dict[str, str]
    client: ModuleType
    server: ModuleType


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=sorted(CASES))
def generated(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Generated:
    case: str = request.param
    root = tmp_path_factory.mktemp(f"schema-{case}")
    shutil.copytree(REPO / "proto", root / "proto")
    for element, text in CASES[case].items():
        _inject(root / "proto" / OPERATIONS_PROTO, element, text)
    out = root / "out"
    codegen.generate(root / "proto", out)
    files = descriptor_pb2.FileDescriptorSet.FromString(
        (out / "projectops/v1/projectops.binpb").read_bytes()
    )
    found = descriptions.comments(files)
    # The comments arrived whole: the test is about these characters.
    for element, text in CASES[case].items():
        if element.startswith("rpc "):
            assert found[f"{SERVICE}.{element[4:]}"] == " ".join(text.split("\n"))
    modules = out / "bindings/projectops"
    return Generated(
        found,
        _load(modules / "client/_services.py", f"_hostile_client_{case}"),
        _load(modules / "server/_services.py", f"_hostile_server_{case}"),
    )


def _unwrap(doc: str | None) -> str:
    """The text of a generated docstring: its wrapped lines joined again (one space), its
    paragraphs separated by a blank line, the indentation gone."""
    assert doc is not None
    lines = [line.lstrip(" ") for line in doc.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line:
            paragraphs[-1].append(line)
        else:
            paragraphs.append([])
    return "\n\n".join(" ".join(p) for p in paragraphs)


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "marker"
    monkeypatch.setenv(MARKER_ENV, str(path))
    yield path
    assert not path.exists(), "a proto comment ran as code"


def _answer_empty(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={})


def test_typed_methods_run_no_comment(generated: Generated, marker: Path) -> None:
    mod = generated.client
    with mod.OperationsServiceClient(
        base_url="http://127.0.0.1:9", api_key="k", transport=httpx2.MockTransport(_answer_empty)
    ) as client:
        client.list_rum_environments()
        client.get_release_details(version="1.0.0")

    async def both() -> None:
        async with mod.AsyncOperationsServiceClient(
            base_url="http://127.0.0.1:9",
            api_key="k",
            transport=httpx2.MockTransport(_answer_empty),
        ) as client:
            await client.list_rum_environments()
            await client.get_release_details(version="1.0.0")

    asyncio.run(both())
    assert not marker.exists()


def test_docstrings_are_the_comments(generated: Generated) -> None:
    rpcs = {
        "list_rum_environments": "ListRumEnvironments",
        "get_release_details": "GetReleaseDetails",
    }
    service_doc = generated.comments.get(SERVICE, "")
    for cls in (
        generated.client.OperationsServiceClient,
        generated.client.AsyncOperationsServiceClient,
        generated.server.OperationsServiceHandler,
    ):
        if service_doc:
            assert _unwrap(cls.__doc__).startswith(service_doc + "\n\n")
        for method, rpc in rpcs.items():
            # The comment, then the generator's own Args/Returns/Raises sections.
            doc = _unwrap(getattr(cls, method).__doc__)
            assert doc.startswith(generated.comments[f"{SERVICE}.{rpc}"] + "\n\nArgs:")


def test_generated_sources_hold_no_raw_control_characters(generated: Generated) -> None:
    for module in (generated.client, generated.server):
        assert module.__file__ is not None
        assert _unsafe_characters(Path(module.__file__).read_text(encoding="utf-8")) == []


def test_generate_refuses_bindings_that_do_not_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scripts/generate` and `--check` compile what they generate: a broken module fails them
    (it would otherwise be written, or called "current" when the committed copy is as broken)."""
    broken = dict(codegen.BINDINGS)
    broken["projectops/server/_services.py"] = lambda files, package: 'x = """\\"""\n'
    monkeypatch.setattr(codegen, "BINDINGS", broken)
    with pytest.raises(SystemExit) as exit_info:
        codegen.generate(REPO / "proto", tmp_path)
    assert "does not compile" in str(exit_info.value.code)
    assert "server/_services.py" in str(exit_info.value.code)


@pytest.mark.slow
def test_generate_refuses_bindings_that_compile_but_do_not_import(tmp_path: Path) -> None:
    """The check imports what it generated in a fresh interpreter: a module that compiles but
    fails on import (here: a name error at module level) is refused; the real output imports."""
    out = tmp_path / "out"
    codegen.generate(REPO / "proto", out)
    assert codegen.import_errors(REPO / "src", out) is None
    broken = out / "bindings" / "projectops" / "server" / "_services.py"
    broken.write_text(broken.read_text() + "\nnot_defined_anywhere\n")
    problem = codegen.import_errors(REPO / "src", out)
    assert problem is not None and "not_defined_anywhere" in problem


# --- the docstring renderer on any text, NUL included ------------------------------------------

NASTY = [
    "",
    "\\",
    '"',
    '""',
    '"""',
    '""""',
    'a"',
    '\\"',
    "\\\\",
    "C:\\Users\\new\\x41",
    "\\N{BULLET} \\u0041 \\x00",
    "nul \x00 here",
    "cr \r and \x0b \x0c \x1c \x85 \u2028 \u2029 tab\there",
    "lone \ud800 surrogate",
    "{braces} {{}} %(prog)s %s 50% done",
    "'''",
    "' \" ' \"",
    '"first',
    "x" * 500,
    "word " * 100 + '"',
    "two  spaces  and\t\ttabs " * 30,
    "\u202e\u200b\ufeff bidi and zero width",
    "emoji \U0001f600 and \U000e0041",
]


def _check_docstring(text: str, indent: str = "        ") -> None:
    lines = bindings._docstring(text, indent)
    source = "\n".join(lines)
    # Valid Python, one expression statement that is a string constant: nothing runs.
    tree = ast.parse(f"def f():\n{source}\n")
    body = tree.body[0].body  # type: ignore[attr-defined]
    assert len(body) == 1 and isinstance(body[0], ast.Expr)
    assert isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)
    assert _unsafe_characters(source) == []
    value = ast.literal_eval(source.strip(" "))
    if "\n" in value:
        value = value.removesuffix("\n" + indent).replace("\n" + indent, "\n")
    got = "\n\n".join(p.replace("\n", " ") for p in value.split("\n\n"))
    assert got == (text or "(no description in the proto)")


@pytest.mark.parametrize("text", NASTY)
def test_docstring_literal_reads_back_as_the_text(text: str) -> None:
    _check_docstring(text)
    _check_docstring(f"{text}\n\nsecond paragraph {text}", "    ")


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_characters="[")))
def test_docstring_literal_reads_back_as_any_comment(raw: str) -> None:
    # `[` left out: a cross-reference's text may start with a space, which the unwrapping
    # here cannot tell from indentation; the renderer's own round-trip check still covers it.
    _check_docstring(descriptions._clean(raw))


def test_todays_docstrings_are_unchanged() -> None:
    """Comments that need no escaping render as before: readable, no escapes added."""
    text = "A plain comment with `code`, quotes \"like this\" and 'this'. " * 4
    lines = bindings._docstring(text.strip(), "        ")
    assert "\\" not in "\n".join(lines)


# --- --help and describe ---------------------------------------------------------------------


def _unsafe_characters(text: str) -> list[str]:
    return [
        c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp", "Cs"}
    ]


@pytest.fixture
def hostile_cli(
    generated: Generated, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[[list[str]], str]:
    """Run the CLI in-process with the hostile comments as the schema's documentation; returns
    stdout (asserting exit 0 and an empty stderr)."""
    monkeypatch.setattr(descriptions, "_comments", lambda: generated.comments)
    ops = {
        name: dataclasses.replace(op, description=descriptions.description(op.method))
        for name, op in registry.REGISTRY._by_name.items()
    }
    keys = {key: op for op in ops.values() for key in (op.name, op.tool_name, op.path)}
    monkeypatch.setattr(registry.REGISTRY, "_by_name", MappingProxyType(ops))
    monkeypatch.setattr(registry.REGISTRY, "_by_key", MappingProxyType(keys))
    monkeypatch.setenv("COLUMNS", "100")

    def run(argv: list[str]) -> str:
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert err == ""
        return out

    return run


def _commands() -> list[str]:
    sub = next(
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    return sorted(sub.choices)


@pytest.mark.parametrize("command", [None, *_commands()])
def test_help_shows_comments_as_data(
    hostile_cli: Callable[[list[str]], str], generated: Generated, command: str | None
) -> None:
    out = hostile_cli(["--help"] if command is None else [command, "--help"])
    assert _unsafe_characters(out) == []
    if (
        command == "get-release-details"
        and OSC in generated.comments[f"{SERVICE}.GetReleaseDetails"]
    ):
        text = " ".join(out.split())
        # The description and the field's help show their % as written, and the OSC as text.
        assert "Get one release, 50% done, as %(prog)s says. \\x1b]0;pwned\\x07" in text
        assert "The version %(prog)s 50% done \\x1b]0;pwned\\x07 \\u202e" in text
        assert "%%" not in out


@pytest.mark.parametrize("tool", [None, "list-rum-environments", "get-release-details"])
def test_describe_shows_comments_as_data(
    hostile_cli: Callable[[list[str]], str], generated: Generated, tool: str | None
) -> None:
    out = hostile_cli(["describe"] if tool is None else ["describe", tool])
    assert _unsafe_characters(out) == []
    if tool == "get-release-details" and OSC in generated.comments[f"{SERVICE}.GetReleaseDetails"]:
        text = " ".join(out.split())
        assert "as %(prog)s says. \\x1b]0;pwned\\x07 C:\\Users\\x" in text
        assert 'The request """ with \\x1b]0;pwned\\x07 and a quote' in text
        assert "The version %(prog)s 50% done \\x1b]0;pwned\\x07 \\u202e" in text


def test_operations_lists_summaries_as_data(
    hostile_cli: Callable[[list[str]], str], generated: Generated
) -> None:
    out = hostile_cli(["operations"])
    assert _unsafe_characters(out) == []
    if "\x1b[2J" in generated.comments[f"{SERVICE}.ListRumEnvironments"]:
        assert "List the environments \\x1b[2J\\x1b[H, 50% done." in out
