"""Old import paths of modules that moved, still answering with a DeprecationWarning that names the new one.
`transports/http_auth.py`, `http_front.py` and `http_limits.py` were named in docs/http.md before the HTTP
modules became the `transports/http/` package."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved(old: str, new: str) -> Callable[[str], Any]:
    """A module `__getattr__` for `old`: each name is `new`'s, with a warning naming where it lives now."""

    def __getattr__(name: str) -> Any:
        value = getattr(importlib.import_module(new), name)  # an unknown name: AttributeError, as before
        warnings.warn(f"{old} has moved to {new}: import {name} from there", DeprecationWarning, stacklevel=2)
        return value

    return __getattr__
