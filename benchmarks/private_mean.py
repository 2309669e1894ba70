"""The private pipeline against PLAN on PLAN's own Gaussian experiments (issue 15).

Reproduces the Gaussian A, B and C settings of PLAN's
``simulations/baseline_comparison.py`` (Aumüller, Lebeda, Nelson, Pagh,
"PLAN: Variance-Aware Private Mean Estimation", PETS 2024; repository
ChristianLebeda/PLAN-experiments) on the grid of its published results,
``experiments_results/gaussian{A,B,C}/dataframe.csv``:

=======  ======  =====================  =======================  ==========================  ===========
setting  n       d                      coordinate variances      universe (every coord.)     rho
=======  ======  =====================  =======================  ==========================  ===========
A        4000    16, 32, ..., 2048      1                         +-25 sqrt(d)                1/8 .. 1
B        10000   512                    (d/j)^alpha, alpha 0..2   +-50 d max(var)^(1/4)       1/16 .. 1
C        10000   16, 32, ..., 2048      (d/j)^2                   +-50 d max(var)^(1/4)       1/8 .. 1
=======  ======  =====================  =======================  ==========================  ===========

with mean 0 (A) or 10 (B, C) in every coordinate. The error is the L2 distance
of the estimate from the true mean (as PLAN measures it), averaged over
``--runs`` fresh datasets (standard errors shown). In each run every method
sees the same data:

- ``dpsum rho``: :func:`dpsum.private_mean` with the budget ``rho`` (zCDP);
- ``dpsum e,d``: the same with the budget ``(epsilon, delta)``, ``epsilon``
  PLAN's ``rho`` converted by the tightest valid conversion (Canonne, Kamath
  and Steinke) at ``--delta``;
- ``floor rho``, ``floor e,d``: Algorithm 3 with the *true* center and
  scales (the same clip probability), calibrated to ``rho`` and, exactly, to
  ``(epsilon, delta)``: what the pipeline would do if the model were known;
- ``iso rho``: isotropic clipping with a private radius
  (``private_mean(..., scaling="isotropic")``);
- ``mean``: the non-private empirical mean;
- ``PLAN``: PLAN's published errors, read at run time from the repository.

Targets (issue 15): ``dpsum rho`` at or below PLAN on every setting, never
worse than ``iso rho``, and within 1.3x of ``floor rho`` for n >= 10^4,
d <= 1024, rho >= 1/8. Misses are listed at the end.

Run (about an hour on one core)::

    PLAN_EXPERIMENTS=/path/to/PLAN-experiments flock /tmp/dpsum-heavy.lock \\
        .venv/bin/python benchmarks/private_mean.py --runs 20 --out results.csv

``PLAN_EXPERIMENTS`` (or ``--plan``) is a checkout of the repository or its
git directory. ``--only A:256`` restricts the grid (``A``, ``B:1.5``,
``C:1024:0.25``, ...).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

import dpsum
from dpsum.privacy.composition import zcdp_epsilon, zcdp_gaussian_multiplier

PLAN_FILES = {"A": "experiments_results/gaussianA/dataframe.csv",
              "B": "experiments_results/gaussianB/dataframe.csv",
              "C": "experiments_results/gaussianC/dataframe.csv"}
PLAN_NAMES = ("PLAN", "PLAN-E-ULTIMATE++")   # the main algorithm, renamed between runs
METHODS = ("dpsum rho", "dpsum e,d", "floor rho", "floor e,d", "iso rho", "mean")


# ---------------------------------------------------------------------------
# PLAN's published results
# ---------------------------------------------------------------------------
def _read_plan_file(root: Path, rel: str) -> str:
    if (root / rel).is_file():
        return (root / rel).read_text()
    git_dir = root if (root / "HEAD").is_file() else root / ".git"
    if (git_dir / "HEAD").is_file():
        out = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{rel}"],
                             capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout
    raise FileNotFoundError(rel)


def load_plan(root: str | None) -> dict:
    """PLAN's published errors: {(setting, d, alpha, rho): {algorithm: [errors]}} plus n."""
    if not root:
        sys.exit("PLAN's published results are needed: set PLAN_EXPERIMENTS (or --plan) to a "
                 "checkout or git directory of github.com/ChristianLebeda/PLAN-experiments")
    path = Path(root)
    table: dict = defaultdict(lambda: defaultdict(list))
    for setting, rel in PLAN_FILES.items():
        try:
            text = _read_plan_file(path, rel)
        except FileNotFoundError:
            sys.exit(f"{rel} not found under {path}: is it the PLAN-experiments repository?")
        for row in csv.DictReader(io.StringIO(text)):
            key = (setting, int(row["d"]), float(row["r"]), float(row["rho"]))
            table[key]["n"] = [int(row["n"])]
            table[key][row["Algorithm"]].append(float(row["error"]))
            # every algorithm of a run saw the same data: keep the pairing
            table[key][row["Algorithm"] + " run"].append(int(row["run"]))
    return table


