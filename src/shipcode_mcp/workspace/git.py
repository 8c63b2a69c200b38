"""git_status, git_log, git_diff, git_show: the real `git`, run so that no argument can become an option.

Every ref is checked (nothing that starts with '-', no control characters, no `rev:path` object
names) and resolved to a full object id with `rev-parse --verify --end-of-options` before any other
command sees it; paths are resolved inside the roots and passed after `--` as literal pathspecs.
Git runs without the environment's GIT_* variables, without optional locks, pagers, external diff
programs, textconv filters, fsmonitor hooks or signature checks, with a deadline and bounded output.
When a root is a folder inside a larger repository, output is confined to that folder (and git_show
shows only commits there). The repository is checked once (`Repo.__init__`): git only uses a `.git`
folder (never a bare repository it stumbled on), whose real path is inside the roots or is the `.git`
of the larger repository holding the root; every later command is pinned to that repository.

That check does not depend on the kernel sandbox (which is the backstop, not the only defence):
- What git reads lies where the repository is: before git starts, each entry of the git folder (HEAD,
  config, packed-refs, shallow, index, commondir...) and everything in the folders git reads there
  (objects, refs, logs, info, worktree and submodule git folders, a rebase's state) is looked at without
  following links; one that leads outside the roots (for a larger repository: outside its `.git`), or is
  or leads to a FIFO or device, refuses the repository; so does an alternate object store outside the
  roots. Folders git never reads for these tools (hooks, lfs, rr-cache) are not walked.
- Nothing the repository names runs: hooks point at /dev/null, the index is never refreshed and
  rewritten, mailmap files are not read, no transport may start (a partial clone's lazy fetch), and
  every filter the configuration declares, the submodules' included (names are arbitrary, so they are
  read from git's own view of the configuration, includes and all), is replaced by a "required" filter
  with no program. A file that needs one makes git stop, and the tool says that the repository names a
  program shipcode-mcp does not run; so does any other sign on stderr that git could not run a program
  (one the sandbox stopped), since git then exits 0 with an answer that may be wrong.
- What only the kernel sandbox stops: a filter declared in the config of a submodule whose git folder
  is not one of those under .git/modules (which are neutralised): the old layout, with the .git folder
  in its own work tree, or a .git file leading into a folder the check does not walk (.git/hooks); and
  what git reads through a submodule's .git file that leads outside (status and diff run git there;
  only its dirty bit and commit id could come back).
- The check looks at paths, before git opens them: someone who can write in the repository while the
  server runs can swap an entry for a link to the outside after it was looked at, and git follows it.
  Only the kernel sandbox closes that race (git may read nothing outside the roots and the one .git it
  was granted).
- File names, refs and commit metadata reach the model's text only through `printable`; diff and show
  output keeps its content lines as they are and has every other line masked.

Cost: a call runs git once for its own command (git_diff's file list and patch come from the same run).
What git answers when locating the repository (rev-parse) and about its configuration (git config) is
remembered (`_known`) while none of the files those answers come from changed (the .git entry, commondir,
the repository's, the user's and the system's config: `_inputs`); a configuration with includes, or a
file changed in the last two seconds, is asked about again on each call. The walk of the git folders
runs on every call, but reads again only the folders that changed, or hold a link (`_scanned`: a
folder's entries cannot change without its change time changing); when none changed and none holds a
link, the whole walk is checked in one pass, a stat per folder (`_trees`). git's answers are judged on
every call.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..primitives import ToolError, inside
from . import safe_open
from .listing import walk_readable
from .process import Child, Completed, child_environment, run
from .sandbox import GIT_LIMITS
from .text import cut_output, is_binary, plural, printable, result, size_text

if TYPE_CHECKING:
    from ..context import Context
    from ..primitives import ToolResult
    from .roots import Roots

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
_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv")
_SIDE = re.compile(r"@\{[^}]*\}")  # reflog and upstream syntax (HEAD@{1}, main@{upstream}) may hold ':'
_RANGE = re.compile(r"\.\.\.?")
_SEARCH = re.compile(r"\{/|:/")
"""Revision syntax that searches commit messages (`REV^{/text}`, `:/text`): in a larger repository it would
answer from commits outside the root (a yes/no oracle on their messages)."""

_GIT_PATHS = ("objects", "refs", "packed-refs", "shallow", "index", "HEAD", "logs", "info", "commondir", "config",
              "objects/info/alternates", "modules", "worktrees")
"""Where git reads a repository's state (`rev-parse --git-path`, git's own rules for worktrees and the
common folder): each must lie in the git folders `Repo` checks, and be an entry or a folder it walks."""
_GIT_FOLDERS = frozenset(("objects", "refs", "logs", "info", "modules", "worktrees",
                          "rebase-merge", "rebase-apply", "sequencer", "remotes", "branches", "reftable"))
"""The folders of a git folder that git reads for the tools' commands: the folders of _GIT_PATHS, those
`git status` reads (the state of a rebase, cherry-pick or revert; a remote defined by a file), and the
ref store of git 2.45+. The check walks these; every other entry is looked at, never into."""
MAX_GIT_ENTRIES = 500_000
"""The git folders are walked entry by entry (a microsecond each); more than this is refused, not walked."""
MAX_FILTERS = 256
"""Filters and transports a configuration may name: each costs overrides (up to four for a filter) in every
git command's environment."""
_CONFIG_KEYS = r"^(filter\..+\.(clean|smudge|process)|protocol\..+\.allow|core\.(attributesfile|excludesfile)|diff\.orderfile)$"
"""The configuration `Repo` reads to neutralise: programs (filters, transports) and files read from outside."""
_CONFIG_KEYS_AND_INCLUDES = _CONFIG_KEYS[:-2] + r"|include\.path|includeif\..+\.path)$"
MAX_KNOWN = 256
"""Repositories whose discovery `_known` keeps."""
_RACY_NS = 2_000_000_000
"""A file changed less than this long ago may change again within the same timestamp: not trusted to a cache."""
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


