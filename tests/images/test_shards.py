"""Image fetch shards by the image's own server: a site whose images sit on eight image hosts
(127.0.0.161-168) spreads over the shards although all its pages are on one host, each server
is fetched by exactly one shard, and every ref is one row of exactly one shard."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from crawlers.crawl.config import shard_of
from crawlers.images import FETCHED, fetch_images
from crawlers.images.shards import image_shard, parse_shard, server_key, shard_refs
from pipelines.cli import app

from .conftest import FAST, Resource, encode, png, ref

PAGE_HOST = "127.0.0.160"
IMAGE_HOSTS = [f"127.0.0.{n}" for n in range(161, 169)]
SHARDS = 4


def test_server_key_is_the_address_or_the_registered_domain():
    assert server_key("http://127.0.0.5:8080/a.png") == "127.0.0.5"
    assert server_key("http://[::1]:80/a.png") == "::1"
    assert server_key("http://user@10.0.0.1/x.png") == "10.0.0.1"
    # one CDN's names are one server: one shard
    assert server_key("http://img1.cdn.example.co.uk/x") == "example.co.uk"
    assert server_key("http://IMG2.cdn.Example.co.uk./y") == "example.co.uk"
    assert image_shard("http://img1.cdn.example.co.uk/x", 4) == image_shard(
        "http://img9.example.co.uk:8443/z", 4
    )
    assert server_key("not a url") == server_key(None) == ""
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "x/2", "1/0", "-1/4"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)


def test_a_gallery_host_holding_most_images_keeps_them_in_one_shard_and_frees_the_rest():
    """Pages all on one gallery host, 3/4 of the images served by that host (two of its names),
    the rest by 12 other servers: the gallery's images stay in one shard (one server, one
    shard: politeness), while the other servers' images, which a page shard would have pulled
    into that same shard, spread over the others; every ref is in exactly one shard."""
    gallery = ["http://gallery.example.org", "http://img.gallery.example.org"]
    others = [f"http://cdn{i}.example{i}.net" for i in range(12)]
    refs = [
        {
            "id": f"g{i}",
            "src": f"{gallery[i % 2]}/photos/{i}.jpg",
            "url": "http://gallery.example.org/p",
        }
        for i in range(300)
    ]
    refs += [
        {"id": f"o{i}", "src": f"{others[i % 12]}/i/{i}.png", "url": "http://gallery.example.org/p"}
        for i in range(100)
    ]
    assert len({shard_of(urlsplit(r["url"]).netloc, SHARDS) for r in refs}) == 1
    parts = [shard_refs(refs, k, SHARDS) for k in range(SHARDS)]
    assert Counter(r["id"] for part in parts for r in part) == Counter(r["id"] for r in refs)
    home = image_shard(gallery[0], SHARDS)
    assert {r["id"] for r in parts[home] if r["id"].startswith("g")} == {
        f"g{i}" for i in range(300)
    }
    moved = [r for k, part in enumerate(parts) if k != home for r in part]
    assert len(moved) >= 50 and all(r["id"].startswith("o") for r in moved)
    assert sum(1 for part in parts if part) >= 3
    servers: dict[str, set[int]] = defaultdict(set)
    for k, part in enumerate(parts):
        for r in part:
            servers[server_key(r["src"])].add(k)
    assert len(servers) == 13 and all(len(ks) == 1 for ks in servers.values())


def _site(server_url):
    """Gallery pages on one host, 3 images on each of 8 image hosts, plus an opted-out ref and a
    src that does not parse."""
    refs = []
    for i in range(24):
        host = IMAGE_HOSTS[i % len(IMAGE_HOSTS)]
        refs.append(ref(f"g{i}", server_url(host, f"/img/{i}.png"), alt=f"a red square {i}"))
        refs[-1]["url"] = f"http://{PAGE_HOST}/gallery/{i // 6}"
    refs.append(ref("optout", server_url(IMAGE_HOSTS[0], "/img/0.png"), training_allowed=False))
    refs.append(ref("badsrc", "http://a..test/x.png"))
    for r in refs[-2:]:
        r["url"] = f"http://{PAGE_HOST}/gallery/0"
    return refs


def test_images_spread_by_server_and_every_ref_is_one_row_of_one_shard(tmp_path, image_server):
    routes = {f"/img/{i}.png": Resource(png(40 + i, 40, (i * 9, 80, 200))) for i in range(24)}
    server = image_server(routes, ips=IMAGE_HOSTS)
    refs = _site(server.url)
    page_shards = {shard_of(urlsplit(r["url"]).netloc, SHARDS) for r in refs}
    assert len(page_shards) == 1  # by the page's crawl shard, everything was one shard
    seen: Counter = Counter()
    fetched_by: dict[str, set[int]] = defaultdict(set)
    sizes = []
    for k in range(SHARDS):
        mine = shard_refs(refs, k, SHARDS)
        before = Counter(ip for ip, _ in server.requests.elements())
        fetch_images(mine, tmp_path / f"shard={k}", FAST)
        after = Counter(ip for ip, _ in server.requests.elements())
        for ip in after - before:
            fetched_by[ip].add(k)
        rows = pq.read_table(tmp_path / f"shard={k}" / FETCHED).to_pylist()
        assert [r["id"] for r in rows] == [r["id"] for r in mine]  # rows in = rows out
        seen.update(r["id"] for r in rows)
        sizes.append(len(rows))
        for r in rows:
            if r["id"] in ("optout", "badsrc"):
                assert r["image_path"] is None and r["drop_reason"] in (
                    "training_opt_out",
                    "fetch_error",
                )
            else:
                assert r["drop_reason"] is None, r
    assert seen == Counter(r["id"] for r in refs)  # each ref exactly once over the shards
    assert sum(1 for n in sizes if n) >= 3, sizes
    assert max(sizes) < len(refs) // 2, sizes
    # politeness across shards: each image server was asked by one shard only
    assert set(fetched_by) == set(IMAGE_HOSTS)
    assert all(len(ks) == 1 for ks in fetched_by.values()), fetched_by


def _extract_dir(root, refs):
    """A minimal `extract` output holding `refs` (one document per gallery page)."""
    root.mkdir(parents=True)
    docs = sorted({r["url"] for r in refs})
    doc_id = {u: hashlib.sha256(u.encode()).hexdigest()[:16] for u in docs}
    pq.write_table(
        pa.table(
            {
                "id": [doc_id[u] for u in docs],
                "url": docs,
                "training_allowed": [True] * len(docs),
                "noai": [False] * len(docs),
                "noimageai": [False] * len(docs),
            }
        ),
        root / "documents.parquet",
    )
    positions: Counter = Counter()
    rows = []
    for r in refs:
        d = doc_id[r["url"]]
        rows.append(
            {
                "doc_id": d,
                "url": r["url"],
                "position": positions[d],
                "src": r["src"],
                "alt": r["alt"],
                "surrounding_text": "A gallery of coloured squares.",
                "training_allowed": r["training_allowed"],
            }
        )
        positions[d] += 1
    pq.write_table(pa.Table.from_pylist(rows), root / "image_refs.parquet")
    blocks = defaultdict(list)
    for row in rows:
        blocks[row["doc_id"]].append(
            {"kind": "image", "text": None, "src": row["src"], "alt": row["alt"]}
        )
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"doc_id": d, "url": u, "blocks": blocks[d], "training_allowed": True}
                for u, d in doc_id.items()
            ]
        ),
        root / "interleaved.parquet",
    )
    return rows


def test_cli_images_build_shard_takes_its_servers_only(tmp_path, image_server):
    routes = {f"/img/{i}.png": Resource(encode(48, 40 + i, "PNG")) for i in range(24)}
    server = image_server(routes, ips=IMAGE_HOSTS)
    refs = _site(server.url)
    rows = _extract_dir(tmp_path / "extract", refs)
    k = image_shard(refs[0]["src"], SHARDS)
    want = sum(1 for r in rows if image_shard(r["src"], SHARDS) == k)
    out = tmp_path / f"pairs-{k}"
    args = ["images", "build", "--docs", str(tmp_path / "extract"), "--out", str(out)]
    res = CliRunner().invoke(
        app, [*args, "--shard", f"{k}/{SHARDS}", "--allow-private-networks", "--delay", "0"]
    )
    assert res.exit_code == 0, res.output
    pairs = pq.read_table(out / "pairs.parquet").to_pylist()
    assert 0 < len(pairs) == want < len(rows)
    assert {image_shard(p["src"], SHARDS) for p in pairs} == {k}
    asked = {ip for ip, _ in server.requests}
    assert asked == {
        urlsplit(p["src"]).hostname for p in pairs if p["src"] != "http://a..test/x.png"
    }
    bad = CliRunner().invoke(app, [*args, "--shard", "4/4"])
    assert bad.exit_code != 0 and "--shard" in bad.output
