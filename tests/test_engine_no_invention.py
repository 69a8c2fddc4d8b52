"""The scripted model makes nothing up: in every scenario and language, what its words state comes from the task or
from what the tools printed, and the workspace changes only where the task asked for a file.

Its sentences are the catalog's messages; take their wording out of each text the model wrote, and what is left is
what it filled in: names, counts, commands and quoted output. Each of those must be in the task, in a command the
model ran, or in a tool_result written back before it spoke (a count may be the number of lines of such a result, or of the entries `ls -l` listed); after a compaction, in the summary that replaced the history.
The old `recover` failed both checks: it wrote a notes.txt of invented lines and reported their count.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from loop import start
from loop.text.catalogs import LOCALES, languages
from loop.engine.compact import is_summary
from loop.engine.recovery import is_continuation
from loop.engine.rules import blocks
from loop.engine.scenarios import SCENARIOS
from loop.views.parts import result_text

PLACEHOLDER = re.compile(r"\{\w*\}")


def wording(lang: str) -> list[str]:
    """The literal pieces of every message in `lang`, longest first."""
    if lang == "en":
        path = LOCALES / "ja" / "LC_MESSAGES" / "loopscope.po"  # any catalog lists the English messages
        with path.open("rb") as f:
            texts = [i for m in read_po(f) if m.id for i in ([m.id] if isinstance(m.id, str) else m.id)]
    else:
        with (LOCALES / lang / "LC_MESSAGES" / "loopscope.po").open("rb") as f:
            texts = [s for m in read_po(f) if m.id for s in ([m.string] if isinstance(m.string, str) else m.string)]
    pieces = {p.strip() for text in texts for p in PLACEHOLDER.split(text) if len(p.strip()) > 1}
    return sorted(pieces, key=lambda p: (-len(p), p))  # the longest first, in one order in every process


WORDING = {lang: wording(lang) for lang in languages()}
WORDING_RE = {lang: re.compile("|".join(map(re.escape, pieces))) for lang, pieces in WORDING.items()}


@functools.cache
def starts(lang: str) -> dict[str, int]:
    """Each start of a message's piece (10 characters or more, not the whole piece) and the first piece it starts."""
    first: dict[str, int] = {}
    for index, piece in enumerate(WORDING[lang]):
        for k in range(10, len(piece)):
            first.setdefault(piece[:k], index)
    return first


def cut_start(text: str, lang: str) -> str:
    """`text` without the start of a message it ends in: of the first piece that has one, the longest."""
    first = starts(lang)
    longest = len(WORDING[lang][0]) - 1  # the pieces are the longest first
    ends = [(first[text[-k:]], -k) for k in range(10, min(len(text), longest) + 1) if text[-k:] in first]
    return text[:min(ends)[1]] if ends else text


def filled_in(text: str, lang: str, outputs: set[str] = frozenset()) -> list[str]:
    """What is left of `text` without the catalog's wording: the tokens the model filled in.

    A line indented by four spaces that is a line of `outputs` is output quoted as printed: it is left out whole.

    An answer cut at max_tokens ends inside a sentence: a start of one of the messages counts as wording too.
    """
    text = "\n".join("" if line.startswith("    ") and line.strip() in outputs else line
                     for line in text.splitlines()).rstrip()
    text = cut_start(text, lang)
    # One pass from the left, the longest piece first at each place: two pieces may overlap ("项：" and "：`"),
    # and replacing one after the other would let whichever came first cut the other in two.
    text = WORDING_RE[lang].sub(" ", text)
    # a colon or a full stop ends a word only before a space or the end: 09:40 and part6.txt are one token each
    return [t for t in re.split(r"[\s`,;()（）、。：；“”「」'\"]+|[:.](?=\s|$)", text) if t]


def line_counts(output: str) -> set[int]:
    """The counts one can read off an output: its lines, its lines but `ls`'s `total`, the entries `ls -l` listed."""
    lines = [line for line in output.splitlines() if line.strip()]
    listed = [line for line in lines if not line.startswith("total")]
    entries = [line for line in listed if len(line.split(None, 8)) == 9 and line.split(None, 8)[-1] not in (".", "..")]
    return {len(lines), len(listed), len(entries)}


def joined(messages: list) -> list:
    """The history with each answer cut at max_tokens and continued (the complete loop's recovery) as one answer:
    the cut falls inside a line, so only the whole answer can be read."""
    out: list = []
    for message in messages:
        if out and len(out) >= 2 and message["role"] == "assistant" and is_continuation(out[-1]) \
                and out[-2]["role"] == "assistant":
            out.pop()
            text = "".join(b["text"] for b in blocks(out[-1]) + blocks(message) if b.get("type") == "text")
            out[-1] = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        else:
            out.append(message)
    return out


