"""The workspace's Agent Skills over MCP (--skills): the Skills extension, `io.modelcontextprotocol/skills`.

A skill is a folder holding a SKILL.md whose YAML frontmatter names it (the Agent Skills specification): a
project's `.claude/skills/review/`, `.agents/skills/release/`, or any other folder of the workspace. Each is
served as the extension says (its stable specification, SEP-2640, against 2026-07-28):

- `skills/list` pages through every valid skill of every root; `skills/get {uri}` answers one, or -32602;
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
from typing import TYPE_CHECKING, Any

from .. import jsonrpc, log
from ..primitives import Resource, ResourceNotFound, ResourceTemplate, ToolError
from .resource_limits import SNAPSHOT_SECONDS
from .safe_open import open_file
from .uris import encode_path, file_uri

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
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
"""A skill's name (Agent Skills): lower-case letters, digits and single hyphens, 1 to 64 of them."""
_CLOSE = re.compile(r"^---[\t ]*$", re.MULTILINE)


class NotASkill(ValueError):
    """Why a folder holding a SKILL.md is not served as a skill."""


# -- the frontmatter ---------------------------------------------------------------------------------------
def _core_schema_loader() -> Any:
    """PyYAML's safe loader with the YAML 1.2 core schema's typing (the official clients': `yes` and `on` stay
    text, `012` is twelve, no timestamps), made on first use (the `skills` extra)."""
    import yaml  # the skills extra, only with --skills

    class Loader(yaml.SafeLoader):
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
        if text.startswith("0o"):
            return int(text[2:], 8)
        return int(text, 16) if text.startswith("0x") else int(text, 10)

    def boolean(loader: Any, node: Any) -> bool:
        return bool(loader.construct_scalar(node).lower() == "true")

    Loader.add_constructor("tag:yaml.org,2002:int", integer)
    Loader.add_constructor("tag:yaml.org,2002:bool", boolean)
    return Loader


_loader: Any = None
_loader_lock = threading.Lock()


def frontmatter_of(markdown: str) -> dict[str, Any]:
    """The frontmatter of a SKILL.md as a JSON object: the YAML between a first line `---` and the next `---`
    line (CRLF taken as LF, a byte order mark skipped, as the official clients split it). NotASkill when there is
    none, it is no mapping, or holds what JSON cannot (a date tag, an infinity, a key that is not text)."""
    global _loader
    text = markdown.replace("\r\n", "\n").removeprefix("\ufeff")
    if not text.startswith("---\n"):
        raise NotASkill("SKILL.md does not begin with a '---' line")
    rest = text[4:]
    close = _CLOSE.search(rest)
    if close is None:
        raise NotASkill("its frontmatter has no closing '---' line")
    with _loader_lock:
        if _loader is None:
            _loader = _core_schema_loader()
    import yaml  # (loaded by the loader above)

    try:
        value = yaml.load(rest[:close.start()], Loader=_loader)  # (a safe loader: SafeLoader's subclass)
    except yaml.YAMLError as err:
        raise NotASkill(f"its frontmatter is not YAML ({str(err).splitlines()[0]})") from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise NotASkill("its frontmatter is not a mapping of keys to values")
    _check_json(value)
    return value


