"""The kernel sandbox every child process (rg, git) runs in: Landlock rules and resource limits.

A hostile repository can name programs for git to run (filters, hooks, fsmonitor, textconv, a pager)
under names we cannot list in advance, and a folder swapped for a symlink while rg walks can lead it
outside the roots. Checks in our own code cannot win those games; the kernel can. Between fork and
exec (`preexec`), the child gets resource limits and a Landlock domain that allows:

- reading files and listing folders only beneath the paths the caller names (the roots; for git in a
  larger repository also its `.git`), the system library folders the binary loads from, the user's
  own git configuration files and the time zone data;
- executing only the binary itself, its ELF interpreter and, for git, git's own exec-path;
- writing nothing but /dev/null, and beneath the paths a writing caller names (`writable`: the git tools
  that change a repository, its work tree and git folder); no TCP bind or connect; no signals or abstract unix sockets
  outside the child's own domain (where the kernel's Landlock ABI has those rights);
- no new socket at all and no change to any file's mode, owner, times or extended attributes (a seccomp
  filter, `socket_filter`: UDP, raw and pathname unix sockets, chmod, chown, utime, setxattr, which Landlock
  does not cover), and, for a child of a root server (or of one holding any capability), no capability
  (`capabilities_to_drop`).

The ruleset is built in the parent, where errors are easy to report, and only enforced in the child:
the code that runs between fork and exec is a few system calls on objects made beforehand (no
imports, no locks taken), which is what makes `preexec_fn` safe enough with threads around.
A ruleset is made once and kept for later children with the same rules, while every path still names
the file or folder its rule was added on (`_kept_ruleset`).
Where Landlock is missing (an older kernel, not Linux) children run with the limits alone, and the
server says so once at start (`--require-sandbox` makes that fatal).
"""

from __future__ import annotations

import ctypes
import errno
import importlib.util
import os
import resource
import stat
import struct
import sys
import threading

TYPE_CHECKING = False  # typing stays out of start-up, where the sandbox check imports this module
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from landlockpy import Ruleset

