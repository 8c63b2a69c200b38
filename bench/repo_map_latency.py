"""repo_map measured: how fast it answers from a warm code index on trees of real code of 1 000 and 10 000 files
(the target: under 1 s at 10 000 files), what it costs without the index (a `--no-index` server reads and parses
every file; it maps at most 5 000), and that every map keeps its budget to the token.

The trees are bench/index_latency.py's (the running interpreter's standard library copied into numbered folders
c000, c001... until the tree has exactly that many files), made once under the cache folder. For each size, a real
`shipcode-mcp` server over pipes with a fresh `--index-dir` (and `--max-result-tokens 0`, so the map's own budget is
the only one): the index is built (find_symbol polled until it answers from the index, as index_latency does),
then repo_map of the whole tree at each of BUDGETS, ROUNDS times, rounds interleaved, after one untimed call of
each (shown apart: the first read of the index). Where the tree is within the scan's bound, a `--no-index` server
maps it too, in the same rounds.

Every map is checked: `index` is "fresh" (or "off" for the scan), its estimated tokens (the UTF-8 bytes of the text
and of the structuredContent as compact JSON, over 3: what the server's budget counts) are at most the budget, a
larger budget shows every definition a smaller one shows, and the scan's map is the index's (files, definitions
and counts). A failed check is printed loudly and the run exits 1.

    .venv/bin/python bench/repo_map_latency.py                  # 1 000 and 10 000 files, 10 rounds
    .venv/bin/python bench/repo_map_latency.py --sizes 100000   # a larger tree (1.8 GB of disk)
    .venv/bin/python bench/repo_map_latency.py --smoke          # 1 000 files, 2 rounds: under a minute

Results: .bench-cache/repo_map_latency.json (repo_map_latency_smoke.json for --smoke). Standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import index_latency as trees  # bench/index_latency.py: the trees, the server, the build
import run as harness  # bench/run.py: percentiles, tables, machine facts
from run import BenchError

BUDGETS = (2_000, 20_000)
"""The tool's default budget and its largest."""
SCAN_BOUND = 5_000
"""repo_map maps at most this many files without the index (tools.MAX_MAP_SCANNED)."""
BYTES_PER_TOKEN = 3


@dataclass
class Settings:
    sizes: tuple[int, ...] = (1_000, 10_000)
    rounds: int = 10
    timeout: float = 3600.0


SMOKE = Settings(sizes=(1_000,), rounds=2, timeout=50.0)


