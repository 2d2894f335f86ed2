"""The mock server's fixtures: loading a file within bounds, and matching requests.

The format, and the one decoder of it, is :mod:`projectops.fixtures` (the proto message
``projectops.v1.MockFixtures`` in the protobuf JSON mapping; ``pydoc projectops.fixtures``
shows an example file).

Reading is bounded: the file must be a regular file (not a directory, FIFO or device) of at most
:data:`MAX_FIXTURES_BYTES` (64 MiB); then :func:`projectops.fixtures.decode_fixtures`
checks it strictly (no repeated key, at most :data:`MAX_DEPTH` levels, every request and
response decoded as its operation's message, names and keys unique). Every error is one line
that names the file and the field path, never a key's value.

Matching: a request is decoded and validated like any request of the adapter, then the
surrounding white space of each of its strings is removed (a version is compared trimmed) and
it is compared with each answer's request, normalised the same way
(:func:`~projectops.fixtures.request_key`): an exact answer whose request is equal wins,
then the first partial answer (``"partial": true``) whose request's fields the request holds
(:func:`~projectops.fixtures.is_subset`). The matching answer's response, or its error,
is the answer (see :meth:`MockProject.answer`), after its delay (:meth:`MockProject.reply`);
:meth:`MockProject.encoded_answer` gives its JSON, encoded once, on first use. An operation the
project lists no answers for is answered with a generated response
(:func:`~projectops.mock._generate.generated_answer`) unless ``generate=False``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from google.protobuf.message import Message

from projectops.codec import to_json
from projectops.errors import ERROR_CLASSES, ApiError, Code, FailedPrecondition
from projectops.fixtures import (
    DEFAULT_FIXTURES_NAME,
    MAX_DEPTH,
    MAX_FIXTURES_BYTES,
    FixtureAnswer,
    FixtureError,
    FixtureProject,
    decode_fixtures,
    default_fixtures,
    is_subset,
    match_key,
    read_fixtures_file,
    request_fields,
    request_json,
    request_key,
)
from projectops.mock._generate import generated_answer
from projectops.registry import Operation
from projectops.v1.error_pb2 import ErrorResponse

__all__ = [
    "DEFAULT_FIXTURES_NAME",
    "MAX_DEPTH",
    "MAX_FIXTURES_BYTES",
    "FixtureError",
    "MockProject",
    "Reply",
    "load_fixtures",
    "parse_fixtures",
]

#: The largest fixtures file read, in bytes (64 MiB).
# Distinct requests whose match key is remembered, per project.
_KEY_CACHE_SIZE = 4096
#: Longest request (wire bytes) whose match key is remembered.
_KEY_CACHE_REQUEST_BYTES = 1024


@dataclass(frozen=True)
class Reply:
    """What the mock server answers one request with.

    Attributes:
        body: the response's UTF-8 JSON (empty when `error` is set).
        error: the error to raise instead (answered with its code's status), or ``None``.
        delay: seconds to wait first (0 to
            :data:`~projectops.fixtures.MAX_DELAY_SECONDS`).
    """

    body: bytes
    error: ApiError | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class MockProject:
    """One project of the fixtures.

    Attributes:
        name: the project's name (``"demo"``).
        scenario: operation name -> its answers
            (:class:`~projectops.fixtures.FixtureAnswer`), in the order of the file.
        generate: answer an operation that `scenario` does not list with a generated response
            (:func:`~projectops.mock._generate.generated_answer`); ``False``: with
            ``failed_precondition``, as a request that matches no answer.
    """

    name: str
    scenario: Mapping[str, tuple[FixtureAnswer, ...]]
    generate: bool = True
    # Operation name -> exact match key -> index in scenario[op].
    _exact: dict[str, dict[str, int]] = field(init=False, repr=False, compare=False)
    # Operation name -> (index, the request's fields) of each partial answer, in file order.
    _partial: dict[str, list[tuple[int, dict[str, Any]]]] = field(
        init=False, repr=False, compare=False
    )
    # (operation name, answer's index) -> the response's JSON, filled on first use.
    _encoded: dict[tuple[str, int], bytes] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # (operation name, request's deterministic wire bytes) -> index of the answer it matched:
    # equal bytes are equal messages, so a request seen before skips the JSON walk. Only
    # matched requests of at most _KEY_CACHE_REQUEST_BYTES, at most _KEY_CACHE_SIZE of them.
    _keys: dict[tuple[str, bytes], int] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        exact: dict[str, dict[str, int]] = {}
        partial: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for op_name, answers in self.scenario.items():
            exact[op_name] = {}
            partial[op_name] = []
            for i, answer in enumerate(answers):
                if answer.partial:
                    partial[op_name].append((i, request_fields(answer.request)))
                else:
                    exact[op_name].setdefault(answer.key, i)
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_partial", partial)

    def __repr__(self) -> str:  # no key is held, but keep reprs short
        return f"MockProject({self.name!r})"

    @property
    def answers(self) -> Mapping[str, Mapping[str, Message]]:
        """Operation name -> {normalised request
        (:func:`~projectops.fixtures.request_key`) -> response} of the exact answers that
        answer with a response."""
        return {
            op_name: {
                answer.key: answer.response
                for answer in answers
                if not answer.partial and answer.error is None
            }
            for op_name, answers in self.scenario.items()
        }

    def answer(self, op: Operation, request: Message) -> Message:
        """The response `request` of `op` gets: of the matching answer (an exact one first,
        then the first partial one in file order), or generated when the project lists no
        answer of `op` and `generate` holds. The answer's delay is not waited.

        Raises:
            ApiError: the matching answer is an error answer (its code's class).
            FailedPrecondition: no answer of `op` matches, e.g. ``project demo has no
                get_release_details answer for version "9.9.9"`` (a long value is cut).
        """
        found = self._find(op, request, None)
        if found is None:
            return generated_answer(op, request)
        answer = self.scenario[op.name][found]
        if answer.error is not None:
            raise _error(answer.error)
        return answer.response

    def encoded_answer(self, op: Operation, request: Message) -> bytes:
        """:meth:`answer` as UTF-8 JSON (:func:`projectops.codec.to_json`), encoded once per
        fixture answer and then served from a cache (a generated one is encoded each time).

        Raises:
            ApiError, FailedPrecondition: as :meth:`answer`.
        """
        reply = self.reply(op, request)
        if reply.error is not None:
            raise reply.error
        return reply.body

    def reply(self, op: Operation, request: Message) -> Reply:
        """The :class:`Reply` to `request` of `op`: the body of :meth:`encoded_answer`, or the
        error of an error answer (a new exception each call), and the answer's delay.

        Raises:
            FailedPrecondition: no answer of `op` matches (as :meth:`answer`).
        """
        wire = (op.name, request.SerializeToString(deterministic=True))
        found = self._keys.get(wire)
        if found is None:
            found = self._find(op, request, wire)
            if found is None:
                return Reply(to_json(generated_answer(op, request)).encode("utf-8"))
        answer = self.scenario[op.name][found]
        if answer.error is not None:
            return Reply(b"", _error(answer.error), answer.delay)
        body = self._encoded.get((op.name, found))
        if body is None:
            body = to_json(answer.response).encode("utf-8")
            self._encoded[(op.name, found)] = body
        return Reply(body, None, answer.delay)

    def _find(self, op: Operation, request: Message, wire: tuple[str, bytes] | None) -> int | None:
        """The index of the answer `request` matches in ``scenario[op.name]``; ``None``: to be
        generated. Remembers a matched `wire` (short ones only: a client cannot grow the cache
        with requests of its own making)."""
        answers = self.scenario.get(op.name)
        if not answers:
            if self.generate:
                return None
            self._no_answer(op, request)
        found = self._exact.get(op.name, {}).get(request_key(request))
        if found is None:
            fields = request_json(request)
            found = next(
                (i for i, wanted in self._partial.get(op.name, ()) if is_subset(wanted, fields)),
                None,
            )
        if found is None:
            self._no_answer(op, request)
        if (
            wire is not None
            and len(wire[1]) <= _KEY_CACHE_REQUEST_BYTES
            and len(self._keys) < _KEY_CACHE_SIZE
        ):
            self._keys[wire] = found
        return found

    def _no_answer(self, op: Operation, request: Message) -> NoReturn:
        shown = match_key(request)[1]
        raise FailedPrecondition(
            f"project {self.name} has no {op.name} answer for {shown or 'the empty request'}"
        )


def _error(error: ErrorResponse) -> ApiError:
    """The exception of an error answer (its code is known: the decoder checked it)."""
    return ERROR_CLASSES[Code(error.code)](error.message, error.violations)


def load_fixtures(
    path: str | Path | None = None, *, generate: bool = True
) -> dict[str, MockProject]:
    """Read and check a fixtures file (the module docstring gives its format).

    Args:
        path: the file; ``None`` reads the embedded default fixtures (projects ``demo``, key
            ``demo-key``, and ``other``, key ``other-key``).
        generate: answer operations a project lists no answers for with generated responses
            (:attr:`MockProject.generate`).

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        FixtureError: the file cannot be read, is not JSON, or breaks the format; the message is
            one line, ``<file>: <field path>: <what is wrong>``.
    """
    if path is None:
        # Its errors already name DEFAULT_FIXTURES_NAME.
        return _projects(default_fixtures(), generate=generate)
    name = str(path)
    try:
        text = read_fixtures_file(path).decode("utf-8")
    except FixtureError as exc:
        raise FixtureError(f"{name}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise FixtureError(f"{name}: cannot read the file: not UTF-8 ({exc.reason})") from None
    try:
        return parse_fixtures(text, generate=generate)
    except FixtureError as exc:
        raise FixtureError(f"{name}: {exc}") from None


def parse_fixtures(
    data: str | bytes | Mapping[str, Any], *, generate: bool = True
) -> dict[str, MockProject]:
    """Check fixtures given as JSON text or a parsed object (see :func:`load_fixtures`), with
    :func:`projectops.fixtures.decode_fixtures`.

    Returns:
        API key -> :class:`MockProject`.

    Raises:
        FixtureError: ``<field path>: <what is wrong>``, e.g.
            ``projects[0].operations.get_release_details[0].request.version: is required``.
    """
    return _projects(decode_fixtures(data), generate=generate)


def _projects(decoded: Iterable[FixtureProject], *, generate: bool) -> dict[str, MockProject]:
    """API key -> the project that serves `decoded`'s answers (keys are unique once decoded)."""
    return {
        project.api_key: MockProject(project.name, project.answers, generate) for project in decoded
    }
