"""What a definition is in each language: tree-sitter node kinds, the symbol kind each makes, its name.

One `Language` a language: `defs` maps a node kind to a `Def`; `rule` is the ast-grep rule that finds
them all in one pass in native code (the outline never walks the tree from Python, which would cost
a call per node). Extra constraints (only top-level assignments, only structs with a body) go into
the rule, so that the nodes which do not qualify never cross into Python.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ast_grep_py import SgNode

NameOf = Callable[["SgNode"], "str | None"]
NamesOf = Callable[["SgNode"], "str | tuple[str, ...] | None"]
"""A definition's name, or the names it binds (`a = b = 1`, `const { a, b } = x`), the first holding
what nests inside."""
KindOf = Callable[["SgNode"], str]
MembersOf = Callable[["SgNode", "list[SgNode]"], "list[SgNode]"]


@dataclass(frozen=True)
class Def:
    """A node kind that defines a symbol."""

    kind: str | KindOf
    name: str | NamesOf = "name"
    """A field holding the name, or a function giving it; a dotted or `::` name is qualified."""
    body: str | Callable[[SgNode], SgNode | None] | None = "body"
    """The field where the signature ends (the header is everything before it), or a function giving
    that node."""
    rule: dict[str, Any] | None = None
    """Further constraints on the node (an ast-grep rule), such as where it must be."""
    holds_methods: bool | None = None
    """Whether functions inside are methods; by default, when the kind is a class-like one."""
    header: str = ""
    """Words the signature starts with that the node leaves out (Go's `type` before a type_spec)."""
    header_from_parent: bool = False
    """The signature starts at the parent node (a declarator's `const` declaration)."""
    by_members: bool = False
    """Found by the language's `members` function, not by the native search."""
    overload: bool = False
    """An overload signature (TypeScript): the same name's implementation right after it is one symbol with
    it, starting at the first signature, so that the outline lists the method once and reading it shows
    every signature."""


@dataclass(frozen=True)
class Language:
    defs: dict[str, Def]
    wrappers: frozenset[str] = frozenset()
    """Nodes around a definition that belong to it (Python's decorated_definition, JS's export)."""
    leading: frozenset[str] = frozenset()
    """Siblings right above a definition that belong to it: doc comments, attributes, decorators."""
    constructors: frozenset[str] = frozenset()
    """Method names that are constructors."""
    class_constructors: bool = False
    """A method named as its class is a constructor (C++, Java's are found by node kind)."""
    trim_comments: str | None = None
    """A line comment marker: trailing comment lines are not part of a definition's end (Python)."""
    members: MembersOf | None = None
    """More definition nodes, found from the root and the nodes the rule found, by looking at a few
    children instead of a rule with `inside` (which costs the native search about as much again as
    the search itself: it no longer skips nodes by kind). Their defs are in `defs`, marked by_members."""
    _rules: dict[str, dict[str, Any]] = field(default_factory=dict, init=False, compare=False)

    def rule(self, language: str, root: SgNode) -> dict[str, Any]:
        """The ast-grep rule finding every definition, made once a language: kinds this version of the
        grammar does not have (grammars rename nodes between versions) are left out, not an error."""
        rule = self._rules.get(language)
        if rule is None:
            rules = []
            for kind, spec in self.defs.items():
                if spec.by_members:
                    continue
                try:
                    root.find(kind=kind, **(spec.rule or {}))  # the kinds the constraints name, too
                except RuntimeError:
                    continue
                rules.append({"kind": kind, **(spec.rule or {})})
            rule = self._rules[language] = {"any": rules}
        return rule


CLASS_LIKE = frozenset({"class", "interface", "struct", "enum", "trait"})


# -- name helpers -------------------------------------------------------------------------------------
def _text(node: SgNode | None) -> str | None:
    return node.text() if node is not None else None


def _own_text(node: SgNode) -> str | None:
    """The node is the name (a TypeScript enum member without a value)."""
    return node.text()


def _child_of(*kinds: str) -> NameOf:
    """The text of the first child of one of `kinds` (grammars without a name field)."""
    def name(node: SgNode) -> str | None:
        for child in node.children():
            if child.kind() in kinds:
                return child.text()
        return None
    return name


def _path(*fields: str) -> NameOf:
    """The text at the end of a chain of fields."""
    def name(node: SgNode) -> str | None:
        current: SgNode | None = node
        for step in fields:
            current = current.field(step) if current is not None else None
        return _text(current)
    return name


def _identifier(node: SgNode | None) -> str | None:
    """A name that is a plain identifier (not a pattern, a subscript or an attribute)."""
    if node is None or node.kind() not in ("identifier", "constant", "variable_name", "simple_identifier"):
        return None
    return node.text()


_C_DECLARATORS = frozenset({"function_declarator", "pointer_declarator", "reference_declarator",
                            "parenthesized_declarator", "array_declarator", "init_declarator",
                            "attributed_declarator"})
_C_NAMES = frozenset({"identifier", "field_identifier", "qualified_identifier", "operator_name", "destructor_name",
                      "template_function", "type_identifier", "operator_cast"})


def _c_inner(node: SgNode) -> SgNode | None:
    """The declarator inside a declarator: its `declarator` field, or (reference_declarator and
    parenthesized_declarator have no field) its first child that is a declarator or a name."""
    inner = node.field("declarator")
    if inner is None:
        for child in node.children():
            if child.kind() in _C_DECLARATORS or child.kind() in _C_NAMES:
                return child
    return inner


def _c_declared(node: SgNode) -> tuple[SgNode | None, bool]:
    """The name node a declaration declares, through its declarators (`*f(int)`, `&operator=(...)`,
    `(*getf(void))(int)`), and whether one of them is a function declarator."""
    current = node.field("declarator")
    function = False
    while current is not None and current.kind() in _C_DECLARATORS:
        function = function or current.kind() == "function_declarator"
        current = _c_inner(current)
    return current, function


_TEMPLATE_ARGUMENTS = re.compile(r"<[^<>]*>")


def _c_name(node: SgNode) -> str | None:
    """A C or C++ declaration's name, qualified with `::` when written so (`Foo<T>::bar` -> `Foo::bar`:
    template arguments are left out of the qualifier, kept in an operator's name: `operator<=>`)."""
    current, _ = _c_declared(node)
    if current is None:
        return None
    text = re.sub(r"\s+", "", current.text())
    if current.kind() != "qualified_identifier":
        return text if text.startswith("operator") else _without_template_arguments(text)
    name_node = current.field("name")
    while name_node is not None and name_node.kind() == "qualified_identifier":
        name_node = name_node.field("name")
    name = re.sub(r"\s+", "", name_node.text()) if name_node is not None else text.rpartition("::")[2]
    scope = text[:len(text) - len(name)].rstrip(":")
    if not name.startswith("operator"):
        name = _without_template_arguments(name)
    return f"{_without_template_arguments(scope)}::{name}" if scope else name


def _without_template_arguments(text: str) -> str:
    while True:
        shorter = _TEMPLATE_ARGUMENTS.sub("", text)
        if shorter == text:
            return text
        text = shorter


def _c_function_declaration(node: SgNode) -> bool:
    return _c_declared(node)[1]


def _constant_case(name: str | None) -> bool:
    """MAX_SIZE, not M (a one-letter name is more often a module table or a loop variable)."""
    return name is not None and len(name) > 1 and name.upper() == name and any(c.isalpha() for c in name)


_GENERIC = re.compile(r"<.*>|\[.*\]", re.DOTALL)


def _type_name(text: str) -> str:
    """`*Rect[T]` -> `Rect`: a receiver or impl type as a name."""
    return _GENERIC.sub("", text).lstrip("*&").replace("mut ", "").strip()


# -- the languages ------------------------------------------------------------------------------------
def _py_assignment_name(node: SgNode) -> str | tuple[str, ...] | None:
    """The names an assignment binds: every target of a chain (`a = b = 1` binds both)."""
    names = []
    current: SgNode | None = node
    while current is not None and current.kind() == "assignment":
        name = _identifier(current.field("left"))
        if name is not None:
            names.append(name)
        current = current.field("right")
    return names[0] if len(names) == 1 else tuple(names) or None


_PY_BRANCHES = frozenset({"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                          "except_group_clause", "finally_clause", "with_statement"})
"""Statements whose blocks run as part of the block they are in: `try: import json except ImportError:
json = None`, `if TYPE_CHECKING:`, `if sys.version_info >= (3, 11): X = ...`, `with open(p) as f: readme =
f.read()` define module names (a loop's do not: they are its state)."""


def _py_assignment_kind(node: SgNode) -> str:
    owner = node.parent()  # the expression_statement
    while owner is not None and owner.kind() in ("expression_statement", "block", *_PY_BRANCHES):
        owner = owner.parent()
    if owner is not None and owner.kind() == "class_definition":
        return "field"
    names = _py_assignment_name(node)
    first = names[0] if isinstance(names, tuple) else names
    return "constant" if _constant_case(first) else "variable"


def _py_assignments(root: SgNode, found: list[SgNode]) -> list[SgNode]:
    """The assignments that are statements of the module or of a class body, or of an `if`, `try` or `with`
    there (not of a function or a loop): the children of those few blocks, rather than every assignment of
    the file."""
    scopes = [root]
    for node in found:
        if node.kind() == "class_definition":
            body = node.field("body")
            if body is not None:
                scopes.append(body)
    out = []
    for scope in scopes:
        for statement in scope.children():
            if statement.kind() in _PY_BRANCHES:
                out += _py_first_bindings(statement)
            else:
                assignment = _py_statement_assignment(statement)
                if assignment is not None:
                    out.append(assignment)
    return out


def _py_statement_assignment(statement: SgNode) -> SgNode | None:
    if statement.kind() != "expression_statement":
        return None
    assignment = statement.child(0)
    return assignment if assignment is not None and assignment.kind() == "assignment" else None


def _py_first_bindings(statement: SgNode) -> list[SgNode]:
    """The assignments in the blocks of an `if`, `try` or `with` (and of those nested in it), without the
    ones that bind only names bound before in it: `TOMLLIB = True` in the `if` and `TOMLLIB = False` in the
    `else` are one name, defined where it first is (the branch that runs when the import works or on newer
    Pythons), as language servers list it."""
    found = []
    blocks = [statement]
    while blocks:
        for child in blocks.pop().children():
            if child.kind() in _PY_BRANCHES or child.kind() == "block":
                blocks.append(child)
            else:
                assignment = _py_statement_assignment(child)
                if assignment is not None:
                    found.append(assignment)
    found.sort(key=lambda node: node.range().start.index)
    seen: set[str] = set()
    first = []
    for node in found:
        names = _py_assignment_name(node)
        bound = {names} if isinstance(names, str) else set(names or ())
        if bound and not bound <= seen:
            first.append(node)
        seen |= bound
    return first


PYTHON = Language(
    defs={
        "class_definition": Def("class"),
        "function_definition": Def("function"),
        "assignment": Def(_py_assignment_kind, _py_assignment_name, body=None, by_members=True),
    },
    wrappers=frozenset({"decorated_definition"}),
    trim_comments="#",
    members=_py_assignments,
)


def _js_declarator_kind(node: SgNode) -> str:
    value = node.field("value")
    while value is not None and value.kind() == "assignment_expression":  # `var proto = module.exports = function`
        value = value.field("right")
    if value is not None and value.kind() in ("arrow_function", "function_expression", "function",
                                              "generator_function"):
        return "function"
    parent = node.parent()
    keyword = parent.child(0) if parent is not None else None
    return "constant" if keyword is not None and keyword.text() == "const" else "variable"


_JS_BINDING = {"object_pattern": None, "array_pattern": None, "rest_pattern": None, "pair_pattern": "value",
               "assignment_pattern": "left", "object_assignment_pattern": "left"}
"""Pattern nodes and the field holding what they bind (None: every child): a key (`b` of `{ b: c }`)
and a default value (`= 1`) bind nothing."""


def _js_declarator_names(node: SgNode) -> str | tuple[str, ...] | None:
    """A declarator's name, or the names its pattern binds: `const { a, b: c, ...d } = x` defines
    a, c and d, `const [e, , f = 1] = y` e and f (not the pattern's text)."""
    target = node.field("name")
    if target is None or target.kind() not in _JS_BINDING:
        return _text(target)
    names: list[str] = []
    stack = [target]
    while stack:
        current = stack.pop()
        kind = current.kind()
        if kind in ("identifier", "shorthand_property_identifier_pattern"):
            names.append(current.text())
        elif kind in _JS_BINDING:
            inner = _JS_BINDING[kind]
            if inner is None:
                stack.extend(reversed(current.children()))
            else:
                bound = current.field(inner)
                if bound is not None:
                    stack.append(bound)
    return tuple(names)


_JS_MEMBER_PATH = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
_JS_ASSIGNED_FUNCTION = {"has": {"field": "left", "kind": "member_expression"},
                         "any": [{"has": {"field": "right", "kind": "arrow_function"}},
                                 {"has": {"field": "right", "kind": "function_expression"}},
                                 {"has": {"field": "right", "kind": "generator_function"}}]}
"""`inst.lte = (value, params) => ...`, `Foo.prototype.bar = function () {}`: a method defined by
assignment (schema libraries such as zod add their methods so, inside the constructor)."""


def _js_assigned_body(node: SgNode) -> SgNode | None:
    """Where an assigned function's signature ends: its body (`inst.gt = (value, params) =>`)."""
    value = node.field("right")
    return value.field("body") if value is not None else None


def _js_assigned_name(node: SgNode) -> str | None:
    """`Foo.prototype.bar` -> `Foo.bar` (name bar, qualified by the object), `this.x` -> `x` (qualified by
    where it is); None for a computed target (`a[k]`, `f().x`) and for `module.exports` (the module's
    export, no member of anything: `var proto = module.exports = function` is proto)."""
    target = node.field("left")
    text = target.text() if target is not None else ""
    if _JS_MEMBER_PATH.fullmatch(text) is None or text == "module.exports":
        return None
    parts = [part for part in text.split(".") if part != "prototype"]
    if parts[0] == "this":
        parts = parts[1:]
    return ".".join(parts) if parts else None


_JS_TOP = {"any": [{"kind": "program"}, {"kind": "export_statement"}]}
_JS_DECLARATOR = {"inside": {"any": [{"kind": "lexical_declaration"}, {"kind": "variable_declaration"}],
                             "inside": _JS_TOP}}
_JS_DEFS = {
    "function_declaration": Def("function"),
    "generator_function_declaration": Def("function"),
    "class_declaration": Def("class"),
    "method_definition": Def("method"),
    "field_definition": Def("field", "property", body=None),
    "assignment_expression": Def("method", _js_assigned_name, body=_js_assigned_body, rule=_JS_ASSIGNED_FUNCTION),
    "variable_declarator": Def(_js_declarator_kind, _js_declarator_names, body=None, rule=_JS_DECLARATOR,
                               header_from_parent=True),
}
_TS_MEMBER = {"inside": {"any": [{"kind": "interface_body"}, {"kind": "class_body"},
                                 {"kind": "object_type", "inside": {"kind": "type_alias_declaration"}}]}}
_TS_DEFS = {
    **_JS_DEFS,
    "abstract_class_declaration": Def("class"),
    "interface_declaration": Def("interface"),
    "type_alias_declaration": Def("type", body=None),
    "enum_declaration": Def("enum"),
    "internal_module": Def("module"),
    "module": Def("module"),
    "function_signature": Def("function", body=None, overload=True),
    "method_signature": Def("method", body=None, rule=_TS_MEMBER, overload=True),
    "abstract_method_signature": Def("method", body=None),
    "property_signature": Def("property", body=None, rule=_TS_MEMBER),
    "public_field_definition": Def("field", body=None),
    "enum_assignment": Def("constant", body=None),
    "property_identifier": Def("constant", _own_text, body=None, rule={"inside": {"kind": "enum_body"}}),
}
_JS_LEADING = frozenset({"comment", "decorator"})
_JS_WRAPPERS = frozenset({"export_statement", "expression_statement"})
JAVASCRIPT = Language(_JS_DEFS, _JS_WRAPPERS, _JS_LEADING, frozenset({"constructor"}))
TYPESCRIPT = Language(_TS_DEFS, _JS_WRAPPERS, _JS_LEADING, frozenset({"constructor"}))


def _go_receiver(node: SgNode) -> str | None:
    name = node.field("name")
    if name is None:
        return None
    receiver = node.field("receiver")
    declaration = receiver.find(kind="parameter_declaration") if receiver is not None else None
    kind = declaration.field("type") if declaration is not None else None
    return f"{_type_name(kind.text())}.{name.text()}" if kind is not None else name.text()


def _go_type_kind(node: SgNode) -> str:
    kind = node.field("type")
    what = kind.kind() if kind is not None else ""
    return {"struct_type": "struct", "interface_type": "interface"}.get(what, "type")


def _go_names(node: SgNode) -> tuple[str, ...]:
    """The names a spec declares: `var a, b = 1, 2` declares both."""
    return tuple(name.text() for name in node.field_children("name") if name.kind() == "identifier")


_GO_FILE = {"inside": {"inside": {"kind": "source_file"}}}
_GO_TOP = {"any": [_GO_FILE, {"inside": {"kind": "var_spec_list", **_GO_FILE}}]}
"""A declaration of the file, alone or in a group: `var ( ... )` holds its specs in a var_spec_list
(`const ( ... )` and `type ( ... )` hold theirs directly)."""
GO = Language(
    defs={
        "function_declaration": Def("function"),
        "method_declaration": Def("method", _go_receiver),
        "type_spec": Def(_go_type_kind, body=None, header="type "),
        "type_alias": Def("type", body=None, header="type "),
        "method_elem": Def("method", body=None),
        "method_spec": Def("method", body=None),
        "field_declaration": Def("field", body=None),
        "const_spec": Def("constant", _go_names, body=None, rule=_GO_TOP, header="const "),
        "var_spec": Def("variable", _go_names, body=None, rule=_GO_TOP, header="var "),
    },
    leading=frozenset({"comment"}),
)


def _rust_impl_name(node: SgNode) -> str | None:
    kind = node.field("type")
    return _type_name(kind.text()) if kind is not None else None


RUST = Language(
    defs={
        "function_item": Def("function"),
        "function_signature_item": Def("function", body=None),
        "struct_item": Def("struct"),
        "union_item": Def("struct"),
        "enum_item": Def("enum"),
        "trait_item": Def("trait"),
        "impl_item": Def("module", _rust_impl_name, holds_methods=True),
        "mod_item": Def("module"),
        "const_item": Def("constant", body=None),
        "static_item": Def("constant", body=None),
        "type_item": Def("type", body=None),
        "macro_definition": Def("macro", body=None),
        "field_declaration": Def("field", body=None),
        "enum_variant": Def("constant", body=None),
    },
    leading=frozenset({"line_comment", "block_comment", "attribute_item"}),
)


def _java_field_name(node: SgNode) -> str | None:
    return _path("declarator", "name")(node)


JAVA = Language(
    defs={
        "class_declaration": Def("class"),
        "interface_declaration": Def("interface"),
        "enum_declaration": Def("enum"),
        "record_declaration": Def("class"),
        "annotation_type_declaration": Def("interface"),
        "method_declaration": Def("method"),
        "constructor_declaration": Def("constructor"),
        "compact_constructor_declaration": Def("constructor"),
        "field_declaration": Def("field", _java_field_name, body=None),
        "constant_declaration": Def("constant", _java_field_name, body=None),
        "enum_constant": Def("constant", body=None),
        "formal_parameter": Def("field", body=None,
                                rule={"inside": {"kind": "formal_parameters", "inside": {"kind": "record_declaration"}}}),
    },
    leading=frozenset({"line_comment", "block_comment"}),
)


def _kotlin_class_kind(node: SgNode) -> str:
    for child in node.children():
        kind = child.kind()
        if kind == "interface":
            return "interface"
        if kind == "enum":
            return "enum"
        if kind in ("class", "type_identifier"):
            return "class"
    return "class"


def _kotlin_property_kind(node: SgNode) -> str:
    modifiers = node.children()[0] if node.children() else None
    if modifiers is not None and modifiers.kind() == "modifiers" and "const" in modifiers.text().split():
        return "constant"
    parent = node.parent()
    return "property" if parent is not None and parent.kind() == "class_body" else "variable"


def _kotlin_property_name(node: SgNode) -> str | None:
    declaration = node.find(kind="variable_declaration")
    return _child_of("simple_identifier")(declaration) if declaration is not None else None


def _kotlin_companion_name(node: SgNode) -> str | None:
    return _child_of("type_identifier")(node) or "Companion"


KOTLIN = Language(
    defs={
        "class_declaration": Def(_kotlin_class_kind, _child_of("type_identifier"), body=None),
        "object_declaration": Def("class", _child_of("type_identifier"), body=None),
        "companion_object": Def("class", _kotlin_companion_name, body=None),
        "function_declaration": Def("function", _child_of("simple_identifier"), body=None),
        "secondary_constructor": Def("constructor", lambda node: "constructor", body=None),
        "property_declaration": Def(_kotlin_property_kind, _kotlin_property_name, body=None,
                                    rule={"inside": {"any": [{"kind": "source_file"}, {"kind": "class_body"}]}}),
        "type_alias": Def("type", _child_of("type_identifier"), body=None),
        "enum_entry": Def("constant", _child_of("simple_identifier"), body=None),
        "class_parameter": Def("property", _child_of("simple_identifier"), body=None,
                               rule={"has": {"kind": "binding_pattern_kind"}}),
    },
    leading=frozenset({"line_comment", "multiline_comment", "comment"}),
)

_C_BODY = {"has": {"field": "body", "kind": "field_declaration_list"}}
_C_ENUM_BODY = {"has": {"field": "body", "kind": "enumerator_list"}}


def _c_declaration_kind(node: SgNode) -> str:
    return "function" if _c_function_declaration(node) else "variable"


def _cpp_field_kind(node: SgNode) -> str:
    return "method" if _c_function_declaration(node) else "field"


def _cpp_function_kind(node: SgNode) -> str:
    """An out-of-class definition `A::A()` is a constructor and `A::~A()` a method; `Foo::bar()` stays a
    function (Foo may be a namespace: the file alone does not say)."""
    name = _c_name(node) or ""
    scope, _, last = name.rpartition("::")
    if scope and last.startswith("~"):
        return "method"
    if scope and last == scope.rpartition("::")[2]:
        return "constructor"
    return "function"


_C_DEFS = {
    "function_definition": Def("function", _c_name),
    "struct_specifier": Def("struct", rule=_C_BODY),
    "union_specifier": Def("struct", rule=_C_BODY),
    "enum_specifier": Def("enum", rule=_C_ENUM_BODY),
    "type_definition": Def("type", _path("declarator"), body=None),
    "preproc_def": Def("macro", body=None),
    "preproc_function_def": Def("macro", body=None),
    "declaration": Def(_c_declaration_kind, _c_name, body=None,
                       rule={"inside": {"any": [{"kind": "translation_unit"}, {"kind": "declaration_list"},
                                               {"kind": "field_declaration_list"}]}}),
    "field_declaration": Def("field", _c_name, body=None, rule={"inside": {"kind": "field_declaration_list"}}),
    "enumerator": Def("constant", body=None),
}
_C_LEADING = frozenset({"comment"})
C = Language(_C_DEFS, leading=_C_LEADING)
CPP = Language(
    defs={
        **_C_DEFS,
        "function_definition": Def(_cpp_function_kind, _c_name),
        "class_specifier": Def("class", rule=_C_BODY),
        "namespace_definition": Def("module"),
        "field_declaration": Def(_cpp_field_kind, _c_name, body=None, rule={"inside": {"kind": "field_declaration_list"}}),
        "alias_declaration": Def("type", body=None),
        "concept_definition": Def("type", body=None),
    },
    wrappers=frozenset({"template_declaration"}),
    leading=_C_LEADING,
    class_constructors=True,
)


def _csharp_variable_name(node: SgNode) -> str | None:
    declarator = node.find(kind="variable_declarator")
    if declarator is None:
        return None
    return _text(declarator.field("name")) or _child_of("identifier")(declarator)


CSHARP = Language(
    defs={
        "class_declaration": Def("class"),
        "interface_declaration": Def("interface"),
        "struct_declaration": Def("struct"),
        "enum_declaration": Def("enum"),
        "record_declaration": Def("class", body=None),
        "record_struct_declaration": Def("struct", body=None),
        "namespace_declaration": Def("module"),
        "file_scoped_namespace_declaration": Def("module", body=None),
        "method_declaration": Def("method"),
        "constructor_declaration": Def("constructor"),
        "destructor_declaration": Def("method"),
        "operator_declaration": Def("method", lambda node: "operator", body="body"),
        "property_declaration": Def("property", body="accessors"),
        "event_declaration": Def("field", body=None),
        "field_declaration": Def("field", _csharp_variable_name, body=None),
        "delegate_declaration": Def("type", body=None),
        "enum_member_declaration": Def("constant", body=None),
        "parameter": Def("property", body=None, rule={"inside": {"kind": "parameter_list", "inside": {"kind": "record_declaration"}}}),
    },
    leading=frozenset({"comment"}),
)


def _ruby_method_kind(node: SgNode) -> str:
    parent = node.parent()
    return "function" if parent is not None and parent.kind() == "program" else "method"


def _ruby_assignment_name(node: SgNode) -> str | None:
    left = node.field("left")
    return left.text() if left is not None and left.kind() == "constant" else None


RUBY = Language(
    defs={
        "class": Def("class", body=None),
        "module": Def("module", body=None),
        "singleton_class": Def("class", lambda node: "self", body=None),
        "method": Def(_ruby_method_kind, body=None),
        "singleton_method": Def("method", body=None),
        "assignment": Def("constant", _ruby_assignment_name, body=None,
                          rule={"inside": {"any": [{"kind": "program"}, {"kind": "body_statement"}]}}),
    },
    leading=frozenset({"comment"}),
)


def _php_property_name(node: SgNode) -> str | None:
    element = node.find(kind="property_element")
    name = element.find(kind="variable_name") if element is not None else None
    return name.text() if name is not None else None


def _php_const_name(node: SgNode) -> str | None:
    element = node.find(kind="const_element")
    return _child_of("name")(element) if element is not None else None


PHP = Language(
    defs={
        "class_declaration": Def("class"),
        "interface_declaration": Def("interface"),
        "trait_declaration": Def("trait"),
        "enum_declaration": Def("enum"),
        "namespace_definition": Def("module"),
        "function_definition": Def("function"),
        "method_declaration": Def("method"),
        "property_declaration": Def("property", _php_property_name, body=None),
        "const_declaration": Def("constant", _php_const_name, body=None),
        "enum_case": Def("constant", body=None),
    },
    leading=frozenset({"comment", "attribute_list"}),
    constructors=frozenset({"__construct"}),
)


def _swift_class_kind(node: SgNode) -> str:
    keyword = node.field("declaration_kind")
    word = keyword.text() if keyword is not None else "class"
    return {"struct": "struct", "enum": "enum", "extension": "module", "protocol": "interface"}.get(word, "class")


def _swift_property_kind(node: SgNode) -> str:
    parent = node.parent()
    if parent is not None and parent.kind() in ("class_body", "protocol_body"):
        return "property"
    binding = node.field("value_binding_pattern") or (node.children()[0] if node.children() else None)
    return "constant" if binding is not None and binding.text() == "let" else "variable"


SWIFT = Language(
    defs={
        "class_declaration": Def(_swift_class_kind, holds_methods=True),
        "protocol_declaration": Def("interface"),
        "function_declaration": Def("function"),
        "protocol_function_declaration": Def("method", body=None),
        "init_declaration": Def("constructor", lambda node: "init"),
        "deinit_declaration": Def("method", lambda node: "deinit"),
        "subscript_declaration": Def("method", lambda node: "subscript"),
        "property_declaration": Def(_swift_property_kind, body=None,
                                    rule={"inside": {"any": [{"kind": "source_file"}, {"kind": "class_body"}]}}),
        "typealias_declaration": Def("type", body=None),
        "enum_entry": Def("constant", _child_of("simple_identifier"), body=None),
    },
    leading=frozenset({"comment", "multiline_comment"}),
)


def _scala_val_name(node: SgNode) -> str | None:
    return _identifier(node.field("pattern"))


_SCALA_MEMBER = {"inside": {"any": [{"kind": "compilation_unit"}, {"kind": "template_body"}]}}
SCALA = Language(
    defs={
        "class_definition": Def("class"),
        "object_definition": Def("class"),
        "trait_definition": Def("trait"),
        "enum_definition": Def("enum"),
        "function_definition": Def("function"),
        "function_declaration": Def("function", body=None),
        "val_definition": Def("constant", _scala_val_name, body=None, rule=_SCALA_MEMBER),
        "var_definition": Def("variable", _scala_val_name, body=None, rule=_SCALA_MEMBER),
        "type_definition": Def("type", body=None),
        "given_definition": Def("variable"),
    },
    leading=frozenset({"comment", "block_comment", "annotation"}),
)


def _lua_function_kind(node: SgNode) -> str:
    name = node.field("name")
    return "method" if name is not None and name.kind() == "method_index_expression" else "function"


def _lua_assignment_name(node: SgNode) -> str | None:
    names = node.find(kind="variable_list")
    target = names.child(0) if names is not None else None
    if target is None or target.kind() not in ("identifier", "dot_index_expression"):
        return None
    return target.text()


def _lua_assignment_kind(node: SgNode) -> str:
    values = node.find(kind="expression_list")
    value = values.child(0) if values is not None else None
    if value is not None and value.kind() == "function_definition":
        return "function"
    return "constant" if _constant_case(_lua_assignment_name(node)) else "variable"


LUA = Language(
    defs={
        "function_declaration": Def(_lua_function_kind, body=None),
        "assignment_statement": Def(_lua_assignment_kind, _lua_assignment_name, body=None,
                                    rule={"inside": {"any": [{"kind": "chunk"},
                                                             {"kind": "variable_declaration", "inside": {"kind": "chunk"}}]}}),
    },
    wrappers=frozenset({"variable_declaration"}),
    leading=frozenset({"comment"}),
)


def _bash_assignment_kind(node: SgNode) -> str:
    parent = node.parent()
    if parent is not None and parent.kind() == "declaration_command":
        keyword = parent.child(0)
        if keyword is not None and keyword.text() == "readonly":
            return "constant"
    return "variable"


BASH = Language(
    defs={
        "function_definition": Def("function"),
        "variable_assignment": Def(_bash_assignment_kind, body=None,
                                   rule={"inside": {"any": [{"kind": "program"},
                                                            {"kind": "declaration_command", "inside": {"kind": "program"}}]}}),
    },
    wrappers=frozenset({"declaration_command"}),
    leading=frozenset({"comment"}),
)

RULES: dict[str, Language] = {
    "python": PYTHON, "javascript": JAVASCRIPT, "typescript": TYPESCRIPT, "tsx": TYPESCRIPT, "go": GO, "rust": RUST,
    "java": JAVA, "kotlin": KOTLIN, "c": C, "cpp": CPP, "csharp": CSHARP, "ruby": RUBY, "php": PHP, "swift": SWIFT,
    "scala": SCALA, "lua": LUA, "bash": BASH,
}
