"""Real sessions read as they were: a zipped session on the command line, a recorded OpenAI request with its
options, a sidechain linked by its agentId, and the words the CLI uses for what a log does not say."""

import io
import json
import random
import zipfile

from loop.importers import import_bytes, import_files, import_path
from tests.cli import loop_main
from tests.synthetic import _Log, claude_code_session


def loop(*args):
    (done,) = loop_main([str(a) for a in args], env=None)
    return done


def _zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out.getvalue()


def test_import_reads_a_zipped_session_as_the_page_upload_does(tmp_path):
    log, agents = claude_code_session(records=400, compactions=1, agents=2)
    files = {"5e6f7a8b.jsonl": log, **{f"5e6f7a8b/{name}": data for name, data in agents.items()}}
    path = tmp_path / "session.zip"
    path.write_bytes(_zipped(files))
    uploaded = import_files([("session.zip", path.read_bytes())])
    out = tmp_path / "t.json"
    done = loop("import", path, "--out", out)
    assert done.returncode == 0, done.stderr
    said = done.stdout.splitlines()
    assert said[0] == "format: claude-code"
    assert sum(line.startswith("thread: ") for line in said) == len(uploaded.threads) == 3
    assert f"{len(uploaded.trace.messages)} messages, {len(uploaded.trace)} steps" in said
    assert import_path(path).trace.messages == uploaded.trace.messages
    assert loop("check", out).returncode == 0


OPENAI_BODY = {
    "model": "gpt-4o-mini", "temperature": 0.2, "stream": True, "thinking": {"type": "enabled", "budget_tokens": 1024},
    "messages": [
        {"role": "system", "content": "You run shell commands."},
        {"role": "user", "content": "How many files are here?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls | wc -l\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        {"role": "assistant", "content": "There are 3 files."}],
    "tools": [{"type": "function", "function": {"name": "bash", "description": "run a command",
                                                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}],
}


def test_a_recorded_openai_request_in_its_envelope_imports_with_its_options_kept_and_named(tmp_path):
    wrapped = {"provider": "openai", "request": OPENAI_BODY, "baseURL": "https://api.openai.com/v1"}
    imported = import_bytes(json.dumps(wrapped).encode(), "request.json")
    assert imported.format == "openai-chat"
    meta = imported.trace.meta
    assert meta["model"] == "gpt-4o-mini" and meta["system"] == "You run shell commands."
    assert meta["request_options"] == {"temperature": 0.2, "stream": True,
                                       "thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert meta["recorded_with"] == {"provider": "openai", "baseURL": "https://api.openai.com/v1"}
    said = imported.warnings
    assert any("temperature, stream, thinking" in w and "(request_options)" in w for w in said), said
    assert any("provider, baseURL" in w for w in said), said
    assert [m["role"] for m in imported.trace.messages] == ["user", "assistant", "user", "assistant"]
    # unwrapped, the same body says the same about its options
    bare = import_bytes(json.dumps(OPENAI_BODY).encode(), "body.json")
    assert bare.trace.meta["request_options"] == meta["request_options"]
    assert any("temperature, stream, thinking" in w for w in bare.warnings)
    path = tmp_path / "request.json"
    path.write_text(json.dumps(wrapped))
    out = tmp_path / "t.json"
    assert loop("import", path, "--out", out).returncode == 0
    assert json.loads(out.read_text())["request_options"]["temperature"] == 0.2
    assert loop("check", out).returncode == 0
