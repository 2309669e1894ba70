"""A privacy budget for a whole analysis: sessions, their ledger, and planning.

A :class:`Session` holds the total budget of an analysis (``epsilon`` and
``delta``, or a zCDP ``rho``) under one neighbouring relation. Every release
function of the package takes ``session=``: the release's privacy event is
checked against what remains and written to the session's **ledger** before
the data's values are read and before its noise is drawn; a release that
does not fit is refused, with a message that says what remains and what it
asked for (the numbers of a budget are public).

**Accounting valid under fully adaptive composition.** An analyst chooses the
next release (and its budget) from the results of the earlier ones. The
composition theorems for a sequence fixed in advance do not cover that; a
*privacy filter* does. A session keeps two:

- a zCDP filter: a release of ``rho_i``-zCDP is allowed while
  ``sum_i rho_i <= rho`` (Feldman and Zrnic 2021, the Renyi filter at every
  order at once); the analysis is then ``rho``-zCDP. An ``(epsilon, delta)``
  budget is converted to the largest ``rho`` whose zCDP guarantee implies it
  (:func:`dpsum.privacy.zcdp_rho`, the conversion of Canonne, Kamath and
  Steinke 2020);
- a basic-composition filter on a declared share of the budget
  (``approximate_share``) for ``(epsilon, delta)`` events with no zCDP
  bound: allowed while ``sum epsilon_i`` and ``sum delta_i`` stay within the
  share (Rogers, Roth, Ullman and Vadhan 2016; Whitehouse, Ramdas, Rogers
  and Wu 2023). The two filters are two interactive mechanisms run side by
  side; their guarantees add by basic (concurrent) composition.

How each event the package produces is accounted (:meth:`Session.supports`
says whether a session can take one):

- :class:`GaussianEvent`: zCDP ``1 / (2 s^2)``, ``s`` the noise multiplier;
- :class:`DiscreteGaussianEvent` (the grid path): zCDP ``1 / (2 s^2)``;
- :class:`PureEvent` (Laplace, shaped Laplace, randomized response): zCDP
  ``epsilon^2 / 2``;
- :class:`BoundedRangeEvent` (the exponential mechanism's quantiles): zCDP
  ``k epsilon^2 / 8``;
- :class:`SubsampledGaussianEvent`: zCDP ``T / (2 s^2)`` (no amplification in
  the filter: declare the steps in a plan, or compose them, for that);
- :class:`ZCDPEvent` (the pipeline of ``private_mean``): zCDP ``rho``;
- :class:`ApproximateEvent` with ``delta > 0`` (the binomial mechanism,
  sample-and-threshold): the basic filter when the session has an
  ``approximate_share``; refused otherwise.

**Planning.** For releases declared in advance the tighter composition of a
fixed sequence applies: :func:`plan_budget` returns the noise multipliers
(and the ``(epsilon, delta)`` to pass to each release) that together spend
the budget exactly under the exact Gaussian composition (Gaussian
differential privacy: it is the privacy-loss-distribution composition of
Gaussians, with no discretisation); :meth:`Session.declare` charges the
plan as one event (it is one mechanism fixed in advance: the releases'
queries may adapt, their noise may not) and each later Gaussian release
whose multiplier is at least an open slot's fills that slot at no further
cost.

References: Feldman and Zrnic, *Individual privacy accounting via a Renyi
filter*, NeurIPS 2021; Rogers, Roth, Ullman and Vadhan, *Privacy odometers
and filters: pay-as-you-go composition*, NeurIPS 2016; Whitehouse, Ramdas,
Rogers and Wu, *Fully-adaptive composition in differential privacy*, ICML
2023; Smith and Thakurta, *Fully adaptive composition for Gaussian
differential privacy*, 2022.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpsum import _validation as V
from dpsum.privacy.calibration import analytic_sigma, gaussian_epsilon
from dpsum.privacy.composition import (
    ComposedGuarantee,
    PrivacyStep,
    approximate_step,
    bounded_range_step,
    compose,
    compose_gaussian_multipliers,
    gaussian_step,
    pure_step,
    subsampled_gaussian_step,
    zcdp_epsilon,
    zcdp_rho,
)
from dpsum.privacy.neighbouring import Neighbouring

try:                                     # POSIX: one session per ledger file
    import fcntl
except ImportError:                      # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ApproximateEvent",
    "BoundedRangeEvent",
    "BudgetPlan",
    "DiscreteGaussianEvent",
    "GaussianEvent",
    "LedgerError",
    "PrivacyEvent",
    "PureEvent",
    "Session",
    "SessionBudget",
    "SubsampledGaussianEvent",
    "ZCDPEvent",
    "plan_budget",
]

FORMAT = "dpsum-ledger/1"
ONE_OFF = "one-off: accounted on its own, in no session"


# ---------------------------------------------------------------------------
# privacy events: small frozen typed records of public parameters


def _positive(value: Any, name: str) -> float:
    return float(V.check_positive(value, name, scalar=True))


@dataclass(frozen=True)
class PrivacyEvent:
    """A release's privacy event: public parameters only (never a data value)."""

    kind: ClassVar[str] = ""

    def zcdp(self) -> Fraction | None:
        """The event's zCDP parameter (exact), or None if it has no zCDP bound."""
        return None

    def approximate(self) -> tuple[Fraction, Fraction] | None:
        """The event's ``(epsilon, delta)`` for the basic filter, if it needs it."""
        return None

    def step(self, name: str) -> PrivacyStep | None:
        """The event as a step of :func:`dpsum.privacy.compose` (a fixed sequence)."""
        return None

    def as_dict(self) -> dict:
        out: dict = {"kind": self.kind}
        for f in dataclasses.fields(self):
            out[f.name] = getattr(self, f.name)
        return out