def _git() -> str:
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
        done = run(None, [_git(), "--exec-path"], cwd="/", readable=[], limits=GIT_LIMITS, limit=64 * 1024, what="git")
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

    def __init__(self, ctx: Context, roots: Roots, target: str) -> None:
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
        self._submodules: list[str] = []  # git folders under .git/modules whose filters are not neutralised yet
        self.readable = list(roots.paths)  # what git may read in its sandbox; _discover adds the repository's
        try:
            self._discover()
        except BaseException:
            self.close()
            raise
        self.confined = roots.root_of(self.top) is None
        self.readable = self._readable()
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
        except _NotRegular as err:
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
        if not all(_walked(path, git_dir) or _walked(path, common_dir) for path in where):
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
        walked (`_scan`): a shared hooks folder, or a large lfs/ one, is no reason to refuse."""
        own = common_dir

        def allowed(real: str) -> bool:
            return inside(real, own) if confined else self.roots.root_of(real) is not None

        where = "its own .git folder" if confined else "the workspace roots"
        found = _Found()
        folders = [own] if inside(git_dir, own) else [own, git_dir]
        problems = [_scan(folder, allowed, found, store=False) for folder in folders]
        self._submodules = found.submodules
        seen: set[str] = set()  # each store once: this ends, and goes deeper than git (which stops at 5)
        while not any(problems) and found.alternates:
            files, found.alternates = found.alternates, []
            for file in files:
                for store in _read_alternates(file, self._show(file)):
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
                        problems.append(_scan(real, allowed, found, store=True))
        for problem in problems:
            if problem is not None:
                path, what = problem
                if what is None:
                    raise ToolError(f"Refused: the git folders of {printable(shown)} hold more than {MAX_GIT_ENTRIES} "
                                    "entries, too many to check for links that lead outside (`git gc` packs loose objects)")
                if what != _LEADS_OUT:
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
                if variable in ("clean", "process") and value:
                    overrides.update({f"filter.{name}.clean": "", f"filter.{name}.process": "",
                                      f"filter.{name}.required": "true"})
            elif section == "protocol":
                overrides[f"protocol.{name}.allow"] = "never"
            elif files and scope in ("local", "worktree") and not self._inside_roots(value):
                overrides[key] = "/dev/null"
        named = {key.rpartition(".")[0] for key in overrides if key.startswith(("filter.", "protocol."))}
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

    def _run(self, args: list[str], env: dict[str, str], limit: int) -> Completed:
        done = run(self.ctx, [_git(), *_SAFE_CONFIG, *args], cwd=self.cwd, readable=self.readable,
                   executable=[_git_exec_path()], limits=GIT_LIMITS, env=env, pass_fds=(self._fd,), limit=limit,
                   timeout=GIT_TIMEOUT, what="git")
        failed = list(dict.fromkeys(match.group(0) for match in _PROGRAM_FAILED.finditer(done.stderr)))
        if failed:
            raise _program_refused(args[0], failed)
        return done

    def check(self, args: list[str], *, limit: int = MAX_DATA_BYTES) -> Completed:
        """Run and fail with git's own message (the last line of it) when git fails."""
        return _checked(args[0], self.run(args, limit=limit))

    def diff(self, args: list[str]) -> tuple[bytes, Completed] | None:
        """One `git diff --numstat -z --patch ...`: its file summary (complete, within MAX_DATA_BYTES) and its
        patch (within MAX_PATCH_BYTES, `truncated` when cut), read as they come so that git is stopped as soon
        as the patch is long enough. git ends the summary with an empty record: the first two NULs in a row
        (no path is empty, and a patch line never comes before them). None when the output does not start
        with the summary: the combined diffs of unmerged paths come before it, and are read with two runs."""
        if self._submodules:
            self._neutralise_submodules()
        with Child(self.ctx, [_git(), *_SAFE_CONFIG, *args], cwd=self.cwd, readable=self.readable,
                   executable=[_git_exec_path()], limits=GIT_LIMITS, env=self._env, pass_fds=(self._fd,),
                   timeout=GIT_TIMEOUT, what="git") as child:
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
        return summary, _checked(args[0], Completed(patch, code, stderr, truncated))

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

    def resolve(self, ref: str, peel: str = "commit") -> str:
        """The full object id `ref` names (a commit, unless `peel` says otherwise); refs are checked first."""
        check_ref(ref)
        if self.confined and _SEARCH.search(ref):
            raise ToolError(f"Refused: the ref {ref!r} searches commit messages, and this root is a folder inside a "
                            "larger repository whose other commits are not shown; use git_log (with path) to find "
                            "the commit, then name it by its id")
        done = self.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{{peel}}}"])
        object_id = done.stdout.decode("ascii", "replace").strip()
        if done.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", object_id):
            what = "an object" if peel == "object" else f"a {peel}"
            raise ToolError(f"Unknown revision: {ref!r} does not name {what} in this repository")
        return object_id

    def revisions(self, ref: str) -> str:
        """A revision or a range (A..B, A...B; an empty side is HEAD) with every side resolved."""
        check_ref(ref)
        separator = _RANGE.search(ref)
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
            elif now - max(info.st_mtime_ns, info.st_ctime_ns) < _RACY_NS:
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


