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
"""

from __future__ import annotations

import argparse
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

from loop.model import Model, ModelConfig  # noqa: E402
from loop.runner import Run  # noqa: E402
from loop.tools import Tool, ToolBox, ToolOutput  # noqa: E402

GOAL_RATIO = 1.5
GOAL_MB = 200
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

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        n = self.calls
        if n <= self.turns:
            content = [{"type": "text", "text": f"Step {n}."},
                       {"type": "tool_use", "id": f"toolu_{n:08d}", "name": "bash", "input": {"command": f"echo {n}"}}]
            stop_reason = "tool_use"
        else:
            content, stop_reason = [{"type": "text", "text": "Done."}], "end_turn"
        body = {"id": f"msg_{n:08d}", "type": "message", "role": "assistant", "model": MODEL, "content": content,
                "stop_reason": stop_reason, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}
        return httpx2.Response(200, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


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
    workspace.rmdir()
    return 0 if max(ratio, strict) <= GOAL_RATIO and maxrss_mb < GOAL_MB else 1


if __name__ == "__main__":
    sys.exit(main())
