"""What the engine costs over the chapter's bare loop, and how much memory 10,000 steps hold.

    .venv/bin/python bench/engine.py                      # 10,000 steps, runs of 50 turns, best of 3
    .venv/bin/python bench/engine.py --turns 200 --repeat 1

All loops talk to the same in-process responder through the same `anthropic`
SDK client (an httpx2 MockTransport: no network, but the SDK really builds,
sends and parses every request) and run the same no-op tool. The responder
asks for one `tool_use` a turn for `--turns` turns, then ends with end_turn.

- bare:   the chapter's `agent_loop`, a `while True` around `client.messages.create`,
          exactly as written (the SDK's content objects go into `messages`);
- dicts:  the same loop keeping the content as plain dicts, as the engine does;
- engine: `Run.execute()` once a stage, recording a trace step each time.

The engine takes about five steps a turn (call_model, append_assistant, decide,
run_tool, write_back) where the bare loop does one iteration, so they are
compared per TURN: one model call, one tool run, one write-back.

The 10,000 steps are split into runs of `--turns` turns because every call
re-sends the whole history: one run of 2,000 turns costs O(turns²) in the
SDK's request building alone (about 3.5 minutes here), for bare and engine
alike. Goals: engine/bare <= 1.5 a turn; memory for 10,000 steps well under 200 MB.

Then the same with micro-compaction on every turn (toolset s06): each tool
prints more than 100 characters, so before every call one more old result is
replaced by a placeholder (a `compact` step, six steps a turn). The bare loop
does the same in place, as the course's s06 writes it. Compared per turn as
above; and one single run of 10,000 steps (its model answering in-process,
without the SDK, whose O(turns²) request building would measure the SDK):
its memory must stay linear, goal under 300 MB, because a rewrite keeps
only the messages it changed, never a copy of the history a step.

Last, the complete profile against the minimal one on the complete loop's four scenarios: the stages the minimal
run does, each kind timed in both profiles (goal: the complete profile within 1.5x; `complete_vs_minimal`).
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402
import httpx2  # noqa: E402

from loop.engine.model import Model, ModelConfig  # noqa: E402
from loop.engine.runner import Run, Settings  # noqa: E402
from loop.tools import Tool, ToolBox, ToolOutput  # noqa: E402

GOAL_RATIO = 1.5
REFUSED = "call_model (refused)"  # a call the API refused: the minimal loop stops, the complete one retries
GOAL_MB = 200
GOAL_MICRO_MB = 300
SYSTEM = "You are a coding agent working in a workspace folder. Use bash to solve tasks. Act, don't explain."
TASK = "Keep running commands."
MODEL = "bench-model"


class NoOp(Tool):
    """`bash` by name and schema, but it runs nothing: the bench measures the loop, not a shell."""

    name = "bash"
    description = "Run a shell command in the workspace."
    input_schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}

    def run(self, tool_input, workspace):
        return ToolOutput("ok")


class Responder:
    """Answers `/v1/messages`: a tool_use a turn for `turns` turns, then end_turn. Reads no body."""

    def __init__(self, turns: int):
        self.turns = turns
        self.calls = 0

    def reset(self) -> None:
        self.calls = 0

    def next_answer(self) -> dict:
        """The next response body: a tool_use a turn for `turns` turns, then end_turn."""
        self.calls += 1
        n = self.calls
        if n <= self.turns:
            content = [{"type": "text", "text": f"Step {n}."},
                       {"type": "tool_use", "id": f"toolu_{n:08d}", "name": "bash", "input": {"command": f"echo {n}"}}]
            stop_reason = "tool_use"
        else:
            content, stop_reason = [{"type": "text", "text": "Done."}], "end_turn"
        return {"id": f"msg_{n:08d}", "type": "message", "role": "assistant", "model": MODEL, "content": content,
                "stop_reason": stop_reason, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=json.dumps(self.next_answer()).encode(),
                               headers={"content-type": "application/json"})


def bare_loop(client: anthropic.Anthropic, tools: list[dict], as_dicts: bool = False) -> int:
    """The chapter's agent_loop, as written there (run_tool is the same no-op). Returns the turns done.

    As written, `messages` holds the SDK's content objects, which the SDK dumps
    again on every later call; `as_dicts` stores plain dicts instead, as the
    engine does, to isolate what the engine itself adds.
    """
    state = {"messages": [{"role": "user", "content": TASK}], "turn_count": 1, "transition_reason": None}
    workspace = Path(".")
    tool = NoOp()
    while True:
        response = client.messages.create(
            model=MODEL,
            system=SYSTEM,
            messages=state["messages"],
            tools=tools,
            max_tokens=8000,
        )
        content = [block.to_dict() for block in response.content] if as_dicts else response.content
        state["messages"].append({"role": "assistant", "content": content})
        if response.stop_reason != "tool_use":
            state["transition_reason"] = None
            return state["turn_count"]
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = tool.run(block.input, workspace).content
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        state["messages"].append({"role": "user", "content": results})
        state["turn_count"] += 1
        state["transition_reason"] = "tool_result"


def engine_run(client: anthropic.Anthropic, workspace: Path) -> Run:
    """The engine over the same client, one `Run.execute()` a stage until the loop ends."""
    model = Model(ModelConfig(model=MODEL, api_key="bench", system=SYSTEM, max_retries=0), client=client)
    run = Run(TASK, model, ToolBox([NoOp()], workspace), max_turns=10**9)
    while not run.done:
        run.execute()
    return run


LONG = "ok " * 60  # 180 characters: past micro-compact's 100, so every old result is replaced


class LongNoOp(NoOp):
    def run(self, tool_input, workspace):
        return ToolOutput(LONG)


def micro_compact_in_place(messages: list) -> None:
    """The course's s06 micro_compact, as written there: old tool_results replaced in the list itself."""
    found = [(m, part) for m in messages if m["role"] == "user" and isinstance(m.get("content"), list)
             for part in m["content"] if isinstance(part, dict) and part.get("type") == "tool_result"]
    if len(found) <= 3:
        return
    names = {}
    for m in messages:
        if m["role"] == "assistant" and isinstance(m.get("content"), list):
            for block in m["content"]:
                if getattr(block, "type", None) == "tool_use" or (isinstance(block, dict) and block.get("type") == "tool_use"):
                    bid = block.id if hasattr(block, "id") else block["id"]
                    names[bid] = block.name if hasattr(block, "name") else block["name"]
    for _, result in found[:-3]:
        if isinstance(result.get("content"), str) and len(result["content"]) > 100:
            name = names.get(result.get("tool_use_id"), "unknown")
            if name != "read_file":
                result["content"] = f"[Previous: used {name}]"


