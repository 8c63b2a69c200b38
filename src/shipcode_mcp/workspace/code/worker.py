"""The parse worker: a sandboxed child (parsers.py starts it) that does every piece of tree-sitter work.

tree-sitter's grammars are C code fed hostile text: an assertion in tree-sitter-ruby's scanner aborts
the process that parses 3 KB of heredocs, and error recovery can run for minutes on 80 KB of
punctuation. Done here, an abort or a stall ends this process only; the server answers the call with an
error, and starts another worker for the next one.

It reads requests from the descriptor named in argv[1] and writes answers to stdout, each a 4-byte
big-endian length and that much JSON: `{"op": ..., ...}` in, `{"ok": value}` or `{"error": message}`
out. It needs the standard library, ast-grep-py and this package's outline rules (argv[2:] are the
folders that hold them, put on sys.path: it runs with -I -S).
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ast_grep_py import SgNode

    from .symbols import Symbol

_HEADER = struct.Struct(">I")
MATCH_SPAN = 16 * 1024
"""find_all is asked of subtrees of at most this many characters (see _matches)."""
_ANY_VARIABLE = re.compile(r"\$\$\$(?:[A-Z_][A-Z0-9_]*)?|\$[A-Z_][A-Z0-9_]*")
IDENTIFIER_KINDS = ("identifier", "type_identifier", "field_identifier", "property_identifier",
                    "shorthand_property_identifier", "shorthand_property_identifier_pattern", "private_property_identifier",
                    "simple_identifier", "constant", "name", "namespace_identifier", "package_identifier",
                    "statement_identifier", "variable_name", "command_name", "word")
_kinds_of: dict[str, list[str]] = {}


Place = tuple["str | None", "tuple[str, str | None] | None", "str | None"]
"""Where under its parent an identifier is: the parent's field it is in (None: any), what holds the parent (its kind
and the field the parent is in, None: any) if that matters, and the identifier's own kind (None: any)."""
ANY: Place = (None, None, None)


def _field(name: str) -> Place:
    return (name, None, None)


BINDINGS: dict[str, tuple[Place, ...]] = {
    # Python
    "parameters": ((None, None, "identifier"),), "default_parameter": (_field("name"),), "typed_parameter": (ANY,),
    "typed_default_parameter": (_field("name"),), "lambda_parameters": (ANY,), "list_splat_pattern": (ANY,),
    "dictionary_splat_pattern": (ANY,), "assignment": (_field("left"),), "augmented_assignment": (_field("left"),),
    "pattern_list": (ANY,), "tuple_pattern": (ANY,), "for_statement": (_field("left"),),
    "for_in_clause": (_field("left"),), "as_pattern_target": (ANY,),
    # JavaScript, TypeScript (a name declared from require() is an import: see _required)
    "formal_parameters": (ANY,), "required_parameter": (_field("pattern"),),
    "optional_parameter": (_field("pattern"), _field("name")),  # (Ruby's: name)
    "variable_declarator": (_field("name"),), "assignment_expression": (("left", None, "variable_name"),),  # (PHP's $x = ...)
    "arrow_function": (_field("parameter"),), "for_in_statement": (_field("left"),),
    "catch_clause": (_field("parameter"),), "array_pattern": (ANY,), "object_pattern": (ANY,),
    "pair_pattern": (_field("value"),), "rest_pattern": (ANY,), "assignment_pattern": (_field("left"),),
    # Go (and C, C++: a parameter's declarator)
    "parameter_declaration": ((None, None, "identifier"),),  # (each name: `a, b int`; C's declarator)
    "variadic_parameter_declaration": (_field("name"),), "var_spec": ((None, None, "identifier"),),
    "const_spec": ((None, None, "identifier"),),
    "expression_list": ((None, ("short_var_declaration", "left"), None), (None, ("range_clause", "left"), None)),
    # Rust; C#, Scala and Swift (a parameter's name); Kotlin (its first simple_identifier)
    "let_declaration": (_field("pattern"),), "closure_parameters": (ANY,), "for_expression": (_field("pattern"),),
    "mut_pattern": (ANY,), "ref_pattern": (ANY,),
    "parameter": (_field("pattern"), _field("name"), (None, None, "simple_identifier")),
    # Java
    "formal_parameter": (_field("name"),), "catch_formal_parameter": (_field("name"),),
    "enhanced_for_statement": (_field("name"),), "inferred_parameters": (ANY,),
    "lambda_expression": (_field("parameters"),),
    # C, C++
    "init_declarator": (_field("declarator"),), "pointer_declarator": (_field("declarator"),),
    "reference_declarator": (ANY,),
    # Kotlin, Swift (`val x`, `let x`), Scala (`val x`, `var x`)
    "variable_declaration": ((None, None, "simple_identifier"),), "pattern": (_field("bound_identifier"),),
    "val_definition": (_field("pattern"),), "var_definition": (_field("pattern"),),
    # Ruby
    "method_parameters": (ANY,), "block_parameters": (ANY,), "keyword_parameter": (_field("name"),),
    # PHP ($x as a parameter; an assignment is assignment_expression's left), Lua, Bash
    "simple_parameter": (_field("name"),), "variable_list": (ANY,), "variable_assignment": (_field("name"),),
}
"""Where an identifier is bound in a file's own scopes (parameters, assignments, loop variables, patterns): the
kind of its parent, then the places under it. Kinds of every grammar in one table: a kind means the same in
each, and where two grammars share one (a parameter) the places say which child is the name."""
NOT_USES: dict[str, tuple[Place, ...]] = {
    "keyword_argument": (_field("name"),),  # Python's f(key=value): the callee's parameter, not this file's name
    "variable_name": ((None, None, "name"),),  # PHP's $x holds a name x: $x is the use
}
"""Identifiers that are neither a use nor a binding."""


