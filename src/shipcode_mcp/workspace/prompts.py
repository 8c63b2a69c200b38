"""The workspace's prompts (--prompts): a coding client's slash commands, each built from the server's own tools.

A prompt runs the tools a person would ask for first (git_status and git_diff before a review; find_symbol,
read_symbol and find_references before explaining a name; git_log before summarising a file's history) and
hands the model their answers, each under the call that made it, so the model can make the same call again
for more. The tools run as a client's call runs them: confined to the roots, sandboxed. The prompt as a whole
keeps the result budget (--max-result-tokens, or the `_meta` hint of the prompts/get request): each tool's
answer gets an equal share of it (at least budget.MIN_TOKENS), cut where the tool knows how; git_status, which
no budget cuts, is cut after STATUS_LINES lines. A tool's refusal (a path outside the roots, no definition of
the name, not a repository) is the request's -32602 with its words.

Each prompt is offered only with the tools it needs (explain_symbol with the code tools), and its `path`
arguments complete as the resource template's paths do (completion.py). What the prompt's text repeats of
its arguments is made printable (text.printable), as every name a model reads is.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .. import jsonrpc
from ..primitives import Prompt, PromptArgument, ToolError, ToolResult
from .text import place, plural, printable

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..context import Context
    from ..primitives import Completer
    from ..server import Server
    from .roots import Roots

REFERENCES_SHOWN = 30
"""explain_symbol shows at most this many references (the most certain first): enough to see how it is used."""
HISTORY_DEFAULT, HISTORY_MAX = 20, 200
"""path_history's commits when `limit` is not given, and the most it takes."""
STATUS_LINES = 200
"""review_changes shows at most this many lines of git_status (thousands of untracked files would fill it)."""
_YES, _NO = ("true", "yes", "1"), ("false", "no", "0")
_WHOLE_NUMBER = re.compile(r"[0-9]{1,4}")


def install_prompts(server: Server, roots: Roots, complete_path: Completer, max_result_tokens: int) -> None:
    """Register the prompts whose tools `server` offers; their `path` arguments complete with `complete_path`;
    each prompt within `max_result_tokens` (0: no cap but what the request asks)."""
    offered = server.tools
    runner = _Runner(server, roots, max_result_tokens)
    a_path = "A file or folder: relative to the first workspace root, or absolute inside one."
    if {"git_status", "git_diff"} <= offered.keys():
        staged = PromptArgument("staged", "true: only the staged changes (what the next commit holds); default: every "
                                "uncommitted change, staged or not.",
                                complete=lambda typed, _known: [v for v in ("true", "false") if v.startswith(typed.lower())])
        server.add_prompt(Prompt(
            "review_changes", runner.review_changes, title="Review uncommitted changes",
            description="Review the workspace's uncommitted changes (or the staged ones, or those under a path) for "
                        "bugs, missing tests and unclear code, from git_status and git_diff.",
            arguments=[PromptArgument("path", "Only the changes under this file or folder.", complete=complete_path),
                       staged]))
    if {"find_symbol", "read_symbol", "find_references"} <= offered.keys():
        server.add_prompt(Prompt(
            "explain_symbol", runner.explain_symbol, title="Explain a symbol",
            description="Explain what a function, class or other symbol does and how the code uses it, from its "
                        "definition (find_symbol, read_symbol) and its references (find_references).",
            arguments=[PromptArgument("name", "The symbol: a name, or a qualified name such as Class.method.",
                                      required=True),
                       PromptArgument("path", "Only definitions and references under this file or folder (default: "
                                      "the first workspace root, as the tools).", complete=complete_path)]))
    if "git_log" in offered:
        server.add_prompt(Prompt(
            "path_history", runner.path_history, title="Summarise a path's history",
            description="Summarise how a file or folder changed over its recent commits, and why, from git_log.",
            arguments=[PromptArgument("path", a_path, required=True, complete=complete_path),
                       PromptArgument("limit", f"How many commits to read (default {HISTORY_DEFAULT}, at most "
                                      f"{HISTORY_MAX}).")]))


def _invalid(message: str) -> jsonrpc.JsonRpcError:
    return jsonrpc.JsonRpcError(jsonrpc.INVALID_PARAMS, message)


def _given(arguments: dict[str, str], name: str) -> str | None:
    """An optional argument as given, None when left out or blank (a client's form sends empty fields); a
    path is taken as it is, spaces included."""
    value = arguments.get(name, "")
    return value if value.strip() else None


def _head(text: str, lines: int, more: str) -> str:
    """`text` up to `lines` lines, then a line saying how many more there are and where to see them."""
    kept = text.split("\n")
    if len(kept) <= lines:
        return text
    return "\n".join([*kept[:lines], f"[{plural(len(kept) - lines, 'more line')}: {more}]"])


