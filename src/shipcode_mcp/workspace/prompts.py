"""The workspace's prompts (--prompts): a coding client's slash commands, each built from the server's own tools.

A prompt runs the tools a person would ask for first (git_status and git_diff before a review; find_symbol,
read_symbol and find_references before explaining a name; git_log before summarising a file's history) and
hands the model their answers, each under the call that made it, so the model can make the same call again
for more. The tools run as a client's call runs them: confined to the roots, sandboxed, cut to the result
budget (--max-result-tokens, or the `_meta` hint of the prompts/get request). A tool's refusal (a path
outside the roots, no definition of the name, not a repository) is the request's -32602 with its words.

Each prompt is offered only with the tools it needs (explain_symbol with the code tools), and its `path`
arguments complete as the resource template's paths do (completion.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .. import jsonrpc
from ..primitives import Prompt, PromptArgument, ToolError, ToolResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..context import Context
    from ..primitives import Completer
    from ..server import Server

REFERENCES_SHOWN = 30
"""explain_symbol shows at most this many references (the most certain first): enough to see how it is used."""
HISTORY_DEFAULT, HISTORY_MAX = 20, 200
"""path_history's commits when `limit` is not given, and the most it takes."""
_YES, _NO = ("true", "yes", "1"), ("false", "no", "0", "")


def install_prompts(server: Server, complete_path: Completer) -> None:
    """Register the prompts whose tools `server` offers; their `path` arguments complete with `complete_path`."""
    offered = server.tools
    runner = _Runner(server)
    a_path = "A file or folder: relative to the first workspace root, or absolute inside one."
    if {"git_status", "git_diff"} <= offered.keys():
        staged = PromptArgument("staged", "true: only the staged changes (what the next commit holds); default: every "
                                "uncommitted change.", complete=lambda typed, _known: _choices(("true", "false"), typed))
        server.add_prompt(Prompt(
            "review_changes", runner.review_changes, title="Review uncommitted changes",
            description="Review the workspace's uncommitted changes (or the staged ones, or those under a path) for "
                        "bugs, missing tests and unclear code, from git_status and git_diff.",
            arguments=[PromptArgument("path", "Only the changes under this file or folder.", complete=complete_path), staged]))
    if {"find_symbol", "read_symbol", "find_references"} <= offered.keys():
        server.add_prompt(Prompt(
            "explain_symbol", runner.explain_symbol, title="Explain a symbol",
            description="Explain what a function, class or other symbol does and how the code uses it, from its "
                        "definition (find_symbol, read_symbol) and its references (find_references).",
            arguments=[PromptArgument("name", "The symbol: a name, or a qualified name such as Class.method.",
                                      required=True),
                       PromptArgument("path", "Only definitions and references under this file or folder (default: "
                                      "the whole workspace).", complete=complete_path)]))
    if "git_log" in offered:
        server.add_prompt(Prompt(
            "path_history", runner.path_history, title="Summarise a path's history",
            description="Summarise how a file or folder changed over its recent commits, and why, from git_log.",
            arguments=[PromptArgument("path", a_path, required=True, complete=complete_path),
                       PromptArgument("limit", f"How many commits to read (default {HISTORY_DEFAULT}, at most "
                                      f"{HISTORY_MAX}).")]))


def _choices(values: tuple[str, ...], typed: str) -> list[str]:
    return [value for value in values if value.startswith(typed.lower())]


def _invalid(message: str) -> jsonrpc.JsonRpcError:
    return jsonrpc.JsonRpcError(jsonrpc.INVALID_PARAMS, message)


def _given(arguments: dict[str, str], name: str) -> str | None:
    """An optional argument as given, None when left out or blank (a client's form sends empty fields)."""
    value = arguments.get(name, "").strip()
    return value or None


