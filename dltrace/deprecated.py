"""Keywords of the Python API kept for a release under their old names, with a warning."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import TypeVar

Function = TypeVar("Function", bound=Callable)


def renamed_keyword(old: str, new: str) -> Callable[[Function], Function]:
    """Accept ``old=`` for ``new=`` with a ``DeprecationWarning``: callers written against the
    old name keep working for a release while they move to the new one."""

    def decorate(function: Function) -> Function:
        @functools.wraps(function)
        def accepting(*args, **kwargs):
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{function.__name__}() takes {new}= (formerly {old}=), not both")
                warnings.warn(f"{function.__name__}({old}=...) is deprecated: use {new}=", DeprecationWarning,
                              stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return accepting  # type: ignore[return-value]

    return decorate
