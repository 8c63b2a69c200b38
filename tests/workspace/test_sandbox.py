"""The kernel sandbox of every child process, tried directly: each attack first works without it.

A child made by `process.run` may read beneath the paths it is given (and system libraries), and
nothing else; it writes nothing, runs no other program, connects nowhere and signals no one outside
its own domain. Its memory is bounded: a search that would take gigabytes stops with a clear error.
"""

from __future__ import annotations

import ctypes
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from landlockpy import Ruleset

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import sandbox
from shipcode_mcp.workspace.listing import rg_executable
from shipcode_mcp.workspace.process import run
from support import TreeSampler, wait_for
from workspace_support import Tools, context

BASH = shutil.which("bash") or "/bin/bash"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, str]:
    """A root with a file, and an outside folder holding a random secret."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "inside.txt").write_text("inside needle\n")
    secret = secrets.token_hex(16)
    (outside / "secret.txt").write_text(f"needle {secret}\n")
    return root, outside, secret


def test_this_machine_has_the_sandbox() -> None:
    """CI runs on a kernel with Landlock: if this fails, every attack test below would be meaningless."""
    assert sandbox.unavailable_reason() is None
    assert sandbox.abi() >= 4  # TCP rules; signal and abstract-socket scoping come with ABI 6


def test_a_child_cannot_read_outside_even_when_asked_directly(places: tuple[Path, Path, str]) -> None:
    root, outside, secret = places
    argv = [rg_executable(), "--no-config", "needle", str(outside / "secret.txt"), str(outside), "inside.txt"]
    plain = subprocess.run(argv, cwd=root, capture_output=True, check=False)
    assert secret.encode() in plain.stdout  # the attack works without the sandbox
    done = run(context(), argv, cwd=str(root), readable=[str(root)], limit=1 << 20)
    assert secret not in done.stdout.decode() + done.stderr
    assert done.stdout == b"inside.txt:inside needle\n"  # what is inside is still read
    assert "Permission denied" in done.stderr
    listing = run(context(), [rg_executable(), "--files", str(outside)], cwd=str(root), readable=[str(root)], limit=1 << 20)
    assert b"secret" not in listing.stdout and listing.returncode == 2


def test_a_link_inside_the_root_to_the_outside_leads_nowhere(places: tuple[Path, Path, str]) -> None:
    root, outside, secret = places
    (root / "door").symlink_to(outside)
    argv = [rg_executable(), "--no-config", "--follow", "needle"]
    assert secret.encode() in subprocess.run(argv, cwd=root, capture_output=True, check=False).stdout
    done = run(context(), argv, cwd=str(root), readable=[str(root)], limit=1 << 20)
    assert secret not in done.stdout.decode() and b"inside needle" in done.stdout


def test_a_child_writes_nothing_and_runs_no_other_program(places: tuple[Path, Path, str]) -> None:
    root, outside, _ = places
    canary, written = outside / "canary", root / "written.txt"
    script = f"/usr/bin/touch {canary}; echo data > {written}"
    subprocess.run([BASH, "-c", script], check=True)
    assert canary.exists() and written.exists()  # the attack works without the sandbox
    canary.unlink()
    written.unlink()
    done = run(context(), [BASH, "-c", script], cwd=str(root), readable=[str(root)], limit=1 << 20)
    assert not canary.exists() and not written.exists()
    assert "Permission denied" in done.stderr
    # Not even through an interpreter the child could start itself with: only its own binary runs.
    done = run(context(), [BASH, "-c", f"{sys.executable} -c 'open(\"{canary}\", \"w\")'"], cwd=str(root),
               readable=[str(root)], limit=1 << 20)
    assert not canary.exists() and done.returncode != 0


def test_a_child_connects_nowhere() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        server.settimeout(5)
        port = server.getsockname()[1]
        script = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        plain = subprocess.run([BASH, "-c", script], capture_output=True, check=False, timeout=10)
        assert plain.stdout == b"connected\n"  # the attack works without the sandbox
        server.accept()[0].close()
        done = run(context(), [BASH, "-c", script], cwd="/", readable=[], limit=1 << 20)
        assert done.stdout == b"" and "Permission denied" in done.stderr
        server.setblocking(False)  # a connection the child made would be queued by now, accepted or not
        with pytest.raises(BlockingIOError):
            server.accept()


def test_a_child_signals_no_process_outside_its_domain() -> None:
    """The victim prints each signal it gets: what it prints, not a pause, tells whether the child's arrived."""
    if sandbox.abi() < 6:
        pytest.skip("signal scoping needs Landlock ABI 6")
    script = ("import signal, sys\n"
              "for number in (signal.SIGUSR1, signal.SIGUSR2):\n"
              "    signal.signal(number, lambda got, frame: print(signal.Signals(got).name, flush=True))\n"
              "print('ready', flush=True)\n"
              "sys.stdin.read()\n")
    victim = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert victim.stdout is not None
    try:
        assert victim.stdout.readline() == "ready\n"
        subprocess.run([BASH, "-c", f"kill -USR1 {victim.pid}"], check=True)
        assert victim.stdout.readline() == "SIGUSR1\n"  # the attack works without the sandbox
        done = run(context(), [BASH, "-c", f"kill -USR1 {victim.pid} && echo reached"], cwd="/", readable=[], limit=1 << 20)
        assert done.stdout == b"" and "not permitted" in done.stderr
        victim.send_signal(signal.SIGUSR2)  # ours arrives, and is the first the victim got since the plain one
        assert victim.stdout.readline() == "SIGUSR2\n"
    finally:
        victim.kill()
        victim.wait()


