"""URL canonicalisation, so one document has one frontier key.

Lowercase scheme and host (IDNA), default ports dropped, fragment removed, dot segments
resolved, percent-encoding normalised (unreserved characters decoded, hex upper-cased, unsafe
characters encoded), tracking and session parameters removed, query parameters sorted.
"""

from __future__ import annotations

import ipaddress
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
    """A URL the crawler cannot use (bad scheme, no host, bad port, bad host name)."""


# A host name as DNS can carry it: labels of letters, digits, '-' and '_' (seen on the real
# web), 1 to 63 characters each, 253 in all. Anything else (spaces, '%', control characters,
# empty labels) would fail later, in IDNA or the resolver, outside any per-URL handling.
_LABEL = re.compile(r"[a-z0-9_-]{1,63}")
MAX_HOST = 253
MAX_URL = 8192  # longer "URLs" are not links (data blobs, broken markup)


def _checked_host(host: str, url: str) -> str:
    """The host as the frontier stores it (lowercase ASCII, IPv6 in brackets); UrlError if
    no resolver or connection could use it."""
    if ":" in host:
        try:
            if "%" in host:
                raise ValueError("a zone id is local to this machine")
            ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise UrlError(f"{url!r}: bad IPv6 host ({exc})") from None
        return f"[{host.lower()}]"
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise UrlError(f"{url!r}: bad international host name ({exc})") from None
    host = host.lower()
    if len(host) > MAX_HOST:
        raise UrlError(f"{url!r}: host name longer than {MAX_HOST} characters")
    for label in host.split("."):
        if not _LABEL.fullmatch(label):
            why = (
                "an empty label"
                if not label
                else "a label longer than 63 characters"
                if len(label) > 63
                else f"a label with characters other than letters, digits, '-', '_' ({label!r})"
            )
            raise UrlError(f"{url!r}: bad host name ({why})")
    return host


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


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")


def browser_slashes(url: str, base: str | None = None) -> str:
    """`url` with each backslash before its query or fragment read as '/', as browsers read an
    http(s) URL (WHATWG), so the host decided on is the one a browser connects to:
    'http://127.0.0.1\\@good.example/' is host 127.0.0.1, path '/@good.example/'."""
    if "\\" not in url:
        return url
    url = url.translate(_TAB_OR_NEWLINE)  # WHATWG (and urlsplit) drop these anywhere
    scheme = _SCHEME.match(url) or _SCHEME.match((base or "").strip().translate(_TAB_OR_NEWLINE))
    if not scheme or scheme.group()[:-1].lower() not in DEFAULT_PORTS:
        return url
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    return url[:cut].replace("\\", "/") + url[cut:]


def canonicalize(url: str, base: str | None = None) -> str:
    """Return the canonical form of `url` (resolved against `base`); UrlError if unusable."""
    url = url.strip()
    if len(url) > MAX_URL:
        raise UrlError(f"{url[:80]!r}...: longer than {MAX_URL} characters")
    url = browser_slashes(url, base)
    if base:
        try:
            url = urljoin(base, url)
        except ValueError as exc:  # urljoin parses: 'http://[::1' raises here
            raise UrlError(f"{url!r}: {exc}") from None
    return _canonical(url)


# Pages repeat the same navigation links, so most canonicalisations are cache hits.
@lru_cache(maxsize=1 << 16)
def _canonical(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlError(f"{url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise UrlError(f"{url!r}: scheme {scheme or '(none)'!r} is not http or https")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UrlError(f"{url!r}: no host")
    host = _checked_host(host, url)
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
