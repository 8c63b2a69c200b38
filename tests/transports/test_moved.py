"""The old import paths of the HTTP modules (named in docs/http.md before they became `transports/http/`)
still answer, with the same objects and a DeprecationWarning that names the new path."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from shipcode_mcp.transports.http import auth, front, limits


@pytest.mark.parametrize(("old", "new", "name"), [("http_auth", auth, "ResourceServer"),
                                                  ("http_front", front, "FrontLoop"),
                                                  ("http_limits", limits, "HttpLimits")])
def test_an_old_path_gives_the_same_object_and_says_where_it_moved(old: str, new: ModuleType, name: str) -> None:
    module = importlib.import_module(f"shipcode_mcp.transports.{old}")
    with pytest.warns(DeprecationWarning, match=rf"shipcode_mcp\.transports\.{old} has moved to {new.__name__}"):
        value = getattr(module, name)
    assert value is getattr(new, name)


def test_an_unknown_name_of_an_old_path_is_an_attribute_error_without_a_warning() -> None:
    module = importlib.import_module("shipcode_mcp.transports.http_front")
    with pytest.raises(AttributeError):
        module.NoSuchName  # noqa: B018
