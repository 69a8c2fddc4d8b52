"""The course's agent teams (s09): a lead spawns teammates, each a loop with its own system prompt, whose cycles
interleave with the lead's and reuse its cycle numbers. Each teammate is one thread, linked to the lead's
spawn_teammate tool_use, its calls in order; a result a later request holds is that call's result."""

import json

from loop.importers import import_bytes
from tests.cli import loop_main

LEAD = "You are a team lead at /home/user/project. Spawn teammates and communicate via inboxes."
TOOLS = [{"name": "bash", "description": "Run a shell command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
ASK = "Spawn alice (coder) and bob (tester). Have alice send bob a message."
ALICE = {"name": "alice", "prompt": "You are Alice, a coder.", "role": "coder"}
BOB = {"name": "bob", "prompt": "You are Bob, a tester.", "role": "tester"}


def mate(name: str, role: str) -> str:
    return f"You are '{name}', role: {role}, at /home/user/project. Use send_message to communicate."


def use(uid: str, name: str, tool_input: dict) -> dict:
    return {"type": "tool_use", "id": uid, "name": name, "input": tool_input}


def result(uid: str, text: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uid, "content": text}]}


def cycle(n: int, system: str, messages: list, content: list, stop: str, runs: list) -> dict:
    return {"cycle": n, "elapsed_ms": 1000 + n,
            "request": {"model": "MiniMax-M2.5", "system": system, "messages": messages, "tools": TOOLS,
                        "max_tokens": 8000},
            "response": {"id": f"r{n}-{len(messages)}-{system[9:13]}", "type": "message", "role": "assistant",
                         "model": "MiniMax-M2.5", "stop_reason": stop, "content": content,
                         "usage": {"input_tokens": 100, "output_tokens": 20}},
            "tool_executions": runs}


def team_trace(linked: bool = True) -> dict:
    spawn = [use("call_1", "spawn_teammate", ALICE), use("call_2", "spawn_teammate", BOB)]
    lead1 = [{"role": "user", "content": ASK}]
    lead2 = lead1 + [{"role": "assistant", "content": spawn},
                     {"role": "user", "content": [result("call_1", "Spawned 'alice' (role: coder)")["content"][0],
                                                  result("call_2", "Spawned 'bob' (role: tester)")["content"][0]]}]
    send = [use("call_3", "send_message", {"to": "bob", "content": "Please test the auth module."})]
    lead3 = lead2 + [{"role": "assistant", "content": send}, result("call_3", "Sent message to bob")]
    bob_first = [{"type": "text", "text": "Let me read my inbox."}, use("call_b1", "read_inbox", {})]
    bob1 = [{"role": "user", "content": BOB["prompt"]}]
    bob2 = bob1 + [{"role": "assistant", "content": bob_first},
                   result("call_b1", '[{"from": "lead", "content": "Please test the auth module."}]')]
    alice1 = [{"role": "user", "content": ALICE["prompt"]}]
    alice_first = [{"type": "text", "text": "Nothing to do yet."}]
    runs = [{"name": "spawn_teammate", "input": ALICE, "output": "Spawned 'alice' (role: coder)"},
            {"name": "spawn_teammate", "input": BOB, "output": "Spawned 'bob' (role: tester)"}]
    cycles = [
        cycle(1, LEAD, lead1, spawn, "tool_use", runs),
        cycle(2, LEAD, lead2, send, "tool_use", [{"name": "send_message", "input": send[0]["input"],
                                                   "output": "Sent message to bob"}]),
        cycle(2, mate("bob", "tester"), bob1, bob_first, "tool_use", []),  # a teammate's executions are not recorded
        cycle(2, mate("alice", "coder"), alice1, alice_first, "end_turn", []),
        cycle(3, LEAD, lead3, [{"type": "text", "text": "Both are working."}], "end_turn", []),
        cycle(4, mate("bob", "tester"), bob2, [{"type": "text", "text": "I found no bugs."}], "end_turn", []),
    ]
    if not linked:  # the trace starts after the spawning: nothing shows what started the teammates
        cycles[0]["response"]["content"] = [{"type": "text", "text": "Spawning."}]
        cycles[0]["tool_executions"] = []
        for c in cycles[1:]:
            if c["request"]["system"] == LEAD:
                c["request"]["messages"] = lead1 + [{"role": "assistant", "content": [{"type": "text", "text": "Spawning."}]},
                                                    *c["request"]["messages"][3:]]
        cycles[1]["request"]["messages"].insert(2, {"role": "user", "content": "Go on."})
        cycles[4]["request"]["messages"].insert(2, {"role": "user", "content": "Go on."})
    return {"version": "s09", "prompt": ASK, "model": "MiniMax-M2.5", "total_cycles": len(cycles), "cycles": cycles}


def loop(*args):
    (done,) = loop_main([str(a) for a in args], env=None)
    return done


