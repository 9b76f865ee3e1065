"""What `--allow-private-networks` lifts: loopback and private networks, nothing else.

Link-local (cloud metadata), multicast, broadcast, unspecified, reserved and the metadata
addresses inside private ranges stay refused with the allowance, in every component (the
Fetcher's `check_url`, the resolver, the downloader's `SsrfLayer`, a render's trusted origin),
and an import's scheme check does not depend on it. Decision logic only: nothing is sent to
these addresses; the one crawl here stays on 127.0.0.0/8 and resolves no name.
"""

from __future__ import annotations

import asyncio

import pyarrow.parquet as pq
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver

from crawlers.crawl import crawl
from crawlers.crawl.canon import canonicalize
from crawlers.crawl.downloader import Request, SsrfLayer
from crawlers.crawl.ssrf import (
    BlockedAddressError,
    GuardedResolver,
    allowance_lifts,
    check_addresses,
    check_url,
)
from crawlers.imports.sources import RemoteRefused, check_scheme

from .loopback import LoopbackServer

LIFTED = [
    "127.0.0.1",
    "127.5.6.7",
    "[::1]",
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "100.64.0.1",
    "[fd00::1]",
    "[fc00::7]",
    "[::ffff:127.0.0.1]",
    "[::ffff:10.0.0.1]",
]
NEVER = [
    "169.254.169.254",  # cloud metadata (AWS, GCP, Azure, Oracle)
    "169.254.170.2",  # AWS ECS task metadata
    "[fd00:ec2::254]",  # AWS metadata over IPv6, inside fc00::/7
    "100.100.100.200",  # Alibaba Cloud metadata, inside 100.64.0.0/10
    "[fe80::1]",
    "[fe80::1%25eth0]",
    "224.0.0.1",
    "[ff02::1]",
    "255.255.255.255",
    "0.0.0.0",
    "0.0.0.1",
    "[::]",
    "240.0.0.1",
    "192.0.2.1",
    "198.18.0.1",
    "[::ffff:169.254.169.254]",  # IPv4-mapped metadata
    "[64:ff9b::a9fe:a9fe]",  # NAT64 of 169.254.169.254
    "[2002:a9fe:a9fe::1]",  # 6to4 of 169.254.169.254
    "[64:ff9b::7f00:1]",  # NAT64 of loopback: another network's translator, not this host
]
# Numeric spellings no connection library agrees on (octal and decimal 169.254.169.254, short
# loopback): refused with the allowance too.
NON_CANONICAL = ["0251.0376.0251.0376", "2852039166", "127.1", "0x7f.0.0.1"]


def _layer_verdict(url: str, allow: bool, trusted_origin: str | None = None) -> str | None:
    request = Request(url, trusted_origin=trusted_origin)
    result = asyncio.run(SsrfLayer(allow, set()).process_request(request))
    return None if result is None else result.error


@pytest.mark.parametrize("host", LIFTED)
def test_the_allowance_lifts_loopback_and_private_networks(host):
    url = f"http://{host}:8080/latest/meta-data/"
    assert check_url(url, allow_private=True).raw_host
    assert _layer_verdict(url, True) is None
    with pytest.raises(BlockedAddressError, match="use --allow-private-networks"):
        check_url(url)
    assert (_layer_verdict(url, False) or "").startswith("ssrf-blocked")


@pytest.mark.parametrize("host", NEVER)
def test_the_allowance_never_lifts_metadata_link_local_multicast_or_reserved(host):
    url = f"http://{host}/latest/meta-data/"
    for allow in (True, False):
        with pytest.raises(BlockedAddressError, match="not even with --allow-private-networks"):
            check_url(url, allow_private=allow)
        assert (_layer_verdict(url, allow) or "").startswith("ssrf-blocked"), allow


@pytest.mark.parametrize("host", NON_CANONICAL)
def test_non_canonical_numeric_hosts_stay_refused_with_the_allowance(host):
    with pytest.raises(BlockedAddressError, match="four decimal numbers"):
        check_url(f"http://{host}/", allow_private=True)
    assert "non-canonical" in (_layer_verdict(f"http://{host}/", True) or "")


class _Answers(AbstractResolver):
    """A resolver whose every name resolves to one address (no DNS is asked)."""

    def __init__(self, address: str):
        self.address = address

    async def resolve(self, host, port=0, family=0):
        return [{"hostname": host, "host": self.address, "port": port, "family": 0}]

    async def close(self):
        return None


