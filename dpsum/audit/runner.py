"""Running a privacy audit on a release function (the chapter
:ref:`Checking privacy empirically <ch-auditing>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike

from dpsum import _validation as V
from dpsum._validation import RandomLike
from dpsum.audit._checks import (
    _check_alpha,
    _check_delta_audit,
    _check_laws,
    _cp_lower,
    _cp_upper,
    _epsilon_bound,
)
from dpsum.audit.statistics import N_TESTS

__all__ = [
    "AuditResult",
    "epsilon_lower_bound",
    "AuditSimulation",
    "simulate_audits",
    "discrete_law_release",
    "BATCHED_SAMPLERS",
    "refused_attributes",
    "batched_gaussian_release",
]


# thresholds the pilot tries per test (its choice affects power, not validity)
_MAX_CANDIDATES = 400


@dataclass(frozen=True)
class AuditResult(V.Record):
    """The outcome of :func:`epsilon_lower_bound`.

    Attributes
    ----------
    epsilon_lower_bound : float
        The lower bound; it exceeds the true epsilon of the mechanism (at the
        given delta) with probability at most ``alpha``. 0 means no evidence.
    tail : str
        The test that achieved it: ``"upper"`` (event ``<w, y> > threshold``,
        ``dataset`` is the first dataset) or ``"lower"`` (event
        ``<w, y> < threshold``, ``neighbour`` is the first dataset).
    threshold : float
        The rejection threshold of that test.
    direction : numpy.ndarray
        The unit projection direction ``w`` (flattened output space).
    counts : tuple of int
        How many of the ``n_samples`` main-run releases fell in the winning
        test's event, on ``dataset`` and on ``neighbour``, in that order.
    p_lower, q_upper : float
        The Clopper-Pearson bounds of the winning test (first and second
        dataset of the test).
    test_bounds : tuple of float
        The bound of each test, ``(upper, lower)``.
    n_samples, n_pilot : int
        Releases per dataset in the main and the pilot run.
    alpha, delta : float
        Total error probability and the delta of the claim being audited.

    Examples
    --------
    >>> rel = lambda x, rng: x + rng.normal()
    >>> res = epsilon_lower_bound(rel, 0.0, 1.0, delta=0.0, n_samples=2000, rng=0)
    >>> res.tail in ("upper", "lower"), res.n_samples, res.counts[0] >= 0
    (True, 2000, True)
    """

    epsilon_lower_bound: float
    tail: str
    threshold: float
    direction: np.ndarray
    counts: tuple[int, int]
    p_lower: float
    q_upper: float
    test_bounds: tuple[float, float]
    n_samples: int
    n_pilot: int
    alpha: float
    delta: float


def _as_output(value: Any) -> np.ndarray:
    """A release's output as a float array: a :class:`Release` gives its estimate."""
    est = getattr(value, "estimate", value)
    arr = np.asarray(est)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or arr.dtype == np.bool_):
        raise TypeError(f"release must return a numeric array, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def _sample(release: Any, dataset: Any, m: int, gen: Any, batched: bool, shape: Any) -> np.ndarray:
    """``m`` releases on ``dataset`` as an ``(m, k)`` float array."""
    if batched:
        out = _as_output(release(dataset, gen, size=m))
        if out.ndim == 0 or out.shape[0] != m:
            raise ValueError(
                f"a batched release must return an array whose first axis has length "
                f"size = {m}, got shape {out.shape}")
        out = out.reshape(m, -1)
    else:
        first = _as_output(release(dataset, gen))
        out = np.empty((m, first.size))
        out[0] = first.ravel()
        for i in range(1, m):
            y = _as_output(release(dataset, gen))
            if y.size != first.size:
                raise ValueError("release returned outputs of different sizes")
            out[i] = y.ravel()
    if out.shape[1] == 0:
        raise ValueError("release returned an empty output: there is nothing to audit")
    if shape is not None and out.shape[1] != shape:
        raise ValueError(
            f"release returned outputs of size {out.shape[1]} on one dataset and "
            f"{shape} on the other")
    if not np.all(np.isfinite(out)):
        raise ValueError("release returned NaN or infinite values")
    return out


def _pilot_direction(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean difference scaled by pooled per-coordinate variance, unit norm.

    For Gaussian noise with a diagonal covariance this is the direction of
    the likelihood-ratio test (Fisher's discriminant with a diagonal
    covariance). A coordinate that never varies but differs between the
    datasets separates them perfectly; the direction is then along such
    coordinates alone.
    """
    diff = a.mean(axis=0) - b.mean(axis=0)
    var = 0.5 * (a.var(axis=0) + b.var(axis=0))
    exact = (var == 0) & (diff != 0)
    if np.any(exact):
        w = np.where(exact, np.sign(diff), 0.0)
    else:
        w = np.divide(diff, var, out=np.zeros_like(diff), where=var > 0)
    norm = np.linalg.norm(w)
    if not np.isfinite(norm) or norm == 0:
        w = np.zeros_like(diff)
        w[0] = 1.0
        return w
    return w / norm


def _best_threshold(first: np.ndarray, second: np.ndarray, n: int, level: float,
                    delta: float, upper: bool) -> float:
    """The pilot threshold whose event ``> t`` (upper) or ``< t`` promises the
    largest bound when the main run has ``n`` releases per dataset.

    The anticipated counts are the pilot frequencies, with half a count added
    to each side so that a tail the pilot never reached is not taken to be
    empty, scaled to ``n``. Only power depends on this choice: the main run's
    counts are independent of it.
    """
    m1, m2 = first.size, second.size
    s1, s2 = np.sort(first), np.sort(second)
    cand = np.unique(np.concatenate([first, second]))
    if cand.size > _MAX_CANDIDATES:
        # keep every extreme value and thin out the bulk: ranks spaced
        # geometrically from the tail the event looks at
        ranks = np.unique(np.geomspace(1, cand.size, _MAX_CANDIDATES).astype(np.int64))
        cand = cand[cand.size - ranks] if upper else cand[ranks - 1]
    if upper:
        c1 = m1 - np.searchsorted(s1, cand, side="right")
        c2 = m2 - np.searchsorted(s2, cand, side="right")
    else:
        c1 = np.searchsorted(s1, cand, side="left")
        c2 = np.searchsorted(s2, cand, side="left")
    k1 = n * (c1 + 0.5) / (m1 + 1)
    k2 = n * (c2 + 0.5) / (m2 + 1)
    p_lo = _cp_lower(k1, n, level)
    q_hi = _cp_upper(k2, n, level)
    num = p_lo - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(num > 0, np.log(num / q_hi), -np.inf)
    if not np.any(np.isfinite(score)):
        # no threshold promises evidence: take the one with the most excess mass
        score = num - q_hi
    return float(cand[int(np.argmax(score))])


def epsilon_lower_bound(release: Callable[..., Any], dataset: Any, neighbour: Any, *,
                        delta: float, n_samples: int, rng: RandomLike = None,
                        alpha: float = 1e-3, n_pilot: int | None = None,
                        direction: ArrayLike | None = None,
                        batched: bool = False) -> AuditResult:
    """Audit a mechanism: a lower bound on its epsilon from releases on two neighbours.

    The procedure (:prf:ref:`audit-alg`):

    1. **Pilot run.** ``n_pilot`` releases on each dataset choose a unit
       direction ``w`` (the difference of the pilot means divided
       coordinate-wise by the pooled pilot variance, unless ``direction`` is
       given) and two thresholds: ``t_up`` for the event ``<w, y> > t_up``,
       which should be likelier on ``dataset``, and ``t_lo`` for
       ``<w, y> < t_lo``, likelier on ``neighbour``. Each threshold maximises
       the bound the main run would give if the pilot frequencies were exact.
    2. **Main run.** ``n_samples`` fresh releases on each dataset. For the
       upper test, ``k_D`` and ``k_D'`` releases fall in the event; with the
       one-sided Clopper-Pearson bounds (Clopper and Pearson 1934)
       ``p_lo <= Pr[M(D) in S]`` and ``q_hi >= Pr[M(D') in S]`` the test
       gives ``max(0, ln((p_lo - delta) / q_hi))``. The lower test is the
       same with the roles of the datasets exchanged, which is the other
       half of the definition of differential privacy.
    3. The result is the larger of the two.

    **Why it is valid.** The direction and thresholds depend on the pilot
    only, so given the pilot the main-run counts are binomial with fixed
    event probabilities. Each of the four Clopper-Pearson bounds fails with
    probability at most ``alpha / 4`` (a Bonferroni split over the two
    tests and their two bounds), so with probability at least ``1 - alpha``
    all four hold simultaneously. On that event, if ``M`` is
    (epsilon, delta)-DP then ``p_lo - delta <= p - delta <= e^epsilon q
    <= e^epsilon q_hi`` for both tests, so the result is at most epsilon.
    Hence ``Pr[result > epsilon] <= alpha`` for every epsilon the mechanism
    truly satisfies at this delta, whatever the datasets, the pilot, or the
    number of samples. The guard cases are built in: a zero count gives a
    positive ``q_hi = 1 - (alpha/4)^(1/n)``, and ``p_lo <= delta`` gives 0.

    **What it cannot show.** The result is only a lower bound: a mechanism
    whose result is below its claim has not been shown private. Only
    half-space events of one projection of the output are tested, on the
    datasets given (choose a worst-case pair: see
    :func:`dpsum.audit.replace_one_pair` and friends), and outputs are read as
    numbers, so floating-point attacks on the noise (Mironov 2012) and timing
    side channels are not examined.

    Parameters
    ----------
    release : callable
        ``release(dataset, rng)`` returns one output: an array of any fixed
        shape, a scalar, or a :class:`~dpsum.release.Release` (whose
        ``estimate`` is used). With ``batched=True`` it is called as
        ``release(dataset, rng, size=m)`` and must return ``m`` independent
        outputs stacked along the first axis.
    dataset, neighbour : object
        The two neighbouring datasets, passed to ``release`` unchanged.
    delta : float
        The delta of the claim being audited, in [0, 1).
    n_samples : int
        Releases per dataset in the main run (>= 10).
    rng : numpy.random.Generator, int or None
        Passed to every call of ``release``.
    alpha : float
        Probability that the bound exceeds the true epsilon, in (0, 1).
    n_pilot : int, optional
        Releases per dataset in the pilot run; default
        ``max(200, n_samples // 5)``.
    direction : array_like, optional
        A fixed projection direction (flattened output space); skips the
        pilot's direction estimate but not its choice of thresholds.
    batched : bool
        Whether ``release`` accepts ``size`` (see above).

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> from dpsum.mechanisms import gaussian_mechanism
    >>> rel = lambda v, rng: gaussian_mechanism(v, epsilon=1.0, delta=1e-3, sensitivity=1.0, rng=rng)
    >>> res = epsilon_lower_bound(rel, 0.0, 1.0, delta=1e-3, n_samples=5000, rng=0)
    >>> res.epsilon_lower_bound <= 1.0  # a correct mechanism: no evidence above its claim
    True
    """
    V.check_callable(release, "release", "release(dataset, rng)")
    d = _check_delta_audit(delta)
    n = V.check_integer(n_samples, "n_samples", 10)
    a = _check_alpha(alpha)
    m = max(200, n // 5) if n_pilot is None else V.check_integer(n_pilot, "n_pilot", 10)
    batched = V.check_bool(batched, "batched")
    w = None
    if direction is not None:
        w = V.check_vector(direction, "direction")
        norm = np.linalg.norm(w)
        if norm == 0:
            raise ValueError("direction must not be the zero vector")
        w = w / norm
    gen = V.check_rng(rng)
    level = a / (2 * N_TESTS)

    # 1. pilot
    a0 = _sample(release, dataset, m, gen, batched, None if w is None else w.size)
    b0 = _sample(release, neighbour, m, gen, batched, a0.shape[1])
    if w is None:
        w = _pilot_direction(a0, b0)
    a0p, b0p = a0 @ w, b0 @ w
    t_up = _best_threshold(a0p, b0p, n, level, d, upper=True)
    t_lo = _best_threshold(b0p, a0p, n, level, d, upper=False)
    del a0, b0

    # 2. main run
    a1 = _sample(release, dataset, n, gen, batched, w.size) @ w
    b1 = _sample(release, neighbour, n, gen, batched, w.size) @ w
    up = (int(np.count_nonzero(a1 > t_up)), int(np.count_nonzero(b1 > t_up)))
    lo = (int(np.count_nonzero(b1 < t_lo)), int(np.count_nonzero(a1 < t_lo)))

    # 3. bounds
    results = []
    for first, second in (up, lo):
        p_lo = float(_cp_lower(first, n, level))
        q_hi = float(_cp_upper(second, n, level))
        results.append((float(_epsilon_bound(p_lo, q_hi, d)), p_lo, q_hi))
    best = 0 if results[0][0] >= results[1][0] else 1
    eps_lb, p_lo, q_hi = results[best]
    return AuditResult(
        epsilon_lower_bound=eps_lb,
        tail="upper" if best == 0 else "lower",
        threshold=t_up if best == 0 else t_lo,
        direction=w,
        counts=up if best == 0 else (lo[1], lo[0]),
        p_lower=p_lo,
        q_upper=q_hi,
        test_bounds=(results[0][0], results[1][0]),
        n_samples=n,
        n_pilot=m,
        alpha=a,
        delta=d,
    )


@dataclass(frozen=True)
class AuditSimulation(V.Record):
    """How often independent audits prove a violation: :func:`simulate_audits`.

    Attributes
    ----------
    bounds : numpy.ndarray
        The epsilon lower bound of every audit, in the order they ran.
    epsilon : float
        The claim tested: an audit *rejects* it when its bound exceeds it.
    n_samples, n_pilot : int
        Releases per dataset in each audit's main run and pilot.
    alpha : float
        The error probability of each audit.
    """

    bounds: np.ndarray
    epsilon: float
    n_samples: int
    n_pilot: int
    alpha: float

    @property
    def runs(self) -> int:
        """Number of audits."""
        return int(self.bounds.size)

    @property
    def rejections(self) -> int:
        """Number of audits whose bound exceeds ``epsilon``."""
        return int(np.count_nonzero(self.bounds > self.epsilon))

    @property
    def rate(self) -> float:
        """The fraction of audits that reject: the estimated power against a
        mechanism that violates ``epsilon``, or the false-alarm rate of one
        that satisfies it."""
        return self.rejections / self.runs

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided Clopper-Pearson interval for the rejection probability,
        with coverage at least ``level``."""
        a = (1.0 - _check_alpha(level)) / 2.0
        return (float(_cp_lower(self.rejections, self.runs, a)),
                float(_cp_upper(self.rejections, self.runs, a)))


def simulate_audits(release: Callable, dataset: Any, neighbour: Any, *, epsilon: float, delta: float,
                    n_samples: int, runs: int, rng: Any=None, alpha: float = 1e-3,
                    n_pilot: int | None = None, direction: Any=None,
                    batched: bool = False) -> AuditSimulation:
    """Run ``runs`` independent audits, pilot included, and count rejections.

    Each audit is :func:`epsilon_lower_bound` exactly as a user would run it
    (its own pilot, its own main run, fresh randomness from ``rng``), so the
    fraction of audits whose bound exceeds ``epsilon`` estimates the power of
    the procedure as run against a mechanism that violates ``epsilon``, or its
    false-alarm rate on one that satisfies it. :func:`audit_power` gives the
    power of one test at a fixed threshold (an oracle that knows the best
    event); the pilot's noisy choice of threshold makes the real power lower,
    and only a simulation measures by how much (:ref:`audit-power`).

    Parameters
    ----------
    release, dataset, neighbour, delta, n_samples, alpha, n_pilot, direction, batched
        As for :func:`epsilon_lower_bound`.
    epsilon : float
        The claim under test (>= 0).
    runs : int
        Number of independent audits (>= 1).
    rng : numpy.random.Generator, int or None
        Source of every audit's randomness.

    Returns
    -------
    AuditSimulation
    """
    eps = float(V.check_positive(epsilon, "epsilon", allow_zero=True, scalar=True))
    r = V.check_integer(runs, "runs")
    gen = V.check_rng(rng)
    results = [epsilon_lower_bound(release, dataset, neighbour, delta=delta, n_samples=n_samples,
                                   rng=gen, alpha=alpha, n_pilot=n_pilot, direction=direction,
                                   batched=batched)
               for _ in range(r)]
    last = results[-1]
    return AuditSimulation(bounds=np.array([res.epsilon_lower_bound for res in results]),
                           epsilon=eps, n_samples=last.n_samples, n_pilot=last.n_pilot,
                           alpha=last.alpha)


def discrete_law_release(first: Any, second: Any) -> Callable:
    """A batched release that samples two discrete output laws exactly.

    ``first`` and ``second`` are probability vectors over the outputs
    ``0, 1, 2, ...`` (for example from :func:`~dpsum.audit.binary_output_laws`). The
    returned ``release(dataset, rng, size)`` draws ``size`` outputs from
    ``first`` when ``dataset`` is 1 and from ``second`` when it is 0; pass it
    to :func:`epsilon_lower_bound` or :func:`simulate_audits` with the pair
    ``(1, 0)`` and ``batched=True``. The power of an audit depends on a
    mechanism only through these laws, so this is how the book measures the
    power of audits of the binary mechanisms, whose real code draws one
    release per call.
    """
    P, Q = _check_laws(first, second)
    cdfs = {1: np.cumsum(P), 0: np.cumsum(Q)}

    def release(dataset: Any, rng: Any, size: Any) -> Any:
        if dataset not in (0, 1):
            raise ValueError("dataset must be 1 (the first law) or 0 (the second)")
        cdf = cdfs[int(dataset)]
        u = V.check_rng(rng).random(V.check_integer(size, "size")) * cdf[-1]
        return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1).astype(np.float64)

    return release


#: The only sampling methods of ``numpy.random.Generator`` that
#: :func:`batched_gaussian_release` batches: both take a ``size`` and draw
#: independent values, so an extra leading axis turns one call into many.
BATCHED_SAMPLERS = frozenset({"normal", "standard_normal"})


def refused_attributes(generator_class: type = np.random.Generator) -> frozenset[str]:
    """The public attributes of ``generator_class`` that the batched path refuses.

    Every public name of the class except ``BATCHED_SAMPLERS``: the
    other samplers (one draw would be shared by the whole batch), ``spawn``,
    and ``bit_generator`` (from which a release could build a generator that
    is not batched). The set is read from the class, not from a fixed list,
    so a sampler that a future NumPy adds is refused too: the batched path
    fails closed.
    """
    return frozenset(name for name in dir(generator_class)
                     if not name.startswith("_") and name not in BATCHED_SAMPLERS)


class _BatchGenerator(np.random.Generator):
    """A Generator whose Gaussian draws carry an extra leading batch axis.

    It shares the bit generator of its parent, so drawing from it advances
    the parent's stream. ``normal(loc, scale, size)`` returns
    ``normal(loc, scale, (m,) + size)``: the same numbers, in the same order,
    as ``m`` successive calls with ``size``.
    """

    def __init__(self, parent: np.random.Generator, batch: int):
        super().__init__(parent.bit_generator)
        self._batch = batch

    def __repr__(self) -> str:
        return f"<batched Generator, batch size {self._batch}>"

    __str__ = __repr__

    def _shape(self, size: Any) -> Any:
        if size is None:
            return (self._batch,)
        return (self._batch,) + tuple(np.atleast_1d(np.asarray(size, dtype=np.int64)).tolist())

    def normal(self, loc: Any=0.0, scale: Any=1.0, size: Any=None) -> Any:
        if size is None and (np.ndim(loc) or np.ndim(scale)):
            size = np.broadcast_shapes(np.shape(loc), np.shape(scale))
        return super().normal(loc, scale, size=self._shape(size))

    def standard_normal(self, size: Any=None, dtype: Any=np.float64, out: Any=None) -> Any:
        if out is not None:
            raise TypeError("the batched path does not support standard_normal(out=...)")
        return super().standard_normal(size=self._shape(size), dtype=dtype)


def _refusal(name: str) -> TypeError:
    return TypeError(
        f"this release uses Generator.{name}, which batched_gaussian_release cannot "
        "batch (it batches only normal and standard_normal); audit it with batched=False")


def _refuse(name: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> None:
        raise _refusal(name)
    method.__name__ = name
    return method


def _refuse_attribute(name: str) -> Any:
    def getter(self: Any) -> None:
        raise _refusal(name)
    return property(getter)


for _name in refused_attributes():
    _attr = getattr(np.random.Generator, _name)
    setattr(_BatchGenerator, _name, _refuse(_name) if callable(_attr) else _refuse_attribute(_name))


del _name, _attr


def batched_gaussian_release(release: Callable) -> Callable:
    """Run a Gaussian mechanism ``size`` times in one call, with the real code.

    ``release(dataset, rng)`` must draw all its randomness with
    ``rng.normal`` or ``rng.standard_normal`` and combine the noise with the
    rest of its computation elementwise, which holds for every mechanism of
    :mod:`dpsum.mechanisms`. The returned callable
    ``batched(dataset, rng, size)`` calls ``release`` once with a generator
    whose Gaussian draws have an extra leading axis of length ``size``, so
    that broadcasting turns the one call into ``size`` independent releases
    (its outputs, stacked). Pass it to :func:`epsilon_lower_bound` with
    ``batched=True``.

    Because the batched draws consume the random stream in the same order as
    ``size`` successive calls would, the batched outputs are *bitwise equal*
    to the unbatched ones from the same seed; the test suite checks this for
    every mechanism it audits this way. A release that uses any other public
    attribute of the generator (the set :func:`refused_attributes` reads from
    ``numpy.random.Generator``, so it includes samplers added in the future)
    raises ``TypeError``; one that reduces over its noise is caught by the
    shape check (the output's first axis must be ``size``).

    Examples
    --------
    >>> from dpsum.mechanisms import gaussian_mechanism
    >>> rel = lambda v, rng: gaussian_mechanism(v, epsilon=1.0, delta=1e-3, sensitivity=1.0, rng=rng)
    >>> many = batched_gaussian_release(rel)(np.zeros(2), np.random.default_rng(0), 5)
    >>> many.shape
    (5, 2)
    """
    V.check_callable(release, "release", "release(dataset, rng)")

    def batched(dataset: Any, rng: Any, size: Any) -> Any:
        m = V.check_integer(size, "size")
        gen = _BatchGenerator(V.check_rng(rng), m)
        out = _as_output(release(dataset, gen))
        if out.ndim == 0 or out.shape[0] != m:
            raise ValueError(
                "the release did not broadcast over the batch axis of its noise "
                f"(output shape {out.shape} for size {m}); audit it with batched=False")
        return out

    setattr(batched, "__wrapped__", release)
    return batched
