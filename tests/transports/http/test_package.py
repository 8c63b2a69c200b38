"""The package's face (transports/http/__init__.py): the pure modules load without Starlette, the endpoint's
names load it on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support import REPO

PROBE = """
import sys
import shipcode_mcp.transports.http.headers, shipcode_mcp.transports.http.sessions
import shipcode_mcp.transports.http.limits, shipcode_mcp.transports.http.lanes
print("starlette" in sys.modules)
from shipcode_mcp.transports.http import HttpSession
print("starlette" in sys.modules)
from shipcode_mcp.transports.http import create_app
print("starlette" in sys.modules, create_app.__module__)
"""


def test_the_pure_modules_load_without_starlette_and_the_endpoint_with_it() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True,
                          env={"PYTHONPATH": str(REPO / "src")})
    assert done.stdout.split("\n") == ["False", "False", "True shipcode_mcp.transports.http.endpoint", ""], done.stderr


def test_an_unknown_name_of_the_package_is_an_attribute_error() -> None:
    import shipcode_mcp.transports.http as package

    with pytest.raises(AttributeError, match="NoSuchName"):
        package.NoSuchName  # noqa: B018
