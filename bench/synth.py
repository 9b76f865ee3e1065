"""Synthetic charts: charts/s end to end and the sandbox's start-up cost, next to CoSyn's method
(model-written plotting code run with `exec()` in the generator's own process, only an alarm as a
limit), on the same code, in the same run.

    .venv/bin/python bench/synth.py [--quick] [--sizes 10,100] [--repeat 7] [--seed 0]

1. End to end, at each size N (default 10 and 100; --quick 4 and 40), each variant in its own
   fresh process (`synth.charts.make_charts`, programmatic, seeded; chart types round-robin):
   - sandbox: the stage as shipped, every chart's code through `synth.sandbox.run_python`
     (bubblewrap), `workers` = make_charts' default (min(4, CPUs));
   - sandbox-1: the same with one worker;
   - exec-1: the same `make_charts` with `run=` an in-process `exec()` loop written here after
     CoSyn's method (a temporary working directory with data.json, `signal.alarm`, stdout
     captured, `plt.close("all")`); one worker, since chdir and alarms are process-wide. This is
     CoSyn's method, not CoSyn's code.
   charts/s is charts over make_charts' own seconds; the interpreter start, imports and one
   warm-up run (the sandbox's matplotlib font cache; matplotlib's import for exec) are excluded
   and printed apart. Memory: the driver's peak RSS (VmHWM, as in bench/dedup_scale.py) and the
   peak PSS of the whole process tree (bwrap and the sandboxed interpreters included), sampled
   every 0.2 s. Growth N -> 10N: time ratio and both memory ratios.
2. Start-up cost, in one fresh process: `run_python` of a trivial script vs the exec loop on the
   same script, and the same for one chart's plotting code (a bar chart from the templates),
   alternating, --repeat rounds after a warm-up, medians and the ratio. The exec loop's first
   chart (matplotlib imported inside it) is printed apart as its cold cost.
3. QA: verified-QA share and per-status counts from the sandbox runs.

Results: bench/results/synth.json (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _peers import TreePeak

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PY = ROOT / ".venv" / "bin" / "python"

# CoSyn's method (in-process exec with an alarm), written here; shared by both child programs.
COSYN_EXEC = textwrap.dedent(
    """
    import contextlib, io, math, os, signal, sys, tempfile, time
    from pathlib import Path
    from synth.sandbox import SandboxResult

    class _Alarm(Exception):
        pass

    def _on_alarm(signum, frame):
        raise _Alarm()

    def cosyn_exec(code, inputs=None, timeout_s=30.0):
        t0 = time.monotonic()
        inputs = dict(inputs or {})
        old = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="bench-cosyn-") as d:
            for name, data in inputs.items():
                Path(d, name).write_bytes(data)
            os.chdir(d)
            prev = signal.signal(signal.SIGALRM, _on_alarm)
            signal.alarm(max(1, math.ceil(timeout_s)))
            buf, error = io.StringIO(), None
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(code, "<model code>", "exec"), {"__name__": "__main__"})
            except _Alarm:
                error = "timeout"
            except (Exception, SystemExit) as e:
                error = f"exit code 1: {type(e).__name__}: {e}"
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, prev)
                os.chdir(old)
                if "matplotlib.pyplot" in sys.modules:
                    sys.modules["matplotlib.pyplot"].close("all")
            outputs = {
                p.name: p.read_bytes()
                for p in Path(d).iterdir()
                if p.is_file() and p.name not in inputs
            }
        return SandboxResult(
            error is None, outputs=outputs, error=error, stdout=buf.getvalue(),
            seconds=time.monotonic() - t0,
        )
    """
)

CHARTS = (
    textwrap.dedent(
        """
    import json, sys, time
    t_start = time.perf_counter()
    args = json.loads(sys.argv[1])
    from synth.charts import make_charts
    from synth.sandbox import run_python
    """
    )
    + COSYN_EXEC
    + textwrap.dedent(
        """
    def vmhwm_mib():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("/proc/self/status has no VmHWM line; Linux /proc is needed")

    t_import = time.perf_counter()
    run = run_python if args["method"] == "sandbox" else cosyn_exec
    warm = run("import matplotlib.pyplot", None, timeout_s=120.0)  # font cache / import
    if not warm.ok:
        raise SystemExit(f"warm-up run failed ({args['method']}): {warm.error} {warm.stderr}")
    t_warm = time.perf_counter()
    summary = make_charts(args["out"], n=args["n"], seed=args["seed"], run=run,
                          workers=args["workers"])
    json.dump({"summary": summary, "import_s": t_import - t_start, "warm_s": t_warm - t_import,
               "vmhwm_mib": vmhwm_mib()}, open(args["result"], "w"))
    """
    )
)

STARTUP = (
    textwrap.dedent(
        """
    import json, random, statistics, sys, time
    args = json.loads(sys.argv[1])
    from synth.charts import make_data, template_code
    from synth.sandbox import run_python
    """
    )
    + COSYN_EXEC
    + textwrap.dedent(
        """
    def must(r, what):
        if not r.ok or (what.startswith("chart") and "chart.png" not in r.outputs):
            raise SystemExit(f"{what} failed: {r.error} {getattr(r, 'stderr', '')[-500:]}")

    trivial = "x = sum(range(1000))\\nprint(x)\\n"
    rng = random.Random(f"bench-synth:{args['seed']}")
    _topic, data = make_data("bar", rng)
    chart = template_code("bar", rng)
    inputs = {"data.json": json.dumps(data, sort_keys=True).encode()}
    must(run_python("pass"), "sandbox warm-up")  # builds the font cache once per process
    t = time.perf_counter()
    r = cosyn_exec(chart, inputs)
    exec_cold = time.perf_counter() - t  # matplotlib imported here, once per process
    must(r, "chart exec (cold)")
    cases = {
        "sandbox_trivial": lambda: run_python(trivial),
        "exec_trivial": lambda: cosyn_exec(trivial),
        "sandbox_chart": lambda: run_python(chart, inputs),
        "exec_chart": lambda: cosyn_exec(chart, inputs),
    }
    times = {k: [] for k in cases}
    for rep in range(args["repeat"]):
        for name in (list(cases) if rep % 2 == 0 else list(reversed(cases))):
            t = time.perf_counter()
            r = cases[name]()
            times[name].append(time.perf_counter() - t)
            must(r, name)
    out = {k: statistics.median(v) for k, v in times.items()}
    out.update(all=times, exec_chart_cold_s=exec_cold, repeat=args["repeat"])
    json.dump(out, open(args["result"], "w"))
    """
    )
)

VARIANTS = (("sandbox", None), ("sandbox", 1), ("exec", 1))


def variant_name(method: str, workers: int | None) -> str:
    return method if workers is None else f"{method}-{workers}"


def run_child(program: str, args: dict) -> tuple[dict, float, float]:
    """Run a child program with args; (its JSON result, wall seconds, peak tree PSS MiB)."""
    t = time.perf_counter()
    proc = subprocess.Popen([str(PY), "-c", program, json.dumps(args)], cwd=ROOT)
    peak = TreePeak(proc.pid)
    rc = proc.wait()
    mib = peak.stop()
    if rc != 0:
        raise RuntimeError(f"bench child exited with {rc} (args {args}); see its stderr above")
    return json.loads(Path(args["result"]).read_text()), time.perf_counter() - t, mib


def one_size(n: int, work: Path, seed: int) -> dict:
    row: dict = {"n": n}
    order = VARIANTS if n % 2 == 0 else tuple(reversed(VARIANTS))
    for method, workers in order:
        name = variant_name(method, workers)
        tag = f"{name}-{n}"
        args = {
            "method": method,
            "workers": workers,
            "n": n,
            "seed": seed,
            "out": str(work / tag),
            "result": str(work / f"{tag}.json"),
        }
        res, wall, pss = run_child(CHARTS, args)
        s = res["summary"]
        s.pop("dropped_qa", None)  # programmatic: none; the reasons stay in dropped_qa_reasons
        res.update(wall_s=wall, peak_pss_mib=pss)
        row[name] = res
        print(
            f"  n={n} {name}: {s['rendered']}/{s['charts']} rendered in {s['seconds']:.2f} s "
            f"({s['charts_per_s']:.2f} charts/s, {s['workers']} workers), driver VmHWM "
            f"{res['vmhwm_mib']:.0f} MiB, tree peak PSS {pss:.0f} MiB",
            flush=True,
        )
    return row


def report(rows: list[dict], startup: dict, a, load: float) -> dict:
    print(
        f"\nsynth charts benchmark (programmatic, seed {a.seed}); machine: {os.cpu_count()} cores, "
        f"load {load:.1f}"
    )
    print(
        f"{'N':>5} {'variant':10} {'workers':>7} {'ok':>5} {'timed s':>8} {'charts/s':>8} "
        f"{'import s':>8} {'warm s':>6} {'VmHWM MiB':>9} {'tree PSS MiB':>12}"
    )
    for r in rows:
        for method, workers in VARIANTS:
            x = r[variant_name(method, workers)]
            s = x["summary"]
            print(
                f"{r['n']:5d} {variant_name(method, workers):10} {s['workers']:7d} "
                f"{s['rendered']:5d} {s['seconds']:8.2f} {s['charts_per_s']:8.2f} "
                f"{x['import_s']:8.2f} {x['warm_s']:6.2f} {x['vmhwm_mib']:9.0f} "
                f"{x['peak_pss_mib']:12.0f}"
            )
        sb, ex = r["sandbox-1"]["summary"], r["exec-1"]["summary"]
        print(
            f"{'':5} one worker, sandbox/exec charts/s: "
            f"x{sb['charts_per_s'] / ex['charts_per_s']:.2f}"
        )
    growth = {}
    if len(rows) > 1:
        lo, hi = rows[0], rows[-1]
        print(f"\ngrowth {lo['n']} -> {hi['n']} (x{hi['n'] / lo['n']:.0f} charts):")
        for method, workers in VARIANTS:
            name = variant_name(method, workers)
            x, y = lo[name], hi[name]
            g = {
                "time": y["summary"]["seconds"] / x["summary"]["seconds"],
                "vmhwm": y["vmhwm_mib"] / x["vmhwm_mib"],
                "tree_pss": y["peak_pss_mib"] / x["peak_pss_mib"],
            }
            growth[name] = g
            print(
                f"  {name:10} time x{g['time']:.2f}, driver peak RSS (VmHWM) x{g['vmhwm']:.2f}, "
                f"tree peak PSS x{g['tree_pss']:.2f}"
            )
    st = startup
    print(
        f"\nstart-up cost, median of {st['repeat']} alternating rounds (seconds per run):\n"
        f"  trivial script: run_python {st['sandbox_trivial'] * 1000:.1f} ms vs in-process exec "
        f"{st['exec_trivial'] * 1000:.3f} ms (x{st['sandbox_trivial'] / st['exec_trivial']:.0f})\n"
        f"  one bar chart:  run_python {st['sandbox_chart'] * 1000:.1f} ms vs in-process exec "
        f"{st['exec_chart'] * 1000:.1f} ms (x{st['sandbox_chart'] / st['exec_chart']:.2f}); "
        f"exec's first chart (imports matplotlib) {st['exec_chart_cold_s'] * 1000:.0f} ms\n"
        f"  sandbox overhead per chart over exec: "
        f"{(st['sandbox_chart'] - st['exec_chart']) * 1000:.0f} ms"
    )
    print("\nQA and status (sandbox runs):")
    for r in rows:
        s = r["sandbox"]["summary"]
        share = s["verified_qa_share"]
        print(
            f"  n={r['n']}: {s['qa']} QA, {s['verified_qa']} verified "
            f"(share {share if share is None else round(share, 3)}); status {s['status']}; "
            f"dropped QA {s['dropped_qa_reasons'] or 'none'}"
        )
    return growth


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="sizes 4 and 40")
    ap.add_argument("--sizes", default=None, help="comma-separated N (default 10,100)")
    ap.add_argument("--repeat", type=int, default=7, help="start-up rounds (median)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sizes = [int(x) for x in (a.sizes or ("4,40" if a.quick else "10,100")).split(",")]
    if any(n <= 0 for n in sizes):
        raise SystemExit(f"--sizes {a.sizes!r}: every N must be > 0")
    if a.repeat < 1:
        raise SystemExit(f"--repeat {a.repeat}: must be >= 1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-synth-") as tmp:
        work = Path(tmp)
        print("start-up cost (sandbox vs in-process exec) ...", flush=True)
        startup, _, _ = run_child(
            STARTUP,
            {"repeat": a.repeat, "seed": a.seed, "result": str(work / "startup.json")},
        )
        for n in sizes:
            rows.append(one_size(n, work, a.seed))
    load = os.getloadavg()[0]
    growth = report(rows, startup, a, load)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "synth.json"
    path.write_text(
        json.dumps(
            {
                "args": vars(a),
                "cpus": os.cpu_count(),
                "load_avg": load,
                "rows": rows,
                "growth": growth,
                "startup": startup,
                "python": sys.version.split()[0],
            },
            indent=2,
        )
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
