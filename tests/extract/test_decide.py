"""Which pages need a browser, judged from static HTML."""

from __future__ import annotations

import pytest

from crawlers.render import needs_render

from .pages import article, js_page


def test_static_article_is_not_rendered():
    decision = needs_render(article())
    assert decision.render is False and decision.reason.startswith("static")


def test_script_shell_with_fetch_is_rendered_with_reasons():
    decision = needs_render(js_page("http://127.0.0.1:1"))
    assert decision.render
    for part in (
        "app shell",
        "noscript",
        "fetches data",
        "load-more control (mehr laden)",
        "shadow dom",
    ):
        assert part in decision.reason


@pytest.mark.parametrize(
    "label", ["Load more", "voir plus", "cargar más", "もっと見る", "加载更多"]
)
def test_load_more_buttons_in_several_languages_trigger_rendering(label):
    html = article(extra=f"<button>{label}</button><script src='/app.js'></script>")
    decision = needs_render(html)
    assert decision.render and "load-more control" in decision.reason


def test_next_js_data_marks_an_app_shell():
    html = '<html><body><div id="__next"></div><script id="__NEXT_DATA__" type="application/json">{}</script></body></html>'
    assert "next.js data" in needs_render(html).reason
