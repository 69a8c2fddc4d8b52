"""A real client: Claude Code (npm, the version tests/npm pins) recorded listing a folder, offline, with an empty
HOME and a placeholder key. One run, kept cheap: the suite's other record tests speak for themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from loop.files import transcript
from tests.cli import ROOT, clean_env, loop_main

CLAUDE = ROOT / "tests" / "npm" / "node_modules" / ".bin" / "claude"


@pytest.mark.npm
def test_claude_code_lists_a_folder_offline(tmp_path):
    if not CLAUDE.exists():
        pytest.fail(f"{CLAUDE} is missing: this test records a real Claude Code. Install it with `make test` (it runs "
                    "`npm ci` in tests/npm), or run the quick tests with -m 'not npm'.")
    folder, home = tmp_path / "project", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    (folder / "hello-loop.txt").write_text("hi\n")
    env = {k: v for k, v in clean_env().items() if not k.startswith(("CLAUDE", "OPENAI_"))}
    env.update(HOME=str(home), PATH=f"{CLAUDE.parent}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "loop", "record", "--out", "t.json", "--", "claude", "-p",
                           "List the files in this folder", "--output-format", "json"], cwd=folder, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # Claude Code's own answer, on its own stdout
    assert result["is_error"] is False and "hello-loop.txt" in result["result"]
    trace = transcript.load(folder / "t.json")
    assert sum(1 for s in trace.steps if s.stage == "call_model") >= 2
    bash = [s.detail for s in trace.steps if s.stage == "run_tool" and s.detail.name == "Bash"]
    assert bash and not bash[0].is_error and "hello-loop.txt" in str(bash[0].output)
    assert trace.meta["task"] == "List the files in this folder"  # the person's words, not the harness's
    assert any(m.get("role") == "system" for m in trace.messages)  # its environment block, kept as a system turn
    assert "4 · run a tool_use: Bash" in done.stderr
    check, = loop_main(["check", folder / "t.json"])
    assert check.returncode == 0 and check.stdout.startswith("ok:")
