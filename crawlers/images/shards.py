"""Image fetch shards by the image's own server, not by its page's crawl shard.

A gallery's images all sat in its page host's crawl shard, while images served from other hosts
(a CDN, an image host) followed their pages around. Here a ref's shard is a stable hash of the
server its image URL names (`server_key`): an IP literal stands for itself, a name for its
registered domain (public suffix list), so `img1.cdn.example` and `img2.cdn.example` share a
shard. Every spelling of one address is that address (`ip_host`: '2130706437', '0x7f000005',
'0177.0.0.5', '127.5' and '[::ffff:127.0.0.5]' are all 127.0.0.5, as the connection takes them).
The server a src names is asked by one shard only, so the per-server politeness of one fetch
holds across shards for the srcs themselves; different servers spread over the shards.

Two limits, both because politeness is kept per process (no store is shared between shards), keyed
on the resolved IP address. A redirect is not foreseen by the src: its target may be a server
another shard fetches from. And names of different registered domains on one machine (one IP
behind many names) key apart, since names are not resolved here: DNS at shard time would make
the partition depend on the resolver's answers of the day, and a run's shard of a ref must stay
put across resumes. In both cases two shards may request from one server at the same time, each
keeping its own delay. A src that does not parse keys on '' (one shard; its row is still
written, as a fetch_error).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from common.inputs import url_netloc
from crawlers.crawl.canon import canonicalize
from crawlers.crawl.politeness import hostname_of, ip_literal, registered_domain

# One part of a numeric IPv4 host as inet_aton and the WHATWG URL parser read it: hex, octal, decimal.
_IPV4_PART = re.compile(r"0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*")


def ip_host(name: str) -> str | None:
    """The address a host names literally, in one spelling per address, else None.

    Besides what `ipaddress` takes: the numeric IPv4 forms the connection accepts (1 to 4 parts,
    each decimal, 0-octal or 0x-hex, the last filling the remaining bytes: '2130706437',
    '0x7f000005', '0177.0.0.5', '127.5'), and an IPv4-mapped IPv6 address as its IPv4 address.
    """
    addr = ip_literal(name)
    if addr is not None:
        ip = ipaddress.ip_address(addr)
        mapped = getattr(ip, "ipv4_mapped", None)
        return str(mapped) if mapped is not None else addr
    parts = name.lower().split(".")
    if not 1 <= len(parts) <= 4 or not all(_IPV4_PART.fullmatch(p) for p in parts):
        return None
    try:
        nums = [
            int(p[2:] or "0", 16) if p.startswith("0x") else int(p, 8 if p.startswith("0") else 10)
            for p in parts
        ]
    except ValueError:  # a decimal part over Python's digit limit: no address
        return None
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** (5 - len(nums)):
        return None
    value = nums[-1]
    for i, n in enumerate(nums[:-1]):
        value += n << (8 * (3 - i))
    return str(ipaddress.IPv4Address(value))


def server_key(src: object) -> str:
    """The server an image URL names: its IP address (`ip_host`), or the registered domain of its
    host ('' when the URL does not parse). The host is taken as the URL's canonical form spells it
    (`canonicalize`: lower case, IDNA-encoded, no trailing dot), so 'bücher.example',
    'BÜCHER.example.' and 'xn--bcher-kva.example' are one server; a src with no canonical form
    (never fetched: a bad-url row) keys on its host as written."""
    netloc = url_netloc(src)
    if not netloc:
        return ""
    try:
        netloc = urlsplit(canonicalize(str(src))).netloc
    except ValueError:  # UrlError among them
        pass
    name = hostname_of(netloc.rsplit("@", 1)[-1]).rstrip(".")
    return ip_host(name) or registered_domain(name)


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
