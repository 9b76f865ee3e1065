"""Image fetch shards by the image's own server, not by its page's crawl shard.

A gallery's images all sat in its page host's crawl shard, while images served from other hosts
(a CDN, an image host) followed their pages around. Here a ref's shard is a stable hash of the
server its image URL names (`server_key`): an IP literal stands for itself, a name for its
registered domain (public suffix list), so `img1.cdn.example` and `img2.cdn.example` share a
shard. The server a src names is asked by one shard only, so the per-server politeness of one
fetch holds across shards for the srcs themselves; different servers spread over the shards. A
redirect is not foreseen by the src: its target may be a server another shard fetches from, and
politeness is kept per process (no store is shared between shards), so two shards may then
request from that server at the same time, each keeping its own delay. A src that does not
parse keys on '' (one shard; its row is still written, as a fetch_error).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from common.inputs import url_netloc
from crawlers.crawl.politeness import hostname_of, ip_literal, registered_domain


def server_key(src: object) -> str:
    """The server an image URL names: its IP address, or the registered domain of its host
    ('' when the URL does not parse)."""
    netloc = url_netloc(src)
    if not netloc:
        return ""
    name = hostname_of(netloc.rsplit("@", 1)[-1]).rstrip(".")
    return ip_literal(name) or registered_domain(name)


def image_shard(src: object, shards: int) -> int:
    """The shard (0..shards-1) that fetches the image at `src`."""
    digest = hashlib.sha1(server_key(src).encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards


def parse_shard(spec: str) -> tuple[int, int]:
    """'K/N' -> (K, N), checked."""
    try:
        k, n = (int(x) for x in spec.split("/"))
    except ValueError as exc:
        raise ValueError(f"--shard {spec!r}: expected K/N, e.g. 0/4") from exc
    if n < 1 or not 0 <= k < n:
        raise ValueError(f"--shard {spec!r}: K must be in 0..N-1 and N at least 1")
    return k, n


def shard_refs(refs: Iterable[dict], shard: int, shards: int) -> list[dict]:
    """The refs whose image server hashes to `shard` of `shards`, in input order."""
    if shards == 1:
        return list(refs)
    return [r for r in refs if image_shard(r.get("src"), shards) == shard]