def test_a_child_that_cannot_get_its_rules_never_starts(tmp_path: Path) -> None:
    """A readable path that is gone cannot become a rule: the child does not start with less confinement."""
    with pytest.raises(ToolError, match="Could not prepare the sandbox of bash"):
        run(context(), [BASH, "-c", "true"], cwd="/", readable=[str(tmp_path / "gone")], limit=10)


def test_the_interpreter_is_found_as_the_loader_reports_it() -> None:
    ldd = subprocess.run(["ldd", rg_executable()], capture_output=True, text=True, check=True).stdout
    named = [line.split()[0] for line in ldd.splitlines() if line.strip().startswith("/") and "=>" not in line]
    assert named and sandbox.elf_interpreter(rg_executable()) == os.path.realpath(named[0])
    assert sandbox.elf_interpreter(__file__) is None


@pytest.mark.measures
def test_a_search_that_would_take_gigabytes_stops_with_a_clear_error(tmp_path: Path) -> None:
    """One 100 MB line of a frequent character: rg's JSON of its matches grows past 4 GiB when nothing
    bounds it. In its sandbox it stops at its limit and the tool says so; the machine never notices."""
    root = tmp_path / "root"
    root.mkdir()
    with open(root / "huge.txt", "wb") as huge:
        huge.write(b"a" * 100_000_000 + b"\n")
    unbounded = 4096 * 1024 * 1024
    plain = subprocess.run([rg_executable(), "--no-config", "--json", "a"], cwd=root, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, check=False, timeout=120,
                           preexec_fn=lambda: __import__("resource").setrlimit(
                               __import__("resource").RLIMIT_AS, (unbounded, unbounded)))
    assert plain.returncode != 0 and b"memory allocation" in plain.stderr  # it needs more than 4 GiB
    with Tools(root) as tools:
        with TreeSampler(tools.process.proc.pid) as sampler:
            message = tools.error("search_code", {"pattern": "a"})
        peak = sampler.peak
        assert message.startswith("search stopped: it reached its memory limit")
        assert peak < sandbox.CHILD_LIMITS.address_space + 512 * 1024 * 1024, peak
        assert tools.data("search_code", {"pattern": "^a{3}"})["match_count"] == 1  # the server is fine



# -- rulesets kept for later children ----------------------------------------------------------------
def _reads(root: Path, *paths: Path) -> str:
    """What a sandboxed bash allowed to read beneath `root` prints of `paths` (and its complaints)."""
    script = " ".join(f"read -r line < {path} && echo \"$line\";" for path in paths)  # no other program runs
    done = run(context(), [BASH, "-c", script], cwd="/",
               readable=[str(root)], limit=1 << 20)
    return done.stdout.decode() + done.stderr