class _Runner:
    """Calls the server's own tools for the prompts, and turns their answers into a prompt's messages."""

    def __init__(self, server: Server) -> None:
        self._server = server

    def _call(self, ctx: Context, tool: str, arguments: dict[str, Any]) -> str:
        """The tool's answer as the model reads it, under the call that made it (`tool {arguments}`)."""
        return self._answer(ctx, tool, arguments)[0]

    def _answer(self, ctx: Context, tool: str, arguments: dict[str, Any]) -> tuple[str, ToolResult]:
        """The tool's answer as `_call` shows it, and as it came (for its structured content)."""
        handler: Callable[[Context, dict[str, Any]], Any] = self._server.tools[tool].handler
        try:
            value = handler(ctx, arguments)
        except ToolError as err:
            raise _invalid(f"{tool}: {err}") from None
        if not isinstance(value, ToolResult):  # (every workspace tool answers a ToolResult)
            raise TypeError(f"{tool} answered {type(value).__name__}, not a ToolResult")
        text = "\n".join(item["text"] for item in value.content if item.get("type") == "text")
        if value.is_error:
            raise _invalid(f"{tool}: {text}")
        return f"{tool} {json.dumps(arguments, separators=(',', ':'), ensure_ascii=False)}\n{text}", value

    def review_changes(self, ctx: Context, arguments: dict[str, str]) -> list[str]:
        path = _given(arguments, "path")
        staged = (_given(arguments, "staged") or "").lower()
        if staged not in _YES + _NO:
            raise _invalid("staged must be true or false")
        where = f" under {path}" if path else ""
        scope = {"path": path} if path else {}
        status = self._call(ctx, "git_status", {})
        if staged in _YES:
            what = "the staged changes (what the next commit holds)"
            diff = self._call(ctx, "git_diff", {"staged": True, **scope})
        else:
            what = "every uncommitted change (staged or not) against HEAD"
            try:
                diff = self._call(ctx, "git_diff", {"ref": "HEAD", **scope})
            except jsonrpc.JsonRpcError:  # no commit yet: nothing to compare with but the index
                diff = self._call(ctx, "git_diff", {"staged": True, **scope})
        task = (f"Review {what}{where} in this workspace, as a careful reviewer would before they are committed. "
                "Look for bugs, edge cases and error handling that is missing, changes without tests, unclear names "
                "or code, and anything that does not match the rest of the code. Read the surrounding code where the "
                "diff alone cannot tell (read_file, read_symbol, find_references). Untracked files are listed in the "
                "status but not in the diff: read them too. Give each finding with its file and line, most serious "
                "first, and say plainly when you find nothing wrong.")
        return [task, status, diff]

    def explain_symbol(self, ctx: Context, arguments: dict[str, str]) -> list[str]:
        name = _given(arguments, "name")
        if name is None:
            raise _invalid("name must name a symbol")
        path = _given(arguments, "path") or "."
        shown, found = self._answer(ctx, "find_symbol", {"name": name, "path": path, "limit": 20})
        definitions = (found.structured or {}).get("symbols") or []
        if not definitions:
            raise _invalid(f"No definition of {name!r} under {path}: give the name as find_symbol finds it "
                           "(a qualified name such as Class.method), or another path")
        first = definitions[0]
        task = (f"Explain what `{name}` does in this workspace: its purpose, its inputs and outputs, what it relies "
                "on, its side effects and edge cases, and how the rest of the code uses it (the references below, "
                "the most certain first). Read more of the code where it helps (read_symbol, find_definition, "
                "read_file), and cite files and lines.")
        return [task, shown, self._call(ctx, "read_symbol", {"path": first["path"], "name": first["qualified_name"]}),
                self._call(ctx, "find_references", {"name": name, "path": path, "limit": REFERENCES_SHOWN})]

    def path_history(self, ctx: Context, arguments: dict[str, str]) -> list[str]:
        path = _given(arguments, "path")
        if path is None:
            raise _invalid("path must name a file or folder")
        given = _given(arguments, "limit")
        if given is None:
            limit = HISTORY_DEFAULT
        elif given.isdigit() and 1 <= int(given) <= HISTORY_MAX:
            limit = int(given)
        else:
            raise _invalid(f"limit must be a whole number from 1 to {HISTORY_MAX}")
        log = self._call(ctx, "git_log", {"path": path, "limit": limit})
        task = (f"Summarise the history of {path} from its recent commits below: what changed, when and why (as "
                "the messages say), the main themes and turning points, and who worked on it. Name the commits "
                "worth reading in full; git_show shows one, git_diff compares two.")
        return [task, log]
