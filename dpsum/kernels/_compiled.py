"""The grid kernel compiled with numba: the same integers as the NumPy kernel, in
one pass over memory. Private to dpsum.kernels.

Every row goes through the operations of :func:`dpsum.kernels.grid._grid_rows`
in the same order: ``t_j = fl(fl(x_j - c_j) b_j)``, the squares summed in the
8 lanes of :func:`dpsum.kernels._rows._lane_sum`, the square root, the clip
factor ``min(1, fl(fl(C_n / nu) (1 - mu)))`` with its re-check, and
``rint(fl(t_j fl(f 2^-k)))``. Each is one IEEE operation (numba compiles
without fast-math, so nothing is fused, reassociated or flushed to zero), so
both kernels give each row the same integers, and since the integers are
summed exactly the totals agree bit for bit (tested). Rows whose squared norm
is not finite (NaN or infinite input, or overflow) are flagged and left to
the NumPy kernel's per-row path.

numba is optional (``pip install "dpsum[fast]"``): without it, or with
``DPSUM_KERNEL=numpy`` in the environment, the NumPy kernel runs. The compiled
code releases the GIL and runs on ``DPSUM_THREADS`` threads (default: every
core the process may use), each on its own contiguous tiles of rows. A tile
is worked in sub-tiles that stay in cache between (1) every row's squared
norm, (2) the clip factors of all its rows in one vectorised loop and (3) the
rows rounded and added to the tile's float64 accumulators of integers (exact
below 2^52, so the integers may be added in any order). Two layouts, one
kernel each: from 16 columns on, row by row (:func:`_tile_sums`: a row's 8
lanes are one vector register); below, a transposed sub-tile
(:func:`_tile_sums_narrow`: every step a loop over rows, vectorised across
rows; row by row, a short row would be mostly remainder).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

numba: Any = None                      # imported on first use: import dpsum stays light

#: Upper limit on the re-check iterations (as in dpsum.kernels._rows).
_MAX_RECHECKS = 64
_U = 2.0 ** -53
_ROUNDER = 1.5 * 2.0 ** 52


def available() -> bool:
    """Whether the compiled kernel runs (numba installed and not switched off)."""
    global numba
    if os.environ.get("DPSUM_KERNEL", "") == "numpy":
        return False
    if numba is None:
        try:
            import numba as nb
        except ImportError:            # pragma: no cover - exercised without the extra
            return False
        numba = nb
    return True


#: Values of a sub-tile (256 KiB): they stay in the L2 cache between the pass
#: that sums the squares and the pass that rounds and adds (measured: 32 KiB
#: sub-tiles, in L1, ran 10-15% slower at 100 and 1000 columns).
_SUB_ELEMENTS = 32768


def _deviation(Y: np.ndarray, center: Any, r: int,
               j: int) -> float:  # pragma: no cover - compiled
    """``fl(y_rj - c_j)``, or ``y_rj`` without a centre: the kernels are
    compiled for ``center=None`` too, where this is the value itself (``x - 0``
    is ``x`` exactly), saving a load and a subtraction per value (measured:
    10-15% of the kernel's time at 1000 columns)."""
    if center is None:
        return Y[r, j]
    return Y[r, j] - center[j]


def _row_norms(X: np.ndarray, center: np.ndarray | None, b_n: np.ndarray, s0: int, m: int,
               sq: np.ndarray, tail: np.ndarray) -> None:  # pragma: no cover - compiled
    """Step 1: ``sq[r]``, the squared norm ``sum_j t_j^2`` of row ``s0 + r``
    (``t_j = fl(fl(x_j - c_j) b_j)``) for ``r < m``, in the order of
    :func:`dpsum.kernels._rows._lane_sum`. The 8 lanes are 8 accumulators the
    SLP vectoriser packs into one vector register; ``x - 0`` is ``x`` exactly.
    The last ``d mod 8`` squares go through ``tail`` (8 values, zero from
    ``d mod 8`` on, so the lanes without a term add ``+0``, which changes no
    lane): a branch per term there made the vectoriser split the lanes. The
    loop over rows is here, not in the caller, and indexes a view of the
    sub-tile's rows from 0: an inlined call per row (its arrays' reference
    counts) or a row index not known to be non-negative (its wraparound
    check) each kept this loop about 1.7 times slower."""
    d = X.shape[1]
    full = d - d % 8
    Y = X[s0:s0 + m]
    for r in range(m):
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
        for j in range(0, full, 8):
            v0 = _dev(Y, center, r, j) * b_n[j]
            v1 = _dev(Y, center, r, j + 1) * b_n[j + 1]
            v2 = _dev(Y, center, r, j + 2) * b_n[j + 2]
            v3 = _dev(Y, center, r, j + 3) * b_n[j + 3]
            v4 = _dev(Y, center, r, j + 4) * b_n[j + 4]
            v5 = _dev(Y, center, r, j + 5) * b_n[j + 5]
            v6 = _dev(Y, center, r, j + 6) * b_n[j + 6]
            v7 = _dev(Y, center, r, j + 7) * b_n[j + 7]
            a0 += v0 * v0
            a1 += v1 * v1
            a2 += v2 * v2
            a3 += v3 * v3
            a4 += v4 * v4
            a5 += v5 * v5
            a6 += v6 * v6
            a7 += v7 * v7
        if full < d:
            for j in range(full, d):
                v = _dev(Y, center, r, j) * b_n[j]
                tail[j - full] = v * v
            a0 += tail[0]
            a1 += tail[1]
            a2 += tail[2]
            a3 += tail[3]
            a4 += tail[4]
            a5 += tail[5]
            a6 += tail[6]
            a7 += tail[7]
        sq[r] = ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))


