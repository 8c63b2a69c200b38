"""The workspace tools as MCP sees them: names, descriptions for a model, schemas, annotations.

A tool is one spec here and one function: the spec's "run" names the function ("module:name" under
workspace/), imported on the first call so that start-up pays only for these definitions, and its input
schema holds the only copy of each default (`_tool` fills in what a call leaves out, then calls the function
with the arguments by name). The tools are registered in a stable order: reading first, then git, then
(with --allow-write) writing.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec

from ..primitives import Tool, ToolError, described

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..context import Context
    from ..server import Server
    from .command_sandbox import RunOptions
    from .resources import Files
    from .roots import Roots

LIST_LIMIT = 1000
MAX_LIST_LIMIT = 10000
READ_LINES = 2000
MAX_READ_LINES = 10000
SEARCH_LIMIT = 200
MAX_SEARCH_LIMIT = 2000
MAX_CONTEXT = 10
SYMBOL_LIMIT = 100
MAX_SYMBOL_LIMIT = 2000
REFERENCE_LIMIT = 200
STRUCTURE_LIMIT = 100
MAX_DEPTH = 20
MAP_BUDGET = 2000
MIN_MAP_BUDGET = 256
MAX_MAP_BUDGET = 20000
MIN_LOCATE_BUDGET = 1000
"""locate's smallest budget: the list of regions and the code of one must fit."""
MAX_MAP_SCANNED = 5000
"""Without a ready code index, repo_map reads at most this many files (a larger folder waits for the index)."""
CODE_LANGUAGES = ("bash", "c", "cpp", "csharp", "go", "java", "javascript", "kotlin", "lua", "php", "python", "ruby",
                  "rust", "scala", "swift", "tsx", "typescript")
"""The languages of the code tools (ast-grep's names; code/symbols.py maps file names to them)."""
SYMBOL_KINDS = ("class", "interface", "struct", "enum", "trait", "module", "function", "method", "constructor",
                "property", "field", "constant", "variable", "type", "macro")
LOG_LIMIT = 20
MAX_LOG_LIMIT = 500
MAX_CONTENT_CHARS = 16 * 1024 * 1024
MAX_EDITS = 100
UNCONFIRMED = ("create_directory",)
"""Writing tools --confirm-writes does not ask about: they only add (an empty folder)."""

_PATH_HELP = ("relative to the first workspace root, absolute, or a file:// URI; it must lie inside a root")

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """An input schema that every provider's converter takes (docs/tools.md, "Schemas").

    Each argument not in `required` also accepts null, meaning "not given" (the handlers never see it):
    OpenAI strict mode makes every property required, so a model must be able to write "not given". The
    property keeps its bounds beside the `anyOf`, so a bad value is still refused with the precise
    message ("limit: 0 is less than the minimum of 1"). The schema does not close the object: no
    `"additionalProperties": false`, which google-genai's MCP conversion cannot read (a bool where it
    expects a schema), and no `propertyNames` or `maxProperties`, which OpenAI's strict mode does not
    accept (the strict converters add `additionalProperties: false` themselves). The tool refuses an
    unknown argument all the same (see `_tool`).
    """
    schema: dict[str, Any] = {"type": "object", "properties": {
        name: spec if name in required else _nullable_argument(spec) for name, spec in properties.items()}}
    if required:
        schema["required"] = list(required)
    return schema


def _nullable_argument(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with its type widened to `anyOf: [{type, enum}, {"type": "null"}]` and its description in the
    typed branch (`described`; no type arrays: see _nullable). The enum goes there too (without null), for
    google-genai; every keyword that validates (the bounds, the enum with null) stays beside it, so a bad
    value gets the same message."""
    typed = {"type": spec["type"]}
    if "enum" in spec:
        typed["enum"] = [value for value in spec["enum"] if value is not None]
    if "items" in spec:  # an array's items belong to the array branch (strict mode refuses an untyped array)
        typed["items"] = spec["items"]
    rest = {key: value for key, value in spec.items() if key not in ("type", "description", "items")}
    nullable = {"anyOf": [typed, {"type": "null"}], **rest}
    return described(nullable, spec["description"]) if "description" in spec else nullable


def _string(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **more}


def _integer(description: str, default: int | None, minimum: int, maximum: int) -> dict[str, Any]:
    """An integer argument; `default` None: none in the schema (the description says what leaving it out means)."""
    spec = {"type": "integer", "description": description, "default": default, "minimum": minimum, "maximum": maximum}
    return spec if default is not None else {key: value for key, value in spec.items() if key != "default"}


def _boolean(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": False}


_NEW_DIAGNOSTICS = {"new_diagnostics": {
    "type": "array", "description": "with --precise and the language server ready: the errors and warnings it finds "
                                    "in the edited files of its languages that it did not find before the change",
    "items": {"type": "object", "required": ["path", "line", "column", "severity", "code", "message"],
              "properties": {"path": {"type": "string"}, "line": {"type": "integer", "minimum": 1},
                             "column": {"type": "integer", "minimum": 1},
                             "severity": {"type": "string", "enum": ["error", "warning"]},
                             "code": {"type": "string"}, "message": {"type": "string"}}}}}
_DRY_RUN = {"type": "boolean", "default": False,
            "description": "Only check the change and return its diff; nothing is written."}
_EXPECTED_SHA256 = _string(
    "The file's SHA-256 (hex) as read_file gave it (sha256): the change is refused if the file is no longer that "
    "version (another client or the user changed it since). Default: no check.", pattern="^[0-9a-fA-F]{64}$")
_ALLOW_SYNTAX_ERRORS = {"type": "boolean", "default": False, "description": (
    "Write the change even if it adds syntax errors to a file of a language the code tools read (by default "
    "such a change is refused, with the errors, when the code tools are installed).")}


def _nullable(kind: str) -> dict[str, Any]:
    """A nullable output field, as `anyOf`: a type array (["integer", "null"]) is legal JSON Schema, but
    clients that map schemas onto a single-type dialect (Gemini's) reject or flatten it, and the MCP
    Inspector's portability check warns about it."""
    return {"anyOf": [{"type": kind}, {"type": "null"}]}


_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_BOOL = {"type": "boolean"}


def _output(properties: dict[str, Any]) -> dict[str, Any]:
    """An output schema: every property always present."""
    return {"type": "object", "properties": properties, "required": list(properties)}


# -- the definitions --------------------------------------------------------------------------------
LIST_FILES = {
    "run": "files:list_files",
    "title": "List files",
    "description": (
        "List the files under a folder of the workspace, recursively, sorted by path. Honours .gitignore and "
        ".ignore (ignored files and the .git folder are left out); hidden dotfiles are included; symbolic links "
        "are not followed. Use it to discover a project's layout or to find files by name; use search_code to "
        "find files by content. `pattern` is a glob relative to `path` (gitignore syntax: '*.py' matches at any "
        "depth, 'src/**/*.ts' under src; a leading '!' excludes). At most `limit` paths are returned and the "
        "result says when the list was cut; the paths can be passed to read_file as they are."
    ),
    "input": _object({
        "path": _string(f"The folder to list (default: the first root); {_PATH_HELP}.", default="."),
        "pattern": _string("A glob to filter the files, such as '**/*.py' or '*.md'.", minLength=1),
        "limit": _integer("The most paths to return.", LIST_LIMIT, 1, MAX_LIST_LIMIT),
    }),
    "output": _output({
        "path": _STR,
        "files": {"type": "array", "items": _STR},
        "total": _INT,
        "truncated": _BOOL,
    }),
}

READ_FILE = {
    "run": "files:read_file",
    "title": "Read file",
    "description": (
        "Read a text file of the workspace. Returns its lines numbered like `cat -n` (the number, a tab, the "
        "line), by default the first 2000 lines. Use `offset` (first line, 1-based) and `limit` (number of lines) "
        "to read a part of a long file; when the result is not the whole file it ends with the offset to "
        "continue from. At most 256 KiB of text come back per call, and lines longer than 2000 characters are cut. "
        "Binary files, folders and special files are refused with a message; text that is not valid UTF-8 "
        "is shown with replacement characters."
    ),
    "input": _object({
        "path": _string(f"The file to read; {_PATH_HELP}.", minLength=1),
        "offset": _integer("The first line to return (1-based).", 1, 1, 2**31 - 1),
        "limit": _integer("How many lines to return.", READ_LINES, 1, MAX_READ_LINES),
    }, ("path",)),
    "output": _output({
        "path": _STR,
        "text": {"type": "string", "description": "The lines returned, without numbers."},
        "start_line": {"type": "integer", "minimum": 1},
        "end_line": _INT,
        "total_lines": {**_nullable("integer"), "description": (
            "the file's lines; null when not counted: more than 1 MiB of the file lies past what this page read "
            "(next_offset is exact either way)")},
        "next_offset": {**_nullable("integer"), "description": "where to continue; null at the end of the file"},
        "size": {"type": "integer", "minimum": 0, "description": "bytes"},
        "sha256": {**_nullable("string"), "description": (
            "the whole file's SHA-256 (hex), for an edit's expected_sha256; null when this call did not read the "
            "file to its end (more than 1 MiB past the page) or it is over 16 MiB")},
    }),
}

SEARCH_CODE = {
    "run": "search:search_code",
    "title": "Search code",
    "description": (
        "Search the contents of the workspace's files with a regular expression (ripgrep; Rust regex syntax, "
        "no look-around or backreferences) or, with fixed_strings, a literal text. Searches the same files "
        "list_files shows (honours .gitignore, skips .git and binary files), in path order. Returns matching "
        "lines as `path:line:text`; with `context`, that many lines around each match as `path-line-text`, groups "
        "separated by `--`. Narrow with `path` (a folder or one file) and `glob` (such as '*.py' or "
        "'src/**/*.rs'). At most `limit` matching lines are returned and the result says when there were more; "
        "long lines are cut around the match. An invalid regex is reported as an error. Sends progress "
        "notifications when the request has a progress token, and stops at once when cancelled."
    ),
    "input": _object({
        "pattern": _string("The regular expression (or, with fixed_strings, the text) to find.", minLength=1),
        "path": _string(f"A folder or a file to search (default: the first root); {_PATH_HELP}.", default="."),
        "glob": _string("Search only files matching this glob, such as '*.py' or '!*_test.go' to exclude.",
                        minLength=1),
        "ignore_case": _boolean("Match without regard to case."),
        "fixed_strings": _boolean("Treat the pattern as literal text, not a regex."),
        "context": _integer("Lines of context to show before and after each match.", 0, 0, MAX_CONTEXT),
        "limit": _integer("The most matching lines to return.", SEARCH_LIMIT, 1, MAX_SEARCH_LIMIT),
    }, ("pattern",)),
    "output": _output({
        "pattern": _STR,
        "path": _STR,
        "lines": {"type": "array", "items": _output({
            "path": _STR,
            "line": {"type": "integer", "minimum": 0},
            "text": _STR,
            "match": {"type": "boolean", "description": "false for a context line"},
        })},
        "match_count": _INT,
        "file_count": _INT,
        "truncated": {"type": "boolean", "description": "true when more matches exist than were returned"},
    }),
}

_REF_HELP = ("A branch, tag, commit id or expression such as HEAD~2, main@{upstream} or v1.0^; "
             "it cannot start with '-'")

_STATUS_REPORT = _output({
    "root": _STR,
    "repository": _BOOL,
    "branch": _nullable("string"),
    "commit": _nullable("string"),
    "upstream": _nullable("string"),
    "ahead": _INT,
    "behind": _INT,
    "files": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "path": _STR,
            "orig_path": _STR,
            "index": _STR,
            "worktree": _STR,
            "kind": {"enum": ["changed", "renamed", "copied", "unmerged", "untracked", "ignored"]},
        },
        "required": ["path", "index", "worktree", "kind"],
    }},
    "truncated": _BOOL,
})

