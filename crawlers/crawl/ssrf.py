"""SSRF guard: refuse non-public addresses before connecting, after every redirect and after DNS.

The decision logic is pure (`blocked_reason`, `check_host`) so it is tested without traffic;
`GuardedResolver` plugs it into aiohttp so every address a name resolves to is checked, which
also defeats DNS rebinding (a public name that later resolves to 127.0.0.1).

Decisions are made on the host exactly as the connection will use it: `connect_url` parses a URL
the way aiohttp does (yarl: IDNA/NFKC mapping, so fullwidth, circled or superscript digits and
ideographic dots become ASCII: `１２７.０.０.１` and `①②⑦.0.0.①` are `127.0.0.1`), and an IP
literal there is checked like a resolved address, since aiohttp connects to it without asking
the resolver.

The private-network allowance (`allow_private`, `--allow-private-networks`) lifts only what its
name says: loopback and private networks (`allowance_lifts`). Link-local (cloud metadata),
multicast, broadcast, unspecified, reserved and the other special ranges stay refused with it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Hosts that look numeric but are not dotted-quad (e.g. 2130706433, 0x7f.1, 127.1, 127.0.0.1.)
# are mapped onto addresses by inet_aton; refuse them outright rather than guess what the OS
# would do.
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+", re.I | re.ASCII)

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network
# Ranges that are not globally reachable (IANA special-purpose registries), named here so the
# verdict does not depend on the Python version's `is_global` table (3.11 calls fec0::/10 global).
_NON_GLOBAL: tuple[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network], ...] = (
    ("site-local", _V6("fec0::/10")),  # deprecated (RFC 3879), still routed inside sites
    ("private", _V6("fc00::/7")),
    ("link-local", _V6("fe80::/10")),
    ("nat64-local", _V6("64:ff9b:1::/48")),  # local-use NAT64 prefix (RFC 8215)
    ("discard", _V6("100::/64")),
    ("documentation", _V6("2001:db8::/32")),
    ("documentation", _V6("3fff::/20")),
    ("ietf-protocol", _V6("2001::/23")),
    ("srv6-sid", _V6("5f00::/16")),
    ("reserved", _V6("::/8")),
    ("this-network", _V4("0.0.0.0/8")),
    ("private", _V4("10.0.0.0/8")),
    ("non-global", _V4("100.64.0.0/10")),  # shared address space (carrier-grade NAT)
    ("loopback", _V4("127.0.0.0/8")),
    ("link-local", _V4("169.254.0.0/16")),
    ("private", _V4("172.16.0.0/12")),
    ("ietf-protocol", _V4("192.0.0.0/24")),
    ("documentation", _V4("192.0.2.0/24")),
    ("6to4-relay", _V4("192.88.99.0/24")),
    ("private", _V4("192.168.0.0/16")),
    ("benchmarking", _V4("198.18.0.0/15")),
    ("documentation", _V4("198.51.100.0/24")),
    ("documentation", _V4("203.0.113.0/24")),
    ("multicast", _V4("224.0.0.0/4")),
    ("reserved", _V4("240.0.0.0/4")),
)
# What the private-network allowance lifts: loopback, private networks and the shared address
# space (carrier-grade NAT), where a lab network or the sample web lives.
_ALLOWANCE = (
    _V4("127.0.0.0/8"),
    _V4("10.0.0.0/8"),
    _V4("172.16.0.0/12"),
    _V4("192.168.0.0/16"),
    _V4("100.64.0.0/10"),
    _V6("::1/128"),
    _V6("fc00::/7"),
)
# Instance metadata services inside those ranges: never lifted (169.254.169.254 is link-local,
# which the allowance never lifts either).
_METADATA = (
    _V6("fd00:ec2::254/128"),  # AWS IMDS over IPv6
    _V4("100.100.100.200/32"),  # Alibaba Cloud metadata
)
# IPv6 prefixes whose low 32 bits are an IPv4 address that a translator (NAT64/SIIT) or the
# host's own stack reaches instead: that IPv4 is checked.
_EMBEDS_V4 = (
    _V6("64:ff9b::/96"),  # well-known NAT64 prefix (RFC 6052)
    _V6("::ffff:0:0:0/96"),  # IPv4-translated (SIIT, RFC 2765)
    _V6("::/96"),  # IPv4-compatible (deprecated); :: and ::1 are caught before
)


NON_CANONICAL = "non-canonical numeric"


class BlockedAddressError(OSError):
    """Raised when a URL's host is, or resolves to, an address the guard refuses."""

    def __init__(self, host: str, address: str, reason: str):
        super().__init__(
            f"refused {host} -> {address}: {reason} address ({_remedy(address, reason)})"
        )
        self.host, self.address, self.reason = host, address, reason


