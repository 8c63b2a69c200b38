"""find_definition measured against typescript-language-server, on real third-party TypeScript and JavaScript.

bench/definition_accuracy.py for the corpora of bench/references_precision_ts.py (npm packages pinned by sha512:
immer and zod's core in TypeScript, preact and express in JavaScript): ground truth is the language server's
`textDocument/definition` (through pygls, as that bench starts it) at the names read in each corpus (every
identifier that is not a declaration's own name, and every `obj.member`, one in STRIDE of them in source order),
compared file:line by file:line with find_definition's answers at the same place, without a language server:

- **scoped**: the answers find_definition decides by JavaScript's scopes and imports (code/jsscopes.py and
  code/jsdefinitions.py);
- **any**: every answer, the ones by name included;
- **outside**: places whose definitions are all outside the corpus (a global, the standard library's types): a
  scoped definition inside the corpus there is wrong.

    .venv/bin/python bench/definition_accuracy_ts.py            # the four corpora: a few minutes
    .venv/bin/python bench/definition_accuracy_ts.py --smoke    # immer, one use in forty

Target: the scoped answers at precision >= 0.97, recall >= 0.95. Results: .bench-cache/definition_accuracy_ts.json.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import definition_accuracy as python_bench  # the scoring, the tables
import references_precision_ts as corpora  # the corpora and the language server's client

STRIDE = 8
DECLARING = frozenset({"function_declaration", "class_declaration", "variable_declarator", "method_definition",
                       "required_parameter", "optional_parameter", "formal_parameters", "import_specifier",
                       "namespace_import", "import_clause", "public_field_definition", "interface_declaration",
                       "type_alias_declaration", "enum_declaration", "pair", "property_signature", "method_signature",
                       "abstract_class_declaration", "function_signature", "generator_function_declaration"})
"""Parents whose identifier child is (usually) the name being declared: not a use to ask about."""


def uses(root: Path, corpus: corpora.Corpus, stride: int) -> list[python_bench.Use]:
    """One in `stride` of the identifiers read and the members accessed in the corpus's files, in path order."""
    from shipcode_mcp.workspace.code.outline import parse

    found: list[python_bench.Use] = []
    for file in sorted(root.rglob(f"*{corpus.extension}")):
        text = file.read_text(encoding="utf-8")
        tree = parse(text, corpus.language)
        relative = file.relative_to(root).as_posix()
        for node in tree.find_all(any=[{"kind": "identifier"}, {"kind": "property_identifier"}]):
            parent = node.parent()
            if parent is None or parent.kind() in DECLARING:
                continue
            if node.kind() == "property_identifier" and parent.kind() != "member_expression":
                continue
            start = node.range().start
            found.append(python_bench.Use(relative, start.line + 1, start.column, node.text()))
    found.sort(key=lambda use: (use.path, use.line, use.column))
    return found[::stride]


async def _truth(root: Path, corpus: corpora.Corpus, chosen: list[python_bench.Use],
                 ) -> tuple[list[set[tuple[str, int]]], list[bool], float]:
    from lsprotocol import types

    start = time.perf_counter()
    answers: list[set[tuple[str, int]]] = []
    anything: list[bool] = []
    async with corpora.language_server(root, corpora.server_bin()) as client:
        for use in chosen:
            uri = corpora.open_file(client, root, use.path, corpus.language)
            found = await asyncio.wait_for(client.text_document_definition_async(types.DefinitionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(use.line - 1, use.column))),
                corpora.REQUEST_TIMEOUT)
            found = [found] if found is not None and not isinstance(found, list) else found or []
            answers.append(corpora.in_root(root, found))
            anything.append(bool(found))
    return answers, anything, time.perf_counter() - start


def measure(corpus: corpora.Corpus, cache: Path, stride: int = STRIDE) -> dict:  # type: ignore[type-arg]
    root = corpora.fetch(corpus, cache)
    chosen = uses(root, corpus, stride)
    expected, anything, server_time = asyncio.run(_truth(root, corpus, chosen))
    return python_bench.report(f"{corpus.name} {corpus.version} ({corpus.under})", root, chosen, expected, anything,
                               server_time)


def main(argv: list[str] | None = None) -> int:
    return python_bench.main(argv, corpora=corpora.CORPORA, smoke="immer", stem="definition_accuracy_ts",
                             measure_one=measure, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
