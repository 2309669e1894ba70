"""Power and size of the audit as run (book chapter "Checking privacy empirically").

:func:`dpsum.audit.audit_power` gives the exact power of one threshold test
at a fixed threshold: an oracle that knows the best event. The audit as run
chooses its thresholds on a pilot sample, and the pilot's noise costs power.
This script measures the power of the whole procedure, pilot included, with
:func:`dpsum.audit.simulate_audits` (independent audits, fresh randomness
each), next to the oracle power, for every violation the chapter names and
for several (main run, pilot) sizes; and the size of the audit (its
false-alarm rate) at a large ``alpha`` on an exactly tight mechanism.

Files written under ``book/data/``:

* ``audit_power.csv``: one row per (case, main-run size, pilot size): the
  number of audits, how many proved the violation, the rate with a two-sided
  95% Clopper-Pearson interval, and the oracle power of the best single test.
* ``audit_size.csv``: the size experiment: randomized response on one user
  (likelihood ratio exactly ``e^epsilon``), audited at its true epsilon with
  ``alpha = 0.25``; the observed false-alarm rate, the exact false-alarm
  probability of the procedure (:func:`dpsum.audit.two_point_rejection_probability`),
  and ``alpha``.

The releases: the Gaussian mechanisms run the real dpsum code, batched with
:func:`dpsum.audit.batched_gaussian_release`. The binary mechanisms are
sampled from their exact output laws on the audited pair
(:func:`dpsum.pairs.binary_output_laws`, drawn with
:func:`dpsum.audit.discrete_law_release` in one vectorised call per audit), because the power of an audit depends on a mechanism only
through those laws; the book and the test suite audit the real binary code.

Run from the repository root (about 15 minutes on an idle machine; ``--only``
reruns some cases and keeps the other rows of the file)::

    .venv/bin/python benchmarks/audit_power.py
    .venv/bin/python benchmarks/audit_power.py --only gaussian-1.6 --runs 200
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from scipy import optimize, special, stats

from dpsum import audit
from dpsum.audit import pairs
from dpsum.privacy.calibration import analytic_sigma
from dpsum.mechanisms import gaussian_mechanism

DATA = Path(__file__).resolve().parent.parent / "book" / "data"
SEED = 8
EPS, DELTA, ALPHA = 1.0, 1e-3, 1e-3   # the claim under audit and the audit's error probability
EPS_DETECT = 1.6                      # the violation every audit should catch
SENS, D = 2.0, 4                      # the Gaussian mechanism's sensitivity and dimension
BINOMIAL_USERS = 800


# ----------------------------------------------------------- the violations

def solve_coin(laws: Callable, lo: float, hi: float, target: float = EPS_DETECT) -> float:
    """The coin (noise or sampling probability) whose pair of output laws has
    exact epsilon ``target`` at ``DELTA``."""
    f = lambda c: audit.pair_epsilon(*laws(c), DELTA) - target  # noqa: E731
    return optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-12)


def binomial_broken_coin() -> float:
    """Noise probability of the binomial mechanism on 800 users whose exact
    epsilon at DELTA is 1.6 (every pair of counts is the same)."""
    return solve_coin(lambda p: pairs.binary_output_laws("binomial", BINOMIAL_USERS, 0,
                                                         epsilon=EPS, delta=DELTA, p=p),
                      1e-3, 0.45)


def threshold_broken(max_ones: int = 60) -> tuple[float, int]:
    """Sampling probability of sample-and-threshold (threshold 3 + ln(1/DELTA))
    whose exact epsilon at DELTA, on its worst pair, is 1.6; and that pair's
    number of ones."""
    def worst(p):
        return pairs.worst_binary_pair("sample_and_threshold", max_ones + 1, epsilon=EPS,
                                       delta=DELTA, p=p, max_ones=max_ones)
    p = optimize.brentq(lambda p: worst(p)[1] - EPS_DETECT, 0.15, 0.9, xtol=1e-10)
    return p, worst(p)[0]


def gaussian_release(eps_true: float) -> Callable:
    """The real Gaussian mechanism calibrated for ``eps_true`` (batched)."""
    return audit.batched_gaussian_release(
        lambda v, rng: gaussian_mechanism(v, epsilon=eps_true, delta=DELTA, sensitivity=SENS,
                                          rng=rng))


def gaussian_oracle(eps_true: float, n: int, epsilon: float = EPS) -> float:
    """Best single-test power against the Gaussian mechanism calibrated for
    ``eps_true``: standardised outputs N(0, 1) and N(1/s, 1)."""
    s = analytic_sigma(eps_true, DELTA)
    t = np.linspace(-2.0, 6.0, 321)
    return float(np.max(audit.audit_power(stats.norm.sf(t - 1 / s), stats.norm.sf(t), n,
                                          epsilon=epsilon, delta=DELTA, alpha=ALPHA)))


@dataclass(frozen=True)
class Case:
    """One audited violation: what is released, on which pair, and its oracle."""

    name: str
    label: str
    release: Callable
    pair: tuple
    delta: float
    oracle: Callable  # n -> power of the best single test


def case(name: str) -> Case:
    """The audited violation called ``name`` (a key of :data:`PLANS`)."""
    if name == "gaussian-1.6":
        X, Y = pairs.statistic_pair(SENS, D)
        return Case(name, "Gaussian mechanisms, true epsilon 1.6", gaussian_release(EPS_DETECT),
                    (X, Y), DELTA, lambda n: gaussian_oracle(EPS_DETECT, n))
    if name == "rr-1.6":
        keep = special.expit(EPS_DETECT)
        laws = (np.array([1 - keep, keep]), np.array([keep, 1 - keep]))
        label = "randomized response, coin of epsilon 1.6 (1 user)"
        delta = 0.0
    elif name == "binomial-1.6":
        p_bin = binomial_broken_coin()
        laws = pairs.binary_output_laws("binomial", BINOMIAL_USERS, 0, epsilon=EPS, delta=DELTA,
                                        p=p_bin)
        label = f"binomial noise, p = {p_bin:.4g} (800 users, exact epsilon 1.6)"
        delta = DELTA
    elif name == "threshold-1.6":
        p_st, ones = threshold_broken()
        laws = pairs.binary_output_laws("sample_and_threshold", ones + 1, ones, epsilon=EPS,
                                        delta=DELTA, p=p_st)
        label = f"sample-and-threshold, p = {p_st:.4g} ({ones + 1} vs {ones} ones, exact epsilon 1.6)"
        delta = DELTA
    else:
        raise ValueError(f"unknown case {name!r}")
    return Case(name, label, audit.discrete_law_release(*laws), (1, 0), delta,
                lambda n: audit.discrete_audit_power(*laws, n, epsilon=EPS, delta=delta,
                                                     alpha=ALPHA))


#: (main run, pilot) sizes simulated per case; the first is the size the book
#: used before this measurement (pilot n // 5 or 5,000), the last the size it
#: uses now (pilot as large as the main run)
PLANS = {
    "gaussian-1.6": [(50_000, 10_000), (50_000, 50_000)],
    "rr-1.6": [(500, 50), (500, 500)],
    "binomial-1.6": [(130_000, 5_000), (130_000, 130_000), (200_000, 200_000)],
    "threshold-1.6": [(170_000, 5_000), (250_000, 250_000)],
}


def power_rows(names, runs: int) -> list[dict]:
    rows = []
    for name in names:
        i = list(PLANS).index(name)  # the seed depends on the case, not on which cases run
        c = case(name)
        for j, (n, m) in enumerate(PLANS[name]):
            sim = audit.simulate_audits(c.release, *c.pair, epsilon=EPS, delta=c.delta,
                                        n_samples=n, n_pilot=m, runs=runs, alpha=ALPHA,
                                        batched=True, rng=np.random.default_rng([SEED, i, j]))
            lo, hi = sim.interval(0.95)
            rows.append({"case": name, "label": c.label, "n_samples": n,
                         "n_pilot": sim.n_pilot, "runs": sim.runs, "rejections": sim.rejections,
                         "rate": sim.rate, "ci_low": lo, "ci_high": hi,
                         "oracle_power": c.oracle(n)})
            r = rows[-1]
            print(f"{name:14s} n = {n:>9,d} pilot = {sim.n_pilot:>9,d}: "
                  f"{r['rejections']}/{r['runs']} = {r['rate']:.3f} [{lo:.3f}, {hi:.3f}], "
                  f"oracle {r['oracle_power']:.4f}", flush=True)
    return rows


# ------------------------------------------------------------------- size

def size_rows(runs: int) -> list[dict]:
    eps, alpha, n = EPS, 0.25, 2_000
    keep = special.expit(eps)
    release = audit.discrete_law_release(np.array([1 - keep, keep]), np.array([keep, 1 - keep]))
    sim = audit.simulate_audits(release, 1, 0, epsilon=eps, delta=0.0, n_samples=n, runs=runs,
                                alpha=alpha, batched=True, rng=np.random.default_rng([SEED, 99]))
    exact = audit.two_point_rejection_probability(keep, 1 - keep, n, epsilon=eps, delta=0.0,
                                                  alpha=alpha)
    lo, hi = sim.interval(0.95)
    tol = int(stats.binom.ppf(1 - 1e-3, runs, alpha))
    print(f"size at alpha = {alpha}: {sim.rejections}/{runs} = {sim.rate:.3f} [{lo:.3f}, {hi:.3f}]; "
          f"exact false-alarm probability {exact:.4f}; binomial 0.999 quantile at alpha: {tol}")
    return [{"case": "rr-tight", "alpha": alpha, "epsilon": eps, "n_samples": n,
             "n_pilot": sim.n_pilot, "runs": runs, "rejections": sim.rejections, "rate": sim.rate,
             "ci_low": lo, "ci_high": hi, "exact_size": exact, "tolerance_0999": tol}]


def _merge(name: str, rows: list[dict]) -> list[dict]:
    """``rows`` plus the rows of the existing file whose case was not rerun."""
    path = DATA / name
    if not path.exists():
        return rows
    with open(path, newline="") as fh:
        old = [r for r in csv.DictReader(fh) if r["case"] not in {r["case"] for r in rows}]
    order = list(PLANS) + ["rr-tight"]
    return sorted(old + rows, key=lambda r: order.index(r["case"]))


def _write(name: str, rows: list[dict]) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    with open(DATA / name, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (repr(float(v)) if isinstance(v, (float, np.floating)) else v)
                             for k, v in r.items()})
    print(f"wrote book/data/{name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(PLANS) + ["size"], default=None)
    parser.add_argument("--runs", type=int, default=1000,
                        help="audits per (case, size); default 1000")
    parser.add_argument("--size-runs", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    names = [n for n in (args.only or list(PLANS) + ["size"]) if n != "size"]
    if names:
        rows = power_rows(names, args.runs)
        if not args.no_write:
            _write("audit_power.csv", _merge("audit_power.csv", rows))
    if args.only is None or "size" in args.only:
        rows = size_rows(args.size_runs)
        if not args.no_write:
            _write("audit_size.csv", rows)


if __name__ == "__main__":
    main()
