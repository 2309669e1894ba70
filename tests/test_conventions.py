"""The chapter conventions of the book (shared/DESIGN.md), as tests.

Every rule of :mod:`dpsum_book.conventions` runs on every page it applies
to; a failure names the page, the cell and what to change. Pages that do
not meet a rule yet are listed in ONE place, :data:`dpsum_book.conventions.PENDING`
(rule -> page -> why), which :func:`test_pending_is_printed_and_current`
prints. A listed page that now passes its rule fails the test ("remove it
from PENDING"), so the list only shrinks; when the book issues are done it
is empty. The unit tests at the end run each of the third edition's rules
1-5 on small synthetic pages, one that passes and one that fails, so that
no rule can pass silently.

The figures per chapter (words, figures, exercises, longest visible cell and
line, the source's labels): ``python -m dpsum_book.conventions``.
"""

from __future__ import annotations

import pytest

from dpsum_book.conventions import (BOOK, MECHANISM_CHAPTERS, NUMPY_MECHANISM_CHAPTERS,
                                    PENDING, RULES, Cell, Page, chapter_key, dpsum_names,
                                    label_pages,
                                    load_page, pages, problems, quoted_numbers, rules_for,
                                    set_figure_caption,
                                    source_label_patterns, wrong_page_refs)

PAGES = [load_page(p) for p in pages()]
CASES = [(page, rule) for page in PAGES for rule in rules_for(page)]


@pytest.mark.parametrize("page, rule", CASES, ids=[f"{p.name}-{r}" for p, r in CASES])
def test_convention(page, rule):
    found = problems(page, rule)
    why = PENDING.get(rule, {}).get(page.name)
    if why is not None:
        if not found:
            pytest.fail(f"{page.name} now passes {rule!r}: remove it from PENDING in "
                        f"book/helpers/dpsum_book/conventions.py")
        pytest.xfail(f"{page.name}: {rule!r} pending ({why}); {len(found)} problems, "
                     f"the first: {found[0]}")
    assert not found, f"{page.path.name} breaks {rule!r}:\n" + "\n".join(
        f"  {page.name}, {p}" for p in found)


def test_pending_is_printed_and_current(capsys):
    """PENDING names existing pages and rules that apply to them; it is printed."""
    names = {p.name: p for p in PAGES}
    lines = []
    for rule, entries in PENDING.items():
        assert rule in RULES, f"PENDING names an unknown rule {rule!r}"
        assert entries, f"PENDING[{rule!r}] is empty: remove it"
        for name, why in entries.items():
            assert name in names, f"PENDING[{rule!r}] names {name!r}, not a page of book/"
            assert rule in rules_for(names[name]), (
                f"PENDING[{rule!r}][{name!r}]: the rule does not apply to this page")
            assert why.startswith("issue "), f"PENDING[{rule!r}][{name!r}] names no owner"
            lines.append(f"  {rule:24s}{name:30s}{why}")
    with capsys.disabled():
        print(f"\nPENDING: {len(lines)} (rule, page) pairs not met yet")
        print("\n".join(lines))


#: chapters written to the third edition's rules: never listed in PENDING
WRITTEN_TO_THE_RULES = frozenset({"composition", "exponential_mechanism"})


def test_chapters_written_to_the_rules_are_not_pending():
    keys = {p.name: chapter_key(p) for p in PAGES}
    assert WRITTEN_TO_THE_RULES <= set(keys.values()), sorted(WRITTEN_TO_THE_RULES)
    for rule, entries in PENDING.items():
        for name in entries:
            assert keys.get(name) not in WRITTEN_TO_THE_RULES, (rule, name)


def test_mechanism_chapters_are_chapters():
    keys = {chapter_key(p) for p in PAGES if p.is_chapter}
    assert keys, "no chapters found"
    assert set(MECHANISM_CHAPTERS) <= keys, sorted(set(MECHANISM_CHAPTERS) - keys)
    assert NUMPY_MECHANISM_CHAPTERS <= set(MECHANISM_CHAPTERS)
    for page in PAGES:
        if page.is_chapter and chapter_key(page) in MECHANISM_CHAPTERS:
            assert "implement_and_audit" in rules_for(page), page.name


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


# ------------------------------------------- rules 1-5 on synthetic pages

