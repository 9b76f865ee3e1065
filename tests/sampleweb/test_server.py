"""Serving over real HTTP on 127.0.0.N: every page, robots variants, gzip/HEAD/304, traps, clean stop."""

from __future__ import annotations

import gzip
import http.client
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sampleweb import serve


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(_NoRedirect)


def _get(url: str, headers: dict | None = None, method: str = "GET"):
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with OPENER.open(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.mark.timeout(120)
def test_every_page_is_served_with_its_status_and_headers(web, served):
    for (site, path), page in web.pages.items():
        status, headers, body = _get(served.url(site, path))
        assert status == page.status, (site, path)
        assert headers["Content-Type"] == page.content_type
        if page.headers.get("X-Robots-Tag"):
            assert headers["X-Robots-Tag"] == page.headers["X-Robots-Tag"]
        if "{{site:" not in page.body.decode("utf-8", "replace"):
            assert body == page.body, (site, path)
        else:
            assert b"{{site:" not in body and b"http://127.0.0." in body


@pytest.mark.timeout(30)
def test_each_site_answers_on_its_own_address(web, served):
    hosts = {urlsplit(served.base_url(s.name)).hostname for s in web.sites}
    assert len(hosts) == len(web.sites)
    assert served.seeds()[0] == f"http://127.0.0.40:{served.port}/"
    # A path that exists only on forum-en is a 404 on news-en: each address serves one site.
    assert _get(served.url("forum-en", "/loop/a"))[0] == 302
    assert _get(served.url("news-en", "/loop/a"))[0] == 404


@pytest.mark.timeout(30)
def test_robots_variants_and_redirects(served):
    assert _get(served.url("portal-multi", "/robots.txt"))[0] == 503
    assert _get(served.url("mirror-multi", "/robots.txt"))[0] == 404
    status, _, body = _get(served.url("news-en", "/robots.txt"))
    assert (
        status == 200
        and b"RefineryBot-Extended" in body
        and f"Sitemap: {served.base_url('news-en')}".encode() in body
    )
    status, headers, _ = _get(served.url("news-en", "/moved/wiki"))
    assert status == 301 and headers["Location"] == served.base_url("wiki-en") + "/"
    assert _get(served.url("forum-en", "/loop/b"))[1]["Location"] == "/loop/a"


@pytest.mark.timeout(30)
def test_gzip_head_and_if_modified_since(web, served):
    page = next(p for p in web.pages.values() if p.gzip)
    status, headers, body = _get(served.url(page.site, page.path), {"Accept-Encoding": "gzip"})
    assert headers.get("Content-Encoding") == "gzip" and gzip.decompress(body) == page.body
    status, headers, body = _get(served.url(page.site, page.path), method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) == len(page.body)
    lm = page.headers["Last-Modified"]
    assert _get(served.url(page.site, page.path), {"If-Modified-Since": lm})[0] == 304


@pytest.mark.timeout(30)
def test_calendar_trap_links_onwards_forever(served):
    status, _, body = _get(served.url("news-en", "/calendar/2026/12"))
    assert (
        status == 200 and b'href="/calendar/2027/1"' in body and b'href="/calendar/2026/11"' in body
    )
    assert _get(served.url("news-en", "/calendar/3001/7"))[0] == 200
    assert _get(served.url("news-en", "/calendar/2026/13"))[0] == 404


@pytest.mark.timeout(30)
def test_labels_table_carries_served_urls(web, served):
    table = served.labels_table()
    assert table.num_rows == len(web.pages)
    assert all(u.startswith("http://127.0.0.") for u in table.column("url").to_pylist())


@pytest.mark.timeout(60)
def test_server_stops_cleanly_even_with_an_open_keepalive_connection(web):
    before = {t.name for t in threading.enumerate()}
    sw = serve(web, first_octet=80, port=0)
    host = urlsplit(sw.base_url("news-en")).hostname
    conn = http.client.HTTPConnection(host, sw.port, timeout=10)
    conn.request("GET", "/")
    conn.getresponse().read()  # the connection stays open (HTTP/1.1 keep-alive)
    sw.stop()
    conn.close()
    leftover = {t.name for t in threading.enumerate() if t.is_alive()} - before
    assert not [n for n in leftover if n.startswith("sampleweb-")]
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://{host}:{sw.port}/", timeout=2)


@pytest.mark.timeout(60)
def test_module_cli_serves_until_sigterm(tmp_path: Path):
    seeds = tmp_path / "seeds.txt"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sampleweb",
            "serve",
            "--first-octet",
            "120",
            "--seeds-out",
            str(seeds),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(200):
            if seeds.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        urls = seeds.read_text().split()
        assert len(urls) >= 12 and urls[0].startswith("http://127.0.0.120:")
        assert _get(urls[0])[0] == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
