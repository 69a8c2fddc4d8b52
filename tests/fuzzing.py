"""Hostile files for every reader, and what each reader made of them: the fuzzing that tests/test_hardening_fuzz.py
runs a few hundred cases of and bench/fuzz.py runs 10,000 of.

Each case is a file a user could hand Loopscope: random bytes, a real file cut
at a random point, deep nesting, a huge string, or a real file with a field's
value replaced by any JSON value (a wrong type); a saved run's journal, as
older versions kept them in the runs folder, corrupted the same ways (the runs
store imports them); and a Claude Code session given as several files (its log
and its sub-agents' logs) or a zip of them, any of them changed. The real files
include runs and logs with sub-agents and compactions.

The checks return an `Outcome`: read, refused with the reader's own error
(`ImportFailed`, `TranscriptError`), or crashed (anything else); and for what
was read, whether everything a page shows of it drew under a page's depth of
stack (the history, the pending results and the pairs at every step, the
Markdown export, the narration, the tables of loop/views/parts.py) and whether,
saved and opened again, it has the same histories.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import traceback
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

from loop.files import export, journal, transcript
from loop.engine import rules
from loop.views import parts as views
from loop.views.diagram import svg_at
from loop.importers import ImportFailed, import_bytes, import_files
from loop.views.narrate import describe
from loop.files.runs import RunsStore, owner_key

ROOT = Path(__file__).resolve().parent.parent
NAME = "fuzz"  # the file name each hostile file is imported under

CLAUDE_CODE = ROOT / "tests" / "data" / "claude-code"  # real logs (tests/data/README.md)
UNEXPECTED = "did not expect"  # import_bytes' words when it caught a crash of its own
MAX_RENDERED_STEPS = 40  # steps checked a trace: the first, the last and some between


# -- seeds: real files of every format ------------------------------------------

def _openai_body(messages: list, system: str) -> dict:
    """A Loopscope history as an OpenAI chat completions request body."""
    out: list[dict] = [{"role": "system", "content": system}]
    for message in messages:
        blocks = rules.blocks(message)
        if message["role"] == "assistant":
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
                     for b in blocks if b.get("type") == "tool_use"]
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            out.append({"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})})
        elif any(b.get("type") == "tool_result" for b in blocks):
            out += [{"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]}
                    for b in blocks if b.get("type") == "tool_result"]
        else:
            out.append({"role": "user", "content": message["content"]})
    return {"model": "gpt-4o", "messages": out,
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]}


LEGACY_BROWSER = "OldBrowserId-0123456789"  # a folder name older versions gave a browser's journals
LEGACY_RUN = "run"


def _journal_bytes(trace) -> bytes:
    """A journal as older versions wrote them: the run's facts, a line a step, and where the cursor was."""
    lines = [journal.head_line(trace.meta, {"model": trace.meta.get("model"), "tool_timeout": 30}),
             *(journal.step_line(trace, i) for i in range(len(trace))), json.dumps({"cursor": len(trace) // 2})]
    return ("\n".join(lines) + "\n").encode()


def import_journal(data: bytes, folder: Path) -> tuple[RunsStore, str]:
    """A runs folder an older version left with this journal in it, opened as a store (which imports it)."""
    (folder / LEGACY_BROWSER).mkdir(parents=True, exist_ok=True)
    (folder / LEGACY_BROWSER / f"{LEGACY_RUN}.jsonl").write_bytes(data)
    store = RunsStore(folder)
    store.everyone()
    return store, owner_key(f"legacy:{LEGACY_BROWSER}")


def _course_with_threads() -> list[bytes]:
    """Course traces the way s04 and s06 record them: a sub-agent's cycles between its parent's, a history
    rewritten (an old result replaced, then a summary) between two cycles."""
    def cycle(n, system, messages, content, stop, runs=()):
        return {"cycle": n, "elapsed_ms": 10 * n, "request": {"model": "m", "system": system, "messages": messages,
                                                              "tools": [{"name": "bash"}, {"name": "task"}],
                                                              "max_tokens": 8000},
                "response": {"id": f"r{n}", "model": "m", "stop_reason": stop, "content": content,
                             "usage": {"input_tokens": n, "output_tokens": 1}},
                "tool_executions": list(runs)}

    task = {"type": "tool_use", "id": "c_task", "name": "task", "input": {"prompt": "look", "description": "d"}}
    ls = {"type": "tool_use", "id": "c_ls", "name": "bash", "input": {"command": "ls"}}
    done = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c_ls", "content": "a.py"}]}
    s04 = {"prompt": "go", "cycles": [
        cycle(1, "parent", [{"role": "user", "content": "go"}], [task], "tool_use"),
        cycle(2, "child", [{"role": "user", "content": "look"}], [ls], "tool_use", [{"name": "bash", "output": "a.py"}]),
        cycle(3, "child", [{"role": "user", "content": "look"}, {"role": "assistant", "content": [ls]}, done],
              [{"type": "text", "text": "found a.py"}], "end_turn"),
        cycle(4, "parent", [{"role": "user", "content": "go"}, {"role": "assistant", "content": [task]},
                            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c_task",
                                                          "content": "found a.py"}]}],
              [{"type": "text", "text": "a.py"}], "end_turn")]}
    long = "x" * 200
    first = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [ls]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c_ls", "content": long}]}]
    s06 = {"prompt": "go", "cycles": [
        cycle(1, "p", first[:1], [ls], "tool_use", [{"name": "bash", "output": long}]),
        cycle(2, "p", first, [ls], "tool_use", [{"name": "bash", "output": long}]),
        cycle(3, "p", first[:2] + [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c_ls",
                                                                 "content": "[Previous: used bash]"}]}],
              [{"type": "text", "text": "ok"}], "end_turn"),
        cycle(4, "p", [{"role": "user", "content": "[Conversation compressed.]\n\nsummary"}],
              [{"type": "text", "text": "done"}], "end_turn")]}
    return [json.dumps(s04).encode(), json.dumps(s06).encode()]


