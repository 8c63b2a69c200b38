"""Code intelligence measured: accuracy, speed against rg, agreement with ctags, and the bytes a model reads.

One command, one run, ratios within it:

- **Accuracy** (bench/code_accuracy.py): Python outlines against the standard library's `ast` on the
  whole of CPython's library (every def, async def and class: name, qualified name, line range).
- **Speed**, through a real `shipcode-mcp` over pipes, against plain `rg` (the binary the server uses) on a
  copy of CPython's library: `outline` of a 10 000-line file made of library modules (uncached: its
  mtime moves before each call; and cached), with the parse alone in-process beside it;
  `find_symbol NAME` cold (the first call of a fresh server, after an `outline` of a one-line file
  has loaded the parser) and warm (the same call again) against `rg -n -w NAME`; `find_references NAME`
  likewise. Rounds alternate which of the two goes first, after an untimed round that fills the page
  cache; the table shows medians. Every answer is checked: find_symbol finds exactly the definitions
  `ast` lists for the name; every reference is a line `rg -w` found.
- **Prefilter and scan**, in-process on the same copy: find_symbol with and without its definition-shaped
  prefilter (PREFILTER_NAMES, qualified names and globs among them) and find_references with Python's
  comment-and-string scan and with a parse of every file (SCAN_NAMES) must give the same answers.
- **ctags**: for each other language with real code on this machine (node_modules, npm caches,
  /usr/include, pyenv's C sources, shell scripts...), our outlines against Debian's universal-ctags
  (`ctags --output-format=json`): the functions and types both list, by name and definition line.
- **Token economy**: navigation tasks over the library (show the body of one method; list a class's
  methods; where is X defined; who calls Y), answered through the server with the symbol tools and
  with `search_code` + `read_file` (a route spelled out per task: the searches a model makes, then
  `read_file` in pages of READ_PAGE lines from the line found until the answer is on screen), counting
  the bytes of the text blocks returned (what a model reads), each route's answer checked.

    .venv/bin/python bench/code_intel.py            # about a minute and a half on 2 cores
    .venv/bin/python bench/code_intel.py --smoke    # a slice of the library, 1 round: 6 to 10 s on 2 cores

The library is the running interpreter's (`--stdlib` names another; its files are copied, without
site-packages and __pycache__, under the cache folder). Results: .bench-cache/code_intel.json.
Standard library (and shipcode_mcp, in-process, for the parse-only figures) only, like bench/run.py,
whose server driver it uses.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import code_accuracy as accuracy  # bench/code_accuracy.py: the ast reference
import run as harness  # bench/run.py: the server driver, medians, tables, machine facts
from run import BenchError

REPO = harness.REPO
DEFAULT_CACHE = harness.DEFAULT_CACHE
BIG_LINES = 10_000
OUTLINE_LIMIT = 0.030  # seconds: the target for a 10 000-line file
COLD_LIMIT, WARM_LIMIT, REFERENCES_LIMIT, TOKEN_TARGET = 2.0, 1.2, 2.0, 5.0
READ_PAGE = 100  # lines per read_file call on the search_code + read_file route
RESULT_LIMIT = 2000  # the tools' largest limit: every answer complete, so both sides do the whole work

# Names looked up: a class, functions and a method name, rare to common (how many files hold the word
# decides how much rg and the parser have to do).
SYMBOL_NAMES = ("HTTPConnection", "urlopen", "dataclass", "getLogger", "communicate")
REFERENCE_NAMES = ("urlopen", "getLogger", "communicate")
# find_symbol's definition-shaped prefilter must change no answer: these, with and without it, in-process.
PREFILTER_NAMES = (*SYMBOL_NAMES, "Popen.communicate", "Thread.*", "Path.read_text", "get_*", "_make_*", "Test*Case",
                   "DEFAULT_BUFFER_SIZE", "setUp", "main")
# find_references reads Python's uses from a scan of comments and strings: these, with it and with a parse.
SCAN_NAMES = (*REFERENCE_NAMES, "Popen", "x", "name", "data", "format", "os", "i")
# Modules the 10 000-line file is made of, in order, whole, until it has BIG_LINES lines (then cut there).
BIG_PARTS = ("_pydecimal.py", "argparse.py", "typing.py", "dataclasses.py", "subprocess.py")


@dataclass(frozen=True)
class Task:
    """One navigation question, asked both ways."""

    kind: str  # body, methods, where, callers
    name: str  # Class.method, Class, or a name
    path: str = ""  # the file meant, where several define the name (a model picks it from the list it gets)


TASKS = (
    Task("body", "Popen.communicate", "subprocess.py"), Task("body", "ArgumentParser.parse_known_args", "argparse.py"),
    Task("body", "JSONDecoder.raw_decode", "json/decoder.py"),
    Task("methods", "Thread", "threading.py"), Task("methods", "HTTPConnection", "http/client.py"),
    Task("methods", "Fraction", "fractions.py"),
    Task("where", "urlopen"), Task("where", "dataclass"), Task("where", "getLogger"),
    Task("callers", "urlopen"), Task("callers", "fnmatchcase"), Task("callers", "_make_iterencode"),
)
# Files a smoke run keeps beside its slice of the library, so that every name and task still resolves.
NEEDED = ("subprocess.py", "argparse.py", "json/decoder.py", "threading.py", "http/client.py", "fractions.py",
          "urllib/request.py", "dataclasses.py", "logging/__init__.py", "fnmatch.py", "json/encoder.py",
          *BIG_PARTS)


@dataclass
class Settings:
    rounds: int = 5
    every: int = 1  # the library's files copied: one in `every` (plus NEEDED)
    ctags_files: int = 400  # per language, at most
    names: int = len(SYMBOL_NAMES)  # of SYMBOL_NAMES and REFERENCE_NAMES, the first this many
    timeout: float = 300.0


SMOKE = Settings(rounds=1, every=40, ctags_files=8, names=1, timeout=60.0)


# -- the library ----------------------------------------------------------------------------------------
def copy_library(source: Path, target: Path, every: int, log: Callable[[str], None]) -> list[str]:
    """The library's files (one in `every`, plus NEEDED) under `target`, made once per recipe; returns the .py
    files, relative, in path order."""
    stamp = target.with_name(target.name + ".recipe")
    recipe = f"{source} {every} {len(NEEDED)} 1"
    if not (stamp.exists() and stamp.read_text() == recipe):
        log(f"copying {source} to {target}")
        shutil.rmtree(target, ignore_errors=True)
        files = sorted(path for path in source.rglob("*") if path.is_file() and not {"site-packages", "__pycache__"}
                       & set(path.relative_to(source).parts))
        keep = set(files[::every]) | {source / name for name in NEEDED}
        for path in files:
            if path in keep:
                destination = target / path.relative_to(source)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, destination)
        stamp.write_text(recipe)
    return [str(path.relative_to(target)) for path in accuracy.library_files(target)]


# -- the server -------------------------------------------------------------------------------------------
class Server:
    """A running `shipcode-mcp ROOT`, initialized; `call` times one tools/call and checks it succeeded."""

    def __init__(self, python: str, src: Path, root: Path, cache: Path, timeout: float) -> None:
        target = harness.Target("shipcode-mcp", "shipcode-mcp (CLI)", [*harness.cli_command(python), str(root)],
                                env=harness.our_env(src))
        self.samples = harness.Samples()
        self.child = harness.Child(target, harness.stderr_log(cache, target))
        self.child.arm(timeout)
        self.child.initialize(self.samples)

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        (request_id,) = self.child.ids(1)
        params = {"name": tool, "arguments": arguments}
        line = harness.encode({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        started = time.perf_counter()
        self.child.send(line)
        message = self.child.read_response()
        elapsed = time.perf_counter() - started
        self.samples.checker.response(tool, message, request_id)
        result: dict[str, Any] = message["result"]
        if result.get("isError") or not isinstance(result.get("structuredContent"), dict):
            raise BenchError(f"{tool} {json.dumps(arguments)} failed: {json.dumps(result)[:400]}")
        return elapsed, result

    def close(self) -> None:
        try:
            self.child.close(10.0)
        finally:
            self.child.kill()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def text_of(result: dict[str, Any]) -> str:
    """The text block a model reads."""
    return "".join(block["text"] for block in result["content"] if block.get("type") == "text")


def symbols_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of a find_symbol, outline (symbols) or find_references (references) result."""
    structured = result["structuredContent"]
    items: list[dict[str, Any]] = structured["symbols"] if "symbols" in structured else structured["references"]
    return items


