"""The README's Python examples, as the tests of the README read and run them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_block(after: str) -> str:
    """The first ```python block of the README after the line holding `after`."""
    readme = (REPO / "README.md").read_text()
    start = readme.index(after)
    found = re.search(r"```python\n(.*?)```", readme[start:], re.S)
    assert found
    return found.group(1)


def run_against(example: str, base_url: str) -> subprocess.CompletedProcess[str]:
    """Run `example` with ``python -c`` from the repository root, pointed at the server at
    `base_url` with the demo key; stopped after 60 s."""
    env = {**os.environ, "SERVICE_BACKEND_URL": base_url, "SERVICE_API_KEY": "demo-key"}
    return subprocess.run(
        [sys.executable, "-c", example],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
