"""The realistic tables of ``benchmarks/realistic_tables.py``, loaded for the
tests that run its fast subset (the benchmarks are scripts, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def realistic_tables() -> ModuleType:
    """The benchmark module, loaded once (its dataclasses look themselves up
    in ``sys.modules``)."""
    if "realistic_tables" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "realistic_tables", ROOT / "benchmarks" / "realistic_tables.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["realistic_tables"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["realistic_tables"]
