"""Every release function through a session: one ledger entry per release,
written before the noise, with the event the release spends; refusals before
the data are read; no state that grows with the number of calls."""

from __future__ import annotations

import gc
import math
import tracemalloc
import warnings
from fractions import Fraction

import numpy as np
import pytest

import dpsum
from dpsum import binary as B
from dpsum import mechanisms as M
from dpsum import pipeline as P
from dpsum import release as R
from dpsum.session import (
    ONE_OFF,
    ApproximateEvent,
    BoundedRangeEvent,
    DiscreteGaussianEvent,
    GaussianEvent,
    PureEvent,
    Session,
    ZCDPEvent,
)

from battery import DataTouched, trap

X = np.random.default_rng(0).normal(0.0, [2.0, 1.0], size=(200, 2))
BITS = np.tile([1, 0, 1, 0], 100)


def _releases():
    """(name, call(session, data), data, expected event): every release function."""
    return [
        ("gaussian_mechanism",
         lambda s, x: M.gaussian_mechanism(x, epsilon=0.5, delta=1e-6, sensitivity=1.0, rng=0,
                                           session=s),
         np.array([1.0, 2.0]), GaussianEvent(float(dpsum.analytic_sigma(0.5, 1e-6)))),
        ("gaussian_mechanism secure",
         lambda s, x: M.gaussian_mechanism(x, epsilon=0.5, delta=1e-6, sensitivity=1.0, rng=0,
                                           secure=True, session=s),
         np.array([1.0, 2.0]), DiscreteGaussianEvent),
        ("laplace_mechanism",
         lambda s, x: M.laplace_mechanism(x, epsilon=0.5, sensitivity=1.0, rng=0, session=s),
         np.array([1.0, 2.0]), PureEvent(0.5)),
        ("shaped_laplace_mechanism",
         lambda s, x: M.shaped_laplace_mechanism(x, epsilon=0.5, widths=[4.0, 2.0], rng=0,
                                                 session=s), X, PureEvent(0.5)),
        ("elliptical_gaussian_mechanism",
         lambda s, x: M.elliptical_gaussian_mechanism(x, epsilon=0.5, delta=1e-6, lower=-4,
                                                      upper=4, rng=0, session=s,
                                                      diagnostics=False),
         X, GaussianEvent(float(dpsum.analytic_sigma(0.5, 1e-6)))),
        ("gaussian_data_mechanism",
         lambda s, x: M.gaussian_data_mechanism(x, epsilon=0.5, delta=1e-6, stds=[2.0, 1.0],
                                                center=0, rng=0, session=s),
         X, GaussianEvent),
        ("clipped_gaussian_mechanism secure",
         lambda s, x: M.clipped_gaussian_mechanism(x, epsilon=0.5, delta=1e-6, clip_norm=3.0,
                                                   rng=0, secure=True, session=s),
         X, DiscreteGaussianEvent),
        ("randomized_response",
         lambda s, x: B.randomized_response(x, epsilon=0.5, rng=0, session=s), BITS,
         PureEvent(0.5)),
        ("randomized_response_reports",
         lambda s, x: B.randomized_response_reports(x, epsilon=0.5, rng=0, session=s), BITS,
         PureEvent(0.5)),
        ("binomial_noise_mechanism",
         lambda s, x: B.binomial_noise_mechanism(x, epsilon=1.0, delta=0.4, rng=0, session=s),
         BITS, ApproximateEvent(1.0, 0.4)),
        ("sample_and_threshold",
         lambda s, x: B.sample_and_threshold(x, epsilon=1.0, delta=1e-3, rng=0, session=s),
         BITS, ApproximateEvent(1.0, 1e-3)),
        ("private_mean",
         lambda s, x: P.private_mean(x, lower=-10, upper=10, rho=0.5, rng=0, session=s),
         X, ZCDPEvent(0.5)),
        ("private_sum",
         lambda s, x: P.private_sum(x, lower=-10, upper=10, rho=0.25, rng=0, session=s),
         X, ZCDPEvent(0.25)),
        ("private_center",
         lambda s, x: P.private_center(x, epsilon=0.5, lower=-10, upper=10, rng=0, session=s),
         X, BoundedRangeEvent(0.5, 2)),
        ("private_scales",
         lambda s, x: P.private_scales(x, [0.0, 0.0], epsilon=0.5, min_scale=0.01,
                                       max_scale=100.0, rng=0, session=s),
         X, BoundedRangeEvent(0.5, 2)),
        ("private_norm_quantile",
         lambda s, x: P.private_norm_quantile(x, 0.5, epsilon=0.5, lower=0.01, upper=100.0,
                                              rng=0, session=s), X, BoundedRangeEvent(0.5)),
        ("exponential_quantile",
         lambda s, x: P.exponential_quantile(x, 0.5, epsilon=0.5, lower=-10, upper=10, rng=0,
                                             session=s), X, BoundedRangeEvent(0.5, 2)),
        ("adaptive_clip_update",
         lambda s, x: P.adaptive_clip_update(x, 1.0, target_quantile=0.5, learning_rate=0.2,
                                             count_noise=5.0, rng=0, session=s),
         X, GaussianEvent(5.0)),
    ]


def _session(**kw):
    return Session(epsilon=20.0, delta=0.9, approximate_share=0.5, **kw)


@pytest.mark.parametrize("name, call, data, expected", _releases(),
                         ids=[r[0] for r in _releases()])
