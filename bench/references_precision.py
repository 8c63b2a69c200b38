"""find_references measured against a language server, on real third-party Python projects.

Ground truth is basedpyright's own references (`textDocument/references`, the declaration included) of
every top-level function and class and every method of a top-level class of each corpus, through its
language server over stdio (pygls as the client). Each symbol is asked of find_references the way an
agent names it: `Class.method` or `module.function`, with more of the module's path only where that is
not yet unique in the corpus. Compared file:line by file:line, micro-averaged over the symbols:

- **by name**: find_references with the scopes off (`scopes=False`) and the bare name, what it was before;
- **scopes, every use**: the qualified query, every use it returns (`scoped` and `name`);
- **scoped only**: the uses it labels `scoped` (where an agent that stops at the "by name" line stops);
- **precise, every use** and **exact only**: with `--precise`, the server's own basedpyright (started, sandboxed
  and spoken to by the server, not by pygls) answering, and the uses it labels `exact`; its peak memory too.

The corpora are pinned source distributions from PyPI (CORPORA: version and sha256, fetched with pip's
--require-hashes into the cache folder), so every run reads the same code, none of it ours.

    .venv/bin/python bench/references_precision.py            # requests, click and attrs: about a minute
    .venv/bin/python bench/references_precision.py --smoke    # requests, one symbol in four

Targets (issue 25): with scopes only, at least twice the by-name precision at recall >= 0.97; the scoped
uses alone at precision >= 0.97; with the language server, the exact uses at precision and recall >= 0.97.
Results: .bench-cache/references_precision.json.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import run as harness  # bench/run.py: tables, machine facts

from shipcode_mcp.workspace.code.pyscopes import module_path  # a file's dotted module, as find_references reads it

DEFAULT_CACHE = harness.DEFAULT_CACHE


@dataclass(frozen=True)
class Corpus:
    """A pinned sdist and the folder of it that holds the packages (the workspace both sides read)."""

    name: str
    version: str
    sha256: str
    folder: str

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version} --hash=sha256:{self.sha256}"


CORPORA = {
    "requests": Corpus("requests", "2.32.3", "55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760", "src"),
    "click": Corpus("click", "8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de", "src"),
    "attrs": Corpus("attrs", "24.2.0", "5cfb1b9148b5b086569baec03f20d7b6bf3bcacc9a42bebf87ffaaca362f6346", "src"),
}
PRECISION_FACTOR = 2.0
RECALL_TARGET = 0.97
SCOPED_TARGET = 0.97
EXACT_TARGET = 0.97
REQUEST_TIMEOUT = 120.0
"""The language server's longest answer (its first reference request analyses the whole corpus)."""


class Unreachable(Exception):
    """PyPI could not be reached for a corpus."""


def download(corpus: Corpus, folder: Path) -> Path:
    """The corpus's sdist, downloaded into `folder` by pip, which checks its hash; Unreachable if it cannot be had."""
    pins = folder / "pins.txt"
    pins.write_text(corpus.pin + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "--no-binary", ":all:", "--require-hashes", "-r", str(pins), "-d", str(folder)],
                          capture_output=True, text=True, timeout=300, check=False)
    archives = list(folder.glob("*.tar.gz"))
    if done.returncode != 0 or len(archives) != 1:
        raise Unreachable(f"{corpus.name} {corpus.version}: pip download failed: {done.stderr.strip()[-500:]}")
    return archives[0]


def fetch(corpus: Corpus, cache: Path) -> Path:
    """The corpus's package folder, downloaded (hash checked by pip) and unpacked once under `cache`."""
    target = cache.resolve() / "corpora" / f"{corpus.name}-{corpus.version}"  # absolute: its file: URIs
    root = target / corpus.folder
    if (target / "complete").exists():
        return root
    with tempfile.TemporaryDirectory() as temporary:
        sdist = download(corpus, Path(temporary))
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        with tarfile.open(sdist) as archive:
            prefix = f"{corpus.name}-{corpus.version}/{corpus.folder}/"
            members = [member for member in archive.getmembers()
                       if member.name.startswith(prefix) and member.isfile() and member.name.endswith(".py")]
            for member in members:
                member.name = member.name.removeprefix(f"{corpus.name}-{corpus.version}/")
            archive.extractall(target, members=members, filter="data")
    (target / "complete").touch()
    return root


