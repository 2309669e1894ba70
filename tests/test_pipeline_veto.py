"""The bias check's veto: its pass and its rules.

The pass :class:`dpsum.pipeline.passes.SignedDisplacement` must keep every
row's contribution inside the sensitivity the proof uses (an integer vector
of norm at most ``2^bits`` and an integer in ``[0, 2^bits]``) and be exact
under any split of the rows; the rules :func:`_vetoes` and
:func:`_signed_exceeds` must veto a switch where the displacements cancel
and keep it where they do not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsum.pipeline import mean as M
from dpsum.pipeline.passes import SignedDisplacement

BITS = 20


def _per_row(plan: SignedDisplacement, X: np.ndarray) -> list[tuple]:
    return [plan.update(X[i:i + 1]) for i in range(X.shape[0])]


@pytest.mark.parametrize("seed", range(5))
def test_each_row_stays_inside_the_sensitivity(seed):
    gen = np.random.default_rng(seed)
    d = int(gen.integers(1, 9))
    scale = 10.0 ** gen.uniform(-3, 3, size=d)
    X = gen.standard_t(1.5, size=(300, d)) * scale
    X[:5] *= 1e150                        # far outside: the norms overflow
    X[5] = 0.0                            # at the centre
    b = gen.uniform(0.1, 1.0, size=d)
    C = float(gen.uniform(0.1, 3.0))
    K = float(gen.uniform(0.5, 50.0))
    plan = SignedDisplacement(C, b, np.zeros(d), K, BITS)
    top = 2 ** BITS
    for row in _per_row(plan, X):
        v, k = row[:-1], row[-1]
        assert sum(x * x for x in v) <= top * top          # exact, in integers
        assert 0 <= k <= top


def test_rows_inside_the_clip_region_add_nothing():
    X = np.random.default_rng(0).normal(size=(100, 3)) * 0.1
    st = SignedDisplacement(10.0, np.ones(3), np.zeros(3), 1.0, BITS).update(X)
    assert st == (0, 0, 0, 0)


def test_the_sums_are_exact_under_any_split():
    gen = np.random.default_rng(1)
    X = gen.lognormal(0.0, 2.0, size=(1000, 4))
    plan = SignedDisplacement(2.0, np.full(4, 0.5), np.ones(4), 5.0, BITS)
    whole = plan.update(X)
    for cut in (1, 333, 999):
        assert plan.merge(plan.update(X[:cut]), plan.update(X[cut:])) == whole
    assert plan.update(X[::-1]) == whole
    # one-sided displacements: the vector's norm is nearly the norms' sum
    v, k = np.array(whole[:-1], dtype=float), whole[-1]
    assert k > 0 and np.linalg.norm(v) <= k


def test_the_veto_holds_where_the_displacements_cancel():
    d = 10
    # V ~ 0 (only noise, ||V~||^2 ~ d), U_K 40 noise stds: the ratio is small
    assert M._vetoes(math.sqrt(d), 40.0, d, bound=4.0, bound_std=0.9, threshold=1.0)
    # one-sided: ||V|| ~ U_K, the check's bound stands
    assert not M._vetoes(39.0, 40.0, d, bound=4.0, bound_std=0.9, threshold=1.0)
    # U_K lost in the noise: no ratio, no veto
    assert not M._vetoes(math.sqrt(d), 1.0, d, bound=4.0, bound_std=0.9, threshold=1.0)


def test_a_plain_signed_bias_switches_without_the_check():
    # 25 noise stds of 0.09 each (2.25 > 1): the box
    assert M._signed_exceeds(25.0, 1, 0.09, 2e-4, 1.0)
    # the same norm in noise units below the threshold in data units: clipping
    assert not M._signed_exceeds(25.0, 1, 0.03, 2e-4, 1.0)
    # noise alone in 10 dimensions never passes, whatever its scale
    assert not M._signed_exceeds(math.sqrt(10.0), 10, 1e6, 2e-4, 1.0)


def test_one_reading_gives_the_check_and_the_veto_their_own_sums():
    from dpsum.pipeline.passes import CheckAndVeto, Displacement
    gen = np.random.default_rng(7)
    X = gen.standard_t(2, size=(500, 6)) * 10.0 ** gen.uniform(-3, 3, size=(500, 1))
    X[3] = 1e300
    b, c = np.linspace(0.2, 1.0, 6), np.full(6, 0.5)
    check = Displacement(2.0, b, c, 40.0, BITS)
    veto = SignedDisplacement(2.0, b, c, 7.0, BITS)
    both = CheckAndVeto(check, veto)
    assert both.update(X) == (check.update(X), veto.update(X))
    halves = both.merge(both.update(X[:200]), both.update(X[200:]))
    assert halves == both.update(X)


def test_the_check_and_the_veto_must_clip_alike():
    from dpsum.pipeline.passes import CheckAndVeto, Displacement
    b, c = np.ones(3), np.zeros(3)
    with pytest.raises(ValueError, match="same radius"):
        CheckAndVeto(Displacement(2.0, b, c, 40.0, BITS),
                     SignedDisplacement(3.0, b, c, 7.0, BITS))
