"""Engines that run the accumulator's pass elsewhere (optional extras).
"""

from __future__ import annotations

__all__: list[str] = []
