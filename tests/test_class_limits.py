"""What one address may ask of a class server (loop/classroom/limits.py), the language a student's browser asks for
(loop/classroom/language.py), and a student's branches kept within bounds (loop/classroom/branches.py): a
follower's hundred breaks leave the server's open files and mounts where they were."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loop.classroom.branches import KEPT, Branches
from loop.classroom.language import accepted
from loop.classroom.limits import (NEW_BROWSERS_FLOOR, Limit, balancers, client_address, new_browsers_a_minute)
from loop.engine.broken import break_at
from loop.files.classes import CODE_LENGTH, CODE_LETTERS
from loop.files.transcript import load

ROOT = Path(__file__).resolve().parent.parent


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_class_limit_lets_a_class_in_at_once_then_one_at_the_rate():
    clock = Clock()
    limit = Limit(lambda: 120, clock)
    assert [limit.take("10.0.0.1") for _ in range(120)] == [0.0] * 120  # a class arriving together
    assert limit.take("10.0.0.1") == pytest.approx(0.5)  # the next one in half a second (120 a minute)
    assert limit.left("10.0.0.1") == pytest.approx(0.5) and limit.take("10.0.0.2") == 0.0  # another address
    clock.now += 0.5
    assert limit.left("10.0.0.1") == 0.0 and limit.take("10.0.0.1") == 0.0 and limit.take("10.0.0.1") > 0
    clock.now += 3600  # an hour later: a whole minute's worth again, never more
    assert sum(limit.take("10.0.0.1") == 0.0 for _ in range(200)) == 120


def test_a_class_limit_remembers_a_bounded_number_of_addresses():
    limit = Limit(lambda: 1, Clock(), keys=100)
    for n in range(1000):
        limit.take(f"10.0.{n // 256}.{n % 256}")
    assert len(limit.buckets) == 100


def test_new_browser_ids_are_never_limited_below_120_a_minute(monkeypatch):
    monkeypatch.delenv("LOOPSCOPE_NEW_BROWSERS_A_MINUTE", raising=False)
    assert new_browsers_a_minute() == 240
    for given, limit in (("10", NEW_BROWSERS_FLOOR), ("600", 600), ("lots", 240)):
        monkeypatch.setenv("LOOPSCOPE_NEW_BROWSERS_A_MINUTE", given)
        assert new_browsers_a_minute() == limit
    assert NEW_BROWSERS_FLOOR == 120


def test_a_class_counts_the_forwarded_address_only_when_the_balancer_forwarded_it():
    balancer = balancers("127.0.0.1, ::1, 10.9.0.0/16, not-an-address")
    assert [str(n) for n in balancer] == ["127.0.0.1/32", "::1/128", "10.9.0.0/16"]
    # straight to the app: whatever the browser says it forwards for is not believed
    assert client_address("203.0.113.7", ["198.51.100.1"], balancer) == "203.0.113.7"
    assert client_address("203.0.113.7", [], []) == "203.0.113.7"
    # through the balancer (its address, or its network): the address it appended last
    assert client_address(None, ["198.51.100.1"], balancer) == "198.51.100.1"  # (Streamlit names no loopback peer)
    assert client_address("10.9.3.4", ["1.2.3.4, 198.51.100.9"], balancer) == "198.51.100.9"
    assert client_address("10.9.3.4", ["1.2.3.4", "198.51.100.9"], balancer) == "198.51.100.9"
    assert client_address("10.9.3.4", ["garbage"], balancer) == "10.9.3.4"
    assert client_address(None, [], []) == "127.0.0.1"  # this machine, no balancer
    # IPv6 by its /64: the block one machine is given (a script cannot pick a new address for each try)
    assert client_address("2001:db8:1:2::5", [], []) == client_address("2001:db8:1:2:ffff::9", [], []) \
        == "2001:db8:1:2::/64"
    assert client_address("::ffff:203.0.113.7", [], []) == "203.0.113.7"


def test_guessing_a_live_class_code_takes_years():
    from loop.classroom.limits import CODE_TRIES_A_MINUTE

    codes = len(CODE_LETTERS) ** CODE_LENGTH
    live = 1000  # classes open at once on one server: far more than a school's
    minutes = codes / live / 2 / CODE_TRIES_A_MINUTE  # tries, on average, to hit one of them, from one address
    assert minutes / (60 * 24 * 365) > 10  # (docs/security.md says the figure: about 40 years)


@pytest.mark.parametrize("header, found", [
    ("ja,en-US;q=0.9,en;q=0.8", "ja"), ("zh-CN,zh;q=0.9", "zh"), ("en-US,en;q=0.9,ja;q=0.8", "en"),
    ("fr-FR,ja;q=0.5,zh;q=0.6", "zh"), ("fr-FR,de", None), ("ja;q=0", None), ("", None), (None, None),
    ("*", None), ("ja;q=abc,zh", "zh"), ("ZH-tw", "zh"),
])
def test_a_class_student_s_browser_language_is_the_one_it_prefers_among_loopscope_s(header, found):
    assert accepted(header, ["en", "ja", "zh"]) == found


def test_a_class_student_s_hundred_breaks_leave_the_servers_open_files_and_mounts_where_they_were():
    """Break it here on a copy makes a branch with a workspace of its own (a tmpfs and a lock file held open): the
    branch left is closed at once, and at most KEPT are kept, so a student breaking their copy a hundred times
    holds one workspace, not a hundred."""
    trace = load(ROOT / "samples" / "two-tools.json")  # the class's run, as a student's copy holds it

    def files() -> int:
        return len(os.listdir("/proc/self/fd"))

    def mounted() -> set[str]:  # (the machine's mounts: other processes' come and go, ours are looked for by name)
        return {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}

    branches = Branches()
    before = files()
    spaces = []
    for n in range(100):
        branch = break_at(trace, 5, "results-as-assistant").run  # refused at its next call: no command runs
        spaces.append(str(branch.workspace))
        branches.add(branch)
        assert len(branches) == min(n + 1, KEPT)
    assert files() - before <= 20, (before, files())
    now = mounted()
    assert [space for space in spaces if space in now or Path(space).exists()] == spaces[-1:]  # the one shown
    assert all(len(t) > 6 for t in branches.traces())  # the others' steps stay readable for the comparison
    branches.close()
    assert not Path(spaces[-1]).exists() and spaces[-1] not in mounted() and len(branches) == 0
    assert files() <= before
