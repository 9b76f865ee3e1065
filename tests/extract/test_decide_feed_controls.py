"""A control under a feed promises more of it whatever its label says: the decision must not hang
on a list of "load more" phrases ('Mehr Beiträge', '次の記事を読み込む', 'Zobrazit další' are in
no such list). One short-labelled control that acts on the page, right after a run of repeated
items where the main content ends, on a page with script files of its own, is evidence; a real
link to the next page, a carousel's pair of arrows and a comments button are not."""

from __future__ import annotations

import pytest

from crawlers.render.decide import needs_render

HEAD = (
    '<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>News</title>'
    '<script src="/assets/js/vendor.8c1f2a.js" defer></script>'
    '<script src="/assets/js/site.41bd9e.js" defer></script></head><body>'
    '<header class="site-header"><a href="/">Stadtanzeiger</a><nav><ul>'
    '<li><a href="/politik/">Politik</a></li><li><a href="/sport/">Sport</a></li></ul></nav>'
    "</header>"
)
FOOT = (
    '<footer class="site-footer"><p>Stadtanzeiger, seit 1949. Impressum.</p></footer></body></html>'
)
CARDS = "".join(
    f'<article class="teaser"><h2><a href="/artikel/{i}">Gemeinderat beschließt Haushalt '
    f"{2020 + i}</a></h2><p>Nach langer Debatte stimmte der Rat mit knapper Mehrheit für den "
    "Entwurf der Verwaltung, der höhere Ausgaben für Schulen vorsieht.</p></article>"
    for i in range(8)
)


def _page(lang: str, tail: str, head: str = HEAD) -> str:
    return (
        head.format(lang=lang)
        + f'<main><h1>Nachrichten</h1><div class="river">{CARDS}</div>{tail}</main>'
        + FOOT
    )


@pytest.mark.parametrize(
    ("lang", "control"),
    [
        ("de", '<a href="#" class="js-more" data-page="2">Mehr Beiträge</a>'),
        ("ja", '<button type="button" class="js-next">次の記事を読み込む</button>'),
        ("cs", '<div role="button" tabindex="0" class="more">Zobrazit další</div>'),
        ("de", '<div class="more-wrap"><button class="btn">Weitere Meldungen</button></div>'),
    ],
)
def test_a_control_under_a_feed_is_evidence_whatever_its_label(lang, control):
    decision = needs_render(_page(lang, control))
    assert decision.render and "control under a feed" in decision.reason, decision


@pytest.mark.parametrize(
    "tail",
    [
        '<a href="/nachrichten/seite/2" class="more">Mehr Beiträge</a>',  # a link: it navigates
        '<button class="prev">‹</button><button class="next">›</button>',  # a carousel's arrows
        '<button type="button" class="to-top">↑</button>',  # no words
        '<a href="#" class="a">Mehr Beiträge</a><p>' + "Ein Absatz Text danach. " * 10 + "</p>",
    ],
)
def test_links_arrows_and_controls_mid_content_are_no_evidence(tail):
    decision = needs_render(_page("de", tail))
    assert not decision.render, decision


def test_without_script_files_of_its_own_a_control_is_no_evidence():
    other = HEAD.replace("/assets/js/", "https://cdn.example.net/js/")
    decision = needs_render(_page("de", '<a href="#" class="js-more">Mehr Beiträge</a>', other))
    assert "control under a feed" not in decision.reason, decision
