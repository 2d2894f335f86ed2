"""Every code block of README.md and docs/*.md runs as written, and every Python block passes
plain mypy.

What a block is, is in its info string (```` ```python test ````: language, then tags):

- ``python``: a script, run from a work folder of the page with ``SERVICE_BACKEND_URL`` and
  ``SERVICE_API_KEY`` naming the session's mock server; ``python file=NAME``: written into that
  folder as NAME (imported by the page's later blocks); ``python test``: a pytest module, run
  by pytest with the plugin, as a user's test.
- ``sh``: run by ``bash -e -o pipefail`` in the work folder with the venv's programs on PATH
  (``sh repo``: from the repository's root); what it leaves running is killed after it.
  A block runs as written but on ports the OS just gave: each documented port (8787, 8000,
  8765) in its text is replaced by a free one, so the blocks of two checkouts' suites (or of one
  suite's workers) never meet on one port and nothing else listening there gets in the way.
- ``json``, ``yaml``: parsed; ``nginx``: each directive ends with ``;``.

The blocks of one page share its work folder and run in the page's order.

README.md is read as a reader follows it: its blocks run one after another in one shell, from a
fresh copy of the repository, starting with its set-up (``./scripts/demo``, which makes the
copy's own ``.venv``): a ``python`` block is piped to ``python``, a ``python file=NAME`` block
is saved as NAME, and what one block starts (the mock server) serves the next ones; its
documented ports are replaced by free ones, as above.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.loopback import free_port

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.M | re.S)
_PORTS = re.compile(r"\b(8787|8000|8765)\b")
_RUN_TIMEOUT = 120
# A block that starts one of these listens: it must name its port for _on_free_ports to move it.
_LISTENS = re.compile(r"projectops (mock-server|proxy|mcp --http)|uvicorn ")


@dataclass(frozen=True)
class Block:
    page: Path
    index: int
    lang: str
    tags: tuple[str, ...]
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}#{self.index}-{self.lang}"

    def tag(self, name: str) -> str | None:
        return next((t.split("=", 1)[1] for t in self.tags if t.startswith(name + "=")), None)


def blocks(page: Path) -> list[Block]:
    found = []
    for i, match in enumerate(_FENCE.finditer(page.read_text(encoding="utf-8"))):
        lang, *tags = match.group(1).split() or ["text"]
        found.append(Block(page, i, lang, tuple(tags), match.group(2)))
    return found


ALL = [block for page in PAGES for block in blocks(page)]
PYTHON = [b for b in ALL if b.lang == "python"]


def test_every_block_is_of_a_kind_this_test_runs() -> None:
    assert {b.lang for b in ALL} <= {"python", "sh", "json", "yaml", "nginx"}, [
        b.id for b in ALL if b.lang not in {"python", "sh", "json", "yaml", "nginx"}
    ]
    assert len(PAGES) >= 8 and len(ALL) > 20  # the walk found the pages


def test_the_readme_is_short_and_links_the_docs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    linked = set(re.findall(r"\]\((docs/[a-z_-]+\.md)\)", readme))
    assert len(linked) >= 5
    assert all((REPO / link).is_file() for link in linked)


@pytest.mark.parametrize(
    "block", [b for b in ALL if b.lang in ("json", "yaml", "nginx")], ids=lambda b: b.id
)
def test_data_block_parses(block: Block) -> None:
    if block.lang == "json":
        json.loads(block.code)
    elif block.lang == "yaml":
        assert yaml.safe_load(block.code)
    else:
        lines = [line.split("#")[0].strip() for line in block.code.splitlines()]
        assert all(line.endswith(";") for line in lines if line), block.code


def _workdir(tmp_path_factory: pytest.TempPathFactory, page: Path) -> Path:
    return tmp_path_factory.getbasetemp() / f"docs-{page.stem}"


def _prepare(block: Block, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's work folder with every ``file=`` block of the page written into it."""
    work = _workdir(tmp_path_factory, block.page)
    work.mkdir(parents=True, exist_ok=True)
    for other in blocks(block.page):
        if name := other.tag("file"):
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(other.code, encoding="utf-8")
    return work


def _env(work: Path, base_url: str) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(work),
        "SERVICE_BACKEND_URL": base_url,
        "SERVICE_API_KEY": "demo-key",
    }


def _on_free_ports(code: str) -> str:
    """`code` as written, with each documented port (8787, 8000, 8765) replaced by a port the OS
    gave a moment ago, the same one for every mention of it."""
    ports = {port: str(free_port()) for port in set(_PORTS.findall(code))}
    return _PORTS.sub(lambda match: ports[match.group(1)], code)


def test_every_block_that_starts_a_server_names_its_port() -> None:
    """A server started on its default port would not be moved by _on_free_ports."""
    for block in ALL:
        for line in block.code.splitlines():
            if _LISTENS.search(line.split("#")[0]):
                assert _PORTS.search(line), f"{block.id}: {line}"


def test_the_documented_ports_are_replaced_everywhere_by_one_free_port_each() -> None:
    code = "serve --port 8787 &\ncall http://127.0.0.1:8787/x and :8000 # 87870 18000"
    moved = re.fullmatch(
        r"serve --port ([0-9]+) &\ncall http://127\.0\.0\.1:([0-9]+)/x and :([0-9]+) # 87870 18000",
        _on_free_ports(code),
    )
    assert moved is not None  # other numbers stay as written
    mock, called, other = moved.groups()
    assert mock == called != "8787" and other != "8000"