def _checked(command: str, done: Completed) -> Completed:
    """`done`, or git's own message (the last line of it) as a ToolError when git failed."""
    if done.returncode != 0 and not done.truncated:
        lines = done.stderr.strip().splitlines()
        why = lines[-1].removeprefix("fatal: ") if lines else f"exit status {done.returncode}"
        raise ToolError(f"git {command} failed: {printable(why)}")
    return done


_LEADS_OUT = "a symbolic link that leads there"


def _walked(path: str, git_dir: str) -> bool:
    """Whether `_scan` looked at `path` (normalised): an entry of the git folder, or anything in a folder it walks."""
    base = git_dir.rstrip("/") + "/"
    if not path.startswith(base) or len(path) == len(base):
        return False
    first, _, rest = path[len(base):].partition("/")
    return not rest or first in _GIT_FOLDERS


class _Found:
    """What a walk of the git folders found that needs a closer look, and how many entries it may still see."""

    __slots__ = ("alternates", "budget", "submodules")

    def __init__(self) -> None:
        self.alternates: list[str] = []
        self.submodules: list[str] = []
        self.budget = MAX_GIT_ENTRIES


_GIT, _NEST, _ALL = 0, 1, 2
"""What a folder met by `_scan` is: a git folder (only its entries and the folders git reads in it are
looked at), a folder that holds git folders (modules/, worktrees/: each one below holding a HEAD is one),
or a folder git reads all of."""


def _scan(top: str, allowed: Callable[[str], bool], found: _Found, *, store: bool) -> tuple[str, str | None] | None:
    """Look, without following links, at the entries git reads under the git folder (or, `store`, the object
    store) `top`, and at what each link leads to: the first entry that is a link leading where `allowed` says
    no, a FIFO, socket or device, or a link to one, as (path, what it is); (top, None) when more entries than
    the budget allows. A link to a folder that stays inside is followed (that folder is looked at too, once).
    In a git folder (the top, and each one under modules/ or worktrees/) every entry is looked at, but only
    the folders git reads (_GIT_FOLDERS) are entered: not hooks (none runs), lfs, annex or rr-cache, which
    can hold a link to a shared folder elsewhere, or more entries than anything git reads. The
    `info/alternates` files of object stores (by their real path) and the submodules' git folders (those
    under modules/ holding a config) are added to `found`.

    When every folder of the last walk of `top` is as it was (`_trees`), its findings are used as a whole."""
    tree = _trees.get((top, store))
    if tree is not None and tree.unchanged(top):
        found.budget -= tree.entries
        if found.budget < 0:
            return top, None
        found.alternates.extend(tree.alternates)
        found.submodules.extend(tree.submodules)
        return None
    budget, alternates_before, submodules_before = found.budget, len(found.alternates), len(found.submodules)
    names: list[str] = []  # the folders walked, from top, and their marks: the tree, if each could be remembered
    marks: list[tuple[int, ...]] = []
    whole = True
    pending = [(top, "", _ALL if store else _GIT)]  # (real folder, its path from top as git names it: links kept, kind)
    visited = {top}
    while pending:
        folder, logical, kind = pending.pop()
        key = (folder, logical, kind, store)
        mark = _folder_mark(folder)  # before reading it: a change while it is read shows next time
        if mark is None or not (folder == top or folder.startswith(top + "/")):
            whole = False
        elif whole:
            names.append(folder[len(top) + 1:] or ".")
            marks.append(mark)
        seen = _scanned.get(key)
        if seen is not None and mark is not None and seen[0] == mark:  # as it was: its findings again
            found.budget -= seen[1]
            if found.budget < 0:
                return top, None
            pending.extend(seen[2])
            found.alternates.extend(seen[3])
            found.submodules.extend([folder] * seen[4])
            continue
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            whole = False
            continue  # gone, or a file (a .git file git will say it cannot read): nothing below to look at
        except OSError as err:
            return folder, f"a folder that cannot be read ({os.strerror(err.errno) if err.errno else err})"
        found.budget -= len(entries)
        if found.budget < 0:
            return top, None
        if kind == _NEST and any(entry.name == "HEAD" for entry in entries):
            kind = _GIT  # a submodule's or a linked worktree's own git folder
        entered: list[tuple[str, str, int]] = []
        alternates, submodules, linked = len(found.alternates), len(found.submodules), False
        for entry in entries:  # the kind comes with the entry (d_type): a syscall only for links and oddities
            if entry.is_file(follow_symlinks=False):
                if entry.name == "alternates":
                    _alternates_file(entry.path, f"{logical}/{entry.name}", store, found.alternates)
                elif entry.name == "config" and not store and logical.startswith("modules/"):
                    found.submodules.append(folder)
                continue
            name = f"{logical}/{entry.name}" if logical else entry.name
            inner = kind if kind != _GIT else _NEST if entry.name in ("modules", "worktrees") else (
                _ALL if entry.name in _GIT_FOLDERS else None)
            if entry.is_dir(follow_symlinks=False):
                if inner is not None:
                    pending.append((entry.path, name, inner))
                    entered.append((entry.path, name, inner))
                continue
            linked = True  # where a link leads can change without this folder changing: never remembered
            if not entry.is_symlink():
                return entry.path, safe_open.kind_of(entry.stat(follow_symlinks=False).st_mode)
            try:
                if inner is None and entry.is_dir():
                    continue  # a link to a folder git never enters (a shared hooks folder), wherever it leads
            except OSError:
                continue
            real = os.path.realpath(entry.path)
            if not allowed(real):
                return entry.path, _LEADS_OUT
            try:
                mode = os.stat(real).st_mode
            except OSError:
                continue  # a dangling link: git finds nothing there either
            if stat.S_ISDIR(mode):
                if inner is not None and real not in visited:
                    visited.add(real)
                    pending.append((real, name, inner))
            elif not stat.S_ISREG(mode):
                return entry.path, f"a symbolic link to {safe_open.kind_of(mode)}"
            elif entry.name == "alternates":
                _alternates_file(real, name, store, found.alternates)
        if mark is not None and not linked:
            if len(_scanned) >= MAX_SCANNED:
                _scanned.clear()
            _scanned[key] = (mark, len(entries), entered, found.alternates[alternates:],
                             len(found.submodules) - submodules)
        else:
            whole = False
    if whole:
        _remember_tree((top, store), _Tree(names, marks, budget - found.budget, found.alternates[alternates_before:],
                                           found.submodules[submodules_before:]))
    return None


