"""Alt text for the book's figures.

A code cell that draws a figure starts with one comment line::

    # alt: The error of the three scalings against d; best b is lowest throughout.

``python -m dpsum_book.alt book/NN_name.ipynb ...`` copies that line into
the cell's metadata (``mystnb.image.alt``), which the book build turns into
the ``alt`` attribute of the figure's image. It changes nothing else in the
notebook (no re-execution), and ``tests/test_conventions.py`` fails on a
figure without the line or with metadata that disagrees with it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["alt_line", "stored_alt", "sync"]

_ALT = re.compile(r"\A\s*#\s*alt:\s*(.*\S)")


def alt_line(source: str) -> str | None:
    """The alt text of a cell's ``# alt: ...`` first line, or None."""
    m = _ALT.match(source)
    return m.group(1) if m else None


def stored_alt(metadata: dict[str, Any]) -> str | None:
    """The alt text in a cell's metadata (``mystnb.image.alt``), or None."""
    value = metadata.get("mystnb", {}).get("image", {}).get("alt")
    return value if isinstance(value, str) else None


def sync(path: str | Path) -> int:
    """Copy every ``# alt:`` line of a notebook into its cell's metadata.

    Parameters
    ----------
    path : str or Path
        A ``.ipynb`` file; rewritten only when some metadata changes, in the
        layout Jupyter writes (one-space indent, a final newline).

    Returns
    -------
    int
        The number of cells whose metadata changed.
    """
    path = Path(path)
    if path.suffix != ".ipynb":
        raise ValueError(f"path must be a .ipynb notebook, got a {path.suffix!r} file")
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        text = alt_line(source)
        meta = cell.setdefault("metadata", {})
        if text is not None and stored_alt(meta) != text:
            meta.setdefault("mystnb", {}).setdefault("image", {})["alt"] = text
            changed += 1
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    """Sync the notebooks named on the command line."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m dpsum_book.alt NOTEBOOK.ipynb ...", file=sys.stderr)
        return 2
    for a in args:
        print(f"{a}: {sync(a)} cells updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
