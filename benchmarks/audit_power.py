"""Power and size of the audit as run (book chapter "Checking privacy empirically").

The experiments live in :mod:`dpsum_book.audit_power` (the book's helper
distribution), which the chapter imports for its cases; this script runs
them, prints how far they are from the stored files, and writes the files
only with ``--write``.

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
(:func:`dpsum.audit.binary_output_laws`, drawn with
:func:`dpsum.audit.discrete_law_release` in one vectorised call per audit), because the power of an audit depends on a mechanism only
through those laws; the book and the test suite audit the real binary code.

Run from the repository root (about 15 minutes on an idle machine; ``--only``
reruns some cases and keeps the other rows of the file)::

    .venv/bin/python benchmarks/audit_power.py                 # compare only
    .venv/bin/python benchmarks/audit_power.py --write         # rewrite book/data
    .venv/bin/python benchmarks/audit_power.py --only gaussian-1.6 --runs 200
"""

from __future__ import annotations

import argparse

from dpsum_book.audit_power import PLANS, merge_rows, power_rows, size_rows
from dpsum_book.data import DATA, compare_with_file, read_rows, write_csv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(PLANS) + ["size"], default=None)
    parser.add_argument("--runs", type=int, default=1000,
                        help="audits per (case, size); default 1000")
    parser.add_argument("--size-runs", type=int, default=1000)
    parser.add_argument("--write", action="store_true",
                        help="write book/data/audit_power.csv and audit_size.csv "
                             "(default: compare only)")
    args = parser.parse_args()
    names = [n for n in (args.only or list(PLANS) + ["size"]) if n != "size"]
    if names:
        old = read_rows("audit_power.csv") if (DATA / "audit_power.csv").exists() else []
        rows = merge_rows(power_rows(names, args.runs, verbose=True), old)
        print(compare_with_file("audit_power.csv", rows))
        if args.write:
            write_csv("audit_power.csv", rows)
            print("wrote book/data/audit_power.csv")
    if args.only is None or "size" in args.only:
        rows = size_rows(args.size_runs, verbose=True)
        print(compare_with_file("audit_size.csv", rows))
        if args.write:
            write_csv("audit_size.csv", rows)
            print("wrote book/data/audit_size.csv")


if __name__ == "__main__":
    main()
