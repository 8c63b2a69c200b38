"""find_implementations: the derived classes of a Python class and their overrides of its method.

The rules on files written here, each on a case a name search gets wrong (another module's class of the
same name, an alias, a subclass of a subclass); then click 8.1.7 (its sdist from PyPI, pinned by hash),
against what Python itself says when it runs click: `__subclasses__()`, and which of them define the
method in their own `__dict__`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code.implementations import find_implementations
from shipcode_mcp.workspace.roots import Roots
from support import REPO, fetched_corpora, load_script

pytest.importorskip("ast_grep_py")


def implementations(root: Path, name: str, path: str = ".") -> dict[str, Any]:
    answer = find_implementations(Context(None, 1, "tools/call", {}), Roots([str(root)]), name, path, 200)
    data: dict[str, Any] = answer.structured or {}
    return data


def places(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(item["path"], item["qualified_name"], item["precision"]) for item in data["implementations"]]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    files = {
        "shop/__init__.py": "",
        "shop/base.py": """\
            class Store:
                def total(self):
                    return 0
            """,
        "shop/carts.py": """\
            from .base import Store
            from . import base
            from .base import Store as Shop
            class Cart(Store):
                def total(self):
                    return 1
            class Bag(base.Store):
                pass
            class Box(Shop):
                def total(self):
                    return 2
            class Crate(Bag):
                def total(self):
                    return 3
            class Outer:
                class Inner(Cart):
                    pass
            """,
        "other/base.py": """\
            class Store:
                def total(self):
                    return 9
            """,
        "other/cheap.py": """\
            from other.base import Store
            class Discount(Store):
                def total(self):
                    return -1
            def make(obj):
                class Dynamic(obj.Store):
                    def total(self):
                        return 5
                return Dynamic
            """,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_the_classes_whose_bases_lead_to_the_class_directly_or_not(shop: Path) -> None:
    data = implementations(shop, "shop.base.Store")
    assert [item["qualified_name"] for item in data["bases"]] == ["Store"]
    assert places(data) == [  # the scoped ones first; each level of the hierarchy in path and line order
        ("shop/carts.py", "Cart", "scoped"), ("shop/carts.py", "Bag", "scoped"),  # written Store, base.Store
        ("shop/carts.py", "Box", "scoped"),  # an alias of Store
        ("shop/carts.py", "Crate", "scoped"), ("shop/carts.py", "Outer.Inner", "scoped"),  # Bag's and Cart's
        ("other/cheap.py", "make.Dynamic", "name")]  # obj.Store: the scopes cannot tell
    # other.base.Store's subclass Discount is not among them, though its statement is `class Discount(Store)`


def test_a_methods_implementations_are_the_derived_classes_own_definitions(shop: Path) -> None:
    data = implementations(shop, "shop.base.Store.total")
    assert [(path, name) for path, name, _ in places(data)] == [
        ("shop/carts.py", "Cart.total"), ("shop/carts.py", "Box.total"), ("shop/carts.py", "Crate.total"),
        ("other/cheap.py", "make.Dynamic.total")]  # Bag and Inner define none
    assert data["derived_classes"] == 6
    other = implementations(shop, "other.base.Store.total")
    assert [(path, name) for path, name, _ in places(other)] == [
        ("other/cheap.py", "Discount.total"), ("other/cheap.py", "make.Dynamic.total")]


def test_same_named_classes_a_property_with_a_setter_a_second_root_and_the_class_cap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    (first / "pkg").mkdir(parents=True)
    (first / "pkg" / "__init__.py").write_text("")
    (first / "pkg" / "kinds.py").write_text(textwrap.dedent("""\
        import sys
        from .base import Base
        if sys.platform == "win32":
            class Impl(Base):
                def run(self):
                    return 1
        else:
            class Impl(Base):
                def run(self):
                    return 2
        """))
    second.mkdir()
    (second / "base.py").write_text(textwrap.dedent("""\
        class Base:
            @property
            def run(self):
                return 0
            @run.setter
            def run(self, value):
                pass
        """))
    (first / "pkg" / "base.py").write_text((second / "base.py").read_text())
    roots = Roots([str(first), str(second)])
    answer = find_implementations(Context(None, 1, "tools/call", {}), roots, "pkg.base.Base.run", ".", 200)
    data: dict[str, Any] = answer.structured or {}
    assert [item["qualified_name"] for item in data["bases"]] == ["Base"]  # once, though run is defined twice
    assert [(item["path"], item["line"]) for item in data["implementations"]] == [("pkg/kinds.py", 5), ("pkg/kinds.py", 9)]
    other = find_implementations(Context(None, 1, "tools/call", {}), roots, "Base", str(second), 200).structured or {}
    assert [item["path"] for item in other["bases"]] == ["pkg/base.py", str(second / "base.py")]  # both roots' Base
    monkeypatch.setattr("shipcode_mcp.workspace.code.implementations.MAX_CLASSES", 1)
    cut = find_implementations(Context(None, 1, "tools/call", {}), roots, "pkg.base.Base", ".", 200)
    assert (cut.structured or {})["truncated"] and (cut.structured or {})["derived_classes"] == 1
    assert "Stopped after 1 derived classes" in cut.content[0]["text"]


def test_a_function_or_an_unknown_name_is_an_answer_without_implementations(shop: Path) -> None:
    (shop / "shop" / "util.py").write_text("def helper():\n    pass\n")
    data = implementations(shop, "helper")
    assert data["implementations"] == [] and data["bases"] == []
    assert implementations(shop, "Nothing")["implementations"] == []


# -- click, against Python's own answer ---------------------------------------------------------------------
TRUTH = """
import inspect, json, sys
sys.path.insert(0, sys.argv[1])
import click, click.types, click.core
found = {}
for module, base, member in json.loads(sys.argv[2]):
    cls = getattr(sys.modules[module], base)
    todo, seen = list(cls.__subclasses__()), set()
    while todo:
        sub = todo.pop()
        if sub in seen or not sub.__module__.startswith("click"):
            continue
        seen.add(sub)
        todo += sub.__subclasses__()
    found[f"{base}.{member}" if member else base] = sorted(
        sub.__qualname__ + (f".{member}" if member else "") for sub in seen if member is None or member in vars(sub))
print(json.dumps(found))
"""
QUERIES = [("click.types", "ParamType", None), ("click.types", "ParamType", "convert"), ("click.core", "Command", None),
           ("click.core", "Parameter", None), ("click.core", "Parameter", "get_default"), ("click.types", "ParamType",
                                                                                            "shell_complete")]


@pytest.mark.timeout(300)
def test_on_click_the_implementations_are_the_ones_python_finds_at_run_time() -> None:
    bench = load_script(REPO / "bench" / "references_precision.py", "bench_references_precision")
    [root] = fetched_corpora(bench, "click")
    truth = json.loads(subprocess.run([sys.executable, "-c", TRUTH, str(root), json.dumps(QUERIES)], check=True,
                                      capture_output=True, text=True, timeout=120).stdout)
    assert len(truth["ParamType"]) >= 15 and len(truth["ParamType.convert"]) >= 10  # a real hierarchy
    for _, base, member in QUERIES:
        query = f"{base}.{member}" if member else base
        data = implementations(root, query)
        assert sorted(name for _, name, _ in places(data)) == truth[query], query
        assert all(precision == "scoped" for _, _, precision in places(data)), query