def truncated(result: dict[str, Any]) -> bool:
    return bool(result["structuredContent"].get("truncated"))


# -- rg -------------------------------------------------------------------------------------------------------
def rg_lines(output: bytes) -> set[tuple[str, int]]:
    found = set()
    for line in output.decode("utf-8", "replace").splitlines():
        path, number, _ = line.split(":", 2)
        found.add((path.removeprefix("./"), int(number)))
    return found


def expected_definitions(root: Path, files: list[str], name: str) -> set[tuple[str, int]]:
    """Where `ast` says `name` is defined (def, async def, class) in the library: (path, line) pairs."""
    found = set()
    for relative in files:
        path = root / relative
        try:
            text = accuracy.source_text(path)
            if name not in text:
                continue
            found |= {(relative, item.line) for item in accuracy.ast_definitions(text) if item.name == name}
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
    return found


DEFINITION_KINDS = accuracy.DEFINITION_KINDS


def same_definitions(items: list[dict[str, Any]], expected: set[tuple[str, int]], name: str) -> None:
    found = {(item["path"], item["line"]) for item in items if item["kind"] in DEFINITION_KINDS}
    if found != expected:
        raise BenchError(f"find_symbol {name}: {len(found)} definitions, ast {len(expected)}; "
                         f"missing {sorted(expected - found)[:5]}, extra {sorted(found - expected)[:5]}")


def within_rg(items: list[dict[str, Any]], rg_found: set[tuple[str, int]], name: str) -> None:
    lines = {(item["path"], item["line"]) for item in items}
    outside = lines - rg_found
    if not lines or outside:
        raise BenchError(f"find_references {name}: {len(lines)} lines, {len(outside)} not found by rg -w: {sorted(outside)[:5]}")


# -- speed ------------------------------------------------------------------------------------------------
def make_big_file(library: Path, target: Path) -> int:
    """BIG_LINES lines of real library code (BIG_PARTS, whole, in order, then cut at a line end)."""
    lines: list[str] = []
    for name in BIG_PARTS:
        lines += accuracy.source_text(library / name).splitlines(keepends=True)
        if len(lines) >= BIG_LINES:
            break
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(lines[:BIG_LINES]), encoding="utf-8")
    return min(len(lines), BIG_LINES)


