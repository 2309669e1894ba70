"""The dask path (dpsum.dask, issue 17): the same releases through a cluster.

One ``dask.distributed.LocalCluster`` with two worker processes serves the
whole module. Each worker's memory limit is smaller than the dataset of the
first test, a Zarr array on disk, so the release can only succeed if the
rows are never gathered in one place; the test checks that no worker was
restarted (a worker killed for memory comes back with a new process id) and
that each worker's peak memory stayed below its limit.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

import dask  # noqa: E402

from _releases import same_release  # noqa: E402
from dpsum.engines import dask as dpdask  # noqa: E402
from dpsum.release.accumulator import clipped_gaussian_accumulator, gaussian_data_accumulator
from dpsum.audit.runner import batched_gaussian_release, epsilon_lower_bound  # noqa: E402
from dpsum.design.clip_radius import clip_radius
from dpsum.mechanisms import clipped_gaussian_mechanism, elliptical_gaussian_mechanism, gaussian_data_mechanism, release_diagnostics
from dpsum.audit.pairs import clipped_pair, elliptical_pair, gaussian_data_pair  # noqa: E402

U = 2.0 ** -53
EPS, DELTA = 1.0, 1e-6
# bytes, per worker: a worker with dpsum's compiled kernel loaded (numba) holds
# about 210 MB before any data
WORKER_MEMORY = 400 * 2**20
BIG_ROWS, BIG_D, BIG_CHUNK = 560_000, 100, 10_000   # 448 MB of float64


def _peak_rss() -> int:
    """Peak resident memory of the calling process, in bytes.

    Linux: ``VmHWM`` of /proc/self/status, the high-water mark of this process's
    own memory. ``ru_maxrss`` is not used there: it survives fork and exec, so a
    worker spawned by a large pytest process reports the parent's peak.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       memory_limit=WORKER_MEMORY, dashboard_address=None)
    with cluster, distributed.Client(cluster) as c:
        yield c


def _stds(d):
    return np.linspace(0.2, 3.0, d)


@pytest.fixture(scope="module")
def big_zarr(tmp_path_factory):
    """A 448 MB Zarr array on disk, written chunk by chunk by the workers (the
    test process never holds it whole while writing); deleted afterwards."""
    path = tmp_path_factory.mktemp("dask") / "rows.zarr"
    gen = da.random.default_rng(17)
    # (a NumPy scale argument would be broadcast to the full shape inside the graph)
    X = gen.standard_normal(size=(BIG_ROWS, BIG_D), chunks=(BIG_CHUNK, BIG_D)) * _stds(BIG_D)
    far = gen.random((BIG_ROWS, 1), chunks=(BIG_CHUNK, 1)) < 1e-3      # outliers to clip
    X = da.where(far, X * 100.0, X)
    # uncompressed: random floats do not compress (the keyword differs in zarr 2 and 3)
    raw = {"compressors": None} if int(zarr.__version__.split(".")[0]) >= 3 else \
        {"compressor": None}
    X.to_zarr(str(path), overwrite=True, **raw)
    yield str(path)
    shutil.rmtree(path, ignore_errors=True)      # pytest keeps its last temporary dirs


def estimate_tolerance(release, reference, sum_bound, seed, n):
    """As in tests/test_accumulator.py: two releases with the same noise whose
    scaled sums differ by at most ``sum_bound`` differ in coordinate ``j`` by at
    most ``sum_bound / b_j (1 + u)`` plus a few roundings of their magnitudes."""
    b = release.scaling
    w = np.random.default_rng(seed).normal(0.0, 1.0, size=b.size) * reference.noise_std
    v = 0.0 if reference.center is None else n * np.abs(reference.center)
    mags = np.abs(release.estimate) + np.abs(reference.estimate) + 2 * np.abs(w) + 2 * v
    return sum_bound / b * (1 + U) + 4 * U * mags


# ------------------------------------------- a dataset larger than a worker

