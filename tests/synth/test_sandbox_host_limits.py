"""synth.sandbox: the code cannot take host resources past its limits (reviewer's reproductions,
/tmp/s34/sandbox: t_resources.py, t_tmpfile.py, t_bypass.py).

- threads: RLIMIT_NPROC binds when this process is root (the code runs as a host uid of its
  own, not as root mapped into a user namespace), and runs at once do not share the count;
- memfd_create is refused (its pages lie outside RLIMIT_AS);
- nameless (O_TMPFILE) and unlinked-but-open files count against the working directory's cap
  (a tmpfs of WORKDIR_BYTES), so they cannot fill the host's disk;
- a pickle naming builtins.exec runs nothing: the AST check refuses the unpickling calls, and
  inside the sandbox every unpickler refuses globals even with the check off.
"""

from __future__ import annotations

import json
import os
import shutil
import threading

import pytest

from synth import sandbox
from synth.sandbox import check_code, run_python

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap",
)


def escape(code: str, timeout_s: float = 30.0, inputs=None):
    """Run with the AST check off: the sandbox alone must stop it."""
    return sandbox._run(code, inputs, timeout_s, check_ast=False)


THREADS = """
import threading
threading.stack_size(65536)
release = threading.Event()
started = 0
try:
    for _ in range({n}):
        threading.Thread(target=release.wait).start()
        started += 1
except RuntimeError:
    pass
import time
t0 = time.time()
time.sleep({hold})
print("started", started, t0, time.time(), flush=True)
release.set()
"""


@needs_bwrap
def test_threads_stop_at_rlimit_nproc():
    """2000 threads started as root before (RLIMIT_NPROC does not bind host root)."""
    r = escape(THREADS.format(n=300, hold=0))
    assert r.ok, (r.error, r.stderr)
    started = int(r.stdout.split()[1])
    assert 0 < started < sandbox.NPROC, r.stdout


@needs_bwrap
def test_the_code_never_runs_as_host_root():
    code = "import json, os\nprint(json.dumps([os.getresuid(), os.getresgid(), os.getgroups()]))"
    r = escape(code)
    assert r.ok, (r.error, r.stderr)
    uids, gids, groups = json.loads(r.stdout)
    if os.geteuid() == 0:
        assert set(uids) == set(gids) and len(set(uids)) == 1 and groups == []
        assert sandbox.HOST_UID_BASE <= uids[0] < sandbox.HOST_UID_BASE + sandbox.HOST_UID_COUNT
    else:
        assert uids == [65534, 65534, 65534]


