"""locate measured: from a task written by a person to the files, functions and lines a real fix changed.

The instances come from real projects' public history (one repository per language: Python, JavaScript, Go; see
PROJECTS). A commit is an instance when it changes one to three source files of its language (no test, doc or
example file), at most MAX_CHANGED lines, and its message says something once cleaned: the task is the commit's
message (subject and body, pull request numbers and trailers removed) with the changed files' paths and names and
the changed functions' names masked (`[MASK]`), so that no method can find the answer by its name alone. The
tree is the parent commit's (`git archive`); the gold is what the commit changed there: the files, the innermost
definitions holding a changed line (as shipcode's outline reads the parent's files), and the changed lines (a
line inserted counts as the line before it). The commits are taken evenly spaced over each history, newest
first, so no instance is chosen by how a method does on it.

Each method ranks regions of code (a region is a span of lines of one file); the metrics are those of the
localization literature:
- file Acc@k: the share of instances whose gold files are all among the first k distinct files ranked;
- function recall@10: the share of gold functions that are among the first 10 regions (the region is that
  definition, by file and qualified name);
- line recall@300: the share of changed lines within the first 300 lines of the regions, in their order
  (SWE-Explore's measure of what an agent's context holds);
- bytes: what the method hands over (for locate: its whole result at its default budget), and time per query.

The methods, in one run, on the same trees:
- locate: the `locate` tool of a real `shipcode-mcp --no-index` server over pipes (the regions of its
  structuredContent, its default budget, and a second call at 20 000 tokens for the lists);
- BM25 over files (Agentless-style retrieval): each file's whole text, its identifiers split, ranked; regions are
  whole files;
- BM25 over functions: each definition's text (outline's spans), ranked; regions are definitions;
- grep the query's identifiers: files ranked by how many of the query's words (identifiers, 3 letters or more,
  not English stop words) they hold, then by matching lines, as an agent with search_code would; regions are the
  20 lines around each matching line, by file.

    .venv/bin/python bench/localization.py                          # 3 projects, 25 instances each
    .venv/bin/python bench/localization.py --instances 5            # a quick look
    .venv/bin/python bench/localization.py --mirror click=/path/to/click.git   # a local clone instead of GitHub
    .venv/bin/python bench/localization.py --latency-only       # only the latency on the large trees

Latency (the issue's targets: p95 under 300 ms on 10 000 files with a warm index, under 2 s without): the trees of
bench/index_latency.py (the standard library copied until the tree has that many files), a server with its own
index (built first) on 10 000 files and a `--no-index` server on NO_INDEX_FILES (it reads and parses every file each call): the
first call (every file's words counted), each of LATENCY_QUERIES asked a first time (its candidate files read and
split into regions), then ROUNDS rounds of them again; then, on the indexed server, one file written and the first
query after it timed (the files read again are counted again), ROUNDS times.

Each project's history is cloned once under the cache folder (or taken from --mirror). Results:
.bench-cache/localization.json. Standard library only (and the server).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import index_latency as servers  # bench/index_latency.py: the server over pipes
import run as harness  # bench/run.py: machine facts, tables

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Project:
    name: str
    language: str
    url: str
    extensions: tuple[str, ...]
    source: str
    """The folder whose files are the project's own code (tests, docs and examples excluded)."""


PROJECTS = (
    Project("click", "Python", "https://github.com/pallets/click.git", (".py",), "src/click/"),
    Project("express", "JavaScript", "https://github.com/expressjs/express.git", (".js",), "lib/"),
    Project("cobra", "Go", "https://github.com/spf13/cobra.git", (".go",), ""),
)
MAX_CHANGED = 80
"""Lines a commit adds and removes at most: a focused change, as a fix of one issue is."""
SCANNED = 3000
"""Commits looked at per project, newest first."""
LINE_BUDGET = 300
SKIP_SUBJECT = re.compile(r"^(?:merge|release|bump|revert|version|prepare|update (?:changes|changelog|deps|dependenc)|"
                          r"docs?\b|chore|ci\b|style|lint|format|typo|fix typo|spelling|whitespace|\d+\.\d+)", re.I)