def _page(*cells, name="03_toy", suffix=".ipynb"):
    """A page from ``(kind, source[, tags, outputs, metadata])`` tuples."""
    built = []
    for i, c in enumerate(cells):
        kind, source, *rest = c
        tags = frozenset(rest[0]) if rest else frozenset()
        outputs = tuple(rest[1]) if len(rest) > 1 else ()
        meta = rest[2] if len(rest) > 2 else {}
        built.append(Cell(i, kind, source, tags, outputs, meta))
    from pathlib import Path
    return Page(Path(f"{name}{suffix}"), tuple(built))


def _printed(text):
    return [{"output_type": "stream", "name": "stdout", "text": text}]


PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5"
       "ErkJggg==")


def _figure_output():
    return [{"output_type": "display_data", "data": {"image/png": PNG,
                                                     "text/plain": "<Figure>"},
             "metadata": {}}]


def test_rule1_research_log():
    clean = _page(("markdown", "The Gaussian mechanism adds noise; its source code is "
                               "in `dpsum`."),
                  ("code", "print(1)", (), _printed("done\n")))
    assert problems(clean, "research_log") == []
    for text in ("As the report shows", "the sources disagree", "an erratum of",
                 "correction E29 fixes", "in the first edition", "earlier drafts said",
                 "see issue 41", "tests/test_battery.py checks", "test_battery.py",
                 "anchor ch6-best-scaling", "the research report"):
        bad = _page(("markdown", f"Text. {text} more."))
        assert problems(bad, "research_log"), text
    in_output = _page(("code", "print(x)", (), _printed("errata: none\n")))
    assert problems(in_output, "research_log")
    # code is not prose: a variable named errata in the source is fine
    assert problems(_page(("code", "errata = 1", (), ())), "research_log") == []


def test_rule1_spares_only_the_concordance():
    c1 = _page(("markdown", "the report's Lemma 3.1"), name="c1_notes_on_sources",
               suffix=".md")
    assert "research_log" not in rules_for(c1)
    other = _page(("markdown", "x"), name="notation", suffix=".md")
    assert "research_log" in rules_for(other)


def test_rule2_numbers_quoted():
    assert quoted_numbers("the error is 0.629 +- 0.014, about 32%; 0.1 of it") == [
        ("0.629", False), ("0.014", False), ("32", True)]
    for fine in ("Theorem 3.20 of the book", "Propositions 1.3, 1.4 and 1.6",
                 "equation (4.5)", "Python 3.10 or newer", "jupyter-book 1.0.4",
                 "in 2023, n = 1000 rows", "`f(0.25)` in code", "eps = 0.5 and 5%",
                 "{glue:text}`gap:.3f` here", ":width: 80%"):
        assert quoted_numbers(fine) == [], fine


def test_rule2_glued_printed_or_defined():
    printed = _page(("code", "print(f'{x:.4f}')", (), _printed("gap 0.6291, share 0.3240\n")),
                    ("markdown", "The gap is 0.629; the squared error grows by 32.4%."))
    assert problems(printed, "glued_numbers") == []
    defined = _page(("code", "mults = [1.5, 2.0, 3.0]"),
                    ("markdown", "multipliers 1.5, 2 and 3"))
    assert problems(defined, "glued_numbers") == []
    glued = _page(("code", "glue('gap', 0.6291, display=False)"),
                  ("markdown", "The gap is {glue:text}`gap:.3f`."))
    assert problems(glued, "glued_numbers") == []
    stale = _page(("code", "print(x)", (), _printed("0.610 +- 0.012\n")),
                  ("markdown", "It is 0.629 +- 0.014, within 10.5%."))
    found = problems(stale, "glued_numbers")
    assert len(found) == 1 and "0.629, 0.014, 10.5%" in found[0], found


def test_rule3_captions():
    meta = {"mystnb": {"figure": {"name": "fig-toy-curve", "caption": "The curve."}}}
    good = _page(("code", "# alt: a curve\nplt.plot(x)", ("hide-input",), _figure_output(),
                  meta),
                 ("markdown", "```{glue:figure} toy\n:name: fig-toy-glued\n\nA caption.\n```"))
    assert problems(good, "captions") == []
    bare = _page(("code", "plt.plot(x)", (), _figure_output()))
    assert len(problems(bare, "captions")) == 2  # no caption, no name
    unnamed = _page(("code", "plt.plot(x)", (), _figure_output(),
                     {"mystnb": {"figure": {"caption": "A curve."}}}))
    assert len(problems(unnamed, "captions")) == 1
    two = _page(("code", "plt.plot(x)", (), _figure_output() * 2, meta))
    assert len(problems(two, "captions")) == 1
    glue_bare = _page(("markdown", "```{glue:figure} toy\n:name: fig-toy\n```"))
    assert len(problems(glue_bare, "captions")) == 1
    figure_unnamed = _page(("markdown", "```{figure} a.png\nA caption.\n```"))
    assert len(problems(figure_unnamed, "captions")) == 1


