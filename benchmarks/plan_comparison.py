"""The private pipeline against PLAN re-run at an equal effective budget, on all 89 of PLAN's settings.

PLAN (Aumüller, Lebeda, Nelson, Pagh, "PLAN: Variance-Aware Private Mean
Estimation", PETS 2024; code and results in the repository
ChristianLebeda/PLAN-experiments) publishes the errors of its synthetic
Gaussian experiments: settings A (n = 4000, N(0, I_d), d = 16 ... 2048,
rho = 1/8 ... 1), B (n = 10^4, d = 512, variances (d/j)^alpha, alpha = 0 ...
2, rho = 1/16 ... 1) and C (n = 10^4, variances (d/j)^2, d = 16 ... 2048,
rho = 1/8 ... 1); see ``private_mean.py`` for the models and universes. The
grid here is exactly the grid of the published files
(``experiments_results/gaussian{A,B,C}/dataframe.csv``, 89 settings).

In every run of a setting all methods see the same dataset:

- ``dpsum``: :func:`dpsum.private_mean` (adaptive scaling, replace-one, the
  budget ``rho``);
- ``isotropic``: ``private_mean(..., scaling="isotropic")`` (isotropic
  clipping with a private radius), the same budget;
- ``PLAN equal``: PLAN's own code (``plan.mean_estimation.plan`` with the
  configuration of its ``simulations/baseline_comparison.py``: triplication
  0.1, budget shares 1/4, 1/4, 1/4, k_groups 1, beta 0.1, Kaplan et al.'s
  quantiles, regularisation), unchanged, called with the nominal budget
  ``rho / factor``. Under replace-one, the relation of its final sum, its
  steps really spend ``factor`` times the nominal budget
  (``dpsum_book.pipeline.plan_overspend("replace", top_k=k)``: the center
  and scale quantiles 3, the clip quantile 3/16 / (1 - k)^2, the sum 9/16,
  with PLAN's own ``k``, which depends on the nominal budget); ``factor``
  is solved per setting so that the budget really spent equals ``rho``;
- ``mean``: the non-private mean (for the paired excess).

The error is the L2 distance to the true mean (as PLAN measures it). Each
comparison (dpsum against PLAN at an equal effective budget, against
isotropic clipping) is a one-sided paired t-test per setting (dpsum worse
than the other method), Holm-corrected across the 89 settings; "behind"
where the corrected p < 0.05, "ahead" where the mean error is lower and dpsum
is not behind (the complementary one-sided test, Holm-corrected, is
reported as "significantly ahead"). Against PLAN's published figures (50
runs on other data, at PLAN's nominal budget, which overspends) the test is
Welch's one-sided t-test on the excess over the non-private mean of the
same data (ours: our runs; PLAN's: its published runs), Holm-corrected.

Runs per setting: 100 where one paired run (all methods) takes under a
second (A with d <= 512, C with d <= 256); 30 in the others (``RUNS``),
where one paired run takes 1.5 to 10 s, PLAN's code taking most of it. In
the run of 26 November 2026 (5750 paired runs: 2247 s on one core, most of
PLAN's runs read from a ``--plan-cache`` filled in about 50 minutes) the standard error of the paired difference dpsum -
other was at most 2% of dpsum's mean error in 58 of the 89 settings against
PLAN at an equal budget and in 45 against isotropic clipping. Where it is
larger, the other method's errors are heavy-tailed (its center escapes in
some runs) or dominated by a few high-variance coordinates (B with alpha >=
1.5, C), and dpsum's mean error is below 0.97 times the other's in every
such setting, so no verdict of "behind" hinges on it. Seeds: the
data, each method and PLAN's global NumPy state in run ``i`` of a setting
come from ``SeedSequence([seed, setting, d, 100 alpha, 10^4 rho]).spawn``;
PLAN's ``np.random.default_rng()`` (unseeded in its code) is given a child
of the same sequence during the call, so every number is reproducible.

Run (PLAN's repository as a checkout or git directory)::

    PLAN_EXPERIMENTS=<checkout> OMP_NUM_THREADS=1 .venv/bin/python \\
        benchmarks/plan_comparison.py [--only A:256] [--plan-cache FILE] [--write]

``--write`` writes ``book/data/plan_comparison.csv`` (one row per setting
and method); without it nothing in ``book/data`` changes. PLAN's code needs
only NumPy, SciPy and joblib (in the venv).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import types
import warnings
from pathlib import Path

import numpy as np
from scipy import optimize, stats

from dpsum.pipeline import private_mean
from dpsum_book.pipeline import plan_overspend
from pipeline_targets import holm, paired
from private_mean import PLAN_NAMES, load_plan, model, plan_excess, selected

#: the book's table (written only with --write)
DATA = Path(__file__).resolve().parents[1] / "book" / "data" / "plan_comparison.csv"
METHODS = ("dpsum", "isotropic", "PLAN equal", "mean")
CODES = {"A": 1, "B": 2, "C": 3}

# PLAN's configuration in simulations/baseline_comparison.py
PLAN_CONFIG = dict(alpha=0.1, variance=0.1, step=20, k=0,
                   recenter_and_std_budget_proportion=0.25, recenter_budget_proportion=0.25,
                   top_k_budget_proportion=0.25, fill=False, regularization=True, k_groups=1,
                   max_std_distance=2, kaplan=True, chisquared=True, beta=0.1)

#: runs per setting where one paired run (all methods) takes a second or more
#: (measured in a pilot of 8 runs per setting: 1.6 to 2.5 s in B, 1.5 to 2.5 s
#: in A with d >= 1024, 2.5 to 10 s in C with d >= 512); every other setting
#: gets --runs (100)
RUNS: dict[tuple[str, int], int] = {("A", 1024): 30, ("A", 2048): 30, ("B", 512): 30,
                                    ("C", 512): 30, ("C", 1024): 30, ("C", 2048): 30}


# ---------------------------------------------------------------------------
# PLAN's code
# ---------------------------------------------------------------------------
def load_plan_code(root: Path) -> types.ModuleType:
    """PLAN's ``plan.mean_estimation``, unchanged, from a checkout or git directory.

    Its modules import each other by top-level names (``util``, ``plan``,
    ...): those packages are registered with their directories as paths.
    """
    if not (root / "plan" / "mean_estimation.py").is_file():
        git_dir = root if (root / "HEAD").is_file() else root / ".git"
        tmp = Path(tempfile.mkdtemp(prefix="plan-src-"))
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "HEAD"],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        root = tmp
    for pkg in ("util", "kaplan_et_al", "quantile_binary_search", "plan"):
        mod = types.ModuleType(pkg)
        mod.__path__ = [str(root / pkg)]
        sys.modules[pkg] = mod
    return importlib.import_module("plan.mean_estimation")


@contextlib.contextmanager
def seeded_numpy(seed: np.random.SeedSequence):
    """PLAN's global NumPy state and its unseeded ``default_rng()`` from ``seed``."""
    a, b = seed.spawn(2)
    np.random.seed(a.generate_state(1)[0])
    original = np.random.default_rng

    def default_rng(*args, **kwargs):
        return original(b) if not args and not kwargs else original(*args, **kwargs)

    np.random.default_rng = default_rng
    try:
        yield
    finally:
        np.random.default_rng = original


