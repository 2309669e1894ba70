"""Sample-and-threshold states its neighbouring relation, and under
add-remove its record does not carry the private number of users."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpsum import binary as B
from dpsum.privacy import Neighbouring


def _bits(ones: int, zeros: int) -> np.ndarray:
    return np.r_[np.ones(ones, dtype=int), np.zeros(zeros, dtype=int)]


def test_add_remove_neighbours_give_identical_records():
    # the pair: 1000 users and the same with one (zero) user removed
    # (one more one-bit would change the sampled count's law, not the record's fields)
    first = B.sample_and_threshold(_bits(200, 800), epsilon=1.0, delta=1e-3, rng=5,
                                   neighbouring="add-remove")
    second = B.sample_and_threshold(_bits(200, 799), epsilon=1.0, delta=1e-3, rng=5,
                                    neighbouring="add-remove")
    assert first == second
    assert first.n is None and first.neighbouring is Neighbouring.ADD_REMOVE
    fields = {f.name: getattr(first, f.name) for f in dataclasses.fields(first)}
    assert 1000 not in fields.values() and 999 not in fields.values()


def test_replace_one_records_n_and_says_so():
    r = B.sample_and_threshold(_bits(200, 800), epsilon=1.0, delta=1e-3, rng=5)
    assert r.n == 1000 and r.neighbouring is Neighbouring.REPLACE


def test_no_users_is_data_under_add_remove_only():
    r = B.sample_and_threshold([], epsilon=1.0, delta=1e-3, rng=0, neighbouring="add-remove")
    assert r.output == 0 and r.n is None and not r.released
    with pytest.raises(ValueError, match="bits must not be empty"):
        B.sample_and_threshold(np.array([], dtype=int), epsilon=1.0, delta=1e-3, rng=0)
    with pytest.raises(ValueError, match="neighbouring"):
        B.sample_and_threshold([1, 0], epsilon=1.0, delta=1e-3, rng=0, neighbouring="swap")


def test_a_record_under_add_remove_cannot_hold_n():
    r = B.sample_and_threshold(_bits(20, 20), epsilon=1.0, delta=1e-3, rng=0,
                               neighbouring="add-remove")
    with pytest.raises(ValueError, match="n must be None under add-remove"):
        dataclasses.replace(r, n=40)
    rr = B.randomized_response([1, 0], epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="neighbouring must be replace-one"):
        dataclasses.replace(rr, n=None, neighbouring="add-remove")


def test_count_interval_without_n_covers():
    # no public n bounds k: the interval is found without it, and covers
    k, beta, runs = 120, 0.1, 2000
    gen = np.random.default_rng(11)
    hits = 0
    for _ in range(runs):
        r = B.sample_and_threshold(_bits(k, 30), epsilon=1.0, delta=1e-3, rng=gen,
                                   neighbouring="add-remove")
        lo, hi = B.count_interval(r, beta)
        hits += lo <= k <= hi
    se = math.sqrt(beta * (1 - beta) / runs)
    assert hits / runs >= 1 - beta - 4 * se
    assert B.count_interval(B.sample_and_threshold(
        [], epsilon=1.0, delta=1e-3, rng=0, neighbouring="add-remove"), beta)[0] == 0
