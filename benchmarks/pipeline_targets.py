"""The adaptive pipeline's targets (issue 28), paired runs, Holm-corrected one-sided tests.

Targets, each printed as: setting, mean L2 error +- standard error of each
method, the paired ratio, and whether the pipeline is significantly behind
(one-sided paired t-test, Holm correction across the settings of a target):

- ``A``: PLAN's isotropic GaussianA (n = 4000, N(0, I_d), box +-25 sqrt(d)),
  d = 16 ... 2048, rho in {1/8, 1/4, 1/2, 1}: ``private_mean`` (adaptive)
  against its isotropic variant (``scaling="isotropic"``);
- ``small``: n = 2000, d = 50, N(mu, I) with mu_j = 3, box +-10 sqrt(d),
  rho in {0.005, 0.05, 0.5}: against the non-private mean and the isotropic
  variant;
- ``tails``: the same with Student-t (3 dof) and log-normal rows;
- ``case``: the case-study datasets (sklearn's digits and breast cancer, the
  chapter's row counts) at epsilon in {0.25, 1, 4}, delta = 1e-5, against
  the Elliptical Gaussian mechanism on the same public box (the data's range,
  and ten times wider).

Run::

    flock /tmp/dpsum-heavy.lock nice -n 10 .venv/bin/python benchmarks/pipeline_targets.py \\
        --target A --runs 100 --write

``--summary`` prints, from the stored table alone, each comparison's
settings ahead and behind (one-sided paired tests, Holm-corrected within the
comparison, both directions) and the worst and best ratios.
"""

from __future__ import annotations

import argparse
import csv
import math
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

import dpsum
from dpsum.kernels.grid import clipped_sum
from dpsum.pipeline import private_mean


def holm(pvalues):
    """Holm-adjusted p-values."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    adj = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (p.size - rank) * p[i])
        adj[i] = min(1.0, running)
    return adj


def paired(a, b):
    """(mean ratio a/b, se of the paired difference, one-sided p of a > b)."""
    diff = np.asarray(a) - np.asarray(b)
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    t = diff.mean() / se if se > 0 else 0.0
    return float(np.mean(a) / np.mean(b)), float(se), float(stats.t.sf(t, diff.size - 1))


#: the table the book reads (written only with --write)
DATA = Path(__file__).resolve().parents[1] / "book" / "data" / "pipeline_targets.csv"
FIELDS = ["target", "group", "setting", "strategy", "method", "runs", "error", "se",
          "ratio", "paired_se", "holm_p", "behind"]
RECORDS: list[dict] = []


def report(rows, names, target="", group=""):
    """Print rows (label, {method: errors}) with Holm-corrected tests of names[0] > names[i].

    The Holm family of a test is one comparison (names[0] against one other
    method) across the rows' settings."""
    tests = []
    for label, errs in rows:
        for other in names[1:]:
            tests.append((label, other, *paired(errs[names[0]], errs[other])))
    adj = np.empty(len(tests))
    for other in names[1:]:
        idx = [k for k, t in enumerate(tests) if t[1] == other]
        adj[idx] = holm([tests[k][4] for k in idx])
    behind = {o: 0 for o in names[1:]}
    worst = {o: 0.0 for o in names[1:]}
    for label, errs in rows:
        cells = "  ".join(f"{m} {np.mean(errs[m]):.4g}±{np.std(errs[m], ddof=1) / math.sqrt(len(errs[m])):.2g}"
                          for m in names)
        print(f"{label:28} {cells}")
    for (label, other, ratio, se, p), pa in zip(tests, adj):
        flag = pa < 0.05
        errs = dict(rows)[label]
        RECORDS.append({"target": target, "group": group, "setting": label.split(" [")[0],
                        "strategy": label.split(" [")[-1].rstrip("]"), "method": other,
                        "runs": len(errs[other]), "error": float(np.mean(errs[other])),
                        "se": float(np.std(errs[other], ddof=1) / math.sqrt(len(errs[other]))),
                        "ratio": ratio, "paired_se": se, "holm_p": float(pa),
                        "behind": int(flag)})
        if not any(r["target"] == target and r["group"] == group and
                   r["setting"] == label.split(" [")[0] and r["method"] == names[0]
                   for r in RECORDS):
            a = errs[names[0]]
            RECORDS.append({"target": target, "group": group,
                            "setting": label.split(" [")[0],
                            "strategy": label.split(" [")[-1].rstrip("]"), "method": names[0],
                            "runs": len(a), "error": float(np.mean(a)),
                            "se": float(np.std(a, ddof=1) / math.sqrt(len(a))), "ratio": 1.0,
                            "paired_se": 0.0, "holm_p": 1.0, "behind": 0})
        behind[other] += flag
        worst[other] = max(worst[other], ratio)
        print(f"  {label:28} {names[0]}/{other} = {ratio:.3f} (paired diff se {se:.3g}, "
              f"Holm p {pa:.3g}){'  BEHIND' if flag else ''}")
    for o in names[1:]:
        print(f"{names[0]} vs {o}: behind in {behind[o]} of {len(rows)} settings; "
              f"worst ratio {worst[o]:.3f}")


