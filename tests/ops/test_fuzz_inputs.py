"""Fuzzed input files through the public CLI (issue 23, "one bad input never ends a run").

Each stage's input files are written valid, then spoiled one way at a time: empty (0 bytes),
truncated, not Parquet at all, a required column missing, a column of the wrong type, NUL bytes
and invalid UTF-8 in text, and rows of garbage values. Every run must end with exit status 0
(bad rows recorded as rejects) or exit status 2 and one line naming the file: never a
traceback, never a crash of another kind (status 1), never a hang. Deterministic (fixed seed).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

pytestmark = pytest.mark.timeout(240)

SEED = 23


def _bad_utf8(values: list[str], rng: random.Random) -> pa.Array:
    """A string column whose bytes are not all UTF-8 (other tools write such files)."""
    raw = [v.encode() for v in values]
    i = rng.randrange(len(raw))
    raw[i] = raw[i][:3] + b"\xff\xfe\xed\xa0\x80" + raw[i][3:]
    return pa.array(raw, pa.binary()).view(pa.string())


def mutations(table: pa.Table, text_col: str, key_cols: list[str]) -> list[tuple[str, object]]:
    """(name, what to write) for one valid table: a pa.Table or raw bytes."""
    rng = random.Random(SEED)
    n = table.num_rows
    out: list[tuple[str, object]] = [("empty-file", b""), ("not-parquet", b"id,text\n1,hello\n")]
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = sink.getvalue().to_pybytes()
    out.append(("truncated", data[: len(data) // 2]))
    out.append(("footer-only", data[-64:]))
    out.append(("no-rows", table.slice(0, 0)))
    for col in key_cols:
        out.append((f"missing-{col}", table.drop_columns([col])))
    texts = [str(v) if v is not None else "" for v in table.column(text_col).to_pylist()]
    i = table.schema.get_field_index(text_col)
    out.append((f"{text_col}-int64", table.set_column(i, text_col, pa.array(range(n), pa.int64()))))
    out.append((f"{text_col}-null", table.set_column(i, text_col, pa.nulls(n, pa.string()))))
    nul = [t[:5] + "\x00\x0b\x1b" + t[5:] for t in texts]
    out.append((f"{text_col}-nul", table.set_column(i, text_col, pa.array(nul, pa.string()))))
    out.append((f"{text_col}-bad-utf8", table.set_column(i, text_col, _bad_utf8(texts, rng))))
    for col in key_cols:
        j = table.schema.get_field_index(col)
        if pa.types.is_string(table.schema.field(col).type):
            junk = ["", "http://a..test/", "http://[::1", "\x00", "../../etc/passwd"]
            vals = [junk[k % len(junk)] for k in range(n)]
            out.append((f"{col}-junk", table.set_column(j, col, pa.array(vals, pa.string()))))
        out.append((f"{col}-float", table.set_column(j, col, pa.array([0.5] * n, pa.float64()))))
    return out


def _write(path: Path, what: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(what, bytes):
        path.write_bytes(what)
    else:
        pq.write_table(what, path)


def _run(args: list[str]) -> tuple[int, str]:
    from pipelines.cli import app

    res = CliRunner().invoke(app, args)
    return res.exit_code, res.output


def check_outcome(code: int, output: str, named: Path, case: str) -> None:
    assert "Traceback" not in output, f"{case}: a traceback\n{output}"
    assert code in (0, 2), f"{case}: exit status {code}\n{output}"
    if code == 2:
        errors = [ln for ln in output.splitlines() if ln.startswith("error: ")]
        assert len(errors) == 1, f"{case}: not one error line\n{output}"
        assert str(named) in errors[0] or named.name in errors[0], (
            f"{case}: file not named\n{output}"
        )


def fuzz(
    tmp: Path,
    target: str,
    table: pa.Table,
    text_col: str,
    key_cols: list[str],
    setup: Callable[[Path], list[str]],
    only: set[str] | None = None,
) -> dict[str, int]:
    """Run the stage once per mutation of `target` (a file name under the case's input dir)."""
    codes = {}
    for k, (case, what) in enumerate(mutations(table, text_col, key_cols)):
        if only is not None and case not in only:
            continue
        case_dir = tmp / f"{k:02d}-{case}"
        args = setup(case_dir)  # writes the other (valid) inputs, returns the CLI args
        _write(case_dir / "in" / target, what)
        code, output = _run(args)
        check_outcome(code, output, case_dir / "in" / target, f"{target} {case}")
        codes[case] = code
    return codes


# --- valid inputs -------------------------------------------------------------------------
WORDS = "the river bridge town market school garden window letter music story travel".split()


def documents(n: int = 12) -> pa.Table:
    rng = random.Random(SEED)
    texts = [" ".join(rng.choice(WORDS) for _ in range(60)).capitalize() + "." for _ in range(n)]
    return pa.table(
        {
            "id": [f"d{i}" for i in range(n)],
            "url": [f"http://127.0.0.1/p{i}" for i in range(n)],
            "host": ["127.0.0.1"] * n,
            "text": texts,
            "title": [f"Page {i}" for i in range(n)],
            "training_allowed": [i % 3 != 0 for i in range(n)],
            "noai": [False] * n,
            "noimageai": [False] * n,
        }
    )


def test_filter_documents(tmp_path):
    config = tmp_path / "filter.yaml"
    config.write_text(yaml.safe_dump({"quality": {"use_default_models": False}}))

    def setup(case: Path) -> list[str]:
        args = ["filter", "--docs", str(case / "in"), "--out", str(case / "out")]
        return [*args, "--config", str(config), "--runner", "InProcess"]

    assert _run(setup(tmp_path / "valid") + [])[0] in (0, 2)
    _write(tmp_path / "valid" / "in" / "documents.parquet", documents())
    code, output = _run(setup(tmp_path / "valid"))
    assert code == 0, output
    codes = fuzz(tmp_path, "documents.parquet", documents(), "text", ["id", "url"], setup)
    assert codes["text-int64"] == 2 and codes["empty-file"] == 2 and codes["truncated"] == 2


def test_images_build_documents_and_refs(tmp_path):
    docs = documents(4)
    refs = pa.table(
        {
            "doc_id": ["d0", "d1", "d2", "d3"],
            "url": [f"http://127.0.0.1/p{i}" for i in range(4)],
            "position": pa.array([0, 1, 2, 3], pa.int32()),
            # no image is fetched: page opt-outs, and hosts no connection could use
            "src": ["http://a..test/x.png", "http://[::1/y.png", "http://x:99999/z.png", ""],
            "alt": ["a cat", "a dog", "", None],
            "surrounding_text": ["t"] * 4,
            "training_allowed": [True, True, False, True],
        }
    )
    inter = pa.table(
        {
            "doc_id": ["d0"],
            "url": ["http://127.0.0.1/p0"],
            "blocks": [[{"kind": "text", "text": "hello", "src": None, "alt": None}]],
            "training_allowed": [True],
        }
    )

    def setup_with(target: str) -> Callable[[Path], list[str]]:
        def setup(case: Path) -> list[str]:
            for name, table in (
                ("documents.parquet", docs),
                ("image_refs.parquet", refs),
                ("interleaved.parquet", inter),
            ):
                if name != target:
                    _write(case / "in" / name, table)
            return ["images", "build", "--docs", str(case / "in"), "--out", str(case / "out")]

        return setup

    _write(tmp_path / "valid" / "in" / "documents.parquet", docs)
    code, output = _run(setup_with("documents.parquet")(tmp_path / "valid"))
    assert code == 0, output
    fuzz(
        tmp_path / "d",
        "documents.parquet",
        docs,
        "text",
        ["id", "training_allowed"],
        setup_with("documents.parquet"),
    )
    codes = fuzz(
        tmp_path / "r",
        "image_refs.parquet",
        refs,
        "src",
        ["doc_id", "position", "src"],
        setup_with("image_refs.parquet"),
    )
    assert codes["missing-position"] == 2


# --- extract: pages.parquet -----------------------------------------------------------------
@pytest.fixture(scope="module")
def small_crawl(tmp_path_factory):
    """A crawl of 4 loopback pages (pages.parquet + warc/), made once."""
    import asyncio

    from aiohttp import web

    from crawlers.crawl import crawl
    from tests.crawl.loopback import LoopbackServer

    body = "<p>" + " ".join(WORDS * 8) + "</p>"

    class Site(LoopbackServer):
        async def _handle(self, request):
            if request.path == "/robots.txt":
                return web.Response(text="User-agent: *\nAllow: /\n")
            links = "".join(f"<a href='/p{i}'>p{i}</a>" for i in range(3))
            html = f"<html><head><title>T</title></head><body><article>{body}{links}</article>"
            return web.Response(text=html + "</body></html>", content_type="text/html")

    out = tmp_path_factory.mktemp("fuzzcrawl")
    with Site(["127.0.0.235"]) as s:
        config = {"delay": 0.0, "allow_private_networks": True, "robots_retries": 0}
        asyncio.run(crawl([f"http://127.0.0.235:{s.port}/"], out, config))
    return out


def test_extract_pages(tmp_path, small_crawl):
    import shutil

    pages = pq.read_table(small_crawl / "pages.parquet")

    def setup(case: Path) -> list[str]:
        shutil.copytree(small_crawl / "warc", case / "in" / "warc")
        return ["extract", "--crawl", str(case / "in"), "--out", str(case / "out")] + [
            "--render",
            "never",
        ]

    valid = tmp_path / "valid"
    args = setup(valid)
    shutil.copy(small_crawl / "pages.parquet", valid / "in" / "pages.parquet")
    code, output = _run(args)
    assert code == 0 and '"documents": 4' in output, output
    # A Beam run takes ~2 s: the file-level cases (fail before it) and a few row-level ones.
    only = {"empty-file", "truncated", "footer-only", "not-parquet", "missing-url"}
    only |= {"url-float", "status-float", "title-bad-utf8", "title-nul", "url-junk"}
    codes = fuzz(
        tmp_path, "pages.parquet", pages, "title", ["url", "warc_file", "status"], setup, only
    )
    assert codes["title-nul"] == 0 and codes["url-junk"] == 0 and codes["truncated"] == 2


# --- mix build: a text source and a charts source -------------------------------------------
@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from training.tokenizer import train_tokenizer

    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    train_tokenizer(documents(40)["text"].to_pylist(), 300, path)
    return path


def _mix_setup(tokenizer: Path, charts: pa.Table | None, docs: pa.Table | None, png: bytes):
    def setup(case: Path) -> list[str]:
        src = case / "in"
        if docs is not None:
            _write(src / "documents.parquet", docs)
        if charts is not None:
            _write(src / "charts.parquet", charts)
        (src / "images").mkdir(parents=True, exist_ok=True)
        (src / "images" / "c0.png").write_bytes(png)
        spec = {
            "name": "fuzz",
            "seq_len": 32,
            "total_tokens": 1500,
            "seed": 1,
            "tokenizer": str(tokenizer),
            "shard_sequences": 16,
            "image_tokens": 4,
            "allow_shortfall": True,
            "buckets": {
                "text": {"weight": 0.8, "sources": [{"path": str(src / "documents.parquet")}]},
                "charts": {
                    "weight": 0.2,
                    "modality": "image_caption",
                    "sources": [{"path": str(src / "charts.parquet"), "kind": "charts"}],
                },
            },
            "eval": {"sequences_per_group": 0, "max_fraction": 0.05},
        }
        (case / "spec.yaml").write_text(yaml.safe_dump(spec))
        return ["mix", "build", str(case / "spec.yaml"), "--out", str(case / "mix")]

    return setup


def test_mix_build_sources(tmp_path, tokenizer):
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (9, 99, 199)).save(buf, "PNG")
    qa = [{"question": "Value?", "answer": "4", "kind": "lookup", "verified": True}]
    charts = pa.Table.from_pylist(
        [
            {"id": f"c{i}", "image_path": p, "qa": qa}
            for i, p in enumerate(["images/c0.png", "images/c0.png", "images/c0.png"])
        ]
    )
    docs = documents(16)
    code, output = _run(_mix_setup(tokenizer, charts, docs, buf.getvalue())(tmp_path / "valid"))
    assert code == 0, output
    only = {"empty-file", "truncated", "not-parquet", "no-rows", "missing-id"}
    only |= {"missing-training_allowed", "text-int64", "text-null", "text-nul", "text-bad-utf8"}
    only |= {"training_allowed-float", "id-junk"}
    setup = _mix_setup(tokenizer, charts, None, buf.getvalue())
    fuzz(tmp_path / "d", "documents.parquet", docs, "text", ["id", "training_allowed"], setup, only)
    only = {"empty-file", "truncated", "missing-image_path", "image_path-int64"}
    only |= {"image_path-junk", "image_path-nul", "image_path-bad-utf8", "id-float"}
    setup = _mix_setup(tokenizer, None, docs, buf.getvalue())
    fuzz(tmp_path / "c", "charts.parquet", charts, "image_path", ["id", "image_path"], setup, only)


