"""SSRF guard decisions, tested as pure functions over addresses with a fake resolver."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.abc import AbstractResolver

from crawlers.crawl.fetcher import Fetcher
from crawlers.crawl.ssrf import BlockedAddressError, GuardedResolver, blocked_reason, check_host


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
