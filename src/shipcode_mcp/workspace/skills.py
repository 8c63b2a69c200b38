"""The workspace's Agent Skills over MCP (--skills): the Skills extension, `io.modelcontextprotocol/skills`.

A skill is a folder holding a SKILL.md whose YAML frontmatter names it (the Agent Skills specification): a
project's `.claude/skills/review/`, `.agents/skills/release/`, or any other folder of the workspace. Each is
served as the extension says (its stable specification, SEP-2640, against 2026-07-28):

- `skills/list` pages through every valid skill of every root; `skills/get {uri}` answers one, or -32602;
  `resources/directory/read {uri}` (the `directoryRead` setting) lists a skill's folder or a folder in it;
  each entry is `{uri, frontmatter, resources}`, the frontmatter as the file says it (YAML 1.2 core schema,
  as the official clients read it) and the manifest of every file of the skill folder with its SHA-256
  digest and size. Both are 2026-07-28 methods, declared only in server/discover (`capabilities.extensions`);
  the 2025-06-18 initialize answer is unchanged.
- Every file of a skill is a resource `skill://ROOT/FOLDER/FILE` (ROOT: the root's name, as its file
  template names it; FOLDER: the skill's folder in that root, its last segment the skill's name), read with
  resources/read through the template `skill://{+path}`, in both eras; each SKILL.md is listed by
  resources/list too, named and described by its frontmatter.

What a skill is made of is what the resources serve (resource_tree's listing: no ignored file, nothing in
.git/, nothing outside a root, no link followed), read through safe_open like every read. A folder that is no
valid skill (no closing `---`, a name that breaks the naming rules or differs from the folder's, a missing
description, a value JSON cannot hold) or is over the extension's limits (512 files, 16 MiB) is left out and
said once on stderr. Digests are kept by the file's identity (device, inode, size, change time), so a listing
reads only what changed.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
import time
from typing import TYPE_CHECKING, Any

from .. import jsonrpc, log
from ..primitives import Resource, ResourceNotFound, ResourceTemplate, ToolError
from .resource_limits import DIRECTORY_MIME_TYPE, MAX_READ_BYTES, SNAPSHOT_SECONDS, display
from .safe_open import open_file
from .text import printable
from .uris import encode_path, file_uri, uri_path

if TYPE_CHECKING:
    from ..context import Context
    from ..primitives import Content
    from ..server import Server
    from .resource_tree import Snapshot
    from .resources import Files
    from .roots import Roots

EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
MAX_FILES = 512
"""The extension's limit on the files of one skill, SKILL.md included."""
MAX_BYTES = 16 * 1024 * 1024
"""The extension's limit on the bytes of one skill's files, all together."""
MAX_SKILL_MD = 1024 * 1024
"""The most of a SKILL.md read to find its frontmatter; a larger one is no skill."""
RACY_NS = 2_000_000_000
"""A file changed this recently (ns) is read again next time, whatever its identity says (git's racy rule)."""
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
"""A skill's name (Agent Skills): lower-case letters, digits and single hyphens, 1 to 64 of them."""
_CLOSE = re.compile(r"^---[\t ]*$", re.MULTILINE)
_NOT_IN_FRONTMATTER = re.compile("[\r\x85\u2028\u2029\ufeff]")
"""What YAML 1.1 (PyYAML) reads as a line break or a byte order mark and the official readers as a character."""
_EXPLICIT_KEY = re.compile(r"^[ \t]*(?:- +)*\?(?:[ \t]|$)", re.MULTILINE)
_TAB_INDENT = re.compile(r"^ *\t[ \t]*[^ \t#\n]", re.MULTILINE)
_INDENT_INDICATOR = re.compile(r"[|>][+-]?[0-9]")


class NotASkill(ValueError):
    """Why a folder holding a SKILL.md is not served as a skill."""


# -- the frontmatter ---------------------------------------------------------------------------------------
MAX_FRONTMATTER = 64 * 1024
"""The most characters of YAML a frontmatter may hold (a name and a description of 1 024 need far less)."""
MAX_DEPTH = 32
"""The deepest a frontmatter's collections may nest (the official reader's limit)."""
MAX_NODES = 10_000
"""The most values (scalars and collections) a frontmatter may hold."""
SAFE_INTEGER = 2**53 - 1
"""The largest integer every JSON reader holds exactly (a JavaScript number)."""


