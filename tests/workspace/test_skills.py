"""--skills through the real `shipcode-mcp` process: the Skills extension (io.modelcontextprotocol/skills) over
2026-07-28 requests: the declaration, skills/list and skills/get with complete manifests, the frontmatter in
YAML 1.2 core typing, what is not a skill, and skill:// reads confined like every read. (The official
TypeScript client of the extension verifies the same: tests/interop/test_modern_clients.py.)

Every line the server writes is checked against the official schema of its era by `McpProcess`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from support import HANDSHAKE, HANDSHAKE_REPLY, McpProcess
from workspace_support import CANARY, make_outside

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
EXTENSION = "io.modelcontextprotocol/skills"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def skill_md(name: str, description: str = "Does one thing well.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n# {name}\n"


def modern(process: McpProcess, method: str, **params: Any) -> dict[str, Any]:
    return process.request(method, {**params, "_meta": META}, timeout=60)


def listed(process: McpProcess) -> list[dict[str, Any]]:
    """Every skills/list entry, following nextCursor."""
    skills: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    while True:
        result = modern(process, "skills/list", **params)["result"]
        assert result["ttlMs"] == 0 and result["cacheScope"] == "private"
        skills += result["skills"]
        if "nextCursor" not in result:
            return skills
        params = {"cursor": result["nextCursor"]}


def manifest(folder: Path, prefix: str) -> list[dict[str, Any]]:
    """What the entry of the skill in `folder` must list: SKILL.md first, then every file in path order."""
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    files.sort(key=lambda path: path.name != "SKILL.md" or path.parent != folder)
    return [{"uri": prefix + path.relative_to(folder).as_posix(), "digest": "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest(),
             "size": path.stat().st_size} for path in files]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root / ".claude" / "skills" / "review" / "SKILL.md", skill_md("review", extra="license: MIT\n"))
    write(root / ".claude" / "skills" / "review" / "references" / "CHECKLIST.md", "- tests\n")
    write(root / ".claude" / "skills" / "review" / "logo.bin", bytes(range(256)))
    write(root / "tools" / "release" / "SKILL.md", skill_md("release"))
    write(root / "tools" / "release" / "deploy" / "SKILL.md", skill_md("deploy"))  # nested in release
    return root


def test_without_skills_nothing_is_declared(project: Path) -> None:
    with McpProcess(str(project)) as process:
        discovered = modern(process, "server/discover")["result"]
        assert discovered["capabilities"] == {"tools": {}, "resources": {}}
        assert modern(process, "skills/list")["error"]["code"] == -32601


def test_the_extension_is_declared_to_modern_clients_only(project: Path) -> None:
    with McpProcess("--skills", str(project)) as process:
        process.send(HANDSHAKE)
        assert process.read_raw() == (HANDSHAKE_REPLY + "\n").encode()  # 2025-06-18: exactly as before
        assert process.request("skills/list")["error"]["code"] == -32601  # a legacy request
        discovered = modern(process, "server/discover")["result"]
        assert discovered["capabilities"] == {"tools": {}, "resources": {},
                                              "extensions": {EXTENSION: {"directoryRead": True}}}


def test_skills_list_and_get_give_complete_manifests(project: Path) -> None:
    with McpProcess("--skills", str(project)) as process:
        skills = listed(process)
        prefix = {"review": "skill://project/.claude/skills/review/", "release": "skill://project/tools/release/",
                  "deploy": "skill://project/tools/release/deploy/"}
        assert [entry["uri"] for entry in skills] == [prefix[name] + "SKILL.md" for name in ("review", "release", "deploy")]
        for entry in skills:
            name = entry["frontmatter"]["name"]
            folder = {"review": project / ".claude/skills/review", "release": project / "tools/release",
                      "deploy": project / "tools/release/deploy"}[name]
            assert entry["resources"] == manifest(folder, prefix[name]), name
            assert modern(process, "skills/get", uri=entry["uri"])["result"]["skill"] == entry
        assert skills[0]["frontmatter"] == {"name": "review", "description": "Does one thing well.", "license": "MIT"}
        # the enclosing skill lists the nested one's files too
        assert prefix["release"] + "deploy/SKILL.md" in [file["uri"] for file in skills[1]["resources"]]
        for uri in ("skill://project/tools/SKILL.md", "skill://project/.claude/skills/review", "file:///etc/passwd", ""):
            error = modern(process, "skills/get", uri=uri)["error"]
            assert error["code"] == -32602 and error["message"].startswith("Unknown skill"), uri
        assert modern(process, "skills/get")["error"]["code"] == -32602


def test_a_changed_file_changes_its_digest(project: Path) -> None:
    with McpProcess("--skills", str(project)) as process:
        before = listed(process)[0]["resources"]
        write(project / ".claude" / "skills" / "review" / "references" / "CHECKLIST.md", "- tests\n- docs\n")
        os.utime(project / ".claude" / "skills" / "review" / "references", None)
        process.request("resources/list")  # a new listing: the server walks again
        after = modern(process, "skills/get", uri="skill://project/.claude/skills/review/SKILL.md")["result"]["skill"]
        assert after["resources"] == manifest(project / ".claude" / "skills" / "review", "skill://project/.claude/skills/review/")
        assert after["resources"] != before


def test_the_frontmatter_is_read_in_yaml_core_schema_typing(tmp_path: Path) -> None:
    root = tmp_path / "typed"
    write(root / "typed" / "SKILL.md", "---\r\nname: typed\r\ndescription: Typed values.\r\nflags:\r\n  - yes\r\n  - on\r\n"
          "  - true\r\n  - ~\r\n  - null\r\ncounts: [012, 0o17, 0x1F, 1e3, -2.5]\r\nwhen: 2024-01-01\r\n"
          "text: |\r\n  two\r\n  lines\r\n---\r\nbody\r\n")
    with McpProcess("--skills", str(root)) as process:
        [entry] = listed(process)
    assert entry["frontmatter"] == {"name": "typed", "description": "Typed values.",
                                    "flags": ["yes", "on", True, None, None], "counts": [12, 15, 31, 1000.0, -2.5],
                                    "when": "2024-01-01", "text": "two\nlines\n"}


NOT_SKILLS = {
    "unclosed": "---\nname: unclosed\ndescription: No end.\n",
    "no-front": "# just markdown\n",
    "misnamed": skill_md("other"),
    "Upper": skill_md("Upper"),
    "double--hyphen": skill_md("double--hyphen"),
    "no-description": "---\nname: no-description\n---\n",
    "long-description": skill_md("long-description", "x" * 1025),
    "not-yaml": "---\nname: not-yaml\ndescription: [unclosed\n---\n",
    "a-list": "---\n- name\n---\n",
    "a-date-tag": skill_md("a-date-tag", extra="when: !!timestamp 2024-01-01\n"),
    "python-tag": skill_md("python-tag", extra="x: !!python/object:os.system ls\n"),
    "an-infinity": skill_md("an-infinity", extra="x: .inf\n"),
    "bad-metadata": skill_md("bad-metadata", extra="metadata:\n  version: 1\n"),
}


def test_what_is_not_a_skill_is_left_out_and_said_once(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    for folder, text in NOT_SKILLS.items():
        write(root / folder / "SKILL.md", text)
    write(root / "good" / "SKILL.md", skill_md("good"))
    write(root / "crowded" / "SKILL.md", skill_md("crowded"))
    for number in range(512):
        write(root / "crowded" / f"f{number}.txt", "x")
    write(root / "heavy" / "SKILL.md", skill_md("heavy"))
    write(root / "heavy" / "big.bin", b"\0" * (16 * 1024 * 1024))
    write(root / "ignored" / "SKILL.md", skill_md("ignored"))
    write(root / ".gitignore", "ignored/\n")
    with McpProcess("--skills", str(root)) as process:
        assert [entry["frontmatter"]["name"] for entry in listed(process)] == ["good"]
        listed(process)  # the second listing says nothing again
        process.close()
        warnings = [line for line in process.stderr.decode().splitlines() if "is not served as a skill" in line]
    named = sorted(line.split(str(root) + "/", 1)[1].split("/SKILL.md")[0] for line in warnings)
    assert named == sorted([*NOT_SKILLS, "crowded", "heavy"]), warnings


def test_skill_reads_are_confined_to_the_skills_files(project: Path, tmp_path: Path) -> None:
    """skill:// reads serve the listed files of valid skills only. The attacks first work without us: the link
    leads to the canary, the ignored file is there."""
    outside = make_outside(tmp_path / "outside")
    review = project / ".claude" / "skills" / "review"
    os.symlink(outside / "secret.txt", review / "leak.txt")
    os.symlink(outside, review / "away")
    write(project / ".gitignore", "*.log\n")
    write(review / "debug.log", "ignored\n")
    assert CANARY in (review / "leak.txt").read_text() and (review / "debug.log").exists()
    prefix = "skill://project/.claude/skills/review/"
    with McpProcess("--skills", str(project)) as process:
        [entry, *_] = listed(process)
        assert {file["uri"] for file in entry["resources"]} == {prefix + "SKILL.md", prefix + "references/CHECKLIST.md",
                                                                prefix + "logo.bin"}
        read = modern(process, "resources/read", uri=prefix + "references/CHECKLIST.md")["result"]["contents"]
        assert read == [{"uri": prefix + "references/CHECKLIST.md", "mimeType": "text/markdown", "text": "- tests\n"}]
        blob = modern(process, "resources/read", uri=prefix + "logo.bin")["result"]["contents"][0]
        assert blob["uri"] == prefix + "logo.bin" and "blob" in blob
        for uri in (prefix + "leak.txt", prefix + "away/secret.txt", prefix + "debug.log", prefix + "../../../README.md",
                    prefix + "%2e%2e/%2e%2e/x", "skill://project/tools/SKILL.md", "skill://other/SKILL.md",
                    prefix + "SKILL.md?x", prefix + "missing.md"):
            reply = modern(process, "resources/read", uri=uri)
            assert reply["error"]["code"] == -32602, (uri, reply)
            assert CANARY not in str(reply)
        legacy = process.request("resources/read", {"uri": prefix + "SKILL.md"})  # a legacy read works too
        assert legacy["result"]["contents"][0]["text"] == skill_md("review", extra="license: MIT\n")


HOSTILE = {  # each a frontmatter the official reader refuses, or one that would fail, hang or grow in the server
    "bad-int-tag": skill_md("bad-int-tag", extra="x: !!int abc\n"),
    "huge-integer": skill_md("huge-integer", extra=f"x: {'9' * 5000}\n"),
    "huge-hex": skill_md("huge-hex", extra=f"x: 0x{'f' * 4000}\n"),
    "unsafe-integer": skill_md("unsafe-integer", extra="x: 9007199254740993\n"),
    "deep": skill_md("deep", extra="x: " + "[" * 600 + "]" * 600 + "\n"),
    "deeper-than-32": skill_md("deeper-than-32", extra="x: " + "[" * 33 + "]" * 33 + "\n"),
    "recursive-alias": skill_md("recursive-alias", extra="r: &r [*r]\n"),
    "laughs": skill_md("laughs", extra="a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 9)}]\n" for n in range(8))),
    "twice": "---\nname: twice\ndescription: first\ndescription: second\n---\n",
    "proto": skill_md("proto", extra="__proto__: x\n"),
    "str-tag": skill_md("str-tag", extra="x: !!str 12\n"),
    "document-end": "---\nname: document-end\ndescription: Ends early.\n...\n---\n",
    "complex-key": skill_md("complex-key", extra="? [a, b]\n: c\n"),
    "many-values": skill_md("many-values", extra="x: [" + ", ".join(["1"] * 10_001) + "]\n"),
    "null-metadata": skill_md("null-metadata", extra="metadata:\n"),
    "null-compatibility": skill_md("null-compatibility", extra="compatibility: ~\n"),
    # read otherwise, or refused, by the official reader:
    "quoted-lines": skill_md("quoted-lines", extra='x: "two\n  lines"\n'),
    "indent-indicator": skill_md("indent-indicator", extra="x: |2\n    text\n"),
    "flow-lines": skill_md("flow-lines", extra="x: [a,\n  b]\n"),
    "question-key": skill_md("question-key", extra="?k: 1\n"),
    "quoted-key-space": skill_md("quoted-key-space", extra="'k' : 1\n"),
    "flow-no-value": skill_md("flow-no-value", extra="x: {a}\n"),
    "flow-pair": skill_md("flow-pair", extra="x: [a: b]\n"),
    "tab-indent": skill_md("tab-indent", extra="x: one\n\t two\n"),
    "line-separator": skill_md("line-separator", extra="x: 'a\u2028b'\n"),
    "lone-cr": skill_md("lone-cr", extra="x: 'a\rb'\n"),
    "long-frontmatter": skill_md("long-frontmatter", extra=f"x: {'y' * 70_000}\n"),
}


def test_a_hostile_frontmatter_is_no_skill_and_never_fails_the_catalog(tmp_path: Path) -> None:
    """Each is left out, said once, and the valid skill beside it is served; nothing hangs, no internal error.
    The control (a recursive alias would hang a plain walk) is the first request answering at all."""
    root = tmp_path / "hostile"
    for folder, text in HOSTILE.items():
        write(root / folder / "SKILL.md", text)
    write(root / "latin1" / "SKILL.md", "---\nname: latin1\ndescription: caf\xe9\n---\n".encode("latin-1"))
    write(root / "good" / "SKILL.md", skill_md("good"))
    with McpProcess("--skills", str(root)) as process:
        assert [entry["frontmatter"]["name"] for entry in listed(process)] == ["good"]
        for folder in (*HOSTILE, "latin1"):
            reply = modern(process, "skills/get", uri=f"skill://hostile/{folder}/SKILL.md")
            assert reply["error"]["code"] == -32602, (folder, reply)
        assert modern(process, "resources/read", uri="skill://hostile/good/SKILL.md")["result"]["contents"]
        process.close()
        said = [line for line in process.stderr.decode().splitlines() if "is not served as a skill" in line]
    assert "Traceback" not in process.stderr.decode()
    assert sorted(line.split(str(root) + "/", 1)[1].split("/SKILL.md")[0] for line in said) == sorted([*HOSTILE, "latin1"])


def test_a_changed_skill_is_answered_as_it_is_now(project: Path) -> None:
    """A host that finds a digest mismatch asks skills/get again: the answer is the file as it is, at once."""
    uri = "skill://project/.claude/skills/review/SKILL.md"
    with McpProcess("--skills", str(project)) as process:
        before = modern(process, "skills/get", uri=uri)["result"]["skill"]
        write(project / ".claude" / "skills" / "review" / "SKILL.md", skill_md("review", "Now says more than before."))
        after = modern(process, "skills/get", uri=uri)["result"]["skill"]
        assert after["frontmatter"]["description"] == "Now says more than before."
        assert after["resources"][0] == manifest(project / ".claude" / "skills" / "review",
                                                 "skill://project/.claude/skills/review/")[0] != before["resources"][0]
        read = modern(process, "resources/read", uri=uri)["result"]["contents"][0]["text"]
        assert hashlib.sha256(read.encode()).hexdigest() == after["resources"][0]["digest"].removeprefix("sha256:")


def test_uris_are_matched_however_they_are_percent_encoded(tmp_path: Path) -> None:
    root = tmp_path / "enc"
    write(root / "café" / "cafe" / "SKILL.md", skill_md("cafe"))
    with McpProcess("--skills", str(root)) as process:
        [entry] = listed(process)
        assert entry["uri"] == "skill://enc/caf%C3%A9/cafe/SKILL.md"
        for spelled in ("skill://enc/caf%c3%a9/cafe/SKILL.md", "skill://ENC/caf%C3%A9/cafe/SKILL.md"):
            got = modern(process, "skills/get", uri=spelled)["result"]["skill"]
            assert got["uri"] == spelled and got["resources"][0]["uri"] == spelled  # answered as asked
            assert modern(process, "resources/read", uri=spelled)["result"]["contents"][0]["text"] == skill_md("cafe")
        escaped = "skill://enc/caf%C3%A9/cafe/%53KILL.md"  # the file's own name escaped: the entry as listed
        assert modern(process, "skills/get", uri=escaped)["result"]["skill"]["uri"] == entry["uri"]
        for alias in ("skill://enc/caf%C3%A9%2Fcafe/SKILL.md", "skill://enc%2Fcaf%C3%A9/cafe/SKILL.md"):
            assert modern(process, "skills/get", uri=alias)["error"]["code"] == -32602  # a '/' written %2F


def test_a_skill_holding_a_file_too_large_to_read_is_no_skill(tmp_path: Path) -> None:
    root = tmp_path / "big"
    write(root / "heavy" / "SKILL.md", skill_md("heavy"))
    write(root / "heavy" / "data.bin", b"\0" * (10 * 1024 * 1024 + 1))  # within 16 MiB, past a read's 10 MiB
    write(root / "light" / "SKILL.md", skill_md("light"))
    with McpProcess("--skills", str(root)) as process:
        assert [entry["frontmatter"]["name"] for entry in listed(process)] == ["light"]


def test_a_forged_folder_name_cannot_forge_a_log_line(tmp_path: Path) -> None:
    root = tmp_path / "forge"
    write(root / "evil\n01:00:00 shipcode-mcp NOTICE: forged\x1b[31m" / "SKILL.md", skill_md("other"))
    with McpProcess("--skills", str(root)) as process:
        assert listed(process) == []
        process.close()
    lines = process.stderr.decode().splitlines()
    assert not any(line.startswith("01:00:00 shipcode-mcp NOTICE: forged") for line in lines)
    assert "\x1b" not in process.stderr.decode() and any("evil\\n01:00:00" in line for line in lines)


def test_root_names_that_differ_only_in_case_are_told_apart(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "Proj", tmp_path / "b" / "proj"
    write(first / "one" / "SKILL.md", skill_md("one"))
    write(second / "two" / "SKILL.md", skill_md("two"))
    with McpProcess("--skills", str(first), str(second)) as process:
        assert [entry["uri"] for entry in listed(process)] == ["skill://Proj/one/SKILL.md", "skill://proj-2/two/SKILL.md"]


def test_a_skill_past_the_listings_cut_is_no_skill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_LISTED_FILES a root is listed in part: a skill whose files reach the cut may not be complete."""
    from shipcode_mcp.workspace import resource_tree
    from shipcode_mcp.workspace.resources import Files
    from shipcode_mcp.workspace.roots import Roots
    from shipcode_mcp.workspace.skills import Catalog

    monkeypatch.setattr(resource_tree, "MAX_LISTED_FILES", 6)
    root = tmp_path / "cut"
    write(root / "a" / "first" / "SKILL.md", skill_md("first"))
    for name in ("m1", "m2", "m3", "m4"):
        write(root / "m" / name, "")
    write(root / "z" / "last" / "SKILL.md", skill_md("last"))
    write(root / "z" / "last" / "a.md", "")
    write(root / "z" / "last" / "b.md", "")
    roots = Roots([str(root)])
    assert [skill.frontmatter["name"] for skill in Catalog(roots, Files(roots, complete=False)).skills()] == ["first"]


