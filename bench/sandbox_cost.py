"""The cost of the kernel sandbox: git_status and search_code with and without Landlock, in one run.

Every rg and git child runs under Landlock and resource limits (src/shipcode_mcp/workspace/sandbox.py).
`sandbox.set_enabled(False)` leaves out the Landlock part (the ruleset built in the parent, the domain
entered in the child, the kernel's checks on each file the child opens) for children started from then
on; the limits stay. So "with / without" differs by exactly what Landlock costs.

The tools are called in-process (the tool function, a real request context, real children) on a
generated git repository the size of CPython's Lib (2 500 files, about 35 MB, packed like a clone, a
few files modified, deleted and untracked), and through two real servers over pipes, one with the sandbox and one without.
The floor is plain `git status --porcelain=v2` and plain `rg -n PATTERN`. To tell a child's fixed cost
from the cost of the files it opens, one child that does nothing (`git --version` through process.run)
is timed too, with and without, beside plain `git --version` with and without a no-op `preexec_fn`
(subprocess forks instead of using vfork when there is one: the limits pay that, on both sides).

Rounds are interleaved (each visits every case, in an order rotated by one each round) and the table
shows medians, so a burst of load from elsewhere lands on all cases alike; "on / off" is the ratio of
the medians of the same run, "on - off" the median of the differences within each round (the two ran
one after the other). Every answer is checked: git_status names exactly the changed files,
search_code finds exactly rg's lines.

Separately: the first call of a fresh process, which loads the Landlock binding (`landlockpy`), with
the sandbox and without (each process then times three more calls: the steady state), in a fresh
interpreter calling the tool function and through a fresh server (initialize, then the call at once;
the server starts loading the binding beside its start-up), and what importing the binding alone takes.

    .venv/bin/python bench/sandbox_cost.py               # 25 rounds; JSON in .bench-cache/sandbox_cost.json
    .venv/bin/python bench/sandbox_cost.py --smoke       # a small repository, 2 rounds: a few seconds

Standard library only, like bench/run.py, whose server driver it uses.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import run as harness  # bench/run.py: the server driver, medians, tables, machine facts
from run import BenchError

if TYPE_CHECKING:
    from shipcode_mcp.workspace.sandbox import Confinement

REPO = harness.REPO
DEFAULT_CACHE = harness.DEFAULT_CACHE


# -- the repository ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recipe:
    """What the generated repository is made of; the same recipe makes the same repository."""

    files: int = 2_500
    lines: int = 260  # per file on average: about 14 KB, 35 MB in all
    needle_files: int = 60  # below search_code's default limit of 200 matches: both sides scan everything
    modified: int = 5
    deleted: int = 1
    untracked: int = 3
    seed: int = 9

    def text(self) -> str:
        return " ".join(str(value) for value in self.__dict__.values()) + " 2"


SMOKE_RECIPE = Recipe(files=200, lines=40, needle_files=12)
NEEDLE = "sandbox_cost_needle"
WORDS = harness.WORDS
EXTENSIONS = (".py", ".py", ".py", ".py", ".txt", ".c", ".h", ".rst")  # mostly Python, like Lib
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


@dataclass
class Workspace:
    root: Path
    bytes: int
    changed: list[str]  # the paths git status reports (relative, sorted)


def git(root: Path, *args: str) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    subprocess.run(["git", *args], cwd=root, env={**env, **GIT_ENV}, stdin=subprocess.DEVNULL, capture_output=True,
                   check=True, timeout=300)


def make_repository(root: Path, recipe: Recipe, log: Callable[[str], None]) -> Workspace:
    """A generated git repository (same recipe, same repository); made once and kept in the cache."""
    stamp = root.with_name(root.name + ".recipe")
    rng = random.Random(recipe.seed)
    names = []
    for index in range(recipe.files):  # packages of 25 modules, some with a subpackage, like Lib
        folder = f"pkg{index // 100:02d}/" + (f"sub{index // 25 % 4}/" if index // 25 % 4 else "")
        names.append(f"{folder}mod{index:04d}{EXTENSIONS[index % len(EXTENSIONS)]}")
    changes = rng.sample(range(recipe.files), recipe.modified + recipe.deleted)
    modified, deleted = [names[i] for i in changes[:recipe.modified]], [names[i] for i in changes[recipe.modified:]]
    untracked = [f"pkg{i % max(1, recipe.files // 100):02d}/scratch_{i}.py" for i in range(recipe.untracked)]
    changed = sorted([*modified, *deleted, *untracked])
    if stamp.exists() and stamp.read_text() == recipe.text():
        size = sum(path.stat().st_size for path in root.rglob("*") if path.is_file() and ".git" not in path.parts)
        return Workspace(root, size, changed)
    log(f"generating a git repository of {recipe.files} files under {root}")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    pool = []  # distinct lines drawn from for every file: fast to write, varied to search
    for number in range(4000):
        words = rng.choices(WORDS, k=rng.randint(2, 7))
        pool.append(f"{'    ' * rng.randint(0, 3)}{words[0]}_{number} = {' + '.join(words[1:])}({rng.randint(0, 9999)})\n")
    needles = set(rng.sample(range(recipe.files), recipe.needle_files))
    size = 0
    for index, name in enumerate(names):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = rng.choices(pool, k=rng.randint(recipe.lines // 2, recipe.lines * 3 // 2))
        if index in needles:
            lines.insert(rng.randrange(len(lines)), f"call_{NEEDLE}(x)  # the benchmark's needle\n")
        data = "".join(lines).encode()
        path.write_bytes(data)
        size += len(data)
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "The generated tree")
    git(root, "gc", "-q")  # packed, as a cloned repository is
    for name in modified:
        with open(root / name, "a") as file:
            file.write("edited = True\n")
    for name in deleted:
        (root / name).unlink()
    for name in untracked:
        (root / name).write_text("draft = 1\n")
    (root / "build").mkdir()
    (root / "build" / "ignored.pyc").write_bytes(b"\0" * 64)
    git(root, "update-index", "-q", "--refresh")  # the index knows every file's stat: status re-reads none
    git(root, "status", "-s")
    stamp.write_text(recipe.text())
    return Workspace(root, sum(path.stat().st_size for path in root.rglob("*") if path.is_file() and ".git" not in path.parts),
                     changed)


# -- the checks ---------------------------------------------------------------------------------------
def same_status(report: dict[str, Any], workspace: Workspace) -> None:
    """git_status named exactly the files the generator changed."""
    (repository,) = report["repositories"]
    found = sorted(entry["path"] for entry in repository["files"])
    if found != workspace.changed or repository["truncated"]:
        raise BenchError(f"git_status reported {found}, expected {workspace.changed}")


def porcelain_paths(output: bytes) -> list[str]:
    """The paths of `git status --porcelain=v2` (without -z: no renames in this repository)."""
    paths = []
    for line in output.decode().splitlines():
        if line.startswith(("1 ", "u ")):
            paths.append(line.split(" ", 8)[-1])
        elif line.startswith("? "):
            paths.append(line[2:])
    return sorted(paths)


# -- in-process calls -------------------------------------------------------------------------------
class InProcess:
    """The tool functions called directly, each call with a fresh request context of one session."""

    def __init__(self, root: Path) -> None:
        from shipcode_mcp.workspace import sandbox, search, tools
        from shipcode_mcp.workspace.git import commands as git
        from shipcode_mcp.workspace.git.repo import git_program
        from shipcode_mcp.workspace.roots import Roots

        self.sandbox = sandbox
        self.git, self.search, self.tools, self.git_program = git, search, tools, git_program
        self.roots = Roots([str(root)])
        self.next_id = 1

    def call(self, tool: str, sandboxed: bool) -> tuple[float, dict[str, Any]]:
        from shipcode_mcp.context import Context
        from shipcode_mcp.primitives import ToolError

        self.sandbox.set_enabled(sandboxed)
        ctx = Context(None, self.next_id, "tools/call", {})  # a context with no client behind it
        self.next_id += 1
        try:
            started = time.perf_counter()
            if tool == "git_status":
                result = self.git.git_status(ctx, self.roots)
            else:
                result = self.tools.run("search_code", ctx, self.roots, pattern=NEEDLE)
            elapsed = time.perf_counter() - started
        except ToolError as err:
            raise BenchError(f"{tool} failed: {err}") from None
        finally:
            self.sandbox.set_enabled(True)
        if result.is_error or result.structured is None:
            raise BenchError(f"{tool} failed: {result.to_dict()!r:.300}")
        return elapsed, result.structured

    def trivial_child(self, sandboxed: bool) -> float:
        """One child that does nothing (`git --version`) through process.run: the fixed cost of a child."""
        from shipcode_mcp.workspace.process import run

        self.sandbox.set_enabled(sandboxed)
        try:
            started = time.perf_counter()
            done = run(None, [self.git_program(), "--version"], cwd=self.roots.first, readable=self.roots.paths, limit=4096)
            elapsed = time.perf_counter() - started
        finally:
            self.sandbox.set_enabled(True)
        if done.returncode != 0 or not done.stdout.startswith(b"git version"):
            raise BenchError(f"git --version failed: {done.stderr.strip()}")
        return elapsed

    def children(self, tool: str) -> list[str]:
        """The children one call starts (program names), counted by wrapping sandbox.confine once."""
        started: list[str] = []
        confine = self.sandbox.confine

        def counting(binary: str, *args: Any, **kwargs: Any) -> Confinement:
            started.append(os.path.basename(binary))
            return confine(binary, *args, **kwargs)

        self.sandbox.confine = counting
        try:
            self.call(tool, True)
        finally:
            self.sandbox.confine = confine
        return started

    def ruleset_seconds(self, binary: str, readable: list[str], count: int) -> float:
        """The median time to build one child's confinement in the parent (limits and Landlock ruleset)."""
        samples = []
        for _ in range(count):
            started = time.perf_counter()
            with self.sandbox.confine(binary, readable):
                pass
            samples.append(time.perf_counter() - started)
        return harness.median(samples)


