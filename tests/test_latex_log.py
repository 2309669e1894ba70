"""The check of the PDF book's LaTeX log (tests/latex_log.py) catches what it promises."""

from __future__ import annotations

import pytest

from latex_log import main, messages, overfull, pages, problems

CLEAN = """This is XeTeX, Version 3.141592653-2.6-0.999994 (TeX Live 2022/Debian)
Package hyperref Warning: Token not allowed in a PDF string (Unicode):
(hyperref)                removing `math shift' on input line 765.

Underfull \\hbox (badness 10000) in paragraph at lines 506--508
Output written on dpsum.pdf (474 pages).
"""


def test_a_clean_log_passes_and_gives_the_page_count(tmp_path, capsys):
    assert problems(CLEAN) == []
    assert pages(CLEAN) == 474
    log = tmp_path / "book.log"
    log.write_text(CLEAN)
    assert main(["latex_log.py", str(log)]) == 0
    assert "474 pages" in capsys.readouterr().out


@pytest.mark.parametrize("line, kind", [
    ("! Undefined control sequence.", "error"),
    ("! LaTeX Error: Environment exercise undefined.", "error"),
    ("! Improper alphabetic constant.", "error"),
    ("! LaTeX Error: File `figure.png' not found.", "missing figure"),
    ("! Unable to load picture or PDF file 'a.png'.", "missing figure"),
    ("LaTeX Warning: Reference `book/x:eq-1' on page 3 undefined on input line 9.",
     "undefined reference"),
    ("LaTeX Warning: Hyper reference `book/api:dpsum.foo' on page 12 undefined on input line 7.",
     "undefined reference"),
    ("LaTeX Warning: Citation `dwork2014' on page 4 undefined on input line 30.",
     "undefined reference"),
    ("LaTeX Warning: There were undefined references.", "undefined reference"),
    ("Missing character: There is no ⊕ (U+2295) in font FreeSerif:mode=node;!",
     "missing character"),
])
def test_each_kind_of_problem_fails(tmp_path, line, kind):
    log = CLEAN.replace("Underfull", line + "\nUnderfull")
    assert [k for k, _ in problems(log)] == [kind]
    path = tmp_path / "book.log"
    path.write_text(log)
    assert main(["latex_log.py", str(path)]) == 1


def test_a_reference_wrapped_by_tex_is_joined_and_caught():
    wrapped = ("LaTeX Warning: Hyper reference `book/05_elliptical_gaussian:elliptical-th"
               "m-private' on page 3 undefined on input line 12.")
    lines = [wrapped[:79], wrapped[79:]]
    assert messages("\n".join(lines)) == [wrapped]
    assert [k for k, _ in problems(CLEAN + "\n".join(lines))] == ["undefined reference"]


def test_a_log_without_output_fails(tmp_path):
    assert [k for k, _ in problems("! Emergency stop.\n")] == ["error", "no output"]
    assert pages("no pdf here") is None
    assert main(["latex_log.py", str(tmp_path / "absent.log")]) == 1


def test_wide_overfull_lines_are_listed_but_do_not_fail(tmp_path, capsys):
    log = CLEAN.replace("Underfull", "Overfull \\hbox (31.5pt too wide) in alignment at lines 170--190\n"
                        "[]\\TU/FreeMono(0)/m/n/10 dpsum.elliptical_gaussian_mecha\n"
                        "Overfull \\hbox (2.1pt too wide) in paragraph at lines 5--6\n"
                        "[]\\TU/FreeSerif(0)/m/n/10 a word\nUnderfull")
    assert problems(log) == []
    wide = overfull(log)
    assert [w for w, _ in wide] == [31.5]
    assert "elliptical_gaussian_mecha" in wide[0][1]
    path = tmp_path / "book.log"
    path.write_text(log)
    assert main(["latex_log.py", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 overfull line(s)" in out and "31.5pt" in out
