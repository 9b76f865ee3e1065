"""Generated page parts: PII and look-alike decoys, data tables, and low-quality text."""

from __future__ import annotations

import random

NAMES = (
    "anna.keller",
    "j.moreau",
    "lucia.ortiz",
    "tanaka.k",
    "wang.lei",
    "mike.obrien",
    "sofia.r",
    "h.becker",
    "claire.d",
    "pablo.m",
    "yuki.s",
    "chen.yu",
)
DOMAINS = ("example.org", "mail.example.com", "post.example.net")
PHONES = {
    "en": ("+1 415 555 {a:04d}", "+44 20 7946 {a:04d}"),
    "de": ("+49 30 {a:04d} {b:03d}", "+49 89 {a:04d} {b:03d}"),
    "fr": ("+33 1 42 {a2:02d} {b2:02d} {c2:02d}",),
    "es": ("+34 91 {b:03d} {a:04d}",),
    "ja": ("+81 3-{a:04d}-{b:03d}0",),
    "zh": ("+86 10 {a:04d} {b:03d}9",),
}


def luhn_card(rng: random.Random) -> str:
    """A 16-digit Visa-style number that passes the Luhn check, grouped by four."""
    digits = [4] + [rng.randint(0, 9) for _ in range(14)]
    total = 0
    for i, d in enumerate(reversed(digits)):  # the check digit will sit to the right
        if i % 2 == 0:
            d *= 2
            d = d - 9 if d > 9 else d
        total += d
    digits.append((10 - total % 10) % 10)
    s = "".join(map(str, digits))
    return " ".join(s[i : i + 4] for i in range(0, 16, 4))


def luhn_ok(number: str) -> bool:
    """True if the digits of `number` pass the Luhn check."""
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            d = d - 9 if d > 9 else d
        total += d
    return total % 10 == 0


def iban(rng: random.Random, country: str = "DE") -> str:
    """A German-format IBAN with correct mod-97 check digits, grouped by four."""
    bban = "".join(str(rng.randint(0, 9)) for _ in range(18))
    numeric = "".join(str(int(c, 36)) for c in bban + country + "00")
    check = 98 - int(numeric) % 97
    raw = f"{country}{check:02d}{bban}"
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def iban_ok(value: str) -> bool:
    """True if an IBAN passes the mod-97 check."""
    raw = value.replace(" ", "")
    numeric = "".join(str(int(c, 36)) for c in raw[4:] + raw[:4])
    return int(numeric) % 97 == 1


def isbn13(rng: random.Random) -> str:
    """A valid ISBN-13 (a decoy: looks numeric like PII but is not personal)."""
    digits = [9, 7, 8] + [rng.randint(0, 9) for _ in range(9)]
    check = (10 - sum(d * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits)) % 10) % 10
    s = "".join(map(str, digits)) + str(check)
    return f"{s[:3]}-{s[3]}-{s[4:7]}-{s[7:12]}-{s[12]}"


def pii_values(rng: random.Random, lang: str) -> dict[str, str]:
    """One value of each PII type, formatted for the language's country."""
    a, b = rng.randint(1000, 9999), rng.randint(100, 999)
    phone = rng.choice(PHONES[lang]).format(a=a, b=b, a2=a % 100, b2=b % 100, c2=(a + b) % 100)
    return {
        "email": f"{rng.choice(NAMES)}{rng.randint(1, 99)}@{rng.choice(DOMAINS)}",
        "phone": phone,
        "ipv4": f"{rng.choice(['203.0.113', '198.51.100', '192.0.2'])}.{rng.randint(2, 254)}",
        "credit_card": luhn_card(rng),
        "iban": iban(rng),
    }


def decoy_values(rng: random.Random) -> dict[str, str]:
    """Values that look like identifiers but are not PII: versions, dates, prices, ISBNs."""
    return {
        "version": f"v{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "date": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "price": f"{rng.randint(5, 400)}.{rng.choice(['00', '49', '90', '99'])}",
        "isbn": isbn13(rng),
    }


