"""What a command cannot see even under a system folder it does: the app's folder and the runs store.

bubblewrap gives a command the system folders read-only (/usr, /etc, ...). The
app installed in /usr/local, or a runs store put under /usr, would come with
them: every browser's saved runs, and the app's files, readable by a model's
command. Those folders are covered with an empty tmpfs instead. Here each sits
under /usr/local, readable by anyone as far as the files' modes go, beside a
folder that is not hidden, which the same command does read.
"""

from __future__ import annotations

import shutil
import secrets
from pathlib import Path

import pytest

from loop.tools import Workspace, sandbox
from loop.engine.toolsets import default_toolbox

needs_bubblewrap = pytest.mark.skipif(sandbox.programs().bwrap is None,
                                      reason="bubblewrap cannot run here: commands see the whole machine "
                                             "(docs/security.md)")

SECRET = "a saved run of another browser " + secrets.token_hex(8)
SHOWN = "anyone may read this " + secrets.token_hex(8)


@pytest.fixture
def under_usr_local():
    """A folder of this test's own under /usr/local (a system folder commands see), removed after."""
    parent = Path("/usr/local/share")
    if not parent.is_dir():
        pytest.skip("no /usr/local/share to put the folders in")
    folder = parent / f"loopscope-hidden-test-{secrets.token_hex(6)}"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def readable_folder(path: Path, name: str, text: str) -> Path:
    """`path` with one file in it, both open to every user: only the sandbox can keep a command out."""
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    (path / name).write_text(text)
    (path / name).chmod(0o644)
    return path


@needs_bubblewrap
@pytest.mark.parametrize("what", ["runs store", "app folder"])
def test_a_command_cannot_list_or_read_the_runs_store_or_the_app_under_a_system_folder(what, under_usr_local,
                                                                                         monkeypatch):
    hidden = readable_folder(under_usr_local / "hidden", "run.json", SECRET)
    shown = readable_folder(under_usr_local / "shown", "note.txt", SHOWN)
    if what == "runs store":
        monkeypatch.setenv("LOOPSCOPE_RUNS", str(hidden))
    else:
        monkeypatch.setattr(sandbox, "APP", hidden)  # the app installed under /usr/local
    with default_toolbox(Workspace.make(), timeout=30) as run:
        listed = run.run("bash", {"command": f"ls -A {hidden}; echo ---; ls -A {shown}"}).content
        read = run.run("bash", {"command": f"cat {hidden}/run.json; echo ---; cat {shown}/note.txt"}).content
    hidden_listing, shown_listing = listed.split("---")
    assert "run.json" not in hidden_listing and "note.txt" in shown_listing
    assert SECRET not in read and SHOWN in read
