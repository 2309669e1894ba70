"""The book's helper for the realistic tables (dpsum_book.field)."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from dpsum_book import field  # noqa: E402
from dpsum_book.data import write_csv  # noqa: E402


def _rows():
    out = []
    for n, err in ((1000, 10.0), (100, 100.0), (10_000, 1.0)):
        row = {"table": "t", "bounds": "tight", "n": n, "runs": 30}
        for k, m in enumerate(field.METHODS):
            row[m] = err * (k + 1)
            row[m + "_se"] = err / 10
            row[m + "_worst_col"] = err / 100
        out.append(row)
    out.append(dict(out[0], bounds="loose"))
    return out


def test_errors_against_n_reads_one_table_sorted(tmp_path):
    write_csv(field.FILE, _rows(), data=tmp_path)
    e = field.errors_against_n("t", data=tmp_path)
    np.testing.assert_array_equal(e["n"], [100, 1000, 10_000])
    np.testing.assert_array_equal(e["pipeline"], [100.0, 10.0, 1.0])
    np.testing.assert_array_equal(e["box"], [200.0, 20.0, 2.0])
    with pytest.raises(ValueError, match="no rows"):
        field.errors_against_n("other", data=tmp_path)


def test_figure_draws_three_methods_per_panel(tmp_path):
    write_csv(field.FILE, _rows(), data=tmp_path)
    fig = field.error_against_n_figure(["t", "t"], data=tmp_path)
    axes = fig.get_axes()
    assert len(axes) == 2
    for ax in axes:
        assert ax.get_xscale() == "log" and len(ax.containers) == 3
    with pytest.raises(ValueError, match="1 to 3"):
        field.error_against_n_figure([], data=tmp_path)


def test_stored_file_covers_the_lecture_tables():
    for table in ("customer", "lognormal", "student-t"):
        e = field.errors_against_n(table)
        assert e["n"].size >= 3 and np.all(e["pipeline"] > 0)


def test_skewed_example_is_skewed_and_inside_its_box():
    pytest.importorskip("sklearn")
    ex = field.skewed_example(4)
    assert ex["X"].shape[1] == 4 and np.all(ex["skewness"] > 2)
    assert np.all((ex["X"] >= ex["lower"]) & (ex["X"] <= ex["upper"]))
    with pytest.raises(ValueError, match="columns"):
        field.skewed_example(0)