@lru_cache(maxsize=1)
def sessions() -> tuple[tuple[tuple[str, bytes], ...], ...]:
    """Claude Code sessions with compactions and sub-agents: (file name, bytes) of each session's files."""
    from tests.synthetic import claude_code_session

    out = []
    for seed in range(3):
        main, files = claude_code_session(records=300, compactions=2, agents=4, seed=seed)
        out.append((("session.jsonl", main), *files.items()))
    return tuple(out)


@lru_cache(maxsize=1)
def seeds() -> tuple[tuple[str, bytes], ...]:
    """(format, bytes) of real files: the samples, the course trace, Claude Code logs, and the other formats made from them."""
    found: list[tuple[str, bytes]] = []
    for path in sorted((ROOT / "samples").glob("*.json")):
        found.append(("loopscope", path.read_bytes()))
    for path in sorted((ROOT / "tests" / "data").glob("*.json")):
        found.append(("course-trace", path.read_bytes()))
    for path in sorted(CLAUDE_CODE.glob("*.jsonl")):
        found.append(("claude-code", path.read_bytes()))
    logs = ROOT / "tests" / "data" / "logs"  # other agents' logs, in their shape: Claude Code 2.1, Codex CLI
    found += [("claude-code", (logs / "claude_code_2_1.jsonl").read_bytes()),
              ("codex-rollout", (logs / "codex_rollout.jsonl").read_bytes())]
    found += [("course-trace", data) for data in _course_with_threads()]
    found += [("claude-code", files[0][1]) for files in sessions()]  # with compactions and in-file sidechains
    for name in ("subagent", "compact"):  # journals of runs with a sub-agent and with compactions
        found.append(("loopscope-journal", _journal_bytes(transcript.load(ROOT / "samples" / f"{name}.json"))))
    for path in sorted((ROOT / "samples").glob("*.json"))[:3]:
        trace = transcript.load(path)
        calls = [s.detail["response"] for s in trace.steps if s.stage == "call_model"]
        system = trace.meta.get("system", "")
        found += [
            ("anthropic-messages", json.dumps(trace.messages).encode()),
            ("anthropic-request", json.dumps({"model": trace.meta.get("model"), "system": system, "max_tokens": 8000,
                                              "tools": trace.meta.get("tools"), "messages": trace.messages}).encode()),
            ("anthropic-responses", json.dumps(calls).encode()),
            ("openai-chat", json.dumps(_openai_body(trace.messages, system)).encode()),
            ("loopscope-journal", _journal_bytes(trace)),
        ]
    return tuple(found)


def journal_seeds() -> list[bytes]:
    return [data for kind, data in seeds() if kind == "loopscope-journal"]