@pytest.mark.slow
def test_release_of_data_larger_than_a_worker_equals_the_in_memory_release(client, big_zarr):
    Z = da.from_zarr(big_zarr)
    assert Z.nbytes > WORKER_MEMORY and Z.chunks[0][0] == BIG_CHUNK
    pids = client.run(os.getpid)
    stds = _stds(BIG_D)
    center = np.full(BIG_D, 0.01)
    kw = dict(epsilon=EPS, delta=DELTA, stds=stds, center=center)
    out = gaussian_data_mechanism(Z, rng=5, **kw)
    assert client.run(os.getpid) == pids, "a worker was restarted (killed for memory?)"
    peaks = client.run(_peak_rss)
    assert len(peaks) == 2 and all(p < WORKER_MEMORY for p in peaks.values()), peaks

    X = np.asarray(zarr.open_array(big_zarr, mode="r")[:])   # the reference, in this process
    ref = gaussian_data_mechanism(X, rng=5, **kw)
    assert same_release(out, ref)          # exact sums: the same bits
    assert release_diagnostics(X, ref) == release_diagnostics(Z, out)
    assert release_diagnostics(Z, out)["clipped_rows"] > 0
    # the grid path: integer sums, so the cluster's release is the in-memory one, exactly
    secure = gaussian_data_mechanism(Z, rng=5, secure=True, **kw)
    assert client.run(os.getpid) == pids
    assert same_release(secure, gaussian_data_mechanism(X, rng=5, secure=True, **kw))


# --------------------------------------------------- every mechanism, small

def _small(n=3000, d=5, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.normal(0.0, _stds(d), size=(n, d))
    X[gen.random(n) < 0.02] *= 50.0
    return X


CASES = {
    "gaussian-data-replace": (gaussian_data_mechanism,
                              dict(stds=_stds(5), center=np.linspace(-1, 1, 5))),
    "gaussian-data-add-remove": (gaussian_data_mechanism,
                                 dict(stds=_stds(5), center=np.linspace(-1, 1, 5),
                                      clip_probability=1e-3, neighbouring="add-remove")),
    "clipped-replace": (clipped_gaussian_mechanism, dict(clip_norm=2.0)),
    "clipped-add-remove": (clipped_gaussian_mechanism,
                           dict(clip_norm=2.0, neighbouring="add-remove")),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("chunks", [(250, 5), (1000, 2), (3000, 5)])
def test_clipping_mechanisms_release_as_in_memory(client, name, chunks):
    mechanism, kw = CASES[name]
    X = _small()
    ref = mechanism(X, epsilon=EPS, delta=DELTA, rng=9, **kw)
    Xd = da.from_array(X, chunks=chunks)
    out = mechanism(Xd, epsilon=EPS, delta=DELTA, rng=9, **kw)
    assert same_release(out, ref)          # exact sums: the same bits, any chunking


@pytest.mark.parametrize("name", sorted(CASES))
def test_grid_path_releases_exactly_as_in_memory(client, name):
    mechanism, kw = CASES[name]
    X = _small(seed=6)
    ref = mechanism(X, epsilon=EPS, delta=DELTA, rng=9, secure=True, **kw)
    out = mechanism(da.from_array(X, chunks=(333, 2)), epsilon=EPS, delta=DELTA, rng=9,
                    secure=True, **kw)
    assert out.secure and same_release(out, ref)


def test_elliptical_mechanism_releases_as_in_memory(client):
    X = _small(seed=1)
    widths = 2 * _stds(5)
    ref = elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-widths / 2, upper=widths / 2, rng=2)
    Xd = da.from_array(X, chunks=(400, 5))
    out = elliptical_gaussian_mechanism(Xd, epsilon=EPS, delta=DELTA, lower=-widths / 2, upper=widths / 2, rng=2)
    assert same_release(out, ref)
    assert release_diagnostics(Xd, out) == release_diagnostics(X, ref)
    secure = elliptical_gaussian_mechanism(Xd, epsilon=EPS, delta=DELTA, lower=-widths / 2, upper=widths / 2, rng=2,
                                           secure=True)
    assert same_release(secure, elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA,
                                                              lower=-widths / 2, upper=widths / 2, rng=2, secure=True))


