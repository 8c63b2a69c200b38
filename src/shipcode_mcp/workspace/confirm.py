"""--confirm-writes: the user says yes before a tool changes anything.

A call of a tool that changes the workspace (every writing tool but create_directory: tools.UNCONFIRMED) is
shown to the user first, through elicitation: its arguments, then its dry run where the tool has one (the
diff), for git_commit the whole diff of what the commit would record (its parent against it; with amend, the
commit replaced too); each line masked, the whole cut at MAX_SHOWN_CHARS with a note. Only a yes makes the
real call, and only if it would still do what was shown: the preview is made again after the answer, with a
fingerprint of everything the call acts on (each file's content, a folder's entries, the repository's
objects and the working tree files a commit takes), and any difference refuses the call. In 2026-07-28
(`input_required`, the call made again with the answer) the fingerprint is in the question (`[change ID]`),
so a change meanwhile is asked about again. A file the tool takes a version of is also pinned by
`expected_sha256`. A client that cannot be asked gets a refusal that says how to write without confirmation.
A listing (git_branch, git_stash `list`) or a dry run is not asked about.
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
from .writes import MAX_WRITE_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..context import Context
    from .roots import Roots

MAX_SHOWN_CHARS = 8000
"""What the question shows of a preview; the rest is said to be cut, and how to read it."""
MAX_LISTED_ENTRIES = 100_000
"""Entries of a folder the fingerprint of a deletion or move lists (delete_path deletes at most as many)."""
SCHEMA = {"type": "object", "properties": {"confirm": {
    "type": "boolean", "title": "Make this change", "default": False,
    "description": "Yes: the server makes the change shown. No: nothing is changed."}}, "required": ["confirm"]}


def confirmed(ctx: Context, roots: Roots, tool: str, arguments: dict[str, Any], schema: dict[str, Any],
              call: Callable[[dict[str, Any]], ToolResult]) -> ToolResult:
    """`call(arguments)` once the user said yes to what it would do, and only if it would still do that; a
    dry run or a listing asked for is made at once."""
    properties = schema["properties"]
    if arguments.get("dry_run") or arguments.get("action") == "list":
        return call(arguments)
    if "elicitation" not in ctx.client_capabilities:
        raise ToolError(f"Refused: this server asks the user before each change (--confirm-writes), and the user cannot "
                        f"be asked here (the client offers no elicitation, or, over stateless HTTP in 2025-06-18, the "
                        f"server cannot send it a request); nothing was changed. Use a client that supports "
                        f"elicitation, or start the server with --allow-write instead to write without asking. "
                        f"({tool} with dry_run: true shows what it would do.)")
    pinned: dict[str, Any] = {}
    if "expected_sha256" in properties and "expected_sha256" not in arguments and isinstance(arguments.get("path"), str):
        version = _version(roots, arguments["path"])
        if version is not None:
            pinned["expected_sha256"] = version
    preview, state = _preview(ctx, roots, tool, arguments, properties, call)
    mark = hashlib.sha256(f"{preview}\0{state}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    message = f"Allow {tool}?\n\n{_shown(preview, tool)}\n\n[change {mark}]"
    try:
        answer = ctx.elicit(message, SCHEMA)
    except ClientRequestError as err:
        raise ToolError(f"Refused: the user could not be asked to confirm {tool} ({err}); nothing was changed") from None
    if answer.get("action") != "accept" or not (answer.get("content") or {}).get("confirm"):
        said = {"decline": "declined", "cancel": "cancelled"}.get(answer.get("action", ""), "did not confirm")
        raise ToolError(f"The user {said} {tool}; nothing was changed.")
    # What the user said yes to, made again now: anything that changed meanwhile (a file, the index, a folder
    # being deleted) makes it differ, and nothing is done.
    if _preview(ctx, roots, tool, arguments, properties, call) != (preview, state):
        raise ToolError(f"Refused: what {tool} would do changed while the user was reading it (a file or the repository "
                        "changed meanwhile); nothing was changed. Call it again to be asked about the change as it is now.")
    return call({**arguments, **pinned})


def _preview(ctx: Context, roots: Roots, tool: str, arguments: dict[str, Any], properties: dict[str, Any],
             call: Callable[[dict[str, Any]], ToolResult]) -> tuple[str, str]:
    """What the call would do, as the user reads it (the call's arguments; then its dry run where it has one, for
    a commit what it would record, whole), and a fingerprint of everything it would act on: the files it would
    write, replace, move or delete (each one's content hashed; a folder's entries listed)."""
    text = "Arguments:\n" + json.dumps(arguments, ensure_ascii=False, indent=1)
    state = ""
    if "dry_run" in properties:
        dry = call({**arguments, "dry_run": True})
        text += "\n\n" + _text(dry)
        state = _state(roots, _touched(tool, arguments, dry.structured or {}))
    elif tool == "git_commit":
        from .git.changes import commit_preview  # off the start-up budget: only for a commit to confirm

        recorded, state = commit_preview(ctx, roots, bool(arguments.get("all")), arguments.get("paths"),
                                         bool(arguments.get("amend")), arguments.get("path"))
        text += "\n\nThe commit would record:\n" + recorded
    return text, state


def _touched(tool: str, arguments: dict[str, Any], dry: dict[str, Any]) -> list[str]:
    """The paths (as given, or as results show them) of what the call acts on."""
    if tool == "move_path":
        return [arguments["source"], arguments["destination"]]
    if tool in ("apply_patch", "rename_symbol"):
        return [name for item in dry.get("files", []) for name in (item["path"], item.get("from")) if name]
    if tool == "git_restore":
        return list(arguments.get("paths", []))
    path = arguments.get("path")
    return [path] if isinstance(path, str) else []


def _state(roots: Roots, paths: list[str]) -> str:
    """A fingerprint of the files and folders at `paths`: each file's content hashed, each folder's entries
    (names, kinds, sizes, times, at most MAX_LISTED_ENTRIES), a link's target, or absent."""
    marks: list[str] = []
    for given in paths:
        try:
            real = roots.entry(given)
        except ToolError:
            marks.append(f"{given}:outside")
            continue
        if os.path.isdir(real) and not os.path.islink(real):
            marks.append(f"{given}:folder:{_listing(real)}")
        else:
            marks.append(f"{given}:{safe_open.content_mark(roots, real)}")
    return "\0".join(marks)


