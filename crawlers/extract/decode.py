"""Turn a response body into HTML text, or say precisely why it cannot be one.

Crawled bodies arrive as bytes with a declared charset that is often wrong or missing, and
sometimes they are not HTML at all (an image served as text/html). Each failure becomes a
`BadPage` with a reject reason, so the extraction stage can account for every input row.

Which encoding, in order (`choose_encoding`):
  1. a byte-order mark, or UTF-16 without one (a NUL in every other byte, on the same side);
  2. the HTTP Content-Type charset, then the page's own declaration (`<meta charset>`,
     `<meta http-equiv=Content-Type>`, `<?xml encoding=?>`), labels read as browsers read them
     (WHATWG: iso-8859-1 and ascii are windows-1252, gb2312 is GBK, ...); but bytes that are
     valid UTF-8 with non-ASCII characters are UTF-8 whatever a single-byte label claims (a
     template's stale `<meta charset=iso-8859-1>` on a UTF-8 page), and whatever a multi-byte
     label claims once there are enough of them that chance is ruled out. The page's own
     charset beats the header's where it fits the bytes (a few stray bytes at most) and the
     header's either does not (PHP's default `charset=UTF-8` on a windows-1251 page) or is a
     server's default that says nothing about the page (iso-8859-1, windows-1252, us-ascii:
     Apache's AddDefaultCharset on a Shift_JIS page) and fits no better;
  3. valid UTF-8;
  4. detection (charset_normalizer) on the page's text, not its markup: the runs of non-ASCII
     bytes outside scripts and styles. On a page whose markup outweighs its text, detection over
     the whole body reads a few Chinese sentences as Cyrillic or Latin-1.
A body is binary (`sniff_binary`) by its magic number or by its share of C0 control bytes, a run
of NUL bytes counting once: stray NULs and NUL padding are text pages. The text returned carries
no XML declaration and no character XML cannot hold, raw or as a numeric reference (`&#11;`): C0
controls other than tab, newline and carriage return, U+FFFE, U+FFFF, lone surrogates, each
replaced by a space (lxml refuses a `str` with an encoding declaration, and such a character
makes trafilatura discard the page). A Content-Type other than HTML (text/html,
application/xhtml+xml) is `not_html`: text/plain, XML feeds and SVG are no web pages.
"""

from __future__ import annotations

import codecs
import functools
import re

from charset_normalizer import from_bytes

