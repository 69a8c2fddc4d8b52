"""Which script run this is: the whole page's, or a fragment's alone; and a token of each run's own.

Streamlit runs the page's whole script for a page's run, and only a fragment's function for a click in that
fragment, its timer, or the server's wake (wake.py). What a view needs to know of the run, found out here with
Streamlit's public parts only:

- `alone()`: this run is a fragment's alone (the step then draws what sits under it itself: step.py; a follower's
  step takes the class's step: following.py `_sync`);
- `token()`: an object of this run's own, new at each run (a fragment's too), None outside one: what a view keeps
  for the length of a run is kept under it (the learner's language, i18n.py).

A fragment's run alone that ends with a click's action still waiting (its callback came with this run, for
controls another fragment draws: clicks.py) reruns the page, which takes it.

The page's run is marked by app.py (`page()`); a fragment's by `fragment`, with which every fragment of the app is
made instead of `st.fragment` (tests/test_script_run.py finds any other): the page's code calls a fragment through
the function `fragment` returns, while Streamlit, running a fragment alone, calls the function it was given, the
one inside. Both are kept in context variables, as Streamlit keeps its own state of a run: a thread's own, and
copied into the thread of a fragment run in parallel with the page.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import streamlit as st

from . import clicks


@dataclass(frozen=True, eq=False)
class ScriptRun:
    """One run of the page or of a fragment alone (compared by identity: each run is its own)."""

    alone: bool  # a fragment's run alone, not the whole page's


_RUN: contextvars.ContextVar[ScriptRun | None] = contextvars.ContextVar("loopscope_script_run", default=None)
_CALLING = contextvars.ContextVar("loopscope_calling_a_fragment", default=False)  # the run's code calls one now


def token() -> ScriptRun | None:
    """The run going on (None outside one: a widget's callback, which Streamlit calls before the script, or a page
    not started by app.py)."""
    return _RUN.get()


def alone() -> bool:
    """Whether this run is a fragment's alone (False in the page's run, and in a fragment the page's run called)."""
    run = token()
    return run is not None and run.alone


@contextlib.contextmanager
def page() -> Iterator[None]:
    """The page's whole run (app.py, around everything its script draws)."""
    mark = _RUN.set(ScriptRun(alone=False))
    try:
        yield
    finally:
        _RUN.reset(mark)


def fragment(func: Callable | None = None, /, **options) -> Callable:
    """`st.fragment(func, **options)`, whose runs alone are marked as such: use it for every fragment (also as
    `@fragment` and `@fragment(run_every=...)`)."""
    if func is None:
        return lambda f: fragment(f, **options)

    @functools.wraps(func)  # (Streamlit names a fragment by its function's module and name: kept)
    def inside(*args, **kwargs):
        if _CALLING.get():  # called by the code of the run going on: part of that run
            mark = _CALLING.set(False)  # (a fragment inside this one is called through its own `called`)
            try:
                return func(*args, **kwargs)
            finally:
                _CALLING.reset(mark)
        mark = _RUN.set(ScriptRun(alone=True))  # Streamlit runs the fragment alone
        try:
            drawn = func(*args, **kwargs)
        finally:
            _RUN.reset(mark)
        if clicks.waiting():  # a click came with this fragment's run, for controls it did not draw (clicks.py)
            clicks.run_the_page_for_it()
        return drawn

    made = st.fragment(inside, **options)

    @functools.wraps(func)
    def called(*args, **kwargs):
        mark = _CALLING.set(True)
        try:
            return made(*args, **kwargs)
        finally:
            _CALLING.reset(mark)

    return called
