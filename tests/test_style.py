"""Source style the linters do not check: no backslash line continuations in the Python sources, and
no function of the package over its line limit (a numba kernel 150 lines, any other function 100,
decorators excluded, docstring included: issue 40's rule, split a function by job)."""

from __future__ import annotations

import ast
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL_LINES, FUNCTION_LINES = 150, 100
SKIPPED = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def backslash_continuations(path: Path) -> list[int]:
    """Lines of ``path`` that end in a backslash joining them to the next (outside strings).

    Inside brackets the tokenizer reports each line break (an NL token); a backslash joins
    lines without one, so a token starting on a later line than the previous token ended, with
    no line-break token between them, follows a backslash.
    """
    lines = []
    with path.open("rb") as f:
        prev = None
        for tok in tokenize.tokenize(f.readline):
            if tok.type == tokenize.ENCODING:
                continue
            if (prev is not None and prev.type not in SKIPPED and tok.type not in SKIPPED
                    and tok.start[0] > prev.end[0]):
                lines.append(prev.end[0])
            prev = tok
    return lines


def test_detector_finds_a_backslash_continuation(tmp_path):
    source = tmp_path / "joined.py"
    source.write_text('x = 1 + \\\n    2\ny = (1 +\n     2)\ns = """a\\\nb"""\n')
    assert backslash_continuations(source) == [1]


def test_no_backslash_line_continuations():
    files = [p for folder in ("parsimony", "tests", "benchmarks", "docs") for p in (ROOT / folder).rglob("*.py")]
    assert len(files) > 50
    found = {str(p.relative_to(ROOT)): lines for p in files if (lines := backslash_continuations(p))}
    assert not found, f"backslash line continuations (use brackets): {found}"


def _is_kernel(node) -> bool:
    """Whether a function is decorated with ``njit`` (``@njit``, ``@njit(...)``, ``@numba.njit``)."""
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if (target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)) == "njit":
            return True
    return False


def functions_over_the_limit(path: Path) -> list[str]:
    """``name:line (n lines, limit m)`` of every function of ``path`` longer than its limit."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            limit = KERNEL_LINES if _is_kernel(node) else FUNCTION_LINES
            if lines > limit:
                found.append(f"{node.name}:{node.lineno} ({lines} lines, limit {limit})")
    return found


def test_detector_finds_a_long_function_and_a_long_kernel(tmp_path):
    source = tmp_path / "long.py"
    body = "    x = 0\n" * 120
    source.write_text(f"@njit(error_model='numpy')\ndef kernel():\n{body}\n\ndef function():\n{body}\n"
                      f"\nclass A:\n    def method(self):\n{'    ' + body.replace(chr(10), chr(10) + '    ')}")
    assert [f.split(":")[0] for f in functions_over_the_limit(source)] == ["function", "method"]


def test_no_function_of_the_package_over_its_line_limit():
    files = list((ROOT / "parsimony").rglob("*.py"))
    assert len(files) > 50
    found = {str(p.relative_to(ROOT)): f for p in files if (f := functions_over_the_limit(p))}
    assert not found, f"functions over the line limits (split them by job): {found}"
