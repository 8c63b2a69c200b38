"""Limits on a command's whole process tree (run_command): its memory and number of processes, in a cgroup of its
own where the server may make one, else per process (setrlimit).

A cgroup bounds the sum: a test suite that forks 40 workers of 200 MB, or a fork bomb, stops at the limit as a whole
(`reached` says which limit it met). cgroup v1 (a hierarchy per controller, as in many containers) and v2 (one
tree; the server's cgroup must let it enable the pids and memory controllers below it) both work. Where neither
lets the server make a child cgroup, each process is held alone (RLIMIT_DATA for memory, RLIMIT_NPROC for processes,
which a root server is exempt from): `missing()` says so, at start.
"""

from __future__ import annotations

import os
import resource
import secrets
import signal
import time

MIB = 1024 * 1024
MEMORY = 4096 * MIB
"""The memory of a command's whole tree (what it allocates, its tmpfs files and the page cache it fills: the
cgroup charges them all, and reclaims the cache before it kills)."""
PROCESSES = 512
"""Processes (and threads) of a command's tree at once."""
FILE_SIZE = 4096 * MIB
OPEN_FILES = 4096
MOUNTS = "/proc/self/mountinfo"
EMPTIED_POLL = 0.001
"""How often `close` tries again to remove a cgroup its last processes are still leaving (the kernel frees an exited
task's hold on it a moment later, usually within a millisecond or two)."""


