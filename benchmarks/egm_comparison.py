"""dpsum against the published evaluation of Algorithm 3 (book chapter "Empirical evaluation").

The author of the report behind Algorithm 3 published his own evaluation in
the repository TSPoulsen/egm: ``generate.py`` writes ``results.csv`` (last
changed in commit 855a674, 12 January 2023), one row per setting. Its columns,
as worked out from the script:

* ``d``: dimension; ``n_pow``: the clip probability is ``p_C = 10**-n_pow``
  (the script's ``n = 10**n_pow`` records);
* ``scew``: the Zipf exponent ``a``; ``sigma_total``: the total ``T``, with
  ``sigma_j = T * j**-a / sum_i i**-a`` (``scipy.stats.zipfian.pmf``);
* ``c_normal``: the squared clip radius ``C^2`` without a transformation, the
  ``1 - p_C`` quantile of ``sum_j sigma_j^2 Z_j^2``;
* ``c_trans``: ``C^2`` after Lemma 3.1's scaling, the quantile of
  ``sum_j (sigma_j / sum_i sigma_i) Z_j^2``;
* ``normal_err = 4 d c_normal`` and ``trans_err = 4 (sum_j sigma_j)^2 c_trans``:
  the two noise errors in units of ``sigma_opt^2``; their ratio is the gain
  of the transformation.

The quantiles were computed with Davies' algorithm (the ``chi2comb`` package,
``lim = 1000`` integration terms, absolute tolerance ``p_C``) inside a
doubling-then-bisection search on the distribution function that stops as
soon as a probe's value is within ``p_C / 10`` of ``1 - p_C`` and returns the
midpoint of the bracket at that moment (on an error code of the algorithm
the probe is moved up by one).

With ``--write`` this script writes ``book/data/egm_comparison.csv``
(otherwise it only prints the headline): every row of the published file with

* the published ``C^2`` values and gain;
* dpsum's ``C^2`` values (:class:`dpsum.GeneralizedChiSquare`) and gain;
* an independent check that shares no code with ``dpsum.gchisq``: the true
  clip probability at the published and at dpsum's ``C^2``, divided by
  ``p_C``, by Imhof's form of the Gil-Pelaez inversion of the characteristic
  function, integrated with QUADPACK (``scipy.integrate.quad``; the
  oscillatory tail with the Fourier-integral routine QAWF);
* ``search_exact_*``: the published search procedure run with an exact
  distribution function (dpsum's), which separates the search's own error
  from that of Davies' algorithm at the tolerance it was given;
* ``davies_reproduced_*`` (only with ``--reproduce-davies``): whether the
  published search on Davies' algorithm with the published settings returns
  the published value bit for bit. Needs ``CHI2COMB_LIB`` pointing at a
  ``libchi2comb.so`` built from the limix/chi2comb C sources
  (``gcc -O2 -fPIC -shared -o libchi2comb.so chi2comb.c -lm``); a few rows take
  minutes each, about 25 minutes in all.

Run from the repository root::

    .venv/bin/python benchmarks/egm_comparison.py --egm-results PATH/TO/results.csv --write

where ``results.csv`` is the file from TSPoulsen/egm (commit 855a674 or
later). Without ``--egm-results`` the published columns are read back from
the existing ``book/data/egm_comparison.csv`` and everything else is
recomputed (about 2 minutes). The script prints the headline of the
comparison.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import os
import warnings
from pathlib import Path

import numpy as np
from scipy import integrate

from dpsum import GeneralizedChiSquare
from dpsum_book.published import check_imhof, imhof_sf, published_search, weights, zipf_stds

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "book" / "data" / "egm_comparison.csv"
PUBLISHED = ("d", "n_pow", "scew", "sigma_total", "c_normal", "c_trans")
AGREE = 0.01  # relative difference counted as agreement


# the settings, the published search and the independent inversion live in
# dpsum_book.published (the chapter uses them too)


def davies_cdf_factory():
    """``make(w, lim, atol)`` returning Davies' distribution function from
    libchi2comb via ctypes, or None when ``CHI2COMB_LIB`` is not set."""
    path = os.environ.get("CHI2COMB_LIB")
    if not path or not Path(path).exists():
        return None
    lib = ctypes.CDLL(path)
    dbl = ctypes.POINTER(ctypes.c_double)

    class Terms(ctypes.Structure):
        _fields_ = [("coefs", dbl), ("ncents", dbl),
                    ("dofs", ctypes.POINTER(ctypes.c_int)), ("n", ctypes.c_int)]

    class Info(ctypes.Structure):
        _fields_ = [("emag", ctypes.c_double), ("niterms", ctypes.c_int),
                    ("nints", ctypes.c_int), ("intv", ctypes.c_double),
                    ("truc", ctypes.c_double), ("sd", ctypes.c_double),
                    ("ncycles", ctypes.c_int)]

    fn = lib.chi2comb_cdf
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_double, ctypes.POINTER(Terms), ctypes.c_double, ctypes.c_int,
                   ctypes.c_double, ctypes.POINTER(Info), dbl]

    def make(w, lim, atol):
        coefs = np.ascontiguousarray(w, dtype=np.float64)
        ncents = np.zeros_like(coefs)
        dofs = np.ones(coefs.size, dtype=np.intc)
        terms = Terms(coefs.ctypes.data_as(dbl), ncents.ctypes.data_as(dbl),
                      dofs.ctypes.data_as(ctypes.POINTER(ctypes.c_int)), coefs.size)

        def cdf(q):
            out, info = ctypes.c_double(), Info()
            code = fn(float(q), ctypes.byref(terms), 0.0, lim, atol, ctypes.byref(info),
                      ctypes.byref(out))
            return out.value, code

        cdf.keep_alive = (coefs, ncents, dofs, terms)
        return cdf

    return make


# ----------------------------------------------------------------- the run

def read_published(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if path == OUT:  # our own file: map its columns back to the published names
        return [{"d": r["d"], "n_pow": r["p_exponent"], "scew": r["zipf_exponent"],
                 "sigma_total": r["total"], "c_normal": r["published_C2_isotropic"],
                 "c_trans": r["published_C2_lemma"]} for r in rows]
    return rows


def compare(published: list[dict], reproduce_davies: bool) -> list[dict]:
    make_davies = davies_cdf_factory() if reproduce_davies else None
    if reproduce_davies and make_davies is None:
        raise SystemExit("--reproduce-davies needs CHI2COMB_LIB (see the docstring)")
    out = []
    for row in published:
        d, k = int(float(row["d"])), int(float(row["n_pow"]))
        a, total = float(row["scew"]), float(row["sigma_total"])
        p = 10.0**-k
        sigma = zipf_stds(d, a, total)
        rec = {"d": d, "p_exponent": k, "zipf_exponent": a, "total": total}
        pub = {"isotropic": float(row["c_normal"]), "lemma": float(row["c_trans"])}
        ours, errors = {}, []
        for name, scaled in (("isotropic", False), ("lemma", True)):
            w = weights(sigma, scaled)
            w = w[w > 0]  # the smallest weights of the most skewed rows underflow to 0
            G = GeneralizedChiSquare(w)
            ours[name] = float(G.isf(p))
            rec[f"published_C2_{name}"] = pub[name]
            rec[f"dpsum_C2_{name}"] = ours[name]
            for source, x in (("published", pub[name]), ("dpsum", ours[name])):
                with warnings.catch_warnings():
                    # QAWF warns when its extrapolation misses 1e-13; the error
                    # estimate it returns is kept instead
                    warnings.simplefilter("ignore", integrate.IntegrationWarning)
                    value, err = imhof_sf(x, w)
                rec[f"{source}_clip_over_pC_{name}"] = value / p
                errors.append(err / p)
            rec[f"search_exact_C2_{name}"] = published_search(lambda x: (float(G.cdf(x)), 0), p)
            if make_davies is not None:
                found = published_search(make_davies(w, 1000, p), p)
                rec[f"davies_reproduced_{name}"] = found == pub[name]
        rec["imhof_error_over_pC"] = max(errors)
        scale = float(np.sum(sigma)) ** 2
        rec["published_gain"] = d * pub["isotropic"] / (scale * pub["lemma"])
        rec["dpsum_gain"] = d * ours["isotropic"] / (scale * ours["lemma"])
        out.append(rec)
    return out


def headline(rows: list[dict]) -> None:
    rel = lambda x, y: abs(x / y - 1)  # noqa: E731
    agree = [max(rel(r["published_C2_isotropic"], r["dpsum_C2_isotropic"]),
                 rel(r["published_C2_lemma"], r["dpsum_C2_lemma"]),
                 rel(r["published_gain"], r["dpsum_gain"])) <= AGREE for r in rows]
    gain_agree = [rel(r["published_gain"], r["dpsum_gain"]) <= AGREE for r in rows]
    worst = max(rows, key=lambda r: rel(r["published_gain"], r["dpsum_gain"]))
    ours = max(max(abs(r["dpsum_clip_over_pC_isotropic"] - 1),
                   abs(r["dpsum_clip_over_pC_lemma"] - 1)) for r in rows)
    theirs = [r[f"published_clip_over_pC_{n}"] for r in rows for n in ("isotropic", "lemma")]
    print(f"rows: {len(rows)}; both C^2 and the gain within 1%: {sum(agree)}; "
          f"the gain within 1%: {sum(gain_agree)}")
    print(f"largest gain difference: d = {worst['d']}, p_C = 1e-{worst['p_exponent']}, "
          f"a = {worst['zipf_exponent']:g}, total = {worst['total']:g}: published "
          f"{worst['published_gain']:.4g}, dpsum {worst['dpsum_gain']:.4g} (C^2 without "
          f"scaling {worst['published_C2_isotropic']:.4g} against {worst['dpsum_C2_isotropic']:.4g})")
    err = max(r["imhof_error_over_pC"] for r in rows)
    print(f"independent clip probability / p_C at dpsum's C^2: within {ours:.1e} of 1 in every row "
          f"(largest error estimate of the inversion {err:.1e} p_C)")
    print(f"... at the published C^2: from {min(theirs):.3g} to {max(theirs):.3g}")
    if "davies_reproduced_isotropic" in rows[0]:
        n_rep = sum(r["davies_reproduced_isotropic"] and r["davies_reproduced_lemma"] for r in rows)
        print(f"published search on Davies' algorithm reproduces {n_rep} of {len(rows)} rows bit for bit")
    assert ours < 1e-6 and err < 1e-3


def _key(row) -> tuple:
    return (int(row["d"]), int(row["p_exponent"]), float(row["zipf_exponent"]), float(row["total"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--egm-results", type=Path, default=None,
                        help="results.csv of TSPoulsen/egm (default: the published "
                             "columns of the existing output)")
    parser.add_argument("--write", action="store_true",
                        help="write book/data/egm_comparison.csv (default: print only)")
    parser.add_argument("--reproduce-davies", action="store_true",
                        help="also rerun the published search on Davies' algorithm (CHI2COMB_LIB)")
    args = parser.parse_args()
    check_imhof()
    published = read_published(args.egm_results or OUT)
    old = {}
    if not args.reproduce_davies and OUT.exists():
        # keep the (slow) reproduction flags of an earlier run
        with open(OUT, newline="") as fh:
            for r in csv.DictReader(fh):
                if r.get("davies_reproduced_isotropic"):
                    old[_key(r)] = {n: r[f"davies_reproduced_{n}"] == "True"
                                    for n in ("isotropic", "lemma")}
    rows = compare(published, args.reproduce_davies)
    for r in rows:
        for name, flag in old.get(_key(r), {}).items():
            r[f"davies_reproduced_{name}"] = flag
    if args.write:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        with open(OUT, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            for r in rows:
                writer.writerow({k: (repr(v) if isinstance(v, float) else v)
                                 for k, v in r.items()})
        print(f"wrote {OUT.relative_to(ROOT)}")
    headline(rows)


if __name__ == "__main__":
    main()
