"""The report: the issue's targets from one run's figures, the printed tables, the chart."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .driver import BENCH, SHUTDOWN_CALLS, BenchError, markdown_table
from .http import http_table
from .protocol import ERA_LIMIT, ERA_PAIRS, KILLED, METRICS, Metric
from .servers import TOOLS_PINS, ensure_venv


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


OURS = ("shipcode-echo", "shipcode-mcp")


def evaluate(servers: dict[str, Any], tools: dict[str, Any], http: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each from figures of this run; `met` is None when it could not be measured."""
    checks: list[dict[str, Any]] = []

    def check(name: str, server: str, measured: float | None, limit: float, at_most: bool = True) -> None:
        met = None if measured is None else measured <= limit if at_most else measured >= limit
        checks.append({"target": name, "server": server, "measured": measured, "limit": limit, "met": met})

    def med(key: str, metric: str) -> float | None:
        value = servers.get(key, {}).get("median", {}).get(metric)
        return float(value) if value is not None else None

    for key in OURS:
        if key not in servers or servers[key]["unavailable"]:
            continue
        check("cold start <= 1.5x python -c 'import json'", key, ratio(med(key, "cold_start"), med("python", "cold_start")), 1.5)
        check("ping throughput >= 0.7x floor", key, ratio(med(key, "ping_rps"), med("floor", "ping_rps")), 0.7, at_most=False)
        if key == "shipcode-echo":
            check("tools/call throughput >= 0.7x floor", key, ratio(med(key, "call_rps"), med("floor", "call_rps")), 0.7, at_most=False)
        check("p50 latency <= 1.3x floor", key, ratio(med(key, "latency_p50"), med("floor", "latency_p50")), 1.3)
        check("RSS at rest <= 1.5x floor", key, ratio(med(key, "rss_rest"), med("floor", "rss_rest")), 1.5)
        check("peak RSS, 20 000 pipelined pings <= 2x own RSS at rest", key, ratio(med(key, "rss_peak"), med(key, "rss_rest")), 2.0)
        if key == "shipcode-echo":
            answered, status = med(key, "shutdown_answered"), med(key, "shutdown_exit")
            check("shutdown: 10 of 10 answered", key, answered, SHUTDOWN_CALLS, at_most=False)
            check("shutdown: exit status 0", key, status, 0)
    for key, server in servers.items():
        if server["unavailable"] or not server.get("modern"):
            continue
        for pair in ERA_PAIRS[:2]:
            check(f"modern tools/call <= {ERA_LIMIT}x legacy ({pair.label.split(', ')[1]})", key,
                  med(key, f"era_{pair.key}_cost"), ERA_LIMIT)
    for task in tools.get("tasks", []):
        if task["floor_limit"] is not None:
            check(f"{task['task']} <= {task['floor_limit']}x `{task['floor_command']}`", "shipcode-mcp", task["to_floor"],
                  task["floor_limit"])
        if task["peer_limit"] is not None:
            for peer, figures in task["peers"].items():
                check(f"{task['task']} <= {task['peer_limit']}x {peer}", "shipcode-mcp", figures["ours_to_peer"], task["peer_limit"])
    paging = tools.get("resources_list")
    if tools:
        check("resources/list, all pages: per-file cost at 100k <= 1.3x at 10k", "shipcode-mcp",
              paging["growth"] if paging else None, 1.3)
    for check_ in http.get("targets", []):
        checks.append(check_)
    return checks


NONE = "-"  # a figure that does not apply or was not measured


def format_value(metric: Metric, value: float) -> str:
    if metric.key == "shutdown_exit":
        return "killed" if value == KILLED else f"{value:.0f}"
    if metric.key == "shutdown_answered":
        return f"{value:.0f}/{SHUTDOWN_CALLS}"
    scaled = value * metric.scale
    if metric.unit == "req/s":
        return f"{scaled:,.0f}/s"
    digits = 0 if scaled >= 100 else 1 if scaled >= 10 else 2
    return f"{scaled:.{digits}f} {metric.unit}"


def results_table(servers: dict[str, Any]) -> str:
    """Rows are metrics, columns servers; each cell is the median and its ratio to the floor."""
    keys = [key for key, server in servers.items() if not server["unavailable"]]
    header = ["median of the rounds (ratio to floor)", *(servers[key]["label"] for key in keys)]
    rows = []
    for metric in METRICS:
        row = [metric.label]
        for key in keys:
            value = servers[key]["median"].get(metric.key)
            share = servers[key]["ratio_to_floor"].get(metric.key)
            cell = NONE if value is None else format_value(metric, value)
            if share is not None and key != "floor":
                cell += f" ({share:.2f}x)"
            row.append(cell)
        if any(cell != NONE for cell in row[1:]):
            rows.append(row)
    base = servers.get("python", {}).get("median", {}).get("cold_start")
    if base:
        rows.insert(1, ["cold start ÷ python -c 'import json'", *(
            f"{servers[key]['median']['cold_start'] / base:.2f}x" if "cold_start" in servers[key]["median"] else NONE
            for key in keys)])
    return markdown_table(header, rows)


