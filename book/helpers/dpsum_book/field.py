"""Realistic tables for the pipeline lecture and the case study.

``book/data/realistic_tables.csv`` holds, per table, box and number of rows,
the root mean squared error of the private mean vector of three releases on
the same public box: :func:`dpsum.private_mean`, the Elliptical Gaussian
mechanism on the box, and the pipeline's isotropic variant
(``scaling="isotropic"``), with standard errors and the worst column's
relative error. :func:`errors_against_n` reads one table's rows,
:func:`error_against_n_figure` draws them, and :func:`skewed_example` gives
the case study a skewed real-valued table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dpsum_book.data import read_rows
from dpsum_book.style import figure

__all__ = ["FILE", "METHODS", "errors_against_n", "error_against_n_figure", "skewed_example"]

#: the data file
FILE = "realistic_tables.csv"

#: column prefix -> legend label
METHODS = {"pipeline": "private_mean", "box": "box (Elliptical Gaussian)",
           "iso": "isotropic variant"}


def errors_against_n(table: str, bounds: str = "tight", *,
                     data: Path | None = None) -> dict[str, np.ndarray]:
    """One table's rows, sorted by ``n``: ``n`` and, per method of
    :data:`METHODS`, its RMSE and standard error (``<method>``,
    ``<method>_se``) and its worst column's relative RMSE
    (``<method>_worst_col``).

    Parameters
    ----------
    table : str
        A table of the file (``"customer"``, ``"lognormal"``, ...).
    bounds : {"tight", "loose"}
        The public box: the range an expert would give, or 100 times wider.
    data : Path, optional
        Another directory than ``book/data`` (tests).
    """
    rows = [r for r in read_rows(FILE, data=data)
            if r["table"] == table and r["bounds"] == bounds]
    if not rows:
        raise ValueError(f"table: no rows for {table!r} with bounds {bounds!r} in {FILE}")
    rows.sort(key=lambda r: float(r["n"]))
    out = {"n": np.array([float(r["n"]) for r in rows])}
    for m in METHODS:
        for suffix in ("", "_se", "_worst_col"):
            out[m + suffix] = np.array([float(r[m + suffix]) for r in rows])
    return out


def error_against_n_figure(tables: Sequence[str] = ("customer", "lognormal", "student-t"),
                           bounds: str = "tight", *, data: Path | None = None) -> Any:
    """The three methods' RMSE against ``n`` on log-log axes, one panel per
    table (at most three), with two-standard-error bars. Returns the figure."""
    tables = list(tables)
    if not 1 <= len(tables) <= 3:
        raise ValueError(f"tables must name 1 to 3 tables, got {len(tables)}")
    fig, axes = figure(len(tables), squeeze=False)
    for ax, table in zip(axes[0], tables):
        e = errors_against_n(table, bounds, data=data)
        for m, label in METHODS.items():
            ax.errorbar(e["n"], e[m], yerr=2 * e[m + "_se"], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows n")
        ax.set_title(table)
    axes[0][0].set_ylabel("RMSE of the mean")
    axes[0][0].legend()
    fig.tight_layout()
    return fig


def skewed_example(columns: int = 5) -> dict[str, Any]:
    """A skewed real-valued table for the case study: the ``columns`` most
    skewed features of scikit-learn's bundled breast-cancer data (areas and
    their standard errors, log-normal-like), with the public box
    ``[0, 10^4]`` of the case study.

    Returns
    -------
    dict
        ``X`` (n, columns), ``names``, ``skewness`` (sample skewness per
        column), ``lower`` and ``upper``.
    """
    from scipy import stats
    from sklearn.datasets import load_breast_cancer

    if not isinstance(columns, (int, np.integer)) or not 1 <= columns <= 30:
        raise ValueError(f"columns must be an integer in [1, 30], got {columns!r}")
    bunch = load_breast_cancer()
    X = np.asarray(bunch.data, dtype=float)
    skew = stats.skew(X, axis=0)
    order = np.argsort(-skew)[:columns]
    return {"X": X[:, order], "names": [str(bunch.feature_names[j]) for j in order],
            "skewness": skew[order], "lower": np.zeros(columns),
            "upper": np.full(columns, 1e4)}
