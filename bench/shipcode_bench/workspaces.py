"""The workspaces the tools are measured on, built deterministically and cached under the bench cache."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .driver import BenchError

TREE_FILES = 20_000
TREE_LINES = 190  # lines per file, on average: about 200 MB in all
NEEDLE = "frobnicate_quux"  # in NEEDLE_FILES files, once each: fewer matches than search_code's default limit
NEEDLE_FILES = 150
FREQUENT = "buffer_1[0-9] ="  # a pattern on about 9 % of the lines of a files tree (8 952 in 100 000 files)
STRUCTURE = "buffer($N)"  # a structural pattern on about 5 % of the lines: the limit is reached in the first files
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


# -- the workspaces of the tool measures ---------------------------------------------------------------------
FIXED_DATE = "2026-01-01T12:00:00+00:00"
STDLIB_COMMITS = 30  # enough history for git_log 20
BIG_LINES = 1_000_000  # about 50 MB: lines of 40 to 60 bytes
LONG_FILE_LINES = 2_050  # the read_file case of the issue
TREE_SIZES = (1_000, 10_000, 100_000)
FAR_OFFSET = 740_000  # the far page of read_file


@dataclass(frozen=True)
class Scale:
    """How big the tool workspaces are: the issue's sizes, or tiny ones for the smoke test (same code)."""

    tree_sizes: tuple[int, int, int] = TREE_SIZES
    big_lines: int = BIG_LINES
    far_offset: int = FAR_OFFSET
    library: Path | None = None  # None: the CPython standard library (python_library())


FULL = Scale()


def stamped(stamp: Path, recipe: str) -> bool:
    """True when the folder beside `stamp` was built from exactly `recipe` (else it is to be built again)."""
    return stamp.exists() and stamp.read_text() == recipe


def git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE, "GIT_AUTHOR_NAME": "bench",
           "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    done = subprocess.run(["git", "-C", str(root), *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"git {' '.join(args)}: {done.stderr.strip()[-300:]}")


def python_library() -> Path:
    """The standard library of a CPython on this machine: pyenv's 3.12 when there is one, else this interpreter's."""
    try:
        prefix = subprocess.run(["pyenv", "prefix", "3.12"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        prefix = ""
    library = Path(prefix) / "lib" / "python3.12" if prefix else Path(os.__file__).parent
    return library if library.is_dir() else Path(os.__file__).parent


def make_stdlib_repo(root: Path, stamp: Path, log: Callable[[str], None], library: Path | None = None) -> dict[str, Any]:
    """CPython's standard library (.py files, no site-packages) as a git repo: fixed dates, STDLIB_COMMITS commits
    of parts of it, then one small commit (two files changed: a commit as git_show usually shows one), one dirty
    change (a function appended to the file of LONG_FILE_LINES lines) for git_diff and one staged change (a
    line appended to another file) for the staged diff."""
    library = library or python_library()
    files = sorted(p.relative_to(library) for p in library.rglob("*.py") if "site-packages" not in p.parts)
    recipe = f"{library} {len(files)} {STDLIB_COMMITS} {FIXED_DATE} 2"
    if not stamped(stamp, recipe):
        log(f"building the git repo of {len(files)} files of {library} under {root}")
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        git(root, "init", "-q", "-b", "main")
        for number in range(STDLIB_COMMITS):
            batch = files[number::STDLIB_COMMITS]
            for relative in batch:
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(library / relative, root / relative)
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", f"part {number + 1} of the standard library")
        small = [root / files[0], root / files[len(files) // 2]]
        for path in small:
            path.write_text(path.read_text() + "\n# bench: a small commit\n")
        git(root, "commit", "-q", "-am", "bench: a small commit\n\nTwo files changed, as most commits change a few.")
        stamp.write_text(recipe)
    long_file = long_file_of(root)
    text = long_file.read_text()
    marker = "\n# bench: the dirty change\n"
    if marker not in text:  # the dirty change, made again if someone committed or reverted it
        long_file.write_text(text + marker + "def bench_dirty_change():\n    return 'changed'\n")
    staged = root / files[-1]
    staged_text = staged.read_text()
    marker = "\n# bench: the staged change\n"
    if marker not in staged_text:
        staged.write_text(staged_text + marker)
    git(root, "add", "--", str(staged.relative_to(root)))
    return {"root": root, "files": len(files), "long_file": long_file.relative_to(root).as_posix(),
            "long_file_lines": text.count("\n"), "staged_file": staged.relative_to(root).as_posix()}


def long_file_of(root: Path) -> Path:
    """The committed file closest to LONG_FILE_LINES lines (CPython 3.12: a file of the issue's size)."""
    best: tuple[int, str] | None = None
    for path in sorted(root.rglob("*.py")):
        if ".git" in path.parts:
            continue
        with open(path, "rb") as handle:
            lines = sum(1 for _ in handle)
        score = abs(lines - LONG_FILE_LINES)
        if best is None or score < best[0]:
            best = (score, str(path))
    assert best is not None
    return Path(best[1])


def make_files_tree(root: Path, count: int, log: Callable[[str], None]) -> int:
    """`count` small source files, 100 per folder, NEEDLE in one file of 100 (same seed, same tree). Returns the count."""
    stamp = root.parent / f"{root.name}.recipe"
    recipe = f"{count} {NEEDLE} 1"
    if stamped(stamp, recipe):
        return count
    log(f"generating {count} files under {root}")
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(count)
    pool = [f"{rng.choice(WORDS)}_{n} = {rng.choice(WORDS)}({n})\n" for n in range(500)]
    for index in range(count):
        folder = root / f"d{index // 10_000:02d}" / f"d{index // 100 % 100:02d}"
        if index % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        lines = rng.choices(pool, k=rng.randint(5, 40))
        if index % 100 == 7:
            lines.append(f"call_{NEEDLE}(x)\n")
        (folder / f"f{index:06d}{EXTENSIONS[index % len(EXTENSIONS)]}").write_text("".join(lines))
    stamp.write_text(recipe)
    return count


def make_big_file(folder: Path, log: Callable[[str], None], lines: int = BIG_LINES) -> Path:
    """One text file of `lines` numbered lines (about 50 MB by default); line N says N, so a page can be checked."""
    path = folder / "big.txt"
    stamp = folder / "big.recipe"
    recipe = f"{lines} 1"
    if stamped(stamp, recipe) and path.exists():
        return path
    log(f"writing {path}")
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(50)
    with open(path, "w") as out:
        for number in range(1, lines + 1):
            out.write(f"line {number:07d} {' '.join(rng.choices(WORDS, k=5))}\n")
    stamp.write_text(recipe)
    return path