def test_a_skills_folders_are_read_as_directory_resources(project: Path) -> None:
    """resources/directory/read (directoryRead): a skill's root and each folder in it list their direct
    children, files as resources/list describes them, folders as inode/directory; anything else is -32602."""
    write(project / ".claude" / "skills" / "review" / "references" / "deep" / "NOTE.md", "deep\n")
    base = "skill://project/.claude/skills/review"
    with McpProcess("--skills", str(project)) as process:
        top = modern(process, "resources/directory/read", uri=base)["result"]
        assert top["resources"] == [
            {"uri": base + "/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown",
             "size": len(skill_md("review", extra="license: MIT\n"))},
            {"uri": base + "/logo.bin", "name": "logo.bin", "mimeType": "application/octet-stream", "size": 256},
            {"uri": base + "/references", "name": "references", "mimeType": "inode/directory"}]
        assert top["ttlMs"] == 0 and top["cacheScope"] == "private"
        inner = modern(process, "resources/directory/read", uri=base + "/references")["result"]["resources"]
        assert [(item["name"], item["mimeType"]) for item in inner] == [
            ("CHECKLIST.md", "text/markdown"), ("deep", "inode/directory")]
        for uri in (base + "/SKILL.md", base + "/", base + "/missing", "skill://project/.claude/skills",
                    "skill://project/.claude", "skill://project", "skill://nowhere/x", base + "/../../..", "file:///"):
            reply = modern(process, "resources/directory/read", uri=uri)
            assert reply["error"]["code"] == -32602, (uri, reply)
        assert modern(process, "resources/directory/read")["error"]["code"] == -32602