def _inverse_square_half(s: float, count: int = 1) -> Fraction:
    return Fraction(count, 2) / Fraction(s) ** 2


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """A Gaussian release of noise multiplier ``s`` (noise std over L2 sensitivity)."""

    noise_multiplier: float
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier",
                           _positive(self.noise_multiplier, "noise_multiplier"))

    def zcdp(self) -> Fraction:
        return _inverse_square_half(self.noise_multiplier)

    def step(self, name: str) -> PrivacyStep | None:
        return gaussian_step(name, self.noise_multiplier)


@dataclass(frozen=True)
class DiscreteGaussianEvent(GaussianEvent):
    """A discrete Gaussian release (the grid path): ``s`` is the discrete
    Gaussian's scale over the L2 sensitivity in grid units; ``1/(2 s^2)``-zCDP
    (Canonne, Kamath and Steinke 2020)."""

    kind: ClassVar[str] = "discrete gaussian"

    def step(self, name: str) -> PrivacyStep | None:    # not a continuous Gaussian: zCDP only
        return None


@dataclass(frozen=True)
class ZCDPEvent(PrivacyEvent):
    """A ``rho``-zCDP release (the pipeline of :func:`dpsum.pipeline.private_mean`)."""

    rho: float
    kind: ClassVar[str] = "zcdp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _positive(self.rho, "rho"))

    def zcdp(self) -> Fraction:
        return Fraction(self.rho)


@dataclass(frozen=True)
class PureEvent(PrivacyEvent):
    """A pure ``epsilon``-DP release (Laplace, shaped Laplace, randomized
    response): ``epsilon^2 / 2``-zCDP (Bun and Steinke 2016)."""

    epsilon: float
    kind: ClassVar[str] = "pure"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _positive(self.epsilon, "epsilon"))

    def zcdp(self) -> Fraction:
        return Fraction(self.epsilon) ** 2 / 2

    def step(self, name: str) -> PrivacyStep:
        return pure_step(name, self.epsilon)


@dataclass(frozen=True)
class BoundedRangeEvent(PrivacyEvent):
    """``count`` exponential mechanisms, each ``epsilon``-bounded-range:
    ``count epsilon^2 / 8``-zCDP (Cesar and Rogers 2021)."""

    epsilon: float
    count: int = 1
    kind: ClassVar[str] = "bounded range"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _positive(self.epsilon, "epsilon"))
        object.__setattr__(self, "count", V.check_integer(self.count, "count"))

    def zcdp(self) -> Fraction:
        return Fraction(self.count) * Fraction(self.epsilon) ** 2 / 8

    def step(self, name: str) -> PrivacyStep:
        return bounded_range_step(name, self.epsilon, self.count)


@dataclass(frozen=True)
class SubsampledGaussianEvent(PrivacyEvent):
    """``steps`` Poisson-subsampled Gaussian steps (DP-SGD). The filter charges
    them as unsubsampled, ``steps / (2 s^2)``-zCDP: subsampling never
    increases a Renyi divergence (joint quasi-convexity), so this is valid,
    though loose; its amplification is used only by :meth:`Session.composed`."""

    noise_multiplier: float
    sampling_rate: float
    steps: int = 1
    kind: ClassVar[str] = "subsampled gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier",
                           _positive(self.noise_multiplier, "noise_multiplier"))
        q = float(V.check_positive(self.sampling_rate, "sampling_rate", scalar=True))
        if q > 1.0:
            raise ValueError("sampling_rate must lie in (0, 1]")
        object.__setattr__(self, "sampling_rate", q)
        object.__setattr__(self, "steps", V.check_integer(self.steps, "steps"))

    def zcdp(self) -> Fraction:
        return _inverse_square_half(self.noise_multiplier, self.steps)

    def step(self, name: str) -> PrivacyStep:
        return subsampled_gaussian_step(name, self.noise_multiplier, self.sampling_rate,
                                        self.steps)


@dataclass(frozen=True)
class ApproximateEvent(PrivacyEvent):
    """An ``(epsilon, delta)``-DP release with no zCDP bound (the binomial
    mechanism, sample-and-threshold). With ``delta = 0`` it is pure
    (``epsilon^2/2``-zCDP); otherwise only a session's basic filter takes it."""

    epsilon: float
    delta: float
    kind: ClassVar[str] = "approximate"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _positive(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta",
                           float(V.check_delta(self.delta, allow_zero=True, scalar=True)))

    def zcdp(self) -> Fraction | None:
        return Fraction(self.epsilon) ** 2 / 2 if self.delta == 0 else None

    def approximate(self) -> tuple[Fraction, Fraction] | None:
        return None if self.delta == 0 else (Fraction(self.epsilon), Fraction(self.delta))

    def step(self, name: str) -> PrivacyStep:
        return approximate_step(name, self.epsilon, self.delta)


@dataclass(frozen=True)
class _PlanEvent(PrivacyEvent):
    """A declared plan (:meth:`Session.declare`): its Gaussian releases as one
    mechanism, ``(epsilon, delta)``-DP by the exact Gaussian composition (or
    zCDP, when it was planned on the zCDP filter)."""

    plan: str
    multipliers: tuple
    epsilon: float | None
    delta: float | None
    kind: ClassVar[str] = "plan"

    def zcdp(self) -> Fraction | None:
        if self.epsilon is not None:
            return None
        return sum((_inverse_square_half(s) for s in self.multipliers), Fraction(0))

    def approximate(self) -> tuple[Fraction, Fraction] | None:
        if self.epsilon is None or self.delta is None:
            return None
        return Fraction(self.epsilon), Fraction(self.delta)

    def step(self, name: str) -> PrivacyStep | None:
        if self.epsilon is None or self.delta is None:
            return None
        return approximate_step(name, self.epsilon, self.delta)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "plan": self.plan, "multipliers": list(self.multipliers),
                "epsilon": self.epsilon, "delta": self.delta}


_EVENTS: dict[str, type] = {cls.kind: cls for cls in (
    GaussianEvent, DiscreteGaussianEvent, ZCDPEvent, PureEvent, BoundedRangeEvent,
    SubsampledGaussianEvent, ApproximateEvent)}


