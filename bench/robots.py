"""Benchmark robots.txt parsers: parse time, allows() calls/s, agreement with the conformance table.

    .venv/bin/python bench/robots.py [--quick]

Compares crawlers.robots.RobotsTxt with gpyrobotstxt (its raw API re-parses the file on every
query), urllib.robotparser, and Protego (installed on first run into bench/.venvs/protego and
driven there through a subprocess running this same file with --protego-worker).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT = "RefineryBot"
NAMED_AGENTS = ["Googlebot", "Bingbot", "RefineryBot", "GPTBot", "CCBot", "AhrefsBot"]


# ---- workload -------------------------------------------------------------------------------


def _pattern(rng: random.Random) -> str:
    d, s = rng.randint(0, 60), rng.randint(0, 30)
    return rng.choice(
        [
            f"/dir{d}/",
            f"/dir{d}/sub{s}",
            f"/dir{d}/sub{s}/",
            f"/dir{d}/*.pdf$",
            "/*?sessionid=",
            f"/search?q={d}",
            "/cgi-bin/",
            "/wp-admin/",
            f"/*/private{s}/*",
            f"/product/*/reviews{d}$",
            f"/caf%C3%A9/{d}",
            f"/a%2fb/{s}",
            f"/dir{d}/page{s}.html",
            f"/tag/{d}*",
            "/*.php$",
        ]
    )


def make_robots(rng: random.Random) -> bytes:
    """One realistic robots.txt with 50-500 rules spread over a '*' and some named groups."""
    n_rules = rng.randint(50, 500)
    groups = [["*"]] + [
        rng.sample(NAMED_AGENTS, rng.randint(1, 2)) for _ in range(rng.randint(0, 3))
    ]
    lines = ["# robots.txt generated for the benchmark", ""]
    for gi, agents in enumerate(groups):
        lines += [f"User-agent: {a}" for a in agents]
        if rng.random() < 0.3:
            lines.append(f"Crawl-delay: {rng.randint(1, 10)}")
        if len(groups) == 1:
            share = n_rules
        else:
            share = n_rules // 2 if gi == 0 else n_rules // (2 * (len(groups) - 1))
        for _ in range(max(1, share)):
            key = "Allow" if rng.random() < 0.25 else "Disallow"
            lines.append(f"{key}: {_pattern(rng)}" + ("  # note" if rng.random() < 0.05 else ""))
        lines.append("")
    lines.append(f"Sitemap: https://example.com/sitemap{rng.randint(0, 9)}.xml")
    return ("\r\n" if rng.random() < 0.2 else "\n").join(lines).encode()


def make_urls(rng: random.Random, n: int) -> list[str]:
    """URLs drawn from the same vocabulary as the rules, so many of them hit a rule."""
    urls = []
    for _ in range(n):
        d, s, k = rng.randint(0, 80), rng.randint(0, 40), rng.randint(0, 999)
        path = rng.choice(
            [
                f"/dir{d}/sub{s}/page{k}.html",
                f"/dir{d}/report{k}.pdf",
                f"/search?q={d}&p={k}",
                f"/product/{k}/reviews{d}",
                f"/x/private{s}/y",
                f"/caf%c3%a9/{d}/z",
                f"/tag/{d}{k}",
                f"/index.php?sessionid={k}",
                f"/dir{d}/",
                f"/blog/{k}",
            ]
        )
        urls.append("https://example.com" + path)
    return urls


def sample_web_robots() -> tuple[list[bytes], str]:
    """robots.txt bodies served by the sample web, when that module exists in this checkout."""
    try:
        import urllib.request

        from crawlers.robots import origin_of
        from sampleweb import build_web, serve
    except ImportError as exc:
        return [], f"sample web not available ({exc})"
    bodies: list[bytes] = []
    # No proxies: benchmark traffic must stay on 127.0.0.0/8 whatever the environment says.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with serve(build_web(seed=0)) as served:
            for origin in sorted({origin_of(u) for u in served.seeds()}):
                try:
                    with opener.open(origin + "/robots.txt", timeout=5) as resp:
                        bodies.append(resp.read())
                except OSError:
                    continue  # a site without robots.txt: nothing to benchmark
    except Exception as exc:  # a half-built sample web must not break the benchmark
        return bodies, f"sample web failed ({type(exc).__name__}: {exc})"
    return bodies, f"{len(bodies)} sample-web robots.txt files"


# ---- measurement ----------------------------------------------------------------------------


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(
    name: str,
    parse,
    allows,
    files: list[bytes],
    urls: list[list[str]],
    repeat: int,
    query_files: int | None = None,
) -> dict:
    """Parse time per file and allows() calls/s (parse once, query every URL of the file)."""
    parse_s = _best(lambda: [parse(b) for b in files], repeat) / len(files)
    chosen = range(len(files) if query_files is None else min(query_files, len(files)))
    parsed = {i: parse(files[i]) for i in chosen}
    calls = sum(len(urls[i]) for i in chosen)
    query_s = _best(lambda: [allows(parsed[i], u) for i in chosen for u in urls[i]], repeat)
    return {"parser": name, "parse_ms": parse_s * 1e3, "calls_per_s": calls / query_s}


def decisions(parse, allows, files: list[bytes], urls: list[list[str]]) -> list[bool]:
    """Every (file, URL) decision, for agreement rates between parsers."""
    out = []
    for body, file_urls in zip(files, urls, strict=True):
        robots = parse(body)
        out += [bool(allows(robots, u)) for u in file_urls]
    return out


def conformance(parse_allows) -> float:
    """Share of conformance-table cases a parser answers as the table expects."""
    sys.path.insert(0, str(ROOT / "tests" / "robots"))
    from robots_conformance_cases import CASES

    hits = 0
    for case in CASES:
        try:
            hits += parse_allows(case.robots, case.agent, case.url) is case.expected
        except Exception:  # a crash on a case is a miss, not a benchmark failure
            pass
    return hits / len(CASES)


def _urllib_parser(body: bytes):
    from urllib.robotparser import RobotFileParser

    rp = RobotFileParser()
    rp.parse(body.decode("utf-8", "replace").splitlines())
    return rp


def _gpy_allows(body: bytes, agent: str, url: str) -> bool:
    from gpyrobotstxt.robots_cc import RobotsMatcher

    return RobotsMatcher().one_agent_allowed_by_robots(body, agent, url)


def local_parsers() -> dict[str, tuple]:
    """name -> (parse(body), allows(parsed, url), parse_allows(body, agent, url))."""
    from crawlers.robots import RobotsTxt

    return {
        "refinery RobotsTxt": (
            RobotsTxt.parse,
            lambda r, u: r.allows(AGENT, u),
            lambda b, a, u: RobotsTxt.parse(b).allows(a, u),
        ),
        "gpyrobotstxt (raw API)": (
            lambda b: b,  # its API takes the body on every query and parses it again
            lambda b, u: _gpy_allows(b, AGENT, u),
            _gpy_allows,
        ),
        "urllib.robotparser": (
            _urllib_parser,
            lambda r, u: r.can_fetch(AGENT, u),
            lambda b, a, u: _urllib_parser(b).can_fetch(a, u),
        ),
    }


# ---- Protego in its own venv ----------------------------------------------------------------


def protego_python() -> Path | str:
    venv = ROOT / "bench" / ".venvs" / "protego"
    python = venv / "bin" / "python"
    if not python.exists():
        try:
            subprocess.run(["python3", "-m", "venv", str(venv)], check=True, capture_output=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", "protego"],
                check=True,
                capture_output=True,
                timeout=300,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            return f"could not install Protego into {venv}: {exc}"
    return python


def protego_worker(path: str) -> None:
    """Runs inside bench/.venvs/protego: same measurements over the JSON workload."""
    from protego import Protego

    job = json.loads(Path(path).read_text())
    files = [f.encode("utf-8") for f in job["files"]]

    def parse(b: bytes):
        return Protego.parse(b.decode("utf-8", "replace"))

    result = measure(
        "Protego",
        parse,
        lambda r, u: r.can_fetch(u, job["agent"]),
        files,
        job["urls"],
        job["repeat"],
    )
    result["decisions"] = decisions(
        parse, lambda r, u: r.can_fetch(u, job["agent"]), files, job["urls"]
    )
    answers = []
    for robots, agent, url in job["cases"]:
        try:
            answers.append(parse(robots.encode("utf-8", "surrogateescape")).can_fetch(url, agent))
        except Exception:
            answers.append(None)
    result["case_answers"] = answers
    print(json.dumps(result))


def run_protego(files, urls, repeat: int) -> dict | str:
    python = protego_python()
    if isinstance(python, str):
        return python
    sys.path.insert(0, str(ROOT / "tests" / "robots"))
    from robots_conformance_cases import CASES

    job = {
        "files": [f.decode("utf-8") for f in files],
        "urls": urls,
        "repeat": repeat,
        "agent": AGENT,
        "cases": [[c.robots.decode("utf-8", "surrogateescape"), c.agent, c.url] for c in CASES],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(job, fh)
    try:
        proc = subprocess.run(
            [str(python), __file__, "--protego-worker", fh.name],
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        Path(fh.name).unlink()
    if proc.returncode != 0:
        return f"Protego worker failed: {proc.stderr.strip()[-300:]}"
    result = json.loads(proc.stdout)
    expected = [c.expected for c in CASES]
    result["conformance"] = sum(
        a is e for a, e in zip(result.pop("case_answers"), expected, strict=True)
    ) / len(CASES)
    return result


# ---- main -----------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer files and URLs (about 30 s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--protego-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.protego_worker:
        protego_worker(args.protego_worker)
        return
    sys.path.insert(0, str(ROOT))
    n_files, n_urls, repeat = (40, 100, 2) if args.quick else (200, 200, 3)
    rng = random.Random(args.seed)
    files = [make_robots(rng) for _ in range(n_files)]
    web_files, web_note = sample_web_robots()
    files += web_files
    urls = [make_urls(rng, n_urls) for _ in files]
    rules = [
        sum(line.lower().startswith((b"allow", b"disallow")) for line in f.splitlines())
        for f in files
    ]
    print(
        f"workload: {len(files)} robots.txt files ({min(rules)}-{max(rules)} rules, median "
        f"{statistics.median(rules):.0f}), {sum(map(len, urls))} URLs; {web_note}"
    )
    print("note: shared 2-core machine under load from other jobs; compare ratios, not absolutes")

    rows, reference = [], None
    for name, (parse, allows, parse_allows) in local_parsers().items():
        gpy = name.startswith("gpy")
        row = measure(
            name, parse, allows, files, urls, 1 if gpy else repeat, query_files=10 if gpy else None
        )
        if gpy:  # its parse is folded into every query: time one parse+query instead
            row["parse_ms"] = (
                _best(lambda: [_gpy_allows(b, AGENT, "/") for b in files], 1) / len(files) * 1e3
            )
        subset = (files[:10], urls[:10]) if gpy else (files, urls)
        row["decisions"] = decisions(parse, allows, *subset)
        row["conformance"] = conformance(parse_allows)
        rows.append(row)
        reference = reference or row
    protego = run_protego(files, urls, repeat)
    if isinstance(protego, str):
        print(f"Protego skipped: {protego}")
    else:
        rows.append(protego)

    ref_dec = reference["decisions"]
    header = (
        f"{'parser':<24}{'parse ms/file':>14}{'allows/s':>12}{'x ours':>9}"
        f"{'agree w/ ours':>15}{'conformance':>13}"
    )
    print(header + "\n" + "-" * len(header))
    for row in rows:
        dec = row["decisions"]
        agree = sum(a == b for a, b in zip(dec, ref_dec[: len(dec)], strict=False)) / len(dec)
        print(
            f"{row['parser']:<24}{row['parse_ms']:>14.3f}{row['calls_per_s']:>12,.0f}"
            f"{row['calls_per_s'] / reference['calls_per_s']:>9.3f}{agree:>15.1%}"
            f"{row['conformance']:>13.1%}"
        )
    print(
        "x ours = allows() throughput relative to refinery RobotsTxt; gpyrobotstxt's raw API "
        "re-parses the file per query (measured on 10 files); conformance = share of the "
        "tests/robots conformance table answered as expected."
    )


if __name__ == "__main__":
    main()
