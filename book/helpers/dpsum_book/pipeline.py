"""Machinery of the chapter "When the data model is unknown: the private pipeline".

Exact laws of the exponential-mechanism quantile (for the privacy checks),
the true-model floor, the noiseless containment check, the budget-share
study, PLAN's budget accounting under both neighbouring relations, and the
figures. The chapter calls each in one line.
"""

from __future__ import annotations

import csv
import math
import warnings
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import dpsum
from dpsum import pipeline
from dpsum.design import elliptical_scaling
from dpsum.kernels.grid import clipped_sum
from dpsum.pipeline.quantiles import ASINH_RESOLUTION
from dpsum.privacy import zcdp_gaussian_multiplier
from dpsum_book import data as book_data
from dpsum_book.data import DATA
from dpsum_book.style import figure

__all__ = [
    "gap_law", "density", "worst_loss", "escape_probabilities", "floor_mean",
    "containment", "share_study", "share_figure", "read_rows", "targets",
    "plan_published", "errors_by_d_rho", "targets_figure", "plan_overspend", "plan_worst_loss",
    "box_mean", "small_data_study", "PlanComparison", "plan_comparison",
]


def gap_law(values: np.ndarray, q: float, eps: float, lo: float, hi: float,
            du: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the exponential-mechanism quantile: the gap edges and their
    probabilities (on whatever scale ``values`` are given)."""
    edges = np.concatenate([[lo], np.sort(np.clip(values, lo, hi)), [hi]])
    m = len(values)
    with np.errstate(divide="ignore"):
        logw = np.log(np.diff(edges)) - eps * np.abs(np.arange(m + 1) - q * m) / (2 * du)
    w = np.exp(logw - logw.max())
    return edges, w / w.sum()


def density(values: np.ndarray, grid: np.ndarray, q: float, eps: float, lo: float,
            hi: float, du: float = 1.0) -> np.ndarray:
    """The output density of the quantile mechanism on ``grid``."""
    edges, prob = gap_law(values, q, eps, lo, hi, du)
    k = np.clip(np.searchsorted(edges, grid, side="right") - 1, 0, len(prob) - 1)
    return prob[k] / np.diff(edges)[k]


def worst_loss(base: np.ndarray, eps: float, lo: float, hi: float, *, relation: str,
               du: float, copies: int = 1, spread: float = 0.1,
               moves: int = 40) -> tuple[float, float]:
    """Largest |privacy loss| and widest range of the loss of the median over
    neighbours of ``base`` (one row moved, or one row added), exactly on a
    fine grid. With ``copies = 3`` every row enters as ``x - spread, x,
    x + spread`` (PLAN's triplication)."""
    grid = np.linspace(lo + 1e-9, hi - 1e-9, 20001)
    offsets = (np.array([-spread, 0.0, spread]) if copies == 3 else np.zeros(1))

    def dens(rows: np.ndarray) -> np.ndarray:
        return density((rows[:, None] + offsets).ravel(), grid, 0.5, eps, lo, hi, du)

    p0 = dens(base)
    worst_abs = worst_range = 0.0
    targets = np.linspace(lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo), moves)
    for new in targets:
        if relation == "replace":
            others = []
            for i in range(base.size):
                o = base.copy()
                o[i] = new
                others.append(o)
        else:
            others = [np.append(base, new)]
        for o in others:
            loss = np.log(p0 / dens(o))
            worst_abs = max(worst_abs, float(np.abs(loss).max()))
            worst_range = max(worst_range, float(loss.max() - loss.min()))
    return worst_abs, worst_range


def escape_probabilities(values: np.ndarray, lo: float, hi: float,
                         eps_n: tuple[int, ...]) -> dict[int, tuple[float, float]]:
    """Probability that the private median falls outside the data, on the
    linear and on the asinh scale, for each ``epsilon n``."""
    w = (hi - lo) * ASINH_RESOLUTION
    out = {}
    for en in eps_n:
        eps = en / values.size
        row = []
        for f in (lambda x: x, lambda x: np.arcsinh(x / w)):
            _, prob = gap_law(f(values), 0.5, eps, f(lo), f(hi))
            row.append(float(prob[0] + prob[-1]))
        out[en] = (row[0], row[1])
    return out


def floor_mean(X: np.ndarray, mean: np.ndarray, stds: np.ndarray, rho: float, p: float,
               gen: np.random.Generator) -> np.ndarray:
    """The Gaussian-data mechanism with the true model (the floor), rho-zCDP."""
    n, d = X.shape
    setup = dpsum.gaussian_data_setup(stds, center=mean, clip_probability=p)
    total, _ = clipped_sum(X, setup.clip_norm, setup.scaling, mean)
    noise = gen.standard_normal(d) * zcdp_gaussian_multiplier(rho) * 2 * setup.clip_norm
    return mean + (total + noise) / setup.scaling / n


def box_mean(X: np.ndarray, lower: float, upper: float, rho: float,
             gen: np.random.Generator) -> np.ndarray:
    """The Elliptical Gaussian mechanism's mean on the box ``[lower, upper]^d``,
    rho-zCDP under replace-one (clamped rows, noise ``w_j / b_j`` times the
    multiplier, ``b`` the optimal scaling of the widths)."""
    n, d = X.shape
    widths = np.full(d, float(upper - lower))
    b = elliptical_scaling(widths)
    noise = gen.standard_normal(d) * widths / b * zcdp_gaussian_multiplier(rho)
    out: np.ndarray = np.clip(X, lower, upper).mean(axis=0) + noise / n
    return out


def small_data_study(seed: int, ns: tuple[int, ...], offsets: tuple[float, ...],
                     runs: int, d: int = 8, rho: float = 0.5, half: float = 100.0
                     ) -> dict[tuple[int, float], dict[str, Any]]:
    """Few rows in a wide box: ``N(mu, diag(sig^2))`` rows, ``sig`` from 4 down to
    1/4, ``mu_j`` = offset, box ``[-half, half]^d``. Per ``(n, offset)``: the
    mean L2 errors of the pipeline (default), isotropic clipping with a
    private radius, the Elliptical Gaussian mechanism on the box, the true
    model (floor) and the non-private mean, all on the same datasets, and the
    pipeline's most frequent strategy."""
    sig = np.geomspace(4.0, 0.25, d)
    out: dict[tuple[int, float], dict[str, Any]] = {}
    for n in ns:
        for off in offsets:
            gen = np.random.default_rng([seed, n, int(off)])
            mu = np.full(d, float(off))
            err: dict[str, list[float]] = {k: [] for k in
                                           ("pipeline", "isotropic", "box", "floor", "mean")}
            strategies = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                for _ in range(runs):
                    X = mu + gen.standard_normal((n, d)) * sig
                    r = dpsum.private_mean(X, lower=-half, upper=half, rho=rho, rng=gen)
                    i = dpsum.private_mean(X, lower=-half, upper=half, rho=rho, rng=gen,
                                           scaling="isotropic")
                    est = {"pipeline": r.estimate, "isotropic": i.estimate,
                           "box": box_mean(X, -half, half, rho, gen),
                           "floor": floor_mean(X, mu, sig, rho, 1 / n, gen),
                           "mean": X.mean(axis=0)}
                    for k, v in est.items():
                        err[k].append(float(np.linalg.norm(v - mu)))
                    strategies.append(r.strategy)
            row: dict[str, Any] = {k: np.array(v) for k, v in err.items()}
            row["strategy"] = max(set(strategies), key=strategies.count)
            out[n, off] = row
    return out


def containment(seed: int, miss: float = 50.0) -> dict[str, np.ndarray]:
    """Noiseless clipped mean with a center that misses coordinate 0 by ``miss``
    standard deviations: bias in sampling standard errors with the true
    scales and with private deviation-based scales (n = 4000, d = 32)."""
    gen = np.random.default_rng(seed)
    n, d = 4000, 32
    sigma = np.exp(gen.uniform(-2, 2, d))
    X = gen.standard_normal((n, d)) * sigma  # true mean 0
    c = np.zeros(d)
    c[0] = miss * sigma[0]

    def noiseless(scales: np.ndarray) -> np.ndarray:
        b = pipeline.robust_scaling(scales)
        C = dpsum.clip_radius(scales, 1 / n, b)
        total, _ = clipped_sum(X, C, b, c)
        return c + total / b / n

    private = pipeline.private_scales(X, c, epsilon=0.05, min_scale=1e-6, max_scale=1e4,
                                      rng=2)
    se = sigma / math.sqrt(n)
    return {"true": np.abs(noiseless(sigma)) / se, "private": np.abs(noiseless(private)) / se,
            "scale0": np.array([sigma[0], private[0], c[0]])}


SHARES = (0.0005, 0.002, 0.008, 0.03, 0.1, 0.3)


def share_study(seed: int, runs: int = 5, n: int = 4000, d: int = 64,
                rho: float = 0.25) -> dict[str, Any]:
    """Error over the floor when one share (center or scales) moves, the others
    at their defaults; scaled clipping forced, so that the scales are used."""
    gen = np.random.default_rng(seed)
    sig = np.sqrt(d / np.arange(1, d + 1))
    mu = np.full(d, 10.0)
    default = pipeline.default_budget(n, d, rho)
    data = [mu + gen.standard_normal((n, d)) * sig for _ in range(runs)]
    floor = np.mean([np.linalg.norm(floor_mean(X, mu, sig, rho, 1 / n, gen) - mu)
                     for X in data])
    study: dict[str, Any] = {"default": default, "shares": SHARES}
    for step in ("center", "scales"):
        curve = []
        for share in SHARES:
            split = {k: getattr(default, k) for k in ("center", "radius", "scales", "clip")}
            split[step] = share
            with warnings.catch_warnings():  # the bad shares warn, as they should
                warnings.simplefilter("ignore")
                errs = [np.linalg.norm(dpsum.private_mean(X, lower=-1e4, upper=1e4, rho=rho,
                                                          budget=split, scaling="scaled",
                                                          rng=gen).estimate - mu)
                        for X in data]
            curve.append(float(np.mean(errs) / floor))
        study[step] = curve
    return study


def share_figure(study: dict[str, Any]) -> Any:
    """The error over the floor against one share at a time."""
    fig, ax = figure()
    for step, marker in (("center", "o"), ("scales", "s")):
        line, = ax.semilogx(study["shares"], study[step], marker=marker,
                            label=f"share of the {step}")
        ax.axvline(getattr(study["default"], step), color=line.get_color(), ls=":", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("share of the budget (the other shares at their defaults, dotted)")
    ax.set_ylabel("error / error with the true model")
    ax.legend()
    return fig


def read_rows(name: str) -> list[dict[str, str]]:
    """The rows of a CSV file of book/data (comment lines skipped)."""
    with open(DATA / name) as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def targets(target: str) -> list[dict[str, Any]]:
    """The rows of one target of ``pipeline_targets.csv``, numbers parsed."""
    out = []
    for r in read_rows("pipeline_targets.csv"):
        if r["target"] == target:
            row: dict[str, Any] = dict(r)
            for k in ("error", "se", "ratio", "paired_se", "holm_p"):
                row[k] = float(r[k])
            row["behind"] = int(r["behind"])
            out.append(row)
    return out


def plan_published() -> dict[tuple[str, int, float, float], float]:
    """PLAN's published mean errors by (setting, d, alpha, rho)."""
    return {(r["setting"], int(r["d"]), float(r["alpha"]), float(r["rho"])): float(r["PLAN"])
            for r in read_rows("plan_published.csv")}


def _parse_a(setting: str) -> tuple[int, float]:
    d = int(setting.split("d=")[1].split()[0])
    rho = float(setting.split("rho=")[1].split()[0])
    return d, rho


def errors_by_d_rho(target: str, method: str) -> dict[tuple[int, float], float]:
    """A target's mean errors of one method by (d, rho)."""
    return {_parse_a(r["setting"]): r["error"] for r in targets(target)
            if r["method"] == method}


def targets_figure() -> Any:
    """Setting A against d (the pipeline, isotropic clipping, PLAN published) and
    the case study's ratio to the Elliptical Gaussian mechanism on the box."""
    fig, (ax, bx) = figure(2)
    rows = targets("A")
    plan = plan_published()
    for rho in (0.125, 1.0):
        for method, label in (("adaptive", "dpsum"), ("isotropic", "isotropic")):
            pts = sorted((_parse_a(r["setting"])[0], r["error"]) for r in rows
                         if r["method"] == method and _parse_a(r["setting"])[1] == rho)
            ax.loglog(*zip(*pts), marker="o" if method == "adaptive" else "s", ms=3,
                      label=f"{label}, rho={rho:g}", base=2)
        ds = sorted({p[0] for p in pts})
        ax.loglog(ds, [plan[("A", d, 0.0, rho)] for d in ds], "x", color="0.4", base=2,
                  label="PLAN published" if rho == 1.0 else None)
    ax.set_xlabel("d (setting A, n = 4000)")
    ax.set_ylabel("mean L2 error")
    ax.legend(fontsize=8)
    case = [r for r in targets("case") if r["method"] == "EGM box"]
    for k, group in enumerate(("tight", "wide")):
        sel = [r for r in case if r["group"] == group]
        bx.errorbar(np.arange(len(sel)) + 0.15 * k, [r["ratio"] for r in sel],
                    yerr=[2 * r["paired_se"] / r["error"] for r in sel], fmt="os"[k],
                    label="data's range" if group == "tight" else "ten times wider")
        names = [r["setting"].replace("breast cancer", "cancer").replace(" eps=", "\nε = ")
                 .removesuffix(f" {group}") for r in sel]
    bx.axhline(1.0, color="0.5", lw=1)
    bx.set_xticks(np.arange(len(names)), names, fontsize=8)
    bx.set_ylabel("dpsum / Elliptical Gaussian on the box")
    bx.legend()
    return fig


def plan_overspend(relation: str, top_k: float = 0.0) -> dict[str, Fraction]:
    """zCDP each of PLAN's steps really spends, as a fraction of the nominal total rho.

    PLAN gives 1/4 of rho to center and scales (their quantiles on triplicated
    data, with the step's rho divided by 3 and utility sensitivity 1/2), 1/4 of
    the rest to the clip quantile (sensitivity ``q = 1 - k``), and the rest to
    a Gaussian sum with sensitivity 2C. An epsilon-bounded-range step whose
    utility really moves by ``m`` times the assumed sensitivity costs
    ``m^2`` times its nominal zCDP; a Gaussian with sensitivity ``D`` where the
    true one is ``D'`` costs ``(D'/D)^2`` times. ``top_k`` is the clip
    quantile's ``k`` (only replace-one depends on it, by ``1/(1 - k)^2``).
    """
    prep, clip, mean = Fraction(1, 4), Fraction(3, 16), Fraction(9, 16)
    if relation == "add-remove":
        # a row adds three values: utility moves by 3/2 = 3 x 1/2; nominal was 1/3 of it
        return {"center and scales": prep * 9 / 3, "clip": clip,
                "mean": mean / 4}
    if relation == "replace":
        # a row moves three values: utility moves by 3 = 6 x 1/2
        q = Fraction(1) - Fraction(top_k).limit_denominator(10**6)
        return {"center and scales": prep * 36 / 3, "clip": clip / (q * q), "mean": mean}
    raise ValueError("relation must be 'add-remove' or 'replace'")


def plan_worst_loss(eps: float, relation: str) -> float:
    """The exact largest privacy loss of PLAN's triplicated median (nominal
    ``eps``, sensitivity 1/2) on five rows, as a multiple of ``eps``."""
    base = np.array([-1.2, -0.4, 0.1, 0.5, 1.3])
    worst, _ = worst_loss(base, eps, -3.0, 3.0, relation=relation, du=0.5, copies=3,
                          moves=59)
    return worst / eps


@dataclass(frozen=True)
class PlanComparison:
    """The private pipeline against one method over PLAN's published settings.

    ``ratio`` is the pipeline's mean error over the method's; ``ahead`` and
    ``behind`` count the settings where the Holm-corrected one-sided test
    says the pipeline is better or worse (corrected p < 0.05). A setting is
    ``(family, d, alpha, rho)``.
    """

    method: str
    settings: int
    lower: int
    ahead: int
    behind: int
    worst_ratio: float
    worst_setting: tuple[str, int, float, float]
    best_ratio: float
    best_setting: tuple[str, int, float, float]
    runs: tuple[int, int]
    factors: tuple[float, float]

    @property
    def not_significant(self) -> int:
        """Settings where neither one-sided test rejects."""
        return self.settings - self.ahead - self.behind


def plan_comparison(*, data: Path | None = None,
                    level: float = 0.05) -> dict[str, PlanComparison]:
    """The comparisons of ``plan_comparison.csv``, by method.

    Methods: ``"PLAN equal"`` (PLAN's code at an equal effective budget),
    ``"isotropic"`` (isotropic clipping with a private radius) and ``"PLAN
    published"`` (the published errors). ``runs`` is the range of the runs
    per setting of the pipeline (for the published figures, of PLAN's runs);
    ``factors`` the range of the budget factors PLAN's nominal budget was
    divided by.
    """
    rows = book_data.read_rows("plan_comparison.csv", data=data)
    ours = {(r["setting"], r["d"], r["alpha"], r["rho"]): r for r in rows
            if r["method"] == "dpsum"}
    out = {}
    for method in ("PLAN equal", "isotropic", "PLAN published"):
        sel = [r for r in rows if r["method"] == method]
        if not sel:
            raise ValueError(f"plan_comparison.csv has no rows of {method!r}")
        keys = [(r["setting"], int(r["d"]), float(r["alpha"]), float(r["rho"])) for r in sel]
        ratio = np.array([float(r["ratio"]) for r in sel])
        runs = [int((r if method == "PLAN published" else
                     ours[(r["setting"], r["d"], r["alpha"], r["rho"])])["runs"])
                for r in sel]
        factors = [float(r["plan_factor"]) for r in sel]
        worst, best = int(np.argmax(ratio)), int(np.argmin(ratio))
        out[method] = PlanComparison(
            method=method, settings=len(sel), lower=int(np.sum(ratio < 1)),
            ahead=sum(float(r["holm_p_ahead"]) < level for r in sel),
            behind=sum(float(r["holm_p_behind"]) < level for r in sel),
            worst_ratio=float(ratio[worst]), worst_setting=keys[worst],
            best_ratio=float(ratio[best]), best_setting=keys[best],
            runs=(min(runs), max(runs)), factors=(min(factors), max(factors)))
    return out


def cost_figure() -> Any:
    """Setting A (n = 4000 isotropic Gaussian rows) against d: the pipeline's
    mean error and isotropic clipping's with a private radius, at two budgets."""
    fig, ax = figure()
    rows = targets("A")
    for rho in (0.125, 1.0):
        for method, label in (("adaptive", "dpsum.private_mean"),
                              ("isotropic", "isotropic clipping")):
            pts = sorted((_parse_a(r["setting"])[0], r["error"]) for r in rows
                         if r["method"] == method and _parse_a(r["setting"])[1] == rho)
            ax.loglog(*zip(*pts), marker="o" if method == "adaptive" else "s", ms=3,
                      ls="-" if method == "adaptive" else "--",
                      label=f"{label}, rho = {rho:g}", base=2)
    ax.set_xlabel("dimension d (n = 4000)")
    ax.set_ylabel("mean L2 error")
    ax.legend(fontsize=8)
    return fig
