"""Measures of the tools: each tool through MCP beside its command-line floor and its peers, on one workspace."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .driver import (
    BenchError,
    Child,
    Config,
    Samples,
    Target,
    call_tool,
    encode,
    executable_beside,
    median,
    output_of,
    stderr_log,
    timed_call,
    timed_command,
    tree_memory,
)
from .servers import (
    AST_GREP_PIN,
    FILESYSTEM_PIN,
    GIT_PIN,
    RIPGREP_PIN,
    cli_command,
    ensure_npm,
    ensure_venv,
    node_of,
    npm_entry,
    our_env,
)
from .workspaces import FREQUENT, FULL, NEEDLE, STRUCTURE, Scale, make_big_file, make_files_tree, make_stdlib_repo


def same_search(ours: dict[str, Any], rg_output: bytes) -> None:
    """search_code found exactly the lines `rg -n` printed."""
    found = {(entry["path"], entry["line"]) for entry in ours["lines"] if entry["match"]}
    expected = set()
    for line in rg_output.decode().splitlines():
        path, number, _ = line.split(":", 2)
        expected.add((path, int(number)))
    if found != expected or ours["truncated"]:
        raise BenchError(f"search_code found {len(found)} matches, rg {len(expected)}")


def cut_at(limit: int) -> Callable[[dict[str, Any], bytes], None]:
    """search_code gave as many matches as the floor cut at `limit` lines (all of them on a small tree), and
    said there were more where the floor was cut."""

    def check(ours: dict[str, Any], floor_output: bytes) -> None:
        lines = floor_output.count(b"\n")
        if ours["match_count"] != lines or (lines < limit and ours["truncated"]):
            raise BenchError(f"search_code gave {ours['match_count']} matches, the floor {lines} lines")

    return check


def same_listing(ours: dict[str, Any], rg_output: bytes) -> None:
    """list_files counted the files `rg --files` printed, and shows the first of them in order."""
    expected = sorted(rg_output.decode().splitlines())
    if ours["total"] != len(expected) or ours["files"] != expected[:len(ours["files"])]:
        raise BenchError(f"list_files has {ours['total']} files, rg --files {len(expected)}")


@dataclass
class Task:
    """One task done three ways: by our tool, by the command-line floor, and by each peer that can do it."""

    key: str
    server: str  # which of our servers (one per workspace) runs the tool
    tool: str
    arguments: dict[str, Any]
    floor: list[str]  # the command, run in the workspace
    floor_label: str
    peers: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (peer server, its tool, arguments)
    floor_limit: float | None = None  # the issue's target: ours <= this times the floor
    peer_limit: float | None = None  # ours <= this times the fastest peer
    check: Callable[[dict[str, Any], bytes], None] | None = None  # our result against the floor's output


def peer_call(child: Child, samples: Samples, tool: str, arguments: dict[str, Any]) -> float:
    """One tools/call to a peer, end to end; an error or isError makes the task have no peer figure."""
    elapsed, result = call_tool(child, samples, tool, arguments)
    if result.get("isError"):
        raise BenchError(f"{child.target.key} {tool} failed: {str(result)[:300]}")
    return elapsed


def all_pages(child: Child, samples: Samples) -> tuple[float, int]:
    """Every page of resources/list, cursor after cursor: the time and the number of resources seen."""
    cursor: str | None = None
    count = pages = 0
    started = time.perf_counter()
    while True:
        (request_id,) = child.ids(1)
        params = {"cursor": cursor} if cursor else {}
        samples.sent["resources/list"] += 1
        child.send(encode({"jsonrpc": "2.0", "id": request_id, "method": "resources/list", "params": params}))
        message = child.read_response()
        samples.checker.response("resources/list", message, request_id)
        count += len(message["result"]["resources"])
        pages += 1
        cursor = message["result"].get("nextCursor")
        if not cursor:
            return time.perf_counter() - started, count
        if pages > 100_000:
            raise BenchError("resources/list never ends")


def first_line_is(number: int) -> Callable[[dict[str, Any], bytes], None]:
    """The page starts at line `number` of the big file (each of its lines says its own number)."""

    def check(ours: dict[str, Any], floor_output: bytes) -> None:
        if f"line {number:07d}" not in str(ours)[:2000] or not floor_output.startswith(f"line {number:07d}".encode()):
            raise BenchError(f"read_file did not start at line {number}")

    return check


def tool_figures(python: str, src: Path, cache: Path, config: Config, log: Callable[[str], None],
                 peers: bool = True, install: bool = True, scale: Scale = FULL) -> dict[str, Any]:
    """Every task of the issue on its workspace: ours, the floor and the peers in interleaved rounds, medians.

    Servers start once each, as a client would have them; round 0 is untimed (page cache, first imports).
    Within a round the three ways of a task run back to back in an order that turns each round.
    """
    rg = executable_beside(python, "rg")
    if rg is None:
        return {"errors": ["rg is not installed"]}
    stdlib = make_stdlib_repo(cache / "stdlib", cache / "stdlib.recipe", log, scale.library)
    repo: Path = stdlib["root"]
    big = make_big_file(cache / "big", log, scale.big_lines)
    sizes = scale.tree_sizes
    far = scale.far_offset
    trees = {size: cache / f"files-{size}" for size in sizes}
    for size, root in trees.items():
        make_files_tree(root, size, log)
    long_file = stdlib["long_file"]
    big_size = f"{big.stat().st_size / 1e6:.0f} MB" if big.stat().st_size >= 1e6 else f"{big.stat().st_size / 1e3:.0f} kB"
    tasks = [
        Task(f"read_file of {long_file} ({stdlib['long_file_lines']:,} lines)", "stdlib", "read_file",
             {"path": long_file, "limit": 10_000}, ["cat", long_file], "cat",
             [("server-filesystem", "read_text_file", {"path": str(repo / long_file)})], peer_limit=0.8),
        Task(f"read_file, first 100 lines of {big_size}", "big", "read_file", {"path": big.name, "limit": 100},
             ["head", "-100", big.name], "head -100", [("server-filesystem", "read_text_file", {"path": str(big), "head": 100})],
             floor_limit=2.0, peer_limit=0.8, check=first_line_is(1)),
        Task(f"read_file, 100 lines at offset {far:,} of {big_size}", "big", "read_file",
             {"path": big.name, "offset": far, "limit": 100}, ["sed", "-n", f"{far},{far + 99}p;{far + 99}q", big.name],
             f"sed -n {far},{far + 99}p", floor_limit=1.5, check=first_line_is(far)),
        Task("git_diff, dirty tree", "stdlib", "git_diff", {}, ["git", "diff"], "git diff",
             [("mcp-server-git", "git_diff_unstaged", {"repo_path": str(repo)})], floor_limit=1.2, peer_limit=1.0),
        Task("git_diff, staged", "stdlib", "git_diff", {"staged": True}, ["git", "diff", "--cached"], "git diff --cached",
             [("mcp-server-git", "git_diff_staged", {"repo_path": str(repo)})], peer_limit=1.0),
        Task("git_diff of one file", "stdlib", "git_diff", {"path": long_file}, ["git", "diff", "--", long_file],
             "git diff -- FILE"),
        Task("git_show HEAD (a small commit)", "stdlib", "git_show", {"ref": "HEAD"}, ["git", "show", "HEAD"], "git show HEAD",
             [("mcp-server-git", "git_show", {"repo_path": str(repo), "revision": "HEAD"})], peer_limit=1.0),
        Task("git_show of a file at HEAD~1", "stdlib", "git_show", {"ref": "HEAD~1", "path": long_file},
             ["git", "show", f"HEAD~1:{long_file}"], "git show HEAD~1:FILE"),
        Task("git_log 20", "stdlib", "git_log", {"limit": 20}, ["git", "log", "-20"], "git log -20",
             [("mcp-server-git", "git_log", {"repo_path": str(repo), "max_count": 20})], floor_limit=1.5, peer_limit=1.0),
        Task("git_log 20 of one file", "stdlib", "git_log", {"limit": 20, "path": long_file},
             ["git", "log", "--follow", "-20", "--", long_file], "git log --follow -20 -- FILE"),  # git_log follows renames
        Task("git_status", "stdlib", "git_status", {}, ["git", "status", "--porcelain=v2", "--branch"],
             "git status --porcelain=v2 --branch", [("mcp-server-git", "git_status", {"repo_path": str(repo)})], floor_limit=1.2,
             peer_limit=1.0),
        *(Task(f"list_files, {size:,} files", f"files-{size}", "list_files", {}, [rg, "--files"], "rg --files",
               [("mcp-ripgrep", "list-files", {"path": str(trees[size])})], floor_limit=1.2, check=same_listing)
          for size in sizes),
        Task(f"search_code, {sizes[1]:,} files", f"files-{sizes[1]}", "search_code", {"pattern": NEEDLE},
             [rg, "-n", NEEDLE], f"rg -n {NEEDLE}", [("mcp-ripgrep", "search", {"pattern": NEEDLE, "path": str(trees[sizes[1]])})],
             floor_limit=1.1, check=same_search),
        Task(f"search_code, a frequent pattern in {sizes[2]:,} files (limit 200)", f"files-{sizes[2]}", "search_code",
             {"pattern": FREQUENT}, ["sh", "-c", f"'{rg}' -n '{FREQUENT}' | head -200"], f"rg -n '{FREQUENT}' | head -200",
             floor_limit=1.5, check=cut_at(200)),
    ]
    ast_grep = None  # a floor installed like the peers (from PyPI), so with them
    if peers and (install or (cache / "venvs").exists()):
        try:
            ast_grep = executable_beside(str(ensure_venv(cache, (AST_GREP_PIN,), log)), "ast-grep")
        except (BenchError, OSError, subprocess.SubprocessError) as err:
            log(f"ast-grep: {err}")
    if ast_grep is not None:
        tasks.append(Task(f"search_structure {STRUCTURE} in {sizes[2]:,} files (limit 100)", f"files-{sizes[2]}",
                          "search_structure", {"pattern": STRUCTURE, "language": "python", "limit": 100},
                          ["sh", "-c", f"'{ast_grep}' run -l python -p '{STRUCTURE}' . | head -100"],
                          f"ast-grep run -p '{STRUCTURE}' | head -100", floor_limit=1.5))
    roots = {"stdlib": repo, "big": big.parent, **{f"files-{size}": root for size, root in trees.items()}}
    # No cap on results (--max-result-tokens 0): the floors and the peers give whole answers, measured like for like.
    commands: dict[str, tuple[list[str], dict[str, str], str]] = {
        key: ([*cli_command(python), "--max-result-tokens", "0", str(root)], our_env(src), "") for key, root in roots.items()}
    errors: list[str] = []
    if peers:
        try:
            if not install and not (cache / "node-tools" / ".pins").exists():
                raise BenchError("not installed (--no-install)")
            prefix = ensure_npm(cache, log)
            node = str(node_of(prefix))
            path = {"PATH": f"{Path(rg).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # mcp-ripgrep runs `rg`
            commands["server-filesystem"] = ([node, str(npm_entry(prefix, "@modelcontextprotocol/server-filesystem")),
                                              str(repo), str(big.parent)], {}, FILESYSTEM_PIN)
            commands["mcp-ripgrep"] = ([node, str(npm_entry(prefix, "mcp-ripgrep"))], path, RIPGREP_PIN)
        except (BenchError, OSError, subprocess.SubprocessError) as err:
            errors.append(f"Node peers: {err}")
        try:
            if not install and not (cache / "venvs").exists():
                raise BenchError("not installed (--no-install)")
            git_python = ensure_venv(cache, (GIT_PIN,), log)
            commands["mcp-server-git"] = ([str(git_python), "-m", "mcp_server_git", "--repository", str(repo)], {}, GIT_PIN)
        except (BenchError, OSError, subprocess.SubprocessError) as err:
            errors.append(f"mcp-server-git: {err}")
    samples = Samples()
    children: dict[str, Child] = {}
    times: dict[str, dict[str, list[float]]] = {task.key: {} for task in tasks}
    pages: dict[int, list[float]] = {size: [] for size in sizes[1:]}
    resources: dict[int, int] = {}
    broken: dict[str, str] = {}  # task key or "task/peer" -> why it has no figure

    def one_way(task: Task, who: str) -> tuple[float, Any]:
        """The task done by `who`: the floor command, our tool, or a peer's tool; time and output."""
        if who == "floor":
            return timed_command(task.floor, roots[task.server])
        if who == "ours":
            return timed_call(children[task.server], samples, task.tool, task.arguments)
        tool, arguments = next((tool, arguments) for peer, tool, arguments in task.peers if peer == who)
        return peer_call(children[who], samples, tool, arguments), None

    at_rest: dict[str, dict[str, int]] = {}  # each of our servers' process tree, once initialized
    try:
        for key, (command, env, _) in commands.items():
            child = Child(Target(key, key, command, env=env), stderr_log(cache, Target(f"tool-{key}", key, [])))
            children[key] = child
            child.arm(config.timeout)
            child.initialize(samples)
            child.disarm()
            if key in roots:
                at_rest[key] = tree_memory(child.pid)
        for round_number in range(config.repetitions + 1):
            log(f"tools: round {round_number}/{config.repetitions}{' (untimed)' if round_number == 0 else ''}")
            for index, task in enumerate(tasks):
                ways = ["floor", "ours", *(peer for peer, _, _ in task.peers if peer in children)]
                shift = (round_number + index) % len(ways)
                outputs: dict[str, Any] = {}
                for who in ways[shift:] + ways[:shift]:
                    name = task.key if who in ("ours", "floor") else f"{task.key}/{who}"
                    if name in broken:
                        continue
                    member = children.get(task.server if who == "ours" else who)
                    try:
                        if member is not None:
                            member.arm(config.timeout)
                        elapsed, outputs[who] = one_way(task, who)
                    except BenchError as err:
                        broken[name] = str(err)
                        log(f"  {name}: {err}")
                        continue
                    finally:
                        if member is not None:
                            member.disarm()
                    if round_number:
                        times[task.key].setdefault(who, []).append(elapsed)
                if task.check is not None and "ours" in outputs and "floor" in outputs and task.key not in broken:
                    try:
                        task.check(outputs["ours"], outputs["floor"])
                    except BenchError as err:
                        broken[task.key] = str(err)
            for size in pages:
                child = children[f"files-{size}"]
                child.arm(config.timeout)
                elapsed, resources[size] = all_pages(child, samples)
                child.disarm()
                if round_number:
                    pages[size].append(elapsed)
    except (BenchError, OSError, subprocess.SubprocessError) as err:
        log(f"tool figures failed: {err}")
        errors.append(str(err))
    finally:
        after = {key: tree_memory(child.pid) for key, child in children.items() if key in at_rest}
        for child in children.values():
            child.kill()
    out: dict[str, Any] = {"errors": errors + [f"{key}: {why}" for key, why in broken.items()], "tasks": [],
                           "workspaces": {"stdlib": {"files": stdlib["files"], "library": str(repo)},
                                          "big": {"bytes": big.stat().st_size}, "trees": list(sizes)},
                           "versions": {"rg": output_of([rg, "--version"]).splitlines()[0] if output_of([rg, "--version"]) else "",
                                        "git": output_of(["git", "--version"]),
                                        **{key: pin for key, (_, _, pin) in commands.items() if pin}}}
    for task in tasks:
        figures = {who: median(values) for who, values in times[task.key].items() if values}
        ours, floor = figures.get("ours"), figures.get("floor")
        peer_figures = {who: value for who, value in figures.items() if who not in ("ours", "floor")}
        out["tasks"].append({
            "task": task.key, "tool": task.tool, "floor_command": task.floor_label, "ours": ours, "floor": floor,
            "to_floor": ours / floor if ours and floor else None, "floor_limit": task.floor_limit,
            "peers": {who: {"time": value, "ours_to_peer": ours / value if ours else None} for who, value in peer_figures.items()},
            "peer_limit": task.peer_limit, "samples": times[task.key]})
    out["memory"] = {key: {"at_rest": at_rest[key], "after": after[key]} for key in at_rest if key in after}
    if all(pages.values()):
        per_file = {size: median(pages[size]) / max(1, resources[size]) for size in pages}
        small, large = sizes[1], sizes[2]
        out["resources_list"] = {"time": {str(size): median(values) for size, values in pages.items()},
                                 "resources": {str(size): count for size, count in resources.items()},
                                 "per_file": {str(size): cost for size, cost in per_file.items()},
                                 "growth": per_file[large] / per_file[small], "limit": 1.3,
                                 "samples": {str(size): values for size, values in pages.items()}}
    return out