#: Below this many columns the kernel works on transposed sub-tiles (every
#: step a loop over rows); from it on, row by row.
_DIRECT_D = 16


def _clip_factors(sq: np.ndarray, g: np.ndarray, m: int, C_n: float, shrink: float,
                  upper_factor: float, scale: float, hard: np.ndarray,
                  s0: int) -> int:  # pragma: no cover - compiled
    """Step 2 for a sub-tile's ``m`` rows: ``g = f 2^-k`` with the clip factor
    ``f`` and its re-check as in :func:`dpsum.kernels.grid._grid_factors`
    (rows whose squared norm is not finite are flagged in ``hard`` and get
    ``g = 0``); returns the clipped count."""
    count = 0
    bad = 0
    for r in range(m):                       # no loop-carried work: vectorised
        nu = math.sqrt(sq[r])
        f = min(1.0, C_n / nu * shrink)      # nu = 0: f = 1; NaN: f = NaN
        g[r] = f
        bad += (f * (nu * upper_factor) * (1.0 + 2 * _U) > C_n) | (not sq[r] < np.inf)
    if bad:                                  # never for finite rows (tested)
        for r in range(m):
            if not sq[r] < np.inf:           # NaN or inf: the per-row path
                hard[s0 + r] = True
                g[r] = 0.0
                continue
            f = g[r]
            up = math.sqrt(sq[r]) * upper_factor
            for _ in range(_MAX_RECHECKS):
                if not f * up * (1.0 + 2 * _U) > C_n:
                    break
                f = f * (1.0 - 2.0 ** -20)
            if f * up * (1.0 + 2 * _U) > C_n:
                f = 0.0
            g[r] = f
            count += f < 1.0
    else:
        for r in range(m):
            count += g[r] < 1.0
    for r in range(m):
        g[r] = g[r] * scale
    return count


