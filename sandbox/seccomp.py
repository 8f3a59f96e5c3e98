"""The seccomp deny-list the runner starts under, as a classic BPF program that bubblewrap
loads (`--seccomp FD`) just before it executes the command.

A deny-list, not an allow-list: CUDA's driver needs a wide and changing set of ioctls, mmaps
and threads, so we refuse what a kernel submission never needs (debugging and memory access
of other processes, kernel keyrings, BPF, perf counters, userfaultfd, mounts, namespaces,
io_uring, module and kexec loading, terminal injection) and allow everything else. Any
other ABI than the host's own (32-bit `int 0x80`, x32) kills the process, since its
syscall numbers would slip past the list."""

from __future__ import annotations

import errno
import platform
import struct

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
_NR, _ARCH = 0, 4


def _arg_low(index: int) -> int:
    """Offset of the low 32 bits of syscall argument `index` (little-endian hosts)."""
    return 16 + 8 * index


_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000

# x86_64 numbers (asm/unistd_64.h). Refused with EPERM.
DENIED_X86_64: dict[str, int] = {
    # Reaching into other processes.
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    # Kernel keyrings, eBPF, perf counters, userfaultfd (a classic exploit primitive).
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    # Mounts and namespaces: the sandbox's view of the system stays the one it was given.
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    # io_uring performs I/O outside the syscalls this list sees.
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    # The machine itself.
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "quotactl": 179,
    "iopl": 172,
    "ioperm": 173,
}
_CLONE, _CLONE3, _IOCTL = 56, 435, 16

# clone() flags that create namespaces (linux/sched.h).
CLONE_NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)
# Terminal input injection and console control (asm-generic/ioctls.h).
DENIED_IOCTLS = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C}


class SeccompUnsupported(RuntimeError):
    """This host's architecture has no syscall table here."""


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def deny_list_program(machine: str | None = None) -> bytes:
    """The filter as bytes of `struct sock_filter`, ready for `bwrap --seccomp FD`."""
    machine = machine or platform.machine()
    if machine not in ("x86_64", "AMD64"):
        raise SeccompUnsupported(
            f"the seccomp deny-list has syscall numbers for x86_64 only, not {machine}"
        )
    # Instructions are built as (opcode, k, jump-true label, jump-false label); labels
    # resolve to relative offsets once the layout is known.
    program: list[tuple[int, int, str | None, str | None]] = [
        (_LD_W_ABS, _ARCH, None, None),
        (_JEQ_K, _AUDIT_ARCH_X86_64, None, "kill"),
        (_LD_W_ABS, _NR, None, None),
        (_JGE_K, _X32_SYSCALL_BIT, "kill", None),
    ]
    for number in sorted(DENIED_X86_64.values()):
        program.append((_JEQ_K, number, "deny", None))
    program += [
        # glibc falls back to clone() when clone3 is missing, and clone's flags can be read.
        (_JEQ_K, _CLONE3, "nosys", None),
        (_JEQ_K, _CLONE, "clone", None),
        (_JEQ_K, _IOCTL, "ioctl", None),
        (_RET_K, _RET_ALLOW, None, None),
    ]
    labels = {"clone": len(program)}
    program += [
        (_LD_W_ABS, _arg_low(0), None, None),
        (_JSET_K, CLONE_NAMESPACE_FLAGS, "deny", None),
        (_RET_K, _RET_ALLOW, None, None),
    ]
    labels["ioctl"] = len(program)
    program.append((_LD_W_ABS, _arg_low(1), None, None))
    for request in DENIED_IOCTLS.values():
        program.append((_JEQ_K, request, "deny", None))
    program.append((_RET_K, _RET_ALLOW, None, None))
    labels["deny"] = len(program)
    program.append((_RET_K, _RET_ERRNO | errno.EPERM, None, None))
    labels["nosys"] = len(program)
    program.append((_RET_K, _RET_ERRNO | errno.ENOSYS, None, None))
    labels["kill"] = len(program)
    program.append((_RET_K, _RET_KILL_PROCESS, None, None))

    out = bytearray()
    for index, (code, k, true_label, false_label) in enumerate(program):
        jt = labels[true_label] - index - 1 if true_label else 0
        jf = labels[false_label] - index - 1 if false_label else 0
        if not (0 <= jt <= 255 and 0 <= jf <= 255):
            raise AssertionError("a seccomp jump is out of range")
        out += _insn(code, k, jt, jf)
    return bytes(out)
