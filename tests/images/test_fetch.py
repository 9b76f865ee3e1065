"""The image fetch: every drop reason, consent before bytes, SSRF default, caps, rows in = rows out."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawlers.images import (
    DROP_REASONS,
    FETCHED,
    FETCHED_SCHEMA,
    JOURNAL,
    fetch_images,
    xrt_opt_out,
)

from .conftest import (
    AGENT,
    FAST,
    TRAINING_AGENT,
    Resource,
    encode,
    noisy_jpeg,
    png,
    png_claiming,
    ref,
)

A, B = "127.0.0.151", "127.0.0.152"
GOOD_PNG = png(64, 48)
GOOD_JPEG = noisy_jpeg(80, 60, seed=1)
BIG = 8 * 2**20  # a body far over max_bytes=2 MiB

ROUTES = {
    "/img/ok.png": Resource(GOOD_PNG),
    "/img/ok.jpg": Resource(GOOD_JPEG, "image/jpeg"),
    "/img/ok.webp": Resource(encode(50, 40, "WEBP"), "image/webp"),
    "/img/anim.gif": Resource(encode(40, 30, "GIF"), "image/gif"),
    "/img/ok.avif": Resource(encode(48, 36, "AVIF"), "image/avif"),
    "/img/octet.png": Resource(png(33, 33), "application/octet-stream"),
    "/img/logo.png": Resource(png(40, 40, (1, 2, 3))),
    "/private/secret.png": Resource(png(40, 40)),
    "/notrain/photo.png": Resource(png(40, 40)),
    "/img/redirect-private": Resource(location="/private/secret.png"),
    "/img/redirect-notrain": Resource(location="/notrain/photo.png"),
    "/img/redirect-ok": Resource(location="/img/ok.png"),
    "/img/noai.png": Resource(png(40, 40), headers={"X-Robots-Tag": "noai"}),
    "/img/noimageai.png": Resource(
        png(40, 40), headers={"X-Robots-Tag": f"{TRAINING_AGENT}: noimageai"}
    ),
    "/img/otherbot-noai.png": Resource(png(41, 41), headers={"X-Robots-Tag": "OtherBot: noai"}),
    "/img/reset.png": Resource(reset=True),
    "/img/gone.png": Resource(b"gone", "text/plain", status=410),
    "/img/page.html": Resource(b"<html><body>not an image</body></html>", "text/html"),
    "/img/svg-as.png": Resource(
        b'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"></svg>', "image/png"
    ),
    "/img/html-as.png": Resource(b"<!DOCTYPE html><html><p>hi</p></html>", "image/png"),
    "/img/bitmap.bmp": Resource(encode(40, 40, "BMP"), "image/bmp"),
    "/img/huge-cl.png": Resource(GOOD_PNG, content_length=10**12, hold_s=0.5),
    "/img/stream.png": Resource(b"\x89PNG" + b"\0" * (2**20 - 4), chunked=True, repeat=32),
    "/img/bomb.png": Resource(png_claiming(30000, 30000)),
    "/img/capbomb.png": Resource(png_claiming(4000, 2000)),  # 8 MP > max_pixels, < Pillow's
    "/img/truncated.jpg": Resource(GOOD_JPEG[: len(GOOD_JPEG) // 2], "image/jpeg"),
    "/img/spacer.gif": Resource(encode(1, 400, "GIF"), "image/gif"),
    "/img/banner.png": Resource(png(400, 40)),
}

# (ref id, path, host, page flags, expected drop reason (None = kept))
CASES = [
    ("ok-png", "/img/ok.png", A, {}, None),
    ("ok-jpg", "/img/ok.jpg", A, {}, None),
    ("ok-webp", "/img/ok.webp", B, {}, None),
    ("ok-gif", "/img/anim.gif", B, {}, None),
    ("ok-avif", "/img/ok.avif", B, {}, None),
    ("ok-octet", "/img/octet.png", A, {}, None),
    ("ok-redirect", "/img/redirect-ok", A, {}, None),
    ("ok-otherbot", "/img/otherbot-noai.png", A, {}, None),
    ("robots", "/private/secret.png", A, {}, "robots_denied"),
    ("robots-redirect", "/img/redirect-private", A, {}, "robots_denied"),
    ("train-robots", "/notrain/photo.png", B, {}, "training_opt_out"),
    ("train-redirect", "/img/redirect-notrain", B, {}, "training_opt_out"),
    ("train-page", "/img/logo.png", A, {"training_allowed": False}, "training_opt_out"),
    ("noai-page", "/img/logo.png", B, {"noai": True, "training_allowed": False}, "noai"),
    ("noimageai-page", "/img/logo.png", B, {"noimageai": True}, "noai"),
    ("noai-header", "/img/noai.png", A, {}, "noai"),
    ("noimageai-header", "/img/noimageai.png", A, {}, "noai"),
    ("reset", "/img/reset.png", A, {}, "fetch_error"),
    ("http", "/img/gone.png", A, {}, "http_status"),
    ("http-404", "/img/missing.png", B, {}, "http_status"),
    ("html", "/img/page.html", A, {}, "not_image"),
    ("svg", "/img/svg-as.png", A, {}, "not_image"),
    ("html-as-png", "/img/html-as.png", B, {}, "not_image"),
    ("bmp", "/img/bitmap.bmp", B, {}, "not_image"),
    ("huge-cl", "/img/huge-cl.png", A, {}, "too_large"),
    ("stream", "/img/stream.png", B, {}, "too_large"),
    ("bomb", "/img/bomb.png", A, {}, "decompression_bomb"),
    ("capbomb", "/img/capbomb.png", B, {}, "decompression_bomb"),
    ("truncated", "/img/truncated.jpg", A, {}, "undecodable"),
    ("spacer", "/img/spacer.gif", A, {}, "too_small"),
    ("banner", "/img/banner.png", B, {}, "bad_aspect"),
    # The same logo on three pages: fetched once, one row each.
    ("logo-1", "/img/logo.png", A, {}, None),
    ("logo-2", "/img/logo.png", A, {}, None),
    ("logo-3", "/img/logo.png", A, {}, None),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One fetch over every case; the server's counters and the output rows."""
    from .conftest import ImageServer

    out = tmp_path_factory.mktemp("imgfetch")
    with ImageServer([A, B], ROUTES, {}) as server:
        refs = [ref(cid, server.url(host, path), **flags) for cid, path, host, flags, _ in CASES]
        summary = fetch_images(refs, out, {**FAST, "concurrency": 8})
    rows = pq.read_table(out / FETCHED).to_pylist()
    return {"out": out, "server": server, "refs": refs, "rows": rows, "summary": summary}


