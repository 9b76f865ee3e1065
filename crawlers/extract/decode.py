"""Turn a response body into HTML text, or say precisely why it cannot be one.

Crawled bodies arrive as bytes with a declared charset that is often wrong or missing, and
sometimes they are not HTML at all (an image served as text/html). Each failure becomes a
`BadPage` with a reject reason, so the extraction stage can account for every input row.
"""

from __future__ import annotations

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
_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-:.]+)""", re.I)


class BadPage(Exception):
    """A page that cannot become a document; `reason` is a short machine code, `detail` is prose."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _declared_charset(content_type: str | None, head: bytes) -> str | None:
    if content_type:
        m = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9_\-:.]+)", content_type, re.I)
        if m:
            return m.group(1).lower()
    m = _CHARSET_RE.search(head)
    return m.group(1).decode("ascii").lower() if m else None


def sniff_binary(body: bytes) -> str | None:
    """Name the binary format of a body (png, pdf, ...) or return None if it looks like text."""
    for magic, name in _BINARY_MAGIC.items():
        if body.startswith(magic):
            return name
    sample = body[:4096]
    if b"\x00" in sample:
        return "nul-bytes"
    # Text, even in legacy encodings, has few C0 control bytes besides tab/newline/CR/FF.
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13))
    if sample and controls / len(sample) > 0.05:
        return "control-bytes"
    return None


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
    if content_type and not re.search(r"html|xml|text/plain", content_type, re.I):
        raise BadPage("not_html", f"content type {content_type!r} is not HTML")
    kind = sniff_binary(body)
    if kind:
        raise BadPage("binary_body", f"body looks like binary data ({kind}), not HTML")
    declared = _declared_charset(content_type, body[:2048])
    # Strict decodes first: a declared charset is often wrong, and a lenient decode would hide it.
    for encoding in dict.fromkeys([declared, "utf-8"]):
        if encoding:
            try:
                return body.decode(encoding)
            except (LookupError, UnicodeDecodeError):
                pass
    best = from_bytes(body[:200_000]).best()
    candidates = [best.encoding] if best is not None else []
    if declared:
        candidates.append(declared)
    for encoding in candidates:
        try:
            text = body.decode(encoding, errors="replace")
        except LookupError:
            continue
        if text.count("\ufffd") <= max_replacement_ratio * len(text):
            return text
    raise BadPage(
        "encoding_error",
        f"bytes do not decode cleanly as the declared charset {declared!r}, UTF-8 or a detected one",
    )