GIT_STATUS = {
    "run": "git.commands:git_status",
    "title": "Git status",
    "description": (
        "Show the git status of each workspace root: the branch, its upstream and how far ahead or behind it is, "
        "and the changed, staged, renamed, conflicted and untracked files, in the format of `git status --short "
        "--branch` (XY codes: X is the index, Y the working tree). Takes no arguments. Use git_diff to see the "
        "changes themselves."
    ),
    "input": _object({}),
    "output": _output({
        "repositories": {"type": "array", "items": _STATUS_REPORT},
    }),
}

GIT_LOG = {
    "run": "git.commands:git_log",
    "title": "Git log",
    "description": (
        "Show the commit history, most recent first: id, date, author, subject and message. `ref` picks where "
        "to start (default HEAD) and may be a range such as main..HEAD (commits on HEAD not on main). `path` "
        "limits the history to commits that touched a file or folder (a file is followed across renames). "
        "At most `limit` commits are returned and the result says when there are more. Use git_show for one "
        "commit's changes."
    ),
    "input": _object({
        "limit": _integer("The most commits to return.", LOG_LIMIT, 1, MAX_LOG_LIMIT),
        "path": _string(f"Only commits that touched this file or folder; {_PATH_HELP}.", minLength=1),
        "ref": _string(f"Where to start, or a range A..B. {_REF_HELP}.", minLength=1),
    }),
    "output": _output({
        "commits": {"type": "array", "items": _output({
            "commit": _STR,
            "parents": {"type": "array", "items": _STR},
            "author": _STR,
            "email": _STR,
            "date": {"type": "string", "description": "ISO 8601, author date"},
            "subject": _STR,
            "body": _STR,
        })},
        "truncated": _BOOL,
    }),
}

_DIFF_FILES = {"type": "array", "items": {
    "type": "object",
    "properties": {
        "path": _STR,
        "old_path": _STR,
        "added": {**_nullable("integer"), "description": "null for a binary file"},
        "deleted": _nullable("integer"),
    },
    "required": ["path", "added", "deleted"],
}}

GIT_DIFF = {
    "run": "git.commands:git_diff",
    "title": "Git diff",
    "description": (
        "Show changes as a unified diff, with a summary of the files changed and lines added and removed. "
        "Without arguments: unstaged changes (working tree against the index). With staged=true: what is "
        "staged for the next commit (against HEAD, or against `ref`). With `ref`: the working tree against that "
        "revision; a range A..B compares two revisions and A...B shows what B changed since it branched from A. "
        "Untracked files are not included (git_status lists them). `path` limits the diff to a file or folder. "
        "The patch is cut at 256 KiB (the file summary is always complete)."
    ),
    "input": _object({
        "ref": _string(f"The revision or range to compare with. {_REF_HELP}.", minLength=1),
        "staged": _boolean("Show staged changes (the index) instead of the working tree."),
        "path": _string(f"Only changes to this file or folder; {_PATH_HELP}.", minLength=1),
    }),
    "output": _output({
        "files": _DIFF_FILES,
        "diff": _STR,
        "truncated": _BOOL,
    }),
}

GIT_SHOW = {
    "run": "git.commands:git_show",
    "title": "Git show",
    "description": (
        "Show one commit (or tag): its id, author, date, full message, a summary of the files it changed and "
        "its patch. With `path`, show instead that file's content as of `ref` (or a folder's entries), "
        "for example to see a file before a change: ref='HEAD~1', path='src/app.py'. Output is cut at 256 KiB."
    ),
    "input": _object({
        "ref": _string(f"The commit or tag to show. {_REF_HELP}.", minLength=1),
        "path": _string(f"A file or folder to show as of ref instead of the commit; {_PATH_HELP}.", minLength=1),
    }, ("ref",)),
    "output": _output({
        "ref": _STR,
        "object": {"type": "string", "description": "the full id of the commit or object shown"},
        "type": {"enum": ["commit", "tag", "tree", "blob"]},
        "path": _nullable("string"),
        "text": _STR,
        "truncated": _BOOL,
    }),
}

WRITE_FILE = {
    "run": "writes:write_file",
    "title": "Write file",
    "description": (
        "Create a file or replace its whole content. Missing parent folders are created; an existing file keeps "
        "its permissions. The write is atomic (a temporary file in the same folder, then a rename), so the file "
        "is never seen half-written. Returns a unified diff of the change. Prefer edit_file to change part of "
        "an existing file. Writes only inside the workspace roots, at most 16 MiB of UTF-8, never inside a .git "
        "folder, never a file its owner could not write in place (read-only, or another user's), and never a file "
        "that would make a folder a git repository (HEAD beside objects/ and refs/)."
    ),
    "input": _object({
        "path": _string(f"The file to write; {_PATH_HELP}.", minLength=1),
        "content": _string("The complete new content of the file (UTF-8 text, at most 16 MiB once encoded).",
                           maxLength=MAX_CONTENT_CHARS),
        "dry_run": _DRY_RUN,
        "allow_syntax_errors": _ALLOW_SYNTAX_ERRORS,
        "expected_sha256": _EXPECTED_SHA256,
    }, ("path", "content")),
    "output": _output({
        "path": _STR,
        "created": {"type": "boolean", "description": "true when the file did not exist before"},
        "size": {"type": "integer", "minimum": 0, "description": "bytes written"},
        "diff": _STR,
        **_NEW_DIAGNOSTICS,
    }),
}

EDIT_FILE = {
    "run": "writes:edit_file",
    "title": "Edit file",
    "description": (
        "Replace text in an existing UTF-8 text file. `old_text` must match the file exactly, including "
        "whitespace and indentation (copy it from read_file output, without the line numbers), and must occur "
        "exactly once unless replace_all is true; otherwise nothing changes and the error says where it was "
        "found. Several changes to one file go in `edits` (instead of old_text/new_text), applied in order, all "
        "or none. Files with CRLF line endings accept old_text written with plain newlines. The write is atomic "
        "and the file keeps its permissions. Returns the unified diff of the change."
    ),
    "input": _object({
        "path": _string(f"The file to edit; {_PATH_HELP}.", minLength=1),
        "old_text": _string("The exact text to replace (one edit; or give edits).", minLength=1),
        "new_text": _string("The text to put in its place (may be empty to delete)."),
        "replace_all": _boolean("Replace every occurrence of old_text instead of requiring exactly one."),
        "edits": {"type": "array", "minItems": 1, "maxItems": MAX_EDITS, "description": (
            "Several edits of the file instead of old_text/new_text, applied in order (each sees the text the ones "
            "before it left), all or none."),
            "items": _object({
                "old_text": _string("The exact text to replace.", minLength=1),
                "new_text": _string("The text to put in its place (may be empty to delete)."),
                "replace_all": _boolean("Replace every occurrence instead of requiring exactly one."),
            }, ("old_text", "new_text"))},
        "dry_run": _DRY_RUN,
        "allow_syntax_errors": _ALLOW_SYNTAX_ERRORS,
        "expected_sha256": _EXPECTED_SHA256,
    }, ("path",)),
    "output": _output({
        "path": _STR,
        "replacements": {"type": "integer", "minimum": 1},
        "diff": _STR,
        **_NEW_DIAGNOSTICS,
    }),
}

