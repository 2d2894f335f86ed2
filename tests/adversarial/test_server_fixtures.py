"""Bad fixtures files against ``projectops mock-server``: every one is exit 2 and one line naming
the file, at once and in bounded memory, before anything listens.

The files that would cost an unbounded read (64 MiB and more, ``/dev/zero``) go to the real
program under an address-space limit; the others to :func:`projectops.cli._main.main` in-process,
where listening would fail the test.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from projectops.mock import _app as mock
from tests.support import RunCli

#: Address space the server may use while it rejects a file (unbounded reads would exceed it).
MEMORY_LIMIT = 1536 * 1024 * 1024

ANSWER = {"request": {"version": "1.0.0"}, "response": {}}


def project(**fields: Any) -> dict[str, Any]:
    entry = {"project": "p", "apiKey": "p-key", "operations": {"get_release_details": [ANSWER]}}
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
    """A response whose `summary` holds arrays nested `depth` deep."""
    inner = "[" * depth + "]" * depth
    text = json.dumps(project()).replace('"response": {}', f'"response": {{"summary": {inner}}}')
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
    '"version": "1.0.0"', '"version": "1.0.0", "version": "2.0.0"'
)

# (name, file maker, words the one line must hold)
BAD_FILES: list[tuple[str, Callable[[Path], Path], str]] = [
    ("nested past the depth limit", nested(500), "nested deeper than 100 levels"),
    ("nested past the JSON parser", nested(100_000), "not valid JSON: maximum recursion depth"),
    ("over 64 MiB", sparse(64 * 1024 * 1024 + 1), "larger than 64 MiB"),
    ("/dev/zero", dev_zero, "not a regular file (a character device)"),
    ("a FIFO", fifo, "not a regular file (a FIFO)"),
    ("a directory", directory, "not a regular file (a directory)"),
    ("duplicate key at the top", text_file(DUPLICATE_TOP), 'the top level: the key "projects"'),
    (
        "duplicate key in a request",
        text_file(DUPLICATE_DEEP),
        'get_release_details[0].request: the key "version" appears twice',
    ),
    ("key with a leading space", json_file(project(apiKey=" p-key")), "white space around it"),
    ("key with a trailing tab", json_file(project(apiKey="p-key\t")), "white space around it"),
    ("key with ESC", json_file(project(apiKey="p\x1b[2J")), "holds a control character"),
    ("key with a C1 control", json_file(project(apiKey="p\x9bkey")), "holds a control character"),
    ("key with DEL", json_file(project(apiKey="p\x7fkey")), "holds a control character"),
    ("key not ASCII", json_file(project(apiKey="clé")), "holds a non-ASCII character"),
]


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


#: The files whose reading must be bounded: the real program, under MEMORY_LIMIT.
IN_A_SUBPROCESS = {"over 64 MiB", "/dev/zero"}


def listening_is_a_failure(*_: object, **__: object) -> NoReturn:
    raise AssertionError("the mock server went on to listen with a bad fixtures file")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "make", "words"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_fixtures_file_is_exit_2_and_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: RunCli,
    name: str,
    make: Callable[[Path], Path],
    words: str,
) -> None:
    path = make(tmp_path)
    argv = ["mock-server", "--port", "0", "--fixtures", str(path)]
    start = time.monotonic()
    if name in IN_A_SUBPROCESS:
        done = subprocess.run(
            [sys.executable, "-m", "projectops", *argv],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=30,
            preexec_fn=limit_memory,
        )
    else:
        monkeypatch.setattr(mock, "listen", listening_is_a_failure)
        done = run_cli(*argv)
    seconds = time.monotonic() - start
    code, err = done.returncode, done.stderr
    print(f"{name}: exit {code} in {seconds:.2f} s: {err.strip()[:160]}")
    assert (code, done.stdout) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: "), err
    assert words in err
    assert "\x1b" not in err and "\x9b" not in err
    assert len(err) <= 400
