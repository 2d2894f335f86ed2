"""The Python versions the project claims are the ones ./scripts/test runs the suite on, and the
script finds each interpreter as its header says (``$PYTHON3<minor>``, else pyenv's newest)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = (REPO / "scripts" / "test").read_text(encoding="utf-8")
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _classified() -> list[str]:
    prefix = "Programming Language :: Python :: "
    versions = [c.removeprefix(prefix) for c in PROJECT["classifiers"] if c.startswith(prefix)]
    return [v for v in versions if re.fullmatch(r"3\.[0-9]+", v)]


def test_the_classifiers_name_the_versions_the_test_script_runs() -> None:
    loop = re.search(r"for minor in ([0-9 ]+); do", SCRIPT)
    assert loop is not None
    assert _classified() == [f"3.{minor}" for minor in loop.group(1).split()]
    assert PROJECT["requires-python"] == f">={_classified()[0]}"
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in _classified()


def _find_python(minor: str, env: dict[str, str]) -> str:
    function = re.search(r"^find_python\(\) \{\n.*?^\}\n", SCRIPT, re.M | re.S)
    assert function is not None
    done = subprocess.run(
        ["bash", "-c", f"{function.group(0)}\nfind_python {minor}"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **env},
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("minor", ["12", "13"])
def test_the_script_takes_the_variable_else_pyenvs_newest_patch_release(
    tmp_path: Path, minor: str
) -> None:
    for patch in ("9", "10", "2"):  # 3.x.10 is newer than 3.x.9, whatever the string order
        binary = tmp_path / "versions" / f"3.{minor}.{patch}" / "bin" / "python3"
        binary.parent.mkdir(parents=True)
        binary.touch()
    newest = str(tmp_path / "versions" / f"3.{minor}.10" / "bin" / "python3")
    assert _find_python(minor, {"PYENV_ROOT": str(tmp_path)}) == newest
    given = {"PYENV_ROOT": str(tmp_path), f"PYTHON3{minor}": "/opt/python/bin/python3"}
    assert _find_python(minor, given) == "/opt/python/bin/python3"
    assert _find_python("99", {"PYENV_ROOT": str(tmp_path)}) == ""
