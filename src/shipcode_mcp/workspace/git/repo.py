"""A repository git may be run in, and running it: where the repository is (`Repo`: only a `.git` folder
inside the roots, or the `.git` of the larger repository holding a root), its configuration read and every
program it names neutralised, git's answers remembered while their files are unchanged (`_known`), and
each command run with the safe settings, a deadline and bounded output (`Repo.run`). The folder walk it
relies on is walk.py."""

from __future__ import annotations

import os
import re
import shutil
import stat
import threading
import time
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError, inside
from .. import safe_open
from ..listing import walk_readable
from ..process import Child, Completed, child_environment, run
from ..sandbox import GIT_LIMITS, GIT_WRITE_LIMITS
from ..text import printable
from . import walk
from .walk import LEADS_OUT, Found, NotRegular, read_alternates, read_regular, scan, walked

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...context import Context
    from ..roots import Roots


GIT_TIMEOUT = 30.0
MAX_PATCH_BYTES = 256 * 1024
"""git_diff and git_show return at most this much patch text; the file list is always complete."""
MAX_DATA_BYTES = 8 * 1024 * 1024
"""Bound on machine-readable output (status entries, log records, numstat)."""
MAX_STATUS_ENTRIES = 2000
MAX_BODY_CHARS = 4000

# Settings that keep git from running anything but itself, whatever the repository's config says.
_SAFE_CONFIG = (
    "-c", "safe.bareRepository=explicit",  # a bare repository committed inside a project is never used (git >= 2.38)
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",  # git looks for /dev/null/<hook>, which cannot exist: no hook runs
    "-c", "diff.autoRefreshIndex=false",  # `git diff` refreshes and rewrites a stale index, even without optional locks
    "-c", "core.quotePath=false",
    "-c", "log.showSignature=false",
    "-c", "log.mailmap=false", "-c", "mailmap.file=", "-c", "mailmap.blob=",  # mailmap.file may name an outside file
    "-c", "diff.submodule=short",  # `log` would print a submodule's commit subjects, read through its .git file
    "-c", "protocol.allow=never",  # a partial clone's lazy fetch runs a transport (GIT_NO_LAZY_FETCH is git 2.44+)
    "-c", "color.ui=false",
    # Output in one encoding whatever the repository says: re-encoded as UTF-16, every field holds NULs.
    "-c", "i18n.logOutputEncoding=UTF-8",
    "-c", "log.follow=false",  # git_log says --follow itself, where it wants it
    "-c", "core.pager=cat",
    "-c", "diff.external=",
    # Pack windows that fit the address space of GIT_LIMITS (sandbox.py), whatever the repository's config says.
    "-c", "core.packedGitWindowSize=256m", "-c", "core.packedGitLimit=1g",
)
_WRITE_CONFIG = (
    "-c", "gc.auto=0", "-c", "maintenance.auto=false",  # no repacking in the background of a commit: bounded time
    "-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false",  # signing runs the program gpg.program names
    "-c", "submodule.recurse=false",  # a switch or restore changes this work tree only
    "-c", "core.sharedRepository=false",  # no chmod (the sandbox refuses it)
)
"""Settings of the commands that change a repository (`Repo.change`), besides `_SAFE_CONFIG`."""
GIT_WRITE_TIMEOUT = 120.0
DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv")
_SIDE = re.compile(r"@\{[^}]*\}")  # reflog and upstream syntax (HEAD@{1}, main@{upstream}) may hold ':'
RANGE = re.compile(r"\.\.\.?")
SEVERAL = re.compile(r"\^[!@-]|^\^")
"""Revision syntax that names several commits (`A^!`, `A^@`, `A^-`, `^A`): no ref of the tools is one."""
_SEARCH = re.compile(r"\{/|:/")
"""Revision syntax that searches commit messages (`REV^{/text}`, `:/text`): in a larger repository it would
answer from commits outside the root (a yes/no oracle on their messages)."""

_GIT_PATHS = ("objects", "refs", "packed-refs", "shallow", "index", "HEAD", "logs", "info", "commondir", "config",
              "objects/info/alternates", "modules", "worktrees")
"""Where git reads a repository's state (`rev-parse --git-path`, git's own rules for worktrees and the
common folder): each must lie in the git folders `Repo` checks, and be an entry or a folder it walks."""
MAX_FILTERS = 256
"""Filters and transports a configuration may name: each costs overrides (up to four for a filter) in every
git command's environment."""
_CONFIG_KEYS = (r"^(filter\..+\.(clean|smudge|process)|protocol\..+\.allow|merge\..+\.driver"
                r"|core\.(attributesfile|excludesfile|sharedrepository|hookspath)|diff\.orderfile)$")
