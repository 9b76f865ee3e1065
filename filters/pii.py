"""PII scrubbing: emails, phone numbers, IP addresses, payment cards and IBANs become typed
placeholders. Every candidate is validated (Luhn, mod-97, libphonenumber, `ipaddress`) so
version numbers, dates, prices and ISBNs are left alone."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from dataclasses import dataclass

import phonenumbers

PLACEHOLDERS = {
    "email": "<EMAIL>",
    "phone": "<PHONE>",
    "ip": "<IP>",
    "card": "<CARD>",
    "iban": "<IBAN>",
}

# Region used to read national-format phone numbers, by document language.
LANG_REGION = {
    "en": "US", "de": "DE", "fr": "FR", "es": "ES", "it": "IT", "pt": "PT", "nl": "NL",
    "pl": "PL", "sv": "SE", "da": "DK", "fi": "FI", "ru": "RU", "ja": "JP", "zh": "CN",
    "ko": "KR", "tr": "TR", "cs": "CZ",
}  # fmt: skip

# IBAN length per country (ISO 13616 registry, common SEPA and nearby countries).
IBAN_LENGTHS = {
    "AD": 24, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18,
    "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27, "HR": 21, "HU": 28, "IE": 22,
    "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18,
    "NO": 15, "PL": 28, "PT": 25, "RO": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TR": 26,
}  # fmt: skip

_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}\b"
)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_CARD = re.compile(r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_IBAN_HEAD = re.compile(r"\b[A-Z]{2}\d{2} ?$")
# A preceding "version"/"v"/"ISBN" word means the digits are not PII.
_NOT_PII_BEFORE = re.compile(r"(?i)(?:\bv(?:ersion)?|\bisbn(?:-1[03])?|\brelease|\bbuild)[\s:#]*$")


@dataclass(frozen=True)
class Span:
    """One PII hit: its type, position and the original text."""

    type: str
    start: int
    end: int
    value: str


def luhn_ok(digits: str) -> bool:
    """Luhn checksum of a digit string (payment cards)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    """ISO 13616 check: known country length and mod-97 == 1."""
    s = candidate.replace(" ", "")
    if IBAN_LENGTHS.get(s[:2]) != len(s):
        return False
    rearranged = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _context_blocks(text: str, start: int) -> bool:
    return bool(_NOT_PII_BEFORE.search(text[max(0, start - 16) : start]))


def _card_ok(raw: str) -> bool:
    digits = re.sub(r"\D", "", raw)
    # Issuer prefixes (Visa, Mastercard, Amex, Discover/UnionPay, JCB, Diners) keep the
    # Luhn check from matching arbitrary long numbers, 1 in 10 of which pass it.
    if not 13 <= len(digits) <= 19 or not re.match(r"4|5[1-5]|2[2-7]|3[47]|6|35|30|36|38", digits):
        return False
    if digits.startswith(("978", "979")):  # ISBN-13 prefixes
        return False
    return luhn_ok(digits)


def find_pii(text: str, lang: str = "en") -> list[Span]:
    """All validated PII spans of a text, non-overlapping, in text order."""
    spans: list[Span] = []
    for m in _EMAIL.finditer(text):
        spans.append(Span("email", m.start(), m.end(), m.group()))
    for m in _IBAN.finditer(text):
        if iban_ok(m.group()):
            spans.append(Span("iban", m.start(), m.end(), m.group()))
    for m in _CARD.finditer(text):
        # Digits right after "DE89 " are an (invalid) IBAN's body, not a card.
        iban_tail = _IBAN_HEAD.search(text[max(0, m.start() - 5) : m.start()])
        if _card_ok(m.group()) and not iban_tail and not _context_blocks(text, m.start()):
            spans.append(Span("card", m.start(), m.end(), m.group()))
    for m in _IPV4.finditer(text):
        if _context_blocks(text, m.start()):
            continue
        try:
            ipaddress.IPv4Address(m.group())
        except ValueError:
            continue
        spans.append(Span("ip", m.start(), m.end(), m.group()))
    if "::" in text or text.count(":") >= 7:
        for m in _IPV6.finditer(text):
            try:
                ipaddress.IPv6Address(m.group())
            except ValueError:
                continue
            spans.append(Span("ip", m.start(), m.end(), m.group()))
    spans.extend(_phones(text, lang))
    return _non_overlapping(spans)


def _phones(text: str, lang: str) -> list[Span]:
    if sum(c.isdigit() for c in text) < 7:
        return []
    region = LANG_REGION.get(lang, "US")
    out = []
    # VALID leniency: the number must be a real, assignable number for its region.
    matcher = phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID)
    for match in matcher:
        raw = match.raw_string
        digits = re.sub(r"\D", "", raw)
        # Dates and bare digit runs parse as numbers in some regions; real phone numbers
        # in running text carry a "+", a parenthesised area code or separators.
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}", raw.strip()):
            continue
        if raw.isdigit() and not raw.startswith("0"):
            continue
        if len(digits) < 7 or _context_blocks(text, match.start):
            continue
        out.append(Span("phone", match.start, match.end, raw))
    return out


def _non_overlapping(spans: list[Span]) -> list[Span]:
    # Earlier and longer spans win; the type priority breaks exact ties.
    prio = {"email": 0, "iban": 1, "card": 2, "ip": 3, "phone": 4}
    spans.sort(key=lambda s: (s.start, -(s.end - s.start), prio[s.type]))
    out: list[Span] = []
    for s in spans:
        if out and s.start < out[-1].end:
            continue
        out.append(s)
    return out


def scrub(text: str, lang: str = "en") -> tuple[str, Counter[str]]:
    """Replace PII with typed placeholders; return the new text and counts per type."""
    spans = find_pii(text, lang)
    if not spans:
        return text, Counter()
    parts: list[str] = []
    pos = 0
    for s in spans:
        parts.append(text[pos : s.start])
        parts.append(PLACEHOLDERS[s.type])
        pos = s.end
    parts.append(text[pos:])
    return "".join(parts), Counter(s.type for s in spans)