def _at(node: SgNode, parent: SgNode, places: tuple[Place, ...]) -> bool:
    """Whether `node` (an identifier, child of `parent`) is in one of `places` under it."""
    for field, outer, kind in places:
        if field is not None and parent.field(field) != node:
            continue
        if kind is not None and node.kind() != kind:
            continue
        if outer is not None:
            holder = parent.parent()
            if holder is None or holder.kind() != outer[0] or (outer[1] is not None and holder.field(outer[1]) != parent):
                continue
        return True
    return False


def _required_names(root: SgNode, language: str) -> set[str]:
    """The names a JavaScript file declares from require() at its top level (which its outline lists): imports."""
    if language not in ("javascript", "typescript", "tsx"):
        return set()
    names: set[str] = set()
    required = {"kind": "call_expression", "has": {"field": "function", "regex": "^require$"}}
    for declarator in root.find_all(kind="variable_declarator", has={"field": "value", "any": [
            required, {"kind": "member_expression", "has": {"field": "object", **required}}]}):
        target = declarator.field("name")
        if target is not None:
            names.update(node.text() for node in [target, *target.find_all(any=[
                {"kind": "identifier"}, {"kind": "shorthand_property_identifier_pattern"}])])
    return names


_PATTERNS = ("object_pattern", "array_pattern", "pair_pattern", "assignment_pattern", "rest_pattern")


def _required(parent: SgNode) -> bool:
    """Whether a JavaScript declaration (`parent`, a declarator or a pattern in one) takes its names from a
    require() call: `const { helper } = require('./util')` imports helper, as an import statement would."""
    declarator: SgNode | None = parent
    while declarator is not None and declarator.kind() in _PATTERNS:
        declarator = declarator.parent()
    if declarator is None or declarator.kind() != "variable_declarator":
        return False
    value = declarator.field("value")
    if value is not None and value.kind() == "member_expression":  # require('./util').helper
        value = value.field("object")
    callee = value.field("function") if value is not None and value.kind() == "call_expression" else None
    return callee is not None and callee.text() == "require"


def parse(text: str, language: str) -> SgNode:
    from .outline import parse as parse_text  # this file runs as a script first: no package until _bootstrap

    return parse_text(text, language)


def flat_outline(text: str, language: str, root: SgNode | None = None) -> list[list[Any]]:
    """The outline of `text`, flat: [parent index or -1, name, qualified name, kind, line, end line,
    signature, def line] for each symbol in source order (JSON without nesting: code nests deeper than
    the JSON encoder recurses)."""
    from .outline import outline  # no package until _bootstrap, as in parse

    rows: list[list[Any]] = []
    stack: list[tuple[Symbol, int]] = [(symbol, -1) for symbol in reversed(outline(text, language, root))]
    while stack:
        symbol, parent = stack.pop()
        index = len(rows)
        rows.append([parent, symbol.name, symbol.qualified_name, symbol.kind, symbol.line, symbol.end_line,
                     symbol.signature, symbol.def_line])
        stack.extend((child, index) for child in reversed(symbol.children))
    return rows