def unsupported(run) -> list[str]:
    """Every token the model stated that neither the task, its commands nor the results written back so far hold."""
    messages = joined(run.state.messages)
    sources = [str(messages[0]["content"])]
    outputs: list[str] = []
    if is_summary(sources[0]):  # after a compaction the summary is all the model knows of what ran
        outputs.append(sources[0])  # the output it quotes counts as printed
    counts: set[int] = set()
    wrong = []
    for message in messages[1:]:
        for block in blocks(message):
            if block.get("type") == "tool_result":
                output = result_text(block.get("content"))
                sources.append(output)
                outputs.append(output)
                counts |= line_counts(output)
            elif block.get("type") == "tool_use":
                sources.append(str(block.get("input", {}).get("command", "")))
        if message["role"] != "assistant":
            continue
        commands = [str(b.get("input", {}).get("command", "")) for b in blocks(message) if b.get("type") == "tool_use"]
        printed = {line.strip() for s in outputs for line in s.splitlines()}
        for block in blocks(message):
            if block.get("type") != "text":
                continue
            for token in filled_in(block["text"], run.lang, printed):
                if token.isdigit():  # a count: of lines or entries, or one a tool printed first on a line (wc)
                    if int(token) in counts or any(line.split()[:1] == [token] for s in sources
                                                   for line in s.splitlines()):
                        continue
                elif any(token in s for s in sources + commands):
                    continue
                wrong.append(token)
    return wrong


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


WORKSPACES = {
    "fresh": {},
    "files": {"alpha.txt": "a\n", "beta notes.md": "b\n"},
    "notes elsewhere": {"docs/notes.txt": "one\ntwo\nthree\n"},
    "notes here": {"notes.txt": "1\n2\n3\n4\n5\n"},
}
FREE_TASKS = ["What Python version is installed?", "Tell me a joke", "今日の日付は?", "这台机器是什么系统？"]


def prepared(workspace: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    return workspace


@pytest.mark.parametrize("where", list(WORKSPACES))
@pytest.mark.parametrize("lang", list(languages()))
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_no_scenario_states_what_the_tools_did_not_show(name, lang, where, shared):
    workspace = prepared(shared, WORKSPACES[where])
    run = start(scenario=name, workspace=workspace, tool_timeout=10, lang=lang)
    before = snapshot(workspace)
    run.run_to_end()
    after = snapshot(workspace)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert changed <= set(SCENARIOS[name].creates), f"the model changed {changed} the task did not ask for"
    assert not unsupported(run), f"stated without a source: {unsupported(run)}"


@pytest.mark.parametrize("lang", list(languages()))
@pytest.mark.parametrize("task", FREE_TASKS)
def test_a_free_form_task_states_nothing_it_did_not_see(task, lang, shared):
    workspace = prepared(shared, WORKSPACES["files"])
    run = start(task, workspace=workspace, tool_timeout=10, lang=lang)
    before = snapshot(workspace)
    run.run_to_end()
    assert snapshot(workspace) == before
    assert not unsupported(run), f"stated without a source: {unsupported(run)}"


def test_the_check_catches_the_old_recover_that_made_up_a_file(shared, monkeypatch):
    """The scenario as it was: notes.txt written with three invented lines, then "3 lines" reported."""
    from loop.engine import scenarios

    def invented(results, lang):
        if not results:
            return scenarios.Reply("I'll count the lines of notes.txt.", ("wc -l notes.txt",))
        if len(results) == 1:
            return scenarios.Reply("That failed. I'll create it with three lines.",
                                   ("printf 'milk\\neggs\\nbread\\n' > notes.txt && wc -l notes.txt",))
        return scenarios.Reply("notes.txt has 3 lines after creating it; they are milk, eggs and bread.")

    monkeypatch.setitem(scenarios.SCENARIOS, "recover", scenarios.SCENARIOS["recover"].__class__(
        "recover", scenarios.SCENARIOS["recover"].task, "", invented))
    workspace = prepared(shared, {})
    run = start(scenario="recover", workspace=workspace, tool_timeout=10)
    before = snapshot(workspace)
    run.run_to_end()
    changed = set(snapshot(workspace)) - set(before)
    assert changed == {"notes.txt"}  # the workspace check fails it
    assert "milk" not in unsupported(run)  # the lines are in its own command, so the workspace check is the one


def test_the_check_catches_a_count_no_tool_printed(shared, monkeypatch):
    from loop.engine import scenarios

    def boastful(results, lang):
        if not results:
            return scenarios.Reply(scenarios.say(lang, "I'll look at what is in the workspace."), ("ls -la",))
        return scenarios.Reply(scenarios.say_n(lang, "The workspace holds {n} entry: {names}.",
                                              "The workspace holds {n} entries: {names}.", 42, names="`secret.db`"))

    monkeypatch.setitem(scenarios.SCENARIOS, "list-files", scenarios.SCENARIOS["list-files"].__class__(
        "list-files", scenarios.SCENARIOS["list-files"].task, "", boastful))
    run = start(scenario="list-files", workspace=prepared(shared, {}), tool_timeout=10, lang="ja")
    run.run_to_end()
    assert set(unsupported(run)) == {"42", "secret.db"}
