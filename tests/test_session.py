"""Sessions: the privacy filter, the ledger (hash chain, resume, threads,
SIGKILL), planning against dp_accounting."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpsum import session as S
from dpsum.privacy import (
    analytic_sigma,
    compose_gaussian_multipliers,
    gaussian_delta,
    gaussian_epsilon,
    zcdp_epsilon,
    zcdp_rho,
)

ROOT = Path(__file__).resolve().parent.parent


# -- events and the zCDP filter


def test_each_event_has_its_exact_zcdp_cost():
    assert S.GaussianEvent(2.0).zcdp() == Fraction(1, 8)
    assert S.DiscreteGaussianEvent(2.0).zcdp() == Fraction(1, 8)
    assert S.PureEvent(0.5).zcdp() == Fraction(1, 8)
    assert S.BoundedRangeEvent(0.5, 3).zcdp() == Fraction(3, 32)
    assert S.SubsampledGaussianEvent(2.0, 0.01, 10).zcdp() == Fraction(10, 8)
    assert S.ZCDPEvent(0.25).zcdp() == Fraction(1, 4)
    assert S.ApproximateEvent(1.0, 0.0).zcdp() == Fraction(1, 2)
    assert S.ApproximateEvent(1.0, 1e-6).zcdp() is None
    assert S.ApproximateEvent(1.0, 1e-6).approximate() == (1, Fraction(1e-6))


@pytest.mark.parametrize("make, name", [
    (lambda: S.GaussianEvent(-1.0), "noise_multiplier"),
    (lambda: S.PureEvent(float("nan")), "epsilon"),
    (lambda: S.BoundedRangeEvent(1.0, 0), "count"),
    (lambda: S.SubsampledGaussianEvent(1.0, 1.5), "sampling_rate"),
    (lambda: S.ApproximateEvent(1.0, 1.0), "delta"),
    (lambda: S.ZCDPEvent("x"), "rho"),
])
def test_bad_event_parameters_are_named(make, name):
    with pytest.raises((TypeError, ValueError), match=name):
        make()


def test_an_epsilon_delta_budget_becomes_the_largest_rho_that_implies_it():
    s = S.Session(epsilon=1.0, delta=1e-6)
    rho = s.spent().rho_total
    assert zcdp_epsilon(rho, 1e-6) <= 1.0
    assert rho == pytest.approx(zcdp_rho(1.0, 1e-6), rel=1e-12)


def test_the_filter_allows_exactly_what_fits_and_says_what_remains():
    s = S.Session(rho=0.5)
    for _ in range(4):
        s.charge(S.GaussianEvent(2.0), mechanism="gaussian_mechanism")   # 1/8 each, exact
    assert s.remaining().rho == 0.0 and s.spent().rho == 0.5
    with pytest.raises(ValueError, match=r"asks for rho = 0\.125 .* rho = 0 of 0\.5 remains"):
        s.charge(S.GaussianEvent(2.0), mechanism="gaussian_mechanism")
    assert s.spent().entries == 4                     # nothing written for a refusal
    assert "zCDP filter" in s.spent().accounting


def test_approximate_events_need_a_declared_share():
    s = S.Session(epsilon=1.0, delta=1e-6)
    ev = S.ApproximateEvent(0.1, 1e-8)
    assert not s.supports(ev)
    with pytest.raises(ValueError, match="no zCDP bound"):
        s.charge(ev, mechanism="binomial_noise_mechanism")
    t = S.Session(epsilon=1.0, delta=1e-6, approximate_share=0.25)
    assert t.supports(ev)
    t.charge(ev, mechanism="binomial_noise_mechanism")
    t.charge(ev, mechanism="binomial_noise_mechanism")
    b = t.spent()
    assert b.approximate_epsilon == pytest.approx(0.2) and b.approximate_delta == 2e-8
    with pytest.raises(ValueError, match="basic filter"):
        t.charge(S.ApproximateEvent(0.06, 1e-8), mechanism="binomial_noise_mechanism")
    # the two parts add up to at most the budget
    rho = t.spent().rho_total
    assert zcdp_epsilon(rho, 0.75e-6) + 0.25 <= 1.0


def test_a_release_under_another_relation_is_refused():
    s = S.Session(rho=1.0, neighbouring="add-remove")
    with pytest.raises(ValueError, match="add-remove neighbouring, but this release is under "
                                         "replace"):
        s.charge(S.PureEvent(0.1), mechanism="laplace_mechanism", neighbouring="replace")


@pytest.mark.parametrize("kwargs, name", [
    (dict(epsilon=-1.0, delta=1e-6), "epsilon"),
    (dict(epsilon=1.0, delta=0.0), "delta"),
    (dict(rho=-0.1), "rho"),
    (dict(rho="1"), "rho"),
    (dict(epsilon=1.0), "budget"),
    (dict(rho=1.0, epsilon=1.0), "not both"),
    (dict(rho=1.0, approximate_share=0.5), "approximate_share"),
    (dict(epsilon=1.0, delta=1e-6, approximate_share=1.5), "approximate_share"),
    (dict(rho=1.0, neighbouring="sideways"), "neighbouring"),
    (dict(rho=1.0, label=3), "label"),
])
def test_bad_session_arguments_are_named(kwargs, name):
    with pytest.raises((TypeError, ValueError), match=name):
        S.Session(**kwargs)


def test_closed_and_foreign_sessions_are_refused():
    s = S.Session(rho=1.0)
    s.close()
    with pytest.raises(ValueError, match="session is closed"):
        S.as_session(s)
    with pytest.raises(ValueError, match="closed"):
        s.charge(S.PureEvent(0.1), mechanism="x")
    with pytest.raises(TypeError, match="session must be a dpsum Session"):
        S.as_session({"rho": 1.0})
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle
        pickle.dumps(S.Session(rho=1.0))


def test_without_a_session_a_release_is_a_one_off():
    assert S.charge(None, S.PureEvent(1.0), mechanism="x") == S.ONE_OFF
    assert "one-off" in S.ONE_OFF


def test_labels_and_public_parameters_reach_the_ledger():
    s = S.Session(rho=1.0)
    tag = s.labelled("mean").charge(S.ZCDPEvent(0.1), mechanism="private_mean",
                                    parameters={"d": np.int64(3), "secure": False})
    entry = s.ledger()[-1]
    assert entry["label"] == "mean" and entry["parameters"] == {"d": 3, "secure": False}
    assert entry["event"] == {"kind": "zcdp", "rho": 0.1}
    assert tag == f"session {s.id}, entry 1 (mean)"
    with pytest.raises(TypeError, match="parameters"):
        s.charge(S.ZCDPEvent(0.1), mechanism="x", parameters={"X": object()})


def test_composed_is_tighter_than_the_filter_for_gaussians():
    s = S.Session(epsilon=1.0, delta=1e-6)
    for _ in range(3):
        s.charge(S.GaussianEvent(10.0), mechanism="gaussian_mechanism")
    fixed = s.composed().epsilon
    assert fixed == pytest.approx(gaussian_epsilon(10.0 / math.sqrt(3), 1e-6), rel=1e-9)
    assert fixed < s.spent().epsilon


# -- the ledger file


def test_a_ledger_file_resumes_to_the_same_spend(tmp_path):
    path = tmp_path / "ledger.jsonl"
    s = S.Session(epsilon=1.0, delta=1e-6, approximate_share=0.2, path=path)
    s.charge(S.GaussianEvent(9.0), mechanism="gaussian_mechanism")
    s.labelled("q").charge(S.BoundedRangeEvent(0.1, 2), mechanism="private_center")
    s.charge(S.ApproximateEvent(0.05, 1e-9), mechanism="sample_and_threshold")
    before, head = s.spent(), s.head
    with pytest.raises(ValueError, match="locked"):
        S.Session.resume(path)                   # a live session holds the file
    s.close()
    r = S.Session.resume(path, head=head)
    assert r.spent() == before and r.id == s.id and r.recovered == ()
    r.charge(S.PureEvent(0.01), mechanism="laplace_mechanism")
    r.close()
    assert len(S.Session.resume(path).ledger()) == 5
    with pytest.raises(ValueError, match="already exists"):
        S.Session(rho=1.0, path=path)


def _ledger_with(tmp_path, k=3):
    path = tmp_path / "l.jsonl"
    s = S.Session(rho=1.0, path=path)
    for _ in range(k):
        s.charge(S.GaussianEvent(4.0), mechanism="gaussian_mechanism")
    s.close()
    return path, s.head


@pytest.mark.parametrize("edit", ["multiplier", "drop_middle", "swap", "header", "junk"])
def test_an_edited_ledger_is_refused_never_read_as_a_smaller_spend(tmp_path, edit):
    path, _ = _ledger_with(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    if edit == "multiplier":                     # a larger multiplier: a smaller spend
        lines[2] = lines[2].replace('"noise_multiplier":4.0', '"noise_multiplier":40.0')
    elif edit == "drop_middle":
        del lines[2]
    elif edit == "swap":
        lines[1], lines[2] = lines[2], lines[1]
    elif edit == "header":
        lines[0] = lines[0].replace('"rho":1.0', '"rho":10.0')
    else:
        lines.insert(2, "{not json}\n")
    path.write_text("".join(lines))
    with pytest.raises(S.LedgerError):
        S.Session.resume(path)


def test_a_cut_tail_is_caught_by_the_head_and_a_cut_line_is_dropped(tmp_path):
    path, head = _ledger_with(tmp_path)
    text = path.read_text()
    path.write_text(text[: text.rstrip("\n").rfind("\n") + 1])      # last entry removed
    assert S.Session.resume(path).spent().entries == 2          # the file alone: undetectable
    with pytest.raises(S.LedgerError, match="tail was cut"):
        S.Session.resume(path, head=head)
    path.write_text(text[:-40])                                   # a line cut mid-write
    r = S.Session.resume(path)
    assert r.spent().entries == 2 and r.recovered
    r.close()
    assert S.Session.resume(path).spent().entries == 2


def test_a_rewritten_chain_is_caught_by_the_head(tmp_path):
    path, head = _ledger_with(tmp_path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[1]["event"]["noise_multiplier"] = 40.0          # a smaller spend ...
    prev = records[0]["hash"]
    for r in records[1:]:                                   # ... with the chain recomputed
        r["prev"] = prev
        r["hash"] = prev = S._link(prev, r)
    path.write_text("".join(S._canonical(r) + "\n" for r in records))
    assert S.Session.resume(path).spent().rho < 3 / 32      # the file alone: undetectable
    with pytest.raises(S.LedgerError, match="does not contain the given head"):
        S.Session.resume(path, head=head)


def test_composed_takes_zcdp_only_events_at_half_the_delta():
    s = S.Session(epsilon=2.0, delta=1e-6)
    s.charge(S.ZCDPEvent(0.01), mechanism="private_mean")
    s.charge(S.PureEvent(0.1), mechanism="laplace_mechanism")
    g = s.composed()
    assert [st.name for st in g.steps] == ["laplace_mechanism", "zCDP events"]
    assert g.steps[1].epsilon == zcdp_epsilon(0.01, 5e-7) and g.delta == 1e-6


def test_a_deleted_ledger_cannot_be_resumed(tmp_path):
    with pytest.raises(ValueError, match="deleted ledger"):
        S.Session.resume(tmp_path / "gone.jsonl")


def test_sixteen_threads_race_for_the_last_share(tmp_path):
    s = S.Session(rho=1.0, path=tmp_path / "race.jsonl")
    s.charge(S.ZCDPEvent(0.7), mechanism="private_mean")
    # 0.3 is left; each thread asks for 0.1 (exact in the filter: Fractions),
    # so exactly three go through whatever the interleaving
    barrier = threading.Barrier(16)
    results: list = []

    def worker() -> None:
        barrier.wait()
        try:
            s.charge(S.ZCDPEvent(0.1), mechanism="private_mean")
            results.append(True)
        except ValueError:
            results.append(False)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = sum(1 for k in range(1, 17)
                   if Fraction(0.7) + k * Fraction(0.1) <= Fraction(1.0))
    assert results.count(True) == expected
    s.close()
    r = S.Session.resume(tmp_path / "race.jsonl")
    assert r.spent().entries == 1 + expected


_CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    from dpsum.session import Session, ZCDPEvent
    ledger, released = sys.argv[1], sys.argv[2]
    s = Session.resume(ledger) if os.path.exists(ledger) else Session(rho=1e6, path=ledger)
    gen = np.random.default_rng()
    print("ready", flush=True)
    with open(released, "a") as out:
        while True:
            s.charge(ZCDPEvent(1.0), mechanism="private_mean")   # on disk before the noise
            value = float(gen.normal())
            out.write(f"{value!r}\\n")
            out.flush()
            os.fsync(out.fileno())
""")


