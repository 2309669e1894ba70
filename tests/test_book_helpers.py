"""dpsum_book, the code the book's chapters share (book/helpers): style, alt text,
convention checks, data readers and the experiments chapters re-run."""

from __future__ import annotations

import ast
import base64
import io
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402

import dpsum  # noqa: E402
import dpsum.audit  # noqa: E402
import dpsum_book  # noqa: E402
from dpsum_book import alt, conventions, data, evaluation, published, style  # noqa: E402
from dpsum_book import audit_power as ap  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------- style

def test_use_style_sets_fonts_of_at_least_9_pt_and_the_palette():
    matplotlib.rcdefaults()
    dpsum_book.use_style()
    rc = matplotlib.rcParams
    sizes = [rc[k] for k in ("font.size", "axes.labelsize", "axes.titlesize",
                             "xtick.labelsize", "ytick.labelsize", "legend.fontsize")]
    assert min(float(s) for s in sizes) >= style.FONT_PT >= 9
    colours = rc["axes.prop_cycle"].by_key()["color"]
    assert [c.upper() for c in colours] == [c.upper() for c in style.OKABE_ITO]
    assert len(set(colours)) == 8


@pytest.mark.parametrize("ncols, nrows", [(1, 1), (2, 1), (3, 1), (3, 2), (1, 3)])
def test_figures_fit_the_column_so_fonts_are_not_scaled_down(ncols, nrows):
    fig, axes = dpsum_book.figure(ncols, nrows)
    try:
        w, h = fig.get_size_inches()
        assert w * fig.dpi <= style.MAX_WIDTH_PX
        assert (w, h) == pytest.approx(style.figure_size(ncols, nrows))
        assert np.size(axes) == ncols * nrows
        axes_list = np.atleast_1d(axes).ravel()
        axes_list[0].plot([0, 1], [0, 1])
        axes_list[0].set_xlabel("x")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        width = conventions.png_width(base64.b64encode(buf.getvalue()).decode())
        assert width is not None and width <= style.MAX_WIDTH_PX
    finally:
        plt.close(fig)


@pytest.mark.parametrize("kwargs, error", [({"ncols": 4}, ValueError), ({"nrows": 0}, ValueError),
                                           ({"ncols": 2.0}, TypeError),
                                           ({"ncols": True}, TypeError)])
def test_figure_size_refuses_more_than_three_panels(kwargs, error):
    with pytest.raises(error, match="ncols|nrows"):
        style.figure_size(**kwargs)


def test_figure_takes_no_figsize():
    with pytest.raises(TypeError, match="figsize"):
        dpsum_book.figure(1, figsize=(20, 3))


# ---------------------------------------------------------------- alt text

def _notebook(cells: list[dict]) -> dict:
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _png(width: int = 300) -> str:
    fig = plt.figure(figsize=(width / 100, 1), dpi=100)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _code(source: str, outputs: list | None = None, tags: list | None = None, **meta) -> dict:
    metadata = dict(meta)
    if tags:
        metadata["tags"] = tags
    return {"cell_type": "code", "execution_count": 1, "id": "c", "metadata": metadata,
            "outputs": outputs or [], "source": source}


def _md(source: str) -> dict:
    return {"cell_type": "markdown", "id": "m", "metadata": {}, "source": source}


def _figure_output(width: int = 300) -> dict:
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": _png(width), "text/plain": "<Figure size 300x100>"}}


def test_alt_line_reads_only_a_first_line_comment():
    assert alt.alt_line("# alt: Two curves cross at d = 11.\nplt.plot()") == \
        "Two curves cross at d = 11."
    assert alt.alt_line("  #alt:   spaced  \n") == "spaced"
    assert alt.alt_line("plt.plot()\n# alt: too late") is None
    assert alt.alt_line("# alt:   \n") is None


def test_sync_copies_alt_lines_into_metadata_and_nothing_else(tmp_path):
    path = tmp_path / "ch.ipynb"
    nb = _notebook([_md("# Title"),
                    _code("# alt: A line rising.\nplt.plot([0, 1])", [_figure_output()]),
                    _code("x = 1")])
    path.write_text(json.dumps(nb, indent=1) + "\n")
    assert alt.sync(path) == 1
    after = json.loads(path.read_text())
    assert after["cells"][1]["metadata"] == {"mystnb": {"image": {"alt": "A line rising."}}}
    assert after["cells"][2]["metadata"] == {}
    assert after["cells"][1]["outputs"] == nb["cells"][1]["outputs"]
    assert alt.sync(path) == 0  # idempotent
    page = conventions.load_page(path)
    assert conventions.problems(page, "alt_text") == []


