"""`python -m loop yours FILE.py`: a learner's own agent_loop, run in the sandbox, its stages and its first broken rule."""

from loop.files import transcript
from loop.yours.listing import CHAPTER_LOOP

from .cli import loop_cli

NO_APPEND = CHAPTER_LOOP.replace('''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })
''', "")
CALL_LINE = CHAPTER_LOOP.splitlines().index("        response = client.messages.create(") + 1


def test_the_chapters_listing_holds_and_a_loop_without_the_append_is_named_with_the_400_and_its_line(tmp_path):
    good, bad, out = tmp_path / "good.py", tmp_path / "bad.py", tmp_path / "t.json"
    good.write_text(CHAPTER_LOOP)
    bad.write_text(NO_APPEND)
    kept, broken, listed = loop_cli(["yours", good, "--scenario", "list-files", "--out", out],
                                    ["yours", bad, "--scenario", "list-files"], ["yours", "--help"])

    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "call the model" in kept.stdout and "write tool_results back" in kept.stdout  # the stages, as `run`
    assert "every rule kept" in kept.stdout and "broken rule" not in kept.stdout
    trace = transcript.load(out)
    assert trace.meta["yours"] == {"source": CHAPTER_LOOP, "scenario": "list-files"}
    assert [s.stage for s in trace.steps].count("call_model") == 2
    [checked] = loop_cli(["check", out])
    assert checked.returncode == 0 and checked.stdout.startswith("ok:"), checked.stdout + checked.stderr

    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "broken rule: no-assistant-append" in broken.stdout
    assert "the API's error: 400 " in broken.stdout and "tool_use_id" in broken.stdout
    assert f"your line {CALL_LINE}: response = client.messages.create(" in broken.stdout
    assert "Traceback" not in broken.stdout + broken.stderr

    for name in ("list-files", "recover", "two-tools", "big-context"):  # toolsets s01 and s02
        assert name in listed.stdout
    assert "subagent" not in listed.stdout and "compact," not in listed.stdout