def identifier_kinds(language: str, root: SgNode) -> list[str]:
    """The identifier node kinds this language's grammar has."""
    kinds = _kinds_of.get(language)
    if kinds is None:
        kinds = []
        for kind in IDENTIFIER_KINDS:
            if kind == "word" and language != "bash":
                continue
            try:
                root.find(kind=kind)
            except RuntimeError:
                continue
            kinds.append(kind)
        _kinds_of[language] = kinds
    return kinds


def outline_and_uses(text: str, language: str) -> list[Any]:
    """[the flat outline, {name: how many times an identifier node of the file has it}] from one parse: what the
    code index keeps of a file (the uses rank definitions in repo_map). Comments and strings hold no identifier
    node, so a name that only they mention is not used; nor is a keyword argument's name (NOT_USES), nor one the
    file binds itself (BINDINGS: a parameter, a local, a loop variable, one of its own definitions): its uses are
    the file's own."""
    root = parse(text, language)
    outline = flat_outline(text, language, root)
    kinds = [{"kind": kind} for kind in identifier_kinds(language, root)]
    uses: dict[str, int] = {}
    bound = {row[1] for row in outline} - _required_names(root, language)
    for node in root.find_all(any=kinds):
        name = node.text()
        uses[name] = uses.get(name, 0) + 1
        if name not in bound:
            parent = node.parent()
            if parent is not None:
                kind = parent.kind()
                if kind in BINDINGS and _at(node, parent, BINDINGS[kind]) and not _required(parent):
                    bound.add(name)
    if language == "rust":  # `use crate::Config`: the crate's root (lib.rs, main.rs) is reached by this keyword
        crates = len(root.find_all(kind="crate"))
        if crates:
            uses["crate"] = uses.get("crate", 0) + crates
    for kind, places in NOT_USES.items():
        try:
            holders = root.find_all(kind=kind)
        except RuntimeError:
            continue  # not a kind of this grammar
        for holder in holders:
            for child in holder.children():
                if child.kind() in IDENTIFIER_KINDS and _at(child, holder, places) and child.text() in uses:
                    uses[child.text()] -= 1
    # (no identifier of any language holds a NUL; the index keeps a file's uses NUL-separated)
    return [outline, {name: times for name, times in uses.items() if times > 0 and name not in bound and "\0" not in name}]


def named(root: SgNode, language: str, name: str) -> list[SgNode]:
    """The identifier nodes whose text is `name`."""
    return root.find_all(regex=f"^{re.escape(name)}$", any=[{"kind": kind} for kind in identifier_kinds(language, root)])


def positions(text: str, language: str, name: str, outline: bool) -> dict[str, Any]:
    """(line, column), 0-based, of the identifier nodes whose text is `name`; with the outline when asked."""
    root = parse(text, language)
    found = [[start.line, start.column] for start in (node.range().start for node in named(root, language, name))]
    return {"positions": found, "outline": flat_outline(text, language, root) if outline and found else None}


MAX_ERROR_CHARS = 16 * 1024
"""ast-grep's refusal of a pattern is sent back at most this long (the server reads its innermost cause)."""


def check_pattern(pattern: str, language: str) -> dict[str, Any]:
    """Whether ast-grep takes `pattern` (`error`: its whole refusal), where it fails to parse as plain code
    (`broken`), and the kind of definition it is (`kind`, see _pattern_kind)."""
    try:
        parse("", language).find(pattern=pattern)
    except (RuntimeError, ValueError) as err:
        return {"error": str(err)[:MAX_ERROR_CHARS] or type(err).__name__, "broken": None, "kind": None}
    broken = _syntax_error(pattern, language)
    return {"error": None, "broken": broken, "kind": None if broken is not None else _pattern_kind(pattern, language)}


