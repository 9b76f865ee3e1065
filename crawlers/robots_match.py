"""robots.txt matching primitives: product tokens, URL paths, percent-encoding, patterns.

Matching follows RFC 9309 §2.2.2, with Google's reference parser (github.com/google/robotstxt,
robots.cc) for what the RFC leaves open. Pattern and URL are both brought to one spelling
before they are compared:
- a %XX escape of an unreserved character (``A-Z a-z 0-9 - . _ ~``, RFC 3986 §2.3) is decoded
  (RFC 9309: "it MUST be unencoded prior to comparison, unless it is a reserved character"), so
  ``Disallow: /foo/bar/%62%61%7A`` matches ``/foo/bar/baz`` and ``Disallow: /%7Ejoe`` matches
  ``/~joe/x`` and the other way round; escapes of reserved characters stay escapes (``%2F`` is
  not ``/``, ``%3D`` not ``=``) with their hex upper-cased (RFC 3986 §6.2.2.1);
- a character a URI never carries raw (controls, space, ``"<>\\^`{|}``) is escaped, so
  ``Disallow: /a b`` matches ``/a%20b``;
- bytes outside ASCII follow Google's ``MaybeEscapePattern``: a pattern's become UTF-8 %XX
  escapes, a URL's are compared as the caller gives them (our crawler's canonicaliser
  percent-encodes URLs before it asks). So ``Allow: /foo/bar/ツ`` matches
  ``/foo/bar/%E3%83%84`` but not a raw ``/foo/bar/ツ``.

A pattern's ``%2A`` / ``%24`` match a literal ``*`` / ``$`` in the URL (RFC 9309 §2.2.3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "CompiledRules",
    "normalize_path",
    "normalize_pattern",
    "path_params_query",
    "pattern_matches",
    "product_token",
    "robots_line_token",
]

# Characters a URI never carries raw (RFC 3986 §2): compared in their escaped spelling.
_UNSAFE = '\x00-\x20\x7f"<>\\\\^`{|}'
# A %XX escape (decoded when unreserved, else hex upper-cased), an unsafe ASCII character or
# (patterns only) a byte outside ASCII, escaped.
_PATTERN_ESCAPE_RE = re.compile(rf"%[0-9A-Fa-f]{{2}}|[{_UNSAFE}]|[^\x00-\x7f]+")
_PATH_ESCAPE_RE = re.compile(rf"%[0-9A-Fa-f]{{2}}|[{_UNSAFE}]")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_URL_SPECIAL_RE = re.compile(r"[*$]")
# Robots.txt side (Google's ExtractUserAgent): the leading run of letters, '-' and '_'.
_TOKEN_RE = re.compile(r"[A-Za-z_-]*")
# Caller side: the agent's name up to its version, comment or parameters ("FooBot/1.0 (...)").
_AGENT_NAME_RE = re.compile(r"[^\s/;()]*")
_COMPATIBLE_RE = re.compile(r"compatible;\s*([^\s/;()]+)", re.IGNORECASE)


def _escape_repl(m: re.Match[str]) -> str:
    text = m.group()
    if text[0] == "%" and len(text) == 3:
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    # surrogateescape lets undecodable robots.txt bytes round-trip to their original octets.
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogateescape"))


def normalize_path(path: str) -> str:
    """A URL path+query as matched: escapes of unreserved characters decoded, other escapes'
    hex upper-cased, unsafe ASCII escaped; bytes outside ASCII are compared as given.

    A literal ``*`` / ``$`` is spelled ``%2A`` / ``%24`` so that only an escaped pattern
    matches it (RFC 9309 §2.2.3).
    """
    if "%" in path or _PATH_ESCAPE_RE.search(path) is not None:
        path = _PATH_ESCAPE_RE.sub(_escape_repl, path)
    if _URL_SPECIAL_RE.search(path) is None:
        return path
    return path.replace("*", "%2A").replace("$", "%24")


def normalize_pattern(pattern: str) -> str:
    """A pattern as matched, spelled like `normalize_path` spells a URL, with bytes outside
    ASCII escaped (Google's MaybeEscapePattern); '*' and a final '$' stay special."""
    canon = _PATTERN_ESCAPE_RE.sub(_escape_repl, pattern)
    body, end = (canon[:-1], "$") if canon.endswith("$") else (canon, "")
    return body.replace("$", "%24") + end


def path_params_query(url: str) -> str:
    """Path, params and query of a URL or path, always starting with '/' (Google's rules)."""
    start = 2 if url.startswith("//") else 0
    early = _first_of(url, "/?;", start)
    proto = url.find("://", start)
    if proto == -1 or (early != -1 and early < proto):
        proto = start  # '://' after the path starts belongs to the query, not a scheme
    else:
        proto += 3
    path_start = _first_of(url, "/?;", proto)
    if path_start == -1:
        return "/"
    hash_pos = url.find("#", start)
    if hash_pos != -1 and hash_pos < path_start:
        return "/"
    path = url[path_start : len(url) if hash_pos == -1 else hash_pos]
    return path if path.startswith("/") else "/" + path


def _first_of(text: str, chars: str, start: int) -> int:
    best = -1
    for ch in chars:
        pos = text.find(ch, start)
        if pos != -1 and (best == -1 or pos < best):
            best = pos
    return best


def product_token(user_agent: str) -> str:
    """The product token of a crawler UA: 'Mozilla/5.0 (compatible; FooBot/1.0)' -> 'FooBot'.

    The name runs up to its version ('/'), a space, ';' or a parenthesis and keeps digits:
    'AB42bot/1.0' -> 'AB42bot'. A robots.txt group line keeps only leading letters, '-' and
    '_' (``robots_line_token``), so an agent whose token has other characters matches no
    named group, exactly as in Google's parser.
    """
    ua = user_agent.strip()
    if ua.lower().startswith("mozilla/"):
        m = _COMPATIBLE_RE.search(ua)
        if m:
            return m.group(1)
    return _AGENT_NAME_RE.match(ua).group()


def robots_line_token(value: str) -> str:
    """Token named by a robots.txt user-agent value: leading [A-Za-z_-] run, as Google does."""
    return _TOKEN_RE.match(value).group()


def _split_pattern(pattern: str) -> tuple[str, tuple[str, ...], str, bool]:
    """(first literal, middle literals, last literal, anchored) of a wildcard pattern."""
    anchored = pattern.endswith("$")
    pieces = (pattern[:-1] if anchored else pattern).split("*")
    if len(pieces) == 1:
        return pieces[0], (), "", anchored
    return pieces[0], tuple(pieces[1:-1]), pieces[-1], anchored


def _match_rest(
    path: str, pos: int, middle: tuple[str, ...], last: str, anchored: bool, has_star: bool
) -> bool:
    # Leftmost-first search of each piece is optimal when '*' is the only wildcard, so this is
    # linear in the path: hostile patterns cannot trigger regex-style backtracking.
    if not has_star:
        return not anchored or len(path) == pos
    for piece in middle:
        found = path.find(piece, pos)
        if found == -1:
            return False
        pos = found + len(piece)
    if anchored:
        return len(path) - len(last) >= pos and path.endswith(last)
    return path.find(last, pos) != -1


def pattern_matches(pattern: str, path: str) -> bool:
    """True if a normalised pattern matches a normalised path ('*' any run, final '$' anchors)."""
    first, middle, last, anchored = _split_pattern(pattern)
    if not path.startswith(first):
        return False
    return _match_rest(path, len(first), middle, last, anchored, "*" in pattern)


_Wild = tuple[int, bool, tuple[str, ...], str, bool, bool]  # prio, allow, middle, last, $, *


@dataclass(frozen=True, slots=True)
class CompiledRules:
    """One user-agent's merged rules, indexed for longest-match lookup.

    Literal patterns are bucketed by length, so a lookup is one dict probe per distinct length.
    Wildcard patterns are bucketed by their literal head (the text before the first '*'), so
    only rules whose head is a prefix of the path are ever tried.
    """

    prefix_by_len: dict[int, dict[str, bool]]  # length -> {literal pattern: is_allow}
    prefix_lengths: tuple[int, ...]  # descending
    wild_by_head: dict[int, dict[str, tuple[_Wild, ...]]]  # head length -> {head: best first}
    head_lengths: tuple[int, ...]

    @classmethod
    def build(cls, rules: list[tuple[bool, str]]) -> CompiledRules:
        """Index (is_allow, normalised pattern) pairs; empty patterns match nothing (RFC 9309)."""
        by_len: dict[int, dict[str, bool]] = {}
        wild: dict[str, bool] = {}
        for is_allow, pattern in rules:
            if not pattern:
                continue
            if "*" in pattern or pattern.endswith("$"):
                wild[pattern] = wild.get(pattern, False) or is_allow
            else:
                bucket = by_len.setdefault(len(pattern), {})
                bucket[pattern] = bucket.get(pattern, False) or is_allow  # allow wins ties
        heads: dict[str, list[tuple[int, bool, str]]] = {}
        for pattern, is_allow in wild.items():
            heads.setdefault(_split_pattern(pattern)[0], []).append(
                (len(pattern), is_allow, pattern)
            )
        by_head: dict[int, dict[str, tuple[_Wild, ...]]] = {}
        for head, entries in heads.items():
            entries.sort(key=lambda e: (-e[0], not e[1], e[2]))
            by_head.setdefault(len(head), {})[head] = tuple(
                (prio, allow, *_split_pattern(pat)[1:], "*" in pat) for prio, allow, pat in entries
            )
        return cls(by_len, tuple(sorted(by_len, reverse=True)), by_head, tuple(sorted(by_head)))

    def decide(self, path: str) -> bool | None:
        """Allow (True), disallow (False) or no rule matched (None) for a normalised path."""
        best_len, best_allow = -1, False
        path_len = len(path)
        for length in self.prefix_lengths:
            if length <= path_len:
                hit = self.prefix_by_len[length].get(path[:length])
                if hit is not None:
                    best_len, best_allow = length, hit
                    break
        for head_len in self.head_lengths:
            if head_len > path_len:
                break
            candidates = self.wild_by_head[head_len].get(path[:head_len])
            if candidates is None:
                continue
            for priority, is_allow, middle, last, anchored, star in candidates:
                if priority < best_len or (priority == best_len and (best_allow or not is_allow)):
                    break  # sorted best-first: nothing further here can win
                if _match_rest(path, head_len, middle, last, anchored, star):
                    best_len, best_allow = priority, is_allow
                    break
        return None if best_len < 0 else best_allow
