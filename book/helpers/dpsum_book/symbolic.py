"""Symbolic-dimension checks for the chapter "Quadratic forms of Gaussian vectors".

SymPy proves identities about vectors of a *symbolic* dimension ``d``: matrix
symbols of size ``d x d``, index sums over ``0, ..., d-1`` and Kronecker
deltas. Each public function here is one check a chapter calls in one line:

- :func:`quadratic_form_expectation`: ``E[V^T A V]`` for ``V = mu + L U`` with
  ``E U = 0`` and ``E U U^T = I``, computed by linearity alone;
- :func:`quadratic_form_rhs`: ``tr(A L L^T) + mu^T A mu`` as index sums;
- :func:`same_index_sums`: equality of two sums of index sums up to the
  names and order of the summation indices (sound: it reports equality only
  for equal expressions);
- :func:`specialise`: substitute entries of ``A``, ``L`` and ``mu`` and collapse
  the Kronecker deltas;
- :func:`gchisq_moments`: the mean and variance of a generalized chi-square
  with ``d`` terms, from the one-term moments and a Kronecker-delta covariance.
"""

from __future__ import annotations

import itertools
from typing import Callable

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

__all__ = ["A", "L", "U", "d", "mu", "gchisq_moments", "one_term_moments",
           "quadratic_form_expectation", "quadratic_form_rhs", "same_index_sums",
           "specialise", "kronecker"]

#: the symbolic dimension
d = sp.Symbol("d", integer=True, positive=True)
A = sp.MatrixSymbol("A", d, d)
L = sp.MatrixSymbol("L", d, d)
mu = sp.MatrixSymbol("mu", d, 1)
U = sp.MatrixSymbol("U", d, 1)
_k, _l = sp.symbols("k l", integer=True)


def kronecker(p: sp.Expr, q: sp.Expr) -> sp.Expr:
    """The Kronecker delta on ``0, ..., d-1``."""
    return sp.KroneckerDelta(p, q, (0, d - 1))


def _flatten(term: sp.Expr) -> tuple[sp.Expr, list[sp.Symbol]]:
    """(product of factors, summation indices) of a product of nested sums."""
    indices: list[sp.Symbol] = []
    factors: list[sp.Expr] = []
    todo = [term]
    while todo:
        f = todo.pop()
        if isinstance(f, sp.Sum):
            body = f.function
            for var, lo, hi in f.limits:
                if lo != 0 or sp.simplify(hi - (d - 1)) != 0:
                    raise ValueError("only sums over 0..d-1 are compared")
                fresh = sp.Dummy("i", integer=True)
                body = body.xreplace({var: fresh})
                indices.append(fresh)
            todo.append(body)
        elif isinstance(f, sp.Mul):
            todo.extend(f.args)
        else:
            factors.append(f)
    return sp.Mul(*factors), indices


def _canonical(expr: sp.Expr) -> list[str]:
    forms = []
    for term in sp.Add.make_args(sp.expand(expr)):
        body, indices = _flatten(term)
        names = sp.symbols(f"k0:{len(indices)}", integer=True)
        forms.append(min(sp.srepr(body.xreplace(dict(zip(perm, names))))
                         for perm in itertools.permutations(indices)))
    return sorted(forms)


def same_index_sums(lhs: sp.Expr, rhs: sp.Expr) -> bool:
    """True if ``lhs`` and ``rhs`` are the same sum of index sums over
    ``0..d-1``, up to renaming and reordering the summation indices."""
    return _canonical(lhs) == _canonical(rhs)


def quadratic_form_expectation() -> sp.Expr:
    """``E[V^T A V]`` for ``V = mu + L U``, ``E U = 0``, ``E U U^T = I``, in
    dimension ``d``, as index sums: the quadratic form is expanded into its
    four terms, the two with one factor of ``U`` vanish, and
    ``E[U^T M U] = sum_kl M_kl delta_kl``."""
    V = mu + L * U
    total = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(V.T * A * V)):
        factors = list(term.args) if isinstance(term, sp.MatMul) else [term]
        spots = [p for p, f in enumerate(factors) if f in (U, U.T)]
        if not spots:
            total += term[0, 0]
        elif len(spots) == 2:
            assert factors[0] == U.T and factors[-1] == U
            M = sp.MatMul(*factors[1:-1])
            total += sp.Sum(M[_k, _l] * kronecker(_k, _l),
                            (_k, 0, d - 1), (_l, 0, d - 1)).doit()
    return total


def quadratic_form_rhs(wrong: bool = False) -> sp.Expr:
    """``tr(A L L^T) + mu^T A mu`` as index sums (``wrong=True``: the false
    ``tr(A L^T L) + mu^T A mu``, which a check must reject)."""
    inner = L.T * L if wrong else L * L.T
    return sp.Trace(A * inner).rewrite(sp.Sum) + (mu.T * A * mu)[0, 0]


def specialise(expr: sp.Expr, A_entry: Callable[[sp.Expr, sp.Expr], sp.Expr],
               L_entry: Callable[[sp.Expr, sp.Expr], sp.Expr],
               mean_entry: Callable[[sp.Expr], sp.Expr]) -> sp.Expr:
    """Replace the entries ``A[p, q]``, ``L[p, q]``, ``mu[p, 0]`` of ``expr``
    and collapse the Kronecker deltas."""
    entry = {A: A_entry, L: L_entry, mu: lambda p, q: mean_entry(p)}
    swapped = expr.replace(lambda e: isinstance(e, MatrixElement) and e.parent in entry,
                           lambda e: entry[e.parent](e.i, e.j))
    return swapped.doit()


def one_term_moments() -> tuple[sp.Expr, sp.Expr, sp.Symbol]:
    """``(E (Z + theta)^2, Var (Z + theta)^2, theta)`` by integrating against
    the standard normal density."""
    z, th = sp.symbols("z theta", real=True)
    phi = sp.exp(-z**2 / 2) / sp.sqrt(2 * sp.pi)
    E1 = sp.integrate(sp.expand((z + th) ** 2) * phi, (z, -sp.oo, sp.oo))
    E2 = sp.integrate(sp.expand((z + th) ** 4) * phi, (z, -sp.oo, sp.oo))
    return sp.simplify(E1), sp.expand(E2 - E1**2), th


def gchisq_moments(weight: Callable[[sp.Expr], sp.Expr],
                   shift: Callable[[sp.Expr], sp.Expr]) -> tuple[sp.Expr, sp.Expr]:
    """``(E Q, Var Q)`` of ``Q = sum_j w_j (Z_j + theta_j)^2``, ``j = 0..d-1``,
    for ``w_j = weight(j)`` and ``theta_j = shift(j)``: the means add, and the
    covariance of terms ``j`` and ``l`` is ``delta_jl Var(Z_j + theta_j)^2``."""
    E1, var_one, th = one_term_moments()
    j = sp.Symbol("j", integer=True)
    mean = sp.Sum(weight(j) * E1.subs(th, shift(j)), (j, 0, d - 1))
    cov = kronecker(j, _l) * var_one.subs(th, shift(j))
    var = sp.Sum(sp.Sum(weight(j) * weight(_l) * cov, (_l, 0, d - 1)), (j, 0, d - 1)).doit()
    return mean, var