def _syntax_error(pattern: str, language: str) -> str | None:
    """Where the pattern, its metavariables made identifiers, fails to parse; None if it parses.
    Not refused outright: a fragment (a Rust statement, outside any function) may fail alone and
    still match, as ast-grep parses it in context."""
    plain = _ANY_VARIABLE.sub("z_sg_", pattern)
    error = parse(plain, language).find(kind="ERROR")
    if error is None:
        return None
    where = error.range().start
    return f"syntax error at line {where.line + 1}, column {where.column + 1}"


def _pattern_kind(pattern: str, language: str) -> str | None:
    """The kind of definition the pattern is (`function_declaration`), as the node that spans all of it with
    its metavariables made identifiers; None for any other pattern. A definition is where code has parts a
    pattern easily leaves out (a return type, modifiers), and then matches none of the definitions."""
    from .languages import RULES  # no package until _bootstrap, as in parse

    plain = _ANY_VARIABLE.sub("z_sg_", pattern).strip()
    node: SgNode | None = parse(plain, language)
    kind = None
    while node is not None:
        children = [child for child in node.children() if child.is_named()]
        if len(children) != 1:
            break
        node = children[0]
        where = node.range()
        if where.end.index - where.start.index >= len(plain) - 1:  # an expression statement's `;` aside
            kind = node.kind()
    spec = RULES.get(language)
    if spec is None:
        return None
    return kind if kind in spec.defs or kind == "decorated_definition" else None  # a Python def with decorators


def matches(text: str, language: str, pattern: str, variables: list[list[Any]], limit: int,
            kind: str | None) -> dict[str, Any]:
    """At most `limit` matches of `pattern` in `text`, each its place (line, column, end line, the span of
    its text) and the spans of its captures; with `kind`, whether the text holds a node of that kind when
    nothing matched (`kind_seen`)."""
    root = parse(text, language)
    found: list[dict[str, Any]] = []
    for node in _matches(root, pattern_rule(pattern, language)):
        if len(found) >= limit:
            break
        where = node.range()
        captures: dict[str, list[int]] = {}
        for many, name in variables:
            if many:
                captures[name] = _span(node.get_multiple_matches(name))
            else:
                match = node.get_match(name)
                if match is not None:
                    place = match.range()
                    captures[name] = [place.start.index, place.end.index]
        found.append({"line": where.start.line + 1, "column": where.start.column + 1, "end_line": where.end.line + 1,
                      "span": [where.start.index, where.end.index], "captures": captures})
    kind_seen = not found and kind is not None and root.find(kind=kind) is not None
    return {"matches": found, "kind_seen": kind_seen}


def _span(parts: list[SgNode]) -> list[int]:
    """Where a $$$ metavariable's capture lies: from its first node to its last (comments and line breaks
    between them kept), without a separator that ends or starts the list; [0, 0] (nothing) when empty."""
    while parts and parts[-1].text() == ",":
        parts = parts[:-1]
    while parts and parts[0].text() == ",":
        parts = parts[1:]
    if not parts:
        return [0, 0]
    return [parts[0].range().start.index, parts[-1].range().end.index]


def _matches(root: SgNode, rule: dict[str, Any]) -> Iterator[SgNode]:
    """The matches of `rule` under `root`, in source order, made a subtree at a time: find_all makes a
    list of every match (`$A` matches every node: hundreds of MB for a large file), so it is asked only of
    subtrees of at most MATCH_SPAN characters, and a caller that stops at its limit makes no more."""
    stack = [root]
    while stack:
        node = stack.pop()
        where = node.range()
        if where.end.index - where.start.index <= MATCH_SPAN:
            yield from node.find_all(**rule)
            continue
        if node.matches(**rule):  # which says only whether: find, which starts at the node, gives its captures
            yield node.find(**rule) or node
        stack.extend(reversed(node.children()))


_RETURN_TYPE = " -> $_RETURN_TYPE"
"""Put after a Python def pattern's parameters: any return type, not captured (a `$_` name)."""
_rules: dict[tuple[str, str], dict[str, Any]] = {}


