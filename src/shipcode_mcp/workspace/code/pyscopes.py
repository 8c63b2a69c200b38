"""Which uses of a name in Python source can reach a given definition, from scopes alone (no types).

A name search counts every `get`: a parameter, a local, a keyword argument, `dict.get`, the `get` of
every class. Python's scoping rules decide most of them without a type checker: a name bound in a
function is that function's own; a class body's names are its members, out of sight of its methods;
`self.x` in a method is a member of the method's class or of a class it derives from; an import binds
a name to a module or to a name in one; `v = Session()` makes `v.get` the Session's.

A query is a name and the qualifier the agent gave it: `get` (any definition named get), `Session.get`
(the member of a class named Session), `sessions.get` or `requests.api.get` (the module-level get of a
module whose dotted path ends so). The server resolves a qualified query to its definitions in the
workspace first (references.resolve), each a Reading with its file's whole dotted path; without one the
query's words are read both ways (a qualifier may name a module or a class). Each use of the name in a
file is then

- `scoped`: it reaches such a definition (or is one), by the rules above;
- `name`: it may, but only types could tell (`obj.get` on an object of unknown type, a name imported
  from a module that may re-export it);
- left out: it cannot (a local or parameter of that name, a keyword argument, another class's member,
  a builtin).

Standard library only: the parse worker runs it (worker.py), like every parse of hostile text.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import re
import sys
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

SCOPED, NAME, OUT = 2, 1, 0
"""How surely a use reaches the target: the larger, the surer (readings are combined with max)."""
LABELS = {SCOPED: "scoped", NAME: "name"}
_QUOTE = re.compile(r"[rRuU]?(?:'''|\"\"\"|'|\")")
"""The start of a string literal that may be an annotation (not an f-string or bytes)."""
_STATICMETHOD = re.compile(r"(?:^|\.)staticmethod$")
MAX_ANNOTATION = 200
"""A string annotation longer than this is not read for the class it names."""
STANDARD_LIBRARY = frozenset(getattr(sys, "stdlib_module_names", ()))
_LITERALS: tuple[tuple[type[ast.AST] | tuple[type[ast.AST], ...], str], ...] = (
    ((ast.Dict, ast.DictComp), "dict"), ((ast.List, ast.ListComp), "list"), ((ast.Set, ast.SetComp), "set"),
    (ast.Tuple, "tuple"), (ast.JoinedStr, "str"))
"""A literal's builtin type (a Constant's is its value's)."""
CONSTRUCTORS = frozenset({"__init__", "__new__"})
"""Methods that a call of their class runs: its calls are their uses."""


@dataclass(frozen=True)
class Imported:
    """What an import bound a name to: a module (`symbol` None) or a name in a module."""

    module: tuple[str, ...]
    symbol: str | None


@dataclass(eq=False)
class Scope:
    """A module, class, function, lambda or comprehension body, and the names it binds."""

    kind: str
    parent: Scope | None
    name: str = ""
    bindings: dict[str, set[str]] = field(default_factory=dict)  # name -> how: "def", "class", "import", "param", "assign"
    imports: dict[str, list[Imported]] = field(default_factory=dict)
    values: dict[str, list[ast.expr | None]] = field(default_factory=dict)  # assigned values (None: not simple)
    annotations: dict[str, ast.expr] = field(default_factory=dict)  # parameters' and a class body's annotations
    variable_annotations: dict[str, ast.expr] = field(default_factory=dict)  # `x: T = ...` in a function or module
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    classes: dict[str, Scope] = field(default_factory=dict)  # class bodies defined here, by name
    bases: list[ast.expr] = field(default_factory=list)  # a class's
    self_name: str | None = None  # a method's first parameter
    owner: Scope | None = None  # a method's class
    instance_attributes: set[str] = field(default_factory=set)  # a class's `self.x = ...` names
    attribute_values: dict[str, list[tuple[ast.expr | None, Scope]]] = field(default_factory=dict)  # and their values
    attribute_annotations: dict[str, tuple[ast.expr, Scope]] = field(default_factory=dict)  # `self.x: T = ...`
    returns: dict[str, ast.expr] = field(default_factory=dict)  # the return annotations of the functions defined here
    stars: list[tuple[str, ...]] = field(default_factory=list)  # the modules of its `from m import *`

    def bind(self, name: str, how: str, imported: Imported | None = None) -> None:
        self.bindings.setdefault(name, set()).add(how)
        if imported is not None:
            self.imports.setdefault(name, []).append(imported)

    def hows(self, name: str) -> set[str]:
        return self.bindings.get(name, set())

    def chain(self) -> tuple[str, ...]:
        """The names of the definitions around this one and its own (a class's qualified name)."""
        names: list[str] = []
        scope: Scope | None = self
        while scope is not None and scope.kind != "module":
            names.append(scope.name)
            scope = scope.parent
        return tuple(reversed(names))


@dataclass(frozen=True)
class Occurrence:
    """One place where the name is written, and what the code around it makes of it."""

    kind: str  # "load", "store", "def", "attribute", "param", "keyword", "import", "declaration", "call", "slot"
    line: int  # 1-based
    column: int  # 0-based, in characters
    scope: Scope
    value: ast.expr | None = None  # an attribute's object; a keyword's callee
    imported: Imported | None = None  # an import's source (for `from m import name`)
    stored: bool = False  # an attribute assigned to (`self.name = ...`)
    declared: bool = False  # a binding that says its type: a def or class, an annotated assignment
    overload: bool = False  # a def decorated with typing.overload (a signature, not the function)