@needs_bwrap
def test_runs_at_once_do_not_share_the_thread_count():
    """make_charts runs 4 sandboxes at once: each gets its own NPROC (its own host uid)."""
    runs, per_run = 4, sandbox.NPROC - 16
    results: list = [None] * runs

    def one(i: int) -> None:
        results[i] = escape(THREADS.format(n=per_run, hold=3))

    workers = [threading.Thread(target=one, args=(i,)) for i in range(runs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    spans = []
    for r in results:
        assert r.ok, (r.error, r.stderr)
        _, started, t0, t1 = r.stdout.split()
        assert int(started) == per_run, r.stdout
        spans.append((float(t0), float(t1)))
    # the runs held their threads at the same time (else the check above proves nothing)
    assert max(t0 for t0, _ in spans) < min(t1 for _, t1 in spans), spans


@needs_bwrap
def test_memfd_create_is_refused():
    code = (
        "import os\n"
        "try:\n"
        "    fd = os.memfd_create('x')\n"
        "    os.write(fd, b'1' * (1 << 20))\n"
        "    print('ESCAPED memfd', os.fstat(fd).st_size)\n"
        "except OSError as e:\n"
        "    print('refused', e.errno)\n"
    )
    r = escape(code)
    assert r.ok, (r.error, r.stderr)
    assert r.stdout == "refused 1\n", r.stdout  # EPERM from the seccomp filter


def test_the_filter_names_memfd_create_on_every_architecture():
    for machine, (_, numbers) in sandbox._SYSCALLS.items():
        program = sandbox.seccomp_program(machine)
        assert {"memfd_create": {"x86_64": 319, "aarch64": 279}[machine]}.items() <= (
            numbers.items()
        )
        # a JEQ on that number followed by RET ERRNO|EPERM
        jeq = bytes([0x15, 0x00, 0x00, 0x01]) + numbers["memfd_create"].to_bytes(4, "little")
        deny = bytes([0x06, 0x00, 0x00, 0x00]) + (0x00050001).to_bytes(4, "little")
        assert jeq + deny in program, machine


HIDDEN_FILES = """
import os
written = 0
fds = []
try:
    for i in range(16):
        if {nameless}:
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
        else:
            fd = os.open("f%d" % i, os.O_CREAT | os.O_WRONLY, 0o600)
            os.unlink("f%d" % i)
        fds.append(fd)
        for _ in range(16):
            written += os.write(fd, b"1" * (1 << 20))
except OSError as e:
    print("stopped", e.errno)
print("written", written, flush=True)
"""


@needs_bwrap
@pytest.mark.parametrize("nameless", [True, False], ids=["o_tmpfile", "unlinked"])
def test_nameless_and_unlinked_files_count_against_the_working_directory(nameless):
    """256 MiB went to the host's /tmp unseen by the 64 MiB watch before."""
    r = escape(HIDDEN_FILES.format(nameless=nameless))
    lines = r.stdout.splitlines()
    assert lines and lines[-1].startswith("written"), (r.stdout, r.stderr)
    written = int(lines[-1].split()[1])
    assert written <= sandbox.WORKDIR_BYTES, r.stdout
    assert "stopped 28" in r.stdout  # ENOSPC: the tmpfs is full
    # the watch may catch the full tmpfs before the code exits (and its files go with it)
    assert r.ok or r.error == f"blocked: working directory over {sandbox.WORKDIR_BYTES} bytes"


EXEC_PICKLE = (
    b"cbuiltins\nexec\n(Vprint('ESCAPED', __import__('os').getuid())\ntR."  # builtins.exec(src)
)


def _pickle_attack(load: str) -> str:
    return (
        "import numpy as np\n"
        "import pandas as pd\n"
        f"open('p.pkl', 'wb').write({EXEC_PICKLE!r})\n"
        "try:\n"
        f"    {load}\n"
        "except Exception as e:\n"
        "    print('refused', type(e).__name__, str(e)[:200])\n"
    )


@needs_bwrap
@pytest.mark.parametrize(
    "load",
    [
        "pd.read_pickle('p.pkl')",
        "np.load('p.pkl', allow_pickle=True)",
        "import pickle; pickle.loads(open('p.pkl', 'rb').read())",
        "import pickle; pickle.load(open('p.pkl', 'rb'))",
        "import pickle; pickle.Unpickler(open('p.pkl', 'rb')).load()",
        "import pickle; pickle._loads(open('p.pkl', 'rb').read())",
        "import _pickle; _pickle.loads(open('p.pkl', 'rb').read())",
        "from pandas.compat import pickle_compat; pickle_compat.load(open('p.pkl', 'rb'))",
    ],
)
def test_a_pickle_naming_exec_runs_nothing_even_with_the_check_off(load):
    r = escape(_pickle_attack(load))
    assert "ESCAPED" not in r.stdout, (r.stdout, r.stderr)
    assert "refused" in r.stdout, (r.stdout, r.stderr)


@needs_bwrap
def test_pickles_of_plain_data_still_load():
    code = "import pickle\nprint(pickle.loads(pickle.dumps({'a': [1, 2.5, 'x', (None, True)]})))\n"
    r = escape(code)
    assert r.ok, (r.error, r.stderr)
    assert r.stdout == "{'a': [1, 2.5, 'x', (None, True)]}\n"


@needs_bwrap
def test_reviewers_pickle_bypass_is_refused_by_the_check():
    """t_bypass.py: `import os` ran through pd.read_pickle with the AST check on."""
    r = run_python(_pickle_attack("pd.read_pickle('p.pkl')"))
    assert not r.ok and r.error.startswith("blocked: attribute 'read_pickle'"), r.error
    assert "ESCAPED" not in r.stdout


@pytest.mark.parametrize(
    "code, why",
    [
        ("import pandas as pd\npd.read_pickle('p.pkl')", "attribute 'read_pickle'"),
        ("import pandas as pd\npd.DataFrame().to_pickle('p.pkl')", "attribute 'to_pickle'"),
        ("from pandas import read_pickle", "import of 'read_pickle'"),
        ("import numpy as np\nnp.load('a.npy', allow_pickle=True)", "keyword 'allow_pickle'"),
        ("import numpy as np\nnp.load('a', **{'allow_pickle': True})", "'allow_pickle'"),
        ("import operator\nimport pandas as pd\noperator.attrgetter('read_pickle')(pd)", "read_"),
        ("import operator\nimport pandas as pd\noperator.attrgetter('io.pickle')(pd)", "io.pic"),
        ("from pandas.compat import pickle_compat", "import of 'pickle_compat'"),
    ],
)
def test_ast_check_refuses_unpickling(code, why):
    refused = check_code(code)
    assert refused and refused.startswith("blocked") and why in refused, refused


def test_ast_check_still_allows_json_loads_and_pickle_in_titles():
    code = (
        "import json\n"
        "import matplotlib.pyplot as plt\n"
        "data = json.loads(open('data.json').read())\n"
        "plt.title('Pickle sales by region (pickle jars)')\n"
    )
    assert check_code(code) is None


@needs_bwrap
def test_plotting_still_works_under_the_new_limits():
    """numpy and matplotlib (fonts held open, single-threaded BLAS) under NPROC and NOFILE."""
    code = (
        "import json\n"
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n"
        "d = json.load(open('data.json'))\n"
        "a = np.random.default_rng(0).normal(size=(300, 300))\n"
        "fig, axs = plt.subplots(1, 2, figsize=(5, 3))\n"
        "axs[0].imshow(a @ a.T)\n"
        "axs[1].bar(d['label'], d['value'])\n"
        "axs[1].set_title('Ünïcödé 中文 العربية $\\\\alpha^2$')\n"
        "fig.savefig('chart.png', dpi=80)\n"
        "fig.savefig('chart.svg')\n"
        "print('ok')\n"
    )
    data = json.dumps({"label": ["a", "b"], "value": [1, 2]}).encode()
    r = run_python(code, inputs={"data.json": data})
    assert r.ok, (r.error, r.stderr)
    assert r.outputs["chart.png"].startswith(b"\x89PNG") and "chart.svg" in r.outputs
