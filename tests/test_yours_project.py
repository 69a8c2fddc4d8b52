"""A learner's project in Your loop: several files or a .zip of a folder, bounded as the command line bounds a project
(1 MiB a file, 16 MiB and 2,000 files) with zip bombs, links and paths out of the folder refused; a .env box whose
key never leaves the sandbox nor is recorded; the program's printed output beside the steps; a project saved with
its run (Save transcript, the saved-runs store) and drawn by Replay, and no code link for it.

The course's s01 shape with its `run_bash` in a module beside it (tools.py) runs in the page from a .zip."""

from __future__ import annotations

import io
import json
import stat
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from loop.engine import scripted
from loop.files import transcript
from loop.files.runs import RunsStore, owner_key
from loop.text.redact import HIDDEN
from loop.yours import sandboxed
from loop.yours.program import FILE_MOST, FILES_MOST, Program, ProgramError
from loop.yours.project import files_of, main_file, project_program
from loop.yours.reading import read

from .apptest import app, run

# An s01-shaped agent of a learner's own, after the course's agents/s01_agent_loop.py: its own client, MODEL from the
# environment, an input() REPL, and its one tool in a module beside it
S01 = '''#!/usr/bin/env python3
"""My s01: the agent loop; its one tool lives in tools.py beside it."""
import os

from anthropic import Anthropic
from dotenv import load_dotenv

from tools import TOOLS, run_bash

load_dotenv(override=True)

client = Anthropic(api_key=os.getenv("ANTHROPIC_API_KEY"), base_url=os.getenv("ANTHROPIC_BASE_URL"))
MODEL = os.environ["MODEL_ID"]
SYSTEM = f"You are a coding agent at {os.getcwd()}. Use bash to solve tasks. Act, don't explain."


def agent_loop(messages: list):
    while True:
        response = client.messages.create(model=MODEL, system=SYSTEM, messages=messages, tools=TOOLS,
                                          max_tokens=8000)
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return
        results = []
        for block in response.content:
            if block.type == "tool_use":
                print(f"\\033[33m$ {block.input['command']}\\033[0m")
                output = run_bash(block.input["command"])
                print(output[:200])
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    history = []
    while True:
        try:
            query = input("\\033[36ms01 >> \\033[0m")
        except (EOFError, KeyboardInterrupt):
            break
        if query.strip().lower() in ("q", "exit", ""):
            break
        history.append({"role": "user", "content": query})
        agent_loop(history)
        for block in history[-1]["content"]:
            if hasattr(block, "text"):
                print(block.text)
'''
TOOLS = '''"""The one tool of my s01 agent: a shell command, run where the agent runs."""
import os
import subprocess

TOOLS = [{
    "name": "bash",
    "description": "Run a shell command.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}]
BLOCKED = ("rm -rf /", "sudo", "shutdown", "reboot", "> /dev/")


def run_bash(command: str) -> str:
    if any(b in command for b in BLOCKED):
        return "Error: Dangerous command blocked"
    try:
        done = subprocess.run(command, shell=True, cwd=os.getcwd(), capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "Error: Timeout (120s)"
    out = (done.stdout + done.stderr).strip()
    return out[:50000] if out else "(no output)"
'''
RUN_LINE = TOOLS.splitlines().index(
    "        done = subprocess.run(command, shell=True, cwd=os.getcwd(), capture_output=True, text=True, timeout=120)") + 1


