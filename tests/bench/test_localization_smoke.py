"""bench/localization.py on a real git history made here (the projects' own histories are cloned from GitHub,
which CI cannot reach): the instances it mines, the masking of the task, the gold lines, the metrics, and a whole
run of the four methods through a real server."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from support import REPO, load_script

pytest.importorskip("ast_grep_py")

CART = ('"""The cart."""\n\n\ndef total_price(items):\n    return sum(price for price in items)\n\n\n'
        "def add_item(items, price):\n    items.append(price)\n    return items\n")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def history(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "shop").mkdir(parents=True)
    (root / "tests").mkdir()
    git(root.parent, "init", "-q", str(root))
    (root / "shop" / "cart.py").write_text(CART)
    (root / "shop" / "discounts.py").write_text("def discount_rate(item):\n    return 0.0\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "First commit")
    (root / "shop" / "cart.py").write_text(CART.replace("sum(price for price in items)",
                                                        "sum(price for price in items if price > 0)"))
    git(root, "commit", "-q", "-am", "Fix total_price counting refunds as sales (#12)\n\nNegative prices in the cart "
                                      "are refunds; the total of a cart left them in.\n\nSigned-off-by: someone")
    (root / "tests" / "test_cart.py").write_text("def test_total():\n    pass\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "Add a test of the cart total for refunded items")
    return root


def test_the_bench_mines_scores_and_runs_the_four_methods(history: Path, tmp_path: Path) -> None:
    bench = load_script(REPO / "bench" / "localization.py", "bench_localization")
    project = bench.Project("shop", "Python", "", (".py",), "shop/")
    instances = bench.mine(project, history / ".git", 10)
    assert [instance.files for instance in instances] == [["shop/cart.py"]]  # not the commit that adds only a test
    instance = instances[0]
    assert instance.lines == {"shop/cart.py": [5]}
    masked = bench._task(instance.task, ["cart", "shop/cart.py", "total_price"])
    assert masked == ("Fix [MASK] counting refunds as sales\n\nNegative prices in the [MASK] are refunds; the total of a "
                      "[MASK] left them in.")
    instance.functions = [("shop/cart.py", "total_price")]
    perfect = bench.score(instance, [("shop/cart.py", 4, 5, "total_price"), ("shop/discounts.py", 1, 2, "discount_rate")])
    assert perfect == {"acc@1": 1.0, "acc@5": 1.0, "acc@10": 1.0, "function_recall@10": 1.0, "line_recall@300": 1.0}
    wrong = bench.score(instance, [("shop/discounts.py", 1, 2, "discount_rate"), ("shop/cart.py", 8, 10, "add_item")])
    assert wrong == {"acc@1": 0.0, "acc@5": 1.0, "acc@10": 1.0, "function_recall@10": 0.0, "line_recall@300": 0.0}
    args = argparse.Namespace(instances=10, python=str(REPO / ".venv" / "bin" / "python"), src=REPO / "src",
                              cache=tmp_path / "cache")
    args.cache.mkdir()
    report = bench.measure_project(project, history / ".git", args, tmp_path)
    assert report["instances"] == 1 and set(report["methods"]) == {"locate", "BM25 over files", "BM25 over functions",
                                                                   "grep the identifiers"}
    assert report["methods"]["locate"]["acc@1"] == 1.0  # refunds, sales, price: the cart's words
    assert report["examples"][0]["locate"][0].startswith("shop/cart.py:4-5 total_price")
