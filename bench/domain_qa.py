"""Domain QA throughput: `synth.domain_qa.make_domain_qa` (the stage as shipped: TeacherClient on the
`openai` package, structured output, a fresh disk cache, images stored, parquet written) against
the plain loop a user would otherwise write with the `openai` package: for each image, build the
same data-URL message, `client.chat.completions.create` with the same JSON schema, `json.loads`
the answer, then the same probe request (the image's unanswerable questions and one template
question), one image after the other, the rows written to a parquet at the end.

Both talk to the same fake OpenAI-compatible vision teacher on loopback, started here in its own
process, which waits --latency-ms before each answer (a network-bound teacher: the GPU's time
per request is what this stands for) and answers every QA request with 4 QA pairs and 2
unanswerable questions and every probe with refusals. Same images, same run, same requests:
2 per image for every variant (asserted: ours sends 2N requests and gets 0 cache hits).

Images: the selected domain images of --lake (`images/domain`), repeated to N and 10N with one
pixel changed per copy so every request is distinct (no cache hit inside a run); without a lake,
or with --px P, random-noise PNGs of P x P pixels.

Variants, at each size:
- ours: make_domain_qa with the CLI's defaults (4 workers: images asked at once);
- ours-1: the same with one worker (per-request overhead against the loop, same concurrency);
- loop: the plain openai loop (one request at a time).
The latency floor is requests x latency / concurrency; overhead/request is (time - floor)
divided by the requests made one after the other.

    .venv/bin/python bench/domain_qa.py [--lake /tmp/final/lake] [--sizes 20,200] [--latency-ms 50]

Results: bench/results/domain_qa.json (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results"
HOST = "127.0.0.64"
MODEL = "bench-vlm"
VARIANTS = ("ours", "ours-1", "loop")


# --------------------------------------------------------------------------------------------
# the fake teacher (its own process: its threads do not share our GIL)


def serve(latency_s: float) -> None:
    import re
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    def completion(content: str) -> bytes:
        return json.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 0,
                "model": MODEL,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content},
                    }
                ],
                "usage": {"prompt_tokens": 300, "completion_tokens": 120, "total_tokens": 420},
            }
        ).encode()

    def answer(body: dict) -> str:
        texts = []
        for m in body["messages"]:
            c = m["content"]
            texts += [c] if isinstance(c, str) else [p["text"] for p in c if p["type"] == "text"]
        text = "\n".join(texts)
        if "Answer each numbered question" in text:
            numbers = [int(n) for n in re.findall(r"^(\d+)\. ", text, re.M)]
            refusals = [
                {"index": i, "refused": True, "answer": "The image does not show this."}
                for i in numbers
            ]
            return json.dumps({"answers": refusals})
        kinds = ("identify", "attribute", "count", "position")
        qa = [
            {"question": f"Question {k} about what is shown?", "answer": f"answer {k}", "kind": k}
            for k in kinds
        ]
        unanswerable = ["Who made this image?", "Where was the sample taken?"]
        return json.dumps({"qa": qa, "unanswerable_questions": unanswerable})

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real endpoint
        disable_nagle_algorithm = True  # else headers and body wait on a delayed ACK (40 ms)

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(latency_s)
            data = completion(answer(body))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer((HOST, 0), Handler)
    httpd.daemon_threads = True
    print(httpd.server_address[1], flush=True)
    httpd.serve_forever()


# --------------------------------------------------------------------------------------------
# inputs


def _sources(lake: Path | None, px: int | None) -> list[tuple[str, bytes]]:
    """(domain, image bytes) to repeat: the lake's selected domain images, or noise PNGs."""
    if lake is not None and px is None:
        from synth.domain_qa import read_domain_images, read_pairs

        _, rows = read_domain_images(lake / "images" / "domain")
        pairs = read_pairs([lake / "images" / "pairs"])
        out = []
        for r in rows:
            pair = pairs.get(r["id"])
            if pair and pair["image"] and Path(pair["image"]).is_file():
                out.append((r["domain"], Path(pair["image"]).read_bytes()))
        if not out:
            raise SystemExit(f"{lake}: no selected domain images with stored files; use --px")
        return out
    import io

    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for domain in ("medical_imaging", "food", "microscopy", "animals"):
        arr = rng.integers(0, 256, size=(px or 256, px or 256, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="PNG")
        out.append((domain, buf.getvalue()))
    return out


def make_inputs(sources: list[tuple[str, bytes]], n: int, work: Path) -> tuple[Path, Path]:
    """N selected domain images (sources repeated, one pixel changed per copy) laid out as the
    lake's images/domain and images/pairs; returns (domains dir, pairs dir)."""
    import hashlib
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    pairs_dir, domains_dir = work / "pairs", work / "domain"
    pairs, domains = [], []
    for i in range(n):
        domain, data = sources[i % len(sources)]
        with Image.open(io.BytesIO(data)) as im:
            im = im.convert("RGB")
            im.putpixel((0, 0), (i % 256, (i // 256) % 256, 7))
            buf = io.BytesIO()
            im.save(buf, format="PNG")
        blob = buf.getvalue()
        sha = hashlib.sha256(blob).hexdigest()
        rel = f"images/{sha[:2]}/{sha}.png"
        (pairs_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (pairs_dir / rel).write_bytes(blob)
        pid = f"bench{i:06d}"
        pairs.append({"id": pid, "image_path": rel, "image_sha256": sha, "training_allowed": True})
        domains.append({"id": pid, "domain": domain, "selected": True, "training_allowed": True})
    pq.write_table(pa.Table.from_pylist(pairs), pairs_dir / "pairs.parquet")
    domains_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(domains), domains_dir / "domain_images.parquet")
    return domains_dir, pairs_dir


# --------------------------------------------------------------------------------------------
# the two sides


def ours(base_url: str, domains: Path, pairs: Path, out: Path, workers: int) -> dict:
    from common.teacher import TeacherClient
    from synth.domain_qa import make_domain_qa

    client = TeacherClient(base_url, MODEL, cache_dir=out / "_teacher")  # the CLI's layout
    t = time.perf_counter()
    s = make_domain_qa(domains, [pairs], out, client, workers=workers)
    seconds = time.perf_counter() - t
    u = s["teacher_usage"]
    if s["status"] != {"ok": s["rows"]} or u["cache_hits"] or u["requests"] != 2 * s["rows"]:
        raise SystemExit(f"bench ours: unexpected run {s['status']}, usage {u}")
    return {"seconds": seconds, "images": s["rows"], "requests": u["requests"], "qa": s["qa"]}


def plain_loop(base_url: str, domains: Path, pairs: Path, out: Path) -> dict:
    """What a user writes with the openai package: one image, one request at a time."""
    import base64

    import openai
    import pyarrow as pa
    import pyarrow.parquet as pq

    from synth.domain_qa import (
        PROBE_PROMPT,
        QA_PROMPT,
        TEMPLATES,
        DomainQAResponse,
        ProbeResponse,
    )

    def fmt(model) -> dict:
        schema = model.model_json_schema()
        return {"type": "json_schema", "json_schema": {"name": model.__name__, "schema": schema}}

    qa_format, probe_format = fmt(DomainQAResponse), fmt(ProbeResponse)
    client = openai.OpenAI(base_url=base_url, api_key="bench")
    t = time.perf_counter()
    rows, requests = [], 0
    image_of = {
        r["id"]: pairs / r["image_path"] for r in pq.read_table(pairs / "pairs.parquet").to_pylist()
    }
    for r in pq.read_table(domains / "domain_images.parquet").to_pylist():
        data = image_of[r["id"]].read_bytes()
        url = f"data:image/png;base64,{base64.b64encode(data).decode()}"
        domain = r["domain"].replace("_", " ")

        def ask(text: str, response_format: dict, url: str = url) -> dict:
            content = [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": url}},
            ]
            res = client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": content}],
                response_format=response_format,
                temperature=0,
            )
            return json.loads(res.choices[0].message.content)

        first = ask(QA_PROMPT.format(domain=domain, n=4, m=2), qa_format)
        probes = [*first["unanswerable_questions"][:2], TEMPLATES[0]]
        listed = "\n".join(f"{i}. {q}" for i, q in enumerate(probes, 1))
        second = ask(PROBE_PROMPT.format(domain=domain, questions=listed), probe_format)
        requests += 2
        qa = [{**q, "answerable": True} for q in first["qa"][:4]]
        qa += [
            {"question": probes[a["index"] - 1], "answer": a["answer"], "answerable": False}
            for a in second["answers"]
            if a["refused"] and 1 <= a["index"] <= len(probes)
        ]
        rows.append({"id": r["id"], "domain": r["domain"], "qa": qa})
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out / "domain_qa.parquet")
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "images": len(rows),
        "requests": requests,
        "qa": sum(len(r["qa"]) for r in rows),
    }


def run(variant: str, base_url: str, domains: Path, pairs: Path, out: Path) -> dict:
    if variant == "loop":
        return plain_loop(base_url, domains, pairs, out)
    return ours(base_url, domains, pairs, out, workers=1 if variant == "ours-1" else 4)


# --------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    default_lake = Path(os.environ.get("REFINERY_HOME", "/tmp/final/lake"))
    ap.add_argument("--lake", type=Path, default=default_lake if default_lake.is_dir() else None)
    ap.add_argument(
        "--px", type=int, default=None, help="noise PNGs of PX x PX instead of the lake's"
    )
    ap.add_argument("--sizes", default="20,200", help="N and 10N images")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="the teacher's time per request")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(a.latency_ms / 1000)
        return
    sizes = [int(x) for x in a.sizes.split(",")]
    if any(n <= 0 for n in sizes) or a.latency_ms < 0:
        raise SystemExit(f"--sizes {a.sizes!r} must be > 0 and --latency-ms >= 0")

    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency-ms", str(a.latency_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(server.stdout.readline())
        base_url = f"http://{HOST}:{port}/v1"
        sources = _sources(a.lake, a.px)
        what = f"{len(sources)} {'lake domain images' if a.px is None else f'{a.px}px noise PNGs'}"
        mean_kib = sum(len(d) for _, d in sources) / len(sources) / 1024
        print(
            f"domain QA bench: {what} (mean {mean_kib:.1f} KiB), teacher latency "
            f"{a.latency_ms:g} ms/request, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
        )
        with tempfile.TemporaryDirectory(prefix="bench-domain-qa-") as tmp:
            work = Path(tmp)
            d, p = make_inputs(sources, 4, work / "in-warm")  # imports and first connection
            for v in VARIANTS:
                run(v, base_url, d, p, work / f"out-warm-{v}")
            rows = []
            for n in sizes:
                d, p = make_inputs(sources, n, work / f"in-{n}")
                row: dict = {"n": n}
                order = VARIANTS if len(rows) % 2 == 0 else tuple(reversed(VARIANTS))
                for v in order:
                    row[v] = run(v, base_url, d, p, work / f"out-{n}-{v}")
                rows.append(row)
    finally:
        server.terminate()
        server.wait()

    lat = a.latency_ms / 1000
    print(
        f"\n{'images':>6} {'variant':8} {'s':>7} {'images/s':>9} {'requests/s':>10} "
        f"{'floor s':>7} {'ms over floor/req':>17}"
    )
    for row in rows:
        for v in VARIANTS:
            x = row[v]
            conc = 4 if v == "ours" else 1
            floor = x["requests"] * lat / conc
            per_req = (x["seconds"] - floor) / (x["requests"] / conc) * 1000
            x.update(
                images_per_s=x["images"] / x["seconds"],
                requests_per_s=x["requests"] / x["seconds"],
                floor_s=floor,
                overhead_ms_per_request=per_req,
            )
            print(
                f"{row['n']:6d} {v:8} {x['seconds']:7.2f} {x['images_per_s']:9.2f} "
                f"{x['requests_per_s']:10.2f} {floor:7.2f} {per_req:17.2f}"
            )
        row["ratio_ours_vs_loop"] = row["ours"]["images_per_s"] / row["loop"]["images_per_s"]
        row["ratio_ours1_vs_loop"] = row["ours-1"]["images_per_s"] / row["loop"]["images_per_s"]
        print(
            f"{'':6} ours/loop x{row['ratio_ours_vs_loop']:.2f}, "
            f"ours-1/loop x{row['ratio_ours1_vs_loop']:.2f} (images/s)"
        )
    growth = {}
    if len(rows) > 1:
        lo, hi = rows[0], rows[-1]
        growth = {v: hi[v]["seconds"] / lo[v]["seconds"] for v in VARIANTS}
        print(
            f"cost growth for {hi['n'] / lo['n']:.0f}x the images: "
            + ", ".join(f"{v} x{g:.2f}" for v, g in growth.items())
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "domain_qa.json" if a.px is None else f"domain_qa_px{a.px}.json"
    path = RESULTS / name
    result = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "images": what,
        "mean_image_kib": mean_kib,
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg()[0],
        "rows": rows,
        "growth": growth,
        "python": sys.version.split()[0],
    }
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
