"""diagnostics: syntax errors in every language and pyflakes' findings in Python, in real files.

Each kind of finding on a file written here, at its line; no finding on the per-language fixtures (code
that parses) and no error on three real projects that run (requests, click, attrs: their sdists from
PyPI, pinned by hash); hostile files end as findings or skips, never as a failed call.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code.diagnostics import diagnostics
from shipcode_mcp.workspace.roots import Roots
from support import IN_CI, PEER_CACHE, REPO, load_script

pytest.importorskip("ast_grep_py")
pytest.importorskip("pyflakes")


def check(root: Path, path: str = ".", severity: str = "warning", limit: int = 200) -> dict[str, Any]:
    answer = diagnostics(Context(None, 1, "tools/call", {}), Roots([str(root)]), path, severity, limit)
    data: dict[str, Any] = answer.structured or {}
    return data


def brief(data: dict[str, Any]) -> list[tuple[str, int, str, str]]:
    return [(item["path"], item["line"], item["severity"], item["code"]) for item in data["findings"]]


BROKEN = {
    "app.py": """\
        import os
        import json
        def total(items):
            unused = 1
            return sum(items) + missing
        print(json.dumps('%s %s' % (1,)))
        """,
    "bad.py": "def f(:\n    pass\n",
    "pkg/__init__.py": "from .app import total\n",  # a package's export, not an unused import
    "web.js": "function f( {\n  return 1\n}\nconst ok = 2;\n",
    "main.go": "package main\n\nfunc main() {\n\tx := \n}\n",
    "lib.rs": "fn main() {\n    let x = 1\n}\n",
    "prog.c": "int main(void) {\n  int x = 1\n  return x;\n}\n",
}


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    for name, text in BROKEN.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_each_finding_at_its_line_in_path_order(broken: Path) -> None:
    data = check(broken)
    assert brief(data) == [
        ("app.py", 1, "warning", "UnusedImport"),  # os
        ("app.py", 4, "warning", "UnusedVariable"),
        ("app.py", 5, "error", "UndefinedName"),  # missing
        ("app.py", 6, "error", "PercentFormatPositionalCountMismatch"),  # raises when it runs
        ("bad.py", 1, "error", "syntax-error"),
        ("lib.rs", 2, "error", "syntax-error"),  # the `;` the grammar had to assume
        ("main.go", 4, "error", "syntax-error"),
        ("prog.c", 2, "error", "syntax-error"),
        ("web.js", 1, "error", "syntax-error"),
    ]
    assert data["errors"] == 7 and data["warnings"] == 2 and data["files_checked"] == 7 and not data["truncated"]
    assert "undefined name 'missing'" in data["findings"][2]["message"]


def test_severity_limit_and_one_file(broken: Path) -> None:
    assert [code for _, _, _, code in brief(check(broken, "app.py", "error"))] == ["UndefinedName",
                                                                                   "PercentFormatPositionalCountMismatch"]
    cut = check(broken, limit=3)
    assert len(cut["findings"]) == 3 and cut["truncated"]
    assert check(broken, "pkg")["findings"] == []


def test_the_fixtures_of_every_language_have_nothing_to_report(tmp_path: Path) -> None:
    shutil.copytree(REPO / "tests" / "data" / "code", tmp_path / "code")
    data = check(tmp_path, severity="error")
    assert data["files_checked"] >= 17 and data["findings"] == [], data["findings"]


def test_hostile_files_are_findings_or_skips(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text("x = " + "(" * 3000 + ")" * 3000 + "\n")
    (tmp_path / "nul.py").write_text("x = 1\0\n")
    (tmp_path / "wide.js").write_text("var a = '" + "x" * 40_000 + "';\n")
    (tmp_path / "big.py").write_text("x = 1\n" * 120_000)  # over the 512 KiB a parse takes
    data = check(tmp_path)
    assert [(item["path"], item["code"]) for item in data["findings"]] == [("deep.py", "syntax-error")]
    assert sorted((item["path"], item["reason"].split(",")[0]) for item in data["skipped_files"]) == [
        ("big.py", "too large"), ("nul.py", "binary"), ("wide.js", "a line of 40011 characters")]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["requests", "click", "attrs"])
def test_real_projects_that_run_have_no_errors(name: str) -> None:
    bench = load_script(REPO / "bench" / "references_precision.py", "bench_references_precision")
    PEER_CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(PEER_CACHE / "corpora.lock")):
        try:
            root: Path = bench.fetch(bench.CORPORA[name], PEER_CACHE)
        except bench.Unreachable as err:
            if IN_CI:
                raise
            pytest.skip(f"PyPI cannot be reached for the corpus: {err}")
    data = check(root, severity="error")
    assert data["files_checked"] >= 16 and data["findings"] == [], data["findings"]


VALID = {  # valid code where a grammar makes a node of no width, or reads an error, all the same
    "raw.go": "package main\n\nvar r = ``\n",
    "raw.rs": "fn main() {\n    let s = r\"\";\n    let b = br\"\";\n}\n",
    "raw.cpp": "const char *s = R\"()\";\n",
    "long.lua": "local s = [[]]\n--[[]]\n",
    "here.sh": "cat <<EOF\nEOF\ncat <<EOF\nvalue $x\nEOF\n",
    "page.php": "<?php $x = 1; ?>\n<html><?= $x ?></html>\n<?php if ($x) { ?>\n<b>x</b>\n<?php } ?>\n",
    "table.c": "int a[] = {\n#ifdef X\n  1,\n#endif\n  2 };\n",
    "pkg/__init__.py": "__all__ = ['mod']\n__path__ = __path__\n",
    "pkg/mod.py": "",
    "stub.pyi": "def f() -> Later: ...\nclass Later: ...\n",
    "lazy.py": "from ._lazy import __getattr__\n__all__ = ['made']\n",
}


def test_valid_code_that_grammars_read_oddly_has_nothing_to_report(tmp_path: Path) -> None:
    for name, text in VALID.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    data = check(tmp_path)
    assert data["files_checked"] == len(VALID) and data["findings"] == [], data["findings"]


def test_columns_count_characters_and_a_syntax_error_names_the_python_that_read_it(tmp_path: Path) -> None:
    (tmp_path / "wide.py").write_text("s = 'ééééé'; print(undefined_x)\n")
    (tmp_path / "bad.py").write_text("s = 'ééééé' + )\n")
    data = check(tmp_path)
    assert [(item["path"], item["line"], item["column"]) for item in data["findings"]] == [("bad.py", 1, 15),
                                                                                           ("wide.py", 1, 20)]
    assert data["findings"][0]["message"].startswith("unmatched ')' (as Python 3.")
