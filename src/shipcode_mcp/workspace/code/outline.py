"""A source text's outline: one native search for every definition node, nesting from their ranges.

ast-grep finds all the nodes of a language's definition kinds in one pass (in Rust); Python then
touches only those nodes, a handful of calls each (kind, range, name, body, neighbours), so the cost
is the parse plus a little per definition, not per node of the tree.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .languages import CLASS_LIKE, RULES, Def, Language
from .symbols import Symbol

if TYPE_CHECKING:
    from ast_grep_py import SgNode

MAX_SIGNATURE = 200
"""A longer header is cut (one line, whitespace collapsed)."""
_HEADER_SLICE = 8 * MAX_SIGNATURE
"""At most this much text is read for a signature (whitespace collapsed, it may still fill one)."""
_SAME_LINE = frozenset({"decorator", "attribute_item", "attribute_list", "annotation"})
"""Leading siblings that may share the definition's line (`@cached def f`)."""
_QUALIFIER = re.compile(r"::|\.|:|#")
_QUALIFIED = re.compile(r"[.:#]")
_COMMENT_START = re.compile(r"#|//|/\*|--")
"""Where a comment may start in some outlined language (a header without any holds no comment)."""
_COMMENT_KINDS = ("comment", "line_comment", "block_comment", "multiline_comment", "doc_comment", "html_comment",
                  "xml_comment")
"""The comment node kinds of the outlined grammars (each grammar has some of them)."""
_COMMENT_RULES: dict[str, dict[str, Any]] = {}


class UnknownLanguage(ValueError):
    pass


class _Item:
    """A symbol being built: its children arrive after it, in source order."""

    __slots__ = ("children", "def_line", "end", "end_line", "holds_methods", "kind", "line", "name", "overload",
                 "qualified", "signature")

    def __init__(self, name: str, qualified: str, kind: str, line: int, end_line: int, def_line: int, end: int,
                 signature: str, holds_methods: bool) -> None:
        self.name, self.qualified, self.kind = name, qualified, kind
        self.line, self.end_line, self.def_line, self.end = line, end_line, def_line, end
        self.signature = signature
        self.holds_methods = holds_methods
        self.overload = False
        self.children: list[_Item] = []

    def freeze(self) -> Symbol:
        """This item as a Symbol, children first; without recursion (code nests deeper than Python's
        recursion limit: 600 nested JavaScript functions)."""
        frozen: dict[int, Symbol] = {}
        stack: list[tuple[_Item, bool]] = [(self, False)]
        while stack:
            item, ready = stack.pop()
            if not ready:
                stack.append((item, True))
                stack.extend((child, False) for child in item.children)
                continue
            frozen[id(item)] = Symbol(item.name, item.qualified, item.kind, item.line, item.end_line, item.signature,
                                      tuple(frozen.pop(id(child)) for child in item.children), item.def_line)
        return frozen[id(self)]


def parse(text: str, language: str) -> SgNode:
    """The root of `text`'s tree (ast-grep-py is imported here, on first use). A TypeScript text the grammar
    cannot read is read again with its generic call signatures separated (`_separated`), and that tree is taken
    when it reads more."""
    from ast_grep_py import SgRoot

    root = SgRoot(text, language).root()
    if language == "typescript" and root.find(kind="ERROR") is not None:
        separated = _separated(text)
        if separated != text:
            again = SgRoot(separated, language).root()
            if len(again.find_all(kind="ERROR")) < len(root.find_all(kind="ERROR")):
                return again
    return root


_CALL_SIGNATURE = re.compile(r"(?<=\S)([ \t]*\n(?:[ \t]*(?://[^\n]*|/\*(?:[^*]|\*(?!/))*\*/[ \t]*)?\n)*[ \t]*)"
                             r"([ \t])(<[ \t]*[A-Za-z_$][\w$]*[ \t]*(?:,|extends\b|=|>[ \t]*\())")
"""A line that starts (after its indentation) with a generic call signature or construct-less method's type
parameters (`<T>(`, `<S, A extends any[]>(`), after a line of code that does not end in `;` or `,`."""


