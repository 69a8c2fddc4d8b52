"""How fast a long Claude Code session log imports, next to just parsing its JSON lines.

    .venv/bin/python bench/replay.py                  # 5,000 records, best of 7
    .venv/bin/python bench/replay.py --browser        # and clicks on it in Chromium
    .venv/bin/python bench/replay.py --records 20000 --out /tmp/long.jsonl
    .venv/bin/python bench/replay.py --browser --session-only   # the session with compactions and sub-agents

`claude_code_log()` writes the log (tool calls written one line a block as
Claude Code does, parallel results hanging off their own tool_use lines, a
sub-agent sidechain, and records that are not messages); other benchmarks and
tests reuse it. The goal: the import under 1 s, and within 5x of parsing alone.
With --browser, click-to-update on the Replay page at the first, middle and last
step, against the same log's first ten messages: within 20 % at each place.

Then a session of 5,000 records with 5 compactions and 20 sub-agents (half in
the session's file, half in subagents/agent-<id>.jsonl files of their own,
`claude_code_session()`): the import of all its files and the views of its
first step, in Python; with --browser, from dropping the files on the Replay
page until its first step is drawn. Goal: under 1.5 s beyond start-up.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid as uuidlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

GOAL_SECONDS = 1.0
GOAL_SLOWER = 0.2  # the long log's clicks against a 10-message session's, at the same place
GOAL_RATIO = 5.0
WORDS = ("the loop calls the model then runs each tool_use and writes every tool_result back into messages "
         "so the next call sees what the tools printed file test python error line count result").split()


class _Log:
    """Appends records the way Claude Code writes them, keeping the chain."""

    def __init__(self, rng: random.Random, session: str):
        self.rng = rng
        self.session = session
        self.lines: list[str] = []
        self.clock = datetime(2025, 11, 23, 9, 0, tzinfo=timezone.utc)
        self.n_ids = 0

    def uuid(self) -> str:
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(lo, hi)))

    def write(self, record: dict) -> None:
        self.clock += timedelta(milliseconds=self.rng.randint(5, 3000))
        record.setdefault("timestamp", self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"))
        self.lines.append(json.dumps(record, ensure_ascii=False))

    def record(self, kind: str, parent: str | None, message: dict, side: str | None = None, **extra) -> str:
        uid = self.uuid()
        record = {"parentUuid": parent, "isSidechain": side is not None, "userType": "external",
                  "cwd": "/home/learner/project", "sessionId": self.session, "version": "2.0.49",
                  "gitBranch": "main", "type": kind, "message": message, "uuid": uid}
        if side is not None:
            record["agentId"] = side
        record.update(extra)
        self.write(record)
        return uid

    def noise(self, parent: str | None) -> str | None:
        """A record that is not a message; a `system` one sits in the chain, the others beside it."""
        kind = self.rng.choice(["file-history-snapshot", "queue-operation", "system", "progress"])
        if kind == "system":
            uid = self.uuid()
            self.write({"parentUuid": parent, "isSidechain": False, "type": "system", "subtype": "turn_duration",
                        "content": "turn took a while", "level": "info", "uuid": uid, "sessionId": self.session})
            return uid
        if kind == "progress":
            self.write({"parentUuid": parent, "isSidechain": False, "type": "progress", "uuid": self.uuid(),
                        "data": {"type": "bash_progress", "output": self.words(3, 10)}, "sessionId": self.session})
        elif kind == "file-history-snapshot":
            self.write({"type": "file-history-snapshot", "messageId": self.uuid(),
                        "snapshot": {"trackedFileBackups": {}, "timestamp": self.clock.isoformat()},
                        "isSnapshotUpdate": False})
        else:
            self.write({"type": "queue-operation", "operation": "enqueue", "content": self.words(2, 6),
                        "sessionId": self.session})
        return parent

    def turn(self, parent: str, side: str | None, n_tools: int, tool: str = "Bash") -> tuple[str, list[str]]:
        """One response written a line a block (thinking, text, each tool_use), then its results."""
        self.n_ids += 1
        mid = f"msg_{self.n_ids:024d}"
        base = {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": self.rng.randint(5, 50), "output_tokens": self.rng.randint(20, 400),
                          "cache_read_input_tokens": self.rng.randint(1000, 90000)}}
        node = self.record("assistant", parent, {**base, "content": [
            {"type": "thinking", "thinking": self.words(20, 80), "signature": "sig" + self.uuid()}]}, side)
        node = self.record("assistant", node, {**base, "content": [{"type": "text", "text": self.words(10, 60)}]}, side)
        uses = []
        for _ in range(n_tools):
            tid = "toolu_" + self.uuid().replace("-", "")[:24]
            command = f"grep -rn '{self.rng.choice(WORDS)}' src | head -{self.rng.randint(5, 40)}"
            block = {"type": "tool_use", "id": tid, "name": tool,
                     "input": {"command": command} if tool == "Bash" else {"prompt": self.words(8, 20)}}
            node = self.record("assistant", node, {**base, "content": [block]}, side)
            uses.append((node, tid))
        last = node
        for use_node, tid in uses:  # each result hangs off the line of its own tool_use
            output = "\n".join(self.words(4, 14) for _ in range(self.rng.randint(1, 25)))
            is_error = self.rng.random() < 0.1
            last = self.record("user", use_node, {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tid, "content": output, "is_error": is_error}]}, side,
                toolUseResult={"stdout": "" if is_error else output, "stderr": output if is_error else "",
                               "interrupted": False, "isImage": False})
        return last, [tid for _, tid in uses]

    def answer(self, parent: str, side: str | None = None) -> str:
        self.n_ids += 1
        return self.record("assistant", parent, {
            "id": f"msg_{self.n_ids:024d}", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [{"type": "text", "text": self.words(20, 120)}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 150}}, side)

    def ask(self, parent: str | None) -> str:
        return self.record("user", parent, {"role": "user", "content": self.words(6, 30)})


def claude_code_log(records: int = 5000, seed: int = 1) -> bytes:
    """A Claude Code session log of `records` lines (at least 60): tasks of several turns, tools run one or
    three at a time, one sub-agent (sidechain) thread, and noise records beside the chain."""
    rng = random.Random(seed)
    log = _Log(rng, "0b7c2d1e-5f60-4a3b-9c8d-7e6f5a4b3c2d")
    log.write({"type": "summary", "summary": "A long generated session", "leafUuid": "unknown"})
    node = log.ask(None)
    sub_agent_done = False
    while len(log.lines) < records - 40:
        for _ in range(rng.randint(1, 6)):
            if not sub_agent_done and len(log.lines) > records // 3:
                # A Task call: the sub-agent works in a sidechain of its own, then the main thread gets its answer.
                node, (task_id,) = _task(log, node)
                sub_agent_done = True
            else:
                node, _ = log.turn(node, None, rng.choice([1, 1, 1, 3]))
            if rng.random() < 0.5:
                node = log.noise(node)
        node = log.answer(node)
        node = log.ask(node)
    node = log.answer(node)
    while len(log.lines) < records:  # make the count exact with records beside the chain
        log.write({"type": "file-history-snapshot", "messageId": log.uuid(), "snapshot": {"trackedFileBackups": {}},
                   "isSnapshotUpdate": True})
    return ("\n".join(log.lines) + "\n").encode()


def _task(log: _Log, parent: str) -> tuple[str, list[str]]:
    log.n_ids += 1
    tid = "toolu_task" + log.uuid().replace("-", "")[:18]
    mid = f"msg_{log.n_ids:024d}"
    node = log.record("assistant", parent, {
        "id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "tool_use", "id": tid, "name": "Task",
                     "input": {"description": "look around", "prompt": "Find where the loop is tested"}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 40}})
    side = "a1b2c3d4"
    sub = log.record("user", None, {"role": "user", "content": "Find where the loop is tested"}, side)
    for _ in range(4):
        sub, _ = log.turn(sub, side, 1)
    sub = log.answer(sub, side)
    node = log.record("user", node, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": "The loop is tested in tests/."}]}]},
        toolUseResult={"status": "completed", "agentId": side, "totalToolUseCount": 4})
    return node, [tid]


def _agent(log: _Log, parent: str, n: int, in_file: bool) -> tuple[str, str, _Log | None]:
    """A Task call whose sub-agent works four turns: in the session's own file (a sidechain) or in a file of its own."""
    log.n_ids += 1
    tid = "toolu_task" + log.uuid().replace("-", "")[:18]
    agent = f"{n:04d}{log.uuid()[:4]}"
    prompt = f"Sub-task {n}: {log.words(6, 14)}"
    node = log.record("assistant", parent, {
        "id": f"msg_{log.n_ids:024d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "tool_use", "id": tid, "name": "Task",
                     "input": {"description": f"sub-task {n}", "prompt": prompt, "subagent_type": "general-purpose"}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 40}})
    side = _Log(log.rng, log.session) if in_file else log
    side.clock, side.n_ids = log.clock, log.n_ids
    sub = side.record("user", None, {"role": "user", "content": prompt}, agent)
    for _ in range(4):
        sub, _ = side.turn(sub, agent, 1)
    side.answer(sub, agent)
    log.clock, log.n_ids = side.clock, side.n_ids
    node = log.record("user", node, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": f"Sub-task {n} is done."}]}]},
        toolUseResult={"status": "completed", "agentId": agent, "totalToolUseCount": 4})
    return node, agent, side if in_file else None