def test_sync_refuses_a_markdown_file(tmp_path):
    with pytest.raises(ValueError, match="path"):
        alt.sync(tmp_path / "page.md")


# ------------------------------------------------------------- conventions

def _page(tmp_path: Path, cells: list[dict], name: str = "02_mechanism") -> conventions.Page:
    path = tmp_path / f"{name}.ipynb"
    path.write_text(json.dumps(_notebook(cells)))
    return conventions.load_page(path)


EXERCISES = """```{{exercise}} {title}
:label: ex-{n}

Do it.
```

```{{solution}} ex-{n}
:class: dropdown

Done.
```
"""


def _exercises(*titles: str) -> str:
    return "\n".join(EXERCISES.format(title=t, n=i) for i, t in enumerate(titles))


def _gated(label: str, code: str, hidden: bool = True) -> list[dict]:
    opts = ":class: dropdown\n" if hidden else ""
    return [_md(f"```{{exercise}} Hard: implement the mechanism and audit it\n:label: {label}\n"
                "\nWrite it.\n```\n"),
            _md(f"```{{solution-start}} {label}\n{opts}```\n"),
            _code(code),
            _md("```{solution-end}\n```\n")]


def test_words_count_markdown_tokens_only(tmp_path):
    page = _page(tmp_path, [_md("one two $x^2$\nthree"), _code("a b c d e f")])
    assert conventions.words(page) == 4
    long = _page(tmp_path, [_md("w " * 4501)])
    assert "4501 words" in conventions.problems(long, "words")[0]
    assert conventions.problems(_page(tmp_path, [_md("w " * 4500)]), "words") == []


def test_source_labels_in_text_code_and_outputs_are_found(tmp_path):
    out = {"output_type": "stream", "name": "stdout", "text": "Lemma 3.2 applies\n"}
    page = _page(tmp_path, [_md("As the report says."), _code("x = 1  # Algorithm 2", [out]),
                            _md("{prf:ref}`gaussian-thm-classic`, Theorem 2.10 of a book")])
    probs = conventions.problems(page, "source_labels")
    assert len(probs) == 3
    assert "cell 0 (markdown) text" in probs[0] and "'the report'" in probs[0]
    assert "cell 1 (code) source" in probs[1] and "'Algorithm 2'" in probs[1]
    assert "cell 1 (code) output" in probs[2] and "'Lemma 3.2'" in probs[2]


def test_code_rules_skip_hidden_cells(tmp_path):
    long = "\n".join(f"x{i} = {i}" for i in range(21))
    wide = "y = " + "1 + " * 20 + "1"
    page = _page(tmp_path, [_code(long), _code(wide), _code(long, tags=["hide-input"]),
                            _code(wide, tags=["remove-cell"])])
    assert [p.split(":")[0] for p in conventions.problems(page, "code_lines")] == ["cell 0 (code)"]
    assert [p.split(":")[0] for p in conventions.problems(page, "code_width")] == ["cell 1 (code)"]


def test_output_lines_count_text_not_figures(tmp_path):
    text = {"output_type": "stream", "name": "stdout", "text": "a\n" * 16}
    ok = {"output_type": "stream", "name": "stdout", "text": "a\n" * 15}
    page = _page(tmp_path, [_code("print()", [text]), _code("print()", [ok]),
                            _code("plot()", [_figure_output()])])
    probs = conventions.problems(page, "output_lines")
    assert len(probs) == 1 and "cell 0" in probs[0] and "16 lines" in probs[0]


@pytest.mark.parametrize("text", ["```bash\nmake test\n```", "see /tmp/x", "run it under flock",
                                  "`benchmarks/evaluation.py` writes", "on two cores",
                                  "`.venv/bin/python x`", "$ ls"])
def test_lab_notes_are_found(tmp_path, text):
    page = _page(tmp_path, [_md(text)])
    assert conventions.problems(page, "lab_notes"), text


def test_lab_notes_leave_teaching_text_alone(tmp_path):
    page = _page(tmp_path, [_md("The benchmarks compare two mechanisms at $p_C = 10^{-3}$; "
                                "to make the test fail, clip at $C/2$. In Python, `dpsum` "
                                "releases the sum (see the {doc}`19_auditing` chapter).")])
    assert conventions.problems(page, "lab_notes") == []