def _remedy(address: str, reason: str) -> str:
    """The fix a refusal names: the flag where it lifts the refusal, else why nothing does."""
    if reason == NON_CANONICAL:
        return "write the host as four decimal numbers (127.0.0.1) or as a name"
    try:
        addr = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "use --allow-private-networks"
    if allowance_lifts(addr):
        return "use --allow-private-networks"
    return "never fetched, not even with --allow-private-networks"


def _embedded_v4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries and leads to (mapped, NAT64, 6to4, Teredo...)."""
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr.teredo is not None:
        return addr.teredo[1]
    plain = ipaddress.IPv6Address(int(addr))  # without a zone id, for membership tests
    if any(plain in net for net in _EMBEDS_V4) and int(plain) > 1:
        return ipaddress.IPv4Address(int(plain) & 0xFFFFFFFF)
    return None


def blocked_reason(address: str | IPAddress) -> str | None:
    """Why an IP address must not be fetched (None when it is public)."""
    addr = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(addr, ipaddress.IPv6Address):
        # IPv4-mapped (::ffff:a.b.c.d), NAT64, 6to4 and Teredo embed an IPv4 that is what gets
        # reached.
        embedded = _embedded_v4(addr)
        if embedded is not None:
            inner = blocked_reason(embedded)
            if inner:
                return f"{inner} (embedded in {addr})"
    for reason in ("unspecified", "loopback", "link_local", "multicast", "reserved", "private"):
        if getattr(addr, f"is_{reason}"):
            return reason.replace("_", "-")
    if isinstance(addr, ipaddress.IPv6Address):
        addr = ipaddress.IPv6Address(int(addr))  # drop a zone id for the membership tests
    for reason, net in _NON_GLOBAL:
        if addr.version == net.version and addr in net:
            return reason
    if not addr.is_global:
        return "non-global"
    return None


def allowance_lifts(address: str | IPAddress) -> bool:
    """Whether --allow-private-networks lets this address through: loopback and private
    networks only (IPv4-mapped forms judged as their IPv4), never a metadata service."""
    addr = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(addr, ipaddress.IPv6Address):
        addr = ipaddress.IPv6Address(int(addr))  # drop a zone id for the membership tests
        if addr.ipv4_mapped is not None:  # ::ffff:a.b.c.d reaches a.b.c.d on this host
            return allowance_lifts(addr.ipv4_mapped)
    if any(addr.version == net.version and addr in net for net in _METADATA):
        return False
    return any(addr.version == net.version and addr in net for net in _ALLOWANCE)


def refused_reason(address: str | IPAddress, allow_private: bool = False) -> str | None:
    """Why an address must not be fetched under the allowance given (None: fetch it)."""
    reason = blocked_reason(address)
    if reason and allow_private and allowance_lifts(address):
        return None
    return reason


def connect_url(url: str | URL) -> URL:
    """`url` parsed exactly as aiohttp parses it to connect (yarl): host IDNA/NFKC-mapped.

    Pass the returned URL itself to aiohttp, so the host checked is the host connected to.
    ValueError for anything that is not an http(s) URL with a host.
    """
    try:
        target = url if isinstance(url, URL) else URL(url)
        host = target.raw_host
    except (ValueError, UnicodeError) as exc:
        raise ValueError(f"not a valid URL: {str(url)[:200]!r} ({exc})") from None
    if target.scheme not in ("http", "https") or not host:
        raise ValueError(f"not an http(s) URL: {str(url)[:200]!r}")
    return target


def connect_host(host: str) -> str:
    """A URL host as the connection uses it: brackets off, IDNA/NFKC-mapped, lower case.

    '１２７.０.０.１' -> '127.0.0.1', '[::1]' -> '::1', 'ＬＯＣＡＬＨＯＳＴ' -> 'localhost'.
    ValueError when the host cannot be encoded (no connection can be made to it).
    """
    name = host.strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name.isascii():
        return name.lower()
    try:
        encoded = URL.build(scheme="http", host=name).raw_host
    except (ValueError, UnicodeError) as exc:
        raise ValueError(f"host {host[:200]!r} cannot be encoded ({exc})") from None
    if not encoded:
        raise ValueError(f"host {host[:200]!r} is empty once encoded")
    return encoded.strip("[]").lower()


def parse_ip_literal(host: str) -> IPAddress | None:
    """The IP address a URL host denotes literally ('[::1]', '127.0.0.1', '１２７.０.０.１'), else None."""
    try:
        name = connect_host(host)
    except ValueError:
        return None
    try:
        return ipaddress.ip_address(name.replace("%25", "%", 1))  # RFC 6874 zone separator
    except ValueError:
        return None


def _numericish(name: str) -> bool:
    """True for hosts an address parser, not DNS, would take: all-numeric or hex labels (a
    trailing dot too), anything aiohttp's own IP heuristic takes for an address, any colon."""
    if ":" in name or name.replace(".", "").isdigit():
        return True
    labels = name.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()  # '127.0.0.1.'
    return bool(labels) and all(_NUMERIC_LABEL.fullmatch(label) for label in labels)


