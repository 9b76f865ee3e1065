"""SSRF guard: refuse non-public addresses before connecting, after every redirect and after DNS.

The decision logic is pure (`blocked_reason`, `check_host`) so it is tested without traffic;
`GuardedResolver` plugs it into aiohttp so every address a name resolves to is checked, which
also defeats DNS rebinding (a public name that later resolves to 127.0.0.1).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Hosts that look numeric but are not dotted-quad (e.g. 2130706433, 0x7f.1, 127.1) are mapped onto
# addresses by inet_aton; refuse them outright rather than guess what the OS would do.
_NUMERICISH = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}$", re.I)


class BlockedAddressError(OSError):
    """Raised when a URL's host is, or resolves to, an address the guard refuses."""

    def __init__(self, host: str, address: str, reason: str):
        super().__init__(
            f"refused {host} -> {address}: {reason} address (use --allow-private-networks)"
        )
        self.host, self.address, self.reason = host, address, reason


def blocked_reason(address: str | IPAddress) -> str | None:
    """Why an IP address must not be fetched (None when it is public)."""
    addr = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(addr, ipaddress.IPv6Address):
        # IPv4-mapped (::ffff:a.b.c.d), 6to4 and Teredo embed an IPv4 that is what gets reached.
        embedded = addr.ipv4_mapped or addr.sixtofour or (addr.teredo[1] if addr.teredo else None)
        if embedded is not None:
            inner = blocked_reason(embedded)
            if inner:
                return f"{inner} (embedded in {addr})"
    for reason in ("unspecified", "loopback", "link_local", "multicast", "reserved", "private"):
        if getattr(addr, f"is_{reason}"):
            return reason.replace("_", "-")
    if not addr.is_global:
        return "non-global"  # e.g. 100.64.0.0/10 shared address space
    return None


def parse_ip_literal(host: str) -> IPAddress | None:
    """The IP address a URL host denotes literally ('[::1]' and '127.0.0.1' forms), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def check_literal(host: str, allow_private: bool = False) -> bool:
    """Check a host without resolving it; True if it is an IP literal (and allowed)."""
    addr = parse_ip_literal(host)
    if addr is None:
        if _NUMERICISH.match(host) and not allow_private:
            raise BlockedAddressError(host, host, "non-canonical numeric")
        return False
    reason = None if allow_private else blocked_reason(addr)
    if reason:
        raise BlockedAddressError(host, str(addr), reason)
    return True


def check_addresses(host: str, addresses: list[str], allow_private: bool = False) -> list[str]:
    """Check every address a host resolved to; any refused one refuses the host."""
    if not addresses:
        raise BlockedAddressError(host, "-", "unresolvable")
    if not allow_private:
        for address in addresses:
            reason = blocked_reason(address.split("%", 1)[0])  # drop an IPv6 zone id
            if reason:
                raise BlockedAddressError(host, address, reason)
    return addresses


async def check_host(
    host: str, resolve: Callable[[str], Awaitable[list[str]]], allow_private: bool = False
) -> list[str]:
    """Resolve a host with `resolve` and check every address (literals are checked directly)."""
    if check_literal(host, allow_private):
        return [str(parse_ip_literal(host))]
    return check_addresses(host, await resolve(host), allow_private)


class GuardedResolver(AbstractResolver):
    """aiohttp resolver that refuses names resolving to any non-public address."""

    def __init__(self, allow_private: bool = False, inner: AbstractResolver | None = None):
        self.allow_private = allow_private
        self._inner = inner or DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Resolve with the inner resolver, then refuse if any address is blocked."""
        results = await self._inner.resolve(host, port, family)
        check_addresses(host, [r["host"] for r in results], self.allow_private)
        return results

    async def close(self) -> None:
        """Close the inner resolver."""
        await self._inner.close()