"""The configuration `Repo` reads to neutralise: programs (filters, transports, merge drivers) and files read from
outside; and what the tools that change a repository must know (a shared repository, where hooks are)."""
_CONFIG_KEYS_AND_INCLUDES = _CONFIG_KEYS[:-2] + r"|include\.path|includeif\..+\.path)$"
MAX_KNOWN = 256
"""Repositories whose discovery `_known` keeps."""
_known_lock = threading.Lock()
_known: dict[tuple[str, ...], tuple[tuple[Any, ...], bytes, bytes]] = {}
"""What rev-parse and git config answered for a repository (by `Repo._cache_key`), with the fingerprint of
every file those answers come from (`_inputs`): while none of them changed, a call runs no git but its own
command. This caches only git's answers; the checks of the git folders (links, FIFOs, alternates) and every
judgement of the answers run on each call, as without it. A configuration with includes is never kept."""
_PROGRAM_FAILED = re.compile(
    r"^(?:error|fatal|warning): (?:.*: )?(?:(?:clean|smudge) filter '.*' failed"
    r"|external filter '.*' (?:failed|is not available)|cannot (?:exec|run|fork to run|feed the input to external filter) "
    r"|initialization for subprocess '.*' failed|read from external filter '.*' failed"
    r"|could not fetch .* from promisor remote|transport '.*' not allowed).*",
    re.MULTILINE)
"""git's words for a program it could not run: a filter, a hook, a transport. git may still exit 0."""

_git_path: str | None = None


def git_program() -> str:
    """The git executable on PATH, looked up once per process."""
    global _git_path
    if _git_path is None:
        found = shutil.which("git")
        if found is None:
            raise ToolError("git is not installed")
        _git_path = found
    return _git_path


_exec_path: str | None = None


def _git_exec_path() -> str:
    """Where git's own helpers are: the one folder besides git itself whose programs it may run."""
    global _exec_path
    if _exec_path is None:
        done = run(None, [git_program(), "--exec-path"], cwd="/", readable=[], limits=GIT_LIMITS, limit=64 * 1024, what="git")
        found = os.fsdecode(done.stdout).strip()
        if done.returncode != 0 or not os.path.isabs(found):
            raise ToolError(f"git --exec-path failed: {printable(done.stderr.strip())}")
        _exec_path = found
    return _exec_path


def _env() -> dict[str, str]:
    """A child's environment (`child_environment`: no GIT_*, which could point git at another repository or
    program, nor anything else of the server's), with git's settings."""
    env = child_environment()
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat",
               GIT_LITERAL_PATHSPECS="1", GIT_NO_LAZY_FETCH="1", LC_ALL="C")
    return env