MAX_SCANNED = 200_000
"""Folders of git folders whose findings `_scanned` keeps."""
_scanned: dict[tuple[str, str, int, bool], tuple[tuple[int, ...], int, list[tuple[str, str, int]], list[str], int]] = {}
"""What `_scan` found in a folder holding no link (its entries: how many, the folders to enter, alternates
files, a submodule's config), by folder, with the folder's identity and times (`_folder_mark`). Entries
are added, removed, renamed or replaced (a file by a FIFO or a link) only through the folder, which
changes its modification and change times (the change time cannot be set back), so while those are the
same its entries are: the folder's findings are used again without reading it. Where a link leads can
change without its folder changing, so a folder holding a link is read on every call."""


class _Tree:
    """A walk of a git folder (or object store) that met no link and no folder changed too recently: every
    folder it read (relative to the top, "." for the top) with its mark, and what the walk found. While each
    folder's mark is the same, each folder's entries are (see `_scanned`), so the walk would go through the
    same folders and find the same: `unchanged` checks them all in one pass, a stat each and no other work."""

    __slots__ = ("alternates", "entries", "marks", "names", "newest", "submodules")

    def __init__(self, names: list[str], marks: list[tuple[int, ...]], entries: int, alternates: list[str],
                 submodules: list[str]) -> None:
        self.names, self.marks, self.entries = names, marks, entries
        self.alternates, self.submodules = alternates, submodules
        self.newest = max(max(mark[3], mark[4]) for mark in marks)

    def unchanged(self, top: str) -> bool:
        """Whether every folder is as it was, and none changed too recently to tell (as `_folder_mark`). The
        folders are looked up from the top, opened now without following a link (as a path from / would be:
        each folder on the way is one of those checked)."""
        if time.time_ns() - self.newest < _RACY_NS:
            return False
        try:
            fd = os.open(top, safe_open.DIR_FLAGS)
        except OSError:
            return False
        try:
            look = os.stat
            return [(info.st_dev, info.st_ino, info.st_mode, info.st_mtime_ns, info.st_ctime_ns)
                    for info in [look(name, dir_fd=fd, follow_symlinks=False) for name in self.names]] == self.marks
        except OSError:
            return False
        finally:
            os.close(fd)


MAX_TREES = 64
"""Walks of git folders that `_trees` keeps (besides MAX_SCANNED folders in all)."""
_trees: dict[tuple[str, bool], _Tree] = {}
"""The last walk of a git folder or object store (by top, and whether a store), when it can be checked again in
one pass (`_Tree`)."""
_trees_lock = threading.Lock()


def _remember_tree(key: tuple[str, bool], tree: _Tree) -> None:
    if len(tree.names) > MAX_SCANNED:
        return
    with _trees_lock:
        _trees.pop(key, None)
        while _trees and (len(_trees) >= MAX_TREES
                          or sum(len(kept.names) for kept in _trees.values()) + len(tree.names) > MAX_SCANNED):
            _trees.pop(next(iter(_trees)))
        _trees[key] = tree


def _folder_mark(folder: str) -> tuple[int, ...] | None:
    """A folder's identity and times; None when it changed too recently to be told from a change to come,
    or cannot be looked at."""
    try:
        info = os.stat(folder, follow_symlinks=False)
    except OSError:
        return None
    if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < _RACY_NS:
        return None
    return (info.st_dev, info.st_ino, info.st_mode, info.st_mtime_ns, info.st_ctime_ns)


