"""PII: obfuscated and quoted e-mail addresses, top-level domains checked against the root zone
(file names such as "logo@2x.png" are no address), IPv6 zone ids, 19-digit cards. The real
shapes come from trafilatura's evaluation pages (tests/eval, tests/cache) as their HTML writes
them."""

import random

import pytest

from filters import pii
from filters.pii import find_pii, scrub


@pytest.mark.parametrize(
    ("text", "lang", "scrubbed"),
    [
        # a reviewer's probes
        (
            "Write to john [at] example [dot] com for details.",
            "en",
            "Write to <EMAIL> for details.",
        ),
        ("Write to john(at)example.com for details.", "en", "Write to <EMAIL> for details."),
        ("Schreiben Sie an info(at)firma.de bitte.", "de", "Schreiben Sie an <EMAIL> bitte."),
        ("Email: jane.smith AT gmail DOT com", "en", "Email: <EMAIL>"),
        ("Mail: john dot doe at example dot com", "en", "Mail: <EMAIL>"),
        ("Write to john at example dot com for details.", "en", "Write to <EMAIL> for details."),
        ("Mail: john.doe&#64;example.com", "en", "Mail: <EMAIL>"),
        ("Mail: john&#x40;example&#46;com", "en", "Mail: <EMAIL>"),
        ('Write to "john.doe"@example.com.', "en", "Write to <EMAIL>."),
        # as trafilatura's evaluation pages write them
        ('Sag einfach "Hallo" unter: bewerbung{at}burda.com oder', "de", None),
        ("bitte Kontakt an redaktion (at) wakenews.net Zuletzt", "de", None),
        ("Contact us: stluciatimes [@] gmail.com", "en", None),
        ("E-Mail:\nwkpromotion (at) web.de", "de", None),
        ("Kontakt: d.toelle[at]rechtambild.de –", "de", None),
        ("info[at]deutscheweine(dot)de", "de", None),
        ("M info(at)zdh(dot)de", "de", None),
        ("Mail: info(at)dvvmedia.com", "de", None),
        ("bei Interesse schreiben Sie bitte an hallo(at)mixed.de.", "de", None),
        # other languages' words for "at" and "dot"
        ("Kontakt: max (punkt) muster (ät) firma (punkt) de", "de", None),
        ("почта: ivan (собака) yandex (точка) ru", "ru", None),
        ("escribe a juan.perez arroba correo punto es", "es", None),
        ("écrire à marie (arobase) exemple (point) fr", "fr", None),
        ("info [at] firma [.] de", "de", None),
    ],
)
def test_obfuscated_and_quoted_addresses_are_scrubbed(text, lang, scrubbed):
    out, counts = scrub(text, lang)
    assert counts == {"email": 1}, (text, out)
    if scrubbed is not None:
        assert out == scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "See the file logo@2x.png for retina.",
        "icon@3x.webp and image-300x200@2x.jpg",
        "sunset@beach.jpg was the best one",
        'srcset="/img/hero@1.5x.gif 1.5x, /img/hero@2x.svg 2x"',
        # .zip and .mov are top-level domains, but "2x", "3x" and "1.5x" are pixel densities
        "download logo@2x.zip or icon@3x.mov or icon@1.5x.mov",
        "s.src='/client/shimport@2.0.5.js'",
        '"id":"Article.sprinkledBody.content@filterEmpty.27.content"',
        "Retina: apple-touch-icon@2.png?v=0523",
    ],
)
def test_file_names_are_no_addresses(text):
    assert scrub(text, "en") == (text, {})


def test_ssh_remotes_keep_the_hosts_shared_account():
    # "git" is the hosting service's account for every user, not a person's mailbox: the clone
    # command stays readable. A person's login in the same shape stays scrubbed.
    text = "git clone git@github.com:user/repo.git"
    assert scrub(text, "en") == (text, {})
    assert scrub("scp alice@devbox.example.com:notes.txt .", "en")[0] == "scp <EMAIL>:notes.txt ."


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        # the domain ends at its last top-level domain: the next sentence is not part of it
        ("Mail someone@example.org.Visit our site", "Mail <EMAIL>.Visit our site"),
        ('"email":"lana@lanaburgess.com.localhost"', '"email":"<EMAIL>.localhost"'),
    ],
)
def test_an_address_ends_at_its_top_level_domain(text, scrubbed):
    assert scrub(text, "en")[0] == scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "bob@files.zip",  # file extensions that are TLDs: a name before them is an address
        "bob@example.mov",
        "ops@mail.corp.internal",  # a private network's address is someone's
        "user@xn--80ak6aa92e.xn--p1ai",
        "пишите на иван@пример.рф сегодня",
    ],
)
def test_addresses_in_real_top_level_domains_stay_scrubbed(text):
    assert scrub(text, "ru")[1] == {"email": 1}