def _root_with_kept_ruleset(tmp_path: Path) -> tuple[Path, Path, str]:
    """A root holding a secret, a folder outside it, and the secret: read once by a child, so that the
    ruleset for this root is kept from here on."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    secret = secrets.token_hex(16)
    (root / "secret.txt").write_text(f"{secret}\n")
    assert secret in _reads(root, root / "secret.txt")
    return root, outside, secret


@pytest.mark.parametrize("defended", [False, True])
def test_a_root_replaced_by_another_folder_gets_a_new_ruleset(tmp_path: Path, defended: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A Landlock rule holds the folder it was added on, wherever that folder goes. A root renamed away (to
    the outside) and made again: a ruleset kept from before would still let a child read the old folder,
    now outside, and not the new one. Without the identity check (every path the same to it) the attack
    works; with it, the child gets a ruleset for what the path names now."""
    if not defended:  # every path the same to it: a look at a path, and the file each rule was added on
        made = sandbox._ruleset
        monkeypatch.setattr(sandbox, "_identity", lambda path, follow=True: None)
        monkeypatch.setattr(sandbox, "_ruleset", lambda rules: (made(rules)[0], (None,) * len(rules)))
    root, outside, secret = _root_with_kept_ruleset(tmp_path)
    (root).rename(outside / "moved")
    root.mkdir()
    (root / "new.txt").write_text("new\n")
    text = _reads(root, outside / "moved" / "secret.txt", root / "new.txt")
    if not defended:
        assert secret in text and "new\n" not in text  # the kept ruleset follows the folder outside
    else:
        assert secret not in text and "Permission denied" in text and "new\n" in text


def test_a_kept_ruleset_is_used_again_and_closed_only_once_no_child_needs_it(tmp_path: Path) -> None:
    """The same rules on the same folders: the same ruleset, which a child's close() leaves open for the next.
    Pushed out of the bounded cache while a child not started yet holds it, it stays open until that child
    lets go."""
    first = sandbox.confine(BASH, [str(tmp_path)])
    second = sandbox.confine(BASH, [str(tmp_path)])
    fd = first.ruleset_fd
    assert fd is not None and fd == second.ruleset_fd
    assert os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[landlock-ruleset]"
    second.close()
    second.close()  # a second close releases nothing more
    for number in range(sandbox.MAX_KEPT_RULESETS):  # others push it out of the cache
        folder = tmp_path / f"other{number}"
        folder.mkdir()
        other = sandbox.confine(BASH, [str(folder)])
        assert other.ruleset_fd != fd
        other.close()
    assert os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[landlock-ruleset]"  # still held by `first`
    ruleset = first._ruleset
    assert ruleset is not None and not ruleset.closed
    first.close()
    assert ruleset.closed
    third = sandbox.confine(BASH, [str(tmp_path)])  # made again
    assert third.ruleset_fd is not None
    third.close()


TRIALS = 100
"""Rounds of swapping, each ended by a child started while nothing moves."""
RACE_SECONDS = 20.0
"""How long the rounds go on at most (without the defence, the first round leaks)."""
WON_RACES = 40
"""Rulesets made across a swap that the defence must hold through (rounds stop there)."""
_SWAPPER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
first, second = sys.argv[1].encode(), sys.argv[2].encode()
while True:
    if libc.renameat2(-100, first, -100, second, 2) != 0:  # RENAME_EXCHANGE: each path always names a folder
        sys.exit(ctypes.get_errno())