def _alternates_file(path: str, name: str, store: bool, alternates: list[str]) -> None:
    """Add `path` to `alternates` if its name in the scanned folder is that of an object store's list of
    alternates (a submodule's too: modules/NAME/objects/info/alternates)."""
    name = name.lstrip("/")
    wanted = "info/alternates" if store else "objects/info/alternates"
    if name == wanted or (not store and name.endswith(f"/{wanted}")):
        alternates.append(os.path.realpath(path))


def _read_alternates(file: str, shown: str) -> list[str]:
    """The object stores an `info/alternates` file lists, as git reads it: a path a line ("#" comments and
    empty lines skipped, C-quoted when it starts with '"'), relative ones from the store holding the file."""
    base = os.path.dirname(os.path.dirname(file))
    try:
        data = _read_regular(file, 1024 * 1024 + 1)
    except _NotRegular as err:
        raise ToolError(f"Refused: cannot read {printable(shown)}: it is {err.what}") from None
    if data is None:
        return []  # gone meanwhile: git finds no store there either
    if len(data) > 1024 * 1024:
        raise ToolError(f"Refused: {printable(shown)} is too large to check")
    stores = []
    for raw in data.split(b"\n"):
        if not raw or raw.startswith(b"#"):
            continue
        line = _unquote(raw) if raw.startswith(b'"') else raw
        if line is None:
            raise ToolError(f"Refused: {printable(shown)} holds a line that cannot be read")
        stores.append(os.path.join(base, os.fsdecode(line)))
    return stores


_C_ESCAPES = {ord(k): v for k, v in {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}.items()}


def _unquote(quoted: bytes) -> bytes | None:
    """A C-quoted name as git writes one ("a\\tb\\303\\251"), or None when it is not one."""
    out = bytearray()
    at = 1
    while at < len(quoted):
        char = quoted[at]
        if char == ord('"'):
            return bytes(out) if at == len(quoted) - 1 else None
        if char != ord("\\"):
            out.append(char)
            at += 1
            continue
        code = quoted[at + 1:at + 2]
        if code and code[0] in _C_ESCAPES:
            out.append(_C_ESCAPES[code[0]])
            at += 2
        elif re.fullmatch(rb"[0-3][0-7][0-7]", quoted[at + 1:at + 4]):
            out.append(int(quoted[at + 1:at + 4], 8))
            at += 4
        else:
            return None
    return None


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
    worktrees have); None if there is none. _NotRegular if that entry is a FIFO, socket or device, or if a
    folder on the way holds one named HEAD (git opens it, and would wait on a FIFO until its deadline)."""
    folder = directory
    while True:
        candidate = os.path.join(folder, ".git")
        try:
            first = _read_regular(candidate, 4096)
        except _NotRegular as err:
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
            raise _NotRegular(head, kind, None)
        up = os.path.dirname(folder)
        if up == folder:
            return None
        folder = up


class _NotRegular(Exception):
    """A file git reads that is not a regular file (`mode`, None when it could not be opened at all), or
    cannot be read: `what` it is, in words."""

    def __init__(self, path: str, what: str, mode: int | None) -> None:
        super().__init__(path, what)
        self.path, self.what, self.mode = path, what, mode


def _read_regular(path: str, limit: int) -> bytes | None:
    """The first `limit` bytes of the regular file `path`; None if there is nothing there; else _NotRegular.

    Opened without following a link and without blocking, then read only if fstat says it is a regular
    file: a plain open() of a FIFO waits for a writer forever (and an isfile check before it is a race)."""
    try:
        fd = os.open(path, safe_open.READ_FLAGS | safe_open.NOFOLLOW | safe_open.CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _NotRegular(path, "a symbolic link", stat.S_IFLNK) from None
        why = os.strerror(err.errno) if err.errno else str(err)
        raise _NotRegular(path, f"a file that cannot be read ({why})", None) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _NotRegular(path, safe_open.kind_of(mode), mode)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


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
    line ends dropped); None when there is no such file; _NotRegular when it is not a regular file."""
    named = _read_regular(os.path.join(git_dir, "commondir"), 4096)
    if named is None:
        return None
    return os.path.realpath(os.path.join(git_dir, os.fsdecode(named.rstrip(b"\r\n"))))


def check_ref(ref: str) -> None:
    """Refuse what could be an option, or an object name that reaches a path (`rev:path`)."""
    if not ref or len(ref) > 256:
        raise ToolError("A ref must be 1 to 256 characters long")
    if any(ord(c) < 32 or ord(c) == 127 for c in ref):
        raise ToolError("A ref cannot contain control characters")
    if any(side.startswith("-") for side in _RANGE.split(ref)):
        raise ToolError(f"Refused: the ref {ref!r} starts with '-' and would be read as an option")
    if ":" in _SIDE.sub("", ref):
        raise ToolError(f"Refused: the ref {ref!r} contains ':'. To see a file as of a revision, "
                        "call git_show with that revision as ref and the file as path")


def _repo_for(ctx: Context, roots: Roots, path: str | None) -> tuple[Repo, str | None]:
    """The repository of `path` (default: the first root) and the resolved path, if one was given."""
    real = roots.resolve(path) if path is not None else None
    return Repo(ctx, roots, real if real is not None else roots.first), real