@pytest.mark.parametrize(
    "text",
    [
        "look at the dot com bubble",
        "LOOK AT THE DOT COM BUBBLE",
        "He worked at amazon dot com for years.",
        "find us at patreon dot com slash show",
        "Sales AT Amazon.com rose by a third.",
        "Reality: Assistive/Adaptive technology (AT) is the only option available to many people.",
        "door een ander teken of woord zoals AT te vervangen",
        "at some point in time, at which point it broke",
        "user@host.example and a@b.test and mail@example.tld",  # RFC 2606 names: no one's
    ],
)
def test_prose_around_at_and_dot_is_left_alone(text):
    assert scrub(text, "en") == (text, {})


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("Server at fe80::1ff:fe23:4567:890a%eth0 is down.", "Server at <IP> is down."),
        ("ping fe80::1%eth0.", "ping <IP>."),
        ("http://[fe80::1%25en0]:8080/", "http://[<IP>]:8080/"),
        ("route via fe80::1%12 now", "route via <IP> now"),
    ],
)
def test_ipv6_zone_ids_go_with_the_address(text, scrubbed):
    assert scrub(text, "en")[0] == scrubbed


def test_nineteen_digit_cards_grouped_four_four_four_four_three():
    # Luhn-valid: scrubbed; the reviewer's "4111 1111 1111 1111 111" fails Luhn and is no card.
    assert scrub("Card 4111 1111 1111 1111 110 on file.", "en")[0] == "Card <CARD> on file."
    text = "Card 4111 1111 1111 1111 111 on file."
    assert scrub(text, "en") == (text, {})


def test_the_top_level_domain_list_is_the_root_zone():
    head = [
        line for line in pii._TLD_FILE.read_text(encoding="utf-8").splitlines() if line[0] == "#"
    ]
    assert any("VERSION 2026-03-06" in line for line in head)  # its source's date
    assert {"com", "de", "zip", "mov", "app", "xn--p1ai", "рф", "中国"} <= pii._TLDS
    assert (
        not {"png", "jpg", "jpeg", "webp", "gif", "svg", "ico", "js", "example", "test"} & pii._TLDS
    )
    assert set(pii._IDN_TLDS) <= pii._TLDS  # the wide scan's list names real ones only


# Like test_pii.py's skip test: the obfuscated and spelled-out scans run only where their hint
# is in the view, so each skipped scan must be one that finds nothing.
_PIECES = [
    " at ",
    " AT ",
    "(at)",
    "[at]",
    "{at}",
    " [dot] ",
    "(punkt)",
    " dot ",
    " DOT ",
    ".",
    "&#64;",
    "&#46;",
    "@",
    "john",
    "info",
    "example",
    "com",
    "de",
    " ",
    "-",
    "x",
    "2",
    "arroba",
    " punto ",
    "＠",
    "\t",
    "\tat\t",
    "（at）",
    "(ät)",
    "[собака]",
]


def test_obfuscation_hints_only_skip_scans_that_find_nothing():
    rng = random.Random(34)
    skipped = [0, 0]
    for _ in range(4000):
        view = pii._ascii_view("".join(rng.choice(_PIECES) for _ in range(rng.randint(3, 14))))
        if not pii._OBF_HINT.search(view):
            skipped[0] += 1
            assert not list(pii._EMAIL_OBFUSCATED.finditer(view)), view
        if not pii._SPELLED_HINT.search(view):
            skipped[1] += 1
            assert not any(list(p.finditer(view)) for p, _, _ in pii._EMAIL_SPELLED), view
    assert min(skipped) > 300, skipped  # the guards were exercised


def test_spans_of_obfuscated_addresses_are_the_address_alone():
    text = "Bewerbungen bitte an redaktion (at) wakenews.net Wake News"
    [span] = find_pii(text, "de")
    assert (span.type, span.value) == ("email", "redaktion (at) wakenews.net")
