"""What a modern (2026-07-28) request's `_meta` must hold, judged once for every transport: the session
answers with the error, and HTTP takes its status from the same judgement."""

from __future__ import annotations

from . import era, jsonrpc
from .context import LOG_LEVELS
from .jsonrpc import JsonRpcError

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from typing import Any


def envelope_error(meta: Any) -> JsonRpcError | None:
    """What a modern request's `_meta` gets instead of an answer, if anything: -32602 when a per-request field
    is missing or of the wrong shape (HTTP adds 400), -32022 for a version
    this server does not speak (checked before the other fields, whose shape a later version may change)."""
    if type(meta) is not dict:
        return no_envelope()
    version = meta.get(era.VERSION_KEY)
    if not isinstance(version, str):
        return JsonRpcError(jsonrpc.INVALID_PARAMS, f"Invalid params: _meta needs {era.VERSION_KEY}, a string")
    if version != era.MODERN_VERSION:
        return JsonRpcError(jsonrpc.UNSUPPORTED_PROTOCOL_VERSION, data={
            "supported": list(era.SUPPORTED_VERSIONS), "requested": version})
    if type(meta.get(era.CAPABILITIES_KEY)) is not dict:
        return JsonRpcError(jsonrpc.INVALID_PARAMS, f"Invalid params: _meta needs {era.CAPABILITIES_KEY}, an object")
    info = meta.get(era.CLIENT_INFO_KEY)
    if info is not None and type(info) is not dict:
        return JsonRpcError(jsonrpc.INVALID_PARAMS, f"Invalid params: _meta {era.CLIENT_INFO_KEY} must be an object")
    level = meta.get(era.LOG_LEVEL_KEY)
    if level is not None and level not in LOG_LEVELS:
        return JsonRpcError(jsonrpc.INVALID_PARAMS, f"Invalid params: _meta {era.LOG_LEVEL_KEY} must be one of "
                                                    f"{', '.join(LOG_LEVELS)}")
    return None


def no_envelope() -> JsonRpcError:
    """-32602 for a request modern by its transport (the HTTP version header) whose body has no `_meta`."""
    return JsonRpcError(jsonrpc.INVALID_PARAMS, f"Invalid params: a {era.MODERN_VERSION} request needs _meta with "
                                                f"{era.VERSION_KEY} and {era.CAPABILITIES_KEY}")


def declares_tasks(capabilities: dict[str, Any]) -> bool:
    extensions = capabilities.get("extensions")
    return type(extensions) is dict and era.TASKS_EXTENSION in extensions


def needs_tasks() -> JsonRpcError:
    """-32021 naming the tasks extension: its methods and task notifications are for clients that declare it."""
    return JsonRpcError(jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
                        data={"requiredCapabilities": {"extensions": {era.TASKS_EXTENSION: {}}}})