def plan_excess(rows, name):
    """PLAN's per-run error minus the empirical mean's on the same data."""
    mine = dict(zip(rows[name + " run"], rows[name]))
    emp = dict(zip(rows["Empirical mean (non-private)" + " run"],
                   rows["Empirical mean (non-private)"]))
    return np.array([mine[r] - emp[r] for r in sorted(mine) if r in emp])


# ---------------------------------------------------------------------------
# the settings (PLAN's baseline_comparison.py)
# ---------------------------------------------------------------------------
def model(setting: str, d: int, alpha: float):
    """(n, mean, stds, universe) of one of PLAN's Gaussian settings."""
    if setting == "A":
        return 4000, np.zeros(d), np.ones(d), (-25 * math.sqrt(d), 25 * math.sqrt(d))
    var = (d / np.arange(1, d + 1)) ** alpha
    half = d * var.max() ** 0.25 * 50
    return 10_000, np.full(d, 10.0), np.sqrt(var), (-half, half)


def floor_release(X, mean, stds, rho, p, gen):
    """Algorithm 3 with the true model, its Gaussian noise calibrated to rho-zCDP."""
    n, d = X.shape
    setup = dpsum.gaussian_data_setup(stds, center=mean, clip_probability=p)
    total, _ = dpsum.kernels.clipped_sum(X, setup.clip_norm, setup.scaling, mean)
    s = zcdp_gaussian_multiplier(rho)
    noise = gen.standard_normal(d) * s * 2 * setup.clip_norm     # replace-one: 2C
    return mean + (total + noise) / setup.scaling / n


def run_setting(setting, d, alpha, rho, runs, delta, seed, skip=()):
    n, mean, stds, universe = model(setting, d, alpha)
    gen = np.random.default_rng([seed, ord(setting), d, int(alpha * 10), int(rho * 10_000)])
    eps = zcdp_epsilon(rho, delta)
    p = dpsum.pipeline.default_clip_probability(n)
    errors = defaultdict(list)
    for _ in range(runs):
        X = mean + gen.standard_normal((n, d)) * stds
        est = {
            "dpsum rho": dpsum.private_mean(X, lower=universe[0], upper=universe[1], rho=rho, rng=gen).estimate,
        }
        if "dpsum e,d" not in skip:
            # the pipeline turns (eps, delta) into the largest rho converting to
            # it, i.e. rho itself: the same release, a second draw of it
            est["dpsum e,d"] = dpsum.private_mean(X, lower=universe[0], upper=universe[1], epsilon=eps, delta=delta,
                                                  rng=gen).estimate
        est |= {
            "floor rho": floor_release(X, mean, stds, rho, p, gen),
            "floor e,d": dpsum.gaussian_data_mechanism(
                X, epsilon=eps, delta=delta, stds=stds, center=mean, clip_probability=p,
                rng=gen).estimate / n,
            "iso rho": dpsum.private_mean(X, lower=universe[0], upper=universe[1], rho=rho, scaling="isotropic",
                                          rng=gen).estimate,
            "mean": X.mean(axis=0),
        }
        for name, value in est.items():
            errors[name].append(float(np.linalg.norm(value - mean)))
    return {k: np.array(v) for k, v in errors.items()}, eps


def _mse(values):
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    return v.mean(), v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else float("nan")


def _paired(a, b):
    """Mean of a - b and its standard error (the same data in every run)."""
    return _mse(np.asarray(a) - np.asarray(b))


def write_plan_summary(plan, path):
    """PLAN's published means (its main algorithm and its empirical mean) per setting."""
    with open(path, "w", newline="") as fh:
        fh.write("# Mean L2 errors published by Aumueller, Lebeda, Nelson and Pagh (PLAN, PETS 2024)\n"
                 "# in github.com/ChristianLebeda/PLAN-experiments, experiments_results/gaussian*/dataframe.csv;\n"
                 "# summarised by benchmarks/private_mean.py --plan-summary\n")
        w = csv.writer(fh)
        w.writerow(["setting", "n", "d", "alpha", "rho", "runs", "PLAN", "PLAN_se",
                    "empirical_mean", "empirical_mean_se"])
        for key in sorted(plan):
            rows = plan[key]
            pub = next(rows[a] for a in PLAN_NAMES if a in rows)
            emp = rows["Empirical mean (non-private)"]
            w.writerow([key[0], rows["n"][0], key[1], key[2], key[3], len(pub),
                        *(f"{v:.6g}" for v in _mse(pub)), *(f"{v:.6g}" for v in _mse(emp))])