def bare_micro_loop(client: anthropic.Anthropic, tools: list[dict]) -> int:
    """The dict loop with micro-compaction before every call, and the token estimate s06 checks a turn."""
    messages = [{"role": "user", "content": TASK}]
    turn_count = 1
    tool = LongNoOp()
    while True:
        micro_compact_in_place(messages)
        if len(json.dumps(messages, default=str)) // 4 > 10**12:  # s06's auto-compact check; never true here
            raise AssertionError
        response = client.messages.create(model=MODEL, system=SYSTEM, messages=messages, tools=tools, max_tokens=8000)
        content = [block.to_dict() for block in response.content]
        messages.append({"role": "assistant", "content": content})
        if response.stop_reason != "tool_use":
            return turn_count
        results = [{"type": "tool_result", "tool_use_id": b.id, "content": tool.run(b.input, Path(".")).content}
                   for b in response.content if b.type == "tool_use"]
        messages.append({"role": "user", "content": results})
        turn_count += 1


def engine_micro_run(model, workspace: Path) -> Run:
    # s06's compaction, its auto-compact threshold out of reach: micro-compact alone, on every turn
    run = Run(TASK, model, ToolBox([LongNoOp()], workspace),
              settings=Settings(max_turns=10**9, toolset="s06", compact_at=10**12))
    while not run.done:
        run.execute()
    return run