LIBRARY_FOLDERS = ("/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32",
                   "/usr/local/lib", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d")
"""What the dynamic loader reads to start a binary: system code and its index, no user data."""
SYSTEM_DATA = ("/etc/localtime", "/usr/share/zoneinfo")
"""Public data a child may want: the time zone (git prints dates)."""

MIB = 1024 * 1024


class Limits:
    """Resource limits of one child (setrlimit): memory (address space), CPU seconds, open files and the
    largest file it may write (0 for a reader, which writes none). Core dumps are off."""

    __slots__ = ("address_space", "cpu_seconds", "file_size", "open_files")

    def __init__(self, address_space: int, cpu_seconds: int = 300, open_files: int = 1024, file_size: int = 0) -> None:
        self.address_space = address_space
        self.cpu_seconds = cpu_seconds
        self.open_files = open_files
        self.file_size = file_size


CHILD_LIMITS = Limits(address_space=2048 * MIB)
"""Every child's, unless its caller says otherwise. rg holds a line and the JSON of its matches in memory:
one 100 MB line of matches took it to 10 GB. 2 GiB of address space leaves room for its threads' stacks
and arenas and for lines of hundreds of MB."""
GIT_LIMITS = Limits(address_space=4096 * MIB)
"""git maps pack files in windows; git/repo.py sets their size and total (1 GiB) to fit in this."""
GIT_WRITE_LIMITS = Limits(address_space=4096 * MIB, file_size=4096 * MIB)
"""git changing a repository (git/changes.py): it writes objects, the index and work tree files, none larger
than this."""


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


_SOCKETS = {"x86_64": (41, 425), "aarch64": (198, 425)}
"""socket and io_uring_setup (whose rings can make sockets too), per machine."""
_METADATA = {
    # chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat utime utimes futimesat utimensat
    "x86_64": (90, 91, 268, 452, 92, 93, 94, 260, 132, 235, 261, 280,
               # setxattr lsetxattr fsetxattr setxattrat removexattr lremovexattr fremovexattr removexattrat file_setattr
               188, 189, 190, 463, 197, 198, 199, 466, 469),
    "aarch64": (52, 53, 452, 55, 54, 88, 5, 6, 7, 463, 14, 15, 16, 466, 469),  # the same, where the machine has them
}
"""The calls that change a file's mode, owner, times or extended attributes, per machine: Landlock (up to
ABI 7) does not cover them, so a child could chmod any file it can name, inside the roots or out, to
whatever it likes (u+s on a binary of its owner: as a child of a root server, that is every root-owned file)."""
_ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
"""AUDIT_ARCH_* of each machine whose numbers are known here."""
_X32_BIT = 0x40000000


def socket_filter(writer: bool = False) -> bytes:
    """A seccomp program (BPF, `struct sock_filter` each) under which a child makes no socket and changes no
    file's metadata: socket(), io_uring_setup() and the calls of `_METADATA` fail with EACCES, and so does
    every call of another ABI than the machine's (x32, i386: other numbers, socketcall). rg and git need none
    of them to read a repository; Landlock (ABI 4 and later) denies TCP only, no ABI up to 7 denies UDP, raw
    sockets or connecting to a pathname unix socket, and none covers chmod, chown, utime or setxattr.
    For a `writer` (git changing a repository) the calls of `_METADATA` do nothing and return 0: git copies
    a file's mode onto the lock file that replaces it (chmod on .git/config.lock) and gives up the write when
    that fails, while a mode it cannot set is one it did not need (files are made with their mode).
    Empty on a machine whose numbers are not known here (then only Landlock's rules hold)."""
    import platform  # off the start-up budget: only the first child's hardening

    machine = platform.machine()
    if machine not in _ARCHES:
        return b""
    sockets, metadata = _SOCKETS[machine], _METADATA[machine]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EACCES
    count = len(sockets) + len(metadata)
    # Instruction 4 + i compares call i; then allow (count + 4), the metadata answer (count + 5), deny (count + 6).
    # A jump counts the instructions it skips.
    program = [(ld, 0, 0, 4), (jeq, 0, count + 4, _ARCHES[machine]), (ld, 0, 0, 0), (jge, count + 2, 0, _X32_BIT),
               *((jeq, count + 1 - index, 0, number) for index, number in enumerate(sockets)),
               *((jeq, count - index, 0, number) for index, number in enumerate(metadata, len(sockets))),
               (ret, 0, 0, allow), (ret, 0, 0, 0x00050000 if writer else deny), (ret, 0, 0, deny)]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def capabilities_to_drop() -> int:
    """The highest capability number, when this process's children would hold capabilities: it is root (exec
    gives uid 0 every capability of the bounding set back), or it holds any (effective, permitted,
    inheritable, ambient), with or without the CAP_SETPCAP that emptying the bounding set needs; -1 when
    there are none to drop."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            held = [int(line.split()[1], 16) for line in status if line.startswith(("CapInh:", "CapPrm:", "CapEff:",
                                                                                     "CapAmb:"))]
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as last:
            highest = int(last.read())
    except (OSError, ValueError):
        return -1
    return highest if any(held) or os.geteuid() == 0 else -1


_hardening: dict[bool, tuple[bytes, int]] = {}


def hardening(writer: bool = False) -> tuple[bytes, int]:
    """(seccomp program, capabilities to drop) of every child: besides Landlock, wherever it is Linux. A
    `writer`'s program lets its metadata calls pass as done (`socket_filter`)."""
    made = _hardening.get(writer)
    if made is None:
        made = _hardening[writer] = ((socket_filter(writer), capabilities_to_drop()) if sys.platform.startswith("linux")
                                     else (b"", -1))
    return made if not _disabled else (b"", -1)


class Confinement:
    """A child's limits, then its Landlock domain (if any): applied between fork and exec by the fork
    server (from `limits` and `ruleset_fd`, which it receives), or called as `preexec_fn` where the
    server forks the child itself.

    Everything it needs is made beforehand, in the parent: in the child it only makes system calls.
    `close()` releases the ruleset's descriptor in the parent once the child has started: closes it, or,
    for a ruleset `confine` keeps for later children (`release`), says this child no longer needs it.
    """

    __slots__ = ("_harden", "_limits", "_release", "_restrict", "_ruleset", "_setrlimit", "drop_caps", "seccomp")

    def __init__(self, limits: list[tuple[int, tuple[int, int]]], ruleset: Ruleset | None,
                 release: Callable[[], None] | None = None, seccomp: bytes = b"", drop_caps: int = -1) -> None:
        self._limits = limits
        self._setrlimit = resource.setrlimit
        self._ruleset = ruleset
        self._release = release
        self._restrict = ruleset.restrict if ruleset is not None else None
        self.seccomp, self.drop_caps = seccomp, drop_caps
        """The seccomp program and the capabilities to drop (`hardening`), for the fork server."""
        self._harden: Any = None
        if seccomp or drop_caps >= 0:  # the fork server's own code, for a child forked here (`__call__`)
            from .forkserver import Hardening  # off the start-up budget (the sandbox check loads this module)
            self._harden = Hardening(seccomp, drop_caps)

    def __call__(self) -> None:
        for kind, pair in self._limits:
            self._setrlimit(kind, pair)
        if self._harden is not None:
            self._harden.drop()
        if self._restrict is not None:
            self._restrict()
        if self._harden is not None:
            self._harden.filter()

    @property
    def limits(self) -> list[tuple[int, tuple[int, int]]]:
        return self._limits

    @property
    def ruleset_fd(self) -> int | None:
        """The Landlock ruleset's descriptor (for the fork server to enforce), None without Landlock."""
        return self._ruleset.fileno() if self._ruleset is not None else None

    def close(self) -> None:
        """Release the ruleset, once (a second call does nothing)."""
        ruleset, release, self._ruleset, self._release = self._ruleset, self._release, None, None
        if release is not None:
            release()
        elif ruleset is not None:
            ruleset.close()

    def __enter__(self) -> Confinement:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def confine(binary: str, readable: Sequence[str], limits: Limits = CHILD_LIMITS,
            executable: Sequence[str] = (), writable: Sequence[str] = ()) -> Confinement:
    """The confinement of a child about to run `binary` (an absolute path), which may read beneath
    `readable` (folders and files), read, write, make, rename and remove files and folders beneath
    `writable` (real folders, never links: `_HERE`), and run, besides itself, the programs beneath
    `executable` (git's exec-path). Raises OSError if a rule cannot be made, so a child never starts with less
    confinement than asked. The ruleset is one made for an earlier child when it would be the same
    (`_kept_ruleset`)."""
    seccomp, drop_caps = hardening(writer=bool(writable))
    if unavailable_reason() is not None:
        return Confinement(_limit_pairs(limits), None, seccomp=seccomp, drop_caps=drop_caps)
    kept = _kept_ruleset(binary, readable, executable, writable)
    return Confinement(_limit_pairs(limits), kept.ruleset, kept.release, seccomp, drop_caps)


def _limit_pairs(limits: Limits) -> list[tuple[int, tuple[int, int]]]:
    """(RLIMIT_*, (soft, hard)) pairs, never above the hard limits this process already has."""
    wanted = [
        (resource.RLIMIT_AS, limits.address_space),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_FSIZE, limits.file_size),
        (resource.RLIMIT_CORE, 0),
    ]
    pairs = []
    for kind, value in wanted:
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        pairs.append((kind, (value, value)))
    return pairs