def test_exercise_rules(tmp_path):
    good = _page(tmp_path, [_md(_exercises("Easy: one", "Medium: two", "Hard: three"))])
    assert conventions.problems(good, "exercises") == []
    assert [e.difficulty for e in conventions.exercises(good)] == ["easy", "medium", "hard"]
    unlabelled = _page(tmp_path, [_md(_exercises("Easy: one", "two", "Hard: three"))])
    assert "no difficulty label" in conventions.problems(unlabelled, "exercises")[0]
    few = _page(tmp_path, [_md(_exercises("Easy: one", "Hard: two"))])
    assert "2 exercises" in conventions.problems(few, "exercises")[0]
    shown = _page(tmp_path, [_md(_exercises("Easy: a", "Easy: b")), *_gated("g", "1", False)])
    assert any("not hidden" in p for p in conventions.problems(shown, "exercises"))


def test_computational_and_audit_exercises_need_asserting_solutions(tmp_path):
    text = _md(_exercises("Easy: a", "Easy: b"))
    good = _page(tmp_path, [text, *_gated("g", "r = audit(mine)\nassert r.passed")])
    assert conventions.problems(good, "computational_exercise") == []
    assert conventions.problems(good, "implement_and_audit") == []
    no_assert = _page(tmp_path, [text, *_gated("g", "r = audit(mine)")])
    assert conventions.problems(no_assert, "computational_exercise")
    assert conventions.problems(no_assert, "implement_and_audit")
    no_audit = _page(tmp_path, [text, *_gated("g", "assert mine() > 0")])
    assert conventions.problems(no_audit, "computational_exercise") == []
    assert conventions.problems(no_audit, "implement_and_audit")
    none = _page(tmp_path, [text])
    assert "no 'implement it and audit it'" in conventions.problems(none, "implement_and_audit")[0]


def test_alt_text_and_style_rules(tmp_path):
    plain = _page(tmp_path, [_code("plt.plot()", [_figure_output()])])
    assert "without alt text" in conventions.problems(plain, "alt_text")[0]
    assert "use_style" in conventions.problems(plain, "style")[0]
    unsynced = _page(tmp_path, [_code("# alt: a line\nplt.plot()", [_figure_output()])])
    assert "python -m dpsum_book.alt" in conventions.problems(unsynced, "alt_text")[0]
    styled = _page(tmp_path, [_code("from dpsum_book import use_style\nuse_style()"),
                              _code("# alt: a line\nplt.plot()", [_figure_output()],
                                    mystnb={"image": {"alt": "a line"}})])
    assert conventions.problems(styled, "alt_text") == []
    assert conventions.problems(styled, "style") == []
    wide = _page(tmp_path, [_code("use_style()"), _code("plot()", [_figure_output(1000)])])
    assert "1000 px wide" in conventions.problems(wide, "style")[0]


def test_rules_for_pages(tmp_path):
    chapter = _page(tmp_path, [_md("x")], "06_mechanism")
    appendix = _page(tmp_path, [_md("x")], "a_appendix")
    # mechanism chapters are named without their number (renumbering changes nothing)
    assert "implement_and_audit" in conventions.rules_for(chapter, frozenset({"mechanism"}))
    assert "implement_and_audit" not in conventions.rules_for(chapter, frozenset({"06"}))
    assert "exercises" not in conventions.rules_for(appendix)
    md = tmp_path / "notation.md"
    md.write_text("the report")
    assert conventions.rules_for(conventions.load_page(md)) == ["source_labels", "research_log",
                                                                "glued_numbers"]
    with pytest.raises(ValueError, match="rule"):
        conventions.problems(chapter, "no such rule")


