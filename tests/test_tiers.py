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


# -- make test-fast's share of each parametrized test's cases (tests/searches.py) --

def collected(path: str, *args: str, **env: str) -> list[str]:
    """The node ids `pytest --collect-only` gives for `path`, with these variables set (and no share of cases
    unless they say: `make test-fast` runs this test with one)."""
    import os

    mine = {name: value for name, value in os.environ.items() if not name.startswith("LOOPSCOPE_CASES")}
    ran = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p",
                          "no:cacheprovider", *args, path], cwd=ROOT, capture_output=True, text=True,
                         env={**mine, **env})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return [line for line in ran.stdout.splitlines() if "::" in line]


def case(nodeid: str):
    params = SimpleNamespace() if "[" in nodeid else None
    return SimpleNamespace(nodeid=nodeid, callspec=params)


def test_a_share_of_each_parametrized_test_runs_at_least_one_case_and_a_plain_test_always_runs():
    from tests.searches import drawn

    items = ([case(f"t.py::test_many[{k}]") for k in range(10)] + [case("t.py::test_plain")]
             + [case(f"t.py::test_two[{k}]") for k in range(2)] + [case("t.py::test_one[only]")]
             + [case(f"t.py::Group::test_many[{k}]") for k in range(3)])
    kept, left_out = drawn(items, 0.5, "7")
    names = [item.nodeid for item in kept]
    assert sorted(names + [item.nodeid for item in left_out]) == sorted(item.nodeid for item in items)
    assert names == [item.nodeid for item in items if item.nodeid in names]  # in their order
    count = lambda family: sum(name.startswith(family + "[") for name in names)  # noqa: E731
    assert (count("t.py::test_many"), count("t.py::test_two"), count("t.py::test_one"),
            count("t.py::Group::test_many")) == (5, 1, 1, 2)
    assert "t.py::test_plain" in names
    assert drawn(items, 1.0, "7") == (items, [])  # make test: every case


def test_the_same_seed_draws_the_same_cases_in_every_process_and_other_seeds_come_to_every_case():
    from tests.searches import drawn

    items = [case(f"t.py::test_many[{k}]") for k in range(8)]
    first = [item.nodeid for item in drawn(items, 0.5, "41")[0]]
    assert first == [item.nodeid for item in drawn(list(items), 0.5, "41")[0]]
    seen = set()
    for seed in range(12):
        seen |= {item.nodeid for item in drawn(items, 0.5, str(seed))[0]}
    assert seen == {item.nodeid for item in items}


def test_the_share_is_drawn_from_what_m_chose_so_a_test_with_a_tier_of_its_parameter_still_runs():
    """A test of both stores, `-m "not postgres"`: its SQLite case runs, whatever the seed (the draw comes after
    pytest's choice by marker, through the tests' own conftest)."""
    everything = collected("tests/test_runs_store.py", "-m", "not postgres")
    wanted = {name.split("[")[0] for name in everything}
    for seed in ("1", "2", "3"):
        drawn_now = collected("tests/test_runs_store.py", "-m", "not postgres", LOOPSCOPE_CASES="0.5",
                              LOOPSCOPE_CASES_SEED=seed)
        assert {name.split("[")[0] for name in drawn_now} == wanted  # every test of the file, one case at least
        assert len(drawn_now) < len(everything)
