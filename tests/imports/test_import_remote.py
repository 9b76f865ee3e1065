"""`import warc` of remote archives: an http:// WARC on a loopback server that answers byte
ranges is split into ranges like a local file (each range read with Range requests, its page
records copied), and the SSRF guard refuses a private address unless allowed."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from aiohttp import web

from crawlers.extract.warc import read_response
from crawlers.imports.run import import_warc, plan
from tests.crawl.loopback import LoopbackServer
from tests.imports.archives import page
from tests.imports.styles import HTML, http, record

HOST = "127.0.0.7"


class ArchiveServer(LoopbackServer):
    """Serves files of one directory with byte ranges (aiohttp's FileResponse); counts the
    requests that asked for a range."""

    label = "archive server"

    def __init__(self, root: Path, mode: str = "ranges"):
        super().__init__([HOST])
        self.root, self.mode = root, mode  # ranges | no_ranges | no_length (streamed)
        self.ranges = 0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = self.root / request.path.lstrip("/")
        if not path.is_file():
            return web.Response(status=404)
        self.ranges += "Range" in request.headers
        if self.mode == "ranges":
            return web.FileResponse(path)
        if self.mode == "no_ranges":  # the whole file whatever was asked
            return web.Response(body=path.read_bytes(), headers={"Accept-Ranges": "none"})
        resp = web.StreamResponse()  # chunked: no Content-Length either
        await resp.prepare(request)
        await resp.write(path.read_bytes())
        await resp.write_eof()
        return resp


def _warc(path: Path, n: int) -> Path:
    recs = [
        record(
            "response",
            f"http://127.0.0.2/r{i}",
            http("HTTP/1.1 200 OK", HTML, page(f"Remote {i}") * 3),
        )
        for i in range(n)
    ]
    path.write_bytes(b"".join(gzip.compress(r) for r in recs))
    return path


def _rows(out: Path) -> tuple[list[dict], list[dict]]:
    pages = pq.read_table(out / "pages.parquet").to_pylist()
    return pages, pq.read_table(out / "skipped.parquet").to_pylist()


def test_a_remote_warc_is_split_by_byte_ranges_like_a_local_one(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    local = _warc(served / "cc.warc.gz", 30)
    with ArchiveServer(served) as server:
        url = f"http://{HOST}:{server.port}/cc.warc.gz"
        split = -(-local.stat().st_size // 4)
        assert len(plan([url], split, allow_private=True)) == 4
        out = tmp_path / "remote"
        cfg = {"allow_private_networks": True}
        s = import_warc([url], out, config=cfg, offline=True, split_bytes=split)
        assert (s["ranges"], s["ranges_scanned"]) == (4, 4)
        assert server.ranges > 0
        again = import_warc([url], out, config=cfg, offline=True, split_bytes=split)
        assert again["ranges_scanned"] == 0  # resumed: every range finished
    whole = import_warc([str(local)], tmp_path / "local", offline=True, split_bytes=None)
    by_url = import_warc([f"file://{local}"], tmp_path / "file", offline=True, split_bytes=split)
    assert by_url["ranges"] == 4 and by_url["pages"] == 30  # file:// is a local file: in place
    assert {p["import_mode"] for p in _rows(tmp_path / "file")[0]} == {"referenced"}
    pages, skipped = _rows(out)
    ref, ref_skipped = _rows(tmp_path / "local")
    assert (s["pages"], s["skipped"]) == (whole["pages"], whole["skipped"]) == (30, 0)
    assert [p["url"] for p in pages] == [p["url"] for p in ref]
    assert [p["record_offset"] for p in pages] == [p["record_offset"] for p in ref]
    assert len({p["warc_file"] for p in pages}) == 4  # one copy per range
    for p in pages:
        assert p["import_mode"].startswith("copied: remote")
        resp = read_response(out / p["warc_file"], p["warc_offset"])
        assert resp.status == 200 and resp.body.startswith(b"<!doctype html>")


def test_a_remote_archive_on_a_private_address_is_refused_unless_allowed(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    _warc(served / "x.warc.gz", 2)
    with ArchiveServer(served) as server:
        url = f"http://{HOST}:{server.port}/x.warc.gz"
        with pytest.raises(ValueError, match="loopback|private|reserved"):
            import_warc([url], tmp_path / "out", offline=True)
        assert server.ranges == 0


@pytest.mark.parametrize("mode", ["no_ranges", "no_length"])
def test_a_server_without_byte_ranges_gives_the_file_whole(tmp_path, mode):
    """fsspec's streaming HTTP file says seekable() and raises on any move: the split check
    raised 'Cannot seek streaming HTTP file' and the import ended."""
    served = tmp_path / "served"
    served.mkdir()
    _warc(served / "cc.warc.gz", 12)
    with ArchiveServer(served, mode) as server:
        url = f"http://{HOST}:{server.port}/cc.warc.gz"
        cfg = {"allow_private_networks": True}
        s = import_warc([url], tmp_path / "out", config=cfg, offline=True, split_bytes=2000)
    assert (s["ranges"], s["records"], s["pages"], s["skipped"]) == (1, 12, 12, 0)
    for p in _rows(tmp_path / "out")[0]:
        assert read_response(tmp_path / "out" / p["warc_file"], p["warc_offset"]).status == 200
