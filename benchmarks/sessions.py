"""Sessions: a three-release analysis through a session, its ledger, what it
spent under each accounting, and the planning answer for 12 Gaussian releases
at epsilon = 1, delta = 1e-6, checked against dp_accounting's PLD accountant.

Run: .venv/bin/python benchmarks/sessions.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

import dpsum
from dpsum.session import GaussianEvent, PureEvent, plan_budget


def _pld_epsilon(events: list, delta: float) -> float | None:
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:
        return None
    acc = pld_privacy_accountant.PLDAccountant()
    for ev in events:
        if isinstance(ev, GaussianEvent):
            acc.compose(dp_accounting.GaussianDpEvent(ev.noise_multiplier))
        elif isinstance(ev, PureEvent):
            acc.compose(dp_accounting.LaplaceDpEvent(1.0 / ev.epsilon))
        else:
            return None
    return float(acc.get_epsilon(delta))


def main() -> None:
    rng = np.random.default_rng(7)
    X = rng.normal(0.0, 1.0, size=(5000, 3))
    with tempfile.TemporaryDirectory() as tmp:
        s = dpsum.Session(epsilon=1.0, delta=1e-6, neighbouring="add-remove",
                          path=Path(tmp) / "analysis.jsonl")
        count = dpsum.laplace_mechanism(len(X), epsilon=0.1, sensitivity=1.0, rng=1,
                                        neighbouring="add-remove",
                                        session=s.labelled("row count"))
        total = dpsum.clipped_gaussian_mechanism(X, epsilon=0.4, delta=1e-7, clip_norm=4.0,
                                                 neighbouring="add-remove", rng=2,
                                                 session=s.labelled("sum, C = 4"))
        # the third release is chosen from the first two: a smaller radius
        mean = total.estimate / max(float(count.estimate), 1.0)
        C = float(2.0 * np.sqrt(X.shape[1]) + np.linalg.norm(mean))
        dpsum.clipped_gaussian_mechanism(X, epsilon=0.4, delta=1e-7, clip_norm=C,
                                         neighbouring="add-remove", rng=3,
                                         session=s.labelled("sum, C from the first two"))
        print("ledger:")
        for e in s.ledger()[1:]:
            ev = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in e["event"].items()}
            print(f"  {e['index']}  {e['label']:<28} {e['mechanism']:<30} "
                  f"{json.dumps(ev)}  {e['hash'][:12]}")
        spent = s.spent()
        fixed = s.composed()
        pld = _pld_epsilon([ev for _, ev in s.events()], 1e-6)
        print(f"spent, zCDP filter (fully adaptive): rho = {spent.rho:.6f} of "
              f"{spent.rho_total:.6f}; epsilon = {spent.epsilon:.4f} at delta = 1e-6")
        print(f"spent, exact composition of the fixed sequence (dpsum.compose): "
              f"epsilon = {fixed.epsilon:.4f} at delta = 1e-6")
        if pld is not None:
            print(f"spent, dp_accounting PLD of the same events: epsilon = {pld:.4f}")
        s.close()

    plan = plan_budget((1.0, 1e-6), 12)
    z = plan.multipliers[0]
    print(f"plan: 12 Gaussian releases at epsilon = 1, delta = 1e-6: multiplier {z:.6f}, "
          f"each release (epsilon, delta) = ({plan.releases[0][0]:.6f}, "
          f"{plan.releases[0][1]:.3g})")
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
        acc = pld_privacy_accountant.PLDAccountant()
        acc.compose(dp_accounting.GaussianDpEvent(z), 12)
        pld12: float | None = float(acc.get_epsilon(1e-6))
    except ImportError:
        pld12 = None
    if pld12 is not None:
        print(f"  dp_accounting PLD of the 12 releases: epsilon = {pld12:.10f}")
    print(f"  the zCDP filter alone would need multiplier "
          f"{1 / np.sqrt(2 * dpsum.Session(epsilon=1.0, delta=1e-6).spent().rho_total / 12):.6f}")


if __name__ == "__main__":
    main()