# -- servers ----------------------------------------------------------------------------------------
SERVER_PROGRAM = """\
import sys
from shipcode_mcp.workspace import sandbox
sandbox.set_enabled(sys.argv[1] == "on")
from shipcode_mcp.cli import main
sys.exit(main(sys.argv[2:]))
"""
"""shipcode-mcp ROOT, with the sandbox turned on or off first (the command line has no switch for it)."""


def server_target(python: str, src: Path, root: Path, sandboxed: bool) -> harness.Target:
    mode = "on" if sandboxed else "off"
    return harness.Target(f"server-{mode}", f"server, sandbox {mode}", [python, "-c", SERVER_PROGRAM, mode, str(root)],
                          env=harness.our_env(src))


# -- the first call of a process ----------------------------------------------------------------------
FIRST_CALL_PROGRAM = """\
import json, sys, time
mode, tool, root, needle = sys.argv[1:5]
if tool == "import":
    started = time.perf_counter()
    import landlockpy
    print(json.dumps({"seconds": time.perf_counter() - started}))
    sys.exit(0)
from shipcode_mcp.context import Context
from shipcode_mcp.workspace import sandbox, search, tools
from shipcode_mcp.workspace.git import commands as git
from shipcode_mcp.workspace.roots import Roots
sandbox.set_enabled(mode == "on")
roots = Roots([root])
times = []
for request_id in (1, 2, 3, 4):
    ctx = Context(None, request_id, "tools/call", {})
    started = time.perf_counter()
    result = git.git_status(ctx, roots) if tool == "git_status" else tools.run("search_code", ctx, roots, pattern=needle)
    times.append(time.perf_counter() - started)
    assert not result.is_error, result.to_dict()
later = sorted(times[1:])[1]  # the median of the calls after the first
print(json.dumps({"first": times[0], "later": later, "landlockpy": "landlockpy" in sys.modules}))
"""
"""A fresh interpreter: the first call of one tool and the median of the next three (or the import of the binding alone)."""