def outline_speed(python: str, src: Path, library: Path, cache: Path, settings: Settings) -> dict[str, Any]:
    """outline of the big file through the server, uncached and cached, and the parse alone in-process."""
    from shipcode_mcp.workspace.code.outline import outline_source

    folder = cache / "outline-big"
    big = folder / "big.py"
    lines = make_big_file(library, big)
    text = big.read_text(encoding="utf-8")
    times: dict[str, list[float]] = {"uncached": [], "cached": [], "parse": []}
    symbols = 0
    (folder / "tiny.py").write_text("x = 1\n")
    with Server(python, src, folder, cache, settings.timeout) as server:
        server.call("outline", {"path": "tiny.py"})  # loads the parser: not what is measured
        for round_number in range(settings.rounds + 1):
            stat = big.stat()
            os.utime(big, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a new mtime: not in the cache
            uncached, result = server.call("outline", {"path": "big.py"})
            cached, again = server.call("outline", {"path": "big.py"})
            if text_of(again) != text_of(result):
                raise BenchError("outline: the cached answer differs")
            started = time.perf_counter()
            parsed = outline_source(text, "python")
            parse = time.perf_counter() - started
            symbols = len(parsed)
            if round_number:
                times["uncached"].append(uncached)
                times["cached"].append(cached)
                times["parse"].append(parse)
    return {"lines": lines, "bytes": len(text.encode()), "top_level_symbols": symbols, "samples": times,
            **{key: harness.median(values) for key, values in times.items()}}


def lookup_speed(python: str, src: Path, root: Path, files: list[str], cache: Path, settings: Settings,
                 rg: str) -> dict[str, Any]:
    """find_symbol and find_references cold and warm against rg -n -w, per name."""
    (root / "_bench_tiny.py").write_text("x = 1\n")
    out: dict[str, Any] = {}
    cases = ([("find_symbol", name) for name in SYMBOL_NAMES[:settings.names]]
             + [("find_references", name) for name in REFERENCE_NAMES[:settings.names]])
    definitions = {name: expected_definitions(root, files, name) for name in SYMBOL_NAMES[:settings.names]}
    for tool, name in cases:
        times: dict[str, list[float]] = {"cold": [], "warm": [], "rg": []}
        answer: dict[str, Any] = {}
        command = [rg, "-n", "-w", name]
        arguments = {"name": name, "limit": RESULT_LIMIT}
        for round_number in range(settings.rounds + 1):
            with Server(python, src, root, cache, settings.timeout) as server:
                server.call("outline", {"path": "_bench_tiny.py"})  # loads the parser: not what is measured
                rg_first = round_number % 2 == 0  # alternate which goes first
                if rg_first:
                    alone, output = harness.timed_command(command, root)
                cold, result = server.call(tool, arguments)
                warm, again = server.call(tool, arguments)
                if not rg_first:
                    alone, output = harness.timed_command(command, root)
            if round_number:  # round 0 only fills the page cache
                times["cold"].append(cold)
                times["warm"].append(warm)
                times["rg"].append(alone)
            answer.update(result=result, again=again, rg=output)
            result = answer["result"]
            if truncated(result) or symbols_of(answer["again"]) != symbols_of(result):
                raise BenchError(f"{tool} {name}: truncated, or the warm answer differs")
            rg_found = rg_lines(answer["rg"])
            if tool == "find_symbol":
                same_definitions(symbols_of(result), definitions[name], name)
            else:
                within_rg(symbols_of(result), rg_found, name)
        cold, warm, alone_time = (harness.median(times[key]) for key in ("cold", "warm", "rg"))
        out[f"{tool} {name}"] = {
            "tool": tool, "name": name, "cold": cold, "warm": warm, "rg": alone_time, "cold_ratio": cold / alone_time,
            "warm_ratio": warm / alone_time, "rg_lines": len(rg_lines(answer["rg"])),
            "rg_files": len({path for path, _ in rg_lines(answer["rg"])}), "answers": len(symbols_of(answer["result"])),
            "samples": times,
        }
    (root / "_bench_tiny.py").unlink()
    return out


def prefilter_recall(root: Path) -> dict[str, Any]:
    """find_symbol with and without the definition-shaped prefilter, in-process over the library: the
    same definitions for every name of PREFILTER_NAMES (else BenchError), and how many files each parsed."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.navigate import find_symbol
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    out: dict[str, Any] = {}
    for name in PREFILTER_NAMES:
        answers = []
        parsed = []
        for prefilter in (True, False):
            CACHE.clear()
            misses = CACHE.misses
            found = find_symbol(ctx, roots, name, None, ".", 100_000, prefilter=prefilter)
            parsed.append(CACHE.misses - misses)
            answers.append((found.structured or {}).get("symbols"))
        if answers[0] != answers[1]:
            raise BenchError(f"find_symbol {name}: the prefilter changed the answer ({len(answers[0] or [])} "
                             f"definitions with it, {len(answers[1] or [])} without)")
        out[name] = {"definitions": len(answers[0] or []), "parsed": parsed[0], "parsed_unfiltered": parsed[1]}
    CACHE.clear()
    return out


def scan_agreement(root: Path) -> dict[str, Any]:
    """find_references with Python's scan (pyscan.py) and with a parse of every file, in-process over
    the library: the same uses for every name of SCAN_NAMES (else BenchError), and the time of each."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.workspace.code.references import find_references
    from shipcode_mcp.workspace.code.source import CACHE
    from shipcode_mcp.workspace.roots import Roots

    roots = Roots([str(root)])
    ctx = Context(None, 1, "tools/call", {})
    out: dict[str, Any] = {}
    for name in SCAN_NAMES:
        answers = []
        times = []
        for scan in (True, False):
            CACHE.clear()
            start = time.perf_counter()
            found = find_references(ctx, roots, name, ".", 100_000, scan=scan)
            times.append(time.perf_counter() - start)
            answers.append((found.structured or {}).get("references"))
        if answers[0] != answers[1]:
            raise BenchError(f"find_references {name}: the scan changed the answer ({len(answers[0] or [])} uses "
                             f"with it, {len(answers[1] or [])} with a parse)")
        out[name] = {"references": len(answers[0] or []), "scan": times[0], "parse": times[1]}
    CACHE.clear()
    return out


# -- ctags ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Corpus:
    language: str
    label: str  # where the code comes from
    files: tuple[Path, ...]


HOME = Path.home()
CORPUS_PLACES: tuple[tuple[str, tuple[Path, ...], tuple[str, ...]], ...] = (
    # language, folders to look in, file name endings (a .d.ts is declarations only: left out)
    ("javascript", (Path("/usr/lib/node_modules"), HOME / ".cache/shipcode-mcp"), (".js",)),
    ("typescript", (HOME / ".cache/shipcode-mcp", Path("/usr/lib/node_modules")), (".ts",)),
    ("c", (HOME / ".pyenv/versions", Path("/usr/share/doc")), (".c",)),
    ("cpp", (Path("/usr/include"),), (".hpp", ".cpp", ".cc")),
    ("php", (Path("/usr/lib/google-cloud-sdk"),), (".php",)),
    ("bash", (Path("/usr/lib"), HOME / ".pyenv", REPO / "scripts"), (".sh", ".bash")),
    ("go", (Path("/usr/share/doc"), Path("/usr/lib/go"), HOME / "go"), (".go",)),
    ("rust", (HOME / ".cargo/registry/src", HOME / ".rustup/toolchains"), (".rs",)),
    ("java", (Path("/usr/share/java"), Path("/usr/lib/jvm")), (".java",)),
    ("ruby", (Path("/usr/lib/ruby"), Path("/usr/share/ruby")), (".rb",)),
    ("lua", (Path("/usr/share/lua"), Path("/usr/lib/x86_64-linux-gnu/lua")), (".lua",)),
)


def find_corpora(rg: str, limit: int) -> list[Corpus]:
    """Real code of each language found on this machine: up to `limit` files, spread evenly over what
    was found (sorted by path, so the same machine gives the same files)."""
    corpora = []
    for language, places, endings in CORPUS_PLACES:
        found: list[Path] = []
        for place in places:
            if not place.is_dir():
                continue
            globs = [argument for ending in endings for argument in ("-g", f"*{ending}")] + ["-g", "!*.d.ts", "-g", "!*.min.js"]
            done = subprocess.run([rg, "--files", "-uu", "--no-messages", *globs, str(place)], capture_output=True, check=False)
            found += [Path(line) for line in done.stdout.decode("utf-8", "replace").splitlines()]
        found = sorted({path for path in found if path.is_file() and 0 < path.stat().st_size < 1 << 20})
        found = [path for path in found if not minified(path)]
        if found:
            step = max(1, len(found) // limit)
            chosen = tuple(found[::step][:limit])
            corpora.append(Corpus(language, ", ".join(str(place) for place in places if place.is_dir()), chosen))
    return corpora


def minified(path: Path) -> bool:
    """A bundle or minified file (lines of more than 500 characters on average): generated, not written."""
    data = path.read_bytes()
    return len(data) > 500 * (data.count(b"\n") + 1)


# What both sides call a function (prototypes included: the outline lists C and C++ declarations too) or a
# type. Each side's functions and types are looked for among all the other side's symbols, whatever their
# kind (`const f = () => ...` is a function to the outline and a constant to ctags), by name and line.
CALLABLE = {"function", "method", "constructor", "getter", "setter", "generator", "func", "subroutine", "procedure",
            "singletonMethod", "fun", "prototype"}
TYPE = {"class", "struct", "interface", "enum", "trait", "union"}
CTAGS_KINDS = ("--kinds-C=+p", "--kinds-C++=+p")
ANONYMOUS = ("AnonymousFunction", "__anon")  # ctags' names for what has none


@dataclass(frozen=True)
class Tag:
    name: str
    kind: str
    line: int  # the definition's line (ctags: the line of its name; the outline: def_line)
    first: int  # the range the outline gives (ctags: the line alone)
    last: int

    @property
    def counted(self) -> bool:
        return self.kind in CALLABLE or self.kind in TYPE


def ctags_tags(files: Iterable[Path]) -> dict[Path, list[Tag]]:
    """Every tag ctags makes of the files, but its placeholders for anonymous functions and structs."""
    listing = "\n".join(str(path) for path in files) + "\n"
    done = subprocess.run(["ctags", "--output-format=json", "--fields=+nK", *CTAGS_KINDS, "-L", "-", "-o", "-"],
                          input=listing.encode(), capture_output=True, check=False, timeout=600)
    tags: dict[Path, list[Tag]] = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        try:
            tag = json.loads(line)
        except ValueError:
            continue
        if tag.get("_type") == "tag" and "line" in tag and not tag["name"].startswith(ANONYMOUS):
            name = tag["name"].replace(" ", "")  # ctags writes `operator =`, the outline `operator=`
            tags.setdefault(Path(tag["path"]), []).append(Tag(name, tag.get("kind", ""), tag["line"], tag["line"], tag["line"]))
    return tags


def our_tags(path: Path, language: str) -> list[Tag]:
    from shipcode_mcp.workspace.code.outline import outline_source
    from shipcode_mcp.workspace.code.symbols import walk

    text = path.read_bytes().decode("utf-8", "replace")
    return [Tag(symbol.name, symbol.kind, symbol.def_line, symbol.line, symbol.end_line)
            for symbol in walk(outline_source(text, language))]


def matches(ours: Tag, theirs: Tag) -> bool:
    """The same definition: the same name, ctags' line within the outline's range (a C function's name may be a
    line below the start of its definition, the return type's line)."""
    return ours.name == theirs.name and ours.first <= theirs.line <= ours.last


def found_in(wanted: list[Tag], among: list[Tag], wanted_is_ours: bool) -> tuple[list[Tag], list[Tag]]:
    """The counted tags of `wanted` that one of `among` matches (each used once), and those none does."""
    free = list(among)
    hit, miss = [], []
    for tag in (tag for tag in wanted if tag.counted):
        pairs = [other for other in free if (matches(tag, other) if wanted_is_ours else matches(other, tag))]
        if pairs:
            best = min(pairs, key=lambda other: abs(other.line - tag.line))
            free.remove(best)
            hit.append(tag)
        else:
            miss.append(tag)
    return hit, miss


def ctags_agreement(corpora: list[Corpus]) -> dict[str, Any]:
    """Per language: the share of ctags' functions and types that the outline has (any kind, same name, the
    line within its range), and the share of the outline's that ctags has; with examples of each difference."""
    out: dict[str, Any] = {}
    for corpus in corpora:
        theirs = ctags_tags(corpus.files)
        counts: Counter[str] = Counter()
        seconds = 0.0
        examples: list[str] = []
        for path in corpus.files:
            started = time.perf_counter()
            mine = our_tags(path, corpus.language)
            seconds += time.perf_counter() - started
            other = theirs.get(path, [])
            found, lost = found_in(other, mine, wanted_is_ours=False)
            kept, extra = found_in(mine, other, wanted_is_ours=True)
            counts.update(ctags=len(found) + len(lost), ctags_found=len(found), outline=len(kept) + len(extra),
                          outline_found=len(kept))
            examples += [f"ctags only: {path}:{tag.line} {tag.kind} {tag.name}" for tag in lost[:1]]
            examples += [f"outline only: {path}:{tag.line} {tag.kind} {tag.name}" for tag in extra[:1]]
        out[corpus.language] = {
            "files": len(corpus.files), "where": corpus.label, **counts,
            "ctags_found_by_outline": counts["ctags_found"] / counts["ctags"] if counts["ctags"] else 1.0,
            "outline_found_by_ctags": counts["outline_found"] / counts["outline"] if counts["outline"] else 1.0,
            "outline_seconds": seconds, "examples": examples[:40],
        }
    return out


# -- token economy --------------------------------------------------------------------------------------------
@dataclass
class Route:
    """The calls one way of answering made, and the bytes of text they returned."""

    calls: list[str] = field(default_factory=list)
    bytes: int = 0

    def add(self, tool: str, arguments: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(f"{tool} {json.dumps(arguments)}")
        self.bytes += len(text_of(result).encode())
        return result


def regex_name(name: str) -> str:
    return re.escape(name)


def grep_hits(result: dict[str, Any]) -> list[tuple[str, int]]:
    return [(entry["path"], entry["line"]) for entry in result["structuredContent"]["lines"] if entry["match"]]


def read_until(server: Server, route: Route, path: str, line: int, end_line: int, page: int | None) -> str:
    """read_file from `line` until `end_line` has been shown, in pages of `page` lines (None: read_file's own
    default page, the way a model reads a whole file); the text read."""
    text = ""
    offset = line
    while offset <= end_line:
        arguments: dict[str, Any] = {"path": path, "offset": offset}
        if page is not None:
            arguments["limit"] = page
        _, result = server.call("read_file", arguments)
        route.add("read_file", arguments, result)
        text += result["structuredContent"]["text"]
        offset = result["structuredContent"]["end_line"] + 1
    return text


def both_reads(server: Server, grep: Route, path: str, line: int, end_line: int) -> tuple[Route, str, str]:
    """After the searches of `grep`: the careful reading (READ_PAGE-line pages from the line found) goes on
    `grep`, the whole-file reading (from line 1, read_file's default pages) on the route returned."""
    whole = Route(list(grep.calls), grep.bytes)
    shown = read_until(server, grep, path, line, end_line, READ_PAGE)
    whole_text = read_until(server, whole, path, 1, end_line, None)
    return whole, shown, whole_text


def class_range(root: Path, path: str, qualified: str) -> tuple[int, int, list[str]]:
    """Where `ast` puts a class (or a method) and, for a class, its methods' names: the answer both routes must give."""
    items = accuracy.ast_definitions(accuracy.source_text(root / path))
    (item,) = [entry for entry in items if entry.qualified_name == qualified]
    methods = [entry.name for entry in items if entry.qualified_name.startswith(qualified + ".")
               and entry.qualified_name.count(".") == qualified.count(".") + 1]
    return item.line, item.end_line, methods


def economy_task(server: Server, root: Path, task: Task) -> dict[str, Any]:
    """One task both ways; both answers checked against ast (or against rg -w, for callers)."""
    ours, grep = Route(), Route()
    if task.kind == "body":
        cls, method = task.name.split(".")
        arguments: dict[str, Any] = {"name": task.name}
        _, found = server.call("find_symbol", arguments)
        ours.add("find_symbol", arguments, found)
        (item,) = [item for item in symbols_of(found) if item["path"] == task.path]
        arguments = {"path": item["path"], "name": task.name}
        _, body = server.call("read_symbol", arguments)
        ours.add("read_symbol", arguments, body)
        line, end_line, _ = class_range(root, item["path"], task.name)
        expected = "".join(accuracy.source_text(root / item["path"]).splitlines(keepends=True)[line - 1:end_line])
        if expected.strip() not in body["structuredContent"]["text"]:
            raise BenchError(f"read_symbol {task.name}: the body is not in the answer")
        arguments = {"pattern": rf"^class {regex_name(cls)}\b"}
        _, classes = server.call("search_code", arguments)
        (path,) = [path for path, _ in grep_hits(grep.add("search_code", arguments, classes)) if path == task.path]
        arguments = {"pattern": rf"^\s*(async\s+)?def {regex_name(method)}\b", "path": path}
        _, defs = server.call("search_code", arguments)
        hits = grep_hits(grep.add("search_code", arguments, defs))
        start = max(hit_line for _, hit_line in hits if hit_line <= end_line)  # the last def before the end: ours
        whole, shown, whole_text = both_reads(server, grep, path, start, end_line)
        if not all(expected.strip() in text for text in (shown, whole_text)):
            raise BenchError(f"the grep route for {task.name} did not show the body")
    elif task.kind == "methods":
        arguments = {"name": f"{task.name}.*"}  # the class's direct members, wherever it is defined
        _, found = server.call("find_symbol", arguments)
        ours.add("find_symbol", arguments, found)
        path = task.path
        line, end_line, methods = class_range(root, path, task.name)
        listed = [item["name"] for item in symbols_of(found) if item["path"] == path and item["kind"] in DEFINITION_KINDS]
        if sorted(listed) != sorted(methods):
            raise BenchError(f"find_symbol {task.name}.*: {listed}, ast {methods}")
        arguments = {"pattern": rf"^class {regex_name(task.name)}\b"}
        _, classes = server.call("search_code", arguments)
        ((path, start),) = [hit for hit in grep_hits(grep.add("search_code", arguments, classes)) if hit[0] == task.path]
        whole, shown, whole_text = both_reads(server, grep, path, start, end_line)
        missing = [name for name in methods for text in (shown, whole_text) if not re.search(rf"def {re.escape(name)}\b", text)]
        if missing:
            raise BenchError(f"the grep route for {task.name}'s methods missed {missing}")
    elif task.kind == "where":
        arguments = {"name": task.name}
        _, found = server.call("find_symbol", arguments)
        ours.add("find_symbol", arguments, found)
        theirs = {(item["path"], item["def_line"]) for item in symbols_of(found) if item["kind"] in DEFINITION_KINDS}
        arguments = {"pattern": rf"^\s*(class|(async\s+)?def)\s+{regex_name(task.name)}\b"}
        _, defs = server.call("search_code", arguments)
        if set(grep_hits(grep.add("search_code", arguments, defs))) != theirs:
            raise BenchError(f"where is {task.name}: the two routes disagree")
    else:
        arguments = {"name": task.name}
        _, found = server.call("find_references", arguments)
        ours.add("find_references", arguments, found)
        arguments = {"pattern": rf"\b{regex_name(task.name)}\b"}
        _, lines = server.call("search_code", arguments)
        seen = set(grep_hits(grep.add("search_code", arguments, lines)))
        if not {(item["path"], item["line"]) for item in symbols_of(found)} <= seen:
            raise BenchError(f"find_references {task.name}: lines that rg did not find")
    if task.kind in ("where", "callers"):
        whole = grep  # nothing to read: the search's lines are the answer
    return {"kind": task.kind, "name": task.name, "ours": ours.bytes, "grep": grep.bytes, "ratio": grep.bytes / ours.bytes,
            "whole": whole.bytes, "whole_ratio": whole.bytes / ours.bytes,
            "ours_calls": ours.calls, "grep_calls": grep.calls, "whole_calls": whole.calls}


def token_economy(python: str, src: Path, root: Path, cache: Path, settings: Settings) -> dict[str, Any]:
    tasks = []
    with Server(python, src, root, cache, settings.timeout) as server:
        for task in TASKS:
            tasks.append(economy_task(server, root, task))
    def totals(chosen: list[dict[str, Any]]) -> dict[str, Any]:
        ours, grep, whole = (sum(task[key] for task in chosen) for key in ("ours", "grep", "whole"))
        return {"ours": ours, "grep": grep, "ratio": grep / ours, "whole": whole, "whole_ratio": whole / ours}

    by_kind = {kind: totals([task for task in tasks if task["kind"] == kind]) for kind in dict.fromkeys(task["kind"] for task in tasks)}
    return {"tasks": tasks, "by_kind": by_kind, **totals(tasks), "read_page": READ_PAGE}


# -- the report -----------------------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def render(report: dict[str, Any]) -> str:
    lines = [f"{report['date']} · {report['machine']['cpu']}, {report['machine']['cores']} cores · commit "
             f"{report['machine']['commit']} · Python {report['machine']['python']} · {report['rg']} · {report['ctags_version']} · "
             f"load average {report['load_average']['before']} -> {report['load_average']['after']}", ""]
    score = report.get("accuracy")
    if score:
        lines += [f"accuracy, Python outlines against ast on {report['library']} ({score['files']:,} files, "
                  f"{score['lines']:,} lines; {score['skipped']} that ast does not parse left out): "
                  f"{score['expected']:,} definitions, {score['found']:,} found, {score['matched']:,} the same; "
                  f"precision {score['precision']:.3%}, recall {score['recall']:.3%} "
                  f"(outlines in {score['outline_seconds']:.2f} s)",
                  "  differences by file: " + (", ".join(f"{where} {count}" for where, count in score["differences_by_file"].items())
                                               or "none"),
                  *(f"  {line}" for line in score["differences"][:3]), ""]
    big = report.get("outline")
    if big:
        lines += [harness.markdown_table(
            [f"outline of a {big['lines']:,}-line file ({big['bytes'] / 1e3:.0f} kB, {big['top_level_symbols']} top-level symbols)",
             "median"],
            [["through the server, uncached", ms(big["uncached"])], ["through the server, cached", ms(big["cached"])],
             ["outline_source alone, in-process", ms(big["parse"])]]), ""]
    speed = report.get("lookups")
    if speed:
        rows = [[f"{figures['tool']} {figures['name']}", f"{figures['rg_files']} / {figures['rg_lines']}",
                 str(figures["answers"]), ms(figures["rg"]), f"{ms(figures['cold'])} ({figures['cold_ratio']:.2f}x)",
                 f"{ms(figures['warm'])} ({figures['warm_ratio']:.2f}x)"] for figures in speed.values()]
        lines += [harness.markdown_table(["over the library (median)", "rg -w: files / lines", "answers", "rg -n -w NAME",
                                          "cold (÷ rg)", "warm (÷ rg)"], rows), ""]
    recall = report.get("prefilter")
    if recall:
        rows = [[name, str(figures["definitions"]), f"{figures['parsed']} of {figures['parsed_unfiltered']}"]
                for name, figures in recall.items()]
        lines += [harness.markdown_table(["find_symbol prefilter: same answer as without it", "definitions",
                                          "files parsed, of those that mention the name"], rows), ""]
    scanned = report.get("scan")
    if scanned:
        rows = [[name, f"{figures['references']:,}", ms(figures["scan"]), ms(figures["parse"])]
                for name, figures in scanned.items()]
        lines += [harness.markdown_table(["find_references: Python scan against parse, same answer", "uses",
                                          "with the scan (cold, in-process)", "parsing every file"], rows), ""]
    tags = report.get("ctags")
    if tags:
        rows = [[language, str(figures["files"]),
                 f"{figures['ctags_found']:,} of {figures['ctags']:,} ({figures['ctags_found_by_outline']:.1%})",
                 f"{figures['outline_found']:,} of {figures['outline']:,} ({figures['outline_found_by_ctags']:.1%})"]
                for language, figures in tags.items()]
        lines += [harness.markdown_table(["ctags agreement: functions and types", "files", "ctags' found in the outline",
                                          "the outline's found by ctags"], rows)]
        for language, figures in tags.items():
            lines += [f"  {language} ({figures['where']}): {example}" for example in figures["examples"][:4]]
        lines.append("")
    economy = report.get("economy")
    if economy:
        rows = [[f"{task['kind']} {task['name']}", f"{task['ours']:,} B ({len(task['ours_calls'])})",
                 f"{task['whole']:,} B ({len(task['whole_calls'])}): {task['whole_ratio']:.1f}x",
                 f"{task['grep']:,} B ({len(task['grep_calls'])}): {task['ratio']:.1f}x"] for task in economy["tasks"]]
        rows += [[f"all {name}", f"{figures['ours']:,} B", f"{figures['whole']:,} B: {figures['whole_ratio']:.1f}x",
                  f"{figures['grep']:,} B: {figures['ratio']:.1f}x"]
                 for name, figures in [*economy["by_kind"].items(), ("tasks", economy)]]
        lines += [harness.markdown_table(["navigation task: bytes of text returned (calls)", "symbol tools",
                                          "search_code + read_file, whole file: ratio",
                                          f"search_code + read_file, {economy['read_page']}-line pages: ratio"], rows), ""]
    lines.append(harness.markdown_table(["target", "measured", "verdict"],
                                        [[check["target"], check["measured"], "met" if check["met"] else "MISSED"]
                                         for check in report["targets"]]))
    lines += [f"error: {error}" for error in report["errors"]]
    return "\n".join(lines)


def evaluate(report: dict[str, Any]) -> list[dict[str, Any]]:
    checks = []

    def check(target: str, value: float, met: bool, shown: str) -> None:
        checks.append({"target": target, "value": value, "measured": shown, "met": met})

    score = report.get("accuracy")
    if score:
        check("Python precision against ast >= 99.5%", score["precision"], score["precision"] >= 0.995, f"{score['precision']:.3%}")
        check("Python recall against ast >= 99.5%", score["recall"], score["recall"] >= 0.995, f"{score['recall']:.3%}")
    big = report.get("outline")
    if big:
        check(f"outline of {big['lines']:,} lines <= 30 ms (uncached, through the server)", big["uncached"],
              big["uncached"] <= OUTLINE_LIMIT, ms(big["uncached"]))
    for figures in report.get("lookups", {}).values():
        label = f"{figures['tool']} {figures['name']}"
        if figures["tool"] == "find_symbol":
            check(f"{label} cold <= {COLD_LIMIT}x rg -w", figures["cold_ratio"], figures["cold_ratio"] <= COLD_LIMIT,
                  f"{figures['cold_ratio']:.2f}x")
            check(f"{label} warm <= {WARM_LIMIT}x rg -w", figures["warm_ratio"], figures["warm_ratio"] <= WARM_LIMIT,
                  f"{figures['warm_ratio']:.2f}x")
        else:
            check(f"{label} cold <= {REFERENCES_LIMIT}x rg -w", figures["cold_ratio"], figures["cold_ratio"] <= REFERENCES_LIMIT,
                  f"{figures['cold_ratio']:.2f}x")
    economy = report.get("economy")
    if economy:
        check(f"token economy, all tasks, against reading whole files: >= {TOKEN_TARGET}x fewer bytes", economy["whole_ratio"],
              economy["whole_ratio"] >= TOKEN_TARGET, f"{economy['whole_ratio']:.1f}x")
        check(f"token economy, all tasks, against {READ_PAGE}-line pages: >= {TOKEN_TARGET}x fewer bytes", economy["ratio"],
              economy["ratio"] >= TOKEN_TARGET, f"{economy['ratio']:.1f}x")
    return checks


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Code intelligence: accuracy against ast, speed against rg, "
                                     "agreement with ctags, bytes against search_code + read_file")
    parser.add_argument("--smoke", action="store_true", help="a slice of the library, 1 round: proves the bench runs")
    parser.add_argument("--rounds", type=int, help="rounds of each timing (default 5)")
    parser.add_argument("--stdlib", type=Path, default=accuracy.stdlib(), help="the library (default: this interpreter's)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter for the server (default: this one)")
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the shipcode_mcp source tree to measure")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="the library's copy, logs (default .bench-cache/)")
    parser.add_argument("--json", type=Path, help="results file (default CACHE/code_intel.json)")
    parser.add_argument("--only", help="comma-separated phases, of: accuracy,outline,lookups,prefilter,scan,ctags,economy (default: all)")
    return parser.parse_args(argv)


PHASES = ("accuracy", "outline", "lookups", "prefilter", "scan", "ctags", "economy")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = SMOKE if args.smoke else Settings()
    if args.rounds is not None:
        settings = Settings(**{**settings.__dict__, "rounds": args.rounds})
    phases = args.only.split(",") if args.only else list(PHASES)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    cache = args.cache.resolve()
    src = args.src.resolve()
    sys.path.insert(0, str(src))  # the parse-only figures import the tree being measured
    rg = harness.executable_beside(args.python, "rg")
    if rg is None:
        log("rg is not installed")
        return 2
    source = args.stdlib.resolve()
    root = cache / ("cpython-lib-smoke" if args.smoke else "cpython-lib")
    files = copy_library(source, root, settings.every, log)
    report: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": harness.machine(),
        "load_average": {"before": harness.load_average()}, "settings": settings.__dict__, "library": str(source),
        "rg": harness.output_of([rg, "--version"]).split("\n")[0], "errors": [],
        "ctags_version": harness.output_of(["ctags", "--version"]).split(",")[0] or "no ctags",
    }
    work: dict[str, Callable[[], Any]] = {
        "accuracy": lambda: accuracy_figures(root, files),
        "outline": lambda: outline_speed(args.python, src, root, cache, settings),
        "lookups": lambda: lookup_speed(args.python, src, root, files, cache, settings, rg),
        "prefilter": lambda: prefilter_recall(root),
        "scan": lambda: scan_agreement(root),
        "ctags": lambda: ctags_agreement(find_corpora(rg, settings.ctags_files)) if shutil.which("ctags") else {},
        "economy": lambda: token_economy(args.python, src, root, cache, settings),
    }
    for phase in phases:
        log(f"{phase}...")
        try:
            report[phase] = work[phase]()
        except (BenchError, OSError, subprocess.SubprocessError) as err:
            report["errors"].append(f"{phase}: {err}")
            log(f"{phase} failed: {err}")
    report["load_average"]["after"] = harness.load_average()
    report["targets"] = evaluate(report)
    json_path = args.json or cache / ("code_intel_smoke.json" if args.smoke else "code_intel.json")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(render(report))
    return 1 if report["errors"] else 0


def accuracy_figures(root: Path, files: list[str]) -> dict[str, Any]:
    result = accuracy.score((root / name for name in files), root)
    by_file = Counter(where for where, _ in result.missing + result.extra)
    return {**accuracy.summary(result), "differences_by_file": dict(by_file.most_common()),
            "differences": list(accuracy.near_misses(result))[:20]}


if __name__ == "__main__":
    sys.exit(main())