def _compaction(log: _Log, parent: str, n: int) -> str:
    """A compact_boundary, then the summary the model sees from there on."""
    boundary = log.uuid()
    log.write({"parentUuid": None, "logicalParentUuid": parent, "isSidechain": False, "type": "system",
               "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info", "uuid": boundary,
               "sessionId": log.session, "compactMetadata": {"trigger": "auto" if n % 2 else "manual",
                                                              "preTokens": 150_000 + n}})
    return log.record("user", boundary, {"role": "user", "content": f"This session is being continued from a previous "
                                                                    f"conversation (compaction {n}). Summary: "
                                                                    + log.words(40, 90)}, isCompactSummary=True)


def claude_code_session(records: int = 5000, compactions: int = 5, agents: int = 20,
                        seed: int = 2) -> tuple[bytes, dict[str, bytes]]:
    """A Claude Code session of about `records` lines in all, with `compactions` compact boundaries and `agents`
    sub-agents: half as sidechains in the session's file, half in `subagents/agent-<id>.jsonl` files of their own.
    Returns (the session's log, {file name: a sub-agent's log})."""
    rng = random.Random(seed)
    log = _Log(rng, "5e6f7a8b-1c2d-4e3f-9a0b-1c2d3e4f5a6b")
    files: dict[str, bytes] = {}
    written = lambda: len(log.lines) + sum(f.count(b"\n") for f in files.values())  # noqa: E731
    node = log.ask(None)
    made_compactions = made_agents = 0
    while written() < records - 40:
        progress = written() / records
        if made_compactions < compactions and progress > (made_compactions + 1) / (compactions + 1):
            made_compactions += 1
            node = _compaction(log, node, made_compactions)
        elif made_agents < agents and progress > (made_agents + 0.5) / (agents + 1):
            made_agents += 1
            node, agent, side = _agent(log, node, made_agents, in_file=made_agents % 2 == 0)
            if side is not None:
                files[f"subagents/agent-{agent}.jsonl"] = ("\n".join(side.lines) + "\n").encode()
        else:
            node, _ = log.turn(node, None, rng.choice([1, 1, 1, 3]))
            if rng.random() < 0.3:
                node = log.noise(node)
            if rng.random() < 0.2:
                node = log.ask(log.answer(node))
    log.answer(node)
    return ("\n".join(log.lines) + "\n").encode(), files


