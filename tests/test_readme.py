"""The README's Python example runs as written, from the repository root."""

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_python_example_of_the_readme_runs() -> None:
    readme = (REPO / "README.md").read_text()
    example = re.search(r"## The Python API\n\n```python\n(.*?)```", readme, re.S)
    assert example
    result = subprocess.run(
        [sys.executable, "-c", example.group(1)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["1.4.0", "9007199254740993"]
    assert lines[-1] == "400 invalid_argument version: is required"