def _event_from_dict(data: dict) -> PrivacyEvent:
    kind = data.get("kind")
    if kind == "plan":
        return _PlanEvent(str(data["plan"]), tuple(float(s) for s in data["multipliers"]),
                          data["epsilon"], data["delta"])
    cls = _EVENTS.get(kind)          # type: ignore[arg-type]
    if cls is None:
        raise LedgerError(f"unknown privacy event kind {kind!r} in the ledger")
    return cls(**{k: v for k, v in data.items() if k != "kind"})


# ---------------------------------------------------------------------------
# budgets and the ledger


class LedgerError(ValueError):
    """A ledger file that is not a valid, unedited session ledger."""

    def __init__(self, message: str = "the ledger is not a valid session ledger") -> None:
        super().__init__(message)


@dataclass(frozen=True)
class SessionBudget(V.Record):
    """A session's budget, spent or remaining, in the session's own terms.

    Attributes
    ----------
    rho : float
        zCDP (the zCDP filter); ``rho_total`` its total.
    epsilon, delta : float or None
        For a session with an ``(epsilon, delta)`` budget: spent, the
        ``(epsilon, delta)`` the analysis so far satisfies (the zCDP part
        converted at its share of ``delta``, plus the basic filter's sums);
        remaining, what the basic filter has left. None for a ``rho`` session.
    approximate_epsilon, approximate_delta : float
        The basic filter's sums (spent) or what it has left (remaining).
    entries : int
        Ledger entries so far.
    accounting : str
        The accounting that produced the numbers.
    """

    rho: float
    rho_total: float
    epsilon: float | None
    delta: float | None
    approximate_epsilon: float
    approximate_delta: float
    entries: int
    accounting: str


def _num(x: Fraction, spec: str = ".6g") -> str:
    """A public budget number for a message (one too large for a float says so)."""
    try:
        return format(float(x), spec)
    except OverflowError:
        return "more than 1.8e308"


def _canonical(obj: dict) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _link(previous: str, entry: dict) -> str:
    body = {k: v for k, v in entry.items() if k != "hash"}
    return hashlib.sha256((previous + _canonical(body)).encode()).hexdigest()


@dataclass
class _Plan:
    """The open slots of a declared plan: multiplier -> slots left."""

    plan: str
    slots: list