APPLY_PATCH = {
    "run": "patch_files:apply_patch",
    "title": "Apply patch",
    "description": (
        "Change several files in one call, all or nothing: edit, create, delete and move files with a patch. "
        "Takes a unified diff as `git diff` writes it (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@` hunks; "
        "new and deleted files through /dev/null; `rename from`/`rename to`), or the `*** Begin Patch` format "
        "(`*** Add File: path` with '+' lines, `*** Delete File: path`, `*** Update File: path` with an optional "
        "`*** Move to: path`, then chunks of ' ', '-' and '+' lines, each after an optional `@@ line to find "
        "first`; `*** End Patch`). A unified hunk applies where its context and removed lines match exactly, "
        "at its line or the nearest place (as git apply does); a `*** Begin Patch` chunk at the first place "
        "after the previous one, also ignoring whitespace at the ends of lines. If any part does not apply, "
        "nothing is written and the error names the file and the hunk. Paths are relative to the first "
        "workspace root; the same limits as write_file hold. Returns what changed (A, M, D, R) and the diff; "
        "with dry_run, only checks and shows the diff."
    ),
    "input": _object({
        "patch": _string("The patch: a unified diff, or a `*** Begin Patch` ... `*** End Patch` block.",
                         minLength=1, maxLength=MAX_CONTENT_CHARS),
        "dry_run": _DRY_RUN,
        "allow_syntax_errors": _ALLOW_SYNTAX_ERRORS,
    }, ("patch",)),
    "output": _output({
        "files": {"type": "array", "items": _output({
            "path": _STR,
            "action": {"enum": ["A", "M", "D", "R"], "description": "added, modified, deleted, or moved (renamed)"},
            "from": {**_nullable("string"), "description": "the old path of a moved file, else null"},
        })},
        "diff": _STR,
        "dry_run": _BOOL,
        **_NEW_DIAGNOSTICS,
    }),
}

CREATE_DIRECTORY = {
    "run": "file_operations:create_directory",
    "title": "Create directory",
    "description": (
        "Create a folder, and the folders above it that are missing (like mkdir -p). A folder that already "
        "exists is not an error. Only inside the workspace roots, never inside a .git folder, and never a folder "
        "that would make its parent a git repository (refs/ or objects/ beside HEAD)."
    ),
    "input": _object({
        "path": _string(f"The folder to create; {_PATH_HELP}.", minLength=1),
        "dry_run": _DRY_RUN,
    }, ("path",)),
    "output": _output({
        "path": _STR,
        "created": {"type": "boolean", "description": "false when the folder already existed"},
        "dry_run": _BOOL,
    }),
}

MOVE_PATH = {
    "run": "file_operations:move_path",
    "title": "Move or rename",
    "description": (
        "Move or rename a file, a folder or a symbolic link (the link itself, not what it points to) within the "
        "workspace roots; missing folders above the destination are created. Never replaces an existing path "
        "unless overwrite is true, and then only a file by a file. Refused: a workspace root, anything inside a "
        ".git folder or a folder holding one, a folder into itself. Atomic: one rename."
    ),
    "input": _object({
        "source": _string(f"The file, folder or link to move; {_PATH_HELP}.", minLength=1),
        "destination": _string(f"Its new path (not the folder to put it in); {_PATH_HELP}.", minLength=1),
        "overwrite": _boolean("Replace a file already at the destination (never a folder)."),
        "dry_run": _DRY_RUN,
    }, ("source", "destination")),
    "output": _output({
        "source": _STR,
        "destination": _STR,
        "kind": {"enum": ["file", "folder", "link"]},
        "replaced": {"type": "boolean", "description": "true when a file at the destination was replaced"},
        "dry_run": _BOOL,
    }),
}

DELETE_PATH = {
    "run": "file_operations:delete_path",
    "title": "Delete path",
    "description": (
        "Delete a file or a symbolic link (the link itself), or a folder: an empty one, or with recursive true a "
        "folder and everything in it (links are removed, never followed; at most 100 000 entries). Refused: a "
        "workspace root or a folder holding one, a .git folder or anything in one, a git repository or anything "
        "in it, a folder holding one, another filesystem mounted inside, a folder that cannot be listed. Returns "
        "how many files and folders were deleted; with dry_run, how many would be."
    ),
    "input": _object({
        "path": _string(f"The file, link or folder to delete; {_PATH_HELP}.", minLength=1),
        "recursive": _boolean("Delete a folder that is not empty, with everything in it."),
        "dry_run": _DRY_RUN,
    }, ("path",)),
    "output": _output({
        "path": _STR,
        "files": {"type": "integer", "minimum": 0, "description": "files and links deleted (or to be)"},
        "folders": {"type": "integer", "minimum": 0, "description": "folders deleted (or to be), the folder itself included"},
        "dry_run": _BOOL,
    }),
}


# -- git writes (with --allow-write) -------------------------------------------------------------------
MAX_GIT_PATHS = 1000
_GIT_SANDBOX_HELP = ("Runs the real git with no hook, filter, editor or signing program (none a repository names can "
                     "run), writing only in the repository, whose .git folder must be inside a root.")
_REPOSITORY = _string(f"A folder in the repository to change (default: the first root); {_PATH_HELP}.")
_GIT_PATHS = {"type": "array", "minItems": 1, "maxItems": MAX_GIT_PATHS, "items": {"type": "string", "minLength": 1},
              "description": f"Files or folders, each {_PATH_HELP}; all in one repository."}


def _after(properties: dict[str, Any]) -> dict[str, Any]:
    """The output of a git tool that changes a repository: its own fields, then the status after the change."""
    return _output({**properties, "status": {**_nullable("object"), "description": "the repository's status after the "
                                             "change, as git_status reports it (null for a dry run)"}})


GIT_ADD = {
    "run": "git.changes:git_add",
    "title": "Git add",
    "description": (
        "Stage files for the next commit (`git add`): new and changed files, and deleted tracked files named by their "
        "path; a folder stages everything in it ('.' for the folder of the first root). Ignored files are refused. "
        f"Returns the status after. {_GIT_SANDBOX_HELP}"
    ),
    "input": _object({"paths": _GIT_PATHS}, ("paths",)),
    "output": _after({"paths": {"type": "array", "items": _STR}}),
}

GIT_COMMIT = {
    "run": "git.changes:git_commit",
    "title": "Git commit",
    "description": (
        "Record the staged changes as a new commit on the current branch, with `message`. `all` first stages every "
        "change of tracked files (`git commit -a`); `paths` commits only those files' changes as they are in the "
        "working tree, leaving other staged changes staged; `amend` replaces the last commit (message and changes); "
        "`allow_empty` makes a commit without changes. The author and committer come from the git configuration "
        "(user.name, user.email); `author` ('Name <email>') sets the author, and the committer too where none is "
        "configured. Hooks do not run (pre-commit, commit-msg...), and the result names those the repository has. "
        f"Returns the commit id, branch, changed files and the status after. {_GIT_SANDBOX_HELP}"
    ),
    "input": _object({
        "message": _string("The commit message: a subject line, then optionally a blank line and a body.", minLength=1,
                           maxLength=100_000),
        "all": _boolean("Stage every change of tracked files first (new files still need git_add)."),
        "paths": {**_GIT_PATHS, "description": f"Commit only the changes of these files or folders, each {_PATH_HELP}."},
        "amend": _boolean("Replace the last commit with one holding its changes and the staged ones, with this message."),
        "allow_empty": _boolean("Commit even when nothing changed."),
        "author": _string("The author, as 'Name <email>' (default: user.name and user.email from the git configuration).",
                          minLength=1, maxLength=1000),
        "path": _REPOSITORY,
    }, ("message",)),
    "output": _after({
        "commit": _STR,
        "parents": {"type": "array", "items": _STR},
        "branch": {**_nullable("string"), "description": "null on a detached HEAD"},
        "subject": _STR,
        "stat": {"type": "string", "description": "git's summary line: '2 files changed, 3 insertions(+)'"},
        "files_changed": _INT,
        "insertions": _INT,
        "deletions": _INT,
        "hooks_skipped": {"type": "array", "items": _STR,
                          "description": "hooks installed in the repository that plain git would have run"},
    }),
}

GIT_BRANCH = {
    "run": "git.changes:git_branch",
    "title": "Git branch",
    "description": (
        "List, create or delete branches. list (the default): the local branches (`remotes` adds the "
        "remote-tracking ones), each with its commit, upstream and how far ahead or behind, the current one marked "
        "*. create: a branch `name` at `start` (default HEAD), without switching to it. delete: a branch that is "
        f"merged (into its upstream, or HEAD); an unmerged one is refused, the current one too. {_GIT_SANDBOX_HELP}"
    ),
    "input": _object({
        "action": {"type": "string", "enum": ["list", "create", "delete", None], "default": "list",
                   "description": "What to do."},
        "name": _string("The branch to create or delete.", minLength=1, maxLength=256),
        "start": _string("Where a new branch starts: a branch, tag or commit (default HEAD).", minLength=1, maxLength=256),
        "remotes": _boolean("List the remote-tracking branches too."),
        "path": _REPOSITORY,
    }),
    "output": _output({
        "action": _STR,
        "branches": {"type": "array", "description": "for list", "items": _output({
            "name": _STR, "commit": _STR, "current": _BOOL, "upstream": _nullable("string"),
            "track": {**_nullable("string"), "description": "'ahead 2, behind 1', 'gone', or null"}, "subject": _STR})},
        "name": {**_nullable("string"), "description": "the branch created or deleted"},
        "commit": {**_nullable("string"), "description": "where a created branch points"},
        "status": {**_nullable("object"), "description": "for create and delete: the status after"},
    }),
}

