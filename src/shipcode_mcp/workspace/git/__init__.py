"""git_status, git_log, git_diff, git_show, and (with --allow-write) git_add, git_commit, git_branch, git_switch,
git_restore, git_stash: the real `git`, run so that no argument can become an option.

Every ref is checked (nothing that starts with '-', no control characters, no `rev:path` object
names) and resolved to a full object id with `rev-parse --verify --end-of-options` before any other
command sees it; paths are resolved inside the roots and passed after `--` as literal pathspecs.
Git runs without the environment's GIT_* variables, without optional locks, pagers, external diff
programs, textconv filters, fsmonitor hooks or signature checks, with a deadline and bounded output.
When a root is a folder inside a larger repository, output is confined to that folder (and git_show
shows only commits there). The repository is checked once (`repo.Repo.__init__`): git only uses a `.git`
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
remembered (`repo._known`) while none of the files those answers come from changed (the .git entry, commondir,
the repository's, the user's and the system's config: `_inputs`); a configuration with includes, or a
file changed in the last two seconds, is asked about again on each call. The walk of the git folders
runs on every call, but reads again only the folders that changed, or hold a link (`walk._scanned`: a
folder's entries cannot change without its change time changing); when none changed and none holds a
link, the whole walk is checked in one pass, a stat per folder (`walk._trees`). git's answers are judged on
every call.

The tools that change a repository (changes.py) run in the same checked repository, with the same
settings and a few more (no signing, no automatic gc, no submodule recursion), and git may write only in
that repository's work tree and git folders, all inside a root (`Repo.change`).

The package: repo.py (the repository check and running git), walk.py (the walk of the git folders it
relies on), commands.py (the four reading tools and their parsers), changes.py (the six that change).
"""
