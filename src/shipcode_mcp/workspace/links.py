"""resource_link content (--resource-links): a result that names files also points at their file:// resources.

A client that shows links (an attachment to open, a resource to add to the context) gets one per file the
result names, in the result's order, each file once, at most MAX_LINKS: the files of list_files, those of
search_code's and search_structure's matches, of find_symbol's definitions and find_references' uses, of a
folder's outline. The URI is the one resources/list gives the file (its real path in a root), so reading it
is an ordinary resources/read, confined like every read; its MIME type is the one its name gives (nothing is
read to tell it). Each link is after the result's text, so a client
that does not show links reads the same text first; links are added after the result was cut to the client's
budget (budget.py), from what was kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..primitives import ToolResult, resource_link
from .mime import guess_mime_type
from .roots import OutsideRoots
from .text import printable
from .uris import file_uri

if TYPE_CHECKING:
    from typing import Any

    from .roots import Roots

MAX_LINKS = 20
"""The most links one result carries (a listing of 200 files gets its first 20)."""

_NAMED = {"list_files": ("files", None), "search_code": ("lines", "path"), "search_structure": ("matches", "path"),
          "find_symbol": ("symbols", "path"), "find_references": ("references", "path"), "outline": ("symbols", "path")}
"""Where each tool's structured content names files: the list, and the key of a file in each item (None: the
item is the path)."""


def named_files(tool: str, structured: dict[str, Any] | None) -> list[str]:
    """The paths `tool`'s structured content names, in order, each once, at most MAX_LINKS."""
    if tool not in _NAMED or not isinstance(structured, dict):
        return []
    key, field = _NAMED[tool]
    items = structured.get(key)
    found: dict[str, None] = {}
    for item in items if isinstance(items, list) else ():
        path = item if field is None else item.get(field) if isinstance(item, dict) else None
        if isinstance(path, str) and path not in found:
            found[path] = None
            if len(found) == MAX_LINKS:
                break
    return list(found)


def with_links(tool: str, value: Any, roots: Roots) -> Any:
    """`value` with a resource_link after its content for each file it names (see the module's docstring);
    an error result, or one naming no file, as it was."""
    if not isinstance(value, ToolResult) or value.is_error:
        return value
    links = []
    for path in named_files(tool, value.structured):
        try:
            real = roots.resolve(path)
        except OutsideRoots:  # (a path the tool showed is inside; a root the client has since dropped is not)
            continue
        links.append(resource_link(file_uri(real), printable(path), mime_type=guess_mime_type(real)))
    return ToolResult([*value.content, *links], value.structured) if links else value
