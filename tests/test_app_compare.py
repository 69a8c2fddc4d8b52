"""Minimal beside complete in Japanese and Chinese, and its Raw JSON: what the page says is said in the page's language
(found by looking for the English page's own sentences on it), and a block cut short in a card points at a Raw JSON
that is there, with the whole request the call sent."""

from __future__ import annotations

import json
import re

import pytest

from loop.views.compare import SCENARIOS
from tests.apptest import app, run
from tests.test_app_i18n import texts_on_page

CJK = r"[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]"


def said(at, scenario: str, lang: str) -> list[str]:
    """What the runs themselves hold, in any form a view may quote it: the task, every message (and its JSON), the
    tools' outputs, the API's errors and the request bodies. Data, not the page's words."""
    out = []
    for profile_run in at.session_state["compare-runs"][(scenario, lang)]:
        out.append(str(profile_run.trace.meta.get("task", "")))
        for call in profile_run.calls:
            out += call.tool_outputs + [str((call.error or {}).get("message", ""))]
            out.append(json.dumps(call.request, ensure_ascii=False) if call.request else "")
            for message in call.messages:
                out.append(json.dumps(message, ensure_ascii=False))
                content = message.get("content") if isinstance(message, dict) else message
                for block in content if isinstance(content, list) else [{"text": content}]:
                    if isinstance(block, dict):
                        out += [str(block.get("text", "")), json.dumps(block.get("input"), ensure_ascii=False),
                                json.dumps(block.get("content"), ensure_ascii=False)]
            for block in (call.response or {}).get("content", []):
                out += [str(block.get("text", ""))]
    return [s for s in out if s]


def words_of(text: str) -> str:
    """A page's text without its code spans, Markdown escapes and icons: what a reader reads as words."""
    text = re.sub(r"\\([\\`*_{}\[\]<>()#+\-.!|:$~])", r"\1", text)
    text = re.sub(r"`[^`]*`", " ", text)
    return re.sub(r":\w+-badge\[|:material/\w+:", " ", text)


def sentences(text: str) -> set[str]:
    """The runs of three or more English words in `text`."""
    return {m.group(0) for m in re.finditer(r"[A-Za-z][A-Za-z']+(?:[ ,;()'-]+[A-Za-z][A-Za-z']*){2,}", text)}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_no_english_sentence_of_the_page_is_left_in_japanese_or_chinese(lang, scenario):
    english = app("pages/compare.py", lang="en", scenario=scenario)
    data = said(english, scenario, "en")
    # the English page's own sentences: what it says that no run holds (the runs' words are data on every page)
    own = {s for t in texts_on_page(english) for s in sentences(words_of(t)) if not any(s in d for d in data)}
    assert any("the loop ends" in s for s in own) or scenario == "parallel", own  # the finder finds the page's words
    at = app("pages/compare.py", lang=lang, scenario=scenario)
    data = said(at, scenario, lang)
    shown = [words_of(t) for t in texts_on_page(at)]
    left = sorted({s for s in own for t in shown if s in t and not any(s in d for d in data)})
    assert not left, f"{scenario}, {lang}: English left: {left}"
    # and a sentence of the page's language ends as one does there, not with an ASCII period
    ended = [t for t in shown if re.search(CJK + r"\.(?:\s|$)", t) and not any(t.strip() in d for d in data)]
    assert not ended, f"{scenario}, {lang}: an ASCII period after {lang}: {ended}"


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_block_cut_in_a_card_points_at_a_raw_json_that_holds_the_whole_request(lang):
    at = app("pages/compare.py", lang=lang, scenario="long-answer")
    minimal, _ = at.session_state["compare-runs"][("long-answer", lang)]
    stop = minimal.calls[-1]  # the call where the minimal loop stops: its card is open, its tool_result cut short
    cards = "\n".join(h.proto.body for h in at.main.get("html"))
    see = {"en": "(see Raw)", "ja": "Raw JSON を参照"}[lang]
    assert see in cards
    raw = [e for e in at.main.expander if e.label.startswith("Raw JSON")]
    assert len(raw) == len(minimal.calls) + len(at.session_state["compare-runs"][("long-answer", lang)][1].calls)
    at.session_state[f"compare-minimal-{stop.number}-raw"] = True  # open it, as a click does
    run(at)
    bodies = [c.value for c in at.main.get("code") if c.language == "json"]
    assert len(bodies) == 1
    body = json.loads(bodies[0])
    assert body == stop.request and body["messages"] == stop.messages
    assert {"model", "max_tokens", "system", "tools"} <= set(body)  # the request as the API received it
    result = stop.messages[-1]["content"][0]["content"]  # the whole tool_result the card cut short
    whole = result if isinstance(result, str) else "".join(b.get("text", "") for b in result)
    assert len(whole) > 4000  # longer than a card draws (pages/views/blocks.py TEXT_LIMIT): here, all of it


def test_the_call_the_minimal_loop_dies_on_has_the_body_it_sent_and_no_key():
    at = app("pages/compare.py", scenario="big-context")
    minimal, _ = at.session_state["compare-runs"][("big-context", "en")]
    died = minimal.calls[-1]
    assert died.stage == "error" and died.request is not None  # from the SDK's error: the trace has no step for it
    assert died.request["messages"] == died.messages
    assert not re.search(r"x-api-key|authorization|sk-ant", json.dumps(died.request), re.I)
