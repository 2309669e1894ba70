"""Deprecations: old names keep working, with a :class:`DeprecationWarning`.

Every renamed or moved public name of :mod:`dpsum` goes through one of the
helpers below, so that the warning text has one form and the list of
deprecations in ``book/api.md`` can be checked against the code.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from typing import Any, Callable, TypeVar

__all__ = ["warn_deprecated", "moved_attributes", "renamed_keyword"]

F = TypeVar("F", bound=Callable[..., Any])


def warn_deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``.

    ``stacklevel=3`` points at the caller of the function that warns.
    """
    warnings.warn(f"{old} is deprecated; use {new} instead", DeprecationWarning,
                  stacklevel=stacklevel)


def moved_attributes(module: str, moved: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving names that moved elsewhere.

    ``moved`` maps an old attribute name of ``module`` to its new home
    ``"package.module:name"``; accessing it warns and returns the new object.
    """

    def __getattr__(name: str) -> Any:
        if name in moved:
            target_module, _, target_name = moved[name].partition(":")
            warn_deprecated(f"{module}.{name}", f"{target_module}.{target_name}")
            return getattr(importlib.import_module(target_module), target_name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def renamed_keyword(old: str, new: str) -> Callable[[F], F]:
    """Decorator: accept the keyword ``old`` as a deprecated spelling of ``new``."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{func.__name__}() got both {new}= and its deprecated "
                                    f"spelling {old}=")
                warn_deprecated(f"the keyword {old}= of {func.__name__}()", f"{new}=")
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