def _round_add(X: np.ndarray, center: np.ndarray | None, b_n: np.ndarray, g: np.ndarray,
               s0: int, m: int, acc: np.ndarray) -> None:  # pragma: no cover - compiled
    """Step 3: ``acc += rint(t_i g_i)`` over the sub-tile's rows, with
    ``rint(y) = (y + 1.5 2^52) - 1.5 2^52`` for ``|y| < 2^51`` (ties to even;
    the subtraction is exact). Eight rows at a time (measured: 1.2-1.5 times
    faster than four at 64 and 100 columns, where the accumulator's and the
    parameters' loads weigh): the integers' sums stay below 2^52, so every
    addition is exact and their order is free. A row
    with ``g = 0`` adds 0 and is skipped (a flagged row's ``t`` may be inf)."""
    d = X.shape[1]
    r = 0
    while r < m:
        if (r + 8 <= m and g[r] != 0 and g[r + 1] != 0 and g[r + 2] != 0 and g[r + 3] != 0
                and g[r + 4] != 0 and g[r + 5] != 0 and g[r + 6] != 0 and g[r + 7] != 0):
            x0 = X[s0 + r]                   # row views, not X[s0 + r + q, j]
            x1 = X[s0 + r + 1]
            x2 = X[s0 + r + 2]
            x3 = X[s0 + r + 3]
            x4 = X[s0 + r + 4]
            x5 = X[s0 + r + 5]
            x6 = X[s0 + r + 6]
            x7 = X[s0 + r + 7]
            g0 = g[r]
            g1 = g[r + 1]
            g2 = g[r + 2]
            g3 = g[r + 3]
            g4 = g[r + 4]
            g5 = g[r + 5]
            g6 = g[r + 6]
            g7 = g[r + 7]
            for j in range(d):
                cj = 0.0 if center is None else center[j]   # x - 0 is x
                bj = b_n[j]
                q0 = ((x0[j] - cj) * bj * g0 + _ROUNDER) - _ROUNDER
                q1 = ((x1[j] - cj) * bj * g1 + _ROUNDER) - _ROUNDER
                q2 = ((x2[j] - cj) * bj * g2 + _ROUNDER) - _ROUNDER
                q3 = ((x3[j] - cj) * bj * g3 + _ROUNDER) - _ROUNDER
                q4 = ((x4[j] - cj) * bj * g4 + _ROUNDER) - _ROUNDER
                q5 = ((x5[j] - cj) * bj * g5 + _ROUNDER) - _ROUNDER
                q6 = ((x6[j] - cj) * bj * g6 + _ROUNDER) - _ROUNDER
                q7 = ((x7[j] - cj) * bj * g7 + _ROUNDER) - _ROUNDER
                acc[j] += ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7))
            r += 8
            continue
        gr = g[r]
        if gr != 0.0:
            x = X[s0 + r]
            for j in range(d):
                cj = 0.0 if center is None else center[j]
                acc[j] += ((x[j] - cj) * b_n[j] * gr + _ROUNDER) - _ROUNDER
        r += 1