def check_literal(host: str, allow_private: bool = False) -> bool:
    """Check a host without resolving it; True if it is an IP literal (and allowed).

    The host is first mapped as the connection maps it (`connect_host`), so every spelling of an
    address is decided as that address. A host that looks numeric but is not a canonical IP
    literal is refused, allowance or not. ValueError when the host cannot be encoded at all.
    """
    name = connect_host(host)
    addr = parse_ip_literal(name)
    if addr is None:
        if _numericish(name):
            raise BlockedAddressError(host, name, NON_CANONICAL)
        return False
    reason = refused_reason(addr, allow_private)
    if reason:
        raise BlockedAddressError(host, str(addr), reason)
    return True


def check_url(url: str | URL, allow_private: bool = False) -> URL:
    """The URL aiohttp will connect to (`connect_url`), its host checked (`check_literal`).

    BlockedAddressError for a refused literal host, ValueError for a URL that cannot be fetched.
    """
    target = connect_url(url)
    host = target.raw_host or ""
    try:
        check_literal(host, allow_private)
    except BlockedAddressError as exc:
        written = urlsplit(str(url)).hostname or host
        if written != host:  # name the spelling that was written as well as what it means
            raise BlockedAddressError(f"{written} ({host})", exc.address, exc.reason) from None
        raise
    return target


def check_addresses(host: str, addresses: list[str], allow_private: bool = False) -> list[str]:
    """Check every address a host resolved to; any refused one refuses the host."""
    if not addresses:
        raise BlockedAddressError(host, "-", "unresolvable")
    for address in addresses:
        reason = refused_reason(address.split("%", 1)[0], allow_private)  # drop a zone id
        if reason:
            raise BlockedAddressError(host, address, reason)
    return addresses


async def check_host(
    host: str, resolve: Callable[[str], Awaitable[list[str]]], allow_private: bool = False
) -> list[str]:
    """Resolve a host with `resolve` and check every address (literals are checked directly)."""
    if check_literal(host, allow_private):
        return [str(parse_ip_literal(host))]
    return check_addresses(host, await resolve(connect_host(host)), allow_private)


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
