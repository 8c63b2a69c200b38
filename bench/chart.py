"""Draw the benchmark's bar chart from its JSON results: `python bench/chart.py RESULTS.json CHART.png`.

Run by bench/run.py with matplotlib from a cache venv, so the driver itself stays standard-library
only. Throughput and latency span two orders of magnitude between servers, hence log scales there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

OURS = ("shipcode-echo", "shipcode-mcp", "shipcode-explicit")
COLOURS = {"ours": "#1f77b4", "floor": "#7f7f7f", "python": "#bdbdbd", "peer": "#ff7f0e"}

# (metric, title, scale to the unit shown, log scale)
PANELS = (
    ("cold_start", "cold start, ms (lower is better)", 1e3, True),
    ("ping_rps", "pipelined pings per second (higher is better)", 1, True),
    ("call_rps", "pipelined tools/call per second (higher is better)", 1, True),
    ("latency_p50", "ping latency p50, µs (lower is better)", 1e6, True),
    ("rss_rest", "RSS at rest, MiB (lower is better)", 1 / 2**20, False),
)


def colour(key: str) -> str:
    return COLOURS["ours"] if key in OURS else COLOURS.get(key, COLOURS["peer"])


def bars(axis: Any, title: str, labels: list[str], values: list[float], colours: list[str], log: bool) -> None:
    positions = range(len(values))
    axis.barh(positions, values, color=colours)
    axis.set_yticks(list(positions), labels)
    axis.invert_yaxis()
    axis.set_title(title, fontsize=10)
    if log:
        axis.set_xscale("log")
    for position, value in zip(positions, values, strict=True):
        axis.text(value, position, f" {value:,.3g}" if value < 1000 else f" {value:,.0f}", va="center", fontsize=8)
    axis.margins(x=0.25)


def main(results_path: str, chart_path: str) -> None:
    report = json.loads(Path(results_path).read_text())
    servers = {key: s for key, s in report["servers"].items() if not s["unavailable"]}
    workspace = report.get("workspace") or {}
    panels = len(PANELS) + (1 if workspace.get("search_code") or workspace.get("list_files") else 0)
    rows = (panels + 1) // 2
    figure, axes = plt.subplots(rows, 2, figsize=(13, 3.1 * rows))
    flat = list(axes.flat)
    for axis, (metric, title, scale, log) in zip(flat, PANELS, strict=False):
        keys = [key for key, s in servers.items() if metric in s["median"]]
        bars(axis, title, [servers[k]["label"] for k in keys], [servers[k]["median"][metric] * scale for k in keys],
             [colour(k) for k in keys], log)
    if panels > len(PANELS):
        labels, values, colours = [], [], []
        for tool, alone in (("search_code", "rg"), ("list_files", "rg --files")):
            figures = workspace.get(tool)
            if figures:
                labels += [f"{tool} via shipcode-mcp", alone]
                values += [figures["ours"] * 1e3, figures["rg"] * 1e3]
                colours += [COLOURS["ours"], COLOURS["floor"]]
        bars(flat[len(PANELS)], f"workspace of {workspace.get('files', 0):,} files, ms (lower is better)",
             labels, values, colours, False)
    for axis in flat[panels:]:
        axis.set_visible(False)
    host = report["machine"]
    figure.suptitle(f"shipcode-mcp benchmark, {report['date']}: {host['cpu']}, {host['cores']} cores, "
                    f"medians of {report['config']['repetitions']} interleaved rounds", fontsize=11)
    figure.tight_layout()
    figure.savefig(chart_path, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