def fresh_server(python: str, src: Path, root: Path, cache: Path, tool: str, sandboxed: bool,
                 check: Callable[[str, dict[str, Any]], None]) -> dict[str, float]:
    """A server started for one measure: initialize, then the tool at once (the first call), then three more."""
    target = server_target(python, src, root, sandboxed)
    child = harness.Child(target, harness.stderr_log(cache, target))
    samples = harness.Samples()
    try:
        child.arm(120.0)
        child.initialize(samples)
        times = []
        for _ in range(4):
            elapsed, data = harness.timed_call(child, samples, tool, {"pattern": NEEDLE} if tool == "search_code" else {})
            check(tool, data)
            times.append(elapsed)
        child.close(10.0)
    finally:
        child.kill()
    return {"first": times[0], "later": harness.median(times[1:])}


def first_calls(python: str, src: Path, root: Path, cache: Path, repetitions: int, servers: bool,
                check: Callable[[str, dict[str, Any]], None]) -> dict[str, Any]:
    """Fresh processes, interleaved: the first call with and without the sandbox, later calls for reference;
    in-process (a fresh interpreter calling the tool function) and, with `servers`, through a fresh server."""
    tools = ["git_status", "search_code"] + (["server git_status", "server search_code"] if servers else [])
    cases = [(tool, mode) for tool in tools for mode in ("on", "off")] + [("import", "on")]
    samples: dict[str, dict[str, list[float]]] = {f"{tool} {mode}": {} for tool, mode in cases}
    loaded: dict[str, bool] = {}
    for repetition in range(repetitions):
        for tool, mode in cases[repetition % len(cases):] + cases[:repetition % len(cases)]:
            if tool.startswith("server "):
                figures: dict[str, Any] = fresh_server(python, src, root, cache, tool.split()[1], mode == "on", check)
            else:
                done = subprocess.run([python, "-c", FIRST_CALL_PROGRAM, mode, tool, str(root), NEEDLE], capture_output=True,
                                      text=True, timeout=120, check=False,
                                      env={**harness.clean_environment(), **harness.our_env(src)})
                if done.returncode != 0:
                    raise BenchError(f"first call of {tool} ({mode}) failed: {done.stderr.strip()[-500:]}")
                figures = json.loads(done.stdout)
            if "landlockpy" in figures:
                loaded[f"{tool} {mode}"] = figures.pop("landlockpy")
            for name, value in figures.items():
                samples[f"{tool} {mode}"].setdefault(name, []).append(value)
    out: dict[str, Any] = {"repetitions": repetitions, "tools": tools, "samples": samples, "landlockpy_loaded": loaded}
    out["median"] = {key: {name: harness.median(values) for name, values in figures.items()} for key, figures in samples.items()}
    for tool in tools:
        on, off = out["median"][f"{tool} on"], out["median"][f"{tool} off"]
        paired = list(zip(samples[f"{tool} on"]["first"], samples[f"{tool} on"]["later"], samples[f"{tool} off"]["first"],
                          samples[f"{tool} off"]["later"], strict=True))
        out[tool] = {"first_on": on["first"], "first_off": off["first"], "later_on": on["later"], "later_off": off["later"],
                     # medians of the differences within each repetition (its processes ran one after the other)
                     "first_difference": harness.median([first_on - first_off for first_on, _, first_off, _ in paired]),
                     "first_call_extra": harness.median([(a - b) - (c - d) for a, b, c, d in paired])}
    out["import_landlockpy"] = out["median"]["import on"]["seconds"]
    return out


