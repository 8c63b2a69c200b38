"""rename_symbol against a real language server's rename, on real third-party projects.

Ground truth is basedpyright's own rename (`textDocument/rename`: the WorkspaceEdit it would apply) of every
top-level function and class and every method of a top-level class (but special methods, __init__ and the
like, which rename_symbol refuses: Python calls them by name) of each corpus (the sdists of
references_precision.py, pinned by hash). rename_symbol is asked each symbol as an agent names it
(`query_of`), as a dry run, in-process: its `sites` (renamed) and `undecided` (left alone, listed). Per
symbol the sites are compared as (path, line, column):

- precision: of the sites rename_symbol renames, how many the server renames too (a wrong one breaks code);
- recall: of the server's sites, how many rename_symbol renames;
- listed: of the server's sites it does not rename, how many it lists as undecided (an agent can look).

A symbol rename_symbol refuses (a method overridden in a subclass, which the server renames alone, changing
which method runs; a name that would collide) counts all its server sites as missed in `recall`; `recall of
the renames made` leaves the refused symbols out. Each corpus is measured twice: from the syntax tree (the
scopes), and with `--precise` (the server's own basedpyright, its rename edit).
Run: `python bench/rename_accuracy.py [--corpus NAME] [--smoke]`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import run as harness  # bench/run.py: tables, machine facts
from references_precision import (
    CORPORA,
    REQUEST_TIMEOUT,
    Corpus,
    Symbol,
    Unreachable,
    corpus_main,
    fetch,
    language_server,
    open_file,
    query_of,
    symbols,
)

__all__ = ["CORPORA", "Unreachable", "fetch", "measure"]
PRECISION_TARGET = 0.99
RECALL_TARGET = 0.9
Site = tuple[str, int, int]  # path, line (1-based), column (1-based)


async def _truth(root: Path, chosen: list[Symbol]) -> tuple[list[set[Site]], float]:
    from lsprotocol import types

    start = time.perf_counter()
    answers: list[set[Site]] = []
    prefix = root.as_uri() + "/"
    async with language_server(root) as client:
        for symbol in chosen:
            uri = open_file(client, root, symbol.path)
            edit = await asyncio.wait_for(client.text_document_rename_async(types.RenameParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(symbol.line - 1, symbol.column),
                new_name=f"{symbol.name}_renamed")), REQUEST_TIMEOUT)
            answers.append(_sites(edit, prefix))
    return answers, time.perf_counter() - start


def _sites(edit: Any, prefix: str) -> set[Site]:
    """The (path, line, column) where a WorkspaceEdit changes text, inside the corpus."""
    found: set[Site] = set()
    if edit is None:
        return found
    pairs: list[tuple[str, Any]] = [(uri, edits) for uri, edits in (edit.changes or {}).items()]
    for change in edit.document_changes or []:
        document = getattr(change, "text_document", None)
        if document is not None:
            pairs.append((document.uri, change.edits))
    for uri, edits in pairs:
        if uri.startswith(prefix):
            for item in edits:
                found.add((uri.removeprefix(prefix), item.range.start.line + 1, item.range.start.character + 1))
    return found


def truth(root: Path, chosen: list[Symbol]) -> tuple[list[set[Site]], float]:
    """Each symbol's rename sites as the language server gives them, and the time it took for all."""
    return asyncio.run(_truth(root, chosen))