@dataclass(frozen=True)
class Symbol:
    """A definition to ask about: where its name is, and its dotted path (module, class, name)."""

    path: str
    line: int  # 1-based
    column: int  # 0-based, of the name
    dotted: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.dotted[-1]


def symbols(root: Path) -> list[Symbol]:
    """Every top-level def and class, and every method of a top-level class, in path order."""
    found: list[Symbol] = []
    for file in sorted(root.rglob("*.py")):
        path = file.relative_to(root).as_posix()
        text = file.read_text(encoding="utf-8")
        for node, outer in _definitions(ast.parse(text)):
            line = text.split("\n", node.lineno)[node.lineno - 1]
            keyword = "class " if isinstance(node, ast.ClassDef) else "def "
            column = line.index(node.name, line.index(keyword) + len(keyword))
            found.append(Symbol(path, node.lineno, column, (*module_path(path), *outer, node.name)))
    return found


def _definitions(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, tuple[str, ...]]]:
    found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, tuple[str, ...]]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append((node, ()))
            if isinstance(node, ast.ClassDef):
                found += [(member, (node.name,)) for member in node.body
                          if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef)]
    return found


def query_of(symbol: Symbol, every: list[Symbol]) -> str:
    """How an agent names the symbol: its class or module and its name, more of the module where that is
    not unique in the corpus."""
    for size in range(2, len(symbol.dotted) + 1):
        words = symbol.dotted[-size:]
        if sum(other.dotted[-size:] == words for other in every) == 1:
            return ".".join(words)
    return ".".join(symbol.dotted)


# -- the ground truth ------------------------------------------------------------------------------------
def server_command() -> list[str]:
    """basedpyright's language server, from the running interpreter's environment."""
    found = shutil.which("basedpyright-langserver", path=str(Path(sys.executable).parent))
    if found is None:
        raise FileNotFoundError("basedpyright-langserver is not installed beside this Python (pip install basedpyright)")
    return [found, "--stdio"]


@contextlib.asynccontextmanager
async def language_server(root: Path) -> AsyncIterator[Any]:
    """basedpyright's language server on `root`, initialized (pygls' client), shut down at the end; the
    client's `opened` set holds the paths it was given with didOpen (see `open_file`)."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("shipcode-bench", "1")
    client.opened = set()  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def configuration(params: types.ConfigurationParams) -> list[dict[str, Any]]:
        return [{"analysis": {"diagnosticMode": "openFilesOnly"}} for _ in params.items]

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log(params: types.LogMessageParams) -> None:
        return None

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: types.PublishDiagnosticsParams) -> None:
        return None

    command = server_command()
    await client.start_io(command[0], *command[1:])
    async with initialized(client, root, types.ClientCapabilities()):
        yield client


@contextlib.asynccontextmanager
async def initialized(client: Any, root: Path, capabilities: Any, options: Any = None) -> AsyncIterator[Any]:
    """A started pygls client's server initialized on `root` as its one workspace folder, shut down and stopped at
    the end (stopped whatever happens)."""
    from lsprotocol import types

    try:
        await asyncio.wait_for(client.initialize_async(types.InitializeParams(
            capabilities=capabilities, process_id=None, root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options=options)), REQUEST_TIMEOUT)
        client.initialized(types.InitializedParams())
        yield client
        await asyncio.wait_for(client.shutdown_async(None), REQUEST_TIMEOUT)
        client.exit(None)
    finally:
        await stop_client(client)


async def stop_client(client: Any) -> None:
    """Stop pygls' client and its server, killed if it has not exited within 5 s (pygls' stop() waits for the
    server's exit, however long)."""
    server = getattr(client, "_server", None)
    if server is not None and server.returncode is None:
        try:
            await asyncio.wait_for(server.wait(), 5)
        except asyncio.TimeoutError:
            server.kill()
            await server.wait()
    await asyncio.wait_for(client.stop(), 10)


