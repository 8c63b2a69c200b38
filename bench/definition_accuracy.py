"""find_definition measured against a language server, on real third-party Python projects.

Ground truth is basedpyright's `textDocument/definition` at the uses of names in each corpus (the same
pinned sdists as bench/references_precision.py): every name read (`x`, not `x = ...`) and every attribute
(`obj.attr`), one in STRIDE of them in source order, the definitions it gives inside the corpus compared
file:line by file:line with find_definition's at the same place:

- **scoped**: the answers find_definition decides by Python's scopes: precision and recall over the places
  where the server finds a definition in the corpus, and how many of those places get a scoped answer
  (`answered`);
- **any**: every answer, the ones by name included (where the scopes cannot tell);
- **outside**: places where the server's definitions are all outside the corpus (a builtin, the standard
  library, a dependency): a scoped definition inside the corpus there is wrong.

    .venv/bin/python bench/definition_accuracy.py            # requests, click and attrs: a few minutes
    .venv/bin/python bench/definition_accuracy.py --smoke    # requests, one use in forty

Target: the scoped answers at precision >= 0.97, recall >= 0.95. Results: .bench-cache/definition_accuracy.json.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import references_precision as references  # the corpora and the language server's client
import run as harness  # bench/run.py: tables, machine facts

STRIDE = 8
PRECISION_TARGET = 0.97
RECALL_TARGET = 0.95


@dataclass(frozen=True)
class Use:
    path: str  # relative to the corpus root
    line: int  # 1-based
    column: int  # 0-based, in characters
    name: str


def uses(root: Path, stride: int) -> list[Use]:
    """One in `stride` of the names read and attributes written in the corpus's files, in path order."""
    found: list[Use] = []
    for file in sorted(root.rglob("*.py")):
        text = file.read_text(encoding="utf-8")
        lines = text.split("\n")
        relative = file.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                line, start, name = node.lineno, node.col_offset, node.id
            elif isinstance(node, ast.Attribute) and node.end_lineno is not None and node.end_col_offset is not None:
                line, name = node.end_lineno, node.attr
                start = node.end_col_offset - len(name.encode("utf-8"))
            else:
                continue
            row = lines[line - 1]
            column = len(row.encode("utf-8")[:start].decode("utf-8", "replace"))
            if row[column:column + len(name)] == name:
                found.append(Use(relative, line, column, name))
    found.sort(key=lambda use: (use.path, use.line, use.column))
    return found[::stride]


async def _truth(root: Path, chosen: list[Use]) -> tuple[list[set[tuple[str, int]]], list[bool], float]:
    from lsprotocol import types

    start = time.perf_counter()
    answers: list[set[tuple[str, int]]] = []
    anything: list[bool] = []
    async with references.language_server(root) as client:
        for use in chosen:
            uri = references.open_file(client, root, use.path)
            found = await asyncio.wait_for(client.text_document_definition_async(types.DefinitionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(use.line - 1, use.column))),
                references.REQUEST_TIMEOUT)
            found = [found] if found is not None and not isinstance(found, list) else found or []
            answers.append(references.in_root(root, found))
            anything.append(bool(found))
    return answers, anything, time.perf_counter() - start


