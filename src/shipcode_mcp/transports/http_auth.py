"""Deprecated: the HTTP face of authorization moved to shipcode_mcp.transports.http.auth (transports/http/auth.py)."""

from .moved import moved

__getattr__ = moved(__name__, "shipcode_mcp.transports.http.auth")
