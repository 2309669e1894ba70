"""The experiments of the book's chapter on choosing the scaling and the clip probability.

The experiments live in :mod:`dpsum_book.evaluation` (the book's helper
distribution, ``book/helpers``), which the chapter imports to re-run parts
of them; each returns the rows of one file of ``book/data`` (the table in
that module's docstring). This script runs them, prints how far each result
is from the stored file, and writes the files only when asked::

    .venv/bin/python benchmarks/evaluation.py                      # compare only
    .venv/bin/python benchmarks/evaluation.py --write              # rewrite book/data
    .venv/bin/python benchmarks/evaluation.py --only zipf_gains skew_sweep

About 2 minutes on an idle machine. Every random experiment seeds
``numpy.random.default_rng``, so the files are reproducible bit for bit on
the same NumPy version.
"""

from __future__ import annotations

import argparse

from dpsum_book.data import compare_with_file, write_csv
from dpsum_book.evaluation import EXPERIMENTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(EXPERIMENTS), default=None)
    parser.add_argument("--write", action="store_true",
                        help="write book/data/<experiment>.csv (default: compare only)")
    args = parser.parse_args()
    for name in args.only or EXPERIMENTS:
        rows = EXPERIMENTS[name]()
        print(compare_with_file(f"{name}.csv", rows), flush=True)
        if args.write:
            path = write_csv(f"{name}.csv", rows)
            print(f"wrote book/data/{path.name} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