class Repo:
    """The git repository holding a path of the workspace, ready to run git confined to the roots.

    Git runs in the folder of the path (so a root that holds several repositories works), entered
    through a descriptor opened without following links. When the repository reaches outside the
    roots (the root is a folder inside a larger repository), every command is confined to the root.
    """

    def __init__(self, ctx: Context, roots: Roots, target: str, *, write: bool = False) -> None:
        self.ctx = ctx
        self.roots = roots
        root = roots.root_of(target)
        assert root is not None
        self.root = root
        directory = target
        while directory != root and not os.path.isdir(directory):  # a path that is gone: its nearest folder
            directory = os.path.dirname(directory)
        self.directory = directory
        self._fd = safe_open.open_dir(roots, directory, roots.display(directory))
        self.cwd = safe_open.proc_path(self._fd, directory)
        self._env = _env()
        self._overrides: dict[str, str] = {}
        self.filters: set[str] = set()
        """The filters the configuration gives a program (clean, smudge or process): neutralised, and a file
        that needs one cannot be checked out here."""
        self.merge_drivers: set[str] = set()
        """The merge drivers the configuration names (programs): neutralised; a merge that may need one is refused."""
        self.shared: str | None = None  # core.sharedRepository: git chmods what it writes
        self.hooks_path: str | None = None  # core.hooksPath, as configured
        self._submodules: list[str] = []  # git folders under .git/modules whose filters are not neutralised yet
        self.readable = list(roots.paths)  # what git may read in its sandbox; _discover adds the repository's
        try:
            self._discover()
        except BaseException:
            self.close()
            raise
        self.confined = roots.root_of(self.top) is None
        self.readable = self._readable()
        self.writable: list[str] = []
        """Where `change` lets git write: the work tree and the git folders, for a repository entirely in the roots."""
        if write:
            if self.confined:
                self.close()
                raise ToolError(f"Refused: {printable(roots.display(self.root))} is a folder inside a larger git "
                                "repository whose .git folder is outside the workspace roots; the git tools that "
                                "change a repository work only where the repository, .git included, is inside a root")
            self.writable = [path for path in dict.fromkeys((self.top, self.git_dir, self.common_dir))
                             if not any(other != path and inside(path, other)
                                        for other in (self.top, self.git_dir, self.common_dir))]
        # Diff paths (--relative) are relative to the root when confined, else to the repository top.
        self.diff_base = root if self.confined else self.top

    def _discover(self) -> None:
        """Find the repository, refuse one that is not ours to read, and pin every later command to it.

        Pinning (GIT_DIR, GIT_WORK_TREE) means a `.git` or bare repository appearing meanwhile is not used.
        """
        shown = self.roots.display(self.directory)
        refused = ToolError(f"Refused: the git repository of {printable(shown)} is not a .git folder inside the workspace roots "
                            "(a .git link or file pointing elsewhere, a linked worktree of an outside repository, "
                            "or a bare repository inside the project)")
        # The `.git` git would use is the nearest one up from here. In its sandbox git cannot read one that
        # leads outside and would go on up to another: decide on the nearest one ourselves, first. Its
        # `commondir` file (linked worktrees have one; any git folder may) moves objects, refs and config
        # elsewhere: judged here too, as git in its sandbox could not even read the config there.
        try:
            found = _nearest_git(self.directory)
            holder, nearest = found if found is not None else (self.directory, None)
            common = (_common_dir(nearest) or nearest) if nearest is not None else None
        except NotRegular as err:
            raise self._unreadable(shown, err.path, err.what, os.path.dirname(err.path)) from None
        self.top = holder  # until rev-parse says; for a larger repository they must agree (checked below)
        if nearest is not None and common is not None:
            if not (self._trusted(nearest, holder) and self._trusted(common, holder)):
                raise refused
            if self.roots.root_of(nearest) is None:
                self.readable.append(nearest)  # the .git of a larger repository holding the root
            # Before git reads any of it: a FIFO where git starts (config, HEAD) would hold it until its deadline.
            self._check_git_folders(shown, nearest, common, confined=self.roots.root_of(holder) is None)
        key, fingerprint = (None, None) if nearest is None or common is None else (
            self._cache_key(holder, nearest, common), _fingerprint(_inputs(holder, nearest, common)))
        with _known_lock:
            known = _known.get(key) if key is not None and fingerprint is not None else None
        if known is not None and known[0] != fingerprint:
            known = None
        if known is not None:
            located = known[1]
        else:
            paths = [option for name in _GIT_PATHS for option in ("--git-path", name)]
            done = self.run(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", *paths],
                            limit=64 * 1024)
            if done.returncode != 0:
                message = done.stderr.strip().splitlines()
                if message and "safe.bareRepository" in message[-1]:
                    raise ToolError(f"Refused: {printable(shown)} is in a bare repository (a folder holding HEAD, "
                                    "objects/ and refs/ that is not a .git folder); git tools use only repositories "
                                    "with a .git folder")
                if message and "not a git repository" not in message[-1]:
                    raise ToolError(f"git failed: {printable(message[-1].removeprefix('fatal: '))}")
                raise ToolError(f"{printable(shown)} is not in a git repository")
            located = done.stdout
        lines = located.decode("utf-8", "surrogateescape").split("\n")
        if len(lines) != 4 + len(_GIT_PATHS) or lines[-1]:
            raise ToolError(f"git failed: unexpected output of rev-parse in {printable(shown)}")
        self.top, git_dir, common_dir = (os.path.realpath(os.path.join(self.directory, line)) for line in lines[:3])
        where = [os.path.normpath(os.path.join(self.directory, line)) for line in lines[3:-1]]  # links: judged above
        # git must use the folders checked above, as the repository they were checked for.
        if (os.path.commonpath([self.top, self.directory]) != self.top or (git_dir, common_dir) != (nearest, common)
                or (self.roots.root_of(self.top) is None) != (self.roots.root_of(holder) is None)
                or not (self._trusted(git_dir, self.top) and self._trusted(common_dir, self.top))):
            raise refused
        if self.roots.root_of(self.top) is None and not git_dir == common_dir == os.path.join(self.top, ".git"):
            raise refused  # a larger repository is only used through its own .git (no core.worktree from inside the roots)
        # git's own view of where it reads objects, refs and the rest: inside the folders checked above.
        if not all(walked(path, git_dir) or walked(path, common_dir) for path in where):
            raise refused
        self.git_dir, self.common_dir = git_dir, common_dir
        self._env.update(GIT_DIR=git_dir, GIT_WORK_TREE=self.top)
        configured = known[2] if known is not None else self._read_config(shown)
        includes, configured = _without_includes(configured)
        self._override(configured, shown, files=True)
        if known is None and key is not None and fingerprint is not None and not includes:
            with _known_lock:
                while len(_known) >= MAX_KNOWN:
                    _known.pop(next(iter(_known)))
                _known[key] = (fingerprint, located, configured)

    def _cache_key(self, holder: str, nearest: str, common: str) -> tuple[str, ...]:
        """What, besides the files `_inputs` names, the answers of rev-parse and git config depend on."""
        return (*self.roots.paths, "\0", self.directory, holder, nearest, common,
                self._env.get("HOME", ""), self._env.get("XDG_CONFIG_HOME", ""))

    def _check_git_folders(self, shown: str, git_dir: str, common_dir: str, *, confined: bool) -> None:
        """Refuse a repository whose git folders lead elsewhere: a symbolic link (packed-refs, shallow, objects,
        refs, index, a loose object...) that leads outside the roots, or for a larger repository (`confined`)
        outside its own .git; a FIFO or device git would block on or read, or a link to one; an alternate
        object store outside the roots (none at all for a larger repository). Only what git reads is
        walked (`scan`): a shared hooks folder, or a large lfs/ one, is no reason to refuse."""
        own = common_dir

        def allowed(real: str) -> bool:
            return inside(real, own) if confined else self.roots.root_of(real) is not None

        where = "its own .git folder" if confined else "the workspace roots"
        found = Found()
        folders = [own] if inside(git_dir, own) else [own, git_dir]
        problems = [scan(folder, allowed, found, store=False) for folder in folders]
        self._submodules = found.submodules
        seen: set[str] = set()  # each store once: this ends, and goes deeper than git (which stops at 5)
        while not any(problems) and found.alternates:
            files, found.alternates = found.alternates, []
            for file in files:
                for store in read_alternates(file, self._show(file)):
                    if confined:
                        raise ToolError(f"Refused: the git repository of {printable(shown)} borrows objects from another "
                                        f"store ({printable(self._show(file))}); a larger repository holding a root is "
                                        "used only when everything git reads is in its own .git folder")
                    real = os.path.realpath(store)
                    if not allowed(real):
                        raise ToolError(f"Refused: the git repository of {printable(shown)} reads objects from outside "
                                        f"the workspace roots ({printable(self._show(file))} lists an object store there)")
                    if real not in seen and os.path.isdir(real):
                        seen.add(real)
                        problems.append(scan(real, allowed, found, store=True))
        for problem in problems:
            if problem is not None:
                path, what = problem
                if what is None:
                    raise ToolError(f"Refused: the git folders of {printable(shown)} hold more than {walk.MAX_GIT_ENTRIES} "
                                    "entries, too many to check for links that lead outside (`git gc` packs loose objects)")
                if what != LEADS_OUT:
                    raise self._unreadable(shown, path, what, self.top)
                raise ToolError(f"Refused: the git repository of {printable(shown)} reads outside {where}: "
                                f"{printable(self._show(path))} is {what}")

    def _readable(self) -> list[str]:
        """What git may read in its sandbox once the repository is known: the roots (its git folders and
        alternates are in them); for a larger repository holding the root, also its .git, and the ignore and
        attributes files on the way from its top down to the root (their rules apply to the root's files),
        and its top's .gitmodules."""
        if not self.confined:
            return list(self.roots.paths)
        above = walk_readable([self.root], (".gitignore", ".gitattributes", ".gitmodules"))[1:]
        return [*self.roots.paths, self.common_dir,
                *(path for path in above if inside(path, self.top) and (
                    os.path.basename(path) != ".gitmodules" or os.path.dirname(path) == self.top))]

    def _unreadable(self, shown: str, path: str, what: str, base: str) -> ToolError:
        """The refusal of a repository git cannot read as it is: `path` (named from `base` when it is outside
        the roots) is `what`, a FIFO, a device, or something else where git reads a regular file."""
        named = self.roots.display(path) if self.roots.root_of(path) is not None else os.path.relpath(path, base)
        if what == "a symbolic link":
            return ToolError(f"Refused: the git repository of {printable(shown)} is not one shipcode-mcp reads: "
                             f"{printable(named)} is a symbolic link (git writes a file there, and only a file is read)")
        return ToolError(f"Refused: the git repository of {printable(shown)} is not one git can read: "
                         f"{printable(named)} is {what}")

    def _show(self, path: str) -> str:
        """A path in the git folders, for messages: as the roots show it, or from the larger repository's .git."""
        if self.roots.root_of(path) is not None:
            return self.roots.display(path)
        return os.path.relpath(path, self.top)

    def _read_config(self, shown: str) -> bytes:
        """The settings of the configuration (git's own view: all scopes, includes and conditional includes
        resolved) that `_override` neutralises for every later command, and the includes themselves (a
        configuration with includes is never kept in `_known`: the files it includes are not watched):

        - Each filter that can run on reading (clean, process) becomes a required filter with no program: a
          file that needs it makes git stop with "clean filter 'NAME' failed", which `run` turns into a clear
          refusal. Filter names are arbitrary, hence the environment's GIT_CONFIG_KEY_n, which takes any.
        - Each transport the configuration allows is not allowed (protocol.allow=never is the default).
        - An attributes, excludes or diff order file set by the repository's own configuration and lying
          outside the roots is not read (the user's own global settings stay).
        """
        done = self.run(["config", "-z", "--show-scope", "--get-regexp", _CONFIG_KEYS_AND_INCLUDES], limit=1024 * 1024)
        if done.truncated:
            raise ToolError(f"Refused: the git configuration of {printable(shown)} is too large to check")
        if done.returncode not in (0, 1):  # 1: no key matched
            lines = done.stderr.strip().splitlines()
            why = lines[-1].removeprefix("fatal: ") if lines else f"exit status {done.returncode}"
            raise ToolError(f"git config failed: {printable(why)}")
        return done.stdout

    def _override(self, output: bytes, shown: str, *, files: bool) -> None:
        """Add the overrides for what `git config -z --show-scope --get-regexp` printed to every later command's
        environment (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n); path settings only if `files`."""
        fields = output.decode("utf-8", "surrogateescape").split("\0")[:-1]  # each field ends with NUL
        if len(fields) % 2:
            raise ToolError(f"git failed: unexpected output of git config in {printable(shown)}")
        overrides = self._overrides
        for scope, entry in zip(fields[0::2], fields[1::2], strict=True):
            key, _, value = entry.partition("\n")
            section, _, rest = key.partition(".")
            name, _, variable = rest.rpartition(".")
            if section == "filter":
                overrides[f"filter.{name}.smudge"] = ""  # git_show and git_diff never check out; to be sure
                if value:
                    self.filters.add(name)
                if variable in ("clean", "process") and value:
                    overrides.update({f"filter.{name}.clean": "", f"filter.{name}.process": "",
                                      f"filter.{name}.required": "true"})
            elif section == "protocol":
                overrides[f"protocol.{name}.allow"] = "never"
            elif section == "merge":  # a command line for the shell: one that cannot run, and merges refused first
                self.merge_drivers.add(name)
                overrides[f"merge.{name}.driver"] = "/dev/null/shipcode-mcp-runs-no-merge-driver"
            elif key == "core.sharedrepository":
                self.shared = value if scope != "command" else self.shared  # (not ours: -c core.sharedRepository=false)
            elif key == "core.hookspath":
                self.hooks_path = value if scope != "command" else self.hooks_path  # (not ours: /dev/null)
            elif files and scope in ("local", "worktree") and not self._inside_roots(value):
                overrides[key] = "/dev/null"
        named = {key.rpartition(".")[0] for key in overrides if key.startswith(("filter.", "protocol.", "merge."))}
        if len(named) > MAX_FILTERS:
            raise ToolError(f"Refused: the git configuration of {printable(shown)} names more than {MAX_FILTERS} "
                            "filters or transports")
        self._env["GIT_CONFIG_COUNT"] = str(len(overrides))
        for number, (key, value) in enumerate(overrides.items()):
            self._env[f"GIT_CONFIG_KEY_{number}"] = key
            self._env[f"GIT_CONFIG_VALUE_{number}"] = value

    def _neutralise_submodules(self) -> None:
        """The filters of the submodules' own configurations, neutralised like the repository's own: git status
        and git diff run `git status` in each submodule, where those filters would apply. Our overrides reach
        those children through the environment. (A submodule whose git folder is not under .git/modules, as in
        the old layout with a .git folder in its work tree, is left to the kernel sandbox: listing the index's
        gitlinks would cost a git process on every call.)"""
        submodules, self._submodules = self._submodules, []
        for git_dir in submodules:
            if not os.path.isfile(os.path.join(git_dir, "HEAD")):
                continue  # a file named config under modules/ that is not a git folder's
            env = {key: value for key, value in self._env.items() if key != "GIT_WORK_TREE"}
            env["GIT_DIR"] = git_dir
            done = self._run(["config", "-z", "--show-scope", "--get-regexp", _CONFIG_KEYS], env, 1024 * 1024)
            if done.returncode == 0 and not done.truncated:  # else git in the submodule fails the same way, and says so
                self._override(done.stdout, self._show(git_dir), files=False)

    def _inside_roots(self, value: str) -> bool:
        """Whether a path-valued setting (as git reads it: `~` expanded, relative to the work tree) is in a root."""
        if value.startswith("%(prefix)/"):
            return False
        path = os.path.join(self.top, os.path.expanduser(value))
        return self.roots.root_of(os.path.realpath(path)) is not None

    def _trusted(self, real: str, top: str) -> bool:
        """A git folder git may use: a `.git` folder (or one under it: submodules, worktrees) inside a root,
        or `<top>/.git` itself, a real folder, when the root is inside that larger repository.

        Only git makes `.git` folders (write_file refuses them), so a repository built by writing files, or
        an embedded bare repository on git older than 2.38, is refused.
        """
        root = self.roots.root_of(real)
        if root is not None:
            return ".git" in os.path.relpath(real, root).split(os.sep)
        own = os.path.join(top, ".git")
        return real == own and not os.path.islink(own) and os.path.isdir(own)

    def __enter__(self) -> Repo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def run(self, args: list[str], *, limit: int = MAX_DATA_BYTES) -> Completed:
        """Run git; a sign on stderr that it could not run a program the repository names is a ToolError,
        whatever the exit status (git exits 0 when a filter fails, with an answer that may be wrong)."""
        if args[0] in ("status", "diff") and self._submodules:
            self._neutralise_submodules()
        return self._run(args, self._env, limit)

    def change(self, args: list[str], *, limit: int = MAX_DATA_BYTES, env: dict[str, str] | None = None) -> Completed:
        """Run a git command that changes the repository (only for a Repo made with `write`): it may write in
        the work tree and the git folders, and nowhere else. It is not stopped when the request is cancelled
        (killed midway, git would leave its lock files behind, index.lock first), only at its deadline. `env`
        adds variables (a committer's identity). Pathspecs are not all literal here: git stash runs `git clean
        :/` of its own; the caller writes each of its own as `:(literal)PATH` (`literal`)."""
        assert self.writable, "a Repo made without write"
        if self._submodules:
            self._neutralise_submodules()
        environment = {**self._env, **(env or {})}
        del environment["GIT_LITERAL_PATHSPECS"]
        return self._run(args, environment, limit, write=True)

    def _run(self, args: list[str], env: dict[str, str], limit: int, *, write: bool = False) -> Completed:
        done = run(None if write else self.ctx, [git_program(), *_SAFE_CONFIG, *(_WRITE_CONFIG if write else ()), *args],
                   cwd=self.cwd, readable=self.readable, executable=[_git_exec_path()],
                   limits=GIT_WRITE_LIMITS if write else GIT_LIMITS, env=env, pass_fds=(self._fd,), limit=limit,
                   timeout=GIT_WRITE_TIMEOUT if write else GIT_TIMEOUT, what="git",
                   writable=self.writable if write else ())
        failed = list(dict.fromkeys(match.group(0) for match in _PROGRAM_FAILED.finditer(done.stderr)))
        if failed:
            raise _program_refused(args[0], failed)
        return done

    def check(self, args: list[str], *, limit: int = MAX_DATA_BYTES) -> Completed:
        """Run and fail with git's own message (the last line of it) when git fails."""
        return checked(args[0], self.run(args, limit=limit))

    def diff(self, args: list[str]) -> tuple[bytes, Completed] | None:
        """One `git diff --numstat -z --patch ...`: its file summary (complete, within MAX_DATA_BYTES) and its
        patch (within MAX_PATCH_BYTES, `truncated` when cut), read as they come so that git is stopped as soon
        as the patch is long enough. git ends the summary with an empty record: the first two NULs in a row
        (no path is empty, and a patch line never comes before them). None when the output does not start
        with the summary: the combined diffs of unmerged paths come before it, and are read with two runs."""
        with self._reader(args) as child:
            out = bytearray()
            split = -1  # where the patch starts, once the summary's end was seen
            truncated = False
            for chunk in child.chunks():
                if truncated:
                    continue  # killed: read on to the end, so that what it said on stderr is kept
                searched = max(0, len(out) - 1)
                out += chunk
                if not searched and out[:1] not in b"0123456789-":
                    child.kill()  # unmerged paths: their combined diffs come first, the summary after them
                    return None
                if split < 0:
                    end = out.find(b"\0\0", searched)
                    split = end + 2 if end >= 0 else -1
                if (len(out) - split > MAX_PATCH_BYTES) if split >= 0 else (len(out) > MAX_DATA_BYTES + MAX_PATCH_BYTES):
                    truncated = True
                    child.kill()
            code = child.finish(truncated)
            stderr = child.stderr
        failed = list(dict.fromkeys(match.group(0) for match in _PROGRAM_FAILED.finditer(stderr)))
        if failed:
            raise _program_refused(args[0], failed)
        if split < 0:  # no change at all (empty output), or a summary larger than MAX_DATA_BYTES: its whole records
            summary, patch = bytes(out[:out.rfind(b"\0", 0, MAX_DATA_BYTES) + 1] if truncated else out), b""
        else:
            summary, patch = bytes(out[:split - 1]), bytes(out[split:split + MAX_PATCH_BYTES])
        return summary, checked(args[0], Completed(patch, code, stderr, truncated))

    def _reader(self, args: list[str], stdin: int | None = None) -> Child:
        """git running `args` as `run` would, for a caller that reads its output as it comes."""
        if args[0] in ("status", "diff") and self._submodules:
            self._neutralise_submodules()
        return Child(self.ctx, [git_program(), *_SAFE_CONFIG, *args], cwd=self.cwd, readable=self.readable,
                     executable=[_git_exec_path()], limits=GIT_LIMITS, env=self._env, pass_fds=(self._fd,),
                     timeout=GIT_TIMEOUT, what="git", stdin=stdin)

    def read(self, args: list[str], enough: Callable[[bytearray], bool], stdin: bytes = b"") -> Completed:
        """Run git and read its output until it ends or `enough(output)` says no more is needed (then git is
        stopped and the answer is `truncated`). `stdin`, at most a pipe's buffer, is what git reads there."""
        if len(stdin) > 4096:
            raise ValueError("git's input must fit a pipe's buffer")
        read_end, write_end = os.pipe() if stdin else (None, None)
        try:
            if write_end is not None:
                os.write(write_end, stdin)  # all of it at once: it fits the pipe, and the write end is closed now
                os.close(write_end)
                write_end = None
            with self._reader(args, read_end) as child:
                if read_end is not None:
                    os.close(read_end)  # the child holds its own copy
                    read_end = None
                out = bytearray()
                truncated = False
                for chunk in child.chunks():
                    if not truncated:
                        out += chunk
                        truncated = enough(out)
                        if truncated:
                            child.kill()  # read on to the end, so that what it said on stderr is kept
                code = child.finish(truncated)
                stderr = child.stderr
        finally:
            for fd in (read_end, write_end):
                if fd is not None:
                    os.close(fd)
        failed = list(dict.fromkeys(match.group(0) for match in _PROGRAM_FAILED.finditer(stderr)))
        if failed:
            raise _program_refused(args[0], failed)
        return Completed(bytes(out), code, stderr, truncated)

    def pathspec(self, real: str | None) -> list[str]:
        """`--` then the literal pathspec of `real`, or of the root when confined (relative to the cwd)."""
        if real is None and not self.confined:
            return ["--"]
        relative = os.path.relpath(real if real is not None else self.root, self.directory)
        return ["--", relative.replace(os.sep, "/")]

    def relative(self) -> list[str]:
        """The diff option that keeps diff output inside the root when confined, and otherwise keeps paths
        relative to the top whatever diff.relative says (they are read that way)."""
        if not self.confined:
            return ["--no-relative"]
        return [f"--relative={os.path.relpath(self.root, self.top).replace(os.sep, '/')}"]

    def has_commits(self) -> bool:
        return self.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).returncode == 0

    def check_revision(self, ref: str) -> None:
        """Refuse a ref git must not be given here (`check_ref`; and where confined, a search of commit messages)."""
        check_ref(ref)
        if self.confined and _SEARCH.search(ref):
            raise ToolError(f"Refused: the ref {ref!r} searches commit messages, and this root is a folder inside a "
                            "larger repository whose other commits are not shown; use git_log (with path) to find "
                            "the commit, then name it by its id")

    def resolve(self, ref: str, peel: str = "commit") -> str:
        """The full object id `ref` names (a commit, unless `peel` says otherwise); refs are checked first."""
        self.check_revision(ref)
        done = self.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{{peel}}}"])
        object_id = done.stdout.decode("ascii", "replace").strip()
        if done.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", object_id):
            what = "an object" if peel == "object" else f"a {peel}"
            raise ToolError(f"Unknown revision: {ref!r} does not name {what} in this repository")
        return object_id

    def revision_names(self, ref: str) -> str:
        """A revision or a range as git is given it to resolve itself: each side peeled to a commit (as
        `revisions` resolves it), an empty side HEAD. A ref that reads as several commits in another way
        (`^!`, `^@`, `^-`, a leading `^`), which `revisions` cannot resolve, is refused as it would be."""
        self.check_revision(ref)
        separator = RANGE.search(ref)
        sides = [ref] if separator is None else [ref[: separator.start()], ref[separator.end():]]
        if any(SEVERAL.search(side) for side in sides):
            raise ToolError(f"Unknown revision: {ref!r} does not name a commit in this repository")
        named = [f"{side or 'HEAD'}^{{commit}}" for side in sides]
        return named[0] if separator is None else separator.group().join(named)

    def revisions(self, ref: str) -> str:
        """A revision or a range (A..B, A...B; an empty side is HEAD) with every side resolved."""
        check_ref(ref)
        separator = RANGE.search(ref)
        if separator is None:
            return self.resolve(ref)
        left, right = ref[: separator.start()], ref[separator.end():]
        return f"{self.resolve(left or 'HEAD')}{separator.group()}{self.resolve(right or 'HEAD')}"

    def display(self, base: str, name: str) -> str:
        """A path git printed relative to `base` (the top, or diff_base), as the roots show it.

        Only a rename's old name can lie outside the roots (git confines the rest): it is not shown.
        """
        real = os.path.normpath(os.path.join(base, name))
        if self.roots.root_of(real) is None:
            return "(outside the workspace roots)"
        return self.roots.display(real) + ("/" if name.endswith("/") else "")  # an untracked folder keeps its '/'