def tokens(result: dict[str, Any]) -> int:
    """The tokens the server's budget counts of a result (budget.py's estimate)."""
    text = trees.text_of(result).encode("utf-8", "surrogatepass")
    data = json.dumps(result["structuredContent"], ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return -(-(len(text) + len(data)) // BYTES_PER_TOKEN)


def shown(result: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(item["path"], symbol["qualified_name"], symbol["line"]) for item in trees.structured(result)["files"]
            for symbol in item["symbols"]]


class Checks:
    """What every map must hold; each failure is printed at once and kept."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.failures: list[str] = []
        self.maps = 0

    def fail(self, message: str) -> None:
        self.failures.append(message)
        self.log(f"!!! {message}")

    def map(self, result: dict[str, Any], budget: int, state: str, what: str) -> None:
        self.maps += 1
        data = trees.structured(result)
        if data.get("index") != state:
            self.fail(f"{what}: index {data.get('index')!r}, not {state!r}")
        if tokens(result) > budget:
            self.fail(f"{what}: {tokens(result)} tokens, over its budget of {budget}")
        if not data["files"]:
            self.fail(f"{what}: an empty map")

    def same(self, ours: dict[str, Any], theirs: dict[str, Any], what: str) -> None:
        """The index's map and the scan's show one ranking: the one has what the other has and at most a definition
        (with its class) more, their notes differing by a few bytes (`"index": "fresh"` or `"off"`)."""
        mine, other = trees.structured(ours), trees.structured(theirs)
        for key in ("definitions", "code_files", "truncated", "skipped"):
            if mine[key] != other[key]:
                self.fail(f"{what}: {key} differs between the index's map and the scan's")
        small, large = sorted(([(item["path"], item["used_by"], symbol) for item in data["files"]
                                for symbol in item["symbols"]] for data in (mine, other)), key=len)
        if not all(item in large for item in small) or len(large) - len(small) > 2:
            self.fail(f"{what}: the index's map and the scan's show different definitions")


def measure_size(size: int, args: argparse.Namespace, settings: Settings, checks: Checks,
                 log: Callable[[str], None]) -> dict[str, Any]:
    cache: Path = args.cache
    root = cache / f"index-tree-{size}"
    trees.make_tree(args.stdlib, size, root, log)
    index_dir = cache / "repo-map-db" / str(size)
    shutil.rmtree(index_dir, ignore_errors=True)
    common = (args.python, args.src, root, cache, settings.timeout)
    uncapped = ["--max-result-tokens", "0"]
    report: dict[str, Any] = {"files": size, "tree": str(root)}
    scanning = size <= SCAN_BOUND
    with trees.Server("index", ["--index-dir", str(index_dir), *uncapped], *common) as indexed:
        scan = trees.Server("scan", ["--no-index", *uncapped], *common) if scanning else None
        try:
            log(f"{size:,} files: the build...")
            build, _ = trees.measure_build(indexed, trees.Checks(log), settings.timeout)
            build.pop("poll_answer")
            report["build"] = {key: build[key] for key in ("how", "ready", "cpu", "build_files")}
            servers = [("index", indexed, "fresh")] + ([("scan", scan, "off")] if scan is not None else [])
            first: dict[str, dict[str, float]] = {}
            for key, server, state in servers:
                for budget in BUDGETS:
                    elapsed, result = server.call("repo_map", {"budget": budget})
                    checks.map(result, budget, state, f"{size} files, {key}, budget {budget}, the first call")
                    first.setdefault(key, {})[str(budget)] = elapsed
            report["first_call"] = first
            times: dict[str, dict[str, list[float]]] = {key: {str(b): [] for b in BUDGETS} for key, _, _ in servers}
            log(f"  {settings.rounds} rounds...")
            for round_number in range(settings.rounds):
                maps: dict[tuple[str, int], dict[str, Any]] = {}
                order = servers[round_number % len(servers):] + servers[:round_number % len(servers)]
                for key, server, state in order:
                    for budget in BUDGETS:
                        elapsed, result = server.call("repo_map", {"budget": budget})
                        checks.map(result, budget, state, f"{size} files, {key}, budget {budget}")
                        times[key][str(budget)].append(elapsed)
                        maps[(key, budget)] = result
                small, large = (set(shown(maps[("index", budget)])) for budget in BUDGETS)
                if not small <= large:
                    checks.fail(f"{size} files: the larger budget's map leaves out what the smaller one shows")
                if scan is not None:
                    for budget in BUDGETS:
                        checks.same(maps[("index", budget)], maps[("scan", budget)], f"{size} files, budget {budget}")
            last = maps[("index", BUDGETS[0])]
            data = trees.structured(last)
            report.update(definitions=data["definitions"], code_files=data["code_files"],
                          shown={str(budget): trees.structured(maps[("index", budget)])["shown"] for budget in BUDGETS},
                          tokens={str(budget): tokens(maps[("index", budget)]) for budget in BUDGETS},
                          top=[f"{item['path']}: {', '.join(s['qualified_name'] for s in item['symbols'][:3])}"
                               for item in data["files"][:5]],
                          times={key: {budget: trees.spread(values) for budget, values in by_budget.items()}
                                 for key, by_budget in times.items()})
        finally:
            if scan is not None:
                scan.close()
    return report


def render(report: dict[str, Any]) -> str:
    rows = []
    for size, figures in report["sizes"].items():
        times = figures["times"]
        for budget in map(str, BUDGETS):
            index, scan = times["index"][budget], times.get("scan", {}).get(budget)
            rows.append([f"{int(size):,}", budget, f"{figures['definitions']:,}", str(figures["shown"][budget]),
                         f"{figures['tokens'][budget]:,}", trees.ms(figures["first_call"]["index"][budget]),
                         f"{trees.ms(index['p50'])} / {trees.ms(index['p95'])}",
                         f"{trees.ms(scan['p50'])} / {trees.ms(scan['p95'])}" if scan else "(over 5 000 files)",
                         f"{scan['p50'] / index['p50']:.0f}x" if scan else "-"])
    table = harness.markdown_table(["files", "budget", "definitions", "shown", "tokens", "first call",
                                    "index p50 / p95", "no index p50 / p95", "ratio"], rows)
    machine = report["machine"]
    lines = [f"repo_map, {report['date']}, {machine['cpu']}, {machine['cores']} cores, commit {machine['commit']}, "
             f"{report['settings']['rounds']} rounds", "", table, ""]
    for size, figures in report["sizes"].items():
        lines.append(f"{int(size):,} files, build {figures['build']['ready']:.1f} s; first files of the map:")
        lines += [f"  {line}" for line in figures["top"]]
    lines.append(f"{report['maps']} maps checked, {len(report['failures'])} failed checks")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="repo_map: warm latency from the code index, the cost without it, "
                                     "the budget kept")
    trees.tree_arguments(parser, "1000,10000", "", "repo_map_latency.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = trees.chosen(args, Settings(), SMOKE)
    log = trees.log
    checks = Checks(log)
    report: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": harness.machine(),
        "load_average": {"before": harness.load_average()}, "settings": {**settings.__dict__, "budgets": BUDGETS},
        "src_digest": trees.src_digest(args.src), "sizes": {}, "errors": [],
    }
    for size in settings.sizes:
        try:
            report["sizes"][str(size)] = measure_size(size, args, settings, checks, log)
        except (BenchError, OSError, subprocess.SubprocessError) as err:
            report["errors"].append(f"{size} files: {err}")
            log(f"{size} files failed: {err}")
    report["load_average"]["after"] = harness.load_average()
    report.update(maps=checks.maps, failures=checks.failures)
    json_path = args.json or args.cache / ("repo_map_latency_smoke.json" if args.smoke else "repo_map_latency.json")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    if report["sizes"]:
        print(render(report))
    return 1 if report["errors"] or checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
