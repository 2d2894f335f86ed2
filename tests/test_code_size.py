"""The code budget: at most 68,400 tokens of code under src/, written as one idea a line,
counted and gauged by scripts/code_size.py (``scripts/code-size`` prints the figures, and with
``--places`` each place a gate flags). Documentation is not code: docstrings, comments and
blank lines are not counted, nor are the generated files.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import code_size  # noqa: E402

#: src/'s figures, measured once for the module.
FIGURES = code_size.measure()


def test_src_holds_at_most_the_budget_of_code() -> None:
    assert FIGURES.generated_tokens > 0  # the generated files were found, and left out
    assert FIGURES.tokens <= code_size.BUDGET == 68_400, f"{FIGURES.tokens} tokens under src/"


def test_src_holds_at_most_7_tokens_a_line_of_code() -> None:
    assert FIGURES.tokens_per_line <= code_size.MAX_TOKENS_PER_LINE == 7.0


def test_src_holds_at_most_15_conditional_expressions_per_1000_lines() -> None:
    per_1000 = FIGURES.conditionals_per_1000_lines
    assert per_1000 <= code_size.MAX_CONDITIONALS_PER_1000_LINES == 15


def test_no_conditional_expression_inside_an_f_string_or_another_conditional() -> None:
    assert FIGURES.nested_conditionals == []


def test_no_parallel_assignment_of_unrelated_values() -> None:
    assert FIGURES.parallel_assignments == []


def test_no_chained_assignment() -> None:
    assert FIGURES.chained_assignments == []


SOURCE = '''"""A module docstring,
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


def test_documentation_comments_and_blank_lines_are_not_code() -> None:
    # import, def's three lines, x = 1, return's two lines.
    assert code_size.code_lines(SOURCE) == 7
    # import os | def f ( a : int , ) -> int : | x = 1 | return ( a + x )
    assert code_size.code_tokens(SOURCE) == 2 + 11 + 3 + 6


def test_an_f_string_is_one_token_on_every_python() -> None:
    assert code_size.code_tokens('f"{a} and {b!r:>{width}}"\n') == 1
    assert code_size.code_tokens('x = f"""{a}\n{f"{b}"}"""\n') == 3
    assert code_size.code_lines('x = f"""{a}\n{b}"""\n') == 2


def _lines(gate: str, source: str) -> list[int]:
    found: list[int] = getattr(code_size, gate)(ast.parse(source))
    return found


def test_the_gates_flag_what_they_name_and_nothing_else() -> None:
    assert _lines("conditionals", "a = b if c else d\ne = [f for f in g if f]\n") == [1]
    nested = (
        "a = b if c else d(e if f else g)\n"  # at any depth
        "h = f'{i if j else k}'\n"
        "l = m if n else o\n"
        "p = q(r if s else t)\n"
        "u = f'{v}' if w else x\n"  # an f-string in a conditional is not one in an f-string
    )
    assert _lines("nested_conditionals", nested) == [1, 2]
    parallel = (
        "a, b = 1, 2\n"
        "[c, d] = e, f\n"
        "g, h = i()\n"  # unpacking one value
        "j, k = l\n"
        "m, n = *o, p\n"  # not as many values: a starred one is unpacked
        "q = r, s\n"
    )
    assert _lines("parallel_assignments", parallel) == [1, 2]
    assert _lines("chained_assignments", "a = b = 1\nc = 1\nd: int = 2\ne += 1\n") == [1]


def test_the_generated_files_are_told_apart() -> None:
    src = code_size.SRC
    assert code_size.generated(src / "projectops/v1/operations_pb2.py")
    assert code_size.generated(src / "projectops/client/_services.py")
    assert not code_size.generated(src / "projectops/client/http.py")


def test_no_chained_conditional_expression() -> None:
    """``a if x else b if y else c`` reads as a puzzle: an if statement says it (issue 33). The
    gate on conditionals inside conditionals at any depth (above) holds this and more."""
    chained = []
    for path in sorted(code_size.SRC.rglob("*.py")):
        if code_size.generated(path):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            parts = (node.body, node.test, node.orelse) if isinstance(node, ast.IfExp) else ()
            if any(isinstance(part, ast.IfExp) for part in parts):
                chained.append(f"{path.relative_to(code_size.SRC)}:{node.lineno}")
    assert chained == []


def test_the_script_prints_each_figure_and_fails_with_a_gate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_size, "measure", lambda: FIGURES)  # measured once, above
    status = code_size.main(["--places"])
    out = capsys.readouterr().out
    assert f"{FIGURES.tokens} tokens of code written by hand under src/ (budget 68400)" in out
    assert f"{FIGURES.tokens_per_line:.2f} tokens per line of code (at most 7.0)" in out
    assert f"{len(FIGURES.chained_assignments)} chained assignments (0)" in out
    assert all(f"  {place}\n" in out for place in FIGURES.parallel_assignments)
    kept = FIGURES.tokens_per_line <= 7.0 and not FIGURES.parallel_assignments
    assert status == (0 if kept else 1)