def zipped(files: dict[str, bytes | str], links: tuple[str, ...] = (), encrypted: bool = False) -> bytes:
    """A zip of `files`; `links` among them stored as symbolic links; with `encrypted`, its last member marked so."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in links:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, data)
    data = bytearray(out.getvalue())
    if encrypted:  # the general-purpose flag's bit 0, in the last member's entry of the zip's directory
        entry = data.rfind(b"PK\x01\x02")
        data[entry + 8] |= 0x1
    return bytes(data)


MY_AGENT = {"my_agent/s01_agent_loop.py": S01, "my_agent/tools.py": TOOLS, "my_agent/README.md": "# my agent\n",
            "my_agent/.git/config": "[core]\n", "my_agent/__pycache__/tools.cpython-311.pyc": b"\x00\x01"}


# -- what is given, read and bounded before anything is kept --

def test_a_zip_of_a_folder_is_its_files_the_folder_taken_off_and_what_a_run_has_no_use_for_left_out():
    files, left_out = files_of([("my_agent.zip", zipped(MY_AGENT))])
    assert sorted(files) == ["README.md", "s01_agent_loop.py", "tools.py"] and left_out == 2
    assert files["tools.py"] == TOOLS.encode() and main_file(files) == "s01_agent_loop.py"
    program = project_program(files, "s01_agent_loop.py", text=S01 + "# edited\n", env={"MODEL_ID": "m"})
    assert (program.main, program.module, program.path0) == ("s01_agent_loop.py", None, "")
    assert program.source.endswith("# edited\n") and program.env == {"MODEL_ID": "m"}
    # files given one by one are known by their own names; a package's file runs as python -m from its root
    given = files_of([("../../s01_agent_loop.py", S01.encode()), ("C:\\Users\\me\\tools.py", TOOLS.encode())])[0]
    assert sorted(given) == ["s01_agent_loop.py", "tools.py"]
    package = files_of([("p.zip", zipped({"top/app/__init__.py": "", "top/app/main.py": S01, "top/app/tools.py":
                                                                                            TOOLS}))])[0]
    started = project_program(package, "app/main.py")
    assert (started.module, started.path0) == ("app.main", "")


@pytest.mark.parametrize("given, words", [
    ([("p.zip", zipped({"a.py": "x = 1\n", "link.py": "/etc/passwd"}, links=("link.py",)))], "is a link"),
    ([("p.zip", zipped({"a.py": "x = 1\n", "../../up.py": "x = 2\n"}))], "outside the project's folder"),
    ([("p.zip", zipped({"a.py": "x = 1\n", "/etc/cron.d/x.py": "x = 2\n"}))], "outside the project's folder"),
    ([("p.zip", zipped({"a.py": "x = 1\n", "C:/x.py": "x = 2\n"}))], "outside the project's folder"),
    ([("p.zip", zipped({"a.py": "x = 1\n", "b.py": "x = 2\n"}, encrypted=True))], "is encrypted"),
    ([("p.zip", zipped({"a.py": "x = 1\n", "big.bin": b"\0" * (FILE_MOST + 1)}))], "a project's files may be"),
    ([("p.zip", zipped({f"f{n}.py": b"\0" * FILE_MOST for n in range(17)}))], "Loopscope runs projects up to"),
    ([("p.zip", zipped({f"f{n}.py": "" for n in range(FILES_MOST + 1)}))], "more than a project may hold"),
    ([("p.zip", b"PK\x03\x04 not really a zip")], "is not a zip Loopscope can open"),
    ([("notes.txt", b"hello")], "no Python file"),
    ([("a.py", b"x = 1\n"), ("dir/a.py", b"x = 2\n")], "is given twice"),
    ([("a.py", b"#" * (FILE_MOST + 1))], "a project's files may be"),
], ids=["link", "dot-dot", "absolute", "drive", "encrypted", "file-too-large", "bomb-too-large-unzipped",
        "too-many-files", "not-a-zip", "no-python", "twice", "plain-file-too-large"])
def test_what_breaks_a_bound_or_leaves_the_folder_is_refused_and_said(given, words):
    with pytest.raises(ProgramError) as refused:
        files_of(given)
    assert words in str(refused.value)


def test_a_member_that_expands_past_what_it_declares_stops_there():
    data = bytearray(zipped({"a.py": "x = 1\n" * 50_000, "b.py": "y = 2\n"}))
    directory = data.find(b"PK\x01\x02")  # a.py's entry in the zip's directory: it says it holds 10 bytes
    data[directory + 24:directory + 28] = (10).to_bytes(4, "little")
    with pytest.raises(ProgramError) as refused:
        files_of([("p.zip", bytes(data))])
    assert "is not a zip Loopscope can open" in str(refused.value)


# -- a key typed into the .env box never leaves the sandbox, nor is recorded --

TELLS = '''import os
import anthropic
from dotenv import load_dotenv

load_dotenv(override=True)
token = os.environ["MY_SERVICE_TOKEN"]
print("my token is", token, "and my other key is", os.environ["OTHER_API_KEY"])
client = anthropic.Anthropic()
client.messages.create(model=os.environ.get("MODEL_ID", "m"), max_tokens=100,
                       messages=[{"role": "user", "content": "my token: " + token + " " + os.environ["OTHER_API_KEY"]}])
'''


def test_a_key_set_for_the_program_or_in_its_env_file_is_sent_on_and_kept_nowhere():
    typed, filed = "tok-typed-in-the-box-42", "sk-from-the-projects-dotenv-9"
    seen = []

    def model(body: dict):
        seen.append(json.dumps(body))
        return scripted.respond(body)

    program = Program({"main.py": TELLS.encode(), ".env": f"OTHER_API_KEY={filed}\n".encode()}, main="main.py",
                      env={"MY_SERVICE_TOKEN": typed})
    recording = sandboxed.run(program, "list-files", model=model)
    assert recording.exchanges and seen, recording.message
    assert f"my token is {HIDDEN} and my other key is {HIDDEN}" in recording.output
    kept = json.dumps(recording.to_dict()) + transcript.dumps(read(recording).trace)
    for secret in (typed, filed):
        assert secret not in kept and not any(secret in body for body in seen)
    assert f"my token: {HIDDEN} {HIDDEN}" in seen[0]
    assert ".env" not in read(recording).trace.meta["yours"].get("files", {})  # never kept with the run


# -- the page: the zip given, the file to run in the editor, Run, the steps, the output, the saved run --

def _project_page():
    import streamlit as st

    from pages.views.project import draw_project
    from pages.views.yours import YOURS, draw_editor, draw_run_row, draw_yours, open_in_editor

    source = draw_editor()
    draw_project(source, open_in_editor)
    draw_run_row(source)
    if YOURS in st.session_state:
        draw_yours(st.session_state[YOURS])


def html(at) -> str:
    return "".join(h.value for h in at.get("html"))


def test_the_course_s01_shape_with_a_module_of_its_own_runs_in_the_page_from_a_zip_and_is_saved_with_its_run(tmp_path,
                                                                                                  monkeypatch):
    from pages.views.project import ENV, MAIN, PROJECT
    from pages.views.yours import SOURCE, YOURS

    # The child the page starts after Run for the next one would be ended unused when this test ends
    monkeypatch.setattr(sandboxed, "warm", lambda *args, **kwargs: None)
    at = AppTest.from_function(_project_page, default_timeout=90)
    at.run()
    at.file_uploader(key="yours-project-upload-0").set_value(
        [("my_agent.zip", zipped({k: v for k, v in MY_AGENT.items()}), "application/zip")]).run()
    assert not at.exception, at.exception
    assert at.session_state[PROJECT]["main"] == at.session_state[MAIN] == "s01_agent_loop.py"
    assert at.session_state[SOURCE] == S01  # the file to run, opened in the editor
    said = " ".join(c.value for c in at.caption)
    assert "3 files" in said and "`tools.py`" in said and "2 file(s) left out" in said
    assert "`MODEL_ID` (the offline model)" in said and "`ANTHROPIC_API_KEY` (a placeholder key)" in said
    at.text_area(key=ENV).input("MODEL_ID=claude-from-my-box\nANTHROPIC_API_KEY=sk-ant-typed-and-hidden-123\n").run()
    assert "`MODEL_ID` (yours)" in " ".join(c.value for c in at.caption)

    at.selectbox(key="yours-scenario").set_value("two-tools")
    at.button(key="yours-run-button").click()
    at.run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == ["Your loop ended by itself and kept every rule: 2 model calls."]
    yours = at.session_state[YOURS]
    trace = yours.trace
    assert trace.steps[1].detail.request["model"] == "claude-from-my-box"  # the .env box's, in its environment
    runs = [s for s in trace.steps if s.stage == "run_tool"]
    asked = [b["id"] for s in trace.steps if s.stage == "call_model" for b in s.detail.response["content"]
             if b["type"] == "tool_use"]
    assert [s.detail.tool_use_id for s in runs] == asked and len(asked) == 2
    assert all((s.detail["ran_by"], s.detail.line, s.detail.file) == ("program", RUN_LINE, "tools.py") for s in runs)
    # the printed output, beside the steps, as a terminal shows it
    assert 'class="ls-terminal"' in html(at) and "$ date -u" in html(at) and "\x1b" not in html(at)
    # saved with its run: the file run and its module; never the .env box's key, nor a file but Python
    saved = transcript.dumps(trace)
    assert trace.meta["yours"]["file"] == "s01_agent_loop.py" and trace.meta["yours"]["files"] == {"tools.py": TOOLS}
    assert "sk-ant-typed-and-hidden-123" not in saved and "README.md" not in saved
    # stepping to a tool run shows the module that ran it, its line lit; and no link carries a project
    for _ in range(4):
        at.button(key="yours-step").click()
        at.run()
    assert "code" not in at.query_params
    assert "this is `tools.py`" in " ".join(c.value for c in at.caption)
    assert f"your program reported running it, line tools.py:{RUN_LINE}" in html(at) + " ".join(
        m.value for m in at.markdown)
    assert f'<div class="lit" data-line="{RUN_LINE}">' in html(at) and "def run_bash" in html(at)

    # the saved-runs store keeps it as it is; Replay draws the module beside its tool runs
    store = RunsStore(tmp_path)
    owner = owner_key("browser:test")
    store.save(owner, "r1", trace, {}, writer="w")
    loaded, _ = store.load(owner, "r1")
    assert loaded.meta["yours"] == trace.meta["yours"]
    replay = app("pages/replay.py")
    replay.file_uploader(key="replay-upload").set_value(("my-run.json", saved.encode(), "application/json"))
    run(replay)
    for _ in range(4):
        replay.button(key="replay-step").click()
        run(replay)
    assert "this is `tools.py`" in " ".join(c.value for c in replay.caption) and "def run_bash" in html(replay)