def best_of(repeat: int, *fns) -> list[float]:
    """The best time of each function over `repeat` rounds, run in turn so that a busy machine slows all alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            started = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - started)
    return best


def _clicks_at(page, n: int, k: int, clicks: int) -> list[float]:
    """At step k (1-based): Step and Back (Back and Step at the last step), `clicks` times each; the seconds each took."""
    from bench.render import timed_click

    there, away = (("replay-step", k + 1), ("replay-back", k)) if k < n else (("replay-back", k - 1), ("replay-step", k))
    times = []
    for _ in range(clicks):
        times.append(timed_click(page, there[0], f"Step {there[1]} of {n}"))
        times.append(timed_click(page, away[0], f"Step {away[1]} of {n}"))
    return times


SLIDER_TRACK = ".st-key-replay-slider [data-testid='stSlider'] [data-orientation='horizontal'] [data-orientation='horizontal']"
SHOWN_STEP = """async ([before, idle, timeout]) => {
    const started = performance.now();
    const heading = () => [...document.querySelectorAll('h3')].map(h => h.textContent).find(t => /^Step \\d+ of/.test(t)) || '';
    while (heading().startsWith(before) || document.querySelector(idle) === null) {
        if (performance.now() - started > timeout) throw new Error(`still "${before}" after ${timeout} ms`);
        await new Promise(requestAnimationFrame);
    }
    return heading();
}"""


def to_middle(page, n: int) -> int:
    """Drag nothing, click the slider's track at its middle, as a person would: the step it lands on (0-based)."""
    from bench.render import IDLE

    page.wait_for_selector(IDLE)
    track = page.locator(SLIDER_TRACK).first
    track.wait_for(timeout=60_000)
    box = track.bounding_box()
    before = next(h for h in page.locator("h3").all_text_contents() if h.startswith("Step "))
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    shown = page.evaluate(SHOWN_STEP, [before.split(" · ")[0] + " ", IDLE, 60_000])
    return int(shown.split()[1]) - 1


