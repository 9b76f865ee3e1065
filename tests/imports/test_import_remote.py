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
from tests.crawl.loopback import LoopbackServer, SocketListener
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


class IndexServer(ArchiveServer):
    """ArchiveServer that answers a directory with an HTML index of its files (what fsspec's
    HTTP glob lists) and records every request path."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.requests: list[str] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        path = self.root / request.path.strip("/")
        if path.is_dir():
            links = "".join(f'<a href="{p.name}">{p.name}</a>' for p in sorted(path.iterdir()))
            return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        return await super()._handle(request)


def test_an_http_glob_is_listed_through_the_guard(tmp_path):
    """fsspec's own HTTP client listed a glob (GET /glob/, its isdir checks) before the guard
    was ever asked: a private server got requests with --allow-private-networks off."""
    from crawlers.imports.run import expand
    from crawlers.imports.sources import RemoteRefused

    (tmp_path / "glob").mkdir()
    for name in ("b", "a"):
        _warc(tmp_path / "glob" / f"{name}.warc.gz", 1)
    with IndexServer(tmp_path) as server:
        pattern = f"http://{HOST}:{server.port}/glob/*.warc.gz"
        with pytest.raises(RemoteRefused, match=r"refused 127\.0\.0\.7 .*loopback"):
            expand([pattern])
        with pytest.raises(RemoteRefused, match="loopback"):
            import_warc([pattern], tmp_path / "out", offline=True)
        assert server.requests == []  # nothing reached the server, not even the listing
        # allowed: the same glob is listed, through the guarded client
        assert expand([pattern], allow_private=True) == [
            f"http://{HOST}:{server.port}/glob/a.warc.gz",
            f"http://{HOST}:{server.port}/glob/b.warc.gz",
        ]
        s = import_warc([pattern], tmp_path / "out", config=ALLOWED, offline=True)
    assert (s["files"], s["records"]) == (2, 2)


ALLOWED = {"allow_private_networks": True}


class TcpListener(SocketListener):
    """A raw TCP listener on 127.0.0.7 that counts the connections it accepts (any protocol:
    FTP, WebHDFS, ...); it stops by itself after `seconds`, or when the block ends."""

    def __init__(self, seconds: float = 30.0):
        import socket

        sock = socket.socket()
        sock.bind((HOST, 0))
        sock.listen(8)
        sock.settimeout(0.2)
        super().__init__(sock, seconds)
        self.port = sock.getsockname()[1]
        self.connections = 0

    def _listen(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.connections += 1
        conn.close()


@pytest.mark.parametrize(
    "url",
    [
        "ftp://{host}:{port}/x.warc.gz",
        "FTP://{host}:{port}/x.warc.gz",
        "webhdfs://{host}:{port}/x.warc.gz",
        "simplecache::http://{host}:{port}/x.warc.gz",
        "zip://x.warc::ftp://{host}:{port}/x.zip",
    ],
)
def test_a_scheme_past_the_guard_is_refused_before_any_connection(tmp_path, url):
    """fsspec schemes other than http(s) were opened unchecked: ftp://127.0.0.2:PORT connected
    with --allow-private-networks off."""
    from crawlers.imports.run import expand
    from crawlers.imports.sources import RemoteRefused

    with TcpListener() as listener:
        source = url.format(host=HOST, port=listener.port)
        with pytest.raises(RemoteRefused) as err:
            import_warc([source], tmp_path / "out", offline=True)
        with pytest.raises(RemoteRefused):
            expand([source.replace("x.warc.gz", "*.warc.gz")])
        assert listener.connections == 0
    message = str(err.value)
    assert "\n" not in message and message.startswith(source)
    assert "--allow-private-networks" in message and "http(s)://" in message
    scheme = source.split("://", 1)[0]
    assert (f"scheme {scheme.lower()!r}" if "::" not in source else "chained") in message


def test_a_scheme_past_the_guard_stays_refused_when_private_networks_are_allowed(tmp_path):
    # --allow-private-networks lifts loopback and private addresses for the guard; a scheme whose
    # connections the guard never sees (FTP's data channel, webhdfs redirects) stays refused.
    from crawlers.imports.sources import RemoteRefused

    with TcpListener() as listener:
        with pytest.raises(RemoteRefused):
            import_warc([f"ftp://{HOST}:{listener.port}/x.warc.gz"], tmp_path / "o", config=ALLOWED)
        assert listener.connections == 0


def test_files_from_lines_meet_the_scheme_check(tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    with TcpListener() as listener:
        line = f"ftp://{HOST}:{listener.port}/crawl/x.warc.gz"
        (tmp_path / "list.txt").write_text(f"{line}\n")
        args = ["import", "warc", "--files-from", str(tmp_path / "list.txt"), "--offline"]
        res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "o")])
        assert listener.connections == 0
    errors = [ln for ln in res.output.splitlines() if ln.startswith("error: ")]
    assert res.exit_code == 2 and len(errors) == 1, res.output
    assert line in errors[0] and "'ftp'" in errors[0] and "--allow-private-networks" in errors[0]


def test_object_store_and_local_urls_pass_the_scheme_check():
    from crawlers.imports.sources import RemoteRefused, check_scheme

    for url in ("s3://b/k", "gs://b/k", "gcs://b/k", "az://c/k", "abfs://c/k", "hf://datasets/x"):
        assert check_scheme(url) == url.split("://")[0]
    assert check_scheme("HTTPS://127.0.0.7/x") == "https"  # refused later, by the guard
    for url in ("ftp://h/x", "sftp://h/x", "smb://h/x", "webhdfs://h/x", "s3://b/k::ftp://h/y"):
        with pytest.raises(RemoteRefused):
            check_scheme(url)
        with pytest.raises(RemoteRefused):  # the guard cannot see their own connections
            check_scheme(url, allow_private=True)


def test_an_http_corpus_is_read_through_the_guard_and_only_when_allowed(tmp_path):
    """`import docs` of a JSONL corpus on a loopback server: refused with nothing sent unless
    private networks are allowed, then read (through the guarded client)."""
    from crawlers.imports.docs import import_docs
    from crawlers.imports.sources import RemoteRefused

    (tmp_path / "corpus.jsonl").write_text('{"text": "a corpus row read over http"}\n')
    with IndexServer(tmp_path) as server:
        url = f"http://{HOST}:{server.port}/corpus.jsonl"
        with pytest.raises(RemoteRefused, match="loopback"):
            import_docs([url], tmp_path / "refused", license="cc-by-4.0", offline=True)
        assert server.requests == []
        s = import_docs([url], tmp_path / "out", license="cc-by-4.0", config=ALLOWED, offline=True)
    assert s["documents"] == 1, s