GIT_SWITCH = {
    "run": "git.changes:git_switch",
    "title": "Git switch",
    "description": (
        "Switch the working tree to another branch (`git switch`): `create` makes the branch first, at `start` "
        "(default HEAD); `detach` checks out a commit or tag without a branch. A branch that exists only as a "
        "remote-tracking branch of one remote is created tracking it. Changes in the working tree are carried "
        "over; a switch that would overwrite one (or an untracked file) is refused and nothing changes (commit, stash "
        "or restore first). "
        f"Returns the status after. {_GIT_SANDBOX_HELP}"
    ),
    "input": _object({
        "branch": _string("The branch to switch to (or to create; with detach, any commit or tag).", minLength=1,
                          maxLength=256),
        "create": _boolean("Create the branch first."),
        "start": _string("Where a created branch starts (default HEAD).", minLength=1, maxLength=256),
        "detach": _boolean("Check out the commit `branch` names, without a branch."),
        "path": _REPOSITORY,
    }, ("branch",)),
    "output": _after({"branch": _STR, "detached": _BOOL}),
}

GIT_RESTORE = {
    "run": "git.changes:git_restore",
    "title": "Git restore",
    "description": (
        "Discard changes to files (`git restore`). target worktree (the default): the working tree's files go back "
        "to the index (their staged state); staged: unstage, the index goes back to HEAD and the files stay as they "
        "are; both: index and files go back to HEAD. `source` restores from another commit instead. Untracked files "
        "are not touched (a restore from a commit that would write over one is refused). The result holds the diff of "
        "what was discarded (apply_patch puts it back) and, in `saved`, each discarded file's content kept as a git "
        "object (git_show with the blob as ref gives it back, binary or large). dry_run returns the diff and "
        f"changes nothing. {_GIT_SANDBOX_HELP}"
    ),
    "input": _object({
        "paths": _GIT_PATHS,
        "target": {"type": "string", "enum": ["worktree", "staged", "both", None], "default": "worktree",
                   "description": "What to restore: the working tree, the index (unstage), or both."},
        "source": _string("The commit to restore from (default: the index for the working tree, HEAD for the index).",
                          minLength=1, maxLength=256),
        "dry_run": _DRY_RUN,
    }, ("paths",)),
    "output": _after({"target": _STR, "files": _DIFF_FILES, "diff": {"type": "string", "description": "what is discarded"},
                      "truncated": _BOOL,
                      "saved": {"type": "array", "description": (
                          "each discarded working-tree file's content, kept as a git object: git_show with the blob "
                          "as ref gives it back"), "items": _output({"path": _STR, "blob": _STR})},
                      "dry_run": _BOOL}),
}

GIT_STASH = {
    "run": "git.changes:git_stash",
    "title": "Git stash",
    "description": (
        "Put changes aside and bring them back. push: save the working tree's and the index's changes (of `paths` "
        "only, if given; untracked files too with include_untracked) as a new stash and clean them from the working "
        "tree. pop: apply stash `index` (0 is the newest) and drop it; when it conflicts, it is kept. apply: the same, "
        f"keeping it. list: the stashes. {_GIT_SANDBOX_HELP}"
    ),
    "input": _object({
        "action": {"type": "string", "enum": ["push", "pop", "apply", "list", None], "default": "push",
                   "description": "What to do."},
        "message": _string("A message for the stash (push).", minLength=1, maxLength=100_000),
        "include_untracked": _boolean("Stash untracked files too (push)."),
        "index": _integer("Which stash to pop or apply: 0 is the newest.", 0, 0, 100_000),
        "paths": {**_GIT_PATHS, "description": f"Stash only these files or folders (push), each {_PATH_HELP}."},
        "path": _REPOSITORY,
    }),
    "output": _output({
        "action": _STR,
        "stashes": {"type": "array", "description": "for list",
                    "items": _output({"name": _STR, "commit": _STR, "message": _STR})},
        "stash": {**_nullable("object"), "description": "for pop and apply: the stash applied (name, commit, message)"},
        "status": {**_nullable("object"), "description": "for push, pop and apply: the status after"},
    }),
}


# -- code intelligence (offered when the `code` extra, ast-grep-py, is installed) ----------------------
_SKIPPED = {"type": "integer", "minimum": 0, "description": "files not parsed: over 512 KiB, with a line over 32 768 "
            "characters (minified), binary, unreadable, or whose parse failed"}
_SKIPPED_FILES = {"type": "array", "maxItems": 20, "description": "the first 20 files not parsed, and why",
                  "items": _output({"path": _STR, "reason": {"type": "string", "description": "why, such as "
                                                             "'too large, 600.0 KiB, over 512.0 KiB' or 'binary'"}})}
_LANGUAGE_SERVER = {
    "language_server": {**_nullable("string"), "description": "the language server whose answer this is (--precise), "
                                                              "null when the syntax tree answered"},
    "language_server_note": {**_nullable("string"), "description": "with --precise, why no language server answered "
                                                                   "(starting, still reading the workspace, failed, "
                                                                   "too slow); null otherwise"},
}
_LANGUAGES_HELP = ("Python, JavaScript, TypeScript, TSX, Go, Rust, Java, Kotlin, C, C++, C#, Ruby, PHP, Swift, Scala, "
                   "Lua and Bash, recognised by file name")
_SYMBOL_ITEM = _output({
    "name": _STR,
    "qualified_name": {"type": "string", "description": "the name with its enclosing symbols, such as Class.method"},
    "kind": {"enum": list(SYMBOL_KINDS)},
    "path": _STR,
    "line": {"type": "integer", "minimum": 1, "description": "first line, with decorators and doc comment"},
    "end_line": {"type": "integer", "minimum": 1, "description": "last line, inclusive"},
    "def_line": {"type": "integer", "minimum": 1, "description": "the line of the definition's keyword or name"},
    "signature": {"type": "string", "description": "the header on one line"},
})

OUTLINE = {
    "run": "code.navigate:outline",
    "title": "Outline",
    "description": (
        "List the symbols a source file defines (classes, functions, methods, interfaces, structs, enums, "
        "constants, ...), nested as in the source, each as `first-last kind signature` with its line range, so a "
        "file can be understood without reading it. For a folder, the top-level symbols of each source file "
        "under it (the files list_files shows), until a size budget; the result says when it was cut. "
        f"Languages: {_LANGUAGES_HELP}. Then read one symbol with read_symbol, or lines with read_file."
    ),
    "input": _object({
        "path": _string(f"A source file or a folder; {_PATH_HELP}.", minLength=1),
        "depth": _integer("How many levels of nesting to show (1: top level only); default: all for a file, 1 for a "
                          "folder.", None, 1, MAX_DEPTH),
    }, ("path",)),
    "output": _output({
        "path": _STR,
        "symbols": {"type": "array", "items": {**_SYMBOL_ITEM, "properties": {
            **_SYMBOL_ITEM["properties"], "depth": {"type": "integer", "minimum": 0}},
            "required": [*_SYMBOL_ITEM["required"], "depth"]}},
        "files": {"type": "integer", "minimum": 0, "description": "files outlined"},
        "truncated": _BOOL,
        "skipped": _SKIPPED,
        "skipped_files": _SKIPPED_FILES,
    }),
}

FIND_SYMBOL = {
    "run": "code.navigate:find_symbol",
    "title": "Find symbol",
    "description": (
        "Find where a symbol is defined across the workspace: its file, line range, kind and signature. `name` is "
        "a plain name ('parse_args'), a qualified name ('ArgumentParser.parse_args', also 'ns::Type::method'), or "
        "a glob with * and ? ('parse_*' for every name with that prefix, 'Http*Error', 'Thread.*' for the members of "
        "Thread; a * does not cross a dot). Only definitions count, "
        "not uses (find_references finds those). Narrow with `kind` and `path`. Names are looked up in the code "
        "index (each root's definitions, kept up to date with the files before each answer), or, while it is "
        "being built, in the files where the name occurs. "
        f"Languages: {_LANGUAGES_HELP}."
    ),
    "input": _object({
        "name": _string("The name, Class.member, or a glob such as get_* or Class.* (not only wildcards).", minLength=1),
        "kind": {"type": "string", "enum": [*SYMBOL_KINDS, None], "description": "Only symbols of this kind."},
        "path": _string(f"A folder or file to search (default: the first root); {_PATH_HELP}.", default="."),
        "limit": _integer("The most definitions to return.", SYMBOL_LIMIT, 1, MAX_SYMBOL_LIMIT),
    }, ("name",)),
    "output": _output({
        "name": _STR,
        "symbols": {"type": "array", "items": _SYMBOL_ITEM},
        "truncated": _BOOL,
        "skipped": _SKIPPED,
        "skipped_files": _SKIPPED_FILES,
        "index": {"type": "string", "enum": ["fresh", "building", "off"],
                  "description": "fresh: answered from the code index, brought up to date with the files first; "
                  "building: the index is being built (or brought up to date) in the background and the files were "
                  "read instead; off: no index (--no-index, or it cannot be used here)"},
    }),
}