def _run(args: list[str], work: Path, env: dict[str, str]) -> None:
    """Run `args` in its own session; whatever it left running (``cmd &``) is killed after it."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            args, cwd=work, env=env, stdout=out, stderr=out, start_new_session=True
        )
        try:
            returncode = proc.wait(timeout=_RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.seek(0)
        assert returncode == 0, out.read()


README = REPO / "README.md"
# README.md's blocks run in order in one shell (test_the_readme_runs_in_order), not one by one.
RUNNABLE = [
    b
    for b in ALL
    if b.page != README and (b.lang == "sh" or (b.lang == "python" and not b.tag("file")))
]


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.id)
def test_block_runs_as_written(
    block: Block, mock_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = _prepare(block, tmp_path_factory)
    env = _env(work, mock_server.base_url)
    if "repo" in block.tags:  # a block about the repository itself (./scripts/...)
        work = REPO
    if block.lang == "sh":
        _run(["bash", "-e", "-o", "pipefail", "-c", _on_free_ports(block.code)], work, env)
    elif "test" in block.tags:
        test = work / f"test_{block.page.stem}_{block.index}.py"
        test.write_text(block.code, encoding="utf-8")
        _run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test.name],
            work,
            env,
        )
    else:
        _run([sys.executable, "-c", block.code], work, env)


@pytest.mark.slow
@pytest.mark.parametrize(
    "page", [p for p in PAGES if any(b.page == p for b in PYTHON)], ids=lambda p: p.name
)
def test_every_python_block_passes_plain_mypy(page: Path, tmp_path: Path) -> None:
    names = []
    for block in (b for b in PYTHON if b.page == page):
        name = block.tag("file") or f"block_{block.index}.py"
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(block.code, encoding="utf-8")
        names.append(name)
    cache = REPO / ".mypy_cache" / "docs"
    args = ["--config-file", os.devnull, "--python-version", "3.11", "--cache-dir", str(cache)]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", *args, "--explicit-package-bases", *names],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _table(page: Path, header: str) -> list[list[str]]:
    text = page.read_text(encoding="utf-8")
    lines = text[text.index(header) :].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_contracts_error_tables_agree_with_the_code() -> None:
    """§5.2 is HTTP_STATUS_BY_CODE row for row, and every response of the adapter's own table
    (``error_cases.ERROR_CASES``) is a row of §5.2 or, outside the table, of §5.4."""
    import projectops
    from projectops.error_cases import ERROR_CASES

    contract = REPO / "docs" / "contract.md"
    codes = {row[0].strip("`"): int(row[1]) for row in _table(contract, "| code | status |")}
    assert codes == {code.value: status for code, status in projectops.HTTP_STATUS_BY_CODE.items()}
    outside = {
        (int(row[1][:3]), row[2].strip("`"))
        for row in _table(contract, "| situation | status | body's code |")
    }
    for case in ERROR_CASES:
        assert (
            codes[case.code.value] == case.http_status
            or (case.http_status, case.code.value) in outside
        )


_HEREDOC_END = "PROJECTOPS_README_BLOCK_END"


def readme_script(page: Path) -> str:
    """The page's blocks as one bash script, as a reader pastes them into one shell: ``sh`` as
    written, ``python`` piped to ``python``, ``python file=NAME`` saved as NAME; data blocks
    (an agent host's configuration) are read, not run."""
    parts = []
    for block in blocks(page):
        assert _HEREDOC_END not in block.code
        if block.lang == "sh":
            parts.append(block.code)
        elif block.lang == "python" and (name := block.tag("file")):
            parts.append(f"cat > {name} <<'{_HEREDOC_END}'\n{block.code}{_HEREDOC_END}\n")
        elif block.lang == "python":
            parts.append(f"python - <<'{_HEREDOC_END}'\n{block.code}{_HEREDOC_END}\n")
    return "\n".join(parts)


def test_the_readme_script_holds_every_runnable_block() -> None:
    script = readme_script(README)
    runnable = [b for b in blocks(README) if b.lang in ("sh", "python")]
    assert runnable and all(b.code in script for b in runnable)
    assert script.index("./scripts/demo") < script.index("projectops mock-server")


def _fresh_copy(target: Path) -> None:
    """The repository's files as a clone of this tree holds them (tracked and new, not ignored),
    so the README runs against the tree under test, without its .venv."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.mark.slow
def test_the_readme_runs_in_order(tmp_path: Path) -> None:
    """From a fresh copy: ./scripts/demo (a new .venv, pip), then every block in one shell."""
    copy = tmp_path / "projectops"
    _fresh_copy(copy)
    # The reader's shell: no venv of ours on PATH, none of the service's variables set.
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not p.startswith(str(REPO))
    )
    drop = {"VIRTUAL_ENV", "PYTHONPATH", "SERVICE_BACKEND_URL", "SERVICE_API_KEY"}
    env = {k: v for k, v in os.environ.items() if k not in drop} | {"PATH": path}
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", _on_free_ports(readme_script(README))],
            cwd=copy,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
        try:
            returncode = proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.seek(0)
        output = out.read()
    assert returncode == 0, output[-6000:]
    assert "1 passed" in output  # the pytest block ran the test it saved
