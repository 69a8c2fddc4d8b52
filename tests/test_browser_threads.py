"""A real Chromium steps into a sub-agent's loop and back out, and sees a compaction before and after.

Saves docs/subagent.png and docs/compact.png, which the README shows.
"""

import re
from pathlib import Path

from loop.engine.runner import start
from tests.browser import settled
from tests.test_browser import CUT, page, url, wait_for_status  # noqa: F401 (the browser and the app, as fixtures)

ROOT = Path(__file__).resolve().parent.parent


def history_texts(page) -> list[str]:
    """The messages the history panel draws (cards in .ls-history), as their text."""
    return page.locator(".ls-history .ls-msg").all_inner_texts()


def test_step_into_a_sub_agent_and_back_out(page, url):
    run = start(scenario="subagent")  # the same scripted run the page makes: where its frames are
    run.run_to_end()
    trace = run.trace
    child = next(t for t in trace.threads.values() if not t.is_main)
    first, returned, n = trace.opened_at(child.id), trace.returned_at(child.id), len(trace)

    page.goto(f"{url}/?scenario=subagent&step={first}")  # the parent's decide, just before the task runs
    wait_for_status(page, f"Step {first} of {first}")
    page.locator(".st-key-live-step button").click()  # the task starts the sub-agent's loop
    wait_for_status(page, f"Step {first + 1} of {first + 1} · task ")
    assert history_texts(page) == [history_texts(page)[0]] and "Find which file under src/" in history_texts(page)[0]
    svg = page.locator(".ls-diagram").first.text_content()
    assert "a sub-agent's loop (its own messages)" in svg
    for k in range(first + 2, first + 6):  # inside: the sub-agent calls its model and runs its grep
        page.locator(".st-key-live-step button").click()
        wait_for_status(page, f"Step {k} of {k} · task ")
    assert "grep -rn" in " ".join(history_texts(page))
    page.get_by_role("button", name="Run to end").click()
    wait_for_status(page, f"Step {n} of {n}", timeout=120_000)

    # Back into the sub-agent's last step with the slider's neighbour, Back; then up to the parent.
    for k in range(n - 1, returned, -1):
        page.locator(".st-key-live-back button").click()
        wait_for_status(page, f"Step {k} of {n}")
    page.locator(".st-key-live-back button").click()
    wait_for_status(page, f"Step {returned} of {n} · task ")
    page.set_viewport_size({"width": 1600, "height": 1250})
    settled(page)
    page.screenshot(path=str(ROOT / "docs" / "subagent.png"))
    page.locator(".st-key-live-up button").first.click()  # main ›: up to the run_tool that took its answer
    wait_for_status(page, f"Step {returned + 1} of {n} · turn 2 · 4 · run a tool_use")
    texts = " ".join(history_texts(page))
    assert "Which file in src/ defines greet" in texts and "grep -rn" not in texts  # the parent's own history
    assert page.get_by_text("collected, not yet written back").count() >= 1
    page.locator(".st-key-live-into button").first.click()  # and in again, from the parent's side
    wait_for_status(page, f"Step {first + 1} of {n} · task ")


def test_a_compaction_is_drawn_before_and_after(page, url):
    run = start(scenario="compact")
    run.run_to_end()
    auto = next(s for s in run.trace.steps if s.stage == "compact" and s.detail["kind"] == "auto")
    page.goto(f"{url}/?scenario=compact&step={auto.index + 1}")
    wait_for_status(page, f"Step {auto.index + 1} of {auto.index + 1}")
    page.get_by_text("compact (auto)").first.wait_for()
    assert page.get_by_text("The whole history now: what the next call sends.").is_visible()
    messages = history_texts(page)
    assert any("[Conversation compressed." in m for m in messages)  # the summary, after
    assert any("part1.txt does not mention the falcon" in m for m in messages)  # what it replaced, before
    settled(page)
    page.screenshot(path=str(ROOT / "docs" / "compact.png"))


def test_the_sub_agent_s_heading_and_breadcrumb_are_whole_at_1280_in_japanese(page, url):
    """(The uploader's hint, whole at 1280×800 in every language: tests/test_browser.py.)"""
    run = start(scenario="subagent")  # the same scripted run the page makes
    run.run_to_end()
    child = next(t for t in run.trace.threads.values() if not t.is_main)
    inside = run.trace.opened_at(child.id) + 4
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/?lang=ja&scenario=subagent&step={inside}")
    wait_for_status(page, f"ステップ {inside} / ")
    settled(page)
    status = next(h for h in page.locator("h3").all_text_contents() if h.startswith(f"ステップ {inside} / "))
    assert re.search(r" · task toolu_[0-9a-f]{24} · ", status) and "…" not in status, status  # the whole task's id
    crumbs = page.locator(".st-key-live-threads").first.inner_text()
    assert re.search(r"task toolu_[0-9a-f]{24}", crumbs) and "…" not in crumbs, crumbs
    assert page.evaluate(CUT, '[data-testid="stMain"] h3, [data-testid="stMain"] h3 *, .st-key-live-threads *') == []
