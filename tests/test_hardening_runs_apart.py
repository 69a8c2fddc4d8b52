"""Two runs share nothing: no key in the kernel's keyring, no IPC, socket, temporary file or process of each other's.

Every run's commands are the same user (`nobody` as root), and the kernel keys
some things by user, not by namespace: its keyrings. A key one run adds, with
its permissions opened, would be readable by the next run for about 20 s after
the first ended. Under bubblewrap a seccomp filter refuses `add_key`,
`request_key` and `keyctl` (loop/tools/seccomp.py), in every calling convention
this kernel has: x86_64, x32 and i386 (`int 0x80`). The filter's program is also
run here, by a small classic-BPF interpreter, for the architectures this machine
cannot run (aarch64, arm).

The rest two runs could meet (SysV IPC, POSIX message queues, abstract unix
sockets, /tmp, /dev/shm, each other's processes) is closed by bubblewrap's
namespaces and private tmpfs; run A holds each open while run B looks.

And a command's environment is an allow-list: a secret of the server's under
any name stays out of it.
"""

from __future__ import annotations

import shutil
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest

from loop.tools import ToolBox, Workspace, sandbox, seccomp
from loop.engine.toolsets import default_toolbox

needs_bubblewrap = pytest.mark.skipif(sandbox.programs().bwrap is None,
                                      reason="bubblewrap cannot run here: runs are not apart (docs/security.md)")

# Run A adds a key to its user's keyring, opens it to all (KEYCTL_SETPERM 0x3f3f3f3f) and links it to the
# session keyring too; run B looks for it in /proc/keys and reads it with KEYCTL_READ by the serial A printed.
ADD_KEY = r"""python3 - <<'EOF'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
key = libc.syscall(248, b"user", b"loopscope-left-behind", b"run A was here", 14, -4)  # KEY_SPEC_USER_KEYRING
print("add_key:", key if key > 0 else os.strerror(ctypes.get_errno()))
if key > 0:
    print("setperm:", libc.syscall(250, 5, key, 0x3F3F3F3F))
EOF"""
FIND_KEY = r"""python3 - {serial} <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
listed = [line for line in open("/proc/keys") if "loopscope-left-behind" in line]
print("listed:", len(listed))
buffer = ctypes.create_string_buffer(64)
size = libc.syscall(250, 11, int(sys.argv[1]), buffer, 64)  # KEYCTL_READ
print("read:", buffer.raw[:size] if size >= 0 else os.strerror(ctypes.get_errno()))
EOF"""

# Each keyring call in each calling convention of this x86_64 kernel; i386's through `int 0x80` from a few
# bytes of machine code (push rbx; mov eax, edi; zero ebx ecx edx esi edi; int 0x80; pop rbx; ret).
EVERY_WAY = r"""python3 - <<'EOF'
import ctypes, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
code = bytes.fromhex("5389f831db31c931d231f631ffcd805bc3")
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
int80 = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
for name, x86_64, i386 in (("add_key", 248, 286), ("request_key", 249, 287), ("keyctl", 250, 288)):
    for convention, number in (("x86_64", x86_64), ("x32", x86_64 | 0x40000000)):
        result = libc.syscall(number, 0, 0, 0, 0, 0)
        print(convention, name, os.strerror(ctypes.get_errno()) if result < 0 else result)
    result = int80(i386)
    print("i386", name, os.strerror(-result) if result < 0 else result)
EOF"""


def new_run(timeout: float = 30.0) -> ToolBox:
    """The tools of a new run, in a workspace of its own (closing the box removes it), as the page makes them."""
    return default_toolbox(Workspace.make(), timeout=timeout)


def command(run: ToolBox, text: str) -> str:
    """What `text` printed as a command of `run`."""
    return run.run("bash", {"command": text}).content


@needs_bubblewrap
def test_a_key_one_run_leaves_in_the_keyring_is_never_seen_by_another():
    with new_run() as a:
        added = command(a, ADD_KEY)
    serial = added.splitlines()[0].removeprefix("add_key: ")
    with new_run() as b:  # a later run, well within the 20 s a key outlives its run
        found = command(b, FIND_KEY.format(serial=serial if serial.isdigit() else 0))
    assert found.splitlines() == ["listed: 0", "read: Operation not permitted"]
    assert added == "add_key: Operation not permitted"


@needs_bubblewrap
def test_every_way_into_the_keyring_is_refused_x86_64_x32_and_i386():
    with new_run() as a:
        lines = command(a, EVERY_WAY).splitlines()
    assert lines == [f"{convention} {name} Operation not permitted"
                     for name in ("add_key", "request_key", "keyctl") for convention in ("x86_64", "x32", "i386")]


