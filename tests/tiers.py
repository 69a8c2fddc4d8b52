"""The suite's tiers: each test is marked by what it uses, so that `-m "not browser"` and the like select it
without the test saying anything itself (conftest.py registers the markers and marks each test; README.md says
which `make` target runs which).

What a test uses is read from its code: the fixtures it asks for (with the fixtures they ask for), parameters
such as `[postgres]`, and the names and strings (not the comments or docstrings) of the test's code, of those
fixtures' code and of every function or class of tests/, bench/ or deploy/ that they name, followed name by name
(a helper that starts a class of replicas marks the tests that call it), and of a script of bench/ or deploy/ they
start. The product's own code (loop/, pages/) is not followed, except that calling the sandbox's modules is using
the sandbox: what the suite starts for a test is what counts, not what the app may do.

- `browser`: Chromium (Playwright).
- `postgres`: a real PostgreSQL server.
- `replicas`: HAProxy in front of Streamlit replicas (deploy/classroom.py).
- `sandbox`: commands in the bubblewrap sandbox, asked for directly (a workspace, a command's tag, the sandbox's
  own modules). Runs of the scripted model run commands too; they are not marked, as nearly every engine test
  would be.
- `npm`: a client installed from npm (a real Claude Code, say): its code names npm, npx, node_modules or an
  `@anthropic-ai/` package.

A test may also carry a marker by hand (`@pytest.mark.browser`), where its use is hidden from this reading.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLLOWED = tuple(str(ROOT / folder) + "/" for folder in ("tests", "bench", "deploy"))

TIERS = {
    "browser": "uses Chromium (Playwright)",
    "postgres": "uses a real PostgreSQL server",
    "replicas": "uses HAProxy in front of Streamlit replicas (deploy/classroom.py)",
    "sandbox": "runs commands in the bubblewrap sandbox, asked for directly",
    "npm": "uses a client installed from npm",
}
FIXTURES = {
    "browser": {"chromium", "new_page", "module_tab"},
    "postgres": {"postgres_server"},
    "sandbox": {"workspace", "shared", "tag"},
}
# The names, attributes, arguments and strings in code that say a test uses a tier (comments and docstrings are
# not read).
WORDS = {
    "browser": re.compile(r"sync_playwright|playwright|\bnew_page\b|\bmodule_tab\b|chromium"),
    "postgres": re.compile(r"\bpostgres_server\b|\bpg_ctl\b"),
    "replicas": re.compile(r"haproxy|\bClassroom\b|classroom\.py"),
    "sandbox": re.compile(r"\bbwrap\b|bubblewrap|\bsandboxed\b|\bToolBox\b|\bWorkspace\b|loop\.tools\.sandbox"),
    "npm": re.compile(r"\bnpm\b|\bnpx\b|node_modules|@anthropic-ai/"),
}
# The modules whose functions or classes, named in a test's code, say it uses a tier.
MODULES = {
    "browser": ("playwright",),
    "replicas": ("deploy.classroom",),
    "sandbox": ("loop.tools.sandbox", "loop.tools.bash", "loop.tools.workspace", "loop.tools.cgroups",
                "loop.yours.sandboxed"),
}


def _unwrapped(value):
    """A decorated function's own code (a @contextmanager's generator, say)."""
    while isinstance(value, types.FunctionType) and isinstance(getattr(value, "__wrapped__", None),
                                                                types.FunctionType):
        value = value.__wrapped__
    return value


def _file(thing) -> str:
    if isinstance(thing, types.FunctionType):
        return thing.__code__.co_filename
    module = sys.modules.get(getattr(thing, "__module__", ""), None)
    return getattr(module, "__file__", None) or ""


def _followed(value) -> bool:
    """A function or class of tests/, bench/ or deploy/: its code is read too."""
    return isinstance(value, (types.FunctionType, type)) and _file(_unwrapped(value)).startswith(FOLLOWED)


def _words(code: types.CodeType, doc: str | None) -> set[str]:
    """The names, attributes, arguments and strings of compiled code (and of the code inside it): what it does,
    without its comments and its docstrings."""
    found = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars)
    consts = code.co_consts
    if code.co_flags & inspect.CO_OPTIMIZED and consts and isinstance(consts[0], str):
        consts = consts[1:]  # a function's docstring is its first constant
    for const in consts:
        if isinstance(const, types.CodeType):
            found |= _words(const, None)
        elif isinstance(const, (str, bytes)) and const != doc:
            found.add(const.decode(errors="replace") if isinstance(const, bytes) else const)
    return found


@functools.cache
def _script_words(name: str) -> frozenset[str]:
    """The words of bench/NAME or deploy/NAME, a script a test runs as a process of its own (empty: no such)."""
    for folder in ("bench", "deploy"):
        path = ROOT / folder / Path(name).name
        if path.is_file():
            try:
                text = path.read_text()
                return frozenset(_words(compile(text, str(path), "exec"), ast.get_docstring(ast.parse(text), clean=False)))
            except (OSError, SyntaxError, ValueError):
                return frozenset()
    return frozenset()


@functools.cache
def _own(thing) -> tuple[frozenset, tuple]:
    """(the tiers `thing`'s own code says it uses, the functions and classes of ours it names)."""
    module = vars(sys.modules.get(thing.__module__, types.ModuleType("none")))
    if isinstance(thing, types.FunctionType):
        cells = zip(thing.__code__.co_freevars, (c.cell_contents for c in thing.__closure__ or ()))
        scope, words = {**module, **dict(cells)}, _words(thing.__code__, thing.__doc__)
    else:
        scope, words = module, set()
        for member in vars(thing).values():
            member = getattr(member, "__func__", member)  # a staticmethod's, a classmethod's function
            if isinstance(member, types.FunctionType):
                words |= _words(member.__code__, member.__doc__)
    for word in [w for w in words if w.endswith(".py")]:  # a script of bench/ or deploy/ the test starts
        words |= _script_words(word)
    tiers = {tier for tier, pattern in WORDS.items() if any(pattern.search(word) for word in words)}
    names = words  # a word that names nothing in the scope is passed over below
    named = []
    for name in names:
        value = scope.get(name)
        if isinstance(value, types.ModuleType):  # module.function: the function, named as an attribute
            used = value.__name__
            named += [_unwrapped(getattr(value, n)) for n in names if _followed(getattr(value, n, None))]
        elif _followed(value):
            named.append(_unwrapped(value))
            continue
        elif isinstance(value, (types.FunctionType, type)):
            used = getattr(value, "__module__", None) or ""
        else:
            continue
        tiers |= {tier for tier, modules in MODULES.items() if used.startswith(modules)}
    return frozenset(tiers), tuple(named)


@functools.cache
def _reached(thing) -> frozenset[str]:
    """The tiers `thing` and everything of ours it names, transitively, use."""
    seen, queue, tiers = set(), [thing], set()
    while queue:
        now = queue.pop()
        if now in seen:
            continue
        seen.add(now)
        own, named = _own(now)
        tiers |= own
        queue += named
    return frozenset(tiers)


def tiers_of(item) -> set[str]:
    """The tiers a collected test belongs to."""
    found = set()
    fixtures = set(getattr(item, "fixturenames", ()))
    for tier, names in FIXTURES.items():
        if fixtures & names:
            found.add(tier)
    function = _unwrapped(getattr(item, "function", None))
    if isinstance(function, types.FunctionType):
        found |= _reached(function)
    info = getattr(item, "_fixtureinfo", None)
    for name in fixtures:
        for definition in (info.name2fixturedefs.get(name, ()) if info else ()):
            fixture = getattr(definition, "func", None)
            # What every test gets says nothing of this one; a fixture with parameters ([sqlite] and [postgres])
            # uses a tier only for its own parameter (below).
            if getattr(definition, "_autouse", False) or definition.params or not _followed(fixture):
                continue
            found |= _reached(_unwrapped(fixture))
    params = {str(value) for value in getattr(getattr(item, "callspec", None), "params", {}).values()}
    return found | (params & set(TIERS))
