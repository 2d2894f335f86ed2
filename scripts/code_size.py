"""How many lines of code ``src/`` holds, the measure of the code budget (issue 33: at most
8,000): documentation is not code.

A line counts when it holds a token of code. Not counted: blank lines, comments, and
documentation strings, which are the string expression statements (a module's, class's or
function's docstring, and an attribute's docstring after an assignment) found with ``ast``;
the rest of each line is read with ``tokenize``. So a statement written over three lines counts
three, and ``x = 1  # why`` counts one.

Generated files are counted apart, not in the budget: ``src/projectops/v1/`` (protoc and
mypy-protobuf) and ``client/_services.py`` and ``server/_services.py`` (scripts/bindings.py);
nobody writes or reads them to change the code (docs/contract.md §8.8).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
#: The code budget of src/, in lines of code (issue 33).
BUDGET = 8000
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def generated(path: Path) -> bool:
    """Whether `path` (under src/) is generated.

    Args:
        path: a ``.py`` or ``.pyi`` file under src/.

    Returns:
        Whether it is protoc's or scripts/bindings.py's output.
    """
    relative = path.relative_to(SRC).as_posix()
    return relative.startswith("projectops/v1/") or relative.endswith("/_services.py")


def _documentation_lines(source: str) -> set[int]:
    """The line numbers of every string expression statement (docstrings)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            end = node.end_lineno or node.lineno
            lines.update(range(node.lineno, end + 1))
    return lines


def code_lines(source: str) -> int:
    """The lines of code of one module.

    Args:
        source: the module's text.

    Returns:
        How many of its lines hold a token of code (module docstring above).
    """
    documentation = _documentation_lines(source)
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _NOT_CODE:
            continue
        for line in range(token.start[0], token.end[0] + 1):
            if line not in documentation:
                lines.add(line)
    return len(lines)


def count(root: Path = SRC) -> tuple[int, int]:
    """The lines of code under `root`: hand-written and generated.

    Args:
        root: the folder to count; src/ by default.

    Returns:
        ``(written, generated)``: the lines of code of the ``.py`` files written by hand (the
        budget's measure), and of the generated ones.
    """
    written = produced = 0
    for path in sorted(root.rglob("*.py")):
        lines = code_lines(path.read_text(encoding="utf-8"))
        if generated(path):
            produced += lines
        else:
            written += lines
    return written, produced


def main() -> int:
    """Print the figures, one per line, and fail when the budget is exceeded.

    Returns:
        0 within the budget, else 1.
    """
    written, produced = count()
    print(
        f"{written} lines of code written by hand under src/ (budget {BUDGET})\n"
        f"{produced} lines of generated code (src/projectops/v1/, */_services.py), not counted"
    )
    return 0 if written <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