def _core_schema_loader() -> Any:
    """PyYAML's safe loader (libyaml's where it is built) with the YAML 1.2 core schema's typing (the official
    clients': `yes` and `on` stay text, `012` is twelve, no dates), made on first use (the `skills` extra)."""
    import yaml  # the skills extra, only with --skills

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]  # (CSafeLoader where libyaml is built, else SafeLoader)
        pass

    Loader.yaml_implicit_resolvers = {}
    resolvers = (
        ("bool", r"(?:true|True|TRUE|false|False|FALSE)\Z", "tTfF"),
        ("int", r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z", "-+0123456789"),
        ("float", r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z",
         "-+0123456789."),
        ("null", r"(?:~|null|Null|NULL|)\Z", ["~", "n", "N", ""]),
    )
    for tag, pattern, first in resolvers:
        Loader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern), list(first))

    def integer(loader: Any, node: Any) -> int:
        text = loader.construct_scalar(node)
        value = int(text[2:], 8) if text.startswith("0o") else int(text, 16) if text.startswith("0x") else int(text, 10)
        if abs(value) > SAFE_INTEGER:
            raise NotASkill("its frontmatter holds an integer too large for JSON readers to hold exactly")
        return value

    def boolean(loader: Any, node: Any) -> bool:
        return bool(loader.construct_scalar(node).lower() == "true")

    Loader.add_constructor("tag:yaml.org,2002:int", integer)
    Loader.add_constructor("tag:yaml.org,2002:bool", boolean)
    return Loader


_loader: Any = None
_loader_lock = threading.Lock()


def frontmatter_of(data: bytes) -> dict[str, Any]:
    """The frontmatter of a SKILL.md as a JSON object: the YAML between a first line `---` and the next `---`
    line (CRLF taken as LF, a byte order mark skipped, as the official clients split it). NotASkill when the
    file is not UTF-8, has no frontmatter, or one that is no mapping or that the official reader refuses or
    JSON cannot hold (see `_read_yaml`); nothing it holds is ever run or grows without bound."""
    try:
        markdown = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotASkill("SKILL.md is not UTF-8") from None
    text = markdown.replace("\r\n", "\n").removeprefix("\ufeff")
    if not text.startswith("---\n"):
        raise NotASkill("SKILL.md does not begin with a '---' line")
    rest = text[4:]
    close = _CLOSE.search(rest, 0, MAX_FRONTMATTER + 8)
    if close is None:
        raise NotASkill(f"its frontmatter has no closing '---' line within {MAX_FRONTMATTER} characters")
    try:
        value = _read_yaml(rest[:close.start()])
    except NotASkill:
        raise
    except Exception as err:  # YAMLError, ValueError, RecursionError, ...: whatever the file says, no skill
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise NotASkill(f"its frontmatter cannot be read ({printable(first[:200])})") from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise NotASkill("its frontmatter is not a mapping of keys to values")
    _check_json(value)
    return value


