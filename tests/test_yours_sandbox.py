"""A learner's agent_loop runs in the sandbox, never in the test's process, and is recorded from outside."""

import ast
import json
import os
import socket

import pytest

from loop.engine import rules
from loop.tools import sandbox as sandbox_module
from loop.yours import recording as rec
from loop.yours.listing import CHAPTER_LOOP
from loop.yours.sandboxed import run
from loop.yours import sandboxed

CALL_LINE = CHAPTER_LOOP.splitlines().index("        response = client.messages.create(") + 1
TOOL_LINE = CHAPTER_LOOP.splitlines().index("                output = run_tool(block)") + 1


@pytest.fixture(scope="module")
def chapters_run():
    """The chapter's listing run cold on list-files, once: read by the rules test and compared with a warm run."""
    return run(CHAPTER_LOOP, "list-files")


@pytest.mark.parametrize("scenario", ["list-files", "two-tools"])
def test_the_chapters_listing_runs_and_every_request_keeps_the_rules(scenario, chapters_run):
    done = chapters_run if scenario == "list-files" else run(CHAPTER_LOOP, scenario)
    assert done.outcome == rec.RETURNED, (done.message, done.traceback, done.output)
    assert len(done.exchanges) >= 2
    for exchange in done.exchanges:
        assert rules.check(exchange.request["messages"], as_request=True) == []
        assert exchange.error is None and exchange.line == CALL_LINE
    assert done.exchanges[-1].response["stop_reason"] == "end_turn"
    ran = [r for e in done.exchanges for r in e.tool_runs]
    asked = [b for e in done.exchanges for b in e.response["content"] if b["type"] == "tool_use"]
    assert [r.tool_use_id for r in ran] == [b["id"] for b in asked] and all(r.line == TOOL_LINE for r in ran)
    # what went back is what the tool box ran: the next request carries each output
    second = done.exchanges[1].request["messages"]
    assert [b["content"] for b in second[-1]["content"]] == [r.output for r in done.exchanges[0].tool_runs]
    assert [e.state.turn_count for e in done.exchanges] == list(range(1, len(done.exchanges) + 1))
    assert done.final_state.transition_reason is None
    assert rec.Recording.from_dict(json.loads(json.dumps(done.to_dict()))) == done


def test_a_loop_that_skips_the_assistant_append_is_refused_at_its_line_without_a_traceback():
    source = CHAPTER_LOOP.replace('''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })
''', "")
    done = run(source, "list-files")
    assert done.outcome == rec.REFUSED and done.traceback is None
    refused = done.exchanges[-1]
    assert refused.error["status"] == 400 and "tool_result" in refused.error["message"]
    assert refused.response is None and refused.line == CALL_LINE
    assert len(done.exchanges) == 2 and done.exchanges[0].tool_runs


def test_an_exception_has_their_traceback_and_line_only():
    source = "def helper(n):\n    return 10 // n\n\ndef agent_loop(state):\n    x = 1\n    helper(0)\n"
    done = run(source, "list-files")
    assert done.outcome == rec.EXCEPTION and done.error_line == 2
    assert 'File "your_loop.py", line 6, in agent_loop' in done.traceback
    assert 'File "your_loop.py", line 2, in helper' in done.traceback and "return 10 // n" in done.traceback
    assert done.traceback.rstrip().endswith("ZeroDivisionError: integer division or modulo by zero")
    assert "inside.py" not in done.traceback and "anthropic" not in done.traceback and "exec(" not in done.traceback
    assert done.message == "ZeroDivisionError: integer division or modulo by zero"


def test_a_syntax_error_has_its_line_and_column():
    done = run("def agent_loop(state):\n    x = (1,\n    return\n", "list-files")
    assert done.outcome == rec.SYNTAX_ERROR and done.exchanges == []
    assert (done.error_line, done.error_column) == (2, 9) and done.message.startswith("SyntaxError")


def test_a_loop_that_never_ends_stops_at_the_calls_limit():
    source = ("def agent_loop(state):\n    while True:\n        client.messages.create(model=MODEL, system=SYSTEM,"
              " messages=state['messages'], tools=TOOLS, max_tokens=8000)\n")
    done = run(source, "list-files", max_calls=3)
    assert done.outcome == rec.TOO_MANY_CALLS and len(done.exchanges) == 3


def test_a_loop_that_spins_stops_at_the_time_limit():
    # The limit counts from the moment the child is ready to run agent_loop: a fraction of a second spins enough.
    done = run("def agent_loop(state):\n    while True:\n        pass\n", "list-files", max_seconds=0.2)
    assert done.outcome == rec.TIMEOUT and done.exchanges == []