# --- images interleaved: pairs.parquet ------------------------------------------------------
def test_images_interleaved_pairs(tmp_path):
    inter = pa.table(
        {
            "doc_id": ["d0", "d1"],
            "url": ["http://127.0.0.1/p0", "http://127.0.0.1/p1"],
            "blocks": [
                [
                    {"kind": "text", "text": " ".join(WORDS), "src": None, "alt": None},
                    {"kind": "image", "text": None, "src": "http://127.0.0.1/a.png", "alt": "a"},
                ],
                [{"kind": "text", "text": " ".join(WORDS * 2), "src": None, "alt": None}],
            ],
            "training_allowed": [True, True],
        }
    )
    pairs = pa.table(
        {
            "id": ["d0-1"],
            "doc_id": ["d0"],
            "src": ["http://127.0.0.1/a.png"],
            "position": pa.array([1], pa.int32()),
            "caption": ["a red square"],
            "image_path": ["images/a.png"],
            "drop_reason": pa.array([None], pa.string()),
            "clip_score": pa.array([None], pa.float32()),
            "training_allowed": [True],
        }
    )

    def setup(case: Path) -> list[str]:
        _write(case / "docs" / "interleaved.parquet", inter)
        args = ["images", "interleaved", "--docs", str(case / "docs"), "--pairs"]
        return [*args, str(case / "in" / "pairs.parquet"), "--out", str(case / "out")]

    _write(tmp_path / "valid" / "in" / "pairs.parquet", pairs)
    code, output = _run(setup(tmp_path / "valid"))
    assert code == 0, output
    codes = fuzz(tmp_path, "pairs.parquet", pairs, "caption", ["doc_id", "position", "src"], setup)
    assert codes["missing-position"] == 2 and codes["caption-nul"] == 0