def open_file(client: Any, root: Path, path: str) -> str:
    """The file's URI, after telling the server of it (didOpen) the first time."""
    from lsprotocol import types

    uri = (root / path).as_uri()
    if path not in client.opened:
        client.opened.add(path)
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=(root / path).read_text(encoding="utf-8"))))
    return uri


def in_root(root: Path, locations: Any) -> set[tuple[str, int]]:
    """(path, line) of the LSP locations (or location links) inside `root`."""
    prefix = root.as_uri() + "/"
    found = set()
    for item in locations or []:
        uri = str(getattr(item, "uri", None) or getattr(item, "target_uri", ""))
        where = getattr(item, "range", None) or getattr(item, "target_selection_range", None)
        if uri.startswith(prefix) and where is not None:
            found.add((uri.removeprefix(prefix), where.start.line + 1))
    return found


async def _truth(root: Path, chosen: list[Symbol]) -> tuple[list[set[tuple[str, int]]], float, float]:
    from lsprotocol import types

    start = time.perf_counter()
    first = 0.0
    answers: list[set[tuple[str, int]]] = []
    async with language_server(root) as client:
        for symbol in chosen:
            uri = open_file(client, root, symbol.path)
            found = await asyncio.wait_for(client.text_document_references_async(types.ReferenceParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(symbol.line - 1, symbol.column),
                context=types.ReferenceContext(include_declaration=True))), REQUEST_TIMEOUT)
            first = first or time.perf_counter() - start
            answers.append(in_root(root, found))
    return answers, first, time.perf_counter() - start


def truth(root: Path, chosen: list[Symbol]) -> tuple[list[set[tuple[str, int]]], float, float]:
    """Each symbol's references as the language server gives them (path, line), the time to its first
    answer (start included) and to all of them."""
    return asyncio.run(_truth(root, chosen))


# -- ours ------------------------------------------------------------------------------------------------
def ours(root: Path, chosen: list[Symbol], queries: list[str]) -> tuple[dict[str, list[set[tuple[str, int]]]], float]:
    """Each symbol's uses as find_references gives them, by mode (see the module's docstring), in-process
    with a cold cache, and the time the scoped queries took."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.references import find_references
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    CACHE.clear()
    modes: dict[str, list[set[tuple[str, int]]]] = {"by name": [], "scopes, every use": [], "scoped only": []}
    spent = 0.0
    for symbol, query in zip(chosen, queries, strict=True):
        plain = (find_references(ctx, roots, symbol.name, ".", 100_000, scopes=False).structured or {})["references"]
        start = time.perf_counter()
        scoped = (find_references(ctx, roots, query, ".", 100_000).structured or {})["references"]
        spent += time.perf_counter() - start
        modes["by name"].append({(item["path"], item["line"]) for item in plain})
        modes["scopes, every use"].append({(item["path"], item["line"]) for item in scoped})
        modes["scoped only"].append({(item["path"], item["line"]) for item in scoped if item["precision"] == "scoped"})
    return modes, spent


Sites = list[set[tuple[str, int]]]


def precise_answers(root: Path, queries: list[str], wait: float = REQUEST_TIMEOUT,
                    strict: bool = True) -> tuple[Sites, Sites, dict[str, Any]]:
    """Each query's uses as find_references gives them with --precise (the server's language servers, started and
    warmed in this process, in their sandbox): every use, and the `exact` ones alone; the time to the first precise
    answer (start and warm-up included, waited for up to `wait`), to all of them, the servers' peak memory (their
    process trees), and the queries no server answered (`strict`: an error)."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.references import find_references
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.lsp.servers import SERVERS
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    CACHE.clear()
    SERVERS.enabled = True
    every: Sites = []
    exact: Sites = []
    unanswered: list[str] = []
    start = time.perf_counter()
    try:
        while True:  # the first query's answer, once the server is ready (each call before says it is not)
            found = find_references(ctx, roots, queries[0], ".", 100_000).structured or {}
            if found["language_server"] is not None or time.perf_counter() - start > wait:
                break
            time.sleep(0.05)
        first = time.perf_counter() - start
        for index, query in enumerate(queries):
            if index:
                found = find_references(ctx, roots, query, ".", 100_000).structured or {}
            if found["language_server"] is None:  # no definition the syntax tree finds, or no server answered
                if strict:
                    raise RuntimeError(f"{query}: no precise answer ({found['language_server_note']})")
                unanswered.append(query)
            every.append({(item["path"], item["line"]) for item in found["references"]})
            exact.append({(item["path"], item["line"]) for item in found["references"] if item["precision"] == "exact"})
        total = time.perf_counter() - start
        memory = sum(harness.memory(pid).get("VmHWM", 0) for server in SERVERS.running() if server.pid is not None
                     for pid in harness.descendants(server.pid))
    finally:
        SERVERS.stop_all()
        SERVERS.enabled = False
    return every, exact, {"first": first, "all": total, "rss": memory, "unanswered": unanswered}


