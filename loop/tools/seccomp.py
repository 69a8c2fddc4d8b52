"""The seccomp filter bubblewrap puts on every command: no kernel keyring.

The kernel keeps keyrings per user (`_uid.65534` and the keys in it), not per
namespace: every run's commands are the same `nobody`, so a key one run adds
with `add_key` and opens with `keyctl` is readable by the next run, and it
outlives the run that made it by about 20 s. No namespace bubblewrap makes
separates keyrings, and a uid per run from a pool does not either (a uid comes
back while its old keyring still lives). So the three calls that reach a
keyring, `add_key`, `request_key` and `keyctl`, are refused whatever the user.

The program is classic BPF (`struct sock_filter {u16 code; u8 jt; u8 jf;
u32 k}`, little-endian, as the kernel and bwrap's `--seccomp FD` read it). It
loads `seccomp_data.arch`, and for each architecture a command could call the
kernel in (64-bit x86 with its x32 numbers, i386 through `int 0x80` on the
same kernel, aarch64 and 32-bit arm) loads `seccomp_data.nr` and refuses that
architecture's three numbers; every other call, and every other architecture,
is allowed. The numbers are the kernel's syscall tables' (unistd_64.h,
unistd_x32.h, unistd_32.h, asm-generic/unistd.h, arm's syscall.tbl).

Refused with EPERM, not ENOSYS: the call exists, the sandbox forbids it, and
"Operation not permitted" says so to whoever reads the error. It is also what
Docker's and Podman's default filters answer for these three calls, so tools
already meet it in containers and go on without a keyring.
"""

from __future__ import annotations

import errno
import os
import struct

# linux/filter.h and linux/seccomp.h
BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: A = the 32-bit word at offset k of seccomp_data
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K: if A == k skip jt instructions, else jf
BPF_RET_K = 0x06  # BPF_RET | BPF_K: return k
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
NR_OFFSET = 0  # struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }
ARCH_OFFSET = 4

X32_BIT = 0x40000000  # __X32_SYSCALL_BIT: x32 calls come in with the x86_64 arch value and this bit set

# AUDIT_ARCH_* (linux/audit.h) → the numbers of add_key, request_key, keyctl there.
KEYRING_CALLS: dict[int, tuple[int, ...]] = {
    0xC000003E: (248, 249, 250, X32_BIT | 248, X32_BIT | 249, X32_BIT | 250),  # x86_64, and x32
    0x40000003: (286, 287, 288),  # i386
    0xC00000B7: (217, 218, 219),  # aarch64 (asm-generic)
    0x40000028: (309, 310, 311),  # arm (EABI)
}
REFUSAL = errno.EPERM


def _instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def keyring_filter(calls: dict[int, tuple[int, ...]] = KEYRING_CALLS, refusal: int = REFUSAL) -> bytes:
    """The filter's program: refuse `calls` (by architecture) with errno `refusal`, allow everything else.

        A = arch
        for each architecture:  if A != arch: skip its block
            block:  A = nr; if A == n: goto refuse (for each n); return ALLOW
        return ALLOW
        refuse: return ERRNO | refusal
    """
    # A block is one load, one jump per number and one return; `refuse` follows the final ALLOW.
    sizes = [2 + len(numbers) for numbers in calls.values()]
    refuse_at = 1 + sum(1 + size for size in sizes) + 1
    program = [_instruction(BPF_LD_W_ABS, 0, 0, ARCH_OFFSET)]
    for (arch, numbers), size in zip(calls.items(), sizes):
        program.append(_instruction(BPF_JEQ_K, 0, size, arch))
        program.append(_instruction(BPF_LD_W_ABS, 0, 0, NR_OFFSET))
        for number in numbers:  # a jump counts from the instruction after it
            program.append(_instruction(BPF_JEQ_K, refuse_at - len(program) - 1, 0, number))
        program.append(_instruction(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    program.append(_instruction(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    assert len(program) == refuse_at and refuse_at <= 255  # classic BPF jumps are one byte
    program.append(_instruction(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | refusal))
    return b"".join(program)


def readable(program: bytes) -> int:
    """A pipe's read end holding `program` (then its end): for bwrap's `--seccomp FD`, which reads it to the end.

    The caller passes it to the child (pass_fds) and closes its own copy once the child has started.
    """
    read, write = os.pipe()
    try:
        os.write(write, program)  # far below a pipe's 64 KiB: never blocks
    finally:
        os.close(write)
    return read