REPO_MAP = {
    "run": "code.repo_map:repo_map",
    "title": "Repository map",
    "description": (
        "Show the shape of a repository or folder in one call: the definitions the rest of the code uses most (classes, "
        "functions, methods, ... as their signatures, not bodies), grouped by file, most used first, within a budget "
        "of `budget` tokens. A definition ranks by the other files that use its name (each file counting the square "
        "root of its uses; a name defined in several files shares them; a _private name counts a tenth); a method "
        "comes with its class. Read it first on an unknown repository, then outline, read_symbol or find_references "
        "for what it shows. From the code index where it is ready, else by reading the files (at most "
        f"{MAX_MAP_SCANNED}). "
        f"Languages: {_LANGUAGES_HELP}."
    ),
    "input": _object({
        "path": _string(f"The folder to map (default: the first root); {_PATH_HELP}.", default="."),
        "budget": _integer("The most tokens the map may take (text and structured content, at 3 bytes a token).",
                           MAP_BUDGET, MIN_MAP_BUDGET, MAX_MAP_BUDGET),
    }),
    "output": _output({
        "path": _STR,
        "files": {"type": "array", "description": "the files shown, most used first", "items": _output({
            "path": _STR,
            "used_by": {"type": "integer", "minimum": 0, "description": "other files that use one of its names"},
            "symbols": {"type": "array", "description": "its definitions shown, in source order", "items": _output({
                "qualified_name": _STR,
                "kind": {"enum": list(SYMBOL_KINDS)},
                "line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
                "def_line": {"type": "integer", "minimum": 1},
                "signature": _STR,
                "used_by": {"type": "integer", "minimum": 0, "description": "other files that use its name"},
            })},
        })},
        "definitions": {"type": "integer", "minimum": 0, "description": "definitions in the folder's code files"},
        "shown": {"type": "integer", "minimum": 0, "description": "definitions shown (with the classes of methods)"},
        "code_files": {"type": "integer", "minimum": 0, "description": "code files read"},
        "truncated": {"type": "boolean", "description": "whether definitions were left out for the budget"},
        "skipped": _SKIPPED,
        "skipped_files": _SKIPPED_FILES,
        "index": {"type": "string", "enum": ["fresh", "building", "off"],
                  "description": "fresh: from the code index, brought up to date first; building: the index is being "
                  "built and the files were read; off: no index"},
    }),
}

LOCATE = {
    "run": "code.locate:locate",
    "title": "Locate code for a task",
    "description": (
        "Find the code a task is about: give the task as a person writes it (an issue, a bug report, an error "
        "message, a stack trace, a question) and get the regions of code that matter most (functions, methods, a "
        "class's own lines, module lines), ranked, each with why (a trace frame, a name it defines, the words it "
        "matches, a use by a better region), and their code, whole lines, best first, within `budget` tokens. "
        "Exact evidence ranks first: a stack trace's files and lines, paths, names written as code (`parse_args`, "
        "camelCase, snake_case), quoted error strings; then the query's words (identifiers split into their parts) "
        "by BM25 over each file's path, definitions and identifiers, then over each region's text; then the "
        "definitions the best regions use. Entirely local, from the code index where it is ready, else by reading "
        f"the files (at most {MAX_MAP_SCANNED}). Read it first on a task, then read_symbol or read_file for more. "
        f"Languages: {_LANGUAGES_HELP}."
    ),
    "input": _object({
        "query": _string("The task: an issue's text, an error message, a stack trace or a question.", minLength=1,
                         maxLength=20000),
        "budget": _integer("The most tokens the answer may take (text and structured content, at 3 bytes a token).",
                           MAP_BUDGET, MIN_LOCATE_BUDGET, MAX_MAP_BUDGET),
        "path": _string(f"The folder to search (default: the first root); {_PATH_HELP}.", default="."),
    }, ("query",)),
    "output": _output({
        "terms": {"type": "array", "items": _STR, "description": "the query's terms (stemmed), most frequent first"},
        "evidence": _output({
            "frames": {"type": "array", "items": _output({"path": _STR, "line": {"type": "integer", "minimum": 0}}),
                       "description": "stack trace frames and path:line references read in the query"},
            "paths": {"type": "array", "items": _STR, "description": "file paths the query names"},
            "names": {"type": "array", "items": _STR, "description": "names the query writes as code"},
            "strings": {"type": "array", "items": _STR, "description": "quoted strings and exception messages"},
        }),
        "regions": {"type": "array", "description": "the best regions, best first", "items": _output({
            "path": _STR,
            "start_line": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 1},
            "symbol": {"type": "string", "description": "the definition's qualified name (empty for module lines)"},
            "kind": {"type": "string", "description": "the definition's kind, or module"},
            "score": {"type": "number"},
            "reasons": {"type": "array", "items": _STR, "description": "what put it there"},
        })},
        "shown": {"type": "integer", "minimum": 0, "description": "regions whose code the text shows"},
        "files_ranked": {"type": "integer", "minimum": 0, "description": "code files ranked"},
        "index": {"type": "string", "enum": ["fresh", "building", "off"],
                  "description": "fresh: from the code index, brought up to date first; building: the index is being "
                  "built and the files were read; off: no index"},
        "truncated": {"type": "boolean", "description": "whether ranked regions were left out of the text for the budget"},
    }),
}

FIND_REFERENCES = {
    "run": "code.references:find_references",
    "title": "Find references",
    "description": (
        "Find where a symbol is used in the code of the workspace, from the syntax tree: occurrences in comments "
        "and string literals are left out, and the definitions are marked [definition]. `name` is a name "
        "('get') or one qualified with its class or module ('Session.get', 'api.get', 'requests.api.get'). In "
        "Python, JavaScript and TypeScript each use is decided by scopes: `scoped` uses reach the symbol's "
        "definition (calls, imports of it, self.get or this.get in its class, Session().get), `name` uses only "
        "share the name (obj.get on an object of unknown type: types would tell), and uses bound to something else "
        "(locals, parameters, keyword arguments, another class's member, another module's name) are left out and "
        "counted. Scoped uses come first, so reading can stop early; in other languages every use is by name. "
        "With --precise, a Python, TypeScript or JavaScript symbol's uses come from its language server once it is "
        "ready (`exact`, by types), and what only the name ties follows as `name`. Each result is "
        f"`path:line:column:` and the line. At most `limit` results. Languages: {_LANGUAGES_HELP}."
    ),
    "input": _object({
        "name": _string("The name (parse_args), or the name qualified with its class or module (Session.get, "
                        "api.get): a qualified name keeps only the uses that can reach that definition.", minLength=1),
        "path": _string(f"A folder or file to search (default: the first root); {_PATH_HELP}.", default="."),
        "limit": _integer("The most references to return.", REFERENCE_LIMIT, 1, MAX_SEARCH_LIMIT),
    }, ("name",)),
    "output": _output({
        "name": _STR,
        "references": {"type": "array", "items": _output({
            "path": _STR,
            "line": {"type": "integer", "minimum": 1},
            "column": {"type": "integer", "minimum": 1},
            "text": {"type": "string", "description": "the line, trimmed"},
            "definition": {"type": "boolean", "description": "true where the name is defined"},
            "precision": {"type": "string", "enum": ["exact", "scoped", "name"],
                          "description": "exact: the language server ties this use to the definition (--precise); "
                                         "scoped: the scopes do; name: only the name does"},
        })},
        "file_count": _INT,
        "truncated": _BOOL,
        "excluded": {"type": "integer", "minimum": 0,
                     "description": "uses of the name left out: bound to something else by the scopes"},
        "definitions": {"type": "array", "description": "the definitions the name was resolved to (for a qualified "
                                                        "name, or the language server's query)",
                        "items": _output({"path": _STR, "line": {"type": "integer", "minimum": 1},
                                          "qualified_name": _STR, "kind": _STR})},
        "skipped": _SKIPPED,
        "skipped_files": _SKIPPED_FILES,
        **_LANGUAGE_SERVER,
    }),
}

FIND_DEFINITION = {
    "run": "code.definition:find_definition",
    "title": "Find definition",
    "description": (
        "Go to the definition of a name used at a place in a file: give `path`, `line` and the `name` as written on "
        "that line (`column`, 1-based as find_references shows it, picks one of several). Returns each definition as "
        "`path:line:column: [kind] line`. In Python the name is looked up by Python's scopes (`scoped`): a local, a "
        "parameter, a def of the file, a member of the class that self or a variable holds (and of its bases), an "
        "import followed to the module that defines the name, through re-exports. What the scopes cannot tell (an "
        "attribute of an object of unknown class), and every name in the other languages, is answered by name "
        "(`name`): the definitions with that name in the workspace, this file's first. A builtin or a module "
        f"outside the workspace is said as such. Languages: {_LANGUAGES_HELP}."
    ),
    "input": _object({
        "path": _string(f"The file where the name is used; {_PATH_HELP}.", minLength=1),
        "line": _integer("The line of the use (1-based).", None, 1, 10_000_000),
        "name": _string("The name as written on that line (a name, not a dotted path: for self.request, request).",
                        minLength=1),
        "column": _integer("Where the name is on the line (1-based; any of its characters), when it is written there "
                           "more than once; default: its first.", None, 1, 10_000_000),
    }, ("path", "line", "name")),
    "output": _output({
        "name": _STR,
        "path": _STR,
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1, "description": "where the name starts"},
        "precision": {"type": "string", "enum": ["exact", "scoped", "name"],
                      "description": "exact: the language server's (--precise); scoped: Python's scopes lead to these "
                                     "definitions; name: they only share the name"},
        "definitions": {"type": "array", "items": {"type": "object", "properties": {
            "path": _STR,
            "line": {"type": "integer", "minimum": 1},
            "column": {"type": "integer", "minimum": 1},
            "text": {"type": "string", "description": "the line, trimmed"},
            "kind": {"enum": list(SYMBOL_KINDS), "description": "the symbol the outline lists there, if any"},
            "precision": {"type": "string", "enum": ["exact", "scoped", "name"]},
        }, "required": ["path", "line", "column", "text", "precision"]}},
        "builtin": {**_nullable("string"), "description": "the builtin the name is (Python), when it is one"},
        "external": {"type": "array", "items": _STR,
                     "description": "dotted names the name leads to in modules outside the workspace"},
        "truncated": _BOOL,
        **_LANGUAGE_SERVER,
    }),
}