def run_A(runs, seed):
    rows = []
    for d in (16, 32, 64, 128, 256, 512, 1024, 2048):
        for rho in (0.125, 0.25, 0.5, 1.0):
            gen = np.random.default_rng([seed, d, int(rho * 1000)])
            half = 25 * math.sqrt(d)
            errs = {"adaptive": [], "isotropic": [], "strategy": []}
            for _ in range(runs):
                X = gen.standard_normal((4000, d))
                a = private_mean(X, lower=-half, upper=half, rho=rho, rng=gen)
                i = private_mean(X, lower=-half, upper=half, rho=rho, scaling="isotropic", rng=gen)
                errs["adaptive"].append(np.linalg.norm(a.estimate))
                errs["isotropic"].append(np.linalg.norm(i.estimate))
                errs["strategy"].append(a.strategy)
            strat = max(set(errs["strategy"]), key=errs["strategy"].count)
            rows.append((f"A d={d} rho={rho:g} [{strat}]", errs))
            print(rows[-1][0], np.mean(errs["adaptive"]), np.mean(errs["isotropic"]), flush=True)
    report(rows, ["adaptive", "isotropic"], "A")


def _rows(kind, gen, n, d, mu):
    if kind == "gaussian":
        return mu + gen.standard_normal((n, d)), mu
    if kind == "student-t":
        return mu + gen.standard_t(3, size=(n, d)), mu
    # log-normal: exp(N(0, 1)) has mean exp(1/2)
    return mu + gen.lognormal(0.0, 1.0, size=(n, d)), mu + math.exp(0.5)


def run_small(runs, seed, kinds, target="small"):
    n, d = 2000, 50
    half = 10 * math.sqrt(d)
    rows = []
    for kind in kinds:
        for rho in (0.005, 0.05, 0.5):
            gen = np.random.default_rng([seed, int(rho * 1000), len(kind)])
            errs = {"adaptive": [], "isotropic": [], "mean": [], "floor": []}
            strategies = []
            for _ in range(runs):
                X, mean = _rows(kind, gen, n, d, 3.0)
                mean = np.full(d, mean)
                a = private_mean(X, lower=-half, upper=half, rho=rho, rng=gen)
                i = private_mean(X, lower=-half, upper=half, rho=rho, scaling="isotropic", rng=gen)
                # the true-scale floor: the Gaussian-data mechanism with the true center and
                # the coordinates' true spread (N(0,1); t3 sd sqrt 3; log-normal sd)
                sd = {"gaussian": 1.0, "student-t": math.sqrt(3.0),
                      "log-normal": math.sqrt((math.e - 1) * math.e)}[kind]
                setup = dpsum.gaussian_data_setup(np.full(d, sd), center=mean,
                                                  clip_probability=1 / n)
                T, _ = clipped_sum(X, setup.clip_norm, setup.scaling, mean)
                s = 1 / math.sqrt(2 * rho)
                fl = mean + (T + gen.standard_normal(d) * s * 2 * setup.clip_norm) / setup.scaling / n
                errs["adaptive"].append(np.linalg.norm(a.estimate - mean))
                errs["isotropic"].append(np.linalg.norm(i.estimate - mean))
                errs["mean"].append(np.linalg.norm(X.mean(axis=0) - mean))
                errs["floor"].append(np.linalg.norm(fl - mean))
                strategies.append(a.strategy)
            strat = max(set(strategies), key=strategies.count)
            rows.append((f"{kind} rho={rho:g} [{strat}]", errs))
            print(rows[-1][0], {k: round(float(np.mean(v)), 4) for k, v in errs.items()}, flush=True)
    report(rows, ["adaptive", "isotropic", "floor", "mean"], target)


