"""Measures of the tools: each tool through MCP beside its command-line floor and its peers, on one workspace."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .driver import BenchError, Child, Config, Samples, Target, executable_beside, median, output_of, stderr_log, timed_call, timed_command
from .servers import cli_command, our_env
from .workspaces import NEEDLE, NEEDLE_FILES, TREE_FILES, make_tree


def same_search(ours: dict[str, Any], rg_output: bytes) -> None:
    """search_code found exactly the lines `rg -n` printed."""
    found = {(entry["path"], entry["line"]) for entry in ours["lines"] if entry["match"]}
    expected = set()
    for line in rg_output.decode().splitlines():
        path, number, _ = line.split(":", 2)
        expected.add((path, int(number)))
    if found != expected or ours["truncated"]:
        raise BenchError(f"search_code found {len(found)} matches, rg {len(expected)}")


def same_listing(ours: dict[str, Any], rg_output: bytes) -> None:
    """list_files counted the files `rg --files` printed, and shows the first of them in order."""
    expected = sorted(rg_output.decode().splitlines())
    if ours["total"] != len(expected) or ours["files"] != expected[:len(ours["files"])]:
        raise BenchError(f"list_files has {ours['total']} files, rg --files {len(expected)}")


def workspace_figures(python: str, src: Path, cache: Path, config: Config, log: Callable[[str], None]) -> dict[str, Any]:
    """search_code and list_files through a running shipcode-mcp against rg alone, on the generated tree.

    The server is started once, as a client would have it; each round times rg and the tool call
    (alternating which goes first), after an untimed round that fills the page cache for both.
    """
    root = cache / "tree"
    size = make_tree(root, cache / "tree.recipe", log)
    rg = executable_beside(python, "rg")
    if rg is None:
        return {"errors": ["rg is not installed"]}
    target = Target("shipcode-mcp", "shipcode-mcp (CLI)", [*cli_command(python), str(root)], env=our_env(src))
    cases = (
        ("search_code", {"pattern": NEEDLE}, [rg, "-n", NEEDLE], same_search),
        ("list_files", {}, [rg, "--files"], same_listing),
    )
    times: dict[str, dict[str, list[float]]] = {tool: {"ours": [], "rg": []} for tool, *_ in cases}
    samples = Samples()
    child = Child(target, stderr_log(cache, target))
    try:
        child.arm(config.timeout)
        child.initialize(samples)
        for round_number in range(config.repetitions + 1):
            for tool, arguments, command, same in cases:
                runs = [("rg", lambda command=command: timed_command(command, root)),
                        ("ours", lambda tool=tool, arguments=arguments: timed_call(child, samples, tool, arguments))]
                outputs: dict[str, Any] = {}
                for who, run in runs if round_number % 2 else runs[::-1]:
                    elapsed, outputs[who] = run()
                    if round_number:  # round 0 only warms the page cache
                        times[tool][who].append(elapsed)
                same(outputs["ours"], outputs["rg"])
        child.close(config.shutdown_timeout)
    except (BenchError, OSError, subprocess.SubprocessError) as err:
        log(f"workspace figures failed: {err}")
        return {"errors": [str(err)]}
    finally:
        child.kill()
    out: dict[str, Any] = {"files": TREE_FILES, "bytes": size, "pattern": NEEDLE, "matches": NEEDLE_FILES,
                           "rg": output_of([rg, "--version"]).splitlines()[0], "errors": []}
    for tool, figures in times.items():
        ours, alone = median(figures["ours"]), median(figures["rg"])
        out[tool] = {"ours": ours, "rg": alone, "ratio": ours / alone, "samples": figures}
    return out
