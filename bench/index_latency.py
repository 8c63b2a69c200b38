"""The code index measured: how long it takes to build, how fast find_symbol answers from it, against the scan
(`--no-index`) and plain `rg`, how fast it follows a change, and what the server costs in memory.

One command, one run, ratios within it, on trees of real code of 1 000, 10 000 and 100 000 files (the
running interpreter's standard library .py files, without site-packages, copied into numbered folders
c000, c001... until the tree has exactly that many files; a last, partial copy takes NEEDED and files
spread evenly over the library). The trees are made once, under the cache folder. For each size, two
real `shipcode-mcp` servers over pipes (bench/run.py's driver): one with a code index in a fresh
`--index-dir`, one with `--no-index` (the scan: rg, then a parse of the candidate files).

- **Build**: the first find_symbol of the indexed server (a root of more than 512 files starts the build
  in the background and answers by scanning: `"index": "building"`), then find_symbol on a small folder
  (POLL_FOLDER: cheap while the build runs) until it answers `"index": "fresh"`, at most 1% of the time
  so far apart (50 ms at least, 1 s at most). Ready = from the start of the first call to that answer.
  Files per second, per core (the machine's cores) and per CPU-second of the server's process tree (the
  server, its parse workers, its rg children), and the parse workers seen running.
- **Warm lookups**: each of QUERIES (a rare name, a common method name, a class, a qualified Class.method,
  a glob) through the indexed server, through the scan server, and `rg -n -w` of the name over the same tree
  (the floor; the glob's wildcards become `\\w*`), rounds interleaved (each round visits every query and
  rotates which of the three goes first) after a first, untimed call of each (shown apart: for the index
  the first walk against the new database; for the scan the parse of the candidate files, which its cache
  keeps). `rg --files` alone is timed too: the walk an indexed answer makes when its inotify watch cannot
  tell what changed (a file made or deleted; every call without inotify). p50 and p95
  (nearest rank) per query and over all of them; ratios of p50s.
- **Update**: append a def with a new name to one file, then the first find_symbol of that name through
  the indexed server (it must find exactly that def), and through the scan server. Each change waits until
  the previous one is RACY seconds old, so exactly one file has changed (the index reads again a file
  changed less than 2 s before the walk). The files are restored after, and the new names must be gone.
- **Memory**: the summed RSS of each server's process tree (the server, its parse workers and other
  children), sampled every 100 ms from /proc, and the sum of the processes' VmHWM at the end (an upper
  bound of the tree's peak).

Every answer is checked: the indexed server's symbols (and `truncated`) equal the scan server's exactly, for
every query and every round (the first answer, given by a scan while the build runs, and the poll's first
fresh answer too); every definition found is on a line `rg -n -w` found; a mismatch is printed loudly and the
run exits 1. Every lookup asks for LIMIT (the tools' largest limit) definitions, so both sides do the whole
work; `get` and `get_*` still have more on the larger trees (marked "+": then both must give the same first
LIMIT).

    .venv/bin/python bench/index_latency.py                      # 1 000, 10 000 and 100 000 files, 10 rounds
    .venv/bin/python bench/index_latency.py --sizes 1000,10000   # without the 100 000-file tree
    .venv/bin/python bench/index_latency.py --smoke              # 1 000 files, 2 rounds: under a minute

Results: .bench-cache/index_latency.json (index_latency_smoke.json for --smoke). Standard library only,
like bench/run.py, whose server driver it uses. The 100 000-file tree takes some 1.8 GB of disk, and its index
a few hundred MB more.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import code_accuracy as accuracy  # bench/code_accuracy.py: the library and its .py files
import run as harness  # bench/run.py: the server driver, percentiles, tables, machine facts
from run import BenchError

REPO = harness.REPO
DEFAULT_CACHE = harness.DEFAULT_CACHE
SIZES = (1_000, 10_000, 100_000)
LIMIT = 2000  # find_symbol's largest limit: every answer complete where it can be
TREE_FORMAT = 1  # the trees' recipe: a change here makes them again
RACY = 2.1  # seconds: a file changed more recently than 2 s before a walk is read again by the index


@dataclass(frozen=True)
class Query:
    label: str
    name: str


QUERIES = (
    Query("rare name", "_make_iterencode"),
    Query("common method", "get"),
    Query("class", "HTTPConnection"),
    Query("Class.method", "Popen.communicate"),
    Query("glob", "get_*"),
)
# Kept in every copy, so that every query has answers at every size, the poll has its folder, the skipped path is
# taken (pydoc_data/topics.py is over the 512 KiB an outline reads) and the update has its files.
NEEDED = ("json/__init__.py", "json/decoder.py", "json/encoder.py", "json/scanner.py", "json/tool.py", "subprocess.py",
          "http/client.py", "fnmatch.py", "colorsys.py", "keyword.py", "pydoc_data/topics.py")
POLL_FOLDER = "c000/json"
POLL_NAME = "_make_iterencode"
EDITED = ("c000/fnmatch.py", "c000/colorsys.py", "c000/keyword.py", "c000/json/tool.py")


@dataclass
class Settings:
    sizes: tuple[int, ...] = SIZES
    rounds: int = 10
    timeout: float = 3600.0  # the build, or one call, taking longer has hung


SMOKE = Settings(sizes=(1_000,), rounds=2, timeout=50.0)


# -- the trees ------------------------------------------------------------------------------------------------
def plan_tree(files: list[str], size: int) -> list[tuple[str, str]]:
    """(copy folder, library file) for each file of a tree of `size` files: whole copies of `files`, then a partial
    one of NEEDED and files spread evenly over the rest."""
    needed = [name for name in NEEDED if name in set(files)]
    if size < len(needed):
        raise BenchError(f"a tree needs at least {len(needed)} files")
    whole, rest = divmod(size, len(files))
    plan = [(f"c{copy:03d}", name) for copy in range(whole) for name in files]
    if rest:
        others = [name for name in files if name not in set(needed)]
        wanted = max(0, rest - len(needed))
        chosen = set(needed[:rest]) | {others[i * len(others) // wanted] for i in range(wanted)}
        plan += [(f"c{whole:03d}", name) for name in files if name in chosen]
    return plan


def make_tree(library: Path, size: int, target: Path, log: Callable[[str], None]) -> int:
    """The tree of `size` files under `target`, made once per recipe; returns its size."""
    files = [str(path.relative_to(library)) for path in accuracy.library_files(library)]
    stamp = target.with_name(target.name + ".recipe")
    recipe = f"{library} {len(files)} {size} {TREE_FORMAT}"
    if not (stamp.exists() and stamp.read_text() == recipe):
        log(f"making {target} ({size:,} files from {library})")
        shutil.rmtree(target, ignore_errors=True)
        stamp.unlink(missing_ok=True)
        made: set[Path] = set()
        for copy, name in plan_tree(files, size):
            destination = target / copy / name
            if destination.parent not in made:
                destination.parent.mkdir(parents=True, exist_ok=True)
                made.add(destination.parent)
            shutil.copyfile(library / name, destination)
        stamp.write_text(recipe)
    return size


# -- the servers ----------------------------------------------------------------------------------------------
class Server:
    """A running `shipcode-mcp [OPTIONS] ROOT`, initialized; `find` times one find_symbol and checks it succeeded.
    The watchdog is armed for each call only (a build may take long, the server waits between calls)."""

    def __init__(self, key: str, options: list[str], python: str, src: Path, root: Path, cache: Path,
                 timeout: float) -> None:
        target = harness.Target(key, key, [*harness.cli_command(python), *options, str(root)], env=harness.our_env(src))
        self.key = key
        self.timeout = timeout
        self.samples = harness.Samples()
        self.child = harness.Child(target, harness.stderr_log(cache, target))
        self.pid = self.child.pid
        self.child.arm(timeout)
        self.child.initialize(self.samples)
        self.child.disarm()

    def find(self, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """(seconds, the whole result) of find_symbol with `arguments`."""
        return self.call("find_symbol", arguments)

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """(seconds, the whole result) of `tool` with `arguments`, which must succeed."""
        self.child.arm(self.timeout)
        try:
            elapsed, result = harness.call_tool(self.child, self.samples, tool, arguments)
        finally:
            self.child.disarm()
        if result.get("isError") or not isinstance(result.get("structuredContent"), dict):
            raise BenchError(f"{self.key}: {tool} {json.dumps(arguments)} failed: {json.dumps(result)[:400]}")
        return elapsed, result

    def close(self) -> None:
        try:
            self.child.close(10.0)
        finally:
            self.child.kill()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def structured(result: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = result["structuredContent"]
    return value


def text_of(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block.get("type") == "text")


def state_of(result: dict[str, Any]) -> str:
    return str(structured(result).get("index"))


# -- the process tree, from /proc ----------------------------------------------------------------------------
def stat_fields(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def tree_cpu(pid: int) -> float:
    """CPU seconds of the tree under `pid`: each process's own (user + system, all threads) and that of its
    children that ended (rg, workers replaced): what the tree spent so far."""
    ticks = 0
    for member in harness.descendants(pid):
        fields = stat_fields(member)
        if len(fields) > 14:
            ticks += sum(int(value) for value in fields[11:15])
    return ticks / harness.CLOCK_TICK


def is_worker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return any(part.endswith(b"worker.py") for part in cmdline.read().split(b"\0"))
    except OSError:
        return False


@dataclass
class TreeFigures:
    peak_rss: int = 0  # the largest sum of VmRSS over the tree seen by a sample
    processes: int = 0  # the most processes seen at once
    workers: int = 0  # the most parse workers seen at once


class Watch:
    """Samples each server's process tree every `interval` seconds while the run goes on."""

    def __init__(self, servers: list[Server], interval: float = 0.1) -> None:
        self.servers = servers
        self.interval = interval
        self.figures = {server.key: TreeFigures() for server in servers}
        self._workers: dict[int, bool] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        for server in self.servers:
            figures = self.figures[server.key]
            members = harness.descendants(server.pid)
            rss = sum(harness.memory(member).get("VmRSS", 0) for member in members)
            workers = 0
            for member in members:
                if member not in self._workers:
                    self._workers[member] = is_worker(member)
                workers += self._workers[member]
            figures.peak_rss = max(figures.peak_rss, rss)
            figures.processes = max(figures.processes, len(members))
            figures.workers = max(figures.workers, workers)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


