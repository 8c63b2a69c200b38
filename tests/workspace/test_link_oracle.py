"""Attack test: `..` after a link inside the root, as an oracle on what lies outside.

The kernel takes a `..` from where a link leads: `door/../../root/a.txt`, with `door` a link to an outside
folder `out/y`, lands back in the root when `out` is a real folder, and elsewhere when `out` is itself a
link, so success or refusal told which. Shown first with the check off (the two answers differ), then
refused alike.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from shipcode_mcp.workspace.roots import OutsideRoots, Roots
from workspace_support import Tools

PROBE = "door/../../root/a.txt"


def _world(base: Path, out_is_a_link: bool) -> Path:
    """base/root/a.txt with root/door -> base/out/y; base/out a folder, or a link to base/elsewhere/deep."""
    root = base / "root"
    root.mkdir(parents=True)
    (root / "a.txt").write_text("inside\n")
    (root / "src").mkdir()
    if out_is_a_link:
        (base / "elsewhere" / "deep" / "y").mkdir(parents=True)
        (base / "out").symlink_to(base / "elsewhere" / "deep")
    else:
        (base / "out" / "y").mkdir(parents=True)
    (root / "door").symlink_to(base / "out" / "y")
    return root


def _answer(root: Path) -> str:
    try:
        return Roots([str(root)]).resolve(PROBE)
    except OutsideRoots as err:
        return str(err)


def test_a_step_back_through_a_link_is_refused_wherever_it_leads(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    plain, linked = _world(tmp_path / "plain", False), _world(tmp_path / "linked", True)
    with monkeypatch.context() as off:
        off.setattr(Roots, "_back_through_a_link", lambda self, candidate: False)
        assert _answer(plain) == str(plain / "a.txt")  # the attack works: a real folder out there...
        assert _answer(linked).startswith("Access denied")  # ...or a link, told apart
    refused = f"Access denied: {PROBE} is not inside the workspace roots"
    assert _answer(plain) == _answer(linked) == refused
    for root in (plain, linked):
        with Tools(root) as tools:
            assert tools.error("read_file", {"path": PROBE}) == refused
            assert tools.text("read_file", {"path": "src/../a.txt"}).endswith("inside")  # no link: as before
    shutil.rmtree(tmp_path / "linked" / "elsewhere")
    assert not os.path.exists(tmp_path / "linked" / "out" / "y")
    assert _answer(linked) == refused  # a dangling link too