def test_the_reduction_is_deterministic_and_ships_only_accumulators(client):
    X = da.from_array(_small(seed=4), chunks=(100, 5))
    acc = gaussian_data_accumulator(_stds(5), epsilon=EPS, delta=DELTA, n=3000, center=0)
    first, second = dpdask.accumulate(X, acc), dpdask.accumulate(X, acc, split_every=2)
    assert first.rows == second.rows == 3000
    # the same partials in another merge tree: exactly the same integers
    assert np.array_equal(first.sum_before_noise(), second.sum_before_noise())
    assert np.array_equal(dpdask.accumulate(X, acc).sum_before_noise(), first.sum_before_noise())
    with pytest.raises(ValueError, match="split_every"):
        dpdask.accumulate(X, acc, split_every=1)


# ------------------------------------------------------------- bad input

@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_values_name_their_chunk(client, bad):
    X = _small(n=100)
    X[57, 3] = bad
    Xd = da.from_array(X, chunks=(10, 5))
    for mechanism, kw in CASES.values():
        with pytest.raises(ValueError, match=r"NaN or infinite values in row chunk 5 "
                                             r"\(rows 50 to 59\)"):
            mechanism(Xd, epsilon=EPS, delta=DELTA, rng=0, **kw)
        with pytest.raises(ValueError, match=r"in row chunk 5 \(rows 50 to 59\)"):
            mechanism(Xd, epsilon=EPS, delta=DELTA, rng=0, secure=True, **kw)
    for secure in (False, True):
        with pytest.raises(ValueError, match=r"in row chunk 5 \(rows 50 to 59\)"):
            elliptical_gaussian_mechanism(Xd, epsilon=EPS, delta=DELTA, lower=-0.5, upper=0.5,
                                          secure=secure)


def test_empty_array_refused_under_replace_one_released_under_add_remove(client):
    E = da.zeros((0, 5), chunks=(10, 5))
    for name, (mechanism, kw) in CASES.items():
        if "replace" in name:
            with pytest.raises(ValueError, match="at least one row under replace-one"):
                mechanism(E, epsilon=EPS, delta=DELTA, rng=0, **kw)
            continue
        r = mechanism(E, epsilon=EPS, delta=DELTA, rng=3, **kw)
        # the sum of no rows is 0; the noise is drawn in the scaled space and
        # divided by the scaling exactly (add-remove: the exact float path)
        z = np.random.default_rng(3).normal(0.0, 1.0, size=5) * (r.sensitivity * r.sigma_opt)
        assert r.estimate.tolist() == [float(Fraction(float(v)) / Fraction(float(b)))
                                       for v, b in zip(z, r.scaling)]
        # as in memory, on both paths
        assert same_release(r, mechanism(np.zeros((0, 5)), epsilon=EPS, delta=DELTA, rng=3, **kw))
        g = mechanism(E, epsilon=EPS, delta=DELTA, rng=3, secure=True, **kw)
        assert same_release(g, mechanism(np.zeros((0, 5)), epsilon=EPS, delta=DELTA, rng=3,
                                         secure=True, **kw))
    with pytest.raises(ValueError, match="at least one row under replace-one"):
        elliptical_gaussian_mechanism(E, epsilon=EPS, delta=DELTA, lower=-0.5, upper=0.5)


def test_unknown_chunk_sizes(client):
    X = da.from_array(_small(n=200), chunks=(50, 5))
    Y = X[X[:, 0] > -100.0]                            # every row kept, sizes unknown
    assert np.isnan(Y.shape[0])
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        clipped_gaussian_mechanism(Y, epsilon=EPS, delta=DELTA, clip_norm=1.0)
    ref = clipped_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, clip_norm=1.0,
                                     neighbouring="add-remove", rng=1)
    out = clipped_gaussian_mechanism(Y, epsilon=EPS, delta=DELTA, clip_norm=1.0,
                                     neighbouring="add-remove", rng=1)
    assert np.array_equal(out.estimate, ref.estimate)     # the same chunks, the same sums


def _explode(block):
    raise AssertionError("a chunk was computed")