# -- the checks ---------------------------------------------------------------------------------------------
@dataclass
class Checks:
    """Every comparison made, and the mismatches (printed at once, loudly)."""

    log: Callable[[str], None]
    compared: int = 0
    mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.mismatches.append(message)
        self.log(f"!!! MISMATCH: {message}")

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)
            self.log(f"note: {message}")

    def same(self, indexed: dict[str, Any], scanned: dict[str, Any], what: str, name: str) -> bool:
        """The index's answer against the scan's: the same symbols, in the same order, and the same `truncated`
        (`what`: which answer; `name`: the query, for a note said once per query)."""
        self.compared += 1
        difference = answer_difference(structured(indexed), structured(scanned))
        if difference:
            self.fail(f"{what}: {difference}")
            return False
        ours, theirs = structured(indexed).get("skipped"), structured(scanned).get("skipped")
        if ours != theirs:
            self.note(f"find_symbol {name}: 'skipped' is {ours} with the index, {theirs} with the scan (the symbols "
                      "agree)")
        return True

    def state(self, result: dict[str, Any], wanted: str, what: str) -> None:
        if state_of(result) != wanted:
            self.fail(f"{what}: index is {state_of(result)!r}, expected {wanted!r}: {text_of(result)[-300:]!r}")


def symbol_key(item: dict[str, Any]) -> tuple[Any, ...]:
    return (item.get("path"), item.get("line"), item.get("qualified_name"), item.get("kind"))


