"""URL canonicalisation, so one document has one frontier key.

Lowercase scheme and host (IDNA), default ports dropped, fragment removed, dot segments
resolved, percent-encoding normalised (unreserved characters decoded, hex upper-cased, unsafe
characters encoded), tracking and session parameters removed, query parameters sorted.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urljoin, urlsplit, urlunsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_SAFE = _UNRESERVED | set("!$&'()*+,;=:@/")
_QUERY_SAFE = _UNRESERVED | set("!$'()*+,;:@/?")  # '&' and '=' delimit pairs, so kept encoded
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")

TRACKING_PARAMS = frozenset(
    {
        "gclid",
        "dclid",
        "fbclid",
        "msclkid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "igshid",
        "_ga",
        "_gl",
        "ref_src",
        "sessionid",
        "session_id",
        "sid",
        "phpsessid",
        "jsessionid",
        "aspsessionid",
        "cfid",
        "cftoken",
        "zanpid",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "oly_enc_id",
    }
)
TRACKING_PREFIXES = ("utm_", "pk_", "mtm_")
# Session ids carried as path parameters: /page;jsessionid=ABC
_PATH_SESSION = re.compile(r";(jsessionid|phpsessid|sid|sessionid)=[^/?#]*", re.I)


class UrlError(ValueError):
    """A URL the crawler cannot use (bad scheme, no host, bad port)."""


def _normalise_pct(text: str, safe: set[str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        m = _PCT.match(text, i) if ch == "%" else None
        if m:
            decoded = chr(int(m.group(1), 16))
            out.append(decoded if decoded in _UNRESERVED else "%" + m.group(1).upper())
            i += 3
            continue
        if ch in safe:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
        i += 1
    return "".join(out)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    out: list[str] = []
    for seg in path.split("/"):
        if seg == "..":
            if len(out) > 1:
                out.pop()
        elif seg != ".":
            out.append(seg)
    result = "/".join(out)
    if path.endswith(("/.", "/..")):
        result += "/"
    return result if result.startswith("/") else "/" + result


def is_tracking_param(name: str) -> bool:
    """True for analytics/session parameters that do not change the document."""
    low = name.lower()
    return low in TRACKING_PARAMS or low.startswith(TRACKING_PREFIXES)


def canonicalize(url: str, base: str | None = None) -> str:
    """Return the canonical form of `url` (resolved against `base`); UrlError if unusable."""
    url = url.strip()
    return _canonical(urljoin(base, url) if base else url)


# Pages repeat the same navigation links, so most canonicalisations are cache hits.
@lru_cache(maxsize=1 << 16)
def _canonical(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlError(f"{url!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise UrlError(f"{url!r}: scheme {scheme or '(none)'!r} is not http or https")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UrlError(f"{url!r}: no host")
    try:
        host = host.encode("idna").decode("ascii").lower() if not host.isascii() else host.lower()
    except UnicodeError as exc:
        raise UrlError(f"{url!r}: bad international host name ({exc})") from exc
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _PATH_SESSION.sub("", parts.path)
    path = remove_dot_segments(_normalise_pct(path or "/", _PATH_SAFE))
    pairs = []
    for item in parts.query.split("&"):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = _normalise_pct(name.replace("+", " "), _QUERY_SAFE)
        if is_tracking_param(name):
            continue
        pairs.append((name, sep + _normalise_pct(value.replace("+", " "), _QUERY_SAFE)))
    query = "&".join(n + v for n, v in sorted(pairs))
    return urlunsplit((scheme, netloc, path, query, ""))


def host_of(url: str) -> str:
    """The lowercase host[:port] of a canonical URL (the unit of politeness)."""
    return urlsplit(url).netloc


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL (the unit robots.txt applies to)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