class Builder(ast.NodeVisitor):
    """One walk over the module: its scopes with their bindings, and the occurrences of `name`."""

    def __init__(self, name: str, lines: list[str], constructed: frozenset[str] = frozenset(), slots: bool = False) -> None:
        self.name = name
        self.slots = slots  # record the `__slots__` strings that name it ("slot": go-to-definition's, not references')
        self.constructed = constructed  # classes whose calls run the name (`__init__`): `Session()`
        self.lines = lines
        self.module = Scope("module", None)
        self.scope = self.module
        self.found: list[Occurrence] = []
        self.shift = (0, 0)  # (lines, columns) added to the places found inside a string annotation
        self._tables: dict[str, list[int]] = {}  # a non-ASCII line's character index of each UTF-8 byte
        self._recorded: set[int] = set()  # the targets _assigned has recorded a value for
        self._annotated: ast.expr | None = None  # the target of the annotated assignment being visited

    # -- where a name sits ---------------------------------------------------------------------------------
    def character_column(self, line: int, byte_column: int) -> int:
        """A character column from ast's UTF-8 byte offset (a table per non-ASCII line, made once: a long line
        of many uses must not cost its length each time)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_column
        table = self._tables.get(text)
        if table is None:
            table = [index for index, char in enumerate(text) for _ in range(len(char.encode("utf-8", "surrogatepass")))]
            table.append(len(text))
            self._tables[text] = table
        return table[min(max(byte_column, 0), len(table) - 1)]

    def _column(self, line: int, byte_column: int) -> int:
        """A character column from ast's UTF-8 byte offset, then moved onto the name if it is not there
        (f-string positions before Python 3.12 can be off)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        column = self.character_column(line, byte_column)
        if text[column:column + len(self.name)] == self.name:
            return column
        found = _word(self.name).search(text, column)
        if found is None:
            found = _word(self.name).search(text)
        return found.start() if found is not None else column

    def _find(self, line: int, byte_column: int) -> int:
        """The column of the name at or after a statement's start (a def's name, an import's)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        start = self.character_column(line, byte_column)
        found = _word(self.name).search(text, start)
        return found.start() if found is not None else start

    def _binder(self, name: str) -> Scope:
        """The scope a binding of `name` here goes to: this one, or where its `global` or `nonlocal` sends it."""
        scope = self.scope
        if name in scope.declared_global:
            return self.module
        if name in scope.declared_nonlocal:
            outer = scope.parent
            while outer is not None and outer.kind != "module" and (outer.kind == "class" or name not in outer.bindings):
                outer = outer.parent
            if outer is not None and outer.kind != "module":
                return outer
        return scope

    def _bind(self, name: str, how: str, imported: Imported | None = None) -> None:
        self._binder(name).bind(name, how, imported)

    def _add(self, kind: str, line: int, column: int, **extra: Any) -> None:
        lines, columns = self.shift
        self.found.append(Occurrence(kind, line + lines, column + (columns if line == 1 and (lines or columns) else 0),
                                     self.scope, **extra))

    def annotation(self, node: ast.expr) -> None:
        """An annotation, and the code inside its strings (`"Session"`, `t.Optional["Context"]`: a type
        checker reads those as code, and finds references there)."""
        self.visit(node)
        if self.shift != (0, 0):
            return  # no string inside a string's code
        for item in _annotation_strings(node):
            if _word(self.name).search(str(item.value)):
                self._string_annotation(item)

    def _string_annotation(self, node: ast.Constant) -> None:
        """The code of a one-line string annotation written as its value (no escapes, no line breaks)."""
        text = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else ""
        start = self.character_column(node.lineno, node.col_offset)
        quote = _QUOTE.match(text, start)
        value = str(node.value)
        if quote is None or node.end_lineno != node.lineno or text[quote.end():quote.end() + len(value)] != value:
            return
        code = value.strip()
        try:
            expression = ast.parse(code, mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return
        lead = len(value) - len(value.lstrip())
        saved, self.shift = (self.shift, self.lines), (node.lineno - 1, quote.end() + lead)
        self.lines = [code]
        try:
            self.visit(expression.body)
        finally:
            self.shift, self.lines = saved

    def _enter(self, scope: Scope, body: list[ast.stmt] | list[ast.expr] | ast.expr) -> None:
        outer, self.scope = self.scope, scope
        try:
            for node in body if isinstance(body, list) else [body]:
                self.visit(node)
        finally:
            self.scope = outer

    # -- definitions ---------------------------------------------------------------------------------------
    def _arguments(self, arguments: ast.arguments, scope: Scope) -> None:
        """Defaults and annotations are evaluated where the function is defined; the names bind inside."""
        for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
            self.visit(default)
        every = [*arguments.posonlyargs, *arguments.args, *([arguments.vararg] if arguments.vararg else []),
                 *arguments.kwonlyargs, *([arguments.kwarg] if arguments.kwarg else [])]
        for argument in every:
            if argument.annotation is not None:
                self.annotation(argument.annotation)
                scope.annotations[argument.arg] = argument.annotation
            scope.bind(argument.arg, "param")
            if argument.arg == self.name:  # written outside the function's scope, bound in it
                outer, self.scope = self.scope, scope
                self._add("param", argument.lineno, self._column(argument.lineno, argument.col_offset),
                          declared=argument.annotation is not None)
                self.scope = outer

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        for decorator in getattr(node, "decorator_list", []):
            self.visit(decorator)
        returns = getattr(node, "returns", None)
        if returns is not None:
            self.annotation(returns)
        self._type_params(node)
        name = getattr(node, "name", "<lambda>")
        scope = Scope("function" if not isinstance(node, ast.Lambda) else "lambda", self.scope, name)
        if not isinstance(node, ast.Lambda):
            self._bind(node.name, "def")
            if node.returns is not None:
                self.scope.returns[node.name] = node.returns
            if node.name == self.name:
                overload = any((_dotted(item) or "").rsplit(".", 1)[-1] == "overload" for item in node.decorator_list)
                self._add("def", node.lineno, self._find(node.lineno, node.col_offset), declared=True, overload=overload)
            if self.scope.kind == "class":
                decorators = {_dotted(item) for item in node.decorator_list}
                positional = [*node.args.posonlyargs, *node.args.args]
                if positional and not any(_STATICMETHOD.search(item) for item in decorators if item):
                    scope.self_name = positional[0].arg
                    scope.owner = self.scope
        self._arguments(node.args, scope)
        self._enter(scope, node.body)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node)

    def _type_params(self, node: ast.AST) -> None:
        """PEP 695's type parameters (3.12): their bounds and defaults are uses."""
        for parameter in getattr(node, "type_params", None) or []:
            for part in ("bound", "default_value"):
                value = getattr(parameter, part, None)
                if isinstance(value, ast.expr):
                    self.annotation(value)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._type_params(node)
        for item in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(item)
        self._bind(node.name, "class")
        if node.name == self.name:
            self._add("def", node.lineno, self._find(node.lineno, node.col_offset), declared=True)
        scope = Scope("class", self.scope, node.name, bases=list(node.bases))
        self.scope.classes.setdefault(node.name, scope)
        self._enter(scope, node.body)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # the first iterable is evaluated outside
        scope = Scope("comprehension", self.scope)
        outer, self.scope = self.scope, scope
        try:
            for index, generator in enumerate(generators):
                if index:
                    self.visit(generator.iter)
                self.visit(generator.target)
                for condition in generator.ifs:
                    self.visit(condition)
            if isinstance(node, ast.DictComp):
                self.visit(node.key)
                self.visit(node.value)
            else:
                self.visit(node.elt)
        finally:
            self.scope = outer

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    # -- bindings and uses ---------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id == self.name:
                self._add("load", node.lineno, self._column(node.lineno, node.col_offset))
            return
        self._bind(node.id, "assign")
        if id(node) not in self._recorded:  # a for, with, except or tuple target: a value of unknown type
            self._binder(node.id).values.setdefault(node.id, []).append(None)
        if node.id == self.name:
            self._add("store", node.lineno, self._column(node.lineno, node.col_offset), declared=node is self._annotated)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        """`with Session() as s`: s holds what the context manager's __enter__ returns, taken for the manager
        itself (as a class's __enter__ mostly returns self)."""
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._assigned(item.optional_vars, item.context_expr)
                self.visit(item.optional_vars)
        for statement in node.body:
            self.visit(statement)

    visit_AsyncWith = visit_With

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:  # `:=` binds outside comprehensions
            scope = scope.parent
        outer, self.scope = self.scope, scope
        try:
            self._assigned(node.target, node.value)
            self.visit(node.target)
        finally:
            self.scope = outer

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._assigned(target, node.value)
            self.visit(target)
            self._exported(target, node.value)
            self._slots(target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self.visit(node.target)
        self._exported(node.target, node.value)

    def _slots(self, target: ast.expr, value: ast.expr) -> None:
        """`__slots__ = ("name", ...)` in a class body: each string declares an attribute of its instances."""
        if not self.slots or self.scope.kind != "class" or not (isinstance(target, ast.Name) and target.id == "__slots__"):
            return
        items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
        for item in items:
            if isinstance(item, ast.Constant) and item.value == self.name and item.lineno == item.end_lineno:
                text = self.lines[item.lineno - 1] if 0 < item.lineno <= len(self.lines) else ""
                quote = _QUOTE.match(text, self.character_column(item.lineno, item.col_offset))
                if quote is not None and text[quote.end():quote.end() + len(self.name)] == self.name:
                    self._add("slot", item.lineno, quote.end())

    def _exported(self, target: ast.expr, value: ast.expr | None) -> None:
        """`__all__ = ["name", ...]` (or `+=`) in a module: each string names the module's binding, as a use."""
        if self.scope.kind != "module" or not (isinstance(target, ast.Name) and target.id == "__all__"):
            return
        if isinstance(value, ast.List | ast.Tuple):
            for item in value.elts:
                if isinstance(item, ast.Constant) and item.value == self.name and item.lineno == item.end_lineno:
                    text = self.lines[item.lineno - 1] if 0 < item.lineno <= len(self.lines) else ""
                    quote = _QUOTE.match(text, self.character_column(item.lineno, item.col_offset))
                    if quote is not None and text[quote.end():quote.end() + len(self.name)] == self.name:
                        self._add("load", item.lineno, quote.end())

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.annotation(node.annotation)
        if isinstance(node.target, ast.Name):  # a member's declared type; a variable's, read when its values say none
            binder = self._binder(node.target.id)
            (binder.annotations if binder.kind == "class" else binder.variable_annotations)[node.target.id] = node.annotation
        if node.value is not None:
            self.visit(node.value)
        self._assigned(node.target, node.value, node.annotation)
        self._annotated = node.target
        try:
            self.visit(node.target)
        finally:
            self._annotated = None
        self._exported(node.target, node.value)

    def _assigned(self, target: ast.expr, value: ast.expr | None, annotation: ast.expr | None = None) -> None:
        """Remember `name = value` (what the name may hold) and `self.x = ...` in a method (a member)."""
        if isinstance(target, ast.Name):
            self._binder(target.id).values.setdefault(target.id, []).append(value)
            self._recorded.add(id(target))
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            method = self.scope
            if method.self_name == target.value.id and method.owner is not None:  # (any later `self = x` aside)
                method.owner.instance_attributes.add(target.attr)
                method.owner.attribute_values.setdefault(target.attr, []).append((value, method))
                self._recorded.add(id(target))
                if annotation is not None:
                    method.owner.attribute_annotations[target.attr] = (annotation, method)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.visit(node.value)
        if not isinstance(node.ctx, ast.Load) and id(node) not in self._recorded and isinstance(node.value, ast.Name):
            method = self.scope  # `self.x` in a for, with or tuple target: a value of unknown type
            if method.self_name == node.value.id and method.owner is not None:
                method.owner.instance_attributes.add(node.attr)
                method.owner.attribute_values.setdefault(node.attr, []).append((None, method))
        if node.attr == self.name:
            line = node.end_lineno or node.lineno
            column = self._column(line, (node.end_col_offset or 0) - len(node.attr.encode("utf-8")))
            self._add("attribute", line, column, value=node.value, stored=not isinstance(node.ctx, ast.Load),
                      declared=node is self._annotated)

    def visit_Call(self, node: ast.Call) -> None:
        self.visit(node.func)
        called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if called in self.constructed:
            line = node.func.end_lineno or node.func.lineno
            start = (node.func.end_col_offset or 0) - len(called.encode("utf-8"))
            self.found.append(Occurrence("call", line, self.character_column(line, start), self.scope, value=node.func))
        casts = (_dotted(node.func) or "").rsplit(".", 1)[-1] == "cast"  # typing.cast's type: read as an annotation
        for index, argument in enumerate(node.args):
            if casts and index == 0:
                self.annotation(argument)
            else:
                self.visit(argument)
        for keyword in node.keywords:
            if keyword.arg == self.name:
                line = getattr(keyword, "lineno", node.lineno)
                self._add("keyword", line, self._column(line, getattr(keyword, "col_offset", node.col_offset)),
                          value=node.func)
            self.visit(keyword.value)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            parts = tuple(alias.name.split("."))
            if alias.asname:
                self._bind(alias.asname, "import", Imported(parts, None))
            else:
                self._bind(parts[0], "import", Imported(parts[:1], None))
            if self.name in parts or alias.asname == self.name:
                self._add("import", node.lineno, self._find(getattr(alias, "lineno", node.lineno),
                                                            getattr(alias, "col_offset", node.col_offset)))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = tuple((node.module or "").split(".")) if node.module else ()
        source = (("." * node.level,) if node.level else ()) + module
        for alias in node.names:
            if alias.name == "*":
                self.scope.stars.append(source)
                continue
            self._bind(alias.asname or alias.name, "import", Imported(source, alias.name))
            if self.name in (alias.name, alias.asname):
                line = getattr(alias, "lineno", node.lineno)
                column = self._find(line, getattr(alias, "col_offset", node.col_offset))
                self._add("import", line, column, imported=Imported(source, alias.name) if alias.name == self.name else None)

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.declared_global.update(node.names)
        if self.name in node.names:
            self._add("declaration", node.lineno, self._find(node.lineno, node.col_offset))

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.declared_nonlocal.update(node.names)
        if self.name in node.names:
            self._add("declaration", node.lineno, self._find(node.lineno, node.col_offset))

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._bind(node.name, "assign")
            if node.name == self.name:
                self._add("store", node.lineno, self._find(node.lineno, node.col_offset))
        for statement in node.body:
            self.visit(statement)

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.pattern):
            for name in ("name", "rest"):  # match patterns (MatchAs, MatchStar, MatchMapping) bind names
                bound = getattr(node, name, None)
                if isinstance(bound, str):
                    self._bind(bound, "assign")
                    self._binder(bound).values.setdefault(bound, []).append(None)
                    if bound == self.name:
                        self._add("store", node.lineno, self._find(node.lineno, node.col_offset))
            if isinstance(node, ast.MatchClass) and self.name in node.kwd_attrs:  # `case Session(get=x)`: an attribute
                line = node.cls.end_lineno or node.lineno
                self._add("attribute", line, self._find(line, node.cls.end_col_offset or 0), value=node.cls)
        super().generic_visit(node)


