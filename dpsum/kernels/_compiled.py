"""The grid kernel compiled with numba: the same integers as the NumPy kernel, in
one pass over memory. Private to dpsum.kernels.

Every row goes through the operations of :func:`dpsum.kernels.grid._grid_rows`
in the same order: ``t_j = fl(fl(x_j - c_j) b_j)``, the squares summed by
the tree of :func:`dpsum.kernels._rows._tree_sum`, the square root, the clip
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
core the process may use), each on its own contiguous tiles of rows.
"""

from __future__ import annotations

import math
import os
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


def _tile_sums(X: np.ndarray, center: np.ndarray, b_n: np.ndarray,
               C_n: float, shrink: float, upper_factor: float, scale: float,
               tile_rows: int, out: np.ndarray, hard: np.ndarray,
               clipped: np.ndarray, first: int, last: int) -> None:  # pragma: no cover
    n, d = X.shape
    for tile in range(first, last):
        start = tile * tile_rows
        stop = min(n, start + tile_rows)
        t = np.empty(d)
        s = np.empty(d)
        acc = np.zeros(d)
        count = 0
        for i in range(start, stop):
            for j in range(d):
                # x - 0 is x exactly: no centre is a centre of zeros
                v = (X[i, j] - center[j]) * b_n[j]
                t[j] = v
                s[j] = v * v
            w = d
            while w > 1:
                h = w // 2
                for m in range(h):
                    s[m] = s[m] + s[w - h + m]
                w -= h
            sq = s[0]
            if not sq < np.inf:                # NaN or inf: the per-row path
                hard[i] = True
                continue
            nu = math.sqrt(sq)
            f = C_n / nu * shrink
            if not f < 1.0:                    # also nu = 0 (f = inf)
                f = 1.0
            up = nu * upper_factor
            for _ in range(_MAX_RECHECKS):
                if not f * up * (1.0 + 2 * _U) > C_n:
                    break
                f = f * (1.0 - 2.0 ** -20)
            if f * up * (1.0 + 2 * _U) > C_n:
                f = 0.0
            if f < 1.0:
                count += 1
            g = f * scale
            for j in range(d):
                # rint(y) for |y| < 2^51: adding 1.5 2^52 rounds to an integer
                # (ties to even), subtracting it is exact
                acc[j] += (t[j] * g + _ROUNDER) - _ROUNDER
        for j in range(d):
            out[tile, j] = acc[j]
        clipped[tile] = count


_compiled: Any = None


def _kernel() -> Any:
    global _compiled
    if _compiled is None:
        if not available():
            raise RuntimeError("numba is not installed: pip install 'dpsum[fast]'")
        _compiled = numba.njit(error_model="numpy", cache=True, nogil=True)(_tile_sums)
    return _compiled


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
    with ThreadPoolExecutor(max_workers=k) as pool:
        list(pool.map(lambda ab: kernel(*args, ab[0], ab[1]), zip(bounds, bounds[1:])))


_THREADS: list[int] = []


def threads() -> int:
    """The threads the compiled kernels use: ``DPSUM_THREADS`` or every core."""
    if not _THREADS:
        env = os.environ.get("DPSUM_THREADS", "")
        _THREADS.append(int(env) if env.isdigit() and int(env) > 0 else _cores())
    return _THREADS[0]


def set_threads(k: int | None) -> None:
    """Use ``k`` threads (None: the default of :func:`threads`); for benchmarks."""
    _THREADS.clear()
    if k is not None:
        _THREADS.append(int(k))


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
    center = np.zeros(d) if plan.center is None else np.ascontiguousarray(plan.center,
                                                                          dtype=np.float64)
    b_n = np.ascontiguousarray(plan.b_n, dtype=np.float64)
    total = np.array([0] * d, dtype=object)
    n_clipped = 0
    hard_rows: list[np.ndarray] = []
    kernel = _kernel()
    for start in range(0, n, chunk_rows):
        block = np.ascontiguousarray(X[start:start + chunk_rows], dtype=np.float64)
        m = block.shape[0]
        tiles = -(-m // tile_rows)
        out = np.zeros((tiles, d))
        hard = np.zeros(m, dtype=np.bool_)
        clipped = np.zeros(tiles, dtype=np.int64)
        _run_tiles(kernel, tiles, block, center, b_n, plan.C_n, plan.shrink,
                   upper_factor, scale, tile_rows, out, hard, clipped)
        chunk = out.astype(np.int64).sum(axis=0)    # exact: below 2^62
        total = total + np.array([int(v) for v in chunk], dtype=object)
        n_clipped += int(clipped.sum())
        if hard.any():
            hard_rows.append(np.flatnonzero(hard) + start)
    idx = np.concatenate(hard_rows) if hard_rows else np.zeros(0, dtype=np.int64)
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
        _compiled_clamp = numba.njit(error_model="numpy", cache=True,
                                     nogil=True)(_clamp_tiles)
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
