"""The `shipcode-mcp` command: parse arguments, build the server, run a transport."""

from __future__ import annotations

import os
import sys
import threading
import time

from . import __version__, log
from .server import Server
from .settings import DEFAULTS, Settings
from .transports.stdio import serve_stdio
from .workspace import default_index_folder, install
from .workspace.roots import Roots, client_root_folders

TYPE_CHECKING = False  # typing is not imported at start
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    from .workspace.command_sandbox import RunOptions

SERVER_NAME = "shipcode-mcp"
ABOUT = {
    "title": "shipcode-mcp",
    "description": "Files, code search and git history of a code workspace, confined to the folders it is given.",
    "websiteUrl": "https://shipcode-mcp.github.io/shipcode-mcp/",
    "icons": [{"src": "https://raw.githubusercontent.com/shipcode-mcp/shipcode-mcp/main/docs/icon.svg",
               "mimeType": "image/svg+xml", "sizes": ["any"]}],
}
"""What server/discover says of this server besides its name and version (server.json says the same)."""
SETTINGS_VARIABLE = "SHIPCODE_MCP_SETTINGS"  # how a supervisor hands its Settings (JSON) to each worker process
MAX_RUN_TIMEOUT = 3600  # workspace/tools.py's, said here without loading it
META_KEY = "io.github.shipcode-mcp/maxResultTokens"  # workspace/budget.py's, said here without loading it
MIN_RESULT_TOKENS = 1000  # workspace/budget.py's MIN_TOKENS