def pattern_rule(pattern: str, language: str) -> dict[str, Any]:
    """The ast-grep rule `pattern` is matched by. A Python def pattern is matched as semgrep matches one (a
    part the pattern leaves out may be there): written without a return type it matches a def with one too,
    and written with decorators it matches a def that has those among others. ast-grep matches a pattern
    node for node, so `@property\\ndef $F(self): $$$B` matched none of click's properties (`-> str`) nor
    numbers.py's (`@property` over `@abstractmethod`)."""
    key = (pattern, language)
    rule = _rules.get(key)
    if rule is None:
        rule = {"pattern": pattern}
        if language == "python":
            rule = _python_def_rule(pattern) or rule
            try:
                parse("", language).find(**rule)
            except (RuntimeError, ValueError):  # a part ast-grep does not take alone: the pattern as written
                rule = {"pattern": pattern}
        if len(_rules) > 256:
            _rules.clear()
        _rules[key] = rule
    return rule


def _python_def_rule(pattern: str) -> dict[str, Any] | None:
    """The rule for a pattern that is one def or decorated definition (None for any other): its decorators
    each one of the code's, its def with or without a return type."""
    plain = _ANY_VARIABLE.sub(lambda found: found.group().replace("$", "_"), pattern)  # the same length
    statements = [child for child in parse(plain, "python").children() if child.is_named()]
    if len(statements) != 1 or statements[0].kind() not in ("function_definition", "decorated_definition"):
        return None
    node = statements[0]
    if node.kind() == "function_definition":
        return _python_function_rule(pattern, node)
    definition = node.field("definition")
    if definition is None:
        return None
    parts = [{"has": {"field": "definition", **_python_function_rule(pattern, definition)}}]
    parts += [{"has": {"kind": "decorator", "pattern": _text_of(pattern, child)}}
              for child in node.children() if child.kind() == "decorator"]
    return {"kind": "decorated_definition", "all": parts}


def _python_function_rule(pattern: str, node: SgNode) -> dict[str, Any]:
    """The def (or class) `node` of the pattern's plain text, as written and, without a return type, with any."""
    text = _text_of(pattern, node)
    parameters = node.field("parameters")
    if node.kind() != "function_definition" or parameters is None or node.field("return_type") is not None:
        return {"pattern": text}
    cut = parameters.range().end.index - node.range().start.index
    return {"any": [{"pattern": text}, {"pattern": text[:cut] + _RETURN_TYPE + text[cut:]}]}


def _text_of(pattern: str, node: SgNode) -> str:
    where = node.range()
    return pattern[where.start.index:where.end.index]


def body_lines(text: str, language: str, line: int, def_line: int) -> dict[str, int] | None:
    """Where the body of the definition on `def_line` (its text starting at `line`, decorators and doc comment
    included) is, as 0-based rows: `after`, the last row before the body's code (the header's, the opening
    brace's, or in Python the docstring's: it stays); `last`, the last row of the code (`after` when there is
    none); `closing`, the closing brace's row (-1 in Python); `inline` 1 when the code shares a row with the
    header or a brace. None when no definition there has a body: tree-sitter's `body` field of the outermost
    node that starts between `line` and `def_line` and whose body starts at or after `def_line`."""
    node: SgNode | None = parse(text, language)
    found: SgNode | None = None
    row = def_line - 1
    while node is not None and found is None:
        inner = None
        for child in node.children():
            span = child.range()
            if span.start.line <= row <= span.end.line:
                inner = child
                body = child.field("body")
                if body is not None and line - 1 <= span.start.line <= row and body.range().start.line >= row:
                    found = child
                break
        node = inner
    if found is None:
        return None
    body = found.field("body")
    assert body is not None
    span = body.range()
    if language == "python":
        colon = [child for child in found.children() if child.kind() == ":"]
        header = colon[-1].range().end.line if colon else row
        statements = [child for child in body.children() if child.is_named()]
        after = header
        if statements and statements[0].kind() == "expression_statement" and statements[0].children() and \
                statements[0].children()[0].kind() == "string":
            after = statements[0].range().end.line  # the docstring stays
            statements = statements[1:]
        last = statements[-1].range().end.line if statements else after
        inline = int(span.start.line <= header or any(item.range().start.line <= after for item in statements))
        return {"after": after, "last": last, "closing": -1, "inline": inline}
    opening, closing = span.start.line, span.end.line
    return {"after": opening, "last": closing - 1, "closing": closing, "inline": int(closing <= opening)}