def _inputs(holder: str, git_dir: str, common_dir: str) -> list[str]:
    """The files git reads to locate a repository and to read its configuration (but for includes): the
    .git entry, the commondir file, the repository's and worktree's config, the user's and the system's."""
    home = os.environ.get("HOME") or os.path.expanduser("~")
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(_git_exec_path())))  # PREFIX/libexec/git-core
    return [os.path.join(holder, ".git"), git_dir, os.path.join(git_dir, "commondir"),
            *(os.path.join(folder, name) for folder in dict.fromkeys((git_dir, common_dir))
              for name in ("config", "config.worktree")),
            os.path.join(home, ".gitconfig"), os.path.join(config_home, "git", "config"),
            "/etc/gitconfig", os.path.join(prefix, "etc", "gitconfig")]


def _fingerprint(paths: list[str]) -> tuple[Any, ...] | None:
    """Who each path is and when it last changed, itself and what it leads to; None when one changed too
    recently to tell a later change from it (git's "racy" files), or cannot be looked at."""
    now = time.time_ns()
    marks: list[Any] = []
    for path in paths:
        for follow in (False, True):
            try:
                info = os.stat(path, follow_symlinks=follow)
            except (FileNotFoundError, NotADirectoryError):
                marks.append(None)
                if not follow:
                    marks.append(None)  # no entry: nothing to follow either
                    break
                continue
            except OSError:
                return None
            if stat.S_ISDIR(info.st_mode):  # which folder it is; its entries change whenever git writes a lock
                marks.append((info.st_dev, info.st_ino, info.st_mode))
            elif now - max(info.st_mtime_ns, info.st_ctime_ns) < walk.RACY_NS:
                return None
            else:
                marks.append((info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
            if not follow and not stat.S_ISLNK(info.st_mode):
                marks.append(marks[-1])  # not a link: what it leads to is itself
                break
    return tuple(marks)


def _without_includes(output: bytes) -> tuple[bool, bytes]:
    """Whether `git config -z --show-scope --get-regexp` printed include settings, and its output without them."""
    fields = output.split(b"\0")[:-1]  # scope, then "key\nvalue", each ending with NUL
    if len(fields) % 2:
        return True, output  # not as expected: `_override` says so, and nothing is kept
    pairs = list(zip(fields[0::2], fields[1::2], strict=True))
    kept = [pair for pair in pairs if not pair[1].startswith((b"include.", b"includeif."))]
    if len(kept) == len(pairs):
        return False, output
    return True, b"".join(scope + b"\0" + entry + b"\0" for scope, entry in kept)


def checked(command: str, done: Completed) -> Completed:
    """`done`, or git's own message (the last line of it) as a ToolError when git failed."""
    if done.returncode != 0 and not done.truncated:
        lines = done.stderr.strip().splitlines()
        why = lines[-1].removeprefix("fatal: ") if lines else f"exit status {done.returncode}"
        raise ToolError(f"git {command} failed: {printable(why)}")
    return done


def _program_refused(command: str, failed: list[str]) -> ToolError:
    """What to say when git could not run a program the repository names: which one (git's words, masked),
    that shipcode-mcp runs none, and that an answer without it is not given."""
    said = "; ".join(printable(line[:300]) for line in failed[:3])
    if any("promisor remote" in line or "not allowed" in line for line in failed):
        return ToolError(f"git {command} needs objects this partial clone does not have; fetching them would run a "
                         f"transport program, and shipcode-mcp runs no program a repository names. git said: {said}")
    return ToolError(
        f"Refused: git {command} needs a program that this repository configures (a filter, or a hook), and "
        "shipcode-mcp does not run programs a repository names; git's answer without it could be wrong, so none "
        f"is given. git said: {said}. A clean filter runs on each file git must read again: changed files, or all "
        "of them after their timestamps changed (as when an archive is extracted). If you trust this repository, "
        "running `git status` in it yourself refreshes git's index, after which only changed files need it.")


def _nearest_git(directory: str) -> tuple[str, str] | None:
    """The folder holding the nearest `.git` entry at or above `directory`, and the real path of the git
    folder that entry leads to (a folder, a link, or a gitfile `gitdir: PATH` as submodules and
    worktrees have); None if there is none. NotRegular if that entry is a FIFO, socket or device, or if a
    folder on the way holds one named HEAD (git opens it, and would wait on a FIFO until its deadline)."""
    folder = directory
    while True:
        candidate = os.path.join(folder, ".git")
        try:
            first = read_regular(candidate, 4096)
        except NotRegular as err:
            if err.mode is None or not (stat.S_ISDIR(err.mode) or stat.S_ISLNK(err.mode)):
                raise
            return folder, os.path.realpath(candidate)  # a folder, or a link: judged where it leads
        if first is not None:
            line = first.split(b"\n", 1)[0].rstrip(b"\r")
            if line.startswith(b"gitdir: "):
                return folder, os.path.realpath(os.path.join(folder, os.fsdecode(line[len(b"gitdir: "):])))
            return folder, os.path.realpath(candidate)
        head = os.path.join(folder, "HEAD")  # git asks whether this folder is a bare repository: it opens HEAD
        kind = _special(head)
        if kind is not None:
            raise NotRegular(head, kind, None)
        up = os.path.dirname(folder)
        if up == folder:
            return None
        folder = up


def _special(path: str) -> str | None:
    """What `path` is in words if it is a FIFO, socket or device; None otherwise (a link is judged later,
    where it leads: looking at its target here would tell what lies outside)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode) else safe_open.kind_of(mode)


def _common_dir(git_dir: str) -> str | None:
    """The real path of the folder `<git_dir>/commondir` names (relative to git_dir), as git reads it (trailing
    line ends dropped); None when there is no such file; NotRegular when it is not a regular file."""
    named = read_regular(os.path.join(git_dir, "commondir"), 4096)
    if named is None:
        return None
    return os.path.realpath(os.path.join(git_dir, os.fsdecode(named.rstrip(b"\r\n"))))


def check_ref(ref: str) -> None:
    """Refuse what could be an option, or an object name that reaches a path (`rev:path`)."""
    if not ref or len(ref) > 256:
        raise ToolError("A ref must be 1 to 256 characters long")
    if any(ord(c) < 32 or ord(c) == 127 for c in ref):
        raise ToolError("A ref cannot contain control characters")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in ref):  # (JSON can carry one; no ref name holds one)
        raise ToolError("A ref cannot contain a lone surrogate (\\ud800-\\udfff)")
    if any(side.startswith("-") for side in RANGE.split(ref)):
        raise ToolError(f"Refused: the ref {ref!r} starts with '-' and would be read as an option")
    if ":" in _SIDE.sub("", ref):
        raise ToolError(f"Refused: the ref {ref!r} contains ':'. To see a file as of a revision, "
                        "call git_show with that revision as ref and the file as path")


def repo_for(ctx: Context, roots: Roots, path: str | None) -> tuple[Repo, str | None]:
    """The repository of `path` (default: the first root) and the resolved path, if one was given."""
    real = roots.resolve(path) if path is not None else None
    return Repo(ctx, roots, real if real is not None else roots.first), real
