"""A cursor move draws only what it has not drawn yet: the views of the step newly beside the cursor, not those of
the steps a click before drew already."""

import pages.views.step as step
import pages.views.tables as tables

from tests.apptest import app, copied_link
from tests.tables import html_bodies


def test_back_and_step_over_recorded_steps_draw_only_the_step_newly_beside_the_cursor(monkeypatch):
    at = app("pages/replay.py", sample="two-tools", step="10")  # the last of its 10 steps
    step._picture.cache_clear()  # the diagrams, drawn once for the whole server: here, as if none had been yet
    diagrams, histories, states = [], [], []
    monkeypatch.setattr(tables, "loop_state_html", lambda v, _draw=tables.loop_state_html:
                        states.append(v.index) or _draw(v))
    monkeypatch.setattr(step, "svg", lambda *a, _svg=step.svg, **kw: diagrams.append(1) or _svg(*a, **kw))
    monkeypatch.setattr(step, "history_panel", lambda v, *a, _draw=step.history_panel, **kw:
                        histories.append(v.index) or _draw(v, *a, **kw))

    at.button(key="replay-back").click().run()  # step 9: steps 9 and 10 were drawn with step 10 (10, and 9 ahead)
    assert not at.exception
    assert any("Step 9 of 10" in m.value for m in at.markdown)
    assert histories == [7] and len(diagrams) == 1  # step 8's, the one now ahead of a Back, and nothing else
    assert states == [8]  # the tables are drawn for the cursor alone

    histories.clear(), diagrams.clear(), states.clear()
    at.button(key="replay-step").click().run()  # back to step 10: all of it drawn a click ago, its tables too
    assert any("Step 10 of 10" in m.value for m in at.markdown)
    assert histories == [] and diagrams == [] and states == []


def test_a_step_drawn_from_kept_records_is_drawn_as_a_fresh_page_draws_it():
    moved = app("pages/replay.py", sample="recover", step="6")
    for key in ("replay-back", "replay-back", "replay-step", "replay-back"):
        moved.button(key=key).click().run()
    fresh = app("pages/replay.py", sample="recover", step="4")  # the same step, in a page that made nothing before
    assert [m.value for m in moved.markdown] == [m.value for m in fresh.markdown]
    assert html_bodies(moved) == html_bodies(fresh)


def test_a_diagram_is_drawn_once_for_every_learner_who_shows_it(monkeypatch):
    diagrams = []
    monkeypatch.setattr(step, "svg", lambda *a, _svg=step.svg, **kw: diagrams.append(kw.get("stage")) or _svg(*a, **kw))
    step._picture.cache_clear()
    first = app("pages/replay.py", sample="recover", step="3")
    assert diagrams  # steps 2, 3 and 4: the cursor's and those drawn ahead
    drawn = diagrams[:]
    second = app("pages/replay.py", sample="recover", step="3")  # another learner, the same step
    assert diagrams == drawn
    assert html_bodies(second) == html_bodies(first)
    japanese = app("pages/replay.py", sample="recover", step="3", lang="ja")  # another language: its own words
    assert len(diagrams) > len(drawn) and diagram(japanese) != diagram(first)


def diagram(at) -> str:
    return next(body for body in html_bodies(at) if "ls-diagram-box" in body).split("<script>")[1]


def test_a_cursor_move_reads_the_learners_language_from_the_session_once(monkeypatch):
    import pages.views.i18n as i18n

    at = app("pages/replay.py", sample="recover", step="6", lang="ja")
    reads = []
    monkeypatch.setattr(i18n, "known", lambda chosen, _known=i18n.known: reads.append(chosen) or _known(chosen))
    at.button(key="replay-back").click().run()
    assert not at.exception
    assert any(m.value.startswith("### ステップ 5 / 14") for m in at.markdown)  # the step moved, said in Japanese
    assert reads and set(reads) == {"ja"}
    assert len(reads) <= 3  # the page's run and the step's fragment: not once for each of its few dozen words


def test_go_to_step_draws_its_slider_only_while_it_is_open():
    at = app("pages/replay.py", sample="two-tools", step="5")
    at.button(key="replay-back").click().run()  # a cursor move sends no slider: Go to step is closed
    assert not at.slider and any("Step 4 of 10" in m.value for m in at.markdown)
    at.session_state["replay-goto"] = True  # opened, as a click on it opens it
    at.run()
    assert [(s.key, s.value) for s in at.slider] == [("replay-slider-3", 4)]
    at.slider[0].set_value(8).run()
    assert any("Step 8 of 10" in m.value for m in at.markdown)
    assert [(s.key, s.value) for s in at.slider] == [("replay-slider-7", 8)]  # still open, at the new step