# Magic numbers of formats that are sometimes mislabelled as HTML by servers.
_BINARY_MAGIC = {
    b"\x89PNG": "png",
    b"\xff\xd8\xff": "jpeg",
    b"GIF8": "gif",
    b"%PDF": "pdf",
    b"PK\x03\x04": "zip",
    b"\x1f\x8b": "gzip",
    b"RIFF": "riff",
    b"\x00\x00\x01\x00": "ico",
    b"wOFF": "woff",
    b"wOF2": "woff2",
}
_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.I)
_XML_DECL_ENC_RE = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_\-:.]+)""", re.I)
_HEADER_CHARSET_RE = re.compile(r"charset\s*=\s*[\"']?\s*([A-Za-z0-9_\-:.]+)", re.I)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: its BOM starts the same way
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels as browsers read them (WHATWG Encoding Standard): a page labelled with the narrower
# charset uses the wider one's characters, so a strict decode with Python's narrow codec fails.
_WHATWG = {
    "iso-8859-1": "cp1252",
    "latin-1": "cp1252",
    "latin1": "cp1252",
    "l1": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "iso-8859-9": "cp1254",
    "latin5": "cp1254",
    "iso-8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "gb_2312-80": "gb18030",
    "chinese": "gb18030",
    "big5": "big5hkscs",
    "x-x-big5": "big5hkscs",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "iso-8859-8-i": "iso8859-8",  # logical order: the same bytes as iso-8859-8
    "csiso88598i": "iso8859-8",
    "windows-874": "cp874",
    "utf8": "utf-8",
    "unicode": "utf-8",  # pages that say "unicode" are UTF-8 (UTF-16 ones carry a BOM)
    "utf-16": "utf-8",  # a UTF-16 label on an ASCII-compatible byte stream: WHATWG reads UTF-8
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
}
# Header charsets that servers send whatever the page holds (Apache's AddDefaultCharset, Tomcat,
# old PHP), as codecs: iso-8859-1, us-ascii and windows-1252 all read as windows-1252.
_SERVER_DEFAULTS = frozenset({"cp1252"})
# Non-ASCII bytes that UTF-8 validity must cover before it overrules a multi-byte label (GBK,
# Big5, Shift_JIS text can be valid UTF-8 by chance over a few characters, not over dozens).
_UTF8_OVER_MULTIBYTE = 24
_SCRIPT_STYLE_RE = re.compile(rb"<(script|style)\b.*?</\1\s*>", re.I | re.S)
_TAG_RE = re.compile(rb"<[^>]*>")
_NON_ASCII_LINE_RE = re.compile(rb"[^\n]*[\x80-\xff][^\n]*")
_XML_DECL_RE = re.compile(r"^\ufeff?\s*<\?xml[^>]*\?>", re.I)
# Characters XML (so lxml, so trafilatura) cannot hold: C0 controls other than tab, newline,
# carriage return (form feed is dropped too: trafilatura and lxml treat it like the others),
# U+FFFE and U+FFFF; DEL and C1 controls are left to the text normalisers.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# ... and lone surrogates, which a str from a browser (JavaScript strings) can hold.
_UNSAFE_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
# A numeric character reference to a C0 control, U+FFFE or U+FFFF, decimal or hex, any leading
# zeros, ";" optional (as parsers read it): libxml2 turns `&#11;` into a real U+000B that lxml
# then refuses to write back. (Tab, newline and carriage return are let through by _unsafe_ref;
# libxml2 makes a surrogate or out-of-range reference U+FFFD itself.)
_CHAR_REF_RE = re.compile(
    r"&#(?:[xX]0*([0-9a-fA-F]|1[0-9a-fA-F]|[fF]{3}[eEfF])(?![0-9a-fA-F])"
    r"|0*([0-9]|[12][0-9]|3[01]|6553[45])(?![0-9]));?"
)


# C0 control bytes other than tab, newline, form feed, carriage return (sniff_binary).
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13))
_NUL_RUN_RE = re.compile(rb"\x00+")


class BadPage(Exception):
    """A page that cannot become a document; `reason` is a short machine code, `detail` is prose."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _codec(label: str | None) -> str | None:
    """Python codec name for a charset label as browsers read it, or None if unknown."""
    if not label:
        return None
    label = label.strip().lower()
    label = _WHATWG.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _page_charset(head: bytes) -> str | None:
    m = _XML_DECL_ENC_RE.search(head) or _CHARSET_RE.search(head)
    return m.group(1).decode("ascii").lower() if m else None


@functools.lru_cache(maxsize=256)
def _is_single_byte(codec: str) -> bool:
    try:
        return len(bytes(range(256)).decode(codec, errors="replace")) == 256
    except (LookupError, UnicodeDecodeError, TypeError):
        return False


def _utf8_overrules(body: bytes, codec: str) -> bool:
    """Valid UTF-8 with non-ASCII text beats a declared legacy charset (see the module doc)."""
    if codec in ("utf-8", "utf-8-sig"):
        return False
    non_ascii = _non_ascii(body)
    if not non_ascii:
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _is_single_byte(codec) or non_ascii >= _UTF8_OVER_MULTIBYTE


def _non_ascii(body: bytes) -> int:
    return len(body) - len(body.decode("ascii", errors="ignore"))


def _few_strays(bad: int, non_ascii: int) -> bool:
    """A right charset with a few stray bytes (a cut multi-byte character, one pasted Latin-1
    word) leaves at most 2 replacement characters or 1% of the non-ASCII bytes."""
    return bad <= max(2, 0.01 * non_ascii)


def _strays(body: bytes, codec: str) -> int:
    """Replacement characters `codec` leaves in `body` (0 when it decodes every byte)."""
    try:
        body.decode(codec)
        return 0
    except UnicodeDecodeError:
        return body.decode(codec, errors="replace").count("\ufffd")


