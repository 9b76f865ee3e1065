"""Writing the sample web to a directory: files, labels.parquet and sites.json."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from sampleweb import write_to_lake


def test_write_to_lake_writes_every_page_and_the_labels(web, tmp_path):
    summary = write_to_lake(web, tmp_path)
    assert summary["pages"] == len(web.pages) and summary["content_pages"] >= 300
    labels = pq.read_table(tmp_path / "labels.parquet")
    assert labels.num_rows == len(web.pages)
    assert labels.column("url")[0].as_py() == "http://news-en.sampleweb.test/"
    sites = json.loads((tmp_path / "sites.json").read_text())["sites"]
    assert [s["name"] for s in sites] == [s.name for s in web.sites]
    home = (tmp_path / "site" / "news-en" / "index.html").read_bytes()
    assert b"{{site:" not in home
    assert (tmp_path / "site" / "forum-en" / "files").is_dir()
    written = sum(1 for p in (tmp_path / "site").rglob("*") if p.is_file())
    assert written == len(web.pages)