TESTS = re.compile(r"(?:^|/)(?:tests?|__tests__|testdata|examples?|docs?|benchmarks?)/|_test\.go$|(?:^|/)test_[^/]*$")
STOP = frozenset("a an and are as at be by for from has have in is it its of on or that the this to was were will "
                 "with when not no if but into than then there which".split())
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True, capture_output=True, text=True,
                          errors="replace", timeout=300).stdout


def history(project: Project, cache: Path, mirrors: dict[str, Path]) -> Path:
    """The project's git history: --mirror's, else a bare clone made once under the cache."""
    if project.name in mirrors:
        return mirrors[project.name]
    target = cache / "localization" / f"{project.name}.git"
    if not (target / "HEAD").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--quiet", "--bare", project.url, str(target)], check=True, timeout=900)
    return target


@dataclass
class Instance:
    project: str
    commit: str
    parent: str
    task: str
    files: list[str]
    lines: dict[str, list[int]]
    functions: list[tuple[str, str]] = field(default_factory=list)


def _own(project: Project, path: str) -> bool:
    return path.endswith(project.extensions) and path.startswith(project.source) and not TESTS.search(path)


def _task(message: str, masked: Iterable[str]) -> str:
    """The commit's message as a task: pull request numbers, trailers and links out, the names masked."""
    lines = [line for line in message.strip().splitlines()
             if not re.match(r"\s*(?:[\w-]+-by|Co-authored-by|Signed-off-by|Closes|Fixes|Refs?|See|PR|cherry picked)"
                             r"\b.*", line, re.I)]
    text = "\n".join(lines)
    text = re.sub(r"\(?#\d+\)?|https?://\S+|\bgh-\d+", "", text)
    for name in sorted(set(masked), key=len, reverse=True):
        if len(name) > 2:
            text = re.sub(rf"(?<![\w$]){re.escape(name)}(?![\w$])", "[MASK]", text, flags=re.I)
    return re.sub(r"[ \t]+(?=\n|$)", "", re.sub(r"[ \t]+", " ", text)).strip()


def _changed_lines(repo: Path, parent: str, commit: str, path: str) -> list[int]:
    """The parent's lines the commit changed (an insertion: the line before it, or 1)."""
    diff = git(repo, "diff", "-U0", parent, commit, "--", path)
    lines: set[int] = set()
    for match in re.finditer(r"^@@ -(\d+)(?:,(\d+))? ", diff, re.M):
        start, count = int(match[1]), int(match[2] if match[2] is not None else 1)
        lines.update(range(start, start + count) if count else [max(start, 1)])
    return sorted(lines)


