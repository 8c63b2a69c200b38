"""Cold start of one command against several source trees, interleaved: is a start-up change worth it?

    .venv/bin/python bench/start_ab.py --src before=/tmp/a/src --src after=src -- .venv/bin/python -m shipcode_mcp /tmp

Each round starts the command once per tree (PYTHONPATH set to it), in an order rotated every round,
and times spawn to initialize response, as bench/run.py does (`--baseline PYTHON`: also `PYTHON -c
'import json'`, to its exit, the yardstick of the cold-start targets). It prints each tree's median and
the median of its paired differences with the first tree's starts of the same rounds, which holds up
better than the medians on a busy machine. Make each tree with `git archive COMMIT src | tar -x -C DIR`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

import run as harness  # bench/run.py: the environment servers run in, the initialize request


def cold_start(command: list[str], src: str) -> float:
    started = time.perf_counter()
    if not src:  # the baseline
        subprocess.run(command, env=harness.clean_environment(), check=True)
        return time.perf_counter() - started
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env={**harness.clean_environment(), "PYTHONPATH": src})
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(harness.INITIALIZE)
    child.stdin.flush()
    line = child.stdout.readline()
    elapsed = time.perf_counter() - started
    child.stdin.close()
    child.wait()
    if b'"result"' not in line:
        raise harness.BenchError(f"no initialize result from {src}: {line[:200]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", action="append", required=True, metavar="NAME=DIR", help="a source tree (two or more)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--baseline", metavar="PYTHON", help="also time PYTHON -c 'import json'")
    parser.add_argument("command", nargs="+", help="the server command, after --")
    args = parser.parse_args()
    trees = [(name, [*args.command], src) for name, src in (spec.split("=", 1) for spec in args.src)]
    if args.baseline:
        trees.append(("import json", [args.baseline, "-c", "import json"], ""))
    times: dict[str, list[float]] = {name: [] for name, _, _ in trees}
    for _, command, src in trees:
        cold_start(command, src)  # bytecode written, files in the page cache: every start is a second start
    for round_ in range(args.rounds):
        for name, command, src in trees[round_ % len(trees):] + trees[:round_ % len(trees)]:
            times[name].append(cold_start(command, src))
    first = times[trees[0][0]]
    for name, samples in times.items():
        paired = statistics.median(ours - theirs for ours, theirs in zip(samples, first, strict=True))
        print(f"{name:>12}: median {statistics.median(samples) * 1e3:6.2f} ms, "
              f"paired difference with {trees[0][0]} {paired * 1e3:+6.2f} ms ({args.rounds} rounds)")


if __name__ == "__main__":
    main()