def _row(run, rid):
    return next(r for r in run["rows"] if r["id"] == rid)


@pytest.mark.parametrize(
    ("rid", "path", "host", "flags", "reason"), CASES, ids=[c[0] for c in CASES]
)
def test_drop_reason(run, rid, path, host, flags, reason):
    row = _row(run, rid)
    assert row["drop_reason"] == reason, row
    assert reason is None or reason in DROP_REASONS
    if reason is None:
        assert row["training_allowed"] is True
        stored = run["out"] / row["image_path"]
        data = stored.read_bytes()
        served = ROUTES[path if "redirect" not in path else "/img/ok.png"].body
        assert row["image_sha256"] == hashlib.sha256(served).hexdigest()
        # no face in these: stored as fetched, but an animated image keeps only its first frame
        assert row["face_count"] == 0 and (data == served) == (path != "/img/anim.gif")
        assert row["image_path"] == (
            f"images/{row['image_sha256'][:2]}/{row['image_sha256']}.{stored.suffix[1:]}"
        )
        assert row["width"] and row["height"]
    else:
        assert row["image_path"] is None
        assert row["error"], f"{rid}: a dropped row must say why"
        if reason in ("robots_denied", "training_opt_out", "noai"):
            assert row["training_allowed"] is False


def test_rows_in_equal_rows_out(run):
    assert [r["id"] for r in run["rows"]] == [r["id"] for r in run["refs"]]
    assert pq.read_schema(run["out"] / FETCHED).equals(FETCHED_SCHEMA)
    assert run["summary"]["rows"] == len(CASES)
    assert (run["out"] / JOURNAL).exists()
    kept = {r["id"] for r in run["rows"] if r["drop_reason"] is None}
    assert kept == {c[0] for c in CASES if c[4] is None}


def test_formats_and_first_frame(run):
    assert (_row(run, "ok-jpg")["image_path"]).endswith(".jpg")
    assert (_row(run, "ok-webp")["image_path"]).endswith(".webp")
    assert (_row(run, "ok-avif")["image_path"]).endswith(".avif")
    gif = _row(run, "ok-gif")
    assert gif["image_path"].endswith(".gif")
    assert (gif["width"], gif["height"]) == (40, 30)  # the first frame, not the 80x60 second
    assert _row(run, "ok-octet")["content_type"] == "application/octet-stream"


