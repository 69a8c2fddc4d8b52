"""A step's detail is read by its typed fields (loop/engine/details.py), and nothing writes to one once made.

The code of loop/ and pages/ reads `step.detail.tool_use_id`, never `step.detail["tool_use_id"]` nor
`step.detail.get("tool_use_id")`: a key misspelt in a dict read is a silent None, a field misspelt is an error the
tests meet, and the type says which stage has which field. Read from the syntax tree, as the code is written:
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "loop").rglob("*.py"), *(ROOT / "pages").rglob("*.py"), ROOT / "app.py"])

# What holds a step's detail: `<step>.detail`, a page's record of it (`StepView.recorded`, its JSON), a name
# `detail`, a name given one of those (or a detail made: `RunToolDetail(...)`, `details.of(...)`,
# `replace(detail, ...)`), and a parameter typed as a detail.
ATTRIBUTES = {"detail", "recorded"}
TYPED = re.compile(r"^(\w+\.)*\w*Detail( \| None)?$")
MAKERS = re.compile(r"^((\w+\.)*\w*Detail|(details\.)?of|(dataclasses\.)?replace)$")
# Reading it as a dict, or writing to it as one.
METHODS = {"get", "setdefault", "update", "pop", "popitem", "clear"}


def _holds_detail(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in ATTRIBUTES
    if isinstance(node, ast.Name):
        return node.id == "detail" or node.id in names
    if isinstance(node, ast.IfExp):
        return _holds_detail(node.body, names) or _holds_detail(node.orelse, names)
    if isinstance(node, ast.BoolOp):
        return any(_holds_detail(value, names) for value in node.values)
    if isinstance(node, ast.Call):
        return bool(MAKERS.match(ast.unparse(node.func)))
    return False


def _scopes(tree: ast.Module):
    yield tree
    yield from (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def _names(scope: ast.AST) -> set[str]:
    """The names that hold a detail in `scope` (its own assignments and parameters; nested scopes count too)."""
    names: set[str] = set()
    if not isinstance(scope, ast.Module):
        for arg in [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs]:
            if arg.annotation is not None and TYPED.match(ast.unparse(arg.annotation)):
                names.add(arg.arg)
    nodes = list(ast.walk(scope))
    for _ in range(3):  # a name given another that holds one
        for node in nodes:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and TYPED.match(ast.unparse(node.annotation)):
                names.add(node.target.id)
            pairs = []
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        pairs += zip(target.elts, node.value.elts)
                    else:
                        pairs.append((target, node.value))
            elif isinstance(node, ast.NamedExpr):
                pairs.append((node.target, node.value))
            for target, value in pairs:
                if isinstance(target, ast.Name) and _holds_detail(value, names):
                    names.add(target.id)
    return names


def dict_uses(source: str, name: str = "<source>") -> list[tuple[int, str]]:
    """(line, what) of each place `source` reads or writes a step's detail as a dict."""
    tree = ast.parse(source, name)
    found = set()
    for scope in _scopes(tree):
        names = _names(scope)
        for node in ast.walk(scope):
            if isinstance(node, ast.Subscript) and _holds_detail(node.value, names):
                found.add((node.lineno, f"[...] ({type(node.ctx).__name__.lower()})"))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in METHODS \
                    and _holds_detail(node.func.value, names):
                found.add((node.lineno, f".{node.func.attr}("))
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                    and any(_holds_detail(c, names) for c in node.comparators):
                found.add((node.lineno, "in"))
            elif isinstance(node, ast.Delete) and any(_holds_detail(t, names) for t in node.targets):
                found.add((node.lineno, "del"))
    return sorted(found)


@pytest.mark.parametrize("source", [
    'step.detail.get("why")',
    'x = trace.steps[i].detail["tool_use_id"]',
    'def f(step):\n    d = step.detail if step else {}\n    return d.get("thread")',
    'def f(step):\n    stage, d = step.stage, step.detail\n    return d["budget"]',
    'def f(d: RunToolDetail):\n    return d.get("output")',
    'def f(d: details.CompactDetail | None):\n    return "history_before" in d',
    'detail["why"] = "words"',
    'detail.update(why="words")',
    'def f(x):\n    d = details.of("decide", x)\n    d.setdefault("why", "")',
    'def f(x):\n    d = replace(x.detail, why="")\n    return d["why"]',
    'v.recorded.get("mistake")',
])
def test_the_check_finds_a_detail_read_or_written_as_a_dict(source):
    assert dict_uses(source), source


@pytest.mark.parametrize("source", [
    'step.detail.tool_use_id',
    'step.detail.to_dict()',
    'trace.steps[i].detail.response.get("usage")',  # a field's own JSON object is data
    'd = {"why": 1}\nd.get("why")',
    'facts = dict(event["detail"])\nfacts.get("request")',  # a reader's JSON, before it is a detail
    'detail = replace(detail, why="words")',
    'step.detail.given("why")',
])
def test_the_check_leaves_typed_reads_and_other_dicts_alone(source):
    assert not dict_uses(source), source


def test_loop_and_pages_read_a_step_s_detail_by_its_fields_only():
    found = [f"{path.relative_to(ROOT)}:{line}: {what}" for path in SOURCES
             for line, what in dict_uses(path.read_text(encoding="utf-8"), str(path))]
    assert not found, "a step's detail read or written as a dict (read its fields: step.detail.name):\n" + \
        "\n".join(found)