def test_a_loop_whose_parameter_is_messages_gets_the_list_with_the_task_in_the_learners_language():
    from loop.engine.scenarios import SCENARIOS

    source = CHAPTER_LOOP.replace("def agent_loop(state):", "def agent_loop(messages):\n    state = {'messages': "
                                  "messages, 'turn_count': 1}")
    done = run(source, "list-files", "ja")
    assert done.outcome == rec.RETURNED and len(done.exchanges) == 2
    assert done.exchanges[0].request["messages"][0]["content"] == SCENARIOS["list-files"].task_in("ja")


HOSTILE = '''
import json, os, socket, sys, time

def attempt(name, action):
    try:
        print(name, "GOT", repr(action())[:300])
    except BaseException as error:
        print(name, "FAILED", type(error).__name__)

def agent_loop(state):
    print("who", os.getpid(), os.getuid(), os.getcwd())
    attempt("environ", lambda: dict(os.environ))
    attempt("shadow", lambda: open("/etc/shadow").read())
    attempt("proc1", lambda: open("/proc/1/environ", "rb").read())
    attempt("headers", lambda: dict(client._client.headers) if hasattr(client, "_client") else client.api_key)
    attempt("key", lambda: client.api_key)
    def connect():
        s = socket.create_connection(("127.0.0.1", PORT), timeout=2)
        return s.getsockname()
    attempt("socket", connect)
    attempt("write_etc", lambda: open("/etc/loopscope-probe", "w").write("x"))
    attempt("write_sdk", lambda: open(sys.path[0] + "/loopscope-probe", "w").write("x"))
    attempt("write_workspace", lambda: open("/workspace/mine.txt", "w").write("x"))
    started = 0
    for _ in range(300):
        try:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            started += 1
        except OSError:
            break
    print("forked", started)
    sys.stdout.flush()
'''


@pytest.fixture(scope="module")
def hostile_run():
    """HOSTILE run once, with secrets in the environment and a listener on this machine: (its recording, whether
    the listener saw anybody)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("LOOPSCOPE_TEST_SECRET", "canary-7f3a9")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-canary-7f3a9")
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(5)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        try:
            done = run(HOSTILE.replace("PORT", str(port)), "list-files")
            try:
                listener.accept()
                reached = True
            except BlockingIOError:
                reached = False  # the listener saw nobody
        finally:
            listener.close()
    return done, reached


def test_a_hostile_file_gets_nothing(hostile_run):
    done, reached = hostile_run
    assert not reached
    said = dict(line.split(" ", 1) for line in done.output.splitlines() if line.strip())
    assert done.outcome == rec.RETURNED, done.output
    assert "canary-7f3a9" not in done.output
    assert said["environ"].startswith("GOT") and "PATH" in said["environ"]
    for probe in ("shadow", "socket", "write_etc", "write_sdk"):
        assert said[probe].startswith("FAILED"), (probe, said[probe])
    assert said["proc1"].startswith("FAILED") or "canary" not in said["proc1"]
    assert said["write_workspace"].startswith("GOT")
    assert 0 < int(said["forked"]) < 300
    assert not os.path.exists("/etc/loopscope-probe")


def test_the_sandboxed_child_is_not_the_calling_process(hostile_run):
    done, _ = hostile_run  # its first line: "who PID UID CWD"
    pid, uid, cwd = done.output.splitlines()[0].split()[1:]
    assert int(pid) != os.getpid() and done.sandbox == "bubblewrap"
    assert cwd == "/workspace" and (os.geteuid() != 0 or uid == "65534")


# A hostile file finds Loopscope's channel as any inherited socket, whatever its descriptor's number.
CHANNEL = """import os, socket, stat, struct
def channel():
    for fd in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return socket.socket(fileno=os.dup(fd))
        except OSError:
            pass
