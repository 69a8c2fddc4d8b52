"""A permalink to a step of a learner's run, as Python Tutor has them: `/yours?code=…&scenario=NAME&step=K` holds the
learner's source (zlib, URL-safe base64); opening it fills the editor, runs the code once and shows step K. A code
that is not a source, or too large once unpacked, is refused in the page and nothing runs."""

import base64
import zlib
from unittest import mock

import pytest
from streamlit.testing.v1 import AppTest

from loop.text.catalogs import say
from loop.yours.listing import CHAPTER_LOOP
from pages.views.permalink import CODE_MOST, BadCode, code_param, source_of
from pages.views.yours import PICK, START, YOURS, starting_code

from .apptest import app, copied_link, run
from .learner import record

pytestmark = pytest.mark.usefixtures("no_child_ahead")  # its runs are made in this process

CALL = "        response = client.messages.create("


def html(at) -> str:
    return "".join(h.value for h in at.get("html"))


def counted():
    """sandboxed.run replaced by the in-process recorder, its calls counted."""
    return mock.patch("loop.yours.sandboxed.run", side_effect=lambda source, scenario, lang, **limits:
                      record(source, scenario, lang))


def test_a_learners_source_goes_into_a_link_and_comes_back_whole():
    source = CHAPTER_LOOP + "# 日本語のコメント\n"
    code = code_param(source)
    assert set(code) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert len(code) < len(source)  # compressed: the chapter's loop fits an address bar
    assert source_of(code) == source


@pytest.mark.parametrize("code", [
    "not base64 at all!",
    base64.urlsafe_b64encode(b"plain text, not zlib").decode(),
    base64.urlsafe_b64encode(zlib.compress(CHAPTER_LOOP.encode())[:-8]).decode(),  # cut short
    base64.urlsafe_b64encode(zlib.compress(b"\xff\xfe not utf-8")).decode(),
])
def test_a_code_that_is_not_a_source_is_refused(code):
    with pytest.raises(BadCode) as refused:
        source_of(code)
    assert not refused.value.too_large


class _Inflater:
    """zlib's decompressor, the bytes it hands out counted."""

    def __init__(self, inner):
        self.inner, self.out = inner, 0

    def decompress(self, data, max_length=0):
        out = self.inner.decompress(data, max_length)
        self.out += len(out)
        return out

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_code_that_unpacks_past_the_bound_is_refused_without_unpacking_it():
    bomb = base64.urlsafe_b64encode(zlib.compress(b"#" * (64 * 2**20), 9)).decode()  # 64 MB in under 100 KB
    assert len(bomb) < 2 * CODE_MOST
    made, real = [], zlib.decompressobj
    with mock.patch("zlib.decompressobj", side_effect=lambda: made.append(_Inflater(real())) or made[-1]):
        with pytest.raises(BadCode) as refused:
            source_of(bomb)
    assert refused.value.too_large
    assert made[0].out <= CODE_MOST + 1
    with pytest.raises(BadCode):
        source_of(code_param("#" * (CODE_MOST + 1)))
    assert source_of(code_param("#" * CODE_MOST)) == "#" * CODE_MOST


def test_opening_a_link_fills_the_editor_runs_the_code_once_and_shows_step_k_and_a_rerun_does_not_run_it_again():
    with counted() as ran:
        at = app("pages/yours.py", lang="ja", code=code_param(CHAPTER_LOOP), scenario="recover", step="3")
        assert ran.call_count == 1 and ran.call_args.args == (CHAPTER_LOOP, "recover", "ja")
        text, _, generation = at.session_state[START]
        assert text == CHAPTER_LOOP and at.session_state["yours-source"] == CHAPTER_LOOP
        assert at.session_state[PICK] == "recover" and at.selectbox(key=PICK).value == "recover"
        assert at.session_state[YOURS].trace.cursor == 2
        line = CHAPTER_LOOP.splitlines().index(CALL) + 1
        assert f'<div class="lit" data-line="{line}">' in html(at)  # step 3's call, lit in the learner's code
        at.button(key="yours-step").click()
        run(at)
        at.button(key="yours-back").click()
        run(at)
        assert ran.call_count == 1  # stepping is not opening the link again
        assert at.query_params["step"] == "3" and at.query_params["scenario"] == "recover"
        assert source_of(at.query_params["code"]) == CHAPTER_LOOP
        assert set(at.query_params) <= {"code", "scenario", "step", "lang"}  # nothing else of the browser's
        assert copied_link(at) == f"code={code_param(CHAPTER_LOOP)}&scenario=recover&step=3&lang=ja"


def test_a_links_code_is_not_kept_over_what_the_learner_typed_until_they_change_it():
    kept = "localStorage.setItem"
    with counted():
        at = app("pages/yours.py", lang="en", code=code_param(CHAPTER_LOOP), scenario="list-files", step="1")
        at.button(key="yours-step").click()
        run(at)
    assert kept not in html(at)  # the browser keeps the learner's own code, not the link's
    at.session_state["yours-source"] = CHAPTER_LOOP + "# mine now\n"  # what the editor hands the page once typed in
    run(at)
    assert kept in html(at) and "# mine now" in html(at)


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_a_link_whose_code_cannot_be_read_or_is_too_large_is_refused_in_the_page_and_nothing_runs(lang):
    bomb = base64.urlsafe_b64encode(zlib.compress(b"#" * (8 * 2**20), 9)).decode()
    for code, said in ((code_param(CHAPTER_LOOP)[:40], "This link's code cannot be read (it was cut or changed): "
                                                           "nothing was run."),
                       (bomb, "This link's code is larger than {kb} KB once unpacked: nothing was run.")):
        with counted() as ran:
            at = app("pages/yours.py", lang=lang, code=code, scenario="recover", step="3")
            run(at)
        assert ran.call_count == 0 and YOURS not in at.session_state
        assert [e.value for e in at.error] == [say(lang, said, kb=64)]
        assert at.session_state[START][0] == starting_code(lang)  # the editor as it opens without a link


def _copy_query():
    import streamlit as st

    from pages.views.copylink import permalink_query

    st.query_params.update(code="abc", scenario="recover", step="3", lang="ja", other="secret")
    st.text(permalink_query())


def test_copy_link_offers_the_learners_link_and_nothing_else():
    at = AppTest.from_function(_copy_query)
    at.run()
    assert [t.value for t in at.text] == ["code=abc&scenario=recover&step=3&lang=ja"]


def test_opening_a_yours_link_to_a_broken_loop_marks_its_line_in_the_editor():
    """As after Run: the run of the link's code names the broken rule, and the editor's gutter marks its line."""
    from pages.views import yours as view

    from .test_app_yours import NO_APPEND

    marked = []
    original = view.code_editor

    def editor(*args, **kwargs):  # the editor as drawn: its marks are what the page gives it
        marked.append(kwargs["props"]["annotations"])
        return original(*args, **kwargs)

    with counted(), mock.patch.object(view, "code_editor", editor):
        at = app("pages/yours.py", code=code_param(NO_APPEND))
    named = at.session_state[YOURS].named
    assert named.name == "no-assistant-append" and named.line
    assert [(m["row"], m["type"]) for m in marked[-1]] == [(named.line - 1, "error")]
