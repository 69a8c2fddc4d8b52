"""The suite itself: each test is put in its tiers by what it uses (tests/tiers.py), and it needs nothing outside
the repository."""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace

from tests.tiers import TIERS, tiers_of

ROOT = Path(__file__).resolve().parent.parent


def item(function, fixtures: dict | None = None, params: dict | None = None):
    """A collected test as tiers_of reads it: its function, its fixtures' functions and its parameters."""
    fixtures = fixtures or {}
    definitions = {name: [SimpleNamespace(func=f, params=None, _autouse=False)] for name, f in fixtures.items()}
    return SimpleNamespace(function=function, fixturenames=list(fixtures),
                           _fixtureinfo=SimpleNamespace(name2fixturedefs=definitions),
                           callspec=SimpleNamespace(params=params or {}))


def _launch():
    from playwright.sync_api import sync_playwright

    return sync_playwright


@contextlib.contextmanager
def _class_of(n: int):
    from deploy.classroom import Classroom

    yield Classroom(n)


def test_a_test_is_marked_by_the_fixtures_it_asks_for_and_the_helpers_it_calls():
    def looks(new_page):
        """Opens a page in Chromium (a docstring says nothing of what a test uses)."""

    def through_a_helper():
        _launch()

    def in_a_class():
        with _class_of(2):
            pass

    def commands(workspace):
        pass

    def says_chromium_only_in_words():
        """Chromium, PostgreSQL, HAProxy, bubblewrap and npm, named in a docstring."""
        return 1  # and in a comment: playwright, postgres_server, haproxy, bwrap, npx

    def a_client():
        return ["npx", "@anthropic-ai/claude-code"]

    assert tiers_of(item(looks, {"new_page": lambda chromium: None})) == {"browser"}
    assert tiers_of(item(through_a_helper)) == {"browser"}
    assert tiers_of(item(in_a_class)) == {"replicas"}
    assert tiers_of(item(commands, {"workspace": lambda: None})) == {"sandbox"}
    assert tiers_of(item(says_chromium_only_in_words)) == set()
    assert tiers_of(item(a_client)) == {"npm"}


def test_a_parametrized_store_is_postgres_only_for_its_postgres_parameter():
    def saves(store):
        pass

    assert tiers_of(item(saves, params={"store": "postgres"})) == {"postgres"}
    assert tiers_of(item(saves, params={"store": "sqlite"})) == set()


def test_the_tiers_are_registered_markers(pytestconfig):
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(TIERS) <= registered


def test_the_tests_name_nothing_outside_the_repository():
    """A fresh clone runs its tests alone: the data they read is in tests/data, with its licence."""
    outside = ("../" + "shared", "shared/" + "fixtures", "/work/" + "shared")
    named = [f"{path.relative_to(ROOT)}: {word}" for path in sorted((ROOT / "tests").rglob("*"))
             if path.is_file() and "__pycache__" not in path.parts
             for word in outside if word in path.read_text(errors="replace")]
    assert named == []
    assert (ROOT / "tests" / "data" / "claude-code" / "LICENSE").read_text().startswith("MIT License")