@pytest.mark.slow
def test_a_process_killed_at_random_moments_never_under_counts(tmp_path):
    ledger, released = tmp_path / "kill.jsonl", tmp_path / "released.txt"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    pick = random.Random(20261128)
    for _ in range(20):
        child = subprocess.Popen([sys.executable, str(script), str(ledger), str(released)],
                                 stdout=subprocess.PIPE, env=env)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(pick.uniform(0.0, 0.05))
        child.send_signal(signal.SIGKILL)
        child.wait()
        session = S.Session.resume(ledger)
        entries = session.spent().entries
        session.close()
        done = released.read_text().count("\n") if released.exists() else 0
        assert entries >= done, (entries, done)
        assert session.spent().rho == entries * 1.0
    assert done > 0


# -- planning


def test_twelve_gaussian_releases_fit_epsilon_one_against_dp_accounting():
    plan = S.plan_budget((1.0, 1e-6), 12)
    s = compose_gaussian_multipliers(list(plan.multipliers))
    # at most the budget, and within 1e-9 of it (exact Gaussian composition)
    assert gaussian_delta(s, 1.0) <= 1e-6
    assert gaussian_delta(s * (1 - 1e-9), 1.0) > 1e-6
    # each release's (epsilon, delta) calibrates to its multiplier
    for (e, d), m in zip(plan.releases, plan.multipliers):
        assert float(analytic_sigma(e, d)) == m
    pld = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
    import dp_accounting
    acc = pld.PLDAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(plan.multipliers[0]), 12)
    assert acc.get_epsilon(1e-6) == pytest.approx(1.0, rel=1e-6)


