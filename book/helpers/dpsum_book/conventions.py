"""The book's chapter conventions (shared/DESIGN.md, "Chapter conventions"), measured.

Each rule is a function from a page to a list of problems, each naming the
cell it is in; ``tests/test_conventions.py`` runs every rule on every page
and holds the list of chapters still excused from some rules. Run as a
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
    "BOOK", "Cell", "Page", "RULES", "figures", "label_pages", "load_page", "pages",
    "problems", "rules_for", "source_label_patterns", "wrong_page_refs",
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
}


def rules_for(page: Page, mechanism_chapters: frozenset[str] = frozenset()) -> list[str]:
    """The rules that apply to ``page``.

    Markdown pages (preface, notation, reference): the source's labels, except
    on Appendix C1, the concordance, where no rule applies. Notebooks: every rule about text, code, outputs and
    figures; numbered chapters also the exercise rules; chapters named in
    ``mechanism_chapters`` (by their number, e.g. ``"06"``) also the
    "implement it and audit it" exercise.
    """
    if not page.is_notebook:
        return [] if page.name == CONCORDANCE else ["source_labels"]
    rules = ["words", "source_labels", "code_lines", "code_width", "output_lines",
             "lab_notes", "alt_text", "style"]
    if page.is_chapter:
        rules += ["exercises", "computational_exercise"]
        if page.name[:2] in mechanism_chapters:
            rules.append("implement_and_audit")
    return [r for r in RULES if r in rules]


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
