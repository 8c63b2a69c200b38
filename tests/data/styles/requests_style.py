"""Compatibility names in the shape of requests' and urllib3's code (compat.py, utils.py)."""

import sys
from typing import TYPE_CHECKING

try:
    import simplejson as json
    has_simplejson = True
except ImportError:
    import json

    has_simplejson = False
else:
    JSONDecodeError = json.JSONDecodeError
finally:
    _imported = True

if TYPE_CHECKING:
    from collections.abc import Mapping

    HeadersType = Mapping[str, str]

if sys.version_info >= (3, 11):
    import tomllib

    TOML_LOADER = tomllib.loads
elif sys.platform == "win32":
    TOML_LOADER = None
else:
    TOML_LOADER = None

DEFAULT_CA_BUNDLE_PATH = DEFAULT_PORTS = None
basestring = builtin_str = str


class Session:
    trust_env = proxies_env = True

    if sys.platform == "win32":
        path_sep = "\\"

    def send(self, request):
        if request:
            timeout = 10
        return timeout


for _name in ("get", "post"):
    _loop_value = _name

def _helper():
    try:
        local_only = 1
    except ValueError:
        local_only = 2
    return local_only
