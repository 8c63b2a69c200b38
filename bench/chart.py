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

OURS = ("shipcode-echo", "shipcode-mcp", "shipcode-echo-default", "shipcode-explicit")
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
    tasks = [task for task in (report.get("tools") or {}).get("tasks", []) if task["ours"] and task["floor"]]
    http = [row for row in (report.get("http") or {}).get("rows", []) if row["floor"]]
    panels = len(PANELS) + (1 if tasks else 0) + (1 if http else 0)
    rows = (panels + 1) // 2
    figure, axes = plt.subplots(rows, 2, figsize=(13, 3.1 * rows + (2.5 if tasks else 0)))
    flat = list(axes.flat)
    for axis, (metric, title, scale, log) in zip(flat, PANELS, strict=False):
        keys = [key for key, s in servers.items() if metric in s["median"]]
        bars(axis, title, [servers[k]["label"] for k in keys], [servers[k]["median"][metric] * scale for k in keys],
             [colour(k) for k in keys], log)
    extra = len(PANELS)
    if tasks:  # each tool task: ours, and each peer, as a multiple of its command-line floor
        labels, values, colours = [], [], []
        for task in tasks:
            labels.append(f"{task['task']}: shipcode-mcp")
            values.append(task["to_floor"])
            colours.append(COLOURS["ours"])
            for peer, figures in task["peers"].items():
                labels.append(f"    {peer}")
                values.append(figures["time"] / task["floor"])
                colours.append(COLOURS["peer"])
        bars(flat[extra], "tools: time ÷ command-line floor (lower is better)", labels, values, colours, False)
        flat[extra].axvline(1, color=COLOURS["floor"], linewidth=1)  # the floor itself
        flat[extra].tick_params(axis="y", labelsize=7)
        extra += 1
    if http:
        labels = [f"{row['mode']}, {row['request']}, {row['concurrency']} clients" for row in http]
        bars(flat[extra], "HTTP: req/s ÷ bare Starlette floor (higher is better)", labels,
             [row["to_floor"] for row in http], [COLOURS["ours"]] * len(http), False)
        flat[extra].tick_params(axis="y", labelsize=7)
    for axis in flat[panels:]:
        axis.set_visible(False)
    host = report["machine"]
    figure.suptitle(f"shipcode-mcp benchmark, {report['date']}: {host['cpu']}, {host['cores']} cores, "
                    f"medians of {report['config']['repetitions']} interleaved rounds", fontsize=11)
    figure.tight_layout()
    figure.savefig(chart_path, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