def answer_difference(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """"" when the two find_symbol answers list the same symbols (every field, in order) and agree on
    `truncated`; else what differs."""
    mine, other = ours.get("symbols"), theirs.get("symbols")
    if not isinstance(mine, list) or not isinstance(other, list):
        return "an answer has no symbols list"
    problems = []
    if bool(ours.get("truncated")) != bool(theirs.get("truncated")):
        problems.append(f"truncated {ours.get('truncated')} with the index, {theirs.get('truncated')} with the scan")
    if mine != other:
        first = next((i for i, (a, b) in enumerate(zip(mine, other, strict=False)) if a != b), min(len(mine), len(other)))
        mine_keys, other_keys = {symbol_key(item) for item in mine}, {symbol_key(item) for item in other}
        problems.append(f"{len(mine)} symbols with the index, {len(other)} with the scan, first difference at #{first} "
                        f"(index {mine[first] if first < len(mine) else None}, scan {other[first] if first < len(other) else None}); "
                        f"only the index has {sorted(mine_keys - other_keys, key=str)[:4]}, only the scan "
                        f"{sorted(other_keys - mine_keys, key=str)[:4]}")
    return "; ".join(problems)


def rg_pattern(name: str) -> str:
    """The regex `rg -w` looks for: the last part of a qualified name, a glob's * and ? as word characters."""
    last = name.replace("::", ".").split(".")[-1]
    return "".join({"*": r"\w*", "?": r"\w"}.get(char, re.escape(char)) for char in last)


def rg_lines(output: bytes) -> set[tuple[str, int]]:
    found = set()
    for line in output.split(b"\n"):
        if line:
            path, number, _ = line.split(b":", 2)
            found.add((path.decode("utf-8", "surrogateescape").removeprefix("./"), int(number)))
    return found


def outside_rg(items: list[dict[str, Any]], found: set[tuple[str, int]]) -> list[tuple[str, int]]:
    """The definitions whose name line rg -w did not find."""
    return [(item["path"], item["def_line"]) for item in items if (item["path"], item["def_line"]) not in found]


# -- the phases ---------------------------------------------------------------------------------------------
PROGRESS = re.compile(r"\((\d+) of (\d+) files\)")


def measure_build(server: Server, checks: Checks, timeout: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the build's figures, the first answer): the first find_symbol, then polls of POLL_FOLDER until fresh."""
    arguments = {"name": POLL_NAME, "limit": LIMIT}
    poll = {"name": POLL_NAME, "path": POLL_FOLDER, "limit": LIMIT}
    cpu_before = tree_cpu(server.pid)
    started = time.perf_counter()
    first_time, first = server.find(arguments)
    progress: list[tuple[float, int, int]] = []
    polls = 0
    last: dict[str, Any] = first
    how = "background"
    if state_of(first) == "fresh":  # a small root is built in the call
        how = "in the first call"
    elif state_of(first) != "building":
        raise BenchError(f"the first find_symbol answered with index {state_of(first)!r}: {text_of(first)[-300:]!r}")
    else:
        while True:
            elapsed = time.perf_counter() - started
            if elapsed > timeout:
                raise BenchError(f"the index was not ready after {elapsed:.0f} s")
            time.sleep(min(1.0, max(0.05, 0.01 * elapsed)))
            _, last = server.find(poll)
            polls += 1
            if state_of(last) == "fresh":
                break
            checks.state(last, "building", "a poll while the index is built")
            match = PROGRESS.search(text_of(last))
            if match and (not progress or progress[-1][1] != int(match.group(1))):  # each step of the build, once
                progress.append((round(time.perf_counter() - started, 3), int(match.group(1)), int(match.group(2))))
    ready = time.perf_counter() - started
    cpu = tree_cpu(server.pid) - cpu_before
    return {"how": how, "first_call": first_time, "ready": ready, "cpu": cpu, "polls": polls,
            "build_files": progress[-1][2] if progress else None, "progress": progress,
            "first_answers": len(structured(first)["symbols"]), "poll_answer": last}, first


def timed_rg(command: list[str], root: Path) -> tuple[float, bytes]:
    return harness.timed_command(command, root)


def measure_lookups(indexed: Server, scan: Server, root: Path, rg: str, rounds: int,
                    checks: Checks) -> dict[str, Any]:
    """QUERIES through both servers and rg, a first untimed pass then `rounds` interleaved rounds."""
    out: dict[str, Any] = {}
    answers: dict[str, dict[str, Any]] = {}
    for query in QUERIES:
        arguments = {"name": query.name, "limit": LIMIT}
        index_first, ours = indexed.find(arguments)
        checks.state(ours, "fresh", f"find_symbol {query.name} with the index (first)")
        scan_first, theirs = scan.find(arguments)
        checks.state(theirs, "off", f"find_symbol {query.name} with --no-index (first)")
        checks.same(ours, theirs, f"find_symbol {query.name} (first call)", query.name)
        command = [rg, "-n", "-w", "-e", rg_pattern(query.name)]
        _, output = timed_rg(command, root)
        symbols = structured(ours)["symbols"]
        missing = outside_rg(symbols, rg_lines(output))
        if missing:
            checks.fail(f"find_symbol {query.name}: definitions on lines rg -n -w did not find: {missing[:5]}")
        if not symbols:  # NEEDED puts a definition of each in every copy
            checks.fail(f"find_symbol {query.name}: no definition found")
        answers[query.name] = theirs
        out[query.label] = {"name": query.name, "rg": " ".join(["rg", *command[1:]]), "answers": len(symbols),
                            "truncated": bool(structured(ours).get("truncated")),
                            "rg_lines": output.count(b"\n"), "index_first": index_first, "scan_first": scan_first,
                            "samples": {"index": [], "scan": [], "rg": []}}
    walks: list[float] = []
    for round_number in range(rounds):
        walk, _ = timed_rg([rg, "--files", "--null"], root)
        walks.append(walk)
        for position, query in enumerate(QUERIES):
            arguments = {"name": query.name, "limit": LIMIT}
            samples = out[query.label]["samples"]
            sides = ["index", "scan", "rg"]
            shift = (round_number + position) % 3
            for side in sides[shift:] + sides[:shift]:
                if side == "index":
                    elapsed, result = indexed.find(arguments)
                    checks.state(result, "fresh", f"find_symbol {query.name} with the index, round {round_number + 1}")
                    checks.same(result, answers[query.name], f"find_symbol {query.name}, round {round_number + 1}",
                                query.name)
                elif side == "scan":
                    elapsed, result = scan.find(arguments)
                    if answer_difference(structured(result), structured(answers[query.name])):
                        checks.fail(f"find_symbol {query.name} with --no-index, round {round_number + 1}: the answer "
                                    "changed from the first")
                else:
                    elapsed, _ = timed_rg([rg, "-n", "-w", "-e", rg_pattern(query.name)], root)
                samples[side].append(elapsed)
    every: dict[str, list[float]] = {"index": [], "scan": [], "rg": []}
    for figures in out.values():
        for side, values in figures["samples"].items():
            figures[side] = spread(values)
            every[side] += values
        figures["index_rg"] = figures["index"]["p50"] / figures["rg"]["p50"]
        figures["scan_rg"] = figures["scan"]["p50"] / figures["rg"]["p50"]
        figures["index_scan"] = figures["index"]["p50"] / figures["scan"]["p50"]
    summary: dict[str, Any] = {side: spread(values) for side, values in every.items()}
    summary["index_rg"] = summary["index"]["p50"] / summary["rg"]["p50"]
    summary["scan_rg"] = summary["scan"]["p50"] / summary["rg"]["p50"]
    summary["index_scan"] = summary["index"]["p50"] / summary["scan"]["p50"]
    return {"queries": out, "all": summary, "walk": {**spread(walks), "samples": walks}}


def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p95": float("nan")}
    return {"p50": harness.median(values), "p95": harness.percentile(values, 0.95)}


def measure_updates(indexed: Server, scan: Server, root: Path, rounds: int, checks: Checks) -> dict[str, Any]:
    """Append a def with a new name to one file, then find it: through the index (first), then by the scan."""
    token = uuid.uuid4().hex[:8]
    prefix = f"zz_index_bench_{token}_"
    originals: dict[Path, bytes] = {}
    times: dict[str, list[float]] = {"index": [], "scan": []}
    changed_at = 0.0
    try:
        for round_number in range(rounds):
            relative = EDITED[round_number % len(EDITED)]
            path = root / relative
            originals.setdefault(path, path.read_bytes())
            text = path.read_bytes()
            if not text.endswith(b"\n"):
                text += b"\n"
            line = text.count(b"\n") + 2
            name = f"{prefix}{round_number}"
            time.sleep(max(0.0, changed_at + RACY - time.time()))  # the previous change is no longer racy
            path.write_bytes(text + f"\ndef {name}():\n    return {round_number}\n".encode())
            changed_at = time.time()
            arguments = {"name": name, "limit": LIMIT}
            elapsed, ours = indexed.find(arguments)
            times["index"].append(elapsed)
            checks.state(ours, "fresh", f"find_symbol {name} after the change")
            found = [(item["path"], item["line"], item["kind"]) for item in structured(ours)["symbols"]]
            if found != [(relative, line, "function")]:
                checks.fail(f"find_symbol {name} after appending it to {relative} at line {line}: found {found}")
            elapsed, theirs = scan.find(arguments)
            times["scan"].append(elapsed)
            checks.same(ours, theirs, f"find_symbol {name} after the change", "(a new name)")
    finally:
        for path, original in originals.items():
            path.write_bytes(original)
    arguments = {"name": prefix + "*", "limit": LIMIT}
    _, ours = indexed.find(arguments)
    checks.state(ours, "fresh", "find_symbol of the new names once the files are restored")
    if structured(ours)["symbols"]:
        checks.fail(f"the index still lists {len(structured(ours)['symbols'])} of the new names after the files were "
                    f"restored: {[item['path'] for item in structured(ours)['symbols']][:4]}")
    _, theirs = scan.find(arguments)
    checks.same(ours, theirs, "find_symbol of the new names once the files are restored", prefix + "*")
    return {"index": spread(times["index"]), "scan": spread(times["scan"]), "samples": times, "files": len(originals)}


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def measure_size(size: int, args: argparse.Namespace, settings: Settings, rg: str, checks: Checks,
                 log: Callable[[str], None]) -> dict[str, Any]:
    cache: Path = args.cache
    root = cache / f"index-tree-{size}"
    make_tree(args.stdlib, size, root, log)
    _, listing = timed_rg([rg, "--files", "--null"], root)
    listed = listing.count(b"\0")
    if listed != size:
        raise BenchError(f"{root}: rg --files lists {listed} files, not {size}")
    timed_rg([rg, "-c", "-w", "-e", POLL_NAME], root)  # the page cache filled: every side reads from memory
    index_dir = cache / "index-latency-db" / str(size)
    shutil.rmtree(index_dir, ignore_errors=True)
    report: dict[str, Any] = {"files": size, "tree": str(root), "bytes": folder_bytes(root), "index_dir": str(index_dir)}
    common = (args.python, args.src, root, cache, settings.timeout)
    uncapped = ["--max-result-tokens", "0"]  # every answer whole: LIMIT definitions, not what 20 000 tokens hold
    with Server("index", ["--index-dir", str(index_dir), *uncapped], *common) as indexed, \
            Server("scan", ["--no-index", *uncapped], *common) as scan, Watch([indexed, scan]) as watch:
        log(f"{size:,} files: the build...")
        build, first = measure_build(indexed, checks, settings.timeout)
        poll_answer = build.pop("poll_answer")
        _, first_scan = scan.find({"name": POLL_NAME, "limit": LIMIT})
        checks.same(first, first_scan, f"find_symbol {POLL_NAME}, the first call (a scan while the build starts)",
                    POLL_NAME)
        _, poll_scan = scan.find({"name": POLL_NAME, "path": POLL_FOLDER, "limit": LIMIT})
        checks.same(poll_answer, poll_scan, f"find_symbol {POLL_NAME} in {POLL_FOLDER}, the first fresh answer",
                    f"{POLL_NAME} in {POLL_FOLDER}")
        files = build["build_files"] or size
        build.update(files_per_second=files / build["ready"], cores=os.cpu_count() or 1,
                     files_per_core_second=files / build["ready"] / (os.cpu_count() or 1),
                     files_per_cpu_second=files / build["cpu"] if build["cpu"] else None,
                     workers=watch.figures["index"].workers, database_bytes=folder_bytes(index_dir))
        report["build"] = build
        log(f"  ready after {build['ready']:.1f} s ({build['files_per_second']:.0f} files/s); lookups...")
        report["lookups"] = measure_lookups(indexed, scan, root, rg, settings.rounds, checks)
        log("  updates...")
        report["update"] = measure_updates(indexed, scan, root, settings.rounds, checks)
        report["database_bytes_after"] = folder_bytes(index_dir)
        ends = {server.key: harness.tree_memory(server.pid) for server in (indexed, scan)}
    report["memory"] = {}
    for server in (indexed, scan):  # the watch took its last sample as the block ended, before the servers closed
        figures = watch.figures[server.key]
        report["memory"][server.key] = {"peak_rss": figures.peak_rss, "hwm_sum": ends[server.key]["peak"],
                                        "processes": figures.processes, "workers": figures.workers}
    return report


# -- the report ---------------------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def mb(count: int) -> str:
    return f"{count / 1e6:.0f} MB"


def pair(figures: dict[str, float]) -> str:
    return f"{ms(figures['p50'])} / {ms(figures['p95'])}"


def render(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [f"{report['date']} · {machine['cpu']}, {machine['cores']} cores · commit {machine['commit']} · src "
             f"{report['src_digest']} · Python {machine['python']} · {report['rg']} · load average "
             f"{report['load_average']['before']} -> {report['load_average'].get('after')}", ""]
    sizes = report["sizes"]
    rows = []
    for size, figures in sizes.items():
        build = figures.get("build")
        if build:
            per_cpu = f"{build['files_per_cpu_second']:.0f}" if build["files_per_cpu_second"] else "-"
            rows.append([f"{int(size):,}", mb(figures["bytes"]), ms(build["first_call"]), ms(build["ready"]),
                         f"{build['files_per_second']:.0f}",
                         f"{build['files_per_core_second']:.0f}", f"{build['cpu']:.1f} s ({per_cpu})",
                         str(build["workers"]), mb(build["database_bytes"])])
    if rows:
        lines += [harness.markdown_table(["files", "source", "first call (a scan; starts the build)", "index ready after",
                                          "files/s", "files/s per core", "CPU of the server tree (files per CPU-s)",
                                          "parse workers", "database"], rows), ""]
    for size, figures in sizes.items():
        lookups = figures.get("lookups")
        if not lookups:
            continue
        rows = []
        for label, query in lookups["queries"].items():
            rows.append([f"{label}: {query['name']}", f"{query['answers']}{'+' if query['truncated'] else ''}",
                         f"{ms(query['index_first'])} / {ms(query['scan_first'])}", pair(query["index"]),
                         pair(query["scan"]), pair(query["rg"]), f"{query['index_rg']:.2f}x", f"{query['scan_rg']:.2f}x",
                         f"{query['index_scan']:.2f}x"])
        every = lookups["all"]
        rows.append(["all queries", "", "", pair(every["index"]), pair(every["scan"]), pair(every["rg"]),
                     f"{every['index_rg']:.2f}x", f"{every['scan_rg']:.2f}x", f"{every['index_scan']:.2f}x"])
        lines += [harness.markdown_table(
            [f"{int(size):,} files, warm, p50 / p95", "defs", "first call: index / scan", "index", "scan (--no-index)",
             "rg -n -w", "index ÷ rg", "scan ÷ rg", "index ÷ scan"], rows),
            f"  rg --files alone (the walk of an indexed answer that its watch cannot spare): {pair(lookups['walk'])}", ""]
    rows = []
    for size, figures in sizes.items():
        update, memory = figures.get("update"), figures.get("memory")
        if update and memory:
            rows.append([f"{int(size):,}", pair(update["index"]), pair(update["scan"]),
                         f"{mb(memory['index']['peak_rss'])} ({memory['index']['processes']} processes)",
                         f"{mb(memory['scan']['peak_rss'])} ({memory['scan']['processes']} processes)",
                         mb(figures["database_bytes_after"])])
    if rows:
        lines += [harness.markdown_table(["files", "update: first find_symbol of a new def, index, p50 / p95",
                                          "the same by the scan", "peak RSS, indexed server tree",
                                          "peak RSS, scan server tree", "database after"], rows), ""]
    lines.append(f"answers compared: {report['compared']}; mismatches: {len(report['mismatches'])}")
    lines += [f"note: {note}" for note in report["notes"]]
    lines += [f"MISMATCH: {mismatch}" for mismatch in report["mismatches"]]
    lines += [f"error: {error}" for error in report["errors"]]
    return "\n".join(lines)


def src_digest(src: Path) -> str:
    """A digest of the measured source tree (the checkout may carry uncommitted changes)."""
    digest = hashlib.sha256()
    for path in sorted(src.rglob("*.py")):
        digest.update(str(path.relative_to(src)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of file counts: {text!r}") from None
    if not sizes or min(sizes) < len(NEEDED):
        raise argparse.ArgumentTypeError(f"each size must be at least {len(NEEDED)} files")
    return sizes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="The code index: build time, find_symbol against the scan and rg, "
                                     "update latency, memory")
    tree_arguments(parser, "1000,10000,100000", "of each lookup and of the update ", "index_latency.json")
    return parser.parse_args(argv)


def tree_arguments(parser: argparse.ArgumentParser, sizes: str, rounds: str, results: str) -> None:
    """The options of a bench on these trees (this one, bench/repo_map_latency.py)."""
    parser.add_argument("--sizes", type=parse_sizes, help=f"comma-separated tree sizes in files (default {sizes})")
    parser.add_argument("--rounds", type=int, help=f"timed rounds {rounds}(default 10)")
    parser.add_argument("--smoke", action="store_true", help="1 000 files, 2 rounds: proves the bench runs")
    parser.add_argument("--stdlib", type=Path, default=accuracy.stdlib(), help="the library (default: this interpreter's)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter for the servers (default: this one)")
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the shipcode_mcp source tree to measure")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="the trees, the indexes, logs (default .bench-cache/)")
    parser.add_argument("--json", type=Path, help=f"results file (default CACHE/{results})")


SettingsT = TypeVar("SettingsT")


def chosen(args: argparse.Namespace, default: SettingsT, smoke: SettingsT) -> SettingsT:
    """The settings the options ask for (a dataclass with sizes and rounds), the paths made absolute."""
    settings = smoke if args.smoke else default
    if args.sizes is not None:
        settings = replace(settings, sizes=args.sizes)  # type: ignore[type-var]
    if args.rounds is not None:
        settings = replace(settings, rounds=max(1, args.rounds))  # type: ignore[type-var]
    args.cache, args.src, args.stdlib = args.cache.resolve(), args.src.resolve(), args.stdlib.resolve()
    return settings


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = chosen(args, Settings(), SMOKE)
    rg = harness.executable_beside(args.python, "rg")
    if rg is None:
        log("rg is not installed")
        return 2
    checks = Checks(log)
    report: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": harness.machine(),
        "load_average": {"before": harness.load_average()}, "settings": {**settings.__dict__, "limit": LIMIT},
        "library": str(args.stdlib), "src": str(args.src), "rg": harness.output_of([rg, "--version"]).split("\n")[0],
        "src_digest": src_digest(args.src), "queries": [query.__dict__ for query in QUERIES], "sizes": {}, "errors": [],
    }
    for size in settings.sizes:
        try:
            report["sizes"][str(size)] = measure_size(size, args, settings, rg, checks, log)
        except (BenchError, OSError, subprocess.SubprocessError) as err:
            report["errors"].append(f"{size} files: {err}")
            log(f"{size} files failed: {err}")
    report["load_average"]["after"] = harness.load_average()
    report.update(compared=checks.compared, mismatches=checks.mismatches, notes=checks.notes)
    json_path = args.json or args.cache / ("index_latency_smoke.json" if args.smoke else "index_latency.json")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(render(report))
    if checks.mismatches:
        log(f"!!! {len(checks.mismatches)} MISMATCHES: the index's answers differ from the scan's (see above)")
    return 1 if report["errors"] or checks.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
