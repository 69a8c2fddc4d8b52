"""Text is text by construction: every value formatted into Streamlit's Markdown in pages/ is escaped or a number.

Streamlit reads Markdown in `st.markdown`, `st.caption` and the alerts (`st.error`, `st.info`, `st.warning`,
`st.success`): a string a learner, a transcript, an address or a model controls that enters one of them as it is can
draw an image (which every viewer's browser fetches), a link that reads as the page's own ("sign in again"), or leave
a table's cell. So there is one way to put a value in: the escaping helper, `plain` (`inline_code` for the look of
code; both in loop/files/export.py, for pages through pages/views/blocks.py), or a number.

This test reads pages/ (and app.py) as syntax trees and follows each body given to one of those calls back to what
made it: a literal, `t()` (a message of the catalogs) with escaped values, the helper, a number, or a function of
pages/ whose every return is made of those. Anything else fails, with its file and line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SINKS = {"markdown", "caption", "error", "info", "warning", "success", "toast"}
HELPERS = {"plain", "inline_code"}  # the escaping helper, and its look of code
NUMBERS = {"len", "int", "float", "sum", "round", "abs"}  # what they return is a number, or they raise
COLLECTIONS = {"enumerate", "zip", "sorted", "reversed", "list", "tuple"}  # of safe values: safe values
MESSAGES = {"t", "t_n", "say", "say_n"}  # a message of the catalogs: its values are checked
# Functions outside pages/ whose result is Markdown made only of Loopscope's own words and escaped values; each
# is read once here, with the reason it is safe.
TRUSTED = {
    "one_sentence": "loop/views/notes.py: the chapter's sentence, from the catalog",
    "remember": "loop/views/notes.py: the chapter's sentence to remember, from the catalog",
    "svg": "loop/views/diagram.py: the diagram, which draws no string from a file, escaped with html.escape",
    "fenced": "loop/files/export.py: a code fence no line of the text can close",
    "prose": "loop/files/export.py: `plain`, keeping a server's `code spans` as code",
    "no_fetch": "loop/files/export.py: a model's Markdown with its images and raw HTML made text",
    "markdown_html": "pages/views/blocks.py: a model's Markdown as HTML, raw HTML and images off",
    "table_markdown": "pages/views/chapter_table.py: the chapter's table: the catalog's words, links to the built-in "
                      "scenarios",
    "note_markdown": "pages/views/blocks.py: a Note, each of its values `plain`, or `inline_code` where its message "
                     "sets the value in backticks",
    "_css_string": "pages/views/replay.py: the catalog's words as a CSS string, in the page's own <style>",
}


@dataclass
class Module:
    path: Path
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # module-level functions, by name
    imported: dict[str, str] = field(default_factory=dict)  # a name imported from another module of pages/: its module


def modules(root: Path = ROOT) -> dict[str, Module]:
    found = {}
    for path in sorted([*root.joinpath("pages").rglob("*.py"), root / "app.py"]):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        module = Module(path, ast.parse(path.read_text(), str(path)))
        module.functions = {n.name: n for n in module.tree.body if isinstance(n, (ast.FunctionDef,
                                                                                  ast.AsyncFunctionDef))}
        found[name] = module
    for name, module in found.items():
        package = name.rsplit(".", 1)[0]
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level:
                    source = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] +
                                      ([source] if source else []))
                if source in found:
                    for alias in node.names:
                        module.imported[alias.asname or alias.name] = source
    return found


class Checker:
    """Whether an expression of pages/ is Markdown that draws only what it says."""

    def __init__(self, found: dict[str, Module]):
        self.modules = found
        self.verdicts: dict[tuple[str, str], bool] = {}  # (module, function) -> whether all its returns are safe
        # What pages/ keep in the session under a literal key (`s["class-error"] = …`), where they write it: a value
        # read back from there is as safe as everything written there.
        self.kept: dict[str, list[tuple[Module, ast.AST]]] = {}
        for module in found.values():
            for node in ast.walk(module.tree):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Subscript) and _key(target.slice) is not None:
                            self.kept.setdefault(_key(target.slice), []).append((module, node.value))
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr == "setdefault" and len(node.args) == 2 and _key(node.args[0]) is not None:
                    self.kept.setdefault(_key(node.args[0]), []).append((module, node.args[1]))

    # -- scopes ------------------------------------------------------------------------------------------------

    def scopes(self, module: Module, node: ast.AST) -> list[ast.AST]:
        """The functions (innermost first) and the module that hold `node`."""
        chain = [f for f in ast.walk(module.tree)
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and _within(node, f)]
        return [*sorted(chain, key=lambda f: (f.lineno, f.col_offset), reverse=True), module.tree]

    def bindings(self, scope: ast.AST, name: str) -> list[tuple[str, ast.AST | None]] | None:
        """How `name` gets its values in `scope` (not in functions inside it): ("value", expr) for what is bound,
        ("element", iterable) for a loop's or a comprehension's target, ("param", annotation) for a parameter;
        None when the scope binds no such name."""
        found: list[tuple[str, ast.AST | None]] = []
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = scope.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None and arg.arg == name:
                    found.append(("param", arg.annotation))
        for node in _own_nodes(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    found += _bound(target, name, node.value)
                    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
                            target.value.id == name:  # an element set: `values["why"] = …`
                        found.append(("added", node.value))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                found += _bound(node.target, name, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                if _names(node.target) and name in _names(node.target):
                    found.append(("element", node.iter))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None and name in _names(item.optional_vars):
                        found.append(("value", None))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                found.append(("value", None))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if (alias.asname or alias.name).split(".")[0] == name:
                        found.append(("import", None))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == name and \
                    node.func.attr in ("append", "extend", "insert"):
                found.append(("element" if node.func.attr == "extend" else "added", node.args[-1]))
        return found or None

    # -- expressions ---------------------------------------------------------------------------------------------

    def safe(self, module: Module, node: ast.AST, seen: frozenset = frozenset()) -> bool:
        """Whether `node` (an expression in `module`) is safe Markdown, or a collection of it."""
        match node:
            case ast.Constant(value=value):
                return isinstance(value, (str, int, float)) and not isinstance(value, bool) or value is None
            case ast.JoinedStr(values=values):
                table = any(isinstance(v, ast.Constant) and "|" in v.value for v in values)
                return all(self.safe(module, v, seen) and (not table or self.cell(module, v, seen))
                           or _coded(values, i) for i, v in enumerate(values))
            case ast.FormattedValue(value=value, format_spec=spec):
                return _numeric(spec) or self.safe(module, value, seen)
            case ast.BinOp(left=left, op=op, right=right):
                if _number(node):
                    return True
                table = any(isinstance(side, ast.Constant) and "|" in str(side.value) for side in (left, right))
                return isinstance(op, (ast.Add, ast.Mult)) and all(
                    self.safe(module, side, seen) and (not table or self.cell(module, side, seen))
                    for side in (left, right))
            case ast.IfExp(test=test, body=body, orelse=orelse):
                return (self.safe(module, body, seen) or _str_of_number(test, body)) and \
                    self.safe(module, orelse, seen)
            case ast.Lambda(body=body):
                return self.safe(module, body, seen)
            case ast.BoolOp(values=values):
                return all(self.safe(module, v, seen) for v in values)
            case ast.List(elts=elts) | ast.Tuple(elts=elts) | ast.Set(elts=elts):
                return all(self.safe(module, e, seen) for e in elts if not isinstance(e, ast.Starred)) and \
                    all(self.safe(module, e.value, seen) for e in elts if isinstance(e, ast.Starred))
            case ast.ListComp(elt=elt) | ast.GeneratorExp(elt=elt) | ast.SetComp(elt=elt) | ast.DictComp(value=elt):
                return self.safe(module, elt, seen)
            case ast.Dict(values=values):
                return all(self.safe(module, v, seen) for v in values)
            case ast.Subscript(value=value, slice=key) if _key(key) in self.kept and _session(value):
                return self.safe_kept(_key(key), seen)
            case ast.Subscript(value=value):
                return self.safe(module, value, seen)  # an element of a safe collection
            case ast.Name(id=name):
                return self.safe_name(module, node, name, seen)
            case ast.Call():
                return self.safe_call(module, node, seen)
        return False

    def cell(self, module: Module, node: ast.AST, seen: frozenset) -> bool:
        """Whether `node`, put in a Markdown table's cell, stays in it: a `|` ends a cell even in code, so a value there
        is `plain` (which escapes it), `cell(…)`, or a number; the table's own text is literal."""
        match node:
            case ast.Constant():
                return True
            case ast.FormattedValue(value=value, format_spec=spec):
                return _numeric(spec) or self.cell(module, value, seen)
            case ast.IfExp(body=body, orelse=orelse):
                return self.cell(module, body, seen) and self.cell(module, orelse, seen)
            case ast.BinOp() if _number(node):
                return True
            case ast.BinOp(left=left, right=right):
                return self.cell(module, left, seen) and self.cell(module, right, seen)
            case ast.Call(func=ast.Name(id=name)) if name in {"plain", "cell"} | NUMBERS:
                return True
            case ast.Call(func=ast.Name(id="t")) if not node.keywords:
                return True  # a message of the catalogs, no value in it
            case ast.Call(func=ast.Attribute(attr="join", value=ast.Constant(value=sep))):
                return all(self.cell(module, a, seen) for a in node.args) if "|" not in sep else True
            case ast.ListComp(elt=elt) | ast.GeneratorExp(elt=elt) | ast.List(elts=[elt]):
                return self.cell(module, elt, seen)
            case ast.JoinedStr(values=values):
                return all(self.cell(module, v, seen) for v in values)
            case ast.Name(id=name):
                for scope in self.scopes(module, node):
                    bound = self.bindings(scope, name)
                    if bound is not None:
                        return all(kind in ("value", "added", "element") and value is not None and (
                            self.cell(module, value, seen) or kind == "element" and self.cell_elements(module, value,
                                                                                                        seen))
                                   for kind, value in bound)
        return False

    def cell_elements(self, module: Module, node: ast.AST, seen: frozenset) -> bool:
        """Whether each element of the collection `node` stays in a table's cell (e.g. a tuple of literals)."""
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.cell(module, e, seen) for e in node.elts)
        return False

    def safe_name(self, module: Module, node: ast.Name, name: str, seen: frozenset) -> bool:
        key = (id(module), name, node.lineno)
        if key in seen:
            return True  # a loop of bindings adds nothing unsafe by itself
        seen = seen | {key}
        for scope in self.scopes(module, node):
            bound = self.bindings(scope, name)
            if bound is None:
                continue
            for kind, value in bound:
                if kind == "param":  # given as a number (or None, which is drawn as the word)
                    if not _number_type(value):
                        return False
                elif kind == "import":
                    if name not in HELPERS | MESSAGES | NUMBERS and name not in TRUSTED:
                        return False
                elif value is None or not self.safe(module, value, seen):
                    return False
            return True
        return name in HELPERS or name in TRUSTED

    def safe_call(self, module: Module, node: ast.Call, seen: frozenset) -> bool:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in HELPERS or name in TRUSTED or name in NUMBERS:
            return True
        if name == "str" and isinstance(func, ast.Name) and len(node.args) == 1 and _number(node.args[0]):
            return True  # the digits of a number
        if name == "cell" and isinstance(func, ast.Name):  # Markdown kept in a table's cell: as safe as it is
            return all(self.safe(module, a, seen) for a in node.args)
        if name in COLLECTIONS and isinstance(func, ast.Name):  # the same values, in another order or numbered
            return all(self.safe(module, a, seen) for a in node.args)
        if name in MESSAGES:  # a message of the catalogs, held by a literal or a constant; what fills it in is checked
            first = 1 if name.startswith("say") else 0
            message = node.args[first] if len(node.args) > first else None
            if not isinstance(message, (ast.Constant, ast.Name, ast.Attribute, ast.Subscript)):
                return False
            if any(k.arg is None and not self.safe(module, k.value, seen) for k in node.keywords):
                return False  # **values: each of them safe
            count = node.args[first + 2:first + 3] if name.endswith("_n") else []  # a value of the message too
            literal = message.value if isinstance(message, ast.Constant) else ""
            return all(self.safe(module, k.value, seen) or _coded_value(k, literal)
                       for k in node.keywords if k.arg != "_in") and all(self.safe(module, v, seen) for v in count)
        if name in ("get", "pop") and isinstance(func, ast.Attribute) and node.args and _session(func.value) and \
                _key(node.args[0]) in self.kept:  # read back from the session: as safe as what was written there
            return self.safe_kept(_key(node.args[0]), seen) and all(self.safe(module, a, seen) for a in node.args[1:])
        if name == "join" and isinstance(func, ast.Attribute):
            table = isinstance(func.value, ast.Constant) and "|" in func.value.value
            return self.safe(module, func.value, seen) and all(
                self.safe(module, a, seen) and (not table or self.cell(module, a, seen)) for a in node.args)
        if name in ("strip", "rstrip", "lstrip", "format") and isinstance(func, ast.Attribute):
            return name != "format" and self.safe(module, func.value, seen)
        if name == "render" and isinstance(func, ast.Attribute):  # a Note said with its data escaped
            data = next((k.value for k in node.keywords if k.arg == "data"), None)
            if isinstance(data, ast.Name):  # a function that escapes each value
                return data.id in HELPERS or self.safe_function(module, data.id, seen)
            return isinstance(data, ast.Lambda) and self.safe(module, data, seen)
        if isinstance(func, ast.Name):
            return self.safe_function(module, func.id, seen)
        return False

    def safe_kept(self, key: str, seen: frozenset) -> bool:
        if ("kept", key) in seen:
            return True
        return all(self.safe(module, value, seen | {("kept", key)}) for module, value in self.kept[key])

    def culprit(self, module: Module, node: ast.AST) -> ast.AST:
        """The innermost part of the unsafe `node` that is unsafe: what the message names."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr) and not isinstance(child, (ast.Name, ast.Attribute)) or \
                    isinstance(child, ast.keyword):
                value = child.value if isinstance(child, ast.keyword) else child
                if isinstance(value, ast.expr) and not self.safe(module, value) and not isinstance(node, ast.Call) \
                        or isinstance(child, ast.keyword) and not self.safe(module, value):
                    return self.culprit(module, value)
        return node

    def safe_function(self, module: Module, name: str, seen: frozenset) -> bool:
        """Whether every return of the function `name` (of this module, or imported from one of pages/) is safe."""
        owner = module
        while name not in owner.functions and name in owner.imported:
            owner = self.modules[owner.imported[name]]
        function = owner.functions.get(name)
        if function is None:
            return False
        key = (str(owner.path), name)
        if key not in self.verdicts:
            self.verdicts[key] = True  # while it is read: a function that returns itself adds nothing
            returns = [n for n in _own_nodes(function) if isinstance(n, ast.Return)]
            self.verdicts[key] = bool(returns) and all(
                r.value is not None and self.safe(owner, r.value, seen) for r in returns)
        return self.verdicts[key]


def _coded(values: list[ast.AST], i: int) -> bool:
    """Whether the f-string's part i is `in_code(…)` set between backticks of its own: inside code, nothing is
    Markdown, and in_code turns the value's own backticks into ˋ, so it cannot close the span."""
    v = values[i]
    return isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Call) and \
        isinstance(v.value.func, ast.Name) and v.value.func.id == "in_code" and 0 < i < len(values) - 1 and \
        isinstance(values[i - 1], ast.Constant) and values[i - 1].value.endswith("`") and \
        isinstance(values[i + 1], ast.Constant) and values[i + 1].value.startswith("`")


