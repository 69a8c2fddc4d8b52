"""`python -m loop record -- COMMAND`: a program's loop recorded at the wire, its terminal passed through.

The programs are real processes speaking real HTTP to the recording endpoint: one shaped as Claude Code 2.1 talks
(tests/data/record/harness_shaped.py: its system turn, its side calls), one using the real anthropic SDK with a key
against a fake upstream on 127.0.0.1 that streams its answers.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from loop.files import transcript
from tests.cli import ROOT, clean_env

SHAPED = ROOT / "tests" / "data" / "record" / "harness_shaped.py"


def record(folder: Path, *args: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m loop record ARGS` run in `folder`, as a person runs it there."""
    return subprocess.run([sys.executable, "-m", "loop", "record", *args], cwd=folder, input=stdin, text=True,
                          capture_output=True, timeout=120, env={**clean_env(PYTHONPATH=str(ROOT)), **(env or {})})


@pytest.fixture(scope="module")
def shaped(tmp_path_factory):
    """The Claude-Code-shaped program recorded offline in a folder holding one file."""
    folder = tmp_path_factory.mktemp("project")
    (folder / "only-file.txt").write_text("x\n")
    done = record(folder, "--out", "t.json", "--journal", "j.jsonl", "--", sys.executable, str(SHAPED),
                  stdin="List the files in this folder\n")
    return folder, done


def test_the_terminal_is_passed_through_and_the_stages_are_said_on_stderr(shaped):
    folder, done = shaped
    assert done.returncode == 3, done.stderr  # the command's own exit status
    assert "only-file.txt" in done.stdout and "[1]" not in done.stdout  # stdout is the command's alone
    err = done.stderr
    assert "offline: Loopscope's scripted model answers" in err
    assert "4 · run a tool_use: Bash {\"command\": \"ls -la\"}" in err
    assert "side call: POST /v1/messages/count_tokens → 200 (token counting)" in err
    assert "side call: HEAD /api/hello → 404 (not a model call)" in err
    assert "python ended with exit status 3 · 3 model call(s) recorded" in err
    assert err.index("1 · user request into messages") < err.index("4 · run a tool_use") < err.index("ended with")


def test_the_transcript_keeps_the_system_turn_and_the_person_s_task(shaped):
    folder, _ = shaped
    data = json.loads((folder / "t.json").read_text())
    assert data["version"] == 3 and data["task"] == "List the files in this folder"
    assert [m["role"] for m in data["messages"]] == ["user", "system", "assistant", "user", "assistant"]
    trace = transcript.load(folder / "t.json")
    main = [s for s in trace.steps if s.thread == "main"]
    assert [s.stage for s in main] == ["user_request", "harness", "call_model", "append_assistant", "decide",
                                       "run_tool", "write_back", "call_model", "append_assistant", "decide"]
    assert main[1].detail.role == "system" and "system turn" in main[1].detail.why
    assert not any(s.stage == "compact" for s in trace.steps)  # a moved cache_control mark is no rewrite
    run = next(s for s in main if s.stage == "run_tool")
    assert run.detail.name == "Bash" and not run.detail.is_error and "only-file.txt" in run.detail.output
    # the small model's title call is a thread of its own, beside the loop
    side = trace.threads["side-1"]
    assert side.parent == "main" and side.parent_tool_use_id is None and side.facts["model"] == "small-model"
    assert [c["what"] for c in data["side_calls"]] == ["not_a_model_call", "count_tokens"]
    assert data["recorded"] == {"command": Path(sys.executable).name, "upstream": False}


def test_check_quiz_break_and_the_journal_take_the_recording(shaped):
    folder, _ = shaped
    from tests.cli import loop_main

    steps = transcript.load(folder / "t.json").steps
    at = next(s.index for s in steps if s.thread == "main" and s.stage == "decide")  # the tool_use about to run
    check, quiz, brk = loop_main(["check", folder / "t.json"], ["quiz", folder / "t.json"],
                                 ["break", folder / "t.json", "--at", at, "--mistake", "no-write-back"])
    assert check.returncode == 0 and check.stdout.startswith("ok: 5 messages, 1 tool_use/tool_result pair(s)")
    assert quiz.returncode == 0 and any(json.loads(line)["kind"] == "tool_result_id" for line in quiz.stdout.splitlines())
    # the broken loop's request holds the system turn; the API's words name the assistant message past it
    assert brk.returncode == 0 and "messages.2: `tool_use` ids were found without `tool_result`" in brk.stdout
    from loop.importers import import_path

    journaled = import_path(folder / "j.jsonl").trace
    recorded = transcript.load(folder / "t.json")
    assert [(s.thread, s.stage, s.n_messages) for s in journaled.steps] == \
        [(s.thread, s.stage, s.n_messages) for s in recorded.steps]


