"""A string enum for the package's named choices (private)."""

from __future__ import annotations

import enum


class _StrEnum(str, enum.Enum):
    """A string enum whose ``str()`` and ``format()`` are its value, so that
    old code comparing with or printing the string keeps working."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
