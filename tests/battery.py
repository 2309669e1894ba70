"""The issue-26 battery: every public function driven with bad values, and
worst-case neighbours at extreme scales on every mechanism and path.

Shared by ``tests/test_battery.py`` (which asserts) and
``tests/battery_report.py`` (which prints the counts and the worst ratios).

Part 1, bad values. For every callable in ``dpsum.__all__`` and in the
``__all__`` of each subpackage (functions and record classes, through every
field of a real instance), and for the public methods that take arguments
(:func:`methods`), a baseline call is built from the function's own
baseline (:func:`_baselines`) and a table of valid values per argument name
(:func:`_valid`); the baseline must succeed. The callables deliberately not
driven are listed with their reasons in ``NOT_DRIVEN``; constants are not
callable. Then each argument in turn receives each kind of bad value, with the data argument
(if any) replaced by a *trap*: an array that raises :class:`DataTouched` on
any computation, so an error raised after the data was read is caught. The
outcome of each call is one of

- ``clear error``: ValueError/TypeError naming the argument, no data value in
  the message, raised before the data was read;
- ``correct result``: the call returned a value the argument may take
  (``5e-324`` as a sensitivity, say) and every number in the result is
  finite;
- a failure: ``data read first``, ``unnamed error`` (the message does not
  name the argument), ``data echoed``, ``other exception`` (any other type),
  ``non-finite result``, or ``silent`` (the call returned for a value the
  argument can never take: NaN, a string, a complex or an object for a
  number, a non-integer for an integer (a baseline that is an int), None for
  an argument whose default is not None; or the result holds a 0-d object
  array instead of a number).

Besides the scalar bad values, every argument whose baseline is a numeric
array is driven with one element replaced (NaN, inf, 0, -1, ``5e-324``,
``1e308``) and with every element ``1e308`` or ``5e-324``
(:func:`element_values`): extreme stds, scales and weights.

Part 2, neighbours. For each mechanism (Gaussian-data, clipping baseline,
Elliptical Gaussian) and path (float in memory, merged accumulator, dask,
secure grid) two replace-one neighbouring datasets at extreme scales (rows
and parameters from 1e-300 to 1e300, mixed huge and tiny columns, the
changed row clipped in the opposite direction) are folded, and the movement
of the pre-noise statistic (``Accumulator.sum_before_noise``), in exact rational
arithmetic, is divided by the declared sensitivity: the ratio must be at
most 1. Under add-remove (the Gaussian-data mechanism with a nonzero centre,
and the clipping baseline) the extreme row is added in front of the rows and
row 0 is removed; the declared sensitivity must also be the same on both
neighbours (it may not depend on the private number of rows).
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np

import dpsum
from dpsum import release as R
from dpsum.engines import dask as dpdask

SECRET = 271828.1828
SECRET_TEXT = "271828.1828"

MODULES = ["dpsum", "dpsum.privacy", "dpsum.distributions", "dpsum.design", "dpsum.kernels",
           "dpsum.release", "dpsum.pipeline", "dpsum.accuracy", "dpsum.audit", "dpsum.binary",
           "dpsum.bounds", "dpsum.mechanisms", "dpsum.session"]

#: Data arguments: their values are private.
DATA = {"X", "value", "bits", "values", "data", "block", "S"}


class DataTouched(Exception):
    """Raised by a trap array when a computation reads it."""


class Trap(np.ndarray):
    """A float64 array whose values cannot be read: every ufunc or array
    function on it raises :class:`DataTouched` (shape and dtype stay readable)."""

    def __array_ufunc__(self, *args: Any, **kwargs: Any) -> Any:
        raise DataTouched

    def __array_function__(self, *args: Any, **kwargs: Any) -> Any:
        raise DataTouched

    def __iter__(self) -> Any:
        raise DataTouched

    def __getitem__(self, key: Any) -> Any:
        raise DataTouched

    def tolist(self) -> Any:
        raise DataTouched

    def __float__(self) -> float:
        raise DataTouched


def trap(like: Any, keep: bool = False) -> Trap:
    """A trap with the shape and dtype of the valid data ``like`` (with
    ``keep``, its values too: ids, whose number of distinct values is
    public under replace-one, like the number of rows)."""
    arr = np.asarray(like)
    if keep:
        return np.array(arr).view(Trap)
    fill = SECRET if arr.dtype.kind == "f" else 1
    return np.full(arr.shape, fill, dtype=arr.dtype).view(Trap)


def _valid(name: str) -> Any:
    """A valid value for an argument called ``name`` (None: not in the table)."""
    table: dict[str, Any] = {
        "epsilon": 0.5, "delta": 1e-6, "sensitivity": 1.0, "clip_norm": 2.0,
        "stds": np.array([2.0, 1.0]), "widths": np.array([2.0, 1.0]),
        "X": np.array([[0.5, -0.2], [1.0, 0.3], [-0.7, 0.1]]),
        "value": np.array([1.0, 2.0]), "bits": np.array([1, 0, 1, 1]),
        "n": 4, "d": 2, "k": 2, "beta": 0.05, "clip_probability": 0.01,
        "noise_multiplier": 2.0, "multiplier": 2.0, "multipliers": [2.0, 3.0],
        "sigma": 2.0, "sigma2": 4.0, "scale": 2.0, "p": 0.1, "rho": 0.1, "mu": 0.5,
        "alpha": 2.0, "q": 0.5, "quantile": 0.5, "n_rows": 10, "K": -3,
        "epsilons": [0.5, 0.25], "deltas": [1e-6, 1e-6], "delta_prime": 1e-6,
        "rhos": [0.1, 0.2], "mus": [0.5, 0.5], "weights": [1.0, 0.5],
        "noise_std": np.array([1.0, 2.0]), "keep_probability": 0.75,
        "n_samples": 100, "sampling_rate": 0.01, "target": 10.0,
        "domain": (-10.0, 10.0), "lower": np.array([-10.0, -10.0]),
        "upper": np.array([10.0, 10.0]), "center": np.array([0.0, 0.0]),
        # optional arguments shared by many functions: driven too
        "neighbouring": "replace", "secure": False, "statistic": "sum", "diagnostics": False,
        "session": Make(_session),
    }
    return table.get(name)


def _session() -> Any:
    """A live session with room for any one release of the baselines (the
    binomial mechanism's delta = 0.5 included), replace-one."""
    from dpsum.session import Session
    return Session(epsilon=50.0, delta=0.99, approximate_share=0.9)


def _session_bad_values() -> list[tuple[str, Any]]:
    """Sessions a release must refuse before reading the data: closed, under
    another relation, spent."""
    from dpsum.session import Session
    closed = Session(rho=1.0)
    closed.close()
    return [("closed session", closed),
            ("foreign session (add-remove)", Session(rho=1e3, neighbouring="add-remove")),
            ("spent session", Session(rho=1e-30))]


class Make:
    """A baseline value built afresh for every call (a release, a generator,
    an accumulator: objects a call may consume or that must not be shared)."""

    def __init__(self, build: Any) -> None:
        self.build = build


#: Leave this argument at its default in the baseline (the table's value
#: would conflict with another argument).
OMIT = object()


def _fresh(value: Any) -> Any:
    return value.build() if isinstance(value, Make) else value


_CACHE: dict[str, Any] = {}


def _cached(key: str, build: Any) -> Any:
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


def _gd_release() -> Any:
    """A Gaussian-data release on stds [2, 1] (the table's ``stds``)."""
    X = np.random.default_rng(0).normal(0.0, [2.0, 1.0], size=(40, 2))
    return _cached("gd", lambda: dpsum.gaussian_data_mechanism(
        X, epsilon=1.0, delta=1e-6, stds=[2.0, 1.0], center=0, rng=0))


def _secure_release() -> Any:
    X = np.random.default_rng(0).normal(size=(10, 2))
    return _cached("grid", lambda: dpsum.clipped_gaussian_mechanism(
        X, epsilon=1.0, delta=1e-6, clip_norm=2.0, secure=True, rng=0))


def _pipeline_release() -> Any:
    import warnings
    X = np.random.default_rng(1).normal(size=(400, 2))

    def build() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dpsum.private_mean(X, lower=-5, upper=5, epsilon=1.0, delta=1e-6, rng=0)
    return _cached("pipe", build)


def _instance_fields(obj: Any) -> dict[str, Any]:
    """The constructor arguments that rebuild the record ``obj``."""
    import dataclasses
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


def _noisy_gaussian(x: Any, rng: Any) -> Any:
    """The audits' release callable. ``dataset`` and ``neighbour`` reach it
    untouched (an audit cannot know what a caller's release accepts), so it
    checks its input itself, as a well-behaved caller's release does."""
    from dpsum import _validation as V
    return V.check_real(x, "the release's input (dataset or neighbour)") + rng.normal()


def _record_baselines() -> dict[str, Any]:
    """Each public record class, driven through every field of a real instance."""
    from dpsum import audit, design, privacy
    from dpsum.accuracy import release_error_bound
    from dpsum.binary import randomized_response
    from dpsum.pipeline import adaptive_clip_update
    rel = _gd_release()
    iv = rel.confidence_intervals(0.05)
    return {
        "Release": _instance_fields(rel),
        "PipelineRelease": _instance_fields(_pipeline_release()),
        "BudgetSplit": _instance_fields(_pipeline_release().budget),
        "ConfidenceBall": _instance_fields(rel.confidence_ball(0.05)),
        "Intervals": {"lower": iv[0], "upper": iv[1], "target": iv.target, "level": iv.level,
                      "simultaneous": iv.simultaneous},
        "BinaryRelease": _instance_fields(randomized_response([1, 0, 1, 1], epsilon=1.0, rng=0)),
        "ErrorBound": _instance_fields(release_error_bound(rel, 0.05, stds=[2.0, 1.0], n=40)),
        "ComposedGuarantee": _instance_fields(dpsum.compose(
            [dpsum.gaussian_step("a", 2.0), dpsum.pure_step("b", 0.5)], delta=1e-6)),
        "PrivacyStep": _instance_fields(dpsum.gaussian_step("a", 2.0)),
        "GaussianDataSetup": _instance_fields(design.gaussian_data_setup(
            [2.0, 1.0], epsilon=1.0, delta=1e-6, n=40)),
        "AuditResult": _instance_fields(dpsum.epsilon_lower_bound(
            _noisy_gaussian, 0.0, 1.0, delta=0.0, n_samples=200, rng=0)),
        "AuditSimulation": _instance_fields(audit.simulate_audits(
            _noisy_gaussian, 0.0, 1.0, epsilon=1.0, delta=0.0, n_samples=200, runs=2, rng=0)),
        "ClipUpdate": _instance_fields(adaptive_clip_update(
            np.ones((5, 2)), 1.0, target_quantile=0.5, learning_rate=0.2, count_noise=1.0,
            rng=0)),
        "PrivacyLossDistribution": _instance_fields(
            privacy.subsampled_gaussian_pld(2.0, 0.1, 2).remove),
        "ComposedPLD": _instance_fields(privacy.subsampled_gaussian_pld(2.0, 0.1, 2)),
        "GeneralizedChiSquare": {"weights": np.array([1.0, 2.0]),
                                 "noncentrality": np.array([0.0, 1.0])},
        "SessionBudget": _instance_fields(_charged_session().spent()),
        "BudgetPlan": _instance_fields(_plan_budget()((1.0, 1e-6), 3)),
    }


_PIPELINE_ARGS: dict[str, Any] = {
    "X": np.random.default_rng(4).normal(size=(60, 2)), "lower": -5.0, "upper": 5.0,
    "epsilon": 1.0, "delta": 1e-6, "rho": OMIT, "neighbouring": "replace",
    "budget": {"center": 0.1, "clip": 0.05, "radius": 0.05, "scales": 0.1, "spread": 0.05},
    "scaling": "adaptive", "clip_probability": 0.2, "regularization": 0.1, "rng": 0,
    "secure": False, "diagnostics": True}
_PIPELINE_RHO: dict[str, Any] = {**_PIPELINE_ARGS, "epsilon": OMIT, "delta": OMIT,
                                 "rho": 0.5, "budget": OMIT}


def _baselines() -> dict[str, Any]:
    """Per public name, the baseline arguments beyond (or instead of) the
    table of :func:`_valid` (``OMIT``: leave the argument at its default)."""
    rel = Make(_gd_release)
    pipe = Make(_pipeline_release)
    pmf = (np.array([0.5, 0.3, 0.2]), np.array([0.4, 0.3, 0.3]))
    X = np.random.default_rng(3).normal(size=(6, 2))
    out: dict[str, dict[str, Any]] = {
        "approximate_step": {"name": "a"}, "bounded_range_step": {"name": "a"},
        "gaussian_step": {"name": "a"}, "pure_step": {"name": "a"},
        "subsampled_gaussian_step": {"name": "a"},
        "compose": {"steps": Make(lambda: (dpsum.gaussian_step("a", 2.0),
                                           dpsum.pure_step("b", 0.5))), "epsilon": OMIT},
        "confidence_ball": {"release": rel}, "confidence_intervals": {"release": rel},
        "data_intervals": {"release": rel},
        "release_error_bound": {"release": rel, "n": 40},
        "release_diagnostics": {"release": rel, "X": np.random.default_rng(0).normal(
            0.0, [2.0, 1.0], size=(40, 2))},          # the release's own 40 rows
        "epsilon_lower_bound": {"release": _noisy_gaussian, "dataset": 0.0, "neighbour": 1.0,
                                "delta": 0.0, "n_samples": 200, "alpha": 0.05},
        "simulate_audits": {"release": _noisy_gaussian, "dataset": 0.0, "neighbour": 1.0,
                            "delta": 0.0, "n_samples": 200, "runs": 2, "alpha": 0.05},
        "subsampled_gaussian_delta": {"steps": 3}, "subsampled_gaussian_epsilon": {"steps": 3},
        "subsampled_gaussian_pld": {"steps": 3}, "subsampled_gaussian_rdp_epsilon": {"steps": 3},
        "discrete_gaussian_pmf": {"x": np.array([0, 1, -2])},
        "discrete_laplace_pmf": {"x": np.array([0, 1, -2])},
        "resolve_scaling": {"scaling": "scaled"}, "tilted_scaling": {"kappa": 0.5},
        "clamped_sum": {"half_widths": np.array([1.0, 2.0])},
        "grid_clamped_sum": {"half_widths": np.array([1.0, 2.0]), "unit": np.array([0.5, 0.5]),
                             "K": -1},
        "accumulator_for": {"release": rel, "n": OMIT},
        "grid_gaussian_noise": {"S": np.array([0, 3]), "K": 0},
        "grid_noise_law": {"release": Make(_secure_release)},
        "norm_noise_law": {"s": np.array([1.0, 2.0])},
        "pipeline_intervals": {"release": pipe, "simultaneous": False},
        "pipeline_noise_law": {"release": pipe}, "pipeline_radius": {"release": pipe},
        "require_gaussian_noise": {"release": rel}, "sidak": {"m": 3},
        "adaptive_clip_update": {"clip_radius": 1.0, "target_quantile": 0.5,
                                 "learning_rate": 0.2, "count_noise": 1.0},
        "calibrated_clip_radius": {"norm_quantile": 1.0, "scales": np.array([1.0, 2.0]),
                                   "scaling": np.array([1.0, 0.5])},
        "exponential_quantile": {"values": np.array([[0.1], [0.5], [0.9]]), "lower": 0.0,
                                 "upper": 1.0},
        "private_scales": {"min_scale": 0.01, "max_scale": 100.0},
        "robust_scaling": {"scales": np.array([1.0, 2.0])},
        "clipped_noise_error": {"scaling": np.array([1.0, 0.5])},
        "clipping_loss_moment": {"scaling": np.array([1.0, 0.5])},
        "add_remove_pair": {"record": np.array([1.0, 2.0])},
        "replace_one_pair": {"record": np.array([1.0, 2.0])},
        "batched_gaussian_release": {"release": _noisy_gaussian},
        "binary_output_laws": {"mechanism": "randomized response", "ones": 2},
        "worst_binary_pair": {"mechanism": "randomized response"},
        "discrete_audit_power": {"first": pmf[0], "second": pmf[1], "alpha": 0.05},
        "discrete_law_release": {"first": pmf[0], "second": pmf[1]},
        "epsilon_from_counts": {"k_first": 50, "k_second": 10, "n_samples": 100,
                                "alpha": 0.05},
        "pair_delta": {"first": pmf[0], "second": pmf[1]},
        "pair_epsilon": {"first": pmf[0], "second": pmf[1]},
        "precision_epsilon_lower_bound": {"first": np.linspace(0, 1, 50),
                                          "second": np.linspace(0.5, 1.5, 50), "bits": 6,
                                          "alpha": 0.05},
        "precision_event": {"outputs": np.linspace(0, 1, 50), "bits": 6},
        "randomized_response_estimate": {"output": 3},
        "binomial_estimate": {"output": 3}, "sample_threshold_estimate": {"output": 3},
        "sample_threshold_privacy_delta": {"threshold": 5.0, "p": 0.05},
        "binary_mse": {"mechanism": "randomized response", "n": 100, "k": 30},
        "bernstein_tail_threshold": {"t": 0.1}, "bernstein_tail_bound": {"x": 3.0},
        "laurent_massart_threshold": {"x": 3.0},
        # baselines the table alone gets wrong
        "binomial_noise_mechanism": {"bits": np.tile([1, 0], 100), "epsilon": 1.0,
                                     "delta": 0.5, "p": OMIT},
        "binomial_noise_probability": {"n": 200, "epsilon": 1.0, "delta": 0.5},
        "sample_and_threshold": {"p": 0.01},
        "mixed_epsilon": {"deltas": [0.0, 0.0]},
        "mixed_gaussian_multiplier": {"deltas": [0.0, 0.0], "epsilon": 1.0,
                                      "epsilons": [0.05, 0.02]},
        "norm_quantile_law": {"lower": 0.1, "upper": 10.0},
        "private_norm_quantile": {"lower": 0.1, "upper": 10.0},
        "isotropic_noise_error": {"noise_std": 1.0},
        "plan_d": {"target": 1e4, "n": 1000},
        "audit_power": {"alpha": 0.05}, "clopper_pearson_lower": {"alpha": 0.05},
        "clopper_pearson_upper": {"alpha": 0.05},
        "two_point_rejection_probability": {"alpha": 0.05},
        "bernstein_clip_radius": {"stds": np.ones(200), "clip_probability": 0.1},
        "bernstein_error_clip_radius_squared": {"stds": np.ones(200)},
        "bernstein_error_bound": {"stds": np.ones(200)},
        # the pipeline: every argument, once with (epsilon, delta), once with rho
        "private_mean": [dict(_PIPELINE_ARGS), dict(_PIPELINE_RHO)],
        "private_sum": [dict(_PIPELINE_ARGS), dict(_PIPELINE_RHO)],
        # sessions: an (epsilon, delta) budget with a basic share, and a rho budget
        "Session": [{"rho": OMIT, "approximate_share": 0.25},
                    {"epsilon": OMIT, "delta": OMIT, "rho": 0.5}],
        "BoundedRangeEvent": {"count": 2}, "SubsampledGaussianEvent": {"steps": 3},
        "ZCDPEvent": {"rho": 0.1},
        "plan_budget": [{"budget": (1.0, 1e-6), "releases": 3},
                        {"budget": Make(_session), "releases": [1.0, 2.0]}],
        "charge": {"event": Make(_pure_event), "mechanism": "laplace_mechanism"},
        "as_session": {"name": "session"},
    }
    out.update(_record_baselines())
    return out


#: Arguments whose name is a data name elsewhere but that are public here.
NOT_DATA = {"precision_epsilon_lower_bound": {"bits"}, "precision_event": {"bits"},
            # a record's privacy_unit is the public description of the unit bound
            "Release": {"privacy_unit"}, "PipelineRelease": {"privacy_unit"}}


#: Public names deliberately not driven, each with its reason. Constants
#: (numbers, frozensets) take no argument and are counted apart.
NOT_DRIVEN: dict[str, str] = {
    # pure enums: no constructor a user calls; every argument that takes one
    # goes through its ``parse`` (naming the argument), driven there
    "Neighbouring": "pure enum (parsed by every neighbouring argument)",
    "Scaling": "pure enum (parsed by every scaling argument)",
    "Mechanism": "pure enum (parsed by Release's mechanism field)",
    "Calibration": "pure enum (parsed by Release's calibration field)",
    "BinaryMechanism": "pure enum (parsed by every mechanism argument of dpsum.binary)",
    "PublicInputWarning": "a warning category, raised by the library, never called",
    "Accumulator": "abstract base: built by the three *_accumulator functions (driven); "
                   "its update, merge and release are driven as methods",
}


_ACC_X = np.array([[0.5, -0.2], [1.0, 0.3], [-0.7, 0.1]])


def _parent() -> Any:
    return _cached("acc", lambda: R.clipped_gaussian_accumulator(
        2, epsilon=1.0, delta=1e-6, clip_norm=2.0))


def _method(name: str, build: Any, method: str, baseline: dict[str, Any]) -> tuple[str, Any,
                                                                                  dict]:
    """A public method as a callable the battery drives: each call builds its
    object afresh with ``build`` (a release may run once per plan), then
    calls ``method`` with the driven arguments."""
    sig = inspect.signature(getattr(build(), method))

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(build(), method)(*args, **kwargs)
    call.__signature__ = sig          # type: ignore[attr-defined]
    call.__name__ = name
    return name, call, baseline


def _pure_event() -> Any:
    from dpsum.session import PureEvent
    return PureEvent(0.1)


def _plan_budget() -> Any:
    from dpsum.session import plan_budget
    return plan_budget


def _charged_session() -> Any:
    s = _session()
    s.charge(_pure_event(), mechanism="laplace_mechanism")
    return s


def methods() -> list[tuple[str, Any, dict]]:
    """The public methods that take arguments: the accumulator's (the issue's
    double counting and repeated release) and the records' and the
    generalized chi-square's."""
    from dpsum.distributions import GeneralizedChiSquare
    law = GeneralizedChiSquare([1.0, 2.0], [0.0, 1.0])
    fresh_acc = lambda: R.clipped_gaussian_accumulator(  # noqa: E731
        2, epsilon=1.0, delta=1e-6, clip_norm=2.0).update(_ACC_X)
    out = [
        _method("Accumulator.update", _parent, "update", {"block": _ACC_X}),
        _method("Accumulator.merge", lambda: _parent().update(_ACC_X), "merge",
                {"other": Make(lambda: _parent().update(_ACC_X[:1]))}),
        _method("Accumulator.release", fresh_acc, "release", {"rng": 0}),
        _method("Session.charge", _session, "charge",
                {"event": Make(_pure_event), "mechanism": "laplace_mechanism",
                 "parameters": {"epsilon": 0.1}, "neighbouring": "replace"}),
        _method("Session.check", _session, "check", {"event": Make(_pure_event)}),
        _method("Session.labelled", _session, "labelled", {"label": "mean"}),
        _method("Session.declare", _session, "declare",
                {"plan": Make(lambda: _plan_budget()((1.0, 1e-6), 3))}),
        _method("Session.composed", _charged_session, "composed", {"delta": 1e-6}),
        _method("Release.summary", _gd_release, "summary", {"beta": 0.05, "rows": 5}),
        _method("Release.to_dict", _gd_release, "to_dict", {"beta": 0.05}),
        _method("PipelineRelease.summary", _pipeline_release, "summary",
                {"beta": 0.05, "rows": 5}),
        _method("PipelineRelease.to_dict", _pipeline_release, "to_dict", {"beta": 0.05}),
    ]
    for m, arg, v in [("logsf", "x", 3.0), ("logcdf", "x", 3.0), ("sf", "x", 3.0),
                      ("cdf", "x", 3.0), ("pdf", "x", 3.0), ("isf", "p", 0.05),
                      ("ppf", "p", 0.05), ("saddlepoint_isf", "p", 0.05)]:
        out.append(_method(f"GeneralizedChiSquare.{m}", lambda: law, m, {arg: v}))
    out.append(_method("GeneralizedChiSquare.rvs", lambda: law, "rvs",
                       {"size": 3, "rng": 0}))
    return out


def public_names() -> list[tuple[str, Any]]:
    """Every name in ``__all__`` of ``dpsum`` and of each subpackage, once."""
    seen: dict[int, tuple[str, Any]] = {}
    for mod_name in MODULES:
        mod = importlib.import_module(mod_name)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            key = id(obj) if callable(obj) else id((mod_name, name))
            if key not in seen:
                seen[key] = (f"{mod_name}.{name}", obj)
    return sorted(seen.values(), key=lambda t: t[0])


def _functions() -> list[tuple[str, Any]]:
    """The callables to drive: every public function and class not in NOT_DRIVEN."""
    return [(q, obj) for q, obj in public_names()
            if callable(obj) and q.rsplit(".", 1)[1] not in NOT_DRIVEN]


def bad_values() -> list[tuple[str, Any]]:
    return [
        ("str", SECRET_TEXT), ("bytes", SECRET_TEXT.encode()), ("None", None),
        ("bool", True), ("complex", 1 + 2j), ("object", object()),
        ("object array", np.array([object(), object()])),
        ("masked array", np.ma.array([1.0, SECRET], mask=[0, 1])),
        ("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf), ("0", 0.0),
        ("negative", -1.0), ("subnormal", 5e-324), ("huge", 1e308), ("2**70", 2**70),
        ("empty", np.array([])), ("ragged", [[1.0], [1.0, 2.0]]),
        ("wrong shape", np.ones((3, 3, 3))), ("non-integer", 2.5),
    ]


def element_values(baseline: Any) -> list[tuple[str, Any]]:
    """Bad values inside a numeric array baseline: one element replaced, or
    every element extreme (none for a scalar or a non-numeric baseline)."""
    if isinstance(baseline, (Make, str, bytes, bool)) or baseline is None:
        return []
    try:
        arr = np.array(baseline, dtype=np.float64)
    except (TypeError, ValueError):
        return []
    if arr.ndim == 0 or arr.size == 0 or np.asarray(baseline).dtype.kind not in "iuf":
        return []
    out = []
    for label, v in (("element nan", math.nan), ("element inf", math.inf), ("element 0", 0.0),
                     ("element negative", -1.0), ("element subnormal", 5e-324),
                     ("element huge", 1e308)):
        a = arr.copy()
        a.flat[0] = v
        out.append((label, a))
    out += [("all huge", np.full(arr.shape, 1e308)), ("all subnormal", np.full(arr.shape, 5e-324))]
    return out


#: Scalar bad values an argument can never take (when its baseline is a number).
NEVER_VALID = {"str", "bytes", "complex", "object", "object array", "masked array", "nan",
               "element nan"}


def _never_valid(label: str, baseline: Any, default: Any) -> bool:
    """Whether accepting the bad value ``label`` is silent for an argument with
    this baseline and default."""
    if isinstance(baseline, Make) or callable(baseline) or isinstance(baseline, (str, bytes)):
        return False
    numeric = isinstance(baseline, (int, float, np.integer, np.floating, np.ndarray, list,
                                    tuple)) and not isinstance(baseline, bool)
    if label in NEVER_VALID:
        return numeric
    if label == "non-integer":
        return isinstance(baseline, (int, np.integer)) and not isinstance(baseline, bool)
    if label == "None":
        # a default other than None (a required argument may take None when
        # it means "absent", as a multiplier or a record's optional field)
        return default is not None and default is not inspect.Parameter.empty and numeric
    return False


#: Arguments for which an infinite value is valid and an infinite result
#: correct: an interval's end may be unbounded, and a float release's
#: estimate saturates to +-inf where its clipped sum overflows (the
#: accumulator's rule, tests/test_battery.py).
ALLOW_INFINITE = {"Intervals": {"lower", "upper"}, "Release": {"estimate"},
                  "PipelineRelease": {"estimate"}}


#: Arguments named like counts that take real values: a noisy count is a
#: post-processed real number (``n`` of the pipeline's rules).
REAL_VALUED = {"default_budget": {"n"}, "default_clip_probability": {"n"},
               # the Bernstein bounds are closed forms in a real n >= 1 (curves in n)
               "bernstein_error_bound": {"n"}, "bernstein_error_clip_radius_squared": {"n"},
               "bernstein_error_condition_holds": {"n"}}


def _odd(result: Any, depth: int = 0) -> bool:
    """A 0-d object array where a number belongs (anywhere in ``result``)."""
    if isinstance(result, np.ndarray):
        return result.ndim == 0 and result.dtype == object
    if depth < 2 and isinstance(result, (tuple, list)):
        return any(_odd(r, depth + 1) for r in result[:50])
    return False


def _numbers(result: Any, depth: int = 0) -> list[float]:
    """Every float reachable in ``result`` (arrays, tuples, dataclass fields)."""
    if depth > 3 or result is None or isinstance(result, (str, bytes, bool)):
        return []
    if isinstance(result, (int, float, np.integer, np.floating)):
        return [float(result)]
    if isinstance(result, np.ndarray):
        if result.dtype.kind in "fc":
            return [float(v) for v in np.abs(result).ravel()]
        return []
    if isinstance(result, (tuple, list)):
        return [v for item in result[:50] for v in _numbers(item, depth + 1)]
    if hasattr(result, "__dataclass_fields__"):
        return [v for f in result.__dataclass_fields__
                for v in _numbers(getattr(result, f, None), depth + 1)]
    return []


#: Log-probabilities: -inf is the exact value at an impossible point
#: (log P(X <= 0) for a positive quadratic form, log P(X > inf)).
LOG_PROBABILITY = {"method GeneralizedChiSquare.logsf", "method GeneralizedChiSquare.logcdf"}


def _classify(exc: BaseException | None, result: Any, param: str, qual: str = "") -> str:
    if exc is None:
        ok = (lambda v: math.isfinite(v) or v == -math.inf) if qual in LOG_PROBABILITY \
            else math.isfinite
        values = _numbers(result) if qual not in LOG_PROBABILITY else \
            [float(v) for v in np.ravel(np.asarray(result, dtype=float))]
        if _odd(result):
            return "silent"
        return "correct result" if all(ok(v) for v in values) else "non-finite result"
    if isinstance(exc, DataTouched):
        return "data read first"
    if not isinstance(exc, (ValueError, TypeError)):
        return "other exception"
    text = str(exc)
    if "271828" in text:
        return "data echoed"
    aliases = {param, "X" if param in DATA else param}
    if param in ("dataset", "neighbour"):     # the audits pass them to the release callable
        aliases.add("release")
    if param in ("stds", "widths", "center", "scaling"):
        aliases.add(param.rstrip("s"))
    if param == "domain":
        aliases.add("domain")
    return "clear error" if any(a in text for a in aliases) else "unnamed error"


def run_bad_values(limit: int | None = None) -> tuple[Counter, list[tuple[str, str, str, str]],
                                                      Counter]:
    """Drive every function; returns (outcome counts, failures, coverage)."""
    counts: Counter = Counter()
    coverage: Counter = Counter()
    failures: list[tuple[str, str, str, str]] = []
    baselines = _baselines()
    jobs = []
    for qual, func in _functions()[:limit]:
        own_all = baselines.get(qual.rsplit(".", 1)[1], {})
        for own in (own_all if isinstance(own_all, list) else [own_all]):
            jobs.append((qual, func, own))
    if limit is None:
        jobs += [(f"method {name}", call, own) for name, call, own in methods()]
    done: set[str] = set()
    for qual, func, own in jobs:
        sig = inspect.signature(func)
        kwargs: dict[str, Any] = {}
        ok = True
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.name in own:           # the function's own baseline (None included)
                if own[p.name] is not OMIT:
                    kwargs[p.name] = own[p.name]
                continue
            v = _valid(p.name)
            if v is None and p.default is inspect.Parameter.empty:
                ok = False
                break
            if v is not None:
                kwargs[p.name] = v
        if not ok:
            coverage["not driven (an argument outside the table)"] += 1
            failures.append((qual, "-", "-", "not driven: an argument outside the table"))
            continue
        if "rng" in sig.parameters and "rng" not in own:
            kwargs["rng"] = 0
        try:
            _call(func, {k: _fresh(v) for k, v in kwargs.items()})
        except Exception as e:
            coverage["not driven (baseline refused)"] += 1
            failures.append((qual, "-", "-", f"not driven: baseline refused: "
                                             f"{type(e).__name__} {str(e)[:80]}"))
            continue
        if qual not in done:
            coverage["driven"] += 1
            done.add(qual)
        for param in [k for k in kwargs if k != "rng"] + (["rng"] if "rng" in kwargs else []):
            default = sig.parameters[param].default if param in sig.parameters else None
            for label, bad in bad_values() + ([("float seed", 1.5), ("negative seed", -1)]
                                              if param == "rng" else []) + (
                    _session_bad_values() if param == "session" else []) \
                    + element_values(kwargs[param]):
                args = {k: _fresh(v) for k, v in kwargs.items()}
                args[param] = bad
                for data in (DATA - NOT_DATA.get(qual.rsplit(".", 1)[1], set())) & set(args):
                    if data != param:
                        args[data] = trap(args[data], keep=data in ("privacy_unit", "by"))
                exc, result = _attempt(func, args)
                if isinstance(exc, DataTouched):
                    # no error before the data was read: the value was accepted,
                    # or refused only after reading the data (a failure)
                    args = {k: _fresh(v) for k, v in kwargs.items()}
                    args[param] = bad
                    exc, result = _attempt(func, args)
                    if exc is not None and isinstance(exc, (ValueError, TypeError)) \
                            and param in str(exc) and param not in DATA:
                        exc = DataTouched(str(exc))
                outcome = _classify(exc, result, param, qual)
                if outcome == "non-finite result" and "inf" in label \
                        and param in ALLOW_INFINITE.get(qual.rsplit(".", 1)[1], set()):
                    outcome = "correct result"
                if exc is None and _never_valid(label, kwargs[param], default) and not (
                        label == "non-integer"
                        and param in REAL_VALUED.get(qual.rsplit(".", 1)[1], set())):
                    outcome = "silent"
                counts[outcome] += 1
                if outcome not in ("clear error", "correct result"):
                    failures.append((qual, param, label,
                                     f"{outcome}: {type(exc).__name__ if exc else ''} "
                                     f"{str(exc)[:100] if exc else ''}"))
    return counts, failures, coverage


def _baseline_kwargs(func: Any, own: dict[str, Any]) -> dict[str, Any] | None:
    """The baseline call of ``func`` (as :func:`run_bad_values` builds it), or
    None when an argument is outside the table."""
    kwargs: dict[str, Any] = {}
    for p in inspect.signature(func).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in own:
            if own[p.name] is not OMIT:
                kwargs[p.name] = own[p.name]
            continue
        v = _valid(p.name)
        if v is None and p.default is inspect.Parameter.empty:
            return None
        if v is not None:
            kwargs[p.name] = v
    if "rng" in inspect.signature(func).parameters and "rng" not in own:
        kwargs["rng"] = 0
    return kwargs


def run_empty_neighbours() -> tuple[Counter, list[tuple[str, str]]]:
    """Under add-remove the empty dataset and a one-row dataset are
    neighbours: every public function with a data argument and a
    ``neighbouring`` argument is called on both (its baseline's first row,
    and no rows), under add-remove. Outcomes: ``both released``, ``both
    refused`` (the same error: a public argument), or ``one neighbour only``
    (an exception that depends on the data: a failure)."""
    counts: Counter = Counter()
    failures: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    baselines = _baselines()
    for qual, func in _functions():
        sig = inspect.signature(func)
        # rows of data ("value" is a precomputed statistic, not rows)
        # (ids and keys beside the rows are cut with them)
        data = [p for p in sig.parameters if p in DATA - {"value", "S", "privacy_unit", "by"}]
        if "neighbouring" not in sig.parameters or len(data) != 1:
            continue
        own_all = baselines.get(qual.rsplit(".", 1)[1], {})
        for own in (own_all if isinstance(own_all, list) else [own_all]):
            kwargs = _baseline_kwargs(func, own)
            if kwargs is None:
                continue
            kwargs["neighbouring"] = "add-remove"
            if "session" in kwargs:       # the baseline's session is replace-one's
                kwargs["session"] = None
            base = np.asarray(_fresh(kwargs[data[0]]))
            outcomes = []
            for rows in (base[:1], base[:0]):
                args = {k: _fresh(v) for k, v in kwargs.items()}
                args[data[0]] = rows
                for beside in ("privacy_unit", "by"):
                    if isinstance(args.get(beside), np.ndarray):
                        args[beside] = args[beside][:len(rows)]
                exc, _ = _attempt(func, args)
                outcomes.append(None if exc is None else (type(exc), str(exc)))
            if outcomes[0] is None and outcomes[1] is None:
                counts["both released"] += 1
            elif outcomes[0] == outcomes[1]:
                counts["both refused"] += 1
                refused.append((qual, str(outcomes[0])[:120]))
            else:
                counts["one neighbour only"] += 1
                failures.append((qual, str(outcomes[1] or outcomes[0])[:120]))
    REFUSED_BOTH[:] = refused
    return counts, failures


#: The last :func:`run_empty_neighbours`' calls refused on both neighbours
#: (function, error), for the report.
REFUSED_BOTH: list[tuple[str, str]] = []


def _attempt(func: Any, args: dict[str, Any]) -> tuple[BaseException | None, Any]:
    try:
        return None, _call(func, args)
    except KeyboardInterrupt:
        raise
    except BaseException as e:       # noqa: BLE001 - classified by the caller
        return e, None


def _call(func: Any, kwargs: dict[str, Any]) -> Any:
    sig = inspect.signature(func)
    pos = [kwargs[p.name] for p in sig.parameters.values()
           if p.kind is p.POSITIONAL_ONLY and p.name in kwargs]
    kw = {k: v for k, v in kwargs.items()
          if sig.parameters[k].kind is not inspect.Parameter.POSITIONAL_ONLY}
    with np.errstate(all="ignore"):
        return func(*pos, **kw)


# ------------------------------------------------------------------ part 2
def _exact_norm2(v: Any) -> Fraction:
    return sum((Fraction(int(x)) if isinstance(x, int) else Fraction(float(x))) ** 2
               for x in np.ravel(v))


def _q(x: Any) -> Fraction:
    return Fraction(x) if isinstance(x, (int, Fraction)) else Fraction(float(x))


def _diff(a: Any, b: Any) -> list[Fraction]:
    return [_q(x) - _q(y) for x, y in zip(np.ravel(a), np.ravel(b))]


MECHANISMS = ("gaussian data", "clipping baseline", "elliptical")
#: The mechanisms with an add-remove form (the Elliptical Gaussian mechanism is replace-one).
ADD_REMOVE_MECHANISMS = ("gaussian data", "clipping baseline")
PATHS = ("float", "accumulator", "dask", "secure")
RELATIONS = ("replace", "add-remove")


def _empty(mechanism: str, d: int, scale: float, n: int | None, secure: bool, stds: np.ndarray,
           widths: np.ndarray, relation: str = "replace") -> Any:
    kw = dict(epsilon=1.0, delta=1e-6, secure=secure)
    if relation == "replace":
        kw["n"] = n
    if mechanism == "gaussian data":
        # under add-remove a nonzero centre: every added row brings b ⊙ c too
        center = np.zeros(d) if relation == "replace" else stds * 3.0
        return R.gaussian_data_accumulator(stds, center=center, clip_probability=0.05,
                                           neighbouring=relation, **kw)
    if mechanism == "clipping baseline":
        return R.clipped_gaussian_accumulator(d, clip_norm=scale, neighbouring=relation, **kw)
    if relation != "replace":
        raise ValueError("the Elliptical Gaussian mechanism is replace-one only")
    return R.elliptical_gaussian_accumulator(-widths / 2, widths / 2, **kw)


def _fold(acc: Any, data: np.ndarray, path: str) -> Any:
    n, d = data.shape
    if path == "accumulator":
        cut = max(1, n // 2)
        return acc.update(data[:cut]).merge(acc.update(data[cut:]))
    if path == "dask":
        import dask.array as da
        return dpdask.accumulate(da.from_array(data, chunks=(max(1, n // 3), d)), acc,
                                 split_every=2)
    return acc.update(data)


def neighbour_ratio(mechanism: str, path: str, X: np.ndarray, row: np.ndarray, scale: float,
                    stds: np.ndarray, widths: np.ndarray, relation: str = "replace") -> float:
    """Movement of the pre-noise statistic between neighbours over the declared
    sensitivity, in exact arithmetic: ``X`` and ``X`` with row 0 replaced by
    ``row`` (replace-one), or (add-remove) the larger movement of ``X`` against
    ``X`` with ``row`` added in front (every later row changes block) and of
    ``X`` against ``X`` with row 0 removed."""
    n, d = X.shape
    if relation == "replace":
        Y = X.copy()
        Y[0] = row
        pairs = [(X, Y)]
    else:
        pairs = [(X, np.vstack([row, X])), (X, X[1:])]
    secure = path == "secure"
    worst = 0.0
    for first, second in pairs:
        stats, sens = [], []
        for data in (first, second):
            acc = _empty(mechanism, d, scale, data.shape[0], secure, stds, widths, relation)
            folded = _fold(acc, data, path)
            stats.append(folded.sum_before_noise())
            rel = folded.release(rng=0)
            sens.append(rel.sensitivity)
        if relation != "replace" and sens[0] != sens[1]:
            return math.inf           # the sensitivity would depend on the private n
        worst = max(worst, _ratio(mechanism, secure, _diff(stats[0], stats[1]), sens, rel,
                                  widths))
    return worst


def _ratio(mechanism: str, secure: bool, delta: list[Fraction], sens: list[float], t: Any,
           widths: np.ndarray) -> float:
    if mechanism == "elliptical":
        # the statistic in the scaled space: T_j b_j / w_j (grid: units of 2^K u_j)
        if secure:
            moved = sum(v * v for v in delta)
            bound = Fraction(min(sens)) / Fraction(2.0) ** t.grid_exponent
            bound = bound / Fraction(float(np.linalg.norm(t.scaling)))   # units per ||b|| = 1
            return float(moved / (bound * bound)) ** 0.5 if moved else 0.0
        weights = [Fraction(float(b)) / Fraction(float(w)) for b, w in zip(t.scaling, widths)]
        moved = sum((v * w) ** 2 for v, w in zip(delta, weights))
        bound = Fraction(min(sens))
    elif secure:
        moved = sum(v * v for v in delta)            # grid units
        bound = Fraction(min(sens)) / Fraction(2.0) ** t.grid_exponent
    else:
        moved = sum(v * v for v in delta)            # the scaled space
        bound = Fraction(min(sens))
    return math.sqrt(float(moved / (bound * bound))) if moved else 0.0


def extreme_case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float,
                                                    np.ndarray, np.ndarray]:
    """Rows and parameters at extreme scales, with an adversarial replaced row."""
    d = int(rng.integers(1, 4))
    n = int(rng.integers(2, 7))
    scale = float(10.0 ** rng.uniform(-290, 290))
    col = 10.0 ** rng.uniform(-5, 5, size=d)           # mixed huge and tiny columns
    X = rng.normal(0, 1, size=(n, d)) * scale * col * 10 ** rng.uniform(-2, 2)
    row = -np.sign(X[0] + (X[0] == 0)) * scale * col * 10 ** rng.uniform(-1, 3)
    stds = scale * col
    widths = 2 * scale * col
    return X, row, scale, stds, widths


def run_neighbours(cases: int = 12, seed: int = 26
                   ) -> dict[tuple[str, str, str], tuple[float, int]]:
    """Worst ratio and count of cases per (relation, mechanism, path)."""
    rng = np.random.default_rng(seed)
    out: dict[tuple[str, str, str], tuple[float, int]] = {}
    for _ in range(cases):
        X, row, scale, stds, widths = extreme_case(rng)
        for relation in RELATIONS:
            mechanisms = MECHANISMS if relation == "replace" else ADD_REMOVE_MECHANISMS
            for mech in mechanisms:
                for path in PATHS:
                    try:
                        r = neighbour_ratio(mech, path, X, row, scale, stds, widths, relation)
                    except ValueError as e:     # parameters refused up front (named argument)
                        r = -1.0
                        assert any(a in str(e) for a in (
                            "widths", "clip_norm", "stds", "scaling", "sensitivity", "epsilon",
                            "center")), str(e)
                    worst, count = out.get((relation, mech, path), (0.0, 0))
                    out[(relation, mech, path)] = (max(worst, r), count + (r >= 0))
    return out


# ------------------------------------------------- people and groups (dpsum.tables)
# Appended: the subpackage's public names, their baselines and the record's
# methods. ``privacy_unit`` and ``by`` hold private ids and keys: data.
MODULES.append("dpsum.tables")
DATA.update({"privacy_unit", "by"})

_TABLE_X = np.random.default_rng(5).normal(size=(12, 2))
_TABLE_UNITS = np.array([3, 3, 3, 5, 5, 8, 8, 8, 8, 9, 11, 11])
_TABLE_KEYS = np.array([0, 1, 0, 0, 2, 1, 1, 0, 2, 1, 0, 0])
_TABLE_ARGS: dict[str, Any] = {
    "X": _TABLE_X, "privacy_unit": _TABLE_UNITS, "by": _TABLE_KEYS, "columns": OMIT,
    "clip_norm": 2.0, "max_rows": 2, "max_groups": 2, "groups": [0, 1, 2, 7],
    "statistic": "mean", "per_unit": "mean", "epsilon": 1.0, "delta": 1e-6,
    "neighbouring": "replace", "count_share": 0.3, "truncation_share": 0.05, "rng": 0}


def _group_release() -> Any:
    from dpsum.tables import private_group_sums
    args = {k: v for k, v in _TABLE_ARGS.items() if v is not OMIT}
    return _cached("groups", lambda: private_group_sums(**args))


def _tables_baselines() -> dict[str, Any]:
    from dpsum.tables import ContributionBounds
    return {
        "private_group_sums": [
            dict(_TABLE_ARGS),
            {**_TABLE_ARGS, "groups": None, "neighbouring": "add-remove", "statistic": "sum",
             "per_unit": "sum", "count_share": OMIT, "truncation_share": 0.0,
             "session": OMIT},         # the session is driven by the replace-one baseline
        ],
        "bound_contributions": {
            "X": _TABLE_X, "privacy_unit": _TABLE_UNITS, "by": _TABLE_KEYS, "columns": OMIT,
            "groups": [0, 1], "key": bytes(range(16)),
            "bounds": Make(lambda: ContributionBounds(max_rows=2, max_groups=1))},
        "ContributionBounds": {"max_rows": 2, "max_groups": 2, "per_unit": "mean"},
        "GroupRelease": _instance_fields(_group_release()),
    }


_baselines_before_tables = _baselines
_methods_before_tables = methods


def _baselines() -> dict[str, Any]:  # noqa: F811 - extended for dpsum.tables
    out = _baselines_before_tables()
    out.update(_tables_baselines())
    return out


def methods() -> list[tuple[str, Any, dict]]:  # noqa: F811 - extended for dpsum.tables
    return _methods_before_tables() + [
        _method("GroupRelease.intervals", _group_release, "intervals", {"level": 0.9}),
        _method("GroupRelease.to_pandas", _group_release, "to_pandas", {"level": 0.9}),
    ]



# ------------------------------------- privacy units on the single-table releases
# Appended: ``privacy_unit=``, ``max_rows=`` and ``per_unit=`` of the vector
# mechanisms, of private_mean/private_sum and of the counts of bits, each driven from a baseline
# that uses them (the ids beside the rows of X: private data, trapped).
_UNIT_IDS = np.array([4, 9, 4])                 # beside _valid("X"), three rows
_PIPELINE_UNITS = {**_PIPELINE_ARGS, "X": np.random.default_rng(6).normal(size=(180, 2)),
                   "privacy_unit": np.repeat(np.arange(60), 3), "max_rows": 2,
                   "per_unit": "mean"}


def _units_baselines(before: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name in ("elliptical_gaussian_mechanism", "gaussian_data_mechanism",
                 "clipped_gaussian_mechanism", "shaped_laplace_mechanism"):
        own = before.get(name, {})
        own_list = own if isinstance(own, list) else [own]
        out[name] = own_list + [{**own_list[0], "privacy_unit": _UNIT_IDS, "max_rows": 2,
                                 "per_unit": "mean"}]
    for name in ("private_mean", "private_sum"):
        out[name] = list(before[name]) + [dict(_PIPELINE_UNITS)]
    # the counts of bits: one bit per unit ("any" or a keyed rounding of the mean)
    out["binomial_noise_mechanism"] = [before["binomial_noise_mechanism"], {
        **before["binomial_noise_mechanism"], "bits": np.tile([1, 0], 200),
        "privacy_unit": np.repeat(np.arange(200), 2), "max_rows": 2, "per_unit": "any"}]
    out["sample_and_threshold"] = [before["sample_and_threshold"], {
        **before["sample_and_threshold"], "privacy_unit": np.array([4, 9, 4, 7]),
        "max_rows": 2, "per_unit": "mean"}]
    return out


_baselines_before_units = _baselines


def _baselines() -> dict[str, Any]:  # noqa: F811 - extended for privacy units
    out = _baselines_before_units()
    out.update(_units_baselines(out))
    return out


# ------------------------------------------------ the data boundary (dpsum.data)
# Appended: ``as_data`` is where X enters every release; it is driven with the
# bad values like any public function (X is data: trapped while other
# arguments are driven; ``name`` only names X in the messages).
MODULES.append("dpsum.data")
NOT_DRIVEN["Dataset"] = ("the boundary's validated record: built by as_data (driven), which "
                         "checks X; the record trusts what as_data hands it")

_baselines_before_data = _baselines


def _baselines() -> dict[str, Any]:  # noqa: F811 - extended for dpsum.data
    out = _baselines_before_data()
    out["as_data"] = {"X": np.array([[0.5, -0.2], [1.0, 0.3], [-0.7, 0.1]])}
    return out


_call_before_data = _call


def _call(func: Any, kwargs: dict[str, Any]) -> Any:  # noqa: F811 - extended for dpsum.data
    """As before; ``as_data`` is followed by the finiteness check every caller
    makes after its own parameter checks (:meth:`dpsum.data.Dataset.require_finite`,
    a read of the values, kept out of ``as_data`` so that no parameter check
    comes after a read)."""
    from dpsum.data import as_data
    result = _call_before_data(func, kwargs)
    if func is as_data:
        result.require_finite(kwargs.get("name", "X"))
    return result
