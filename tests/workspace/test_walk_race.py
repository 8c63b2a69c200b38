"""The swap race: a folder exchanged with a symlink to the outside while rg walks the root.

rg enters subfolders by path, so a folder swapped for a link (renameat2 RENAME_EXCHANGE in a tight
loop) between listing its parent and opening it leads a plain rg outside. The test first shows that
plain rg does leak outside names and contents under the race, then that list_files, search_code and
resources/list never do: in the kernel sandbox rg cannot read anything outside the roots. A plain rg that
never wins the race within PROOF_SECONDS (a loaded machine) makes the test a skip once the tools held, not
a failure: the control lost its race, and says so.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shipcode_mcp.workspace.listing import rg_executable
from workspace_support import Tools

PROOF_SECONDS = 30.0
"""How long plain rg gets to show the leak (it shows within a few hundred calls: about a second)."""
CALLS = 150
"""Calls of each tool under the race: several times the calls plain rg needs to leak."""
SWAPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(os.path.join(sys.argv[1], name)) for name in ("d", "x"))
while libc.renameat2(-100, a, -100, b, 2) == 0:  # AT_FDCWD, RENAME_EXCHANGE
    pass
"""
"""Exchange ROOT/d (a folder) and ROOT/x (a link to the outside) as fast as possible, until killed."""


@pytest.fixture
def race(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A root whose folder d is swapped with a link to an outside folder, until the test ends."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    secret = secrets.token_hex(12)
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    for index in range(50):
        (root / "d" / f"inside{index:02}.txt").write_text("needle inside\n")
        (outside / f"{secret}-{index:02}.txt").write_text(f"needle {secret}\n")
    (root / "x").symlink_to(outside)
    (root / ".ignore").write_text("x\n")  # the link's own name is not walked; only the swap can lead outside
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root)])
    try:
        yield root, secret
        assert swapper.poll() is None, "the swapper stopped: the tools did not run under the race"
    finally:
        swapper.terminate()
        swapper.wait(10)


def test_plain_rg_leaks_under_the_race_and_our_tools_never_do(race: tuple[Path, str]) -> None:
    root, secret = race
    leaks = calls = 0
    deadline = time.monotonic() + PROOF_SECONDS
    while not leaks and time.monotonic() < deadline:
        for argv in ([rg_executable(), "--files", "--hidden", "--no-config"],
                     [rg_executable(), "--hidden", "--no-config", "needle"]):
            done = subprocess.run(argv, cwd=root, capture_output=True, check=False, timeout=30)
            calls += 1
            leaks += secret.encode() in done.stdout

    seen = 0
    with Tools(root) as tools:
        for _ in range(CALLS):
            for name, arguments in (("list_files", {}), ("search_code", {"pattern": "needle"})):
                result = tools.process.call_tool(name, arguments, 30)
                assert secret not in str(result), (name, result)
                seen += "inside" in str(result)
            listed = tools.process.request("resources/list")
            assert secret not in str(listed), listed
    # The tools kept working: about half the calls find the folder in place (the other half find the link,
    # which leads nowhere they can read, while the folder is under the ignored name).
    assert seen >= CALLS // 4, seen
    if not leaks:  # the defence held, but the control lost its race: say so rather than fail on a loaded machine
        pytest.skip(f"plain rg never left the root in {calls} calls ({PROOF_SECONDS:.0f} s, load "
                    f"{os.getloadavg()[0]:.1f}): the race was not won, so the defence held untried")
