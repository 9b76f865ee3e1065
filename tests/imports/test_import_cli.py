"""The import commands as users call them (`refinery import warc|wet|docs`, Beam scan), the
`imported_pages` asset feeding `documents`, WET and corpus imports, and their error lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner
from warcio.warcwriter import WARCWriter

from tests.imports.archives import (
    ALLOW,
    DENY_TRAINING,
    base,
    page,
    response,
    write_warc,
)

FLAGS = ["--allow-private-networks", "--delay", "0"]


def _cli(args: list[str]) -> tuple[int, str]:
    from pipelines.cli import app

    res = CliRunner().invoke(app, args)
    return res.exit_code, res.output


def _wet(path: Path, records: list[tuple]) -> Path:
    """A WET file of (url, text[, WARC-Identified-Content-Language]) conversion records."""
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        w.write_record(w.create_warcinfo_record(path.name, {"software": "test"}))
        for url, text, *lang in records:
            rec = w.create_warc_record(
                url or "http://x/",
                "conversion",
                payload=io.BytesIO(text.encode()),
                warc_content_type="text/plain",
            )
            if lang:  # as Common Crawl writes it: CLD2's ISO 639-3 codes, most likely first
                rec.rec_headers.add_header("WARC-Identified-Content-Language", lang[0])
            if url is None:
                rec.rec_headers.remove_header("WARC-Target-URI")
            w.write_record(rec)
    return path


def test_cli_import_warc_through_beam_then_its_errors(tmp_path, robots):
    a, d = base(ALLOW, robots.port), base(DENY_TRAINING, robots.port)
    for i in range(3):  # one file per Beam element
        write_warc(
            tmp_path / f"f{i}.warc.gz",
            lambda w, i=i: (
                response(w, f"{a}/p{i}", page(f"P{i}")),
                response(w, f"{d}/q{i}", page(f"Q{i}")),
            ),
        )
    out = tmp_path / "imp"
    # Beam options after the files, one with its value apart: Beam's, not more file names
    beam = ["--direct_num_workers", "1", "--direct_running_mode=in_memory"]
    code, output = _cli(
        ["import", "warc", str(tmp_path / "f*.warc.gz"), "--out", str(out), *FLAGS, *beam]
    )
    assert code == 0, output
    s = json.loads(output[output.index("{") :])
    assert s["files"] == 3 and s["pages"] == 6 and s["training_allowed"] == 3 and s["hosts"] == 2
    markers = sorted((out / "parts").glob("*.done.json"))
    assert len(markers) == 3
    # partitioned by file: the in-process scan writes the very parts the Beam elements wrote
    from crawlers.imports.run import scan_in_process

    done = [json.loads(m.read_text()) for m in markers]
    scan_in_process([(m["source"], *m["range"]) for m in done], tmp_path / "local", done[0]["opts"])
    for m in markers:
        part = m.name.replace(".done.json", ".parquet")
        assert (out / "parts" / part).read_bytes() == (tmp_path / "local/parts" / part).read_bytes()
    rows = pq.read_table(out / "pages.parquet").to_pylist()
    assert {r["url"].rsplit("/", 1)[1]: r["training_allowed"] for r in rows} == {
        "p0": True, "p1": True, "p2": True, "q0": False, "q1": False, "q2": False,
    }  # fmt: skip
    # a glob matching nothing, a directory: one line naming it, exit 2
    code, output = _cli(["import", "warc", str(tmp_path / "none*.warc"), "--offline"])
    errors = [ln for ln in output.splitlines() if ln.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and "none*.warc" in errors[0], output
    code, output = _cli(["import", "warc", str(tmp_path), "--offline"])
    assert code == 2 and "a directory" in output, output


def test_import_wet_and_docs(tmp_path, robots):
    a, d = base(ALLOW, robots.port), base(DENY_TRAINING, robots.port)
    wet = _wet(
        tmp_path / "x.warc.wet.gz",
        [(f"{a}/w1", "first text " * 20, "spa,eng"), (f"{d}/w2", "second text " * 20, "arg"),
         (None, "no url"), (f"{a}/w3", "first text " * 20), (f"{a}/w4", ""),
         (f"{a}/w5", "fifth text " * 20)],
    )  # fmt: skip
    code, output = _cli(["import", "wet", str(wet), "--out", str(tmp_path / "wet"), *FLAGS])
    assert code == 0, output
    s = json.loads(output[output.index("{") :])
    docs = pq.read_table(tmp_path / "wet" / "documents.parquet").to_pylist()
    skipped = pq.read_table(tmp_path / "wet" / "skipped.parquet").to_pylist()
    assert s["records"] == len(docs) + len(skipped) == 7
    assert {r["skip_reason"] for r in skipped} == {
        "warcinfo", "missing_target_uri", "duplicate_payload", "empty_text",
    }  # fmt: skip
    by_url = {r["url"].rsplit("/", 1)[1]: r for r in docs}
    assert by_url["w1"]["training_allowed"] is True and by_url["w2"]["training_allowed"] is False
    assert by_url["w1"]["source"] == "import:wet" and by_url["w1"]["extraction_method"] == "cc-wet"
    assert by_url["w1"]["warc_record_id"] and by_url["w1"]["capture_time"]
    # lang_hint is a base code, as for crawled pages: Common Crawl's first guess, ISO 639-1
    assert [by_url[k]["lang_hint"] for k in ("w1", "w2", "w5")] == ["es", "an", None]
    assert "robots.txt at import: allowed" in by_url["w1"]["consent_source"]
    # a corpus: fields mapped; no URL -> the licence consents; a URL -> robots.txt decides
    corpus = tmp_path / "c.jsonl"
    lines = [
        {"body": "licensed text one", "key": "k1"},
        {"body": "crawled text", "key": "k2", "link": f"{d}/c2"},
        {"body": "allowed text", "key": "k3", "link": f"{a}/c3"},
        {"key": "k4"},
    ]
    corpus.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    args = ["import", "docs", str(corpus), "--out", str(tmp_path / "docs"), *FLAGS]
    args += ["--text-field", "body", "--id-field", "key", "--url-field", "link"]
    code, output = _cli([*args, "--license", "CC-BY-4.0"])
    assert code == 0, output
    docs = {r["id"]: r for r in pq.read_table(tmp_path / "docs" / "documents.parquet").to_pylist()}
    assert docs["k1"]["training_allowed"] is True
    assert docs["k1"]["consent_source"] == "licence: CC-BY-4.0"
    assert docs["k2"]["training_allowed"] is False and docs["k3"]["training_allowed"] is True
    skipped = pq.read_table(tmp_path / "docs" / "skipped.parquet").to_pylist()
    assert sorted(r["skip_reason"] for r in skipped) == ["empty_text", "malformed_row"]
    # without a licence, a document without a URL is not consented
    code, output = _cli([*args, "--offline"])
    docs = {r["id"]: r for r in pq.read_table(tmp_path / "docs" / "documents.parquet").to_pylist()}
    assert code == 0 and docs["k1"]["training_allowed"] is False
    assert all(not r["training_allowed"] for r in docs.values())
    assert docs["k3"]["consent_source"].startswith("offline")


def test_imported_pages_asset_feeds_documents(tmp_path, robots):
    """Dagster: imported_pages (config: files) is partitioned by file: partition k writes the
    lake crawl's shard=import-<k> with the files that hash to k, and the documents asset (not
    partitioned) depends on every partition."""
    from dagster import AssetKey, materialize

    from crawlers.imports.run import shard_of
    from pipelines.graph import build_definitions
    from pipelines.stages.imports import IMPORT_SHARDS

    src = write_warc(
        tmp_path / "d.warc.gz",
        lambda w: response(w, f"{base(ALLOW, robots.port)}/dag", page("Dagster page")),
    )
    lake = tmp_path / "lake"
    defs = build_definitions("local", root=lake)
    graph = defs.resolve_asset_graph()
    assert AssetKey("imported_pages") in graph.get(AssetKey("documents")).parent_keys
    keys = graph.get(AssetKey("imported_pages")).partitions_def.get_partition_keys()
    assert keys == [str(k) for k in range(IMPORT_SHARDS)]
    assert graph.get(AssetKey("documents")).partitions_def is None
    k = shard_of(str(src.resolve()), IMPORT_SHARDS)
    config = {"files": [str(src)], "allow_private_networks": True, "delay": 0.0}
    result = materialize(
        list(defs.assets),
        selection=[AssetKey("imported_pages")],
        resources=defs.resources,
        run_config={"ops": {"imported_pages": {"config": config}}},
        partition_key=str(k),
    )
    assert result.success
    rows = pq.read_table(lake / "crawl" / f"shard=import-{k}" / "pages.parquet").to_pylist()
    assert [r["training_allowed"] for r in rows] == [True]
    from crawlers.extract.crawl_io import crawl_shards

    assert any(f"shard=import-{k}" in p for p, _ in crawl_shards(lake / "crawl"))


def test_parquet_corpus(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": ["a licensed document"], "id": ["x"]}), path)
    from crawlers.imports.docs import import_docs

    s = import_docs([str(path)], tmp_path / "out", license="MIT", id_field="id", offline=True)
    assert s["documents"] == 1 and s["training_allowed"] == 1


@pytest.mark.parametrize(
    ("importer", "name", "says"),
    [
        ("warc", "none.warc.gz", "WARC/ARC files"),
        ("wet", "none.warc.wet.gz", "WET files"),
        ("docs", "none.jsonl", "JSONL/Parquet corpus files"),
    ],
)
def test_a_missing_file_names_what_its_importer_reads(tmp_path, importer, name, says):
    code, output = _cli(["import", importer, str(tmp_path / name), "--offline"])
    errors = [ln for ln in output.splitlines() if ln.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and name in errors[0], output
    assert says in errors[0], output
    assert importer == "warc" or "WARC/ARC" not in errors[0], output
