"""The server touches a run's files with the rights of the user commands run as, never its own.

The file tools run inside the server (as root, when it is). A link a command
swaps in for the last name of a path after the tools resolved it must not be
followed, and a hard link to a file of root's must not be read: the first is
stopped by O_NOFOLLOW at the final open, the second only by the tools opening
files as `nobody` (`loop/tools/rights.py`). Each test here fails if one of
the two is taken away.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from loop.tools import Bash, EditFile, ReadFile, ToolBox, Workspace, WriteFile
from loop.tools import files
from loop.tools.rights import as_sandbox_user
from loop.tools.workspace import sandbox_user

AS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not AS_ROOT, reason="the server takes nobody's rights only when it runs as root")
CANARY = "sk-ant-CANARY-rights-do-not-leak-3c1d"
TOOLS = ["read_file", "write_file", "edit_file"]


def tool_input(tool: str, path: str) -> dict:
    return {"read_file": {"path": path},
            "write_file": {"path": path, "content": "overwritten"},
            "edit_file": {"path": path, "old_text": "CANARY", "new_text": "overwritten"}}[tool]


@pytest.fixture
def run_space():
    """A workspace Loopscope makes for a run (as root: a tmpfs of nobody's), with its tools."""
    with Workspace.make() as space:
        box = ToolBox([Bash(timeout=10), ReadFile(), WriteFile(), EditFile()], space)
        try:
            yield space.path, box
        finally:
            box.close()


def _outside(mode: int, folder_mode: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="loopscope-rights-outside-"))
    folder.chmod(folder_mode)
    secret = folder / "secret.txt"
    secret.write_text(CANARY)
    secret.chmod(mode)
    return secret


@pytest.fixture
def open_to_all():
    """A file outside every workspace that anyone may read and write: only O_NOFOLLOW keeps the tools off it."""
    secret = _outside(0o666, 0o755)
    yield secret
    shutil.rmtree(secret.parent, ignore_errors=True)


@pytest.fixture
def root_only():
    """A file of root's, 0600, in a folder of root's, 0700 (like /root/… or the runs folder)."""
    secret = _outside(0o600, 0o700)
    yield secret
    shutil.rmtree(secret.parent, ignore_errors=True)


def swap_last_name_after_the_check(monkeypatch, workspace: Path, link_to: Path) -> list[str]:
    """After the tools resolved the path (inside, a regular file), its last name becomes a link to `link_to`."""
    swapped = []
    check = files.beneath

    def then_swap(root, path):
        names = check(root, path)
        where = workspace.joinpath(*names)
        os.unlink(where)
        os.symlink(link_to, where)
        swapped.append(str(where))
        return names

    monkeypatch.setattr(files, "beneath", then_swap)
    return swapped


# -- the last name swapped for a link between the check and the open ---------------------------------

@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("target", ["open_to_all", "root_only"])
def test_the_last_name_swapped_for_a_link_after_the_check_is_not_followed(tool, target, run_space, monkeypatch,
                                                                          request):
    workspace, box = run_space
    secret = request.getfixturevalue(target)
    made = box.run("write_file", {"path": "src/notes.txt", "content": "CANARY inside\n"})
    assert made.content == "Wrote 14 bytes to src/notes.txt", made.content
    swapped = swap_last_name_after_the_check(monkeypatch, workspace, secret)
    out = box.run(tool, tool_input(tool, "src/notes.txt"))
    assert swapped == [str(workspace / "src" / "notes.txt")]  # the swap happened, between the check and the open
    assert out.is_error, out.content
    assert out.content == ("Error: 'src/notes.txt' changed while it was being opened (a link appeared on it); "
                           "file tools follow no link there. Nothing was read or written.")
    assert secret.read_text() == CANARY  # neither read into the result nor changed
    assert sorted(p.name for p in secret.parent.iterdir()) == ["secret.txt"]


# -- the tools' own rights are nobody's ------------------------------------------------------------