def ours(root: Path, queries: list[str], precise: bool = False,
         ) -> tuple[list[set[Site]], list[set[Site]], list[str | None], float]:
    """rename_symbol's sites and undecided uses for each query (dry runs, in-process), why it refused each one
    it refused (None: it did not), and the time it took; with `precise`, the server's own basedpyright started
    and warmed first (--precise), every rename its."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.primitives import ToolError
    from shipcode_mcp.workspace.code.precise import server_name
    from shipcode_mcp.workspace.code.rename import rename_symbol
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.lsp.servers import SERVERS, NotReady
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    CACHE.clear()
    renamed: list[set[Site]] = []
    listed: list[set[Site]] = []
    refused: list[str | None] = []
    SERVERS.enabled = precise
    try:
        waited = time.perf_counter()
        while precise:
            try:
                server_name(roots, "python")
                break
            except NotReady:
                if time.perf_counter() - waited > REQUEST_TIMEOUT:
                    raise
                time.sleep(0.05)
        start = time.perf_counter()
        for query in queries:
            try:
                data = rename_symbol(ctx, roots, query, f"{query.rsplit('.', 1)[-1]}_renamed", ".", True,
                                     True).structured or {}
                refused.append(None)
                if precise and data["language_server"] is None:
                    raise RuntimeError(f"{query}: not the language server's rename ({data['language_server_note']})")
            except ToolError as err:
                refused.append(str(err))
                data = {}
            renamed.append({(item["path"], item["line"], item["column"]) for item in data.get("sites", [])})
            listed.append({(item["path"], item["line"], item["column"]) for item in data.get("undecided", [])})
    finally:
        SERVERS.stop_all()
        SERVERS.enabled = False
    return renamed, listed, refused, time.perf_counter() - start


def measure(corpus: Corpus, cache: Path, every: int = 1, precise_every: int = 1) -> dict[str, Any]:
    """One corpus: its symbols (but special methods; one in `every`), the server's renames, ours, the scores; with
    --precise, one in `precise_every` of those (each such rename costs a few times one from the syntax tree: the
    server checks the renamed files, before and after)."""
    root = fetch(corpus, cache)
    every_symbol = symbols(root)
    chosen = [symbol for symbol in every_symbol if not _special(symbol.name)][::every]
    queries = [query_of(symbol, every_symbol) for symbol in chosen]
    expected, server_time = truth(root, chosen)
    report = _scores(corpus, queries, expected, *ours(root, queries))
    report["server_seconds"] = server_time
    report["precise"] = _scores(corpus, queries[::precise_every], expected[::precise_every],
                                *ours(root, queries[::precise_every], precise=True))
    return report


def _scores(corpus: Corpus, queries: list[str], expected: list[set[Site]], renamed: list[set[Site]],
            listed: list[set[Site]], refused: list[str | None], our_time: float) -> dict[str, Any]:
    made = [index for index, why in enumerate(refused) if why is None]
    right_made = sum(len(expected[index] & renamed[index]) for index in made)
    wanted_made = sum(len(expected[index]) for index in made)
    right = sum(len(want & got) for want, got in zip(expected, renamed, strict=True))
    returned = sum(map(len, renamed))
    wanted = sum(map(len, expected))
    missed = sum(len(want - got) for want, got in zip(expected, renamed, strict=True))
    covered = sum(len((want - got) & note) for want, got, note in zip(expected, renamed, listed, strict=True))
    exact = sum(want == got for want, got in zip(expected, renamed, strict=True))
    wrong = [(query, sorted(got - want)[:3]) for query, want, got in zip(queries, expected, renamed, strict=True)
             if got - want]
    reasons = [why for why in refused if why is not None]
    return {"corpus": f"{corpus.name} {corpus.version}", "symbols": len(queries), "refused": len(reasons),
            "refused_overridden": sum("is overridden in" in why for why in reasons),
            "refusals": [(query, why[:200]) for query, why in zip(queries, refused, strict=True) if why][:20],
            "precision": right / returned if returned else 1.0, "recall": right / wanted if wanted else 1.0,
            "recall_renamed": right_made / wanted_made if wanted_made else 1.0,
            "listed": covered / missed if missed else 1.0, "exact_symbols": exact, "sites_expected": wanted,
            "sites_renamed": returned, "ours_seconds": our_time, "wrong": wrong[:20]}


def _special(name: str) -> bool:
    """A special method (__init__, __repr__): Python uses it by that name, and rename_symbol refuses it."""
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def evaluate(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    for report in [*reports, *({**report["precise"], "corpus": report["corpus"] + " (--precise)"} for report in reports)]:
        checks.append({"target": f"{report['corpus']}: rename precision >= {PRECISION_TARGET}",
                       "measured": f"{report['precision']:.3f}", "met": report["precision"] >= PRECISION_TARGET})
        checks.append({"target": f"{report['corpus']}: recall of the renames made >= {RECALL_TARGET}",
                       "measured": f"{report['recall_renamed']:.3f}", "met": report["recall_renamed"] >= RECALL_TARGET})
    return checks


def render(reports: list[dict[str, Any]], checks: list[dict[str, Any]]) -> str:
    rows = [[f"{r['corpus']}{mode}", str(r["symbols"]), f"{r['precision']:.3f}", f"{r['recall']:.3f}",
             f"{r['recall_renamed']:.3f}", f"{r['listed']:.3f}", f"{r['exact_symbols']} / {r['symbols']}",
             f"{r['refused']} ({r['refused_overridden']} overridden)",
             f"{server['server_seconds']:.1f} s / {r['ours_seconds']:.1f} s"]
            for server in reports for mode, r in (("", server), (" --precise", server["precise"]))]
    lines = [harness.markdown_table(["corpus", "symbols", "precision", "recall", "recall of the renames made",
                                     "missed sites listed as undecided", "symbols renamed exactly as the server",
                                     "refused", "server / ours"], rows), ""]
    lines.append(harness.markdown_table(["target", "measured", "verdict"],
                                        [[c["target"], c["measured"], "met" if c["met"] else "MISSED"] for c in checks]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    checks = corpus_main(argv, __doc__.split("\n", 1)[0], "rename_accuracy", measure, evaluate, render)
    return 0 if all(check["met"] for check in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
