"""Resume's copy of an old workspace while a command of the old run fights it: nothing from outside comes along.

A command of the old run may still be running when the learner presses
Resume. It knows the copy is coming and can watch for it (the first file read
changes its atime), then rename its folders and put links in their place: to
/etc, to a folder only root may read, to the folder of the saved runs. The
server copies with the sandbox's user's file rights and walks by descriptors,
so what lands in the new workspace is what the command itself wrote, every
time. As root, as CI runs; the command runs as the sandbox's user, as a run's
commands do.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from loop.engine.runner import new_workspace
from loop.tools.workspace import README, sandbox_user

AS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not AS_ROOT, reason="the copy takes the sandbox's user's rights only as root")
DECOY = b"decoy, written by the old run's command\n"
PER_FOLDER = 1000  # small files in each decoy folder: the copy takes a while, the swap lands in the middle
TRIES = 5

# The old run's command, as the sandbox's user: decoy folders holding files named like the ones it wants,
# then, at the first read of any of its files (the copy has begun), each folder renamed and a link in its place.
SWAPPER = r"""
import os, sys
workspace, per_folder, decoy = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
swaps = [arg.split("=", 2) for arg in sys.argv[4:]]  # folder=target=name of the file it hopes to get
os.chdir(workspace)
paths = []
def write(path):
    with open(path, "wb") as f:
        f.write(decoy)
    paths.append(path)
for i in range(20):
    write(f"0-bait-{i:02d}")
for folder, target, wanted in swaps:
    os.mkdir(folder)
    for i in range(per_folder):
        write(f"{folder}/f{i:04d}")
    write(f"{folder}/{wanted}")
seen = {path: os.stat(path).st_atime_ns for path in paths}
print("ready", flush=True)
while all(os.stat(path).st_atime_ns == atime for path, atime in seen.items()):
    pass
for folder, target, wanted in swaps:
    os.rename(folder, folder + ".moved")
    os.symlink(target, folder)
print("swapped", flush=True)
"""


@pytest.fixture
def closed_folders():
    """What the swapped-in links point at: a root-only marker (0600 in a 0700 folder) and a stand-in for the
    saved runs (runs.sqlite3 and its -wal, 0600), both root's; /etc is the machine's own."""
    made = []
    marker_folder = Path(tempfile.mkdtemp(prefix="loopscope-root-only-"))
    (marker_folder / "marker").write_bytes(b"ROOT-ONLY-MARKER " + os.urandom(8).hex().encode())
    runs_folder = Path(tempfile.mkdtemp(prefix="loopscope-runs-"))
    (runs_folder / "runs.sqlite3").write_bytes(b"SQLite format 3\x00 FAKE-RUNS " + os.urandom(8).hex().encode())
    (runs_folder / "runs.sqlite3-wal").write_bytes(b"FAKE-WAL " + os.urandom(8).hex().encode())
    for folder in (marker_folder, runs_folder):
        folder.chmod(0o700)
        for file in folder.iterdir():
            file.chmod(0o600)
        made.append(folder)
    yield marker_folder, runs_folder
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def regular_files(folder: Path) -> dict[str, bytes]:
    """Every regular file under `folder`, found without following a link (lstat), with its bytes."""
    found = {}
    for where, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(where) / name
            if stat.S_ISREG(os.lstat(path).st_mode):
                found[str(path.relative_to(folder))] = path.read_bytes()
    return found


def outside_bytes(*folders: Path) -> list[bytes]:
    """The contents the command must never get: the files of the closed folders and /etc's root-only files."""
    secrets = [file.read_bytes() for folder in folders for file in folder.iterdir()]
    for name in ("shadow", "gshadow"):
        path = Path("/etc") / name
        if path.is_file() and path.stat().st_size:
            secrets.append(path.read_bytes())
    return secrets


@needs_root
@pytest.mark.parametrize("attempt", range(TRIES))
def test_folders_swapped_for_links_while_the_copy_runs_bring_nothing_from_outside(attempt, closed_folders):
    marker_folder, runs_folder = closed_folders
    uid, gid = sandbox_user()
    swaps = ["d1=/etc=shadow", f"d2={marker_folder}=marker", f"d3={runs_folder}=runs.sqlite3"]
    with new_workspace() as old, new_workspace() as new:
        swapper = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                                    "/usr/bin/python3", "-c", SWAPPER, str(old.path), str(PER_FOLDER),
                                    DECOY.decode(), *swaps],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert swapper.stdout.readline() == "ready\n", swapper.stderr.read()
            new.copy_from(old.path, 2**30)
            said, errors = swapper.communicate(timeout=60)
        finally:
            if swapper.poll() is None:
                swapper.kill()
                swapper.wait()
        assert said == "swapped\n", errors  # the command did swap its folders, once the copy had begun
        assert os.readlink(old.path / "d2") == str(marker_folder)
        copied = regular_files(new.path)
        assert copied["0-bait-00"] == DECOY  # the copy ran
        strangers = {name: data[:40] for name, data in copied.items() if data not in (DECOY, README.encode())}
        assert strangers == {}, f"try {attempt}: files from outside the old workspace were copied"
        secrets = outside_bytes(marker_folder, runs_folder)
        assert not [name for name, data in copied.items() if data in secrets]