def test_a_cursor_move_writes_the_step_into_the_url_and_reads_the_url_no_more_than_it_needs(monkeypatch):
    from streamlit.runtime.state.query_params_proxy import QueryParamsProxy

    at = app(scenario="two-tools", step="5")
    reads, writes = [], []
    monkeypatch.setattr(QueryParamsProxy, "__getitem__", lambda self, name, _get=QueryParamsProxy.__getitem__:
                        reads.append(name) or _get(self, name))
    monkeypatch.setattr(QueryParamsProxy, "__setitem__", lambda self, name, value, _set=QueryParamsProxy.__setitem__:
                        writes.append((name, value)) or _set(self, name, value))
    at.button(key="live-back").click().run()
    assert not at.exception
    assert writes == [("step", "4")] and at.query_params["step"] in ("4", ["4"])  # the link names the step shown
    assert copied_link(at) == "scenario=two-tools&step=4"
    assert len(reads) <= 12  # each read takes the session's lock: the URL is read once where it is written


def test_a_cursor_move_reads_the_step_under_it_and_the_one_newly_beside_it_only(monkeypatch):
    import pages.views.current as current

    at = app(scenario="two-tools", step="99")  # the last step: the one before it sent ahead
    read = []
    monkeypatch.setattr(current, "view", lambda trace, k, lang, _view=current.view: read.append(k) or _view(trace, k, lang))
    n = len(at.session_state["live-run"].trace)
    at.button(key="live-back").click().run()
    assert not at.exception
    assert any(f"Step {n - 1} of {n}" in m.value for m in at.markdown)
    # the new cursor's step, read as it is now, and the step newly ahead of a Back; the one left was read a click ago
    assert sorted(read) == [n - 3, n - 2]
    read.clear()
    at.button(key="live-back").click().run()
    assert sorted(read) == [n - 4, n - 3]
    read.clear()
    at.button(key="live-step").click().run()  # back where it was: both steps beside it were read a click ago
    assert read == [n - 2]


def test_back_and_step_over_a_whole_short_run_again_draws_nothing_again(monkeypatch):
    at = app("pages/replay.py", sample="two-tools", step="10")  # the last of its 10 steps
    for key in ["replay-back"] * 9 + ["replay-step"] * 9:  # every step under the cursor and beside it once
        at.button(key=key).click().run()
    drawn = []
    monkeypatch.setattr(tables, "loop_state_html", lambda v, _draw=tables.loop_state_html:
                        drawn.append(v.index) or _draw(v))
    monkeypatch.setattr(step, "history_panel", lambda v, *a, _draw=step.history_panel, **kw:
                        drawn.append(v.index) or _draw(v, *a, **kw))
    for key in ["replay-back"] * 9 + ["replay-step"] * 9:
        at.button(key=key).click().run()
        assert not at.exception
    assert any("Step 10 of 10" in m.value for m in at.markdown)
    assert drawn == []  # the views and tables of each step as a click before drew them


def test_a_cursor_move_writes_out_only_the_step_newly_sent_ahead(monkeypatch):
    import json

    import pages.views.ahead as ahead

    ahead._step_json.cache_clear()  # kept for the whole server: here, as if no step had been sent yet
    at = app("pages/replay.py", sample="two-tools", step="10")  # step 9 sent ahead
    at.button(key="replay-back").click().run()  # step 9: steps 8 and 10 sent ahead
    written = []

    class Counted:
        @staticmethod
        def dumps(value, **kw):
            if "views" in value:
                written.append(value["status"])
            return json.dumps(value, **kw)

    monkeypatch.setattr(ahead, "json", Counted)
    at.button(key="replay-back").click().run()  # step 8: step 9 was written out two clicks ago; step 7 is new
    assert not at.exception
    assert [s.split(" · ")[0] for s in written] == ["Step 7 of 10"]


def test_a_cursor_move_sends_the_pairs_table_and_the_loop_state_as_one_element():
    at = app(scenario="two-tools", step="3")
    at.button(key="live-back").click().run()
    assert not at.exception
    pairs, steps = ">Pairs · tool_use ↔ tool_result</h4>", '<table class="ls-table" data-table="steps"'
    tables = [b for b in html_bodies(at) if pairs in b or steps in b]  # one element, the Pairs table first
    assert len(tables) == 1 and tables[0].index(pairs) < tables[0].index(steps)
