"""Heavy third-party modules, imported on first use.

``import dpsum`` must stay light (a dask worker or a short script imports it
in every process): :mod:`scipy.stats`, :mod:`scipy.optimize` and
:mod:`scipy.interpolate` take most of the time and memory of a plain import.
A module of :mod:`dpsum` that needs one writes
``from dpsum._lazy import stats`` and uses ``stats.norm`` as usual; the real
module is imported when an attribute is first read. ``benchmarks/import_cost.py``
measures the import.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "stats", "optimize", "interpolate"]


class LazyModule:
    """A stand-in for a module, imported on first attribute access.

    Examples
    --------
    >>> math_ = LazyModule("math")
    >>> math_.sqrt(4.0)
    2.0
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr in ("_name", "_module"):
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._name!r} ({state})>"


stats: Any = LazyModule("scipy.stats")
optimize: Any = LazyModule("scipy.optimize")
interpolate: Any = LazyModule("scipy.interpolate")