def test_a_command_that_cannot_start_or_never_calls_says_so(tmp_path):
    from tests.cli import loop_main

    out = tmp_path / "t.json"
    missing, silent = loop_main(["record", "--", "no-such-command-here"],
                                ["record", "--out", out, "--", sys.executable, "-c", "pass"])
    assert missing.returncode == 127 and "no-such-command-here: command not found" in missing.stderr
    assert silent.returncode == 0 and "no model call reached Loopscope" in silent.stderr and not out.exists()


# -- --upstream: the command's own key, passed on untouched, kept nowhere --

KEY = "sk-ant-api03-RECORDTESTKEY-0123456789abcdefXYZ"


class Upstream(BaseHTTPRequestHandler):
    """A fake Messages API: streams a tool_use answer, then a final one; refuses a wrong key, quoting it."""

    protocol_version = "HTTP/1.1"
    seen: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        key = self.headers.get("x-api-key") or (self.headers.get("authorization") or "").removeprefix("Bearer ")
        self.seen.append({"path": self.path, "key": key, "body": body})
        if key != KEY:
            data = json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                          "message": f"invalid x-api-key {key}"}})
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())
            return
        from loop.engine import scripted

        results = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
                   if b.get("type") == "tool_result"]
        content = [{"type": "text", "text": f"Done: {results[0]['content']}"}] if results else [
            {"type": "tool_use", "id": "toolu_upstream_1", "name": "bash", "input": {"command": "ls"}}]
        message = {"id": "msg_up", "type": "message", "role": "assistant", "model": body["model"], "content": content,
                   "stop_reason": "end_turn" if results else "tool_use", "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 5}}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for chunk in scripted.sse_chunks(message):
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True


AGENT = """\
import os, subprocess, anthropic
client = anthropic.Anthropic()
messages = [{"role": "user", "content": input()}]
tools = [{"name": "bash", "description": "run", "input_schema": {"type": "object",
          "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
while True:
    with client.messages.stream(model="claude-x", max_tokens=1000, messages=messages, tools=tools) as stream:
        response = stream.get_final_message()
    messages.append({"role": "assistant", "content": response.content})
    if response.stop_reason != "tool_use":
        break
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": b.id, "content": subprocess.run(b.input["command"], shell=True,
         capture_output=True, text=True).stdout} for b in response.content if b.type == "tool_use"]})
print(response.content[0].text)
"""


@pytest.fixture
def upstream():
    Upstream.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_upstream_gets_the_command_s_key_and_nothing_keeps_it(tmp_path, upstream):
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "seen.txt").write_text("a file\n")
    done = record(tmp_path, "--upstream", upstream, "--out", "t.json", "--journal", "j.jsonl", "--",
                  sys.executable, "agent.py", stdin="list the files\n", env={"ANTHROPIC_API_KEY": KEY})
    assert done.returncode == 0, done.stderr
    assert [s["key"] for s in Upstream.seen] == [KEY, KEY]  # untouched, on every call
    assert Upstream.seen[0]["path"] == "/v1/messages" and Upstream.seen[0]["body"]["stream"] is True
    assert done.stdout.startswith("Done: agent.py\nj.jsonl\nseen.txt")
    trace = transcript.load(tmp_path / "t.json")
    run = next(s for s in trace.steps if s.stage == "run_tool")
    assert run.detail.tool_use_id == "toolu_upstream_1" and "seen.txt" in run.detail.output  # the stream, assembled
    assert f"upstream: {upstream} answers" in done.stderr
    for text in (done.stdout, done.stderr, (tmp_path / "t.json").read_text(), (tmp_path / "j.jsonl").read_text()):
        assert KEY not in text and KEY[10:30] not in text
    # a wrong key refused by the upstream, which quotes it: the command sees the answer, the transcript not the key
    wrong = KEY.replace("RECORD", "WRONG0")
    refused = record(tmp_path, "--upstream", upstream, "--out", "r.json", "--", sys.executable, "agent.py",
                     stdin="list the files\n", env={"ANTHROPIC_API_KEY": wrong})
    assert refused.returncode == 1 and "authentication_error" in refused.stderr  # the SDK's own error, in its words
    kept = (tmp_path / "r.json").read_text()
    assert "invalid x-api-key [API key]" in kept and wrong not in kept


