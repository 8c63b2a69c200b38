"""Installing like the ecosystem does: the wheel and sdist that `python -m build` makes install into a clean
venv with a working `shipcode-mcp`; `uvx --from <checkout>` runs it; server.json is valid under the MCP
Registry's schema; the Claude Desktop bundle (MCPB) packs, and the command its manifest gives a host
serves the folder the user picked.

The tools (PyPI `build` and `uv`, pinned) live in a venv made once in a cache folder (packaging_support);
the fresh venvs install the package's
dependencies from the index through pip's or uv's cache, so a warm run takes seconds.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import venv
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

from docs_support import repo_copy
from packaging_support import installers, uv_env
from shipcode_mcp import __version__
from shipcode_mcp.cli import build_parser
from support import IN_CI, REPO, McpProcess, run_installer

REGISTRY_SCHEMA = Path(__file__).parent / "data" / "mcp-registry-server-2025-12-11.schema.json"
_PYPROJECT = (REPO / "pyproject.toml").read_text()  # tomllib is 3.11+: the two facts we need, read plainly
NAME = re.search(r'^name = "([^"]+)"', _PYPROJECT, re.M).group(1)  # type: ignore[union-attr]
DEPENDENCIES = re.findall(r'^\s*"([^"]+)"', re.search(r"^dependencies = \[(.*?)^\]", _PYPROJECT, re.S | re.M).group(1),  # type: ignore[union-attr]
                          re.M)
PACKAGE = sorted(p.relative_to(REPO / "src").as_posix() for p in (REPO / "src" / "shipcode_mcp").rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def _bin(folder: Path, name: str) -> Path:
    return folder / "bin" / name


@pytest.fixture(scope="session")
def tools() -> Path:
    """The bin folder of the installers' venv (packaging_support.installers)."""
    return installers()


