"""The kernel sandbox every child process (rg, git) runs in: Landlock rules and resource limits.

A hostile repository can name programs for git to run (filters, hooks, fsmonitor, textconv, a pager)
under names we cannot list in advance, and a folder swapped for a symlink while rg walks can lead it
outside the roots. Checks in our own code cannot win those games; the kernel can. Before its program
runs, the child gets resource limits and a Landlock domain of its own that allows:

- reading files and listing folders only beneath the paths the caller names (the roots; for git in a
  larger repository also its `.git`), the system library folders the binary loads from, the user's
  own git configuration files and the time zone data;
- executing only the binary itself, its ELF interpreter, flock (below) and, for git, git's own exec-path;
- writing nothing but /dev/null; no TCP bind or connect; no signals or abstract unix sockets
  outside the child's own domain (where the kernel's Landlock ABI has those rights).

The ruleset is built in the parent, where errors are easy to report, and cached while the files it names
are the same. Two ways to start a child:

- `Spawner` (where Landlock and flock -F are there): a short-lived thread enters the child's domain and
  starts it with a plain Popen (vfork, no Python in the child), sets its limits with prlimit while the child
  waits in flock for that thread to be gone, then exits; see its docstring for why the thread must be gone.
- `Confinement` as `preexec_fn` otherwise: between fork and exec, a few system calls on objects made
  beforehand (no imports, no locks taken), which is what makes `preexec_fn` safe enough with threads around.
  Where Landlock is missing (an older kernel, not Linux) children run with the limits alone, and the
  server says so once at start (`--require-sandbox` makes that fatal).
"""

from __future__ import annotations

import _thread
import ctypes
import errno
import importlib.util
import os
import resource
import struct
import sys

TYPE_CHECKING = False  # typing stays out of start-up, where the sandbox check imports this module
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence

    from landlockpy import Ruleset