# -- the filter's program, run by a classic-BPF interpreter ------------------------------------------------


def evaluate(program: bytes, nr: int, arch: int) -> int:
    """What the kernel's seccomp would return for a call `nr` on `arch`: only the instructions the filter uses."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *[0] * 6)
    instructions = [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = instructions[pc]
        pc += 1
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif code == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            pc += jt if accumulator == k else jf
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"instruction {code:#x} the filter should not use")


REFUSED = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
ALLOWED = 0x7FFF0000
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
# From the kernel's tables: unistd_64.h, unistd_x32.h, unistd_32.h, asm-generic/unistd.h, arm's syscall.tbl.
KEYRING = {
    X86_64: [248, 249, 250, 0x40000000 + 248, 0x40000000 + 249, 0x40000000 + 250],
    I386: [286, 287, 288],
    AARCH64: [217, 218, 219],
    ARM: [309, 310, 311],
}


@pytest.mark.parametrize("arch", list(KEYRING), ids=["x86_64+x32", "i386", "aarch64", "arm"])
def test_the_filter_refuses_the_keyring_calls_of_each_architecture_and_nothing_else(arch):
    program = seccomp.keyring_filter()
    assert len(program) % 8 == 0 and len(program) // 8 <= 4096  # BPF_MAXINSNS
    for nr in KEYRING[arch]:
        assert evaluate(program, nr, arch) == REFUSED, (hex(arch), nr)
    others = set(range(0, 600)) | {0x40000000 + n for n in range(0, 600)}
    for nr in sorted(others - set(KEYRING[arch])):
        assert evaluate(program, nr, arch) == ALLOWED, (hex(arch), nr)
    assert evaluate(program, 248, 0x80000016) == ALLOWED  # another architecture (s390x) is not this filter's


# -- what else two runs could meet --------------------------------------------------------------------------

# Run A makes each thing two processes of the same user could meet, says so in its workspace, and holds
# them until the test lets it go; run B, meanwhile and afterwards, looks for each.
HOLD = r"""python3 - loopscope-probe-holder <<'EOF'
import ctypes, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
print("shm", libc.shmget(0x4C53, 4096, 0o1666))  # IPC_CREAT | 0666, left behind: no IPC_RMID
print("msg", libc.msgget(0x4C53, 0o1666))
libc.mq_open.restype = ctypes.c_int
print("mq", libc.mq_open(b"/loopscope-probe", 0o102, 0o666, None))  # O_CREAT | O_RDWR
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(b"\0loopscope-probe")
listener.listen()
for folder in ("/tmp", "/dev/shm"):
    open(f"{folder}/loopscope-probe", "w").write("run A")
open("/workspace/ready", "w").close()
while not os.path.exists("/workspace/done"):
    time.sleep(0.05)
EOF"""
LOOK = r"""python3 - <<'EOF'
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def said(result):
    return os.strerror(ctypes.get_errno()) if result < 0 else f"found {result}"
print("shm:", said(libc.shmget(0x4C53, 0, 0)))
print("msg:", said(libc.msgget(0x4C53, 0)))
libc.mq_open.restype = ctypes.c_int
print("mq:", said(libc.mq_open(b"/loopscope-probe", 0, 0, None)))
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(b"\0loopscope-probe")
    print("socket: connected")
except OSError as error:
    print("socket:", error.strerror)
for folder in ("/tmp", "/dev/shm"):
    print(f"{folder}:", "loopscope-probe" in os.listdir(folder))
seen = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        seen.append(open(f"/proc/{pid}/cmdline", "rb").read())
    except OSError:
        pass