def ours(root: Path, chosen: list[Use]) -> tuple[list[set[tuple[str, int]]], list[bool], list[float]]:
    """find_definition's definitions at each use (in-process, cold cache), whether they were decided by
    scopes, and the time each took."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.definition import find_definition
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    CACHE.clear()
    answers: list[set[tuple[str, int]]] = []
    scoped: list[bool] = []
    times: list[float] = []
    for use in chosen:
        start = time.perf_counter()
        data = find_definition(ctx, roots, use.path, use.line, use.name, use.column + 1).structured or {}
        times.append(time.perf_counter() - start)
        answers.append({(item["path"], item["line"]) for item in data["definitions"]})
        scoped.append(data["precision"] == "scoped")
    return answers, scoped, times


def measure(corpus: references.Corpus, cache: Path, stride: int = STRIDE) -> dict[str, Any]:
    root = references.fetch(corpus, cache)
    chosen = uses(root, stride)
    expected, anything, server_time = asyncio.run(_truth(root, chosen))
    return report(f"{corpus.name} {corpus.version}", root, chosen, expected, anything, server_time)


def report(label: str, root: Path, chosen: list[Use], expected: list[set[tuple[str, int]]], anything: list[bool],
           server_time: float) -> dict[str, Any]:
    """find_definition's answers at the uses `chosen`, scored against the server's (`expected`; `anything`: whether
    it gave any, inside the corpus or not)."""
    found, scoped, times = ours(root, chosen)
    ordered = sorted(times)
    inside = [index for index, wanted in enumerate(expected) if wanted]
    outside = [index for index, wanted in enumerate(expected) if not wanted and anything[index]]

    def score(indexes: list[int], only_scoped: bool) -> dict[str, Any]:
        kept = [index for index in indexes if scoped[index] or not only_scoped]
        right = sum(len(expected[index] & found[index]) for index in kept)
        returned = sum(len(found[index]) for index in kept)
        wanted = sum(len(expected[index]) for index in indexes)
        return {"precision": right / returned if returned else 1.0, "recall": right / wanted if wanted else 1.0,
                "answered": len([index for index in kept if found[index]]) / len(indexes) if indexes else 1.0,
                "right": right, "returned": returned, "expected": wanted}

    wrong = [(chosen[index].path, chosen[index].line, chosen[index].name, sorted(found[index] - expected[index])[:2],
              sorted(expected[index])[:2]) for index in inside if scoped[index] and found[index] != expected[index]]
    outside_wrong = [index for index in outside if scoped[index] and found[index]]
    return {"corpus": label, "uses": len(chosen), "inside": len(inside),
            "outside": len(outside), "scoped": score(inside, True), "any": score(inside, False),
            "outside_wrong": len(outside_wrong),
            "outside_wrong_examples": [(chosen[i].path, chosen[i].line, chosen[i].name, sorted(found[i])[:2])
                                       for i in outside_wrong[:10]],
            "server_time": server_time, "ours_time": sum(times), "ours_p50": ordered[len(ordered) // 2],
            "ours_p95": ordered[int(len(ordered) * 0.95)], "differ": wrong[:25]}


def evaluate(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    for report in reports:
        scoped = report["scoped"]
        checks.append({"target": f"{report['corpus']}: scoped precision >= {PRECISION_TARGET}, recall >= {RECALL_TARGET}",
                       "measured": f"{scoped['precision']:.3f} / {scoped['recall']:.3f}",
                       "met": scoped["precision"] >= PRECISION_TARGET and scoped["recall"] >= RECALL_TARGET})
    return checks


def render(reports: list[dict[str, Any]], checks: list[dict[str, Any]]) -> str:
    rows = []
    for report in reports:
        for mode in ("scoped", "any"):
            figures = report[mode]
            rows.append([report["corpus"], mode, f"{figures['precision']:.3f}", f"{figures['recall']:.3f}",
                         f"{figures['answered']:.3f}", f"{figures['returned']:,}"])
    lines = [harness.markdown_table(["corpus", "find_definition", "precision", "recall", "answered",
                                     "definitions returned"], rows), ""]
    lines.append(harness.markdown_table(
        ["corpus", "uses asked", "defined inside / outside", "scoped and wrong outside", "language server: all (start "
         "included)", "find_definition: all, p50 / p95 a call"],
        [[r["corpus"], str(r["uses"]), f"{r['inside']} / {r['outside']}", str(r["outside_wrong"]),
          f"{r['server_time']:.2f} s", f"{r['ours_time']:.2f} s, {r['ours_p50'] * 1000:.0f} / {r['ours_p95'] * 1000:.0f} ms"]
         for r in reports]))
    lines += ["", harness.markdown_table(["target", "measured", "verdict"],
                                         [[c["target"], c["measured"], "met" if c["met"] else "MISSED"] for c in checks])]
    return "\n".join(lines)


def main(argv: list[str] | None = None, *, corpora: dict[str, Any] | None = None, smoke: str = "requests",
         stem: str = "definition_accuracy", measure_one: Callable[..., dict[str, Any]] = measure,
         description: str = __doc__) -> int:
    """The command line: which corpora (this bench's, or `corpora` with `measure_one`, whose `smoke` one --smoke
    measures), the cache, where the JSON report (`STEM.json`) goes; prints the tables."""
    corpora = corpora or references.CORPORA
    parser = argparse.ArgumentParser(description=description.split("\n", 1)[0])
    parser.add_argument("--corpus", action="append", choices=sorted(corpora), help="a corpus (default: all)")
    parser.add_argument("--smoke", action="store_true", help=f"{smoke}, one use in forty")
    parser.add_argument("--cache", type=Path, default=references.DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, help="where the report goes (default: the cache folder)")
    options = parser.parse_args(argv)
    names = [smoke] if options.smoke else options.corpus or list(corpora)
    reports = [measure_one(corpora[name], options.cache, 40 if options.smoke else STRIDE) for name in names]
    checks = evaluate(reports)
    out = options.json or options.cache / f"{stem}{'_smoke' if options.smoke else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": harness.machine(), "corpora": reports, "checks": checks}, indent=1))
    print(render(reports, checks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