def plan_top_k(n: int, universe: tuple[float, float], rho: float, beta: float = 0.1) -> float:
    """PLAN's k (the clip quantile is 1 - k) for the nominal budget ``rho``."""
    T = math.log(universe[1] - universe[0])
    top_k_budget = 0.25 * (1 - 0.25) * rho
    return (math.sqrt(n) + math.sqrt(T / 2 * math.log(T / beta) / top_k_budget)) / n


def plan_spent(n: int, universe: tuple[float, float], nominal: float) -> float:
    """zCDP PLAN really spends under replace-one when called with ``nominal``."""
    k = plan_top_k(n, universe, nominal)
    return nominal * float(sum(plan_overspend("replace", top_k=k).values()))


def equal_budget_factor(n: int, universe: tuple[float, float], rho: float) -> float:
    """The factor f with plan_spent(rho / f) = rho (PLAN is called with rho / f)."""
    nominal = optimize.brentq(lambda r: plan_spent(n, universe, r) - rho, rho / 100, rho,
                              xtol=1e-14, rtol=1e-13)
    return rho / nominal


def run_plan(module, X, universe, nominal):
    params = module.AlgorithmParameters(
        X, X.shape[1], universe, nominal, cov=None, **{
            k: v for k, v in PLAN_CONFIG.items()})
    return module.plan(params).mean


# ---------------------------------------------------------------------------
# one setting
# ---------------------------------------------------------------------------
def setting_seed(seed: int, key) -> np.random.SeedSequence:
    setting, d, alpha, rho = key
    return np.random.SeedSequence([seed, CODES[setting], d, round(alpha * 100),
                                   round(rho * 10_000)])


