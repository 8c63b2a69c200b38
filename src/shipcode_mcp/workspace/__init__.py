"""The built-in features: a code workspace's files, search and git history, as tools and resources."""

from __future__ import annotations

from .roots import Roots

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from ..server import Server
    from .command_sandbox import RunOptions


def install(server: Server, folders: list[str], *, allow_write: bool = False, watch: bool = False,
            confirm_writes: bool = False, precise: str | None = None, max_result_tokens: int = 0,
            prompts: bool = False, resource_links: bool = False, skills: bool = False,
            index_folder: str | None = None, run: RunOptions | None = None) -> Roots:
    """Register the workspace tools and resources for `folders` on `server` (the writing tools with `allow_write`
    or `confirm_writes`, asking the user before each change with the latter); with `precise` ("now" or "on first
    need"), the language servers answer the code tools, started now or when a call first needs one; each tool
    result is cut to `max_result_tokens` (0: no cap but what a request asks; budget.py); with `prompts`, the prompts
    built from the tools (prompts.py) and completion of their paths and of the resource templates'; with
    `resource_links`, a result that names files links their resources (links.py); with `skills`, the Agent Skills
    of the workspace over the Skills extension (skills.py); with `index_folder`, the code index of each root lives
    there (code/index.py; default_index_folder() is the user's cache folder); with `run`, run_command
    (run_command.py)."""
    # the definitions only when installing: importing one workspace module (sandbox, roots) does not load them
    from .resources import install_resources
    from .tools import install_tools

    roots = Roots(folders, index_folder)
    files = install_resources(server, roots, watch=watch, complete=prompts)
    install_tools(server, roots, allow_write=allow_write or confirm_writes, confirm_writes=confirm_writes,
                  max_result_tokens=max_result_tokens, resource_links=files if resource_links else None, run=run)
    if server.discover_instructions is None:
        server.discover_instructions = instructions(server)
    if files.completer is not None:
        from .prompts import install_prompts  # only with --prompts

        install_prompts(server, roots, files.completer.argument, max_result_tokens)
    if skills:
        from .skills import install_skills  # only with --skills

        install_skills(server, roots, files)
    if precise is not None:
        from .lsp.servers import SERVERS  # off the start-up budget: only with --precise

        SERVERS.enabled = True
        if precise == "now":
            SERVERS.start(tuple(roots.paths))
    return roots


def default_index_folder() -> str:
    """The user's cache folder for the code index (XDG's rule): `$XDG_CACHE_HOME/shipcode-mcp/index`, else
    `~/.cache/shipcode-mcp/index`."""
    import os  # loaded at start already; here only for this (local import)

    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "shipcode-mcp", "index")


def instructions(server: Server) -> str:
    """How a model picks among the tools `server` offers (modern clients get it from server/discover): what the
    tool descriptions do not say, which tool answers which question, in a few lines."""
    offered = set(server.tools)
    lines = ["The workspace is the folders this server was given (its roots): a path is relative to the first root, or "
             "absolute inside one; nothing outside them can be read."]
    if "find_symbol" in offered:
        lines.append("For code, ask about the program before grepping its text: find_symbol (where a name is defined), "
                     "find_references (who uses it, the most certain first), find_definition (what a name at a place is), "
                     "outline and read_symbol (a file's or one symbol's code without reading the whole file).")
    lines.append("search_code searches text (a ripgrep regex), list_files names; read_file reads a page (offset, limit); "
                 "git_status, git_log, git_diff and git_show give the history.")
    if "edit_file" in offered:
        lines.append("To change files: edit_file (exact text replaced), apply_patch (a diff), write_file"
                     + (", replace_symbol and rename_symbol" if "rename_symbol" in offered else "")
                     + "; each can dry_run first, and a change that breaks the syntax is refused.")
    if "run_command" in offered:
        lines.append("run_command runs a command line (the tests, a build, a linter) in a sandbox and returns its exit "
                     "status and output: run the tests after a change.")
    lines.append("A result too long for the client is cut at whole lines or items and says how to get the rest.")
    return "\n".join(lines)