PLACES = ("first step", "middle", "last step")


def browser_clicks(data: bytes, clicks: int = 5) -> dict[str, dict[str, list[float]]]:
    """Click-to-update on the Replay page at the first, middle and last step: a 10-message session and `data`.

    Both are open at once, in two windows, and clicked in turn (a Step and a Back on
    one, then on the other), so a machine that slows down for a while slows both
    alike. The middle is reached as a person would, with a click on the middle of
    the slider. Returns {place: {"10 messages" | file name: seconds of each click}}.
    """
    import tempfile

    from playwright.sync_api import sync_playwright

    from bench.render import launch, open_transcript, serve_app, timed_click
    from loop.importers import import_bytes

    found: dict[str, dict[str, list[float]]] = {place: {} for place in PLACES}
    with tempfile.TemporaryDirectory(prefix="loopscope-bench-") as folder, serve_app() as url, \
            sync_playwright() as p:
        # The 10-message session is the same log's first ten messages (the same kinds of blocks, of the
        # same sizes), as a plain list of messages: only the length differs.
        imported = import_bytes(data)
        small = Path(folder) / "ten-messages.json"
        small.write_text(json.dumps(imported.trace.messages[:10]), encoding="utf-8")
        big = Path(folder) / "generated.jsonl"
        big.write_bytes(data)
        browser = launch(p)
        tabs = []  # (label, page, number of steps)
        for path, n in ((small, len(import_bytes(small.read_bytes()).trace)), (big, len(imported.trace))):
            page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()  # a window each
            open_transcript(page, url, path)
            tabs.append(("10 messages" if path is small else path.name, page, n))
        for place in PLACES:
            at = {}
            for label, page, n in tabs:  # put each tab at the place
                if place == "first step":
                    at[label] = 1
                elif place == "last step":
                    timed_click(page, "replay-to-end", f"Step {n} of {n}")
                    at[label] = n
                else:
                    at[label] = to_middle(page, n) + 1
            for _ in range(clicks):  # then click them in turn
                for label, page, n in tabs:
                        found[place].setdefault(label, []).extend(_clicks_at(page, n, at[label], 1))
            for label, page, n in tabs:
                if place == "middle":
                    found[place][f"{label} (step {at[label]} of {n})"] = found[place].pop(label)
        browser.close()
    return found


GOAL_SESSION_SECONDS = 1.5


def first_views(trace) -> None:
    """What the Replay page works out for a trace's first step (its data, not its drawing)."""
    from loop import views
    from loop.diagram import dot_at

    cursor = trace.cursor
    views.window(len(trace.messages_at(cursor)), 12)
    views.pairs_rows(trace, cursor, recent=12, problems=20)
    for i in range(*views.steps_window(trace, cursor, around=7)):
        views.step_row(trace, i)
    views.state_rows(trace, cursor)
    views.breadcrumb(trace, cursor)
    dot_at(trace, cursor)
    views.what_happened(trace, cursor)


