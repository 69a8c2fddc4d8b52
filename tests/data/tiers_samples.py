"""Tests as tests/test_tiers.py reads them: samples of what marks a test, loaded there by path (so that the test
reading them is not marked by what they use)."""

import contextlib


def _launch():
    from playwright.sync_api import sync_playwright

    return sync_playwright


@contextlib.contextmanager
def _class_of(n: int):
    from deploy.classroom import Classroom

    yield Classroom(n)


def looks(new_page):
    """Opens a page in Chromium (a docstring says nothing of what a test uses)."""


def through_a_helper():
    _launch()


def in_a_class():
    with _class_of(2):
        pass


def commands(workspace):
    pass


def says_it_only_in_words():
    """Chromium, PostgreSQL, HAProxy, bubblewrap and npm, named in a docstring."""
    return 1  # and in a comment: playwright, postgres_server, haproxy, bwrap, npx


def a_client():
    return ["npx", "@anthropic-ai/claude-code"]


def a_bench_with_replicas():
    import subprocess
    import sys

    subprocess.run([sys.executable, "bench/follow.py", "--students", "2"])  # (its --replicas left to its default)


def saves(store):
    pass


def a_fixture():
    pass


# The fixtures each sample asks for, by name, and the tiers it is in (named here, they would mark the test that
# named them)
FIXTURES = {"looks": {"new_page": a_fixture}, "commands": {"workspace": a_fixture}}
TIERS = {"looks": {"browser"}, "through_a_helper": {"browser"}, "in_a_class": {"replicas"},
         "commands": {"sandbox"}, "says_it_only_in_words": set(), "a_client": {"npm"},
         "a_bench_with_replicas": {"replicas"}}  # bench/follow.py serves a class