def test_weighted_plans_split_the_budget_by_weight():
    plan = S.plan_budget((0.5, 1e-8), [1.0, 3.0])
    a, b = plan.multipliers
    assert (a / b) ** 2 == pytest.approx(3.0, rel=1e-8)


def test_a_declared_plan_is_charged_once_and_its_releases_fill_its_slots():
    s = S.Session(epsilon=1.0, delta=1e-6, approximate_share=1.0)
    plan = S.plan_budget(s, 12)
    assert plan.epsilon == 1.0 and plan.delta == pytest.approx(1e-6)
    # without the plan the zCDP share is empty: a Gaussian release is refused
    with pytest.raises(ValueError, match="declare a plan"):
        s.check(S.GaussianEvent(plan.multipliers[0]))
    s.declare(plan)
    for e, d in plan.releases:
        s.charge(S.GaussianEvent(float(analytic_sigma(e, d))), mechanism="gaussian_mechanism")
    assert s.ledger()[-1]["slot"] == 11
    with pytest.raises(ValueError, match="session refuses"):
        s.charge(S.GaussianEvent(plan.multipliers[0]), mechanism="gaussian_mechanism")
    # one (epsilon, delta) event for twelve releases: the tighter accounting
    assert s.spent().approximate_epsilon == 1.0


def test_a_zcdp_plan_spends_at_most_what_remains():
    s = S.Session(rho=0.3)
    plan = S.plan_budget(s, [1, 2])
    assert plan.rho <= 0.3 and plan.rho == pytest.approx(0.3, rel=1e-9)
    s.declare(plan)
    assert s.remaining().rho <= 1e-9


@pytest.mark.parametrize("budget, releases, name", [
    ((1.0, 0.0), 3, "delta"),
    ((-1.0, 1e-6), 3, "epsilon"),
    ((1.0, 1e-6), 0, "releases"),
    ((1.0, 1e-6), [1.0, -2.0], "releases"),
    ({"epsilon": 1.0}, 3, "budget"),
])
def test_bad_plans_are_named(budget, releases, name):
    with pytest.raises((TypeError, ValueError), match=name):
        S.plan_budget(budget, releases)
