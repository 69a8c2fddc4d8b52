"""At a call_model step the history panel is the request that call sent, as the API received it: its system prompt,
its tools' names, every message, and a mark on the messages the thread's previous call did not send (the
assistant response and the tool_results going back), so the tool_result is on screen when the model reads it."""

import re
from pathlib import Path

import pytest

from loop.files import transcript
from loop.text.catalogs import translations
from tests.apptest import app, slider
from tests.tables import html_bodies, html_text

ROOT = Path(__file__).resolve().parent.parent
SINCE = "new since the last call"
CARD = re.compile(r'<div class="(ls-msg [^"]*)" data-index="(\d+)"><div class="ls-head">(.*?)</div>', re.S)


def sample(name: str):
    return transcript.load(ROOT / "samples" / f"{name}.json")


def panel(at) -> str:
    """The views element: the diagram and, beside it, the history panel."""
    return next(b for b in html_bodies(at) if 'class="ls-grid' in b and "ls-panel" in b)


def request_head(body: str) -> str:
    found = re.search(r'<div class="ls-request[^"]*">(.*?)</div>', body, re.S)
    assert found, "no request head in the panel"
    return html_text(found.group(1))


def cards(body: str) -> dict[int, tuple[str, str]]:
    """messages[i] drawn in the panel: i → (the card's classes, its head's text)."""
    return {int(i): (classes, html_text(head)) for classes, i, head in CARD.findall(body)}


def marked(body: str, words: str) -> set[int]:
    return {i for i, (_, head) in cards(body).items() if f"→ {words}" in head}


def ringed(body: str) -> set[int]:
    return {i for i, (classes, _) in cards(body).items() if "ls-focus" in classes.split()}


def check_request(at, trace, index: int, lang: str, *, system_start: str, tools: list[str], new: set[int]) -> str:
    """The panel at call_model step `index` shows that call's request: system, tools, every message, the new ones
    marked (and no other mark)."""
    say = translations(lang).gettext
    body = panel(at)
    head = request_head(body)
    assert system_start in head, head
    assert "tools" in head and all(name in head for name in tools), head
    sent = trace.request_at(index)["messages"]
    drawn = cards(body)
    assert sorted(drawn) == list(range(len(sent))), sorted(drawn)
    for i, message in enumerate(sent):
        assert message["role"] in drawn[i][1], (i, drawn[i])
    assert marked(body, say(SINCE)) == new
    assert not marked(body, say("added by this step"))
    assert ringed(body) == {max(new)}  # the newest message sent for the first time: the tool_results going back
    return body


@pytest.mark.parametrize("lang", ["ja", "en"])
def test_each_call_of_two_tools_shows_the_request_it_sent_with_what_is_new_since_the_last_call(lang):
    trace = sample("two-tools")
    calls = [i for i, s in enumerate(trace.steps) if s.stage == "call_model"]
    assert calls == [1, 7]
    system = trace.request_at(1)["system"][:30]
    at = app(scenario="two-tools", step="99", lang=lang)  # the whole run; the slider then moves over it
    slider(at, "live").set_value(calls[0] + 1).run()
    check_request(at, trace, calls[0], lang, system_start=system, tools=["bash"], new={0})  # a first call: all new
    slider(at, "live").set_value(calls[1] + 1).run()
    body = check_request(at, trace, calls[1], lang, system_start=system, tools=["bash"], new={1, 2})
    kinds = cards(body)
    assert "assistant" in kinds[1][1] and "tool_result" in kinds[2][1]  # the response and the results going back
    # the response this call received is still drawn, held outside messages, under them
    assert body.index('data-index="2"') < body.index('class="ls-card')
    # at the step after, the append, the existing mark is back and the request's is gone
    slider(at, "live").set_value(calls[1] + 2).run()
    after = panel(at)
    say = translations(lang).gettext
    assert marked(after, say("added by this step")) == {3} and not marked(after, say(SINCE))
    assert 'class="ls-request' not in after


def test_a_sub_agent_s_call_shows_its_own_request():
    trace = sample("subagent")
    sub = [i for i, s in enumerate(trace.steps) if s.stage == "call_model" and s.thread != "main"]
    second = sub[1]
    at = app(scenario="subagent", step=str(second + 1), lang="ja")
    body = check_request(at, trace, second, "ja", system_start="You are a coding subagent",
                         tools=["bash", "read_file", "write_file", "edit_file"], new={1, 2})
    assert "task" not in request_head(body).split()  # the parent's tool: not the sub-agent's
    assert "You are a coding agent" not in request_head(body)


def test_presenter_mode_shows_the_same_request_on_one_line():
    trace = sample("two-tools")
    at = app(scenario="two-tools", step="8", lang="ja")
    at.toggle(key="present").set_value(True).run()
    body = panel(at)
    assert 'class="ls-grid ls-present' in body
    assert 'class="ls-request ls-one-line"' in body and "<details" not in body.split("ls-request", 1)[1][:2000]
    check_request(at, trace, 7, "ja", system_start=trace.request_at(7)["system"][:30], tools=["bash"], new={1, 2})


def test_what_a_call_sends_anew_is_counted_from_the_thread_s_previous_call():
    from loop.views.parts import new_since_last_call, sent_request

    two = sample("two-tools")
    assert new_since_last_call(two, 1) == [(0, 1)] and new_since_last_call(two, 7) == [(1, 2)]
    assert sent_request(two, 2) is None and sent_request(two, 6) is None  # no request sent at append, write_back
    head = sent_request(two, 7)
    assert head["tools"] == ["bash"] and head["system"].startswith("You are a coding agent")
    assert head["max_tokens"] == two.request_at(7)["max_tokens"]
    # after an in-place compaction: the rewritten message is new to the model, and so are the appended ones
    compact = sample("compact")
    call = next(i for i in range(len(compact)) if i > 0 and compact.steps[i - 1].stage == "compact"
                and compact.steps[i].stage == "call_model")
    rewritten = {item["index"] for item in compact.steps[call - 1].detail["replaced"]}
    spans = new_since_last_call(compact, call)
    shown = {i for first, n in spans for i in range(first, first + n)}
    assert rewritten <= shown and max(shown) == compact.steps[call].n_messages - 1
    assert 0 not in shown and 1 not in shown  # the request and the first response: sent before, unchanged
    # a failed call shows its request too; the call after three retries still sends everything anew
    overloaded = sample("overloaded")
    stages = [s.stage for s in overloaded.steps]
    retry, call = stages.index("retry"), stages.index("call_model")
    assert sent_request(overloaded, retry)["new_since_last_call"] == [(0, 1)]
    assert sent_request(overloaded, call)["new_since_last_call"] == [(0, 1)]