def _own_cgroups() -> dict[str, str]:
    """The server's cgroup folder per controller ("pids", "memory"; "" for v2's single tree), where the hierarchy is
    mounted (/proc/self/mountinfo: v1 hierarchies may hold several controllers, and be mounted anywhere)."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as lines:
            membership = [line.rstrip("\n").split(":", 2) for line in lines]
        with open(MOUNTS, encoding="utf-8") as lines:
            mounts = [line.split() for line in lines]
    except OSError:
        return {}
    own = {controllers: path for _, controllers, path in (entry for entry in membership if len(entry) == 3)}
    found: dict[str, str] = {}
    for fields in mounts:
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if len(fields) < dash + 4 or len(fields) < 5:
            continue
        kind, options = fields[dash + 1], fields[dash + 3].split(",")
        mount_root, mount_point = _unescaped(fields[3]), _unescaped(fields[4])
        if kind == "cgroup2":
            key, path = "", own.get("")
        elif kind == "cgroup":
            wanted = [option for option in options if option in ("pids", "memory")]
            key, path = (wanted[0] if len(wanted) == 1 else ""), next(
                (path for controllers, path in own.items() if set(wanted) <= set(controllers.split(",")) and wanted),
                None)
            if len(wanted) == 2:  # one hierarchy for both: one folder, both limits
                key = "both"
        else:
            continue
        if path is None or (kind == "cgroup" and not key) or key in found:
            continue
        relative = os.path.relpath(path, mount_root) if path.startswith(mount_root) else None
        if relative is None or relative.startswith(".."):
            continue  # the server's cgroup is not under this mount's view
        found[key] = os.path.normpath(os.path.join(mount_point, relative))
    return found


def _unescaped(field: str) -> str:
    """A path as mountinfo writes it (space, tab, newline and backslash as octal escapes)."""
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


class TreeLimits:
    """The cgroups of one command (none where they cannot be made): `join()`, called between fork and exec, moves
    the process there (and all it starts); `reached()` names the limits met; `close()` empties and removes them."""

    def __init__(self, memory: int = MEMORY, processes: int = PROCESSES) -> None:
        self.memory, self.processes = memory, processes
        self.folders: dict[str, str] = {}  # controller ("pids", "memory", "" for both in v2) -> its folder
        self._procs: list[int] = []
        name = f"shipcode-run-{os.getpid()}-{secrets.token_hex(6)}"  # never a leftover's of a killed server
        for controller, base in _own_cgroups().items():
            folder = os.path.join(base, name)
            try:
                os.mkdir(folder, 0o700)
            except OSError:
                continue
            try:
                self._set(controller, folder)
                self._procs.append(os.open(os.path.join(folder, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC))
            except OSError:
                _remove(folder)
                continue
            self.folders[controller] = folder

    def _set(self, controller: str, folder: str) -> None:
        if controller in ("pids", "", "both"):
            _write(folder, "pids.max", str(self.processes))
        if controller in ("memory", "both"):
            _write(folder, "memory.limit_in_bytes", str(self.memory))
            if os.path.exists(os.path.join(folder, "memory.memsw.limit_in_bytes")):
                _write(folder, "memory.memsw.limit_in_bytes", str(self.memory))
        if controller == "":
            _write(folder, "memory.max", str(self.memory))
            if os.path.exists(os.path.join(folder, "memory.swap.max")):
                _write(folder, "memory.swap.max", "0")

    @property
    def bounds_memory(self) -> bool:
        return bool({"memory", "", "both"} & set(self.folders))

    @property
    def bounds_processes(self) -> bool:
        return bool({"pids", "", "both"} & set(self.folders))

    def rlimits(self, cpu_seconds: int) -> list[tuple[int, int]]:
        """The per-process limits (setrlimit) every process of the tree gets: no core, file size, open files, CPU
        time, and memory and processes alone where no cgroup bounds them."""
        limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, FILE_SIZE), (resource.RLIMIT_NOFILE, OPEN_FILES),
                  (resource.RLIMIT_CPU, cpu_seconds)]
        if not self.bounds_memory:
            limits.append((resource.RLIMIT_DATA, self.memory))
        if not self.bounds_processes and os.geteuid() != 0:
            limits.append((resource.RLIMIT_NPROC, _own_tasks() + self.processes))
        return limits

    def join(self, pid: int = 0) -> None:
        """Move process `pid` (0: the calling one) into the cgroups: what it starts from then on is in them too."""
        for fd in self._procs:
            os.write(fd, str(pid).encode())

    def reached(self) -> list[str]:
        """The tree limits the command met: "processes" (a fork failed), "memory" (a process was killed for it)."""
        met: list[str] = []
        for controller, folder in self.folders.items():
            if controller in ("pids", "", "both") and _count(folder, "pids.events", "max") > 0:
                met.append("processes")
            if controller in ("memory", "both") and _count(folder, "memory.oom_control", "oom_kill") > 0:
                met.append("memory")
            if controller == "" and _count(folder, "memory.events", "oom_kill") > 0:
                met.append("memory")
        return sorted(set(met))

    def close(self) -> None:
        """Kill what is left in the cgroups (nothing, when the PID namespace went down with the command), remove them."""
        for fd in self._procs:
            os.close(fd)
        self._procs = []
        for folder in self.folders.values():
            deadline = time.monotonic() + 2.0
            while True:
                for pid in _members(folder):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                if _remove(folder) or time.monotonic() > deadline:
                    break
                time.sleep(EMPTIED_POLL)
        self.folders = {}


def _write(folder: str, name: str, value: str) -> None:
    with open(os.path.join(folder, name), "w", encoding="ascii") as file:
        file.write(value)


def _count(folder: str, name: str, key: str) -> int:
    try:
        with open(os.path.join(folder, name), encoding="ascii") as file:
            for line in file:
                parts = line.split()
                if len(parts) == 2 and parts[0] == key:
                    return int(parts[1])
    except (OSError, ValueError):
        pass
    return 0


def _members(folder: str) -> list[int]:
    try:
        with open(os.path.join(folder, "cgroup.procs"), encoding="ascii") as file:
            return [int(line) for line in file if line.strip()]
    except (OSError, ValueError):
        return []


def _remove(folder: str) -> bool:
    try:
        os.rmdir(folder)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _own_tasks() -> int:
    """The tasks (processes and threads) of this user now: RLIMIT_NPROC counts them all, not only the command's."""
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def missing(memory: int = MEMORY, processes: int = PROCESSES) -> list[str]:
    """The tree limits this server cannot set (each then holds per process), in words; empty when all hold."""
    probe = TreeLimits(memory, processes)
    try:
        gaps = []
        if not probe.bounds_memory:
            gaps.append(f"a bound on the memory of a command's whole tree (no cgroup could be made: each process "
                        f"is held to {memory // MIB} MiB alone)")
        if not probe.bounds_processes:
            gaps.append("a bound on the number of a command's processes (no cgroup could be made: "
                        + ("a root server is exempt from RLIMIT_NPROC)" if os.geteuid() == 0 else
                           "RLIMIT_NPROC counts all this user's processes)"))
        return gaps
    finally:
        probe.close()