class _State:
    """What sessions sharing one ledger share: the totals, the lock, the file."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rho_spent = Fraction(0)
        self.eps_spent = Fraction(0)
        self.delta_spent = Fraction(0)
        self.entries = 0
        self.head = ""
        self.plans: list[_Plan] = []
        self.memory: list[dict] | None = []
        self.file: Any = None
        self.path: str | None = None
        self.closed = False


class Session:
    """A privacy budget for a whole analysis, with its ledger.

    Parameters
    ----------
    epsilon, delta : float, optional
        The total ``(epsilon, delta)`` budget, ``epsilon > 0``,
        ``0 < delta < 1``; or
    rho : float, optional
        the total zCDP budget (not both).
    neighbouring : {"replace", "add-remove"}
        The relation every release of the session refers to; a release under
        another relation is refused.
    approximate_share : float in [0, 1]
        The share of ``epsilon`` and of ``delta`` kept for the basic filter
        (``(epsilon, delta)`` events with no zCDP bound, and plans): the zCDP
        filter gets ``rho = zcdp_rho((1 - share) epsilon, (1 - share) delta)``.
        0 (default) refuses such events; needs an ``(epsilon, delta)`` budget.
    path : str or os.PathLike, optional
        The ledger file (JSON lines, created; it must not exist: use
        :meth:`resume` to continue one). Without it the ledger is in memory.
    label : str, optional
        The label of this session's entries (see :meth:`labelled`).

    Notes
    -----
    **The ledger.** Every charge appends one entry: the privacy event, the
    label, the mechanism's name and public parameters, the time, and a hash
    chain (each entry holds the SHA-256 of the previous entry's hash and its
    own canonical JSON). With a ``path`` the entry is written, flushed and
    ``os.fsync``-ed before the charge returns, so before any noise is drawn:
    a process killed at any moment leaves a file that accounts at least every
    release it made. Check and append run under one lock: threads sharing a
    session never overspend. The file is locked (``flock``) while a session
    holds it, so two live sessions cannot share it.

    **What the file alone cannot detect.** :meth:`resume` refuses a file
    whose chain does not verify (an edited, reordered, inserted or removed
    entry in the middle, a changed budget in the header). The chain has no
    key: it catches corruption and any edit that does not recompute every
    later hash, not a deliberate rewrite of the whole chain. And a file
    cannot prove that it is complete: a deleted file, or a tail cut after a
    whole entry, looks like a shorter honest ledger. Keep the session's
    :attr:`head` (the last hash, 64 public hex digits) elsewhere and pass it
    to :meth:`resume`: a ledger that does not contain it (cut, or rewritten
    at any entry up to it) is refused. A
    last line cut in the middle (a crash while it was written: its release
    was never drawn) is dropped and reported in ``recovered``.

    Examples
    --------
    >>> s = Session(epsilon=1.0, delta=1e-6)
    >>> tag = s.charge(GaussianEvent(8.0), mechanism="gaussian")
    >>> s.spent().entries, round(s.spent().rho, 6)
    (1, 0.007812)
    """

    def __init__(self, *, epsilon: float | None = None, delta: float | None = None,
                 rho: float | None = None, neighbouring: Neighbouring | str = "replace",
                 approximate_share: float = 0.0, path: Any = None,
                 label: str | None = None) -> None:
        relation = Neighbouring.parse(neighbouring)
        share = float(V.check_positive(approximate_share, "approximate_share",
                                       allow_zero=True, scalar=True))
        if share > 1.0:
            raise ValueError("approximate_share must lie in [0, 1]")
        if rho is not None:
            if epsilon is not None or delta is not None:
                raise ValueError("give the budget as epsilon and delta, or as rho, not both")
            total = _positive(rho, "rho")
            if share > 0:
                raise ValueError("approximate_share needs an (epsilon, delta) budget: a rho "
                                 "budget has no delta to share")
            budget: dict = {"rho": total}
        else:
            if epsilon is None or delta is None:
                raise TypeError("a session needs a budget: epsilon and delta, or rho")
            eps = float(V.check_epsilon(epsilon, scalar=True))
            dlt = float(V.check_delta(delta, scalar=True))
            budget = {"epsilon": eps, "delta": dlt}
        self._label = None if label is None else _label(label)
        header = {"kind": "header", "format": FORMAT, "session": secrets.token_hex(8),
                  "budget": budget, "neighbouring": relation.value,
                  "approximate_share": share, "time": time.time()}
        header["hash"] = _link(FORMAT, header)
        self._setup(header)
        self.recovered: tuple = ()
        st = self._state
        if path is not None:
            fh = _open_exclusive(path)
            fh.write(_canonical(header) + "\n")
            _sync(fh)
            st.file, st.path, st.memory = fh, os.fspath(path), None
        else:
            assert st.memory is not None
            st.memory.append(header)

    # -- construction helpers
    def _setup(self, header: dict) -> None:
        budget = header["budget"]
        self._id = str(header["session"])
        self._relation = Neighbouring.parse(header["neighbouring"])
        share = float(header["approximate_share"])
        self._share = share
        if "rho" in budget:
            self._rho_total = float(budget["rho"])
            self._epsilon = self._delta = None
            self._eps_a = self._delta_a = Fraction(0)
            self._delta_z = None
        else:
            eps, dlt = float(budget["epsilon"]), float(budget["delta"])
            self._epsilon, self._delta = eps, dlt
            self._eps_a, self._delta_a = Fraction(eps) * Fraction(share), \
                Fraction(dlt) * Fraction(share)
            if share < 1.0:
                ez, dz = eps * (1.0 - share), dlt * (1.0 - share)
                # the zCDP part's (epsilon, delta) and the basic part's add up
                # to at most the budget: round the zCDP part down
                ez = math.nextafter(min(ez, float(Fraction(eps) - self._eps_a)), 0.0)
                dz = math.nextafter(min(dz, float(Fraction(dlt) - self._delta_a)), 0.0)
                self._rho_total = zcdp_rho(ez, dz)
                self._delta_z = dz
            else:
                self._rho_total = 0.0
                self._delta_z = None
        self._state = _State()
        self._state.head = str(header["hash"])
        self._header = header

    # -- public properties
    @property
    def id(self) -> str:
        """The session's random identifier (in every ledger entry's tag)."""
        return self._id

    @property
    def neighbouring(self) -> Neighbouring:
        return self._relation

    @property
    def head(self) -> str:
        """The hash of the last ledger entry: keep it to detect a cut tail on :meth:`resume`."""
        return self._state.head

    @property
    def path(self) -> str | None:
        return self._state.path

    @property
    def closed(self) -> bool:
        return self._state.closed

    def labelled(self, label: str) -> Session:
        """The same session (same budget, ledger and lock) whose entries carry ``label``.

        Examples
        --------
        >>> s = Session(rho=1.0)
        >>> _ = s.labelled("mean of income").charge(ZCDPEvent(0.1), mechanism="private_mean")
        >>> s.ledger()[-1]["label"]
        'mean of income'
        """
        view = object.__new__(Session)
        view.__dict__.update(self.__dict__)
        view._label = _label(label)
        return view

    # -- accounting
    def supports(self, event: PrivacyEvent) -> bool:
        """Whether the session can account ``event`` at all (whatever remains)."""
        _check_event(event)
        if event.zcdp() is not None:
            return self._rho_total > 0 or self._fits_plan(event)
        return event.approximate() is not None and self._eps_a > 0

    def _fits_plan(self, event: PrivacyEvent) -> bool:
        return self._slot(event) is not None

    def _slot(self, event: PrivacyEvent) -> tuple[int, int] | None:
        """The open plan slot a Gaussian release fills: the one with the largest
        multiplier at most the release's."""
        if type(event) is not GaussianEvent:
            return None
        best: tuple[int, int] | None = None
        best_s = -1.0
        for i, plan in enumerate(self._state.plans):
            for j, s in enumerate(plan.slots):
                if s is not None and s <= event.noise_multiplier and s > best_s:
                    best, best_s = (i, j), s
        return best

    def _refusal(self, event: PrivacyEvent) -> str | None:
        """Why ``event`` cannot be charged now (None if it fits); public numbers only."""
        st = self._state
        if st.closed:
            return "the session is closed"
        if self._slot(event) is not None:
            return None
        rho = event.zcdp()
        if rho is not None:
            if self._rho_total <= 0:
                return ("the session keeps its whole budget for the basic filter "
                        "(approximate_share = 1): declare a plan for Gaussian releases")
            left = Fraction(self._rho_total) - st.rho_spent
            if rho > left:
                return (f"the release asks for rho = {_num(rho)} (zCDP filter) and "
                        f"rho = {_num(max(left, Fraction(0)))} of {self._rho_total:.6g} "
                        f"remains{self._in_terms()}")
            return None
        approx = event.approximate()
        if approx is None or self._eps_a <= 0:
            return (f"the session cannot account a {event.kind} event with delta > 0: it "
                    "has no zCDP bound, and the session keeps no approximate_share for the "
                    "basic composition filter")
        eps, dlt = approx
        le, ld = self._eps_a - st.eps_spent, self._delta_a - st.delta_spent
        if eps > le or dlt > ld:
            return (f"the release asks for epsilon = {_num(eps)}, delta = "
                    f"{float(dlt):.3g} (basic filter) and epsilon = {float(max(le, Fraction(0))):.6g}, "
                    f"delta = {float(max(ld, Fraction(0))):.3g} remains of the approximate share "
                    f"(epsilon = {float(self._eps_a):.6g}, delta = {float(self._delta_a):.3g})")
        return None

    def _in_terms(self) -> str:
        if self._epsilon is None:
            return ""
        return f" (the session's budget: epsilon = {self._epsilon:g}, delta = {self._delta:g})"

    def _relation_of(self, neighbouring: Any) -> None:
        if neighbouring is None:
            return
        relation = Neighbouring.parse(neighbouring)
        if relation is not self._relation:
            raise ValueError(f"session accounts releases under {self._relation.value} "
                             f"neighbouring, but this release is under {relation.value}: use "
                             "one relation for the whole analysis")

    def check(self, event: PrivacyEvent, *, neighbouring: Any = None) -> None:
        """Raise ``ValueError`` if ``event`` would not fit now (nothing is written).

        Release functions call it before they read the data; :meth:`charge`
        checks again, atomically with the write.
        """
        _check_event(event)
        self._relation_of(neighbouring)
        with self._state.lock:
            why = self._refusal(event)
        if why is not None:
            raise ValueError(f"session refuses the release ({_describe(event)}): {why}; "
                             "nothing was released")

    def charge(self, event: PrivacyEvent, *, mechanism: str, parameters: dict | None = None,
               neighbouring: Any = None) -> str:
        """Check ``event`` against what remains and append its ledger entry.

        The entry is on disk (flushed and fsync-ed) when this returns; call it
        before drawing the release's noise.

        Parameters
        ----------
        event : PrivacyEvent
        mechanism : str
            The release function's name.
        parameters : dict, optional
            Its public parameters (JSON-serialisable; never a data value).
        neighbouring : Neighbouring or str, optional
            The release's relation, which must be the session's.

        Returns
        -------
        str
            The entry's tag, for the release record.

        Raises
        ------
        ValueError
            If the event does not fit: the message says what remains and
            what was asked; nothing is written.
        """
        _check_event(event)
        self._relation_of(neighbouring)
        if not isinstance(mechanism, str):
            raise TypeError(f"mechanism must be a str, got {V.describe(mechanism)}")
        name = mechanism
        if parameters is not None and not isinstance(parameters, dict):
            raise TypeError(f"parameters must be a dict of public parameters or None, got "
                            f"{V.describe(parameters)}")
        params = {} if parameters is None else {str(k): _public(v, str(k))
                                                 for k, v in parameters.items()}
        st = self._state
        with st.lock:
            why = self._refusal(event)
            if why is not None:
                raise ValueError(f"session refuses the release ({_describe(event, name, params)}): "
                                 f"{why}; nothing was released")
            slot = self._slot(event)
            entry: dict = {"kind": "entry", "index": st.entries + 1, "event": event.as_dict(),
                           "label": self._label, "mechanism": name, "parameters": params,
                           "time": time.time(), "prev": st.head}
            if slot is not None:
                entry["plan"] = st.plans[slot[0]].plan
                entry["slot"] = slot[1]
            entry["hash"] = _link(st.head, entry)
            line = _canonical(entry) + "\n"
            if st.file is not None:
                st.file.write(line)
                _sync(st.file)
            else:
                assert st.memory is not None
                st.memory.append(entry)
            self._apply(entry, event)
        label = f" ({self._label})" if self._label else ""
        return f"session {self._id}, entry {entry['index']}{label}"

    def _apply(self, entry: dict, event: PrivacyEvent) -> None:
        """Add an entry's charge to the totals (live, and when a ledger is replayed)."""
        st = self._state
        st.entries = int(entry["index"])
        st.head = str(entry["hash"])
        if "plan" in entry:
            for plan in st.plans:
                if plan.plan == entry["plan"]:
                    j = int(entry["slot"])
                    if not (0 <= j < len(plan.slots)) or plan.slots[j] is None:
                        raise LedgerError("a ledger entry fills a plan slot that is not open")
                    plan.slots[j] = None
                    return
            raise LedgerError("a ledger entry fills a slot of an undeclared plan")
        rho = event.zcdp()
        if rho is not None:
            st.rho_spent += rho
        else:
            approx = event.approximate()
            assert approx is not None
            st.eps_spent += approx[0]
            st.delta_spent += approx[1]
        if isinstance(event, _PlanEvent):
            st.plans.append(_Plan(event.plan, list(event.multipliers)))

    def declare(self, plan: BudgetPlan) -> str:
        """Charge a plan from :func:`plan_budget` as one event and open its slots.

        The plan's Gaussian releases form one mechanism fixed in advance (each
        release's query may depend on earlier results; its noise multiplier
        may not), so its cost is the plan's ``(epsilon, delta)`` under the
        exact Gaussian composition, charged to the basic filter, or its total
        ``rho`` when it was planned on the zCDP filter. Each later Gaussian
        release of the session whose noise multiplier is at least an open
        slot's fills that slot (the one with the largest such multiplier) and
        spends nothing more; its entry names the plan and the slot.
        """
        if not isinstance(plan, BudgetPlan):
            raise TypeError(f"plan must be a BudgetPlan from plan_budget, got "
                            f"{V.describe(plan)}")
        if plan.neighbouring is not None and plan.neighbouring is not self._relation:
            raise ValueError("plan was made for a session under another neighbouring relation")
        event = _PlanEvent(plan.id, tuple(plan.multipliers),
                           None if plan.rho is not None else plan.epsilon,
                           None if plan.rho is not None else plan.delta)
        return self.charge(event, mechanism="plan_budget",
                           parameters={"releases": len(plan.multipliers),
                                       "accounting": plan.accounting})

    # -- reports
    def spent(self) -> SessionBudget:
        """What the ledger has spent, in the session's terms.

        Examples
        --------
        >>> s = Session(epsilon=1.0, delta=1e-6)
        >>> _ = s.charge(PureEvent(0.1), mechanism="laplace_mechanism")
        >>> b = s.spent()
        >>> round(b.rho, 6), round(b.epsilon, 2)   # zCDP converted: more than 0.1
        (0.005, 0.43)
        """
        st = self._state
        with st.lock:
            rho, ea, da, k = st.rho_spent, st.eps_spent, st.delta_spent, st.entries
        return self._budget(rho, ea, da, k)

    def remaining(self) -> SessionBudget:
        """What is left: ``rho`` of the zCDP filter and the basic filter's
        ``(epsilon, delta)``."""
        st = self._state
        with st.lock:
            rho = max(Fraction(self._rho_total) - st.rho_spent, Fraction(0))
            ea = max(self._eps_a - st.eps_spent, Fraction(0))
            da = max(self._delta_a - st.delta_spent, Fraction(0))
            k = st.entries
        return self._budget(rho, ea, da, k)

    def _budget(self, rho: Fraction, ea: Fraction, da: Fraction, k: int) -> SessionBudget:
        """A budget in the session's terms: ``rho``, and with an ``(epsilon,
        delta)`` total the zCDP part converted at its delta plus the basic
        filter's ``(epsilon, delta)``."""
        eps = dlt = None
        if self._epsilon is not None:
            ez, dz = 0.0, 0.0
            if rho > 0 and self._delta_z is not None:
                ez, dz = zcdp_epsilon(float(rho), self._delta_z), self._delta_z
            eps, dlt = ez + float(ea), dz + float(da)
        return SessionBudget(float(rho), self._rho_total, eps, dlt, float(ea), float(da), k,
                             self._accounting())

    def _accounting(self) -> str:
        text = "zCDP filter (Feldman and Zrnic 2021)"
        if self._epsilon is not None:
            text += (", converted to (epsilon, delta) by Canonne, Kamath and Steinke 2020 "
                     f"at delta = {self._delta_z:.3g}" if self._delta_z is not None else "")
        if self._eps_a > 0:
            text += ("; basic composition filter (Rogers, Roth, Ullman and Vadhan 2016) on "
                     f"approximate_share = {self._share:g}")
        return text

    def ledger(self) -> list[dict]:
        """The ledger's entries (the header first), as dicts."""
        st = self._state
        with st.lock:
            if st.memory is not None:
                return [dict(e) for e in st.memory]
            assert st.path is not None
            with open(st.path, encoding="utf-8") as fh:
                return [json.loads(line) for line in fh if line.endswith("\n")]

    def events(self) -> list[tuple[str, PrivacyEvent]]:
        """The ledger's privacy events with their labels (plan slots left out:
        their plan is the event)."""
        out = []
        for e in self.ledger()[1:]:
            if "plan" not in e:
                out.append((e["label"] or e["mechanism"], _event_from_dict(e["event"])))
        return out

    def composed(self, delta: float | None = None) -> ComposedGuarantee:
        """The ledger's events composed as a sequence fixed in advance
        (:func:`dpsum.privacy.compose`: exact Gaussian composition with pure
        and bounded-range steps, or the privacy loss distribution with
        subsampled steps), at ``delta`` (default the session's).

        Tighter than the filter, and valid only if every release's budget was
        chosen before the analysis began; the session refuses by the filter.
        Events known only by their zCDP (discrete Gaussian, the pipeline, a
        zCDP plan) are added up and enter as one ``(epsilon, delta / 2)``
        step, ``epsilon = zcdp_epsilon(rho, delta / 2)``.
        """
        dlt = self._delta if delta is None else V.check_delta(delta, scalar=True)
        if dlt is None:
            raise TypeError("delta is required for a rho session")
        steps = []
        rho_z = Fraction(0)
        for name, ev in self.events():
            step = ev.step(name)
            if step is not None:
                steps.append(step)
            else:
                rho = ev.zcdp()
                assert rho is not None
                rho_z += rho
        if rho_z > 0:
            half = float(dlt) / 2.0
            steps.append(approximate_step("zCDP events", zcdp_epsilon(float(rho_z), half),
                                          half))
        if not steps:
            raise ValueError("the ledger holds no release yet")
        try:
            return compose(steps, delta=float(dlt))
        except ValueError as exc:
            raise ValueError(f"the ledger's events have no joint fixed-sequence composition "
                             f"({exc}); the session's filter still accounts them: spent()"
                             ) from None

    def close(self) -> None:
        """Close the ledger file; every later charge is refused."""
        st = self._state
        with st.lock:
            st.closed = True
            if st.file is not None:
                _unlock(st.file)
                st.file.close()
                st.file = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> tuple:
        raise TypeError("a Session cannot be pickled: two copies would spend one budget "
                        "twice; resume its ledger file in the other process instead")

    def __repr__(self) -> str:
        b = self.spent()
        total = (f"epsilon={self._epsilon:g}, delta={self._delta:g}" if self._epsilon is not None
                 else f"rho={self._rho_total:g}")
        return (f"Session({total}, {self._relation.value}; {b.entries} entries, "
                f"rho spent {b.rho:.4g} of {b.rho_total:.4g})")

    # -- resuming
    @classmethod
    def resume(cls, path: Any, *, head: str | None = None) -> Session:
        """Continue the session whose ledger is the file ``path``.

        Re-reads the file, verifies its hash chain and replays its charges.

        Parameters
        ----------
        path : str or os.PathLike
        head : str, optional
            A hash the ledger must contain (:attr:`head`, kept elsewhere): a
            ledger cut after that entry is refused.

        Raises
        ------
        LedgerError
            An edited, reordered or corrupted ledger (it is never read as a
            smaller spend), or one that does not contain ``head``.
        """
        fh = _open_existing(path)
        try:
            raw = fh.read()
            lines = raw.split("\n")
            tail = lines.pop()            # "" when the file ends with a newline
            recovered: tuple = ()
            if tail:
                # a last line written in part: the process died before the
                # write returned, so before its noise was drawn
                try:
                    json.loads(tail)
                    complete = True
                except ValueError:
                    complete = False
                if complete:
                    lines.append(tail)
                else:
                    fh.seek(len(raw.encode()) - len(tail.encode()))
                    fh.truncate()
                    _sync(fh)
                    recovered = ("a last entry cut while it was written (its release was "
                                 "never drawn) was dropped",)
            if not lines:
                raise LedgerError(f"{os.fspath(path)} is not a session ledger: it is empty")
            try:
                records = [json.loads(line) for line in lines]
            except ValueError:
                raise LedgerError("the ledger has a line that is not JSON: it was edited or "
                                  "corrupted") from None
            header = records[0]
            if not isinstance(header, dict) or header.get("format") != FORMAT or \
                    header.get("kind") != "header":
                raise LedgerError("the ledger's first line is not a dpsum session header")
            if header.get("hash") != _link(FORMAT, header):
                raise LedgerError("the ledger's header does not match its hash: the budget or "
                                  "relation was edited")
            session = object.__new__(cls)
            try:
                session._setup(header)
            except (KeyError, TypeError, ValueError) as exc:
                raise LedgerError(f"the ledger's header is not valid: {exc}") from None
            session._label = None
            session.recovered = recovered
            st = session._state
            seen = {st.head}
            for k, entry in enumerate(records[1:], start=1):
                if not isinstance(entry, dict) or entry.get("kind") != "entry" or \
                        entry.get("index") != k or entry.get("prev") != st.head or \
                        entry.get("hash") != _link(st.head, entry):
                    raise LedgerError(f"ledger entry {k} does not continue the hash chain: the "
                                      "file was edited, reordered or corrupted")
                try:
                    event = _event_from_dict(entry["event"])
                except (KeyError, TypeError, ValueError) as exc:
                    raise LedgerError(f"ledger entry {k} holds no valid event: {exc}") from None
                session._apply(entry, event)
                seen.add(st.head)
            if head is not None and head not in seen:
                raise LedgerError("the ledger does not contain the given head: its tail was "
                                  "cut (or it is another session's ledger)")
            fh.seek(0, os.SEEK_END)
            st.file, st.path, st.memory = fh, os.fspath(path), None
        except BaseException:
            _unlock(fh)
            fh.close()
            raise
        return session