def test_each_release_is_one_ledger_entry_with_its_event(name, call, data, expected):
    s = _session()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = call(s, data)
    entries = s.ledger()[1:]
    assert len(entries) == 1
    entry = entries[0]
    if isinstance(expected, type):
        assert entry["event"]["kind"] == expected.kind
    else:
        assert entry["event"] == expected.as_dict()
    tag = getattr(out, "accounting", None)
    if tag is not None:                              # records say where they are accounted
        assert tag == f"session {s.id}, entry 1"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert call(None, data).accounting == ONE_OFF


@pytest.mark.parametrize("name, call, data, expected", _releases(),
                         ids=[r[0] for r in _releases()])
def test_a_release_that_does_not_fit_is_refused_before_the_data_are_read(name, call, data,
                                                                          expected):
    spent = Session(epsilon=1e-3, delta=1e-10)
    with pytest.raises(ValueError, match="session refuses the release"):
        call(spent, trap(data))
    assert spent.ledger()[1:] == []


def test_a_session_under_another_relation_refuses_before_the_data():
    s = Session(rho=10.0, neighbouring="add-remove")
    with pytest.raises(ValueError, match="under add-remove neighbouring, but this release"):
        M.clipped_gaussian_mechanism(trap(X), epsilon=1.0, delta=1e-6, clip_norm=1.0,
                                     session=s)
    r = M.clipped_gaussian_mechanism(X, epsilon=1.0, delta=1e-6, clip_norm=1.0,
                                     neighbouring="add-remove", rng=0, session=s)
    assert r.accounting.endswith("entry 1")


def test_an_analysis_of_three_releases_spends_what_its_ledger_says(tmp_path):
    s = Session(epsilon=1.0, delta=1e-6, path=tmp_path / "analysis.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = P.private_center(X, epsilon=0.05, lower=-10, upper=10, rng=1,
                             session=s.labelled("centre"))
        M.clipped_gaussian_mechanism(X - c, epsilon=0.3, delta=1e-7, clip_norm=4.0, rng=2,
                                     session=s.labelled("sum"))
        B.randomized_response(BITS, epsilon=0.05, rng=3, session=s.labelled("share"))
    rho = (Fraction(2) * Fraction(0.05) ** 2 / 8
           + Fraction(1, 2) / Fraction(float(dpsum.analytic_sigma(0.3, 1e-7))) ** 2
           + Fraction(0.05) ** 2 / 2)
    assert s.spent().rho == float(rho)
    assert [e["label"] for e in s.ledger()[1:]] == ["centre", "sum", "share"]
    assert s.composed().epsilon < s.spent().epsilon < 1.0


def test_a_plan_declared_in_advance_is_charged_once():
    s = Session(epsilon=1.0, delta=1e-6, approximate_share=1.0)
    plan = dpsum.session.plan_budget(s, 3)
    s.declare(plan)
    values = np.array([1.0, 2.0])
    for e, d in plan.releases:
        M.gaussian_mechanism(values, epsilon=e, delta=d, sensitivity=1.0, rng=0, session=s)
    assert [x.get("slot") for x in s.ledger()[1:]] == [None, 0, 1, 2]
    assert s.spent().approximate_epsilon == 1.0
    with pytest.raises(ValueError, match="session refuses"):
        M.gaussian_mechanism(values, epsilon=0.1, delta=1e-9, sensitivity=1.0, session=s)


def _growth(step, calls: int) -> int:
    """Bytes still held after ``calls`` more calls (after a warm-up)."""
    for _ in range(200):
        step()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(calls):
        step()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


@pytest.mark.slow
def test_ten_thousand_releases_hold_no_growing_state():
    acc = R.clipped_gaussian_accumulator(2, epsilon=1.0, delta=1e-6, clip_norm=1.0)
    full = acc.update(X[:4])
    gen = np.random.default_rng(0)

    def step() -> None:
        full.release(rng=gen)
        M.laplace_mechanism([1.0], epsilon=1.0, sensitivity=1.0, rng=gen)

    grown = _growth(step, 10_000)
    # a registry of one entry per release would hold at least 10,000 * 50 bytes
    assert grown < 50_000, grown


def test_a_file_backed_session_holds_only_its_totals(tmp_path):
    s = Session(rho=1e9, path=tmp_path / "long.jsonl")
    gen = np.random.default_rng(0)

    def step() -> None:
        M.laplace_mechanism([1.0], epsilon=1.0, sensitivity=1.0, rng=gen, session=s)

    grown = _growth(step, 2_000)
    assert grown < 50_000, grown
    assert s.spent().entries == 2_200
    s.close()
    assert Session.resume(tmp_path / "long.jsonl").spent().rho == 2_200 * 0.5


def test_the_entry_is_on_disk_before_the_noise_is_drawn(tmp_path, monkeypatch):
    path = tmp_path / "order.jsonl"
    s = Session(rho=10.0, path=path)
    acc = R.clipped_gaussian_accumulator(2, epsilon=1.0, delta=1e-6, clip_norm=1.0)
    full = acc.update(X)
    seen = []
    original = type(full)._estimate

    def spy(self, gen, noise_std):
        seen.append(path.read_text().count("\n"))         # header + entries, on disk
        return original(self, gen, noise_std)

    monkeypatch.setattr(type(full), "_estimate", spy)
    full.release(rng=0, session=s)
    full.release(rng=1, session=s)
    assert seen == [2, 3]
