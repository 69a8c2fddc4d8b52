"""Which script run this is (pages/views/script_run.py), told with Streamlit's public parts: the page's run and a
fragment it calls are one run, a fragment's run alone (a click in it) is another and says so, and a widget's
callback, which Streamlit calls before the script, is in none (the learner's language kept for a run is then read
afresh: i18n.py); each run has a token of its own, even one on the thread of the run before. Every fragment of the
app is made through it, or its runs alone would pass for the page's."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

from tests.browser import ROOT, serve_app
from tests.wire import Wire

PROBE = '''\
import streamlit as st

from pages.views import script_run


def said(where: str) -> None:
    run = script_run.token()
    st.text(f"{where}: run={'none' if run is None else 'page' if run is PAGE[0] else 'another'} "
            f"alone={script_run.alone()}")


def clicked() -> None:
    st.session_state["callback"] = "none" if script_run.token() is None else "some"


PAGE = []
with script_run.page():
    PAGE.append(script_run.token())
    said("page")

    @script_run.fragment
    def part() -> None:
        said("part")
        st.button("again", key="again", on_click=clicked)

    part()
said("after")
st.text(f"callback: run={st.session_state.get('callback', '-')}")
'''


def _texts(page: Wire) -> list[str]:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    texts = []
    for raw in page.text:
        delta = ForwardMsg.FromString(raw).delta
        if delta.WhichOneof("type") == "new_element" and delta.new_element.WhichOneof("type") == "text":
            texts.append(delta.new_element.text.body)
    return texts


def test_the_page_s_run_a_fragment_s_run_alone_and_a_callback_are_told_apart_on_a_real_server(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)

    async def runs(url: str) -> tuple[list[str], list[str], list[str]]:
        page = Wire(url)
        await page.open()
        whole = _texts(page)
        await page.rerun("again")  # a click in the fragment: Streamlit runs it alone (its callback first)
        alone = _texts(page)
        await page.rerun()  # the whole page again: it shows what the callback saw
        again = _texts(page)
        await page.close()
        assert not page.errors, page.errors
        return whole, alone, again

    with serve_app(app=probe) as url:
        whole, alone, again = asyncio.run(asyncio.wait_for(runs(url), timeout=60))
    assert whole == ["page: run=page alone=False", "part: run=page alone=False", "after: run=none alone=False",
                     "callback: run=-"]
    assert alone == ["part: run=another alone=True"]
    assert again[-1] == "callback: run=none"


def test_every_fragment_of_the_app_is_made_through_script_run():
    """`st.fragment` (or `streamlit.fragment`) anywhere else in pages/ or app.py is a fragment whose runs alone
    would pass for the page's: make it with `script_run.fragment`."""
    made_elsewhere = []
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").rglob("*.py"))]:
        if path.name == "script_run.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "fragment" and isinstance(node.value, ast.Name) \
                    and node.value.id in ("st", "streamlit"):
                made_elsewhere.append(f"{Path(path).relative_to(ROOT)}:{node.lineno}")
    assert not made_elsewhere, made_elsewhere


def _language_set_then_rerun() -> None:
    """A run that sets the session's language and reruns at once (Streamlit runs the rerun on the same thread)."""
    import threading

    import streamlit as st

    from pages.views import script_run
    from pages.views.i18n import LANG, lang

    with script_run.page():
        same = st.session_state.get("thread") == threading.get_ident()
        st.text(f"{lang()} on {'the same thread' if same else 'a thread'}")
        if LANG not in st.session_state:
            st.session_state[LANG] = "en"
        elif st.session_state[LANG] == "en" and lang() == "en":
            st.session_state[LANG] = "ja"  # (as a widget's value would be, between two runs)
            st.session_state["thread"] = threading.get_ident()
            st.rerun()


def test_each_run_has_its_own_token_so_what_is_kept_for_a_run_is_read_afresh_in_the_next():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_language_set_then_rerun, default_timeout=60)
    at.run()
    at.run()
    assert not at.exception
    assert [t.value for t in at.text] == ["ja on the same thread"]


def test_a_teachers_click_that_comes_with_the_followers_count_s_run_moves_the_class_at_once(tmp_path):
    """A click can reach the server with another fragment's run (the teacher's count of followers, on its timer):
    Streamlit calls the click's callback and runs only that fragment. The class must still move then, not at the
    teacher's next click (bench/teacher.py saw a Back held so for two minutes, then done with the next Back)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    async def class_moved(url: str) -> tuple[tuple | None, tuple | None]:
        teacher = Wire(url, query="scenario=two-tools&step=10")
        await teacher.open()
        await teacher.rerun("present", bool_value=True)
        await teacher.rerun("classroom-start")
        [count] = teacher.timers  # the followers' count, rerun by the page's timer
        before = teacher.status()
        msg = BackMsg()  # the count's run, carrying a click on Back
        msg.rerun_script.query_string, msg.rerun_script.page_script_hash = teacher.query, teacher.page
        msg.rerun_script.fragment_id, msg.rerun_script.is_auto_rerun = count, True
        click = msg.rerun_script.widget_states.widgets.add()
        click.id, click.trigger_value = teacher.widgets["live-back"], True
        await teacher._send(msg)
        teacher.text = []
        await teacher.finished()
        while teacher.early:  # the page's run that takes the click follows (st.rerun)
            await teacher.finished()
        await teacher.close()
        assert not teacher.errors, teacher.errors
        return before, teacher.status()

    with serve_app(env={"LOOPSCOPE_RUNS": str(tmp_path)}) as url:
        before, after = asyncio.run(asyncio.wait_for(class_moved(url), timeout=120))
    assert (before, after) == ((10, 10), (9, 10))