# --- synth tables and quality train: the file-level cases (a valid run renders or trains) ---
def test_synth_tables_and_quality_labels(tmp_path):
    cells = pa.list_(pa.list_(pa.string()))
    tables = pa.table(
        {
            "doc_id": ["d0"],
            "url": ["http://127.0.0.1/p0"],
            "table_index": pa.array([0], pa.int32()),
            "markdown": ["| a | b |\n|---|---|\n| 1 | 2 |"],
            "header": [["a", "b"]],
            "cells": pa.array([[["a", "b"], ["1", "2"]]], cells),
            "n_rows": pa.array([2], pa.int32()),
            "n_cols": pa.array([2], pa.int32()),
            "training_allowed": [True],
        }
    )
    file_level = {"empty-file", "truncated", "footer-only", "not-parquet"}

    def tables_setup(case: Path) -> list[str]:
        return ["synth", "tables", "--tables", str(case / "in"), "--out", str(case / "out")]

    only = file_level | {"missing-doc_id", "missing-table_index", "markdown-int64"}
    only |= {"markdown-bad-utf8", "doc_id-float", "table_index-float"}
    codes = fuzz(
        tmp_path / "t",
        "tables.parquet",
        tables,
        "markdown",
        ["doc_id", "table_index"],
        tables_setup,
        only,
    )
    assert set(codes.values()) == {2}

    def labels_setup(case: Path) -> list[str]:
        args = ["quality", "train", "--lang", "en", "--labels", str(case / "in" / "labels.parquet")]
        return [*args, "--out", str(case / "out" / "m.bin")]

    only = file_level | {"missing-text", "text-int64", "text-null", "text-bad-utf8", "lang-float"}
    labels = documents(6).append_column("lang", pa.array(["en"] * 6))
    codes = fuzz(tmp_path / "q", "labels.parquet", labels, "text", ["lang"], labels_setup, only)
    assert set(codes.values()) == {2}
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_bytes(b'{"text": "fine", "lang": "en"}\n{"text": "cut\n[1, 2]\n\xff\xfe\n')
    code, output = _run(
        ["quality", "train", "--lang", "en", "--labels", str(jsonl)]
        + ["--out", str(tmp_path / "j" / "m.bin")]
    )
    check_outcome(code, output, jsonl, "labels.jsonl bad lines")
    assert code == 2 and "line 2" in output
    # JSON allows a lone surrogate escape; it is no text (no UTF-8 writer takes it)
    jsonl.write_bytes(b'{"text": "fine", "lang": "en"}\n{"text": "cut \\ud83d", "lang": "en"}\n')
    code, output = _run(
        ["quality", "train", "--lang", "en", "--labels", str(jsonl)]
        + ["--out", str(tmp_path / "s" / "m.bin")]
    )
    check_outcome(code, output, jsonl, "labels.jsonl lone surrogate")
    assert code == 2 and "line 2" in output and "surrogate" in output, output