def _annotation_strings(node: ast.expr) -> Iterator[ast.Constant]:
    """The strings of an annotation that are code: not a Literal's values, nor Annotated's metadata."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            yield item
            continue
        if isinstance(item, ast.Subscript):
            head = (_dotted(item.value) or "").rsplit(".", 1)[-1]
            if head == "Literal":
                stack.append(item.value)
                continue
            if head == "Annotated" and isinstance(item.slice, ast.Tuple) and item.slice.elts:
                stack += [item.value, item.slice.elts[0]]
                continue
        stack.extend(child for child in ast.iter_child_nodes(item) if isinstance(child, ast.expr))


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` of a name or an attribute chain (a call's callee for a decorator with arguments)."""
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


# -- resolution --------------------------------------------------------------------------------------------
def lookup(name: str, scope: Scope) -> Scope | None:
    """The scope whose binding a use of `name` in `scope` reads: its own, an enclosing function's (class
    bodies are skipped, as Python skips them), the module's; None for a builtin or an unknown name."""
    module = scope
    while module.parent is not None:
        module = module.parent
    if name in scope.declared_global:
        return module if name in module.bindings else None
    current: Scope | None = scope
    first = True
    while current is not None:
        if (first or current.kind != "class") and name in current.bindings and name not in current.declared_nonlocal:
            if name in current.declared_global:
                return module if name in module.bindings else None
            return current
        first = False
        current = current.parent
    return None


