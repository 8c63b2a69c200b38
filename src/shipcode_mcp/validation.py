"""JSON Schema validators, built offline from a schema's own dialect: what checks a tool's arguments and
results (primitives.py) and a client's elicitation answer (context.py). A leaf: the validator loads on first use."""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from typing import Any


def schema_validator(schema: dict[str, Any]) -> Any:
    """A validator for a JSON Schema of the dialect it declares (2020-12 when it declares none, as MCP
    2026-07-28 requires). Offline: a `$ref` to a remote URI is never fetched (the spec forbids it by
    default: a schema must not make the server reach out), so it fails to build instead. Raises
    ValueError, with the validator's reason, for a schema it cannot use (an unknown dialect, say)."""
    import jsonschema_rs  # an optional dependency's cost, paid on first use

    try:
        return jsonschema_rs.validator_for(schema, offline=True)
    except (jsonschema_rs.ValidationError, ValueError) as err:
        raise ValueError(str(err).split("\n", 1)[0]) from None