def test_tokenizer_train_sources(tmp_path):
    def setup(case: Path) -> list[str]:
        args = ["tokenizer", "train", "--sources", str(case / "in" / "documents.parquet")]
        return [*args, "--out", str(case / "out" / "t.json"), "--vocab-size", "300"]

    docs = documents(12)
    _write(tmp_path / "valid" / "in" / "documents.parquet", docs)
    code, output = _run(setup(tmp_path / "valid"))
    assert code == 0, output
    only = {"empty-file", "truncated", "not-parquet", "missing-text", "text-int64"}
    only |= {"text-bad-utf8", "text-nul", "text-null", "training_allowed-float"}
    codes = fuzz(
        tmp_path, "documents.parquet", docs, "text", ["text", "training_allowed"], setup, only
    )
    assert codes["text-nul"] == 0 and codes["text-int64"] == 2


def test_pairs_readers_name_the_file(tmp_path):
    """The readers of pairs.parquet and domain_images.parquet (synth captions, domain QA, the
    captioner): an empty, truncated or non-Parquet file is one error naming it."""
    from common.inputs import InputError
    from common.pairs import kept_pairs
    from synth.captions import read_pairs as caption_pairs
    from synth.domain_qa import read_domain_images
    from synth.domain_qa import read_pairs as qa_pairs

    sink = pa.BufferOutputStream()
    pq.write_table(documents(3), sink)
    data = sink.getvalue().to_pybytes()
    for k, what in enumerate((b"", data[: len(data) // 2], b"id,caption\n")):
        d = tmp_path / str(k)
        d.mkdir()
        (d / "pairs.parquet").write_bytes(what)
        (d / "domain_images.parquet").write_bytes(what)
        for read in (caption_pairs, lambda p: qa_pairs([p]), kept_pairs, read_domain_images):
            target = "domain_images.parquet" if read is read_domain_images else "pairs.parquet"
            with pytest.raises(InputError, match=target):
                read(d / target)


def test_consent_recheck_documents(tmp_path, monkeypatch):
    """The recheck's documents.parquet (its URLs are loopback and the SSRF guard is on: nothing
    is sent; every host is reported unreachable)."""

    def setup(case: Path) -> list[str]:
        monkeypatch.setenv("REFINERY_HOME", str(case / "lake"))
        (case / "lake").mkdir(parents=True, exist_ok=True)
        if not (case / "lake" / "extract").exists():
            (case / "lake" / "extract").symlink_to(case / "in")
        return ["consent", "recheck", "--delay", "0"]

    docs = documents(4)
    _write(tmp_path / "valid" / "in" / "documents.parquet", docs)
    code, output = _run(setup(tmp_path / "valid"))
    assert code == 0, output
    only = {"empty-file", "truncated", "not-parquet", "missing-url", "url-junk", "url-float"}
    only |= {"text-bad-utf8", "no-rows"}
    codes = fuzz(tmp_path, "documents.parquet", docs, "text", ["url"], setup, only)
    assert codes["url-junk"] == 0 and codes["empty-file"] == 2