def test_a_template_skill_md_inside_a_skill_is_its_file(tmp_path: Path) -> None:
    """A SKILL.md that is no skill (a template with {{name}}) inside a valid skill is one of its files: readable,
    its folder a directory resource of the skill."""
    root = tmp_path / "tpl"
    write(root / "alpha" / "SKILL.md", skill_md("alpha"))
    write(root / "alpha" / "templates" / "SKILL.md", "---\nname: {{name}}\ndescription: t\n---\n")
    write(root / "alpha" / "templates" / "other.md", "other\n")
    base = "skill://tpl/alpha"
    with McpProcess("--skills", str(root)) as process:
        [entry] = listed(process)
        assert {file["uri"] for file in entry["resources"]} == {
            base + "/SKILL.md", base + "/templates/SKILL.md", base + "/templates/other.md"}
        for file in ("templates/other.md", "templates/SKILL.md"):
            assert modern(process, "resources/read", uri=f"{base}/{file}")["result"]["contents"], file
        children = modern(process, "resources/directory/read", uri=base + "/templates")["result"]["resources"]
        assert [child["name"] for child in children] == ["SKILL.md", "other.md"]


def test_a_skill_being_edited_is_looked_for_again(project: Path) -> None:
    """A file of a skill gone since the listing was made, or a skill made since: the listing is made again
    (the spec's recovery, skills/get after a failed read, finds the skill as it is)."""
    uri = "skill://project/.claude/skills/review/SKILL.md"
    with McpProcess("--skills", str(project)) as process:
        assert modern(process, "skills/get", uri=uri)["result"]["skill"]["uri"] == uri
        (project / ".claude" / "skills" / "review" / "references" / "CHECKLIST.md").unlink()
        after = modern(process, "skills/get", uri=uri)["result"]["skill"]
        assert after["resources"] == manifest(project / ".claude" / "skills" / "review",
                                              "skill://project/.claude/skills/review/")
        write(project / "fresh" / "SKILL.md", skill_md("fresh"))
        assert modern(process, "skills/get", uri="skill://project/fresh/SKILL.md")["result"]["skill"]["frontmatter"][
            "name"] == "fresh"
