"""Where a name used in Python source is defined, from scopes alone (no types): go-to-definition.

The reverse of pyscopes' question. Given a place in a file, the name written there is looked up as
Python looks it up: a local, a parameter or a nested def is its own scope's; a class body's names are
its members; `self.x` in a method is a member of the method's class or of a class it derives from;
`v.x` is a member of the class `v` holds, when an assignment, an annotation or a call says which; an
import binds a name to a module or to a name in one. Each answer is a list of targets:

- `places`: [line, column] (1-based) of the definitions in this file (a def, a class, each assignment
  of a variable in its scope, a parameter);
- `module`: a name in another module (`path` the name and the members below it, empty for the module
  itself), which the server looks up in that module's file, and so on through re-exports;
- `first_of`: alternatives, the first that leads to a definition wins (`from m import x`: m's x, or its
  submodule x; a member: each base in turn, as Python's method resolution order looks);
- `builtin`: a builtin name;
- `unknown`: what the scopes cannot tell (an attribute of an object of unknown class): the server
  answers by name.

Standard library only: it runs in the parse worker (worker.py), like every parse of hostile text.
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

from .pyscopes import TREES, Builder, ClassRef, Occurrence, Resolver, Scope, lookup, method_class, module_path

_WORD = re.compile(r"[^\W\d]\w*")
BINDING_KINDS = frozenset({"def", "store", "param"})
"""The occurrences that bind the name where they are (an import binds it to another module's)."""
MAX_BASES = 64
"""Classes looked at for one member, bases of bases included (a deep hierarchy ends there; a cycle sooner)."""


def word_at(text: str, line: int, column: int) -> tuple[str, int] | None:
    """The identifier at `line`, `column` (1-based; on any of its characters or right after it) and the
    column (1-based) where it starts; None where no identifier is."""
    lines = text.split("\n")
    if not 0 < line <= len(lines):
        return None
    row = lines[line - 1]
    for found in _WORD.finditer(row):
        if found.start() < column <= found.end() + 1:
            return found[0], found.start() + 1
    return None


class _Finder:
    """The definitions of one name in one parsed module."""

    def __init__(self, tree: ast.Module, text: str, name: str, shown: str) -> None:
        self.name = name
        self.builder = Builder(name, text.split("\n"), slots=True)
        self.builder.visit(tree)
        self.resolver = Resolver(self.builder, module_path(shown), [],
                                 shown.rsplit("/", 1)[-1] in ("__init__.py", "__init__.pyi"))
        self.root = self.builder.module

    # -- a binding's places ----------------------------------------------------------------------------
    def _binder(self, occurrence: Occurrence) -> Scope | None:
        """The scope a binding occurrence binds the name in (its own, or where global/nonlocal send it)."""
        scope = occurrence.scope
        if self.name in scope.declared_global:
            return self.root
        if self.name in scope.declared_nonlocal:
            return lookup(self.name, scope.parent) if scope.parent is not None else None
        return scope

    def bound_in(self, where: Scope) -> list[dict[str, Any]]:
        """The targets of the name as `where` binds it: its defs, assignments and parameters there, and the
        modules its imports there name."""
        places = _declarations([item for item in self.builder.found
                                if item.kind in BINDING_KINDS and self._binder(item) is where], where.kind == "class")
        targets: list[dict[str, Any]] = [{"places": places}] if places else []
        for imported in where.imports.get(self.name, []):
            targets.append(self._imported(imported.module, imported.symbol))
        if not targets and where is self.root:
            targets += self._stars()
        return targets

    def _imported(self, module: tuple[str, ...], symbol: str | None, members: tuple[str, ...] = ()) -> dict[str, Any]:
        """`members` of a name an import binds: `import a.b` binds a (the module a), `from m import x` m's x.
        Each dotted step may be a name of the module so far or a submodule of it (`os.path.join`, `pkg.sub.f`):
        the alternatives, the module's own names first."""
        source = self.resolver.absolute(module)
        steps = ((symbol,) if symbol is not None else ()) + tuple(members)
        if not steps:
            return {"module": list(source), "path": []}
        return {"first_of": [{"module": [*source, *steps[:cut]], "path": list(steps[cut:])} for cut in range(len(steps) + 1)]}

    def _stars(self) -> list[dict[str, Any]]:
        """The name as the module's `from m import *` may bring it."""
        return [{"module": list(self.resolver.absolute(source)), "path": [self.name], "star": True}
                for source in self.root.stars]

    # -- members -------------------------------------------------------------------------------------
    def member(self, cls: ClassRef, seen: set[int] | None = None) -> list[dict[str, Any]]:
        """The targets of `name` as a member of `cls`: its class body's definitions and the `self.name = ...`
        of its methods, else those of its bases, in order."""
        if cls.local is None:
            if cls.module == ("builtins",):
                return [{"builtin": f"{cls.symbol}.{self.name}"}]
            whole = (*cls.module, cls.symbol)  # `a.b.C`: C of module a.b, or class b.C of module a, ...
            return [{"first_of": [{"module": list(whole[:cut]), "path": [*whole[cut:], self.name]}
                                  for cut in range(len(whole) - 1, 0, -1)]}]
        seen = seen if seen is not None else set()
        if id(cls.local) in seen or len(seen) >= MAX_BASES:
            return []
        seen.add(id(cls.local))
        local = cls.local
        places = _declarations([item for item in self.builder.found
                                if (item.kind in BINDING_KINDS and item.scope is local)
                                or (item.kind == "slot" and item.scope is local)
                                or (item.kind == "attribute" and item.stored and method_class(item.scope) is local
                                    and isinstance(item.value, ast.Name) and item.value.id == item.scope.self_name)],
                              member=True)
        if places:
            return [{"places": places}]
        return self.bases(local, seen)

    def bases(self, cls: Scope, seen: set[int] | None = None) -> list[dict[str, Any]]:
        """The targets of `name` reached through the bases of `cls`, each base in turn (depth first, as Python's
        method resolution order looks for single inheritance and most mixins): a base of this file that has it
        ends the search; one of another module is an alternative the server tries in its order. `Generic[T]`
        and the typing module's classes add nothing."""
        outer = cls.parent or self.root
        alternatives: list[dict[str, Any]] = []
        for base in cls.bases:
            written = base.value if isinstance(base, ast.Subscript) else base
            found = self.resolver.class_of(written, outer)
            if found is None:
                if not self.resolver.builtin(written, outer):
                    alternatives.append({"unknown": True})
                continue
            if found.local is None and found.module[:1] in (("typing",), ("typing_extensions",)):
                continue
            targets = self.member(found, seen)
            if not targets:
                continue
            if "places" in targets[0] and not alternatives:
                return targets
            alternatives.append(targets[0] if len(targets) == 1 else {"first_of": targets})
        return [{"first_of": alternatives}] if len(alternatives) > 1 else alternatives

    def in_class(self, chain: list[str]) -> list[dict[str, Any]]:
        """The targets of `name` as the member of the class `chain` names (outer classes first) in this
        module: a class defined here, or one its imports bring (followed to that module)."""
        scope: Scope | None = self.root
        for part in chain:
            scope = scope.classes.get(part) if scope is not None else None
        if scope is not None:
            return self.member(ClassRef(scope))
        return [self._imported(imported.module, imported.symbol, (*chain[1:], self.name))
                for imported in self.root.imports.get(chain[0], [])]

    def _through_imports(self, value: ast.expr, scope: Scope) -> list[dict[str, Any]]:
        """`x.name`, `x.y.name` where x is bound by imports only: `name` in what they bring (a module, a
        module's class)."""
        head, steps = _chain(value)
        where = lookup(head, scope) if head is not None else None
        if where is None or head is None or where.hows(head) != {"import"}:
            return []
        return [self._imported(item.module, item.symbol, (*steps, self.name)) for item in where.imports.get(head, [])]

    # -- one occurrence ------------------------------------------------------------------------------
    def at(self, occurrence: Occurrence) -> list[dict[str, Any]]:
        kind, scope = occurrence.kind, occurrence.scope
        if kind == "def" or kind == "param":
            return [{"places": [[occurrence.line, occurrence.column + 1]]}]
        if kind == "import":
            if occurrence.imported is not None:
                return [self._imported(occurrence.imported.module, self.name)]
            where = lookup(self.name, scope)
            return self.bound_in(where) if where is not None else []
        if kind == "attribute":
            return self._attribute(occurrence)
        if kind == "slot":  # a `__slots__` string: the instances' attribute
            return self.member(ClassRef(scope)) or [{"unknown": True}]
        if kind in ("store", "declaration"):
            where = self._binder(occurrence)
        elif kind == "keyword":
            return [{"unknown": True}]
        else:
            where = lookup(self.name, scope)
        if where is None:
            fallback = [{"builtin": self.name}] if hasattr(builtins, self.name) else [{"unknown": True}]
            if kind == "load" and self.root.stars:
                return [{"first_of": [*self._stars(), *fallback]}]
            return fallback
        return self.bound_in(where)

    def _attribute(self, occurrence: Occurrence) -> list[dict[str, Any]]:
        value, scope = occurrence.value, occurrence.scope
        assert value is not None
        imported = self._through_imports(value, scope)
        if imported:
            return imported
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super" \
                and lookup("super", scope) is None:
            owner = method_class(scope)
            return (self.bases(owner) or [{"unknown": True}]) if owner is not None else [{"unknown": True}]
        if isinstance(value, ast.Name):
            where = lookup(value.id, scope)
            if where is not None and where.self_name == value.id and where.owner is not None:
                return self.member(ClassRef(where.owner)) or [{"unknown": True}]
        cls = self.resolver.class_of(value, scope) or self.resolver.instance_of(value, scope)
        if cls is None:
            return [{"unknown": True}]
        return self.member(cls) or [{"unknown": True}]


def _chain(value: ast.expr) -> tuple[str | None, tuple[str, ...]]:
    """`a.b.c` as ("a", ("b", "c")); (None, ()) for anything but names and attributes."""
    steps: list[str] = []
    while isinstance(value, ast.Attribute):
        steps.append(value.attr)
        value = value.value
    return (value.id, tuple(reversed(steps))) if isinstance(value, ast.Name) else (None, ())


def _declarations(bindings: list[Occurrence], member: bool) -> list[list[int]]:
    """[line, column] (1-based) of the bindings a type checker goes to (pyright's choice, measured on real
    code): a def's `@overload` signatures only when no implementation is there (a stub); of a class's member,
    the bindings that declare its type (a def, an annotated assignment) when there are any; of a variable or
    a parameter, every binding in its scope."""
    kept = [item for item in bindings if not item.overload] or bindings
    if member:
        kept = [item for item in kept if item.declared] or kept
    return [[item.line, item.column + 1] for item in kept]


def _parsed(text: str) -> tuple[ast.Module, str, int] | None:
    """The tree of `text` (without a BOM, which shifts line 1's columns by one), or None."""
    bom = int(text.startswith("\ufeff"))
    text = text[bom:]
    tree = TREES.parsed(text)
    return (tree, text, bom) if tree is not None else None


def definition_at(text: str, shown: str, line: int, column: int) -> dict[str, Any] | None:
    """The name at `line`, `column` (1-based) of a Python file and its targets: {"name", "column" (where it
    starts), "targets"}; None when the file does not parse or no name of the code is there (a comment, a
    string, a keyword)."""
    parsed = _parsed(text)
    if parsed is None:
        return None
    tree, text, bom = parsed
    found = word_at(text, line, column - (bom if line == 1 else 0))
    if found is None:
        return None
    name, start = found
    try:
        finder = _Finder(tree, text, name, shown)
        here = [item for item in finder.builder.found if item.line == line and item.column + 1 == start]
        if not here:
            return None
        targets = finder.at(here[0])
    except (RecursionError, MemoryError, ValueError):
        return None
    return {"name": name, "column": start + (bom if line == 1 else 0), "targets": _shifted(targets, bom)}


def definition_of(text: str, shown: str, path: list[str]) -> list[dict[str, Any]] | None:
    """The targets of a module's name (`path` one name), or of a member of one of its classes (the class's
    names, then the member's); None when the file does not parse."""
    parsed = _parsed(text)
    if parsed is None or not path:
        return None
    tree, text, bom = parsed
    try:
        finder = _Finder(tree, text, path[-1], shown)
        targets = finder.bound_in(finder.root) if len(path) == 1 else finder.in_class(path[:-1])
    except (RecursionError, MemoryError, ValueError):
        return None
    return _shifted(targets, bom)


def _shifted(targets: list[dict[str, Any]], bom: int) -> list[dict[str, Any]]:
    """Targets with line 1's columns counted from the file's first character (a BOM is one)."""
    if bom:
        for target in targets:
            for place in target.get("places", []):
                if place[0] == 1:
                    place[1] += bom
    return targets


def subclasses(text: str, shown: str, names: list[str]) -> list[dict[str, Any]] | None:
    """The classes of a module with a base written as one of `names` or `x.name` (or a name an import binds to
    one: `from m import Base as B`): each one's dotted name (the classes and functions it is in first, as the
    outline qualifies it), the line and column (1-based) of its name, the base's name (`base`, one of `names`)
    and the targets of that base (where its definition is); None when the file does not parse."""
    parsed = _parsed(text)
    if parsed is None:
        return None
    tree, text, bom = parsed
    wanted_names = set(names)
    aliases = {alias.asname: alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names if alias.name in wanted_names and alias.asname}
    wanted: list[tuple[ast.ClassDef, tuple[str, ...], ast.expr, str]] = []
    stack: list[tuple[ast.AST, tuple[str, ...]]] = [(tree, ())]
    while stack:
        node, chain = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = (*chain, child.name) if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) else chain
            if isinstance(child, ast.ClassDef):
                for base in child.bases:
                    spot = base.value if isinstance(base, ast.Subscript) else base  # Generic[T], Base[T]
                    written = spot.id if isinstance(spot, ast.Name) else spot.attr if isinstance(spot, ast.Attribute) else None
                    if written is not None and (written in wanted_names or (written in aliases and isinstance(spot, ast.Name))):
                        wanted.append((child, inner, spot, written))
            stack.append((child, inner))
    found: list[dict[str, Any]] = []
    finders: dict[str, _Finder] = {}
    try:
        for cls, chain, spot, written in wanted:
            finder = finders.get(written) or finders.setdefault(written, _Finder(tree, text, written, shown))
            line = spot.end_lineno or spot.lineno
            column = finder.builder.character_column(line, (spot.end_col_offset or 0) - len(written.encode("utf-8")))
            occurrence = next((item for item in finder.builder.found if item.kind in ("load", "attribute")
                               and (item.line, item.column) == (line, column)), None)
            if occurrence is None:
                continue
            row = finder.builder.lines[cls.lineno - 1]
            start = row.find(cls.name, finder.builder.character_column(cls.lineno, cls.col_offset))
            found.append({"name": ".".join(chain), "line": cls.lineno, "column": start + 1 + (bom if cls.lineno == 1 else 0),
                          "base": written if written in wanted_names else aliases[written],
                          "targets": _shifted(finder.at(occurrence), bom)})
    except (RecursionError, MemoryError, ValueError):
        return None
    found.sort(key=lambda item: (item["line"], item["column"]))
    return found
