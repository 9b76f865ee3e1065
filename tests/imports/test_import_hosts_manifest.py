"""`refinery import wet|docs` write a manifest beside every dataset, hosts.parquet included, as
`import warc` does (docs/schemas.md: "Every dataset has a manifest beside it")."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner
from warcio.warcwriter import WARCWriter

from common.manifest import read_manifest
from tests.imports.archives import ALLOW, DENY_TRAINING, base

FLAGS = ["--allow-private-networks", "--delay", "0"]


def _import(args: list[str]) -> dict:
    from pipelines.cli import app

    res = CliRunner().invoke(app, ["import", *args, *FLAGS])
    assert res.exit_code == 0, res.output
    return json.loads(res.output[res.output.index("{") :])


def _wet(path: Path, urls: list[str]) -> Path:
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for i, url in enumerate(urls):
            text = f"document {i} of the archive. " * 10
            payload = io.BytesIO(text.encode())
            w.write_record(
                w.create_warc_record(
                    url, "conversion", payload=payload, warc_content_type="text/plain"
                )
            )
    return path


def _assert_every_dataset_has_its_manifest(out: Path, summary: dict) -> None:
    written = sorted(p.name for p in out.glob("*.parquet"))
    assert written == ["documents.parquet", "hosts.parquet", "skipped.parquet"]
    for name in written:
        assert (out / f"{name}.manifest.json").is_file(), f"{name} has no manifest"
    hosts = read_manifest(out / "hosts.parquet")
    assert hosts["dataset"] == "hosts.parquet"
    assert hosts["rows"] == pq.read_metadata(out / "hosts.parquet").num_rows == summary["hosts"]
    assert summary["hosts"] == 2  # both origins asked: the manifest counts real rows
    skipped = read_manifest(out / "skipped.parquet")
    assert hosts["inputs"] == skipped["inputs"]
    assert hosts["config_sha256"] == skipped["config_sha256"]


def test_import_wet_writes_the_hosts_manifest(tmp_path, robots):
    a, d = base(ALLOW, robots.port), base(DENY_TRAINING, robots.port)
    wet = _wet(tmp_path / "x.warc.wet.gz", [f"{a}/one", f"{d}/two"])
    summary = _import(["wet", str(wet), "--out", str(tmp_path / "wet")])
    _assert_every_dataset_has_its_manifest(tmp_path / "wet", summary)


def test_import_docs_writes_the_hosts_manifest(tmp_path, robots):
    a, d = base(ALLOW, robots.port), base(DENY_TRAINING, robots.port)
    corpus = tmp_path / "c.jsonl"
    rows = [{"doc": "Licensed text.", "key": "a1", "link": f"{a}/p"}, {"doc": "More.", "key": "a2"}]
    rows.append({"doc": "Crawled text.", "key": "a3", "link": f"{d}/q"})
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["docs", str(corpus), "--out", str(tmp_path / "docs"), "--text-field", "doc"]
    summary = _import([*args, "--id-field", "key", "--url-field", "link", "--license", "cc-by"])
    _assert_every_dataset_has_its_manifest(tmp_path / "docs", summary)
