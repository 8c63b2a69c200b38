"""The workspaces the tools are measured on, built deterministically and cached under the bench cache."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path

TREE_FILES = 20_000
TREE_LINES = 190  # lines per file, on average: about 200 MB in all
NEEDLE = "frobnicate_quux"  # in NEEDLE_FILES files, once each: fewer matches than search_code's default limit
NEEDLE_FILES = 150
EXTENSIONS = (".py", ".js", ".ts", ".go", ".rs", ".c", ".java", ".rb")
WORDS = ("return", "value", "index", "buffer", "client", "server", "request", "handler", "result", "error",
         "config", "parse", "render", "update", "cache", "token", "stream", "offset", "length", "count")


def make_tree(root: Path, stamp: Path, log: Callable[[str], None]) -> int:
    """A generated source tree (same seed, same tree); made once and kept in the cache. Returns its size."""
    recipe = f"{TREE_FILES} {TREE_LINES} {NEEDLE} {NEEDLE_FILES} 1"
    if stamp.exists() and stamp.read_text() == recipe:
        return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())
    log(f"generating {TREE_FILES} source files under {root}")
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(6)
    pool = []  # a few thousand distinct lines, drawn from for every file: fast to write, varied to search
    for number in range(4000):
        words = rng.choices(WORDS, k=rng.randint(2, 7))
        pool.append(f"{'    ' * rng.randint(0, 3)}{words[0]}_{number} = {' + '.join(words[1:])}({rng.randint(0, 9999)})\n")
    needles = set(rng.sample(range(TREE_FILES), NEEDLE_FILES))
    size = 0
    for index in range(TREE_FILES):
        folder = root / f"pkg{index // 1000:02d}" / f"module{index // 40 % 25:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = rng.choices(pool, k=rng.randint(TREE_LINES // 2, TREE_LINES * 3 // 2))
        if index in needles:
            lines.insert(rng.randrange(len(lines)), f"call_{NEEDLE}(x)  # the benchmark's needle\n")
        data = "".join(lines).encode()
        (folder / f"file{index:05d}{EXTENSIONS[index % len(EXTENSIONS)]}").write_bytes(data)
        size += len(data)
    stamp.write_text(recipe)
    return size