def _listing(folder: str) -> str:
    """Every entry under `folder` (no link followed), with its kind, size and times, as one digest."""
    digest = hashlib.sha256()
    count = 0
    for parent, folders, files in os.walk(folder):
        for name in sorted(folders) + sorted(files):
            count += 1
            if count > MAX_LISTED_ENTRIES:
                return digest.hexdigest() + "+more"
            try:
                info = os.lstat(os.path.join(parent, name))
            except OSError:
                continue
            digest.update(f"{os.path.relpath(os.path.join(parent, name), folder)}\0{info.st_mode}\0{info.st_size}\0"
                          f"{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_ino}\n".encode("utf-8", "surrogateescape"))
        folders.sort()
    return digest.hexdigest()


def _shown(preview: str, tool: str) -> str:
    """The preview as the user reads it: each line masked (a control or bidi character in a file's content
    could make a changed line read as unchanged), cut to MAX_SHOWN_CHARS with a note that says so."""
    masked = "\n".join(printable(line) for line in preview.split("\n"))
    if len(masked) <= MAX_SHOWN_CHARS:
        return masked
    return (masked[:MAX_SHOWN_CHARS] + f"\n[… {len(masked) - MAX_SHOWN_CHARS} more characters of this change are not "
            f"shown here: call {tool} with dry_run true to read it all before saying yes]")


def _text(outcome: ToolResult) -> str:
    return "\n".join(str(block.get("text", "")) for block in outcome.content if isinstance(block, dict))


def _version(roots: Roots, path: str) -> str | None:
    """The SHA-256 of the file `path` names as it is now, for expected_sha256; None when there is no file (or it
    is larger than the edit tools edit, so no version of it could be compared)."""
    real = roots.resolve(path)
    if not os.path.isfile(real) or os.path.getsize(real) > MAX_WRITE_BYTES:
        return None
    mark = safe_open.content_mark(roots, real)
    return mark if len(mark) == 64 and not mark.startswith(("absent", "link:", "mode:", "unreadable:")) else None
