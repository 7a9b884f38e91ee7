"""Source style the linters do not check: no backslash line continuations in the Python sources."""

from __future__ import annotations

import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