def _page_over_header(body: bytes, header: str, page: str) -> bool:
    """The page's declared charset beats the header's (see the module doc)."""
    non_ascii = _non_ascii(body)
    header_bad = _strays(body, header)
    header_fits = _few_strays(header_bad, non_ascii)
    if header_fits and header not in _SERVER_DEFAULTS:
        return False
    page_bad = _strays(body, page)
    if not _few_strays(page_bad, non_ascii) or _utf8_overrules(body, page):
        return False
    return not header_fits or page_bad <= header_bad


def text_sample(body: bytes, limit: int = 64_000) -> bytes:
    """The page's text lines holding non-ASCII bytes (outside scripts, styles and tags)."""
    stripped = _TAG_RE.sub(b"\n", _SCRIPT_STYLE_RE.sub(b"\n", body[:2_000_000]))
    return b"\n".join(_NON_ASCII_LINE_RE.findall(stripped))[:limit]


def detect_encoding(body: bytes) -> str | None:
    """Detected codec of a body that is not valid UTF-8, judged on its text rather than markup."""
    sample = text_sample(body)
    best = from_bytes(sample).best() if sample else None
    if best is None:  # no non-ASCII text outside the markup: judge the whole body
        best = from_bytes(body[:200_000]).best()
    return _codec(best.encoding) if best is not None else None


def choose_encoding(body: bytes, content_type: str | None = None) -> tuple[str, str]:
    """(codec, source): the encoding to decode with and where it came from (see the module doc)."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec, "bom"
    utf16 = utf16_without_bom(body[:4096])
    if utf16:  # no label can be read from it as ASCII, and "utf-16" labels mean UTF-8 to WHATWG
        return utf16, "utf-16 byte pattern"
    header = None
    if content_type:
        m = _HEADER_CHARSET_RE.search(content_type)
        header = _codec(m.group(1)) if m else None
    page = _codec(_page_charset(body[: _head_end(body)]))
    if header:
        if _utf8_overrules(body, header):
            return "utf-8", "utf-8 over header " + header
        if page and page != header and _page_over_header(body, header, page):
            return page, "page over header " + header
        return header, "header"
    if page:
        if _utf8_overrules(body, page):
            return "utf-8", "utf-8 over page " + page
        return page, "page"
    try:
        body.decode("utf-8")
        return "utf-8", "valid utf-8"
    except UnicodeDecodeError:
        pass
    detected = detect_encoding(body)
    return (detected, "detected") if detected else ("utf-8", "fallback")


def _head_end(body: bytes, limit: int = 16_384) -> int:
    """Bytes to search for the page's charset declaration: its head, at most `limit` bytes."""
    end = body.find(b"</head", 0, limit)
    if end < 0:
        end = body.find(b"</HEAD", 0, limit)
    return end if end >= 0 else limit


def _unsafe_ref(m: re.Match) -> str:
    hex_digits, digits = m.groups()
    code = int(hex_digits, 16) if hex_digits is not None else int(digits)
    return m.group(0) if code in (0x09, 0x0A, 0x0D) else " "


def drop_controls(text: str) -> str:
    """`text` with each character XML cannot hold but a valid string can (C0 controls other
    than tab, newline, carriage return; U+FFFE, U+FFFF) replaced by a space."""
    return _CONTROL_RE.sub(" ", text)


def clean_text(html: str) -> str:
    """Drop a leading XML declaration; replace by a space the characters lxml cannot hold (C0
    controls, U+FFFE, U+FFFF, lone surrogates), raw or as numeric references (`&#11;`,
    `&#x1b;`): one of them would make trafilatura discard the page, or an image its alt holds."""
    html = _XML_DECL_RE.sub("", html, count=1)
    if "&#" in html:
        html = _CHAR_REF_RE.sub(_unsafe_ref, html)
    return _UNSAFE_RE.sub(" ", html)


def utf16_without_bom(sample: bytes) -> str | None:
    """'utf-16-le' or 'utf-16-be' where the bytes are UTF-16 text without a byte-order mark (ASCII
    markup leaves a NUL in every other byte, on the same side), else None."""
    pairs = len(sample) // 2
    if pairs < 16:
        return None
    even, odd = sample[0 : 2 * pairs : 2].count(0), sample[1 : 2 * pairs : 2].count(0)
    if odd >= 0.3 * pairs and even <= 0.02 * pairs:
        return "utf-16-le"
    if even >= 0.3 * pairs and odd <= 0.02 * pairs:
        return "utf-16-be"
    return None