def test_rule3_set_figure_caption(tmp_path):
    import json
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "x"},
                    {"cell_type": "code", "metadata": {}, "source": "plot()",
                     "outputs": _figure_output(), "execution_count": 1}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "03_toy.ipynb"
    path.write_text(json.dumps(nb))
    assert len(problems(load_page(path), "captions")) == 2
    set_figure_caption(path, 1, "fig-toy-plot", "The plot.")
    assert problems(load_page(path), "captions") == []
    for bad in ((0, "fig-x", "c"), (1, "x", "c"), (1, "fig-x", " ")):
        with pytest.raises(ValueError):
            set_figure_caption(path, *bad)


def _exercise(label, title):
    return ("markdown", f"```{{exercise}} {title}\n:label: {label}\n\nDo it.\n```\n\n"
                        f"```{{solution}} {label}\n:class: dropdown\n\nDone.\n```")


def test_rule4_exercise_order():
    ordered = _page(_exercise("t-1", "Easy: a"), _exercise("t-2", "Easy: b"),
                    _exercise("t-3", "Medium: c"), _exercise("t-4", "Hard: d"))
    assert problems(ordered, "exercise_order") == []
    assert problems(ordered, "exercises") == []
    swapped = _page(_exercise("t-1", "Medium: a"), _exercise("t-2", "Easy: b"),
                    _exercise("t-3", "Hard: c"))
    found = problems(swapped, "exercise_order")
    assert len(found) == 1 and "t-2" in found[0]
    unlabelled = _page(_exercise("t-1", "Easy: a"), _exercise("t-2", "b"),
                       _exercise("t-3", "Hard: c"))
    assert problems(unlabelled, "exercises")


MECHANISM = """def laplace(x, scale, rng):
    return x + rng.laplace(0.0, scale, size=np.shape(x))
"""
CHECK = """ours = laplace(np.zeros(3), 1.0, np.random.default_rng(1))
theirs = laplace_mechanism(np.zeros(3), 1.0, rng=np.random.default_rng(1))
assert np.allclose(ours, theirs)
"""


def test_rule5_numpy_mechanism():
    imports = ("code", "import numpy as np\nfrom dpsum.mechanisms import laplace_mechanism",
               ("hide-input",))
    good = _page(imports, ("code", MECHANISM, ("numpy-mechanism",)), ("code", CHECK))
    assert problems(good, "numpy_mechanism") == []
    assert problems(_page(imports, ("code", MECHANISM), ("code", CHECK)), "numpy_mechanism")
    hidden = _page(imports, ("code", MECHANISM, ("numpy-mechanism", "hide-input")),
                   ("code", CHECK))
    assert len(problems(hidden, "numpy_mechanism")) == 1
    long = _page(imports, ("code", MECHANISM + "\n" * 0 + "x = 1\n" * 20,
                           ("numpy-mechanism",)), ("code", CHECK))
    assert len(problems(long, "numpy_mechanism")) == 1
    calls_dpsum = _page(imports, ("code", "def f(x):\n    return laplace_mechanism(x, np.e)",
                                  ("numpy-mechanism",)), ("code", CHECK))
    assert len(problems(calls_dpsum, "numpy_mechanism")) == 1
    unchecked = _page(imports, ("code", MECHANISM, ("numpy-mechanism",)),
                      ("code", "print(laplace(np.zeros(3), 1.0, rng))"))
    assert len(problems(unchecked, "numpy_mechanism")) == 1


def test_rule5_reads_the_names_imported_from_dpsum():
    page = _page(("code", "import dpsum.privacy as acc\nimport dpsum\n"
                          "from dpsum.pipeline import exponential_quantile, q_s as qs\n"
                          "from dpsum.audit import (epsilon_lower_bound,\n    other)\n"
                          "from dpsum_book import figure\nimport numpy as np\n"))
    assert dpsum_names(page) == {"acc", "dpsum", "exponential_quantile", "qs",
                                 "epsilon_lower_bound", "other"}


def test_rule5_applies_to_the_mechanism_chapters():
    for key in NUMPY_MECHANISM_CHAPTERS:
        page = _page(("markdown", "x"), name=f"42_{key}")
        assert "numpy_mechanism" in rules_for(page), key
    assert "numpy_mechanism" not in rules_for(_page(("markdown", "x"),
                                                    name="05_quadratic_forms"))
