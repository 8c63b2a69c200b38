"""The built-in features: a code workspace's files, search and git history, as tools and resources."""

from __future__ import annotations

from .roots import Roots

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..primitives import ResourceTemplate
    from ..server import Server


def install(server: Server, folders: list[str], *, allow_write: bool = False, watch: bool = False) -> Roots:
    """Register the workspace tools and resources for `folders` on `server`."""
    from .resources import install_resources
    from .tools import install_tools

    roots = Roots(folders)
    install_tools(server, roots, allow_write=allow_write)
    before = list(server.resource_templates)
    install_resources(server, roots, watch=watch)
    ours = [t for t in server.resource_templates if t not in before]
    roots.on_change(lambda: _retarget_templates(server, roots, ours))
    return roots


def _retarget_templates(server: Server, roots: Roots, ours: list[ResourceTemplate]) -> None:
    """When the roots change (client roots), swap our per-root templates for the new roots' ones."""
    from .resources import templates

    if ours:
        fresh = list(templates(roots, ours[0].reader))
        server.resource_templates = [t for t in server.resource_templates if t not in ours] + fresh
        ours[:] = fresh