def mine(project: Project, repo: Path, wanted: int) -> list[Instance]:
    """`wanted` instances of the project's history, evenly spaced over the qualifying commits, newest first."""
    commits = git(repo, "rev-list", "--no-merges", f"--max-count={SCANNED}", "HEAD").split()
    qualifying: list[Instance] = []
    for commit in commits:
        parents = git(repo, "rev-list", "--parents", "-n", "1", commit).split()[1:]
        if len(parents) != 1:
            continue
        numstat = [line.split("\t") for line in git(repo, "show", "--numstat", "--format=", commit).splitlines() if line]
        if not numstat or any(added == "-" for added, _, _ in numstat):
            continue
        own = [path for _, _, path in numstat if _own(project, path)]
        code = [path for _, _, path in numstat if path.endswith(project.extensions) and not TESTS.search(path)]
        changed = sum(int(added) + int(removed) for added, removed, path in numstat if path in own)
        if not 1 <= len(own) <= 3 or len(code) != len(own) or changed > MAX_CHANGED:
            continue
        message = git(repo, "log", "-1", "--format=%B", commit)
        if SKIP_SUBJECT.match(message.strip()):
            continue
        if git(repo, "ls-tree", "--name-only", parents[0], "--", *own).split() != sorted(own):
            continue  # a file the commit creates: nothing in the parent to find
        qualifying.append(Instance(project.name, commit, parents[0], message, own, {}))
    step = max(1, len(qualifying) // max(1, wanted))
    chosen = qualifying[::step]
    instances = []
    for instance in chosen:
        instance.lines = {path: _changed_lines(repo, instance.parent, instance.commit, path) for path in instance.files}
        if not any(instance.lines.values()):
            continue
        instances.append(instance)
    return instances


def extract(repo: Path, commit: str, target: Path) -> None:
    target.mkdir(parents=True)
    archive = subprocess.run(["git", f"--git-dir={repo}", "archive", "--format=tar", commit], check=True,
                             capture_output=True, timeout=300).stdout
    with tempfile.TemporaryFile() as tar:
        tar.write(archive)
        tar.seek(0)
        with tarfile.open(fileobj=tar) as opened:
            opened.extractall(target, filter="data") if sys.version_info >= (3, 12) else opened.extractall(target)


def words(text: str) -> list[str]:
    """The baselines' terms: identifiers split into their lower-cased parts, stop words out."""
    found = []
    for identifier in _IDENTIFIER.findall(text):
        found += [part.lower() for part in _PARTS.findall(identifier) if len(part) > 1 and part.lower() not in STOP]
    return found


def bm25_rank(query: list[str], documents: list[tuple[Any, list[str]]]) -> list[Any]:
    """The documents' keys by BM25 (k1 1.2, b 0.75) of the query's terms, best first (ties: key order)."""
    counted = [(key, Counter(terms)) for key, terms in documents]
    frequency = Counter(term for _, terms in counted for term in terms)
    average = sum(sum(terms.values()) for _, terms in counted) / max(1, len(counted))
    total = len(counted)
    wanted = set(query)
    scores = []
    for key, terms in counted:
        length = sum(terms.values())
        score = 0.0
        for term in wanted:
            count = terms.get(term, 0)
            if count:
                idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += idf * count * 2.2 / (count + 1.2 * (0.25 + 0.75 * length / max(average, 1.0)))
        scores.append((-score, key))
    return [key for score, key in sorted(scores) if score < 0]


Region = tuple[str, int, int, str]
"""A ranked span: path, first and last line, qualified name (empty: not a definition)."""


def score(instance: Instance, regions: list[Region]) -> dict[str, float]:
    """The metrics of one method's regions on one instance."""
    files: list[str] = []
    for path, _, _, _ in regions:
        if path not in files:
            files.append(path)
    gold = set(instance.files)
    figures = {f"acc@{k}": float(gold <= set(files[:k])) for k in (1, 5, 10)}
    top = {(path, name) for path, _, _, name in regions[:10] if name}
    figures["function_recall@10"] = (sum(1 for item in instance.functions if item in top) / len(instance.functions)
                                     if instance.functions else math.nan)
    budget, covered = LINE_BUDGET, set[tuple[str, int]]()
    for path, start, end, _ in regions:
        if budget <= 0:
            break
        end = min(end, start + budget - 1)
        covered.update((path, line) for line in range(start, end + 1))
        budget -= end - start + 1
    changed = {(path, line) for path, lines in instance.lines.items() for line in lines}
    figures["line_recall@300"] = len(changed & covered) / len(changed)
    return figures


class Tree:
    """An instance's tree: its code files' lines and outlines (read through the server's outline tool)."""

    def __init__(self, root: Path, project: Project, server: servers.Server) -> None:
        self.root = root
        self.files: dict[str, list[str]] = {}
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.is_file() and not path.is_symlink() and relative.endswith(project.extensions) and \
                    not any(part.startswith(".") or part in ("node_modules", "vendor") for part in path.parts):
                try:
                    self.files[relative] = path.read_text(encoding="utf-8").split("\n")
                except (OSError, UnicodeDecodeError):
                    continue
        self.outlines: dict[str, list[dict[str, Any]]] = {}
        for relative in self.files:
            _, answer = server.call("outline", {"path": relative})
            self.outlines[relative] = _flat(answer["structuredContent"].get("symbols", []))

    def definitions(self) -> list[Region]:
        return [(path, item["line"], item["end_line"], item["qualified_name"]) for path, items in self.outlines.items()
                for item in items]

    def innermost(self, path: str, line: int) -> str | None:
        holding = [item for item in self.outlines.get(path, []) if item["line"] <= line <= item["end_line"]]
        return min(holding, key=lambda item: item["end_line"] - item["line"])["qualified_name"] if holding else None


def _flat(symbols: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for item in symbols:
        found.append(item)
        found += _flat(item.get("children", []))
    return found


def bm25_files(tree: Tree, task: str) -> list[Region]:
    ranked = bm25_rank(words(task), [(path, words("\n".join(lines) + " " + path)) for path, lines in tree.files.items()])
    return [(path, 1, len(tree.files[path]), "") for path in ranked]


def bm25_functions(tree: Tree, task: str) -> list[Region]:
    spans = tree.definitions()
    ranked = bm25_rank(words(task), [(index, words("\n".join(tree.files[path][start - 1:end])))
                                     for index, (path, start, end, _) in enumerate(spans)])
    return [spans[index] for index in ranked]


def grep_identifiers(tree: Tree, task: str) -> list[Region]:
    wanted = sorted({word for word in _IDENTIFIER.findall(task) if len(word) > 2 and word.lower() not in STOP
                     and word.upper() != "MASK"})
    if not wanted:
        return []
    pattern = re.compile("|".join(rf"\b{re.escape(word)}\b" for word in wanted), re.I)
    hits: list[tuple[int, int, str, list[int]]] = []
    for path, lines in tree.files.items():
        matched = [number for number, line in enumerate(lines, 1) if pattern.search(line)]
        if matched:
            distinct = {found.group(0).lower() for line in lines for found in pattern.finditer(line)}
            hits.append((-len(distinct), -len(matched), path, matched))
    regions: list[Region] = []
    for _, _, path, matched in sorted(hits):
        for number in matched:
            regions.append((path, max(1, number - 10), number + 10, tree.innermost(path, number) or ""))
    return regions


def locate_regions(answer: dict[str, Any]) -> list[Region]:
    return [(item["path"], item["start_line"], item["end_line"], item["symbol"])
            for item in answer["structuredContent"]["regions"]]


METHODS: dict[str, Callable[[Tree, str], list[Region]]] = {
    "BM25 over files": bm25_files, "BM25 over functions": bm25_functions, "grep the identifiers": grep_identifiers}


def measure_project(project: Project, repo: Path, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    instances = mine(project, repo, args.instances)
    log(f"{project.name}: {len(instances)} instances")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in ("locate", *METHODS)}
    examples: list[dict[str, Any]] = []
    for number, instance in enumerate(instances):
        root = work / f"{project.name}-{number}"
        extract(repo, instance.parent, root)
        with servers.Server("locate", ["--no-index"], args.python, args.src, root, args.cache, 300.0) as server:
            tree = Tree(root, project, server)
            instance.functions = sorted({(path, name) for path, lines in instance.lines.items() for line in lines
                                         if (name := tree.innermost(path, line)) is not None})
            masked = [Path(path).stem for path in instance.files] + [path for path in instance.files]
            masked += [name.rsplit(".", 1)[-1] for _, name in instance.functions]
            instance.task = _task(instance.task, masked)
            if len(words(instance.task)) < 4:
                shutil.rmtree(root)
                continue
            took, answer = server.call("locate", {"query": instance.task})
            _, listed = server.call("locate", {"query": instance.task, "budget": 20_000})
            figures = score(instance, locate_regions(listed))
            figures.update(seconds=took, bytes=len(json.dumps(answer, ensure_ascii=False).encode()))
            results["locate"].append(figures)
            for name, method in METHODS.items():
                began = time.perf_counter()
                regions = method(tree, instance.task)
                elapsed = time.perf_counter() - began
                figures = score(instance, regions)
                shown = regions[:1] if name == "BM25 over files" else regions[:10]
                figures.update(seconds=elapsed, bytes=sum(len("\n".join(tree.files[path][start - 1:end]).encode())
                                                          for path, start, end, _ in shown))
                results[name].append(figures)
            if len(examples) < 3:
                examples.append({"commit": instance.commit[:10], "task": instance.task[:300], "gold": instance.files,
                                 "functions": [name for _, name in instance.functions],
                                 "locate": [f"{path}:{start}-{end} {name}" for path, start, end, name in
                                            locate_regions(answer)[:5]]})
        shutil.rmtree(root)
    summary = {name: _mean(rows) for name, rows in results.items()}
    return {"language": project.language, "instances": len(results["locate"]), "methods": summary,
            "examples": examples, "head": git(repo, "rev-parse", "HEAD").strip()}


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    keys = rows[0].keys()
    means = {}
    for key in keys:
        values = [row[key] for row in rows if not math.isnan(row[key])]
        means[key] = sum(values) / len(values) if values else math.nan
    values = sorted(row["seconds"] for row in rows)
    means["p95_seconds"] = values[min(len(values) - 1, math.ceil(0.95 * len(values)) - 1)]
    return means


def render(report: dict[str, Any]) -> str:
    out = [f"localization, {report['date']} ({report['machine'].get('cpu', '')})"]
    latency = report.get("latency")
    if latency:
        rows = [[f"{figures['files']:,}", options, f"{figures['first_call']:.2f} s",
                 f"{figures['first_asks']['p50'] * 1000:.0f} / {figures['first_asks']['p95'] * 1000:.0f} ms",
                 f"{figures['p50'] * 1000:.0f} / {figures['p95'] * 1000:.0f} ms",
                 (f"{figures['after_a_write']['p50'] * 1000:.0f} ms" if "after_a_write" in figures else "-")]
                for options, figures in latency.items() if isinstance(figures, dict)]
        out.append(harness.markdown_table(["files", "index", "first call", "a query's first ask p50 / p95",
                                           "asked again p50 / p95", "first query after a write (p50)"], rows))
        out.append(f"index built in {latency.get('build_seconds', 0):.1f} s")
    for name, project in report["projects"].items():
        out.append(f"\n{name} ({project['language']}, {project['instances']} instances, history at {project['head'][:10]})")
        rows = []
        for method, figures in project["methods"].items():
            if not figures:
                continue
            rows.append([method, *(f"{figures[key]:.2f}" for key in ("acc@1", "acc@5", "acc@10", "function_recall@10",
                                                                        "line_recall@300")),
                         f"{figures['bytes'] / 1000:.1f} KB", f"{figures['seconds'] * 1000:.0f} ms",
                         f"{figures['p95_seconds'] * 1000:.0f} ms"])
        out.append(harness.markdown_table(["method", "file Acc@1", "Acc@5", "Acc@10", "function R@10", "line R@300",
                                           "bytes", "time", "p95"], rows))
    return "\n".join(out)


LATENCY_QUERIES = (
    "the json decoder raises an error on a trailing comma after the last item of an object",
    "parsing the charset parameter of an email message's content type header fails when it is quoted",
    "Traceback (most recent call last):\n  File \"/usr/lib/python3/argparse.py\", line 2010, in _parse_known_args\n"
    "ValueError: invalid choice",
    "`urlsplit` keeps the fragment when the url has no scheme",
    "the thread pool executor hangs on shutdown when a worker raised",
)
ROUNDS = 5
NO_INDEX_FILES = 1_000
"""The tree a `--no-index` server is asked on: without the index every call reads and parses every file (as repo_map
does), which at 5 000 files takes most of a minute a call."""


def measure_latency(args: argparse.Namespace) -> dict[str, Any]:
    """locate's latency on the large trees: warm index at 10 000 files, no index at 5 000, after a write."""
    report: dict[str, Any] = {}
    for size, options in ((10_000, "index"), (NO_INDEX_FILES, "no index")):
        root = args.cache / f"index-tree-{size}"
        servers.make_tree(args.stdlib, size, root, log)
        index_dir = args.cache / "localization-db" / str(size)
        shutil.rmtree(index_dir, ignore_errors=True)
        flags = ["--index-dir", str(index_dir)] if options == "index" else ["--no-index"]
        with servers.Server(options, flags, args.python, args.src, root, args.cache, 900.0) as server:
            if options == "index":
                build, _ = servers.measure_build(server, servers.Checks(log), 900.0)
                report["build_seconds"] = build["ready"]
            took, _ = server.call("locate", {"query": "a first question"})  # the words of every file counted
            firsts = []
            for query in LATENCY_QUERIES:  # each query's first ask: its candidate files read and split
                elapsed, first = server.call("locate", {"query": query})
                firsts.append(elapsed)
                if servers.structured(first)["index"] != ("fresh" if options == "index" else "off"):
                    raise harness.BenchError(f"{size} files: locate answered with index "
                                             f"{servers.structured(first)['index']}")
            times = [server.call("locate", {"query": query})[0] for _ in range(ROUNDS) for query in LATENCY_QUERIES]
            figures: dict[str, Any] = {"files": size, "first_call": took, "first_asks": servers.spread(firsts),
                                       **servers.spread(times)}
            if options == "index":
                changed = root / "c000" / "locate_bench_probe.py"
                after = []
                for round_number in range(ROUNDS):
                    changed.write_text(f"def probe_{round_number}():\n    return {round_number}\n")
                    after.append(server.call("locate", {"query": LATENCY_QUERIES[0]})[0])
                changed.unlink()
                figures["after_a_write"] = servers.spread(after)
            report[options] = figures
            log(f"{size} files, {options}: p50 {figures['p50'] * 1000:.0f} ms, p95 {figures['p95'] * 1000:.0f} ms")
    return report


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=25, help="instances per project (default 25)")
    parser.add_argument("--projects", default=",".join(project.name for project in PROJECTS))
    parser.add_argument("--mirror", action="append", default=[], help="NAME=PATH of a local git history")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--src", type=Path, default=REPO / "src")
    parser.add_argument("--cache", type=Path, default=REPO / ".bench-cache")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--stdlib", type=Path, default=None, help="the library the latency trees copy (default: "
                        "this interpreter's)")
    parser.add_argument("--latency-only", action="store_true", help="only the latency on the large trees")
    parser.add_argument("--no-latency", action="store_true", help="only the localization metrics")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mirrors = {name: Path(path) for name, path in (item.split("=", 1) for item in args.mirror)}
    report: dict[str, Any] = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                              "machine": harness.machine(), "settings": {"instances": args.instances,
                                                                         "max_changed": MAX_CHANGED}, "projects": {}}
    args.cache = args.cache.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)
    args.stdlib = (args.stdlib or servers.accuracy.stdlib()).resolve()
    if not args.no_latency:
        report["latency"] = measure_latency(args)
    with tempfile.TemporaryDirectory(prefix="localization-") as work:
        for project in PROJECTS:
            if project.name in args.projects.split(",") and not args.latency_only:
                report["projects"][project.name] = measure_project(project, history(project, args.cache, mirrors),
                                                                   args, Path(work))
    path = args.json or args.cache / "localization.json"
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
