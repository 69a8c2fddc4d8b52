"""Replay of a Claude Code log with a sub-agent: the user picks which thread to step through."""

from tests.synthetic import claude_code_log
from loop.importers import import_bytes
from tests.test_app_replay import replay_page, upload


def test_a_sidechain_thread_can_be_picked_on_the_replay_page():
    data = claude_code_log(120, seed=3)
    threads = import_bytes(data, "log.jsonl").threads
    assert len(threads) > 1, "the generated log has a sub-agent thread"
    at = replay_page()
    upload(at, "log.jsonl", data)
    picker = next(s for s in at.selectbox if s.label.startswith("Thread"))
    assert picker.value == "main"
    main_messages = at.session_state["replay"]["trace"].messages
    picker.set_value(threads[1].id).run()
    assert not at.exception, at.exception
    replay = at.session_state["replay"]
    assert replay["thread"] == threads[1].id
    assert replay["trace"].messages != main_messages  # the sub-agent's own history is on screen
    assert replay["trace"].meta["imported"]["thread"] == threads[1].id


def test_a_log_with_one_thread_shows_no_picker():
    at = replay_page()
    assert not [s for s in at.selectbox if s.label.startswith("Thread")]