def test_each_teammate_is_one_thread_linked_to_the_spawning_tool_use(tmp_path):
    imported = import_bytes(json.dumps(team_trace()).encode(), "s09.json")
    trace = imported.trace
    assert sorted(trace.threads) == ["main", "teammate-alice", "teammate-bob"]
    bob, alice = trace.threads["teammate-bob"], trace.threads["teammate-alice"]
    assert (bob.parent, bob.parent_tool_use_id) == ("main", "call_2")
    assert (alice.parent, alice.parent_tool_use_id) == ("main", "call_1")  # not the child of bob
    # bob's two calls are one thread, in order, and his read_inbox has the result his next request holds
    bob_calls = [s for s in trace.steps if s.thread == "teammate-bob" and s.stage == "call_model"]
    assert len(bob_calls) == 2
    assert bob.messages[2]["content"][0]["tool_use_id"] == "call_b1"
    runs = [s for s in trace.steps if s.thread == "teammate-bob" and s.stage == "run_tool"]
    assert [(s.detail.output, s.detail.is_error) for s in runs] == \
           [('[{"from": "lead", "content": "Please test the auth module."}]', False)]
    assert not any("nothing links to its parent" in w for w in imported.warnings), imported.warnings
    # the cycle numbers repeat across the team: a warning names the thread of the cycle it is about
    assert imported.warnings == ["cycle 2 of teammate-bob: 1 tool_use block(s) but 0 tool_execution(s) recorded"]
    path, out = tmp_path / "s09.json", tmp_path / "t.json"
    path.write_text(json.dumps(team_trace()))
    done = loop("import", path, "--out", out)
    assert done.returncode == 0, done.stderr
    check = loop("check", out)
    assert check.returncode == 0, check.stdout
    said = check.stdout.splitlines()
    assert "ok: thread teammate-bob (started by call_2): 4 messages, 1 pair(s)" in said
    assert "ok: thread teammate-alice (started by call_1): 2 messages, 0 pair(s)" in said
    assert "None" not in check.stdout
    assert sum(1 for s in trace.steps if s.stage == "call_model") == 6


def test_a_teammate_whose_spawning_the_trace_does_not_show_is_said_so_and_never_another_teammate_s_child(tmp_path):
    imported = import_bytes(json.dumps(team_trace(linked=False)).encode(), "s09.json")
    trace = imported.trace
    others = [t for t in trace.threads.values() if t.id != "main"]
    assert len(others) == 2 and all(t.parent == "main" and t.parent_tool_use_id is None for t in others)
    assert sum(1 for w in imported.warnings if "nothing links to its parent" in w) == 2
    assert sorted(t.id for t in others) == ["cycle-2", "cycle-2-2"]  # the names the warnings use, kept
    assert any(w.startswith("thread cycle-2-2: cycle 2: its request starts a history of its own") for w in
               imported.warnings), imported.warnings
    bob = next(t for t in others if t.system == mate("bob", "tester"))
    assert len(bob.messages) == 4  # still one thread: its second call goes on from its first
    path, out = tmp_path / "s09.json", tmp_path / "t.json"
    path.write_text(json.dumps(team_trace(linked=False)))
    assert loop("import", path, "--out", out).returncode == 0
    check = loop("check", out)
    assert check.returncode == 0, check.stdout
    assert "None" not in check.stdout
    assert "not started by a tool_use the log shows" in check.stdout


def test_a_warning_names_the_thread_of_each_place_it_lists():
    data = team_trace()
    odd = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    data["cycles"][0]["response"]["content"].insert(0, odd)  # the lead's first response (its next requests share it)
    data["cycles"][2]["response"]["content"].insert(0, odd)  # bob's first response, carried by his next request
    warnings = import_bytes(json.dumps(data).encode(), "s09.json").warnings
    said = next(w for w in warnings if w.startswith("kept blocks of type 'server_tool_use', which Loopscope shows raw"))
    assert said.endswith(": messages.1, messages.1 of teammate-bob"), said


def test_the_spawning_step_says_it_started_a_teammate_and_a_task_s_answer_is_said_as_text():
    from loop.views.narrate import describe
    from tests.test_import_fidelity import agent_id_log

    trace = import_bytes(json.dumps(team_trace()).encode(), "s09.json").trace
    lines = [describe(trace, k) for k in range(len(trace.steps))]
    spawned = [line for line in lines if "spawn_teammate →" in line]
    assert [line.split(": ", 1)[1] for line in spawned] == [
        "spawn_teammate → started the teammate teammate-alice, whose loop runs beside this one: Spawned 'alice' (role: coder)",
        "spawn_teammate → started the teammate teammate-bob, whose loop runs beside this one: Spawned 'bob' (role: tester)"]
    assert not any("the subagent's answer" in line for line in lines)
    task = import_bytes(agent_id_log(), "s.jsonl").trace
    answer = [describe(task, k) for k in range(len(task.steps)) if "Task →" in describe(task, k)]
    assert answer and answer[0].endswith("Task → the subagent's answer (agent-a5f3c1d2): Tests live in tests/."), answer


def test_a_teammate_is_named_as_a_teammate_on_the_page_and_a_task_after_its_tool_use():
    from loop.views.parts import thread_name

    trace = import_bytes(json.dumps(team_trace()).encode(), "s09.json").trace
    assert thread_name(trace.threads["teammate-bob"]) == "teammate-bob"
    from tests.test_import_fidelity import agent_id_log

    task = import_bytes(agent_id_log(), "s.jsonl").trace
    assert thread_name(task.threads["agent-a5f3c1d2"]) == "task toolu_01TaskAgentIdOnly000001"