_READ, _RUN, _RUN_BENEATH, _WRITE, _READ_HERE, _WRITE_HERE = 1, 2, 3, 4, 5, 6
"""The rights a rule gives (`_rules`), made into Landlock's in `_ruleset`, where the binding is imported.
_READ_HERE is _READ on a path the caller names (`readable`), which is not followed if it ends in a link;
_WRITE_HERE the same for `writable`, with every right to change what is beneath (but devices, FIFOs and
sockets: git makes none)."""
_HERE = getattr(os, "O_NOFOLLOW", 0)
"""How `_allow` opens a path the caller names. Callers name real paths (the roots, a .git folder) and files
found as regular files, never links (`listing.walk_readable`: ignore and attributes files above a root, in
a larger repository whose contents may be hostile): one that ends in a link now was swapped meanwhile, and a
rule added through it would be on what it leads to, outside. Such a path is refused (ELOOP)."""
Rule = tuple[str, int, bool]
"""(path, rights, required): one rule of a ruleset."""


def _rules(binary: str, readable: Sequence[str], executable: Sequence[str],
           writable: Sequence[str] = ()) -> tuple[Rule, ...]:
    """The rules of a child's ruleset: what it may read and write, the programs it may run, /dev/null."""
    real = os.path.realpath(binary)
    interpreter = _interpreters.get(real) or _interpreters.setdefault(real, elf_interpreter(real))
    return (*((path, _READ_HERE, True) for path in readable),
            *((path, _WRITE_HERE, True) for path in writable),
            *((("/dev/urandom", _READ, False),) if writable else ()),  # git names its temporary files from it
            *((path, _READ, False) for path in (*LIBRARY_FOLDERS, *SYSTEM_DATA, *_git_config_files())),
            (real, _RUN, True), *(((interpreter, _RUN, True),) if interpreter is not None else ()),
            *((path, _RUN_BENEATH, True) for path in executable),
            (os.devnull, _WRITE, False))


Identity = tuple[int, int] | None
"""The device and inode a rule was added on, None for an optional path left out (`_allow`)."""


def _ruleset(rules: Sequence[Rule]) -> tuple[Ruleset, tuple[Identity, ...]]:
    """A ruleset of `rules`, and the identity of what each rule was added on."""
    from landlockpy import AccessFS, Ruleset, Scope

    read = AccessFS.READ_FILE | AccessFS.READ_DIR
    run = AccessFS.EXECUTE | AccessFS.READ_FILE
    change = (read | AccessFS.WRITE_FILE | AccessFS.TRUNCATE | AccessFS.MAKE_REG | AccessFS.MAKE_DIR | AccessFS.MAKE_SYM
              | AccessFS.REMOVE_FILE | AccessFS.REMOVE_DIR | AccessFS.REFER)
    rights = {_READ: read, _READ_HERE: read, _RUN: run, _RUN_BENEATH: run | AccessFS.READ_DIR,
              _WRITE: AccessFS.READ_FILE | AccessFS.WRITE_FILE, _WRITE_HERE: change}
    ruleset = Ruleset(scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL)  # every fs and net right handled: denied
    try:
        identities = tuple(_allow(ruleset, path, rights[access], required=required, here=access in (_READ_HERE, _WRITE_HERE))
                           for path, access, required in rules)
    except BaseException:
        ruleset.close()
        raise
    return ruleset, identities


