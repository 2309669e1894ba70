"""Check the LaTeX log of the PDF book for errors, missing figures and references.

Usage: ``python tests/latex_log.py _build/latex/dpsum.log`` (run by ``make pdf``
after the build). Exits with status 1 and lists every problem when the log
reports

- a TeX or LaTeX error (a line starting with ``!``, or ``... Error:``),
- a figure that could not be loaded (``File `x.png' not found``, ``Unable to
  load picture``),
- an undefined reference or citation (``Reference `x' on page 3 undefined``,
  ``There were undefined references``),
- a character missing from the font (``Missing character: There is no ...``),

or when the log does not say that it wrote the PDF. Exits 0 otherwise and
prints the number of pages, and lists the overfull lines wider than
``OVERFULL_PT`` (text that runs into the margin or is cut off in a table cell,
as function names once were in the API table) without failing: a few are
unavoidable in a book of formulas, and each is worth a look.

TeX wraps its log at ``max_print_line`` characters (79 by default); the
check joins the continuation lines of a message before matching, and
``make pdf`` raises ``max_print_line`` so that names are not cut anyway.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# (kind, pattern); the first kind that matches a message names it
_PROBLEMS: list[tuple[str, re.Pattern[str]]] = [
    ("missing figure", re.compile(
        r"File `[^']*\.(png|jpe?g|pdf|svg|eps)' not found|Unable to load picture"
        r"|Cannot determine size of graphic", re.I)),
    ("undefined reference", re.compile(
        r"(Reference|Hyper reference|Citation) `[^']*' on page \S+ undefined"
        r"|There were undefined (references|citations)"
        r"|Label\(s\) may have changed", re.I)),
    ("missing character", re.compile(r"Missing character: There is no")),
    ("error", re.compile(r"^! |^\S.* Error: ")),
]
_OVERFULL = re.compile(r"^Overfull \\hbox \((?P<pt>[0-9.]+)pt too wide\)")
#: overfull lines at least this wide (in points) are listed by ``main``
OVERFULL_PT = 10.0
_OUTPUT = re.compile(r"Output written on (?P<name>\S+) \((?P<pages>\d+) pages?")


def messages(log: str) -> list[str]:
    """Split a TeX log into messages, joining lines TeX wrapped.

    A message is a line together with its continuation lines: lines that
    follow a line of exactly 79 characters (TeX's wrap width), and lines of
    a ``Package x Warning:`` block that start with ``(x)``.
    """
    out: list[str] = []
    previous_full = False
    for line in log.splitlines():
        continues = previous_full or (out and re.match(r"^\([A-Za-z@-]+\)\s", line))
        if continues and out:
            out[-1] += ("" if previous_full else " ") + line
        else:
            out.append(line)
        previous_full = len(line) == 79
    return out


def problems(log: str) -> list[tuple[str, str]]:
    """Every (kind, message) of the log that the book must not have."""
    found: list[tuple[str, str]] = []
    for message in messages(log):
        for kind, pattern in _PROBLEMS:
            if pattern.search(message):
                found.append((kind, message.strip()))
                break
    if not _OUTPUT.search(log):
        found.append(("no output", "the log does not say that a PDF was written"))
    return found


def overfull(log: str, min_pt: float = OVERFULL_PT) -> list[tuple[float, str]]:
    """(width in pt, message and the box's text) of every overfull line >= ``min_pt``."""
    lines = log.splitlines()
    out = []
    for i, line in enumerate(lines):
        match = _OVERFULL.match(line)
        if match and float(match.group("pt")) >= min_pt:
            text = next((x.strip() for x in lines[i + 1:i + 3] if x.strip()), "")
            out.append((float(match.group("pt")), f"{line.strip()} {text}"[:200]))
    return out


def pages(log: str) -> int | None:
    """The page count of the PDF the log says it wrote, or None."""
    match = None
    for match in _OUTPUT.finditer(log):
        pass
    return int(match.group("pages")) if match else None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} path/to/book.log", file=sys.stderr)
        return 2
    path = Path(argv[1])
    if not path.is_file():
        print(f"{path}: no LaTeX log (the LaTeX build did not run)", file=sys.stderr)
        return 1
    log = path.read_text(encoding="utf-8", errors="replace")
    found = problems(log)
    if found:
        print(f"{path}: {len(found)} problem(s) in the LaTeX log:", file=sys.stderr)
        for kind, message in found:
            print(f"  [{kind}] {message[:300]}", file=sys.stderr)
        return 1
    print(f"{path}: no LaTeX errors, missing figures, undefined references or "
          f"missing characters; {pages(log)} pages")
    wide = sorted(overfull(log), reverse=True)
    if wide:
        print(f"{len(wide)} overfull line(s) of at least {OVERFULL_PT:g} pt (not an error; "
              f"the widest first):")
        for _, message in wide[:10]:
            print(f"  {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