def answer(request: dict[str, Any]) -> Any:
    """What one request asks for (ValueError for an unknown one)."""
    op = request["op"]
    if op == "outline":
        return flat_outline(request["text"], request["language"])
    if op == "outline_uses":
        return outline_and_uses(request["text"], request["language"])
    if op == "positions":
        return positions(request["text"], request["language"], request["name"], request["outline"])
    if op == "pattern":
        return check_pattern(request["pattern"], request["language"])
    if op == "matches":
        return matches(request["text"], request["language"], request["pattern"], request["variables"], request["limit"],
                       request["kind"])
    if op == "scopes":
        from .pyscopes import Reading, scoped_uses  # no package until _bootstrap, as in parse

        return scoped_uses(request["text"], request["name"], request["shown"], [Reading.of(item) for item in request["readings"]])
    if op == "js_scopes":
        from .jsscopes import scoped_uses as js_scoped_uses  # no package until _bootstrap, as in parse

        root = parse(request["text"], request["language"])
        return js_scoped_uses(root, named(root, request["language"], request["name"]), request["name"], request["shown"],
                              request["targets"])
    if op == "js_definition_at":
        from .jsscopes import definition_at as js_definition_at  # no package until _bootstrap, as in parse

        root = parse(request["text"], request["language"])
        return js_definition_at(root, named(root, request["language"], request["name"]), request["name"],
                                request["shown"], request["line"], request["column"])
    if op == "js_definition_of":
        from .jsscopes import definitions_in_module  # no package until _bootstrap, as in parse

        root = parse(request["text"], request["language"])
        return definitions_in_module(root, lambda name: named(root, request["language"], name), request["name"],
                                     request["shown"])
    if op == "definition_at":
        from .pydefinitions import definition_at  # no package until _bootstrap, as in parse

        return definition_at(request["text"], request["shown"], request["line"], request["column"])
    if op == "definition_of":
        from .pydefinitions import definition_of  # no package until _bootstrap, as in parse

        return definition_of(request["text"], request["shown"], request["path"])
    if op == "findings":
        from .lint import findings  # no package until _bootstrap, as in parse

        return findings(request["text"], request["language"], request["name"], request.get("syntax_only", False))
    if op == "subclasses":
        from .pydefinitions import subclasses  # no package until _bootstrap, as in parse

        return subclasses(request["text"], request["shown"], request["names"])
    if op == "body":
        return body_lines(request["text"], request["language"], request["line"], request["def_line"])
    if op == "ping":
        return "pong"
    raise ValueError(f"unknown request {op!r}")


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def serve(requests: int, replies: int) -> None:
    """Answer requests until the server closes its end."""
    while True:
        header = _read_exactly(requests, _HEADER.size)
        if header is None:
            return
        body = _read_exactly(requests, _HEADER.unpack(header)[0])
        if body is None:
            return
        try:
            reply: dict[str, Any] = {"ok": answer(json.loads(body))}
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:  # (a panic in ast-grep's Rust is a BaseException: the worker survives it)
            first = str(err).splitlines()[0] if str(err) else ""
            reply = {"error": f"{type(err).__name__}: {first}"}
        data = json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogatepass")
        os.write(replies, _HEADER.pack(len(data)))
        view = memoryview(data)
        while view:
            view = view[os.write(replies, view):]


def _bootstrap(ours: str, grep: str, *more: str) -> None:
    """Make this package, ast-grep-py and the other packages named (pyflakes) importable from their folders
    alone (the sandbox lets the worker read those, not the folders around them, which an import by sys.path
    would list), without running the package's __init__ (the server's, not needed here)."""
    # only the script's start needs these
    import importlib.util
    import types

    for name, folder in (("shipcode_mcp", ours), ("shipcode_mcp.workspace", os.path.join(ours, "workspace")),
                         ("shipcode_mcp.workspace.code", os.path.join(ours, "workspace", "code"))):
        module = types.ModuleType(name)
        module.__path__ = [folder]
        sys.modules[name] = module
    for folder in (grep, *more):
        name = os.path.basename(folder)
        spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])
        if spec is None or spec.loader is None:
            raise SystemExit(f"{name} not found")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


if __name__ == "__main__":
    _bootstrap(*sys.argv[2:])
    from shipcode_mcp.workspace.code import worker

    worker.serve(int(sys.argv[1]), 1)
