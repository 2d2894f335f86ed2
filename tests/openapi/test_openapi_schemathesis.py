"""Schemathesis (its CLI, every check, positive and negative data) against real sockets.

Each run serves an app with uvicorn on 127.0.0.1 and points ``schemathesis run`` at the app's own
``/openapi.json`` (so the served document is what is tested), with the demo key, a fixed seed
and a bounded number of examples per operation. The document's server is the relative ``/``,
which schemathesis resolves against the document's URL, so the calls reach the app under test
and nothing else. The runs:

- the mock server's app on its default fixtures;
- ``create_app`` whose handlers raise, in turn, the exception class of each code of the
  document's error table and a plain exception (the 500 of a crash).

``--checks all`` includes negative data (must be rejected), ignored auth (a request without the
key must get 401), unsupported methods (405 with ``Allow``), response schema, status code,
content type and header conformance. schemathesis.toml and st_hooks.py allow one thing: a
schema-valid request refused by a business rule (400 ``failed_precondition``).
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

import projectops

from .support import DEMO_KEY, api_error_classes, error_app, mock_app, serving, with_docs

HERE = Path(__file__).resolve().parent
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def run_schemathesis(
    app: Starlette,
    tmp_path: Path,
    max_examples: int,
    exclude: tuple[str, ...] = (),
    *,
    checks: tuple[str, ...] = ("--checks", "all", "--mode", "all"),
    config: Path = HERE / "schemathesis.toml",
    key: str = DEMO_KEY,
) -> dict[str, Any]:
    """Run the CLI against `app` on a socket; return its JSON report (failures shown on fail).
    `checks`: the check and mode arguments (``()``: Schemathesis's defaults)."""
    report = tmp_path / "report.json"
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "st_hooks",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    with serving(app) as base_url:
        result = subprocess.run(
            [
                str(SCHEMATHESIS),
                "--config-file",
                str(config),
                "--no-color",
                "run",
                f"{base_url}/openapi.json",
                *checks,
                "--phases",
                "examples,coverage,fuzzing",
                "-H",
                f"Service-Api-Key: {key}",
                "--max-examples",
                str(max_examples),
                "--seed",
                "20261121",
                "--workers",
                "1",
                "--report",
                "json",
                "--report-json-path",
                str(report),
                *(["--exclude-checks", ",".join(exclude)] if exclude else []),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=tmp_path,
            check=False,
        )
    output = result.stdout + result.stderr
    assert report.is_file(), output
    data: dict[str, Any] = json.loads(report.read_text())
    assert result.returncode == 0 and not data["failures"] and not data["errors"], output
    operations = len(projectops.operations())
    assert data["operations"]["tested"] == data["operations"]["total"] == operations, output
    print(f"schemathesis: {data['test_cases']}")  # the counts, for -s / the report
    return data


@pytest.mark.slow
def test_mock_server_passes_every_check(tmp_path: Path) -> None:
    data = run_schemathesis(mock_app(), tmp_path, max_examples=30)
    assert data["test_cases"]["generated"] >= 30
    assert data["phases"]["coverage"]["status"] == "success"


def _errors() -> dict[str, Callable[[], Exception]]:
    makers: dict[str, Callable[[], Exception]] = {
        code: functools.partial(cls, f"raised by the handler: {cls.__name__}")
        for code, cls in api_error_classes().items()
    }
    makers["crash"] = functools.partial(RuntimeError, "a handler crashed")
    return makers


@pytest.mark.slow
def test_app_whose_handlers_raise_each_error_in_turn_passes_every_check(tmp_path: Path) -> None:
    # Every valid request fails here by construction, so the checks that valid data succeeds
    # are off; what is checked is that each error response is documented (status, body schema,
    # content type, headers), besides negative data, auth and methods. One run serves every
    # error: the handlers raise them in turn, and each must have been raised twice at least.
    makers = _errors()
    turn = itertools.cycle(sorted(makers))
    raised: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    def next_error() -> Exception:
        with lock:
            name = next(turn)
            raised[name] += 1
        return makers[name]()

    run_schemathesis(
        error_app(next_error),
        tmp_path,
        # Every code of the table raised twice at least: 17 codes take 34 handler calls, and
        # Schemathesis sends valid requests to each operation in a share of its examples.
        max_examples=30,
        exclude=(
            "positive_data_acceptance",
            "not_a_server_error",
            "valid_data_refused_only_by_business_rules",
        ),
    )
    assert set(raised) == set(makers), raised
    assert min(raised.values()) >= 2, raised


def _documented(page: Path, name: str) -> str:
    """The text a ``cat > NAME <<'EOF'`` of `page` writes."""
    text = page.read_text(encoding="utf-8")
    start = text.index(f"cat > {name} <<'EOF'\n") + len(f"cat > {name} <<'EOF'\n")
    return text[start : text.index("\nEOF\n", start) + 1]


@pytest.mark.slow
def test_the_readmes_server_passes_the_default_checks_as_docs_server_md_runs_them(
    tmp_path: Path,
) -> None:
    """The README's example server implements one rpc: the other answers 501, the one a
    business rule's 400. With the configuration docs/server.md gives, Schemathesis's default
    checks pass: every status it sees is documented, with the ErrorResponse schema."""
    readme = HERE.parents[1] / "README.md"
    (source,) = re.findall(r"```python file=releases\.py\n(.*?)```", readme.read_text(), re.S)
    namespace: dict[str, Any] = {}
    exec(compile(source, "releases.py", "exec"), namespace)
    config = tmp_path / "schemathesis.toml"
    config.write_text(_documented(HERE.parents[1] / "docs" / "server.md", "schemathesis.toml"))
    app = with_docs(namespace["app"])
    data = run_schemathesis(app, tmp_path, max_examples=15, checks=(), config=config, key="k-1")
    assert data["test_cases"]["generated"] >= 15