def _read_yaml(text: str) -> Any:
    """The YAML `text`, first read as events (refused: anchors and aliases, which could make it grow without
    bound; explicit tags; more than one document; nesting deeper than MAX_DEPTH; more than MAX_NODES values),
    then composed (refused: a key that is not text, a key given twice, `__proto__`), then built."""
    global _loader
    with _loader_lock:
        if _loader is None:
            _loader = _core_schema_loader()
    import yaml  # (loaded by the loader above)

    odd = _NOT_IN_FRONTMATTER.search(text)
    if odd is not None:
        raise NotASkill(f"its frontmatter holds {odd.group()!a}, which the official readers read otherwise")
    if _EXPLICIT_KEY.search(text) or _TAB_INDENT.search(text):
        raise NotASkill("its frontmatter uses an explicit '?' key or tabs for indentation, which the official "
                        "readers refuse")
    depth = values = documents = 0
    flows: list[int] = []  # the line of each flow collection open
    for event in yaml.parse(text, Loader=_loader):
        start: Any = event.start_mark  # (always there: PyYAML's types say it may not be)
        end: Any = event.end_mark
        if isinstance(event, yaml.ScalarEvent) and event.style in ('"', "'") and start.line != end.line:
            raise NotASkill("its frontmatter has a quoted value over several lines, which the official readers refuse")
        if isinstance(event, yaml.ScalarEvent) and event.style in ("|", ">") and _INDENT_INDICATOR.match(text, start.index):
            raise NotASkill("its frontmatter gives a block scalar an indentation indicator, which the official readers "
                            "refuse")
        if isinstance(event, yaml.CollectionStartEvent) and event.flow_style:
            if text[start.index:start.index + 1] not in ("[", "{"):
                raise NotASkill("its frontmatter has a mapping pair inside a flow sequence, which the official readers "
                                "refuse")
            flows.append(start.line)
        elif isinstance(event, yaml.CollectionEndEvent) and flows and text[start.index:start.index + 1] in ("]", "}"):
            if flows.pop() != start.line:
                raise NotASkill("its frontmatter has a flow collection over several lines, which the official readers "
                                "refuse")
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise NotASkill("its frontmatter uses YAML anchors or aliases, which the official readers refuse")
        if getattr(event, "tag", None) is not None:
            raise NotASkill("its frontmatter uses YAML tags, which the official readers refuse")
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1 or event.explicit:
                raise NotASkill("its frontmatter holds more than one YAML document")
        if isinstance(event, yaml.DocumentEndEvent) and event.explicit:
            raise NotASkill("its frontmatter ends with '...', which the official readers refuse")
        if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            values += 1
            if values > MAX_NODES:
                raise NotASkill(f"its frontmatter holds more than {MAX_NODES} values")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH + 1:  # (the top mapping, and MAX_DEPTH levels in it)
                raise NotASkill(f"its frontmatter nests deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    loader = _loader(text)
    try:
        node = loader.get_single_node()
        stack: list[Any] = [node] if node is not None else []
        while stack:
            item = stack.pop()
            if isinstance(item, yaml.MappingNode):
                keys: set[str] = set()
                for key, child in item.value:
                    if not isinstance(key, yaml.ScalarNode) or key.tag != "tag:yaml.org,2002:str":
                        raise NotASkill("its frontmatter has a key that is not text")
                    if (key.style in ('"', "'") and text[key.end_mark.index:key.end_mark.index + 1] != ":") or (
                            not key.style and key.value.startswith("?")) or (  # (plain: None, or '' in libyaml)
                            item.flow_style and isinstance(child, yaml.ScalarNode) and child.value == ""
                            and child.start_mark.index == child.end_mark.index):
                        raise NotASkill("its frontmatter writes a key as the official readers do not read it")
                    if key.value in keys or key.value == "__proto__":
                        raise NotASkill(f"its frontmatter gives the key {printable(key.value[:100])!r} twice, or a "
                                        "key the official readers refuse")
                    keys.add(key.value)
                    stack.append(child)
            elif isinstance(item, yaml.SequenceNode):
                stack.extend(item.value)
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def _check_json(value: Any) -> None:
    """NotASkill for a value that JSON cannot hold as it is (an infinity or NaN, a type YAML has and JSON not)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise NotASkill("its frontmatter holds an infinity or NaN, which JSON cannot")
        elif not isinstance(item, (str, int, float, bool)) and item is not None:
            raise NotASkill(f"its frontmatter holds a {type(item).__name__}, which JSON cannot")


def check_frontmatter(frontmatter: dict[str, Any], folder_name: str, whose: str = "its folder's name") -> None:
    """The Agent Skills rules the official clients check: NotASkill for the first one broken."""
    name, description = frontmatter.get("name"), frontmatter.get("description")
    if not isinstance(name, str) or not 1 <= len(name) <= 64 or not _NAME.match(name):
        raise NotASkill("its name must be 1-64 lower-case letters, digits and single hyphens")
    if name != folder_name:
        raise NotASkill(f"its name {name!r} is not {whose} {folder_name!r}")
    if not isinstance(description, str) or not 1 <= len(description) <= 1024:
        raise NotASkill("its description must be text of 1 to 1024 characters")
    compatibility = frontmatter.get("compatibility")
    if "compatibility" in frontmatter and (not isinstance(compatibility, str) or not 1 <= len(compatibility) <= 500):
        raise NotASkill("its compatibility must be text of 1 to 500 characters")
    metadata = frontmatter.get("metadata")
    if "metadata" in frontmatter and (not isinstance(metadata, dict) or not all(
            isinstance(key, str) and isinstance(item, str) for key, item in metadata.items())):
        raise NotASkill("its metadata must map text to text")


# -- the catalog -------------------------------------------------------------------------------------------
class Skill:
    """One valid skill: its SKILL.md's URI, its frontmatter, and its files (URI -> real path, digest, size)."""

    __slots__ = ("files", "frontmatter", "prefix", "uri")

    def __init__(self, prefix: str, frontmatter: dict[str, Any], files: dict[str, tuple[str, str, int]]) -> None:
        self.prefix = prefix  # skill://ROOT/FOLDER/
        self.uri = prefix + "SKILL.md"
        self.frontmatter = frontmatter
        self.files = files

    def entry(self, asked: str | None = None) -> dict[str, Any]:
        """The extension's Skill entry; its URIs spelled as `asked` spells the SKILL.md's (skills/get of another
        spelling of the same URI, which a client checks it gets back)."""
        prefix = asked[:-len("SKILL.md")] if asked is not None and asked.endswith("/SKILL.md") else self.prefix
        return {"uri": prefix + "SKILL.md", "frontmatter": self.frontmatter,
                "resources": [{"uri": prefix + uri[len(self.prefix):], "digest": digest, "size": size}
                              for uri, (_, digest, size) in self.files.items()]}


class Catalog:
    """The skills of the roots, found in the resource listing (`files`) as it is now (at most SNAPSHOT_SECONDS
    old): each time, every skill file is looked at again (a stat), and read again only when it changed (its
    digest, and a SKILL.md's frontmatter, are kept by the file's identity)."""

    def __init__(self, roots: Roots, files: Files) -> None:
        self._roots = roots
        self._files = files
        # real path -> (identity, digest, size, and for a SKILL.md its frontmatter or why it is no skill)
        self._known: dict[str, tuple[tuple[int, int, int, int], str, int, dict[str, Any] | str | None]] = {}
        self._refused: set[tuple[str, str]] = set()  # (SKILL.md's path, why): said once each
        self._lock = threading.Lock()

    def _listings(self) -> list[tuple[str, str, Snapshot]]:
        """(root, its name in URIs, its listing) of every root that can be listed now."""
        from .resources import root_names  # (the names the roots' templates give them)

        paths = self._roots.paths  # (replaced in one assignment when the client's roots change)
        out: list[tuple[str, str, Snapshot]] = []
        for root, name in zip(paths, root_names(paths), strict=True):
            try:
                out.append((root, name, self._files.snapshot(root, SNAPSHOT_SECONDS)))
            except jsonrpc.JsonRpcError:  # (a root gone)
                continue
        return out

    def skills(self) -> list[Skill]:
        """Every valid skill of every root, roots in order, each root's by its SKILL.md's path."""
        out: list[Skill] = []
        for root, name, snapshot in self._listings():
            for rel in snapshot.names:
                if rel == "SKILL.md" or rel.endswith("/SKILL.md"):
                    skill = self._skill_or_none(root, name, rel[:-len("SKILL.md")].rstrip("/"), snapshot)
                    if skill is not None:
                        out.append(skill)
        return out

    def _locate(self, uri: str) -> tuple[str, str, Snapshot, str] | None:
        """(root, its name, its listing, the path in it) of a skill:// URI, however its escapes are written; its
        root's name is read without case (a URI's host), and a '/' written %2F is refused (an alias of a path)."""
        if not uri.startswith(SCHEME) or "%2f" in uri.lower():
            return None
        path = uri_path("file:///" + uri[len(SCHEME):])  # (the one decoder: a bad escape, '?', '#': None)
        if path is None:
            return None
        name, _, rel = path[1:].partition("/")
        return next(((root, named, snapshot, rel) for root, named, snapshot in self._listings()
                     if named.lower() == name.lower()), None)

    def find(self, uri: str) -> Skill | None:
        """The skill whose SKILL.md `uri` names, made afresh (only it, not the whole catalog)."""
        found = self._locate(uri)
        if found is None:
            return None
        root, name, snapshot, rel = found
        if not (rel == "SKILL.md" or rel.endswith("/SKILL.md")):
            return None
        if not snapshot.has_file(rel):  # perhaps new since the listing was made: look again
            fresh = self._fresh(root, snapshot)
            if fresh is None or not fresh.has_file(rel):
                return None
            snapshot = fresh
        return self._skill_or_none(root, name, rel[:-len("SKILL.md")].rstrip("/"), snapshot)

    def _enclosing(self, uri: str) -> tuple[list[tuple[Skill, Snapshot]], str, str] | None:
        """The valid skills whose folders hold the path `uri` names, nearest first, with the listing each was
        made from; and that path and its root's name (a SKILL.md that is no skill is passed over: a template
        inside a skill is the skill's file)."""
        found = self._locate(uri)
        if found is None:
            return None
        root, name, snapshot, rel = found
        skills: list[tuple[Skill, Snapshot]] = []
        parts = rel.split("/")
        for folder in ("/".join(parts[:count]) for count in reversed(range(len(parts)))):  # a/b/c: a/b, a, ""
            if snapshot.has_file((folder + "/" if folder else "") + "SKILL.md"):
                skill = self._skill_or_none(root, name, folder, snapshot, quiet=True)
                if skill is not None:
                    skills.append((skill, snapshot))
        return skills, rel, name

    def folder(self, uri: str) -> tuple[Snapshot, str, str] | None:
        """(the listing, the folder's path in it, its URI as the skill's files spell it) of a directory resource:
        a skill's root folder or a folder inside a skill, written without a trailing slash."""
        if uri.endswith("/"):
            return None
        found = self._enclosing(uri + "/")  # (the folder's own SKILL.md counts: it is inside itself)
        if found is None or not found[0]:
            return None
        snapshot, rel, name = found[0][0][1], found[1].rstrip("/"), found[2]
        if rel and not snapshot.has_folder(rel):
            return None
        return snapshot, rel, SCHEME + encode_path(name) + ("/" + encode_path(rel) if rel else "")

    def holding(self, uri: str) -> tuple[Skill, str] | None:
        """A skill that lists the file `uri` names (the nearest enclosing valid one), and the file's real path."""
        found = self._enclosing(uri)
        if found is None:
            return None
        skills, rel, name = found
        canonical = SCHEME + encode_path(name) + "/" + encode_path(rel)  # (as the skill's own files spell it)
        for skill, _ in skills:
            entry = skill.files.get(canonical)
            if entry is not None:
                return skill, entry[0]
        return None

    def _fresh(self, root: str, stale: Snapshot) -> Snapshot | None:
        """The listing of `root` made now, unless `stale` already was (then None: nothing to gain)."""
        try:
            fresh = self._files.snapshot(root, 0.0)
        except jsonrpc.JsonRpcError:
            return None
        return None if fresh is stale else fresh

    def _skill_or_none(self, root: str, root_name: str, folder: str, snapshot: Snapshot, *,
                       quiet: bool = False) -> Skill | None:
        """The skill of `folder`, or None (said once on stderr, unless `quiet`). A file gone since the listing was
        made (a skill being edited) makes it look again, once."""
        try:
            return self._skill(root, root_name, folder, snapshot)
        except Exception as err:  # (one folder is never the catalog's failure: it is left out, and said)
            error = err
        if isinstance(error, (ToolError, OSError)):
            fresh = self._fresh(root, snapshot)
            if fresh is not None and fresh.has_file((folder + "/" if folder else "") + "SKILL.md"):
                return self._skill_or_none(root, root_name, folder, fresh, quiet=quiet)
        if quiet:
            return None
        why = (str(error) if isinstance(error, (NotASkill, ToolError)) else
               error.strerror or str(error) if isinstance(error, OSError) else f"{type(error).__name__}: {error}")
        shown = os.path.join(root, folder, "SKILL.md")
        with self._lock:
            first_time = (shown, why) not in self._refused
            self._refused.add((shown, why))
        if first_time:
            log.warning(f"skills: {printable(display(shown))} is not served as a skill: {printable(why)}")
        return None

    def _skill(self, root: str, root_name: str, folder: str, snapshot: Snapshot) -> Skill:
        base = root.rstrip("/") + "/"
        inside = snapshot.names_under(folder)
        if snapshot.truncated and inside and inside[-1] == snapshot.names[-1]:
            raise NotASkill("the root holds more files than its listing does, so the skill's may not all be known")
        if len(inside) > MAX_FILES:
            raise NotASkill(f"it has {len(inside)} files, more than the {MAX_FILES} a skill may have")
        skill_md = (folder + "/" if folder else "") + "SKILL.md"
        digest, size, frontmatter = self._file(base + skill_md, skill_md, markdown=True)
        if isinstance(frontmatter, str):
            raise NotASkill(frontmatter)
        assert frontmatter is not None
        if folder:
            check_frontmatter(frontmatter, os.path.basename(folder))
        else:  # a root that is itself a skill: its URI is skill://ROOT_NAME/SKILL.md
            check_frontmatter(frontmatter, root_name, "the name its root has in URIs (two roots share its folder's name)"
                              if root_name != os.path.basename(root.rstrip("/")) else "its folder's name")
        prefix = SCHEME + encode_path(root_name) + "/" + (encode_path(folder) + "/" if folder else "")
        files = {prefix + "SKILL.md": (base + skill_md, digest, size)}
        total = size
        for rel in inside:
            if rel == skill_md:
                continue
            digest, size, _ = self._file(base + rel, rel)
            total += size
            if total > MAX_BYTES:
                raise NotASkill(f"its files hold more than the {MAX_BYTES} bytes a skill may")
            files[prefix + encode_path(rel[len(folder) + 1:] if folder else rel)] = (base + rel, digest, size)
        return Skill(prefix, frontmatter, files)

    def _file(self, real: str, shown: str, *, markdown: bool = False) -> tuple[str, int, dict[str, Any] | str | None]:
        """A file's SHA-256 digest and size, and for a SKILL.md (`markdown`) its frontmatter or why it is no skill,
        all from one read of it; kept while its identity (device, inode, size, change time) is unchanged, but for
        a file changed in the last RACY_NS (a change within the clock's tick could keep all four)."""
        fd, info = open_file(self._roots, real, shown)
        try:
            identity = (info.st_dev, info.st_ino, info.st_size, info.st_ctime_ns)
            with self._lock:
                known = self._known.get(real)
            if known is not None and known[0] == identity and (known[3] is not None or not markdown):
                return known[1], known[2], known[3] if markdown else None
            limit = MAX_SKILL_MD if markdown else MAX_READ_BYTES
            if info.st_size > limit:
                raise NotASkill(f"{shown} is larger than the {limit} bytes a skill's "
                                f"{'SKILL.md' if markdown else 'file'} may be (a resource read serves no more)")
            data = bytearray()
            while len(data) <= limit and (chunk := os.read(fd, 1 << 20)):
                data += chunk
            if len(data) > limit:
                raise NotASkill(f"{shown} grew past {limit} bytes while it was read")
        finally:
            os.close(fd)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        parsed: dict[str, Any] | str | None = None
        if markdown:
            try:
                parsed = frontmatter_of(bytes(data))
            except NotASkill as err:
                parsed = str(err)
        if len(data) == info.st_size and time.time_ns() - info.st_ctime_ns > RACY_NS:
            with self._lock:  # (a nested skill's SKILL.md is also its enclosing skill's file: its frontmatter stays)
                kept = self._known.get(real)
                if parsed is None and kept is not None and kept[0] == identity:
                    parsed = kept[3]
                self._known[real] = (identity, digest, len(data), parsed)
        return digest, len(data), parsed


# -- the methods and the template ---------------------------------------------------------------------------
class SkillsFeature:
    """skills/list, skills/get and the reader of `skill://{+path}`."""

    def __init__(self, server: Server, catalog: Catalog, files: Files) -> None:
        self._server = server
        self._catalog = catalog
        self._files = files

    def list_skills(self, context: Context, params: dict[str, Any]) -> dict[str, Any]:
        from ..paging import paginate  # (the paging of every list)

        page, next_cursor = paginate(self._catalog.skills(), params.get("cursor"), self._server.page_size,
                                     lambda skill: skill.uri)
        out: dict[str, Any] = {"skills": [skill.entry() for skill in page]}
        if next_cursor is not None:
            out["nextCursor"] = next_cursor
        return out

    def get_skill(self, context: Context, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise jsonrpc.JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: uri must be the URI of a skill's SKILL.md")
        skill = self._catalog.find(uri)
        if skill is None:
            raise jsonrpc.JsonRpcError(jsonrpc.INVALID_PARAMS, f"Unknown skill: {uri[:200]}", {"uri": uri[:4096]})
        return {"skill": skill.entry(uri)}

    def read_directory(self, context: Context, params: dict[str, Any]) -> dict[str, Any]:
        """resources/directory/read: the direct children of a skill's folder (or of a folder in it), files with
        their resource metadata, folders as `inode/directory` resources; -32602 for anything else."""
        from ..paging import paginate  # (the paging of every list)

        uri = params.get("uri")
        if not isinstance(uri, str):
            raise jsonrpc.JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: uri must be the URI of a folder")
        found = self._catalog.folder(uri)
        if found is None:
            raise jsonrpc.JsonRpcError(jsonrpc.INVALID_PARAMS, f"{uri[:200]} is not a directory resource of a skill")
        snapshot, rel, base = found
        children: list[dict[str, Any]] = []
        for name, is_folder in sorted(snapshot.entries(rel).items()):
            child = (rel + "/" if rel else "") + name
            uri_of = base + "/" + encode_path(name)
            if is_folder:
                children.append({"uri": uri_of, "name": display(name), "mimeType": DIRECTORY_MIME_TYPE})
            else:
                served = snapshot.resource(child).to_dict()
                children.append({"uri": uri_of, "name": display(name), "mimeType": served["mimeType"],
                                 **({"size": served["size"]} if "size" in served else {})})
        page, next_cursor = paginate(children, params.get("cursor"), self._server.page_size, lambda child: child["uri"])
        out: dict[str, Any] = {"resources": list(page)}
        if next_cursor is not None:
            out["nextCursor"] = next_cursor
        return out

    def listed(self) -> list[Resource]:
        """Each skill's SKILL.md in resources/list, named and described by its frontmatter (as the extension
        says a SKILL.md resource should be)."""
        return [Resource(skill.uri, skill.frontmatter["name"], description=skill.frontmatter["description"],
                         mime_type="text/markdown", size=skill.files[skill.uri][2],
                         reader=lambda context, uri: self.read(context, uri, {}))
                for skill in self._catalog.skills()]

    def read(self, context: Context, uri: str, variables: dict[str, str]) -> list[Content]:
        """A file of a skill, read as its file:// resource is (the same checks, limits and MIME type), answered
        under its skill:// URI."""
        held = self._catalog.holding(uri)
        if held is None:
            raise ResourceNotFound(uri)
        try:
            contents = self._files.read(context, file_uri(held[1]), {})
        except jsonrpc.JsonRpcError as err:
            data = {**err.data, "uri": uri} if isinstance(err.data, dict) and "uri" in err.data else err.data
            raise jsonrpc.JsonRpcError(err.code, err.message, data) from None
        return [{**item, "uri": uri} for item in contents]


def can_read_skills() -> None:
    """Raise ValueError, with the install hint, where PyYAML (the `skills` extra) cannot be imported."""
    try:
        import yaml  # noqa: F401  (imported, not looked up: a module that is there may still not load)
    except ImportError:
        raise ValueError(f"--skills needs the optional 'skills' extra (PyYAML): {log.install_hint('skills')}") from None


def install_skills(server: Server, roots: Roots, files: Files) -> None:
    """Serve the workspace's skills: the extension's methods and the `skill://{+path}` template."""
    can_read_skills()
    feature = SkillsFeature(server, Catalog(roots, files), files)
    server.add_extension(EXTENSION, {"directoryRead": True},
                         {"skills/list": feature.list_skills, "skills/get": feature.get_skill,
                          "resources/directory/read": feature.read_directory},
                         cache_hints={"skills/list": (0, "private"), "skills/get": (0, "private"),
                                      "resources/directory/read": (0, "private")})
    server.add_resource_source(feature.listed)
    server.add_resource_template(ResourceTemplate(
        SCHEME + "{+path}", "skills", feature.read, title="Agent Skills of the workspace",
        description="A file of one of the workspace's Agent Skills (skills/list names them): skill://ROOT/FOLDER/FILE, "
                    "ROOT the workspace root's name, FOLDER the skill's folder in it, FILE a file of the skill."))
