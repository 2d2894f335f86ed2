"""The code budget: at most 8,000 lines of code under src/, counted by scripts/code_size.py
(``scripts/code-size`` prints the figures). Documentation is not code: docstrings, comments and
blank lines are not counted, nor are the generated files."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import code_size  # noqa: E402


def test_src_holds_at_most_the_budget_of_code() -> None:
    written, generated = code_size.count()
    assert generated > 0  # the generated files were found, and left out
    assert written <= code_size.BUDGET == 8000, f"{written} lines of code under src/"


def test_documentation_comments_and_blank_lines_are_not_code() -> None:
    source = '''"""A module docstring,
over two lines."""

import os  # a comment does not make a line code, nor remove one


def f(
    a: int,
) -> int:
    """A docstring."""
    # a comment alone
    x = 1
    """An attribute's docstring."""
    return (a
            + x)
'''
    # import, def's three lines, x = 1, return's two lines.
    assert code_size.code_lines(source) == 7


def test_the_generated_files_are_told_apart() -> None:
    src = code_size.SRC
    assert code_size.generated(src / "projectops/v1/operations_pb2.py")
    assert code_size.generated(src / "projectops/client/_services.py")
    assert not code_size.generated(src / "projectops/client/http.py")


def test_no_chained_conditional_expression() -> None:
    """``a if x else b if y else c`` reads as a puzzle: an if statement says it (issue 33)."""
    chained = []
    for path in sorted(code_size.SRC.rglob("*.py")):
        if code_size.generated(path):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            parts = (node.body, node.test, node.orelse) if isinstance(node, ast.IfExp) else ()
            if any(isinstance(part, ast.IfExp) for part in parts):
                chained.append(f"{path.relative_to(code_size.SRC)}:{node.lineno}")
    assert chained == []