def test_report_prints_a_row_per_page(capsys):
    paths = [ROOT / "book" / "15_accuracy.ipynb", ROOT / "book" / "03_composition.ipynb"]
    assert conventions.main([str(p) for p in paths]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["page", "words", "figures"]
    assert out[1].startswith("15_accuracy") and out[2].startswith("03_composition")


# ------------------------------------------------------------ architecture

def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_dpsum_never_imports_dpsum_book():
    for path in (ROOT / "dpsum").rglob("*.py"):
        assert not any(n.split(".")[0] == "dpsum_book" for n in _imports(path)), path


def test_dpsum_book_uses_only_public_dpsum_names():
    for path in (ROOT / "book" / "helpers" / "dpsum_book").rglob("*.py"):
        for name in _imports(path):
            if name.split(".")[0] == "dpsum":
                assert not any(part.startswith("_") for part in name.split(".")), (path, name)


# ------------------------------------------------- symbolic and exact checks

def test_symbolic_quadratic_form_and_gchisq_moments():
    import sympy as sp

    from dpsum_book import symbolic as S

    lhs = S.quadratic_form_expectation()
    assert S.same_index_sums(lhs, S.quadratic_form_rhs())
    assert not S.same_index_sums(lhs, S.quadratic_form_rhs(wrong=True))
    j = sp.Symbol("j", integer=True)
    sig = sp.IndexedBase("sigma", positive=True)
    centred = S.specialise(lhs, S.kronecker, lambda p, q: sig[p] * S.kronecker(p, q),
                           lambda p: 0)
    assert S.same_index_sums(centred, sp.Sum(sig[j] ** 2, (j, 0, S.d - 1)))
    assert not S.same_index_sums(centred, sp.Sum(sig[j], (j, 0, S.d - 1)))
    w, t = sp.IndexedBase("w", positive=True), sp.IndexedBase("theta", real=True)
    mean, var = S.gchisq_moments(lambda i: w[i], lambda i: t[i])
    assert sp.simplify(mean - sp.Sum(w[j] * (1 + t[j] ** 2), (j, 0, S.d - 1))) == 0
    assert sp.simplify(var - sp.Sum(2 * w[j] ** 2 * (1 + 2 * t[j] ** 2), (j, 0, S.d - 1))) == 0


def test_exact_worst_event_and_leaky_randomized_response():
    from fractions import Fraction

    import numpy as np

    from dpsum_book import exact as E

    rng = np.random.default_rng(0)
    for _ in range(10):
        wp, wq = rng.integers(1, 20, size=6), rng.integers(1, 20, size=6)
        P = {r: Fraction(int(v), int(wp.sum())) for r, v in enumerate(wp)}
        Q = {r: Fraction(int(v), int(wq.sum())) for r, v in enumerate(wq)}
        for a in (Fraction(1), Fraction(5, 2)):
            assert E.smallest_delta(P, Q, a) == E.worst_gap_by_enumeration(P, Q, a)
    leak = Fraction(1, 100)
    assert E.smallest_delta(E.leaky_rr(1, 3, leak), E.leaky_rr(0, 3, leak), 3) == leak
    assert E.smallest_delta(E.leaky_rr(1, 3, leak), E.leaky_rr(0, 3, leak), 2) > leak
    rr = E.rr_distribution((1, 0))
    assert sum(rr.values()) == 1 and rr[(1, 0)] == Fraction(9, 16)
    assert E.push_forward(rr, sum)[1] == Fraction(9, 16) + Fraction(1, 16)
    assert sum(E.product(rr, rr).values()) == 1


# ------------------------------------------------------------ data files

def test_write_and_read_round_trip_keeps_every_digit(tmp_path):
    rows = [{"case": "a", "x": 0.1 + 0.2, "n": np.int64(3)}, {"case": "b", "x": 1e-300, "n": 4}]
    path = data.write_csv("t.csv", rows, data=tmp_path)
    assert path == tmp_path / "t.csv"
    cols = data.read_columns("t.csv", data=tmp_path)
    assert cols["x"][0] == 0.1 + 0.2 and cols["x"][1] == 1e-300
    assert list(cols["case"]) == ["a", "b"] and cols["n"].tolist() == [3.0, 4.0]
    assert data.read_rows("t.csv", data=tmp_path)[1]["case"] == "b"
    assert "largest relative difference from the stored file 0" in \
        data.compare_with_file("t.csv", rows, data=tmp_path)
    moved = [dict(rows[0], x=0.3 * (1 + 1e-6)), rows[1]]
    text = data.compare_with_file("t.csv", moved, data=tmp_path)
    assert "1e-06" in text, text
    assert "4 rows, the stored file has 2" in data.compare_with_file("t.csv", rows * 2,
                                                                      data=tmp_path)


def test_read_rows_skips_attribution_comments(tmp_path):
    (tmp_path / "c.csv").write_text("# from somewhere\n# second note\na,b\n1,x\n")
    assert data.read_rows("c.csv", data=tmp_path) == [{"a": "1", "b": "x"}]


@pytest.mark.parametrize("name", ["../x.csv", "x.txt", "sub/x.csv", 3])
def test_data_names_are_file_names_in_book_data(name):
    with pytest.raises(ValueError, match="name"):
        data.read_rows(name)


def test_write_refuses_no_rows(tmp_path):
    with pytest.raises(ValueError, match="rows"):
        data.write_csv("e.csv", [], data=tmp_path)


def test_the_stored_book_data_files_are_readable():
    for path in sorted(data.DATA.glob("*.csv")):
        cols = data.read_columns(path.name)
        assert cols and all(len(v) == len(next(iter(cols.values()))) for v in cols.values())


# ------------------------------------------------------------ experiments

def test_evaluation_rows_reproduce_the_stored_files():
    """A few rows of each deterministic experiment, recomputed, against book/data."""
    stored = data.read_rows("zipf_gains.csv")
    for i in (0, 17, len(stored) - 1):
        s = stored[i]
        row = evaluation.zipf_row(float(s["a"]), int(s["d"]), float(s["k"]))
        for key, value in row.items():
            assert float(s[key]) == pytest.approx(value, rel=1e-9), (i, key)
    s = next(r for r in data.read_rows("skew_sweep.csv")
             if (r["d"], r["n"], r["a"]) == ("100", "1000000", "1.0"))
    row = evaluation.sweep_row(100, 10**6, 1.0)
    for key, value in row.items():
        assert float(s[key]) == pytest.approx(float(value), rel=1e-9), key
    s = data.read_rows("optimum_gaps.csv")[0]
    row = evaluation.optimum_row(*evaluation.OPTIMUM_SETTINGS[0])
    assert float(s["lemma_over_all"]) == pytest.approx(row["lemma_over_all"], rel=1e-6)


def test_error_factor_of_isotropic_scaling_is_d_times_the_squared_radius():
    sigma = evaluation.power_law(5, 1.0)
    C = dpsum.clip_radius(sigma, 1e-3)
    assert evaluation.error_factor(sigma, 1e-3, np.ones(5)) == pytest.approx(5 * C * C, rel=1e-12)
    assert evaluation.zipf_stds(7, 0.5).sum() == pytest.approx(1.0, rel=1e-15)


def test_tail_rows_lie_outside_the_clip_ball_with_the_right_frequency():
    """Rows from the tilted sampler are all outside the ball, and their mean squared
    scaled norm matches the conditional mean computed by quadrature-free Monte Carlo
    from plain rows (rejection), within 5 standard errors."""
    rng = np.random.default_rng(3)
    sigma, b = evaluation.power_law(4, 1.0), np.ones(4)
    C = float(dpsum.clip_radius(sigma, 0.05, b))
    x = evaluation.tail_rows(sigma, b, C, 4000, rng)
    r2 = np.sum((x * b) ** 2, axis=1)
    assert np.all(r2 > C * C)
    plain = rng.standard_normal((400_000, 4)) * sigma
    p2 = np.sum(plain**2, axis=1)
    ref = p2[p2 > C * C]
    se = math.sqrt(r2.var() / r2.size + ref.var() / ref.size)
    assert abs(r2.mean() - ref.mean()) < 5 * se


def test_published_search_and_imhof_agree_with_closed_forms():
    published.check_imhof()  # asserts 1e-6 relative against chi-square tails
    p = 1e-3
    q = published.published_search(lambda x: (float(stats.chi2.cdf(x, 3)), 0), p)
    assert abs(stats.chi2.sf(q, 3) - p) <= p / 10  # the search's own tolerance
    w = published.weights(published.zipf_stds(10, 1.0, 2.0), scaled=True)
    assert w.sum() == pytest.approx(1.0)


def test_audit_power_cases_have_the_violation_they_name():
    for name in ap.PLANS:
        c = ap.case(name)
        assert c.name == name and 0.9 < c.oracle(ap.PLANS[name][-1][0]) <= 1
    coin = ap.binomial_broken_coin()
    laws = dpsum.audit.binary_output_laws("binomial", ap.BINOMIAL_USERS, 0, epsilon=ap.EPS,
                                          delta=ap.DELTA, p=coin)
    assert dpsum.audit.pair_epsilon(*laws, ap.DELTA) == pytest.approx(ap.EPS_DETECT, rel=1e-8)
    with pytest.raises(ValueError, match="name"):
        ap.case("no-such-case")


def test_audit_power_rows_and_merge():
    rows = ap.power_rows(["rr-1.6"], runs=40)
    assert [(r["n_samples"], r["n_pilot"]) for r in rows] == ap.PLANS["rr-1.6"]
    for r in rows:
        assert 0 <= r["rejections"] <= 40 and r["ci_low"] <= r["rate"] <= r["ci_high"]
    old = data.read_rows("audit_power.csv")
    merged = ap.merge_rows(rows, old)
    assert [r["case"] for r in merged] == [r["case"] for r in old]
    assert sum(1 for r in merged if r["runs"] == 40) == len(rows)


def test_size_row_counts_false_alarms_below_the_binomial_tolerance():
    (row,) = ap.size_rows(200)
    assert row["rejections"] <= stats.binom.ppf(1 - 1e-6, 200, row["exact_size"])
    assert row["exact_size"] <= row["beta"]


# ------------------------------------------------- Laplace noise (chapter 4)

def test_product_laplace_delta_brackets_the_scalar_closed_form():
    from dpsum_book.laplace import product_laplace_delta

    for a, eps in [(1.0, 0.3), (2.0, 0.0), (0.5, 0.49)]:
        low, high = product_laplace_delta([a], eps, step=1e-5)
        exact = 1 - math.exp((eps - a) / 2)  # the scalar profile of chapter 4
        assert low <= exact <= high and high - low < 1e-4
    assert product_laplace_delta([0.5], 0.6) == (0.0, 0.0)  # loss at most a
    assert product_laplace_delta([0.3, 0.4], 0.71) == (0.0, 0.0)  # sum of shifts


def test_product_laplace_delta_of_many_coordinates_matches_monte_carlo():
    from dpsum_book.laplace import product_laplace_delta

    a, eps, n = np.full(20, 0.15), 0.5, 200_000
    low, high = product_laplace_delta(a, eps)
    rng = np.random.default_rng(5)
    y = rng.laplace(size=(n, a.size))
    loss = (np.abs(y - a) - np.abs(y)).sum(axis=1)
    terms = np.clip(-np.expm1(eps - loss), 0, None)
    se = terms.std() / math.sqrt(n)
    assert low <= high and abs(terms.mean() - (low + high) / 2) < 5 * se + (high - low)


def test_laplace_errors_and_the_power_mean_inequality():
    from dpsum_book.laplace import last_win, shaped_laplace_error, unshaped_laplace_error

    rng = np.random.default_rng(6)
    for _ in range(20):
        w = rng.exponential(size=rng.integers(1, 30))
        assert shaped_laplace_error(w, 0.7) <= unshaped_laplace_error(w, 0.7) * (1 + 1e-12)
    cube = np.full(7, 3.0)
    assert math.isclose(shaped_laplace_error(cube, 2.0), unshaped_laplace_error(cube, 2.0))
    assert last_win(lambda w: w.size, lambda w: 5.0, lambda d: np.ones(d), d_max=20) == 4
    with pytest.raises(ValueError, match="widths"):
        shaped_laplace_error([1.0, -1.0], 1.0)

# ------------------------------------------------- choosing the scaling; accuracy

def test_boundary_moments_are_the_quantile_gradient():
    from dpsum_book import choosing

    w, p = np.array([1.0, 0.3, 0.05]), 1e-3
    q = float(dpsum.GeneralizedChiSquare(w).isf(p))
    g = choosing.boundary_moments(w, q)
    assert np.allclose(choosing.quantile_gradient_fd(w, p), g, rtol=1e-6)
    assert math.isclose(float(np.dot(w, g)), q, rel_tol=1e-10)  # Euler's identity


def test_kappa_and_scalings():
    from dpsum_book import choosing

    sigma = np.array([4.0, 1.0, 0.25])
    sc = choosing.scalings(sigma, 1e-3)
    assert set(sc) == set(evaluation.NAMES)
    # whitening: equal weights, so kappa is the chi-square quantile over d
    assert math.isclose(choosing.kappa(sigma, sc["whitening"], 1e-3),
                        stats.chi2.isf(1e-3, 3) / 3, rel_tol=1e-9)
    # scale-free in b
    assert math.isclose(choosing.kappa(sigma, 5 * sc["square-root"], 0.1),
                        choosing.kappa(sigma, sc["square-root"], 0.1), rel_tol=1e-12)


def test_total_error_curves_are_the_package_formulas():
    from dpsum_book import choosing

    sigma, n, grid = 1.0 / np.arange(1, 6), 1000, np.array([0.1, 1e-3])
    c = choosing.total_error_curves(sigma, n, grid, (1.0,), names=("square-root",))
    b = dpsum.design.gaussian_data_scaling(sigma)
    assert math.isclose(c["noise"]["square-root", 1.0][1],
                        dpsum.accuracy.gaussian_data_error(sigma, 1.0, 1e-6, 1e-3, scaling=b))
    assert math.isclose(c["clipping"]["square-root"][0],
                        dpsum.accuracy.gaussian_data_clipping_error(sigma, n, 0.1, scaling=b))
    assert c["clipping"]["square-root"][0] > c["clipping"]["square-root"][1] > 0


def test_pipeline_pairs_shape_and_seed():
    from dpsum_book import choosing

    a = choosing.pipeline_pairs(300, 3, 0.5, (1 / 300, 0.5), 2, np.random.default_rng(1))
    b = choosing.pipeline_pairs(300, 3, 0.5, (1 / 300, 0.5), 2, np.random.default_rng(1))
    assert a.shape == (2, 2) and np.all(a > 0) and np.array_equal(a, b)


def test_rr_coverage_exact_interval_covers():
    from dpsum_book import publishing

    cov = publishing.rr_coverage(12, 1.0, 0.1)
    assert cov["cov_exact"].min() >= 0.9 - 1e-12
    assert cov["exact"].shape == (13, 2) and np.all(cov["exact"][:, 0] <= cov["exact"][:, 1])


def test_noise_radius_bounds_are_above_the_exact_radius():
    from dpsum_book import publishing

    tau = np.array([3.0, 1.0, 0.5])
    r = publishing.noise_radius_bounds(tau, np.array([0.5, 0.05, 1e-4]))
    assert np.all(r["Laurent-Massart"] >= r["exact"]) and np.all(r["Cantelli"] >= r["exact"])


def test_bernstein_abs_central_moments_match_quadrature_and_reject_bad_k():
    from scipy import integrate

    from dpsum_book import bernstein as bb

    moments = bb.abs_central_moments(5)
    assert float(moments[2]) == 2.0 and float(moments[4]) == 60.0
    for k in (1, 3, 5):
        quad = 2 * integrate.quad(lambda x: abs(x * x - 1) ** k * stats.norm.pdf(x),
                                  0, np.inf, points=None, limit=200)[0]
        assert math.isclose(float(moments[k]), quad, rel_tol=1e-8)
    with pytest.raises(ValueError, match="k_max"):
        bb.abs_central_moments(0)
    with pytest.raises(TypeError, match="k_max"):
        bb.abs_central_moments(2.0)  # type: ignore[arg-type]


def test_bernstein_ratio_curves_are_the_package_bounds_over_the_exact_radius():
    from dpsum import bounds, design

    from dpsum_book import bernstein as bb

    sd, ns = np.arange(1, 41) ** -0.5, np.array([10.0, 1e4])
    r = bb.ratio_curves(sd, ns)
    b = design.gaussian_data_scaling(sd)
    exact = design.clip_radius(sd, 1e-4, b) ** 2
    assert math.isclose(r["exact"][1], exact, rel_tol=1e-12)
    lm = bounds.laurent_massart_clip_radius(sd, 1e-4, b) ** 2
    assert math.isclose(r["LM"][1], lm / exact, rel_tol=1e-12)
    for key in ("B", "LM", "Cantelli", "Chebyshev"):
        assert np.all(r[key] >= 1.0)
    assert r["holds"].dtype == bool and not r["holds"].any()  # skewed, d = 40
    with pytest.raises(ValueError, match="n_grid"):
        bb.ratio_curves(sd, [1.0])
    fig = bb.comparison_figure({"a": r, "b": r}, ns, ["$a$", "b"])
    with pytest.raises(ValueError, match="titles"):
        bb.comparison_figure({"a": r}, ns, ["a", "b"])
    assert len(fig.axes) == 2
    plt.close(fig)


def test_plan_comparison_counts_and_worst_ratio(tmp_path):
    """Counts by Holm p, worst and best ratio, runs and factors from the table."""
    from dpsum_book import pipeline as pl

    head = ("setting,n,d,alpha,rho,method,runs,error,se,ratio,paired_se,holm_p_behind,"
            "holm_p_ahead,plan_factor,strategy\n")
    lines = []
    for d, runs, r_eq, p_b, p_a in ((16, 100, 0.8, 1.0, 0.001), (512, 30, 1.02, 0.01, 1.0),
                                    (2048, 20, 0.99, 0.5, 0.5)):
        f = 3.75 + d / 1e5
        lines.append(f"A,4000,{d},0.0,0.125,dpsum,{runs},1,0.1,,,,,{f},s")
        lines.append(f"A,4000,{d},0.0,0.125,PLAN equal,{runs},1,0.1,{r_eq},0.01,{p_b},"
                     f"{p_a},{f},s")
        lines.append(f"A,4000,{d},0.0,0.125,isotropic,{runs},1,0.1,0.9,0.01,1,0.04,{f},s")
        lines.append(f"A,4000,{d},0.0,0.125,PLAN published,50,1,0.1,1.1,,0.2,1,{f},s")
    (tmp_path / "plan_comparison.csv").write_text("# attribution\n" + head + "\n".join(lines))
    c = pl.plan_comparison(data=tmp_path)
    eq, iso, pub = c["PLAN equal"], c["isotropic"], c["PLAN published"]
    assert (eq.settings, eq.lower, eq.ahead, eq.behind, eq.not_significant) == (3, 2, 1, 1, 1)
    assert eq.worst_ratio == 1.02 and eq.worst_setting == ("A", 512, 0.0, 0.125)
    assert eq.best_ratio == 0.8 and eq.best_setting[1] == 16
    assert eq.runs == (20, 100) and pub.runs == (50, 50)
    assert eq.factors == (3.75016, 3.77048)
    assert (iso.ahead, iso.behind, pub.lower, pub.behind) == (3, 0, 0, 0)
    (tmp_path / "plan_comparison.csv").write_text(head + "\n".join(
        ln for ln in lines if "isotropic" not in ln))
    with pytest.raises(ValueError, match="isotropic"):
        pl.plan_comparison(data=tmp_path)


def test_pipeline_helpers_plan_budget_and_quantile_loss():
    """PLAN's spent budget per relation, and the quantile's loss bounds, exactly."""
    from fractions import Fraction

    import numpy as np

    from dpsum_book import pipeline as pl

    assert sum(pl.plan_overspend("add-remove").values()) == Fraction(69, 64)
    assert sum(pl.plan_overspend("replace").values()) == Fraction(15, 4)
    assert 3.75 < float(sum(pl.plan_overspend("replace", top_k=0.02).values())) < 3.77
    with pytest.raises(ValueError):
        pl.plan_overspend("swap")
    base = np.array([0.3, 0.9, 1.1, 1.6, 2.2, 3.5])
    worst, width = pl.worst_loss(base, 0.8, 0.0, 4.0, relation="replace", du=1.0, moves=8)
    assert worst <= 0.8 + 1e-12 and width <= 0.8 + 1e-12
    # PLAN's triplicated median exceeds twice its nominal epsilon, within the
    # sensitivity bounds (3x add-remove, 6x replace-one)
    assert 2 < pl.plan_worst_loss(0.5, "add-remove") <= 3 + 1e-9
    assert 3 < pl.plan_worst_loss(0.5, "replace") <= 6 + 1e-9
    edges, prob = pl.gap_law(base, 0.5, 1.0, 0.0, 4.0)
    assert edges.size == prob.size + 1 and abs(prob.sum() - 1) < 1e-12


def test_pipeline_helpers_box_mean_law_and_small_data_study():
    """The box mechanism's mean at rho: clamped mean plus Gaussian noise of the
    Elliptical Gaussian mechanism's scale (a standard normal after division);
    the small-data study returns every method on the same datasets."""
    import math

    import numpy as np

    from dpsum.design import elliptical_scaling
    from dpsum.privacy import zcdp_gaussian_multiplier
    from dpsum_book import pipeline as pl

    gen = np.random.default_rng(3)
    n, d, rho, R = 20, 3, 0.5, 2000
    X = gen.normal(0.0, 3.0, (n, d))
    w = np.full(d, 10.0)
    sd = w / elliptical_scaling(w) * zcdp_gaussian_multiplier(rho) / n
    z = np.array([(pl.box_mean(X, -5.0, 5.0, rho, gen) - np.clip(X, -5, 5).mean(axis=0)) / sd
                  for _ in range(R)]).ravel()
    assert abs(z.mean()) < 4 / math.sqrt(z.size)
    assert abs(z.var() - 1) < 4 * math.sqrt(2 / z.size)
    study = pl.small_data_study(5, (40,), (0.0,), runs=3, d=4)
    row = study[40, 0.0]
    assert set(row) == {"pipeline", "isotropic", "box", "floor", "mean", "strategy"}
    assert all(row[k].shape == (3,) and np.all(row[k] >= 0) for k in row if k != "strategy")


def test_cost_figure_draws_setting_a_for_both_methods():
    """Chapter 13's cost figure: one line per (method, rho), each over the same d's."""
    import matplotlib
    matplotlib.use("Agg")
    from dpsum_book import pipeline as pl
    fig = pl.cost_figure()
    lines = fig.axes[0].get_lines()
    assert len(lines) == 4
    ds = {tuple(line.get_xdata()) for line in lines}
    assert len(ds) == 1 and min(next(iter(ds))) == 16
    assert all(np.all(np.asarray(line.get_ydata()) > 0) for line in lines)