def _describe(event: PrivacyEvent, mechanism: str | None = None,
              parameters: dict | None = None) -> str:
    """A refused release in public terms: its mechanism, parameters and event."""
    def show(v: Any) -> str:
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    ev = ", ".join(f"{k} = {show(v)}" for k, v in event.as_dict().items() if k != "kind")
    text = f"a {event.kind} event" + (f" of {ev}" if ev else "")
    if mechanism is not None:
        args = ", ".join(f"{k} = {show(v)}" for k, v in (parameters or {}).items()
                         if not isinstance(v, list))
        text = f"{mechanism}({args}): {text}"
    return text


def _label(label: Any) -> str:
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, got {V.describe(label)}")
    return label


def _check_event(event: Any) -> None:
    if not isinstance(event, PrivacyEvent):
        raise TypeError(f"event must be a dpsum privacy event, got {V.describe(event)}")


def _public(value: Any, name: str) -> Any:
    """A public parameter as JSON: numbers, strings, None and lists of them."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else str(v)
    if hasattr(value, "value") and isinstance(getattr(value, "value"), str):
        return value.value                 # an enum
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_public(v, name) for v in np.asarray(value, dtype=object).ravel().tolist()]
    raise TypeError(f"parameters[{name!r}] must be a number, a string or a list of them")


def _open_exclusive(path: Any) -> Any:
    try:
        fh = open(os.fspath(path), "x+", encoding="utf-8")
    except FileExistsError:
        raise ValueError("path already exists: a ledger is never overwritten; use "
                         "Session.resume(path) to continue it") from None
    except TypeError:
        raise TypeError(f"path must be a str or os.PathLike, got {V.describe(path)}") from None
    _lock(fh)
    return fh


def _open_existing(path: Any) -> Any:
    try:
        fh = open(os.fspath(path), "r+", encoding="utf-8")
    except FileNotFoundError:
        raise ValueError("path names no ledger file: a deleted ledger cannot be resumed "
                         "(its spend is unknown); start a new session only if the data "
                         "were never used") from None
    except TypeError:
        raise TypeError(f"path must be a str or os.PathLike, got {V.describe(path)}") from None
    _lock(fh)
    return fh


def _lock(fh: Any) -> None:
    if fcntl is None:                      # pragma: no cover
        return
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise ValueError("path is the ledger of a live session (it is locked): two sessions "
                         "on one ledger would spend one budget twice") from None


def _unlock(fh: Any) -> None:
    if fcntl is not None and not fh.closed:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _sync(fh: Any) -> None:
    fh.flush()
    os.fsync(fh.fileno())


# ---------------------------------------------------------------------------
# what release functions call


def as_session(session: Any, name: str = "session") -> Session | None:
    """The ``session=`` argument of a release function: None or a live Session."""
    if session is None:
        return None
    if not isinstance(session, Session):
        raise TypeError(f"{name} must be a dpsum Session or None, got {V.describe(session)}")
    if session.closed:
        raise ValueError(f"{name} is closed: it accepts no more releases")
    return session


def charge(session: Any, event: PrivacyEvent, *, mechanism: str,
           parameters: dict | None = None, neighbouring: Any = None) -> str:
    """Charge a release to ``session`` (its entry written before the noise is
    drawn) and return the record's accounting tag; without a session the
    release is its own one-off session, and the tag says so."""
    sess = as_session(session)
    if sess is None:
        _check_event(event)
        return ONE_OFF
    return sess.charge(event, mechanism=mechanism, parameters=parameters,
                       neighbouring=neighbouring)


# ---------------------------------------------------------------------------
# planning


@dataclass(frozen=True)
class BudgetPlan(V.Record):
    """Noise multipliers for Gaussian releases declared in advance.

    Attributes
    ----------
    multipliers : tuple of float
        Release ``i`` must use a noise multiplier (std over L2 sensitivity) of
        at least ``multipliers[i]``.
    releases : tuple of (float, float)
        The ``(epsilon, delta)`` to pass to release ``i``: the package's
        Gaussian calibration of that pair gives exactly ``multipliers[i]``.
    epsilon, delta : float or None
        What the releases spend together (exact Gaussian composition); None
        for a plan on a session's zCDP filter.
    rho : float or None
        What the releases spend together in zCDP, for a plan on a zCDP filter.
    accounting : str
    id : str
        A random identifier (the plan's ledger entries name it).
    neighbouring : Neighbouring or None
        The planning session's relation.
    """

    multipliers: tuple
    releases: tuple
    epsilon: float | None
    delta: float | None
    rho: float | None
    accounting: str
    id: str
    neighbouring: Neighbouring | None = None

    def __post_init__(self) -> None:
        V.check_record_fields(self)
        if self.neighbouring is not None:
            object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring))


def _weights(releases: Any) -> np.ndarray:
    """The releases' relative weights (largest 1): a count gives equal weights."""
    if not isinstance(releases, (list, tuple, np.ndarray)):
        k = V.check_integer(releases, "releases")
        return np.ones(k)
    w = np.asarray(V.check_positive(releases, "releases"), dtype=float)
    if w.ndim != 1 or w.size == 0:
        raise ValueError("releases must be a count or a 1-d sequence of positive weights")
    if not np.all(np.isfinite(w)) or float(np.min(w)) < 1e-12 * float(np.max(w)):
        raise ValueError("releases must be finite weights within a factor 1e12 of each "
                         "other (a release with a relatively tiny weight gets no budget)")
    # only the ratios matter: scaled by the largest, the sum cannot overflow
    return w / float(np.max(w))


def plan_budget(budget: Session | tuple, releases: int | Sequence[float]) -> BudgetPlan:
    """The noise multipliers of Gaussian releases declared in advance.

    With an ``(epsilon, delta)`` budget the releases together spend at most
    the budget, and at least ``1 - 1e-9`` of it relatively, under the exact
    composition of Gaussian mechanisms (``1/s^2 = sum_i 1/s_i^2``; the
    privacy loss distribution of Gaussians composes with no error):
    ``s = analytic_sigma(epsilon, delta)`` is split by the weights
    (:func:`dpsum.privacy.split_gaussian_multiplier`), and each release gets
    the ``(epsilon_i, delta_i)`` whose calibration gives its multiplier. The
    releases' queries may adapt to earlier results; their multipliers may not.

    Parameters
    ----------
    budget : Session or (epsilon, delta)
        A session (its basic filter's remaining ``(epsilon, delta)`` when it
        has an ``approximate_share``, otherwise its zCDP filter's remaining
        ``rho``, split as ``rho_i = w_i rho``), or a budget pair.
    releases : int or sequence of float
        The number of releases (equal weights), or their positive weights
        (release ``i`` gets the share ``w_i / sum w`` of ``1/s^2``).

    Returns
    -------
    BudgetPlan
        Pass it to :meth:`Session.declare` to account the releases as one.

    Examples
    --------
    >>> p = plan_budget((1.0, 1e-6), 12)
    >>> round(p.multipliers[0], 4)
    14.6347
    """
    w = _weights(releases)
    relation = None
    frac = w / float(w.sum())
    if isinstance(budget, Session):
        relation = budget.neighbouring
        left = budget.remaining()
        if budget._eps_a <= 0:
            if left.rho <= 0:
                raise ValueError("session has no budget left to plan")
            rho = Fraction(left.rho)
            # the zCDP filter: rho_i = w_i rho, s_i = 1 / sqrt(2 rho_i)
            s0 = 1.0 / math.sqrt(2.0 * left.rho)

            def fits(mult: list) -> bool:
                return sum((_inverse_square_half(m) for m in mult), Fraction(0)) <= rho

            mult, pairs = _calibrated_split(s0, frac, 1e-6, fits)
            total = sum((_inverse_square_half(m) for m in mult), Fraction(0))
            return BudgetPlan(tuple(mult), tuple(pairs), None, None, float(total),
                              "zCDP filter: rho split by the weights", secrets.token_hex(8),
                              relation)
        eps, dlt = left.approximate_epsilon, left.approximate_delta
        if eps <= 0 or dlt <= 0:
            raise ValueError("session's approximate share is spent: nothing left to plan")
    else:
        if not isinstance(budget, tuple) or len(budget) != 2:
            raise TypeError(f"budget must be a Session or a pair (epsilon, delta), got "
                            f"{V.describe(budget)}")
        eps = float(V.check_epsilon(budget[0], scalar=True))
        dlt = float(V.check_delta(budget[1], scalar=True))
    s0 = float(analytic_sigma(eps, dlt))     # the one Gaussian the releases compose to

    def fits_exact(mult: list) -> bool:
        return compose_gaussian_multipliers(mult) >= s0

    mult, pairs = _calibrated_split(s0, frac, dlt / w.size, fits_exact)
    return BudgetPlan(tuple(mult), tuple(pairs), eps, dlt, None,
                      "exact Gaussian composition (privacy loss distribution of Gaussians)",
                      secrets.token_hex(8), relation)


def _calibrated_split(s0: float, frac: np.ndarray, delta_i: float, fits: Any
                      ) -> tuple[list, list]:
    """Split the multiplier ``s0`` by ``frac``; give each release the
    ``(epsilon_i, delta_i)`` whose calibration (:func:`analytic_sigma`) is its
    multiplier; raise the split by a hair until ``fits`` the calibrated ones."""
    s = s0
    for attempt in range(200):
        pairs, mult = [], []
        for t in (s / np.sqrt(frac)).tolist():
            e_i = float(gaussian_epsilon(t, delta_i))
            pairs.append((e_i, delta_i))
            mult.append(float(analytic_sigma(e_i, delta_i)))
        if fits(mult):
            return mult, pairs
        s *= 1.0 + 1e-13 * 2 ** min(attempt, 30)
    raise ValueError("releases: the plan's multipliers could not be made to fit")  # pragma: no cover