"""
_LIBC = ctypes.CDLL(None, use_errno=True)


def _exchange(first: Path, second: Path) -> None:
    """The two folders trade places at once (RENAME_EXCHANGE): each path always names a folder."""
    if _LIBC.renameat2(-100, os.fsencode(first), -100, os.fsencode(second), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as file:
        return file.read().rpartition(")")[2].split()[0] == "T"


@pytest.mark.parametrize("defended", [False, True])
def test_a_root_swapped_while_its_rules_are_made_never_leaves_a_kept_ruleset_on_the_other_folder(
        tmp_path: Path, defended: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule holds what the path named when the rule was added. Another process swaps the root with a folder
    outside, again and again, while rulesets are made: with the identities taken before the rules are added
    (a stat of each path, then the rules), a ruleset can be kept as if on the root while its rule is on the
    other folder; once the swapping stops, with the root back where it was looked at, a later child gets that
    ruleset and reads the folder outside. The identity of a rule is that of the very file it was added on
    (the descriptor the rule is made from): a kept ruleset is then never used for a path naming something
    else.

    The race is won, not hoped for: each ruleset is made again until the swapper has moved the root between
    the look and the rules (within 0.2 s), with and without the defence, and the root is put back where the
    round's last ruleset looked at it. Without the defence the first round leaks (6 of 6 at load 10 to 14);
    should a loaded machine not let the swapper win within RACE_SECONDS, the control is skipped saying so
    (never failed: it lost its race, the attack is no less real), and so is a defended run that never met
    a won race."""
    made = sandbox._ruleset
    looks: list[tuple[tuple[int, int] | None, ...]] = []  # what the paths of each ruleset named when looked at
    won = 0  # rulesets whose rule is on another folder than the one looked at: the race won

    def swapped_meanwhile(rules: tuple[sandbox.Rule, ...]) -> tuple[Ruleset, tuple[tuple[int, int] | None, ...]]:
        nonlocal won
        deadline = time.monotonic() + 0.2
        while True:  # made again until the swapper moved the root between the look and the rules, within 0.2 s
            looked = tuple(sandbox._identity(path) for path, _, _ in rules)
            until = time.monotonic() + 0.01
            while looked == tuple(sandbox._identity(path) for path, _, _ in rules) and time.monotonic() < until:
                os.sched_yield()
            ruleset, identities = made(rules)
            if identities != looked or time.monotonic() > deadline:
                break
            ruleset.close()
        looks.append(looked)
        won += identities != looked
        return ruleset, identities if defended else looked  # without the defence: the look's identities kept

    monkeypatch.setattr(sandbox, "_ruleset", swapped_meanwhile)
    root, outside = tmp_path / "root", tmp_path / "outside"
    for folder in (root, outside):
        folder.mkdir()
        (folder / "mark.txt").write_text(f"{secrets.token_hex(16)}\n")
    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(root), str(outside)])
    leaked: list[str] = []
    rounds, deadline = 0, time.monotonic() + RACE_SECONDS
    try:
        while rounds < TRIALS and not leaked and won < WON_RACES and time.monotonic() < deadline:
            rounds += 1
            looks.clear()
            for _ in range(20):  # rulesets made while the two folders trade places
                try:
                    sandbox.confine(BASH, [str(root)]).close()
                except OSError:
                    pass
            os.kill(swapper.pid, signal.SIGSTOP)
            wait_for(lambda: _stopped(swapper.pid), 10, "the swapper to stop")
            assert swapper.poll() is None
            if looks and sandbox._identity(str(root)) != looks[-1][0]:  # the root's rule comes first
                _exchange(root, outside)  # the root back where the kept ruleset looked at it
            inside, beyond = ((folder / "mark.txt").read_text() for folder in (root, outside))
            text = _reads(root, root / "mark.txt", outside / "mark.txt")
            assert inside in text or not defended  # the folder the root names now is read
            if beyond in text:
                leaked.append(text)
            os.kill(swapper.pid, signal.SIGCONT)
    finally:
        swapper.kill()
        swapper.wait()
    if defended:
        assert not leaked, leaked
    if not (leaked or (won and defended)):
        pytest.skip(f"the race was not won in {rounds} rounds ({won} rulesets made across a swap, load "
                    f"{os.getloadavg()[0]:.1f}): {'the defence held, untried' if defended else 'the control'} "
                    "proves nothing this time")