def _separated(text: str) -> str:
    """`text` with a `;` in place of the last indentation character before each generic call signature that
    starts a line: tree-sitter's TypeScript grammar reads `): Curried` then `<Recipe extends F>(` on the next line
    as one type with type arguments (TypeScript itself does not across a line break), and the rest of the file is
    an error. The text keeps its length, lines and columns (every offset of the tree is the text's)."""
    return _CALL_SIGNATURE.sub(lambda found: found.group(1) + ";" + found.group(3)
                               if not found.string[:found.start()].rstrip().endswith((";", ",", "{", "(", "[", "|", "&",
                                                                                      "=", ":", "?", "<"))
                               else found.group(0), text)


def outline(text: str, language: str, root: SgNode | None = None) -> list[Symbol]:
    """The symbols of `text`; `root` is its tree when the caller parsed it already."""
    spec = RULES.get(language)
    if spec is None:
        raise UnknownLanguage(f"no outline rules for {language!r}")
    return [item.freeze() for item in _items(root or parse(text, language), text, spec, language)]


def _items(root: SgNode, text: str, spec: Language, language: str) -> list[_Item]:
    top: list[_Item] = []
    stack: list[_Item] = []
    defs = spec.defs
    nodes = root.find_all(**spec.rule(language, root))
    if spec.members is not None:
        extra = spec.members(root, nodes)
        if extra:
            nodes = sorted([*nodes, *extra], key=lambda node: node.range().start.index)
    leading = spec.leading
    lines = text.split("\n") if leading else None
    trim = spec.trim_comments
    comments = _comment_rule(language, root)
    for node in nodes:
        definition = defs.get(node.kind())
        if definition is None:
            continue
        name_of = definition.name
        if callable(name_of):
            raw = name_of(node)
        else:
            found = node.field(name_of)
            raw = found.text() if found is not None else None
        if not raw:
            continue
        where = node.range()
        start, end = where.start, where.end
        start_index = start.index
        while stack and stack[-1].end <= start_index:
            stack.pop()
        parent = stack[-1] if stack else None
        kind_of = definition.kind
        node_kind = kind_of(node) if callable(kind_of) else kind_of
        start_line = start.line
        end_line = end.line + 1 if end.column or end.line == start_line else end.line
        if trim is not None and end_line > start_line + 1:
            end_line = _trim(text, start_line + 1, end_line, end.index if end.column else end.index - 1, trim)
        line = _first_line(node, start_line, spec, lines)
        signature = _signature(node, text, start_index, end.index, definition, comments)
        first: _Item | None = None
        siblings = parent.children if parent is not None else top
        for each in (raw,) if isinstance(raw, str) else raw:  # a node may bind several names: `a = b = 1`
            item = _item(each, node_kind, parent, spec, definition, line + 1, end_line, start_line + 1, end.index,
                         signature)
            item.overload = definition.overload
            while not item.overload and siblings and siblings[-1].overload and siblings[-1].qualified == item.qualified:
                item.line = siblings.pop().line  # its overload signatures, right above it
            siblings.append(item)
            first = first or item
        if first is not None:
            stack.append(first)  # what nests inside belongs to the first name
    return top


def _item(raw: str, kind: str, parent: _Item | None, spec: Language, definition: Def, line: int, end_line: int,
          def_line: int, end: int, signature: str) -> _Item:
    """One name's symbol: qualified by its parent and by the qualifier written in it (`Foo.bar`)."""
    if _QUALIFIED.search(raw) is None:
        name, prefix = raw, ""
    else:
        parts = [part for part in _QUALIFIER.split(raw) if part] or [raw]
        name, prefix = parts[-1], ".".join(parts[:-1])
    outer = parent.qualified if parent is not None else ""
    qualified = f"{outer}.{prefix}" if outer and prefix else outer or prefix
    qualified = f"{qualified}.{name}" if qualified else name
    if kind == "function" and parent is not None and parent.holds_methods:
        kind = "method"
    if kind == "method" and (name in spec.constructors or (spec.class_constructors and parent is not None
                             and name == parent.name)):
        kind = "constructor"
    holds = definition.holds_methods if definition.holds_methods is not None else kind in CLASS_LIKE
    return _Item(name, qualified, kind, line, end_line, def_line, end, signature, holds)