def precise(root: Path, queries: list[str]) -> tuple[dict[str, Sites], dict[str, Any]]:
    """precise_answers by mode: every use, and the `exact` ones alone."""
    every, exact, timing = precise_answers(root, queries)
    return {"precise, every use": every, "exact only": exact}, timing


def score(expected: list[set[tuple[str, int]]], found: list[set[tuple[str, int]]]) -> dict[str, float]:
    right = sum(len(wanted & got) for wanted, got in zip(expected, found, strict=True))
    returned = sum(map(len, found))
    wanted = sum(map(len, expected))
    return {"precision": right / returned if returned else 1.0, "recall": right / wanted if wanted else 1.0,
            "right": right, "returned": returned, "expected": wanted}


def measure(corpus: Corpus, cache: Path, every: int = 1) -> dict[str, Any]:
    """One corpus: its symbols (one in `every`), the truth, ours, the scores."""
    root = fetch(corpus, cache)
    every_symbol = symbols(root)
    chosen = every_symbol[::every]
    queries = [query_of(symbol, every_symbol) for symbol in chosen]
    expected, first, total = truth(root, chosen)
    modes, spent = ours(root, chosen, queries)
    exact, timing = precise(root, queries)
    modes.update(exact)
    shared = [index for index, symbol in enumerate(chosen) if sum(other.name == symbol.name for other in every_symbol) > 1]
    report: dict[str, Any] = {"corpus": f"{corpus.name} {corpus.version}", "files": len(list(root.rglob("*.py"))),
                              "symbols": len(chosen), "shared_names": len(shared), "server_first_answer": first,
                              "server_all": total, "ours_all": spent, "precise_first_answer": timing["first"],
                              "precise_all": timing["all"], "precise_rss": timing["rss"], "modes": {}, "shared": {}}
    for mode, found in modes.items():
        report["modes"][mode] = score(expected, found)
        report["shared"][mode] = score([expected[i] for i in shared], [found[i] for i in shared])
    report["missed"] = differences(queries, expected, modes["scopes, every use"])
    report["scoped_wrong"] = differences(queries, expected, modes["scoped only"], missed=False)
    report["exact_missed"] = differences(queries, expected, modes["exact only"])
    report["exact_wrong"] = differences(queries, expected, modes["exact only"], missed=False)
    return report


def differences(queries: list[str], expected: list[set[tuple[str, int]]], found: list[set[tuple[str, int]]],
                missed: bool = True) -> list[tuple[str, list[tuple[str, int]]]]:
    """The first 20 queries whose uses `found` misses (or, not `missed`, has wrong), with three of those each."""
    out = [(query, sorted(wanted - got if missed else got - wanted)[:3])
           for query, wanted, got in zip(queries, expected, found, strict=True)]
    return [item for item in out if item[1]][:20]