@pytest.mark.parametrize("defended", [False, True])
def test_a_readable_file_that_became_a_link_gives_no_rule_on_what_it_leads_to(
        places: tuple[Path, Path, str], defended: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files a caller names besides the roots (the ignore and attributes files above a root, in a larger
    repository whose contents may be hostile) were found as regular files, never links (`walk_readable`);
    swapped for a link to a file outside before the rules are made, a rule added through the link would be
    on that outside file, and the child could read it by its own path. A path the caller names is opened
    without following a link at its end, and one that is a link is refused: the child never starts."""
    if not defended:
        monkeypatch.setattr(sandbox, "_HERE", 0)
    root, outside, secret = places
    above = root.parent / ".gitattributes"
    above.symlink_to(outside / "secret.txt")  # a regular file when it was looked at, a link now
    argv = [BASH, "-c", f"read -r line < {outside / 'secret.txt'} && echo \"$line\""]
    if not defended:
        done = run(context(), argv, cwd="/", readable=[str(root), str(above)], limit=1 << 20)
        assert secret in done.stdout.decode()  # the rule went through the link, to the file outside
    else:
        with pytest.raises(ToolError, match="sandbox") as refused:
            run(context(), argv, cwd="/", readable=[str(root), str(above)], limit=1 << 20)
        assert secret not in str(refused.value)
        with pytest.raises(OSError):
            sandbox.confine(BASH, [str(root), str(above)])
    assert "inside" in run(context(), [BASH, "-c", f"read -r line < {root / 'inside.txt'} && echo $line"], cwd="/",
                           readable=[str(root)], limit=1 << 20).stdout.decode()


def test_kept_rulesets_taken_and_released_by_threads_at_once_are_never_closed_while_held(tmp_path: Path) -> None:
    """Threads take and release rulesets at once, more kinds than are kept (each push-out while others hold
    it): a ruleset held is never closed (its descriptor could be another file's by the time it is sent), and
    every one no longer kept is closed once released (no descriptor lost)."""
    folders = [tmp_path / f"root{number}" for number in range(sandbox.MAX_KEPT_RULESETS + 8)]
    for folder in folders:
        folder.mkdir()
    seen: dict[int, Ruleset] = {}
    problems: list[str] = []

    def work(seed: int) -> None:
        chosen = random.Random(seed)
        for _ in range(150):
            held = [sandbox.confine(BASH, [str(chosen.choice(folders))]) for _ in range(chosen.randint(1, 3))]
            for confined in held:
                ruleset = confined._ruleset
                if ruleset is None or ruleset.closed:
                    problems.append("a ruleset closed while a child held it")
                else:
                    seen[id(ruleset)] = ruleset
            for confined in held:
                confined.close()

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not problems
    kept = {id(entry.ruleset) for entry in sandbox._kept.values()}
    assert len(seen) > sandbox.MAX_KEPT_RULESETS  # some were pushed out
    assert all(ruleset.closed for key, ruleset in seen.items() if key not in kept)
    assert all(entry.users == 0 for entry in sandbox._kept.values())


@pytest.mark.parametrize("defended", [False, True])
def test_a_root_replaced_by_a_link_to_itself_moved_outside_gets_no_kept_ruleset(
        tmp_path: Path, defended: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The root renamed away, outside, and a link to it put in its place: looked at through the link, the path
    names the very folder the kept ruleset's rule is on, and a child would go on reading it outside. A
    path the caller names is looked at as it is opened for its rule, without following a link at its end:
    it names something else now, and a new ruleset is made, which refuses the link (the child never starts)."""
    if not defended:
        looked = sandbox._identity  # every path followed to what it leads to
        monkeypatch.setattr(sandbox, "_identity", lambda path, follow=True: looked(path, True))
    root, outside, secret = _root_with_kept_ruleset(tmp_path)
    root.rename(outside / "moved")
    root.symlink_to(outside / "moved")
    if not defended:
        assert secret in _reads(root, outside / "moved" / "secret.txt")  # the kept ruleset, on the folder outside
    else:
        with pytest.raises(ToolError, match="sandbox"):
            _reads(root, outside / "moved" / "secret.txt")
