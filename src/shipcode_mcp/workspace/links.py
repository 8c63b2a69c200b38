"""resource_link content (--resource-links): a result that names files also points at their file:// resources.

A client that shows links (an attachment to open, a resource to add to the context) gets one per file the
result names, in the result's order, each file once, at most MAX_LINKS: the files of list_files, those of
search_code's and search_structure's matches, of find_symbol's definitions and find_references' uses, of an
outline. A file is linked only when the resources serve it (the listing of resource_tree holds it: not an
ignored file, nothing in .git/, nothing past the listing's cap), and its link is the listing's own: the same
URI, MIME type and size as resources/list gives, so resources/read reads it. The path a result shows is turned
back into the file by the roots' one rule for shown paths (Roots.shown_path: no URI is parsed, so a folder
named `file:` stays a folder). Links come after the result's text, so a client that does not show them reads
the same text first; they are added after the result was cut to the client's budget (budget.py), from what
was kept, and only while the result with them stays within that budget (a client such as Claude Code turns
each into a line of text for the model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..primitives import ToolResult, resource_link
from .resource_limits import SNAPSHOT_SECONDS, display
from .text import printable

if TYPE_CHECKING:
    from typing import Any

    from .resources import Files

MAX_LINKS = 20
"""The most links one result carries (a listing of 200 files gets its first 20)."""

_NAMED = {"list_files": ("files", None), "search_code": ("lines", "path"), "search_structure": ("matches", "path"),
          "find_symbol": ("symbols", "path"), "find_references": ("references", "path"), "outline": ("symbols", "path")}
"""Where each tool's structured content names files: the list, and the key of a file in each item (None: the
item is the path)."""


def named_files(tool: str, structured: dict[str, Any] | None) -> list[str]:
    """The paths `tool`'s structured content names, in order, each once."""
    if tool not in _NAMED or not isinstance(structured, dict):
        return []
    key, field = _NAMED[tool]
    items = structured.get(key)
    found: dict[str, None] = {}
    for item in items if isinstance(items, list) else ():
        path = item if field is None else item.get(field) if isinstance(item, dict) else None
        if isinstance(path, str):
            found[path] = None
    return list(found)


def with_links(tool: str, value: Any, files: Files, budget_bytes: int) -> Any:
    """`value` with a resource_link after its content for each served file it names (see the module's
    docstring), while the whole stays within `budget_bytes` (0: no limit); an error result, or one naming no
    served file, as it was."""
    if not isinstance(value, ToolResult) or value.is_error:
        return value
    from . import budget  # (a result's size, as the budget counts it)

    roots = files.roots
    used = budget.tokens(value) * budget.BYTES_PER_TOKEN
    links: list[dict[str, Any]] = []
    for shown in named_files(tool, value.structured):
        if len(links) == MAX_LINKS:
            break
        path = roots.shown_path(shown)
        root = roots.root_of(path)
        if root is None:  # (a root the client has since dropped)
            continue
        rel = path[len(root.rstrip("/")) + 1:]
        snapshot = files.snapshot(root, SNAPSHOT_SECONDS)
        if not rel or not snapshot.has_file(rel):  # not served: a link resources/read would refuse
            continue
        served = snapshot.resource(rel).to_dict()
        link = resource_link(served["uri"], printable(display(shown)), mime_type=served.get("mimeType"),
                             size=served.get("size"))
        used += budget.size("", link)
        if budget_bytes and used > budget_bytes:
            break
        links.append(link)
    return ToolResult([*value.content, *links], value.structured) if links else value
