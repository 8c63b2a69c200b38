"""Which uses of a name in JavaScript or TypeScript can reach given definitions, from scopes alone (no types).

The JavaScript side of pyscopes.py: a name search counts every `parse` (a parameter, a local, a destructured
property, an object's key, `schema.parse`, the `parse` of every class); the language's scoping rules decide
most of them without a type checker. A name bound in a function, block, loop or catch is that scope's own
(`var` is its function's); JavaScript has no implicit `this`, so a bare name never reaches a class member;
`this.x` in a class's method is a member of that class (or of one it derives from, if it derives from any);
an import binds a name to a module's export, and a relative import says which file that module is.

A target is a definition find_references found in the workspace (references.js_targets): its file, and
the class, interface or enum it is a member of (None at module level). Each use of the name in a file is

- `scoped`: it reaches a target (or is one): the target's own definition, a use bound to it in its own file,
  an import of it from its file (`./parse.js` for parse.ts, `./core` for core/index.ts) and the uses bound
  to that import, a member of the target's class through `this`, the class's name or the class's own body;
- `name`: it may, but only types (or the modules between) could tell: an import from another file (which
  may re-export the target), `obj.x` on an object of unknown type, a global, an object literal's key (an
  object typed as the target's interface), a member of a class that derives from or implements another;
- left out: it cannot: a local, parameter, catch or loop variable, or destructured name; another file's own
  module-level definition; an import of another name under this one; a bare name for a member; a member
  or key for a module-level target; a member of an unrelated class.

Runs in the parse worker (worker.py), on the tree-sitter tree, like every parse of hostile text.
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ast_grep_py import SgNode

SCOPED, NAME, OUT = 2, 1, 0
"""As in pyscopes: the larger, the surer."""
FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function", "method_definition",
                       "generator_function_declaration", "generator_function", "function_signature"})
BLOCKS = FUNCTIONS | {"program", "statement_block", "for_statement", "for_in_statement", "catch_clause", "class_body",
                      "switch_body"}
"""Nodes whose `let`, `const`, class and function declarations are their own (`var`'s: FUNCTIONS and program)."""
DECLARATIONS = frozenset({"function_declaration", "generator_function_declaration", "class_declaration",
                          "abstract_class_declaration", "interface_declaration", "type_alias_declaration",
                          "enum_declaration", "function_signature", "ambient_declaration"})
"""Declarations whose `name` binds in the scope around them."""
CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})
MEMBER_OWNERS = {"class_body": "class", "interface_body": "interface", "object_type": "type", "object": "object",
                 "enum_body": "enum", "object_pattern": "pattern"}
"""What a member or key's parent holds it for."""
MEMBER_DEFINITIONS = frozenset({"method_definition", "public_field_definition", "field_definition", "method_signature",
                                "property_signature", "abstract_method_signature", "pair", "enum_assignment",
                                "pair_pattern"})
PATTERNS = frozenset({"object_pattern", "array_pattern", "assignment_pattern", "rest_pattern", "pair_pattern",
                      "object_assignment_pattern", "required_parameter", "optional_parameter", "formal_parameters"})