class _Runner:
    """Calls the server's own tools for the prompts, and turns their answers into a prompt's messages."""

    def __init__(self, server: Server, roots: Roots, max_result_tokens: int) -> None:
        self._server = server
        self._roots = roots
        self._max_result_tokens = max_result_tokens

    def _answer(self, ctx: Context, tool: str, arguments: dict[str, Any], share: int) -> tuple[str, ToolResult]:
        """The tool's answer, cut to `share` tokens (0: as it came), as the model reads it: under the call that
        made it (`tool {arguments}`, printable); and the result itself (for its structured content)."""
        handler: Callable[[Context, dict[str, Any]], Any] = self._server.tools[tool].handler
        try:
            value = handler(ctx, arguments)
            if isinstance(value, ToolResult) and not value.is_error:  # the text alone (no links): what is shown
                value = ToolResult([item for item in value.content if item.get("type") == "text"], value.structured)
            if share and isinstance(value, ToolResult) and not value.is_error:
                from . import budget  # (the cut of each tool, as its own call's)

                value = budget.fit(tool, value, share, arguments, lambda **changed: handler(ctx, {**arguments, **changed}))
        except ToolError as err:
            raise _invalid(f"{tool}: {err}") from None
        if not isinstance(value, ToolResult):  # (every workspace tool answers a ToolResult)
            raise TypeError(f"{tool} answered {type(value).__name__}, not a ToolResult")
        text = "\n".join(item["text"] for item in value.content if item.get("type") == "text")
        if value.is_error:
            raise _invalid(f"{tool}: {text}")
        call = printable(json.dumps(arguments, separators=(",", ":"), ensure_ascii=False))
        return f"{tool} {call}\n{text}", value

    def _share(self, ctx: Context, parts: int) -> int:
        """Each of `parts` tool answers' share of the prompt's budget (0: no cap)."""
        from . import budget  # (the budget of a call, as tools/call reads it)

        total = budget.budget(ctx, self._max_result_tokens)
        return max(total // parts, budget.MIN_TOKENS) if total else 0

    def review_changes(self, ctx: Context, arguments: dict[str, str]) -> list[str]:
        path = _given(arguments, "path")
        staged = (_given(arguments, "staged") or "false").strip().lower()
        if staged not in _YES + _NO:
            raise _invalid("staged must be true or false")
        # Every root's changes (git_diff without a path is the first root's), staged then unstaged, or one path's.
        scopes = [{"path": path}] if path else [{}] if len(self._roots.paths) == 1 else [
            {"path": root} for root in self._roots.paths]
        kinds = [{"staged": True}] if staged in _YES else [{"staged": True}, {}]
        share = self._share(ctx, 1 + len(scopes) * len(kinds))
        status = _head(self._answer(ctx, "git_status", {}, 0)[0], STATUS_LINES, "call git_status for all of it")
        diffs = [self._answer(ctx, "git_diff", {**kind, **scope}, share)[0] for scope in scopes for kind in kinds]
        what = ("the staged changes (what the next commit holds)" if staged in _YES else
                "every uncommitted change: the staged ones (what the next commit holds), then those not staged")
        where = f" under {place(path)}" if path else ""
        task = (f"Review {what}{where} in this workspace, as a careful reviewer would before they are committed. "
                "Look for bugs, edge cases and error handling that is missing, changes without tests, unclear names "
                "or code, and anything that does not match the rest of the code. Read the surrounding code where the "
                "diff alone cannot tell (read_file, read_symbol, find_references). New files that are not yet added "
                "(?? in the status) are in no diff: read those that belong to the change. Give each finding with its "
                "file and line, most serious first, and say plainly when you find nothing wrong.")
        return [task, status, *diffs]

    def explain_symbol(self, ctx: Context, arguments: dict[str, str]) -> list[str]:
        name = (_given(arguments, "name") or "").strip()
        if not name:
            raise _invalid("name must name a symbol")
        if any(wildcard in name for wildcard in "*?["):
            raise _invalid("name must be a symbol's name or qualified name (Class.method), not a pattern; find_symbol "
                           "finds the names a pattern matches")
        path = _given(arguments, "path") or "."
        share = self._share(ctx, 3)
        shown, found = self._answer(ctx, "find_symbol", {"name": name, "path": path, "limit": 20}, 0)
        definitions = (found.structured or {}).get("symbols") or []
        if not definitions:  # the tool's words: why not, and what it skipped (a file too large, ...)
            raise _invalid("find_symbol: " + shown.split("\n", 1)[1])
        first = definitions[0]
        which = "" if len(definitions) == 1 else (
            f" It has {plural(len(definitions), 'definition')}{' or more' if (found.structured or {}).get('truncated') else ''}"
            f" (find_symbol below); the code shown is the first, {printable(first['path'])}:{first['line']}: say "
            "which of the others matter, and read them with read_symbol.")
        task = (f"Explain what `{printable(name)}` does in this workspace: its purpose, its inputs and outputs, what it "
                "relies on, its side effects and edge cases, and how the rest of the code uses it (the references "
                f"below, the most certain first; by name, so some may be another symbol's).{which} Read more of the "
                "code where it helps (read_symbol, find_definition, read_file), and cite files and lines.")
        code = self._answer(ctx, "read_symbol", {"path": first["path"], "name": first["qualified_name"]}, share)[0]
        uses = self._answer(ctx, "find_references", {"name": name, "path": path, "limit": REFERENCES_SHOWN}, share)[0]
        return [task, shown, code, uses]

    def path_history(self, ctx: Context, arguments: dict[str, str]) -> list[str]:
        path = _given(arguments, "path")
        if path is None:
            raise _invalid("path must name a file or folder")
        given = _given(arguments, "limit")
        if given is None:
            limit = HISTORY_DEFAULT
        elif _WHOLE_NUMBER.fullmatch(given.strip()) and 1 <= int(given) <= HISTORY_MAX:
            limit = int(given)
        else:
            raise _invalid(f"limit must be a whole number from 1 to {HISTORY_MAX}")
        log = self._answer(ctx, "git_log", {"path": path, "limit": limit}, self._share(ctx, 1))[0]
        task = (f"Summarise the history of {place(path)} from its recent commits below: what changed, when and why "
                "(as the messages say), the main themes and turning points, and who worked on it. Name the commits "
                "worth reading in full; git_show shows one, git_diff compares two.")
        return [task, log]
