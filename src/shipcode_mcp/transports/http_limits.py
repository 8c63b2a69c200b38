"""Deprecated: HttpLimits moved to shipcode_mcp.transports.http.limits (transports/http/limits.py)."""

from .moved import moved

__getattr__ = moved(__name__, "shipcode_mcp.transports.http.limits")