print("processes of A:", sum(b"loopscope-probe-" + b"holder" in line for line in seen))  # not this command's text
EOF"""
NOTHING = ["shm: No such file or directory", "msg: No such file or directory", "mq: No such file or directory",
           "socket: Connection refused", "/tmp: False", "/dev/shm: False", "processes of A: 0"]


@needs_bubblewrap
def test_two_runs_meet_nowhere_at_the_same_time_or_one_after_the_other():
    with new_run(timeout=60) as a, new_run() as b:
        held: list[str] = []
        holder = threading.Thread(target=lambda: held.append(command(a, HOLD)))
        holder.start()
        try:
            deadline = time.monotonic() + 60
            while not (a.workspace / "ready").exists():
                assert holder.is_alive() and time.monotonic() < deadline, held
                time.sleep(0.02)
            meanwhile = command(b, LOOK).splitlines()
        finally:
            (a.workspace / "done").touch()
            holder.join(90)
    # A made each of them (SysV IPC left behind, not removed), in its own namespaces
    assert [line.split()[0] for line in held[0].splitlines()] == ["shm", "msg", "mq"], held
    assert all(int(line.split()[1]) >= 0 for line in held[0].splitlines()), held
    with new_run() as c:  # a later run
        afterwards = command(c, LOOK).splitlines()
    assert meanwhile == NOTHING
    assert afterwards == NOTHING


# -- the environment -----------------------------------------------------------------------------------------

SECRETS = {
    "DB_PASS": "canary-db-pass",
    "DATABASE_URL": "postgres://app:canary-database-url@db/app",
    "SENTRY_DSN": "https://canary-sentry@sentry.example/1",
    "https_proxy": "http://user:canary-proxy-password@proxy.example:3128",
    "API_KEYS": "canary-api-keys",
    "SMTP_PASS": "canary-smtp-pass",
    "SECRET_KEY_BASE": "canary-secret-key-base",
    "LOOPSCOPE_HARMLESS_SETTING": "canary-harmless",  # unknown to the list: it stays out too
}


def test_a_commands_environment_holds_only_what_the_tools_need_whatever_the_server_has(shared, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "ja_JP.UTF-8")
    monkeypatch.setenv("LC_MESSAGES", "C.UTF-8")
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    monkeypatch.setenv("TMPDIR", "/var/tmp/server-only")
    with default_toolbox(shared) as run:
        out = command(run, "env")
    assert "canary" not in out
    names = {line.split("=", 1)[0] for line in out.splitlines()}
    assert not names & set(SECRETS)
    assert {"LANG=ja_JP.UTF-8", "LC_MESSAGES=C.UTF-8", "TZ=Asia/Tokyo"} <= set(out.splitlines())
    inside = sandbox.INSIDE if sandbox.programs().bwrap else str(shared)
    assert {f"HOME={inside}", f"PATH={sandbox.PATH}"} <= set(out.splitlines())
    # what bash itself adds (PWD, SHLVL, _) and the step's mark; nothing else of the server's
    assert names <= set(sandbox.PASSED) | {"HOME", "PATH", "PWD", "SHLVL", "_", "LOOPSCOPE_STEP"}


def test_where_bubblewrap_cannot_apply_the_filter_commands_run_plain_and_the_run_says_why(shared, monkeypatch):
    # A bwrap that works but refuses seccomp filters, as on a kernel without them: the trial has the filter,
    # so the server does not run commands under bubblewrap without it.
    folder = Path(tempfile.mkdtemp(prefix="loopscope-test-bwrap-"))
    try:
        fake = folder / "bwrap"
        fake.write_text('#!/bin/sh\ncase " $* " in *" --seccomp "*) '
                        'echo "bwrap: prctl(PR_SET_SECCOMP): Invalid argument" >&2; exit 1;; esac\n'
                        'exec /usr/bin/bwrap "$@"\n')
        folder.chmod(0o755)
        fake.chmod(0o755)
        monkeypatch.setenv(sandbox.BWRAP_VARIABLE, str(fake))
        monkeypatch.setattr(sandbox, "_programs", None)
        with default_toolbox(shared) as run:
            (warning,) = run.warnings
            out = command(run, "pwd")
    finally:
        shutil.rmtree(folder)
    assert warning.startswith("Warning: commands run without bubblewrap: bubblewrap cannot run here "
                              "(bwrap: prctl(PR_SET_SECCOMP): Invalid argument).")
    assert out == str(shared)  # plain: the real folder


CONNECT = r"""python3 - <<'EOF'
import socket
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(b"\0loopscope-server-{tag}")
    print("connected")
except OSError as error:
    print(error.strerror)
EOF"""


@needs_bubblewrap
@pytest.mark.parametrize("network", [False, True], ids=["no-network", "network-allowed"])
def test_abstract_sockets_are_apart_only_without_the_network(network, tag, monkeypatch):
    # The gap docs/security.md states: sharing the host's network shares its abstract sockets, the server's too.
    monkeypatch.setenv(sandbox.NETWORK_VARIABLE, "1" if network else "0")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(f"\0loopscope-server-{tag}".encode())
    listener.listen()
    try:
        with new_run() as run:
            said = command(run, CONNECT.replace("{tag}", tag))
    finally:
        listener.close()
    assert said == ("connected" if network else "Connection refused")