def fill(template: str, values: dict[str, str]) -> tuple[str, list[dict[str, str]]]:
    """Fill a '{email} ... {phone}' template; return the text and the values it used."""
    used = [{"type": k, "value": v} for k, v in values.items() if "{" + k + "}" in template]
    return template.format(**values), used


TABLE_HEADERS = {
    "en": (
        ["Model", "Weight (g)", "Battery (h)", "Price (EUR)"],
        ["Group", "Team", "Played", "Points"],
        "Total",
    ),
    "de": (
        ["Modell", "Gewicht (g)", "Akku (h)", "Preis (EUR)"],
        ["Gruppe", "Mannschaft", "Spiele", "Punkte"],
        "Summe",
    ),
    "fr": (
        ["Modèle", "Poids (g)", "Batterie (h)", "Prix (EUR)"],
        ["Groupe", "Équipe", "Matchs", "Points"],
        "Total",
    ),
    "es": (
        ["Modelo", "Peso (g)", "Batería (h)", "Precio (EUR)"],
        ["Grupo", "Equipo", "Partidos", "Puntos"],
        "Total",
    ),
    "ja": (
        ["モデル", "重量 (g)", "電池 (時間)", "価格 (円)"],
        ["組", "チーム", "試合", "勝点"],
        "合計",
    ),
    "zh": (
        ["型号", "重量 (克)", "续航 (小时)", "价格 (元)"],
        ["小组", "球队", "场次", "积分"],
        "合计",
    ),
}


def spec_table(
    rng: random.Random, lang: str, name: str
) -> tuple[list[str], list[list[str]], tuple[str, str]]:
    """A product comparison table (numeric columns, a colspan total row)."""
    header = TABLE_HEADERS[lang][0]
    rows = []
    for i in range(rng.randint(3, 5)):
        rows.append(
            [
                f"{name} {chr(65 + i)}{rng.randint(1, 9)}",
                str(rng.randint(90, 900)),
                str(rng.randint(4, 40)),
                f"{rng.randint(19, 499)}.{rng.choice(['00', '90', '99'])}",
            ]
        )
    total = f"{sum(float(r[3]) for r in rows):.2f}"
    return header, rows, (TABLE_HEADERS[lang][2], total)


def results_table(
    rng: random.Random, lang: str, teams: list[str]
) -> tuple[list[str], list[list[str]]]:
    """A league table whose first column merges rows per group (rowspan)."""
    header = TABLE_HEADERS[lang][1]
    rows = [
        [chr(65 + i // 2), team, str(rng.randint(3, 10)), str(rng.randint(0, 30))]
        for i, team in enumerate(teams)
    ]
    return header, rows


MOJIBAKE = {"e": "Ã©", "a": "Ã¤", "o": "Ã¶", "'": "â€™", "u": "Ã¼", "i": "Ã¯"}


def garble(text: str, rng: random.Random) -> str:
    """Mojibake plus noise: UTF-8 read as Latin-1 for non-ASCII text, byte-garbage for ASCII."""
    if any(ord(c) > 127 for c in text):
        out = text.encode("utf-8").decode("latin-1")
    else:
        out = "".join(MOJIBAKE[c] if c in MOJIBAKE and rng.random() < 0.35 else c for c in text)
    chars = list(out)
    for _ in range(len(chars) // 15):  # sprinkle replacement characters and control junk
        chars.insert(rng.randrange(len(chars)), rng.choice(["\ufffd", "Â", "�", "#", "~"]))
    return "".join(chars)


def keyword_spam(rng: random.Random, keywords: tuple[str, ...], lines: int = 12) -> list[str]:
    """Lines of shuffled keywords, repeated the way doorway pages repeat them."""
    sep = " " if not any(ord(c) > 0x3000 for c in keywords[0]) else " "
    return [sep.join(rng.choice(keywords) for _ in range(rng.randint(8, 16))) for _ in range(lines)]
