"""The core's layers (docs/architecture.md): each module of the core imports only from layers below its
own, so there is no circle and no arrow back up. Every import counts, at the top of a module, inside a
function or under TYPE_CHECKING: an import that only hides an arrow still knows what it imports.
The core reaches a transport only from `Server`'s facade (server.py), and never the workspace, the auth
package or the command line."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "shipcode_mcp"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("log", "era", "validation", "settings", "hosts"),  # what the spec fixes, the stderr log, the command line read,
    # what is loopback: no imports of ours
    ("jsonrpc",),  # message shapes, error codes, the exact encoder
    ("context", "paging", "request_state"),  # one request in flight; cursors; signed request states
    ("primitives", "envelope", "actions", "tasks"),  # tools, resources, prompts; a modern request's _meta; what a session says to do; tasks
    ("listings", "signature"),  # pinned resource listings; plain functions read as handlers
    ("registry",),  # what the server offers, shared by its sessions, knowing none of them
    ("methods",),  # the one table of request methods and their stateless handlers
    ("session",),  # every state change: a message in, actions out
    ("runner",),  # performs the actions (threads, or asyncio over HTTP)
    ("server",),  # the library's facade: decorators, run(), http_app()
)
LAYER_OF = {name: level for level, names in enumerate(LAYERS) for name in names}
NOT_CORE = {"__init__", "__main__", "cli"}  # the package's entry points stand above everything
FACADE_IMPORTS = {"server": {"transports"}}  # run() and http_app() import a transport, lazily


def imports_of(path: Path) -> set[str]:
    """The package's modules `path` imports, as dotted names under shipcode_mcp (every import statement)."""
    package = path.parent.relative_to(PACKAGE.parent).parts
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - (node.level - 1)])
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "shipcode_mcp":
                continue
            for alias in node.names:  # `from . import jsonrpc` names a module; `from .x import y` names a member
                candidate = f"{target}.{alias.name}"
                is_module = (PACKAGE.parent / (candidate.replace(".", "/") + ".py")).exists() or (
                    PACKAGE.parent / candidate.replace(".", "/") / "__init__.py").exists()
                found.add(candidate if is_module else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "shipcode_mcp")
    return found


def core_imports() -> dict[str, set[str]]:
    """Each core module (a module directly in the package) and the first part of each package name it imports."""
    out: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem in NOT_CORE:
            continue
        out[path.stem] = {name.split(".")[1] for name in imports_of(path) if name != "shipcode_mcp"} - {path.stem}
    return out


def test_every_core_module_has_a_layer() -> None:
    assert set(core_imports()) == set(LAYER_OF), "a core module was added or removed: give it its layer here"


def test_the_core_imports_only_from_layers_below_and_a_transport_only_in_the_facade() -> None:
    wrong = []
    for module, targets in core_imports().items():
        for target in targets:
            if target in LAYER_OF:
                if LAYER_OF[target] >= LAYER_OF[module]:
                    wrong.append(f"{module} (layer {LAYER_OF[module]}) imports {target} (layer {LAYER_OF[target]})")
            elif target not in FACADE_IMPORTS.get(module, set()):
                wrong.append(f"{module} imports {target}, which is above the core")
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_a_hidden_arrow(tmp_path: Path) -> None:
    """The control: an arrow back up hidden under TYPE_CHECKING, inside a function, or as `from . import`
    is seen (the session imports from the runner, the registry from the session)."""
    hidden = tmp_path / "shipcode_mcp"
    hidden.mkdir()
    module = hidden / "registry.py"
    module.write_text("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from .session import Session\n"
                      "def f():\n    from . import runner\n    import shipcode_mcp.transports.http\n", encoding="utf-8")
    for name in ("session.py", "runner.py"):
        (hidden / name).write_text("", encoding="utf-8")
    global PACKAGE
    kept, PACKAGE = PACKAGE, hidden
    try:
        assert imports_of(module) == {"shipcode_mcp.session", "shipcode_mcp.runner", "shipcode_mcp.transports.http"}
    finally:
        PACKAGE = kept


HTTP = PACKAGE / "transports" / "http"


def circle_in(graph: dict[str, set[str]]) -> list[str]:
    """A circle of `graph` (each name to the names it imports), as the names along it, or [] when it has none."""
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> list[str]:
        if name in path:
            return [*path[path.index(name):], name]
        if name in done:
            return []
        path.append(name)
        for target in sorted(graph.get(name, ())):
            found = visit(target)
            if found:
                return found
        path.pop()
        done.add(name)
        return []

    for name in sorted(graph):
        found = visit(name)
        if found:
            return found
    return []


def test_the_http_modules_import_one_another_without_a_circle() -> None:
    """transports/http/ is a module per idea, each above the ones it uses: the runner below the endpoint (it
    knows it as `runner.Endpoint`), the session table, limits, header rules and lanes below both, serving on
    top. Every import counts, as in the core."""
    prefix = "shipcode_mcp.transports.http."
    graph = {path.stem: {name.removeprefix(prefix).split(".")[0] for name in imports_of(path) if name.startswith(prefix)}
             - {path.stem} for path in HTTP.glob("*.py") if path.stem != "__init__"}
    assert {"endpoint", "runner", "sessions", "headers", "limits", "serving"} <= set(graph)
    assert "endpoint" not in graph["runner"]
    assert circle_in(graph) == [], " -> ".join(circle_in(graph))


def test_the_circle_check_finds_a_circle() -> None:
    """The control: the arrow the runner had to the endpoint (for the type of its transport) makes a circle."""
    assert circle_in({"endpoint": {"runner", "lanes"}, "runner": {"endpoint"}, "lanes": set()}) == ["endpoint", "runner", "endpoint"]
    assert circle_in({"endpoint": {"runner", "lanes"}, "runner": {"lanes"}, "lanes": set()}) == []
