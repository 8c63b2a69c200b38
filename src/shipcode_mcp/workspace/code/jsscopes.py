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
  or key for a module-level target; a member of an unrelated class; a JSX tag or a statement label.

Types and values are two spaces, as in TypeScript (a parameter `Node` does not hide the interface `Node` from a
type annotation). A bare query (`parse`) adds the ANYWHERE target, a definition the outline does not list (a field
set in a constructor, an object literal's method, a package's): for it only what is bound locally is left out.

The same bindings answer find_definition (jsdefinitions.py): `definition_at` says where the name at a place is
bound (here, a member of a class here, or another module's export), `definitions_in_module` where a module
declares an export or which modules it takes it from.

Runs in the parse worker (worker.py), on the tree-sitter tree, like every parse of hostile text.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

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


VALUE, TYPE = "value", "type"
"""TypeScript's two spaces of names: a parameter `Node` does not hide the interface `Node` from a type annotation."""
BOTH = (VALUE, TYPE)
_SPACES = {"interface_declaration": (TYPE,), "type_alias_declaration": (TYPE,), "class_declaration": BOTH,
           "abstract_class_declaration": BOTH, "enum_declaration": BOTH, "ambient_declaration": BOTH}
"""The spaces a declaration's name binds in (VALUE if not listed)."""
JSX_TAGS = frozenset({"jsx_opening_element", "jsx_closing_element", "jsx_self_closing_element"})
BINDING_PARENTS = DECLARATIONS | PATTERNS | {
    "variable_declarator", "import_specifier", "namespace_import", "import_clause", "import_require_clause",
    "arrow_function", "catch_clause", "for_in_statement", "function_expression", "function", "generator_function",
    "class", "type_parameter"}
"""The parents of an identifier that may bind it: the only occurrences of an object's name `binding_of_object` reads."""
MODIFIERS = frozenset({"accessibility_modifier", "readonly", "override_modifier"})
"""A constructor parameter with one of these is a member of the class (a parameter property), not a local."""


class _Binding:
    """How a name is bound: kind "local", "module" (a module-level definition), "import" (a named import, a
    destructured require or `require(m).name`: `source`, and whether it imports the name itself), "namespace" (`import
    * as`: a module object) or "default" (a default import, `require(m)`: a module's default export, in CommonJS its
    `module.exports`, which is a module object or the one thing it exports)."""

    def __init__(self, kind: str, source: str | None = None, same_name: bool = True, export: str | None = None) -> None:
        self.kind = kind
        self.source = source
        self.same_name = same_name
        self.export = export  # an import's: the name the module exports it as (None: the name itself)
        self.es = False  # a default import of an ES module (`import d from`), not CommonJS's `require`: d.x is d's own
        self.at: tuple[int, int] | None = None  # (0-based line, column) of the name where it is bound


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


def _pattern_owner(pattern: SgNode) -> tuple[str, SgNode | None]:
    """What a destructuring pattern belongs to, through the patterns around it: ("declarator", the declarator),
    ("parameter", the function), ("catch", the clause), ("loop", the for statement) or ("assignment", None)."""
    child, parent = pattern, pattern.parent()
    while parent is not None and parent.kind() in PATTERNS:
        if parent.kind() == "formal_parameters":
            return "parameter", parent.parent()
        child, parent = parent, parent.parent()
    if parent is None:
        return "assignment", None
    kind = parent.kind()
    if kind == "variable_declarator" and _same(parent.field("name"), child):
        return "declarator", parent
    if kind == "arrow_function" and _same(parent.field("parameter"), child):
        return "parameter", parent
    if kind == "catch_clause":
        return "catch", parent
    if kind == "for_in_statement" and parent.field("kind") is not None and _same(parent.field("left"), child):
        return "loop", parent
    return "assignment", None


class Resolver:
    """The bindings of one name in one file, and the scope each binds in; `others` are the file's resolvers of
    other names (objects of member accesses), made once each, from `index`: the file's identifiers by name."""

    def __init__(self, root: SgNode, shown: str, name: str, nodes: list[SgNode],
                 others: dict[str, Resolver] | None = None, index: dict[str, list[SgNode]] | None = None) -> None:
        self.root = root
        self.shown = shown
        self.module = module_of(shown)
        self.name = name
        self.bindings: dict[tuple[tuple[str, int, int], str], _Binding] = {}
        self.roles: list[tuple[SgNode, str, Any]] = []  # each use: (node, role, detail)
        self._others: dict[str, Resolver] = {} if others is None else others
        self._others.setdefault(name, self)  # (before the roles: `const { a } = b; const { b } = a` ends)
        self._index: dict[str, list[SgNode]] = {} if index is None else index  # (filled at its first use)
        for node in nodes:
            role, detail = self._role(node)
            self.roles.append((node, role, detail))
            bound = detail if role == "binding" else detail[0] if role == "destructured" else None
            if bound is not None and bound.at is None:
                start = node.range().start
                bound.at = (start.line, start.column)

    def _scope_of(self, node: SgNode, var: bool) -> SgNode | None:
        """The nearest scope around `node` that a declaration there binds in; a `var`'s is its function's body (not
        the function: its parameters' defaults do not see it)."""
        kinds = FUNCTIONS | {"program", "internal_module", "module"} if var else BLOCKS | {"internal_module", "module"}
        for ancestor in node.ancestors():
            if ancestor.kind() in kinds:
                body = ancestor.field("body") if var and ancestor.kind() in FUNCTIONS else None
                return body if body is not None and body.kind() == "statement_block" else ancestor
        return None

    def _declared(self, declarator: SgNode) -> SgNode | None:
        """The scope a declarator's names bind in (`var`, `let`, `const`)."""
        statement = declarator.parent()
        return self._scope_of(declarator, statement is not None and statement.kind() == "variable_declaration")

    def _bind(self, scope: SgNode | None, binding: _Binding, spaces: tuple[str, ...] = (VALUE,)) -> _Binding:
        if scope is not None:
            for space in spaces:
                self.bindings.setdefault((_key(scope), space), binding)
        return binding

    def _local(self, scope: SgNode | None, spaces: tuple[str, ...] = (VALUE,)) -> _Binding:
        """A declaration's binding: of the module at the top level, else local."""
        return self._bind(scope, _Binding("module" if scope is not None and scope.kind() == "program" else "local"),
                          spaces)

    def _role(self, node: SgNode) -> tuple[str, Any]:
        """What one occurrence is: ("member", the body holding it) for a member's or key's definition; ("access",
        the object) for `obj.name`; ("binding", the binding) where it binds the name; ("destructured", (binding,
        value)) where a destructuring binds it; ("export", the module) where it names a module's export without
        binding it; ("alias", None) where it binds another export under this name; ("shorthand", None) for `{ name }`
        (a variable and a key); ("key", None) for a JSX attribute; ("label", None) for what is no name of a symbol (a
        statement label, an HTML tag in JSX); ("reference", None) elsewhere."""
        parent = node.parent()
        if parent is None:
            return "reference", None
        kind, parent_kind = node.kind(), parent.kind()
        if kind == "statement_identifier" or (parent_kind in JSX_TAGS and kind == "identifier" and node.text()[:1].islower()):
            return "label", None
        if kind in ("property_identifier", "private_property_identifier"):
            if parent_kind == "member_expression":
                return "access", parent.field("object")
            if parent_kind == "jsx_attribute":
                return "key", None
            if parent_kind in MEMBER_DEFINITIONS:
                if parent_kind in ("pair", "pair_pattern") and not _same(parent.field("key"), node):
                    return "reference", None
                if parent_kind == "pair_pattern":
                    owner, declarator = _pattern_owner(parent.parent())  # type: ignore[arg-type]
                    source = self._module_source(declarator.field("value")) if declarator is not None and \
                        owner == "declarator" else None
                    if source is not None:
                        return "export", source  # `const { name: other } = require(...)`: a use of the module's name
                return "member", parent.parent()
            if parent_kind == "enum_body":
                return "member", parent
            return "reference", None
        if kind == "shorthand_property_identifier_pattern":
            pattern = parent.parent() if parent_kind == "object_assignment_pattern" else parent
            return self._destructured(pattern) if pattern is not None else ("reference", None)
        if kind == "shorthand_property_identifier":
            return "shorthand", None
        if parent_kind in ("nested_type_identifier", "nested_identifier") and not _same(parent.child(0), node):
            return "access", parent.child(0)
        if parent_kind in ("required_parameter", "optional_parameter") and \
                any(child.kind() in MODIFIERS for child in parent.children()):
            body = next((item for item in parent.ancestors() if item.kind() == "class_body"), None)
            return "member", body  # `constructor(private name: T)`: a member of the class
        return self._identifier(node, parent, parent_kind)

    def _module_source(self, value: SgNode | None) -> str | None:
        """The module `value` is, if it is one: `require(m)`, or a name bound to a module object (`import * as`, a
        default import or require); "" for a name imported from another module (which may export a module object:
        `export * as ns`); else None."""
        source = _required(value)
        if source is not None or value is None or value.kind() != "identifier":
            return source
        binding = self.binding_of_object(value)
        if binding is None or binding.kind not in ("namespace", "default", "import"):
            return None
        return binding.source or "" if binding.kind != "import" else ""

    def _destructured(self, pattern: SgNode) -> tuple[str, Any]:
        """`{ name } = value`: a binding of an import when the value is a module (`require(...)`, a namespace);
        else a new name (and a read of the value's member); in an assignment `({ name } = value)`, no binding."""
        owner, at = _pattern_owner(pattern)
        if owner == "assignment":
            return "shorthand", None
        if owner == "declarator" and at is not None:
            value = at.field("value")
            source = self._module_source(value)
            if source is not None:
                return "binding", self._bind(self._declared(at), _Binding("import", source))
            return "destructured", (self._local(self._declared(at)), value)
        declared = at.field("kind") if owner == "loop" and at is not None else None
        scope = self._scope_of(at, True) if at is not None and declared is not None and declared.text() == "var" else at
        return "destructured", (self._bind(scope, _Binding("local")), None)

    def _identifier(self, node: SgNode, parent: SgNode, parent_kind: str) -> tuple[str, Any]:
        if parent_kind in DECLARATIONS and _same(parent.field("name"), node):
            return "binding", self._local(self._scope_of(parent, False), _SPACES.get(parent_kind, (VALUE,)))
        if parent_kind in ("function_expression", "function", "generator_function", "class") and \
                _same(parent.field("name"), node):
            return "binding", self._bind(parent, _Binding("local"), BOTH if parent_kind == "class" else (VALUE,))
        if parent_kind == "variable_declarator" and _same(parent.field("name"), node):
            scope = self._declared(parent)
            value = parent.field("value")
            source = _required(value)
            exported = value.field("property") if value is not None and value.kind() == "member_expression" else None
            if source is not None:
                return "binding", self._bind(scope, _Binding("default", source))
            module = _required(value.field("object")) if exported is not None else None  # type: ignore[union-attr]
            if exported is not None and module is not None:  # `var name = require(m).name` (or `.default`)
                export = exported.text()
                return "binding", self._bind(scope, _Binding("default" if export == "default" else "import", module,
                                                             same_name=export in (self.name, "default"), export=export))
            return "binding", self._local(scope)
        if parent_kind == "import_specifier":
            imported, alias = parent.field("name"), parent.field("alias")
            statement = next((item for item in parent.ancestors() if item.kind() == "import_statement"), None)
            source = _string(statement.field("source")) if statement is not None else None
            scope = self._scope_of(parent, False)
            if alias is not None and _same(alias, node):  # `import { other as name }`: the name only if other is it
                export = imported.text() if imported is not None else ""
                binding = _Binding("default" if export == "default" else "import", source,
                                   same_name=export in (self.name, "default"), export=export)
                binding.es = True
                return "binding", self._bind(scope, binding, BOTH)
            if alias is not None:
                return "export", source  # `import { name as other }`: a use of the module's name, bound as other
            return "binding", self._bind(scope, _Binding("import", source), BOTH)
        if parent_kind in ("namespace_import", "import_clause", "import_require_clause"):
            statement = next((item for item in parent.ancestors() if item.kind() == "import_statement"), None)
            source = _string(statement.field("source")) if statement is not None else None
            if parent_kind == "import_require_clause":
                source = _string(parent.field("source"))
            binding = _Binding("namespace" if parent_kind == "namespace_import" else "default", source)
            binding.es = parent_kind == "import_clause"
            return "binding", self._bind(self._scope_of(parent, False), binding, BOTH)
        if parent_kind == "export_specifier":
            alias = parent.field("alias")
            if alias is not None and _same(alias, node):
                return "alias", None
            statement = parent.parent().parent() if parent.parent() is not None else None  # type: ignore[union-attr]
            source = _string(statement.field("source")) if statement is not None else None
            return ("export", source) if source is not None else ("reference", None)
        bound = self._parameter_scope(node, parent)
        if bound is not None:
            scope, space = bound
            return "binding", self._local(scope, (space,)) if scope.kind() == "program" else \
                self._bind(scope, _Binding("local"), (space,))
        return "reference", None

    def _parameter_scope(self, node: SgNode, parent: SgNode) -> tuple[SgNode, str] | None:
        """The scope (and space) a parameter, catch or loop variable, type parameter, or a name in a declaration's
        destructuring binds in; None if `node` is none of them."""
        kind = parent.kind()
        if kind == "arrow_function" and _same(parent.field("parameter"), node):
            return parent, VALUE
        if kind == "type_parameter" and _same(parent.field("name"), node):
            owner = parent.parent()
            scope = owner.parent() if owner is not None else None
            return (scope, TYPE) if scope is not None else None
        if kind == "catch_clause" and _same(parent.field("parameter"), node):
            return parent, VALUE
        if kind == "for_in_statement" and _same(parent.field("left"), node):
            declared = parent.field("kind")
            if declared is None:
                return None
            scope = self._scope_of(parent, True) if declared.text() == "var" else parent
            return (scope, VALUE) if scope is not None else None
        if kind == "pair_pattern" and not _same(parent.field("value"), node):
            return None
        if kind in ("assignment_pattern", "object_assignment_pattern") and not _same(parent.field("left"), node):
            return None
        if kind in ("required_parameter", "optional_parameter") and not _same(parent.field("pattern"), node):
            return None
        if kind not in PATTERNS:
            return None
        context, at = _pattern_owner(node)
        if at is None:
            return None
        if context == "declarator":
            scope = self._declared(at)
        elif context == "loop":
            declared = at.field("kind")
            scope = self._scope_of(at, True) if declared is not None and declared.text() == "var" else at
        else:
            scope = at
        return (scope, VALUE) if scope is not None else None

    def binding_of(self, node: SgNode) -> _Binding | None:
        """The binding of the name that `node` (a use of it) sees, None for a global."""
        space = TYPE if node.kind() == "type_identifier" else VALUE
        for ancestor in node.ancestors():
            binding = self.bindings.get((_key(ancestor), space))
            if binding is not None:
                return binding
        return None

    def binding_of_object(self, node: SgNode) -> _Binding | None:
        """The binding an identifier naming an object (`obj` of `obj.name`) sees, None for a global: its own
        name's bindings are found once a file, from the file's identifiers read once (`_index`)."""
        name = node.text()
        other = self._others.get(name)
        if other is None:
            if not self._index:
                self._index[""] = []  # (read: a file without bindings is not read again)
                for found in self.root.find_all(kind="identifier"):
                    parent = found.parent()
                    if parent is not None and parent.kind() in BINDING_PARENTS:
                        self._index.setdefault(found.text(), []).append(found)
            other = Resolver(self.root, self.shown, name, self._index.get(name, []), self._others, self._index)
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


def _from(binding: _Binding, resolver: Resolver, target: Target, default: bool | None = None) -> int:
    """How surely an import binding reaches the target's module-level definition (a default import only the module's
    default export, unless `default` says whether that is the one meant)."""
    module = imported_module(resolver.shown, binding.source or "")
    if module is None or module != module_of(target.file) or not binding.same_name:
        return NAME
    if binding.kind == "default" and not (target.default if default is None else default):
        return NAME  # `const parse = require("./parse")` where parse.js sets exports.parse: the module object
    return SCOPED


class Target:
    """A definition asked about: its file, the class, interface or enum it is a member of (or the object a method
    is assigned to: `Foo.prototype.bar = ...`; ANYWHERE: a definition the workspace does not hold), its line, and
    whether it is its file's default export."""

    def __init__(self, file: str, owner: str | None, line: int, default: bool) -> None:
        self.file = file
        self.owner = owner
        self.line = line
        self.default = default  # the file's default export (`export default`, `module.exports =`)


ANYWHERE = "*"
"""The owner of the target that stands for a definition the workspace does not hold (`Target.anywhere`)."""


def label(resolver: Resolver, node: SgNode, role: str, detail: Any, target: Target) -> int:
    """How surely one use reaches one target."""
    if target.owner == ANYWHERE:
        return _anywhere(resolver, node, role, detail)
    here = target.file == resolver.shown
    if target.owner is None:
        return _module_level(resolver, node, role, detail, target, here)
    return _member(resolver, node, role, detail, target, here)


def _anywhere(resolver: Resolver, node: SgNode, role: str, detail: Any) -> int:
    """A definition of the name somewhere the workspace does not show (a package's, a global, one the outline does
    not list): whatever the name is bound to locally cannot be it; anything else may."""
    if role == "label":
        return OUT
    if role == "binding" and detail.kind == "local" and node.parent().kind() in (  # type: ignore[union-attr]
            "function_expression", "function", "generator_function", "class"):
        return NAME  # `defineGetter(req, 'host', function host() {...})`: a definition, maybe the one asked about
    if role in ("binding", "reference"):
        binding = detail if role == "binding" else resolver.binding_of(node)
        if binding is not None and binding.kind == "local":
            return OUT
    return NAME


def _module_level(resolver: Resolver, node: SgNode, role: str, detail: Any, target: Target, here: bool) -> int:
    if role in ("member", "alias", "key", "label"):
        return OUT
    if role == "export":
        module = imported_module(resolver.shown, detail or "")
        return SCOPED if module is not None and module == module_of(target.file) else NAME
    if role == "access":
        if here and detail is not None and detail.text() in ("exports", "module.exports"):
            return SCOPED  # `exports.name = ...`: the definition, in CommonJS
        return _through_module(resolver, detail, target)
    if role == "destructured":  # a new name (a module object's is an import: Resolver._destructured)
        return SCOPED if detail[0].kind == "module" and here else OUT
    binding = detail if role == "binding" else resolver.binding_of(node)  # (a reference, or `{ name }`'s variable)
    if binding is None:
        return NAME  # a global (a script's, CommonJS `exports.name`'s, an ambient declaration's)
    if binding.kind == "local":
        return OUT
    if binding.kind == "module":
        return SCOPED if here else OUT
    if binding.kind == "namespace":  # `import * as name`: the module object, which `export =` may make the target
        return OUT if _from(binding, resolver, target, True) != SCOPED else NAME
    return _from(binding, resolver, target) if binding.same_name else OUT  # an import, or a default one


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
        if binding is None or binding.kind == "import" or (binding.kind == "default" and binding.es):
            return NAME  # a global, a name imported from a module that may export a module object (`export * as`), an
            # ES module's default export (a class whose static member this may be)
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
    if role in ("destructured", "shorthand", "key"):
        return NAME  # `{ name } = obj`: a read of obj's member; `{ name }`, `<C name="x">`: maybe an object of its type
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
    if obj.kind() == "member_expression" and obj.text() == f"{target.owner}.prototype":
        return SCOPED if here else NAME  # `Foo.prototype.name = function ...`: the definition
    if obj.kind() == "identifier" and obj.text() == target.owner:
        binding = resolver.binding_of_object(obj)
        if binding is None:
            return SCOPED if here else NAME
        if binding.kind == "module":
            return SCOPED if here else OUT
        return _from(binding, resolver, target, True) if binding.kind in ("import", "default") else NAME
    return NAME


def scoped_uses(root: SgNode, nodes: list[SgNode], name: str, shown: str, targets: list[list[Any]]) -> dict[str, Any]:
    """The uses among `nodes` (the identifiers of the file whose text is `name`) that may reach one of `targets`
    ([file, owner or None, definition line, default export]), each [line, column, label, definition], and how many cannot."""
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
        definition = best == SCOPED and start.line not in marked and role in ("binding", "member", "destructured",
                                                                               "access") and any(
            target.file == resolver.shown and target.line == start.line + 1 for target in chosen)
        if definition:
            marked.add(start.line)
        uses.append([start.line, start.column, "scoped" if best == SCOPED else "name", definition])
    return {"uses": uses, "excluded": excluded}


# -- find_definition: where the name at a place is defined --------------------------------------------------------
def definition_at(root: SgNode, nodes: list[SgNode], name: str, shown: str, line: int, column: int) -> dict[str, Any] | None:
    """Where the occurrence of `name` at `line`, `column` (0-based) is defined, as far as this file tells: {"places":
    [[line, column], ...]} (1-based) in this file, {"member": class} (a member of this file's class), {"module":
    source, "name": export or None for the module itself} (another module's export), {"unknown": True} where the
    scopes cannot say (an object of unknown type, a global); None where no name is there (a comment, a string)."""
    resolver = Resolver(root, shown, name, nodes)
    for node, role, detail in resolver.roles:
        start = node.range().start
        if (start.line, start.column) == (line, column):
            return _definition(resolver, node, role, detail) or {"unknown": True}
    return None


def _place(at: tuple[int, int] | None) -> dict[str, Any] | None:
    return {"places": [[at[0] + 1, at[1] + 1]]} if at is not None else None


def _imported(binding: _Binding, name: str) -> dict[str, Any] | None:
    if binding.kind == "namespace":
        return _place(binding.at)  # `import * as ns`: ns is defined there, as TypeScript's server says
    if binding.source is None:
        return None
    if binding.kind == "default":
        return {"module": binding.source, "name": "default"}
    return {"module": binding.source, "name": binding.export or name}


def _definition(resolver: Resolver, node: SgNode, role: str, detail: Any) -> dict[str, Any] | None:
    start = node.range().start
    if role in ("member", "alias"):
        return {"places": [[start.line + 1, start.column + 1]]}  # a definition itself
    if role == "export":
        return {"module": detail, "name": resolver.name} if detail is not None else None
    if role == "access":
        obj = detail
        if obj is None:
            return None
        if obj.kind() == "this":
            around, known = _class_around(node)
            name = _class_name(around) if known else None
            return {"member": name} if name is not None else None
        if obj.kind() != "identifier":
            return None
        binding = resolver.binding_of_object(obj)
        if binding is None:
            return None
        if binding.kind == "namespace" or (binding.kind == "default" and not binding.es):
            return {"module": binding.source, "name": resolver.name} if binding.source is not None else None
        return {"member": obj.text()} if binding.kind == "module" else None
    if role in ("binding", "destructured"):
        binding = detail if role == "binding" else detail[0]
        if binding.kind in ("local", "module"):
            return {"places": [[start.line + 1, start.column + 1]]}
        return _imported(binding, resolver.name)
    if role not in ("reference", "shorthand"):
        return None
    binding = resolver.binding_of(node)
    if binding is None:
        return None
    if binding.kind in ("local", "module"):
        return _place(binding.at)
    return _imported(binding, resolver.name)


def definitions_in_module(root: SgNode, find: Callable[[str], list[SgNode]], name: str, shown: str, depth: int = 0,
                          ) -> list[dict[str, Any]]:
    """Where a module defines its export `name` ("default": its default export): the declaration it exports so (`export
    function name`, a declaration `export { name }` or `export default name` names, every module-level one in a file
    without `export`: CommonJS, a script) and `exports.name = ...` ({"places": ...}), or the modules it takes it from
    (`export { name } from`, `export { other as name } from`, an import it exports again, `export * from`: {"module":
    source, "name": export}, the star ones last). `find` gives the identifiers of a name (worker.named)."""
    onward: list[dict[str, Any]] = []
    for specifier in root.find_all(kind="export_specifier"):
        original, alias = specifier.field("name"), specifier.field("alias")
        if original is None or (alias or original).text() != name or (alias is None and name != "default"):
            continue  # (a plain `export { name }` is the roles' below)
        clause = specifier.parent()
        statement = clause.parent() if clause is not None else None
        source = _string(statement.field("source")) if statement is not None else None
        if source is not None:
            onward.append({"module": source, "name": original.text()})
        elif original.text() != name and depth < MAX_ALIASES:
            return definitions_in_module(root, find, original.text(), shown, depth + 1)  # `export { local as name }`
    if name == "default":
        local, declared = default_export(root)
        if declared:
            return [{"places": declared}]
        if local is not None and depth < MAX_ALIASES:
            return definitions_in_module(root, find, local, shown, depth + 1)
        return onward
    resolver = Resolver(root, shown, name, find(name))
    es_module = root.find(kind="export_statement") is not None
    places: list[list[int]] = []
    for node, role, detail in resolver.roles:
        start = node.range().start
        binding = detail if role == "binding" else detail[0] if role == "destructured" else None
        if binding is not None and binding.kind == "module":
            if not es_module or _exported(resolver, binding) or any(
                    ancestor.kind() == "export_statement" for ancestor in node.ancestors()):
                places.append([start.line + 1, start.column + 1])
        elif binding is not None and binding.kind in ("import", "default", "namespace") and _exported(resolver, binding):
            more = _imported(binding, name)
            if more is not None:
                onward.append(more)
        elif role == "export" and detail is not None:
            onward.append({"module": detail, "name": name})
        elif role == "access" and detail is not None and detail.text() in ("exports", "module.exports") and \
                _assigned(node):
            places.append([start.line + 1, start.column + 1])
    for statement in root.find_all(kind="export_statement"):
        source = _string(statement.field("source"))
        if source is not None and any(child.kind() == "*" for child in statement.children()) and \
                not any(child.kind() == "namespace_export" for child in statement.children()):
            onward.append({"module": source, "name": name, "star": True})
    return [{"places": places}] if places else onward


MAX_ALIASES = 4
"""How many `export { a as b }` within one module are followed (a as b, b as c, ...)."""


def _assigned(node: SgNode) -> bool:
    """Whether `exports.name` (node: name) is assigned to, not read."""
    member = node.parent()
    assignment = member.parent() if member is not None else None
    return member is not None and assignment is not None and assignment.kind() == "assignment_expression" and \
        _same(assignment.field("left"), member)


def _exported(resolver: Resolver, binding: _Binding) -> bool:
    """Whether an import's name is exported again by the module (`export { name }`, `export default name`)."""
    return any(role == "reference" and resolver.binding_of(node) is binding and node.parent() is not None and
               node.parent().kind() in ("export_specifier", "export_statement")  # type: ignore[union-attr]
               for node, role, _ in resolver.roles)


def default_export(root: SgNode) -> tuple[str | None, list[list[int]]]:
    """A module's default export: the name it exports by default (`export default name`, `module.exports = name`,
    `export = name`) to look up, or the places of what it declares so (`export default function f`, `export default
    class`, an expression)."""
    for statement in root.find_all(kind="export_statement"):
        if not any(child.kind() == "default" for child in statement.children()) and \
                not any(child.text() == "=" for child in statement.children()):
            continue
        value = statement.field("declaration") or statement.field("value")
        if value is None:
            named = [child for child in statement.named_children() if child.kind() not in ("comment", "decorator")]
            value = named[0] if named else None
        if value is not None and value.kind() == "identifier":
            return value.text(), []
        target = value.field("name") if value is not None else None
        spot = (target or value or statement).range().start
        return None, [[spot.line + 1, spot.column + 1]]
    for assignment in root.find_all(kind="assignment_expression"):
        left, right = assignment.field("left"), assignment.field("right")
        if left is not None and left.text() == "module.exports" and right is not None:
            if right.kind() == "identifier":
                return right.text(), []
            spot = right.range().start
            return None, [[spot.line + 1, spot.column + 1]]
    return None, []