def evaluate(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    for report in reports:
        name, modes = report["corpus"], report["modes"]
        plain, every, scoped = modes["by name"], modes["scopes, every use"], modes["scoped only"]
        checks.append({"target": f"{name}: scopes' precision >= {PRECISION_FACTOR}x by name's, at recall >= {RECALL_TARGET}",
                       "measured": f"{every['precision']:.3f} vs {plain['precision']:.3f} "
                                   f"({every['precision'] / max(plain['precision'], 1e-9):.2f}x), recall {every['recall']:.3f}",
                       "met": every["precision"] >= PRECISION_FACTOR * plain["precision"] and every["recall"] >= RECALL_TARGET})
        checks.append({"target": f"{name}: scoped uses' precision >= {SCOPED_TARGET}", "measured": f"{scoped['precision']:.3f}",
                       "met": scoped["precision"] >= SCOPED_TARGET})
        exact = modes["exact only"]
        checks.append({"target": f"{name}: with the language server (--precise), exact uses' precision >= {EXACT_TARGET} "
                                 f"at recall >= {EXACT_TARGET}",
                       "measured": f"{exact['precision']:.3f} / {exact['recall']:.3f}",
                       "met": exact["precision"] >= EXACT_TARGET and exact["recall"] >= EXACT_TARGET})
    return checks


def render(reports: list[dict[str, Any]], checks: list[dict[str, Any]], ours: str = "find_references, scopes: all") -> str:
    """The tables of a run: each corpus's modes, their times and memory (`ours`: the label of the run without a
    language server), the checks."""
    rows = []
    for report in reports:
        for mode, figures in report["modes"].items():
            shared = report["shared"][mode]
            rows.append([report["corpus"], mode, f"{figures['precision']:.3f}", f"{figures['recall']:.3f}",
                         f"{shared['precision']:.3f} / {shared['recall']:.3f}", f"{figures['returned']:,}"])
    lines = [harness.markdown_table(["corpus", "find_references", "precision", "recall",
                                     "names defined twice or more: P / R", "uses returned"], rows), ""]
    lines.append(harness.markdown_table(
        ["corpus", "files", "symbols", "language server (pygls): first answer / all", ours,
         "--precise: first exact answer / all", "--precise: language server's peak memory"],
        [[r["corpus"], str(r["files"]), str(r["symbols"]), f"{r['server_first_answer']:.2f} s / {r['server_all']:.2f} s",
          f"{r['ours_all']:.2f} s", f"{r['precise_first_answer']:.2f} s / {r['precise_all']:.2f} s",
          f"{r['precise_rss'] / 2**20:.0f} MiB"] for r in reports]))
    lines += ["", harness.markdown_table(["target", "measured", "verdict"],
                                         [[c["target"], c["measured"], "met" if c["met"] else "MISSED"] for c in checks])]
    return "\n".join(lines)


def corpus_main(argv: list[str] | None, description: str, stem: str, measure_one: Callable[..., dict[str, Any]],
                evaluate_all: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
                render_all: Callable[[list[dict[str, Any]], list[dict[str, Any]]], str],
                corpora: dict[str, Any] | None = None, smoke: str = "requests") -> list[dict[str, Any]]:
    """The command line of a bench over the corpora (this one's, or `corpora`, whose `smoke` one --smoke measures):
    which corpora, the cache, where the JSON report goes (`STEM.json` in the cache); prints the tables and returns
    the checks."""
    corpora = corpora or CORPORA
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--corpus", action="append", choices=sorted(corpora), help="a corpus (default: all)")
    parser.add_argument("--smoke", action="store_true", help=f"{smoke}, one symbol in four")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, help="where the report goes (default: the cache folder)")
    options = parser.parse_args(argv)
    names = [smoke] if options.smoke else options.corpus or list(corpora)
    reports = [measure_one(corpora[name], options.cache, 4 if options.smoke else 1) for name in names]
    checks = evaluate_all(reports)
    report = {"machine": harness.machine(), "corpora": reports, "checks": checks}
    out = options.json or options.cache / f"{stem}{'_smoke' if options.smoke else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(render_all(reports, checks))
    return checks


def main(argv: list[str] | None = None) -> int:
    corpus_main(argv, __doc__.split("\n", 1)[0], "references_precision", measure, evaluate, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