def _coded_value(keyword: ast.keyword, message: str) -> bool:
    """Whether a message's value is `in_code(…)` and the message sets it between backticks (`{name}`)."""
    v = keyword.value
    return isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "in_code" and \
        f"`{{{keyword.arg}}}`" in message


def _number_type(annotation: ast.AST | None) -> bool:
    """`int`, `float`, or either `| None`."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return all(_number_type(side) or isinstance(side, ast.Constant) and side.value is None
                   for side in (annotation.left, annotation.right))
    return isinstance(annotation, ast.Name) and annotation.id in ("int", "float")


def _key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _session(node: ast.AST) -> bool:
    """Whether `node` reads like the session's state: `st.session_state`, or a name given it (`s`, `state`)."""
    return isinstance(node, ast.Attribute) and node.attr == "session_state" or \
        isinstance(node, ast.Name) and node.id in ("s", "state", "session_state")


def _str_of_number(test: ast.AST, body: ast.AST) -> bool:
    """`str(v) if isinstance(v, int) else …`: a number's digits."""
    return isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and \
        len(test.args) == 2 and isinstance(test.args[1], ast.Name) and test.args[1].id in ("int", "float") and \
        isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id == "str" and \
        len(body.args) == 1 and ast.dump(body.args[0]) == ast.dump(test.args[0])


