"""Run model-written Python (plotting code) inside a bubblewrap sandbox, never in this process.

    from synth.sandbox import run_python
    r = run_python(code, inputs={"data.json": b"..."}, timeout_s=30.0)
    r.ok, r.outputs, r.error, r.stdout

The boundary is Debian's bubblewrap (`bwrap`, one with `--size`: 0.8 on Debian 12); the code
runs in a fresh process with:

- every namespace unshared (network included: no interfaces but a downed loopback),
  `--die-with-parent`. Where this process is not root, the user namespace maps the code to uid
  65534. Where it is root (CI), a user namespace would map the code to host root, where
  RLIMIT_NPROC does not bind: so bwrap unshares all but the user namespace, and the launcher, holding only CAP_CHOWN, CAP_SETUID and
  CAP_SETGID, drops to a host uid of the run's own (HOST_UID_BASE + a number no other run of this
  process holds; no supplementary groups, no capabilities) before it does anything else;
- a read-only view of only the Python runtime (interpreter, libpython, stdlib), the system shared
  libraries (`/usr/lib/<multiarch>`), the directories that hold the system's fonts (matplotlib's
  `font_manager.findSystemFonts`: fontconfig's list and the usual font directories) and the
  installed distributions that matplotlib, numpy and pandas need (bound one by one from the venv's
  site-packages into `/sandbox/site`); no repo, no home, no `/etc`, no `/proc`, no binaries;
- matplotlib's font list built once inside the sandbox and given to every run, with a
  `matplotlibrc` whose `font.family` is the default sans-serif (DejaVu Sans) followed by the
  installed families that draw what it cannot (CJK, Arabic, ...: `font_fallback()`), so text in
  any script an installed font covers is drawn, not shown as boxes;
- a working directory (`/sandbox/work`) that is a tmpfs of the sandbox's own, WORKDIR_BYTES at
  most, as the only writable place: the bound counts nameless (O_TMPFILE) and unlinked-but-open
  files too, and nothing the code writes reaches the host's disk (its pages are memory, shared
  memory outside RLIMIT_AS, up to WORKDIR_BYTES). The launcher copies `inputs` there and hands the
  host a descriptor of it before the code runs; `outputs` are the regular files the code left
  there, read through that descriptor (symlinks, FIFOs and anything over the caps are not read);
- an empty environment but `PATH`, `HOME`, `MPLBACKEND=Agg`, `MPLCONFIGDIR` and single-threaded BLAS
  (OpenBLAS, OpenMP, MKL);
- rlimits on CPU time, address space, processes (NPROC, threads included: it binds as root too,
  as above, and runs at once never share it), open files (NOFILE) and file size, set by a tiny
  launcher inside the sandbox before the code runs, plus a seccomp filter the launcher installs:
  no new processes (threads only), no `execve`, no `ptrace`, no `memfd_create` (memory outside
  RLIMIT_AS), no sockets but AF_UNIX;
- every unpickler in the sandbox refusing globals (`pickle`, `_pickle`, pandas' `pickle_compat`,
  so `pd.read_pickle` and `np.load(allow_pickle=True)` too): a pickle naming `builtins.exec` would
  run code the AST check never saw;
- a wall-clock limit: the whole process group (and with it the sandbox's PID namespace) is killed
  with SIGKILL at `timeout_s`, or as soon as the working directory is full or past its caps in
  entries and depth; a run that leaves it full fails so too.

Limits that remain: memory is RLIMIT_AS per run plus the working directory's tmpfs and kernel
buffers (pipes, at most NOFILE of them); entries and depth are checked every POLL_S, so a burst of
empty files or directories between two checks (and at the end) is only bounded by the rate it
is made at.

An AST check (import allow-list, no dunder attribute escapes, no `eval`/`exec`/`__import__`, no
unpickling: `read_pickle`, `to_pickle`, `allow_pickle`) runs first as defence in depth; the
sandbox is the boundary. Where bwrap is missing or cannot start the sandbox, nothing runs: `ok`
is False and `error` names bwrap and the fix.

Errors (`r.error`): "timeout", "memory", "killed", "exit code N", "blocked: <why>", and
"sandbox failure: <why>" where this side failed (run_python never raises). "memory" comes from
the launcher's exit status (a MemoryError ended the code), never from what stderr says. The
working directory is walked without recursion and capped in entries and depth; the run's
temporary directory is removed whatever the code left in it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# Limits (per run).
CPU_SECONDS = 60  # RLIMIT_CPU; the wall clock (timeout_s) usually fires first
MEMORY_BYTES = 2 * 1024**3  # RLIMIT_AS
FILE_BYTES = 16 * 1024**2  # RLIMIT_FSIZE: the largest single file (stdout/stderr included)
WORKDIR_BYTES = 64 * 1024**2  # the working directory as a whole (its tmpfs's size)
WORKDIR_FILES = 2000  # entries in the working directory
WORKDIR_DEPTH = 32  # directory levels in the working directory
CODE_CHARS = 200_000  # the longest code the AST check parses (deep nesting exhausts the parser)
MEMORY_EXIT = 109  # the launcher's exit status for a MemoryError that ended the code
OUTPUT_BYTES = 32 * 1024**2  # the most that comes back as outputs
STDOUT_CHARS = 1_000_000  # the most stdout that comes back
NPROC = 64  # RLIMIT_NPROC (threads count); binds as root too (the code runs as a uid of its own)
# RLIMIT_NOFILE: matplotlib holds each font it draws with open (DejaVu, up to FONT_FALLBACK_MAX
# fallback families, the mathtext fonts), so not much lower; it bounds pipe buffers too
NOFILE = 128
POLL_S = 0.02  # how often the working directory is measured while the code runs

# Packages the code may use, and the distributions bound into the sandbox for them.
PLOTTING_DISTRIBUTIONS = ("matplotlib", "numpy", "pandas")
ALLOWED_IMPORTS = frozenset(
    {
        "matplotlib",
        "mpl_toolkits",
        "numpy",
        "pandas",
        "math",
        "cmath",
        "statistics",
        "random",
        "json",
        "csv",
        "io",
        "collections",
        "itertools",
        "functools",
        "datetime",
        "time",
        "calendar",
        "decimal",
        "fractions",
        "re",
        "string",
        "textwrap",
        "typing",
        "dataclasses",
        "enum",
        "operator",
        "copy",
        "colorsys",
        "numbers",
        "warnings",
        "__future__",
    }
)
BLOCKED_NAMES = frozenset(
    {
        "__import__",
        "__builtins__",
        "__loader__",
        "__spec__",
        "eval",
        "exec",
        "compile",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "breakpoint",
        "input",
        "memoryview",
    }
)
# Modules (and module-valued attributes of the allowed packages) that give processes, files
# beyond open(), native code, the interpreter's internals or the network. A deny-list, not a
# resolution of what each `from X import name` binds: the check never imports anything on the
# host, and which names of numpy/matplotlib/pandas are modules changes with their versions.
# Refused as `from X import <name>`, as a dotted import part and as an attribute (`matplotlib.os`).
# Names that are also ordinary numpy/pandas functions (select, types, signal, array) are left
# out. Defence in depth: the sandbox (namespaces, seccomp, rlimits) is the boundary.
DENIED_NAMES = frozenset(
    {
        "os",
        "posix",
        "nt",
        "sys",
        "subprocess",
        "importlib",
        "imp",
        "pkgutil",
        "zipimport",
        "runpy",
        "ctypes",
        "ctypeslib",
        "cffi",
        "f2py",
        "distutils",
        "setuptools",
        "builtins",
        "socket",
        "ssl",
        "http",
        "urllib",
        "shutil",
        "pathlib",
        "tempfile",
        "glob",
        "mmap",
        "fcntl",
        "resource",
        "pty",
        "multiprocessing",
        "threading",
        "_thread",
        "asyncio",
        "inspect",
        "gc",
        "marshal",
        "pickle",
        "sysconfig",
    }
)
# Names that unpickle (a pickle can name builtins.exec and run code this check never saw):
# refused as names, attributes, keywords (np.load(allow_pickle=True)) and as a string that is
# nothing but a dotted name (operator.attrgetter("read_pickle")). The launcher also makes every
# unpickler in the sandbox refuse globals; the sandbox holds without either.
PICKLE_NAMES = frozenset(
    {"read_pickle", "to_pickle", "allow_pickle", "pickle_compat", "pickle", "cPickle", "dill"}
)
ALLOWED_DUNDERS = frozenset({"__name__", "__doc__", "__init__", "__len__", "__version__"})

SANDBOX = "/sandbox"
WORK = f"{SANDBOX}/work"
RUN = f"{SANDBOX}/run"
SITE = f"{SANDBOX}/site"
MPLCONFIG = ".mplconfig"  # inside the working directory; not an output
FONT_FALLBACK_MAX = 40  # families after the default one in font.family (each is loaded per run)

BWRAP_FIX = (
    "install bubblewrap (`apt-get install bubblewrap`; one that has --size, as Debian 12's 0.8 "
    "does) and make sure user namespaces are allowed (sysctl user.max_user_namespaces > 0); code is never run "
    "unsandboxed"
)


@dataclass
class SandboxResult:
    ok: bool
    outputs: dict[str, bytes] = field(default_factory=dict)
    error: str | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0


# --------------------------------------------------------------------------- AST check


# CPython 3.11's AST conversion keeps its recursion depth in interpreter-wide state: two threads
# parsing at once (make_charts checks its charts' code from a thread pool) can fail with
# "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905), so parses are
# taken one at a time.
_PARSE_LOCK = threading.Lock()
_MISMATCH_TRIES = 5


def _parse(code: str) -> ast.Module:
    """`ast.parse` under the lock. The lock orders this module's parses, but any other thread
    compiling at the same time (an import compiling a module, a library calling compile) shares
    that state too: its "recursion depth mismatch" SystemError says nothing of `code`, so the
    parse is tried again (a CI run failed once so, a Dagster thread importing beside it)."""
    for attempt in range(_MISMATCH_TRIES):
        try:
            with _PARSE_LOCK:
                return ast.parse(code)
        except SystemError as e:
            if "mismatch" not in str(e) or attempt == _MISMATCH_TRIES - 1:
                raise
    raise AssertionError("unreachable")


def check_code(code: str) -> str | None:
    """Why `code` is refused before it runs ("blocked: ..."), or None. Defence in depth only.

    Never raises: code too long, or nested too deeply for the parser (RecursionError,
    MemoryError, "AST constructor recursion depth" SystemError), is refused like a syntax error.
    """
    if len(code) > CODE_CHARS:
        return f"blocked: code is {len(code)} characters, over the {CODE_CHARS} the check parses"
    try:
        tree = _parse(code)
    except SyntaxError as e:
        return f"blocked: syntax error at line {e.lineno}: {e.msg}"
    except (RecursionError, MemoryError, ValueError, SystemError) as e:
        why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        return f"blocked: code nested too deeply for the parser ({why[:100]})"
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    return f"blocked: relative import at line {line}"
                names = [node.module or ""]
                for alias in node.names:  # `from matplotlib import os` imports os all the same
                    if alias.name in DENIED_NAMES:
                        return (
                            f"blocked: import of {alias.name!r} from {node.module!r} at line "
                            f"{line} is not allowed"
                        )
            else:
                names = [alias.name for alias in node.names]
            for name in names:
                top = name.split(".")[0]
                if top not in ALLOWED_IMPORTS:
                    return f"blocked: import of {name!r} at line {line} is not allowed"
                denied = [part for part in name.split(".") if part in DENIED_NAMES]
                if denied:  # import numpy.ctypeslib
                    return f"blocked: import of {name!r} at line {line} is not allowed"
        elif isinstance(node, ast.Attribute):
            if _is_dunder(node.attr) and node.attr not in ALLOWED_DUNDERS:
                return f"blocked: dunder attribute {node.attr!r} at line {line}"
            if node.attr in DENIED_NAMES:  # matplotlib.os, np.ctypeslib
                return f"blocked: attribute {node.attr!r} at line {line} names a module"
            if node.attr in PICKLE_NAMES:  # pd.read_pickle, df.to_pickle
                return f"blocked: attribute {node.attr!r} at line {line} unpickles"
        elif isinstance(node, ast.Name):
            if node.id in BLOCKED_NAMES or (_is_dunder(node.id) and node.id not in ALLOWED_DUNDERS):
                return f"blocked: name {node.id!r} at line {line}"
            if node.id in PICKLE_NAMES:  # from pandas import read_pickle
                return f"blocked: name {node.id!r} at line {line} unpickles"
        elif isinstance(node, ast.keyword) and node.arg in PICKLE_NAMES:
            return f"blocked: keyword {node.arg!r} at line {getattr(node, 'lineno', '?')}"
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] in PICKLE_NAMES:
            return f"blocked: import of {node.name!r} at line {getattr(node, 'lineno', '?')}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            hit = re.search(r"__[A-Za-z0-9_]+__", node.value)
            if hit and hit.group(0) not in ALLOWED_DUNDERS:
                return f"blocked: string naming {hit.group(0)!r} at line {line}"
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", node.value):
                if PICKLE_NAMES.intersection(node.value.split(".")):
                    return f"blocked: string naming {node.value!r} at line {line} unpickles"
    return None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


# --------------------------------------------------------------------------- seccomp

# Syscall numbers per architecture (AUDIT_ARCH value, numbers).
_SYSCALLS = {
    "x86_64": (
        0xC000003E,
        {
            "clone": 56,
            "fork": 57,
            "vfork": 58,
            "execve": 59,
            "execveat": 322,
            "clone3": 435,
            "socket": 41,
            "socketpair": 53,
            "ptrace": 101,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "bpf": 321,
            "process_vm_writev": 311,
            "process_vm_readv": 310,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "memfd_create": 319,
            "memfd_secret": 447,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "clone": 220,
            "execve": 221,
            "execveat": 281,
            "clone3": 435,
            "socket": 198,
            "socketpair": 199,
            "ptrace": 117,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "bpf": 280,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "memfd_create": 279,
            "memfd_secret": 447,
        },
    ),
}
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_EPERM, _EACCES, _ENOSYS = 1, 13, 38
_CLONE_THREAD = 0x00010000
_AF_UNIX = 1


def seccomp_program(machine: str | None = None) -> bytes:
    """A classic-BPF seccomp filter (struct sock_filter[]) for this machine's architecture.

    No new processes (clone without CLONE_THREAD, fork, vfork: EPERM; clone3: ENOSYS so that
    glibc falls back to clone for threads), no execve/execveat, ptrace, unshare, setns, mount,
    bpf, process_vm_*, io_uring (it could open sockets without socket()), keyrings,
    perf_event_open, userfaultfd, memfd_create and memfd_secret (memory outside RLIMIT_AS);
    sockets only AF_UNIX. Other architectures are killed outright.
    """
    machine = machine or platform.machine()
    if machine not in _SYSCALLS:
        raise RuntimeError(f"no seccomp syscall table for architecture {machine!r}")
    arch, nr = _SYSCALLS[machine]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog: list[tuple[int, int, int, int]] = []

    def emit(code, jt=0, jf=0, k=0):
        prog.append((code, jt, jf, k))

    emit(ld, k=4)  # seccomp_data.arch
    emit(jeq, 1, 0, arch)
    emit(ret, k=_RET_KILL_PROCESS)
    emit(ld, k=0)  # seccomp_data.nr
    if machine == "x86_64":  # x32 ABI numbers
        emit(jge, 0, 1, 0x40000000)
        emit(ret, k=_RET_ERRNO | _ENOSYS)
    deny = [
        name
        for name in (
            "fork",
            "vfork",
            "execve",
            "execveat",
            "ptrace",
            "unshare",
            "setns",
            "mount",
            "bpf",
            "process_vm_readv",
            "process_vm_writev",
            "socketpair",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
            "add_key",
            "request_key",
            "keyctl",
            "perf_event_open",
            "userfaultfd",
            "memfd_create",
            "memfd_secret",
        )
        if name in nr
    ]
    for name in deny:
        emit(jeq, 0, 1, nr[name])
        emit(ret, k=_RET_ERRNO | _EPERM)
    emit(jeq, 0, 1, nr["clone3"])
    emit(ret, k=_RET_ERRNO | _ENOSYS)
    # clone: allowed only for threads (flags in args[0], low word at offset 16).
    emit(jeq, 0, 4, nr["clone"])
    emit(ld, k=16)
    emit(jset, 1, 0, _CLONE_THREAD)
    emit(ret, k=_RET_ERRNO | _EPERM)
    emit(ret, k=_RET_ALLOW)
    # socket: AF_UNIX only (domain in args[0]).
    emit(jeq, 0, 4, nr["socket"])
    emit(ld, k=16)
    emit(jeq, 1, 0, _AF_UNIX)
    emit(ret, k=_RET_ERRNO | _EACCES)
    emit(ret, k=_RET_ALLOW)
    emit(ret, k=_RET_ALLOW)
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


# The launcher runs inside the sandbox before the code: where bwrap ran as root, gives the
# working directory to the run's host uid and drops to it (cfg["uid"]); copies the inputs into
# the working directory (this sandbox's own tmpfs) and hands the host a descriptor of it over the socket in
# cfg["chan"] (the host reads the outputs through it, even once the sandbox is gone), closes
# inherited descriptors, sets the rlimits, installs the seccomp filter, makes unpickling refuse
# every global (a pickle naming builtins.exec would run code the AST check never saw), puts the
# bound site-packages on sys.path and runs main.py.
LAUNCHER = r"""
import ctypes, json, os, resource, socket, sys
cfg = json.loads(sys.argv[1])
uid = cfg["uid"]
if uid is not None:  # bwrap ran as root: from here on the run's own unprivileged host uid
    os.chown(cfg["work"], uid, uid)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # clears every capability
    if os.getresuid() != (uid,) * 3 or os.getresgid() != (uid,) * 3 or os.getgroups():
        sys.exit("sandbox launcher: could not drop to uid %d" % uid)