# -- the rounds -----------------------------------------------------------------------------------------
@dataclass
class Case:
    key: str
    label: str
    run: Callable[[], float]  # one timed run, its answer checked; returns seconds


@dataclass
class Config:
    rounds: int = 25
    first_call_repetitions: int = 21
    recipe: Recipe = field(default_factory=Recipe)
    servers: bool = True
    timeout: float = 300.0


SMOKE = Config(rounds=2, first_call_repetitions=1, recipe=SMOKE_RECIPE)

PAIRS = (  # (what, with the sandbox, without it, the floor)
    ("git_status, in-process", "git_status on", "git_status off", "git status"),
    ("search_code, in-process", "search_code on", "search_code off", "rg"),
    ("git_status via the server", "server git_status on", "server git_status off", "git status"),
    ("search_code via the server", "server search_code on", "server search_code off", "rg"),
    ("one child doing nothing", "child on", "child off", "git --version"),
)


def rounds(cases: list[Case], count: int) -> dict[str, list[float]]:
    """An untimed round (page cache, first-call costs), then `count` timed ones in rotated order."""
    times: dict[str, list[float]] = {case.key: [] for case in cases}
    for number in range(count + 1):
        shift = number % len(cases)
        for case in cases[shift:] + cases[:shift]:
            elapsed = case.run()
            if number:
                times[case.key].append(elapsed)
    return times


