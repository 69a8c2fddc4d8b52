"""The suite itself: each test is put in its tiers by what it uses (tests/tiers.py), and it needs nothing outside
the repository."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
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


def samples():
    """tests/data/tiers_samples.py, loaded by its path: what it names does not mark the tests here."""
    spec = importlib.util.spec_from_file_location("tiers_samples", ROOT / "tests" / "data" / "tiers_samples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_test_is_marked_by_the_fixtures_it_asks_for_and_the_helpers_and_scripts_it_calls():
    s = samples()
    found = {name: tiers_of(item(getattr(s, name), s.FIXTURES.get(name))) for name in s.TIERS}
    assert found == s.TIERS


def test_a_parametrized_store_is_postgres_only_for_its_postgres_parameter():
    s = samples()
    assert tiers_of(item(s.saves, params={"store": "postgres"})) == {"postgres"}
    assert tiers_of(item(s.saves, params={"store": "sqlite"})) == set()


def test_the_tiers_are_registered_markers(pytestconfig):
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(TIERS) <= registered


def test_the_tests_name_nothing_outside_the_repository():
    """A fresh clone runs its tests alone: the data they read is in tests/data, with its licence."""
    outside = ("../" + "shared", "shared/" + "fixtures", "/work/" + "shared")
    ours = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "tests"],
                          cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    named = [f"{name}: {word}" for name in sorted(filter(None, ours)) if (ROOT / name).is_file()
             for word in outside if word in (ROOT / name).read_text(errors="replace")]  # npm's clients are not ours
    assert named == []
    assert (ROOT / "tests" / "data" / "claude-code" / "LICENSE").read_text().startswith("MIT License")