MAX_KEPT_RULESETS = 16
"""Rulesets `_kept_ruleset` keeps open for later children (a descriptor each)."""


class _Kept:
    """A ruleset kept for later children: the identity of what each of its rules was added on (`_identity`),
    and how many children not started yet use it. One no longer kept is closed when the last one has."""

    __slots__ = ("identities", "kept", "ruleset", "users")

    def __init__(self, ruleset: Ruleset, identities: tuple[Identity, ...]) -> None:
        self.ruleset, self.identities = ruleset, identities
        self.users, self.kept = 0, True

    def release(self) -> None:
        with _kept_lock:
            self.users -= 1
            if self.users == 0 and not self.kept:
                self.ruleset.close()

    def drop(self) -> None:
        """No longer kept (called with `_kept_lock` held): closed now, or when its last user releases it."""
        self.kept = False
        if self.users == 0:
            self.ruleset.close()


_kept: dict[tuple[Rule, ...], _Kept] = {}
_kept_lock = threading.Lock()


def _kept_ruleset(binary: str, readable: Sequence[str], executable: Sequence[str], writable: Sequence[str] = ()) -> _Kept:
    """The ruleset for these rules, one use of it taken (`_Kept.release` gives it back).

    A Landlock rule is bound to the file or folder opened when it was added, not to its path: a path
    that names another one now (a root removed and made again, a folder renamed away and another put in
    its place, a missing optional file that appeared) must not keep the old rule, which would follow the
    old folder wherever it went. So a ruleset is used again only while each path still names what it did
    (`_identity`: its device and inode, which no other file can have while the ruleset holds the old one
    open); otherwise a new one is made. The identities kept are those of the very files the rules were
    added on (`_allow`), not of a look at the paths before or after: a path swapped back and forth while
    the rules are made must not leave a ruleset that seems to be on one folder and is on another."""
    rules = _rules(binary, readable, executable, writable)
    identities = tuple(_identity(path, follow=access not in (_READ_HERE, _WRITE_HERE)) for path, access, _ in rules)
    with _kept_lock:
        kept = _kept.get(rules)
        if kept is not None and kept.identities == identities:
            kept.users += 1
            return kept
    kept = _Kept(*_ruleset(rules))
    with _kept_lock:
        kept.users += 1
        old = _kept.pop(rules, None)
        if old is not None:
            old.drop()
        while len(_kept) >= MAX_KEPT_RULESETS:
            _kept.pop(next(iter(_kept))).drop()
        _kept[rules] = kept
    return kept


def _identity(path: str, follow: bool = True) -> Identity:
    """What a rule for `path` would be added on, looked at as `_allow` opens it (followed, as the kernel
    does, but for a path the caller names: `_HERE`): its device and inode, None when there is nothing there
    that can be looked at (an optional path is then left out)."""
    try:
        info = os.stat(path, follow_symlinks=follow)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _allow(ruleset: Ruleset, path: str, access: int, *, required: bool, here: bool = False) -> Identity:
    """A rule for `path` (followed to what it names: the kernel checks real paths; `here`, a path the caller
    names, must not end in a link: `_HERE`), and the device and inode it was added on; a path that cannot
    be opened is left out (None) when optional. File-only rights on a file (the kernel refuses the others
there), folder rights on a folder. The
    path is opened once: the kind of the file and its identity are those of the descriptor the rule is made
    from, whatever the path names a moment later."""
    from landlockpy import AccessFS
    from landlockpy._syscall import PathBeneathAttr, add_path_beneath  # Ruleset.allow_path opens the path again

    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC | (_HERE if here else 0))
    except OSError:
        if required:
            raise
        return None
    try:
        info = os.fstat(fd)
        if stat.S_ISLNK(info.st_mode):
            raise OSError(errno.ELOOP, "a symbolic link where the sandbox was to allow reading", path)
        files_only = AccessFS.EXECUTE | AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.TRUNCATE
        granted = AccessFS(access) if stat.S_ISDIR(info.st_mode) else AccessFS(access) & files_only
        granted &= ruleset.handled_fs
        if granted:
            add_path_beneath(ruleset.fileno(), PathBeneathAttr(allowed_access=int(granted), parent_fd=fd))
    finally:
        os.close(fd)
    return info.st_dev, info.st_ino


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