def run_case(runs, seed):
    from sklearn import datasets
    rows_tight, rows_wide = [], []
    for name, loader, n_keep in (("digits", datasets.load_digits, 899),
                                 ("breast cancer", datasets.load_breast_cancer, 285)):
        full = loader().data.astype(float)
        lo, hi = full.min(axis=0), full.max(axis=0)
        hi = np.where(hi > lo, hi, lo + 1.0)
        for wide in (False, True):
            c, w = (lo + hi) / 2, (hi - lo)
            blo, bhi = (c - 5 * w, c + 5 * w) if wide else (lo, hi)
            for eps in (0.25, 1.0, 4.0):
                gen = np.random.default_rng([seed, n_keep, int(eps * 100), wide])
                errs = {"pipeline": [], "EGM box": []}
                strategies = []
                for _ in range(runs):
                    X = full[gen.choice(full.shape[0], n_keep, replace=False)]
                    truth = X.mean(axis=0)
                    a = private_mean(X, lower=blo, upper=bhi, epsilon=eps, delta=1e-5, rng=gen)
                    e = dpsum.elliptical_gaussian_mechanism(
                        X, epsilon=eps, delta=1e-5, lower=blo, upper=bhi, rng=gen)
                    errs["pipeline"].append(np.linalg.norm(a.estimate - truth))
                    errs["EGM box"].append(np.linalg.norm(e.estimate / n_keep - truth))
                    strategies.append(a.strategy)
                strat = max(set(strategies), key=strategies.count)
                label = f"{name} eps={eps:g} {'wide' if wide else 'tight'} [{strat}]"
                (rows_wide if wide else rows_tight).append((label, errs))
                print(label, {k: round(float(np.mean(v)), 4) for k, v in errs.items()}, flush=True)
    print("\nthe data's range as the box:")
    report(rows_tight, ["pipeline", "EGM box"], "case", "tight")
    print("\na box ten times wider:")
    report(rows_wide, ["pipeline", "EGM box"], "case", "wide")


def summary() -> None:
    """Ahead/behind counts and worst/best ratios per comparison, from ``DATA``."""
    lines = DATA.read_text().splitlines()
    rows = list(csv.DictReader(ln for ln in lines if not ln.startswith("#")))
    print("\n".join(ln for ln in lines if ln.startswith("#")))
    first = {}
    for r in rows:
        if float(r["paired_se"]) == 0.0 and float(r["ratio"]) == 1.0:
            first[r["target"], r["group"], r["setting"]] = r
    groups: dict[tuple[str, str, str, str], list[dict]] = {}
    for r in rows:
        if (r["target"], r["group"], r["setting"]) in first and \
                first[r["target"], r["group"], r["setting"]] is r:
            continue
        base = first[r["target"], r["group"], r["setting"]]
        groups.setdefault((r["target"], r["group"], base["method"], r["method"]), []).append(r)
    for (target, group, name, other), sel in groups.items():
        t = [(float(first[target, group, r["setting"]]["error"]) - float(r["error"]))
             / float(r["paired_se"]) for r in sel]
        df = [int(r["runs"]) - 1 for r in sel]
        ahead = holm([stats.t.cdf(x, k) for x, k in zip(t, df)]) < 0.05
        behind = holm([stats.t.sf(x, k) for x, k in zip(t, df)]) < 0.05
        worst = max(sel, key=lambda r: float(r["ratio"]))
        best = min(sel, key=lambda r: float(r["ratio"]))
        runs = sorted({int(r["runs"]) for r in sel})
        print(f"{target:5} {group:5} {name} vs {other}: {len(sel)} settings "
              f"({'/'.join(map(str, runs))} runs), ahead {int(ahead.sum())}, behind "
              f"{int(behind.sum())}; worst ratio {float(worst['ratio']):.3f} "
              f"({worst['setting']}), best {float(best['ratio']):.3f} ({best['setting']})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=["A", "small", "tails", "case"])
    ap.add_argument("--summary", action="store_true",
                    help=f"print the comparisons' counts from {DATA.name} and exit")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=2028)
    ap.add_argument("--write", action="store_true",
                    help=f"replace this target's rows of {DATA.name} in book/data")
    args = ap.parse_args()
    if args.summary:
        summary()
        return
    if args.target is None:
        ap.error("--target is required (or --summary)")
    warnings.simplefilter("ignore", UserWarning)
    if args.target == "A":
        run_A(args.runs, args.seed)
    elif args.target == "small":
        run_small(args.runs, args.seed, ["gaussian"])
    elif args.target == "tails":
        run_small(args.runs, args.seed, ["student-t", "log-normal"], "tails")
    else:
        run_case(args.runs, args.seed)
    if args.write:
        write(args.target, args.runs, args.seed)


def write(target: str, runs: int, seed: int) -> None:
    """Replace ``target``'s rows of the book's table (the other targets' rows stay)."""
    kept, header = [], []
    if DATA.exists():
        lines = DATA.read_text().splitlines()
        header = [ln for ln in lines if ln.startswith("#")]
        kept = [r for r in csv.DictReader(ln for ln in lines if not ln.startswith("#"))
                if r["target"] != target]
    note = f"# {target}: --runs {runs} --seed {seed}"
    header = [h for h in header if not h.startswith(f"# {target}:")] + [note]
    if not any("pipeline_targets" in h for h in header):
        header.insert(0, "# Issue 28's targets, paired runs, one-sided tests Holm-corrected across "
                         "the settings of each comparison (benchmarks/pipeline_targets.py --write); error = mean L2 error, "
                         "ratio = the first method's mean error over this method's")
    with DATA.open("w", newline="") as fh:
        fh.write("\n".join(header) + "\n")
        w = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        for r in kept + RECORDS:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {len(RECORDS)} rows for target {target} to {DATA}")


if __name__ == "__main__":
    main()