for top, dirs, files in os.walk(cfg["inputs"]):
    dest = os.path.join(cfg["work"], os.path.relpath(top, cfg["inputs"]))
    os.makedirs(dest, exist_ok=True)
    for name in files:
        with open(os.path.join(top, name), "rb") as src, open(os.path.join(dest, name), "wb") as dst:
            dst.write(src.read())
work = os.open(cfg["work"], os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
chan = socket.socket(fileno=cfg["chan"])
socket.send_fds(chan, [b"w"], [work])
chan.close()
os.close(work)
del chan, work, socket
sys.modules.pop("socket", None)
os.closerange(3, 65536)
for name, value in cfg["rlimits"].items():
    resource.setrlimit(getattr(resource, name), (value, value))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    sys.exit("sandbox launcher: PR_SET_NO_NEW_PRIVS failed")
prog = bytes.fromhex(cfg["seccomp"])
if prog:
    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    fprog = SockFprog(len(prog) // 8, prog)
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        sys.exit("sandbox launcher: seccomp filter refused, errno %d" % ctypes.get_errno())
    del fprog, SockFprog
del libc, prog, ctypes
sys.modules.pop("ctypes", None)


def refuse_unpickling_globals():
    import io, pickle, _pickle

    def refuse_global(self, module, name):
        raise pickle.UnpicklingError(
            "sandbox: unpickling refuses every global (%s.%s): pickles may not name callables"
            % (module, name)
        )

    class Unpickler(_pickle.Unpickler):
        find_class = refuse_global

    def load(file, **kwargs):
        return Unpickler(file, **kwargs).load()

    def loads(data, /, **kwargs):
        return Unpickler(io.BytesIO(data), **kwargs).load()

    pickle._Unpickler.find_class = refuse_global  # the pure-Python one (pandas' pickle_compat)
    for module in (pickle, _pickle):
        module.Unpickler, module.load, module.loads = Unpickler, load, loads
    pickle._load, pickle._loads = load, loads


refuse_unpickling_globals()
del refuse_unpickling_globals
sys.path[:] = [cfg["site"]] + [p for p in sys.path if p and not p.startswith(cfg["run"])]
sys.argv = ["main.py"]
import runpy
try:
    runpy.run_path(cfg["main"], run_name="__main__")
except MemoryError:  # the host reads "memory" from this exit status, never from stderr text
    try:
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(@MEMORY_EXIT@)
""".replace("@MEMORY_EXIT@", str(MEMORY_EXIT))


# --------------------------------------------------------------------------- what is bound


@lru_cache(maxsize=1)
def _site_entries() -> tuple[tuple[str, str], ...]:
    """(host path, name) of every top-level site-packages entry the plotting packages need."""
    entries: dict[str, str] = {}
    seen: set[str] = set()
    todo = list(PLOTTING_DISTRIBUTIONS)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for req in dist.requires or []:
            if "extra ==" not in req:
                todo.append(re.split(r"[ ;<>=!\[~(]", req, maxsplit=1)[0])
        for f in dist.files or []:
            top = str(f).split("/")[0]
            if top in ("..", "__pycache__", "") or top.endswith(".pth"):
                continue
            host = Path(dist.locate_file(top))
            if host.exists():
                entries[top] = str(host)
    return tuple(sorted((host, name) for name, host in entries.items()))


@lru_cache(maxsize=1)
def _runtime_binds() -> tuple[tuple[str, str], ...]:
    """(host, sandbox) read-only binds for the interpreter, libpython and the standard library.

    The base interpreter's, not the venv's: the venv's lib/ holds every installed package.
    """
    exe = os.path.realpath(sys.executable)
    stdlib = os.path.dirname(os.path.realpath(os.__file__))  # lib-dynload lies inside it
    binds = [(exe, exe), (stdlib, stdlib)]
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir and os.path.isdir(libdir) and sysconfig.get_config_var("Py_ENABLE_SHARED"):
        for name in sorted(os.listdir(libdir)):
            if name.startswith("libpython") and ".so" in name:
                path = os.path.join(libdir, name)
                binds.append((path, path))
    return tuple(binds)


@lru_cache(maxsize=1)
def _font_dirs() -> tuple[str, ...]:
    """The directories that hold the system's font files (matplotlib's `findSystemFonts`:
    fontconfig's list and the usual font directories), nested ones left out; only paths with a
    part named for fonts (`/usr/share/fonts/...`, `~/.fonts`), so a font lying loose in `/` or
    `/usr/share` never exposes it; none where matplotlib cannot list them (the sandbox then
    draws with matplotlib's own DejaVu only)."""
    try:
        from matplotlib import font_manager

        files = font_manager.findSystemFonts()
    except Exception:  # noqa: BLE001 - no font list is a sandbox with matplotlib's own fonts
        return ()
    dirs = set()
    for f in files:
        for path in (f, os.path.realpath(f)):  # a link's target must be there too
            d = os.path.dirname(path)
            named = any("font" in part.lower() for part in Path(d).parts)
            if named and os.path.isabs(d) and os.path.isdir(d):
                dirs.add(d)
    kept: list[str] = []
    for d in sorted(dirs):
        if not any(d.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(d)
    return tuple(kept)


def _system_libdir() -> str:
    """The shared libraries: Debian's multiarch /usr/lib/<triplet>, not all of /usr/lib."""
    multiarch = sysconfig.get_config_var("MULTIARCH")
    path = f"/usr/lib/{multiarch}" if multiarch else ""
    return path if path and os.path.isdir(path) else "/usr/lib"


def _bwrap_args(bwrap: str, rundir: Path, status_fd: int, privileged: bool) -> list[str]:
    """bwrap's command line. `privileged` (this process is root): no user namespace, whose
    uid would map to host root, but the launcher gets CAP_CHOWN, CAP_SETUID and CAP_SETGID to
    give the working directory to the run's own host uid and drop to it before anything else."""
    if privileged:
        unshare = [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-add",
            "CAP_CHOWN,CAP_SETUID,CAP_SETGID",
        ]
    else:
        unshare = ["--unshare-all", "--unshare-net", "--uid", "65534", "--gid", "65534"]
    args = [
        bwrap,
        *unshare,
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--json-status-fd",
        str(status_fd),
        "--hostname",
        "sandbox",
    ]
    # the directories above each bind, made here world-searchable: bwrap would make those of
    # a path under /root as closed as the host's, and the code's uid could not pass them
    dests = [_system_libdir(), "/usr/lib64", *(d for _, d in _runtime_binds()), *_font_dirs()]
    for parent in _parents([*dests, SITE, RUN, WORK]):
        args += ["--perms", "0755", "--dir", parent]
    args += [
        "--ro-bind",
        _system_libdir(),
        _system_libdir(),
        "--ro-bind-try",
        "/usr/lib64",
        "/usr/lib64",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--dev",
        "/dev",
    ]
    for host, dest in _runtime_binds():
        args += ["--ro-bind", host, dest]
    for font_dir in _font_dirs():
        args += ["--ro-bind", font_dir, font_dir]
    # the base interpreter's own site-packages (tools, not plotting) is hidden under an empty dir
    base_site = os.path.join(_runtime_binds()[1][0], "site-packages")
    if os.path.isdir(base_site):
        args += ["--ro-bind", str(rundir / "empty"), base_site]
    args += ["--dir", SITE]
    for host, name in _site_entries():
        args += ["--ro-bind", host, f"{SITE}/{name}"]
    args += ["--ro-bind", str(rundir), RUN]
    # the working directory is a tmpfs of its own, WORKDIR_BYTES at most: the bound holds for
    # nameless (O_TMPFILE) and unlinked-but-open files too, and nothing reaches the host's disk
    args += ["--perms", "0700", "--size", str(WORKDIR_BYTES), "--tmpfs", WORK]
    # the sandbox's root and /dev are tmpfs bwrap built: read-only too, so the workdir is the
    # one writable place (device nodes such as /dev/null still accept writes)
    args += ["--remount-ro", "/", "--remount-ro", "/dev", "--chdir", WORK]
    env = {
        "PATH": "/nonexistent",
        "HOME": WORK,
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{WORK}/{MPLCONFIG}",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
    }
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def _parents(dests: list[str]) -> list[str]:
    """Every directory above the paths in dests, shallowest first, leaving out those that are
    one of dests or lie inside one (they come from the host with the bind)."""
    inside = [d.rstrip("/") + "/" for d in dests]
    found: set[str] = set()
    for dest in dests:
        parts = Path(dest).parts
        for i in range(2, len(parts)):
            parent = str(Path(*parts[:i]))
            if not any((parent + "/").startswith(d) for d in inside):
                found.add(parent)
    return sorted(found, key=lambda d: (d.count("/"), d))


# --------------------------------------------------------------------------- running


def run_python(
    code: str, inputs: dict[str, bytes] | None = None, timeout_s: float = 30.0
) -> SandboxResult:
    """Run `code` in a bubblewrap sandbox; see the module docstring for the isolation."""
    return _run(code, inputs, timeout_s, check_ast=True)


def _run(
    code: str,
    inputs: dict[str, bytes] | None,
    timeout_s: float,
    *,
    check_ast: bool = True,
    harvest_fonts: bool = False,
    seccomp_filter: bool = True,
) -> SandboxResult:
    """run_python's body. check_ast=False and seccomp_filter=False exist for the tests, which
    show each layer holding on its own; production code calls run_python.

    Never raises: a failure of this side (a bug, the host out of descriptors or disk) is a
    failed result whose error starts "sandbox failure:"; the sandbox is killed and its
    directory removed first."""
    t0 = time.monotonic()
    try:
        return _run_once(code, inputs, timeout_s, check_ast, harvest_fonts, seccomp_filter)
    except Exception as exc:  # noqa: BLE001 - one run's failure is that run's result
        return SandboxResult(
            False,
            error=f"sandbox failure: {type(exc).__name__}: {str(exc)[:300]}",
            seconds=time.monotonic() - t0,
        )


def _run_once(
    code: str,
    inputs: dict[str, bytes] | None,
    timeout_s: float,
    check_ast: bool,
    harvest_fonts: bool,
    seccomp_filter: bool,
) -> SandboxResult:
    t0 = time.monotonic()
    if not _FONT_CACHE and not harvest_fonts:
        _warm_font_cache()
    if check_ast:
        why = check_code(code)
        if why:
            return SandboxResult(False, error=why)
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxResult(
            False, error=f"blocked: bubblewrap (bwrap) not found on PATH; {BWRAP_FIX}"
        )
    try:
        seccomp = seccomp_program()
    except RuntimeError as e:
        return SandboxResult(False, error=f"blocked: {e}; code is never run unsandboxed")
    inputs = dict(inputs or {})
    for name in inputs:
        if not _safe_name(name):
            return SandboxResult(
                False,
                error=f"blocked: input name {name!r} must be a relative path without '..'",
            )
    with _host_uid(os.geteuid() == 0) as uid:
        tmp = tempfile.mkdtemp(prefix="refinery-sandbox-")
        try:
            return _run_in(
                tmp, t0, bwrap, uid, seccomp, code, inputs, timeout_s, harvest_fonts, seccomp_filter
            )
        finally:
            _remove_tree(tmp)  # the code may leave a tree deeper than shutil.rmtree can recurse


# Host uids the code runs as when this process is root, one per run at a time: RLIMIT_NPROC
# binds no process whose user is root on the host (whatever uid it has inside a user namespace),
# and a uid of its own keeps one run's threads from counting against another's.
HOST_UID_BASE = 0x74000000  # above the ranges systemd and subordinate-uid allocation hand out
HOST_UID_COUNT = 65536
_UIDS_IN_USE: set[int] = set()
_UID_LOCK = threading.Lock()


@contextmanager
def _host_uid(needed: bool) -> Iterator[int | None]:
    """A host uid from HOST_UID_BASE.. that no other run of this process holds (None where not
    needed)."""
    if not needed:
        yield None
        return
    with _UID_LOCK:
        while True:
            uid = HOST_UID_BASE + secrets.randbelow(HOST_UID_COUNT)
            if uid not in _UIDS_IN_USE:
                _UIDS_IN_USE.add(uid)
                break
    try:
        yield uid
    finally:
        with _UID_LOCK:
            _UIDS_IN_USE.discard(uid)


def _share_with(path: Path, gid: int) -> None:
    """Make the files under path readable by group gid (the code's host uid) and no one else."""
    os.chown(path, 0, gid)
    os.chmod(path, 0o750)
    for top, dirs, files in os.walk(path):
        for name in dirs:
            os.chown(os.path.join(top, name), 0, gid)
            os.chmod(os.path.join(top, name), 0o750)
        for name in files:
            os.chown(os.path.join(top, name), 0, gid)
            os.chmod(os.path.join(top, name), 0o640)


def _run_in(
    tmp: str,
    t0: float,
    bwrap: str,
    uid: int | None,
    seccomp: bytes,
    code: str,
    inputs: dict[str, bytes],
    timeout_s: float,
    harvest_fonts: bool,
    seccomp_filter: bool,
) -> SandboxResult:
    tmp_path = Path(tmp)
    rundir = tmp_path / "run"
    indir = rundir / "in"  # copied into the working directory by the launcher
    rundir.mkdir()
    (rundir / "empty").mkdir()
    (indir / MPLCONFIG).mkdir(parents=True)
    for name, data in _FONT_CACHE.items():
        (indir / MPLCONFIG / name).write_bytes(data)
    if _FONT_FALLBACK:
        (indir / MPLCONFIG / "matplotlibrc").write_text(_matplotlibrc(_FONT_FALLBACK))
    for name, data in inputs.items():
        target = indir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (rundir / "launch.py").write_text(LAUNCHER)
    (rundir / "main.py").write_text(code)
    if uid is not None:  # main.py and the inputs are read after the launcher drops to uid
        _share_with(rundir, uid)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    cfg = {
        "rlimits": {
            "RLIMIT_CPU": CPU_SECONDS,
            "RLIMIT_AS": MEMORY_BYTES,
            "RLIMIT_FSIZE": FILE_BYTES,
            "RLIMIT_NPROC": NPROC,
            "RLIMIT_NOFILE": NOFILE,
            "RLIMIT_CORE": 0,
        },
        "seccomp": seccomp.hex() if seccomp_filter else "",
        "site": SITE,
        "run": RUN,
        "main": f"{RUN}/main.py",
        "inputs": f"{RUN}/in",
        "work": WORK,
        "chan": theirs.fileno(),
        "uid": uid,
    }
    status_r, status_w = os.pipe()
    cmd = _bwrap_args(bwrap, rundir, status_w, privileged=uid is not None)
    cmd += [
        os.path.realpath(sys.executable),
        "-I",
        "-S",
        "-B",
        f"{RUN}/launch.py",
        json.dumps(cfg),
    ]
    workdir: list[int] = []  # the descriptor of the sandbox's working directory, once sent
    with (
        ours,
        theirs,
        open(tmp_path / "stdout", "w+b") as out,
        open(tmp_path / "stderr", "w+b") as err,
    ):
        try:
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env={"PATH": "/usr/bin:/bin"},
                    pass_fds=(status_w, theirs.fileno()),
                    start_new_session=True,
                    cwd=tmp,
                )
            except OSError as e:
                os.close(status_r)
                return SandboxResult(
                    False,
                    error=f"blocked: bubblewrap ({bwrap}) could not start: {e}; {BWRAP_FIX}",
                )
            finally:
                os.close(status_w)
                theirs.close()
            try:
                killed_for = _watch(proc, ours, workdir, timeout_s)
            finally:  # whatever happened here, nothing of the sandbox outlives this call
                if proc.poll() is None:
                    _kill_group(proc)
                status = _read_status(status_r)
                _reap_namespace(status.get("pid-namespace"))
            if not workdir:  # sent just before the launcher exited: still in the socket
                _receive_workdir(ours, workdir)
            return _result(
                t0, bwrap, proc, status, killed_for, workdir, inputs, harvest_fonts, out, err
            )
        finally:
            for fd in workdir:
                os.close(fd)


def _result(
    t0: float,
    bwrap: str,
    proc: subprocess.Popen,
    status: dict[str, int],
    killed_for: str | None,
    workdir: list[int],
    inputs: dict[str, bytes],
    harvest_fonts: bool,
    out,
    err,
) -> SandboxResult:
    out.seek(0)
    stdout = out.read(STDOUT_CHARS).decode("utf-8", "replace")
    err.seek(0)
    stderr = err.read(STDOUT_CHARS).decode("utf-8", "replace")
    seconds = time.monotonic() - t0
    if "child-pid" not in status:
        msg = stderr.strip().splitlines()[-1] if stderr.strip() else "no output"
        return SandboxResult(
            False,
            error=f"blocked: bubblewrap ({bwrap}) could not start the sandbox: {msg}; {BWRAP_FIX}",
            stderr=stderr,
            seconds=seconds,
        )
    error = killed_for
    if error is None and workdir:  # what the code left at the end, however fast it wrote it
        error = _over_caps(workdir[0])
    error = error or _exit_reason(proc.returncode, status.get("exit-code"), stderr)
    outputs, too_big = _collect(workdir[0], inputs) if workdir else ({}, None)
    if error is None and not workdir:
        error = "sandbox failure: the launcher never sent the working directory"
    if harvest_fonts and error is None:
        _FONT_CACHE.update(_font_lists(workdir[0]))
    if error is None and too_big:
        error = too_big
    return SandboxResult(
        error is None,
        outputs=outputs,
        error=error,
        stdout=stdout,
        stderr=stderr,
        seconds=seconds,
    )


def _receive_workdir(chan: socket.socket, workdir: list[int]) -> None:
    """Take the launcher's descriptor of the working directory from chan if it is there."""
    chan.setblocking(False)
    try:
        _, fds, _, _ = socket.recv_fds(chan, 16, 4)
    except (BlockingIOError, InterruptedError):
        return
    for fd in fds:
        if not workdir and stat.S_ISDIR(os.fstat(fd).st_mode):
            workdir.append(fd)
        else:
            os.close(fd)


def _open_regular(dir_fd: int, name: str):
    """`name` in `dir_fd` opened for reading without following a link or blocking on a FIFO,
    or None when it cannot be opened or is no regular file once open."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        return None
    return f


def _font_lists(workdir: int) -> dict[str, bytes]:
    """The fontlist-*.json files matplotlib left in MPLCONFIG (regular files only)."""
    found: dict[str, bytes] = {}
    try:
        conf = os.open(MPLCONFIG, _DIR_FLAGS, dir_fd=workdir)
    except OSError:
        return found
    try:
        for name in _listdir(conf, WORKDIR_FILES):
            if not (name.startswith("fontlist-") and name.endswith(".json")):
                continue
            f = _open_regular(conf, name)
            if f is not None:
                with f:
                    found[name] = f.read(OUTPUT_BYTES)
    finally:
        os.close(conf)
    return found


# matplotlib's font list, built once per process by our own code in the sandbox (matplotlib
# would otherwise rebuild it, seconds, in every fresh MPLCONFIGDIR) and planted in each run's
# MPLCONFIGDIR. Only ever harvested from _warm_font_cache's run, never from model-written code.
_FONT_CACHE: dict[str, bytes] = {}
# The families after DejaVu Sans in each run's font.family (font_fallback), found by the same run.
_FONT_FALLBACK: list[str] = []
_WARM_LOCK = threading.Lock()
# Run in the sandbox: the system's font families, most code points first, that draw 16 or more
# characters no family before them draws (DejaVu Sans first; a family that adds a few symbols
# is not worth loading in every run), as a JSON list on the last line of stdout.
# matplotlib's own fonts are left out: its Last Resort font maps every code point to a box
# (matplotlib adds it last anyway, and warns when it is used), its math fonts map symbols onto
# letters.
FALLBACK_PROBE = """
import json
import matplotlib
import matplotlib.font_manager as fm
from matplotlib.ft2font import FT2Font


def coverage(path):
    try:
        return set(FT2Font(path).get_charmap())
    except Exception:  # a font FreeType cannot read draws nothing
        return set()


own = matplotlib.get_data_path()
files = {}
for entry in sorted(fm.fontManager.ttflist, key=lambda e: (e.style != "normal", e.fname)):
    if not entry.fname.startswith(own):
        files.setdefault(entry.name, entry.fname)
covered = coverage(fm.findfont("DejaVu Sans"))
sizes = {name: coverage(path) for name, path in files.items() if name != "DejaVu Sans"}
families = []
for name in sorted(sizes, key=lambda n: (-len(sizes[n]), n)):
    new = sizes[name] - covered
    if len(new) >= 16 and "," not in name and "#" not in name and len(families) < @MAX@:
        families.append(name)
        covered |= new
print(json.dumps(families))
""".replace("@MAX@", str(FONT_FALLBACK_MAX))


def _warm_font_cache() -> None:
    with _WARM_LOCK:
        if _FONT_CACHE:  # another thread warmed it meanwhile
            return
        r = _run(FALLBACK_PROBE, None, 120.0, check_ast=True, harvest_fonts=True)
        try:
            families = json.loads(r.stdout.strip().splitlines()[-1]) if r.ok else []
        except (ValueError, IndexError):
            families = []
        _FONT_FALLBACK[:] = [f for f in families if isinstance(f, str)]


def font_fallback() -> list[str]:
    """The installed font families each run draws with after DejaVu Sans, in order (a
    character goes to the first family that has it); [] where only matplotlib's own fonts are
    there. Found once per process, inside the sandbox."""
    if not _FONT_CACHE:
        _warm_font_cache()
    return list(_FONT_FALLBACK)


def _matplotlibrc(fallback: list[str]) -> str:
    """A matplotlibrc whose font.family draws every character some installed family has."""
    return "font.family: " + ", ".join(["sans-serif", *fallback]) + "\n"


def _safe_name(name: str) -> bool:
    parts = name.split("/")
    return (
        bool(name)
        and "\0" not in name
        and not name.startswith("/")
        and all(p not in ("", ".", "..") for p in parts)
        and parts[0] != MPLCONFIG
    )


def _watch(
    proc: subprocess.Popen, chan: socket.socket, workdir: list[int], timeout_s: float
) -> str | None:
    """Wait for proc; kill its process group on the wall clock or a working directory over its
    caps. The working directory's descriptor arrives on chan (into `workdir`) once the launcher
    has copied the inputs; it is measured from then on."""
    deadline = time.monotonic() + timeout_s
    reason = None
    while True:
        try:
            proc.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        if not workdir:
            _receive_workdir(chan, workdir)
        if time.monotonic() >= deadline:
            reason = "timeout"
        elif workdir:
            reason = _over_caps(workdir[0])
        if reason:
            _kill_group(proc)
            break
    return reason


def _over_caps(workdir: int) -> str | None:
    """Why the working directory is over its caps ("blocked: ..."), or None. The tmpfs holds
    the bytes to WORKDIR_BYTES (nameless and unlinked files included); a full one is over."""
    vfs = os.fstatvfs(workdir)
    if (vfs.f_blocks - vfs.f_bavail) * vfs.f_frsize >= WORKDIR_BYTES:
        return f"blocked: working directory over {WORKDIR_BYTES} bytes"
    size, count, reason = _measure(workdir)
    if size > WORKDIR_BYTES:
        reason = f"blocked: working directory over {WORKDIR_BYTES} bytes"
    return reason


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _measure(workdir: int) -> tuple[int, int, str | None]:
    """(bytes, entries, why the walk stopped or None) of the working directory, as it is now."""
    size = count = 0

    def visit(dir_fd: int, rel: str, name: str, st: os.stat_result) -> None:
        nonlocal size, count
        count += 1
        size += max(st.st_size if stat.S_ISREG(st.st_mode) else 0, st.st_blocks * 512)

    why = _walk(workdir, visit)
    return size, count, why


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _listdir(fd: int, limit: int) -> list[str]:
    with os.scandir(fd) as it:  # scandir works on its own duplicate of fd
        names = []
        for entry in it:
            names.append(entry.name)
            if len(names) > limit:
                break
    return sorted(names)


def _walk(
    workdir: int, visit: Callable[[int, str, str, os.stat_result], None], skip_top: str = ""
) -> str | None:
    """Call visit(dir_fd, relative path, name, lstat) for each entry under the directory whose
    descriptor is workdir, depth first.

    No recursion and no path longer than one name (each directory is opened relative to its
    parent's descriptor, never following links), so a tree the code made as deep or as long as
    it likes cannot exhaust the stack or PATH_MAX. Stops at WORKDIR_FILES entries or
    WORKDIR_DEPTH levels and returns why ("blocked: ..."), else None. `skip_top` names one
    top-level entry that is not walked.
    """
    total = 0
    root = os.open(".", _DIR_FLAGS, dir_fd=workdir)  # its own offset: walks never share one
    stack: list[tuple[int, str, Iterator[str]]] = []
    try:
        stack.append((root, "", iter(_listdir(root, WORKDIR_FILES))))
        while stack:
            fd, rel, names = stack[-1]
            name = next(names, None)
            if name is None:
                os.close(fd)
                stack.pop()
                continue
            if not rel and name == skip_top:
                continue
            total += 1
            if total > WORKDIR_FILES:
                return f"blocked: working directory over {WORKDIR_FILES} entries"
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            path = f"{rel}/{name}" if rel else name
            visit(fd, path, name, st)
            if not stat.S_ISDIR(st.st_mode):
                continue
            if len(stack) >= WORKDIR_DEPTH:
                return f"blocked: working directory deeper than {WORKDIR_DEPTH} levels"
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue
            try:
                listing = _listdir(child, WORKDIR_FILES)
            except OSError:
                os.close(child)
                continue
            stack.append((child, path, iter(listing)))
        return None
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _remove_tree(path: str) -> None:
    """Remove a directory tree of any depth: no recursion, one descriptor at a time.

    The sandbox is gone by now, so nothing changes the tree underneath: it goes down one
    directory at a time (relative to the descriptor held) and back up through "..", so neither
    the stack, the descriptor limit nor PATH_MAX bounds the depth (shutil.rmtree recurses in
    Python 3.11). Directories the code made unreadable are made readable first. Best effort:
    an entry that cannot be removed is left, and never raises.
    """
    try:
        os.chmod(path, 0o700)
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return
    names: list[str] = []  # the directories entered below path, outermost first
    stuck: set[tuple[int, int]] = set()  # directories that could not be entered nor removed
    try:
        while True:
            sub = None
            try:
                with os.scandir(fd) as it:
                    entries = list(it)
            except OSError:
                entries = []
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        if (st.st_dev, st.st_ino) not in stuck:
                            sub = entry.name
                            break
                        continue
                    os.unlink(entry.name, dir_fd=fd)
                except OSError:
                    continue
            if sub is not None:
                try:
                    os.chmod(sub, 0o700, dir_fd=fd)
                    child = os.open(sub, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    try:
                        os.rmdir(sub, dir_fd=fd)
                    except OSError:
                        st = os.stat(sub, dir_fd=fd, follow_symlinks=False)
                        stuck.add((st.st_dev, st.st_ino))
                    continue
                st = os.fstat(child)
                stuck.add((st.st_dev, st.st_ino))  # entered once: never again (no cycles)
                os.close(fd)
                fd = child
                names.append(sub)
                continue
            if not names:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(names.pop(), dir_fd=fd)
            except OSError:
                pass
    except OSError:
        pass
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def _read_status(fd: int) -> dict[str, int]:
    """bwrap's --json-status-fd records (child-pid, pid-namespace, exit-code), without blocking."""
    os.set_blocking(fd, False)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    status: dict[str, int] = {}
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            status.update({k: v for k, v in doc.items() if isinstance(v, int)})
    return status


def _reap_namespace(pid_ns: int | None, wait_s: float = 2.0) -> int:
    """SIGKILL whatever still runs in the sandbox's PID namespace and wait until it cannot.

    bwrap's monitor can exit while the namespace's init is still dying, and a killed group
    leaves the namespace to PR_SET_PDEATHSIG; this makes "gone after return" hold. Processes are
    matched by their PID-namespace inode, so nothing outside the sandbox is ever signalled.
    A task past exit_mm (no VmSize; the kernel may take a second or two to tear down the
    namespaces) runs no code and is not waited for.
    Returns how many were still there at the end (0 in practice).
    """
    if not pid_ns:
        return 0
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.stat(f"/proc/{entry}/ns/pid").st_ino != pid_ns:
                        continue
                    with open(f"/proc/{entry}/status", "rb") as f:
                        alive = b"\nVmSize:" in f.read()
                except OSError:
                    continue
                if alive:  # an exiting task has released its memory and runs no more code
                    left.append(int(entry))
        if not left or time.monotonic() >= deadline:
            return len(left)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.005)


_SIGNAL_ERRORS = {
    signal.SIGKILL: "killed",
    signal.SIGXCPU: "timeout",
    signal.SIGXFSZ: "blocked: file size limit",
    signal.SIGSEGV: "killed",
    signal.SIGSYS: "blocked: forbidden system call",
}


def _exit_reason(returncode: int | None, code: int | None, stderr: str = "") -> str | None:
    """The error for an exit status: "memory" only from the launcher's MEMORY_EXIT (a
    MemoryError ended the code), never from stderr, which the code writes as it likes."""
    code = returncode if code is None else code
    if code == 0:
        return None
    if code == MEMORY_EXIT:
        return "memory"
    if code is not None and code < 0:
        code = 128 - code
    if code is not None and code > 128 and code - 128 in _SIGNAL_ERRORS:
        return _SIGNAL_ERRORS[signal.Signals(code - 128)]
    if code is not None and code > 128:
        return "killed"
    return f"exit code {code}"


def _collect(workdir: int, inputs: dict[str, bytes]) -> tuple[dict[str, bytes], str | None]:
    """Regular files the code left in workdir (never following links), within OUTPUT_BYTES."""
    outputs: dict[str, bytes] = {}
    total = 0
    too_big = None

    def visit(dir_fd: int, rel: str, name: str, st: os.stat_result) -> None:
        nonlocal total, too_big
        if not stat.S_ISREG(st.st_mode):
            return
        f = _open_regular(dir_fd, name)
        if f is None:
            return
        with f:
            fst = os.fstat(f.fileno())
            if total + fst.st_size > OUTPUT_BYTES:
                too_big = f"blocked: outputs over {OUTPUT_BYTES} bytes"
                return
            data = f.read(OUTPUT_BYTES - total + 1)
        if inputs.get(rel) == data:
            return
        total += len(data)
        outputs[rel] = data

    why = _walk(workdir, visit, skip_top=MPLCONFIG)
    return outputs, too_big or why