@dataclass(frozen=True)
class Reading:
    """One definition the query may mean: the member `name` of class `cls` (with `outer` its enclosing
    classes), or with `cls` None the module-level `name`, of module `module`. An `exact` reading comes from
    the definition itself (its file's whole dotted path); another from the query's words alone, which must
    end the path (`sessions.Session.get`: `sessions` ends the module's path, or names an outer class).
    `cls` "" is any class (the query `get` alone). `derived` names the classes of the workspace that derive
    from `cls`, directly or not, as their class statements say (None: not known), so that a class
    imported from another module and not among them is known not to."""

    module: tuple[str, ...]
    cls: str | None
    outer: tuple[str, ...] = ()
    exact: bool = False
    derived: frozenset[str] | None = None

    @staticmethod
    def of(value: list[Any]) -> Reading:
        """From its JSON form, [module, cls, outer, exact, derived] (how the server sends it)."""
        module, cls, outer, exact, derived = value
        return Reading(tuple(module), cls, tuple(outer), bool(exact), None if derived is None else frozenset(derived))

    def json(self) -> list[Any]:
        return [list(self.module), self.cls, list(self.outer), self.exact,
                None if self.derived is None else sorted(self.derived)]

    def module_is(self, path: tuple[str, ...]) -> bool:
        """Whether a module path (this file's, or an import's, made absolute) is the reading's module: an
        import names the end of the whole path (`requests.sessions` of src/requests/sessions.py)."""
        if self.exact:
            return bool(path) and path_ends(self.module, path)
        return path_ends(path, self.module)

    def may_reexport(self, path: tuple[str, ...]) -> bool:
        """Whether a name imported from `path` may be the reading's, imported there and exported again: a
        package above the reading's module may do that (`from requests import get`); another module not."""
        if not self.exact:
            return True
        size = len(path)
        return any(self.module[start:start + size] == path for start in range(len(self.module) - size))