def _check_json(value: Any) -> None:
    """NotASkill for a value that JSON cannot hold as it is (YAML's dates, sets, binary, non-text keys, NaN)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                raise NotASkill("its frontmatter has a key that is not text")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise NotASkill("its frontmatter holds an infinity or NaN, which JSON cannot")
        elif not isinstance(item, (str, int, float, bool)) and item is not None:
            raise NotASkill(f"its frontmatter holds a {type(item).__name__}, which JSON cannot")


def check_frontmatter(frontmatter: dict[str, Any], folder_name: str) -> None:
    """The Agent Skills rules the official clients check: NotASkill for the first one broken."""
    name, description = frontmatter.get("name"), frontmatter.get("description")
    if not isinstance(name, str) or not 1 <= len(name) <= 64 or not _NAME.match(name):
        raise NotASkill("its name must be 1-64 lower-case letters, digits and single hyphens")
    if name != folder_name:
        raise NotASkill(f"its name {name!r} is not its folder's name {folder_name!r}")
    if not isinstance(description, str) or not 1 <= len(description) <= 1024:
        raise NotASkill("its description must be text of 1 to 1024 characters")
    compatibility = frontmatter.get("compatibility")
    if compatibility is not None and (not isinstance(compatibility, str) or not 1 <= len(compatibility) <= 500):
        raise NotASkill("its compatibility must be text of 1 to 500 characters")
    metadata = frontmatter.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict) or not all(
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

    def entry(self) -> dict[str, Any]:
        return {"uri": self.uri, "frontmatter": self.frontmatter,
                "resources": [{"uri": uri, "digest": digest, "size": size} for uri, (_, digest, size) in self.files.items()]}


class Catalog:
    """The skills of the roots, found in the resource listing (`files`), made again from each listing."""

    def __init__(self, roots: Roots, files: Files) -> None:
        self._roots = roots
        self._files = files
        self._digests: dict[str, tuple[tuple[int, int, int, int], str]] = {}  # real path -> (identity, digest)
        self._found: dict[str, tuple[Snapshot, list[Skill]]] = {}  # root -> the snapshot read, its skills
        self._refused: set[tuple[str, str]] = set()  # (SKILL.md's path, why): said once each
        self._lock = threading.Lock()

    def skills(self) -> list[Skill]:
        """Every valid skill of every root, roots in order, each root's by its SKILL.md's path."""
        from .resources import root_names  # (the names the roots' templates give them)

        out: list[Skill] = []
        paths = self._roots.paths  # (replaced in one assignment when the client's roots change)
        for root, name in zip(paths, root_names(paths), strict=True):
            snapshot = self._files.snapshot(root, SNAPSHOT_SECONDS)
            with self._lock:
                known = self._found.get(root)
                if known is None or known[0] is not snapshot:
                    known = self._found[root] = (snapshot, self._read(root, name, snapshot))
            out += known[1]
        return out

    def find(self, uri: str) -> Skill | None:
        return next((skill for skill in self.skills() if skill.uri == uri), None)

    def _read(self, root: str, root_name: str, snapshot: Snapshot) -> list[Skill]:
        found: list[Skill] = []
        for rel in snapshot.names:
            if rel != "SKILL.md" and not rel.endswith("/SKILL.md"):
                continue
            folder = rel[:-len("SKILL.md")].rstrip("/")
            try:
                found.append(self._skill(root, root_name, folder, snapshot))
            except (NotASkill, ToolError, OSError) as err:
                why = str(err) if isinstance(err, (NotASkill, ToolError)) else (err.strerror or str(err))
                if (root + "/" + rel, why) not in self._refused:
                    self._refused.add((root + "/" + rel, why))
                    log.warning(f"skills: {os.path.join(root, rel)} is not served as a skill: {why}")
        return found

    def _skill(self, root: str, root_name: str, folder: str, snapshot: Snapshot) -> Skill:
        base = root.rstrip("/") + "/"
        inside = snapshot.names_under(folder)
        if len(inside) > MAX_FILES:
            raise NotASkill(f"it has {len(inside)} files, more than the {MAX_FILES} a skill may have")
        skill_md = (folder + "/" if folder else "") + "SKILL.md"
        markdown = self._bytes(base + skill_md, skill_md, MAX_SKILL_MD).decode("utf-8", "replace")
        frontmatter = frontmatter_of(markdown)
        check_frontmatter(frontmatter, os.path.basename(folder) if folder else root_name)
        prefix = SCHEME + encode_path(root_name) + "/" + (encode_path(folder) + "/" if folder else "")
        files: dict[str, tuple[str, str, int]] = {}
        total = 0
        for rel in [skill_md, *(rel for rel in inside if rel != skill_md)]:
            real = base + rel
            digest, size = self._digest(real, rel)
            total += size
            if total > MAX_BYTES:
                raise NotASkill(f"its files hold more than the {MAX_BYTES} bytes a skill may")
            files[prefix + encode_path(rel[len(folder) + 1:] if folder else rel)] = (real, digest, size)
        return Skill(prefix, frontmatter, files)

    def _bytes(self, real: str, shown: str, limit: int) -> bytes:
        fd, info = open_file(self._roots, real, shown)
        try:
            if info.st_size > limit:
                raise NotASkill(f"{shown} is larger than {limit} bytes")
            with os.fdopen(os.dup(fd), "rb") as stream:
                return stream.read(limit + 1)[:limit]
        finally:
            os.close(fd)

    def _digest(self, real: str, shown: str) -> tuple[str, int]:
        """The SHA-256 digest and size of a file, from the cache while its identity is unchanged."""
        fd, info = open_file(self._roots, real, shown)
        try:
            identity = (info.st_dev, info.st_ino, info.st_size, info.st_ctime_ns)
            known = self._digests.get(real)
            if known is not None and known[0] == identity:
                return known[1], info.st_size
            hasher = hashlib.sha256()
            size = 0
            while chunk := os.read(fd, 1 << 20):
                size += len(chunk)
                if size > MAX_BYTES:
                    raise NotASkill(f"{shown} holds more than the {MAX_BYTES} bytes a skill may")
                hasher.update(chunk)
        finally:
            os.close(fd)
        digest = "sha256:" + hasher.hexdigest()
        if size == info.st_size:  # (a file written meanwhile is read afresh next time)
            self._digests[real] = (identity, digest)
        return digest, size


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
        return {"skill": skill.entry()}

    def listed(self) -> list[Resource]:
        """Each skill's SKILL.md in resources/list, named and described by its frontmatter (as the extension
        says a SKILL.md resource should be)."""
        return [Resource(skill.uri, skill.frontmatter["name"], description=skill.frontmatter["description"],
                         mime_type="text/markdown", size=skill.files[skill.uri][2],
                         reader=lambda context, uri: self.read(context, uri, {}))
                for skill in self._catalog.skills()]

    def read(self, context: Context, uri: str, variables: dict[str, str]) -> list[Content]:
        """A file of a skill, read as its file:// resource is (the same checks, limits and MIME type)."""
        for skill in self._catalog.skills():
            if uri.startswith(skill.prefix) and uri in skill.files:
                contents = self._files.read(context, file_uri(skill.files[uri][0]), {})
                return [{**item, "uri": uri} for item in contents]
        raise ResourceNotFound(uri)


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
    server.add_extension(EXTENSION, {}, {"skills/list": feature.list_skills, "skills/get": feature.get_skill},
                         cache_hints={"skills/list": (0, "private"), "skills/get": (0, "private")})
    server.add_resource_source(feature.listed)
    server.add_resource_template(ResourceTemplate(
        SCHEME + "{+path}", "skills", feature.read, title="Agent Skills of the workspace",
        description="A file of one of the workspace's Agent Skills (skills/list names them): skill://ROOT/FOLDER/FILE, "
                    "ROOT the workspace root's name, FOLDER the skill's folder in it, FILE a file of the skill."))
