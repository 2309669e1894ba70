"""DP-SGD on two tasks: test accuracy against epsilon, isotropic against scaled clipping.

Trains the softmax regressions of the book chapter "Private sums of gradients:
DP-SGD" (dpsum_book.dpsgd: digits, and make_classification with n = 10^5) at
epsilon from 0.05 to 8 (delta 1e-6, add-remove), for each clipping variant and
seed, plus the non-private optimiser; prints mean accuracy +- standard error
and, with --write, stores every run in book/data/dp_sgd.csv (the chapter reads it).

    python benchmarks/dp_sgd.py            # print only
    python benchmarks/dp_sgd.py --write    # also write book/data/dp_sgd.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from pathlib import Path

from dpsum_book.dpsgd import (CONFIGS, EPSILONS, best_linear, classification_task,
                              digits_task, run, summarise)

OUT = Path(__file__).resolve().parents[1] / "book" / "data" / "dp_sgd.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="write book/data/dp_sgd.csv")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for task in (digits_task(), classification_task()):
        start = time.time()
        rows += run(task, CONFIGS[task.name], EPSILONS[task.name], list(range(args.seeds)))
        rows.append({"task": task.name, "variant": "best linear", "epsilon": math.inf,
                     "seed": -1, "accuracy": best_linear(task), "multiplier": 0.0,
                     "clip_radius": math.inf})
        print(f"{task.name}: {time.time() - start:.0f} s")
    for r in summarise(rows):
        print(f"{r['task']:20s} {r['variant']:18s} eps={r['epsilon']:<5} "
              f"acc={r['mean']:.4f} +- {r['se']:.4f} ({r['seeds']} seeds)")
    if args.write:
        with OUT.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
