"""Runs at once: a browser holds at most 2 sandboxes and the server 4 (an operator's settings); the rest wait in a
first-come line and are told where they stand."""

import threading

from loop.yours import slots
from loop.yours.slots import Slots


def hold(line: Slots, owner, told: list, started: threading.Event, release: threading.Event) -> threading.Thread:
    def go():
        with line.taken(owner, told.append):
            started.set()
            release.wait(30)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def test_a_third_run_of_one_browser_waits_for_one_of_its_two_and_is_told_where_it_stands(monkeypatch):
    monkeypatch.delenv(slots.TOTAL_VARIABLE, raising=False)
    monkeypatch.delenv(slots.PER_OWNER_VARIABLE, raising=False)
    line = Slots()
    release = [threading.Event() for _ in range(3)]
    started = [threading.Event() for _ in range(3)]
    told = [[], [], []]
    first = [hold(line, "browser-a", told[i], started[i], release[i]) for i in range(2)]
    assert all(s.wait(30) for s in started[:2])
    third = hold(line, "browser-a", told[2], started[2], release[2])
    other = threading.Event()
    with line.taken("browser-b"):  # another browser is not held up by browser-a's line
        other.set()
    assert other.is_set() and not started[2].is_set()
    release[0].set()
    assert started[2].wait(30)
    assert told[2][0] == 2 and told[2][-1] is None  # two runs ahead of it, then its turn
    for event in release:
        event.set()
    for thread in first + [third]:
        thread.join(30)
    assert line.running == {}


def test_the_server_runs_at_most_its_setting_at_once(monkeypatch):
    monkeypatch.setenv(slots.TOTAL_VARIABLE, "1")
    line = Slots()
    release, started, told = threading.Event(), threading.Event(), []
    holder = hold(line, "a", [], started, release)
    assert started.wait(30)
    second_started = threading.Event()
    second = hold(line, "b", told, second_started, release)
    while not told:  # it is in line: told once it waits
        second_started.wait(0.05)
    assert told == [1] and not second_started.is_set()
    release.set()
    assert second_started.wait(30)
    holder.join(30)
    second.join(30)
