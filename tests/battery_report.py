"""Print the issue-26 battery: counts by outcome, coverage of the public
names, the add-remove neighbours with no rows, and the worst neighbour
ratio per mechanism and path.

    .venv/bin/python tests/battery_report.py [cases]

``cases`` (default 40) is the number of random extreme-scale cases per
mechanism and path in part 2.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the battery module beside this script

import battery as B  # noqa: E402

OUTCOMES = ("clear error", "correct result", "unnamed error", "other exception",
            "non-finite result", "silent", "data read first", "data echoed")


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    warnings.simplefilter("ignore")          # the bad values make numpy and scipy talk
    names = B.public_names()
    n_callable = sum(callable(obj) for _, obj in names)
    counts, failures, coverage = B.run_bad_values()
    print("Part 1: every public name, every kind of bad value")
    print(f"  public names: {len(names)} ({n_callable} callable, "
          f"{len(names) - n_callable} constants)")
    print(f"  driven: {coverage['driven']} (every public callable but {len(B.NOT_DRIVEN)}, and "
          f"{len(B.methods())} public methods); not driven by design: {len(B.NOT_DRIVEN)}"
          + "".join(f"; {k}: {v}" for k, v in sorted(coverage.items()) if k != "driven"))
    for name, why in sorted(B.NOT_DRIVEN.items()):
        print(f"    {name}: {why}")
    total = sum(counts.values())
    print(f"  calls: {total}")
    for outcome in OUTCOMES + tuple(k for k in counts if k not in OUTCOMES):
        print(f"    {outcome:<18} {counts.get(outcome, 0):6d}")
    by_pair = Counter((q, p, o.split(":")[0]) for q, p, _, o in failures)
    if by_pair:
        print("  remaining (function, argument, outcome): calls")
        for (q, p, o), c in sorted(by_pair.items()):
            print(f"    {q}({p}=...) {o}: {c}")
    empty, lone = B.run_empty_neighbours()
    print("\nPart 1b: add-remove neighbours one row and no rows, every function with rows "
          "and a neighbouring argument")
    for outcome in ("both released", "both refused", "one neighbour only"):
        print(f"    {outcome:<18} {empty.get(outcome, 0):6d}")
    for qual, err in B.REFUSED_BOTH + lone:
        print(f"    {qual}: {err}")
    print(f"\nPart 2: worst-case neighbours at extreme scales ({cases} cases each)")
    print(f"  {'relation':<11} {'mechanism':<18} {'path':<12} {'cases':>5}  "
          "worst movement / sensitivity")
    for (rel, mech, path), (worst, n) in sorted(B.run_neighbours(cases=cases).items(),
                                                key=lambda kv: (kv[0][0] != "replace", kv[0])):
        print(f"  {rel:<11} {mech:<18} {path:<12} {n:5d}  {worst:.15f}")


if __name__ == "__main__":
    main()
