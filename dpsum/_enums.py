"""A string enum for the package's named choices (private)."""

from __future__ import annotations

import enum
from typing import Any, TypeVar

_E = TypeVar("_E", bound="_StrEnum")


class _StrEnum(str, enum.Enum):
    """A string enum whose ``str()`` and ``format()`` are its value, so that
    old code comparing with or printing the string keeps working."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def parse(cls: type[_E], value: Any, name: str) -> _E:
        """The member named by ``value`` (a member or its string), or a
        TypeError/ValueError naming the user's argument ``name``."""
        if isinstance(value, cls):
            return value
        choices = tuple(str(m.value) for m in cls)
        if not isinstance(value, str):
            raise TypeError(f"{name} must be one of {choices}, got {type(value).__name__}")
        for member in cls:
            if member.value == value:
                return member
        raise ValueError(f"{name} must be one of {choices}")