@pytest.fixture(scope="session")
def dists(tools: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel (built from that sdist), as `python -m build` makes them from a fresh clone.

    Built from a copy: setuptools writes src/*.egg-info in the tree it builds, and each pytest-xdist worker
    runs this fixture, so two builds of the checkout itself at once failed on each other's egg-info."""
    out = tmp_path_factory.mktemp("dist")
    clone = repo_copy(tmp_path_factory.mktemp("clone"))
    start = time.monotonic()
    built = subprocess.run([str(tools / "python"), "-m", "build", "--outdir", str(out), str(clone)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    print(f"python -m build: {time.monotonic() - start:.1f} s")
    sdist, = out.glob("*.tar.gz")
    wheel, = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_the_sdist_holds_the_sources_and_no_junk(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert dists["sdist"].name == f"shipcode_mcp-{__version__}.tar.gz"
    assert {"pyproject.toml", "README.md", "PKG-INFO", "LICENSE"} <= names
    assert {f"src/{path}" for path in PACKAGE} <= names
    junk = [name for name in names if re.search(r"(^|/)(\.venv|\.bench-cache|\.git|\.hypothesis|\.mypy_cache|\.pytest_cache|"
                                                r"\.ruff_cache|__pycache__|tests|bench|build|dist)(/|$)|\.pyc$", name)]
    assert junk == []


def test_the_wheel_holds_the_package_and_the_command(dists: dict[str, Path]) -> None:
    assert dists["wheel"].name == f"shipcode_mcp-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(dists["wheel"]) as archive:
        names = set(archive.namelist())
        info = f"shipcode_mcp-{__version__}.dist-info"
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        metadata = archive.read(f"{info}/METADATA").decode()
    assert set(PACKAGE) <= names
    assert f"{info}/licenses/LICENSE" in names  # the licence text travels with the package (PEP 639)
    assert all(name.startswith(("shipcode_mcp/", info)) for name in names)
    assert "shipcode-mcp = shipcode_mcp.cli:main" in entry_points
    for requirement in DEPENDENCIES:
        assert f"Requires-Dist: {requirement.split(';')[0].strip()}" in metadata
    assert "Provides-Extra: http" in metadata and "Provides-Extra: watch" in metadata
    server_name = json.loads((REPO / "server.json").read_text())["name"]
    assert f"mcp-name: {server_name}" in metadata  # the description PyPI serves, which the registry reads


def _readme_exchange() -> tuple[list[str], list[str]]:
    """The README's "The wire, exactly" exchange: the lines it sends (>) and the lines it gets back (<)."""
    readme = (REPO / "README.md").read_text()
    block = re.search(r"^## The wire, exactly\n.*?^```\n(.*?)^```", readme, re.S | re.M)
    assert block is not None
    lines = block.group(1).splitlines()
    return [line[2:] for line in lines if line.startswith("> ")], [line[2:] for line in lines if line.startswith("< ")]


def _check_serves(command: list[str], folder: Path, env: dict[str, str] | None = None) -> None:
    """`command` answers the README's exchange on stdout, exactly, and nothing else."""
    sent, expected = _readme_exchange()
    done = subprocess.run(command, input="".join(line + "\n" for line in sent), capture_output=True, text=True,
                          cwd=folder, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected, done.stderr


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_installs_into_a_clean_venv_with_a_working_command(dists: dict[str, Path], kind: str, tmp_path: Path) -> None:
    env_folder = tmp_path / "venv"
    venv.create(env_folder, with_pip=True)
    start = time.monotonic()
    subprocess.run([str(_bin(env_folder, "python")), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    str(dists[kind])], check=True, timeout=600)
    print(f"pip install {kind}: {time.monotonic() - start:.1f} s")
    command = _bin(env_folder, "shipcode-mcp")
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True, check=True, timeout=60)
    assert version.stdout == f"shipcode-mcp {__version__}\n"
    workspace = tmp_path / "project"
    workspace.mkdir()
    _check_serves([str(command), str(workspace)], workspace)


def test_uvx_from_the_checkout(tools: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    env = uv_env(tmp_path)
    # A copy of the checkout: setuptools builds in the source tree, and a build/ left in the real one would
    # carry stale modules into later in-tree builds.
    checkout = repo_copy(tmp_path / "checkout")
    command = [str(tools / "uvx"), "--from", str(checkout), "shipcode-mcp"]
    version = subprocess.run([*command, "--version"], capture_output=True, text=True, env=env, timeout=600)
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"shipcode-mcp {__version__}\n"
    _check_serves([*command, str(workspace)], workspace, env)


def test_server_json_is_valid_under_the_registry_schema() -> None:
    schema = json.loads(REGISTRY_SCHEMA.read_text())
    server = json.loads((REPO / "server.json").read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    assert [error.message for error in validator.iter_errors(server)] == []
    assert server["$schema"] == schema["$id"]
    assert server["version"] == __version__
    assert {package["version"] for package in server["packages"]} == {__version__}
    assert {package["identifier"] for package in server["packages"]} == {NAME}
    assert {package["transport"]["type"] for package in server["packages"]} == {"stdio", "streamable-http"}


def _template_variables(text: str) -> list[str]:
    return re.findall(r"\{([^{}]+)\}", text)


def _undefined_url_variables(package: dict[str, Any]) -> set[str]:
    """The `{variables}` of a package's transport URL that name none of its environment variables and no
    argument's name or valueHint (the registry's collectAvailableVariables)."""
    arguments = package.get("runtimeArguments", []) + package.get("packageArguments", [])
    known = {variable["name"] for variable in package.get("environmentVariables", [])}
    known |= {argument[key] for argument in arguments for key in ("name", "valueHint") if key in argument}
    return set(_template_variables(package["transport"].get("url", ""))) - known


def test_server_json_meets_the_registry_publish_checks() -> None:
    """What the registry checks beyond its schema (github.com/modelcontextprotocol/registry, internal/validators):
    every `{variable}` of a package's transport URL names one of the package's environment variables or an
    argument's name or valueHint (collectAvailableVariables); every `{variable}` of an argument's value is one
    of its `variables`; websiteUrl lies under the name's reverse-DNS domain; the PyPI description (README.md)
    holds `mcp-name: NAME` (ValidatePyPI). And what we owe it: the URLs are pyproject's, and every icon is a
    file of this repository at the URL the repository serves it from."""
    server = json.loads((REPO / "server.json").read_text())
    for package in server["packages"]:
        assert _undefined_url_variables(package) == set(), package["transport"]
        for argument in package.get("runtimeArguments", []) + package.get("packageArguments", []):
            assert set(_template_variables(argument.get("value", ""))) <= set(argument.get("variables", {})), argument
    http = next(package for package in server["packages"] if package["transport"]["type"] == "streamable-http")
    assert _template_variables(http["transport"]["url"]) == ["port"]
    assert "uvicorn>=0.52" in _extras()["http"]  # the loop class the front needs, the supervisor (pins: the test below)
    namespace = server["name"].split("/")[0]
    assert urlsplit(server["websiteUrl"]).hostname == ".".join(reversed(namespace.split(".")))
    assert f"mcp-name: {server['name']}" in (REPO / "README.md").read_text()
    assert f'Homepage = "{server["websiteUrl"]}"' in _PYPROJECT
    assert f'Repository = "{server["repository"]["url"]}"' in _PYPROJECT
    assert server["repository"]["source"] == "github"
    raw = server["repository"]["url"].replace("https://github.com/", "https://raw.githubusercontent.com/") + "/main/"
    assert server["icons"]
    for icon in server["icons"]:
        assert icon["src"].startswith(raw), icon
        path = REPO / icon["src"][len(raw):]
        assert path.is_file() and path.suffix == ".svg" and icon["mimeType"] == "image/svg+xml"
        assert "<script" not in path.read_text().lower()  # clients are told to distrust SVG: ours holds shapes only


def test_the_template_variable_check_refuses_an_undefined_variable() -> None:
    """Control: the check above fails on the former server.json's HTTP package, whose `{port}` named no
    argument's valueHint (the registry's 'template variables in URL ... reference undefined variables')."""
    server = json.loads((REPO / "server.json").read_text())
    http = next(package for package in server["packages"] if package["transport"]["type"] == "streamable-http")
    assert _undefined_url_variables(http) == set()
    for argument in http["packageArguments"]:
        argument.pop("valueHint", None)
    assert _undefined_url_variables(http) == {"port"}


def test_server_json_names_only_options_the_command_knows() -> None:
    """A registry client builds the command line from these: an option we rename must be renamed there too."""
    options = {option for action in build_parser()._actions for option in action.option_strings}
    server = json.loads((REPO / "server.json").read_text())
    for package in server["packages"]:
        named = [argument for argument in package["packageArguments"] if argument["type"] == "named"]
        assert named and {argument["name"] for argument in named} <= options
        for argument in named:
            if "choices" in argument:
                action = next(action for action in build_parser()._actions if argument["name"] in action.option_strings)
                assert argument["choices"] == list(action.choices or [])
        for variable in package.get("environmentVariables", []):
            assert any(variable["name"] in path.read_text() for path in (REPO / "src").rglob("*.py"))


def _extras() -> dict[str, list[str]]:
    """pyproject.toml's extras: name -> its requirements (read plainly, as above: tomllib is 3.11+)."""
    section = _PYPROJECT.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return {name: re.findall(r'"([^"]+)"', body) for name, body in re.findall(r"^(\w+) = \[(.*?)\]", section, re.M)}


def test_server_json_gives_uvx_the_extras_pyproject_declares() -> None:
    """Each package's `--with` runtime arguments are exactly the requirements of its extras: `code` for both
    (so a registry install serves the code tools), `http` too for the Streamable HTTP one."""
    extras = _extras()
    server = json.loads((REPO / "server.json").read_text())
    for package in server["packages"]:
        wanted = extras["code"] + (extras["http"] if package["transport"]["type"] == "streamable-http" else [])
        given = [argument["value"] for argument in package.get("runtimeArguments", []) if argument["name"] == "--with"]
        assert sorted(given) == sorted(wanted), package["transport"]


def _mcpb(tmp_path: Path, signing: dict[str, str] | None = None) -> Path:
    """scripts/build_mcpb.sh run as in a fresh clone: no .venv, nor this suite's venv on PATH; `signing`: the
    MCPB_SIGN_* variables it is given."""
    bundle = tmp_path / "shipcode-mcp.mcpb"
    clone = repo_copy(tmp_path / "clone")
    assert not (clone / ".venv").exists()
    path = os.pathsep.join(part for part in os.environ.get("PATH", "").split(os.pathsep)
                           if Path(part).resolve() != Path(sys.executable).parent.resolve())
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHON", "VIRTUAL_ENV")}
    done = run_installer([str(clone / "scripts" / "build_mcpb.sh"), str(bundle)], 600,
                         env={**env, "PATH": path, **(signing or {})})
    if done.returncode == 3 and not IN_CI:
        pytest.skip(f"npm cannot install @anthropic-ai/mcpb: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(bundle)
    return bundle


def _substitute(value: str, dirname: Path, folders: list[str]) -> list[str]:
    """What a host makes of one mcp_config argument (MANIFEST.md: a multiple value expands to several)."""
    if value == "${user_config.project_folders}":
        return folders
    return [value.replace("${__dirname}", str(dirname))]


def test_the_mcpb_bundle_serves_the_folder_the_user_picks(tools: Path, tmp_path: Path) -> None:
    bundle = _mcpb(tmp_path)
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        archive.extractall(unpacked)
    manifest: dict[str, Any] = json.loads((unpacked / "manifest.json").read_text())
    assert manifest == json.loads((REPO / "mcpb" / "manifest.json").read_text())
    assert manifest["version"] == __version__
    assert {"manifest.json", "pyproject.toml", "README.md", manifest["server"]["entry_point"]} <= names
    assert {f"src/{path}" for path in PACKAGE} <= names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc") or ".egg-info" in name]
    folder_setting = manifest["user_config"]["project_folders"]
    assert folder_setting["type"] == "directory" and folder_setting["required"] is True
    config = manifest["server"]["mcp_config"]
    assert "${user_config.project_folders}" in config["args"]

    workspace = tmp_path / "project"
    workspace.mkdir()
    command = [str(tools / config["command"])] + [part for arg in config["args"]
                                                  for part in _substitute(arg, unpacked, [str(workspace)])]
    _check_serves(command, workspace, uv_env(tmp_path))
    # What the host shows as the extension's tools is what the command serves: the code tools included.
    with McpProcess(command=command, cwd=workspace, env=uv_env(tmp_path)) as server:
        server.initialize()
        served = [tool["name"] for tool in server.request("tools/list", timeout=300)["result"]["tools"]]
        assert server.close() == 0
    assert served == [tool["name"] for tool in manifest["tools"]]
    assert {"outline", "search_structure"} <= set(served)


def test_the_mcpb_bundle_is_signed_when_given_a_certificate(tmp_path: Path) -> None:
    """MCPB_SIGN_CERT and MCPB_SIGN_KEY sign the bundle (`mcpb sign`): a PKCS#7 signature of the archive is
    appended, which openssl verifies against the certificate (the packer's own `verify` also asks the system's
    trust, which a test certificate is not in), and which a changed byte breaks; without them nothing is."""
    keys = tmp_path / "keys"
    keys.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=shipcode test",
                    "-addext", "extendedKeyUsage=codeSigning", "-keyout", str(keys / "key.pem"), "-out", str(keys / "cert.pem")],
                   check=True, capture_output=True)
    signed = _mcpb(tmp_path / "signed", {"MCPB_SIGN_CERT": str(keys / "cert.pem"), "MCPB_SIGN_KEY": str(keys / "key.pem")})
    data = signed.read_bytes()
    assert data.endswith(b"MCPB_SIG_END")
    header = data.rindex(b"MCPB_SIG_V1")
    archive, length = data[:header], int.from_bytes(data[header + 11:header + 15], "little")
    (keys / "signature.der").write_bytes(data[header + 15:header + 15 + length])
    assert header + 15 + length + len(b"MCPB_SIG_END") == len(data)
    with zipfile.ZipFile(io.BytesIO(archive)) as unpacked:
        assert "manifest.json" in unpacked.namelist()

    def verifies(content: bytes) -> bool:
        (keys / "content.zip").write_bytes(content)
        return subprocess.run(["openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", str(keys / "signature.der"),
                               "-content", str(keys / "content.zip"), "-certfile", str(keys / "cert.pem"), "-noverify",
                               "-out", os.devnull], capture_output=True).returncode == 0

    assert verifies(archive)
    assert not verifies(archive[:100] + bytes([archive[100] ^ 1]) + archive[101:])  # control: a changed byte
    unsigned = _mcpb(tmp_path / "unsigned")
    assert b"MCPB_SIG" not in unsigned.read_bytes()[-200:]