# -- git_status ---------------------------------------------------------------------------------------
def git_status(ctx: Context, roots: Roots) -> ToolResult:
    reports: list[dict[str, Any]] = []
    texts: list[str] = []
    for root in roots.paths:
        try:
            repo = Repo(ctx, roots, root)
        except ToolError as err:
            if len(roots.paths) == 1:
                raise
            reports.append({"root": root, "repository": False, "branch": None, "commit": None, "upstream": None,
                            "ahead": 0, "behind": 0, "files": [], "truncated": False})
            texts.append(f"# {printable(root)}\n{err}")
            continue
        with repo:
            done = repo.check(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", *repo.pathspec(None)])
            report = _parse_status(repo, done.stdout, done.truncated)
        report["root"] = root
        reports.append(report)
        text = _status_text(report)
        texts.append(f"# {printable(root)}\n{text}" if len(roots.paths) > 1 else text)
    if not any(report["repository"] for report in reports):
        raise ToolError("None of the workspace roots is in a git repository")
    return result("\n\n".join(texts), {"repositories": reports})


def _parse_status(repo: Repo, output: bytes, cut: bool) -> dict[str, Any]:
    report: dict[str, Any] = {"root": repo.root, "repository": True, "branch": None, "commit": None,
                              "upstream": None, "ahead": 0, "behind": 0, "files": [], "truncated": cut}
    records = output.decode("utf-8", "surrogateescape").split("\0")
    if cut:
        records = records[:-1]  # the last one may be partial
    files: list[dict[str, Any]] = report["files"]
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        if record.startswith("# "):
            _status_header(report, record[2:])
            continue
        kind = record[:1]
        entry: dict[str, Any]
        if kind in ("1", "2", "u"):
            fields = record.split(" ", {"1": 8, "2": 9, "u": 10}[kind])
            entry = {"path": repo.display(repo.top, fields[-1]), "index": fields[1][0], "worktree": fields[1][1]}
            if kind == "2":
                entry["kind"] = "renamed" if fields[8].startswith("R") else "copied"
                entry["orig_path"] = repo.display(repo.top, records[index]) if index < len(records) else ""
                index += 1
            else:
                entry["kind"] = "unmerged" if kind == "u" else "changed"
        elif kind in ("?", "!"):
            entry = {"path": repo.display(repo.top, record[2:]), "index": kind, "worktree": kind,
                     "kind": "untracked" if kind == "?" else "ignored"}
        else:
            continue
        if len(files) >= MAX_STATUS_ENTRIES:
            report["truncated"] = True
            break
        files.append(entry)
    return report


def _status_header(report: dict[str, Any], header: str) -> None:
    name, _, value = header.partition(" ")
    if name == "branch.oid":
        report["commit"] = None if value == "(initial)" else value
    elif name == "branch.head":
        report["branch"] = None if value == "(detached)" else value
    elif name == "branch.upstream":
        report["upstream"] = value
    elif name == "branch.ab":
        ahead, _, behind = value.partition(" ")
        report["ahead"], report["behind"] = int(ahead.lstrip("+") or 0), int(behind.lstrip("-") or 0)


def _status_text(report: dict[str, Any]) -> str:
    if report["branch"] is None:
        head = "HEAD (detached at " + (report["commit"] or "?")[:12] + ")"
    elif report["commit"] is None:
        head = f"No commits yet on {printable(report['branch'])}"
    else:
        head = printable(report["branch"])
    if report["upstream"]:
        head += f"...{printable(report['upstream'])}"
        counts = [f"{word} {n}" for word, n in (("ahead", report["ahead"]), ("behind", report["behind"])) if n]
        if counts:
            head += f" [{', '.join(counts)}]"
    lines = [f"## {head}"]
    for entry in report["files"]:
        code = "??" if entry["kind"] == "untracked" else "!!" if entry["kind"] == "ignored" else (
            entry["index"] + entry["worktree"]).replace(".", " ")
        moved = f"{printable(entry['orig_path'])} -> " if "orig_path" in entry else ""
        lines.append(f"{code} {moved}{printable(entry['path'])}")
    if not report["files"]:
        lines.append("nothing to commit, working tree clean")
    if report["truncated"]:
        lines.append(f"[Only the first {len(report['files'])} entries are shown.]")
    return "\n".join(lines)


# -- git_log -------------------------------------------------------------------------------------------
_LOG_FIELDS = ("commit", "parents", "author", "email", "date", "subject", "body")
_LOG_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%aI%x00%s%x00%b"
_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def git_log(ctx: Context, roots: Roots, limit: int, path: str | None, ref: str | None) -> ToolResult:
    repo, real = _repo_for(ctx, roots, path)
    # Each record starts with a mark no commit can hold (it is made now): whatever a subject or body holds,
    # it cannot start a record of its own; the id and parents, git's own, come first in each.
    mark = "%x00" + secrets.token_hex(16) + "%x00"
    with repo:
        revision = repo.revisions(ref) if ref is not None else "HEAD"
        follow = ["--follow"] if real is not None and not os.path.isdir(real) else []
        # --relative keeps a larger repository's commits outside the root out, renames followed there too.
        args = ["log", "--no-color", "--encoding=UTF-8", f"--format={mark}{_LOG_FORMAT}", f"--max-count={limit + 1}",
                *follow, *repo.relative(), "--end-of-options", revision, *repo.pathspec(real)]
        done = repo.run(args)
        # Whether there are commits at all is asked only when the log failed: one git run in the usual case.
        if done.returncode != 0 and not done.truncated and ref is None and not repo.has_commits():
            return result("No commits yet.", {"commits": [], "truncated": False})
        _checked("log", done)
    records = done.stdout.decode("utf-8", "replace").split(mark.replace("%x00", "\0"))[1:]
    if done.truncated and records:
        records.pop()  # the last one may be partial
    commits: list[dict[str, Any]] = []
    lines: list[str] = []
    for text in records:
        fields = text.split("\0", len(_LOG_FIELDS) - 1)
        if len(fields) != len(_LOG_FIELDS) or not _OBJECT_ID.fullmatch(fields[0]):
            continue  # not as git writes one
        record = dict(zip(_LOG_FIELDS, fields, strict=True))
        if len(commits) == limit:  # the one asked for beyond the limit: it only tells that there are more
            break
        body = record["body"].strip()
        commits.append({
            "commit": record["commit"],
            "parents": record["parents"].split(),
            "author": record["author"],
            "email": record["email"],
            "date": record["date"],
            "subject": record["subject"],
            "body": body[:MAX_BODY_CHARS] + ("…" if len(body) > MAX_BODY_CHARS else ""),
        })
        lines.append(f"{record['commit'][:12]} {printable(record['date'][:16].replace('T', ' '))} "
                     f"{printable(record['author'])}: {printable(record['subject'])}")
        body_lines = body.splitlines()
        lines.extend(f"    {printable(line)}" for line in body_lines[:10])
        if len(body_lines) > 10:
            lines.append(f"    … ({len(body_lines) - 10} more lines; git_show shows the whole message)")
    truncated = len(records) > limit or done.truncated
    if not commits:
        lines.append("No commits match.")
    elif truncated:
        lines.append(f"[Showing the {plural(len(commits), 'most recent commit')}; there are more. "
                     "Raise limit, or narrow with path or a ref range such as main..HEAD.]")
    return result("\n".join(lines), {"commits": commits, "truncated": truncated})


# -- git_diff ------------------------------------------------------------------------------------------
def git_diff(ctx: Context, roots: Roots, ref: str | None, staged: bool, path: str | None) -> ToolResult:
    repo, real = _repo_for(ctx, roots, path)
    with repo:
        options = [*_DIFF_FLAGS, *repo.relative(), *(["--cached"] if staged else [])]
        revisions: list[str] = []  # after every option: once --end-of-options is given, nothing is one
        if ref is not None:
            revision = repo.revisions(ref)
            if staged and _RANGE.search(revision):
                raise ToolError("staged compares the index with one revision; a range cannot be combined with it")
            revisions = ["--end-of-options", revision]
        elif staged and not repo.has_commits():
            revisions = ["--end-of-options", _empty_tree(repo)]
        spec = repo.pathspec(real)
        both = repo.diff(["diff", *options, "--numstat", "-z", "--patch", *revisions, *spec])
        if both is None:  # during a merge with conflicts
            numstat = repo.check(["diff", *options, "--numstat", "-z", *revisions, *spec]).stdout
            patch = repo.check(["diff", *options, "--patch", *revisions, *spec], limit=MAX_PATCH_BYTES)
        else:
            numstat, patch = both
        files = _parse_numstat(repo, numstat)
    diff = cut_output(patch.stdout, patch.truncated)
    what = _diff_subject(ref, staged)
    if not files:
        text = f"No changes ({what})."
    else:
        added = sum(f["added"] or 0 for f in files)
        deleted = sum(f["deleted"] or 0 for f in files)
        summary = [f"{plural(len(files), 'file')} changed ({what}), +{added} -{deleted}:"]
        for entry in files:
            counts = "binary" if entry["added"] is None else f"+{entry['added']} -{entry['deleted']}"
            moved = f"{printable(entry['old_path'])} -> " if "old_path" in entry else ""
            summary.append(f"  {moved}{printable(entry['path'])} ({counts})")
        text = "\n".join(summary) + "\n\n" + _mask_patch(diff)
        if patch.truncated:
            text += (f"\n[The diff is longer than {size_text(MAX_PATCH_BYTES)} and was cut here. The file list "
                     "above is complete; pass path to see one file's changes.]")
    return result(text.rstrip("\n"), {"files": files, "diff": diff, "truncated": patch.truncated})


def _empty_tree(repo: Repo) -> str:
    """The id of the empty tree in this repository's hash (staged changes before the first commit)."""
    done = repo.check(["hash-object", "-t", "tree", "/dev/null"])
    return done.stdout.decode("ascii").strip()


def _diff_subject(ref: str | None, staged: bool) -> str:
    if staged:
        return f"staged, against {ref}" if ref else "staged, against HEAD"
    if ref is None:
        return "unstaged, working tree against the index"
    return ref if _RANGE.search(ref) else f"working tree against {ref}"


def _parse_numstat(repo: Repo, output: bytes) -> list[dict[str, Any]]:
    """`--numstat -z` records: `ADDED\tDELETED\tPATH`, or for a rename `ADDED\tDELETED\t` then the old and
    the new path as records of their own; `-` counts for a binary file. A partial last record (a summary
    cut at MAX_DATA_BYTES) is left out."""
    records = output.decode("utf-8", "surrogateescape").split("\0")
    files: list[dict[str, Any]] = []
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        parts = record.split("\t", 2)
        if len(parts) != 3:
            continue
        added, deleted, name = parts
        entry: dict[str, Any] = {}
        if name == "" and index + 1 < len(records):  # a rename: old and new path follow
            entry["old_path"] = _diff_path(repo, records[index])
            name = records[index + 1]
            index += 2
            if not name:
                break  # a rename cut after its old path: no path is empty
        entry = {"path": _diff_path(repo, name), **entry,
                 "added": None if added == "-" else int(added), "deleted": None if deleted == "-" else int(deleted)}
        files.append(entry)
    return files


def _diff_path(repo: Repo, name: str) -> str:
    return repo.display(repo.diff_base, name)


# -- git_show ------------------------------------------------------------------------------------------
def git_show(ctx: Context, roots: Roots, ref: str, path: str | None) -> ToolResult:
    repo, real = _repo_for(ctx, roots, path)
    with repo:
        if real is None:
            # Confined, only a commit (a tag peeled): a tree or blob would show files outside the root.
            object_id = repo.resolve(ref, "commit" if repo.confined else "object")
            object_type = repo.check(["cat-file", "-t", object_id]).stdout.decode("ascii").strip()
            shown = None
            if object_type == "tree":  # as `git show` prints one, each name masked on its own (a name may hold a line break)
                names, truncated = _tree_names(repo, object_id)
                text = f"tree {object_id}\n\n" + "".join(f"{name}\n" for name in names)
                masked = f"tree {object_id}\n\n" + "".join(f"{printable(name)}\n" for name in names)
            else:
                done = repo.check(["show", *_DIFF_FLAGS, "--format=medium", "--date=iso", "--stat", "--patch",
                                   *repo.relative(), "--end-of-options", object_id, *repo.pathspec(None)],
                                  limit=MAX_PATCH_BYTES)
                text, truncated = cut_output(done.stdout, done.truncated), done.truncated
                # A blob is file content, shown as it is; a commit or tag is names and metadata around a patch.
                masked = text if object_type == "blob" else _mask_patch(text)
        else:
            object_id = repo.resolve(ref)
            shown = roots.display(real)
            object_type, text, masked, truncated = _file_at(repo, object_id, real, shown, ref)
    note = ""
    if truncated:
        hint = ("pass path to see one file as of this revision, or use git_diff with a path" if shown is None
                else "read_file on the working copy, or search_code, can reach the rest")
        note = f"\n[Cut at {size_text(MAX_PATCH_BYTES)}; {hint}.]"
    data = {"ref": ref, "object": object_id, "type": object_type, "path": shown, "text": text, "truncated": truncated}
    return result((masked.rstrip("\n") + note) or "(empty)", data)


def _mask_patch(text: str) -> str:
    """git's diff or show output with every line but the content lines of hunks made printable: file names
    in `diff --git`, ---/+++, rename, copy and mode lines, the --stat lines, commit and tag headers and
    messages. A content line (' ', '+', '-', '\\', or empty where diff.suppressBlankEmpty is set) follows
    an `@@` line and is file content, as read_file would show it."""
    lines = text.split("\n")
    in_hunk = False
    for number, line in enumerate(lines):
        if in_hunk and (not line or line[0] in " +-\\"):
            continue
        in_hunk = line.startswith("@@")
        lines[number] = printable(line)
    return "\n".join(lines)


def _file_at(repo: Repo, commit: str, real: str, shown: str, ref: str) -> tuple[str, str, str, bool]:
    """A file's text, or a folder's entries, as of `commit`: (type, text, text for the model, cut). A file's
    text is its content, as it is; a folder's names are masked one by one."""
    relative = os.path.relpath(real, repo.top).replace(os.sep, "/")
    name = f"{commit}:{relative}" if relative != "." else f"{commit}^{{tree}}"
    kind = repo.run(["cat-file", "-t", "--end-of-options", name], limit=1024)
    object_type = kind.stdout.decode("ascii", "replace").strip()
    if kind.returncode != 0 or object_type not in ("blob", "tree"):
        raise ToolError(f"{printable(shown)} does not exist in {printable(ref)}")
    if object_type == "tree":
        names, truncated = _tree_names(repo, name)
        return (object_type, "".join(f"{name}\n" for name in names), "".join(f"{printable(name)}\n" for name in names),
                truncated)
    done = repo.check(["cat-file", "blob", "--end-of-options", name], limit=MAX_PATCH_BYTES)
    if is_binary(done.stdout):
        size = repo.check(["cat-file", "-s", "--end-of-options", name]).stdout.decode("ascii").strip()
        raise ToolError(f"{printable(shown)} is a binary file in {printable(ref)} ({size_text(int(size or 0))}); "
                        "git_show shows text only")
    text = cut_output(done.stdout, done.truncated)
    return object_type, text, text, done.truncated


def _tree_names(repo: Repo, tree: str) -> tuple[list[str], bool]:
    """The entries of a tree object, folders with a trailing '/', and whether the listing was cut."""
    done = repo.check(["ls-tree", "-z", "--full-tree", "--end-of-options", tree], limit=MAX_PATCH_BYTES)
    entries = [entry.decode("utf-8", "replace").split("\t", 1) for entry in done.stdout.split(b"\0") if b"\t" in entry]
    if done.truncated:
        entries = entries[:-1]  # the last one may be partial
    return [f"{name}/" if " tree " in meta else name for meta, name in entries], done.truncated
