"""Deterministic generated source trees (1k, 10k, 100k files) for listing and paging measurements and tests.

The shape is bench/run.py's make_tree: `pkgNN/moduleNN/fileNNNNN.ext`, 1 000 files a package and 40 a
module, the same eight extensions in turn; so the same count gives the same names on every machine,
and figures taken here compare with the bench's. Each file holds one short line (its own name): listing
and paging look at names, not contents, and a 100k-file tree is made in seconds.
"""

from __future__ import annotations

import os
from pathlib import Path

EXTENSIONS = (".py", ".js", ".ts", ".go", ".rs", ".c", ".java", ".rb")


def tree_names(files: int) -> list[str]:
    """The relative names of a tree of `files` files, in the order rg's sort and Python's sort agree on."""
    width = max(5, len(str(files - 1)))
    return sorted(f"pkg{index // 1000:02d}/module{index // 40 % 25:02d}/file{index:0{width}d}{EXTENSIONS[index % 8]}"
                  for index in range(files))


def make_tree(root: Path, files: int) -> list[str]:
    """Make (or reuse, when its recipe stamp matches) a tree of `files` files under `root`; its sorted names."""
    names = tree_names(files)
    stamp = root / ".tree-recipe"
    recipe = f"shape 1 files {files}\n"
    if stamp.is_file() and stamp.read_text() == recipe:
        return names
    root.mkdir(parents=True, exist_ok=True)
    made: set[str] = set()
    for name in names:
        folder = name.rpartition("/")[0]
        if folder not in made:
            (root / folder).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        fd = os.open(root / name, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        try:
            os.write(fd, name.encode() + b"\n")
        finally:
            os.close(fd)
    # The stamp is a file of the tree too; keep it out of listings so the names above are the whole tree.
    (root / ".ignore").write_text(".tree-recipe\n.ignore\n")
    stamp.write_text(recipe)
    return names
