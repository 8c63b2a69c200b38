"""The built-in features: a code workspace's files, search and git history, as tools and resources."""

from __future__ import annotations

from .roots import Roots

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from ..server import Server


def install(server: Server, folders: list[str], *, allow_write: bool = False, watch: bool = False,
            confirm_writes: bool = False, precise: str | None = None, max_result_tokens: int = 0) -> Roots:
    """Register the workspace tools and resources for `folders` on `server` (the writing tools with `allow_write`
    or `confirm_writes`, asking the user before each change with the latter); with `precise` ("now" or "on first
    need"), the language servers answer the code tools, started now or when a call first needs one; each tool
    result is cut to `max_result_tokens` (0: no cap but what a request asks; budget.py)."""
    # the definitions only when installing: importing one workspace module (sandbox, roots) does not load them
    from .resources import install_resources
    from .tools import install_tools

    roots = Roots(folders)
    install_tools(server, roots, allow_write=allow_write or confirm_writes, confirm_writes=confirm_writes,
                  max_result_tokens=max_result_tokens)
    install_resources(server, roots, watch=watch)
    if precise is not None:
        from .lsp.servers import SERVERS  # off the start-up budget: only with --precise

        SERVERS.enabled = True
        if precise == "now":
            SERVERS.start(tuple(roots.paths))
    return roots
