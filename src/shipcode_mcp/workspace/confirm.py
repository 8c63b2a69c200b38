"""--confirm-writes: the user says yes before a tool changes anything.

A call of a tool that changes the workspace (every writing tool but create_directory: tools.UNCONFIRMED) is
first made as a dry
run where the tool has one, and the user is shown what it would do (the diff; for git_commit, what is
staged; for the other git tools, the call) through elicitation, in both eras: `Context.elicit` asks the
client (2025-06-18) or answers `input_required` and runs the call again when the client retries with the
answer (2026-07-28; the dry run is made again then, and an answer holds only for the very text it answered,
so a file changed meanwhile is asked about again). Only a yes makes the real call. A file the user saw is
pinned to the version shown (`expected_sha256`, where the tool takes it): changed while the user was
reading, the write is refused rather than applied to a text nobody saw. A client that cannot be asked gets a
refusal that says how to write without confirmation.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING, Any

from ..context import ClientRequestError
from ..primitives import ToolError, ToolResult
from . import safe_open
from .text import printable
from .writes import MAX_WRITE_BYTES, read_all

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..context import Context
    from .roots import Roots

MAX_SHOWN_CHARS = 8000
"""What the question shows of a preview; the rest is said to be cut."""
SCHEMA = {"type": "object", "properties": {"confirm": {
    "type": "boolean", "title": "Make this change", "default": False,
    "description": "Yes: the server makes the change shown. No: nothing is changed."}}, "required": ["confirm"]}


def confirmed(ctx: Context, roots: Roots, tool: str, arguments: dict[str, Any], schema: dict[str, Any],
              call: Callable[[dict[str, Any]], ToolResult]) -> ToolResult:
    """`call(arguments)` once the user said yes to what it would do; a dry run asked for is made at once."""
    properties = schema["properties"]
    if arguments.get("dry_run"):
        return call(arguments)
    if "elicitation" not in ctx.client_capabilities:
        raise ToolError(f"Refused: this server asks the user before each change (--confirm-writes), and this client "
                        f"cannot be asked (it offers no elicitation); nothing was changed. Use a client that supports "
                        f"elicitation, or start the server with --allow-write instead to write without asking. "
                        f"({tool} with dry_run: true shows what it would do.)")
    pinned: dict[str, Any] = {}
    if "expected_sha256" in properties and "expected_sha256" not in arguments and isinstance(arguments.get("path"), str):
        version = _version(roots, arguments["path"])
        if version is not None:
            pinned["expected_sha256"] = version
    preview = _preview(ctx, roots, tool, arguments, properties, call)
    message = f"Allow {tool}?\n\n{preview}"
    try:
        answer = ctx.elicit(message, SCHEMA)
    except ClientRequestError as err:
        raise ToolError(f"Refused: the user could not be asked to confirm {tool} ({err}); nothing was changed") from None
    if answer.get("action") != "accept" or not (answer.get("content") or {}).get("confirm"):
        said = {"decline": "declined", "cancel": "cancelled"}.get(answer.get("action", ""), "did not confirm")
        raise ToolError(f"The user {said} {tool}; nothing was changed.")
    return call({**arguments, **pinned})


def _preview(ctx: Context, roots: Roots, tool: str, arguments: dict[str, Any], properties: dict[str, Any],
             call: Callable[[dict[str, Any]], ToolResult]) -> str:
    """What the call would do, as the user reads it: the tool's own dry run where it has one; for a commit, what
    is staged (and what `all` would stage); else the call itself."""
    if "dry_run" in properties:
        text = _text(call({**arguments, "dry_run": True}))
    elif tool == "git_commit":
        from .tools import run  # (tools imports this module)

        diff = run("git_diff", ctx, roots, ref="HEAD" if arguments.get("all") else None,
                   staged=not arguments.get("all"), path=arguments.get("path"))
        text = f"Message:\n{arguments.get('message', '')}\n\n{_text(diff)}"
    else:
        text = json.dumps(arguments, ensure_ascii=False, indent=1)
    if len(text) > MAX_SHOWN_CHARS:
        text = text[:MAX_SHOWN_CHARS] + f"\n… ({len(text) - MAX_SHOWN_CHARS} more characters not shown)"
    return text


def _text(outcome: ToolResult) -> str:
    return "\n".join(str(block.get("text", "")) for block in outcome.content if isinstance(block, dict))


def _version(roots: Roots, path: str) -> str | None:
    """The SHA-256 of the file `path` names as it is now, None when there is none (or it is too large)."""
    real = roots.resolve(path)
    if not os.path.isfile(real):
        return None
    fd, info = safe_open.open_file(roots, real, printable(roots.display(real)))
    try:
        data = read_all(fd, info.st_size, MAX_WRITE_BYTES)
    finally:
        os.close(fd)
    return hashlib.sha256(data).hexdigest() if data is not None else None