def test_the_endpoint_passes_a_stream_on_as_it_arrives(upstream):
    """The upstream sends the rest of its answer only once the first event has come through the endpoint."""
    import httpx2

    from loop.record import endpoint
    from loop.yours.recorder import Recorder
    from loop.yours.recording import Recording

    came, rest, kept = threading.Event(), threading.Event(), threading.Event()
    released: list[bool] = []  # whether the test let the upstream go on before it gave up waiting

    class Slow(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                          "model": "x", "content": [], "usage": {}}}
            self.wfile.write(f"event: message_start\ndata: {json.dumps(start)}\n\n".encode())
            self.wfile.flush()
            came.set()
            released.append(rest.wait(60))  # bounded: a buffering endpoint makes the test fail, not hang
            self.wfile.write(b'event: message_stop\ndata: {"type": "message_stop"}\n\n')
            self.close_connection = True

    slow = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    recording = Recording(source="", scenario="", lang="en")
    server = endpoint.start(Recorder(recording), f"http://127.0.0.1:{slow.server_address[1]}", on_call=kept.set)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/messages"
        with httpx2.stream("POST", url, json={"model": "x", "max_tokens": 5, "messages": [
                {"role": "user", "content": "hi"}], "stream": True}, timeout=120) as response:
            chunks = response.iter_raw()
            first = next(chunks)
            rest.set()
            tail = b"".join(chunks)
        assert released == [True] and first.startswith(b"event: message_start")
        assert b"message_stop" in tail and kept.wait(60)  # the endpoint keeps its copy once the stream has ended
        assert recording.exchanges[0].response["id"] == "m"
    finally:
        rest.set()
        server.shutdown()
        slow.shutdown()


def test_the_endpoint_answers_this_machine_alone():
    from loop.record import endpoint
    from loop.yours.recorder import Recorder
    from loop.yours.recording import Recording

    import httpx2

    recording = Recording(source="", scenario="", lang="en")
    server = endpoint.start(Recorder(recording), host="0.0.0.0")  # listening everywhere, for this test
    port = server.server_address[1]
    body = {"model": "x", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this finds the machine's own outward address
        outward = probe.getsockname()[0]
        probe.close()
        assert not endpoint.loopback(outward)
        far = httpx2.post(f"http://{outward}:{port}/v1/messages", json=body, headers={"host": f"127.0.0.1:{port}"})
        renamed = httpx2.post(f"http://127.0.0.1:{port}/v1/messages", json=body, headers={"host": "evil.example"})
        browser = httpx2.post(f"http://127.0.0.1:{port}/v1/messages", json=body,
                              headers={"origin": "https://evil.example"})
        near = httpx2.post(f"http://127.0.0.1:{port}/v1/messages", json=body)
    finally:
        server.shutdown()
    assert far.status_code == renamed.status_code == browser.status_code == 403
    assert "answers only this machine" in far.json()["error"]["message"]
    assert near.status_code == 200 and len(recording.exchanges) == 1  # only the loopback call was answered and kept


def test_a_learner_s_s01_file_is_recorded_as_they_run_it(tmp_path):
    """An s01-shaped file (its own client, MODEL_ID, dotenv, subprocess, an input() REPL), unchanged, piped a task."""
    from tests.test_yours_learners import S01

    (tmp_path / "s01_agent_loop.py").write_text(S01)
    (tmp_path / "notes.txt").write_text("a note\n")
    done = record(tmp_path, "--out", "s01.t.json", "--", sys.executable, "s01_agent_loop.py",
                  stdin="List the files in the workspace\n", env={"MODEL_ID": "claude-sonnet-4-5"})
    assert done.returncode == 0, done.stderr
    assert "$ ls -la" in done.stdout  # what the learner's file prints, on its own stdout
    trace = transcript.load(tmp_path / "s01.t.json")
    calls = [s for s in trace.steps if s.stage == "call_model"]
    assert len(calls) >= 2 and calls[0].detail.request["model"] == "claude-sonnet-4-5"
    asked = [b["id"] for s in calls for b in s.detail.response["content"] if b["type"] == "tool_use"]
    ran = {s.detail.tool_use_id: s.detail for s in trace.steps if s.stage == "run_tool"}
    assert asked and set(asked) == set(ran)
    assert all(not d.is_error for d in ran.values()) and any("notes.txt" in d.output for d in ran.values())
    assert trace.meta["task"] == "List the files in the workspace"