def timed_command(command: list[str], cwd: Path, preexec_fn: Callable[[], None] | None = None) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          check=False, timeout=120, preexec_fn=preexec_fn)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise BenchError(f"{' '.join(command)} exited with {done.returncode}")
    return elapsed, done.stdout


def measure(python: str, src: Path, cache: Path, config: Config, log: Callable[[str], None]) -> dict[str, Any]:
    workspace = make_repository(cache / ("sandbox-repo-smoke" if config.recipe == SMOKE_RECIPE else "sandbox-repo"),
                                config.recipe, log)
    root = workspace.root
    ours = InProcess(root)
    reason = ours.sandbox.unavailable_reason()
    if reason is not None:
        raise BenchError(f"nothing to measure: children run without the kernel sandbox here ({reason})")
    from shipcode_mcp.workspace.listing import rg_executable

    rg = rg_executable()
    rg_expected = timed_command([rg, "-n", NEEDLE], root)[1]
    samples = harness.Samples()  # the server calls sent and checked

    def check(tool: str, data: dict[str, Any]) -> None:
        if tool == "git_status":
            same_status(data, workspace)
        else:
            harness.same_search(data, rg_expected)

    def in_process(tool: str, sandboxed: bool) -> Callable[[], float]:
        def one() -> float:
            elapsed, data = ours.call(tool, sandboxed)
            check(tool, data)
            return elapsed
        return one

    def through(child: harness.Child, tool: str) -> Callable[[], float]:
        def one() -> float:
            elapsed, data = harness.timed_call(child, samples, tool, {"pattern": NEEDLE} if tool == "search_code" else {})
            check(tool, data)
            return elapsed
        return one

    def plain_git() -> float:
        elapsed, output = timed_command(["git", "status", "--porcelain=v2"], root)
        if porcelain_paths(output) != workspace.changed:
            raise BenchError(f"git status printed {porcelain_paths(output)}")
        return elapsed

    def plain_child(preexec_fn: Callable[[], None] | None = None) -> float:
        elapsed, output = timed_command(["git", "--version"], root, preexec_fn)
        if not output.startswith(b"git version"):
            raise BenchError("git --version printed something else")
        return elapsed

    def nothing() -> None:
        """A preexec_fn that does nothing: what applying the limits in preexec_fn costs before any limit."""

    def plain_rg() -> float:
        elapsed, output = timed_command([rg, "-n", NEEDLE], root)
        if sorted(output.splitlines()) != sorted(rg_expected.splitlines()):  # rg's threads print in any order
            raise BenchError("rg printed something else this time")
        return elapsed

    cases = [
        Case("git_status on", "git_status, sandbox on", in_process("git_status", True)),
        Case("git_status off", "git_status, sandbox off", in_process("git_status", False)),
        Case("search_code on", "search_code, sandbox on", in_process("search_code", True)),
        Case("search_code off", "search_code, sandbox off", in_process("search_code", False)),
        Case("git status", "git status --porcelain=v2", plain_git),
        Case("rg", f"rg -n {NEEDLE}", plain_rg),
        Case("child on", "git --version via process.run, sandbox on", lambda: ours.trivial_child(True)),
        Case("child off", "git --version via process.run, sandbox off", lambda: ours.trivial_child(False)),
        Case("git --version", "git --version", plain_child),
        Case("git --version, preexec_fn", "git --version with a preexec_fn that does nothing", lambda: plain_child(nothing)),
    ]
    children = {tool: ours.children(tool) for tool in ("git_status", "search_code")}
    servers: list[harness.Child] = []
    try:
        if config.servers:
            for sandboxed in (True, False):
                target = server_target(python, src, root, sandboxed)
                child = harness.Child(target, harness.stderr_log(cache, target))
                servers.append(child)
                child.arm(config.timeout)
                child.initialize(samples)
                mode = "on" if sandboxed else "off"
                for tool in ("git_status", "search_code"):
                    cases.append(Case(f"server {tool} {mode}", f"{tool} via the server, sandbox {mode}", through(child, tool)))
        log(f"{config.rounds} interleaved rounds of {len(cases)} cases")
        load_before = harness.load_average()
        times = rounds(cases, config.rounds)
        load_after = harness.load_average()
        for child in servers:
            child.close(10.0)
    finally:
        for child in servers:
            child.kill()
    log(f"the first call of a fresh process, {config.first_call_repetitions} times each")
    first = first_calls(python, src, root, cache, config.first_call_repetitions, config.servers, check)
    git_binary = ours.git_program()
    from shipcode_mcp.workspace.listing import walk_readable

    confinement = {
        "git": ours.ruleset_seconds(git_binary, [str(root)], 50 if config.rounds > 2 else 3),
        "rg": ours.ruleset_seconds(rg, walk_readable([str(root)]), 50 if config.rounds > 2 else 3),
    }
    medians = {key: harness.median(values) for key, values in times.items()}
    pairs = {}
    for what, on, off, floor in PAIRS:
        if on in medians and off in medians:
            differences = [a - b for a, b in zip(times[on], times[off], strict=True)]
            pairs[what] = {"on": medians[on], "off": medians[off], "floor": medians[floor], "ratio": medians[on] / medians[off],
                           "cost": harness.median(differences), "on_floor": medians[on] / medians[floor],
                           "off_floor": medians[off] / medians[floor],
                           "quartiles": {key: quartiles(times[key]) for key in (on, off, floor)}}
    # subprocess forks instead of using vfork when there is a preexec_fn: paid with the sandbox on or off
    preexec_fn_cost = harness.median([a - b for a, b in zip(times["git --version, preexec_fn"], times["git --version"], strict=True)])
    return {
        "preexec_fn_cost": preexec_fn_cost,
        "repository": {"files": config.recipe.files, "bytes": workspace.bytes, "changed": workspace.changed,
                       "needle": NEEDLE, "matches": config.recipe.needle_files},
        "versions": {"git": harness.output_of(["git", "--version"]), "rg": harness.output_of([rg, "--version"]).splitlines()[0],
                     "landlock_abi": ours.sandbox.abi()},
        "rounds": config.rounds, "load_average": {"before": load_before, "after": load_after},
        "children_per_call": children, "confinement_build": confinement,
        "labels": {case.key: case.label for case in cases}, "samples": times, "median": medians, "pairs": pairs,
        "first_call": first,
    }


