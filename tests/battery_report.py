"""Print the issue-26 battery's counts by outcome and the worst neighbour ratio
per mechanism and path: ``python tests/battery_report.py [cases]``."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the battery module beside this script

import battery as B  # noqa: E402


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    counts, failures, coverage = B.run_bad_values()
    print("Part 1: bad values")
    print(f"  functions driven: {coverage['driven']}; not driven: "
          + ", ".join(f"{v} {k[len('not driven '):]}" for k, v in sorted(coverage.items())
                      if k != "driven"))
    total = sum(counts.values())
    print(f"  calls: {total}")
    for outcome, count in counts.most_common():
        print(f"    {outcome:<18} {count:6d}")
    by_pair = Counter((q, p, o.split(":")[0]) for q, p, _, o in failures)
    if by_pair:
        print("  remaining (function, argument, outcome): calls")
        for (q, p, o), c in sorted(by_pair.items()):
            print(f"    {q}({p}=...) {o}: {c}")
    print(f"\nPart 2: worst-case neighbours at extreme scales ({cases} cases each)")
    print(f"  {'relation':<11} {'mechanism':<18} {'path':<12} {'cases':>5}  "
          "worst movement / sensitivity")
    for (rel, mech, path), (worst, n) in sorted(B.run_neighbours(cases=cases).items(),
                                                key=lambda kv: (kv[0][0] != "replace", kv[0])):
        print(f"  {rel:<11} {mech:<18} {path:<12} {n:5d}  {worst:.15f}")


if __name__ == "__main__":
    main()
