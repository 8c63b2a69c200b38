"""One command: `python bench/run.py [options]` runs everything and writes the JSON, the tables and the chart."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any

from .driver import DEFAULT_CACHE, REPO, SMOKE, Config, load_average, machine
from .http import http_figures
from .protocol import run_rounds, summary
from .report import draw_chart, evaluate, render
from .servers import ALL_KEYS, PEER_KEYS, make_targets
from .tools import tool_figures


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark shipcode-mcp against the floor, the official SDK, fastmcp "
                                     "and the Node reference server, over stdio; prints one table and writes JSON and a chart.")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny counts, our server and the floor only, no chart: proves the benchmark works, measures nothing")
    defaults = Config()
    for name, help_text in (("repetitions", "interleaved rounds"), ("starts", "cold starts per server per round"),
                            ("pings", "pipelined pings per round"), ("calls", "pipelined tools/call per round"),
                            ("latency", "sequential pings per round")):
        parser.add_argument(f"--{name}", type=int, help=f"{help_text} (default {getattr(defaults, name)})")
    parser.add_argument("--servers", help=f"comma-separated, of: {','.join(ALL_KEYS)} (default: all)")
    parser.add_argument("--no-peers", action="store_true", help="leave out the SDK, fastmcp and the Node server")
    parser.add_argument("--no-install", action="store_true", help="use only the peers already in the cache")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for our servers, the floor and the baseline (default: this one)")
    parser.add_argument("--src", type=Path, default=REPO / "src",
                        help="the shipcode_mcp source tree to measure (default: this checkout's src/)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="peers, logs and the generated tree (default .bench-cache/)")
    parser.add_argument("--json", type=Path, help="results file (default docs/benchmark.json; with --smoke, in the cache)")
    parser.add_argument("--chart", type=Path, help="bar chart PNG (default docs/benchmark.png; none with --smoke)")
    parser.add_argument("--no-chart", action="store_true")
    parser.add_argument("--no-tools", action="store_true", help="skip the tools against their floors and peers")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP figures (floor, ours, the SDK, memory per session)")
    return parser.parse_args(argv)


def config_from(args: argparse.Namespace) -> Config:
    config = SMOKE if args.smoke else Config()
    overrides = {name: getattr(args, name) for name in ("repetitions", "starts", "pings", "calls", "latency")
                 if getattr(args, name) is not None}
    return Config(**{**config.__dict__, **overrides})


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()  # the report's `seconds`: the whole run, installs and workspaces included
    args = parse_args(argv)
    config = config_from(args)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.servers:
        wanted = set(args.servers.split(","))
        unknown = wanted - set(ALL_KEYS)
        if unknown:
            log(f"unknown server(s): {', '.join(sorted(unknown))}")
            return 2
    else:
        wanted = set(ALL_KEYS) - (set(PEER_KEYS) | {"shipcode-mcp", "shipcode-echo-default", "shipcode-explicit"} if args.smoke else set())
    if args.no_peers:
        wanted -= set(PEER_KEYS)
    cache = args.cache.resolve()
    (cache / "logs").mkdir(parents=True, exist_ok=True)
    for old in (cache / "logs").glob("*.stderr"):
        old.unlink()
    json_path = args.json or (cache / "smoke.json" if args.smoke else REPO / "docs" / "benchmark.json")
    chart_path = None if args.no_chart or (args.smoke and args.chart is None) else args.chart or REPO / "docs" / "benchmark.png"

    targets = make_targets(args.python, args.src.resolve(), cache, wanted, not args.no_install, log)
    for target in targets:
        if target.unavailable:
            log(f"{target.key}: left out: {target.unavailable}")
    load_before = load_average()
    started = datetime.datetime.now(datetime.timezone.utc)
    results = run_rounds(targets, config, cache, log)
    servers = summary(targets, results)
    tools: dict[str, Any] = {}
    if not args.smoke and not args.no_tools and "shipcode-mcp" in wanted:
        tools = tool_figures(args.python, args.src.resolve(), cache, config, log, peers=not args.no_peers,
                             install=not args.no_install)
    http: dict[str, Any] = {}
    if not args.smoke and not args.no_http and "shipcode-mcp" in wanted:
        http = http_figures(args.python, args.src.resolve(), cache, config, log, peers=not args.no_peers,
                            install=not args.no_install)
    report = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(), "config": config.__dict__,
        "load_average": {"before": load_before, "after": load_average()},
        "servers": servers, "tools": tools, "http": http, "targets": evaluate(servers, tools, http),
        "seconds": round(time.monotonic() - began, 1),
    }
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(render(report))
    if chart_path is not None:
        draw_chart(json_path, chart_path, cache, log)
    failed = [key for key, server in servers.items() if server["errors"] and key not in PEER_KEYS]
    return 1 if failed or tools.get("errors") or http.get("errors") else 0