def build_parser() -> argparse.ArgumentParser:
    import argparse  # not at start: the usual command line is read without it (parse_args)

    parser = argparse.ArgumentParser(
        prog="shipcode-mcp",
        description="An MCP server (protocols 2026-07-28 and 2025-06-18) that gives AI assistants fast, exact and "
        "safe access to a code workspace: its files, a code search and its git history. It speaks "
        "newline-delimited JSON-RPC on stdin/stdout; diagnostics go to stderr.",
    )
    parser.add_argument("roots", nargs="*", metavar="ROOT",
                        help="workspace folder(s) to serve; every path is confined to them (default: over stdio, the "
                        "client's roots if it offers them, else the current directory)")
    parser.add_argument("--allow-write", action="store_true", help="also offer the tools that change files")
    parser.add_argument("--confirm-writes", action="store_true",
                        help="offer the tools that change files, each change shown to the user to confirm first "
                        "(through the client's elicitation)")
    parser.add_argument("--watch", action="store_true",
                        help="watch the roots and notify subscribed clients of changes (needs the 'watch' extra)")
    parser.add_argument("--precise", action="store_true",
                        help="answer the code tools from the installed language servers (basedpyright for Python: the "
                        "'precise' extra; typescript-language-server for TypeScript and JavaScript, found on PATH), "
                        "started now and warmed in the background; exact references, definitions and renames")
    parser.add_argument("--prompts", action="store_true",
                        help="also offer prompts built from the tools (review_changes, explain_symbol, path_history: "
                        "slash commands in Claude Code) and completion of their arguments and of the resource "
                        "templates' paths")
    parser.add_argument("--resource-links", action="store_true",
                        help="a result that names files (list_files, search_code, find_symbol, ...) also carries a "
                        "resource_link to each (at most 20), pointing at its file:// resource")
    parser.add_argument("--skills", action="store_true",
                        help="serve the workspace's Agent Skills (each folder with a SKILL.md) over the Skills extension "
                        "to 2026-07-28 clients: skills/list, skills/get and skill:// resources (needs the 'skills' extra)")
    parser.add_argument("--index-dir", metavar="DIR",
                        help="keep the code index (each root's definitions, so find_symbol looks a name up instead of "
                        "reading the files) in DIR (default: $XDG_CACHE_HOME/shipcode-mcp/index, else "
                        "~/.cache/shipcode-mcp/index)")
    parser.add_argument("--no-index", action="store_true",
                        help="keep no code index: find_symbol reads the files that mention the name each time")
    parser.add_argument("--require-sandbox", action="store_true",
                        help="refuse to start where the kernel sandbox of child processes (Landlock) is missing, or, "
                        "with --allow-run, any protection of run_command's sandbox")
    running = parser.add_argument_group("running commands (run_command)")
    running.add_argument("--allow-run", action="store_true",
                         help="offer run_command: a shell command line run in a folder of the roots inside a sandbox "
                         "(bubblewrap's namespaces: the 'run' extra); it writes the roots only with --allow-write")
    running.add_argument("--run-network", action="store_true",
                         help="let commands reach the network (default: a private loopback only)")
    running.add_argument("--run-read", action="append", metavar="DIR",
                         help="a folder commands may also read (a toolchain, a virtualenv or node_modules outside the "
                         "roots); repeatable")
    running.add_argument("--run-env", action="append", metavar="NAME[=VALUE]",
                         help="a variable every command gets: NAME=VALUE, or NAME for the server's own value; repeatable")
    running.add_argument("--run-timeout", type=_count, metavar="SECONDS",
                         help=f"the longest timeout a call may ask (default {DEFAULTS['run_timeout']})")
    running.add_argument("--run-memory", type=_count, metavar="MIB",
                         help=f"the memory of a command's whole process tree (default {DEFAULTS['run_memory']} MiB)")
    running.add_argument("--run-processes", type=_count, metavar="N",
                         help=f"processes a command's tree may have at once (default {DEFAULTS['run_processes']})")
    parser.add_argument("--max-result-tokens", type=_count, metavar="N",
                        help="cut every tool result to about N tokens (its text and structured content, estimated at "
                        "3 bytes a token), at whole lines or items, saying how to get the rest; a client may ask for "
                        f"less per call (_meta \"{META_KEY}\"). Default {DEFAULTS['max_result_tokens']}, under Claude "
                        f"Code's 25000; at least {MIN_RESULT_TOKENS}; 0: no cap")
    parser.add_argument("--state-key-file", metavar="FILE",
                        help="the key (16 bytes or more) that signs the state a modern client carries between the rounds "
                        "of a request that asks it something; give every process of a deployment the same file "
                        "(default: a random key per process, shared with its --workers)")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error", "off"),
                        help="what to write to stderr: warning (the default) says what is served at start, then only "
                        "what goes wrong; debug adds a line per request (docs/logging.md)")
    parser.add_argument("--log-format", choices=log.FORMATS,
                        help="text (the default) or json: one JSON object per line, uvicorn's too, for log collectors")
    http = parser.add_argument_group("Streamable HTTP (needs the 'http' extra)")
    http.add_argument("--http", metavar="[HOST:]PORT", type=_host_port,
                      help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (default host 127.0.0.1)")
    http.add_argument("--stateless", action="store_true",
                      help="no sessions: every POST stands alone, so several workers or machines can serve one "
                      "deployment (no GET stream, no requests to the client)")
    http.add_argument("--workers", type=int, metavar="N",
                      help="worker processes (uvicorn), each started again if it dies; more than one needs --stateless")
    http.add_argument("--supervise", action="store_true",
                      help="serve from a worker process that is started again if it dies (a crash, the OOM killer) or "
                      "stops answering its supervisor for 5 s; --workers above 1 always are (sessions of a dead worker end)")
    http.add_argument("--allow-origin", action="append", metavar="ORIGIN",
                      help="a browser origin allowed besides loopback ones, e.g. https://app.example.com ('*': any)")
    http.add_argument("--allow-host", action="append", metavar="HOST",
                      help="a Host name to accept (default: loopback names when bound to loopback, any otherwise)")
    http.add_argument("--max-connections", type=_count, metavar="N",
                      help="open connections at most (default: from the open-file limit); at the cap a new connection "
                      "closes the one that has waited longest for its request (0: no cap)")
    http.add_argument("--header-timeout", type=_seconds, metavar="SECONDS",
                      help="time a connection has to send a request's headers (default 10; 0: no limit)")
    http.add_argument("--max-tls-handshakes", type=_count, metavar="N",
                      help="TLS handshakes pending at once (some 260 KB each); one more closes the one pending longest "
                      "(default 128; 0: no cap)")
    http.add_argument("--write-timeout", type=_seconds, metavar="SECONDS",
                      help="time an answer may stay unwritten because its client reads nothing, then the connection "
                      "closes; meanwhile it may be closed for a newcomer at --max-connections (default 30; 0: no limit)")
    http.add_argument("--body-timeout", type=_seconds, metavar="SECONDS",
                      help="time a request's body has to arrive, else 408 (default 60; 0: no limit)")
    http.add_argument("--max-sessions", type=_count, metavar="N",
                      help="sessions kept at most (default 1000); at the cap the least recently used idle one ends (0: no cap)")
    http.add_argument("--max-concurrent-calls", type=_count, metavar="N",
                      help="handler calls of one session (or one caller, without sessions) run at once; the rest wait "
                      "their turn (default 8; 0: no limit)")
    http.add_argument("--body-budget", type=_count, metavar="BYTES",
                      help="bytes of request bodies over 64 KiB held at once, across all requests; beyond it 503 "
                      "(default 268435456, 256 MiB; 0: no budget)")
    http.add_argument("--max-json-values", type=_count, metavar="N",
                      help="JSON values a request body over 64 KiB may hold, else 413 (default 100000; 0: no limit)")
    http.add_argument("--max-requests-per-caller", type=_count, metavar="N",
                      help="requests one caller (a token's subject, else a client address) has open at once, else 429 "
                      "(default 128; 0: no cap)")
    http.add_argument("--max-streams-per-caller", type=_count, metavar="N",
                      help="GET streams and subscriptions/listen one caller holds open at once, else 429 (default 32; "
                      "0: no cap)")
    secure = parser.add_argument_group("Securing HTTP (docs/http.md): a server beyond loopback needs one of the auth modes")
    secure.add_argument("--auth-issuer", metavar="URL",
                        help="be an OAuth 2.1 resource server of this authorization server: every request needs one of its "
                        "access tokens, for this server (needs the 'auth' extra)")
    secure.add_argument("--resource-url", metavar="URL",
                        help="this server's canonical URL, the audience its tokens must name (default: the URL served, "
                        "e.g. http://127.0.0.1:8765/mcp; give the public one behind a proxy)")
    secure.add_argument("--auth-client-id", metavar="ID",
                        help="the client id this server introspects opaque tokens with (RFC 7662), if the issuer needs it")
    secure.add_argument("--auth-client-secret-file", metavar="FILE", help="the secret of --auth-client-id, in a file")
    secure.add_argument("--auth-token-file", metavar="FILE",
                        help="accept the bearer tokens listed in FILE, one 'TOKEN [SCOPE ...]' per line (scopes "
                        "shipcode:read, shipcode:write; read-only when none); SIGHUP reads it again")
    secure.add_argument("--insecure-no-auth", action="store_true",
                        help="serve a non-loopback address without authentication: anyone who reaches the port gets the "
                        "workspace (a warning says so)")
    secure.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate (PEM; with --tls-key)")
    secure.add_argument("--tls-key", metavar="FILE", help="the private key of --tls-cert (PEM)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # settings.DEFAULTS, as argparse wants them (an appended option's default is a list it copies)
    parser.set_defaults(**{name: list(value) if isinstance(value, tuple) else value for name, value in DEFAULTS.items()
                           if name != "roots"})
    return parser


_SWITCHES = {"--allow-write": "allow_write", "--allow-run": "allow_run", "--confirm-writes": "confirm_writes", "--watch": "watch",
             "--require-sandbox": "require_sandbox", "--precise": "precise", "--prompts": "prompts",
             "--resource-links": "resource_links", "--skills": "skills", "--no-index": "no_index"}


def parse_args(argv: Sequence[str]) -> Settings:
    """The command line as argparse reads it, as `Settings`. The usual one, root folders and the switches of
    `_SWITCHES` (--allow-write, --watch, --precise, ...), is read without argparse
    (`read_plainly`), whose import would be a large part of the cold start (docs/performance.md); anything else
    (help, errors too) goes to argparse.
    tests/test_cli.py compares the two on every command line of up to four words of roots and switches."""
    plain = read_plainly(argv)
    return plain if plain is not None else Settings.of(build_parser().parse_args(argv))


def read_plainly(argv: Sequence[str]) -> Settings | None:
    """The settings of a command line of roots and switches only, or None (an option, or roots on both sides of
    a switch, which argparse refuses: its word)."""
    roots = [arg for arg in argv if arg not in _SWITCHES]
    first = next((i for i, arg in enumerate(argv) if arg not in _SWITCHES), 0)
    if any(arg.startswith("-") for arg in roots) or list(argv[first:first + len(roots)]) != roots:
        return None
    return Settings(roots=roots, **{dest: arg in argv for arg, dest in _SWITCHES.items()})


def build(settings: Settings, state_key: bytes | None = None) -> tuple[Server, Roots]:
    """The workspace server the settings describe, and its roots: the one assembly, for stdio, HTTP and each
    supervised worker. Over stdio without a ROOT the workspace follows the client's roots once it lists them
    (the current directory until then, or if it has none)."""
    return _assemble(settings.roots, allow_write=settings.allow_write, watch=settings.watch,
                     follow_client_roots=settings.http is None, state_key=state_key,
                     confirm_writes=settings.confirm_writes, precise=settings.precise,
                     max_result_tokens=settings.max_result_tokens, prompts=settings.prompts,
                     resource_links=settings.resource_links, skills=settings.skills,
                     index_folder=None if settings.no_index else settings.index_dir or default_index_folder(),
                     run=_run_options(settings))


def _run_options(settings: Settings) -> RunOptions | None:
    """What run_command may do (--allow-run and its options); None without --allow-run, or where commands cannot run
    in their sandbox (then the tool is not offered: a command never runs outside it). ValueError for a bad option."""
    if not settings.allow_run:
        return None
    from .workspace.command_sandbox import RunOptions, unavailable_reason  # only with --allow-run

    options = RunOptions.of(settings.run_read, settings.run_env, network=settings.run_network,
                            max_timeout=settings.run_timeout, writable=settings.allow_write,
                            memory=settings.run_memory * 1024 * 1024, processes=settings.run_processes)
    return options if unavailable_reason() is None else None


def build_server(roots: Sequence[str], *, allow_write: bool = False, watch: bool = False,
                 state_key: bytes | None = None, confirm_writes: bool = False, precise: bool = False,
                 max_result_tokens: int = DEFAULTS["max_result_tokens"], prompts: bool = False,
                 resource_links: bool = False, skills: bool = False, index_folder: str | None = None,
                 run: RunOptions | None = None) -> Server:
    """The workspace server of these roots (a library's or a test's way to it, roots given; no code index unless
    `index_folder` says where; run_command with `run`)."""
    return _assemble(roots, allow_write=allow_write, watch=watch, follow_client_roots=False, state_key=state_key,
                     confirm_writes=confirm_writes, precise=precise, max_result_tokens=max_result_tokens,
                     prompts=prompts, resource_links=resource_links, skills=skills, index_folder=index_folder,
                     run=run)[0]


def _assemble(roots: Sequence[str], *, allow_write: bool, watch: bool, follow_client_roots: bool,
              state_key: bytes | None, confirm_writes: bool = False, precise: bool = False,
              max_result_tokens: int = 0, prompts: bool = False,
              resource_links: bool = False, skills: bool = False,
              index_folder: str | None = None, run: RunOptions | None = None) -> tuple[Server, Roots]:
    server = Server(SERVER_NAME, __version__, state_key=state_key)
    server.about = dict(ABOUT)  # server/discover only: the 2025-06-18 initialize answer stays as it is
    following = follow_client_roots and not roots
    # With --precise the language servers start now, but for roots that the client's will replace (on first need).
    workspace = install(server, list(roots) or [os.getcwd()], allow_write=allow_write, watch=watch,
                        confirm_writes=confirm_writes, precise="now" if precise and not following else
                        "on first need" if precise else None, max_result_tokens=max_result_tokens, prompts=prompts,
                        resource_links=resource_links, skills=skills, index_folder=index_folder, run=run)
    if following:
        _follow_client_roots(server, workspace)
    return server, workspace


def announce(paths: Sequence[str], *, following: bool = False, url: str | None = None, stateless: bool = False,
             workers: int = 1, supervised: bool = False, allow_write: bool = False, watch: bool = False,
             sandbox_required: bool = False, sandbox_missing: str | None = None, confirm_writes: bool = False,
             auth: tuple[str, str] = ("none", "no auth"), precise: bool = False,
             run_missing: list[str] | None = None) -> None:
    """The start-up line: what is served, where, and how, for the person who started the server. It shows
    at the default level (a notice) and hides with --log-level error or off; docs/logging.md shows each.
    `sandbox_missing` is why children run without the kernel sandbox (None: they run in it).
    `auth` is (mode, how it reads): ("oauth", "OAuth, tokens of ISSUER for URL"), ("token-file", ...), ("none", "no auth").
    `run_missing` (with --allow-run) lists what run_command's sandbox lacks here (empty: nothing)."""
    folders = ", ".join(paths)
    served = f"the client's roots (or {folders} if it gives none)" if following else folders
    if url is None:
        where = "over stdio"
    else:
        how = ["stateless" if stateless else "sessions"]
        if supervised:
            how.append(f"{workers} worker{'s' if workers > 1 else ''}, supervised")
        where = f"at {url} ({', '.join(how)})"
    writes = "writes confirmed by the user" if confirm_writes else "writes allowed" if allow_write else "read-only"
    modes = [writes, "watching for changes" if watch else "not watching"]
    modes.append("children sandboxed" if sandbox_missing is None else f"children not sandboxed ({sandbox_missing})")
    if run_missing is not None:
        modes.append(f"run_command without {'; '.join(run_missing)}" if run_missing else "run_command sandboxed")
    modes.append(auth[1])
    servers: list[str] = []
    if precise:
        from .workspace.lsp.servers import SERVERS  # off the start-up budget: only with --precise

        servers = SERVERS.described()
        modes.append(f"precise: {', '.join(servers)}" if servers else
                     "precise, but no language server is installed (pip install 'shipcode-mcp[precise]')")
    sandbox = "required" if sandbox_required else "on" if sandbox_missing is None else "off"
    fields: dict[str, Any] = {"event": "start", "version": __version__, "roots": list(paths), "client_roots": following,
                              "transport": "stdio" if url is None else "http", "write": allow_write or confirm_writes,
                              "watch": watch, "sandbox": sandbox, "auth": auth[0]}
    if confirm_writes:
        fields["confirm_writes"] = True
    if precise:
        fields["language_servers"] = servers
    if sandbox_missing is not None:
        fields["sandbox_missing"] = sandbox_missing
    if run_missing is not None:
        fields["run_missing"] = run_missing
    if url is not None:
        fields.update(url=url, stateless=stateless, workers=workers, supervised=supervised)
    log.notice(f"serving {served} {where}; {', '.join(modes)}", **fields)


def _follow_client_roots(server: Server, workspace: Roots) -> None:
    start = list(workspace.paths)

    def follow(session: Any, client_roots: list[dict[str, Any]]) -> None:
        folders = client_root_folders(client_roots)
        if client_roots and not folders:
            log.warning("none of the client's roots is a local folder; serving the current directory")
        workspace.update(folders or start)
        log.info(f"workspace roots: {', '.join(workspace.paths)}")

    server.on_roots(follow)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    log.set_level(args.log_level)
    log.set_format(args.log_format)
    if args.http is None and (args.stateless or args.workers != 1 or args.supervise or args.allow_origin or args.allow_host
                              or _securing(args) or args.limiting()):
        print("shipcode-mcp: --stateless, --workers, --supervise, --allow-origin, --allow-host, the limits and the auth and TLS options "
              "need --http", file=sys.stderr)
        return 2
    if args.http is not None:
        refused = _unsafe(args)
        if refused is not None:
            print(f"shipcode-mcp: {refused}", file=sys.stderr)
            return 2
    if 0 < args.max_result_tokens < MIN_RESULT_TOKENS:
        print(f"shipcode-mcp: --max-result-tokens takes 0 (no cap) or {MIN_RESULT_TOKENS} or more: a result must hold a "
              "line", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("shipcode-mcp: --workers takes a number of processes, 1 or more", file=sys.stderr)
        return 2
    if args.workers > 1 and not args.stateless:
        print("shipcode-mcp: --workers above 1 needs --stateless (a session lives in one process)", file=sys.stderr)
        return 2
    if min(args.run_timeout, args.run_memory, args.run_processes) < 1 or args.run_timeout > MAX_RUN_TIMEOUT:
        print(f"shipcode-mcp: --run-timeout (at most {MAX_RUN_TIMEOUT}), --run-memory and --run-processes take 1 or more",
              file=sys.stderr)
        return 2
    running = ("run_network", "run_read", "run_env", "run_timeout", "run_memory", "run_processes")
    if not args.allow_run and any(getattr(args, name) != DEFAULTS[name] for name in running):
        print("shipcode-mcp: --run-network, --run-read, --run-env, --run-timeout, --run-memory and --run-processes "
              "need --allow-run", file=sys.stderr)
        return 2
    run_missing: list[str] | None = None
    if args.allow_run:
        from .workspace.command_sandbox import protections_missing  # only with --allow-run

        run_missing = protections_missing(args.run_memory * 1024 * 1024, args.run_processes)
        if args.require_sandbox and run_missing:
            print(f"shipcode-mcp: --require-sandbox: run_command would be without {'; '.join(run_missing)}",
                  file=sys.stderr)
            return 2
    if args.require_sandbox:
        from .workspace.sandbox import unavailable_reason  # at once with --require-sandbox; else 100 ms after start

        missing = unavailable_reason()
        if missing is not None:
            print(f"shipcode-mcp: --require-sandbox: child processes cannot be sandboxed: {missing}", file=sys.stderr)
            return 2
    try:
        state_key = _state_key(args.state_key_file)
        if _supervised(args):  # the workers build the server: here only what they will check, checked now
            server, workspace = None, Roots(list(args.roots) or [os.getcwd()])
            if args.watch:
                from .workspace.watch import can_watch  # off the start-up budget: only with --watch

                can_watch()
            if args.skills:
                from .workspace.skills import can_read_skills  # off the start-up budget: only with --skills

                can_read_skills()
        else:
            server, workspace = build(args, state_key)
    except (ValueError, OSError) as err:
        print(f"shipcode-mcp: {err}", file=sys.stderr)
        return 2
    check = None
    try:
        if args.http is None:
            paths = list(workspace.paths)  # as served at start: the client's roots may replace them before the line

            def start(missing: str | None) -> None:
                announce(paths, following=not args.roots, allow_write=args.allow_write, watch=args.watch,
                         confirm_writes=args.confirm_writes, precise=args.precise,
                         sandbox_required=args.require_sandbox, sandbox_missing=missing, run_missing=run_missing)

            if args.require_sandbox:
                start(None)  # checked above
            else:
                check = _check_sandbox_soon(start)
            assert server is not None
            return serve_stdio(server)
        return _serve_http(server, workspace, args, run_missing)
    finally:
        if check is not None:  # a server that stopped at once still says it, once
            check.cancel()
            log.first_said()
            check.join(1.0)


def _check_sandbox_soon(start: Callable[[str | None], None]) -> threading.Timer:
    """The start-up line over stdio, which says whether children run in the kernel sandbox: the check (the
    sandbox module, ctypes and a system call: 3 to 10 ms) runs 100 ms after start, out of its way, and
    `start(why_not)` writes the line then, or sooner if another line is written first (log.say_first: the
    start-up line stays the first); main runs it at the end if it has not run."""

    def check() -> None:
        missing = _sandbox_missing()
        start(missing)
        _warn_unsandboxed(missing)

    log.say_first(check)
    timer = threading.Timer(0.1, log.first_said)
    timer.name, timer.daemon = "shipcode-mcp-sandbox-check", True
    timer.start()
    return timer


def _sandbox_missing() -> str | None:
    from .workspace.sandbox import unavailable_reason  # its ctypes and resource load beside stdio's start, not before it

    return unavailable_reason()


def _warn_unsandboxed(missing: str | None) -> None:
    if missing is not None:
        log.warning(f"child processes (rg, git) run without the kernel sandbox: {missing}; path checks and "
                    "git's settings still confine them (--require-sandbox refuses to start like this)")


def _supervised(args: Settings) -> bool:
    """Whether the HTTP server runs in worker processes under a supervisor (uvicorn's starts a dead one again)."""
    return args.http is not None and (args.supervise or args.workers > 1)


def _serve_http(server: Server | None, workspace: Roots, args: Settings, run_missing: list[str] | None = None) -> int:
    """Serve `server` over HTTP, or (None: supervised) the one each worker builds from the same settings."""
    try:
        from .transports.http import serving as http_serving  # the http extra (Starlette, uvicorn), only with --http
    except ImportError as err:
        print(f"shipcode-mcp: --http needs the 'http' extra ({log.install_hint('http')}): {err}", file=sys.stderr)
        return 2
    assert args.http is not None  # main serves HTTP only then
    host, port = args.http
    try:
        auth = _resource_server(args)
    except ImportError as err:
        print(f"shipcode-mcp: the auth options need the 'auth' extra ({log.install_hint('auth')}): {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"shipcode-mcp: {err}", file=sys.stderr)
        return 2
    from .hosts import is_loopback  # off the start-up budget: only with --http

    if auth is None and not is_loopback(host):
        log.warning(f"--insecure-no-auth: anyone who can reach {host}:{port} can use the workspace "
                    f"({'read and write' if args.allow_write or args.confirm_writes else 'read'}) without a token")
    elif auth is not None and not args.tls_cert and not is_loopback(host):
        log.warning("tokens cross the network in clear text: give --tls-cert/--tls-key, or keep a TLS proxy in front "
                    "(docs/http.md, TLS)")
    missing = None if args.require_sandbox else _sandbox_missing()  # checked at once: HTTP's start-up is far longer
    supervised = server is None
    announce(workspace.paths, url=_served_url(args), stateless=args.stateless, workers=args.workers, supervised=supervised,
             allow_write=args.allow_write, watch=args.watch, sandbox_required=args.require_sandbox,
             sandbox_missing=missing, auth=_auth_mode(auth), confirm_writes=args.confirm_writes, precise=args.precise,
             run_missing=run_missing)
    _warn_unsandboxed(missing)
    tls = (args.tls_cert, args.tls_key) if args.tls_cert and args.tls_key else None  # together (_unsafe)
    if server is not None:
        if auth is not None and args.auth_issuer:
            _discover_soon(auth.verifier)  # after the start-up line, which stays the first
        return http_serving.serve_http(server, host, port, stateless=args.stateless, allowed_origins=args.allow_origin,
                               allowed_hosts=args.allow_host, log_level=args.log_level, auth=auth, tls=tls,
                               front=_front_limits(args), limits=_app_limits(args))
    os.environ[SETTINGS_VARIABLE] = args.to_json()  # each worker builds its own server from them: see http_app
    if args.state_key_file is None:  # one random key for all the workers (and the ones started again), so a
        # client's retry may land on any
        from .request_state import KEY_ENV  # off the start-up budget (hmac): only for supervised workers

        os.environ[KEY_ENV] = os.urandom(32).hex()
    tls_options: dict[str, Any] = {} if tls is None else {"ssl_certfile": tls[0], "ssl_keyfile": tls[1]}
    return http_serving.run_uvicorn(f"{__name__}:http_app", factory=True, host=host, port=port, workers=args.workers,
                            supervise=True, sessions=not args.stateless,
                            hangup_to_workers=bool(args.auth_token_file or args.auth_issuer),
                            log_level=args.log_level, front=_front_limits(args), **tls_options)


def http_app() -> Any:
    """The ASGI app of one supervised worker process (`--workers`, `--supervise`), built from the settings the
    parent passed on."""
    from .transports.http import endpoint, serving  # the http extra: a supervised worker serves --http

    serving.worker_started()
    args = Settings.from_json(os.environ[SETTINGS_VARIABLE])
    try:
        return _worker_app(args, endpoint, serving)
    except (ValueError, OSError) as err:  # e.g. a token file or a root broken since the parent read it
        _worker_refuses(str(err))


def _worker_app(args: Settings, http: Any, http_serving: Any) -> Any:
    log.set_level(args.log_level)
    log.set_format(args.log_format)
    if args.require_sandbox:
        from .workspace.sandbox import unavailable_reason  # only with --require-sandbox, as in main

        missing = unavailable_reason()
        if missing is not None:
            _worker_refuses(f"--require-sandbox: child processes cannot be sandboxed: {missing}")
    auth = _resource_server(args)
    if auth is not None and args.auth_issuer:
        _discover_soon(auth.verifier)
    if auth is not None:
        http_serving.reload_on_hangup(auth.reload)  # the supervisor passes SIGHUP on: see run_uvicorn
    state_key = _state_key(args.state_key_file)
    if state_key is None:
        from .request_state import KEY_ENV  # off the start-up budget (hmac), as in _serve_http

        shared = os.environ.pop(KEY_ENV, None)  # read once; the children (rg, git) need not inherit it
        state_key = bytes.fromhex(shared) if shared else None
    server, _ = build(args, state_key)
    server.tasks_offered = args.workers == 1  # a task is one process's: polls spread over workers would miss it
    app = http.create_app(server, stateless=args.stateless, allowed_origins=args.allow_origin, allowed_hosts=args.allow_host,
                          host=_served(args)[0], auth=auth, limits=_app_limits(args))
    if not log.enabled("debug"):
        return app
    from .transports.http.request_log import RequestLog  # only at --log-level debug: one line per request (docs/logging.md)

    return RequestLog(app)


def _worker_refuses(why: str) -> NoReturn:
    """A worker that cannot serve says why. At the start it exits with uvicorn's STARTUP_FAILURE (3), on which
    the supervisor stops: the deployment never served. Started again after a death, it waits
    RESTART_BACKOFF seconds first and exits 1, so the supervisor tries again (a token file being rewritten, no
    memory just after an OOM kill: what fails now may not in a while) without a line every half second,
    and the other workers serve on."""
    from .transports.http.serving import RESTART_BACKOFF, restarted  # the http extra: only a supervised worker refuses

    print(f"shipcode-mcp: {why}", file=sys.stderr)
    if not restarted():
        raise SystemExit(3)
    time.sleep(RESTART_BACKOFF)
    raise SystemExit(1)


def _front_limits(args: Settings) -> Any:
    """The connection limits the options give (transports.http.front.FrontLimits)."""
    from .transports.http.front import HEADER_TIMEOUT, MAX_HANDSHAKES, WRITE_TIMEOUT, FrontLimits  # uvicorn's: only with --http

    return FrontLimits(header_timeout=HEADER_TIMEOUT if args.header_timeout is None else args.header_timeout,
                       max_connections=args.max_connections,
                       write_timeout=WRITE_TIMEOUT if args.write_timeout is None else args.write_timeout,
                       max_handshakes=MAX_HANDSHAKES if args.max_tls_handshakes is None else args.max_tls_handshakes)


def _app_limits(args: Settings) -> Any:
    """The request, session and scheduling limits (transports.http.limits.HttpLimits): the options given, over the
    defaults. The options are named as its fields."""
    from .transports.http.limits import HttpLimits, with_fields  # only with --http

    given = {name: getattr(args, name) for name in ("body_timeout", "max_sessions", "max_concurrent_calls", "body_budget",
                                                     "max_json_values", "max_requests_per_caller", "max_streams_per_caller")}
    return with_fields(HttpLimits(), {name: value for name, value in given.items() if value is not None})


def _securing(args: Settings) -> bool:
    return any(getattr(args, name) for name in ("auth_issuer", "resource_url", "auth_client_id", "auth_client_secret_file",
                                                "auth_token_file", "insecure_no_auth", "tls_cert", "tls_key"))


def _unsafe(args: Settings) -> str | None:
    """Why the HTTP options cannot be served as given: above all, a server reachable beyond this machine
    with nobody checked, unless --insecure-no-auth says that is meant."""
    from .hosts import is_loopback  # off the start-up budget: only with --http

    host = _served(args)[0]
    if args.auth_issuer and args.auth_token_file:
        return "--auth-issuer and --auth-token-file are two ways to check tokens: choose one"
    if not args.auth_issuer and (args.resource_url or args.auth_client_id or args.auth_client_secret_file):
        return "--resource-url, --auth-client-id and --auth-client-secret-file go with --auth-issuer"
    if bool(args.auth_client_id) != bool(args.auth_client_secret_file):
        return "--auth-client-id and --auth-client-secret-file go together"
    if bool(args.tls_cert) != bool(args.tls_key):
        return "--tls-cert and --tls-key go together"
    for path in (args.tls_cert, args.tls_key):
        if path and not os.path.isfile(path):
            return f"no such file: {path}"
    authenticated = bool(args.auth_issuer or args.auth_token_file)
    if authenticated and args.insecure_no_auth:
        return "--insecure-no-auth contradicts --auth-issuer / --auth-token-file"
    if not authenticated and not args.insecure_no_auth and not is_loopback(host):
        return (f"refusing to serve {host} without authentication: anyone who reaches the port would get the workspace. "
                "Give --auth-issuer URL (OAuth) or --auth-token-file FILE, listen on 127.0.0.1, or say --insecure-no-auth "
                "(docs/http.md, \"Securing a remote server\")")
    if args.resource_url:
        from urllib.parse import urlsplit  # off the start-up budget: only with --resource-url

        parts = urlsplit(args.resource_url)
        if parts.scheme not in ("https", "http") or not parts.hostname or parts.fragment or "#" in args.resource_url:
            return (f"--resource-url {args.resource_url!r}: the resource is an absolute https:// (or http://) URL "
                    "without a fragment (RFC 8707), the URL clients use, e.g. https://mcp.example.com/mcp")
    if args.auth_issuer and not args.resource_url and _unspecified(host):
        return f"--auth-issuer on {host}: give --resource-url, the URL clients use (tokens must name it as their audience)"
    return None


def _unspecified(host: str) -> bool:
    """0.0.0.0, ::, [::0], 0 and the like: every address of the machine, none a client would name."""
    import ipaddress  # off the start-up budget: only with --http

    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host in ("", "0")


def _served(args: Settings) -> tuple[str, int]:
    """(host, port) of --http: what the HTTP paths are given (main serves HTTP only with it)."""
    if args.http is None:
        raise ValueError("no --http address")
    return args.http


def _served_url(args: Settings) -> str:
    host, port = _served(args)
    return f"{'https' if args.tls_cert else 'http'}://{_url_host(host)}:{port}/mcp"


def _resource_server(args: Settings) -> Any:
    """The token checks the options ask for (transports.http.auth.ResourceServer), or None."""
    if not (args.auth_issuer or args.auth_token_file):
        return None
    # the auth modules (and the auth extra's) load only with an auth option (auth/__init__.py)
    from .transports.http.auth import ResourceServer

    if args.auth_token_file:
        from .auth.token_file import TokenFile  # only with --auth-token-file

        return ResourceServer(TokenFile(args.auth_token_file), resource=args.resource_url or _served_url(args))
    from .auth.issuer import IssuerVerifier  # only with --auth-issuer

    secret = None
    if args.auth_client_secret_file:
        try:
            with open(args.auth_client_secret_file, encoding="utf-8") as handle:
                secret = handle.read().strip()
        except OSError as err:
            raise ValueError(f"--auth-client-secret-file {args.auth_client_secret_file}: {err.strerror or err}") from None
    issuer = args.auth_issuer
    assert issuer  # one of the two modes was given, and not the token file
    resource = args.resource_url or _served_url(args)
    verifier = IssuerVerifier(issuer, resource, client_id=args.auth_client_id, client_secret=secret)
    return ResourceServer(verifier, resource=resource, authorization_servers=[issuer])


def _discover_soon(verifier: Any) -> None:
    """Read the issuer's metadata now, beside the start, so that a wrong --auth-issuer shows at once on
    stderr rather than as 503s later (tokens are checked either way: discovery is retried when needed)."""
    from .auth.issuer import IssuerUnavailable  # only with --auth-issuer

    def discover() -> None:
        try:
            verifier.metadata()
        except IssuerUnavailable as err:
            log.warning(f"--auth-issuer: {err}; requests get 503 until it can be read")

    threading.Thread(target=discover, name="shipcode-mcp-discovery", daemon=True).start()


def _auth_mode(auth: Any) -> tuple[str, str]:
    if auth is None:
        return ("none", "no auth")
    from .auth.token_file import TokenFile  # the auth modules load only with an auth option

    if isinstance(auth.verifier, TokenFile):
        return ("token-file", f"bearer tokens from {auth.verifier.path} ({len(auth.verifier)})")
    return ("oauth", auth.verifier.describe())


def _state_key(path: str | None) -> bytes | None:
    if path is None:
        return None
    from .request_state import key_from_file  # off the start-up budget (hmac): only with --state-key-file

    try:
        return key_from_file(path)
    except OSError as err:
        raise ValueError(f"--state-key-file {path}: {err.strerror or err}") from None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _count(text: str) -> int:
    """A whole number, 0 or more."""
    import argparse  # not at start (see build_parser); loaded already: argparse calls this

    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a whole number, 0 or more: {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    """A number of seconds, 0 or more."""
    import argparse  # not at start (see build_parser); loaded already: argparse calls this

    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"not a number of seconds, 0 or more: {text!r}")
    return value


def _host_port(text: str) -> tuple[str, int]:
    """'8765' -> ('127.0.0.1', 8765); 'HOST:8765'; '[::1]:8765' -> ('::1', 8765)."""
    import argparse  # not at start (see build_parser); loaded already: argparse calls this

    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not [HOST:]PORT: {text!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"no such port: {number}")
    return host, number