def test_disallowed_paths_are_never_requested(run):
    server = run["server"]
    assert server.hits("/private/secret.png") == 0  # neither directly nor through the redirect
    assert server.hits("/img/redirect-private") == 1
    assert server.hits("/notrain/photo.png") == 0
    assert server.hits("/img/redirect-notrain") == 1
    assert "robots.txt" in _row(run, "robots-redirect")["error"]


def test_page_opt_out_requests_nothing_and_shared_url_fetched_once(run):
    # The logo is referenced by five refs (two on opted-out pages): one request in all.
    assert run["server"].hits("/img/logo.png") == 1
    for rid in ("train-page", "noai-page", "noimageai-page"):
        row = _row(run, rid)
        assert row["status"] is None and row["bytes"] is None and row["image_sha256"] is None
    shas = {_row(run, f"logo-{i}")["image_sha256"] for i in (1, 2, 3)}
    assert len(shas) == 1
    assert run["summary"]["images_stored"] == len(
        {r["image_path"] for r in run["rows"] if r["image_path"]}
    )


def test_noai_header_body_never_sent(run):
    server = run["server"]
    for rid, path in (("noai-header", "/img/noai.png"), ("noimageai-header", "/img/noimageai.png")):
        row = _row(run, rid)
        assert row["bytes"] == 0 and row["status"] == 200
        assert "body not downloaded" in row["error"]
        assert server.hits(path) == 1
    # OtherBot's noai does not apply to us and the image is read as usual.
    assert server.body_bytes["/img/otherbot-noai.png"] == len(ROUTES["/img/otherbot-noai.png"].body)


def test_caps_stop_reading(run):
    server = run["server"]
    assert server.body_bytes["/img/huge-cl.png"] == 0  # Content-Length 10^12: nothing read
    assert _row(run, "huge-cl")["bytes"] == 0
    stream = _row(run, "stream")
    assert stream["bytes"] == FAST["max_bytes"]  # read up to the cap, then hung up
    sent = server.body_bytes["/img/stream.png"]
    assert sent < len(ROUTES["/img/stream.png"].body) * 32 // 2, sent


def test_header_gate_refuses_before_body(image_server, tmp_path):
    """A server that holds the body until the client has seen the headers: with X-Robots-Tag
    noai not one body byte is sent; the same image without the header is sent whole."""
    body = png(64, 64) + b"\0" * (BIG - len(png(64, 64)))  # 8 MiB: more than socket buffers
    routes = {
        "/a.png": Resource(body, headers={"X-Robots-Tag": "noai, noindex"}, hold_s=0.5),
        "/b.png": Resource(body, hold_s=0.5),
    }
    server = image_server(routes, ips=[A])
    refs = [ref("a", server.url(A, "/a.png")), ref("b", server.url(A, "/b.png"))]
    fetch_images(refs, tmp_path, {**FAST, "max_bytes": 16 * 2**20})
    rows = {r["id"]: r for r in pq.read_table(tmp_path / FETCHED).to_pylist()}
    assert rows["a"]["drop_reason"] == "noai" and rows["a"]["bytes"] == 0
    assert server.body_bytes["/a.png"] == 0
    assert rows["b"]["drop_reason"] is None  # control: the gate is what stopped the body
    assert server.body_bytes["/b.png"] == len(body)


def test_private_networks_refused_by_default(image_server, tmp_path):
    server = image_server({"/x.png": Resource(GOOD_PNG)}, ips=[A])
    cfg = {**FAST, "allow_private_networks": False}
    summary = fetch_images([ref("x", server.url(A, "/x.png"))], tmp_path, cfg)
    row = pq.read_table(tmp_path / FETCHED).to_pylist()[0]
    assert row["drop_reason"] == "fetch_error" and row["error"].startswith("ssrf-blocked")
    assert sum(server.requests.values()) == 0  # not even robots.txt
    assert summary["drop_reasons"] == {"fetch_error": 1}


def test_max_images_keeps_every_row(image_server, tmp_path):
    server = image_server({f"/{i}.png": Resource(png(40, 40 + i)) for i in range(5)}, ips=[A])
    refs = [ref(f"r{i}", server.url(A, f"/{i}.png")) for i in range(5)]
    refs.insert(1, ref("opted-out", server.url(A, "/0.png"), training_allowed=False))
    fetch_images(refs, tmp_path, {**FAST, "max_images": 3})
    rows = pq.read_table(tmp_path / FETCHED).to_pylist()
    assert [r["id"] for r in rows] == [r["id"] for r in refs]
    reasons = [r["drop_reason"] for r in rows]
    assert reasons == [None, "training_opt_out", None, None, "fetch_error", "fetch_error"]
    assert "max_images=3" in rows[-1]["error"]
    assert sum(n for (_, p), n in server.requests.items() if p != "/robots.txt") == 3