"""


def test_the_channel_refuses_anything_but_model_calls_and_tool_runs():
    source = CHANNEL + '''
s = channel()
s.sendall(b"X" + struct.pack(">I", 2) + b"{}")  # a frame of a kind the keeper does not take
s.sendall(b"R" + struct.pack(">I", 5) + b"[1,2]")  # a report that is no report
print("sent")
'''
    done = run(source, "list-files")
    assert done.output.strip() == "sent" and done.exchanges == [] and done.outcome == rec.RETURNED


def test_where_bubblewrap_cannot_run_the_recording_says_so_and_the_code_still_runs_apart(monkeypatch):
    monkeypatch.setenv(sandbox_module.BWRAP_VARIABLE, "/nonexistent/bwrap")
    monkeypatch.setattr(sandbox_module, "_programs", None)
    # it leaves a process behind that holds its output open: the run still ends when agent_loop returns
    source = ("import os, time\ndef agent_loop(state):\n    print(os.getpid(), flush=True)\n"
              "    if os.fork() == 0:\n        time.sleep(30)\n")
    done = run(source, "list-files", max_seconds=10)
    assert done.sandbox == "plain" and done.outcome == rec.RETURNED, done.output
    assert int(done.output.strip()) != os.getpid()


def test_a_loop_that_floods_its_output_is_stopped():
    done = run("def agent_loop(state):\n    while True:\n        print('x' * 10000)\n", "list-files")
    assert done.outcome == rec.KILLED and 0 < len(done.output) <= 200_000


def test_a_real_models_key_is_added_outside_and_never_enters_the_sandbox(monkeypatch):
    from loop.engine import server
    from loop.engine.model import ModelConfig
    from loop.yours.sandboxed import real_model

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    heard = []

    class Listening(server.Handler):
        def do_POST(self):
            heard.append(self.headers.get("authorization") or self.headers.get("x-api-key"))
            super().do_POST()

    model_server = server.serve(handler=Listening)
    try:
        config = ModelConfig(model="claude-test", api_key="sk-ant-outside-7f3a9",
                             base_url=f"http://127.0.0.1:{model_server.server_address[1]}")
        source = CHAPTER_LOOP.replace("    while True:", "    print(MODEL, client.api_key, dict(client.auth_headers))"
                                      "\n    while True:")
        done = run(source, "list-files", model=real_model(config))
    finally:
        model_server.shutdown()
        model_server.server_close()
    assert done.outcome == rec.RETURNED and len(done.exchanges) == 2, (done.output, done.traceback)
    assert heard and all("sk-ant-outside-7f3a9" in h for h in heard)
    assert "7f3a9" not in done.output and done.output.startswith("claude-test ")
    assert all(e.request["model"] == "claude-test" for e in done.exchanges)


def test_run_bash_and_a_streamed_call_are_recorded_and_a_failed_run_says_so():
    source = '''def agent_loop(state):
    with client.messages.stream(model=MODEL, system=SYSTEM, messages=state.messages, tools=TOOLS,
                                max_tokens=8000) as stream:
        stream.get_final_message()
    print(run_bash("echo hi"), run_bash("exit 3").is_error)
'''
    done = run(source, "list-files")
    assert done.outcome == rec.RETURNED and done.output.strip() == "hi True"
    (exchange,) = done.exchanges
    assert exchange.request["stream"] is True and exchange.response["stop_reason"] == "tool_use"
    assert [(r.input["command"], r.is_error, r.line) for r in exchange.tool_runs] == [("echo hi", False, 5),
                                                                                   ("exit 3", True, 5)]


def test_a_child_started_ahead_runs_the_loop_as_a_cold_one_does(chapters_run):
    from loop.yours import sandboxed

    cold = chapters_run
    sandboxed.warm()
    try:
        assert ("s01", 30.0) in sandboxed._spares
        warm = run(CHAPTER_LOOP, "list-files")
        assert ("s01", 30.0) not in sandboxed._spares  # it was used, once
    finally:
        sandboxed.cool()
    assert warm.outcome == rec.RETURNED and warm.sandbox == cold.sandbox
    assert warm.exchanges[0].request == cold.exchanges[0].request  # later ones hold `ls -la`'s times
    assert [(e.line, e.state, [(r.name, r.input, r.line) for r in e.tool_runs]) for e in warm.exchanges] == \
        [(e.line, e.state, [(r.name, r.input, r.line) for r in e.tool_runs]) for e in cold.exchanges]


def test_an_error_that_is_no_broken_rule_is_their_exception_not_a_refusal():
    done = run(CHAPTER_LOOP, "overloaded")  # the API answers 529 at first; the chapter's loop does not retry
    assert done.outcome == rec.EXCEPTION and done.error_line == CALL_LINE
    assert done.exchanges[0].error == {"status": 529, "type": "overloaded_error", "message": "Overloaded"}
    assert "OverloadedError" in done.traceback and f'File "your_loop.py", line {CALL_LINE}' in done.traceback


def test_the_learners_child_is_ended_with_the_tool_boxs_own_public_means():
    # The child is killed as a step's command is (its group, its session, its mark, its PID namespace): through
    # what loop/tools/bash.py offers to others, not through its private helpers.
    from loop.tools import bash

    taken = [alias.name for node in ast.walk(ast.parse(open(sandboxed.__file__).read()))
             if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("tools.bash") for alias in node.names]
    assert {"kill_group", "namespace_init", "end_namespace"} <= set(taken)
    assert not [name for name in taken if name.startswith("_")], taken
    assert all(getattr(bash, name).__doc__ for name in taken if callable(getattr(bash, name)))


def test_a_child_ended_as_soon_as_it_was_started_is_ended_by_its_cgroup(monkeypatch):
    # A page starts a child ahead of Run; the server may stop (cool) right after. The child joins its step's
    # cgroup just after the fork: the cgroup's kill must come after that, or it misses what the child starts.
    from loop.tools.cgroups import layout

    killed = []
    killpg = os.killpg
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: (killed.append(pgid), killpg(pgid, sig)))
    for _ in range(4):
        sandboxed.warm("s01")
        sandboxed.cool()
    assert not killed or layout().steps is None  # with cgroups, no session was killed: the cgroup ended it all
