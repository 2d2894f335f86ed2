"""The mock server: ``projectops mock-server``, every operation of the registry from fixtures.

Usage::

    projectops mock-server [--host 127.0.0.1] [--port 8787] [--fixtures FILE] [--access-log]

It serves :func:`projectops.server.create_app` with uvicorn on ``--host``/``--port`` (default
``127.0.0.1:8787``, the client's default base URL; ``--port 0`` lets the OS pick one). Once the
port accepts connections it prints one line to stderr,
``projectops mock server listening on http://HOST:PORT``, and nothing else unless a request
fails inside the server (logged with its traceback) or ``--access-log`` is given. SIGINT (Ctrl-C)
and SIGTERM stop it; the exit code is then 0. A bad fixtures file stops it before it listens,
with exit code 2 and one line on stderr naming the file and the field path; a port it cannot
bind gives exit code 1.

Fixture format (``--fixtures FILE``; without it, the embedded ``fixtures/default.json``, whose
projects are ``demo`` with key ``demo-key`` and ``other`` with key ``other-key``). A JSON object::

    {
      "projects": [
        {
          "project": "demo",
          "apiKey": "demo-key",
          "operations": {
            "list_rum_environments": [{"request": {}, "response": {"environments": []}}],
            "get_release_details": [
              {"request": {"version": "1.0.0"}, "response": {"summary": {}}}
            ]
          }
        }
      ]
    }

- ``projects`` (required, a list): one entry per project.
- ``project`` (required, non-empty string): the project's name, unique in the file; it appears in
  error messages.
- ``apiKey`` (required, non-empty string): the key that selects the project; unique in the file.
  The server never prints it.
- ``operations`` (optional, an object; default ``{}``): operation name (snake_case, as in the
  registry) -> list of answers. An operation a project lists no answers for answers no request.
- Each answer is an object with ``request`` (optional, default ``{}``) and ``response``
  (required), both in the protobuf JSON mapping of the operation's request and response
  messages, decoded strictly: an unknown field, an unknown enum name or a value of the wrong
  type is an error. The ``request`` must also pass the REQUIRED-field validation, and two answers
  of one operation must not have the same request.
- No other keys are allowed at any level.

Matching: a request is decoded and validated like any request of the adapter, then the
surrounding white space of each of its strings is removed (the spec trims the version) and it is
compared with each answer's request, normalised the same way; the equal one's response is the
answer. When none is equal, the answer is 400 ``failed_precondition``, e.g.
``project demo has no get_release_details answer for version "9.9.9"``.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar
from urllib.parse import urlsplit

import uvicorn
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from starlette.applications import Starlette

from projectops._wire import is_map
from projectops.codec import from_json, to_dict
from projectops.conventions import DEFAULT_BASE_URL
from projectops.errors import FailedPrecondition, InvalidArgument
from projectops.registry import Operation, operations
from projectops.server.asgi import Handler, create_app
from projectops.validation import validate

__all__ = ["FixtureError", "MockProject", "create_mock_app", "load_fixtures", "main",
           "parse_fixtures"]

M = TypeVar("M", bound=Message)

#: Name of the embedded fixtures in messages.
DEFAULT_FIXTURES_NAME = "default fixtures"
_DEFAULT_HOST = urlsplit(DEFAULT_BASE_URL).hostname or "127.0.0.1"
_DEFAULT_PORT = urlsplit(DEFAULT_BASE_URL).port or 8787


class FixtureError(ValueError):
    """A fixtures file is unreadable or invalid; the message names the file and the field path."""


@dataclass(frozen=True)
class MockProject:
    """One project of the fixtures.

    Attributes:
        name: the project's name (``"demo"``).
        answers: operation name -> {normalised request, serialised deterministically -> response}.
    """

    name: str
    answers: Mapping[str, Mapping[bytes, Message]]

    def __repr__(self) -> str:  # no key is held, but keep reprs short
        return f"MockProject({self.name!r})"


def load_fixtures(path: str | Path | None = None) -> dict[str, MockProject]:
    """Read and check a fixtures file (the module docstring gives its format).

    Args:
        path: the file; ``None`` reads the embedded default fixtures.

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        FixtureError: the file cannot be read, is not JSON, or breaks the format; the message is
            one line, ``<file>: <field path>: <what is wrong>``.
    """
    if path is None:
        name = DEFAULT_FIXTURES_NAME
        text = resources.files(__package__).joinpath("fixtures", "default.json").read_text(
            encoding="utf-8")
    else:
        name = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise FixtureError(f"{name}: cannot read the file: {reason}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FixtureError(f"{name}: not valid JSON: {exc}") from None
    try:
        return parse_fixtures(data)
    except FixtureError as exc:
        raise FixtureError(f"{name}: {exc}") from None


def parse_fixtures(data: Any) -> dict[str, MockProject]:
    """Check parsed fixtures (see :func:`load_fixtures`); API key -> project.

    Raises:
        FixtureError: ``<field path>: <what is wrong>``, e.g.
            ``projects[0].operations.get_release_details[0].request.version: is required``.
    """
    by_name = {op.name: op for op in operations()}
    top = _object(data, "", {"projects"}, required={"projects"})
    projects_list = _list(top["projects"], "projects")
    by_key: dict[str, MockProject] = {}
    key_index: dict[str, int] = {}
    names: dict[str, int] = {}
    for i, item in enumerate(projects_list):
        path = f"projects[{i}]"
        entry = _object(item, path, {"project", "apiKey", "operations"},
                        required={"project", "apiKey"})
        name = _text(entry["project"], f"{path}.project")
        key = _text(entry["apiKey"], f"{path}.apiKey")
        if name in names:
            raise FixtureError(f"{path}.project: duplicate of projects[{names[name]}].project")
        if key in key_index:
            # Say where the other one is, never what the key is.
            raise FixtureError(f"{path}.apiKey: duplicate of projects[{key_index[key]}].apiKey")
        names[name] = key_index[key] = i
        ops = _object(entry.get("operations", {}), f"{path}.operations", None)
        answers: dict[str, Mapping[bytes, Message]] = {}
        for op_name, op_answers in ops.items():
            op_path = f"{path}.operations.{op_name}"
            op = by_name.get(op_name)
            if op is None:
                raise FixtureError(f"{op_path}: unknown operation {op_name!r}; known operations: "
                                   f"{', '.join(by_name)}")
            answers[op_name] = _answers(op, op_answers, op_path)
        by_key[key] = MockProject(name=name, answers=answers)
    return by_key


def _answers(op: Operation, value: Any, path: str) -> dict[bytes, Message]:
    found: dict[bytes, Message] = {}
    index: dict[bytes, int] = {}
    for j, item in enumerate(_list(value, path)):
        answer_path = f"{path}[{j}]"
        answer = _object(item, answer_path, {"request", "response"}, required={"response"})
        request = _decode(answer.get("request", {}), op.request_type, f"{answer_path}.request")
        try:
            validate(request)
        except InvalidArgument as exc:
            raise _at(f"{answer_path}.request", exc) from None
        response = _decode(answer["response"], op.response_type, f"{answer_path}.response")
        wanted = _key(request)
        if wanted in index:
            raise FixtureError(
                f"{answer_path}.request: the same request as {path}[{index[wanted]}]")
        index[wanted] = j
        found[wanted] = response
    return found


def _decode(value: Any, message_type: type[M], path: str) -> M:
    if not isinstance(value, dict):
        raise FixtureError(f"{path}: expected a JSON object, got {_kind(value)}")
    try:
        return from_json(value, message_type, strict=True)
    except InvalidArgument as exc:
        raise _at(path, exc) from None


def _at(path: str, exc: InvalidArgument) -> FixtureError:
    """The error of a codec/validation failure, with its field paths under `path`."""
    parts = [f"{path}.{v.field}: {v.description}" if v.field else f"{path}: {v.description}"
             for v in exc.violations]
    return FixtureError("; ".join(parts) or f"{path}: {exc.message}")


def _object(value: Any, path: str, allowed: Collection[str] | None, *,
            required: Collection[str] = ()) -> dict[str, Any]:
    where = path or "the top level"
    if not isinstance(value, dict):
        raise FixtureError(f"{where}: expected a JSON object, got {_kind(value)}")
    for key in value:
        if allowed is not None and key not in allowed:
            raise FixtureError(f"{_join(path, key)}: unknown key; expected one of "
                               f"{', '.join(sorted(allowed))}")
    for key in sorted(required):
        if key not in value:
            raise FixtureError(f"{_join(path, key)}: is required")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise FixtureError(f"{path}: expected a JSON list, got {_kind(value)}")
    return value


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FixtureError(f"{path}: expected a non-empty string, got {_kind(value)}")
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    return "a list" if isinstance(value, list) else "an object"


def _normalized(message: M) -> M:
    """A copy of `message` with surrounding white space removed from every string in it."""
    copy = type(message)()
    copy.CopyFrom(message)
    _strip(copy)
    return copy


def _strip(message: Message) -> None:
    for fd, value in message.ListFields():
        if fd.type == FieldDescriptor.TYPE_STRING:
            if fd.is_repeated:
                stripped = [item.strip() for item in value]
                del value[:]
                value.extend(stripped)
            else:
                setattr(message, fd.name, value.strip())
        elif fd.message_type is None:
            continue
        elif is_map(fd):
            value_fd = fd.message_type.fields_by_name["value"]
            for map_key in list(value):
                if value_fd.message_type is not None:
                    _strip(value[map_key])
                elif value_fd.type == FieldDescriptor.TYPE_STRING:
                    value[map_key] = value[map_key].strip()
        elif fd.is_repeated:
            for item in value:
                _strip(item)
        else:
            _strip(value)


def _key(request: Message) -> bytes:
    return _normalized(request).SerializeToString(deterministic=True)


def _describe(request: Message) -> str:
    """``version "9.9.9"`` for the fields set in `request`; ``the empty request`` for none."""
    shown = {fd.json_name for fd, _ in request.ListFields()}
    as_json = to_dict(request)
    parts = [f"{name} {json.dumps(as_json[name], ensure_ascii=False)}"
             for name in as_json if name in shown]
    return ", ".join(parts) or "the empty request"


def _handler(op: Operation) -> Handler[MockProject]:
    async def handle(project: MockProject, request: Message) -> Message:
        normalized = _normalized(request)
        response = project.answers.get(op.name, {}).get(
            normalized.SerializeToString(deterministic=True))
        if response is None:
            raise FailedPrecondition(
                f"project {project.name} has no {op.name} answer for {_describe(normalized)}")
        return response

    return handle


def create_mock_app(projects: Mapping[str, MockProject]) -> Starlette:
    """The mock server's app: every registry operation answered from `projects` (key -> project).

    Requests are checked exactly as :func:`projectops.server.create_app` checks them (the mock is
    built on it); see the module docstring for how an answer is chosen.
    """

    async def authenticate(api_key: str) -> MockProject | None:
        return projects.get(api_key)

    return create_app({op.name: _handler(op) for op in operations()}, authenticate)


class _Server(uvicorn.Server):
    """uvicorn's server, except that a stop signal is not re-raised after the clean shutdown.

    uvicorn re-raises SIGINT/SIGTERM once it has stopped, which would end the process with the
    signal's status (or a KeyboardInterrupt); the mock server exits 0 instead.
    """

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: stop waiting for open connections
        else:
            self.should_exit = True


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="projectops mock-server",
        description="Serve every operation of the API from fixtures, for tests and demos. "
                    "Stop it with Ctrl-C or SIGTERM.")
    parser.add_argument("--host", default=_DEFAULT_HOST,
                        help=f"address to listen on (default: {_DEFAULT_HOST})")
    parser.add_argument("--port", type=_port, default=_DEFAULT_PORT,
                        help="TCP port to listen on; 0 picks a free one "
                             f"(default: {_DEFAULT_PORT})")
    parser.add_argument("--fixtures", metavar="FILE",
                        help="JSON fixtures file (format: see `pydoc projectops.server.mock`); "
                             "default: the embedded demo fixtures (keys demo-key, other-key)")
    parser.add_argument("--access-log", action="store_true",
                        help="log one line per request to stderr")
    return parser


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a TCP port from 0 to 65535, got {text!r}")
    return port


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (IPv4 or IPv6, whichever the host resolves to)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``projectops mock-server`` with `argv` (without the command name); the exit code.

    Returns 0 after a stop signal, 2 for bad arguments or a bad fixtures file, 1 when the
    address cannot be bound or the server fails to start.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage and the error (or the help)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        projects = load_fixtures(args.fixtures)
    except FixtureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        sock = _listen(args.host, args.port)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    config = uvicorn.Config(create_mock_app(projects), log_level="warning",
                            access_log=args.access_log, lifespan="off")
    if args.access_log:
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    server = _Server(config)
    # The socket already listens: connections made from now on wait in its backlog.
    print(f"projectops mock server listening on {_url(sock)}", file=sys.stderr, flush=True)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # a Ctrl-C before uvicorn took the signal over
        pass
    finally:
        sock.close()
    return 0 if server.started or server.should_exit else 1