FIND_IMPLEMENTATIONS = {
    "run": "code.implementations:find_implementations",
    "title": "Find implementations",
    "description": (
        "Find the classes that derive from a Python class, directly or through others ('BaseAdapter'), or their "
        "own definitions of one of its methods ('BaseAdapter.send': the overrides, what to change with an "
        "interface). The class statements that name the base are found, and each base is looked up as "
        "find_definition does (scopes, imports followed across files): `scoped` when it leads to the class asked "
        "for, `name` when the scopes cannot tell; one that leads to another class of that name is left out. Each "
        "result is `path:line: [kind] signature (class, from base)`. Python; with --precise, TypeScript, "
        "JavaScript and C++ too, from their language servers (`exact`: the classes implementing an interface or "
        "deriving from a class, the methods implementing or overriding a method, objects typed as an interface). "
        "At most `limit` results."
    ),
    "input": _object({
        "name": _string("A class (BaseAdapter) or a method with its class (BaseAdapter.send), qualified further with "
                        "its module where the name is not unique (adapters.BaseAdapter).", minLength=1),
        "path": _string(f"A folder or file to look in for the derived classes (default: the first root); {_PATH_HELP}.",
                        default="."),
        "limit": _integer("The most implementations to return.", REFERENCE_LIMIT, 1, MAX_SEARCH_LIMIT),
    }, ("name",)),
    "output": _output({
        "name": _STR,
        "bases": {"type": "array", "description": "the classes the name was resolved to",
                  "items": _output({"path": _STR, "line": {"type": "integer", "minimum": 1}, "qualified_name": _STR})},
        "implementations": {"type": "array", "items": _output({
            "path": _STR,
            "line": {"type": "integer", "minimum": 1},
            "kind": {"enum": list(SYMBOL_KINDS)},
            "signature": {"type": "string", "description": "the header on one line"},
            "qualified_name": _STR,
            "class": {"type": "string", "description": "the derived class"},
            "base": {"type": "string", "description": "the class its statement derives it from"},
            "precision": {"type": "string", "enum": ["exact", "scoped", "name"],
                          "description": "exact: the language server's (--precise); scoped: its base leads to the class "
                                         "asked for; name: the scopes cannot tell"},
        })},
        "derived_classes": {"type": "integer", "minimum": 0, "description": "classes found deriving, with the member or not"},
        "truncated": _BOOL,
        "skipped": _SKIPPED,
        "skipped_files": _SKIPPED_FILES,
        **_LANGUAGE_SERVER,
    }),
}

DIAGNOSTICS = {
    "run": "code.diagnostics:diagnostics",
    "title": "Diagnostics",
    "description": (
        "Check the code of a file or of a folder for what its text alone says is wrong, as an agent does after an "
        "edit: syntax errors in every language the code tools read (the grammar's own reading: what it cannot read, "
        "what it had to assume missing), and in Python pyflakes' findings: errors (an undefined name, `return` "
        "outside a function, a format that raises) and warnings (an unused import or variable, a redefinition, a "
        "star import). With --precise and a language server ready, files of its language (up to 25 a call) are "
        "type-checked by it instead (basedpyright's for Python, tsserver's for TypeScript and JavaScript: their errors "
        "and warnings, the project's own configuration honoured). Each result is "
        "`path:line:column: severity [code] message`; files in path order, at most `limit` findings, and the result "
        f"says how many files were checked. Languages: {_LANGUAGES_HELP}."
    ),
    "input": _object({
        "path": _string(f"A file or a folder to check (default: the first root); {_PATH_HELP}.", default="."),
        "severity": {"type": "string", "enum": ["error", "warning", None], "default": "warning",
                     "description": "The least severe finding to return: error (errors only) or warning (all)."},
        "limit": _integer("The most findings to return.", REFERENCE_LIMIT, 1, MAX_SEARCH_LIMIT),
    }),
    "output": _output({
        "path": _STR,
        "findings": {"type": "array", "items": _output({
            "path": _STR,
            "line": {"type": "integer", "minimum": 1},
            "column": {"type": "integer", "minimum": 1},
            "severity": {"type": "string", "enum": ["error", "warning"]},
            "code": {"type": "string", "description": "syntax-error, or pyflakes' name for it (UndefinedName, "
                                                      "UnusedImport, ...), or the language server's rule "
                                                      "(reportAttributeAccessIssue, TS2322, ...)"},
            "message": _STR,
        })},
        "errors": {"type": "integer", "minimum": 0, "description": "errors found in the files checked"},
        "warnings": {"type": "integer", "minimum": 0, "description": "warnings found in the files checked"},
        "files_checked": _INT,
        "truncated": _BOOL,
        "skipped": _SKIPPED,
        "skipped_files": _SKIPPED_FILES,
        "type_checked": {"type": "integer", "minimum": 0,
                         "description": "files whose findings are a language server's (--precise)"},
        **_LANGUAGE_SERVER,
    }),
}

READ_SYMBOL = {
    "run": "code.navigate:read_symbol",
    "title": "Read symbol",
    "description": (
        "Read the source of one symbol of a file: a function, method, class, ... with its decorators, doc comment "
        "and body, numbered like read_file, instead of the whole file. `name` is the name or the qualified name "
        "as outline shows it ('Parser.parse'); when several symbols match, the first is shown and the others are "
        "listed. At most 256 KiB of source per call."
    ),
    "input": _object({
        "path": _string(f"The source file; {_PATH_HELP}.", minLength=1),
        "name": _string("The symbol's name or qualified name, such as Parser.parse.", minLength=1),
    }, ("path", "name")),
    "output": _output({
        **_SYMBOL_ITEM["properties"],
        "text": {"type": "string", "description": "the symbol's lines, without numbers"},
        "truncated": _BOOL,
        "others": {"type": "array", "items": _SYMBOL_ITEM, "description": "other symbols with that name"},
    }),
}

REPLACE_SYMBOL = {
    "run": "code.symbol_edits:replace_symbol",
    "title": "Replace symbol",
    "description": (
        "Replace one symbol of a file (a function, method, class, ... as outline lists it) with new code: its whole "
        "extent, decorators and the doc comment above it included, as read_symbol shows it. Write `text` as the "
        "complete new definition (with its decorators and doc comment, if it keeps them); its indentation is "
        "adapted to the symbol's place and its line ends to the file's. `name` is the name or qualified name "
        "('Parser.parse'); a name that several symbols share is refused with the list. With `body` true, only the "
        "code inside it is replaced (after the header, and in Python after its docstring, which stays; between the "
        "braces elsewhere): write `text` as that code alone. Atomic; refused when it adds syntax errors "
        "(allow_syntax_errors to write it anyway). Returns the diff."
    ),
    "input": _object({
        "path": _string(f"The source file; {_PATH_HELP}.", minLength=1),
        "name": _string("The symbol's name or qualified name, such as Parser.parse.", minLength=1),
        "text": _string("The new code of the whole symbol, as it would be written at the top level (empty: the "
                        "symbol is deleted).", maxLength=MAX_CONTENT_CHARS),
        "line": _integer("When several symbols share the name: a line of the one meant (default: the name alone "
                         "must name one).", None, 1, 100_000_000),
        "body": _boolean("Replace only the body: the code after the header (and a Python docstring) or between "
                         "the braces; the signature, decorators and doc comment stay."),
        "dry_run": _DRY_RUN,
        "allow_syntax_errors": _ALLOW_SYNTAX_ERRORS,
        "expected_sha256": _EXPECTED_SHA256,
    }, ("path", "name", "text")),
    "output": _output({**_SYMBOL_ITEM["properties"], "body": {"type": "boolean", "description": "only the body was "
                       "replaced"}, "diff": _STR, "dry_run": _BOOL, **_NEW_DIAGNOSTICS}),
}

