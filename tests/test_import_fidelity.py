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