LIBRARY_FOLDERS = ("/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32",
                   "/usr/local/lib", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d")
"""What the dynamic loader reads to start a binary: system code and its index, no user data."""
SYSTEM_DATA = ("/etc/localtime", "/usr/share/zoneinfo")
"""Public data a child may want: the time zone (git prints dates)."""

MIB = 1024 * 1024


class Limits:
    """Resource limits of one child (setrlimit): memory (address space), CPU seconds and open files.
    File size is always 0 (a reader writes no file) and core dumps are off."""

    __slots__ = ("address_space", "cpu_seconds", "open_files")

    def __init__(self, address_space: int, cpu_seconds: int = 300, open_files: int = 1024) -> None:
        self.address_space = address_space
        self.cpu_seconds = cpu_seconds
        self.open_files = open_files


CHILD_LIMITS = Limits(address_space=2048 * MIB)
"""Every child's, unless its caller says otherwise. rg holds a line and the JSON of its matches in memory:
one 100 MB line of matches took it to 10 GB. 2 GiB of address space leaves room for its threads' stacks
and arenas and for lines of hundreds of MB."""
GIT_LIMITS = Limits(address_space=4096 * MIB)
"""git maps pack files in windows; git.py sets their size and total (1 GiB) to fit in this."""


_abi: int | None = None
_disabled = False


LANDLOCK_CREATE_RULESET = 444
"""The system call's number, the same on every architecture that has it."""
LANDLOCK_CREATE_RULESET_VERSION = 1


def abi() -> int:
    """The kernel's Landlock ABI version, 0 where there is none.

    Asked with one system call through ctypes rather than through the binding, whose import is slow:
    the server asks at start, and start-up time is a feature.
    """
    global _abi
    if _abi is None:
        _abi = 0
        if sys.platform.startswith("linux"):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            version = libc.syscall(LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                                   ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
            _abi = max(int(version), 0)
    return _abi


def unavailable_reason() -> str | None:
    """Why children run without the kernel sandbox, or None when they run in it."""
    if _disabled:
        return "the sandbox was turned off for this process"
    if not sys.platform.startswith("linux"):
        return f"Landlock is a Linux feature and this is {sys.platform}"
    if abi() == 0:
        return "this kernel does not offer Landlock (Linux 5.13 or later, with landlock among its LSMs)"
    if importlib.util.find_spec("landlockpy") is None:
        return "the landlockpy package is not installed"
    return None


def set_enabled(enabled: bool) -> None:
    """Turn the kernel sandbox off or on for children started from now on (the benchmark measures its
    cost this way). Resource limits stay either way. There is no command-line switch for this."""
    global _disabled
    _disabled = not enabled


class Confinement:
    """Called in the child between fork and exec: the limits, then the Landlock domain (if any).

    Everything it needs is made beforehand, in the parent: in the child it only makes system calls.
    `close()` releases the ruleset's descriptor in the parent once the child has started.
    """

    __slots__ = ("_limits", "_restrict", "_ruleset", "_setrlimit")

    def __init__(self, limits: list[tuple[int, tuple[int, int]]], ruleset: Ruleset | None) -> None:
        self._limits = limits
        self._setrlimit = resource.setrlimit
        self._ruleset = ruleset
        self._restrict = ruleset.restrict if ruleset is not None else None

    def __call__(self) -> None:
        for kind, pair in self._limits:
            self._setrlimit(kind, pair)
        if self._restrict is not None:
            self._restrict()

    def close(self) -> None:
        if self._ruleset is not None:
            self._ruleset.close()

    def __enter__(self) -> Confinement:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def confine(binary: str, readable: Sequence[str], limits: Limits = CHILD_LIMITS,
            executable: Sequence[str] = ()) -> Confinement | Spawner:
    """The confinement of a child about to run `binary` (an absolute path), which may read beneath
    `readable` (folders and files) and run, besides itself, the programs beneath `executable` (git's
    exec-path). A `Spawner` where Landlock and flock -F are there (start the child with its `start`), else a
    `Confinement` (the child's `preexec_fn`). Raises OSError if a rule cannot be made, so a child never
    starts with less confinement than asked."""
    if unavailable_reason() is not None:
        return Confinement(_limit_pairs(limits), None)
    trampoline = _trampoline()
    if trampoline is None:
        return Confinement(_limit_pairs(limits), _ruleset(binary, readable, executable))
    rules = _rules(binary, readable, executable, trampoline, _lock_folder())
    return Spawner(_cached_ruleset_fd(rules), _limit_pairs(limits), trampoline)


def _limit_pairs(limits: Limits) -> list[tuple[int, tuple[int, int]]]:
    """(RLIMIT_*, (soft, hard)) pairs, never above the hard limits this process already has."""
    wanted = [
        (resource.RLIMIT_AS, limits.address_space),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_CORE, 0),
    ]
    pairs = []
    for kind, value in wanted:
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        pairs.append((kind, (value, value)))
    return pairs


def _rules(binary: str, readable: Sequence[str], executable: Sequence[str], trampoline: str | None = None,
           lock_folder: str | None = None) -> tuple[tuple[str, int, bool], ...]:
    """Every rule of a child's ruleset as (path, rights, required): what `_ruleset` grants, and what a cached
    ruleset is checked against. `trampoline` (flock) and `lock_folder` are the spawner's (see `Spawner`)."""
    from landlockpy import AccessFS

    read = int(AccessFS.READ_FILE | AccessFS.READ_DIR)
    run = int(AccessFS.EXECUTE | AccessFS.READ_FILE)
    rules = [(path, read, True) for path in readable]
    rules += [(path, read, False) for path in (*LIBRARY_FOLDERS, *SYSTEM_DATA, *_git_config_files())]
    for program in (binary, trampoline) if trampoline else (binary,):
        real = os.path.realpath(program)
        rules.append((real, run, True))
        interpreter = _interpreters.get(real) or _interpreters.setdefault(real, elf_interpreter(real))
        if interpreter is not None:
            rules.append((interpreter, run, True))
    rules += [(path, run | int(AccessFS.READ_DIR), True) for path in executable]
    if lock_folder is not None:
        rules.append((lock_folder, int(AccessFS.READ_FILE), True))  # its files, never a listing of their names
    rules.append((os.devnull, int(AccessFS.READ_FILE | AccessFS.WRITE_FILE), False))
    return tuple(rules)


def _ruleset(binary: str, readable: Sequence[str], executable: Sequence[str],
             rules: tuple[tuple[str, int, bool], ...] | None = None) -> Ruleset:
    from landlockpy import Ruleset, Scope

    ruleset = Ruleset(scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL)  # every fs and net right handled: denied
    try:
        for path, access, required in rules or _rules(binary, readable, executable):
            _allow(ruleset, path, access, required=required)
    except BaseException:
        ruleset.close()
        raise
    return ruleset


def _allow(ruleset: Ruleset, path: str, access: int, *, required: bool) -> None:
    """A rule for `path` (followed to what it names: the kernel checks real paths); a missing
    optional path is skipped. File-only rights on a file, folder rights on a folder."""
    from landlockpy import AccessFS

    try:
        is_dir = os.path.isdir(path)
        granted = AccessFS(access) if is_dir else AccessFS(access) & ~AccessFS.READ_DIR
        if not is_dir and not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        ruleset.allow_path(path, granted)
    except FileNotFoundError:
        if required:
            raise


def _git_config_files() -> list[str]:
    """The user's own git configuration (global and system): trusted, read by git and, for the global
    ignore file, by rg. Programs they name still cannot run."""
    home = os.environ.get("HOME") or os.path.expanduser("~")
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [
        "/etc/gitconfig", "/etc/gitattributes",
        os.path.join(home, ".gitconfig"),
        *(os.path.join(config_home, "git", name) for name in ("config", "ignore", "attributes")),
    ]


_interpreters: dict[str, str | None] = {}


def elf_interpreter(path: str) -> str | None:
    """The real path of the program interpreter (PT_INTERP) an ELF binary names, None if it names none.

    The kernel opens it for execution when it starts the binary, so it needs the execute right too.
    """
    try:
        with open(path, "rb") as file:
            header = file.read(64)
            if len(header) < 64 or header[:4] != b"\x7fELF":
                return None
            is64, order = header[4] == 2, "<" if header[5] == 1 else ">"
            if is64:
                phoff, = struct.unpack_from(order + "Q", header, 0x20)
                phentsize, phnum = struct.unpack_from(order + "HH", header, 0x36)
            else:
                phoff, = struct.unpack_from(order + "I", header, 0x1C)
                phentsize, phnum = struct.unpack_from(order + "HH", header, 0x2A)
            file.seek(phoff)
            table = file.read(phentsize * phnum)
            for index in range(phnum):
                entry = table[index * phentsize:(index + 1) * phentsize]
                if len(entry) < 4 or struct.unpack_from(order + "I", entry, 0)[0] != 3:  # PT_INTERP
                    continue
                if is64:
                    offset, = struct.unpack_from(order + "Q", entry, 8)
                    size, = struct.unpack_from(order + "Q", entry, 32)
                else:
                    offset, = struct.unpack_from(order + "I", entry, 4)
                    size, = struct.unpack_from(order + "I", entry, 16)
                file.seek(offset)
                name = file.read(min(size, 4096)).split(b"\0", 1)[0]
                return os.path.realpath(os.fsdecode(name)) if name else None
    except (OSError, struct.error):
        return None
    return None


# -- starting a child without forking the server -------------------------------------------------------
CLONE_FS = 0x200
CLONE_FILES = 0x400
PR_SET_NO_NEW_PRIVS = 38
LANDLOCK_RESTRICT_SELF = 446
_FD_CEILING = 2**31 - 1
MAX_RULESETS = 16
"""Rulesets kept built (a descriptor each), the least recently used closed first: every child of a tool in
the same roots has the same one, and building it is some 30 system calls."""

_cache: dict[tuple[tuple[str, int, bool], ...], tuple[tuple[tuple[int, int, int] | None, ...], Ruleset]] = {}
_cache_lock = _thread.allocate_lock()
_trampoline_path: str | bool | None = False  # False: not looked for yet
_folder: str | None = None
_gc_holders = 0
_gc_was_enabled = False
_gc_lock = _thread.allocate_lock()
_libc: ctypes.CDLL | None = None


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_mode >> 12


def _cached_ruleset_fd(rules: tuple[tuple[str, int, bool], ...]) -> int:
    """A duplicate of the descriptor of the ruleset of `rules` (built now, or earlier if every path of it is
    still the file it was then: a rule holds an inode, so a root removed and made again needs a new one).
    The caller closes it; the duplicate keeps it valid whatever the cache drops meanwhile."""
    identity = tuple(_identity(path) for path, _, _ in rules)
    with _cache_lock:
        entry = _cache.pop(rules, None)
        if entry is not None and entry[0] == identity:
            _cache[rules] = entry  # now the most recently used
            return os.dup(entry[1].fileno())
        if entry is not None:
            entry[1].close()
    ruleset = _ruleset("", (), (), rules)
    with _cache_lock:
        _cache[rules] = (identity, ruleset)
        while len(_cache) > MAX_RULESETS:
            _cache.pop(next(iter(_cache)))[1].close()
        return os.dup(ruleset.fileno())


def _trampoline() -> str | None:
    """flock(1) from util-linux, if it can take a shared lock and then exec its command (-F, 2.38 and later),
    and a thread here may have a descriptor table of its own (a seccomp filter, as in a container's default
    profile, may refuse unshare): else None, and children start through `Confinement`."""
    global _trampoline_path
    if _trampoline_path is False:
        import shutil
        import subprocess

        found = shutil.which("flock") if _threads_can_unshare_files() else None
        if found is not None:
            found = os.path.realpath(found)
            try:
                usage = subprocess.run([found, "--help"], capture_output=True, timeout=10, check=False).stdout
            except (OSError, subprocess.SubprocessError):
                usage = b""
            if b"--no-fork" not in usage:
                found = None
        _trampoline_path = found
    return _trampoline_path if isinstance(_trampoline_path, str) else None


def _threads_can_unshare_files() -> bool:
    """Try unshare(CLONE_FILES | CLONE_FS) on a throwaway thread (what it unshares goes with it)."""
    result: list[int] = []
    done = _thread.allocate_lock()
    done.acquire()

    def probe() -> None:
        try:
            result.append(_syscalls().unshare(CLONE_FILES | CLONE_FS))
        finally:
            done.release()

    _thread.start_new_thread(probe, ())
    done.acquire()
    return result == [0]


def _lock_folder() -> str:
    """A private folder (0700) for the spawner's lock files, made once (again if removed) and removed at exit."""
    global _folder
    if _folder is None or not os.path.isdir(_folder):
        import atexit
        import shutil
        import tempfile

        _folder = folder = tempfile.mkdtemp(prefix="shipcode-spawn-")
        owner = os.getpid()

        def remove() -> None:
            if os.getpid() == owner:  # not from a forked copy of this process
                shutil.rmtree(folder, True)

        atexit.register(remove)
    return _folder


def _syscalls() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.unshare.argtypes = [ctypes.c_int]
        _libc = libc
    return _libc


class Spawner:
    """Starts the children of one ruleset without a fork of the server and without Python in the child.

    A `preexec_fn` makes subprocess fork() the whole server and run Python in the child (about 10 ms against
    4 for a plain start). Landlock and no_new_privs hold per thread, and a child gets its creating thread's,
    so a thread restricted with the child's ruleset can start it with a plain Popen (vfork and exec). But a
    thread that stays alive shares its domain with every child it started, and Landlock lets a process
    ptrace, read the memory of (process_vm_readv, pidfd_getfd) and signal any task of its own domain: the
    child could read and write the server's memory through that thread (tested). So each child gets a new
    thread that is gone before the child's program starts:

    1. the thread unshares its descriptor table and working folder (CLONE_FILES, CLONE_FS), enters the
       child's working folder (before the domain, as the child did with preexec_fn), creates a lock file
       in a private folder and takes an exclusive flock on it, held in its own table only;
    2. it sets no_new_privs and enters a new Landlock domain (the cached ruleset), then closes in its own
       table every descriptor the child is not to inherit (the child, in its domain, could not list them);
    3. it starts `flock -s -F LOCKFILE PROGRAM ARGS...` with a plain Popen: flock (util-linux) waits for a
       shared lock, then execs the program in place (same pid);
    4. it sets the resource limits on the child with prlimit (the child is still waiting in flock), and
       exits. Its descriptor table goes with it (after its memory map: exit_mm comes before exit_files
       and the final fput in the kernel's do_exit), which releases the lock, and only then can the program
       start: with its limits in place (no window), and with nothing of the server reachable through the
       thread (no memory map, no descriptors). It is unhashed (exit_notify) microseconds after the lock
       goes: a signal aimed at its id in between is the one thing left, documented in docs/security.md.

    Nothing else runs on that thread: the cyclic garbage collector is paused while one exists (a finalizer
    there would close a descriptor in its table only), it imports nothing and opens nothing but its lock.
    Each child has its own domain, as with preexec_fn, so children cannot reach each other either.
    """

    __slots__ = ("_limits", "_ruleset_fd", "_trampoline")

    def __init__(self, ruleset_fd: int, limits: list[tuple[int, tuple[int, int]]], trampoline: str) -> None:
        self._ruleset_fd = ruleset_fd
        self._limits = limits
        self._trampoline = trampoline

    def start(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None, pass_fds: Sequence[int],
              stdin: int, stdout: int, stderr: int) -> tuple[subprocess.Popen[bytes], str]:
        """The started child and its lock file (remove it with `release` once the child has exited)."""
        import fcntl  # noqa: F401  (loaded here: on the spawning thread an import finds it loaded, reads no file)
        import subprocess  # noqa: F401

        _syscalls()
        lock_path = os.path.join(_lock_folder(), os.urandom(16).hex())
        job = _Job([self._trampoline, "-s", "-F", lock_path, *argv], cwd, env, tuple(pass_fds), (stdin, stdout, stderr),
                   self._ruleset_fd, self._limits, lock_path)
        _hold_gc()
        try:
            _thread.start_new_thread(_spawn_on_this_thread, (job,))
            job.done.acquire()
        finally:
            _release_gc()
        if job.error is not None:
            if job.proc is not None:
                job.proc.wait()
            if job.created:
                release(lock_path)
            raise job.error
        assert job.proc is not None
        return job.proc, lock_path

    def close(self) -> None:
        if self._ruleset_fd >= 0:
            os.close(self._ruleset_fd)
            self._ruleset_fd = -1

    def __enter__(self) -> Spawner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Job:
    __slots__ = ("argv", "created", "cwd", "done", "env", "error", "limits", "lock_path", "pass_fds", "proc",
                 "ruleset_fd", "stdio")

    def __init__(self, argv: list[str], cwd: str, env: Mapping[str, str] | None, pass_fds: tuple[int, ...],
                 stdio: tuple[int, int, int], ruleset_fd: int, limits: list[tuple[int, tuple[int, int]]],
                 lock_path: str) -> None:
        self.argv, self.cwd, self.env, self.pass_fds, self.stdio = argv, cwd, env, pass_fds, stdio
        self.ruleset_fd, self.limits, self.lock_path = ruleset_fd, limits, lock_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.error: BaseException | None = None
        self.created = False  # the lock file is ours to remove
        self.done = _thread.allocate_lock()
        self.done.acquire()


def _spawn_on_this_thread(job: _Job) -> None:
    """The whole life of a spawning thread (see `Spawner`). Its descriptor table is its own from the first
    line, so nothing it opens outlives it; it never closes anything (the table goes with the thread)."""
    import fcntl
    import subprocess

    try:
        libc = _syscalls()
        if libc.unshare(CLONE_FILES | CLONE_FS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_FILES | CLONE_FS): " + os.strerror(ctypes.get_errno()))
        os.chdir(job.cwd)  # this thread's own working folder now, the child's too: entered before the domain
        lock = os.open(job.lock_path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        job.created = True
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS: " + os.strerror(ctypes.get_errno()))
        if libc.syscall(LANDLOCK_RESTRICT_SELF, job.ruleset_fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self: " + os.strerror(ctypes.get_errno()))
        stdin, stdout, stderr = job.stdio
        # What the child inherits is settled here, in this thread's own table: everything else closed, the
        # passed descriptors inheritable. With pass_fds, Python's child lists /proc/self/fd to close the rest,
        # which the domain denies, and then closes every number up to RLIMIT_NOFILE (5 ms at 20 000).
        keep = sorted({*job.stdio, *job.pass_fds, lock, job.ruleset_fd})
        for low, high in zip([-1, *keep], [*keep, _FD_CEILING], strict=True):
            os.closerange(max(low + 1, 3), high)
        for fd in job.pass_fds:
            os.set_inheritable(fd, True)
        job.proc = subprocess.Popen(job.argv, env=job.env, close_fds=False, stdin=stdin, stdout=stdout, stderr=stderr,
                                    start_new_session=True)
        try:
            for kind, pair in job.limits:
                resource.prlimit(job.proc.pid, kind, pair)
        except BaseException:
            os.kill(job.proc.pid, 9)  # still waiting for the lock: it never ran its program
            raise
    except BaseException as err:
        job.error = err
    finally:
        job.done.release()


def _hold_gc() -> None:
    global _gc_holders, _gc_was_enabled
    import gc  # not at start-up: the sandbox check imports this module then
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1


def _release_gc() -> None:
    global _gc_holders
    import gc
    with _gc_lock:
        _gc_holders -= 1
        if _gc_holders == 0 and _gc_was_enabled:
            gc.enable()


def release(lock_path: str) -> None:
    """Remove a child's lock file (once it has exited, or never started)."""
    try:
        os.unlink(lock_path)
    except FileNotFoundError:
        pass