# -- strategies --------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=12)
    | st.sampled_from(["", "user", "assistant", "tool_use", "tool_result", "text", "call_model", "run_tool",
                       "toolu_1", "end_turn", "loopscope-transcript"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON value: the keys and indexes that lead to it."""
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, prefix + (i,))
    return found


def _replace(value: object, path: tuple, new: object) -> object:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


def _documents(data: bytes) -> tuple[bool, list]:
    """(is JSON Lines, the JSON values): one value, or one a line."""
    try:
        return False, [json.loads(data)]
    except ValueError:
        return True, [json.loads(line) for line in data.splitlines() if line.strip()]


def _encode(lines: bool, values: list) -> bytes:
    if lines:
        return "\n".join(json.dumps(v, ensure_ascii=False) for v in values).encode() + b"\n"
    return json.dumps(values[0], ensure_ascii=False).encode()


@st.composite
def mutated(draw, pool=None) -> bytes:
    """A real file with one to three values, anywhere in it, replaced by any JSON value."""
    data = draw(st.sampled_from(pool or [d for _, d in seeds()]))
    lines, values = _documents(data)
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, len(values) - 1))
        where = draw(st.sampled_from(_paths(values[n])))
        values[n] = _replace(values[n], where, draw(json_values))
    return _encode(lines, values)


@st.composite
def truncated(draw, pool=None) -> bytes:
    """A real file cut at any byte, mid-character included."""
    data = draw(st.sampled_from(pool or [d for _, d in seeds()]))
    return data[: draw(st.integers(0, len(data)))]


@st.composite
def deep(draw) -> bytes:
    """Nesting deeper than anything real: alone, or where a value of a real file was."""
    depth = draw(st.sampled_from([50, 200, 900, 990, 1100, 5000, 100_000]))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}"), ('[{"content":', "}]")]))
    nest = opener * depth + "0" + closer * depth
    if draw(st.booleans()):
        return nest.encode()
    if draw(st.booleans()):  # inside a string, as OpenAI's `arguments` carry JSON
        nest = json.dumps(nest)
    data = draw(st.sampled_from([d for _, d in seeds()]))
    lines, values = _documents(data)
    n = draw(st.integers(0, len(values) - 1))
    where = draw(st.sampled_from(_paths(values[n])))
    marker = "\u0000NEST\u0000"
    values[n] = _replace(values[n], where, marker)
    return _encode(lines, values).replace(json.dumps(marker).encode(), nest.encode(), 1)


@st.composite
def huge(draw) -> bytes:
    """A real file with one string made a few megabytes long (or a huge id, name or key)."""
    data = draw(st.sampled_from([d for _, d in seeds()]))
    lines, values = _documents(data)
    n = draw(st.integers(0, len(values) - 1))
    strings = [p for p in _paths(values[n]) if p and isinstance(_get(values[n], p), str)] or [()]
    where = draw(st.sampled_from(strings))
    size = draw(st.sampled_from([100_000, 1_000_000, 4_000_000]))
    values[n] = _replace(values[n], where, draw(st.sampled_from("x\u00e9\n\u2028")) * size)
    return _encode(lines, values)


def _get(value: object, path: tuple) -> object:
    for key in path:
        value = value[key]
    return value


random_bytes = st.binary(max_size=3000) | st.text(max_size=300).map(str.encode)


def transcript_seeds() -> list[bytes]:
    return [data for kind, data in seeds() if kind == "loopscope"]


def _zip(files: list[tuple[str, bytes]]) -> bytes:
    import io
    import zipfile

    import warnings

    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        warnings.simplefilter("ignore")  # a file given twice is one of the cases: a zip with a name twice
        for name, data in files:
            z.writestr(name, data)
    return out.getvalue()


@st.composite
def session_files(draw) -> list[tuple[str, bytes]]:
    """A session's files (its log and its sub-agents'), one or two of them changed, cut or dropped; maybe zipped."""
    files = list(draw(st.sampled_from(sessions())))
    whole = {name for name, _ in files}  # files still valid JSON Lines, whose fields can be changed
    for _ in range(draw(st.integers(1, 2))):
        n = draw(st.integers(0, len(files) - 1))
        name, data = files[n]
        how = draw(st.sampled_from(["field", "cut", "drop", "swap", "noise"]))
        if how != "field" or name not in whole:
            whole.discard(name)
        if how == "field" and name in whole:
            files[n] = (name, draw(mutated([data])))
        elif how == "cut":
            files[n] = (name, draw(truncated([data])))
        elif how == "drop" and len(files) > 1:
            files.pop(n)
        elif how == "swap":  # a sub-agent's file given first, or a file twice
            files.insert(0, files[-1])
        else:
            files[n] = (name, draw(random_bytes))
    if draw(st.booleans()):
        return [("session.zip", _zip(files))]
    return files


def files() -> st.SearchStrategy[tuple[str, bytes]]:
    """(how it was made, bytes) of every kind of hostile file."""
    return st.one_of(
        random_bytes.map(lambda b: ("random", b)),
        truncated().map(lambda b: ("truncated", b)),
        mutated().map(lambda b: ("mutated", b)),
        mutated(transcript_seeds()).map(lambda b: ("mutated-transcript", b)),
        deep().map(lambda b: ("deep", b)),
        huge().map(lambda b: ("huge", b)),
    )


@st.composite
def corrupted_journal(draw) -> bytes:
    """A saved run's journal cut, with bytes flipped, a line replaced, or a field changed."""
    pool = journal_seeds()
    how = draw(st.sampled_from(["cut", "flip", "line", "field", "append"]))
    if how == "cut":
        return draw(truncated(pool))
    if how == "field":
        return draw(mutated(pool))
    data = bytearray(draw(st.sampled_from(pool)))
    if how == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        return bytes(data)
    lines = bytes(data).split(b"\n")
    junk = draw(st.one_of(json_values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40)))
    if how == "line":
        lines[draw(st.integers(0, len(lines) - 1))] = junk
    else:  # a line appended after a crash, or by hand
        lines.insert(len(lines) - 1, junk)
    return b"\n".join(lines)