def _within(node: ast.AST, parent: ast.AST) -> bool:
    return node is not parent and any(child is node for child in ast.walk(parent))


def _own_nodes(scope: ast.AST):
    """The nodes of `scope`, not those of the functions and classes inside it (comprehensions included)."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _bound(target: ast.AST, name: str, value: ast.AST) -> list[tuple[str, ast.AST | None]]:
    if isinstance(target, ast.Name):
        return [("value", value)] if target.id == name else []
    if isinstance(target, (ast.Tuple, ast.List)) and name in _names(target):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            return [b for t, v in zip(target.elts, value.elts) for b in _bound(t, name, v)]
        return [("element", value)]  # unpacked: safe when what it is unpacked from holds only safe values
    return []


def _numeric(spec: ast.AST | None) -> bool:
    """A format spec only a number takes (`,`, `.1f`, `d`, `%`): a string given it raises."""
    if not isinstance(spec, ast.JoinedStr) or not all(isinstance(v, ast.Constant) for v in spec.values):
        return False
    text = "".join(v.value for v in spec.values)
    return bool(text) and ("," in text or text[-1] in "dfFeEgG%n" or "_" in text)


def _number(node: ast.AST) -> bool:
    """An arithmetic expression with a number in it: a string there raises."""
    return isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Add, ast.Mod, ast.Mult)) or \
        isinstance(node, ast.BinOp) and any(isinstance(side, ast.Constant) and isinstance(side.value, (int, float))
                                           and not isinstance(side.value, bool) for side in (node.left, node.right))


def unsafe(root: Path = ROOT) -> list[str]:
    """Each call of pages/ that draws Markdown from a value neither escaped nor a number: file:line and the call."""
    found = modules(root)
    checker = Checker(found)
    faults = []
    for module in found.values():
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SINKS):
                continue
            if not node.args or isinstance(node.func.value, ast.Name) and node.func.value.id in ("log", "_LOGGER",
                                                                                                "logging", "LOG"):
                continue
            if not checker.safe(module, node.args[0]):
                culprit = ast.unparse(checker.culprit(module, node.args[0]))
                faults.append(f"{module.path.relative_to(root)}:{node.lineno}: {culprit[:100]!r} in "
                              f"{ast.unparse(node)[:100]}")
    return faults


def test_every_value_drawn_as_markdown_in_pages_is_escaped_or_a_number():
    faults = unsafe()
    assert not faults, "wrap each value in plain() (or inline_code()), or give a number:\n" + "\n".join(faults)


BROKEN = {  # what a change might write, and whether the test lets it pass
    'st.error(f"Your loop failed: {exc}")': False,
    'st.error(t("Your loop failed: {error}", error=str(exc)))': False,
    'st.caption(t("Class {code}", code=code))': False,
    'st.markdown("| " + " | ".join(row) + " |")': False,
    'st.warning(why)': False,
    'st.error(f"Your loop failed: {plain(exc)}")': True,
    'st.error(t("Your loop failed: {error}", error=plain(exc)))': True,
    'st.caption(t("Class {code}", code=inline_code(code)))': True,
    'st.markdown("| " + " | ".join(plain(v) for v in row) + " |")': True,
    'st.info(t("{n} steps", n=len(steps)))': True,
    'st.info(f"{total:,} rows")': True,
}


@pytest.mark.parametrize("call", list(BROKEN))
def test_the_check_fails_on_a_value_drawn_unescaped(tmp_path, call):
    (tmp_path / "pages").mkdir()
    (tmp_path / "app.py").write_text("")
    (tmp_path / "pages" / "probe.py").write_text(
        "import streamlit as st\nfrom pages.views.blocks import inline_code, plain\nfrom pages.views.i18n import t\n\n"
        f"def draw(exc, code, row, why, steps, total):\n    {call}\n")
    assert (unsafe(tmp_path) == []) == BROKEN[call], unsafe(tmp_path)


# -- the probes: what a learner's code and an address put on a page is drawn as text ------------------------------------

EXCEPTION = 'raise Exception("![x](http://127.0.0.1:9/exception.png) [sign in again](http://evil)")\n'
CLASS = "![](//127.1)"  # a class code in the address that, drawn as Markdown, made the browser fetch http://127.0.0.1/


def acted_on(markdown: str) -> list[str]:
    """What Markdown in `markdown` would act: an image, a link (CommonMark with GFM's tables, as Streamlit reads it)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    inline = [child for token in tokens for child in (token.children or [])]
    return [f"{t.type} {dict(t.attrs)}" for t in inline if t.type in ("image", "link_open")]


def in_process():
    """sandboxed.run replaced by the in-process recorder (tests/learner.py): the page's part is what is checked."""
    from unittest import mock

    from tests.learner import record

    return mock.patch("loop.yours.sandboxed.run", side_effect=lambda source, scenario, lang, **limits:
                      record(source, scenario, lang))


@pytest.mark.usefixtures("no_child_ahead")
def test_an_exception_a_learners_code_raises_is_drawn_as_text_in_the_error_box():
    from pages.views.permalink import code_param
    from tests.apptest import app

    with in_process():
        at = app("pages/yours.py", code=code_param(EXCEPTION), scenario="list-files")
    [box] = [e.value for e in at.error]
    assert "your code raised an exception at line 1" in box and "sign in again" in box
    assert acted_on(box) == []


@pytest.mark.usefixtures("no_child_ahead")
def test_a_bar_in_the_learners_state_stays_in_its_cell():
    from loop.yours.listing import CHAPTER_LOOP
    from pages.views.permalink import code_param
    from tests.apptest import app

    source = CHAPTER_LOOP.replace('state["transition_reason"] = "tool_result"',
                                  'state["transition_reason"] = "a | b ![s](http://127.0.0.1:9/state.png)"')
    assert source != CHAPTER_LOOP
    with in_process():
        at = app("pages/yours.py", code=code_param(source), scenario="list-files", step="7")  # the second call
    [table] = [m.value for m in at.markdown if m.value.startswith("| |")]
    from markdown_it import MarkdownIt

    drawn = MarkdownIt("commonmark").enable("table").render(table)
    # The whole value in its cell, as code (a bar ends a cell even in code: cut there, the rest was dropped)
    assert "<td><code>a | b ![s](http://127.0.0.1:9/state.png)</code></td>" in drawn, drawn
    assert acted_on(table) == []


def test_a_class_code_in_the_address_is_drawn_as_text():
    from tests.apptest import app

    at = app(**{"class": CLASS})
    said = "\n".join(e.value for e in at.error)
    assert "No class has the code" in said and acted_on(said) == []


def test_in_chromium_a_code_link_raising_markdown_and_a_class_code_of_markdown_fetch_nothing(app_server, new_page):
    from urllib.parse import quote, urlparse

    from pages.views.permalink import code_param
    from tests.browser import settled
    from tests.test_browser_yours import FAVICON

    url = app_server[0]
    own = urlparse(url).netloc
    page = new_page(1400, 1000)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    elsewhere = lambda: [u for u in requested if urlparse(u).scheme in ("http", "https", "ws", "wss")  # noqa: E731
                         and urlparse(u).netloc != own and not u.startswith(FAVICON)]
    # A code link: the learner's file runs in the sandbox and raises; its message is Markdown with an image and a link.
    page.goto(f"{url}/yours?code={code_param(EXCEPTION)}&scenario=list-files")
    box = page.locator("[data-testid='stAlertContentError']").filter(has_text="your code raised an exception")
    box.wait_for(timeout=120_000)
    settled(page)  # drawn and painted: an image in it would have been asked for
    assert elsewhere() == []
    assert "![x](http://127.0.0.1:9/exception.png) [sign in again](http://evil)" in box.inner_text()
    # No image, and no link that reads as the page's own (a bare address may still show as itself, a link to it)
    assert page.locator("img[src*='exception.png']").count() == 0
    assert page.get_by_role("link", name="sign in again").count() == 0
    # A class code in the address that is Markdown: an image of http://127.0.0.1/ (//127.1).
    page.goto(f"{url}/?class={quote(CLASS)}")
    said = page.locator("[data-testid='stAlertContentError']").filter(has_text="No class has the code")
    said.wait_for(timeout=60_000)
    settled(page)
    assert elsewhere() == []
    assert CLASS in said.inner_text() and page.locator("img[src*='127.1']").count() == 0