def selected(key, only):
    """Whether the setting ``key = (setting, d, alpha, rho)`` is in the ``--only``
    specs (``A``, ``B:1.5``, ``C:1024:0.25``; every setting when there are none)."""
    setting, d, alpha, rho = key
    var = alpha if setting == "B" else d
    for spec in only or []:
        parts = spec.split(":")
        if parts[0] == setting and (len(parts) < 2 or float(parts[1]) == var) and (
                len(parts) < 3 or abs(float(parts[2]) - rho) < 1e-12):
            return True
    return not only

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", default=os.environ.get("PLAN_EXPERIMENTS"),
                    help="checkout or git directory of PLAN-experiments")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--only", action="append", default=[],
                    help="restrict to SETTING[:d or alpha[:rho]] (repeatable)")
    ap.add_argument("--out", help="write one CSV row per setting and method here")
    ap.add_argument("--skip", action="append", default=[], choices=["dpsum e,d"],
                    help="leave out a method (its columns are NaN); 'dpsum e,d' spends "
                    "the same rho as 'dpsum rho' and only doubles the run time")
    ap.add_argument("--plan-summary", help="only write PLAN's published mean errors per "
                    "setting (with standard errors) to this CSV, and exit")
    args = ap.parse_args(argv)
    if args.runs < 2:
        ap.error("--runs must be at least 2 (standard errors)")
    plan = load_plan(args.plan)
    if args.plan_summary:
        write_plan_summary(plan, args.plan_summary)
        return

    keys = sorted(k for k in plan if selected(k, args.only))
    print(f"{len(keys)} settings, {args.runs} runs each, delta = {args.delta:g} for the "
          f"(epsilon, delta) comparison; errors are mean L2 error +- standard error\n")
    head = (f"{'set':3} {'d':>5} {'alpha':>5} {'rho':>6} {'eps':>6} {'PLAN':>15} "
            + " ".join(f"{m:>15}" for m in METHODS)
            + f" {'/PLAN':>6} {'/iso':>6} {'/floor':>6}")
    print(head)
    rows, misses = [], []
    t_start = time.time()
    for key in keys:
        setting, d, alpha, rho = key
        n = plan[key]["n"][0]
        n_model, *_ = model(setting, d, alpha)
        if n != n_model:
            sys.exit(f"PLAN's file has n = {n} for {key}, the model here {n_model}")
        name = next((a for a in PLAN_NAMES if a in plan[key]), None)
        if name is None:
            sys.exit(f"no PLAN row for {key}")
        published = plan[key][name]
        errs, eps = run_setting(setting, d, alpha, rho, args.runs, args.delta, args.seed,
                                tuple(args.skip))
        p_mean, p_se = _mse(published)
        stats = {m: _mse(errs.get(m, [])) for m in METHODS}
        ours = stats["dpsum rho"][0]
        r_plan, r_iso, r_floor = ours / p_mean, ours / stats["iso rho"][0], ours / stats["floor rho"][0]
        cells = " ".join(f"{stats[m][0]:8.4g} ±{stats[m][1]:5.2g}" for m in METHODS)
        print(f"{setting:3} {d:5d} {alpha:5.2g} {rho:6.4g} {eps:6.3g} "
              f"{p_mean:8.4g} ±{p_se:5.2g} {cells} {r_plan:6.3f} {r_iso:6.3f} {r_floor:6.3f}",
              flush=True)
        # the targets
        gap = ours - p_mean
        gap_se = math.hypot(stats["dpsum rho"][1], p_se)
        # the excess over the non-private mean of the same run removes the
        # sampling error both share (it dominates when a few coordinates do)
        ex_plan = _mse(plan_excess(plan[key], name))
        ex_ours = _paired(errs["dpsum rho"], errs["mean"])
        if gap > 0:
            misses.append(f"{setting} d={d} alpha={alpha:g} rho={rho:g}: dpsum {ours:.4g} > PLAN "
                          f"{p_mean:.4g} (difference {gap:.3g} ± {gap_se:.2g}; excess over "
                          f"the empirical mean: dpsum {ex_ours[0]:.3g} ± {ex_ours[1]:.2g}, "
                          f"PLAN {ex_plan[0]:.3g} ± {ex_plan[1]:.2g})")
        diff, diff_se = _paired(errs["dpsum rho"], errs["iso rho"])
        if diff > 0:
            misses.append(f"{setting} d={d} alpha={alpha:g} rho={rho:g}: dpsum {ours:.4g} > iso "
                          f"{stats['iso rho'][0]:.4g} (paired difference {diff:.3g} ± {diff_se:.2g})")
        if n >= 10_000 and d <= 1024 and rho >= 0.125 and r_floor > 1.3:
            misses.append(f"{setting} d={d} alpha={alpha:g} rho={rho:g}: dpsum/floor = "
                          f"{r_floor:.3f} > 1.3")
        row = {"setting": setting, "n": n, "d": d, "alpha": alpha, "rho": rho, "epsilon": eps,
               "delta": args.delta, "runs": args.runs, "PLAN": p_mean, "PLAN_se": p_se,
               "PLAN_runs": len(published), "PLAN excess": ex_plan[0],
               "PLAN excess se": ex_plan[1], "dpsum excess": ex_ours[0],
               "dpsum excess se": ex_ours[1]}
        for m in METHODS:
            row[m], row[m + " se"] = stats[m]
        rows.append(row)
    print(f"\n{len(misses)} target misses ({time.time() - t_start:.0f} s):")
    for line in misses:
        print("  " + line)
    if args.out:
        with open(args.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
