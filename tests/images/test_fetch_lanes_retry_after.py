"""The image fetch's scheduling and waiting: refs taken round-robin over servers (a site's refs in
a row do not hold every worker on one server), a long Retry-After not waited for (resumed
instead), one fetch for every spelling of a URL, and an unreachable robots.txt named."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from crawlers.images import FETCHED, fetch_images
from crawlers.images.config import ImageFetchConfig
from crawlers.images.fetch import _Lanes

from .conftest import FAST, ImageServer, Resource, png, ref

A, B = "127.0.0.153", "127.0.0.154"


class OrderedServer(ImageServer):
    """An ImageServer that also keeps the order of the image requests it received."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.order: list[tuple[str, str]] = []

    async def _handle(self, request):
        if request.path != "/robots.txt":
            self.order.append((request.transport.get_extra_info("sockname")[0], request.path))
        return await super()._handle(request)


@pytest.fixture
def ordered_server():
    servers: list[OrderedServer] = []

    def start(routes, robots=None, ips=(A, B)):
        server = OrderedServer(list(ips), routes, robots or {})
        server.__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _rows(out):
    return pq.read_table(out / FETCHED).to_pylist()


def test_lanes_take_round_robin_over_servers_with_a_free_connection():
    """Refs of one site in a row: the next ref taken is the next server's, never a busy one's."""
    refs = [ref(f"a{i}", f"http://{A}/a{i}.png") for i in range(3)]
    refs += [ref(f"b{i}", f"http://{B}/b{i}.png") for i in range(2)]
    refs.append(ref("o", f"http://{A}/o.png", training_allowed=False))  # requests nothing
    lanes = _Lanes(refs, per_server=1)
    taken = [lanes.take() for _ in range(4)]
    assert [r["id"] if r else None for _, r in (t or (None, None) for t in taken)] == [
        "a0",
        "b0",
        "o",
        None,  # both servers busy
    ]
    lanes.done(taken[0][0])
    assert lanes.take()[1]["id"] == "a1"
    assert lanes.take() is None


def test_a_sites_refs_in_a_row_do_not_hold_the_other_servers(ordered_server, tmp_path):
    """Old: every worker queued on A's politeness slot, B's first image asked after A's second."""
    routes = {f"/i{i}.png": Resource(png(40, 40, (i, 9, 9))) for i in range(6)}
    server = ordered_server(routes)
    refs = [ref(f"a{i}", server.url(A, f"/i{i}.png")) for i in range(4)]
    refs += [ref(f"b{i}", server.url(B, f"/i{i + 4}.png")) for i in range(2)]
    cfg = {**FAST, "delay": 0.5, "concurrency": 4, "per_host_connections": 1}
    summary = fetch_images(refs, tmp_path, cfg)
    assert summary["stored"] == 6, summary
    assert [r["id"] for r in _rows(tmp_path)] == [r["id"] for r in refs]  # input order
    first_two = server.order[:2]
    assert {ip for ip, _ in first_two} == {A, B}, server.order


@pytest.mark.timeout(60)
def test_a_long_retry_after_is_not_waited_for_and_resume_asks_again(image_server, tmp_path):
    """Old: 429 Retry-After 3600 paused the image 300 s per try (max_retry_after) and retried."""
    routes = {
        "/busy.png": Resource(b"slow down", "text/plain", 429, headers={"Retry-After": "3600"}),
        "/next.png": Resource(png(40, 40)),
    }
    server = image_server(routes, ips=[A])
    refs = [ref("busy", server.url(A, "/busy.png")), ref("next", server.url(A, "/next.png"))]
    cfg = {**FAST, "max_retries": 2, "concurrency": 4}
    first = fetch_images(refs, tmp_path, cfg)
    busy, nxt = _rows(tmp_path)
    assert busy["drop_reason"] == "http_status" and busy["status"] == 429
    assert "Retry-After 3600 s" in busy["error"] and "max_retry_after_s=3" in busy["error"]
    # the host asked to wait: its other image is not asked for now, but by the resume
    assert nxt["drop_reason"] == "fetch_error" and nxt["error"].startswith("host-paused"), nxt
    assert server.hits("/busy.png") == 1 and server.hits("/next.png") == 0, first
    routes["/busy.png"] = Resource(png(41, 41))  # the server is back
    second = fetch_images(refs, tmp_path, cfg, resume=True)
    assert second["stored"] == 2 and second["resumed_rows"] == 0, second
    assert server.hits("/busy.png") == 2 and server.hits("/next.png") == 1


def test_max_retry_after_defaults_to_the_timeout():
    cfg = ImageFetchConfig(timeout_s=7)
    assert cfg.max_retry_after_s == 7 and cfg.crawl_config().max_retry_after == 7
    assert ImageFetchConfig(max_retry_after_s=60).crawl_config().max_retry_after == 60


def test_every_spelling_of_a_url_is_fetched_once(image_server, tmp_path):
    server = image_server({"/a.png": Resource(png(40, 40))}, ips=[A])
    url = server.url(A, "/a.png")
    spellings = [url, url + "#top", url.replace("http://", "HTTP://"), f" {url}\n"]
    refs = [ref(f"r{i}", src) for i, src in enumerate(spellings)]
    fetch_images(refs, tmp_path, FAST)
    rows = _rows(tmp_path)
    assert [r["src"] for r in rows] == spellings  # each row keeps its own src
    assert len({r["image_path"] for r in rows}) == 1 and rows[0]["image_path"]
    assert server.hits("/a.png") == 1


def test_robots_unreachable_names_the_robots_url_and_the_cause(image_server, tmp_path):
    server = image_server({"/x.png": Resource(png(40, 40))}, robots={A: [(503, "down")]}, ips=[A])
    fetch_images([ref("x", server.url(A, "/x.png"))], tmp_path, FAST)
    error = _rows(tmp_path)[0]["error"]
    assert error.startswith("robots-unreachable: robots.txt for RefineryBot"), error
    assert server.url(A, "/robots.txt") in error and "HTTP 503" in error, error