# -- the checks ----------------------------------------------------------------------

PAGE_STACK = 120  # frames a Streamlit page's code already runs under (the script runner's, the page's)


def _under_a_page(frames: int, draw, trace):
    """`draw(trace)` beneath `frames` more frames of stack, as a page would call it."""
    if frames:
        return _under_a_page(frames - 1, draw, trace)
    return draw(trace)


def render(trace) -> tuple[int, ...]:
    """Everything a page shows of a trace, at every step (some of them, for a long one), then saving it and opening
    it again: the steps whose history came back different (none, when all is well). Raises what a view raises."""
    return _under_a_page(PAGE_STACK, _render, trace)


def _render(trace) -> tuple[int, ...]:
    n = len(trace.steps)
    indexes = range(n) if n <= MAX_RENDERED_STEPS else sorted(
        {0, n - 1, *range(0, n, max(1, n // (MAX_RENDERED_STEPS - 2)))})
    for i in indexes:
        messages = trace.messages_at(i)
        trace.results_at(i)
        rules.pairs(messages)
        export.to_markdown(trace, i)
        describe(trace, i)
        views.pairs_table(trace, i)
        views.state_rows(trace, i)
        views.what_happened(trace, i)
        views.status_line(trace, i)
        views.breadcrumb(trace, i)
        views.sub_agent_at(trace, i)
        views.compaction_at(trace, i)
        views.growth_table(trace, i)
        views.last_call_at(trace, i)
        svg_at(trace, i)
        trace.request_at(i)
    views.steps_table(trace)
    export.to_markdown(trace)
    transcript.violations(trace)
    again = transcript.loads(transcript.dumps(trace), strict=False)  # saved and opened again
    return tuple(i for i in indexes if again.messages_at(i) != trace.messages_at(i))


READ, REFUSED, CRASHED = "imported", "failed", "crashed"


@dataclass(frozen=True)
class Outcome:
    """What one reader did with one hostile file, and what the pages then made of what it read."""

    reader: str
    result: str  # READ: read, and every view of it drew; REFUSED: its own clean error; CRASHED: anything else
    said: str = ""  # the refusal a user is shown, or what crashed and where
    differs: tuple[int, ...] = ()  # steps whose history, saved and opened again, is not the one saved
    listed: int | None = None  # a saved run's journal: the steps the runs list shows for it
    loaded: int | None = None  # ... and the steps it opens with
    settings: object = None  # ... and the settings it opens with

    def problem(self) -> str:
        """What is wrong, in a line; "" when nothing is (the benchmark counts these, the tests assert each fact)."""
        if self.result == CRASHED:
            return self.said
        if self.differs:
            return f"{self.reader}: the history of step(s) {list(self.differs)[:5]} read back differs from the one saved"
        if self.listed != self.loaded or (self.result == READ and self.listed is not None
                                          and not isinstance(self.settings, dict)):
            return f"{self.reader}: listed with {self.listed} steps, opened with {self.loaded}, settings {self.settings!r}"
        return ""


def _crash(where: str, data: bytes, exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return f"{where} crashed on {len(data)} bytes {data[:120]!r}…: {text[:500]}"


def check_import(data: bytes, drawn: dict | None = None) -> Outcome:
    """import_bytes on `data` (named "fuzz"), then every view of what it read."""
    return _check_read("import_bytes", data, lambda: import_bytes(data, NAME), drawn)


def _render_once(trace, drawn: dict | None) -> tuple[int, ...]:
    """render(trace), unless a trace saved as the very same transcript was rendered already for this file (`drawn`:
    its saved text -> what render found). The readers of one file often read the same trace (the importer of a
    Loopscope transcript and the loader, strict or not): drawing it again would find the same thing."""
    if drawn is None:
        return render(trace)
    try:
        saved = transcript.dumps(trace)
    except Exception:
        return render(trace)  # render says what breaks, as it says it
    if saved not in drawn:
        drawn[saved] = render(trace)
    return drawn[saved]


def _check_read(where: str, data: bytes, read, drawn: dict | None = None) -> Outcome:
    """`read()` (an importer) then every view of what it read."""
    try:
        imported = read()
    except ImportFailed as exc:
        if UNEXPECTED in str(exc):
            return Outcome(where, CRASHED, _crash(where, data, exc.__cause__ or exc))
        return Outcome(where, REFUSED, str(exc))
    except Exception as exc:
        return Outcome(where, CRASHED, _crash(where, data, exc))
    try:
        differs = _render_once(imported.trace, drawn)
    except Exception as exc:
        return Outcome(where, CRASHED, _crash(f"rendering what {where} read ({imported.format})", data, exc))
    return Outcome(where, READ, differs=differs)


def _rendered(where: str, trace, data: bytes, doing: str, drawn: dict | None = None, **facts) -> Outcome:
    """What `where` read, rendered by every view: read (with `facts`), or a crash of the rendering."""
    try:
        differs = _render_once(trace, drawn)
    except Exception as exc:
        return Outcome(where, CRASHED, _crash(doing, data, exc))
    return Outcome(where, READ, differs=differs, **facts)


def check_loads(data: bytes, strict: bool, drawn: dict | None = None) -> Outcome:
    """transcript.loads on `data`, then every view of what it read."""
    where = f"transcript.loads(strict={strict})"
    try:
        trace = transcript.loads(data, strict=strict)
    except transcript.TranscriptError as exc:
        return Outcome(where, REFUSED, str(exc))
    except Exception as exc:
        return Outcome(where, CRASHED, _crash(where, data, exc))
    return _rendered(where, trace, data, "rendering a loaded transcript", drawn)


def check_journal(data: bytes, folder: Path) -> Outcome:
    """The runs store's import of an old journal holding `data`, then its list and load, and every view of the run."""
    where = "RunsStore import"
    case = Path(tempfile.mkdtemp(dir=folder))
    try:
        try:
            store, owner = import_journal(data, case)
            listed = store.list(owner)
            if not listed:
                return Outcome(where, REFUSED, "not listed")  # refused whole, and left where it was
            trace, settings = store.load(owner, LEGACY_RUN)
        except transcript.TranscriptError as exc:
            return Outcome(where, REFUSED, str(exc))
        except Exception as exc:
            return Outcome(where, CRASHED, _crash(where, data, exc))
        return _rendered(where, trace, data, "rendering a loaded run", listed=listed[0].steps, loaded=len(trace),
                         settings=settings)
    finally:
        shutil.rmtree(case, ignore_errors=True)


def check_session(files: list[tuple[str, bytes]]) -> Outcome:
    """import_files on a session's files, then every view of what it read."""
    return _check_read("import_files", b"".join(d[:40] for _, d in files), lambda: import_files(files))


def check_file(data: bytes) -> list[Outcome]:
    """Every reader that takes a file: the importers and the transcript loader, strict and not."""
    drawn: dict = {}  # a trace two readers read alike is drawn once
    return [check_import(data, drawn), check_loads(data, True, drawn), check_loads(data, False, drawn)]