@needs_root
@pytest.mark.parametrize("tool", TOOLS)
def test_a_hard_link_to_a_root_only_file_is_refused(tool, shared, root_only):
    # A path check cannot tell a hard link from the file: it is a name inside the workspace. The kernel lets
    # nobody make one only to files it owns (protected_hardlinks); root made this one, as a mistake would.
    os.link(root_only, shared / "hard.txt")
    box = ToolBox([ReadFile(), WriteFile(), EditFile()], shared)
    out = box.run(tool, tool_input(tool, "hard.txt"))
    assert out.is_error and CANARY not in out.content, out.content
    assert out.content == "Error: hard.txt: Permission denied"
    assert root_only.read_text() == CANARY


@needs_root
def test_a_file_the_command_made_for_itself_only_is_still_the_tools_to_read(run_space):
    workspace, box = run_space
    made = box.run("bash", {"command": "printf 'mine\\n' > mine.txt && chmod 600 mine.txt && echo ok"})
    assert made.content == "ok", made.content
    info = os.stat(workspace / "mine.txt")
    assert (info.st_uid, info.st_mode & 0o777) == (sandbox_user()[0], 0o600)
    assert box.run("read_file", {"path": "mine.txt"}).content == "mine\n"
    assert box.run("edit_file", {"path": "mine.txt", "old_text": "mine", "new_text": "still mine"}).content == \
        "Edited mine.txt"
    assert box.run("bash", {"command": "cat mine.txt"}).content == "still mine"


def test_what_the_tools_make_belongs_to_the_user_commands_run_as(run_space):
    workspace, box = run_space
    assert not box.run("write_file", {"path": "a/b/c.txt", "content": "x"}).is_error
    for made in (workspace / "a", workspace / "a" / "b", workspace / "a" / "b" / "c.txt"):
        assert os.stat(made).st_uid == sandbox_user()[0], made
    assert os.stat(workspace / "README.txt").st_uid == sandbox_user()[0]


# -- the mechanism: one thread, for the length of the block ----------------------------------------

def _fs_ids() -> tuple[str, str, str]:
    """This thread's filesystem uid and gid, and its supplementary groups, as the kernel has them."""
    status = dict(line.split(":", 1) for line in Path("/proc/thread-self/status").read_text().splitlines())
    return status["Uid"].split()[3], status["Gid"].split()[3], status["Groups"].strip()


@needs_root
def test_only_the_thread_in_the_block_takes_nobodys_rights_and_gives_them_back(root_only):
    saved = os.getgroups()
    os.setgroups([0, 5])  # root's groups would open group-readable files: they must go too
    try:
        asked, seen = threading.Event(), {}

        def other_session():  # a thread that was already there, as every other session's is
            asked.wait()
            seen["other"] = _fs_ids()
            seen["other read"] = root_only.read_text()

        other = threading.Thread(target=other_session, daemon=True)
        other.start()
        try:
            with as_sandbox_user():
                seen["inside"] = _fs_ids()
                asked.set()
                other.join()
                for secret in (root_only, Path("/etc/shadow")):
                    with pytest.raises(PermissionError):
                        secret.read_bytes()
        finally:
            asked.set()  # a failure above must not leave the other thread waiting
        seen["after"] = _fs_ids()
        uid, gid = (str(i) for i in sandbox_user())
        assert seen["inside"] == (uid, gid, "")
        assert seen["other"] == ("0", "0", "0 5") and seen["other read"] == CANARY
        assert seen["after"] == ("0", "0", "0 5") and root_only.read_text() == CANARY
    finally:
        os.setgroups(saved)


# -- Resume's copy: found by the server, read as nobody -----------------------------------------------

@needs_root
def test_an_old_workspace_under_a_folder_closed_to_others_is_still_copied(tmp_path, root_only):
    # pytest's tmp_path sits under root's 0700 folder, as a configured workspaces folder may: the server finds
    # the old workspace, and reads what is in it as the sandbox's user.
    old = tmp_path / "old"
    (old / "src").mkdir(parents=True)
    (old / "src" / "a.py").write_text("print(1)\n")
    for made in (old, old / "src", old / "src" / "a.py"):
        os.chown(made, *sandbox_user())
    os.link(root_only, old / "src" / "hard.txt")  # root's file: not the sandbox's user's to read
    with Workspace.make() as new:
        assert new.copy_from(old, 2**20) is True
        assert (new.path / "src" / "a.py").read_text() == "print(1)\n"
        assert os.stat(new.path / "src" / "a.py").st_uid == sandbox_user()[0]
        assert not (new.path / "src" / "hard.txt").exists()