def _trim(text: str, first: int, last: int, stop: int, marker: str) -> int:
    """The last line that is neither blank nor only a comment (tree-sitter-python keeps trailing comments
    in a block). `stop` is where line `last` ends in `text`; lines are read backwards from there, so the
    cost is the few lines looked at, not the file."""
    while last > first:
        begin = text.rfind("\n", 0, stop) + 1
        stripped = text[begin:stop].strip()
        if stripped and not stripped.startswith(marker):
            break
        last -= 1
        stop = begin - 1
    return last


def _first_line(node: SgNode, line: int, spec: Language, lines: list[str] | None) -> int:
    """Where a definition starts for a reader: its wrappers (decorators, export), then the comments and
    attributes right above it (no blank line between, each alone on its line). 0-based."""
    outer = node
    parent = node.parent()
    while parent is not None and parent.kind() in spec.wrappers:
        outer = parent
        line = parent.range().start.line
        parent = parent.parent()
    if not spec.leading or lines is None:
        return line
    before = outer.prev()
    while before is not None and before.kind() in spec.leading:
        where = before.range()
        last = where.end.line - 1 if where.end.column == 0 and where.end.line > where.start.line else where.end.line
        if last < line - 1 or (last >= line and before.kind() not in _SAME_LINE):
            break
        text = lines[where.start.line]
        if text[:len(text) - len(text.lstrip())] != text[:where.start.column] and text.lstrip() != text[where.start.column:]:
            break  # a comment after code on its line belongs to that code
        line = where.start.line
        before = before.prev()
    return line


def _signature(node: SgNode, text: str, start: int, end: int, definition: Def, comments: dict[str, Any]) -> str:
    """The definition's header on one line: up to its body, or its first line. Read from a bounded slice
    of the text (never the node's whole text: a class's text is the class)."""
    if definition.header_from_parent:
        parent = node.parent()
        if parent is not None:
            start = parent.range().start.index
    where = definition.body
    body = (where(node) if callable(where) else node.field(where)) if where else None
    if body is not None:
        stop = min(body.range().start.index, start + _HEADER_SLICE)
    else:
        stop = text.find("\n", start, min(end, start + _HEADER_SLICE))
        if stop < 0:
            stop = min(end, start + _HEADER_SLICE)
    raw = text[start:stop]
    if _COMMENT_START.search(raw) is not None:  # cheap test first: most headers hold no comment
        raw = _without_comments(node.parent() if definition.header_from_parent else node, text, start, stop,
                                comments)
    header = definition.header + " ".join(raw.split()).rstrip("{:=").rstrip()
    return header if len(header) <= MAX_SIGNATURE else header[:MAX_SIGNATURE - 1] + "…"


def _comment_rule(language: str, root: SgNode) -> dict[str, Any]:
    """The ast-grep rule finding `language`'s comment nodes, made once a language (a kind the grammar
    does not have is left out: naming it is an error)."""
    rule = _COMMENT_RULES.get(language)
    if rule is None:
        kinds = []
        for kind in _COMMENT_KINDS:
            try:
                root.find(kind=kind)
            except RuntimeError:
                continue
            kinds.append({"kind": kind})
        rule = _COMMENT_RULES[language] = {"any": kinds}
    return rule


def _without_comments(node: SgNode | None, text: str, start: int, stop: int, rule: dict[str, Any]) -> str:
    """`text[start:stop]` without the comments in it: a comment after `def f(x):`, or on the lines
    above the first statement of a Python body, sits before the body node, and one between parameters
    inside the header; neither is the signature. The comment nodes are found by one native search, in
    source order, and only those up to the header's end are asked where they are: `range()` costs as
    much as the column it reports (a minified file is one line), so asking every node that overlaps
    the header made one outline of a 400 KB line take seconds."""
    comments: list[tuple[int, int]] = []
    for comment in node.find_all(**rule) if node is not None and rule["any"] else ():
        where = comment.range()
        begin, end = where.start.index, where.end.index
        if begin >= stop:
            break
        if end > start:
            comments.append((max(begin, start), min(end, stop)))
    if not comments:
        return text[start:stop]
    comments.sort()
    parts, at = [], start
    for begin, end in comments:
        parts.append(text[at:begin])
        at = max(at, end)
    parts.append(text[at:stop])
    return " ".join(parts)


def outline_source(text: str, language: str) -> list[Symbol]:
    """The top-level symbols of `text`, children nested; pure (no I/O). Needs ast-grep-py."""
    return outline(text, language)