def session_bench(repeat: int, browser: bool) -> bool:
    from loop.importers import import_files

    main_log, files = claude_code_session()
    entries = [("session.jsonl", main_log), *files.items()]
    records = sum(data.count(b"\n") for _, data in entries)
    size = sum(len(data) for _, data in entries)
    imported = import_files(entries)
    trace = imported.trace
    (took,) = best_of(repeat, lambda: first_views(import_files(entries).trace))
    compactions = sum(1 for s in trace.steps if s.stage == "compact")
    linked = sum(1 for t in trace.threads.values() if t.parent_tool_use_id)
    print(f"session: {records:,} records in {len(entries)} files ({size / 1e6:.2f} MB): {len(trace):,} steps, "
          f"{len(trace.threads)} threads ({linked} linked to their Task call), {compactions} compactions, "
          f"{len(imported.warnings)} warnings")
    print(f"  import of every file + the views of the first step: {took * 1000:8.1f} ms (best of {repeat})")
    met = took < GOAL_SESSION_SECONDS
    if browser:
        shown = browser_open_session(entries)
        print(f"  in Chromium, from dropping the {len(entries)} files on the Replay page to its first step drawn: "
              f"{' · '.join(f'{t * 1000:.0f} ms' for t in shown)} (median {sorted(shown)[len(shown) // 2] * 1000:.0f} ms)")
        met = met and sorted(shown)[len(shown) // 2] < GOAL_SESSION_SECONDS
    print(f"  goal (under {GOAL_SESSION_SECONDS} s beyond start-up): {'met' if met else 'MISSED'}")
    return met


def browser_open_session(entries: list[tuple[str, bytes]], times: int = 3) -> list[float]:
    """Seconds from setting the files on the Replay page's uploader to the first step drawn, `times` times."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from bench.render import IDLE, launch, serve_app, wait_idle

    found = []
    with tempfile.TemporaryDirectory(prefix="loopscope-bench-") as folder, serve_app() as url, \
            sync_playwright() as p:
        paths = []
        for name, data in entries:
            path = Path(folder) / Path(name).name
            path.write_bytes(data)
            paths.append(str(path))
        browser = launch(p)
        for _ in range(times):
            page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
            page.goto(f"{url}/replay")  # start-up: the page and its default sample, not timed
            wait_idle(page)
            page.get_by_text("Replaying two-tools.json").wait_for(timeout=60_000)
            started = time.perf_counter()
            page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(paths)
            page.get_by_text("Replaying session.jsonl with").wait_for(timeout=120_000)
            page.wait_for_function("""([idle]) => document.querySelector(idle) !== null
                && [...document.querySelectorAll('h3')].some(h => h.textContent.startsWith('Step 1 of'))""",
                                   arg=[IDLE], timeout=120_000)
            found.append(time.perf_counter() - started)
            page.context.close()
        browser.close()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", help="also write the generated log to this file")
    parser.add_argument("--browser", action="store_true",
                        help="also time clicks on the Replay page in Chromium: first, middle and last step, "
                             "against a 10-message session")
    parser.add_argument("--clicks", type=int, default=5, help="with --browser: Step and Back clicks at each place")
    parser.add_argument("--session-only", action="store_true",
                        help="only the session with compactions and sub-agents")
    args = parser.parse_args(argv)

    from loop.importers import import_bytes

    if args.session_only:
        return 0 if session_bench(args.repeat, args.browser) else 1

    data = claude_code_log(args.records)
    if args.out:
        Path(args.out).write_bytes(data)
    lines = data.count(b"\n")
    result = import_bytes(data, "generated.jsonl")
    parse, full = best_of(args.repeat,
                          lambda: [json.loads(line) for line in data.decode("utf-8").split("\n") if line.strip()],
                          lambda: import_bytes(data, "generated.jsonl"))
    ratio = full / parse
    print(f"log: {lines} records, {len(data) / 1e6:.2f} MB → {len(result.trace.messages)} messages, "
          f"{len(result.trace)} steps, threads {[t.id for t in result.threads]}, {len(result.warnings)} warnings")
    print(f"parse JSON lines only: {parse * 1000:8.1f} ms (best of {args.repeat})")
    print(f"import (import_bytes): {full * 1000:8.1f} ms (best of {args.repeat})")
    print(f"ratio import / parse:  {ratio:8.2f}x")
    met = full < GOAL_SECONDS and ratio <= GOAL_RATIO
    print(f"goal (under {GOAL_SECONDS:.0f} s, within {GOAL_RATIO:.0f}x of parsing): {'met' if met else 'MISSED'}")
    if args.browser:
        import statistics

        found = browser_clicks(data, args.clicks)
        print(f"click to update on the Replay page ({args.clicks} Step + {args.clicks} Back clicks at each place, "
              "the two windows clicked in turn), median / worst:")
        for place, by_tab in found.items():
            medians = [statistics.median(times) for times in by_tab.values()]
            cells = " · ".join(f"{label} {statistics.median(times) * 1000:.0f} / {max(times) * 1000:.0f} ms"
                               for label, times in by_tab.items())
            print(f"  {place:11} {cells} · ratio {medians[1] / medians[0]:.2f}")
        print(f"  goal: the long log within 20 % of the 10-message session at each place (ratio <= {1 + GOAL_SLOWER:.1f})")
    session_met = session_bench(args.repeat, args.browser)
    return 0 if met and session_met else 1


if __name__ == "__main__":
    sys.exit(main())