INSERT_SYMBOL = {
    "run": "code.symbol_edits:insert_symbol",
    "title": "Insert symbol",
    "description": (
        "Insert new code (a function, method, class, ...) beside a symbol of a file: `before` or `after` the symbol "
        "`name` (its decorators and doc comment kept with it), or at the `end` of the class, struct, interface or "
        "module `name` (after its last member, before its closing brace), or at the end of the file (`end` without "
        "a name). The code is indented as its neighbours and set apart by blank lines as they are. Atomic; refused "
        "when it adds syntax errors (allow_syntax_errors to write it anyway). Returns the diff."
    ),
    "input": _object({
        "path": _string(f"The source file; {_PATH_HELP}.", minLength=1),
        "text": _string("The code to insert, as it would be written at the top level.", minLength=1,
                        maxLength=MAX_CONTENT_CHARS),
        "position": {"type": "string", "enum": ["before", "after", "end"],
                     "description": "before or after the symbol `name`, or at the end of it (or of the file)."},
        "name": _string("The symbol's name or qualified name (for end: the class; none: the end of the file).",
                        minLength=1),
        "line": _integer("When several symbols share the name: a line of the one meant (default: the name alone "
                         "must name one).", None, 1, 100_000_000),
        "dry_run": _DRY_RUN,
        "allow_syntax_errors": _ALLOW_SYNTAX_ERRORS,
        "expected_sha256": _EXPECTED_SHA256,
    }, ("path", "text", "position")),
    "output": _output({
        "path": _STR,
        "where": {"type": "string", "description": "where the code went, such as 'after the method Parser.parse'"},
        "diff": _STR,
        "dry_run": _BOOL,
        **_NEW_DIAGNOSTICS,
    }),
}

RENAME_SYMBOL = {
    "run": "code.rename:rename_symbol",
    "title": "Rename symbol",
    "description": (
        "Rename a Python function, class, method, variable or constant across the workspace: its definition and "
        "every use Python's scopes prove is its own (calls, imports, self.name in its class and subclasses, "
        "module.name, __all__ entries), in every file at once or none, each file checked for syntax errors. Uses "
        "only the name ties to it (an attribute of an object of unknown type) are listed as undecided and left "
        "alone; locals, parameters and keyword arguments of the same name, comments and strings are not touched. "
        "`name` is qualified with its module or class (core.greet, Session.get). Refused whole when it could change "
        "what the code means: new_name already used there, a method overridden in a subclass, a file that cannot be "
        "read, a binding left behind. dry_run returns the diff and the undecided uses, changing nothing. With "
        "--precise and the language server ready, the uses renamed are the server's rename (by types). A "
        "TypeScript, JavaScript, C or C++ symbol is renamed only with --precise, by its language server's own rename "
        "(overrides included), each edit checked, refused whole if it leaves a use the server reports behind."
    ),
    "input": _object({
        "name": _string("The symbol, qualified with its module or class (core.greet, Session.get).", minLength=1),
        "new_name": _string("Its new name (an identifier of the symbol's language).", minLength=1, maxLength=256),
        "path": _string(f"A folder or file to rename in (default: the first root); {_PATH_HELP}.", default="."),
        "dry_run": _DRY_RUN,
        "allow_syntax_errors": _ALLOW_SYNTAX_ERRORS,
    }, ("name", "new_name")),
    "output": _output({
        "name": _STR,
        "new_name": _STR,
        "renamed": {"type": "integer", "minimum": 0, "description": "uses renamed (or to be), the definition included"},
        "sites": {"type": "array", "description": "where the name was (or is to be) renamed",
                  "items": _output({"path": _STR, "line": {"type": "integer", "minimum": 1},
                                    "column": {"type": "integer", "minimum": 1}})},
        "files": {"type": "array", "items": _output({
            "path": _STR,
            "action": {"enum": ["A", "M", "D", "R"], "description": "M: modified"},
            "from": _nullable("string"),
        })},
        "diff": _STR,
        "undecided": {"type": "array", "description": "uses left alone: only the name ties them to the symbol",
                      "items": _output({"path": _STR, "line": {"type": "integer", "minimum": 1},
                                        "column": {"type": "integer", "minimum": 1}, "text": _STR})},
        "outside": {"type": "array", "items": _STR,
                    "description": "files of the roots outside path that mention the name (that use it, by the language "
                                   "server's rename): not changed"},
        "excluded": {"type": "integer", "minimum": 0,
                     "description": "uses of the word bound to something else, not renamed"},
        "dry_run": _BOOL,
        **_LANGUAGE_SERVER,
        **_NEW_DIAGNOSTICS,
    }),
}

SEARCH_STRUCTURE = {
    "run": "code.structure:search_structure",
    "title": "Search structure",
    "description": (
        "Search code by its syntax with an ast-grep pattern: code of the given language where $NAME matches any "
        "one node and $$$NAME any number of them, such as '$OBJ.close()', 'print($$$ARGS)', 'if $COND: return "
        "$X' or 'fetch($URL, { method: $M })'. Layout and comments do not matter; a metavariable used twice must "
        "match the same code. Returns each match's place and text and what each metavariable captured. Searches "
        "the files of that language under `path`. A pattern ast-grep cannot use (several nodes) or an unknown "
        "language is an error; a pattern that matches nothing says when its syntax may be why (not valid code, or a "
        "definition that leaves out a part the code has, such as a return type)."
    ),
    "input": _object({
        "pattern": _string("The pattern, code with $METAVARIABLES (upper case).", minLength=1),
        "language": {"type": "string", "enum": list(CODE_LANGUAGES), "description": "The pattern's language."},
        "path": _string(f"A folder or file to search (default: the first root); {_PATH_HELP}.", default="."),
        "limit": _integer("The most matches to return.", STRUCTURE_LIMIT, 1, MAX_SEARCH_LIMIT),
        "full": _boolean("Return each match's whole text and captures (up to 2000 characters each) instead of "
                         "their first 5 lines."),
    }, ("pattern", "language")),
    "output": _output({
        "pattern": _STR,
        "language": _STR,
        "matches": {"type": "array", "items": _output({
            "path": _STR,
            "line": {"type": "integer", "minimum": 1},
            "column": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 1},
            "text": {"type": "string", "description": "the match's source: its first 5 lines unless `full`, and "
                     "past 2000 characters cut (at a line break where one is near), ended by '… [cut: N more "
                     "characters in M more lines]'"},
            "variables": {"type": "object", "additionalProperties": _STR,
                          "description": "each metavariable's captured text (a $$$ one's is the source from its "
                                         "first node to its last), cut to 5 lines unless `full` and past 2000 "
                                         "characters, like `text`"},
        })},
        "file_count": _INT,
        "truncated": _BOOL,
        "skipped": _SKIPPED,
        "skipped_files": _SKIPPED_FILES,
    }),
}


RUN_TIMEOUT = 120
MAX_RUN_TIMEOUT = 3600
MAX_COMMAND_CHARS = 100_000
MAX_RUN_ENV = 100
RUN_COMMAND = {
    "run": "run_command:run_command",
    "tasks": "optional",  # a 2026-07-28 client of the tasks extension polls a long run instead of waiting on it
    "title": "Run a command",
    "description": (
        "Run a shell command line (`sh -c`) in a folder of the workspace, inside a sandbox, and return its exit status, "
        "duration and output: a test suite, a build, a linter. The sandbox holds the command and everything it "
        "starts: it reads the roots, the system's programs and libraries and the folders the server names, and "
        "nothing of the user's home; it writes the roots only where the server allows writing (never a .git folder), "
        "and a private /tmp that is also HOME; no network but a private loopback unless the server allows it; "
        "limits on memory, processes, CPU time and file size; nothing it started outlives the call. Its environment "
        "is a minimal PATH, HOME, TMPDIR and LANG, what the server adds, and `env`. Each stream keeps its first 8 KiB "
        "and last 24 KiB, the middle counted. A non-zero exit status or a limit reached is a result, not an error. "
        "With a progress token, output lines come as progress notifications; cancelling the request kills the command."
    ),
    "input": _object({
        "command": _string("The command line, run by /bin/sh -c (pipes, &&, redirections as in a shell).", minLength=1,
                           maxLength=MAX_COMMAND_CHARS),
        "cwd": _string(f"The folder to run in (default: the first root); {_PATH_HELP}.", default="."),
        "timeout": _integer(f"Seconds before the command and everything it started are killed (default {RUN_TIMEOUT}, or "
                            "the server's --run-timeout if lower; at most that, 600 unless set).", None, 1,
                            MAX_RUN_TIMEOUT),
        "env": {"type": "array", "maxItems": MAX_RUN_ENV, "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*="},
                "description": "Variables to set, each 'NAME=VALUE' (over the server's)."},
        "report": {"type": "string", "enum": ["tests", None],
                   "description": "'tests': the test runner's JUnit report comes back as data in `tests` (pytest, "
                                  "gotestsum and jest-junit are told where by their variables; any other runner "
                                  "can write JUnit XML into $JUNIT_REPORT_DIR)."},
    }, ("command",)),
    "output": _output({
        "exit_code": {**_nullable("integer"), "description": "the shell's exit status (128 + N: ended by signal N); "
                      "null when killed at the timeout"},
        "limits": {"type": "array", "items": {"type": "string", "enum": ["timeout", "memory", "processes"]},
                   "description": "the limits of the whole process tree the command reached (memory and processes: "
                                  "where the server bounds the tree with a cgroup)"},
        "duration_ms": _INT,
        "timeout": {"type": "integer", "minimum": 1, "description": "the call's timeout, in seconds"},
        "cwd": _STR,
        "command": {"type": "string", "description": "the command as run (past 2000 characters cut, ending in …)"},
        "stdout": {"type": "string", "description": "as kept: its start and end, and a line '[… N bytes left out …]' "
                   "between them when the middle is left out"},
        "stderr": {"type": "string", "description": "as stdout"},
        "stdout_bytes": _INT,
        "stderr_bytes": _INT,
        "stdout_omitted": _INT,
        "stderr_omitted": _INT,
        "tests": {"anyOf": [{"type": "object", "properties": {
            "reports": {"type": "integer", "description": "the JUnit XML files read"},
            "total": _INT, "failed": _INT, "errors": {"type": "integer", "description": "tests that broke (an error, "
                                                                                   "not a failed assertion)"},
            "skipped": _INT,
            "failures": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "string", "description": "the test: its class or module, '::', its name"},
                "kind": {"enum": ["failure", "error"]},
                "file": _nullable("string"), "line": _nullable("integer"),
                "message": _STR, "traceback": {"type": "string", "description": "its start and end, at most 2000 "
                                                                                 "characters"}},
                "required": ["id", "kind", "file", "line", "message", "traceback"]},
                         "description": "the first 50 tests that failed or broke, in the reports' order"},
            "failures_omitted": _INT,
            "unreadable": {"type": "array", "items": {"type": "string"},
                           "description": "report files not read (not regular, too large, malformed or with a DTD; "
                                          "the first 20)"},
            "unreadable_omitted": _INT},
            "required": ["reports", "total", "failed", "errors", "skipped", "failures", "failures_omitted",
                         "unreadable", "unreadable_omitted"]}, {"type": "null"}],
            "description": "with report: 'tests', what the runner's JUnit reports say; else null"},
    }),
}