def tree(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Each name under `folder` (not following links) with its owner, mode and size: to see that nothing changed."""
    seen = {}
    for where, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            info = os.lstat(Path(where) / name)
            seen[str((Path(where) / name).relative_to(folder))] = (info.st_uid, info.st_mode, info.st_size)
    return seen


@pytest.fixture
def readable_outside():
    """A folder outside every workspace that anyone may read, with a folder and a file in it."""
    folder = Path(tempfile.mkdtemp(prefix="loopscope-outside-"))
    folder.chmod(0o755)
    (folder / "sub").mkdir(mode=0o755)
    (folder / "sub" / "deep.txt").write_bytes(b"OUTSIDE, READABLE BY ANYONE (deep)\n")
    (folder / "readable.txt").write_bytes(b"OUTSIDE, READABLE BY ANYONE\n")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_link_to_a_folder_is_copied_as_a_link_and_its_folder_is_not_entered(readable_outside, closed_folders):
    marker_folder, _ = closed_folders
    before = tree(readable_outside)
    with new_workspace() as old, new_workspace() as new:
        (old.path / "src").mkdir()
        (old.path / "src" / "a.txt").write_bytes(DECOY)
        (old.path / "inner").symlink_to("src")  # a link to a folder of the workspace
        (old.path / "outer").symlink_to(readable_outside)  # one to a folder anyone may read
        (old.path / "closed").symlink_to(marker_folder)  # one to a folder only root may read
        assert new.copy_from(old.path, 2**20) is True
        assert {name: os.readlink(new.path / name) for name in ("inner", "outer", "closed")} == \
            {"inner": "src", "outer": str(readable_outside), "closed": str(marker_folder)}
        assert sorted(regular_files(new.path)) == ["README.txt", "src/a.txt"]
    assert tree(readable_outside) == before  # nothing written, made or given away through the link


@needs_root
def test_a_folder_that_is_a_link_whenever_it_is_opened_is_not_entered(closed_folders, monkeypatch):
    # The race above lands wherever the scheduler puts it; this one lands at the worst moment every time:
    # each decoy folder is a folder whenever it is looked at, and a link to a closed folder whenever anything
    # is opened through it (then a folder again).
    marker_folder, runs_folder = closed_folders
    swaps = {"d1": (Path("/etc"), "shadow"), "d2": (marker_folder, "marker"), "d3": (runs_folder, "runs.sqlite3")}
    with new_workspace() as old, new_workspace() as new:
        for folder, (_, wanted) in swaps.items():
            (old.path / folder).mkdir()
            (old.path / folder / wanted).write_bytes(DECOY)
        swapped = []
        real_open = os.open

        def open_while_a_link(path, *args, **kwargs):
            hit = [folder for folder in swaps if folder in os.fspath(path).split("/")]
            if not hit:
                return real_open(path, *args, **kwargs)
            folder = old.path / hit[0]  # as the old run's command would do it, in its own workspace
            os.rename(folder, f"{folder}.moved")
            os.symlink(swaps[hit[0]][0], folder)
            swapped.append(hit[0])
            try:
                return real_open(path, *args, **kwargs)
            finally:
                os.unlink(folder)
                os.rename(f"{folder}.moved", folder)

        monkeypatch.setattr(os, "open", open_while_a_link)
        new.copy_from(old.path, 2**30)
        monkeypatch.undo()
        assert sorted(set(swapped)) == ["d1", "d2", "d3"]  # each was opened, as a link
        copied = regular_files(new.path)
        strangers = {name: data[:40] for name, data in copied.items() if data not in (DECOY, README.encode())}
        assert strangers == {}, "files from outside the old workspace were copied"


@pytest.fixture
def given_old_workspace():
    """An old run's workspace in a folder the user gave (on disk, under /tmp, `nobody`'s as docs/security.md asks)."""
    folder = Path(tempfile.mkdtemp(prefix="loopscope-old-ws-"))
    os.chown(folder, *sandbox_user())
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_root
def test_a_hard_link_to_a_root_only_file_is_not_copied(given_old_workspace, closed_folders):
    # A hard link is a name inside the workspace like any other: no walk can tell it from the model's own file.
    # The kernel lets nobody make one only to files it owns (protected_hardlinks); root made this one, as a
    # mistake would, so only the copy's own rights (nobody's) keep the file where it is.
    marker_folder, _ = closed_folders
    (given_old_workspace / "mine.txt").write_bytes(DECOY)
    os.chown(given_old_workspace / "mine.txt", *sandbox_user())
    os.link(marker_folder / "marker", given_old_workspace / "hard.txt")
    with new_workspace() as new:
        assert new.copy_from(given_old_workspace, 2**20) is True
        assert regular_files(new.path) == {"README.txt": README.encode(), "mine.txt": DECOY}
