"""A resumed run's new workspace gets the files the old run's commands wrote, and its commands may change them."""

from __future__ import annotations

import os
import threading

import pytest

from loop.tools import Bash, ToolBox, Workspace
from loop.tools.workspace import sandbox_user


@pytest.fixture
def old_and_new():
    with Workspace.make() as old, Workspace.make() as new:
        yield old, new


def run(workspace, command: str):
    return ToolBox([Bash(timeout=10)], workspace).run("bash", {"command": command})


def test_the_files_commands_wrote_come_along_and_commands_may_change_them(old_and_new):
    old, new = old_and_new
    wrote = run(old, "mkdir -p src && printf 'print(1)\\n' > src/hello.py && ln -s src/hello.py link.py && echo ok")
    assert wrote.content == "ok", wrote.content
    assert new.copy_from(old.path, 2**20) is True
    assert (new.path / "src" / "hello.py").read_text() == "print(1)\n"
    assert os.readlink(new.path / "link.py") == "src/hello.py"  # a link stays a link
    if os.geteuid() == 0:
        assert os.stat(new.path / "src" / "hello.py").st_uid == sandbox_user()[0]
    changed = run(new, "printf 'print(2)\\n' > src/hello.py && rm link.py && cat src/hello.py")
    assert changed.content == "print(2)" and not changed.is_error, changed.content


def test_a_fifo_or_a_link_out_is_never_opened(old_and_new):
    old, new = old_and_new
    os.mkfifo(old.path / "pipe")  # reading it would wait for ever
    os.symlink("/etc/shadow", old.path / "secret")
    done = threading.Event()
    result = []
    threading.Thread(target=lambda: (result.append(new.copy_from(old.path, 2**20)), done.set()), daemon=True).start()
    assert done.wait(10), "the copy hung on a FIFO"
    assert result == [True]
    assert not (new.path / "pipe").exists()
    assert os.readlink(new.path / "secret") == "/etc/shadow"  # copied as the link it was: not read as root
    assert not (new.path / "secret").is_file() or os.geteuid() != 0 or \
        run(new, "cat secret").is_error  # and from inside the sandbox it leads nowhere


def test_a_workspace_over_the_limit_is_not_copied(old_and_new):
    old, new = old_and_new
    (old.path / "big.bin").write_bytes(b"x" * 5000)
    assert new.copy_from(old.path, 4000) is False
    assert not (new.path / "big.bin").exists()
    assert new.copy_from(new.path / "missing", 4000) is False
