"""The chapter conventions of the second edition (shared/DESIGN.md), as tests.

Every rule of :mod:`dpsum_book.conventions` runs on every page it applies
to; a failure names the page, the cell and what to change. Chapters that
their owner issue has not rewritten yet are excused from some rules in ONE
place, :data:`EXCUSED` below. An excused rule that the chapter already
passes fails too ("remove it from EXCUSED"), so the list only shrinks; when
the four book issues are done it is empty.

The figures per chapter (words, figures, exercises, longest visible cell and
line, the source's labels): ``python -m dpsum_book.conventions``.
"""

from __future__ import annotations

import pytest

from dpsum_book.conventions import (BOOK, RULES, label_pages, load_page, pages, problems,
                                    rules_for, source_label_patterns, wrong_page_refs)

#: Chapters that present a mechanism, by number: each has an "implement it
#: and audit it" exercise (the reader writes the mechanism; the audit of the
#: chapter "Checking privacy empirically" checks it). 05 is not one (quadratic
#: forms); 08 (private quantile, adaptive clipping) and 15 (DP-SGD) are, once
#: they exist.
MECHANISM_CHAPTERS: dict[str, str] = {
    "02": "the Gaussian mechanism",
    "04": "the Laplace and shaped Laplace mechanisms",
    "06": "the Elliptical Gaussian mechanism",
    "08": "clipping without a model: the private quantile, adaptive clipping",
    "09": "the Gaussian-data mechanism",
    "12": "the private pipeline",
    "15": "DP-SGD's private sum of gradients",
    "16": "randomized response, binomial noise, sample-and-threshold",
}

FOUNDATIONS = "issue 29 (foundations)"
VECTORS = "issue 30 (vectors)"
ATTACKS = "issue 32 (attacks, appendices and PDF)"
PIPELINE = "issue 28 (pipeline)"
LIBRARY = "issue 25 (library)"

_CODE = {"code_lines", "code_width", "alt_text", "style"}
_EXERCISES = {"exercises", "implement_and_audit"}

#: page -> (rules it is excused from, the issue that owns its rewrite).
#: The ONLY list of exceptions; it must be empty when the book issues are done.
EXCUSED: dict[str, tuple[frozenset[str], str]] = {
}

_MECHANISMS = frozenset(MECHANISM_CHAPTERS)
PAGES = [load_page(p) for p in pages()]
CASES = [(page, rule) for page in PAGES for rule in rules_for(page, _MECHANISMS)]


@pytest.mark.parametrize("page, rule", CASES, ids=[f"{p.name}-{r}" for p, r in CASES])
def test_convention(page, rule):
    found = problems(page, rule)
    excused, owner = EXCUSED.get(page.name, (frozenset(), ""))
    if rule in excused:
        if not found:
            pytest.fail(f"{page.name} now passes {rule!r}: remove it from EXCUSED in "
                        f"tests/test_conventions.py")
        pytest.xfail(f"{page.name}: {rule!r} excused until {owner} rewrites it; "
                     f"{len(found)} problems, the first: {found[0]}")
    assert not found, f"{page.path.name} breaks {rule!r}:\n" + "\n".join(
        f"  {page.name}, {p}" for p in found)


def test_excused_pages_and_rules_exist():
    names = {p.name: p for p in PAGES}
    for name, (rules, owner) in EXCUSED.items():
        assert name in names, f"EXCUSED names {name!r}, which is not a page of book/"
        assert rules, f"EXCUSED[{name!r}] excuses no rule: remove the entry"
        unknown = rules - set(RULES)
        assert not unknown, f"EXCUSED[{name!r}]: unknown rules {sorted(unknown)}"
        applies = set(rules_for(names[name], _MECHANISMS))
        assert rules <= applies, (f"EXCUSED[{name!r}]: {sorted(rules - applies)} do not "
                                  f"apply to this page")
        assert owner.startswith("issue "), f"EXCUSED[{name!r}] names no owner issue"


def test_mechanism_chapters_are_chapters():
    numbers = {p.name[:2] for p in PAGES if p.is_chapter}
    for number in MECHANISM_CHAPTERS:
        assert len(number) == 2 and number.isdigit(), number
    # every existing mechanism chapter gets the rule (05, 08 and 15 may not exist yet)
    for page in PAGES:
        if page.is_chapter and page.name[:2] in MECHANISM_CHAPTERS:
            assert "implement_and_audit" in rules_for(page, _MECHANISMS), page.name
    assert numbers, "no chapters found"


def test_source_labels_are_found_in_the_concordance_only_there_allowed():
    """The label list matches what Appendix C1's concordance names, and misses the
    book's own references and other works' theorems."""
    patterns = source_label_patterns()
    assert len(patterns) >= 8
    concordance = (BOOK / "c1_notes_on_sources.md").read_text()
    for name, rx in patterns:
        if name != "Corollary 3.1" and name != "Definitions 1.1-1.3":
            assert rx.search(concordance), f"{name}: not found in Appendix C1's concordance"

    def hits(text):
        return [name for name, rx in patterns if rx.search(text)]

    assert hits("the report's Lemma 3.1 and Algorithm 3.") == ["Algorithms 1-3", "Lemmas 3.1-3.3",
                                                               "the report"]
    assert hits("equation (9) and Eq. (13)") == ["equation numbers (1)-(20)"]
    assert hits("Theorems 2 and 4") == ["Theorems 1-5"]
    for fine in ("(Theorem 3, {cite:p}`balle2018improving`)", "Theorem 2.10 of Boucheron",
                 "Lemma 1.7", "{prf:ref}`gaussian-thm-classic`", "equation (42)",
                 "Algorithm 4", "a reported value", "Theorem A.1"):
        assert hits(fine) == [], fine


def test_references_name_the_page_their_label_is_on():
    """``{ref}`label` ({doc}`page`)``, as Appendix C1's "Shown in" lists write them,
    names the page that defines the label (a label that moved with its lemma
    must take its page name along)."""
    targets = label_pages()
    assert targets["definitions-lem-affine-gaussian"] == "05_quadratic_forms"
    planted = load_page(BOOK / "c1_notes_on_sources.md")
    assert wrong_page_refs(planted, {**targets, "definitions-notes": "nowhere"})
    found = [p for page in PAGES for p in wrong_page_refs(page, targets)]
    assert not found, found
