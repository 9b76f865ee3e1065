"""One bad input never ends a run (issue 23): a page with control characters, a link no
connection could use, a bad URL among a lake's documents. Each is a normal page or a recorded
skip with its reason; the run goes on and writes its outputs."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aiohttp import web
from typer.testing import CliRunner

from common.consent import latest_rows, ledger_files
from crawlers.crawl.canon import UrlError, canonicalize
from crawlers.crawl.html import parse_html
from tests.crawl.loopback import LoopbackServer
from tests.synth import fake_teacher

pytestmark = pytest.mark.timeout(120)
server = fake_teacher.server  # the fake OpenAI-compatible endpoint (a pytest fixture)

BAD_LINKS = [
    "http://a..test/",  # IDNA: empty label
    "http://[::1",  # urljoin itself raises
    "http://x:99999/",  # port out of range
    "http://exa mple.com/",  # space in the host
    "http://" + "a" * 64 + ".test/",  # label > 63
    "http://" + "abc." * 70 + "test/",  # host > 253
    "http://.test/",  # empty first label
    "http://x\x00y.test/",  # NUL in the host
    "http://%31%32%37.0.0.1/",  # percent-encoding in the host
    "http://[fe80::1%25eth0]/",  # IPv6 zone id
]


@pytest.mark.parametrize("url", BAD_LINKS)
def test_canonicalize_refuses_hosts_no_connection_could_use(url):
    with pytest.raises(UrlError):
        canonicalize(url, "http://127.0.0.1/")


@pytest.mark.parametrize(
    "url,want",
    [
        ("HTTP://Bücher.DE/x", "http://xn--bcher-kva.de/x"),
        ("http://a_b.test/", "http://a_b.test/"),
        ("http://[::1]:80/", "http://[::1]/"),
        ("http://a.b.:8080/", "http://a.b:8080/"),
    ],
)
def test_canonicalize_still_takes_real_hosts(url, want):
    assert canonicalize(url) == want


@pytest.mark.parametrize("ch", ["\x0b", "\x1b", "\x00", "\x0c", "\x7f", "\x01"])
def test_page_text_with_a_control_character_after_a_script_parses(ch):
    body = f"<html><body><p>a</p><script>x</script>tail{ch} here<style>s</style>{ch}</body>"
    info = parse_html(body.encode(), "http://127.0.0.1/", agent="a", training_agent="b")
    assert info.text.startswith("atail") and "x" not in info.text and "s" not in info.text[-3:]


# Pages a crawl of saved web pages meets: control characters in text, attributes and links,
# invalid UTF-8, surrogate bytes, NUL, character references to forbidden code points.
PAGES = {
    "/nul": b"<html><head><title>t\x00x</title></head><body>hello\x00world"
    b"<script>s</script>\x00after <a href='/ok\x00x'>a\x00b</a></body></html>",
    "/vt": b"<html><body>hello\x0bworld\x1b[0m <a href='/o\x0bk'>a\x0b</a>"
    b"<img src='/i\x1b.png' alt='\x0c'><script>s</script>\x0b tail</body></html>",
    "/esc": b"<html><head><meta name='robots' content='\x1bnoai'><title>\x1b</title></head>"
    b"<body>x\x1by<style>q</style>\x1b</body></html>",
    "/bad": b"<html><head><meta charset='utf-8'></head><body>\xff\xfe\xed\xa0\x80 bad \xc3"
    b"<noscript>n</noscript>\x0c</body></html>",
    "/sur": b"<html><head><meta charset='utf-8'></head><body>&#xD800; &#0; &#x1b; "
    b"\xed\xb0\x80<template>t</template>\x01</body></html>",
    "/ok": b"<html><body>fine</body></html>",
}


class ControlCharServer(LoopbackServer):
    label = "control-character server"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            sitemap = f"http://{request.host}/sm.xml"
            return web.Response(text=f"User-agent: *\nAllow: /\nSitemap: {sitemap}\n")
        if request.path == "/sm.xml":  # a sitemap naming a host no connection could use
            locs = f"<url><loc>http://{request.host}/ok</loc></url>"
            locs += "<url><loc>http://sm..test/page</loc></url>"
            xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
            return web.Response(text=xml, content_type="application/xml")
        if request.path == "/":
            links = "".join(f"<a href='{p}'>{p}</a>" for p in PAGES)
            links += "".join(f"<a href='{u}'>bad</a>" for u in BAD_LINKS if "\x00" not in u)
            return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        return web.Response(body=PAGES.get(request.path, b"<p>other</p>"), content_type="text/html")


def _crawl(out, seeds_file, *extra):
    from pipelines.cli import app

    args = ["crawl", "--seeds", str(seeds_file), "--out", str(out), "--delay", "0"]
    return CliRunner().invoke(app, [*args, "--allow-private-networks", "--quiet", *extra])


def test_crawl_goes_on_past_control_characters_and_unusable_links(tmp_path):
    from crawlers.crawl.frontier import Frontier

    with ControlCharServer(["127.0.0.231"]) as s:
        root = f"http://127.0.0.231:{s.port}/"
        seeds = tmp_path / "seeds.txt"
        # bad seeds among good ones: a host no connection could use, bytes that are not UTF-8
        seeds.write_bytes(f"{root}\nhttp://a..test/\n".encode() + b"http://\xff\xfe.test/\n")
        out = tmp_path / "out"
        res = _crawl(out, seeds, "--max-pages", "7")
        assert res.exit_code == 0, res.output
        pages = {p["url"]: p for p in pq.read_table(out / "pages.parquet").to_pylist()}
        for path in PAGES:
            row = pages[root.rstrip("/") + path]
            assert row["status"] == 200 and row["error"] is None, row
        skipped = {r["url"]: r for r in pq.read_table(out / "skipped.parquet").to_pylist()}
        bad = {u: r for u, r in skipped.items() if r["skip_reason"].startswith("bad-url: ")}
        assert "http://a..test/" in bad and bad["http://a..test/"]["source"] == "seed"
        # the bad seed and every NUL-free bad link (a..test is both): one skip each
        assert bad.pop("http://\ufffd\ufffd.test/")["source"] == "seed"
        assert set(bad) - {"http://sm..test/page"} == {u for u in BAD_LINKS if "\x00" not in u}
        assert all(r["parent"] == root for u, r in bad.items() if r["source"] == "link")
        sm = skipped["http://sm..test/page"]
        assert sm["source"] == "sitemap" and sm["skip_reason"].startswith("bad-url: "), sm

        # A frontier an older crawler wrote may hold such a URL queued: --resume skips it.
        f = Frontier(out / "frontier.sqlite")
        with f:
            for u in ("http://b..test/", "http://[::1/"):
                f.add({"url": u, "host": u.split("/")[2], "depth": 1, "state": "queued"})
                f.update(u, {"source": "link", "tier": 1, "attempts": 0})
        f.close()
        res = _crawl(out, seeds, "--resume")
        assert res.exit_code == 0, res.output
        skipped = {r["url"]: r for r in pq.read_table(out / "skipped.parquet").to_pylist()}
        assert skipped["http://b..test/"]["skip_reason"].startswith("bad-url: ")
        assert skipped["http://[::1/"]["skip_reason"].startswith("bad-url: ")
        assert len(pq.read_table(out / "pages.parquet")) > 7  # the resumed crawl went on


def test_crawl_with_only_bad_seeds_is_one_line(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a..test/\n")
    res = _crawl(tmp_path / "out", seeds)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "http://a..test/" in res.output and len(res.output.strip().splitlines()) == 1


class OptOutRobots(LoopbackServer):
    label = "opt-out robots server"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text="User-agent: RefineryBot-Extended\nDisallow: /\n")


def test_consent_recheck_records_bad_urls_and_writes_the_ledger(tmp_path, monkeypatch):
    from pipelines.cli import app

    lake = tmp_path / "lake"
    (lake / "extract").mkdir(parents=True)
    with OptOutRobots(["127.0.0.232"]) as s:
        good = f"http://127.0.0.232:{s.port}/page"
        urls = [good, "http://a..test/x", "http://[::1/y", "http://x:99999/z", "http://ex mp.le/"]
        pq.write_table(
            pa.table(
                {
                    "id": [f"d{i}" for i in range(len(urls))],
                    "url": urls,
                    "training_allowed": [True] * len(urls),
                }
            ),
            lake / "extract" / "documents.parquet",
        )
        monkeypatch.setenv("REFINERY_HOME", str(lake))
        res = CliRunner().invoke(
            app, ["consent", "recheck", "--allow-private-networks", "--delay", "0"]
        )
    assert res.exit_code == 0, res.output
    assert "opted_out=1" in res.output  # the good host's opt-out is in the ledger
    ledger = latest_rows(ledger_files(lake))
    assert ledger[good]["training_allowed"] is False
    for u in urls[1:]:
        assert f"{u}:bad-url: " in res.output, res.output


# --- mixture image paths ----------------------------------------------------------------------
def _png(path, seed: int) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (24, 24), (seed * 40 % 256, 90, 160)).save(path, "PNG")


def test_mixture_image_paths_stay_inside_their_dataset(tmp_path):
    """charts.parquet naming /dev/zero made `mix build` read forever; any absolute path let a
    local file into a mixture. Every escape is a recorded reject with its reason."""
    import os

    import yaml

    from pipelines.cli import app
    from tests.mix.conftest import make_documents
    from training.mixture.images import MAX_IMAGE_BYTES
    from training.tokenizer import train_tokenizer

    lake = tmp_path / "lake"
    (lake / "filter").mkdir(parents=True)
    docs = make_documents({"en": 60})
    pq.write_table(docs, lake / "filter" / "documents.parquet")
    train_tokenizer(docs["text"].to_pylist(), 300, lake / "tokenizer" / "tokenizer.json")
    charts = lake / "synth" / "charts"
    for i in range(3):
        _png(charts / "images" / f"ok{i}.png", i)
    outside = tmp_path / "secret.png"  # a real image, outside the dataset
    _png(outside, 7)
    (charts / "images" / "link.png").symlink_to(outside)
    (charts / "images" / "dir.png").mkdir()
    os.mkfifo(charts / "images" / "fifo.png")
    with open(charts / "images" / "huge.png", "wb") as fh:  # sparse: no disk used
        fh.truncate(MAX_IMAGE_BYTES + 1)
    paths = {
        "images/ok0.png": None,
        "images/ok1.png": None,
        "./images/../images/ok2.png": None,
        "/dev/zero": "image_path_outside",
        str(outside): "image_path_outside",
        "../../../secret.png": "image_path_outside",
        "images/link.png": "image_path_outside",
        "~/secret.png": "image_path_outside",
        "images/dir.png": "image_not_a_file",
        "images/fifo.png": "image_not_a_file",
        "images/huge.png": "image_too_large",
        "images/\x00.png": "image_path_invalid",
    }
    qa = [{"question": "What?", "answer": "4", "kind": "lookup", "verified": True}]
    pq.write_table(
        pa.Table.from_pylist(
            [{"id": f"c{i}", "image_path": p, "qa": qa} for i, p in enumerate(paths)]
        ),
        charts / "charts.parquet",
    )
    spec = {
        "name": "paths",
        "seq_len": 32,
        "total_tokens": 2000,
        "seed": 1,
        "tokenizer": str(lake / "tokenizer" / "tokenizer.json"),
        "shard_sequences": 16,
        "image_tokens": 4,
        "allow_shortfall": True,
        "buckets": {
            "text": {"weight": 0.8, "sources": [{"path": str(lake / "filter/documents.parquet")}]},
            "charts": {
                "weight": 0.2,
                "modality": "image_caption",
                "sources": [{"path": str(charts / "charts.parquet"), "kind": "charts"}],
            },
        },
        "eval": {"sequences_per_group": 0, "max_fraction": 0.05},
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    res = CliRunner().invoke(
        app, ["mix", "build", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "m")]
    )
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    source = next(s for s in manifest["sources"] if s["kind"] == "charts")
    want: dict[str, int] = {}
    for reason in paths.values():
        if reason:
            want[reason] = want.get(reason, 0) + 1
    assert source["rejected"] == want, source
    images = pq.read_table(tmp_path / "m" / "images.parquet").to_pylist()
    assert len(images) == 3  # the three images of the dataset, nothing else


# --- grader answers -----------------------------------------------------------------------
def test_grader_answer_without_a_digit_is_an_ungraded_row(server):
    """A grader answer without a grade 0-5 raised a traceback and ended `quality train --source
    llm`; now its row is ungraded, recorded with the reason (the model's meta `ungraded`)."""
    from filters.labels import LabelOptions, llm_labels
    from tests.mix.conftest import make_documents

    rows = make_documents({"en": 24}).to_pylist()
    for i, r in enumerate(rows):
        r["training_allowed"] = True
        r["text"] = (f"UNRATABLE{i} " if i % 8 == 0 else "") + r["text"]

    def answer(body):
        text = body["messages"][0]["content"]
        if "UNRATABLE" in text:
            return ("ok", "I cannot rate this document." if "UNRATABLE0 " in text else "")
        return ("ok", "Grade: 4")

    server["responder"] = answer
    opts = LabelOptions(teacher_url=server["base_url"], teacher_model="tiny")
    ts = llm_labels(rows, "en", opts)
    assert {u["id"] for u in ts.ungraded} == {"en-0", "en-8", "en-16"}
    assert all("no grade 0-5" in u["reason"] for u in ts.ungraded)
    assert len(ts.texts) == 21 and set(ts.labels) == {1}
    assert not any("UNRATABLE" in t for t in ts.texts)


# --- images build ---------------------------------------------------------------------------
class ImageServer(LoopbackServer):
    label = "image server"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        import io

        from PIL import Image

        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/redir.png":  # a redirect to a host IDNA cannot encode
            raise web.HTTPFound("http://a..test/x.png")
        buf = io.BytesIO()
        Image.new("RGB", (64, 64), (len(request.path) * 30 % 256, 10, 10)).save(buf, "PNG")
        return web.Response(body=buf.getvalue(), content_type="image/png")


def test_images_build_goes_on_past_a_src_no_connection_could_use(tmp_path):
    """One ref to http://a..test/ among three ended `images build` with no output."""
    from pipelines.cli import app

    ex = tmp_path / "extract"
    ex.mkdir()
    with ImageServer(["127.0.0.234"]) as s:
        page = f"http://127.0.0.234:{s.port}/page"
        docs = {"id": ["d1"], "url": [page], "noai": [False], "training_allowed": [True]}
        pq.write_table(pa.table(docs), ex / "documents.parquet")
        srcs = [f"http://127.0.0.234:{s.port}/a.png", "http://a..test/b.png"]
        srcs += [f"http://127.0.0.234:{s.port}/cc.png", "http://[::1/d.png", "http://x:99999/"]
        srcs.append(f"http://127.0.0.234:{s.port}/redir.png")
        n = len(srcs)
        refs = {
            "doc_id": ["d1"] * n,
            "url": [page] * n,
            "position": pa.array(range(n), pa.int32()),
            "src": srcs,
            "alt": ["a red square on a plain background"] * n,
            "surrounding_text": ["x"] * n,
            "training_allowed": [True] * n,
        }
        pq.write_table(pa.table(refs), ex / "image_refs.parquet")
        inter = {"doc_id": ["d1"], "url": [page], "training_allowed": [True]}
        inter["blocks"] = [[{"kind": "text", "text": "hello", "src": None, "alt": None}]]
        pq.write_table(pa.table(inter), ex / "interleaved.parquet")
        res = CliRunner().invoke(
            app,
            ["images", "build", "--docs", str(ex), "--out", str(tmp_path / "out")]
            + ["--allow-private-networks", "--delay", "0"],
        )
    assert res.exit_code == 0, res.output
    rows = {r["src"]: r for r in pq.read_table(tmp_path / "out" / "fetched.parquet").to_pylist()}
    assert len(rows) == n
    redir = rows[srcs.pop()]  # its redirect's host has no robots.txt to ask: not fetched
    assert redir["drop_reason"] == "fetch_error", redir  # no verdict: --resume asks again
    assert redir["error"].startswith("robots-unreachable"), redir
    for src in srcs:
        r = rows[src]
        if "127.0.0.234" in src:
            assert r["drop_reason"] is None and r["image_path"], r
        else:
            assert r["drop_reason"] == "fetch_error" and r["error"].startswith("bad-url: "), r


def test_training_pairs_stay_inside_their_dataset(tmp_path):
    """clip train and the captioner read the kept pairs' images: an absolute or escaping
    image_path (/dev/zero, another directory's file) is not one of the dataset's images."""
    from common.pairs import kept_pairs

    d = tmp_path / "pairs"
    _png(d / "images" / "ok.png", 1)
    _png(tmp_path / "secret.png", 2)
    (d / "images" / "link.png").symlink_to(tmp_path / "secret.png")
    paths = ["images/ok.png", "/dev/zero", str(tmp_path / "secret.png"), "../secret.png"]
    paths.append("images/link.png")
    rows = [
        {"id": f"p{i}", "caption": "c", "image_path": p, "image_sha256": None}
        | {"drop_reason": None, "training_allowed": True}
        for i, p in enumerate(paths)
    ]
    pq.write_table(pa.Table.from_pylist(rows), d / "pairs.parquet")
    kept = kept_pairs(d / "pairs.parquet")  # clip train's and the captioner's reader
    assert [p["image_file"] for p in kept] == [str(d / "images/ok.png")]
    assert [p["pair_id"] for p in kept] == ["p0"]
    # what goes to a teacher: synth captions and domain QA read no image outside the dataset
    from synth.captions import read_pairs as caption_pairs
    from synth.domain_qa import read_pairs as qa_pairs

    kept, _ = caption_pairs(d / "pairs.parquet")
    assert [bool(p["image_file"]) for p in kept] == [True, False, False, False, False]
    images = {k: v["image"] for k, v in qa_pairs([d / "pairs.parquet"]).items()}
    assert images == {"p0": str((d / "images/ok.png").resolve())} | {
        f"p{i}": None for i in range(1, 5)
    }


def test_a_page_the_crawler_cannot_process_is_a_recorded_error(tmp_path, monkeypatch):
    """Input the page code does not expect raises for that page only: the page is recorded
    with the error and no training consent, and the other pages are crawled."""
    import crawlers.crawl.engine as engine

    real = engine.describe_page

    def describe(row, res, *args, **kwargs):
        if row["url"].endswith("/esc"):
            raise RuntimeError("unexpected input on this page")
        return real(row, res, *args, **kwargs)

    monkeypatch.setattr(engine, "describe_page", describe)
    with ControlCharServer(["127.0.0.236"]) as s:
        root = f"http://127.0.0.236:{s.port}/"
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(root + "\n")
        res = _crawl(tmp_path / "out", seeds, "--max-pages", "8")
    assert res.exit_code == 0, res.output
    pages = {p["url"]: p for p in pq.read_table(tmp_path / "out" / "pages.parquet").to_pylist()}
    bad = pages[root + "esc"]
    assert bad["error"].startswith("crawler-error: RuntimeError: unexpected input on this page")
    assert bad["training_allowed"] is False
    assert sum(p["status"] == 200 for p in pages.values()) >= 6