@pytest.mark.parametrize(
    "address", ["169.254.169.254", "fd00:ec2::254", "fe80::1%eth0", "224.0.0.251", "0.0.0.0"]
)
def test_a_name_resolving_to_a_never_lifted_address_is_refused_with_the_allowance(address):
    with pytest.raises(BlockedAddressError, match="not even with"):
        check_addresses("metadata.internal", [address], allow_private=True)
    resolver = GuardedResolver(allow_private=True, inner=_Answers(address))
    with pytest.raises(BlockedAddressError):
        asyncio.run(resolver.resolve("metadata.internal", 80))
    lan = GuardedResolver(allow_private=True, inner=_Answers("10.1.2.3"))
    assert asyncio.run(lan.resolve("lan.internal", 80))[0]["host"] == "10.1.2.3"


def test_a_trusted_origin_is_honoured_only_for_an_address_the_allowance_lifts():
    # The render vouches for a page's own private origin; that trust is bounded like the flag.
    metadata = "http://169.254.169.254"
    assert "link-local" in (_layer_verdict(f"{metadata}/x", False, metadata) or "")
    assert _layer_verdict("http://127.0.0.5:81/x", False, "http://127.0.0.5:81") is None


def test_allowance_lifts_is_the_named_ranges():
    assert allowance_lifts("127.0.0.1") and allowance_lifts("::1") and allowance_lifts("fd12::1")
    assert not allowance_lifts("169.254.169.254") and not allowance_lifts("fd00:ec2::254")


@pytest.mark.parametrize(
    "url",
    [
        "ftp://10.0.0.1/x.warc",
        "webhdfs://10.0.0.1/x",
        "sftp://127.0.0.1/x",
        "simplecache::http://10.0.0.1/x.warc",
        "zip://x.warc::ftp://127.0.0.1/x.zip",
    ],
)
def test_schemes_past_the_guard_stay_refused_with_the_allowance(url):
    with pytest.raises(RemoteRefused) as err:
        check_scheme(url, allow_private=True)
    message = str(err.value)
    assert "\n" not in message and url in message
    assert "http(s)://" in message and "does not lift" in message


# A backslash in an http(s) authority: browsers (WHATWG) read it as '/', so the host is the part
# before it. Only IP literals here: nothing is looked up.
@pytest.mark.parametrize(
    ("url", "base", "canonical"),
    [
        ("http://127.0.0.1\\@127.0.0.2/x", None, "http://127.0.0.1/@127.0.0.2/x"),
        ("http://127.0.0.1:81\\@10.0.0.1:82/x", None, "http://127.0.0.1:81/@10.0.0.1:82/x"),
        ("HTTPS:\\\\127.0.0.3\\y", None, "https://127.0.0.3/y"),
        ("\\\\127.0.0.4\\@127.0.0.2/", "http://127.0.0.9/p", "http://127.0.0.4/@127.0.0.2/"),
        ("\\a\\b", "http://127.0.0.9/p/q", "http://127.0.0.9/a/b"),
        ("http://127.0.0.1/p?q=\\@127.0.0.2", None, "http://127.0.0.1/p?q=%5C@127.0.0.2"),
    ],
)
def test_a_backslash_before_the_query_is_a_slash_as_in_browsers(url, base, canonical):
    assert canonicalize(url, base) == canonical


def test_the_guard_judges_the_host_a_browser_connects_to():
    url = canonicalize("http://127.0.0.1\\@93.184.216.34/x")
    with pytest.raises(BlockedAddressError, match="loopback"):
        check_url(url)


class _BackslashSite(LoopbackServer):
    """Host A links to `http://A:port\\@B:port/x`; both answer and log what they were asked."""

    def __init__(self, a: str, b: str):
        super().__init__([a, b])
        self.a, self.b, self.log = a, b, []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.log.append((request.host.split(":")[0], request.path))
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n", content_type="text/plain")
        link = f"http://{self.a}:{self.port}\\@{self.b}:{self.port}/x"
        body = f'<html><body><p>start</p><a href="{link}">odd link</a></body></html>'
        return web.Response(text=body, content_type="text/html")


@pytest.mark.timeout(60)
def test_a_crawl_follows_a_backslash_link_to_the_host_a_browser_would(tmp_path):
    with _BackslashSite("127.0.0.71", "127.0.0.72") as site:
        config = dict(delay=0, allow_private_networks=True, robots_retries=0, use_sitemaps=False)
        asyncio.run(crawl([f"http://{site.a}:{site.port}/"], tmp_path / "o", config))
    assert (site.a, f"/@{site.b}:{site.port}/x") in site.log, site.log
    assert all(host == site.a for host, _ in site.log), site.log  # B was never asked
    urls = {row["url"] for row in pq.read_table(tmp_path / "o" / "pages.parquet").to_pylist()}
    assert f"http://{site.a}:{site.port}/@{site.b}:{site.port}/x" in urls
