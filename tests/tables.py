"""Read the Markdown tables a page draws (Pairs, LoopState) back into rows, as a reader sees them."""

from __future__ import annotations

import re

import pandas as pd

_PIPE = re.compile(r"(?<!\\)\|")
_BADGE = re.compile(r"^:[a-z]+-badge\[(.*)\]$")


def _text(cell: str) -> str:
    cell = cell.strip()
    if cell.startswith("**") and cell.endswith("**") and len(cell) >= 4:
        cell = cell[2:-2]
    badge = _BADGE.match(cell)
    if badge:
        cell = badge.group(1)
    return re.sub(r"\\(.)", r"\1", cell)


def parse(markdown: str) -> pd.DataFrame | None:
    """The table in `markdown` (every cell as the text shown), or None when it holds no table."""
    lines = [line for line in markdown.strip().splitlines() if line.startswith("|")]
    if len(lines) < 2 or not set(lines[1]) <= set("|-: "):
        return None
    split = [[_text(c) for c in _PIPE.split(line.strip())[1:-1]] for line in lines]
    return pd.DataFrame(split[2:], columns=split[0])


def table(at, column: str) -> pd.DataFrame:
    """The table on the page that has `column` (Pairs: 'status'; LoopState: 'stage'; now: 'field')."""
    found = [df for df in (parse(m.value) for m in at.markdown) if df is not None and column in df.columns]
    assert found, f"no table with a {column!r} column"
    return found[0]
