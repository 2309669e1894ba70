"""The stored chapters are what readers see: each must come from one fresh execution.

nbval compares a chapter's stored outputs with a new run; a chapter saved without
outputs passes it trivially, and the book (built without executing) would show
no results. These checks fail on such a chapter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
CHAPTERS = sorted(BOOK.glob("*.ipynb"))


def test_there_are_chapters():
    assert len(CHAPTERS) >= 10


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_was_executed_once_from_the_top(path):
    cells = json.loads(path.read_text())["cells"]
    counts = [c.get("execution_count") for c in cells if c["cell_type"] == "code"]
    assert counts, f"{path.name} has no code cells"
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: execution counts {counts[:8]}... are not 1, 2, 3, ...: "
        "re-execute it with jupyter nbconvert --execute --inplace")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_stored_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    with_output = sum(1 for c in code if c.get("outputs"))
    assert with_output >= len(code) // 2, f"{path.name}: {with_output} of {len(code)} cells have output"