"""Nodes inside a parameter list or a destructuring pattern through which an identifier is still bound."""
EXTENSIONS = (".d.ts", ".d.mts", ".d.cts", ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")


def _key(node: SgNode) -> tuple[str, int, int]:
    span = node.range()
    return node.kind(), span.start.index, span.end.index


def _same(a: SgNode | None, b: SgNode) -> bool:
    return a is not None and a.range() == b.range() and a.kind() == b.kind()


def module_of(shown: str) -> str:
    """A file's module as imports name it: its path without the extension, a folder's index file as the folder."""
    for extension in EXTENSIONS:
        if shown.endswith(extension):
            shown = shown[: -len(extension)]
            break
    return shown[: -len("/index")] if shown.endswith("/index") else shown


def imported_module(shown: str, source: str) -> str | None:
    """The module a relative import in the file `shown` names, as module_of names files; None for a package's."""
    if not source.startswith("."):
        return None
    return module_of(posixpath.normpath(posixpath.join(posixpath.dirname(shown), source)))


class _Binding:
    """How a name is bound: kind "local", "module" (a module-level definition), "import" (a named import, a
    destructured require or `require(m).name`: `source`, and whether it imports the name itself), "namespace" (`import
    * as`: a module object) or "default" (a default import, `require(m)`: a module's default export, in CommonJS its
    `module.exports`, which is a module object or the one thing it exports)."""

    def __init__(self, kind: str, source: str | None = None, same_name: bool = True) -> None:
        self.kind = kind
        self.source = source
        self.same_name = same_name


def _string(node: SgNode | None) -> str | None:
    """A string literal's text without its quotes."""
    if node is None or node.kind() != "string":
        return None
    text = node.text()
    return text[1:-1] if len(text) >= 2 else None


def _required(value: SgNode | None) -> str | None:
    """The module of `require("m")` or `await import("m")`, else None."""
    while value is not None and value.kind() in ("await_expression", "parenthesized_expression", "as_expression",
                                                 "non_null_expression"):
        inner = value.named_children()
        value = inner[0] if inner else None
    if value is None or value.kind() != "call_expression":
        return None
    function = value.field("function")
    if function is None or function.text() not in ("require", "import"):
        return None
    arguments = value.field("arguments")
    first = arguments.named_children() if arguments is not None else []
    return _string(first[0]) if first else None


def _declarator_of(pattern: SgNode) -> SgNode | None:
    """The declarator whose name is `pattern` (a destructuring pattern), if it is one's."""
    declarator = pattern.parent()
    if declarator is not None and declarator.kind() == "variable_declarator" and _same(declarator.field("name"), pattern):
        return declarator
    return None


class Resolver:
    """The bindings of one name in one file, and the scope each binds in."""

    def __init__(self, root: SgNode, shown: str, name: str, nodes: list[SgNode],
                 others: dict[str, Resolver] | None = None) -> None:
        self.root = root
        self._others: dict[str, Resolver] = {} if others is None else others
        self.shown = shown
        self.module = module_of(shown)
        self.name = name
        self.bindings: dict[tuple[str, int, int], _Binding] = {}
        self.roles: list[tuple[SgNode, str, Any]] = []  # each use: (node, role, detail)
        for node in nodes:
            role, detail = self._role(node)
            self.roles.append((node, role, detail))

    def _scope_of(self, node: SgNode, var: bool) -> SgNode | None:
        """The nearest scope around `node` that a declaration there binds in."""
        kinds = FUNCTIONS | {"program", "internal_module", "module"} if var else BLOCKS | {"internal_module", "module"}
        for ancestor in node.ancestors():
            if ancestor.kind() in kinds:
                return ancestor
        return None

    def _bind(self, scope: SgNode | None, binding: _Binding) -> None:
        if scope is not None:
            self.bindings.setdefault(_key(scope), binding)

    def _role(self, node: SgNode) -> tuple[str, Any]:
        """What one occurrence is: ("member", owner node or None) for a member's or key's definition; ("access",
        the object) for `obj.name`; ("binding", the binding) where it binds the name; ("alias", None) where it names
        another module's export bound under another name; ("reference", None) elsewhere."""
        parent = node.parent()
        if parent is None:
            return "reference", None
        kind, parent_kind = node.kind(), parent.kind()
        if kind == "property_identifier" or kind == "private_property_identifier":
            if parent_kind == "member_expression":
                return "access", parent.field("object")
            if parent_kind in MEMBER_DEFINITIONS:
                if parent_kind in ("pair", "pair_pattern") and not _same(parent.field("key"), node):
                    return "reference", None
                if parent_kind == "pair_pattern":
                    pattern = parent.parent()
                    declarator = _declarator_of(pattern) if pattern is not None else None
                    source = _required(declarator.field("value")) if declarator is not None else None
                    if source is not None:
                        return "export", source  # `const { name: other } = require(...)`: a use of the module's name
                return "member", parent.parent()
            if parent_kind == "enum_body":
                return "member", parent
            return "reference", None
        if kind == "shorthand_property_identifier_pattern":
            return self._destructured(node, parent)
        if kind == "shorthand_property_identifier":
            return "reference", None
        if parent_kind in ("nested_type_identifier", "nested_identifier", "member_expression") and \
                not _same(parent.child(0), node):
            return "access", parent.child(0)
        return self._identifier(node, parent, parent_kind)

    def _destructured(self, node: SgNode, pattern: SgNode) -> tuple[str, Any]:
        """`{ name } = value`: a new binding, of an import when the value is `require(...)`; else a read of the
        value's member (the role's detail: the value)."""
        declarator = _declarator_of(pattern)
        value = declarator.field("value") if declarator is not None else None
        source = _required(value)
        if declarator is not None and source is not None:
            binding = _Binding("import", source)
            statement = declarator.parent()
            self._bind(self._scope_of(declarator, statement is not None and statement.kind() == "variable_declaration"),
                       binding)
            return "binding", binding
        statement = declarator.parent() if declarator is not None else None
        self._bind(self._scope_of(pattern, statement is not None and statement.kind() == "variable_declaration"),
                   _Binding("local"))
        return "destructured", value

    def _identifier(self, node: SgNode, parent: SgNode, parent_kind: str) -> tuple[str, Any]:
        if parent_kind in DECLARATIONS and _same(parent.field("name"), node):
            scope = self._scope_of(parent, False)
            binding = _Binding("module" if scope is not None and scope.kind() == "program" else "local")
            self._bind(scope, binding)
            return "binding", binding
        if parent_kind in ("function_expression", "function", "generator_function", "class") and \
                _same(parent.field("name"), node):
            self._bind(parent, _Binding("local"))
            return "binding", self.bindings[_key(parent)]
        if parent_kind == "variable_declarator" and _same(parent.field("name"), node):
            declaration = parent.parent()
            var = declaration is not None and declaration.kind() == "variable_declaration"
            scope = self._scope_of(parent, var)
            value = parent.field("value")
            source = _required(value)
            exported = value.field("property") if value is not None and value.kind() == "member_expression" else None
            if source is not None:
                binding = _Binding("default", source)
            elif exported is not None and _required(value.field("object")) is not None:  # type: ignore[union-attr]
                binding = _Binding("import", _required(value.field("object")),  # type: ignore[union-attr]
                                   same_name=exported.text() == self.name)
            else:
                binding = _Binding("module" if scope is not None and scope.kind() == "program" else "local")
            self._bind(scope, binding)
            return "binding", binding
        if parent_kind == "import_specifier":
            imported, alias = parent.field("name"), parent.field("alias")
            statement = next((item for item in parent.ancestors() if item.kind() == "import_statement"), None)
            source = _string(statement.field("source")) if statement is not None else None
            if alias is not None and _same(alias, node):
                # `import { other as name }`: the same name only if other is it
                same = imported is not None and imported.text() == self.name
                binding = _Binding("import", source, same_name=same)
                self._bind(self._scope_of(parent, False), binding)
                return "binding", binding
            if alias is not None:
                return "export", source  # `import { name as other }`: a use of the module's name, bound as other
            binding = _Binding("import", source)
            self._bind(self._scope_of(parent, False), binding)
            return "binding", binding
        if parent_kind in ("namespace_import", "import_clause", "import_require_clause"):
            statement = next((item for item in parent.ancestors() if item.kind() == "import_statement"), None)
            source = _string(statement.field("source")) if statement is not None else None
            if parent_kind == "import_require_clause":
                source = _string(parent.field("source"))
            binding = _Binding("namespace" if parent_kind == "namespace_import" else "default", source)
            self._bind(self._scope_of(parent, False), binding)
            return "binding", binding
        if parent_kind == "export_specifier":
            alias = parent.field("alias")
            if alias is not None and _same(alias, node):
                return "alias", None
            statement = parent.parent().parent() if parent.parent() is not None else None  # type: ignore[union-attr]
            source = _string(statement.field("source")) if statement is not None else None
            return ("export", source) if source is not None else ("reference", None)
        bound = self._parameter_scope(node, parent)
        if bound is not None:
            self._bind(bound, _Binding("local"))
            return "binding", self.bindings[_key(bound)]
        return "reference", None

    def _parameter_scope(self, node: SgNode, parent: SgNode) -> SgNode | None:
        """The scope a parameter, catch or loop variable, or type parameter binds in, or None if `node` is none."""
        kind = parent.kind()
        if kind == "arrow_function" and _same(parent.field("parameter"), node):
            return parent
        if kind == "type_parameter" and _same(parent.field("name"), node):
            owner = parent.parent()
            return owner.parent() if owner is not None else None
        if kind == "catch_clause" and _same(parent.field("parameter"), node):
            return parent
        if kind == "for_in_statement" and _same(parent.field("left"), node):
            return parent if parent.field("kind") is not None else None
        if kind == "pair_pattern" and not _same(parent.field("value"), node):
            return None
        if kind in ("assignment_pattern", "object_assignment_pattern") and not _same(parent.field("left"), node):
            return None
        child = node
        while kind in PATTERNS:
            if kind == "formal_parameters":
                return parent.parent()
            if kind in ("required_parameter", "optional_parameter") and not _same(parent.field("pattern"), child):
                return None
            child, parent = parent, parent.parent()  # type: ignore[assignment]
            if parent is None:
                return None
            kind = parent.kind()
        if kind == "variable_declarator" and _same(parent.field("name"), child) and child is not node:
            declaration = parent.parent()
            return self._scope_of(parent, declaration is not None and declaration.kind() == "variable_declaration")
        return None

    def binding_of(self, node: SgNode) -> _Binding | None:
        """The binding of the name that `node` (a use of it) sees, None for a global."""
        for ancestor in node.ancestors():
            binding = self.bindings.get(_key(ancestor))
            if binding is not None:
                return binding
        return None

    def binding_of_object(self, node: SgNode) -> _Binding | None:
        """The binding an identifier naming an object (`obj` of `obj.name`) sees, None for a global: its own
        name's bindings are found once a file (`_others`)."""
        other = self._others.get(node.text())
        if other is None:
            found = self.root.find_all(kind="identifier", regex=f"^{re.escape(node.text())}$")
            other = self._others[node.text()] = Resolver(self.root, self.shown, node.text(), list(found), self._others)
        return other.binding_of(node)


def _class_around(node: SgNode) -> tuple[SgNode | None, bool]:
    """The class whose method or field `node` is in, as `this` there names it (None when `this` is something
    else: a plain function's or an object literal's), and whether `this` is known at all."""
    for ancestor in node.ancestors():
        kind = ancestor.kind()
        if kind in ("method_definition", "public_field_definition", "field_definition"):
            owner = ancestor.parent()
            if owner is not None and owner.kind() == "class_body":
                return owner.parent(), True
            return None, False
        if kind in ("function_declaration", "function_expression", "function", "generator_function",
                    "generator_function_declaration"):
            return None, False
        if kind in CLASSES:
            return ancestor, True
    return None, False


def _class_name(node: SgNode | None) -> str | None:
    name = node.field("name") if node is not None else None
    return name.text() if name is not None else None


def _derives(node: SgNode | None) -> bool:
    """Whether a class or interface extends or implements another (so may hold the member for it)."""
    if node is None:
        return True
    return any(child.kind() in ("class_heritage", "extends_type_clause", "extends_clause", "implements_clause")
               for child in node.children())


def _from(binding: _Binding, resolver: Resolver, file: str) -> int:
    """How surely an import binding reaches the module-level target in `file`."""
    module = imported_module(resolver.shown, binding.source or "")
    if module is not None and module == module_of(file) and binding.same_name:
        return SCOPED
    return NAME


class Target:
    """A definition asked about: its file, the class, interface or enum it is a member of (or the object a method
    is assigned to: `Foo.prototype.bar = ...`; ANYWHERE: a definition the workspace does not hold), its line."""

    def __init__(self, file: str, owner: str | None, line: int) -> None:
        self.file = file
        self.owner = owner
        self.line = line


ANYWHERE = "*"
"""The owner of the target that stands for a definition the workspace does not hold (`Target.anywhere`)."""


def label(resolver: Resolver, node: SgNode, role: str, detail: Any, target: Target) -> int:
    """How surely one use reaches one target."""
    if target.owner == ANYWHERE:
        return _anywhere(resolver, node, role, detail)
    here = module_of(target.file) == resolver.module
    if target.owner is None:
        return _module_level(resolver, node, role, detail, target, here)
    return _member(resolver, node, role, detail, target, here)


def _anywhere(resolver: Resolver, node: SgNode, role: str, detail: Any) -> int:
    """A definition of the name somewhere the workspace does not show (a package's, a global, one the outline does
    not list): whatever the name is bound to locally cannot be it; anything else may."""
    if role == "binding" and detail.kind == "local" and node.parent().kind() in (  # type: ignore[union-attr]
            "function_expression", "function", "generator_function", "class"):
        return NAME  # `defineGetter(req, 'host', function host() {...})`: a definition, maybe the one asked about
    if role in ("binding", "reference"):
        binding = detail if role == "binding" else resolver.binding_of(node)
        if binding is not None and binding.kind == "local":
            return OUT
    return NAME


def _module_level(resolver: Resolver, node: SgNode, role: str, detail: Any, target: Target, here: bool) -> int:
    if role in ("member", "alias"):
        return OUT
    if role == "export":
        module = imported_module(resolver.shown, detail or "")
        return SCOPED if module is not None and module == module_of(target.file) else NAME
    if role == "access":
        if here and detail is not None and detail.text() in ("exports", "module.exports"):
            return SCOPED  # `exports.name = ...`: the definition, in CommonJS
        return _through_module(resolver, detail, target)
    if role == "destructured":  # `{ name } = value`: only a module object's (`{ name } = ns`) may be the target
        return _through_module(resolver, detail, target) if detail is not None and detail.kind() == "identifier" else OUT
    binding = detail if role == "binding" else resolver.binding_of(node)
    if binding is None:
        return NAME  # a global (a script's, CommonJS `exports.name`'s, an ambient declaration's)
    if binding.kind == "local":
        return OUT
    if binding.kind == "module":
        return SCOPED if here else OUT
    if binding.kind == "namespace":
        return OUT
    return _from(binding, resolver, target.file) if binding.same_name else OUT  # an import, or a default one


def _through_module(resolver: Resolver, obj: SgNode | None, target: Target) -> int:
    """`obj.name` for a module-level target: reached only through a module object (`import * as ns`,
    `require`), or a global that may be one (`exports`, `module.exports`, a script's global)."""
    if obj is None:
        return OUT
    if obj.kind() == "member_expression" and obj.text() == "module.exports":
        return NAME
    source = _required(obj)
    if source is None:
        if obj.kind() != "identifier":
            return OUT
        binding = resolver.binding_of_object(obj)
        if binding is None:
            return NAME
        if binding.kind not in ("namespace", "default"):
            return OUT
        source = binding.source
    module = imported_module(resolver.shown, source or "")
    return SCOPED if module is not None and module == module_of(target.file) else NAME


def _member(resolver: Resolver, node: SgNode, role: str, detail: Any, target: Target, here: bool) -> int:
    if role == "member":
        owner = detail
        held = MEMBER_OWNERS.get(owner.kind()) if owner is not None else None
        if held in ("class", "interface", "enum"):
            holder = owner.parent()
            if _class_name(holder) == target.owner:
                return SCOPED if here else NAME
            return NAME if held != "enum" and _derives(holder) else OUT
        return NAME  # an object literal's key or a type literal's member: maybe an object of the target's type
    if role == "destructured":
        return NAME  # `{ name } = obj`: a read of obj's member
    if role != "access":
        return OUT  # a bare name: never a member in JavaScript
    obj = detail
    if obj is None:
        return NAME
    if obj.kind() in ("this", "super"):
        around, known = _class_around(node)
        if not known:
            return NAME
        if obj.kind() == "this" and here and _class_name(around) == target.owner:
            return SCOPED
        return NAME if _derives(around) or _class_name(around) == target.owner else OUT
    if obj.kind() == "identifier" and obj.text() == target.owner:
        binding = resolver.binding_of_object(obj)
        if binding is None:
            return SCOPED if here else NAME
        if binding.kind == "module":
            return SCOPED if here else OUT
        return _from(binding, resolver, target.file) if binding.kind in ("import", "default") else NAME
    return NAME


def scoped_uses(root: SgNode, nodes: list[SgNode], name: str, shown: str, targets: list[list[Any]]) -> dict[str, Any]:
    """The uses among `nodes` (the identifiers of the file whose text is `name`) that may reach one of `targets`
    ([file, owner or None, definition line]), each [line, column, label, definition], and how many cannot."""
    resolver = Resolver(root, shown, name, nodes)
    chosen = [Target(*item) for item in targets]
    uses: list[list[Any]] = []
    excluded = 0
    marked: set[int] = set()
    for node, role, detail in resolver.roles:
        best = max((label(resolver, node, role, detail, target) for target in chosen), default=NAME)
        if best == OUT:
            excluded += 1
            continue
        start = node.range().start
        definition = best == SCOPED and start.line not in marked and role in ("binding", "member") and any(
            module_of(target.file) == resolver.module and target.line == start.line + 1 for target in chosen)
        if definition:
            marked.add(start.line)
        uses.append([start.line, start.column, "scoped" if best == SCOPED else "name", definition])
    return {"uses": uses, "excluded": excluded}