def sniff_binary(body: bytes) -> str | None:
    """Name the binary format of a body (png, pdf, ...) or return None if it looks like text."""
    for magic, name in _BINARY_MAGIC.items():
        if body.startswith(magic):
            return name
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None  # UTF-16 text is half NUL bytes
    sample = body[:4096]
    if not sample or utf16_without_bom(sample):
        return None
    # Text, even in legacy encodings, has few C0 control bytes besides tab/newline/CR/FF. A run
    # of NUL bytes counts once: real pages carry stray NULs and NUL padding (a database field, a
    # response padded to a block size) that browsers and trafilatura read past, while binary
    # formats scatter NULs through their structures.
    nul_runs = len(_NUL_RUN_RE.findall(sample))
    if nul_runs / len(sample) > 0.05:
        return "nul-bytes"
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    nul = sample.count(0)
    if (controls - nul + nul_runs) / len(sample) > 0.05:
        return "control-bytes"
    return None


def mime_type(content_type: str | None) -> str:
    """The media type of a Content-Type value, lower-cased, without its parameters ("" if none)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


# Where Python's codec and the WHATWG Encoding Standard (what browsers decode) disagree:
# Shift_JIS 0x8160 is WAVE DASH (U+301C, "10時〜18時") to a browser, FULLWIDTH TILDE to cp932.
_WHATWG_FIXES = {"cp932": str.maketrans({"\uff5e": "\u301c"})}


def _decode(body: bytes, codec: str, errors: str = "strict") -> str:
    """`body.decode(codec, errors)`, with the characters a browser reads otherwise mended."""
    text = body.decode(codec, errors=errors)
    fix = _WHATWG_FIXES.get(codecs.lookup(codec).name)
    return text.translate(fix) if fix else text


def decode_html(
    body: bytes | None,
    content_type: str | None = None,
    *,
    max_bytes: int = 8_000_000,
    max_replacement_ratio: float = 0.02,
) -> str:
    """Decode a response body to HTML text; raise BadPage(empty_body|binary_body|too_large|encoding_error)."""
    if body is None or not body.strip():
        raise BadPage("empty_body", "the response body is empty or whitespace only")
    if len(body) > max_bytes:
        raise BadPage("too_large", f"body is {len(body)} bytes, above the {max_bytes}-byte limit")
    mime = mime_type(content_type)
    if mime and "html" not in mime:  # text/html, application/xhtml+xml
        raise BadPage(
            "not_html",
            f"content type {mime} is not HTML (text/html or application/xhtml+xml): "
            "not extracted as a web page",
        )
    kind = sniff_binary(body)
    if kind:
        raise BadPage("binary_body", f"body looks like binary data ({kind}), not HTML")
    codec, source = choose_encoding(body, content_type)
    try:
        return clean_text(_decode(body, codec))
    except UnicodeDecodeError:
        pass
    # The chosen charset does not fit every byte. A right declaration with a few stray bytes (a
    # cut multi-byte character, one pasted Latin-1 word) is common; a wrong one leaves many.
    text = _decode(body, codec, "replace")
    if _few_strays(text.count("\ufffd"), _non_ascii(body)):
        return clean_text(text)
    others = [detect_encoding(body) if source != "detected" else None, "utf-8"]
    others = [c for c in dict.fromkeys(others) if c and c != codec]
    for other in others:
        try:
            return clean_text(_decode(body, other))
        except (LookupError, UnicodeDecodeError):
            pass
    best_text, best_bad = text, text.count("\ufffd")
    for other in others:
        try:
            alt = _decode(body, other, "replace")
        except LookupError:
            continue
        if alt.count("\ufffd") < best_bad:
            best_text, best_bad = alt, alt.count("\ufffd")
    if best_bad <= max_replacement_ratio * len(best_text):
        return clean_text(best_text)
    raise BadPage(
        "encoding_error",
        f"bytes do not decode cleanly as {codec!r} ({source}), UTF-8 or a detected charset",
    )