def era_table(server: dict[str, Any]) -> str:
    """Modern against legacy in one process: medians per side, and the median of the rounds' paired ratios."""
    rows = []
    for pair in ERA_PAIRS:
        for suffix, what in (("", "p50 round trip" if not pair.pipelined else "wall time per request"),
                             ("_cpu", "server CPU per request")):
            legacy = server["median"].get(f"era_{pair.key}{suffix}_legacy")
            modern = server["median"].get(f"era_{pair.key}{suffix}_modern")
            cost = server["median"].get(f"era_{pair.key}{suffix}_cost")
            if legacy is None or modern is None or cost is None:
                continue
            target = f" (target <= {ERA_LIMIT}x)" if pair.key.startswith("call") and not suffix else ""
            rows.append([f"{pair.label}: {what}", f"{legacy * 1e6:.1f} µs", f"{modern * 1e6:.1f} µs", f"{cost:.2f}x{target}"])
    header = [f"{server['label']}: 2026-07-28 vs 2025-06-18 (median)", "legacy", "modern",
              "modern ÷ legacy (median of rounds)"]
    return markdown_table(header, rows)


def targets_table(checks: list[dict[str, Any]]) -> str:
    rows = []
    for check in checks:
        measured = check["measured"]
        if measured is None:
            shown = "not measured"
        else:
            shown = f"{measured:.0f}" if check["limit"] in (0, SHUTDOWN_CALLS) else f"{measured:.2f}"
        verdict = {True: "met", False: "MISSED", None: NONE}[check["met"]]
        rows.append([check["target"], check["server"], shown, verdict])
    return markdown_table(["target", "server", "measured", "verdict"], rows)


def ms(seconds: float | None) -> str:
    return NONE if seconds is None else f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def tools_table(tools: dict[str, Any]) -> str:
    """Per task: ours, the floor and each peer (medians), ours ÷ floor and ours ÷ peer from the same rounds."""
    rows = []
    for task in tools["tasks"]:
        to_floor = NONE if task["to_floor"] is None else f"{task['to_floor']:.2f}x"
        if task["floor_limit"] is not None and task["to_floor"] is not None:
            to_floor += f" (<= {task['floor_limit']})"
        peers = "; ".join(f"{peer} {ms(figures['time'])}, ours ÷ it {figures['ours_to_peer']:.2f}x"
                          for peer, figures in task["peers"].items() if figures["ours_to_peer"] is not None) or NONE
        rows.append([task["task"], ms(task["ours"]), f"`{task['floor_command']}` {ms(task['floor'])}", to_floor, peers])
    table = markdown_table(["tool task (median)", "shipcode-mcp", "floor", "ours ÷ floor", "peer"], rows)
    trees = tools.get("memory")
    if trees:
        def mib(value: int) -> str:
            return f"{value / 2**20:.1f} MiB"

        cells = [[key, f"{figures['at_rest']['processes']} / {figures['after']['processes']}",
                  mib(figures["at_rest"]["pss"]), mib(figures["after"]["pss"]), mib(figures["after"]["peak"])]
                 for key, figures in trees.items()]
        table += "\n\n" + markdown_table(["our server's process tree (its workspace)", "processes, at rest / after",
                                          "PSS at rest", "PSS after every round", "peak (sum of each VmHWM)"], cells)
    paging = tools.get("resources_list")
    if paging:
        cells = [[f"resources/list, every page, {int(size):,} files", ms(paging["time"][size]),
                  f"{paging['per_file'][size] * 1e6:.1f} µs per file"] for size in paging["time"]]
        table += "\n\n" + markdown_table(["paging (median)", "all pages", "per file"], cells)
        table += f"\nper-file cost, largest ÷ smaller tree: {paging['growth']:.2f}x (target <= {paging['limit']})"
    return table


def render(report: dict[str, Any]) -> str:
    """The printed report: where and when, the table, the workspace figures, the targets, the failures."""
    host = report["machine"]
    lines = [
        f"{report['date']} · {host['cpu']}, {host['cores']} cores, {host['memory_gib']} GiB · {host['system']} · "
        f"commit {host['commit']} · load average {report['load_average']['before']} -> {report['load_average']['after']}",
        "versions: " + "; ".join(f"{s['label']}: {s['version']}" for s in report["servers"].values() if s["version"]),
        "",
        results_table(report["servers"]),
    ]
    if report["tools"].get("tasks"):
        versions = report["tools"]["versions"]
        lines += ["", "tools' peers and floors: " + "; ".join(f"{key}: {value}" for key, value in versions.items()),
                  tools_table(report["tools"])]
    lines += [f"tools: {error}" for error in report["tools"].get("errors", [])]
    if report["http"].get("rows"):
        lines += ["", http_table(report["http"])]
    lines += [f"http: {error}" for error in report["http"].get("errors", [])]
    for server in report["servers"].values():
        if any(key.startswith("era_") for key in server["median"]):
            lines += ["", era_table(server)]
    lines += ["", targets_table(report["targets"])]
    for key, server in report["servers"].items():
        if server["unavailable"]:
            lines.append(f"{key}: not measured: {server['unavailable']}")
        lines += [f"{key}: {error}" for error in server["errors"]]
    return "\n".join(lines)


def draw_chart(json_path: Path, chart_path: Path, cache: Path, log: Callable[[str], None]) -> None:
    """bench/chart.py draws it with matplotlib from a cache venv: this driver stays standard-library only."""
    try:
        python = ensure_venv(cache, TOOLS_PINS, log)
    except (BenchError, OSError, subprocess.SubprocessError) as err:
        log(f"no chart: {err}")
        return
    done = subprocess.run([str(python), str(BENCH / "chart.py"), str(json_path), str(chart_path)], check=False)
    if done.returncode == 0:
        log(f"chart: {chart_path}")