def test_arguments_are_checked_before_any_chunk_is_computed():
    # every chunk of X fails when computed: the errors below come first
    X = da.zeros((100, 5), chunks=(10, 5)).map_blocks(_explode, meta=np.empty((0, 0)))
    bad = [
        (dict(epsilon=-1.0, clip_norm=1.0), ValueError, "epsilon"),
        (dict(epsilon=EPS, clip_norm=0.0), ValueError, "clip_norm"),
        (dict(epsilon=EPS, clip_norm=1.0, neighbouring="neither"), ValueError, "neighbouring"),
        (dict(epsilon=EPS, clip_norm=1.0, rng="x"), TypeError, "rng"),
    ]
    for kw, error, match in bad:
        with pytest.raises(error, match=match):
            clipped_gaussian_mechanism(X, delta=DELTA, **kw)
    with pytest.raises(ValueError, match="stds must have length 5"):
        gaussian_data_mechanism(X, epsilon=EPS, delta=DELTA, stds=np.ones(4), center=0)
    with pytest.raises(ValueError, match="lower must be a scalar or have length 5"):
        elliptical_gaussian_mechanism(X, epsilon=EPS, delta=DELTA, lower=-np.ones(4), upper=0.5)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        clipped_gaussian_mechanism(da.ones((4, 2), dtype=bool), epsilon=EPS, delta=DELTA,
                                   clip_norm=1.0)
    with pytest.raises(ValueError, match="X must be 2-dimensional"):
        clipped_gaussian_mechanism(da.ones(4), epsilon=EPS, delta=DELTA, clip_norm=1.0)
    acc = clipped_gaussian_accumulator(3, epsilon=EPS, delta=DELTA, clip_norm=1.0)
    with pytest.raises(ValueError, match="X must have 3 columns"):
        dpdask.accumulate(X, acc)
    with pytest.raises(TypeError, match="accumulator must be an Accumulator"):
        dpdask.accumulate(X, None)


def test_import_dpsum_does_not_import_dask():
    code = ("import sys; sys.modules['dask'] = None; import dpsum, dpsum.mechanisms, "
            "dpsum.engines.dask; r = dpsum.clipped_gaussian_mechanism([[3.0, 4.0]], epsilon=1.0, "
            "delta=1e-6, clip_norm=1.0, rng=0); print(r.sensitivity)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    # 2 C exactly: the sum is exact, no rounding charge
    assert float(out.stdout) == 2.0


# -------------------------------------------------------- the same privacy

AUDIT_N, AUDIT_DELTA, AUDIT_ALPHA = 50_000, 1e-3, 1e-3
STDS4 = np.array([3.0, 1.0, 0.3, 0.1])
CENTER4 = np.array([1.0, -2.0, 0.5, 0.0])


def _dask_release(mechanism, **kw):
    """The dask path as an auditable release: every call chunks the dataset
    one row per chunk and runs the whole reduction on the cluster."""
    def release(X, rng):
        # the audit's batched draws cover the estimate: the diagnostic count is off
        return mechanism(da.from_array(X, chunks=(1, X.shape[1])), epsilon=EPS,
                         delta=AUDIT_DELTA, rng=rng, diagnostics=False, **kw)
    return batched_gaussian_release(release)


AUDITS = {
    "gaussian-data-add-remove": (
        _dask_release(gaussian_data_mechanism, stds=STDS4, center=CENTER4,
                      clip_probability=0.05, neighbouring="add-remove"),
        gaussian_data_pair(STDS4, center=CENTER4, clip_probability=0.05,
                           neighbouring="add-remove", n=3)),
    "clipped-replace": (_dask_release(clipped_gaussian_mechanism, clip_norm=1.5),
                        clipped_pair(4, 1.5, "replace", n=3)),
    "elliptical": (_dask_release(elliptical_gaussian_mechanism, lower=-STDS4, upper=STDS4),
                   elliptical_pair(2 * STDS4, n=3)),
}


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_audit_of_the_dask_path(client, name):
    release, (X, Y) = AUDITS[name]
    res = epsilon_lower_bound(release, X, Y, delta=AUDIT_DELTA, n_samples=AUDIT_N,
                              rng=40 + sorted(AUDITS).index(name), alpha=AUDIT_ALPHA,
                              batched=True)
    assert res.epsilon_lower_bound <= EPS, (name, res)
    # worst-case pairs: a correct mechanism at epsilon = 1 shows about 0.65
    # with 50,000 releases (tests/test_audit.py); below 0.2 means the audit
    # could not see the privacy loss at all
    assert res.epsilon_lower_bound > 0.2 * EPS, (name, res)