class PlanCache:
    """PLAN's per-run errors (they do not depend on dpsum), one CSV line per run.

    Keyed by setting, seed and run index; the factor is stored and checked.
    The results are the same with or without the cache (the same seeds).
    """

    FIELDS = ["setting", "d", "alpha", "rho", "seed", "run", "factor", "plan_equal"]

    def __init__(self, path: str | None):
        self.path = Path(path) if path else None
        self.rows: dict[tuple, tuple[float, float]] = {}
        if self.path and self.path.exists():
            with self.path.open() as fh:
                for r in csv.DictReader(fh):
                    k = (r["setting"], int(r["d"]), float(r["alpha"]), float(r["rho"]),
                         int(r["seed"]), int(r["run"]))
                    self.rows[k] = (float(r["factor"]), float(r["plan_equal"]))

    def get(self, key, seed: int, run: int, factor: float) -> float | None:
        hit = self.rows.get((*key, seed, run))
        if hit is None:
            return None
        if abs(hit[0] - factor) > 1e-9 * factor:
            sys.exit(f"{self.path}: factor {hit[0]} for {key}, now {factor}")
        return hit[1]

    def put(self, key, seed: int, run: int, factor: float, error: float) -> None:
        self.rows[(*key, seed, run)] = (factor, error)
        if self.path is None:
            return
        new = not self.path.exists()
        with self.path.open("a", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            if new:
                w.writerow(self.FIELDS)
            w.writerow([*key, seed, run, repr(factor), repr(error)])


def run_setting(module, key, runs, seed, factor, cache, plan_only=False):
    setting, d, alpha, rho = key
    n, mean, stds, universe = model(setting, d, alpha)
    errors = {m: [] for m in METHODS}
    strategies = []
    t0 = time.perf_counter()
    for i, child in enumerate(setting_seed(seed, key).spawn(runs)):
        s_data, s_dpsum, s_iso, s_plan = child.spawn(4)
        X = mean + np.random.default_rng(s_data).standard_normal((n, d)) * stds
        est = {"mean": X.mean(axis=0)}
        if not plan_only:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                rel = private_mean(X, lower=universe[0], upper=universe[1], rho=rho,
                                   rng=np.random.default_rng(s_dpsum))
                est["dpsum"] = rel.estimate
                strategies.append(str(rel.strategy))
                est["isotropic"] = private_mean(X, lower=universe[0], upper=universe[1],
                                                rho=rho, scaling="isotropic",
                                                rng=np.random.default_rng(s_iso)).estimate
        for m, value in est.items():
            errors[m].append(float(np.linalg.norm(value - mean)))
        cached = cache.get(key, seed, i, factor)
        if cached is None:
            with seeded_numpy(s_plan):
                value = run_plan(module, X.copy(), universe, rho / factor)
            cached = float(np.linalg.norm(value - mean))
            cache.put(key, seed, i, factor, cached)
        errors["PLAN equal"].append(cached)
    strat = max(set(strategies), key=strategies.count) if strategies else ""
    return ({m: np.array(v) for m, v in errors.items()}, strat,
            (time.perf_counter() - t0) / runs)


def rel_se(errors, other: str) -> float:
    """Standard error of the paired difference dpsum - other, in % of dpsum's mean error."""
    diff = errors["dpsum"] - errors[other]
    return float(100 * diff.std(ddof=1) / math.sqrt(diff.size) / np.mean(errors["dpsum"]))


def runs_for(key, default: int) -> int:
    setting, d, alpha, rho = key
    return RUNS.get((setting, d), default)


# ---------------------------------------------------------------------------
# the tests and the table
# ---------------------------------------------------------------------------
def welch_greater(a, b) -> float:
    """One-sided p of mean(a) > mean(b), Welch's t-test."""
    return float(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)


def summarise(results, plan_pub):
    """Per comparison: Holm-corrected p-values of dpsum worse and of dpsum better."""
    keys = list(results)
    comps = {}
    for other in ("PLAN equal", "isotropic"):
        worse, better, ratio, se = [], [], [], []
        for k in keys:
            e = results[k]["errors"]
            r, s, p = paired(e["dpsum"], e[other])
            _, _, q = paired(e[other], e["dpsum"])
            ratio.append(r), se.append(s), worse.append(p), better.append(q)
        comps[other] = dict(ratio=ratio, paired_se=se, p_worse=holm(worse),
                            p_better=holm(better))
    worse, better, ratio = [], [], []
    for k in keys:
        e = results[k]["errors"]
        ours = e["dpsum"] - e["mean"]
        name = next(a for a in PLAN_NAMES if a in plan_pub[k])
        theirs = plan_excess(plan_pub[k], name)
        ratio.append(float(np.mean(e["dpsum"]) / np.mean(plan_pub[k][name])))
        worse.append(welch_greater(ours, theirs))
        better.append(welch_greater(theirs, ours))
    comps["PLAN published"] = dict(ratio=ratio, paired_se=[math.nan] * len(keys),
                                   p_worse=holm(worse), p_better=holm(better))
    return comps


def label(key) -> str:
    setting, d, alpha, rho = key
    return f"{setting} d={d} alpha={alpha:g} rho={rho:g}"


def print_counts(keys, comps):
    for other, c in comps.items():
        behind = [i for i, p in enumerate(c["p_worse"]) if p < 0.05]
        ahead = [i for i, p in enumerate(c["p_better"]) if p < 0.05]
        lower = sum(r < 1 for r in c["ratio"])
        worst = int(np.argmax(c["ratio"]))
        best = int(np.argmin(c["ratio"]))
        print(f"dpsum vs {other}: lower mean error in {lower} of {len(keys)}; "
              f"significantly ahead in {len(ahead)}, behind in {len(behind)}, "
              f"not significant in {len(keys) - len(ahead) - len(behind)} (Holm, 0.05); "
              f"worst ratio {c['ratio'][worst]:.3f} at {label(keys[worst])} "
              f"(Holm p {c['p_worse'][worst]:.3g}); best {c['ratio'][best]:.3f} at "
              f"{label(keys[best])}")
        for i in behind:
            print(f"    behind: {label(keys[i])}: ratio {c['ratio'][i]:.3f}, "
                  f"Holm p {c['p_worse'][i]:.3g}")


def write_table(keys, results, comps, plan_pub, args, elapsed):
    rows = []
    for i, k in enumerate(keys):
        setting, d, alpha, rho = k
        res = results[k]
        n = model(setting, d, alpha)[0]
        base = {"setting": setting, "n": n, "d": d, "alpha": alpha, "rho": rho,
                "runs": len(res["errors"]["dpsum"]), "plan_factor": res["factor"],
                "strategy": res["strategy"]}
        for m in METHODS:
            e = res["errors"][m]
            row = dict(base, method=m, error=float(np.mean(e)),
                       se=float(np.std(e, ddof=1) / math.sqrt(e.size)))
            other = {"PLAN equal": "PLAN equal", "isotropic": "isotropic"}.get(m)
            if other:
                c = comps[other]
                row |= {"ratio": c["ratio"][i], "paired_se": c["paired_se"][i],
                        "holm_p_behind": float(c["p_worse"][i]),
                        "holm_p_ahead": float(c["p_better"][i])}
            rows.append(row)
        name = next(a for a in PLAN_NAMES if a in plan_pub[k])
        pub = np.asarray(plan_pub[k][name])
        c = comps["PLAN published"]
        rows.append(dict(base, method="PLAN published", runs=pub.size, error=float(pub.mean()),
                         se=float(pub.std(ddof=1) / math.sqrt(pub.size)),
                         ratio=c["ratio"][i], paired_se=math.nan,
                         holm_p_behind=float(c["p_worse"][i]),
                         holm_p_ahead=float(c["p_better"][i])))
    fields = ["setting", "n", "d", "alpha", "rho", "method", "runs", "error", "se", "ratio",
              "paired_se", "holm_p_behind", "holm_p_ahead", "plan_factor", "strategy"]
    # the cache changes no number (the same seeds): leave its path out
    given = list(sys.argv[1:] if args.argv is None else args.argv)
    argv = [a for i, a in enumerate(given) if not a.startswith("--plan-cache")
            and (i == 0 or given[i - 1] != "--plan-cache")]
    command = "benchmarks/plan_comparison.py " + " ".join(argv)
    with DATA.open("w", newline="") as fh:
        fh.write(
            "# dpsum.private_mean (replace-one, budget rho) against PLAN's own code re-run at an equal\n"
            "# effective budget (called with rho / plan_factor, so that its steps really spend rho under\n"
            "# replace-one), isotropic clipping with a private radius, the non-private mean, and the errors\n"
            "# published with PLAN (Aumueller, Lebeda, Nelson, Pagh, PLAN: Variance-Aware Private Mean\n"
            "# Estimation, PETS 2024; github.com/ChristianLebeda/PLAN-experiments). error = mean L2 error\n"
            "# over paired runs (the same data for every method); ratio = dpsum's mean error / this\n"
            "# method's; holm_p_behind / holm_p_ahead: one-sided paired t-test of dpsum worse / better\n"
            "# (Welch on the excess over the non-private mean for the published figures), Holm-corrected\n"
            "# over the settings of each comparison.\n"
            f"# Command: {command.strip()} (seed {args.seed}; run i of a setting uses\n"
            "#   SeedSequence([seed, {A:1,B:2,C:3}[setting], d, round(100 alpha), round(10^4 rho)]).spawn(runs)[i])\n")
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({f: (f"{r[f]:.6g}" if isinstance(r.get(f), float) else r.get(f, ""))
                        for f in fields})
    print(f"wrote {len(rows)} rows to {DATA}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", default=os.environ.get("PLAN_EXPERIMENTS"),
                    help="checkout or git directory of PLAN-experiments")
    ap.add_argument("--runs", type=int, default=100,
                    help="runs per setting where a run is fast (the slow ones: RUNS)")
    ap.add_argument("--seed", type=int, default=2028)
    ap.add_argument("--only", action="append", default=[],
                    help="restrict to SETTING[:d or alpha[:rho]] (repeatable)")
    ap.add_argument("--write", action="store_true", help=f"write {DATA.name} in book/data")
    ap.add_argument("--plan-cache", help="CSV of PLAN's per-run errors to reuse and extend "
                    "(they do not depend on dpsum; the results are the same without it)")
    ap.add_argument("--plan-only", action="store_true",
                    help="only run PLAN (to fill --plan-cache), print nothing else")
    args = ap.parse_args(argv)
    args.argv = argv
    if args.runs < 2:
        ap.error("--runs must be at least 2")
    plan_pub = load_plan(args.plan)
    module = load_plan_code(Path(args.plan))

    keys = sorted(k for k in plan_pub if selected(k, args.only))
    if args.write and len(keys) != 89:
        ap.error("--write needs all 89 settings (no --only)")
    print(f"{len(keys)} settings; errors: mean L2 error +- standard error; "
          f"ratio: dpsum / other")
    print(f"{'setting':28} {'runs':>4} {'factor':>6} {'s/run':>6} " + " ".join(
        f"{m:>17}" for m in (*METHODS, "PLAN published")) + "  /equal /iso  /pub")
    cache = PlanCache(args.plan_cache)
    results = {}
    t_start = time.time()
    for key in keys:
        setting, d, alpha, rho = key
        n, _, _, universe = model(setting, d, alpha)
        if plan_pub[key]["n"][0] != n:
            sys.exit(f"PLAN's file has n = {plan_pub[key]['n'][0]} for {key}, the model {n}")
        factor = equal_budget_factor(n, universe, rho)
        runs = runs_for(key, args.runs)
        errors, strat, sec = run_setting(module, key, runs, args.seed, factor, cache,
                                         args.plan_only)
        if args.plan_only:
            print(f"{label(key):28} {runs:4d} {factor:6.3f} {sec:6.2f} PLAN equal "
                  f"{np.mean(errors['PLAN equal']):.4g}", flush=True)
            continue
        results[key] = {"errors": errors, "strategy": strat, "factor": factor, "seconds": sec}
        name = next(a for a in PLAN_NAMES if a in plan_pub[key])
        pub = np.asarray(plan_pub[key][name])
        cells = [(np.mean(errors[m]), np.std(errors[m], ddof=1) / math.sqrt(runs))
                 for m in METHODS] + [(pub.mean(), pub.std(ddof=1) / math.sqrt(pub.size))]
        ours = cells[0][0]
        print(f"{label(key):28} {runs:4d} {factor:6.3f} {sec:6.2f} "
              + " ".join(f"{v:9.4g} ±{s:6.2g}" for v, s in cells)
              + f"  {ours / cells[2][0]:.3f} {ours / cells[1][0]:.3f} {ours / cells[4][0]:.3f}"
              + f"  se% {rel_se(errors, 'PLAN equal'):.1f} {rel_se(errors, 'isotropic'):.1f}"
              + f"  [{strat}]", flush=True)
    elapsed = time.time() - t_start
    if args.plan_only:
        return
    comps = summarise(results, plan_pub)
    print(f"\n{len(keys)} settings, {sum(len(r['errors']['dpsum']) for r in results.values())} "
          f"paired runs in {elapsed:.0f} s")
    print_counts(keys, comps)
    factors = [results[k]["factor"] for k in keys]
    print(f"equal-budget factors (PLAN called with rho / factor): {min(factors):.4f} to "
          f"{max(factors):.4f}")
    if args.write:
        write_table(keys, results, comps, plan_pub, args, elapsed)


if __name__ == "__main__":
    main()
