"""SSRF guard decisions, tested as pure functions over addresses with a fake resolver."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.abc import AbstractResolver

from crawlers.crawl.fetcher import Fetcher
from crawlers.crawl.ssrf import (
    BlockedAddressError,
    GuardedResolver,
    blocked_reason,
    check_host,
    check_literal,
    check_url,
    parse_ip_literal,
)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.9.9.9", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("172.16.5.5", "private"),
        ("169.254.169.254", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "non-global"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("ff02::1", "multicast"),
        ("::", "unspecified"),
    ],
)
def test_non_public_addresses_are_refused(address, reason):
    assert blocked_reason(address) == reason


@pytest.mark.parametrize("address", ["::ffff:127.0.0.1", "::ffff:10.0.0.1", "2002:7f00:1::1"])
def test_ipv4_embedded_in_ipv6_is_checked_as_ipv4(address):
    assert blocked_reason(address) is not None
    assert "embedded" in blocked_reason(address) or blocked_reason(address) in (
        "private",
        "reserved",
    )


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address):
    assert blocked_reason(address) is None


def _fake(table):
    async def resolve(host):
        return table[host]

    return resolve


def test_name_resolving_to_any_private_address_is_refused():
    # DNS rebinding: one public and one loopback answer; any refused address refuses the host.
    resolve = _fake({"rebind.example": ["93.184.216.34", "127.0.0.1"]})
    with pytest.raises(BlockedAddressError, match="loopback"):
        asyncio.run(check_host("rebind.example", resolve))


def test_public_name_passes_and_private_allowed_when_lifted():
    resolve = _fake({"ok.example": ["93.184.216.34"], "lan.example": ["10.0.0.7"]})
    assert asyncio.run(check_host("ok.example", resolve)) == ["93.184.216.34"]
    assert asyncio.run(check_host("lan.example", resolve, allow_private=True)) == ["10.0.0.7"]


@pytest.mark.parametrize("host", ["[::1]", "127.0.0.1", "2130706433", "0x7f.1", "127.1"])
def test_literal_and_numeric_hosts_are_refused_without_resolving(host):
    with pytest.raises(BlockedAddressError):
        asyncio.run(check_host(host, _fake({})))


def test_unresolvable_name_is_refused():
    with pytest.raises(BlockedAddressError, match="unresolvable"):
        asyncio.run(check_host("nowhere.example", _fake({"nowhere.example": []})))


class _FakeInner(AbstractResolver):
    async def resolve(self, host, port=0, family=0):
        return [
            {
                "hostname": host,
                "host": "127.0.0.1",
                "port": port,
                "family": 2,
                "proto": 0,
                "flags": 0,
            }
        ]

    async def close(self):
        return None


def test_guarded_resolver_checks_every_resolved_address():
    resolver = GuardedResolver(inner=_FakeInner())
    with pytest.raises(BlockedAddressError):
        asyncio.run(resolver.resolve("attacker.example", 80))
    lifted = GuardedResolver(allow_private=True, inner=_FakeInner())
    assert asyncio.run(lifted.resolve("attacker.example", 80))[0]["host"] == "127.0.0.1"


@pytest.mark.timeout(30)
def test_fetcher_refuses_loopback_by_default_and_sends_nothing():
    from .faultserver import FaultServer, Site

    with FaultServer([Site("127.0.0.31")]) as fs:

        async def go():
            async with Fetcher(user_agent="RefineryBot/0.1") as f:
                return [
                    await f.fetch(fs.url("127.0.0.31", "/a")),
                    await f.fetch(f"http://localhost:{fs.port}/a"),
                ]

        literal, named = asyncio.run(go())
        assert literal.error.startswith("ssrf-blocked") and "loopback" in literal.error
        assert named.error.startswith("ssrf-blocked") and "loopback" in named.error
        assert fs.hits == []


# Spellings of a loopback address that the URL library (yarl, IDNA/NFKC) maps onto 127.0.0.x or
# that an address parser would take: each is decided as the address the connection would use.
LOOPBACK_SPELLINGS = [
    "１２７.０.０.{n}",  # fullwidth digits
    "①②⑦.0.0.{c}",  # circled digits
    "¹²⁷.0.0.{s}",  # superscript digits
    "𝟏𝟐𝟕.𝟎.𝟎.{n}",  # mathematical bold digits
    "127。0。0。{n}",  # ideographic full stop
    "127．0．0．{n}",  # fullwidth full stop
    "127｡0｡0｡{n}",  # halfwidth ideographic full stop
    "１２７｡0．0。{n}",  # mixed
    "127.0.0.{n}.",  # trailing dot
    "１２７.０.０.{n}.",
    "0x7f.0.0.{n}",
    "0177.0.0.{n}",
    "127.0.{n}",
    "{dec}",  # 127.0.0.n as one decimal number
    "[::ffff:127.0.0.{n}]",  # IPv4-mapped
    "[::ffff:{hex}]",
    "[0:0:0:0:0:ffff:127.0.0.{n}]",
    "[::ffff:0:127.0.0.{n}]",  # IPv4-translated (SIIT)
    "[64:ff9b::127.0.0.{n}]",  # NAT64 of a loopback address
    "[::127.0.0.{n}]",  # IPv4-compatible
]
_CIRCLED = dict(zip("0123456789", "⓪①②③④⑤⑥⑦⑧⑨", strict=True))
_SUPER = dict(zip("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹", strict=True))


def spell(pattern: str, n: int) -> str:
    """One spelling of 127.0.0.n."""
    return pattern.format(
        n=n,
        c="".join(_CIRCLED[d] for d in str(n)),
        s="".join(_SUPER[d] for d in str(n)),
        dec=(127 << 24) + n,
        hex=f"7f00:{n:x}",
    )


@pytest.mark.parametrize("pattern", LOOPBACK_SPELLINGS)
def test_every_spelling_of_a_loopback_host_is_refused(pattern):
    host = spell(pattern, 1)
    with pytest.raises(BlockedAddressError):
        check_literal(host)
    with pytest.raises(BlockedAddressError):
        check_url(f"http://{host}:8080/x")
    with pytest.raises(BlockedAddressError):
        asyncio.run(check_host(host, _fake({})))  # refused without resolving


@pytest.mark.parametrize(
    ("host", "address"),
    [("１２７.０.０.１", "127.0.0.1"), ("①⓪.0.0.⑦", "10.0.0.7"), ("[FD00::1]", "fd00::1")],
)
def test_spelled_literals_are_the_address_they_connect_to(host, address):
    assert str(parse_ip_literal(host)) == address
    assert check_literal(host, allow_private=True) is True  # still a literal, allowed when lifted


def test_public_names_and_unicode_names_are_left_to_the_resolver():
    for host in ("example.com", "ｅｘａｍｐｌｅ.com", "١٢٧.٠.٠.١", "bücher.example"):
        assert check_literal(host) is False  # a name: the guarded resolver decides


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("fec0::1", "site-local"),
        ("feff:ffff::1", "site-local"),
        ("64:ff9b::a00:1", "private (embedded in 64:ff9b::a00:1)"),
        ("64:ff9b::7f00:1", "loopback (embedded in 64:ff9b::7f00:1)"),
        ("64:ff9b::a9fe:a9fe", "link-local (embedded in 64:ff9b::a9fe:a9fe)"),
        ("::ffff:0:a00:1", "private (embedded in ::ffff:0:a00:1)"),
        ("64:ff9b:1::1", None),  # local-use NAT64: refused (reason depends on the table)
        ("3fff::1", None),  # documentation (RFC 9637)
        ("5f00::1", None),  # SRv6 SIDs
        ("100::1", None),  # discard-only
        ("2001:db8::1", None),
        ("192.88.99.1", None),  # deprecated 6to4 relay anycast
        ("198.51.100.7", None),
        ("203.0.113.7", None),
        ("198.18.0.1", None),
        ("255.255.255.255", None),
    ],
)
def test_non_global_ranges_python_calls_global_are_refused(address, reason):
    got = blocked_reason(address)
    assert got is not None, address
    if reason is not None:
        assert got == reason


@pytest.mark.timeout(30)
def test_fetcher_refuses_every_spelling_of_a_loopback_host_and_sends_nothing():
    from .faultserver import FaultServer, Site

    hosts = [spell(p, 32) for p in LOOPBACK_SPELLINGS]
    with FaultServer([Site("127.0.0.32")]) as fs:

        async def go(allow: bool, which: list[str]):
            async with Fetcher(user_agent="RefineryBot/0.1", allow_private_networks=allow) as f:
                return [await f.fetch(f"http://{h}:{fs.port}/a", max_redirects=3) for h in which]

        refused = asyncio.run(go(False, hosts))
        assert fs.hits == [], [(h.host, h.path) for h in fs.hits]
        for host, res in zip(hosts, refused, strict=True):
            assert res.status is None and res.error.startswith("ssrf-blocked"), (host, res.error)
        assert "refused １２７.０.０.32 (127.0.0.32) -> 127.0.0.32: loopback" in refused[0].error
        # The control: lifted, the same spellings do reach the server (they are not just broken).
        reached = asyncio.run(go(True, hosts[:8]))
    assert [r.status for r in reached] == [200] * 8
    assert len(fs.hits_for("127.0.0.32", "/a")) == 8


@pytest.mark.timeout(30)
def test_downloader_refuses_spelled_hosts_on_every_request_kind():
    # The layered path (images, rendered sub-requests, recrawls): the SSRF layer decides on the
    # connected host too, even for a page whose own private origin is trusted.
    from crawlers.crawl.downloader import Downloader

    from .faultserver import FaultServer, Site

    hosts = [spell(p, 34) for p in LOOPBACK_SPELLINGS]
    with FaultServer([Site("127.0.0.34"), Site("127.0.0.35")]) as fs:
        trusted = fs.url("127.0.0.35", "").rstrip("/")

        async def go():
            async with Downloader({"delay": 0.0, "robots_retries": 0}) as dl:
                out = []
                for host in hosts:
                    url = f"http://{host}:{fs.port}/a"
                    out.append(await dl.fetch(url, resource_type="image", trusted_origin=trusted))
                    out.append(await dl.fetch(url, resource_type="script", page="p"))
                return out

        results = asyncio.run(go())
    assert fs.hits == [], [(h.host, h.path) for h in fs.hits]
    assert all(r.status is None and r.error.startswith("ssrf-blocked") for r in results), [
        r.error for r in results if not (r.error or "").startswith("ssrf-blocked")
    ]
