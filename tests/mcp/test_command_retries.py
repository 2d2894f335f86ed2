"""``projectops mcp`` takes ``--retries`` (before or after the command) and hands it to the tool
server's clients; moved here from tests/client/test_retries.py with the command (mcp/_command)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import RunCli


def test_mcp_takes_retries(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp")
    from projectops.mcp import _server

    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(_server, "run", lambda **kwargs: seen.append(kwargs) or 0)
    assert run_cli("mcp", "--retries", "5", base_url="http://127.0.0.1:1").returncode == 0
    assert run_cli("mcp", base_url="http://127.0.0.1:1").returncode == 0
    assert run_cli("--retries", "0", "mcp", base_url="http://127.0.0.1:1").returncode == 0
    assert [kwargs["retries"] for kwargs in seen] == [5, 2, 0]