@dataclass(frozen=True)
class ClassRef:
    """A class as an expression denotes it: one defined in this file, or a name imported from a module."""

    local: Scope | None
    module: tuple[str, ...] = ()
    symbol: str = ""


class Resolver:
    """Decides, for each occurrence, how surely it reaches the query's definition."""

    def __init__(self, builder: Builder, module: tuple[str, ...], readings: list[Reading], package: bool = False) -> None:
        self.name = builder.name
        self.root = builder.module
        self.module = module
        self.readings = readings
        self._instances: dict[tuple[int, str], ClassRef | None] = {}
        self.package = module if package else module[:-1]  # where `from . import x` looks
        self.class_names = {name for reading in readings for name in (reading.cls, *(reading.derived or ())) if name}

    # -- what an expression denotes ------------------------------------------------------------------------
    def absolute(self, source: tuple[str, ...]) -> tuple[str, ...]:
        """An import's module as a dotted path: a relative one (`.`, `..models`) from this file's package."""
        if source and source[0].startswith("."):
            package = self.package
            up = len(source[0]) - 1
            return (package[:len(package) - up] if up else package) + source[1:]
        return source

    def builtin(self, node: ast.expr, scope: Scope) -> bool:
        """Whether an expression is a name bound nowhere in the module: a builtin (`object`, `dict`)."""
        return isinstance(node, ast.Name) and lookup(node.id, scope) is None and not self.root.stars

    def imported(self, name: str, scope: Scope) -> list[Imported]:
        where = lookup(name, scope)
        return where.imports.get(name, []) if where is not None else []

    def certain_module(self, node: ast.expr, scope: Scope) -> bool:
        """Whether a name is bound by `import m` only: a module, never a class."""
        if not isinstance(node, ast.Name):
            return False
        where = lookup(node.id, scope)
        return where is not None and where.hows(node.id) == {"import"} and all(
            item.symbol is None for item in where.imports.get(node.id, []))

    def modules_of(self, node: ast.expr, scope: Scope) -> list[tuple[str, ...]]:
        """The modules an expression may denote (an imported module, or a name of one, or its attribute)."""
        if isinstance(node, ast.Name):
            return [self.absolute(item.module) + ((item.symbol,) if item.symbol is not None else ())
                    for item in self.imported(node.id, scope)]
        if isinstance(node, ast.Attribute):
            return [(*outer, node.attr) for outer in self.modules_of(node.value, scope)]
        return []

    def class_of(self, node: ast.expr, scope: Scope) -> ClassRef | None:
        """The class an expression names: a class defined here, or a name imported from a module (written as
        code, or as a string annotation)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) <= MAX_ANNOTATION:
            try:
                node = ast.parse(node.value.strip(), mode="eval").body
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                return None
        if isinstance(node, ast.Name):
            where = lookup(node.id, scope)
            if where is None:
                builtin = getattr(builtins, node.id, None) if not self.root.stars else None
                return ClassRef(None, ("builtins",), node.id) if isinstance(builtin, type) else None
            if "class" in where.hows(node.id) and node.id in where.classes:
                return ClassRef(where.classes[node.id])
            for item in where.imports.get(node.id, []):
                if item.symbol is not None and self.class_like(item.symbol):
                    return ClassRef(None, self.absolute(item.module), item.symbol)
            return None
        if isinstance(node, ast.Attribute):
            modules = self.modules_of(node.value, scope)
            if modules:
                return ClassRef(None, modules[0], node.attr) if self.class_like(node.attr) else None
            outer = self.class_of(node.value, scope)
            if outer is not None and outer.local is not None and node.attr in outer.local.classes:
                return ClassRef(outer.local.classes[node.attr])
        return None

    def class_like(self, name: str) -> bool:
        """Whether an imported name is taken for a class: capitalized (PEP 8's CapWords), or a class the query
        is about. Another is taken for a function, whose calls' type only the function's source tells."""
        return name[:1].isupper() or name in self.class_names

    def instance_of(self, node: ast.expr, scope: Scope) -> ClassRef | None:
        """The class of the object an expression holds: a call of a class (`Session()`), a literal, a name every
        assignment of which in its scope calls one class (`v = Session()`) or makes one literal's type, a
        parameter annotated with one, an object's `__dict__`."""
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return ClassRef(None, ("builtins",), "dict")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = lookup(node.value.id, scope)
            if owner is not None and owner.self_name == node.value.id and owner.owner is not None:
                return self.attribute_class(owner.owner, node.attr)
        if not isinstance(node, ast.Name):
            return self.value_class(node, scope)
        where = lookup(node.id, scope)
        if where is None:
            return None
        key = (id(where), node.id)  # each name's class is worked out once: many uses must not redo it
        if key not in self._instances:
            self._instances[key] = self._holds(node.id, where)
        return self._instances[key]

    def _holds(self, name: str, where: Scope) -> ClassRef | None:
        """The class the name bound in `where` holds, if its annotation (a parameter's, a member's) or every
        assignment says one; else the annotation of a variable (`v: Session = make()`), as what the values
        cannot tell (`v: Any = Session()` holds a Session all the same)."""
        annotation = where.annotations.get(name)
        if annotation is not None:
            return self.class_of(annotation, where)
        values = where.values.get(name)
        found: ClassRef | None = None
        if values and where.hows(name) == {"assign"}:
            for value in values:
                cls = self.value_class(value, where)
                if cls is None or (found is not None and cls != found):
                    found = None
                    break
                found = cls
        if found is None and name in where.variable_annotations:
            return self.class_of(where.variable_annotations[name], where)
        return found

    def attribute_class(self, cls: Scope, name: str) -> ClassRef | None:
        """The class of `self.name` in a method of `cls`: its declared type in the class body, or the one class
        every `self.name = ...` of the class makes (`None` aside)."""
        annotation = cls.annotations.get(name)
        if annotation is not None:
            return self.class_of(annotation, cls)
        declared = cls.attribute_annotations.get(name)
        if declared is not None:
            return self.class_of(*declared)
        found: ClassRef | None = None
        for value, method in cls.attribute_values.get(name, []):
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            made = self.value_class(value, method)
            if made is None or (found is not None and made != found):
                return None
            found = made
        return found

    def returns_of(self, func: ast.expr, scope: Scope) -> tuple[ast.expr, Scope] | None:
        """The return annotation of a function defined in this file that `func` calls (`make()`,
        `self.make()`), and where it is read."""
        if isinstance(func, ast.Name):
            where = lookup(func.id, scope)
            if where is not None and where.hows(func.id) == {"def"} and func.id in where.returns:
                return where.returns[func.id], where
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            where = lookup(func.value.id, scope)
            if where is not None and where.self_name == func.value.id and where.owner is not None \
                    and func.attr in where.owner.returns:
                return where.owner.returns[func.attr], where.owner
        return None

    def value_class(self, value: ast.expr | None, scope: Scope) -> ClassRef | None:
        """The class of a value assigned: a class's call, or a literal's builtin type (`{}`, `[]`, `""`)."""
        if isinstance(value, ast.Call):
            if (_dotted(value.func) or "").rsplit(".", 1)[-1] == "cast" and value.args:
                return self.class_of(value.args[0], scope)  # typing.cast(Class, value) is a Class
            returns = self.returns_of(value.func, scope)
            if returns is not None:
                return self.class_of(*returns)
            return self.class_of(value.func, scope)
        for kinds, name in _LITERALS:
            if isinstance(value, kinds):
                return ClassRef(None, ("builtins",), name)
        if isinstance(value, ast.Constant) and value.value is not None and value.value is not ...:
            return ClassRef(None, ("builtins",), type(value.value).__name__)
        return None

    # -- how a class relates to a reading ------------------------------------------------------------------
    def matches(self, cls: ClassRef, reading: Reading) -> int:
        """SCOPED if the class is the reading's; NAME if it may be (imported from a package that may
        export it again); OUT if not."""
        if not reading.cls:
            return OUT
        if cls.local is not None:
            chain = cls.local.chain()
            if chain[-1] != reading.cls:
                return OUT
            if reading.exact:
                return SCOPED if self.module == reading.module and chain[:-1] == reading.outer else OUT
            return SCOPED if path_ends(self.module + chain[:-1], reading.module) else OUT
        if cls.symbol != reading.cls:
            return OUT
        if reading.outer:
            return NAME
        if reading.module_is(cls.module):
            return SCOPED
        return NAME if reading.may_reexport(cls.module) else OUT

    @staticmethod
    def foreign(module: tuple[str, ...], reading: Reading) -> bool:
        """Whether a module is the standard library's (builtins included) and the reading's is not, so its
        classes cannot derive from the reading's."""
        top = module[0] if module else ""
        return (top == "builtins" or top in STANDARD_LIBRARY) and top not in reading.module

    def member(self, cls: ClassRef, reading: Reading, seen: set[int] | None = None) -> int:
        """How surely `cls.name` reaches the reading's member: the class itself, or one it derives from
        (a class that defines the name itself has its own member)."""
        if reading.cls is None:
            return OUT
        found = self.matches(cls, reading)
        if found == SCOPED:
            return SCOPED
        local = cls.local
        if local is None:  # a class of another module: only its source tells what it derives from, unless it is
            if self.foreign(cls.module, reading):  # the standard library's
                return OUT
            if reading.derived is not None and cls.symbol not in reading.derived:
                return found  # no class statement of the workspace by that name derives from the reading's
            return NAME
        seen = seen if seen is not None else set()
        if id(local) in seen:
            return found
        seen.add(id(local))
        if reading.cls == "" and (self.name in local.bindings or self.name in local.instance_attributes):
            return SCOPED
        if self.name in local.bindings:
            return OUT  # the class's own member (`self.x = ...` in a method sets the inherited one)
        return max(found, self._bases(local, reading, seen))

    def _bases(self, cls: Scope, reading: Reading, seen: set[int] | None = None) -> int:
        """How surely `name` reached through the bases of `cls` (`super().name`) is the reading's member."""
        best = OUT
        outer = cls.parent or self.root
        for base in cls.bases:
            base_class = self.class_of(base, outer)
            if base_class is not None:
                best = max(best, self.member(base_class, reading, seen))
            elif not self.builtin(base, outer):
                best = max(best, NAME)  # a base whose class cannot be told
        return best

    def from_import(self, imported: Imported, reading: Reading) -> int:
        """How surely `from m import name` binds the reading's module-level name."""
        if reading.cls is not None or imported.symbol != self.name:
            return OUT
        source = self.absolute(imported.module)
        if reading.module_is(source):
            return SCOPED
        return NAME if reading.may_reexport(source) else OUT

    # -- one occurrence ------------------------------------------------------------------------------------
    def decide(self, occurrence: Occurrence) -> tuple[int, bool]:
        """(how surely it reaches the definition, whether it is that definition)."""
        best, definition = OUT, False
        for reading in self.readings:
            sure, defines = self._decide(occurrence, reading)
            best = max(best, sure)
            definition = definition or (defines and sure == SCOPED)
        return best, definition

    def _decide(self, occurrence: Occurrence, reading: Reading) -> tuple[int, bool]:
        kind, scope = occurrence.kind, occurrence.scope
        if kind == "param":
            return OUT, False
        if kind == "keyword":
            callee = self.class_of(occurrence.value, scope) if occurrence.value is not None else None
            constructs = callee is not None and reading.cls and (
                self.matches(callee, reading) == SCOPED or (callee.local is not None and self.member(callee, reading) != OUT))
            if constructs:
                return NAME, False  # a constructor's keyword may name a field
            return OUT, False
        if kind == "declaration":
            return NAME, False
        if kind == "call":  # `Session()` runs Session.__init__
            called = self.class_of(occurrence.value, scope) if occurrence.value is not None else None
            return (self.matches(called, reading) if called is not None else OUT), False
        if kind == "import":
            return (self.from_import(occurrence.imported, reading) if occurrence.imported is not None else OUT), False
        if kind == "attribute":
            return self._attribute(occurrence, reading), False
        return self._bare(occurrence, reading)

    def _bare(self, occurrence: Occurrence, reading: Reading) -> tuple[int, bool]:
        """A name written alone: loaded, stored, or defined by def or class."""
        scope = occurrence.scope
        where: Scope | None = scope
        if occurrence.kind == "load":
            where = lookup(self.name, scope)
        elif self.name in scope.declared_global:
            where = self.root
        elif self.name in scope.declared_nonlocal:
            where = lookup(self.name, scope.parent) if scope.parent is not None else None
        if where is None:  # a builtin, a name from a star import, or undefined: by name, when the query may mean it
            if reading.cls is None and any(reading.module_is(self.absolute(source)) for source in self.root.stars):
                return SCOPED, False  # `from .api import *` of the reading's module
            return (NAME if reading.cls is None and (bool(self.root.stars) or (not reading.exact and not reading.module))
                    else OUT), False
        defining = occurrence.kind in ("def", "store")
        if where.kind == "class":
            if not reading.cls:
                return (SCOPED if reading.cls == "" else OUT), defining
            return self.matches(ClassRef(where), reading), defining
        if reading.cls is not None:
            return OUT, False
        best, defines = OUT, False
        hows = where.hows(self.name)
        if "import" in hows:
            for item in where.imports.get(self.name, []):
                best = max(best, self.from_import(item, reading))
        if where.kind == "module":
            if hows - {"import"} and (self.module == reading.module if reading.exact else reading.module_is(self.module)):
                best, defines = SCOPED, defining
        elif hows & {"def", "class"} and not reading.module and not reading.exact:
            best, defines = SCOPED, occurrence.kind == "def"  # a nested def: its outline lists it
        return best, defines

    def _attribute(self, occurrence: Occurrence, reading: Reading) -> int:
        """`value.name`: a member of the class the value is or holds, or a module's name."""
        value, scope = occurrence.value, occurrence.scope
        assert value is not None
        if self.builtin(value, scope):  # a builtin's member (`dict.get`): by name, when the query may mean it
            return NAME if reading.cls == "" else OUT
        if reading.cls is None:
            best = OUT
            for module in self.modules_of(value, scope):
                if reading.module_is(module) and (reading.exact or reading.module):  # (any module's name: by name)
                    return SCOPED
                if reading.may_reexport(module):
                    best = NAME
            if best == OUT and not self.modules_of(value, scope):
                root = value  # a module-level name is reached by attribute through a module only
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and lookup(root.id, scope) is None:
                    best = NAME  # a name from a star import
            return best
        if self.certain_module(value, scope):
            return OUT  # `import m`: m is a module, its names are not a class's members
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            owner = method_class(scope)
            return self._bases(owner, reading) if owner is not None else NAME
        if isinstance(value, ast.Name):
            where = lookup(value.id, scope)
            if where is not None and where.self_name == value.id and where.owner is not None:
                return self.member(ClassRef(where.owner), reading)
        cls = self.class_of(value, scope) or self.instance_of(value, scope)
        return self.member(cls, reading) if cls is not None else NAME


def method_class(scope: Scope) -> Scope | None:
    current: Scope | None = scope
    while current is not None:
        if current.owner is not None:
            return current.owner
        current = current.parent
    return None


def path_ends(path: tuple[str, ...], suffix: tuple[str, ...]) -> bool:
    """Whether a dotted path ends with `suffix` (every path ends with the empty one)."""
    return not suffix or (len(path) >= len(suffix) and path[len(path) - len(suffix):] == suffix)


def readings(query: str) -> list[Reading]:
    """What a query's words alone may mean: `name` any definition of that name (module-level, or a member of
    any class); `A.B.name` the member of class B (A ending its module's path or naming an outer class) or
    the module-level name of a module whose path ends with A.B."""
    qualifier = tuple(query.split("."))[:-1]
    if not qualifier:
        return [Reading((), None), Reading((), "")]
    return [Reading(qualifier, None), Reading(qualifier[:-1], qualifier[-1])]


def module_path(shown: str) -> tuple[str, ...]:
    """A file's dotted module path from its path in the workspace (`pkg/sub/__init__.py` is pkg.sub)."""
    parts = [part for part in shown.replace("\\", "/").split("/") if part not in ("", ".")]
    if parts and parts[-1].endswith((".py", ".pyi")):
        parts[-1] = parts[-1].rsplit(".", 1)[0]
        if parts[-1] == "__init__":
            parts.pop()
    return tuple(parts)


class _Trees:
    """The trees of the files this parse worker parsed last, up to TREES_CHARS characters of their text, by
    the text's digest: each query of a name parses the files that mention it again, and the parse is two
    thirds of the cost."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._trees: OrderedDict[bytes, tuple[ast.Module | None, int]] = OrderedDict()
        self._chars = 0

    def parsed(self, text: str) -> ast.Module | None:
        """The module's tree, None when it does not parse."""
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        kept = self._trees.get(digest)
        if kept is not None:
            self._trees.move_to_end(digest)
            return kept[0]
        try:
            tree: ast.Module | None = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            tree = None
        if len(text) <= self.limit:
            self._trees[digest] = (tree, len(text))
            self._chars += len(text)
            while self._chars > self.limit:
                _, (_, size) = self._trees.popitem(last=False)
                self._chars -= size
        return tree


TREES_CHARS = 2 * 1024 * 1024
"""How much source the parse worker keeps the trees of: some 27 bytes of tree a character (CPython 3.11,
subprocess.py), so about 55 MB a worker."""
TREES = _Trees(TREES_CHARS)


def scoped_uses(text: str, name: str, shown: str, chosen: list[Reading]) -> dict[str, Any] | None:
    """The uses of `name` in `text` that may reach one of the readings: `uses` [line, column (0-based),
    label, is a definition] in source order, and how many uses were left out (`excluded`); None when the
    text does not parse (or nests too deeply to walk)."""
    constructed = frozenset(reading.cls for reading in chosen if reading.cls) if name in CONSTRUCTORS else frozenset()
    bom = text.startswith("\ufeff")
    text = text[1:] if bom else text  # (CPython refuses it in a str; it is not a column of line 1)
    tree = TREES.parsed(text)
    if tree is None:
        return None
    try:
        builder = Builder(name, text.split("\n"), constructed)
        builder.visit(tree)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    resolver = Resolver(builder, module_path(shown), chosen, shown.rsplit("/", 1)[-1] in ("__init__.py", "__init__.pyi"))
    uses: list[list[Any]] = []
    excluded = 0
    for occurrence in sorted(builder.found, key=lambda item: (item.line, item.column)):
        try:
            sure, definition = resolver.decide(occurrence)
        except RecursionError:
            sure, definition = NAME, False
        if sure == OUT:
            excluded += 1
            continue
        uses.append([occurrence.line - 1, occurrence.column + (bom and occurrence.line == 1), LABELS[sure], definition])
    return {"uses": uses, "excluded": excluded}