class InProcessModel:
    """Answers as the responder does, without the SDK: for one run long enough that re-sending the history
    through the SDK would be all the bench measured."""

    def __init__(self, turns: int):
        from loop.engine.model import ModelConfig

        self.config = ModelConfig(model=MODEL, api_key="bench", system=SYSTEM)
        self.name = MODEL
        self.responder = Responder(turns)

    def create(self, messages, tools, **settings):
        from loop.engine.model import Reply

        return Reply(response=self.responder.next_answer(), request={"model": MODEL, "max_tokens": 8000},
                     duration_ms=0.0)


def micro_bench(args, workspace: Path) -> bool:
    """Per turn against the bare loop, both micro-compacting every turn; then one run of 10,000 steps."""
    responder = Responder(args.turns)
    client = anthropic.Anthropic(api_key="bench", base_url="http://bench.invalid", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(responder)))
    model = Model(ModelConfig(model=MODEL, api_key="bench", system=SYSTEM, max_retries=0), client=client)
    tools = [LongNoOp().spec()]
    steps_a_run = len(engine_micro_run(model, workspace).trace)
    responder.reset()
    bare_micro_loop(client, tools)
    calls_a_run = responder.calls
    runs = max(1, -(-args.steps // steps_a_run))
    bare_times, engine_times = [], []
    for _ in range(args.repeat):
        bare_times.append(timed(lambda: bare_micro_loop(client, tools), runs, responder)[0])
        engine_times.append(timed(lambda: engine_micro_run(model, workspace), runs, responder)[0])
    bare, engine = min(bare_times), min(engine_times)
    calls = runs * calls_a_run
    ratio = engine / bare
    responder.reset()
    compacts = sum(1 for s in engine_micro_run(model, workspace).trace.steps if s.stage == "compact")
    print(f"micro-compaction on every turn: {runs * steps_a_run:,} engine steps = {runs} runs x {steps_a_run} steps, "
          f"{compacts} compact steps a run")
    print(f"  bare loop, micro-compacting in place           : {bare:7.3f} s   {bare / calls * 1e6:8.1f} µs a turn")
    print(f"  engine, a compact step a turn                  : {engine:7.3f} s   {engine / calls * 1e6:8.1f} µs a turn"
          f"   ({engine / (runs * steps_a_run) * 1e6:.1f} µs a step)")
    print(f"  ratio engine/bare per turn: {ratio:.2f}   (goal <= {GOAL_RATIO}: {'met' if ratio <= GOAL_RATIO else 'MISSED'})")

    # One run of 10,000 steps (six a turn), in a process of its own: its peak memory is that run's.
    import multiprocessing

    turns = max(1, (args.steps - 4) // 6)
    with multiprocessing.get_context("spawn").Pool(1) as pool:  # a fresh process: its memory is the run's and its imports'
        found = pool.apply(long_micro_run, (turns, str(workspace)))
    peak = found["peak_mb"]
    print(f"  one run: {found['steps']:,} steps, {turns:,} turns, {found['rewrites']:,} compact steps, "
          f"{found['messages']:,} messages at the end, {found['versions']:,} message versions kept, "
          f"in {found['seconds']:.1f} s ({found['seconds'] / found['steps'] * 1e6:.0f} µs a step)")
    print(f"  its memory: peak RSS of the process {peak:.1f} MB (imports included), {found['grew_mb']:.1f} MB held by the run and its trace "
          f"at its end   (goal < {GOAL_MICRO_MB} MB: {'met' if peak < GOAL_MICRO_MB else 'MISSED'})")
    return ratio <= GOAL_RATIO and peak < GOAL_MICRO_MB


def long_micro_run(turns: int, workspace: str) -> dict:
    """One run of `turns` turns with micro-compaction on every turn; what it took, in time and memory."""
    gc.collect()
    before = _rss_mb()  # now, not the peak: the imports' peak may be above what the run ever reaches
    started = time.perf_counter()
    run = engine_micro_run(InProcessModel(turns), Path(workspace))
    took = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    grew = _rss_mb() - before  # the run and its trace, still held
    trace = run.trace
    history = trace.threads["main"].history
    middle = len(trace) // 2
    assert trace.messages_at(middle) != trace.messages[: trace.steps[middle].n_messages]  # rewritten since
    return {"steps": len(trace), "rewrites": sum(1 for s in trace.steps if s.stage == "compact"),
            "messages": len(trace.messages), "seconds": took, "peak_mb": peak, "grew_mb": grew,
            "versions": len(history.first) + sum(len(v) for v, _ in history.later.values())}


def _rss_mb() -> float:
    """This process's resident memory now, in MB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def timed(loop, runs: int, responder: Responder) -> tuple[float, list]:
    """Seconds for `runs` runs of `loop()`; what each returned (kept alive, as a class's runs would be)."""
    kept = []
    gc.collect()
    started = time.perf_counter()
    for _ in range(runs):
        responder.reset()
        kept.append(loop())
    return time.perf_counter() - started, kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10_000, help="engine steps in all (default 10,000)")
    parser.add_argument("--turns", type=int, default=50,
                        help="tool_use turns a run (default 50); each run is 5 steps a turn + 4")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds; the best counts (default 3)")
    args = parser.parse_args()

    import tempfile

    workspace = Path(tempfile.mkdtemp(prefix="loopscope-bench-"))  # the no-op tool writes nothing; removed at the end
    responder = Responder(args.turns)
    client = anthropic.Anthropic(api_key="bench", base_url="http://bench.invalid", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(responder)))
    tools = [NoOp().spec()]

    steps_a_run = len(engine_run(client, workspace).trace)  # also warms both code paths up
    responder.reset()
    bare_loop(client, tools)
    calls_a_run = responder.calls
    runs = max(1, -(-args.steps // steps_a_run))
    steps, calls = runs * steps_a_run, runs * calls_a_run

    bare_times, dict_times, engine_times = [], [], []
    for _ in range(args.repeat):
        bare_times.append(timed(lambda: bare_loop(client, tools), runs, responder)[0])
        dict_times.append(timed(lambda: bare_loop(client, tools, as_dicts=True), runs, responder)[0])
        engine_times.append(timed(lambda: engine_run(client, workspace), runs, responder)[0])

    # Memory: every run of one round kept alive, traced.
    tracemalloc.start()
    _, kept = timed(lambda: engine_run(client, workspace), runs, responder)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert sum(len(run.trace) for run in kept) == steps
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux

    bare, dicts, engine = min(bare_times), min(dict_times), min(engine_times)
    ratio, strict = engine / bare, engine / dicts
    print(f"engine bench: {steps:,} engine steps = {runs} runs x {steps_a_run} steps "
          f"({args.turns} tool_use turns + a final answer = {calls_a_run} model calls a run, {calls:,} in all)")
    print("  same in-process responder, same anthropic SDK client, same no-op tool; "
          f"best of {args.repeat} rounds")
    print("  compared per TURN (one model call + its tool run + its write-back): "
          "the engine takes ~5 steps for what the bare loop does in one iteration")
    print(f"  bare while-True loop, as the chapter writes it : {bare:7.3f} s   {bare / calls * 1e6:8.1f} µs a turn")
    print(f"  bare loop keeping content as dicts (as engine)  : {dicts:7.3f} s   {dicts / calls * 1e6:8.1f} µs a turn")
    print(f"  engine, Run.execute() a step                    : {engine:7.3f} s   {engine / calls * 1e6:8.1f} µs a turn"
          f"   ({engine / steps * 1e6:.1f} µs a step)")
    print(f"  engine overhead over the dict loop: {(engine - dicts) / calls * 1e6:+.1f} µs a turn"
          f" ({(engine - dicts) / steps * 1e6:+.1f} µs a step)")
    print(f"  ratio engine/bare per turn: {ratio:.2f} against the chapter's loop, {strict:.2f} against the dict loop"
          f"   (goal <= {GOAL_RATIO}: {'met' if max(ratio, strict) <= GOAL_RATIO else 'MISSED'})")
    print(f"  memory holding all {steps:,} steps: tracemalloc peak {peak / 2**20:.1f} MB; "
          f"process peak RSS (ru_maxrss, imports included) {maxrss_mb:.1f} MB   "
          f"(goal well under {GOAL_MB} MB: {'met' if maxrss_mb < GOAL_MB else 'MISSED'})")
    micro_ok = micro_bench(args, workspace)
    workspace.rmdir()
    complete_ok = complete_vs_minimal()
    return 0 if max(ratio, strict) <= GOAL_RATIO and maxrss_mb < GOAL_MB and micro_ok and complete_ok else 1


def complete_vs_minimal(rounds: int = 5) -> bool:
    """The complete profile's time for the work the minimal one does, on the complete loop's four scenarios.

    Each run goes through the offline model's real HTTP path, as a page's would; the complete loop's retry
    waits are skipped (and their sum said apart), so a step's time is the engine's work and the calls.
    The minimal loop stops where the chapter says it does (a 529, a refused prompt, max_tokens), so the two runs
    do not do the same work: `overloaded`'s minimal run is its request and one refused call, its complete run
    three refused calls, then a command run in the sandbox and two more calls. Each stage is timed on its own (a
    refused call is one kind, whether the loop then stops or retries), and the minimal run's stages are priced at
    what each kind costs the complete profile: the ratio is that over the minimal run's own time.
    """
    from loop.engine.runner import start

    print("complete profile against minimal, same scenarios, the minimal run's stages timed in each (best of "
          f"{rounds}; retry waits skipped and said apart):")
    worst = 0.0
    for name in ("overloaded", "long-answer", "big-context", "parallel"):
        found = {}
        for profile in ("minimal", "complete"):
            best, steps, waits = {}, 0, 0.0  # each kind of stage: its least mean time over the rounds, and count
            for _ in range(rounds):
                times = collections.defaultdict(list)
                with start(scenario=name, profile=profile) as run:  # a workspace of its own, removed after
                    while not run.done:
                        run.skip_wait()
                        began = time.perf_counter()
                        try:
                            run.execute()
                        except Exception:  # the minimal loop's end on an API error: a refused call
                            times[REFUSED].append(time.perf_counter() - began)
                            break
                        last = run.trace.steps[-1].stage
                        times[REFUSED if last == "retry" else last].append(time.perf_counter() - began)
                    waits = sum(float(s.detail.get("wait_s") or 0) for s in run.trace.steps if s.stage == "retry")
                    steps = len(run.trace)
                for kind, took in times.items():
                    mean = sum(took) / len(took)
                    if kind not in best or mean < best[kind][0]:
                        best[kind] = (mean, len(took))
            found[profile] = (best, steps, waits)
        minimal, complete = found["minimal"][0], found["complete"][0]
        alone = sorted(set(minimal) - set(complete))
        own = sum(mean * n for mean, n in minimal.values())
        priced = sum(complete[kind][0] * n for kind, (_, n) in minimal.items() if kind in complete)
        shared = sum(mean * n for kind, (mean, n) in minimal.items() if kind in complete)
        ratio = priced / shared if shared else float("inf")
        worst = max(worst, ratio)
        print(f"  {name:12} minimal {own * 1e3:7.2f} ms (steps: {found['minimal'][1]}) · the same stages in the "
              f"complete profile {priced * 1e3:7.2f} ms · ratio {ratio:.2f} · its whole run: "
              f"{sum(mean * n for mean, n in complete.values()) * 1e3:.2f} ms (steps: {found['complete'][1]}), waits "
              f"skipped: {found['complete'][2]:.1f} s" + (f" · not in the complete run: {', '.join(alone)}" if alone
                                                          else ""))
    print(f"  worst ratio {worst:.2f}   (goal <= {GOAL_RATIO}: {'met' if worst <= GOAL_RATIO else 'MISSED'})")
    return worst <= GOAL_RATIO

if __name__ == "__main__":
    sys.exit(main())