# -- the tools, in the order they are listed ----------------------------------------------------------
READ_TOOLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("list_files", LIST_FILES),
    ("read_file", READ_FILE),
    ("search_code", SEARCH_CODE),
    ("git_status", GIT_STATUS),
    ("git_log", GIT_LOG),
    ("git_diff", GIT_DIFF),
    ("git_show", GIT_SHOW),
)
CODE_TOOLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("outline", OUTLINE),
    ("find_symbol", FIND_SYMBOL),
    ("repo_map", REPO_MAP),
    ("locate", LOCATE),
    ("find_references", FIND_REFERENCES),
    ("find_definition", FIND_DEFINITION),
    ("find_implementations", FIND_IMPLEMENTATIONS),
    ("diagnostics", DIAGNOSTICS),
    ("read_symbol", READ_SYMBOL),
    ("search_structure", SEARCH_STRUCTURE),
)
"""Offered only when ast-grep-py (the `code` extra) is installed; listed after the other reading tools."""
WRITE_TOOLS: tuple[tuple[str, dict[str, Any], dict[str, bool]], ...] = (
    ("write_file", WRITE_FILE,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}),
    ("edit_file", EDIT_FILE,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}),
    ("apply_patch", APPLY_PATCH,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}),
    ("create_directory", CREATE_DIRECTORY,
     {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}),
    ("move_path", MOVE_PATH,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}),
    ("delete_path", DELETE_PATH,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}),
    # Each git write replaces something (an index entry, a file, a stash, HEAD with amend): none only adds.
    ("git_add", GIT_ADD,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}),
    ("git_commit", GIT_COMMIT,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}),
    ("git_branch", GIT_BRANCH,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}),
    ("git_switch", GIT_SWITCH,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}),
    ("git_restore", GIT_RESTORE,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}),
    ("git_stash", GIT_STASH,
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}),
)


_EDITING = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}
RUN_TOOLS: tuple[tuple[str, dict[str, Any], dict[str, bool]], ...] = (
    ("run_command", RUN_COMMAND, _EDITING),
)
"""Offered with --allow-run (run_command.py), listed last; open-world with --run-network."""
CODE_WRITE_TOOLS: tuple[tuple[str, dict[str, Any], dict[str, bool]], ...] = (
    ("replace_symbol", REPLACE_SYMBOL, _EDITING),
    ("insert_symbol", INSERT_SYMBOL, _EDITING),
    ("rename_symbol", RENAME_SYMBOL, _EDITING),
)
"""Offered with --allow-write when the code tools are (they find symbols by the outline); listed last."""


SPECS: dict[str, dict[str, Any]] = {name: spec for name, spec, *_ in READ_TOOLS + CODE_TOOLS + WRITE_TOOLS
                                    + CODE_WRITE_TOOLS + RUN_TOOLS}
_functions: dict[str, Callable[..., Any]] = {}  # each tool's function, once imported
_DEFAULTS = {name: {key: argument.get("default") for key, argument in spec["input"]["properties"].items()}
             for name, spec in SPECS.items()}  # what each argument left out is (None: no default in the schema)


def run(tool: str, ctx: Context, roots: Roots, /, **arguments: Any) -> Any:
    """Tool `tool`'s function called as the server calls it: function(ctx, roots, **arguments), each argument
    left out given its schema's default (None where the schema gives none). Positional-only: a tool's
    argument may be called `name`."""
    spec = SPECS[tool]
    function = _functions.get(tool)
    if function is None:
        module, attribute = spec["run"].split(":")
        function = _functions[tool] = getattr(import_module(f".{module}", __package__), attribute)
    return function(ctx, roots, **{**_DEFAULTS[tool], **arguments})


def _tool(name: str, spec: dict[str, Any], roots: Roots, annotations: dict[str, bool], *, confirm: bool = False,
          max_result_tokens: int = 0, links: Files | None = None) -> Tool:
    """The tool of `spec`: an unknown argument refused, null taken as left out, then `run` (with `confirm`, once
    the user said yes: confirm.py), its result cut to `max_result_tokens` (or the smaller budget the request's
    `_meta` asks for; 0: none) where it is over (budget.py); with `links` (the resources), a resource_link for
    each served file it names, within that budget (links.py)."""
    known = spec["input"]["properties"]

    def call(ctx: Context, arguments: dict[str, Any]) -> Any:
        if links is None:
            return budgeted(ctx, arguments)
        from . import budget  # only with --resource-links
        from .links import with_links  # (only with --resource-links)

        return with_links(name, budgeted(ctx, arguments), links,
                          budget.budget(ctx, max_result_tokens) * budget.BYTES_PER_TOKEN)

    def budgeted(ctx: Context, arguments: dict[str, Any]) -> Any:
        value = checked_call(ctx, arguments)
        if not max_result_tokens and not isinstance(ctx.params.get("_meta"), dict):
            return value
        from . import budget  # on the first call, off the start-up budget

        cap = budget.budget(ctx, max_result_tokens)
        if not cap:
            return value
        given = {key: item for key, item in arguments.items() if item is not None}
        try:
            return budget.fit(name, value, cap, given, lambda **changed: run(name, ctx, roots, **{**given, **changed}))
        except ToolError:
            raise  # (read_file read again: its own error, as a call would get it)
        except Exception as err:  # a cut gone wrong must not lose the answer: sent as the tool made it
            from .. import log  # (only on this failure)

            log.error(f"cutting the result of {name} to {cap} tokens failed ({type(err).__name__}: {err}); sent uncut")
            return value

    def checked_call(ctx: Context, arguments: dict[str, Any]) -> Any:
        unknown = sorted(key for key in arguments if key not in known)
        if unknown:  # the schema leaves the object open for the providers' sake; the tool does not
            accepted = ", ".join(known) or "no arguments"
            raise ToolError(f"Invalid arguments for tool {name}: unknown argument "
                            f"{', '.join(repr(key) for key in unknown)} (it takes {accepted})")
        # null is "not given": the schema allows it only for optional arguments, which then take their
        # defaults exactly as when left out (strict function calling cannot leave an argument out).
        given = {key: value for key, value in arguments.items() if value is not None}
        if confirm:
            from .confirm import confirmed  # off the start-up budget: only with --confirm-writes, on a call

            return confirmed(ctx, roots, name, given, spec["input"], lambda chosen: run(name, ctx, roots, **chosen))
        return run(name, ctx, roots, **given)

    return Tool(name, call, spec["input"], title=spec["title"], description=spec["description"],
                output_schema=spec["output"], annotations=dict(annotations), task_support=spec.get("tasks"))


def code_available() -> bool:
    """Whether ast-grep-py is installed (the `code` extra), looked up without importing it or .code."""
    return find_spec("ast_grep_py") is not None


def install_tools(server: Server, roots: Roots, *, allow_write: bool = False, code: bool | None = None,
                  confirm_writes: bool = False, max_result_tokens: int = 0, resource_links: Files | None = None,
                  run: RunOptions | None = None) -> None:
    """Register the workspace tools; the code tools when ast-grep-py is installed (`code` None: look), the
    writing ones only when writing is allowed, each (but create_directory) asking the user first with
    `confirm_writes`; each result cut to `max_result_tokens` (0: as the tool made it, unless a request asks);
    with `resource_links` (the resources), the reading tools' results link the served files they name (links.py);
    with `run` (--allow-run), run_command (never asked about: it writes the roots only with --allow-write, which asks
    nothing either)."""
    if code is None:
        code = code_available()
    for name, spec in READ_TOOLS + (CODE_TOOLS if code else ()):
        server.add_tool(_tool(name, spec, roots, READ_ONLY, max_result_tokens=max_result_tokens,
                              links=resource_links))
    if allow_write:
        for name, spec, annotations in WRITE_TOOLS + (CODE_WRITE_TOOLS if code else ()):
            server.add_tool(_tool(name, spec, roots, annotations, confirm=confirm_writes and name not in UNCONFIRMED,
                                  max_result_tokens=max_result_tokens))
    roots.run_options = run
    if run is not None:
        for name, spec, annotations in RUN_TOOLS:
            server.add_tool(_tool(name, spec, roots, {**annotations, "openWorldHint": run.network},
                                  max_result_tokens=max_result_tokens))
