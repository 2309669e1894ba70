"""Compute the mpmath reference values used by tests/test_gchisq.py.

The generalized chi-square ``X = sum_j w_j (Z_j + m_j)^2`` is inverted here in
high-precision arithmetic, independently of the float64 code in
:mod:`dpsum.gchisq`, from its Laplace transform
``E exp(-p X) = prod_j (1 + 2 w_j p)^(-1/2) exp(-lambda_j w_j p / (1 + 2 w_j p))``.

* d <= 100: the fixed Talbot contour of :func:`mpmath.invertlaplace` (Abate
  and Valko 2004), which wraps around the negative real axis instead of
  passing through a saddlepoint. ``P(X <= x)`` inverts ``E exp(-p X) / p``,
  ``P(X > x)`` inverts ``(1 - E exp(-p X)) / p`` (no cancellation in the
  tail), the density inverts ``E exp(-p X)``. Each point is inverted at 40 and
  at 55 digits; the 55-digit value is stored and the two must agree to 1e-16.
* d >= 1000: the Talbot rule would need many more nodes (its contour passes
  close to the d/2-fold branch points and the results are garbage at the
  default degree), so the inversion integral is taken along a parabola
  through the saddlepoint at 25 digits (``_contour_tail``): every term
  evaluated directly (no power sums, no float64 shortcuts), the trapezoid
  rule with the step halved from 1/4 until two successive sums agree to
  1e-12 (the error of the finer one is about the square of that).

Before anything is written, the values are checked against exact formulas
evaluated in mpmath: the regularised incomplete gamma function (equal
weights, central), the Poisson mixture of chi-square laws (equal weights,
noncentral), the normal tails for d = 1 and the polar-angle integral for
d = 2. The script stops if any of them disagrees by more than 1e-20.

The points x are chosen with dpsum (its isf/ppf at the target probabilities)
and stored exactly; the reference probabilities are computed at those x, so
they do not depend on dpsum being right. For d = 10000 only the central
equal, 1/j and 1/j^2 families are stored (log-uniform weights are checked in
the tests against an independent vertical-line quadrature instead).

Usage, from the repository root (times on two cores: about 4 minutes for
d <= 100, 5 for d = 1000 and 10 for d = 10000)::

    .venv/bin/python tests/data/make_gchisq_reference.py --dims 1 2 10 100 1000 10000 --jobs 2

It writes tests/data/gchisq_reference_d{d}.json, one file per dimension.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

FAMILIES = ("equal", "harmonic", "inverse_square", "log_uniform")
# Target probabilities of the stored points, in each tail.
TARGETS = (0.5, 1e-1, 1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 1e-14, 1e-15)
TARGETS_LARGE_D = (0.5, 1e-2, 1e-6, 1e-10, 1e-14, 1e-15)
PDF_MAX_D = 100  # densities are stored for d <= 100 only
TALBOT_MAX_D = 100  # above this the Talbot rule needs too many nodes: contour integral
FAMILIES_LARGE_D = ("equal", "harmonic", "inverse_square")  # d = 10000: central only
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def family_weights(family: str, d: int) -> np.ndarray:
    """The weights of a test family (identical in the tests; checked by hash).

    equal: 1; harmonic: 1/j; inverse_square: 1/j^2; log_uniform: 10^(-4 u_j)
    with u_j = frac(j * golden ratio), a deterministic log-uniform spread over
    four orders of magnitude.
    """
    j = np.arange(1, d + 1, dtype=np.float64)
    if family == "equal":
        return np.ones(d)
    if family == "harmonic":
        return 1.0 / j
    if family == "inverse_square":
        return 1.0 / (j * j)
    if family == "log_uniform":
        u = np.mod(j * GOLDEN, 1.0)
        return 10.0 ** (-4.0 * u)
    raise ValueError(f"unknown family {family!r}")


def family_noncentrality(d: int) -> np.ndarray:
    """Noncentralities lambda_j = 0.75 * (j mod 5): 0.75, 1.5, 2.25, 3, 0, ..."""
    j = np.arange(1, d + 1)
    return 0.75 * np.mod(j, 5).astype(np.float64)


def array_hash(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


# --------------------------------------------------------------------- mpmath
def _groups(w, lam):
    """Merge equal weights exactly: [(w, multiplicity, sum of lambda)]."""
    out = {}
    for wj, lj in zip(w.tolist(), lam.tolist()):
        m, L = out.get(wj, (0, 0.0))
        out[wj] = (m + 1, L + lj)
    return sorted(out.items(), reverse=True)


def _make_log_laplace(groups, mp):
    gw = [(mp.mpf(wj), mp.mpf(m), mp.mpf(L)) for wj, (m, L) in groups]

    def log_laplace(p):  # log E exp(-p X), principal branch term by term
        total = mp.mpc(0)
        for wj, m, L in gw:
            z = 1 + 2 * wj * p
            total += -m * mp.log(z) / 2
            if L:
                total -= L * wj * p / z
        return total

    return log_laplace


def _talbot_tail(groups, x, tail, dps):
    """The smaller tail probability at x, inverted at dps digits."""
    import mpmath as mp

    mp.mp.dps = dps
    log_laplace = _make_log_laplace(groups, mp)
    xm = mp.mpf(x)
    if tail == "upper":
        return mp.invertlaplace(lambda p: -mp.expm1(log_laplace(p)) / p, xm, method="talbot")
    return mp.invertlaplace(lambda p: mp.exp(log_laplace(p)) / p, xm, method="talbot")


def contour_values(task):
    """(sf, cdf, None, trapezoid change) at x by the mpmath contour integral."""
    w, lam, x, tail, _, dps = task
    import mpmath as mp

    groups = _groups(np.asarray(w), np.asarray(lam))
    small, change = _contour_tail(groups, x, tail, dps)
    mp.mp.dps = dps
    sf, cdf = (small, 1 - small) if tail == "upper" else (1 - small, small)
    return mp.nstr(sf, 25), mp.nstr(cdf, 25), None, change


def talbot_values(task):
    """(sf, cdf, pdf, self-consistency) at x, by fixed Talbot inversion in mpmath.

    The smaller tail is inverted at two working precisions; the relative
    difference of the two is returned as a check of convergence (the Talbot
    rule needs more digits in the upper tail, where the result is a small
    difference of terms of size exp(2M/5)).
    """
    w, lam, x, tail, want_pdf, dps_pair = task
    import mpmath as mp

    groups = _groups(np.asarray(w), np.asarray(lam))
    lo_val = _talbot_tail(groups, x, tail, dps_pair[0])
    hi_val = _talbot_tail(groups, x, tail, dps_pair[1])
    mp.mp.dps = dps_pair[1]
    consistency = float(abs(lo_val / hi_val - 1))
    if tail == "upper":
        sf, cdf = hi_val, 1 - hi_val
    else:
        sf, cdf = 1 - hi_val, hi_val
    pdf = None
    if want_pdf:
        log_laplace = _make_log_laplace(groups, mp)
        pdf = mp.invertlaplace(lambda p: mp.exp(log_laplace(p)), mp.mpf(x), method="talbot")
    digits = 25
    return (
        mp.nstr(sf, digits),
        mp.nstr(cdf, digits),
        None if pdf is None else mp.nstr(pdf, digits),
        consistency,
    )


def _contour_tail(groups, x, tail, dps):
    """(smaller tail at x, relative change between two trapezoid steps) in mpmath.

    Used for d >= 1000, where the fixed Talbot rule would need far more nodes
    (its contour passes close to the d/2-fold branch points). The inversion
    integral P = (1/2 pi i) int e^{K(s) - s x} / (+-s) ds is taken along the
    parabola s = c + sigma (beta t^2 + i t) through the saddlepoint c of
    Psi(s) = K(s) - s x - log(+-s): every term of K evaluated directly at
    ``dps`` digits (no series, no merging beyond exactly equal weights), c
    found by bisection, and the integral done by the trapezoid rule up to
    where the integrand is below 10^-dps, halving the step from 1/4 until two
    successive sums agree to 1e-12. The rule converges exponentially (the
    error of step h is about the square of the change from 2h to h); the last
    relative change is returned as a check. beta is the
    cubic-cancelling bend, flattened (down to the vertical line) unless the
    integrand decreases monotonically along the parabola.
    """
    import mpmath as mp

    mp.mp.dps = dps
    gw = [(mp.mpf(wj), mp.mpf(m), mp.mpf(L)) for wj, (m, L) in groups]
    X = mp.mpf(x)
    wmax = max(g[0] for g in gw)
    upper = tail == "upper"

    def derivs(c):  # K'(c), K''(c), K'''(c) at a real point
        k1 = k2 = k3 = mp.mpf(0)
        for wj, m, L in gw:
            u = 1 - 2 * wj * c
            q = wj / u
            k1 += q * (m + L / u)
            k2 += 2 * q**2 * (m + 2 * L / u)
            k3 += 8 * q**3 * (m + 3 * L / u)
        return k1, k2, k3

    def g(c):
        return derivs(c)[0] - 1 / c - X

    # bisection for the saddlepoint (g increases in c on each side of 0)
    if upper:
        lo, hi = mp.mpf(0), 1 / (2 * wmax)
    else:
        lo, hi = -mp.mpf(1), mp.mpf(0)
        while g(lo) > 0:
            lo *= 4
    for _ in range(200):
        mid = (lo + hi) / 2
        if g(mid) > 0:
            hi = mid
        else:
            lo = mid
        if hi - lo < abs(mid) * mp.mpf(10) ** -10:
            break
    c = (lo + hi) / 2
    _, k2, k3 = derivs(c)
    sigma = 1 / mp.sqrt(k2 + 1 / c**2)
    skew = (k3 - 2 / c**3) * sigma**3

    def K(s):
        total = mp.mpc(0)
        for wj, m, L in gw:
            u = 1 - 2 * wj * s
            total += -m * mp.log(u) / 2 + L * wj * s / u
        return total

    Kc = K(c).real
    psi_c = Kc - c * X - mp.log(abs(c))

    def D(t, beta):
        s = c + sigma * (beta * t * t + 1j * t)
        return K(s) - Kc - (s - c) * X - mp.log(s / c)

    tiny = -mp.log(10) * (dps + 5)
    beta = max(skew / 6, mp.mpf("0.02"))
    for attempt in range(6):
        # the modulus must fall monotonically (on a grid of step 1) to 10^-dps
        prev, t_end, ok = mp.mpf(0), 0, True
        while True:
            t_end += 1
            re = D(mp.mpf(t_end), beta).real
            if re > prev or t_end > 4000:
                ok = False
                break
            prev = re
            if re < tiny:
                break
        if ok:
            break
        beta = beta / 4 if attempt < 4 else mp.mpf(0)
    else:
        raise RuntimeError("no decaying contour found")
    def f(t):
        return (mp.exp(D(t, beta)) * (1 - 2j * beta * t)).real

    # trapezoid rule on [0, t_end], halving the step from 1/4 until two
    # successive sums agree to 1e-12 (the finer one is then good to ~1e-24)
    h = mp.mpf(1) / 4
    total = mp.fsum(f(k * h) for k in range(1, 4 * t_end + 1)) + f(mp.mpf(0)) / 2
    coarse = h * total
    for _ in range(8):
        h /= 2
        total += mp.fsum(f((2 * k + 1) * h) for k in range(int(t_end / h) // 2))
        fine = h * total
        change = float(abs(coarse / fine - 1))
        if change < 1e-12:
            break
        coarse = fine
    scale = mp.exp(psi_c) * sigma / mp.pi
    return scale * fine, change


def exact_values(w, lam, x, dps):
    """(sf, cdf) from an exact formula where one exists, else None."""
    import mpmath as mp

    mp.mp.dps = dps + 10
    w = np.asarray(w)
    lam = np.asarray(lam)
    d = w.size
    xm = mp.mpf(x)
    if d == 1:
        a = mp.sqrt(xm / mp.mpf(w[0]))
        m = mp.sqrt(mp.mpf(lam[0]))
        sf = mp.ncdf(-(a - m)) + mp.ncdf(-(a + m))
        cdf = mp.ncdf(a - m) - mp.ncdf(-a - m)
        return sf, cdf
    if np.all(w == w[0]):
        y = xm / mp.mpf(w[0])
        k = mp.mpf(d) / 2
        Lam = mp.mpf(math.fsum(lam))
        if Lam == 0:
            sf = mp.gammainc(k, y / 2, mp.inf, regularized=True)
            cdf = mp.gammainc(k, 0, y / 2, regularized=True)
            return sf, cdf
        # Poisson(Lambda/2) mixture of chi-square(d + 2i) laws, summed outwards
        # from the mode of the Poisson weights until the terms are negligible.
        mu = Lam / 2
        i0 = int(mu)

        def term(i):
            logp = -mu + i * mp.log(mu) - mp.loggamma(i + 1)
            return (
                mp.exp(logp) * mp.gammainc(k + i, y / 2, mp.inf, regularized=True),
                mp.exp(logp) * mp.gammainc(k + i, 0, y / 2, regularized=True),
            )

        sf = mp.mpf(0)
        cdf = mp.mpf(0)
        for direction in (1, -1):
            i = i0 if direction == 1 else i0 - 1
            while i >= 0:
                ts, tc = term(i)
                sf += ts
                cdf += tc
                if i > i0 + 50 or i < i0 - 50:
                    pois = mp.exp(-mu + i * mp.log(mu) - mp.loggamma(i + 1))
                    if pois < mp.mpf(10) ** (-(dps + 20)):
                        break
                i += direction
        return sf, cdf
    if d == 2 and np.all(lam == 0):
        w1, w2 = mp.mpf(w[0]), mp.mpf(w[1])

        def wt(t):
            return w1 * mp.cos(t) ** 2 + w2 * mp.sin(t) ** 2

        sf = 2 / mp.pi * mp.quad(lambda t: mp.exp(-xm / (2 * wt(t))), [0, mp.pi / 4, mp.pi / 2])
        cdf = 2 / mp.pi * mp.quad(lambda t: -mp.expm1(-xm / (2 * wt(t))), [0, mp.pi / 4, mp.pi / 2])
        return sf, cdf
    return None


# ------------------------------------------------------------------- driver
def build(d: int, jobs: int) -> dict:
    from dpsum.gchisq import GeneralizedChiSquare

    import mpmath as mp

    talbot = d <= TALBOT_MAX_D
    if talbot:
        # two Talbot inversions per point, at 40 and 55 digits
        worker, setting, dps, limit_change = talbot_values, (40, 55), 55, 1e-16
        families, targets = FAMILIES, TARGETS
    else:
        # the contour integral at 25 digits, trapezoid steps halved from 1/4
        worker, setting, dps, limit_change = contour_values, 25, 25, 1e-12
        families = FAMILIES if d <= 1000 else FAMILIES_LARGE_D
        targets = TARGETS if d <= 1000 else TARGETS_LARGE_D
    cases = []
    tasks = []
    for family in families:
        for noncentral in (False, True) if d <= 1000 else (False,):
            w = family_weights(family, d)
            lam = family_noncentrality(d) if noncentral else np.zeros(d)
            X = GeneralizedChiSquare(w, lam)
            points = []
            for tail in ("upper", "lower"):
                for p in targets:
                    x = float(X.isf(p) if tail == "upper" else X.ppf(p))
                    points.append({"x": x, "tail": tail, "target": p})
                    tasks.append((w.tolist(), lam.tolist(), x, tail, d <= PDF_MAX_D, setting))
            cases.append(
                {
                    "family": family,
                    "d": d,
                    "noncentral": noncentral,
                    "weights_sha256": array_hash(w),
                    "noncentrality_sha256": array_hash(lam),
                    "points": points,
                }
            )
    t0 = time.time()
    if jobs > 1:
        with multiprocessing.Pool(jobs) as pool:
            results = pool.map(worker, tasks, chunksize=1)
    else:
        results = [worker(t) for t in tasks]
    method = "fixed Talbot" if talbot else "saddlepoint contour"
    print(f"d={d}: {len(tasks)} {method} inversions in {time.time() - t0:.0f} s", flush=True)

    # Check the values against the exact formulas before writing.
    worst = 0.0
    checked = 0
    worst_change = max(r[3] for r in results)
    it = iter(results)
    for case in cases:
        w = family_weights(case["family"], d)
        lam = family_noncentrality(d) if case["noncentral"] else np.zeros(d)
        for point in case["points"]:
            sf, cdf, pdf, _ = next(it)
            point["sf"], point["cdf"] = sf, cdf
            if pdf is not None:
                point["pdf"] = pdf
            exact = exact_values(w, lam, point["x"], dps)
            if exact is not None:
                mp.mp.dps = dps
                small_ref = exact[0] if point["tail"] == "upper" else exact[1]
                small_val = mp.mpf(sf if point["tail"] == "upper" else cdf)
                worst = max(worst, float(abs(small_val / small_ref - 1)))
                checked += 1
    limit = 1e-20  # against exact formulas
    print(f"d={d}: {method} vs exact formulas at {checked} points: max relative error {worst:.2e}")
    print(f"d={d}: max relative change between the two evaluations {worst_change:.2e}")
    if worst > limit:
        raise SystemExit(f"reference disagrees with an exact formula ({worst:.2e} > {limit})")
    if worst_change > limit_change:
        raise SystemExit(f"reference not converged ({worst_change:.2e} > {limit_change})")
    return {
        "description": (
            f"Generalized chi-square references computed by tests/data/make_gchisq_reference.py "
            f"({method} inversion in mpmath). sf/cdf/pdf are decimal strings."
        ),
        "method": method,
        "mpmath_dps": setting,
        "max_rel_error_vs_exact": worst,
        "max_rel_change_between_evaluations": worst_change,
        "cases": cases,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 2, 10, 100, 1000, 10000])
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    for d in args.dims:
        data = build(d, args.jobs)
        path = HERE / f"gchisq_reference_d{d}.json"
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
