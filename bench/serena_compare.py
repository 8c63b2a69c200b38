"""find_references against Serena's find_referencing_symbols: same corpora, same symbols, same ground truth.

Issue 25 asks for it: "against Serena on the same corpus, same queries: time to first precise answer, same
precision, memory of the whole process tree (language servers included)". Serena (PyPI `serena-agent`, pinned
SERENA_PIN) is the best-known peer MCP server for code intelligence; both servers run here as child processes
over stdio, driven by this script as a plain MCP client (newline-delimited JSON-RPC, standard library only).

- **Corpora and symbols**: those of bench/references_precision.py (Python sdists from PyPI, pinned by hash) and
  bench/references_precision_ts.py (npm packages, pinned by integrity); of each, SAMPLE symbols (top-level
  functions and classes, methods of top-level classes) spread evenly over the list those benches build.
- **Ground truth**: the same as theirs: the language server asked directly through pygls (basedpyright for
  Python, typescript-language-server over scripts/language_servers.sh's typescript for TypeScript),
  `textDocument/references` with the declaration, file:line.
- **Ours**: `python -m shipcode_mcp --precise --max-result-tokens 0 --index-dir FRESH COPY`; each symbol asked
  the way the other benches ask it (`find_references {"name": "Class.method" or "module.func", "limit": 2000}`),
  again every POLL seconds while the answer says the language server is not ready yet (it answers from the
  syntax tree meanwhile: `language_server` null and a `language_server_note`). The precise answer is the uses
  labelled `exact`; "every use" adds the syntax tree's `name` matches it lists beside them.
- **Serena**: `serena start-mcp-server --project COPY --transport stdio --context claude-code --mode benchmark
  --agent-interface tools` with the web dashboard and GUI log window off; each symbol asked as
  `find_referencing_symbols {"name_path": "Class/method" or "func", "relative_path": FILE, "max_answer_chars":
  10**7}` (and once more with Serena's overload index, `name[i]`, when it answers that the name path is
  ambiguous). It answers with the symbols that contain each reference, each with `content_around_reference`:
  the lines around it, the reference's own marked `  >` with its 0-based number: that line is its file:line.
  Serena installs and runs its own language servers: pyright (PyPI, through `uvx`) for Python and
  typescript-language-server over its own typescript (npm) for TypeScript, under SERENA_HOME (here the cache
  folder's serena-home, as HOME too, so nothing is written into the user's home).
- **Scores**, micro-averaged over the symbols: "declaration aside" (the headline): Serena never returns the
  definition itself (it asks with includeDeclaration false and drops the self reference), so the definition's
  line is taken out of the truth and of every answer; "imports aside too": Serena also drops the references it
  takes for imports (by a heuristic), so the lines of import statements go as well; and against the whole truth.
- **Time**: from the process's start (fork) to the first precise answer (ours: the first find_references that
  names its language server; Serena: its first successful find_referencing_symbols), and to the last answer;
  beside them, to the first answer of any kind (ours answers from the syntax tree while its server starts).
- **Memory** of the whole process tree (the server, its language servers, their helpers): sampled every
  SAMPLE_EVERY s, the largest sum of VmRSS over the tree and the sum of each process's VmHWM (an upper bound, the
  processes peak at different times); and PSS (smaps_rollup) over the tree after the last answer.

Each round starts each server once, cold, on a fresh copy of the corpus (Serena writes a .serena/ folder into
its project; ours gets a fresh --index-dir), the two servers one after the other, never together, in an order
that alternates by round; the timings and memory shown are medians over the rounds, the scores the first
round's (the others' answers are checked to be the same).

    .venv/bin/python bench/serena_compare.py            # requests and immer, 30 symbols, 3 rounds: a few minutes
    .venv/bin/python bench/serena_compare.py --smoke    # requests and immer, 6 symbols, 1 round

Serena is installed on first use into the cache folder (serena-venv, made by this Python's base interpreter:
pip install SERENA_PIN UV_PIN; then `serena download-ls-dependencies` for the languages measured), which needs
PyPI and the npm registry once. Results: .bench-cache/serena_compare.json.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import references_precision as python_bench  # the Python corpora and their ground truth
import references_precision_ts as ts_bench  # the TypeScript corpora and their ground truth
import run as harness  # bench/run.py: tables, machine facts, /proc readings
from references_precision import Symbol, Unreachable, in_root, query_of, score
from run import BenchError

from shipcode_mcp.workspace.code.pyscopes import module_path

REPO = harness.REPO
DEFAULT_CACHE = harness.DEFAULT_CACHE
SERENA_PIN = "serena-agent==2.1.0"
UV_PIN = "uv==0.13.9"  # Serena runs pyright with `uvx`
SERENA_OPTIONS = ["--transport", "stdio", "--context", "claude-code", "--mode", "benchmark", "--agent-interface", "tools",
                  "--enable-web-dashboard", "false", "--open-web-dashboard", "false", "--enable-gui-log-window", "false"]
SERENA_PYTHON = "3.13"  # the interpreter Serena's uvx asks for pyright (`-p 3.13`); found here, never downloaded
DEFAULT_CORPORA = ["requests", "immer"]
SAMPLE = 30
SMOKE_SAMPLE = 6
ROUNDS = 3
LIMIT = 2000  # find_references' largest limit
MAX_ANSWER_CHARS = 10**7  # Serena's answers uncut (its default, 150 000 characters, falls back to counts)
CALL_TIMEOUT = 300.0
READY_TIMEOUT = 180.0  # how long ours is asked again while its language server is not ready
POLL = 0.05
SAMPLE_EVERY = 0.1
SHUTDOWN_TIMEOUT = 20.0
SERVERS = ("shipcode-mcp", "Serena")


# -- the cases: corpus, symbols, queries, truth ------------------------------------------------------------------
@dataclass
class Case:
    """One corpus: its chosen symbols, how each server is asked about them, and the truth."""

    name: str
    label: str
    language: str  # "python" or "typescript"
    root: Path
    files: int
    symbols: int  # how many the corpus has
    chosen: list[Symbol]
    queries: list[str]  # ours
    name_paths: list[tuple[str, str]]  # Serena's, and the one with an overload index, asked when that is ambiguous
    expected: list[set[tuple[str, int]]]
    imports: set[tuple[str, int]]  # the lines of the corpus's import statements
    truth_first: float
    truth_all: float
    bin_folder: Path | None = None  # typescript-language-server's, for ours (TypeScript)


def sample(every: list[Symbol], count: int) -> list[Symbol]:
    """`count` symbols spread evenly over the list (all of them when it is not longer)."""
    size = len(every)
    return [every[index * size // count] for index in range(count)] if size > count else list(every)


def serena_name_paths(chosen: list[Symbol], every: list[Symbol], module: Callable[[str], tuple[str, ...]],
                      ) -> list[tuple[str, str]]:
    """Serena's name path of each symbol (its class and name, `/` between), and the one to ask when Serena answers
    that it is ambiguous (several siblings of that name: overloads, a property's setter): with the overload index
    Serena gives them, their order in the file (the symbol's among the definitions of the name path the other
    benches list in the file; 0, the first, where they list one: TypeScript's overload signatures)."""
    paths: list[tuple[str, str]] = []
    for symbol in chosen:
        name_path = "/".join(symbol.dotted[len(module(symbol.path)):])
        same = [other for other in every if other.path == symbol.path and other.dotted == symbol.dotted]
        paths.append((name_path, f"{name_path}[{same.index(symbol)}]"))
    return paths


def python_imports(root: Path) -> set[tuple[str, int]]:
    lines = set()
    for file in sorted(root.rglob("*.py")):
        path = file.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                lines |= {(path, line) for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
    return lines


_TS_IMPORT = re.compile(r"^[ \t]*(?:import|export)[ \t]+(?:type[ \t]+)?(?:\{[^}]*\}|\*(?:[ \t]+as[ \t]+[\w$]+)?|[\w$]+"
                        r"(?:[ \t]*,[ \t]*(?:\{[^}]*\}|\*[ \t]+as[ \t]+[\w$]+))?)[ \t]*from[ \t]*[\"'][^\"']*[\"']", re.M)


def typescript_imports(root: Path) -> set[tuple[str, int]]:
    lines = set()
    for file in sorted(root.rglob("*.ts")):
        path = file.relative_to(root).as_posix()
        text = file.read_text(encoding="utf-8")
        for found in _TS_IMPORT.finditer(text):
            first = text.count("\n", 0, found.start()) + 1
            lines |= {(path, line) for line in range(first, first + found.group().count("\n") + 1)}
    return lines


def python_case(name: str, cache: Path, count: int) -> Case:
    corpus = python_bench.CORPORA[name]
    root = python_bench.fetch(corpus, cache)
    every = python_bench.symbols(root)
    chosen = sample(every, count)
    expected, first, total = python_bench.truth(root, chosen)
    return Case(name, f"{corpus.name} {corpus.version}", "python", root, len(list(root.rglob("*.py"))), len(every), chosen,
                [query_of(symbol, every) for symbol in chosen], serena_name_paths(chosen, every, module_path), expected,
                python_imports(root), first, total)


async def _typescript_truth(root: Path, bin_folder: Path, count: int, corpus: ts_bench.Corpus,
                            ) -> tuple[list[Symbol], list[Symbol], list[set[tuple[str, int]]], float, float]:
    """references_precision_ts's truth, of a sample of its symbols."""
    from lsprotocol import types

    start = time.perf_counter()
    first = 0.0
    answers: list[set[tuple[str, int]]] = []
    async with ts_bench.language_server(root, bin_folder) as client:
        every = await ts_bench._symbols(client, root, corpus)
        chosen = sample(every, count)
        for symbol in chosen:
            uri = ts_bench.open_file(client, root, symbol.path, corpus.language)
            found = await asyncio.wait_for(client.text_document_references_async(types.ReferenceParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(symbol.line - 1, symbol.column),
                context=types.ReferenceContext(include_declaration=True))), ts_bench.REQUEST_TIMEOUT)
            first = first or time.perf_counter() - start
            answers.append(in_root(root, found))
    return every, chosen, answers, first, time.perf_counter() - start


def typescript_case(name: str, cache: Path, count: int) -> Case:
    corpus = ts_bench.CORPORA[name]
    root = ts_bench.fetch(corpus, cache)
    bin_folder = ts_bench.server_bin()
    every, chosen, expected, first, total = asyncio.run(_typescript_truth(root, bin_folder, count, corpus))
    return Case(name, f"{corpus.name} {corpus.version} ({corpus.under})", "typescript", root, len(list(root.rglob(f"*{corpus.extension}"))),
                len(every), chosen, [ts_bench._query(symbol, every) for symbol in chosen],
                serena_name_paths(chosen, every, ts_bench._module), expected, typescript_imports(root), first, total,
                bin_folder)


def make_case(name: str, cache: Path, count: int) -> Case:
    return python_case(name, cache, count) if name in python_bench.CORPORA else typescript_case(name, cache, count)


# -- Serena's installation ----------------------------------------------------------------------------------------
@dataclass
class Serena:
    """Serena installed under the cache: its command, the environment it runs in, what it installed."""

    command: list[str]
    env: dict[str, str]
    home: Path
    installed: list[str] = field(default_factory=list)  # the commands run to install it, this time


def _interpreter(version: str) -> str | None:
    """A real `pythonX.Y` (pyenv's versions first: its shims pick one by the current folder's settings)."""
    roots = [Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"]
    for root in roots:
        for candidate in sorted(root.glob(f"{version}*/bin/python{version}"), reverse=True):
            return str(candidate)
    found = shutil.which(f"python{version}")
    return found if found and "/shims/" not in found else None


def serena_environment(venv: Path, home: Path) -> dict[str, str]:
    """Serena's environment: HOME in the cache (its ~/.serena, uv's and npm's caches and tools go there), its
    venv first on PATH (its `uvx`), then the Python 3.13 its uvx asks for; uv never downloads an interpreter."""
    env = harness.clean_environment()
    folders = [str(venv / "bin")]
    python = _interpreter(SERENA_PYTHON)
    if python is not None:
        folders.append(str(Path(python).parent))
    env.update({"HOME": str(home), "PATH": os.pathsep.join([*folders, env.get("PATH", "")]), "UV_PYTHON_DOWNLOADS": "never"})
    env.pop("XDG_CACHE_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    if "SSL_CERT_FILE" not in env and Path("/etc/ssl/certs/ca-certificates.crt").exists():
        env["SSL_CERT_FILE"] = "/etc/ssl/certs/ca-certificates.crt"  # uv's TLS, through the system's certificates
    return env


def ensure_serena(cache: Path, languages: set[str]) -> Serena:
    """Serena in its own venv under the cache (installed once), its language servers for `languages` installed
    by its own command (`serena download-ls-dependencies`: uv installs pyright, npm typescript-language-server)."""
    venv = cache.resolve() / "serena-venv"
    home = cache.resolve() / "serena-home"
    home.mkdir(parents=True, exist_ok=True)
    installed = []
    stamp = venv / ".pins"
    if not (venv / "bin" / "serena").exists() or not stamp.exists() or stamp.read_text() != f"{SERENA_PIN} {UV_PIN}":
        base = Path(sys.base_prefix) / "bin" / "python3"  # this venv's interpreter, outside it (3.11 or later: Serena's)
        commands = [[str(base), "-m", "venv", "--clear", str(venv)],
                    [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                     SERENA_PIN, UV_PIN]]
        pip_cache = {**os.environ, "PIP_CACHE_DIR": str(home / ".cache" / "pip")}  # not the user's
        for command in commands:
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False, env=pip_cache)
            if done.returncode != 0:
                raise Unreachable(f"{' '.join(command)} failed: {done.stderr.strip()[-800:]}")
            installed.append(" ".join(command))
        stamp.write_text(f"{SERENA_PIN} {UV_PIN}")
    env = serena_environment(venv, home)
    command = [str(venv / "bin" / "serena"), "download-ls-dependencies", *sorted(languages)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False, env=env, cwd=home)
    if done.returncode != 0:
        raise Unreachable(f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip()[-800:]}")
    installed.append(f"HOME={home} {' '.join(command)}")
    return Serena([str(venv / "bin" / "serena"), "start-mcp-server"], env, home, installed)


def serena_language_servers(serena: Serena, processes: list[str]) -> dict[str, str]:
    """The versions of the language servers Serena ran: pyright's from its uvx command line, typescript's and
    typescript-language-server's from the packages it installed."""
    found = {}
    for command in processes:
        pin = re.search(r"pyright==([\w.]+)", command)
        if pin:
            found["python"] = f"pyright {pin.group(1)}"
    static = serena.home / ".serena" / "language_servers" / "static" / "TypeScriptLanguageServer"
    for modules in sorted(static.glob("*/node_modules")):
        versions = [f"{package} {_package_version(modules / package)}" for package in ("typescript-language-server", "typescript")]
        found["typescript"] = " over ".join(versions)
    return found


def _package_version(folder: Path) -> str:
    try:
        return str(json.loads((folder / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "?"


def our_language_servers(case: Case) -> str:
    if case.bin_folder is None:
        from importlib.metadata import version

        return f"basedpyright {version('basedpyright')}"
    modules = (case.bin_folder / "typescript-language-server").resolve().parent.parent.parent
    return f"typescript-language-server {_package_version(modules / 'typescript-language-server')} over typescript " \
           f"{_package_version(modules / 'typescript')}"


# -- the client ---------------------------------------------------------------------------------------------------
class Client:
    """An MCP server as a child process over pipes: requests by id, answered by a reader thread; a request of the
    server (none expected) is refused; stderr goes to a log."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = log
        self.started = time.perf_counter()
        with open(log, "ab") as stderr:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd)
        self.pid = self.proc.pid
        self.responses: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.lock = threading.Lock()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" in message:
                if "id" in message:
                    self._send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}})
                continue
            self.responses.put(message)
        self.responses.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        with self.lock:
            try:
                self.proc.stdin.write(json.dumps(message).encode() + b"\n")
                self.proc.stdin.flush()
            except OSError as err:
                raise BenchError(f"the server stopped reading: {err}{self.stderr_tail()}") from None

    def request(self, method: str, params: dict[str, Any], timeout: float = CALL_TIMEOUT) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.responses.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise BenchError(f"{method}: no answer in {timeout:.0f} s{self.stderr_tail()}") from None
            if message is None:
                raise BenchError(f"the server closed its output{self.stderr_tail()}")
            if message.get("id") != request_id:
                continue
            if "error" in message:
                raise BenchError(f"{method}: {json.dumps(message['error'])[:500]}")
            result = message.get("result")
            if not isinstance(result, dict):
                raise BenchError(f"{method}: no result object: {json.dumps(message)[:500]}")
            return result

    def initialize(self) -> None:
        self.request("initialize", {"protocolVersion": harness.PROTOCOL_VERSION, "capabilities": {},
                                    "clientInfo": {"name": "shipcode-bench", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def stderr_tail(self) -> str:
        try:
            tail = self.log.read_bytes()[-800:].decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return f"; its stderr ends: {tail}" if tail else ""

    def close(self) -> int | None:
        """Close its input and wait for its exit; whatever of its tree is left then (or the whole tree, when it
        did not exit in time) is ended, process by process, by id."""
        members = [(pid, _start_time(pid)) for pid in harness.descendants(self.pid)]
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        code = harness.wait_exit(self.proc, SHUTDOWN_TIMEOUT)
        if code is None:
            self.proc.kill()
            code = self.proc.wait()
        for pid, started in members[1:]:
            with contextlib.suppress(OSError):
                if started is not None and _start_time(pid) == started:
                    os.kill(pid, signal.SIGKILL)
        self.reader.join(5)
        return code


def _start_time(pid: int) -> str | None:
    """The process's start time (in clock ticks since boot): with the pid, who it is (a pid is reused)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = [word.decode("utf-8", "replace") for word in cmdline.read().split(b"\0") if word]
    except OSError:
        return "?"
    return " ".join(words)


class TreeSampler:
    """The memory of a process tree, sampled in a thread: the largest sum of VmRSS over the tree at one time, and
    each process's VmHWM (its own peak), kept after it ends."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_rss = 0
        self.hwm: dict[int, int] = {}
        self.commands: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        total = 0
        for pid in harness.descendants(self.pid):
            figures = harness.memory(pid)
            if not figures:
                continue
            total += figures.get("VmRSS", 0)
            self.hwm[pid] = max(self.hwm.get(pid, 0), figures.get("VmHWM", 0))
            if pid not in self.commands:
                self.commands[pid] = _command_line(pid)
        self.peak_rss = max(self.peak_rss, total)

    def by_process(self) -> list[tuple[str, int]]:
        """Each process's command line (shortened) and VmHWM, largest first."""
        return sorted(((self.commands[pid][:160], peak) for pid, peak in self.hwm.items()), key=lambda item: -item[1])

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            self.sample()

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# -- one run of one server ----------------------------------------------------------------------------------------
@dataclass
class Run:
    """What one server did in one round: its answers (file:line sets, per symbol), its times and its memory."""

    server: str
    answers: list[set[tuple[str, int]]]  # the precise answer (ours: the `exact` uses)
    every_use: list[set[tuple[str, int]]]  # ours: every use listed (Serena: the same as answers)
    first: float | None  # seconds from the start to the first precise answer
    first_any: float  # to the first answer of any kind (ours: the syntax tree's, while its language server starts)
    total: float  # to the last answer
    failed: list[str]  # the symbols without a precise answer, and why
    memory: dict[str, int]
    processes: list[str]
    by_process: list[tuple[str, int]]  # each process's VmHWM, largest first
    calls: int
    exit_code: int | None


@contextlib.contextmanager
def copy_of(root: Path, work: Path, name: str) -> Iterator[Path]:
    """A fresh copy of the corpus for one server's run, removed after."""
    target = work / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(root, target)
    try:
        yield target
    finally:
        shutil.rmtree(target, ignore_errors=True)


def _lines(items: list[dict[str, Any]], exact_only: bool) -> set[tuple[str, int]]:
    return {(item["path"], item["line"]) for item in items if not exact_only or item.get("precision") == "exact"}


def run_ours(case: Case, work: Path, cache: Path, label: str) -> Run:
    env = {**harness.clean_environment(), "PYTHONPATH": str(REPO / "src")}
    if case.bin_folder is not None:
        env["PATH"] = f"{case.bin_folder}{os.pathsep}{env.get('PATH', '')}"
    with copy_of(case.root, work, f"{label}-shipcode") as project:
        index = work / f"{label}-shipcode-index"
        shutil.rmtree(index, ignore_errors=True)
        command = [sys.executable, "-m", "shipcode_mcp", "--precise", "--max-result-tokens", "0", "--index-dir", str(index),
                   str(project)]
        client = Client(command, env, REPO, cache / "logs" / "serena_compare-shipcode.stderr")
        answers: list[set[tuple[str, int]]] = []
        every: list[set[tuple[str, int]]] = []
        failed: list[str] = []
        first: float | None = None
        first_any = 0.0
        calls = 0
        try:
            with TreeSampler(client.pid) as sampler:
                client.initialize()
                for query in case.queries:
                    deadline = time.monotonic() + READY_TIMEOUT
                    while True:
                        result = client.call("find_references", {"name": query, "limit": LIMIT})
                        calls += 1
                        first_any = first_any or time.perf_counter() - client.started
                        found = result.get("structuredContent")
                        if result.get("isError") or not isinstance(found, dict):
                            raise BenchError(f"find_references {query}: {json.dumps(result)[:500]}")
                        waiting = found["language_server"] is None and found.get("language_server_note") is not None
                        if not waiting or time.monotonic() > deadline:
                            break
                        time.sleep(POLL)
                    if found["language_server"] is not None and first is None:
                        first = time.perf_counter() - client.started
                    if found["language_server"] is None:
                        failed.append(f"{query}: no precise answer ({found.get('language_server_note') or 'no definition found'})")
                    answers.append(_lines(found["references"], exact_only=True))
                    every.append(_lines(found["references"], exact_only=False))
                total = time.perf_counter() - client.started
                sampler.sample()
                memory = harness.tree_memory(client.pid)
        finally:
            code = client.close()
            shutil.rmtree(index, ignore_errors=True)
    memory.update({"peak_rss": sampler.peak_rss, "peak_hwm": sum(sampler.hwm.values())})
    return Run("shipcode-mcp", answers, every, first, first_any, total, failed, memory, sorted(set(sampler.commands.values())),
               sampler.by_process(), calls, code)


_REFERENCE_LINE = re.compile(r"^  >\s*(\d+):", re.M)


def serena_lines(text: str) -> set[tuple[str, int]] | None:
    """file:line of each reference in find_referencing_symbols' answer (its JSON grouped by file, then by kind;
    each item's `content_around_reference` marks the reference's line, 0-based, with `  >`; the shorter form it
    falls back to when an answer is too long gives `reference_line`); None when it is not such an answer."""
    body = text
    if not body.lstrip().startswith(("{", "[")):
        body = body.partition("\n")[2]  # "References without surrounding lines:\n{...}"
    try:
        data = json.loads(body)
    except ValueError:
        return None
    found: set[tuple[str, int]] = set()

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("content_around_reference"), str):
                found.update((path, int(number) + 1) for number in _REFERENCE_LINE.findall(node["content_around_reference"]))
            elif isinstance(node.get("reference_line"), int):
                found.add((path, node["reference_line"] + 1))
            for value in node.values():
                walk(value, path)
        elif isinstance(node, list):
            for value in node:
                walk(value, path)

    if isinstance(data, dict):
        for path, value in data.items():
            walk(value, path)
    elif not isinstance(data, list) or data:
        return None
    return found


def _text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result.get("content") or [] if isinstance(block, dict))


def run_serena(case: Case, work: Path, cache: Path, label: str, serena: Serena) -> Run:
    with copy_of(case.root, work, f"{label}-serena") as project:
        client = Client([*serena.command, "--project", str(project), *SERENA_OPTIONS], serena.env, project,
                        cache / "logs" / "serena_compare-serena.stderr")
        answers: list[set[tuple[str, int]]] = []
        failed: list[str] = []
        first: float | None = None
        first_any = 0.0
        calls = 0
        try:
            with TreeSampler(client.pid) as sampler:
                client.initialize()
                for symbol, (name_path, indexed) in zip(case.chosen, case.name_paths, strict=True):
                    lines: set[tuple[str, int]] | None = None
                    text = ""
                    for attempt in (name_path, indexed):
                        result = client.call("find_referencing_symbols", {"name_path": attempt, "relative_path": symbol.path,
                                                                          "max_answer_chars": MAX_ANSWER_CHARS})
                        calls += 1
                        first_any = first_any or time.perf_counter() - client.started
                        text = _text(result)
                        lines = None if result.get("isError") else serena_lines(text)
                        if lines is not None or "multiple" not in text.lower():
                            break
                    if lines is None:
                        failed.append(f"{name_path} in {symbol.path}: {' '.join(text.split())[:300]}")
                        lines = set()
                    elif first is None:
                        first = time.perf_counter() - client.started
                    answers.append(lines)
                total = time.perf_counter() - client.started
                sampler.sample()
                memory = harness.tree_memory(client.pid)
        finally:
            code = client.close()
    memory.update({"peak_rss": sampler.peak_rss, "peak_hwm": sum(sampler.hwm.values())})
    return Run("Serena", answers, answers, first, first_any, total, failed, memory, sorted(set(sampler.commands.values())),
               sampler.by_process(), calls, code)


# -- scores and the report ----------------------------------------------------------------------------------------
def views(case: Case, found: list[set[tuple[str, int]]]) -> dict[str, dict[str, float]]:
    """The answers scored against the truth: with the definition's line and the import lines set aside from both,
    with the definition's line alone set aside, and as they are."""
    declarations = [{(symbol.path, symbol.line)} for symbol in case.chosen]
    aside = [wanted - declaration for wanted, declaration in zip(case.expected, declarations, strict=True)]
    got = [answer - declaration for answer, declaration in zip(found, declarations, strict=True)]
    return {"declaration aside": score(aside, got),
            "imports aside too": score([wanted - case.imports for wanted in aside], [answer - case.imports for answer in got]),
            "whole truth": score(case.expected, found)}


def differences(case: Case, found: list[set[tuple[str, int]]]) -> dict[str, list[Any]]:
    """The first misses and wrong answers (references_precision's listing), the definition's line aside."""
    declarations = [{(symbol.path, symbol.line)} for symbol in case.chosen]
    aside = [wanted - declaration for wanted, declaration in zip(case.expected, declarations, strict=True)]
    got = [answer - declaration for answer, declaration in zip(found, declarations, strict=True)]
    return {"missed": python_bench.differences(case.queries, aside, got),
            "wrong": python_bench.differences(case.queries, aside, got, missed=False)}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(case: Case, runs: list[Run], languages: dict[str, str]) -> dict[str, Any]:
    """One corpus's figures: scores of the first round, medians of the rounds."""
    report: dict[str, Any] = {"corpus": case.label, "language": case.language, "files": case.files, "symbols": case.symbols,
                              "asked": [f"{query} | {name_path} in {symbol.path}" for symbol, query, (name_path, _)
                                        in zip(case.chosen, case.queries, case.name_paths, strict=True)],
                              "truth_first_answer": case.truth_first, "truth_all": case.truth_all,
                              "truth_uses": sum(map(len, case.expected)), "servers": {}}
    for server in SERVERS:
        mine = [run for run in runs if run.server == server]
        if not mine:
            continue
        head = mine[0]
        answers = {"precise": views(case, head.answers)}
        if server == "shipcode-mcp":
            answers["every use"] = views(case, head.every_use)
        report["servers"][server] = {
            "language_server": languages.get(server, "?"),
            "scores": answers,
            "same_answers_every_round": all(run.answers == head.answers for run in mine),
            "failed": head.failed,
            "differences": differences(case, head.answers),
            "first": [run.first for run in mine], "first_any": [run.first_any for run in mine],
            "all": [run.total for run in mine],
            "first_median": _median([run.first for run in mine if run.first is not None]),
            "all_median": _median([run.total for run in mine]),
            "memory": [run.memory for run in mine],
            "memory_median": {key: _median([run.memory.get(key, 0) for run in mine])
                              for key in ("peak_rss", "peak_hwm", "pss", "rss", "processes")},
            "processes": head.processes, "by_process": head.by_process, "calls": [run.calls for run in mine],
            "exit_codes": [run.exit_code for run in mine],
        }
    return report


def _seconds(values: list[float | None]) -> str:
    known = [value for value in values if value is not None]
    if not known:
        return "none"
    middle = f"{statistics.median(known):.2f} s"
    return middle if len(known) == 1 else f"{middle} ({min(known):.2f} to {max(known):.2f})"


def _mib(value: float) -> str:
    return f"{value / 2**20:.0f} MiB"


def render(reports: list[dict[str, Any]], rounds: int) -> str:
    rows = []
    for report in reports:
        for server, figures in report["servers"].items():
            for kind, scored in figures["scores"].items():
                aside, imports, whole = scored["declaration aside"], scored["imports aside too"], scored["whole truth"]
                rows.append([report["corpus"], server, "exact uses" if server == "shipcode-mcp" and kind == "precise" else kind,
                             f"{aside['precision']:.3f} / {aside['recall']:.3f}",
                             f"{imports['precision']:.3f} / {imports['recall']:.3f}",
                             f"{whole['precision']:.3f} / {whole['recall']:.3f}", f"{aside['returned']:,} of {aside['expected']:,}",
                             str(len(figures["failed"])) if kind == "precise" else ""])
    lines = [harness.markdown_table(["corpus", "server", "answer", "P / R, declaration aside", "P / R, imports aside too",
                                     "P / R, whole truth", "uses returned (of the truth's)", "no precise answer"], rows), ""]
    rows = []
    for report in reports:
        asked = len(report["asked"])
        for server, figures in report["servers"].items():
            memory = figures["memory_median"]
            calls = f"{asked} symbols, {statistics.median(figures['calls']):.0f} calls"
            rows.append([report["corpus"], server, figures["language_server"], _seconds(figures["first_any"]),
                         _seconds(figures["first"]), _seconds(figures["all"]), calls, _mib(memory["peak_rss"]),
                         _mib(memory["peak_hwm"]), _mib(memory["pss"]), f"{memory['processes']:.0f}"])
    lines.append(harness.markdown_table(
        ["corpus", "server", "language server", "first answer", f"first precise answer (median of {rounds}: min to max)",
         "all answers", "asked", "tree peak RSS (sampled)", "tree sum of VmHWM", "tree PSS at the end", "processes"], rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", action="append", choices=sorted([*python_bench.CORPORA, *ts_bench.CORPORA]),
                        help=f"a corpus (default: {' and '.join(DEFAULT_CORPORA)})")
    parser.add_argument("--symbols", type=int, help=f"symbols per corpus (default {SAMPLE}; {SMOKE_SAMPLE} with --smoke)")
    parser.add_argument("--rounds", type=int, help=f"starts of each server per corpus (default {ROUNDS}; 1 with --smoke)")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_SAMPLE} symbols per corpus, one round")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, help="where the report goes (default: the cache folder)")
    options = parser.parse_args(argv)
    names = options.corpus or DEFAULT_CORPORA
    count = options.symbols or (SMOKE_SAMPLE if options.smoke else SAMPLE)
    rounds = options.rounds or (1 if options.smoke else ROUNDS)
    cache: Path = options.cache.resolve()
    work = cache / "serena-compare"
    work.mkdir(parents=True, exist_ok=True)
    load_before = harness.load_average()
    languages = {"python" if name in python_bench.CORPORA else "typescript" for name in names}
    serena: Serena | None = None
    unavailable = None
    try:
        serena = ensure_serena(cache, languages)
    except (Unreachable, subprocess.TimeoutExpired) as err:
        unavailable = str(err)
        print(f"Serena is left out: {unavailable}", file=sys.stderr)
    reports = []
    for name in names:
        case = make_case(name, cache, count)
        runs: list[Run] = []
        for round_number in range(rounds):
            order = ["ours", "serena"] if round_number % 2 == 0 else ["serena", "ours"]
            for server in order:
                label = f"{name}-{round_number}"
                if server == "ours":
                    runs.append(run_ours(case, work, cache, label))
                elif serena is not None:
                    runs.append(run_serena(case, work, cache, label, serena))
        serena_runs = [run for run in runs if run.server == "Serena"]
        servers = {"shipcode-mcp": our_language_servers(case)}
        if serena is not None and serena_runs:
            servers["Serena"] = serena_language_servers(serena, serena_runs[0].processes).get(case.language, "?")
        reports.append(summarize(case, runs, servers))
    out = options.json or cache / f"serena_compare{'_smoke' if options.smoke else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"machine": harness.machine(), "load_average": {"before": load_before, "after": harness.load_average()},
              "serena": {"pin": SERENA_PIN, "uv": UV_PIN, "options": SERENA_OPTIONS, "unavailable": unavailable,
                         "installed": serena.installed if serena else [],
                         "home": str(serena.home) if serena else None},
              "symbols_per_corpus": count, "rounds": rounds, "corpora": reports}
    out.write_text(json.dumps(report, indent=1))
    print(render(reports, rounds))
    print(f"\nload average before / after: {load_before} / {report['load_average']['after']}; report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
