"""Deprecated: the connection front moved to shipcode_mcp.transports.http.front (transports/http/front.py)."""

from .moved import moved

__getattr__ = moved(__name__, "shipcode_mcp.transports.http.front")
