"""The book's chapter conventions (shared/DESIGN.md, "Chapter conventions"), measured.

Each rule is a function from a page to a list of problems, each naming the
cell it is in; ``tests/test_conventions.py`` runs every rule on every page.
The third edition's book-wide rules 1-5 are :func:`check_research_log`,
:func:`check_glued_numbers`, :func:`check_captions` (the mechanism: cell
metadata ``mystnb.figure``, written by :func:`set_figure_caption`),
:func:`check_exercise_order` and :func:`check_numpy_mechanism`; the pages
that do not meet a rule yet are listed in :data:`PENDING`. Run as a
module, it prints the per-chapter figures::

    python -m dpsum_book.conventions            # every page of book/
    python -m dpsum_book.conventions book/02_gaussian_mechanism.ipynb

Only the standard library is used: the notebooks are read as JSON.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from dpsum_book.alt import alt_line, stored_alt
from dpsum_book.style import MAX_WIDTH_PX

__all__ = [
    "BOOK", "Cell", "MECHANISM_CHAPTERS", "PENDING", "Page", "RULES", "figures",
    "label_pages", "load_page", "pages", "problems", "rules_for", "set_figure_caption",
    "source_label_patterns", "wrong_page_refs",
]

#: the book's directory (this distribution lives in ``book/helpers``)
BOOK = Path(__file__).resolve().parents[2]

MAX_WORDS = 4500
MAX_CELL_LINES = 20
MAX_LINE_CHARS = 80
MAX_OUTPUT_LINES = 15
MIN_EXERCISES = 3

#: tags that hide a code cell's source from the page (or behind a toggle)
HIDDEN_TAGS = frozenset({"hide-input", "hide-cell", "remove-input", "remove-cell"})
#: the page whose concordance may name the source's labels
CONCORDANCE = "c1_notes_on_sources"
DIFFICULTIES = ("easy", "medium", "hard")

IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")
TEXT_TYPES = ("text/plain", "text/markdown", "text/latex")

LAB_NOTES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx)) for name, rx in (
        ("a shell code block", r"```+\s*\{?(?:code-block\}\s*)?(?:bash|sh|shell|console|zsh)\b"),
        ("a shell prompt", r"(?m)^\s*\$ \S"),
        ("a /tmp path", r"/tmp\b"),
        ("flock", r"\bflock\b"),
        ("a benchmark script path", r"\bbenchmarks/[\w./-]*\.py\b"),
        ("a machine description", r"(?i)\b(?:two|\d+) cores\b|\bidle machine\b"),
        ("a shell command", r"(?i)(?:\.venv/bin/|\bpip install\b|\bjupyter nbconvert\b|"
                            r"\bmake (?:test|book|bench|lab|pdf|setup)\b|\bpython -m\b|"
                            r"\bpython benchmarks\b)"),
    ))

_EXERCISE = re.compile(r"^(?:```+|:::+)\{exercise(?:-start)?\}[ \t]*(.*)$", re.M)
_SOLUTION = re.compile(r"^(?:```+|:::+)\{solution(?:-start)?\}[ \t]*(\S*)[^\n]*\n((?::[^\n]*\n)*)", re.M)
_SOLUTION_START = re.compile(r"^(?:```+|:::+)\{solution-start\}[ \t]*(\S+)", re.M)
_SOLUTION_END = re.compile(r"^(?:```+|:::+)\{solution-end\}", re.M)
_EXERCISE_LABEL = re.compile(r":label:[ \t]*(\S+)")
_IMPLEMENT_AUDIT = re.compile(r"(?i)\bimplement\b.*\baudit")
_USE_STYLE = re.compile(r"\buse_style\(")


@dataclass(frozen=True)
class Cell:
    """One cell of a page: its place, kind, source, tags and outputs."""

    index: int
    kind: str  # "markdown", "code" or "raw"
    source: str
    tags: frozenset[str] = frozenset()
    outputs: tuple[dict[str, object], ...] = ()
    metadata: dict[str, object] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """``cell 12 (code)``: how a problem message names this cell."""
        return f"cell {self.index} ({self.kind})"

    @property
    def visible(self) -> bool:
        """A code cell whose source is shown on the page without a toggle."""
        return self.kind == "code" and not (self.tags & HIDDEN_TAGS)

    def output_text(self) -> str:
        """The text of the outputs as a reader sees it (images excluded)."""
        parts: list[str] = []
        for out in self.outputs:
            if out.get("output_type") == "stream":
                parts.append(_joined(out.get("text", "")))
                continue
            data = out.get("data", {})
            if not isinstance(data, dict):
                continue
            if any(t in data for t in IMAGE_TYPES):
                continue  # its text/plain is "<Figure ...>", not shown
            for t in TEXT_TYPES:
                if t in data:
                    parts.append(_joined(data[t]))
                    break
        return "".join(parts)

    def images(self) -> list[tuple[str, str]]:
        """``(mime type, data)`` of the image outputs."""
        found = []
        for out in self.outputs:
            data = out.get("data", {})
            if isinstance(data, dict):
                found += [(t, _joined(data[t])) for t in IMAGE_TYPES if t in data]
        return found


@dataclass(frozen=True)
class Page:
    """A page of the book: a chapter notebook or a markdown page."""

    path: Path
    cells: tuple[Cell, ...]

    @property
    def name(self) -> str:
        """The file stem, e.g. ``02_gaussian_mechanism``."""
        return self.path.stem

    @property
    def is_notebook(self) -> bool:
        """True for a ``.ipynb`` chapter or appendix."""
        return self.path.suffix == ".ipynb"

    @property
    def is_chapter(self) -> bool:
        """A numbered chapter (``NN_name``), not an appendix or reference page."""
        return self.is_notebook and bool(re.match(r"\d\d_", self.name))

    def markdown(self) -> list[Cell]:
        """The markdown cells (a markdown page is one markdown cell)."""
        return [c for c in self.cells if c.kind == "markdown"]

    def code(self) -> list[Cell]:
        """The code cells."""
        return [c for c in self.cells if c.kind == "code"]


def _joined(text: object) -> str:
    if isinstance(text, list):
        return "".join(str(t) for t in text)
    return str(text)


def load_page(path: str | Path) -> Page:
    """Read a notebook (as JSON) or a markdown page.

    Parameters
    ----------
    path : str or Path
        A ``.ipynb`` or ``.md`` file.

    Returns
    -------
    Page
    """
    path = Path(path)
    if path.suffix == ".md":
        return Page(path, (Cell(0, "markdown", path.read_text(encoding="utf-8")),))
    if path.suffix != ".ipynb":
        raise ValueError(f"path must be a .ipynb or .md file, got a {path.suffix!r} file")
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for i, c in enumerate(nb["cells"]):
        meta = c.get("metadata", {})
        cells.append(Cell(i, c["cell_type"], _joined(c.get("source", "")),
                          frozenset(meta.get("tags", [])), tuple(c.get("outputs", [])), meta))
    return Page(path, tuple(cells))


def pages(book: Path = BOOK) -> list[Path]:
    """Every notebook and markdown page directly in ``book``, sorted."""
    return sorted([*book.glob("*.ipynb"), *book.glob("*.md")])


#: a target defined on a page: ``(name)=`` above a heading, or a directive's
#: ``:label:`` / ``:name:`` option
_TARGET = re.compile(r"^\((?P<a>[\w:-]+)\)=|^:label:[ \t]*(?P<b>\S+)|^:name:[ \t]*(?P<c>\S+)",
                     re.MULTILINE)
#: one or more references followed by the page they are said to be on:
#: ``{ref}`a`, {prf:ref}`b` ({doc}`page`)``
_REFS_ON_PAGE = re.compile(r"((?:\{(?:prf:)?ref\}`[^`]+`(?:,\s*)?)+)\s*\(\{doc\}`([^`]+)`\)")


def label_pages(book: Path = BOOK) -> dict[str, str]:
    """Every cross-reference target of the book, mapped to the page defining it.

    Parameters
    ----------
    book : Path
        The book's directory.

    Returns
    -------
    dict of str to str
        Target name to page name (file stem).
    """
    found: dict[str, str] = {}
    for path in pages(book):
        for cell in load_page(path).markdown():
            for m in _TARGET.finditer(cell.source):
                found[m.group("a") or m.group("b") or m.group("c")] = path.stem
    return found


def wrong_page_refs(page: Page, targets: dict[str, str]) -> list[str]:
    """References written as ``{ref}`label` ({doc}`page`)`` whose label is not on that page.

    Parameters
    ----------
    page : Page
        The page to check.
    targets : dict of str to str
        :func:`label_pages` of the book.

    Returns
    -------
    list of str
        One problem per reference that names the wrong page.
    """
    probs = []
    for cell in page.markdown():
        for m in _REFS_ON_PAGE.finditer(cell.source):
            for ref in re.findall(r"`([^`]+)`", m.group(1)):
                label = ref.rsplit("<", 1)[-1].rstrip(">")
                if targets.get(label) != m.group(2):
                    probs.append(f"{cell.where}: {label} is said to be in {m.group(2)}, but it "
                                 f"is defined in {targets.get(label)}")
    return probs


# ------------------------------------------------------------------ the rules

@functools.lru_cache(maxsize=4)
def source_label_patterns(path: Path | None = None) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The source's labels, ``(name, pattern)``, from ``book/data/source_labels.txt``."""
    path = path or BOOK / "data" / "source_labels.txt"
    found: list[tuple[str, re.Pattern[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, rx = line.partition(" :: ")
        if not sep:
            raise ValueError(f"{path.name}: line {line!r} is not 'name :: regex'")
        found.append((name.strip(), re.compile(rx.strip())))
    return tuple(found)


def words(page: Page) -> int:
    """Whitespace-separated tokens of the markdown cells, maths included."""
    return sum(len(c.source.split()) for c in page.markdown())


def check_words(page: Page) -> list[str]:
    """At most 4,500 words of markdown: one lecture."""
    n = words(page)
    if n <= MAX_WORDS:
        return []
    longest = max(page.markdown(), key=lambda c: len(c.source.split()))
    return [f"{n} words of markdown (at most {MAX_WORDS}); the longest is "
            f"{longest.where}, {len(longest.source.split())} words: split the chapter"]


def source_labels(page: Page) -> list[tuple[Cell, str, str, str, int]]:
    """``(cell, part, label name, first match, count)`` for each source label found;
    ``part`` is ``"text"``, ``"source"`` (code) or ``"output"``."""
    patterns = source_label_patterns()
    found = []
    for cell in page.cells:
        for part, text in (("text" if cell.kind == "markdown" else "source", cell.source),
                           ("output", cell.output_text())):
            for name, rx in patterns:
                hits = [m.group(0) for m in rx.finditer(text)]
                if hits:
                    found.append((cell, part, name, hits[0], len(hits)))
    return found


def check_source_labels(page: Page) -> list[str]:
    """None of the source report's labels outside Appendix C1."""
    return [f"{cell.where} {part}: the source's label {first!r} ({name}) x{count}; use the "
            f"book's name and label (Appendix C1 has the concordance)"
            for cell, part, name, first, count in source_labels(page)]


def check_code_lines(page: Page) -> list[str]:
    """A visible code cell has at most 20 lines."""
    return [f"{c.where}: {n} lines (at most {MAX_CELL_LINES} visible; move the machinery "
            f"to dpsum_book or tag the cell hide-input)"
            for c in page.code() if c.visible
            for n in [len(c.source.rstrip("\n").splitlines())] if n > MAX_CELL_LINES]


def check_code_width(page: Page) -> list[str]:
    """A visible code cell's lines have at most 80 characters."""
    probs = []
    for c in page.code():
        if not c.visible:
            continue
        long = [(i + 1, len(line)) for i, line in enumerate(c.source.splitlines())
                if len(line) > MAX_LINE_CHARS]
        if long:
            i, n = max(long, key=lambda t: t[1])
            probs.append(f"{c.where}: {len(long)} line(s) over {MAX_LINE_CHARS} characters, "
                         f"the longest line {i} with {n}")
    return probs


def check_output_lines(page: Page) -> list[str]:
    """A code cell's shown output has at most 15 lines."""
    probs = []
    for c in page.code():
        if c.tags & {"remove-output", "remove-cell", "hide-output"}:
            continue
        n = len(c.output_text().rstrip("\n").splitlines())
        if n > MAX_OUTPUT_LINES:
            probs.append(f"{c.where}: output of {n} lines (at most {MAX_OUTPUT_LINES})")
    return probs


def check_lab_notes(page: Page) -> list[str]:
    """No lab notes in the text: shell commands, /tmp, flock, script paths, machines."""
    probs = []
    for c in page.markdown():
        for name, rx in LAB_NOTES:
            m = rx.search(c.source)
            if m:
                probs.append(f"{c.where}: {name} ({m.group(0).strip()!r}) is a lab note")
    return probs


@dataclass(frozen=True)
class Exercise:
    """An exercise as found in a chapter."""

    cell: Cell
    label: str
    title: str
    difficulty: str | None
    solution_hidden: bool | None  # None: no solution found
    solution_code: str  # the code cells of a gated solution (solution-start ... end)


def exercises(page: Page) -> list[Exercise]:
    """The chapter's exercises, with their solutions."""
    cells = page.cells
    sols: dict[str, tuple[bool | None, str]] = {}
    for i, c in enumerate(cells):
        if c.kind != "markdown":
            continue
        for m in _SOLUTION.finditer(c.source):
            hidden = "dropdown" in m.group(2)
            code = ""
            if _SOLUTION_START.match(m.group(0)):
                j = i + 1
                while j < len(cells) and not (cells[j].kind == "markdown"
                                              and _SOLUTION_END.search(cells[j].source)):
                    if cells[j].kind == "code":
                        code += cells[j].source + "\n"
                    j += 1
            sols[m.group(1)] = (hidden, code)
    found = []
    for c in page.markdown():
        for m in _EXERCISE.finditer(c.source):
            title = m.group(1).strip()
            rest = c.source[m.end():]
            lab = _EXERCISE_LABEL.search(rest.split("\n\n", 1)[0])
            label = lab.group(1) if lab else ""
            first = re.match(r"(?i)(easy|medium|hard)\b\s*:", title)
            shown, code = sols.get(label, (None, ""))
            found.append(Exercise(c, label, title, first.group(1).lower() if first else None,
                                  shown, code))
    return found


def check_exercises(page: Page) -> list[str]:
    """At least three exercises, each with a difficulty label and a hidden solution."""
    exs = exercises(page)
    probs = []
    if len(exs) < MIN_EXERCISES:
        probs.append(f"{len(exs)} exercises (at least {MIN_EXERCISES})")
    for e in exs:
        name = e.label or repr(e.title) or "an unlabelled exercise"
        if e.difficulty is None:
            probs.append(f"{e.cell.where}: exercise {name} has no difficulty label (its title "
                         f"must start with 'Easy:', 'Medium:' or 'Hard:')")
        if e.solution_hidden is None:
            probs.append(f"{e.cell.where}: exercise {name} has no solution")
        elif not e.solution_hidden:
            probs.append(f"{e.cell.where}: the solution of {name} is not hidden "
                         f"(':class: dropdown')")
    return probs


def check_computational_exercise(page: Page) -> list[str]:
    """An exercise whose (gated) solution has an executed code cell that asserts."""
    if any(re.search(r"^\s*assert\b", e.solution_code, re.M) for e in exercises(page)):
        return []
    return ["no computational exercise: none has a solution-start/solution-end solution "
            "whose code cell asserts"]


def check_implement_and_audit(page: Page) -> list[str]:
    """A mechanism chapter's 'implement it and audit it' exercise."""
    for e in exercises(page):
        if _IMPLEMENT_AUDIT.search(e.title):
            if re.search(r"\baudit", e.solution_code) and re.search(r"^\s*assert\b",
                                                                    e.solution_code, re.M):
                return []
            return [f"{e.cell.where}: exercise {e.label} ('{e.title}') needs a gated solution "
                    f"whose code runs the audit and asserts its verdict"]
    return ["no 'implement it and audit it' exercise (an exercise titled e.g. "
            "'Hard: implement the mechanism and audit it')"]


def figure_cells(page: Page) -> list[Cell]:
    """The code cells with an image output."""
    return [c for c in page.code() if c.images()]


def check_alt_text(page: Page) -> list[str]:
    """Every figure has alt text: a '# alt: ...' first line, copied into the metadata."""
    probs = []
    for c in figure_cells(page):
        line = alt_line(c.source)
        if not line:
            probs.append(f"{c.where}: a figure without alt text (start the cell with "
                         f"'# alt: what the figure shows')")
        elif stored_alt(c.metadata) != line:
            probs.append(f"{c.where}: alt text not copied to the cell metadata; run "
                         f"python -m dpsum_book.alt {page.path.name}")
    return probs


def png_width(data: str) -> int | None:
    """Pixel width of a base64 PNG (None if it is not a PNG)."""
    raw = base64.b64decode(data[:64].strip() + "=" * (-len(data[:64].strip()) % 4))
    if raw[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int(struct.unpack(">I", raw[16:20])[0])


def check_style(page: Page) -> list[str]:
    """A plotting chapter calls ``dpsum_book.use_style()`` before its first figure,
    and no figure is wider than the text column (so it is not scaled down)."""
    figs = figure_cells(page)
    if not figs:
        return []
    probs = []
    styled = [c.index for c in page.code() if _USE_STYLE.search(c.source)]
    if not styled or styled[0] > figs[0].index:
        probs.append(f"{figs[0].where}: the first figure comes before any use_style() call "
                     f"(from dpsum_book import use_style; use_style())")
    for c in figs:
        for mime, data in c.images():
            w = png_width(data) if mime == "image/png" else None
            if w is not None and w > MAX_WIDTH_PX:
                probs.append(f"{c.where}: a figure {w} px wide (the column is {MAX_WIDTH_PX} "
                             f"px: it would be scaled down, and its fonts below 9 pt)")
    return probs


# ------------------------------------------------- the book-wide rules 1-5

#: Rule 1: words that show the research log behind a page (issue 41). They may
#: appear only on the relation-to-the-sources appendix (:data:`CONCORDANCE`).
RESEARCH_LOG: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx)) for name, rx in (
        ("the report", r"(?i)\bthe (?:research )?report\b"),
        ("a research report", r"(?i)\bresearch reports?\b"),
        ("the source(s)", r"(?i)\bthe sources?\b(?! code)"),
        ("an erratum", r"(?i)\berrat(?:um|a)\b"),
        ("a correction number", r"(?i)\bcorrections?\s+E\d+\b|\bE\d{1,3}\b(?=[\s,.;:)])"),
        ("the first edition", r"(?i)\bfirst edition\b"),
        ("an earlier draft", r"(?i)\bearlier drafts?\b"),
        ("an issue name", r"(?i)\bissues? #?\d+\b|#\d{2,}\b"),
        ("a test-file name", r"\btests?/[\w./-]+|\btest_\w+\.py\b"),
        ("a chapter-style anchor", r"\bch\d+-[\w-]+"),
    ))

#: Rule 2: a decimal with two or more significant digits, or a percentage
_DECIMAL = re.compile(r"(?<![\w.])(\d*\.\d+|\d+)(\s*(?:\\?%|per ?cent\b))?(?![\w.]*\d)")
#: what precedes a number that is a label, not a value: "Theorem 3.20",
#: "Propositions 1.3, 1.4 and 1.6", "version 1.0"
_LABEL_BEFORE = re.compile(
    r"(?i)(?:theorems?|lemmas?|corollar(?:y|ies)|propositions?|definitions?|sections?|"
    r"chapters?|examples?|exercises?|remarks?|algorithms?|figures?|tables?|appendix|"
    r"equations?|eqs?\.|§|pages?|pp?\.|versions?|v|python)\s*\(?(?:\d+(?:\.\d+)*\s*(?:,|and|or|-|–)"
    r"\s*)*$")
#: constants a page may quote without a cell printing them
DEFINED_CONSTANTS = frozenset({"1.96", "2.58", "3.14", "2.718",
                               "1.25"})  # 1.25: the classic calibration's ln(1.25/delta)
_FENCED_CODE = re.compile(r"^(`{3,}|~{3,})(?!\{)[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_OPTION_LINE = re.compile(r"^:[\w-]+:.*$", re.M)
_TARGET_LINE = re.compile(r"^\([\w:-]+\)=\s*$", re.M)
_URL = re.compile(r"https?://\S+|\]\([^)]*\)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _prose(text: str) -> str:
    """Markdown with code, roles' targets, options, labels and links removed."""
    for rx in (_FENCED_CODE, _INLINE_CODE, _OPTION_LINE, _TARGET_LINE, _URL):
        text = rx.sub(" ", text)
    return text


def significant_digits(number: str) -> int:
    """Significant digits of a written number: ``0.05`` has 1, ``1.0`` has 2."""
    digits = number.replace(".", "").lstrip("0")
    return len(digits)


def quoted_numbers(text: str) -> list[tuple[str, bool]]:
    """The numbers of markdown ``text`` that rule 2 checks, ``(number, percent)``.

    A decimal with two or more significant digits (``0.629``, ``1.5``) or a
    percentage with two or more (``32%``); not integers, years, labels such as
    "Theorem 3.20", numbers in code, links or directive options.
    """
    prose = _prose(text)
    found = []
    for m in _DECIMAL.finditer(prose):
        number, percent = m.group(1), bool(m.group(2))
        if "." not in number and not percent:
            continue
        if significant_digits(number) < 2:
            continue
        if _LABEL_BEFORE.search(prose[max(0, m.start() - 80):m.start()]):
            continue
        if prose[m.end():m.end() + 1] == "." and prose[m.end() + 1:m.end() + 2].isdigit():
            continue  # "1.0.4": a version
        found.append((number, percent))
    return found


def _printed_values(page: Page) -> tuple[set[str], list[float]]:
    """The numbers of the page's code (defined constants, as written) and of its
    outputs (printed, as floats)."""
    constants: set[str] = set(DEFINED_CONSTANTS)
    printed: list[float] = []
    for c in page.code():
        constants.update(m.group(0) for m in _NUMBER.finditer(c.source))
        for m in _NUMBER.finditer(c.output_text()):
            try:
                printed.append(float(m.group(0)))
            except ValueError:  # pragma: no cover - the pattern is a float
                pass
    return constants, printed


def _matches(number: str, percent: bool, constants: set[str], printed: list[float]) -> bool:
    value = float(number)
    if number in constants or any(_same(value, c) for c in constants):
        return True
    places = len(number.split(".")[1]) if "." in number else 0
    for q in printed:
        for v in ((q, q * 100) if percent else (q,)):
            if f"{abs(v):.{places}f}" == f"{abs(value):.{places}f}":
                return True
    return False


def _same(value: float, constant: str) -> bool:
    try:
        return float(constant) == value
    except ValueError:  # pragma: no cover
        return False


def check_research_log(page: Page) -> list[str]:
    """Rule 1: no research log ("the report", errata, issue and test-file names,
    "ch6-" anchors) in the prose and outputs of any page but Appendix C1."""
    probs = []
    for c in page.cells:
        texts = [("text", c.source)] if c.kind == "markdown" else []
        texts.append(("output", c.output_text()))
        for part, text in texts:
            for name, rx in RESEARCH_LOG:
                m = rx.search(text)
                if m:
                    probs.append(f"{c.where} {part}: {name} ({m.group(0)!r}) is research log; "
                                 f"say it as a fact, or move it to Appendix C1")
    return probs


def check_glued_numbers(page: Page) -> list[str]:
    """Rule 2: a decimal in the prose (two or more significant digits) is glued
    from a cell, printed by a cell of the page, or a constant its code defines."""
    constants, printed = _printed_values(page)
    probs = []
    for c in page.markdown():
        bad = [n + ("%" if pct else "") for n, pct in quoted_numbers(c.source)
               if not _matches(n, pct, constants, printed)]
        if bad:
            probs.append(f"{c.where}: {len(bad)} number(s) neither glued nor printed by a "
                         f"cell: {', '.join(bad[:6])}" + (" ..." if len(bad) > 6 else "")
                         + " (glue them: myst_nb.glue and {glue:text}`key:.3f`)")
    return probs


#: a figure in markdown: ``{figure}`` or ``{glue:figure}``, with its body
_FIGURE_DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<kind>figure|glue:figure)\}[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.M | re.S)


def figure_caption(cell: Cell) -> tuple[str | None, str | None]:
    """``(name, caption)`` of a figure cell, from ``mystnb.figure`` in its metadata."""
    fig = cell.metadata.get("mystnb", {})
    fig = fig.get("figure", {}) if isinstance(fig, dict) else {}
    if not isinstance(fig, dict):
        return None, None
    name, caption = fig.get("name"), fig.get("caption")
    return (name if isinstance(name, str) and name.strip() else None,
            caption if isinstance(caption, str) and caption.strip() else None)


def check_captions(page: Page) -> list[str]:
    """Rule 3: every figure is numbered and captioned.

    The book's mechanism: the cell that draws a figure carries
    ``{"mystnb": {"figure": {"name": "fig-...", "caption": "..."}}}`` in its
    metadata, which myst-nb renders as a numbered figure with that caption,
    referred to as {numref}`fig-...`; one figure per cell. A ``{figure}`` or
    ``{glue:figure}`` directive in the text needs a ``:name:`` and a caption.
    """
    probs = []
    for c in figure_cells(page):
        name, caption = figure_caption(c)
        if len(c.images()) > 1:
            probs.append(f"{c.where}: {len(c.images())} figures in one cell (one per cell, "
                         f"so that each gets its own number and caption)")
        if caption is None:
            probs.append(f"{c.where}: a figure without a caption (cell metadata "
                         f"mystnb.figure.caption)")
        if name is None or not name.startswith("fig-"):
            probs.append(f"{c.where}: a figure without a name 'fig-...' (cell metadata "
                         f"mystnb.figure.name) to refer to it by number")
    for c in page.markdown():
        for m in _FIGURE_DIRECTIVE.finditer(c.source):
            body = m.group("body")
            text = "\n".join(line for line in body.splitlines()
                             if not line.lstrip().startswith(":")).strip()
            if not text:
                probs.append(f"{c.where}: a {{{m.group('kind')}}} without a caption")
            if not re.search(r"^:name:\s*\S", body, re.M):
                probs.append(f"{c.where}: a {{{m.group('kind')}}} without a :name:")
    return probs


def set_figure_caption(path: str | Path, index: int, name: str, caption: str) -> None:
    """Give the figure of cell ``index`` of a notebook its number and caption.

    Writes ``{"mystnb": {"figure": {"name": name, "caption": caption}}}`` into
    the cell's metadata (rule 3's mechanism), in the layout Jupyter writes,
    without re-executing anything. Refer to the figure as {numref}`name`.

    Parameters
    ----------
    path : str or Path
        A ``.ipynb`` notebook.
    index : int
        The index of the code cell that draws the figure.
    name : str
        The figure's target, ``fig-<chapter>-<what>``.
    caption : str
        One paragraph of MyST markdown.
    """
    path = Path(path)
    if not name.startswith("fig-"):
        raise ValueError(f"name must start with 'fig-', got {name!r}")
    if not caption.strip():
        raise ValueError("caption must not be empty")
    nb = json.loads(path.read_text(encoding="utf-8"))
    if not 0 <= index < len(nb["cells"]) or nb["cells"][index]["cell_type"] != "code":
        raise ValueError(f"index must name a code cell of {path.name}, got {index}")
    meta = nb["cells"][index].setdefault("metadata", {})
    meta.setdefault("mystnb", {})["figure"] = {"name": name, "caption": caption}
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def check_exercise_order(page: Page) -> list[str]:
    """Rule 4: exercises come in non-decreasing difficulty (easy, medium, hard)."""
    probs = []
    rank = {d: i for i, d in enumerate(DIFFICULTIES)}
    last = None
    for e in exercises(page):
        if e.difficulty is None:
            continue  # check_exercises reports it
        if last is not None and rank[e.difficulty] < rank[last.difficulty or "easy"]:
            probs.append(f"{e.cell.where}: exercise {e.label or e.title!r} is "
                         f"{e.difficulty} after {last.label or last.title!r}, "
                         f"{last.difficulty}: order them easy, medium, hard")
        last = e
    return probs


#: the cell tag that marks a chapter's NumPy implementation of its mechanism
MECHANISM_TAG = "numpy-mechanism"
_IMPORT_DPSUM = re.compile(
    r"^[ \t]*(?:import[ \t]+(dpsum(?:\.\w+)*)(?:[ \t]+as[ \t]+(\w+))?"
    r"|from[ \t]+dpsum(?:\.\w+)*[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n]*)))", re.M)


def dpsum_names(page: Page) -> set[str]:
    """The names the page's code binds to ``dpsum`` and its modules' members."""
    names: set[str] = set()
    for c in page.code():
        for m in _IMPORT_DPSUM.finditer(c.source):
            if m.group(1):
                names.add(m.group(2) or m.group(1).split(".")[0])
            else:
                listed = (m.group(3) or m.group(4)).split("#")[0]
                names.update(n.split(" as ")[-1].strip() for n in listed.split(",")
                             if n.strip())
    return names


def _uses(source: str, names: set[str]) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(n)}\s*[.(]", source) for n in names)


def check_numpy_mechanism(page: Page) -> list[str]:
    """Rule 5: a mechanism chapter shows its mechanism in NumPy, in one visible
    code cell tagged ``numpy-mechanism`` of at most 20 lines that defines it
    (a ``def``), uses NumPy and calls nothing of ``dpsum``; the next code cell
    checks it against ``dpsum`` (calls it) and asserts."""
    tagged = [c for c in page.code() if MECHANISM_TAG in c.tags]
    if not tagged:
        return [f"no NumPy implementation of the mechanism (a visible code cell tagged "
                f"{MECHANISM_TAG!r})"]
    names = dpsum_names(page)
    code = page.code()
    probs = []
    for c in tagged:
        n = len(c.source.rstrip("\n").splitlines())
        if not c.visible:
            probs.append(f"{c.where}: the NumPy mechanism is hidden (it must be visible)")
        if n > MAX_CELL_LINES:
            probs.append(f"{c.where}: the NumPy mechanism has {n} lines (at most "
                         f"{MAX_CELL_LINES})")
        if not re.search(r"^\s*def \w+", c.source, re.M):
            probs.append(f"{c.where}: the NumPy mechanism defines no function")
        if not re.search(r"\bnp\.", c.source):
            probs.append(f"{c.where}: the NumPy mechanism does not use NumPy (np.)")
        if _uses(c.source, names):
            probs.append(f"{c.where}: the NumPy mechanism calls dpsum; write it in NumPy")
        later = [d for d in code if d.index > c.index]
        nxt = later[0] if later else None
        if nxt is None or not (_uses(nxt.source, names)
                               and re.search(r"^\s*assert\b", nxt.source, re.M)):
            probs.append(f"{c.where}: the next code cell must check the NumPy mechanism "
                         f"against dpsum (call dpsum and assert)")
    return probs


#: rule name -> check; the order is the order of the report
RULES: dict[str, Callable[[Page], list[str]]] = {
    "words": check_words,
    "source_labels": check_source_labels,
    "code_lines": check_code_lines,
    "code_width": check_code_width,
    "output_lines": check_output_lines,
    "lab_notes": check_lab_notes,
    "exercises": check_exercises,
    "computational_exercise": check_computational_exercise,
    "implement_and_audit": check_implement_and_audit,
    "alt_text": check_alt_text,
    "style": check_style,
    "research_log": check_research_log,
    "glued_numbers": check_glued_numbers,
    "captions": check_captions,
    "exercise_order": check_exercise_order,
    "numpy_mechanism": check_numpy_mechanism,
}


#: Chapters that present a mechanism, by name without their number (renumbering
#: changes nothing): each has an "implement it and audit it" exercise (the
#: reader writes the mechanism; the audit of the chapter "Checking privacy
#: empirically" checks it).
MECHANISM_CHAPTERS: dict[str, str] = {
    "gaussian_mechanism": "the Gaussian mechanism",
    "composition": "composition: a sequence of Gaussian releases and its accountant",
    "laplace_vs_gaussian": "the Laplace and shaped Laplace mechanisms",
    "elliptical_gaussian": "the Elliptical Gaussian mechanism",
    "exponential_mechanism": "the exponential mechanism and the private quantile",
    "clipping_without_a_model": "clipping without a model: the private quantile",
    "gaussian_data": "the Gaussian-data mechanism",
    "private_pipeline": "the private pipeline",
    "dp_sgd": "DP-SGD's private sum of gradients",
    "binary_sums": "randomized response, binomial noise, sample-and-threshold",
    "rows_to_people": "contribution bounds per unit and per-group sums",
}
#: Of those, the chapters that show their mechanism in NumPy (rule 5 of the
#: third edition): every mechanism chapter but the pipeline and DP-SGD, whose
#: mechanisms are compositions of the others'.
NUMPY_MECHANISM_CHAPTERS = frozenset(MECHANISM_CHAPTERS) - {"private_pipeline", "dp_sgd"}

#: the pages that are not lectures: no glued-numbers rule on the reference pages
REFERENCE_PAGES = frozenset({"api", "bibliography"})


def chapter_key(page: Page) -> str:
    """A chapter's name without its number: ``02_gaussian_mechanism`` -> ``gaussian_mechanism``."""
    return page.name[3:] if page.is_chapter else page.name


def rules_for(page: Page, mechanism_chapters: frozenset[str] | None = None) -> list[str]:
    """The rules that apply to ``page``.

    Markdown pages (preface, notation, reference): the source's labels and the
    research log, except on Appendix C1, the concordance, and the glued
    numbers, except on the reference pages. Notebooks: every rule about
    text, code, outputs and figures; numbered chapters also the exercise
    rules; mechanism chapters (``mechanism_chapters``, by their
    :func:`chapter_key`; default :data:`MECHANISM_CHAPTERS`) also the
    "implement it and audit it" exercise and, for
    :data:`NUMPY_MECHANISM_CHAPTERS`, the NumPy mechanism.
    """
    mechanisms = frozenset(MECHANISM_CHAPTERS) if mechanism_chapters is None \
        else mechanism_chapters
    if not page.is_notebook:
        rules = [] if page.name == CONCORDANCE else ["source_labels", "research_log"]
        if page.name not in REFERENCE_PAGES:
            rules.append("glued_numbers")
        return [r for r in RULES if r in rules]
    rules = ["words", "source_labels", "code_lines", "code_width", "output_lines",
             "lab_notes", "alt_text", "style", "research_log", "glued_numbers", "captions"]
    if page.is_chapter:
        rules += ["exercises", "computational_exercise", "exercise_order"]
        key = chapter_key(page)
        if key in mechanisms:
            rules.append("implement_and_audit")
            if key in NUMPY_MECHANISM_CHAPTERS:
                rules.append("numpy_mechanism")
    return [r for r in RULES if r in rules]


# ------------------------------------------------------ what is not done yet

#: The ONE list of pages that do not meet a rule yet: rule -> page -> why (the
#: owner issue and the first problem when the entry was written). The test
#: prints it; an entry whose page now passes its rule fails the test ("remove
#: it"), so the list only shrinks. Pages not listed here meet every rule.
PENDING: dict[str, dict[str, str]] = {}



def problems(page: Page, rule: str) -> list[str]:
    """The problems ``rule`` finds on ``page``, each naming its cell."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {sorted(RULES)}, got {rule!r}")
    return RULES[rule](page)


# ----------------------------------------------------------------- the report

def figures(page: Page) -> dict[str, int]:
    """The per-chapter figures of the closing notes."""
    visible = [c for c in page.code() if c.visible]
    exs = exercises(page)
    return {
        "words": words(page),
        "figures": sum(len(c.images()) for c in page.code()),
        "alt": sum(1 for c in figure_cells(page) if alt_line(c.source)),
        "exercises": len(exs),
        "labelled": sum(1 for e in exs if e.difficulty),
        "cell": max((len(c.source.rstrip("\n").splitlines()) for c in visible), default=0),
        "line": max((len(line) for c in visible for line in c.source.splitlines()), default=0),
        "output": max((len(c.output_text().rstrip("\n").splitlines()) for c in page.code()),
                      default=0),
        "labels": sum(hit[-1] for hit in source_labels(page)),
    }


def report(paths: list[Path]) -> str:
    """A table of :func:`figures`, one row per page."""
    cols = ["words", "figures", "alt", "exercises", "labelled", "cell", "line", "output",
            "labels"]
    head = f"{'page':26s}" + "".join(f"{c:>10s}" for c in cols)
    rows = [head]
    for p in paths:
        page = load_page(p)
        f = figures(page)
        rows.append(f"{page.name:26s}" + "".join(f"{f[c]:>10d}" for c in cols))
    legend = ("words: markdown tokens; figures: image outputs (alt: with a '# alt:' line); "
              "exercises (labelled: with a difficulty); cell/line: longest visible code cell "
              "(lines) and line (characters); output: longest output (lines); labels: the "
              "source's labels in text, code and outputs")
    return "\n".join(rows + ["", legend])


def main(argv: list[str] | None = None) -> int:
    """Print :func:`report` for the pages given (default: every page of the book)."""
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or [p for p in pages() if p.suffix == ".ipynb"]
    print(report(paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
