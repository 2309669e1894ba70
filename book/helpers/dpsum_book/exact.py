"""Exact privacy checks for mechanisms with finitely many outputs.

Distributions are dicts from outputs to :class:`fractions.Fraction`
probabilities and ``e^epsilon`` is passed as a rational ``a``, so nothing is
rounded: a check that passes is a proof for that mechanism.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Callable, Hashable, Mapping, Sequence

__all__ = ["Dist", "leaky_rr", "product", "push_forward", "rr_distribution",
           "smallest_delta", "worst_gap_by_enumeration"]

Dist = Mapping[Hashable, Fraction]


def smallest_delta(P: Dist, Q: Dist, a: Fraction | int) -> Fraction:
    """``sum_r (p_r - a q_r)_+``: the smallest delta at ``e^epsilon = a`` for
    the ordered pair ``(P, Q)`` (the worst-event lemma)."""
    zero = Fraction(0)
    return sum((max(zero, P.get(r, zero) - a * Q.get(r, zero)) for r in set(P) | set(Q)), zero)


def worst_gap_by_enumeration(P: Dist, Q: Dist, a: Fraction | int) -> Fraction:
    """``max_S P(S) - a Q(S)`` over all ``2^|R|`` events ``S``, by listing them."""
    zero = Fraction(0)
    outputs = sorted(set(P) | set(Q), key=repr)
    best = zero
    for size in range(len(outputs) + 1):
        for S in itertools.combinations(outputs, size):
            gap = (sum((P.get(r, zero) for r in S), zero)
                   - a * sum((Q.get(r, zero) for r in S), zero))
            best = max(best, gap)
    return best


def rr_distribution(bits: Sequence[int], truth: Fraction = Fraction(1, 2)) -> dict[
        tuple[int, ...], Fraction]:
    """The exact distribution of the answers of randomized response: each
    person answers truthfully with probability ``truth`` and otherwise with a
    fair coin, independently."""
    keep = truth + (1 - truth) / 2
    dist = {}
    for answers in itertools.product((0, 1), repeat=len(bits)):
        pr = Fraction(1)
        for b, o in zip(bits, answers):
            pr *= keep if o == b else 1 - keep
        dist[answers] = pr
    return dist


def leaky_rr(bit: int, a: Fraction | int, leak: Fraction) -> dict[Hashable, Fraction]:
    """Leaky randomized response ``LRR(a, leak)`` on one bit: with probability
    ``leak`` it outputs ``("leak", bit)``, otherwise a randomized-response
    answer that keeps the bit with probability ``a / (1 + a)``. It is exactly
    ``(ln a, leak)``-DP."""
    keep = Fraction(a) / (1 + a)
    return {("leak", bit): leak, ("rr", bit): (1 - leak) * keep,
            ("rr", 1 - bit): (1 - leak) * (1 - keep)}


def product(P1: Dist, P2: Dist) -> dict[Hashable, Fraction]:
    """The distribution of two independent outputs, as pairs."""
    return {(r1, r2): p1 * p2 for r1, p1 in P1.items() for r2, p2 in P2.items()}


def push_forward(P: Dist, h: Callable[[Hashable], Hashable]) -> dict[Hashable, Fraction]:
    """The distribution of ``h(output)`` for a deterministic map ``h``."""
    out: dict[Hashable, Fraction] = {}
    for r, pr in P.items():
        out[h(r)] = out.get(h(r), Fraction(0)) + pr
    return out
