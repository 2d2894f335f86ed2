"""Bad fixtures files against ``projectops mock-server``: every one is exit 2 and one line naming
the file, at once and in bounded memory, before anything listens; and a request no response
matches costs the same whatever the number of responses (issue 28, item 7).

The files that would cost an unbounded read (64 MiB and more, ``/dev/zero``) go to the real
program under an address-space limit; the others to the program in-process, on a port that is
taken, so that going on to listen would end in another error than the one expected.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import projectops
from projectops.errors import FailedPrecondition
from projectops.fixtures import MAX_FIXTURES_BYTES, FixtureResponse, request_key
from projectops.mock import MockProject
from tests.support import RunCli
from tests.synthetic import with_required_string

#: Address space the server may use while it rejects a file (unbounded reads would exceed it).
MEMORY_LIMIT = 1536 * 1024 * 1024


#: An operation whose request has a REQUIRED string field, and that field.
OP, FIELD = with_required_string()
ANSWER = {"request": {FIELD.json_name: "1.0.0"}, "response": {}}


def project(**fields: Any) -> dict[str, Any]:
    entry = {"project": "p", "apiKey": "p-key", "operations": {OP.name: [ANSWER]}}
    return {"projects": [{**entry, **fields}]}


def json_file(data: Any) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "fixtures.json"
        path.write_text(json.dumps(data))
        return path

    return make


def text_file(text: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "fixtures.json"
        path.write_text(text)
        return path

    return make


def nested(depth: int) -> Callable[[Path], Path]:
    """A request whose FIELD holds arrays nested `depth` deep."""
    inner = "[" * depth + "]" * depth
    text = json.dumps(project()).replace('"1.0.0"', inner)
    return text_file(text)


def sparse(size: int) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "big.json"
        with path.open("wb") as file:
            file.truncate(size)  # no disk blocks used
        return path

    return make


def fifo(folder: Path) -> Path:
    path = folder / "fifo.json"
    os.mkfifo(path)  # nobody ever writes: an ordinary open() would block for good
    return path


def directory(folder: Path) -> Path:
    path = folder / "dir.json"
    path.mkdir()
    return path


def dev_zero(_: Path) -> Path:
    return Path("/dev/zero")


DUPLICATE_TOP = '{"projects": [], "projects": []}'
DUPLICATE_DEEP = json.dumps(project()).replace(
    f'"{FIELD.json_name}": "1.0.0"', f'"{FIELD.json_name}": "1.0.0", "{FIELD.json_name}": "2"'
)

# (name, file maker, words the one line must hold)
BAD_FILES: list[tuple[str, Callable[[Path], Path], str]] = [
    (
        "nested deep",
        nested(500),
        f"{OP.name}[0].request.{FIELD.json_name}: expected a string, got an array",
    ),
    # Past the JSON parser's depth (Python 3.11, 3.12) or the codec's (3.13): the same line.
    ("nested past the JSON parser", nested(5_000), "nested too deep"),
    ("over 64 MiB", sparse(64 * 1024 * 1024 + 1), "larger than 64 MiB"),
    ("/dev/zero", dev_zero, "not a regular file (a character device)"),
    ("a FIFO", fifo, "not a regular file (a FIFO)"),
    ("a directory", directory, "not a regular file (a directory)"),
    ("duplicate key at the top", text_file(DUPLICATE_TOP), 'the top level: the key "projects"'),
    (
        "duplicate key in a request",
        text_file(DUPLICATE_DEEP),
        f'{OP.name}[0].request: the key "{FIELD.json_name}" appears twice',
    ),
    ("key with a leading space", json_file(project(apiKey=" p-key")), "white space around it"),
    ("key with a trailing tab", json_file(project(apiKey="p-key\t")), "white space around it"),
    ("key with ESC", json_file(project(apiKey="p\x1b[2J")), "holds a control character"),
    ("key with a C1 control", json_file(project(apiKey="p\x9bkey")), "holds a control character"),
    ("key with DEL", json_file(project(apiKey="p\x7fkey")), "holds a control character"),
    ("key not ASCII", json_file(project(apiKey="clé")), "holds a non-ASCII character"),
    # The client refuses such a key (usable_api_key): a project nobody could call.
    ("key with a space inside", json_file(project(apiKey="p key")), "holds white space"),
]


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


#: The files whose reading must be bounded: the real program, under MEMORY_LIMIT.
IN_A_SUBPROCESS = {"over 64 MiB", "/dev/zero"}


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port that is listened on: a server that got past its fixtures could not listen."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def check_one_line(done: subprocess.CompletedProcess[str], path: Path, words: str) -> None:
    code, err = done.returncode, done.stderr
    assert (code, done.stdout) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: "), err
    assert words in err, err
    assert "\x1b" not in err and "\x9b" not in err
    assert len(err) <= 400


IN_PROCESS = [b for b in BAD_FILES if b[0] not in IN_A_SUBPROCESS]
SUBPROCESS = [b for b in BAD_FILES if b[0] in IN_A_SUBPROCESS]


@pytest.mark.parametrize(("name", "make", "words"), IN_PROCESS, ids=[b[0] for b in IN_PROCESS])
def test_a_bad_fixtures_file_is_exit_2_and_one_line(
    tmp_path: Path, run_cli: RunCli, taken_port: int, name: str, make: Any, words: str
) -> None:
    path = make(tmp_path)
    check_one_line(
        run_cli("mock-server", "--port", str(taken_port), "--fixtures", str(path)), path, words
    )


@pytest.mark.slow
@pytest.mark.parametrize(("name", "make", "words"), SUBPROCESS, ids=[b[0] for b in SUBPROCESS])
def test_a_file_that_would_cost_an_unbounded_read_is_exit_2_and_one_line(
    tmp_path: Path, taken_port: int, name: str, make: Any, words: str
) -> None:
    path = make(tmp_path)
    start = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "projectops",
            "mock-server",
            *("--port", str(taken_port)),
            *("--fixtures", str(path)),
        ],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=30,
        preexec_fn=limit_memory,
    )
    print(f"{name}: exit {done.returncode} in {time.monotonic() - start:.2f} s")
    check_one_line(done, path, words)


def fixtures_text(op: projectops.Operation, answers: str) -> str:
    entry = f'"project": "p", "apiKey": "p-key", "operations": {{"{op.name}": [{answers}]}}'
    return f'{{"projects": [{{{entry}}}]}}'


def empty_elements(folder: Path) -> Path:
    """15 MiB: one response whose list of messages holds 5.2 million ``{}``: it took a minute
    and 2 GiB to start."""
    op, fd = next(
        (op, fd)
        for op in projectops.operations()
        for fd in op.response_type.DESCRIPTOR.fields
        if fd.is_repeated and fd.message_type is not None
    )
    listed = ",".join(["{}"] * 5_200_000)
    answer = f'{{"request": {{}}, "partial": true, "response": {{"{fd.json_name}": [{listed}]}}}}'
    return text_file(fixtures_text(op, answer))(folder)


def partial_answers(folder: Path) -> Path:
    """30 MiB: 501,000 partial answers, written compactly: it took a minute and 1 GiB to
    start (a sparser file passes the guard, and then costs what it allows)."""
    answers = ",".join(
        f'{{"request":{{"{FIELD.json_name}":"v{i}"}},"partial":true,"response":{{}}}}'
        for i in range(501_000)
    )
    return text_file(fixtures_text(OP, answers))(folder)


@pytest.mark.parametrize("make", [empty_elements, partial_answers])
def test_fixtures_whose_decoding_would_cost_gigabytes_are_refused_before_parsing(
    tmp_path: Path, run_cli: RunCli, taken_port: int, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        done = run_cli("mock-server", "--port", str(taken_port), "--fixtures", str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    check_one_line(done, path, "decoding them would take up to")
    assert "MB of memory, over what decoding may cost" in done.stderr
    # The read buffer, the text and its string; not a message per object.
    assert peak < MAX_FIXTURES_BYTES + 3 * size, peak


def partial_project(count: int) -> MockProject:
    """A project whose operation OP has `count` partial answers, the i-th for the FIELD value
    ``v<i>`` and with a delay of i ms (which tells them apart)."""
    answers = []
    for i in range(count):
        request = OP.request_type(**{FIELD.name: f"v{i}"})
        key = request_key(request)
        answers.append(
            FixtureResponse(request, OP.response_type(), key, delay=i / 1000, partial=True)
        )
    return MockProject("p", {OP.name: tuple(answers)})


def calls_made(work: Callable[[], object]) -> int:
    """How many functions (Python and built-in) `work` calls: its cost, counted, not timed."""
    count = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def test_an_unmatched_request_costs_the_same_whatever_the_number_of_partial_answers() -> None:
    request = OP.request_type(**{FIELD.name: "no such value"})

    def unmatched(project: MockProject) -> Callable[[], object]:
        def work() -> None:
            with pytest.raises(FailedPrecondition):
                project.reply(OP, request)

        return work

    small, large = partial_project(10), partial_project(20_000)
    for project in (small, large):  # warm up: the codec's plans, the cache's first entries
        unmatched(project)()
    assert calls_made(unmatched(large)) == calls_made(unmatched(small))
    # The index finds what a scan found: the partial answer whose values the request holds.
    assert large.reply(OP, OP.request_type(**{FIELD.name: " v19999 "})).delay == 19.999
