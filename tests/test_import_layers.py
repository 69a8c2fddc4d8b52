"""An upload is imported in a process of its own (importers/isolated.py), started for every upload: what
`import loop.importers` loads is what each upload waits for before its first byte is read."""

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# One fresh Python serves a group of statements that begin alike: it runs what they share, then forks a child for
# each, which runs its own statement and says what it then holds. A child's modules are what a fresh Python's would be
# after the shared part and its statement; Python's start and the shared imports are paid once for the group.
FORKED = r"""
import json, os, sys
first, statements = json.loads(sys.argv[1])
exec(first)
answers = []
for statement in statements:
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # what a command prints is not the answer
        try:
            exec(statement)
            failed = ""
        except BaseException as exc:
            failed = f"{type(exc).__name__}: {exc}"
        with os.fdopen(write, "w") as answer:
            json.dump([sorted(sys.modules), failed], answer)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        answers.append(json.load(answer))
    os.wait()
print(json.dumps(answers))
"""


def loaded_by(*statements: str, first: str = "") -> list[tuple[set[str], str]]:
    """For each statement, the modules a fresh Python holds after `first` and it, and what it raised ("" if
    nothing)."""
    done = subprocess.run([sys.executable, "-c", FORKED, json.dumps([first, list(statements)])],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return [(set(modules), failed) for modules, failed in json.loads(done.stdout)]


IMPORTERS = "import loop.importers, loop.importers.isolated"
YOURS = "import loop.yours.sandboxed, loop.yours.reading, loop.yours.program"


@functools.cache
def bare() -> dict[str, set[str]]:
    """The modules of the statements that start from a bare Python, in one process for both tests below."""
    answers = loaded_by(IMPORTERS, YOURS)
    assert [failed for _, failed in answers] == ["", ""], answers
    return {IMPORTERS: answers[0][0], YOURS: answers[1][0]}


def test_importing_the_importers_loads_no_sdk_and_no_engine():
    modules = bare()[IMPORTERS]
    assert "loop.importers.derive" in modules  # the importers themselves were loaded
    assert not {"anthropic", "httpx", "httpx2", "loop.engine.runner", "loop.engine.model", "loop.engine.retry"} & modules


def test_the_commands_that_call_no_model_load_no_sdk():
    # replay, check, quiz, import, scenarios and runs start in a fraction of a second; run and serve load the SDK
    commands = (["scenarios"], ["check", "samples/hello-py.json"], ["replay", "samples/hello-py.json"],
                ["quiz", "samples/subagent.json"], ["runs", "--store", "/nonexistent-loopscope-store", "list"])
    # record and yours answer offline at the wire: the SDK is the recorded program's, loaded in its own process
    record = "import tempfile\nmain(['record', '--out', tempfile.mktemp(suffix='.json'), '--', 'true'])"
    # The SDK held back (None in sys.modules: importing it fails at once, sparing its second and more of import),
    # importing the runner stops at it: `run` loads the SDK, and these checks would see it.
    runner = "sys.modules['anthropic'] = None\nimport loop.engine.runner"
    *ran, recorded, held_back = loaded_by(*[f"main({argv!r})" for argv in commands], record, runner,
                                          first="from loop.__main__ import main")
    for argv, (modules, failed) in zip(commands, ran):
        assert failed == "" and "loop.files.transcript" in modules and "anthropic" not in modules, (argv, failed)
    assert held_back[1] == "ModuleNotFoundError: import of anthropic halted; None in sys.modules", held_back[1]
    assert recorded[1] == "" and "loop.record.endpoint" in recorded[0] and "anthropic" not in recorded[0], recorded[1]
    yours = bare()[YOURS]
    assert "loop.yours.recorder" in yours and "anthropic" not in yours


def test_the_words_of_the_end_are_the_same_for_a_live_run_and_an_imported_one():
    from loop.engine import chapter, endings
    from loop.views import narrate
    from loop.importers import derive

    assert chapter.why_ended is endings.why_ended is derive.why_ended is narrate.why_ended
    assert chapter.GO_ON is endings.GO_ON is derive.GO_ON


# The layers, read from the code: which file imports which. An import inside a function is an import too (it runs
# the first time the function does), so the graph holds every `import` statement of a file, wherever it stands.
SOURCES = ("loop", "pages", "app.py")  # what the product runs; tests/ and bench/ may import anything


def _modules(root: Path, sources=SOURCES) -> dict[str, Path]:
    """{dotted module name: its file} for every Python file of `sources` (a package is its __init__.py)."""
    found = {}
    for source in sources:
        place = root / source
        for path in sorted([place] if place.is_file() else place.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


_WALKED: dict[tuple[Path, str], list[ast.AST]] = {}


def _walked(path: Path) -> list[ast.AST]:
    """Every node of a file's syntax tree, as `ast.walk` gives them. The checks below each read the whole tree;
    parsing it is most of their time, so a file is parsed once for all of them (again only if its text changed, as
    the tests' own small trees do)."""
    text = path.read_text()
    if (path, text) not in _WALKED:
        _WALKED[path, text] = list(ast.walk(ast.parse(text, str(path))))
    return _WALKED[path, text]


def _packages(modules: dict[str, Path]) -> set[str]:
    return {name for name, path in modules.items() if path.name == "__init__.py"}


def _named(module: str, node, packages: set[str]) -> list[str]:
    """The dotted names an import statement in `module` loads, relative ones made whole."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        here = module.split(".") if module in packages else module.split(".")[:-1]
        here = here[:len(here) - (node.level - 1)]
        base = ".".join(here + ([base] if base else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path, sources=SOURCES) -> dict[str, dict[str, int]]:
    """{module: {module of ours it imports: the line of the first such import}}.

    Importing `a.b.c` runs the packages `a` and `a.b` first, so those count as imported too (except the
    packages the importing module is itself inside: they are already running when it is loaded).
    """
    modules = _modules(root, sources)
    packages = _packages(modules)
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, path in modules.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)} | ({name} & packages)
        for node in _walked(path):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for dotted in _named(name, node, packages):
                parts = dotted.split(".")
                for i in range(1, len(parts) + 1):
                    target = ".".join(parts[:i])
                    if target in modules and target not in own and target != name:
                        graph[name].setdefault(target, node.lineno)
    return graph


def _circle(graph: dict, starts=None) -> list[str] | None:
    """One circle of the graph through one of `starts` (any node by default), as its nodes in order (the first
    again at the end), or None."""
    for start in sorted(graph if starts is None else starts):
        came_from = {start: None}
        queue = [start]
        while queue:
            node = queue.pop(0)
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    path = [node]
                    while came_from[path[0]] is not None:
                        path.insert(0, came_from[path[0]])
                    return path + [start]
                if nxt not in came_from:
                    came_from[nxt] = node
                    queue.append(nxt)
    return None


def _folded(graph: dict[str, dict[str, int]], package: str) -> dict[str, dict[str, tuple[str, int]]]:
    """The graph with every module inside `package` (at any depth) made one node, `package/`; each arrow keeps
    the import it stands for (importing module, line). Arrows inside the folder are dropped."""
    def node(name: str) -> str:
        return package.replace(".", "/") + "/" if name == package or name.startswith(package + ".") else name

    folded: dict[str, dict[str, tuple[str, int]]] = {}
    for name, targets in graph.items():
        for target, line in targets.items():
            if node(name) != node(target):
                folded.setdefault(node(name), {}).setdefault(node(target), (name, line))
    return folded


def _said(circle: list[str], where) -> str:
    return "\n".join(f"  {a} -> {b}  ({where(a, b)})" for a, b in zip(circle, circle[1:]))


def file_circles(root: Path, sources=SOURCES) -> str:
    """One circle of files that import each other, through others or not; "" when there is none."""
    graph = import_graph(root, sources)
    modules = _modules(root, sources)
    circle = _circle(graph)
    if not circle:
        return ""
    return "files that import each other:\n" + _said(
        circle, lambda a, b: f"{modules[a].relative_to(root)} line {graph[a][b]}")


def folder_circles(root: Path, sources=SOURCES) -> str:
    """For each package (a folder), one circle through it: a module inside it importing a module outside that
    imports it back (a lower layer importing a higher one), or the like through other modules."""
    graph = import_graph(root, sources)
    modules = _modules(root, sources)
    found = []
    for package in sorted(_packages(modules)):
        folded = _folded(graph, package)
        circle = _circle(folded, [package.replace(".", "/") + "/"])
        if circle:
            found.append(f"the folder {package.replace('.', '/')}/ and what imports it back:\n" + _said(
                circle, lambda a, b: f"{modules[folded[a][b][0]].relative_to(root)} line {folded[a][b][1]}"))
    return "\n".join(found)


def test_no_two_files_import_each_other_even_through_others():
    assert file_circles(ROOT) == ""


def test_no_folder_imports_a_module_that_imports_the_folder_back():
    assert folder_circles(ROOT) == ""


def test_the_graph_sees_imports_inside_functions_and_says_where(tmp_path):
    (tmp_path / "low").mkdir()
    (tmp_path / "low" / "__init__.py").write_text("from .tool import Tool\n")
    (tmp_path / "low" / "tool.py").write_text("class Tool:\n    def run(self):\n        from high import Box\n")
    (tmp_path / "high.py").write_text("import low\n\n\nclass Box:\n    pass\n")
    assert file_circles(tmp_path, ("low", "high.py")).splitlines() == [
        "files that import each other:",
        "  high -> low  (high.py line 1)",
        "  low -> low.tool  (low/__init__.py line 1)",
        "  low.tool -> high  (low/tool.py line 3)"]
    assert folder_circles(tmp_path, ("low", "high.py")).splitlines() == [
        "the folder low/ and what imports it back:",
        "  low/ -> high  (low/tool.py line 3)",
        "  high -> low/  (high.py line 1)"]
    (tmp_path / "low" / "tool.py").write_text("class Tool:\n    pass\n")
    assert file_circles(tmp_path, ("low", "high.py")) == folder_circles(tmp_path, ("low", "high.py")) == ""


def private_names_borrowed(root: Path, sources=SOURCES) -> list[str]:
    """Each place a module takes another module's private name (`_x`): `from m import _x`, or `m._x` of a module
    `m` it imported. A name another module needs is public; one only its own module uses stays private there."""
    modules = _modules(root, sources)
    packages = _packages(modules)
    found = []
    for name, path in modules.items():
        ours = set()  # the local names bound to modules of ours
        for node in _walked(path):
            if isinstance(node, ast.Import):
                ours |= {alias.asname or alias.name.split(".")[0] for alias in node.names
                         if alias.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = _named(name, node, packages)[0]
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        ours.add(alias.asname or alias.name)
                    elif base in modules and alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(root)} line {node.lineno}: from {base} import {alias.name}")
        for node in _walked(path):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ours \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(f"{path.relative_to(root)} line {node.lineno}: {node.value.id}.{node.attr}")
    return sorted(found)


def test_no_module_borrows_another_module_s_private_name():
    assert private_names_borrowed(ROOT) == []


def test_a_private_name_borrowed_is_said_where(tmp_path):
    (tmp_path / "low").mkdir()
    (tmp_path / "low" / "__init__.py").write_text("")
    (tmp_path / "low" / "tool.py").write_text("def _run():\n    pass\n\n\n_cache = {}\n")
    (tmp_path / "high.py").write_text("from low.tool import _run\nfrom low import tool\n\ntool._cache.clear()\n")
    assert private_names_borrowed(tmp_path, ("low", "high.py")) == [
        "high.py line 1: from low.tool import _run", "high.py line 4: tool._cache"]


# -- the layers README.md draws: loop/ imports no Streamlit; its folders import only the ones listed before them --

def _readme_layers(readme: Path) -> list[str]:
    """The parts of loop/ in the order of README's "How it is built" table: folder names ("engine") and
    top-level modules ("__main__")."""
    text = readme.read_text()
    table = text[text.index("## How it is built"):]
    found = re.findall(r"^\s*\| `loop/([\w.]+?)/?(?:\.py)?` \|", table, re.M)
    return [name.removesuffix(".py") for name in found]


def _part(module: str) -> str:
    """The part of loop/ a module is in: its folder, or for loop/__main__.py the module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path, module: str, packages: set[str]) -> list[tuple[str, int]]:
    """(dotted name, line) of every import in a file, wherever it stands (in a function too), relative ones made
    whole; and `import_module("...")` with a literal name."""
    found = []
    for node in _walked(path):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [(name, node.lineno) for name in _named(module, node, packages)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            found.append((str(node.args[0].value), node.lineno))
    return found


def upward_imports(root: Path) -> list[str]:
    """Each import in loop/ of a part listed at or after the importing part in README's table (and of a part
    the table does not list), as "file line: a -> b"."""
    order = _readme_layers(root / "README.md")
    modules = _modules(root, ("loop",))
    packages = _packages(modules)
    parts = {_part(name) for name in modules} - {""}  # the folders, and __main__
    found = []
    for name, path in sorted(modules.items()):
        here = _part(name)
        if not here:  # loop/__init__.py: the package, which loads its parts only when a name of theirs is asked for
            continue
        statements: dict[int, list[str]] = {}
        for target, line in _imports(path, name, packages):
            statements.setdefault(line, []).append(target)
        for line, targets in sorted(statements.items()):
            # the module a statement loads (`from a.b import c` names a.b, and a.b.c when c is a module)
            target = max((t for t in targets if t in modules), key=len, default=targets[0])
            there = _part(target)
            if not target.startswith("loop.") or there == here or there not in parts:
                continue
            where = f"{path.relative_to(root)} line {line}: {name} -> {target}"
            if here not in order or there not in order:
                found.append(f"{where} (README's table lists no {(here if here not in order else there)!r})")
            elif order.index(there) >= order.index(here):
                found.append(where)
    return found


def test_readme_lists_every_part_of_loop_in_its_table():
    order = _readme_layers(ROOT / "README.md")
    assert order[:3] == ["text", "tools", "engine"] and order[-1] == "__main__", order
    parts = {p.name for p in (ROOT / "loop").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert parts <= set(order), f"README.md's table of loop/ lacks {sorted(parts - set(order))}"


def test_each_folder_of_loop_imports_only_the_ones_listed_before_it_in_readme():
    assert upward_imports(ROOT) == []


def test_loop_imports_no_streamlit():
    modules = _modules(ROOT, ("loop",))
    packages = _packages(modules)
    found = [f"{path.relative_to(ROOT)} line {line}: {target}" for name, path in sorted(modules.items())
             for target, line in _imports(path, name, packages) if target.split(".")[0] == "streamlit"]
    assert found == []


def test_the_layer_checks_see_an_upward_import_and_streamlit_wherever_they_stand(tmp_path):
    (tmp_path / "loop" / "text").mkdir(parents=True)
    (tmp_path / "loop" / "views").mkdir()
    for init in ("loop", "loop/text", "loop/views"):
        (tmp_path / init / "__init__.py").write_text("")
    (tmp_path / "loop" / "views" / "say.py").write_text("from ..text import words\n")
    (tmp_path / "loop" / "text" / "words.py").write_text("def cut():\n    from loop.views.say import x\n")
    (tmp_path / "README.md").write_text("## How it is built\n\n| folder | what |\n| --- | --- |\n"
                                        "| `loop/text/` | words |\n| `loop/views/` | views |\n")
    assert upward_imports(tmp_path) == ["loop/text/words.py line 2: loop.text.words -> loop.views.say"]
    (tmp_path / "README.md").write_text("## How it is built\n\n| `loop/views/` | views |\n| `loop/text/` | words |\n")
    assert upward_imports(tmp_path) == ["loop/views/say.py line 1: loop.views.say -> loop.text.words"]
    (tmp_path / "loop" / "views" / "say.py").write_text("import importlib\nst = importlib.import_module('streamlit')\n")
    assert [(t, line) for t, line in _imports(tmp_path / "loop/views/say.py", "loop.views.say", set())
            if t == "streamlit"] == [("streamlit", 2)]