def test_existing_run_needs_resume_and_same_refs(image_server, tmp_path):
    server = image_server({"/x.png": Resource(GOOD_PNG)}, ips=[A])
    refs = [ref("x", server.url(A, "/x.png"))]
    with pytest.raises(FileNotFoundError, match="without resume"):
        fetch_images(refs, tmp_path, FAST, resume=True)
    fetch_images(refs, tmp_path, FAST)
    with pytest.raises(FileExistsError, match="resume"):
        fetch_images(refs, tmp_path, FAST)
    with pytest.raises(ValueError, match="other image refs"):
        fetch_images(refs + [ref("y", server.url(A, "/y.png"))], tmp_path, FAST, resume=True)
    summary = fetch_images(refs, tmp_path, FAST, resume=True)  # finished: nothing fetched again
    assert summary["resumed_rows"] == 1 and summary["requests"] == 0
    assert server.hits("/x.png") == 1


def test_bad_refs_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"#0 lacks training_allowed"):
        fetch_images([{"id": "a", "doc_id": "d", "src": "http://x/", "alt": ""}], tmp_path)
    with pytest.raises(ValueError, match="appears twice"):
        fetch_images([ref("a", "http://x/"), ref("a", "http://y/")], tmp_path / "2")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["noai"], "noai"),
        (["noindex, noimageai"], "noimageai"),
        ([f"{TRAINING_AGENT}: noai"], "noai"),
        ([f"{AGENT}: noimageai"], "noimageai"),
        (["OtherBot: noai"], None),
        (["noindex", "max-image-preview: large"], None),
        (["unavailable_after: 2030-01-01"], None),
    ],
)
def test_xrt_opt_out(values, expected):
    assert xrt_opt_out(values, AGENT, TRAINING_AGENT) == expected


def test_fetch_is_fast_enough_on_loopback(image_server, tmp_path):
    """Guard against a gross slowdown: 200 small images on two hosts in well under a minute."""
    routes = {f"/i{i}.png": Resource(png(48, 40 + i % 50, (i % 256, 0, 0))) for i in range(200)}
    server = image_server(routes)
    refs = [ref(f"r{i}", server.url((A, B)[i % 2], f"/i{i}.png")) for i in range(200)]
    started = time.monotonic()
    summary = fetch_images(refs, tmp_path, {**FAST, "concurrency": 16, "per_host_connections": 4})
    assert summary["stored"] == 200, summary
    assert time.monotonic() - started < 45
    assert len(list(Path(tmp_path, "images").rglob("*.png"))) == 200


def test_robots_outage_waits_instead_of_denying(image_server, tmp_path):
    """robots.txt answers 503 once: the image waits for the re-fetch and is then fetched."""
    routes = {"/x.png": Resource(GOOD_PNG)}
    server = image_server(routes, robots={A: [(503, "busy"), (200, "User-agent: *\nAllow: /\n")]})
    cfg = {**FAST, "robots_retries": 2}
    fetch_images([ref("x", server.url(A, "/x.png"))], tmp_path, cfg)
    row = pq.read_table(tmp_path / FETCHED).to_pylist()[0]
    assert row["drop_reason"] is None, row
    assert server.hits("/robots.txt") == 2 and server.hits("/x.png") == 1


def test_robots_unreachable_for_good_is_a_fetch_error_and_never_requested(image_server, tmp_path):
    """No verdict, not a denial (test_consent_hops: resume asks again); nothing is requested."""
    server = image_server({"/x.png": Resource(GOOD_PNG)}, robots={A: [(503, "down")]})
    fetch_images([ref("x", server.url(A, "/x.png"))], tmp_path, FAST)  # robots_retries=0
    row = pq.read_table(tmp_path / FETCHED).to_pylist()[0]
    assert row["drop_reason"] == "fetch_error" and "unreachable" in row["error"]
    assert row["training_allowed"] is False and row["image_path"] is None
    assert server.hits("/x.png") == 0


