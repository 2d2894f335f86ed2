"""Fixtures served: the exact answer (by :func:`~projectops.fixtures.request_key`), else the
first partial one in file order whose set fields the request holds (docs/mock.md). Indexed
once, so a request costs one lookup per distinct set of partial names, never a scan."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn

from google.protobuf.message import Message

from projectops import fixtures
from projectops._text import cut_to_width
from projectops.codec import to_json
from projectops.errors import ERROR_CLASSES, ApiError, Code, FailedPrecondition
from projectops.fixtures import FixtureError, FixtureResponse, request_key, trimmed
from projectops.mock._generate import generated_response
from projectops.registry import Operation
from projectops.v1.error_pb2 import ErrorResponse

__all__ = ["Call", "MockProject", "Reply", "load_fixtures"]

_SHOWN_CHARS = 60
# The partial responses of one operation: names a partial answer sets -> their values' JSON -> its
# index.
_Partial = dict[tuple[str, ...], dict[str, int]]


@dataclass(frozen=True)
class Call:
    """One request that reached a response of the mock.

    Attributes:
        operation: the operation's name, ``get_release_details``.
        request: the decoded request message.
    """

    operation: str
    request: Message


@dataclass(frozen=True)
class Reply:
    """What a request gets: `body` (UTF-8 JSON) or `error`, after `delay` seconds."""

    body: bytes
    error: ApiError | None = None
    delay: float = 0.0


class MockProject:
    """One project of the mock: its scripted answers, matched to requests by index (docs/mock.md).

    Args:
        name: the project's name (``context.project`` of the mock's calls).
        scenario: operation name -> its responses, in the file's order; the first that matches
            answers (exact answers before partial ones).
        generate: an operation without answers in `scenario` gets a generated response; ``True``
            by default. ``False``: 400 ``failed_precondition``.
        calls: a list each answered request is appended to, as a :class:`Call`; ``None`` (the
            default): calls are not noted.
    """

    def __init__(
        self,
        name: str,
        scenario: Mapping[str, tuple[FixtureResponse, ...]],
        generate: bool = True,
        calls: list[Call] | None = None,
    ) -> None:
        self.name = name
        self.scenario = scenario
        self.generate = generate
        self.calls = calls
        # Operation -> an exact response's request key -> its index.
        self._exact: dict[str, dict[str, int]] = {}
        # Operation -> its partial answers.
        self._partial: dict[str, _Partial] = {}
        self._encoded: dict[tuple[str, int], bytes] = {}
        for op_name, answers in scenario.items():
            exact: dict[str, int] = {}
            partial: _Partial = {}
            self._exact[op_name] = exact
            self._partial[op_name] = partial
            for i, answer in enumerate(answers):
                if answer.partial:
                    set_fields = answer.request.ListFields()
                    names = tuple(fd.json_name for fd, _ in set_fields)
                    values = _values(json.loads(answer.key), names)  # trimmed JSON
                    by_value = partial.setdefault(names, {})
                    by_value.setdefault(values or "", i)
                else:
                    exact.setdefault(answer.key, i)

    def reply(self, op: Operation, request: Message) -> Reply:
        """What a request to this project gets.

        Args:
            op: the operation called.
            request: the decoded, validated request.

        Returns:
            The matching answer (its JSON encoded once and kept), or a generated one when the
            project lists no response of `op` and `generate` holds.

        Raises:
            projectops.FailedPrecondition: no response matches the request.
        """
        if self.calls is not None:
            self.calls.append(Call(op.name, request))
        found = self._find(op, request)
        if found is None:
            generated = generated_response(op, request)
            return Reply(to_json(generated).encode())
        answer = self.scenario[op.name][found]
        if answer.error is not None:
            return Reply(b"", _error(answer.error), answer.delay)
        body = self._encoded.get((op.name, found))
        if body is None:
            body = to_json(answer.response).encode()
            self._encoded[(op.name, found)] = body
        return Reply(body, None, answer.delay)

    def _find(self, op: Operation, request: Message) -> int | None:
        if not self.scenario.get(op.name):
            if self.generate:
                return None
            self._no_response(op, request)
        found = self._exact[op.name].get(request_key(request))
        if found is None:
            found = self._find_partial(op, request)
        if found is None:
            self._no_response(op, request)
        return found

    def _find_partial(self, op: Operation, request: Message) -> int | None:
        """The first partial answer, in file order, whose set fields `request` holds."""
        data = trimmed(request)
        hits = []
        for names, by_value in self._partial[op.name].items():
            key = _values(data, names)
            if key is None:
                continue
            hit = by_value.get(key)
            if hit is not None:
                hits.append(hit)
        return min(hits, default=None)

    def _no_response(self, op: Operation, request: Message) -> NoReturn:
        data = trimmed(request)
        set_fields = [fd.json_name for fd, _ in request.ListFields()]
        shown = ", ".join(f"{name} {_shown(data[name])}" for name in set_fields)
        what = shown or "the empty request"
        raise FailedPrecondition(f"project {self.name} has no {op.name} answer for {what}")


def _values(data: Mapping[str, object], names: tuple[str, ...]) -> str | None:
    if not all(name in data for name in names):
        return None
    values = [data[name] for name in names]
    return json.dumps(values, sort_keys=True, ensure_ascii=False)


def _shown(value: object) -> str:
    return cut_to_width(json.dumps(value), _SHOWN_CHARS)


def _error(error: ErrorResponse) -> ApiError:
    error_class = ERROR_CLASSES[Code(error.code)]
    return error_class(error.message, error.violations)


def load_fixtures(
    path: str | os.PathLike[str] | None = None, *, generate: bool = True
) -> dict[str, MockProject]:
    """The projects of a fixtures file, by API key (docs/mock.md).

    Args:
        path: the fixtures file (JSON, ``MockFixtures``); ``None`` (the default): the fixtures
            embedded in the package (keys ``demo-key`` and ``other-key``).
        generate: each project answers an operation it lists no response of with a generated
            response; ``True`` by default.

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        projectops.fixtures.FixtureError: ``<file>: <field path>: <what is wrong>``.
    """
    if path is None:
        decoded = fixtures.default_fixtures()
    else:
        try:
            text = fixtures.read_fixtures_file(path).decode("utf-8")
            decoded = fixtures.decode_fixtures(text)
        except FixtureError as exc:
            raise FixtureError(f"{path}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise FixtureError(f"{path}: cannot read the file: not UTF-8 ({exc.reason})") from None
    projects: dict[str, MockProject] = {}
    for project in decoded:
        projects[project.api_key] = MockProject(project.name, project.answers, generate)
    return projects
