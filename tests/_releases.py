"""Helpers shared by the test modules: releases compared field by field,
and the zCDP a release's steps spent, summed exactly."""

from fractions import Fraction

import numpy as np


def same_release(a, b):
    """Every field of two releases equal, arrays bit for bit."""
    for field in a.__dataclass_fields__:
        x, y = getattr(a, field), getattr(b, field)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                    and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


def exact_spend(steps) -> Fraction:
    """The zCDP the recorded steps spent, in exact arithmetic (Fractions of
    the recorded floats): ``count / (2 s^2)`` per Gaussian step of multiplier
    ``s``, ``count epsilon^2 / 8`` per bounded-range step."""
    total = Fraction(0)
    for st in steps:
        if st.kind == "gaussian":
            total += st.count / (2 * Fraction(st.noise_multiplier) ** 2)
        else:
            assert st.kind == "bounded-range", st.kind
            total += st.count * Fraction(st.epsilon) ** 2 / 8
    return total