def _tile_sums(X: np.ndarray, center: np.ndarray | None, b_n: np.ndarray,
               C_n: float, shrink: float, upper_factor: float, scale: float,
               tile_rows: int, out: np.ndarray, hard: np.ndarray,
               clipped: np.ndarray, first: int, last: int) -> None:  # pragma: no cover
    """The kernel for ``d >= 16``: row by row, each row's squares summed as
    it is read."""
    n, d = X.shape
    sub = max(1, min(tile_rows, _SUB_ELEMENTS // d))
    sq = np.empty(sub)
    g = np.empty(sub)
    acc = _empty(d)
    tail = np.zeros(8)
    for tile in range(first, last):
        start = tile * tile_rows
        stop = min(n, start + tile_rows)
        acc[:] = 0.0
        count = 0
        for s0 in range(start, stop, sub):
            m = min(sub, stop - s0)
            # 1. squared norms, term j in lane j mod 8, each lane left to right
            #    (dpsum.kernels._rows._lane_sum)
            _norms(X, center, b_n, s0, m, sq, tail)
            count += _factors(sq, g, m, C_n, shrink, upper_factor, scale, hard, s0)
            _add(X, center, b_n, g, s0, m, acc)
        for j in range(d):
            out[tile, j] = acc[j]
        clipped[tile] = count


#: Rows of a transposed sub-tile (a power of two).
_NARROW_ROWS = 512


def _transposed_norms(X: np.ndarray, center: np.ndarray | None, b_n: np.ndarray, s0: int,
                      m: int, T: np.ndarray, L: np.ndarray,
                      sq: np.ndarray) -> None:  # pragma: no cover - compiled
    """Step 1 of :func:`_tile_sums_narrow` for rows ``s0 .. s0 + m - 1``
    (``m <= sub``, ``sub = len(sq)``): ``T[j sub + r] = t_rj`` and
    ``sq[r]``, row ``s0 + r``'s squared norm in the order of
    :func:`dpsum.kernels._rows._lane_sum` (lane ``L[l sub + r]``, from ``+0``,
    gets the squares of columns ``l, l + 8, ...`` in turn; then the tree)."""
    d = X.shape[1]
    sub = sq.shape[0]
    L[:] = 0.0
    Y = X[s0:s0 + m]                     # rows from 0: see _row_norms
    for j in range(d):
        cj = 0.0 if center is None else center[j]
        bj = b_n[j]
        o = j * sub
        lo = (j % 8) * sub
        for r in range(m):
            v = (Y[r, j] - cj) * bj
            T[o + r] = v
            L[lo + r] += v * v
    for r in range(m):
        sq[r] = (((L[r] + L[4 * sub + r]) + (L[2 * sub + r] + L[6 * sub + r]))
                 + ((L[sub + r] + L[5 * sub + r]) + (L[3 * sub + r] + L[7 * sub + r])))


def _tile_sums_narrow(X: np.ndarray, center: np.ndarray | None, b_n: np.ndarray,
                      C_n: float, shrink: float, upper_factor: float, scale: float,
                      tile_rows: int, out: np.ndarray, hard: np.ndarray,
                      clipped: np.ndarray, first: int, last: int) -> None:  # pragma: no cover
    """The kernel for ``d < 16``: the same operations in the same order per
    row as :func:`_tile_sums`, on a transposed sub-tile ``T[j, r] = t_rj``
    so that every step is a loop over rows that LLVM vectorises (row by row,
    a short row is mostly remainder). Per sub-tile of ``m`` rows:

    1. ``T[j, r] = fl(fl(x_rj - c_j) b_j)``, computed once, and
       ``L[j mod 8, r] += T[j, r]^2`` for ``j = 0, 1, ...`` (each row's lanes
       left to right from ``+0``), then the lanes' tree for every row;
    2. the clip factors (:func:`_clip_factors`);
    3. ``A[j, r] += rint(T[j, r] g_r)``: the tile's integers in ``sub``
       columns of partial sums, folded in halves at the tile's end. Every
       partial sum is an integer of magnitude at most the tile's sum of
       ``|q|`` (below ``2^52``), so each addition is exact and the order free.
    """
    n, d = X.shape
    sub = 1
    while sub * 2 <= min(tile_rows, _NARROW_ROWS):
        sub *= 2
    T = np.empty(d * sub)
    L = np.empty(8 * sub)
    A = np.empty(d * sub)
    sq = np.empty(sub)
    g = np.empty(sub)
    for tile in range(first, last):
        start = tile * tile_rows
        stop = min(n, start + tile_rows)
        A[:] = 0.0
        count = 0
        for s0 in range(start, stop, sub):
            m = min(sub, stop - s0)
            _tnorms(X, center, b_n, s0, m, T, L, sq)
            count += _factors(sq, g, m, C_n, shrink, upper_factor, scale, hard, s0)
            zero = 0
            for r in range(m):
                zero += g[r] == 0.0
            if zero:                         # t g may be NaN there (t = inf): add 0
                for r in range(m):
                    if g[r] == 0.0:
                        for j in range(d):
                            T[j * sub + r] = 0.0
            for j in range(d):
                o = j * sub
                for r in range(m):
                    A[o + r] += (T[o + r] * g[r] + _ROUNDER) - _ROUNDER
        h = sub
        while h > 1:
            h //= 2
            for j in range(d):
                o = j * sub
                for r in range(h):
                    A[o + r] += A[o + h + r]
        for j in range(d):
            out[tile, j] = A[j * sub]
        clipped[tile] = count


def _norms_of(X: np.ndarray, center: np.ndarray | None, b_n: np.ndarray,
              out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Every row's squared norm by the code of the kernel for ``d`` columns."""
    n, d = X.shape
    if d >= _DIRECT_D:
        _norms(X, center, b_n, 0, n, out, np.zeros(8))
        return
    sub = _NARROW_ROWS
    T = np.empty(d * sub)
    L = np.empty(8 * sub)
    sq = np.empty(sub)
    for s0 in range(0, n, sub):
        m = min(sub, n - s0)
        _tnorms(X, center, b_n, s0, m, T, L, sq)
        out[s0:s0 + m] = sq[:m]


_compiled: Any = None
_norms: Any = None                     # _row_norms, _transposed_norms and
_tnorms: Any = None                    # _aligned_empty compiled, inlined in the kernels
_empty: Any = None
_dev: Any = None
_factors: Any = None
_add: Any = None
_compiled_narrow: Any = None
_compiled_norms: Any = None


def _compile(func: Any, inputs: int, outputs: str, centred: bool = False) -> Any:
    """``func`` compiled now (or loaded from numba's cache) for ``inputs``
    read-only arrays (a C-contiguous matrix, then vectors) followed by the
    arguments ``outputs`` spells (``f``: float64, ``i``: int64, ``M``/``I``/``B``:
    writable float64 matrix, int64 matrix, bool vector, ``v``/``V``: int64/float64
    vector); with ``centred``, also with ``None`` for the second input (the
    centre: the branches on ``center is None`` are pruned at compile time),
    with LLVM's SLP vectoriser on (numba's default leaves it off): it packs
    the kernel's 8 explicit lane accumulators into vector registers. Without
    fast-math no vectoriser reorders a floating-point operation, so the bits
    are those of the code's order whether it runs or not."""
    config: Any = importlib.import_module("numba.core.config")
    t = numba.types
    kinds = {"f": t.float64, "i": t.int64, "M": t.float64[:, ::1], "I": t.int64[:, ::1],
             "B": t.boolean[::1], "v": t.int64[::1], "V": t.float64[::1]}
    args = [t.Array(t.float64, 2, "C", readonly=True)]
    args += [t.Array(t.float64, 1, "C", readonly=True)] * (inputs - 1)
    args += [kinds[c] for c in outputs]
    sigs = [t.void(*args)]
    if centred:
        sigs.append(t.void(args[0], t.none, *args[2:]))
    saved = config.SLP_VECTORIZE
    config.SLP_VECTORIZE = 1
    try:
        return numba.njit(sigs, error_model="numpy", cache=True, nogil=True)(func)
    finally:
        config.SLP_VECTORIZE = saved


def _kernel(d: int = _DIRECT_D) -> Any:
    """The compiled kernel for ``d`` columns."""
    global _compiled, _compiled_narrow, _norms, _tnorms, _empty, _dev, _factors, _add
    if _compiled is None:
        if not available():
            raise RuntimeError("numba is not installed: pip install 'dpsum[fast]'")
        _norms = numba.njit(inline="always")(_row_norms)
        _tnorms = numba.njit(inline="always")(_transposed_norms)
        _empty = numba.njit(inline="always")(_aligned_empty)
        _dev = numba.njit(_deviation)          # small: LLVM inlines it
        _factors = numba.njit(inline="always", error_model="numpy")(_clip_factors)
        _add = numba.njit(inline="always")(_round_add)
        _compiled = _compile(_tile_sums, 3, "ffffiMBvii", centred=True)
    if d >= _DIRECT_D:
        return _compiled
    if _compiled_narrow is None:
        _compiled_narrow = _compile(_tile_sums_narrow, 3, "ffffiMBvii", centred=True)
    return _compiled_narrow


def squared_norms(X: np.ndarray, center: np.ndarray | None, b_n: np.ndarray) -> np.ndarray:
    """Every row's squared norm as the compiled kernel computes it (the same
    inlined code, ``center=None`` included): for the test against exact
    arithmetic."""
    global _compiled_norms
    _kernel()
    if _compiled_norms is None:
        _compiled_norms = _compile(_norms_of, 3, "V", centred=True)
    out = np.empty(X.shape[0])
    _compiled_norms(np.ascontiguousarray(X, dtype=np.float64),
                    None if center is None else np.ascontiguousarray(center),
                    np.ascontiguousarray(b_n), out)
    return out


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:             # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _run_tiles(kernel: Any, tiles: int, *args: Any) -> None:
    """Run ``kernel(*args, first, last)`` over ``tiles`` tiles, split into
    contiguous ranges on the machine's cores (the compiled code releases the
    GIL; each range writes its own rows of the outputs). The integers do not
    depend on the split: each tile's sum is exact."""
    k = min(tiles, threads())
    if k <= 1:
        kernel(*args, 0, tiles)
        return
    bounds = [tiles * i // k for i in range(k + 1)]
    pool = _pool(k - 1)
    # this thread takes the first range; the pool's threads the others
    rest = [pool.submit(functools.partial(kernel, *args, a, b))
            for a, b in zip(bounds[1:-1], bounds[2:])]
    kernel(*args, bounds[0], bounds[1])
    for job in rest:
        job.result()


_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(k: int) -> ThreadPoolExecutor:
    """A pool of ``k`` threads, made once and kept (starting threads for
    every call costs more than a small block's pass)."""
    if k not in _POOLS:
        _POOLS[k] = ThreadPoolExecutor(max_workers=k, thread_name_prefix="dpsum-kernel")
    return _POOLS[k]


_THREADS: list[int] = []


_LOCAL = threading.local()


def threads() -> int:
    """The threads the compiled kernels use: ``DPSUM_THREADS`` or every core
    (one inside :func:`one_thread`)."""
    if getattr(_LOCAL, "one", False):
        return 1
    if not _THREADS:
        env = os.environ.get("DPSUM_THREADS", "")
        _THREADS.append(int(env) if env.isdigit() and int(env) > 0 else _cores())
    return _THREADS[0]


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """The kernels called from this thread inside the block run on it alone:
    for an engine that already runs one task per core (dask)."""
    before = getattr(_LOCAL, "one", False)
    _LOCAL.one = True
    try:
        yield
    finally:
        _LOCAL.one = before


def set_threads(k: int | None) -> None:
    """Use ``k`` threads (None: the default of :func:`threads`); for benchmarks."""
    _THREADS.clear()
    if k is not None:
        _THREADS.append(int(k))


def _aligned(v: Any) -> np.ndarray:
    """The float64 vector ``v`` copied to a 64-byte boundary: the kernels load
    it a vector register at a time, and a load across two cache lines costs
    two (measured: 5-10% of the kernel's time at 1000 columns)."""
    out = _aligned_empty(len(v))
    out[:] = v
    return out


def _aligned_empty(size: int) -> np.ndarray:
    """``size`` float64 values starting on a 64-byte boundary (also compiled,
    for the kernels' scratch vectors)."""
    buf = np.empty(size + 8)
    o = (-(buf.ctypes.data // 8)) % 8
    return buf[o:o + size]


def accumulate(X: np.ndarray, plan: Any, k: int, upper_factor: float
               ) -> tuple[np.ndarray, int, np.ndarray]:
    """The rows' grid integers summed exactly by the compiled kernel.

    Returns the exact sums (object array of Python ints), the clipped count
    over the rows it handled, and the indices of the rows it left to the
    per-row path (non-finite squared norms).
    """
    n, d = X.shape
    scale = math.ldexp(1.0, -k)
    qmax = 2 * math.ldexp(plan.C_n, -k) + 1        # |q_ij| is below this
    if qmax >= 2.0 ** 50:
        raise ValueError("the grid is too fine for the compiled kernel")
    # a tile's float64 sum stays an exact integer (below 2^52)
    tile_rows = int(max(1, min(4096, 2.0 ** 52 // (qmax * 1.0))))
    # a chunk's int64 total stays below 2^62
    tiles_per_chunk = int(max(1, 2.0 ** 62 // (qmax * tile_rows)))
    chunk_rows = tile_rows * min(tiles_per_chunk, 1 << 20)
    center = None if plan.center is None else _aligned(plan.center)
    b_n = _aligned(plan.b_n)
    total: np.ndarray | None = None
    n_clipped = 0
    hard_rows: list[np.ndarray] = []
    kernel = _kernel(d)
    for start in range(0, n, chunk_rows):
        block = np.ascontiguousarray(X[start:start + chunk_rows], dtype=np.float64)
        m = block.shape[0]
        tiles = -(-m // tile_rows)
        out = np.zeros((tiles, d))
        hard = np.zeros(m, dtype=np.bool_)
        clipped = np.zeros(tiles, dtype=np.int64)
        _run_tiles(kernel, tiles, block, center, b_n, plan.C_n, plan.shrink,
                   upper_factor, scale, tile_rows, out, hard, clipped)
        # exact: below 2^62; tolist gives Python ints
        chunk = np.array(out.astype(np.int64).sum(axis=0).tolist(), dtype=object)
        total = chunk if total is None else total + chunk
        n_clipped += int(clipped.sum())
        if hard.any():
            hard_rows.append(np.flatnonzero(hard) + start)
    idx = np.concatenate(hard_rows) if hard_rows else np.zeros(0, dtype=np.int64)
    if total is None:
        total = np.array([0] * d, dtype=object)
    return total, n_clipped, idx


def _clamp_tiles(X: np.ndarray, mid: np.ndarray, inner: np.ndarray, up1: np.ndarray,
                 up2: np.ndarray, lower: np.ndarray, upper: np.ndarray, tile_rows: int,
                 out: np.ndarray, counts: np.ndarray, first: int,
                 last: int) -> None:  # pragma: no cover - compiled
    n, d = X.shape
    for tile in range(first, last):
        start = tile * tile_rows
        stop = min(n, start + tile_rows)
        acc = np.zeros(d)
        clamped = 0
        outside = 0
        bad = 0
        for i in range(start, stop):
            out_row = 0
            for j in range(d):                 # no branch: the loop vectorises
                x = X[i, j]
                bad += 0 if abs(x) < np.inf else 1
                out_row |= (x < lower[j]) | (x > upper[j])
                t = x - mid[j]
                clamped += (t < -inner[j]) + (t > inner[j])
                t = min(max(t, -inner[j]), inner[j])
                # t / g_j as two exact power-of-two products, then rint
                acc[j] += ((t * up1[j]) * up2[j] + _ROUNDER) - _ROUNDER
            outside += out_row
        for j in range(d):
            out[tile, j] = acc[j]
        counts[tile, 0] = clamped
        counts[tile, 1] = outside
        counts[tile, 2] = bad


_compiled_clamp: Any = None


def accumulate_clamped(X: np.ndarray, plan: Any) -> tuple[np.ndarray, int, int, bool]:
    """The clamped sum's grid integers summed exactly by the compiled kernel:
    the exact sums, the clamped values, the rows outside the box, and whether
    a value was not finite (the caller refuses the data then)."""
    global _compiled_clamp
    if _compiled_clamp is None:
        if not available():
            raise RuntimeError("numba is not installed: pip install 'dpsum[fast]'")
        _compiled_clamp = _compile(_clamp_tiles, 7, "iMIii")
    n, d = X.shape
    neg = -np.asarray(plan.G, dtype=np.int64)
    half = neg // 2
    up1 = np.ldexp(1.0, half)               # 2^-G = up1 * up2, each a normal float
    up2 = np.ldexp(1.0, neg - half)
    tile_rows = 4096                         # |q| <= 2^33: tile sums below 2^45
    chunk_rows = tile_rows * (1 << 16)       # chunk totals below 2^61
    total = np.array([0] * d, dtype=object)
    clamped = outside = bad = 0
    args = [np.ascontiguousarray(a, dtype=np.float64)
            for a in (plan.mid, plan.inner, up1, up2, plan.lower, plan.upper)]
    for start in range(0, n, chunk_rows):
        block = np.ascontiguousarray(X[start:start + chunk_rows], dtype=np.float64)
        tiles = -(-block.shape[0] // tile_rows)
        out = np.zeros((tiles, d))
        counts = np.zeros((tiles, 3), dtype=np.int64)
        _run_tiles(_compiled_clamp, tiles, block, *args, tile_rows, out, counts)
        chunk = out.astype(np.int64).sum(axis=0)
        total = total + np.array([int(v) for v in chunk], dtype=object)
        c = counts.sum(axis=0)
        clamped, outside, bad = clamped + int(c[0]), outside + int(c[1]), bad + int(c[2])
    return total, clamped, outside, bad > 0