def quartiles(values: list[float]) -> list[float]:
    """The first and third quartiles (nearest rank): how noisy a median is."""
    return [harness.percentile(values, 0.25), harness.percentile(values, 0.75)]


# -- the report -------------------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    value = seconds * 1e3
    return f"{value:.0f} ms" if abs(value) >= 100 else f"{value:.1f} ms" if abs(value) >= 10 else f"{value:.2f} ms"


def render(report: dict[str, Any]) -> str:
    host, figures = report["machine"], report["figures"]
    repository = figures["repository"]
    lines = [
        f"{report['date']} · {host['cpu']}, {host['cores']} cores · {host['system']} · Python {host['python']} · "
        f"commit {host['commit']} · src {report['config']['src']} · "
        f"load average {figures['load_average']['before']} -> {figures['load_average']['after']}",
        f"{figures['versions']['git']}; {figures['versions']['rg']}; Landlock ABI {figures['versions']['landlock_abi']}; "
        f"repository: {repository['files']:,} files, {repository['bytes'] / 1e6:.0f} MB, {len(repository['changed'])} changed; "
        f"{figures['rounds']} interleaved rounds",
        "",
    ]
    rows = []
    for what, pair in figures["pairs"].items():
        floor = ("`git --version`" if what.startswith("one child") else "`git status --porcelain=v2`" if what.startswith("git")
                 else f"`rg -n {repository['needle']}`")
        rows.append([what, ms(pair["on"]), ms(pair["off"]), f"{pair['ratio']:.2f}x", ms(pair["cost"]),
                     f"{ms(pair['floor'])} ({floor})"])
    header = ["median of the rounds", "sandbox on", "sandbox off", "on / off", "on - off, paired", "floor"]
    lines.append(harness.markdown_table(header, rows))
    children = figures["children_per_call"]
    build = figures["confinement_build"]
    lines += ["", "children per call: " + "; ".join(f"{tool}: {len(names)} ({', '.join(names)})" for tool, names in children.items()),
              f"building one child's confinement in the parent (limits + ruleset): git {ms(build['git'])}, rg {ms(build['rg'])}",
              f"a preexec_fn alone (subprocess forks instead of vfork; both sides pay it, the limits need it): "
              f"{ms(figures['preexec_fn_cost'])} per child (`git --version` with a no-op preexec_fn minus without)"]
    first = figures["first_call"]
    rows = []
    for tool in first["tools"]:
        pair = first[tool]
        shown = f"{tool.split()[1]}, fresh server" if tool.startswith("server ") else f"{tool}, fresh interpreter"
        rows.append([shown, ms(pair["first_on"]), ms(pair["first_off"]), ms(pair["first_difference"]), ms(pair["later_on"]),
                     ms(pair["later_off"]), ms(pair["first_call_extra"])])
    header = [f"first call ({first['repetitions']} processes each, median)", "1st call, on", "1st call, off", "on - off, paired",
              "later calls, on", "later calls, off", "extra: (1st - later) on - (1st - later) off, paired"]
    lines += ["", harness.markdown_table(header, rows), f"import landlockpy alone, fresh process: {ms(first['import_landlockpy'])}"]
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="The cost of the kernel sandbox on git_status and search_code: "
                                     "with and without Landlock, in one run; prints a table and writes JSON.")
    parser.add_argument("--smoke", action="store_true", help="a small repository, 2 rounds: proves the benchmark works")
    parser.add_argument("--rounds", type=int, help=f"interleaved rounds (default {Config.rounds})")
    parser.add_argument("--first-calls", type=int, help=f"fresh processes per case (default {Config.first_call_repetitions})")
    parser.add_argument("--no-servers", action="store_true", help="in-process calls only")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the servers and fresh processes")
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the shipcode_mcp source tree (default: this checkout's)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="the generated repository and logs (default .bench-cache/)")
    parser.add_argument("--json", type=Path, help="results file (default CACHE/sandbox_cost.json)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = SMOKE if args.smoke else Config()
    config = Config(rounds=args.rounds or config.rounds, first_call_repetitions=args.first_calls or config.first_call_repetitions,
                    recipe=config.recipe, servers=not args.no_servers)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    src, cache = args.src.resolve(), args.cache.resolve()
    sys.path.insert(0, str(src))  # the in-process calls measure the same tree as the servers
    (cache / "logs").mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    try:
        figures = measure(args.python, src, cache, config, log)
    except (BenchError, OSError, subprocess.SubprocessError) as err:
        log(f"sandbox_cost: {err}")
        return 1
    import shipcode_mcp

    report = {"date": started.strftime("%Y-%m-%d %H:%M UTC"), "machine": harness.machine(), "config": {
        "rounds": config.rounds, "first_call_repetitions": config.first_call_repetitions, "servers": config.servers,
        "recipe": config.recipe.__dict__, "src": os.path.dirname(os.path.dirname(shipcode_mcp.__file__ or ""))}, "figures": figures}
    json_path = args.json or cache / "sandbox_cost.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
