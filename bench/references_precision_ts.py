"""find_references measured against TypeScript's own language server, on real third-party TypeScript projects.

Ground truth is typescript-language-server's references (`textDocument/references`, the declaration included;
tsserver underneath) of every top-level function and class and every method of a top-level class of each
corpus (as the server's own `textDocument/documentSymbol` lists them), asked over stdio by pygls as the client,
unsandboxed. Each symbol is asked of find_references the way an agent names it: `Class.method` or
`module.function`, with more of the module's path only where that is not yet unique in the corpus (as
references_precision.py does for Python). Compared file:line by file:line, micro-averaged over the symbols:

- **by name**: find_references with the bare name and the scopes off, what it was before;
- **scopes, every use**: the qualified query, every use it returns (JavaScript's scopes, code/jsscopes.py, leave
  out the uses they rule out);
- **scoped only**: the uses it labels `scoped` (where an agent that stops at the "by name" line stops);
- **precise, every use** and **exact only**: with `--precise`, the server's own typescript-language-server
  (started, sandboxed and spoken to by the server, not by pygls) answering, and the uses it labels `exact`;
  the time to its first exact answer and its peak memory (the language server and its tsserver).

The corpora are pinned npm packages that ship their TypeScript sources (CORPORA: version and the registry's
sha512 integrity, checked here), with a tsconfig.json written beside their `src` as their repositories have one
(the published packages leave it out). The language server is scripts/language_servers.sh's.

    .venv/bin/python bench/references_precision_ts.py            # immer and zod's core: a few minutes
    .venv/bin/python bench/references_precision_ts.py --smoke    # immer, one symbol in four

Targets (issue 25): with the language server, the exact uses at precision and recall >= 0.97.
Results: .bench-cache/references_precision_ts.json.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import run as harness  # bench/run.py: tables, machine facts
from references_precision import (
    RECALL_TARGET,
    SCOPED_TARGET,
    Symbol,
    Unreachable,
    corpus_main,
    differences,
    in_root,
    initialized,
    precise_answers,
    query_of,
    score,
)
from references_precision import render as render_tables

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = harness.DEFAULT_CACHE
REQUEST_TIMEOUT = 120.0
EXACT_TARGET = 0.97
TSCONFIG = {"compilerOptions": {"strict": True, "target": "es2022", "module": "esnext", "moduleResolution": "bundler",
                                "lib": ["es2022", "dom"], "noEmit": True, "skipLibCheck": True},
            "include": ["src"]}
"""The tsconfig.json written beside a corpus's `src` (the packages' repositories have one; npm leaves it out)."""


@dataclass(frozen=True)
class Corpus:
    """A pinned npm package and the part of its `src` measured (`under`), without the files `leave_out` matches."""

    name: str
    version: str
    integrity: str
    under: str = "src"
    leave_out: str = r"(^|/)(__tests__|tests?|benchmarks?)/|\.test\.[jt]s$"
    extension: str = ".ts"

    @property
    def language(self) -> str:
        return "javascript" if self.extension == ".js" else "typescript"


CORPORA = {
    "immer": Corpus("immer", "11.2.14",
                    "sha512-Xujh/D+NWN1mM/eJb30ASOOTrI74DA6BV+SdkvfeIvHt8Pk70h0lP5l4LRIvBcEujxbw7LbVTFvcxgGg6pgvKA=="),
    "zod": Corpus("zod", "4.6.7",
                  "sha512-g8W2D2kU6a8untc053fX1uVBKzM7yqAxW/3zwk83+6RyF2+SKOuV+c0wBDhUwzV1PaGapmZH+rmcUzPf+3CGwg==",
                  under="src/v4/core"),
    "preact": Corpus("preact", "10.27.2",
                     "sha512-5SYSgFKSyhCbk6SrXyMpqjb5+MQBgfvEKE/OC+PujcY34sOpqtr+0AZQtPYx5IA6VxynQ7rUPCtKzyovpj9Bpg==",
                     extension=".js"),
    "express": Corpus("express", "5.1.0",
                      "sha512-DT9ck5YIRU+8GYzzU5kT3eHGA5iL+1Zd0EutOmTE9Dtk+Tvuzd23VBU+ec7HPNSTxXYO55gPV/hq4pSBJDjFpA==",
                      under="lib", extension=".js"),
}


def fetch(corpus: Corpus, cache: Path) -> Path:
    """The corpus's root (its `src` and a tsconfig.json, or a jsconfig.json for JavaScript), packed by npm (integrity
    checked here) and unpacked once under `cache`."""
    target = cache.resolve() / "corpora" / f"{corpus.name}-{corpus.version}-{corpus.extension[1:]}"  # absolute: URIs
    if (target / "complete").exists():
        return target
    with tempfile.TemporaryDirectory() as temporary:
        done = subprocess.run(["npm", "pack", f"{corpus.name}@{corpus.version}", "--pack-destination", temporary,
                               "--loglevel=error"], capture_output=True, text=True, timeout=300, check=False)
        archives = list(Path(temporary).glob("*.tgz"))
        if done.returncode != 0 or len(archives) != 1:
            raise Unreachable(f"{corpus.name} {corpus.version}: npm pack failed: {done.stderr.strip()[-500:]}")
        digest = "sha512-" + base64.b64encode(hashlib.sha512(archives[0].read_bytes()).digest()).decode()
        if digest != corpus.integrity:
            raise RuntimeError(f"{corpus.name} {corpus.version}: the package is not the pinned one ({digest})")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        with tarfile.open(archives[0]) as archive:
            members = []
            for member in archive.getmembers():
                path = member.name.removeprefix("package/")
                if member.isfile() and path.startswith(corpus.under + "/") and path.endswith(corpus.extension) \
                        and not path.endswith(".d.ts") and not re.search(corpus.leave_out, path):
                    member.name = path
                    members.append(member)
            archive.extractall(target, members=members, filter="data")
    config = TSCONFIG if corpus.extension == ".ts" else {**TSCONFIG, "compilerOptions": {
        **TSCONFIG["compilerOptions"], "allowJs": True, "checkJs": False}}  # type: ignore[dict-item]
    (target / ("tsconfig.json" if corpus.extension == ".ts" else "jsconfig.json")).write_text(json.dumps(config, indent=1) + "\n")
    (target / "complete").touch()
    return target


def server_bin() -> Path:
    """The folder of typescript-language-server's command (scripts/language_servers.sh installs it)."""
    done = subprocess.run(["bash", str(REPO / "scripts" / "language_servers.sh")], capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode == 3:
        raise Unreachable(f"typescript-language-server cannot be installed: {done.stderr.strip()}")
    if done.returncode != 0:
        raise RuntimeError(f"scripts/language_servers.sh failed: {done.stderr.strip()[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1]) / "node_modules" / ".bin"


def _module(path: str) -> tuple[str, ...]:
    """A file's module path as find_references reads a qualified query: its path without the extension, a
    folder's index file named by the folder."""
    parts = path.split("/")
    parts[-1] = parts[-1].split(".", 1)[0]
    if parts[-1] == "index" and len(parts) > 1:
        parts.pop()
    return tuple(parts)


@contextlib.asynccontextmanager
async def language_server(root: Path, bin_folder: Path) -> AsyncIterator[Any]:
    """typescript-language-server on `root`, initialized (pygls' client) with the tsserver installed beside it,
    shut down at the end; the client's `opened` set holds the files it was given with didOpen."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("shipcode-bench", "1")
    client.opened = set()  # type: ignore[attr-defined]

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log(params: types.LogMessageParams) -> None:
        return None

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: types.PublishDiagnosticsParams) -> None:
        return None

    @client.feature("$/typescriptVersion")
    def version(params: Any) -> None:
        return None

    script = (bin_folder / "typescript-language-server").resolve()
    tsserver = script.parent.parent.parent / "typescript" / "lib" / "tsserver.js"
    from shipcode_mcp.workspace.lsp.installed import _node  # the Node.js the server runs it with

    node = _node()
    assert node is not None, "no Node.js"
    await client.start_io(node, str(script), "--stdio")
    async with initialized(client, root, types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
            document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True))),
            {"tsserver": {"path": str(tsserver)}, "disableAutomaticTypingAcquisition": True}):
        yield client


def open_file(client: Any, root: Path, path: str, language: str = "typescript") -> str:
    """The file's URI, after telling the server of it (didOpen) the first time (tsserver answers about open
    files only)."""
    from lsprotocol import types

    uri = (root / path).as_uri()
    if path not in client.opened:
        client.opened.add(path)
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=uri, language_id=language, version=1, text=(root / path).read_text(encoding="utf-8"))))
    return uri


_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


async def _symbols(client: Any, root: Path, corpus: Corpus) -> list[Symbol]:
    """Every top-level function and class, and every method of a top-level class, as the server lists them."""
    from lsprotocol import types

    found: list[Symbol] = []
    for file in sorted(root.rglob(f"*{corpus.extension}")):
        path = file.relative_to(root).as_posix()
        lines = file.read_text(encoding="utf-8").split("\n")
        answer = await asyncio.wait_for(client.text_document_document_symbol_async(types.DocumentSymbolParams(
            text_document=types.TextDocumentIdentifier(uri=open_file(client, root, path, corpus.language)))),
            REQUEST_TIMEOUT)
        for item in answer or []:
            kinds = (types.SymbolKind.Function, types.SymbolKind.Class)
            if item.kind not in kinds or not _IDENTIFIER.fullmatch(item.name):
                continue
            members = [member for member in item.children or [] if item.kind == types.SymbolKind.Class
                       and member.kind == types.SymbolKind.Method and _IDENTIFIER.fullmatch(member.name)]
            for symbol, outer in ((item, ()), *((member, (item.name,)) for member in members)):
                start = symbol.selection_range.start
                if lines[start.line][start.character:start.character + len(symbol.name)] != symbol.name:
                    continue  # (a name the server spells otherwise than the text)
                found.append(Symbol(path, start.line + 1, start.character, (*_module(path), *outer, symbol.name)))
    return found


def _query(symbol: Symbol, every: list[Symbol]) -> str:
    """query_of's name for the symbol, or its bare name where a module's file name is not an identifier
    (`types-external.ts`: no query can name that module)."""
    query = query_of(symbol, every)
    return query if all(_IDENTIFIER.fullmatch(part) for part in query.split(".")) else symbol.name


async def _truth(root: Path, bin_folder: Path, every: int, corpus: Corpus) -> tuple[list[Symbol], list[Symbol], list[set[tuple[str, int]]],
                                                                     float, float]:
    from lsprotocol import types

    start = time.perf_counter()
    first = 0.0
    answers: list[set[tuple[str, int]]] = []
    async with language_server(root, bin_folder) as client:
        every_symbol = await _symbols(client, root, corpus)
        chosen = every_symbol[::every]
        for symbol in chosen:
            uri = open_file(client, root, symbol.path, corpus.language)
            found = await asyncio.wait_for(client.text_document_references_async(types.ReferenceParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(symbol.line - 1, symbol.column),
                context=types.ReferenceContext(include_declaration=True))), REQUEST_TIMEOUT)
            first = first or time.perf_counter() - start
            answers.append(in_root(root, found))
    return every_symbol, chosen, answers, first, time.perf_counter() - start


def ours(root: Path, chosen: list[Symbol], queries: list[str]) -> tuple[dict[str, list[set[tuple[str, int]]]], float]:
    """Each symbol's uses as find_references gives them without a language server, in-process, by mode."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.references import find_references
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    CACHE.clear()
    modes: dict[str, list[set[tuple[str, int]]]] = {"by name": [], "scopes, every use": [], "scoped only": []}
    start = time.perf_counter()
    for symbol, query in zip(chosen, queries, strict=True):
        plain = (find_references(ctx, roots, symbol.name, ".", 100_000, scopes=False).structured or {})["references"]
        every = (find_references(ctx, roots, query, ".", 100_000).structured or {})["references"]
        modes["by name"].append({(item["path"], item["line"]) for item in plain})
        modes["scopes, every use"].append({(item["path"], item["line"]) for item in every})
        modes["scoped only"].append({(item["path"], item["line"]) for item in every if item["precision"] == "scoped"})
    return modes, time.perf_counter() - start


def precise(root: Path, queries: list[str], bin_folder: Path) -> tuple[dict[str, list[set[tuple[str, int]]]], dict[str, Any]]:
    """Each query's uses with --precise (the server's typescript-language-server, found on PATH, started and
    warmed here in its sandbox), by mode; the time to the first exact answer, to all, and the server's peak
    memory (the language server and its tsserver)."""
    from shipcode_mcp.workspace.lsp.servers import SERVERS

    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{bin_folder}{os.pathsep}{path}"  # (found there: a server found before is forgotten)
    SERVERS.forget_installed()
    try:
        every, exact, timing = precise_answers(root, queries, strict=False)
    finally:
        os.environ["PATH"] = path  # (a test process goes on: as it was)
        SERVERS.forget_installed()
    return {"precise, every use": every, "exact only": exact}, timing


def measure(corpus: Corpus, cache: Path, every: int = 1) -> dict[str, Any]:
    """One corpus: its symbols (one in `every`), the truth, ours, the scores."""
    root = fetch(corpus, cache)
    bin_folder = server_bin()
    every_symbol, chosen, expected, first, total = asyncio.run(_truth(root, bin_folder, every, corpus))
    queries = [_query(symbol, every_symbol) for symbol in chosen]
    modes, spent = ours(root, chosen, queries)
    exact, timing = precise(root, queries, bin_folder)
    modes.update(exact)
    shared = [index for index, symbol in enumerate(chosen) if sum(other.name == symbol.name for other in every_symbol) > 1]
    report: dict[str, Any] = {"corpus": f"{corpus.name} {corpus.version} ({corpus.under})",
                              "files": len(list(root.rglob(f"*{corpus.extension}"))), "symbols": len(chosen), "shared_names": len(shared),
                              "server_first_answer": first, "server_all": total, "ours_all": spent,
                              "precise_first_answer": timing["first"], "precise_all": timing["all"],
                              "precise_rss": timing["rss"], "unanswered": timing["unanswered"], "modes": {}, "shared": {}}
    for mode, found in modes.items():
        report["modes"][mode] = score(expected, found)
        report["shared"][mode] = score([expected[i] for i in shared], [found[i] for i in shared])
    report["exact_missed"] = differences(queries, expected, modes["exact only"])
    report["exact_wrong"] = differences(queries, expected, modes["exact only"], missed=False)
    report["name_missed"] = differences(queries, expected, modes["by name"])
    report["scopes_missed"] = differences(queries, expected, modes["scopes, every use"])
    report["scoped_wrong"] = differences(queries, expected, modes["scoped only"], missed=False)
    report["scopes_wrong"] = differences(queries, expected, modes["scopes, every use"], missed=False)
    return report


def evaluate(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    for report in reports:
        plain, scopes, scoped = (report["modes"][mode] for mode in ("by name", "scopes, every use", "scoped only"))
        checks.append({"target": f"{report['corpus']}: scopes' precision above by name's, at recall >= {RECALL_TARGET}",
                       "measured": f"{scopes['precision']:.3f} vs {plain['precision']:.3f}, recall {scopes['recall']:.3f}",
                       "met": scopes["precision"] > plain["precision"] and scopes["recall"] >= RECALL_TARGET})
        checks.append({"target": f"{report['corpus']}: scoped uses' precision >= {SCOPED_TARGET}",
                       "measured": f"{scoped['precision']:.3f}", "met": scoped["precision"] >= SCOPED_TARGET})
        exact, every = report["modes"]["exact only"], report["modes"]["precise, every use"]
        checks.append({"target": f"{report['corpus']}: with the language server (--precise), exact uses' precision "
                                 f">= {EXACT_TARGET} at recall >= {EXACT_TARGET}",
                       "measured": f"{exact['precision']:.3f} / {exact['recall']:.3f}",
                       "met": exact["precision"] >= EXACT_TARGET and exact["recall"] >= EXACT_TARGET})
        checks.append({"target": f"{report['corpus']}: with the language server, every use's recall >= {EXACT_TARGET}",
                       "measured": f"{every['recall']:.3f}", "met": every["recall"] >= EXACT_TARGET})
    return checks


def render(reports: list[dict[str, Any]], checks: list[dict[str, Any]]) -> str:
    return render_tables(reports, checks, "find_references, no server: all")


def main(argv: list[str] | None = None) -> int:
    corpus_main(argv, __doc__.split("\n", 1)[0], "references_precision_ts", measure, evaluate, render, CORPORA, "immer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