def test_resume_retries_transient_failures_only(image_server, tmp_path):
    routes = {"/flaky.png": Resource(reset=True), "/gone.png": Resource(status=404)}
    routes["/ok.png"] = Resource(GOOD_PNG)
    server = image_server(routes, ips=[A])
    refs = [ref(n, server.url(A, f"/{n}.png")) for n in ("flaky", "gone", "ok")]
    first = fetch_images(refs, tmp_path, FAST)
    assert first["drop_reasons"] == {"fetch_error": 1, "http_status": 1}
    routes["/flaky.png"] = Resource(png(40, 40))  # the server recovered
    second = fetch_images(refs, tmp_path, FAST, resume=True)
    assert second["drop_reasons"] == {"http_status": 1} and second["resumed_rows"] == 2
    assert [server.hits(f"/{n}.png") for n in ("flaky", "gone", "ok")] == [2, 1, 1]


@pytest.mark.timeout(60)
def test_an_error_storing_every_image_ends_the_run_with_that_error(
    image_server, tmp_path, monkeypatch
):
    """The demo hung for 36 min after one image: a store step raised in the thread pool (OpenCV
    imported by two threads at once), the workers were cancelled, and asyncio.run waited on a
    task that never ended. One image's error is now its row's (process_error,
    tests/images/test_fetch_resume.py); a fault in every image is the run's and must reach the
    caller, after FAULTS_IN_A_ROW images, not hang."""
    import crawlers.images.fetch as fetch_mod

    real, calls = fetch_mod._store, []

    def store(*args):
        calls.append(1)
        if len(calls) >= 2:
            raise AttributeError("module 'cv2' has no attribute 'data'")
        return real(*args)

    monkeypatch.setattr(fetch_mod, "_store", store)
    server = image_server({f"/{i}.png": Resource(png(40, 40 + i)) for i in range(30)}, ips=[A])
    refs = [ref(f"r{i}", server.url(A, f"/{i}.png")) for i in range(30)]
    with pytest.raises(AttributeError, match="cv2"):
        fetch_images(refs, tmp_path, {**FAST, "concurrency": 4})
    # not at the first fault; well before the last image (at most three failed before the one
    # success finished and reset the count, and three more in flight when it ends)
    assert fetch_mod.FAULTS_IN_A_ROW + 1 <= len(calls) <= fetch_mod.FAULTS_IN_A_ROW + 7


def test_the_same_bytes_under_other_urls_are_stored_once_and_decoded_once(
    image_server, tmp_path, monkeypatch
):
    """Bytes fetched again under another URL (another path, another host) get the first one's
    outcome: the same stored file, hashes and faces, without being decoded, searched, hashed or
    handed to `on_image` again. Consent stays per URL: the same bytes sent with a noai header
    are dropped there and stored under the URL that allows them."""
    import crawlers.images.fetch as fetch_mod

    real, fresh = fetch_mod._store_new, []

    def counting(out_dir, data, sha, *rest):
        fresh.append(sha)
        return real(out_dir, data, sha, *rest)

    monkeypatch.setattr(fetch_mod, "_store_new", counting)
    same, other = noisy_jpeg(120, 90, seed=3), png(64, 48)
    server = image_server(
        {
            "/a.jpg": Resource(same, content_type="image/jpeg"),
            "/copy.jpg": Resource(same, content_type="image/jpeg"),
            "/noai.jpg": Resource(
                same, content_type="image/jpeg", headers={"X-Robots-Tag": "noai"}
            ),
            "/other.png": Resource(other),
        },
        ips=[A, B],
    )
    refs = [
        ref("r0", server.url(A, "/a.jpg")),
        ref("r1", server.url(A, "/copy.jpg")),
        ref("r2", server.url(B, "/a.jpg")),
        ref("r3", server.url(B, "/noai.jpg")),
        ref("r4", server.url(B, "/other.png")),
    ]
    handed = []
    fetch_images(refs, tmp_path, FAST, on_image=lambda path, image: handed.append(path))
    rows = {r["id"]: r for r in pq.read_table(tmp_path / "fetched.parquet").to_pylist()}
    assert sorted(fresh) == sorted({hashlib.sha256(b).hexdigest() for b in (same, other)})
    assert len(handed) == 2 and len(set(handed)) == 2
    image_cols = (
        "image_sha256", "image_path", "stored_sha256", "phash", "colour_thumbnail",
        "width", "height", "face_count", "drop_reason",
    )  # fmt: skip
    for rid in ("r1", "r2"):
        assert {k: rows[rid][k] for k in image_cols} == {k: rows["r0"][k] for k in image_cols}
        assert rows[rid]["training_allowed"] is True
    assert rows["r3"]["drop_reason"] == "noai" and rows["r3"]["image_path"] is None
    assert rows["r3"]["training_allowed"] is False
    assert rows["r4"]["image_sha256"] == hashlib.sha256(other).hexdigest()
    assert len(list((tmp_path / "images").rglob("*.*"))) == 2
