"""HTML templates: each site has its own chrome (header, nav, footer) around the main content."""

from __future__ import annotations

from html import escape

from .model import Site

UI = {
    "en": ("Home", "About", "Contact", "Privacy", "Related", "All rights reserved"),
    "de": (
        "Startseite",
        "Über uns",
        "Kontakt",
        "Datenschutz",
        "Verwandte Artikel",
        "Alle Rechte vorbehalten",
    ),
    "fr": (
        "Accueil",
        "À propos",
        "Contact",
        "Confidentialité",
        "À lire aussi",
        "Tous droits réservés",
    ),
    "es": (
        "Inicio",
        "Quiénes somos",
        "Contacto",
        "Privacidad",
        "Relacionados",
        "Todos los derechos reservados",
    ),
    "ja": ("ホーム", "概要", "お問い合わせ", "プライバシー", "関連記事", "無断転載禁止"),
    "zh": ("首页", "关于我们", "联系我们", "隐私政策", "相关文章", "版权所有"),
}


def meta_robots(directives: list[str]) -> str:
    """A <meta name="robots"> tag, or nothing."""
    return f'<meta name="robots" content="{", ".join(directives)}">' if directives else ""


def link(href: str, text: str, rel: str | None = None) -> str:
    """An <a> element; rel e.g. 'nofollow'."""
    rel_attr = f' rel="{rel}"' if rel else ""
    return f'<a href="{escape(href)}"{rel_attr}>{escape(text)}</a>'


def paragraphs(texts: list[str] | tuple[str, ...]) -> str:
    """Paragraph elements for plain-text paragraphs."""
    return "".join(f"<p>{escape(t)}</p>" for t in texts)


def document(
    site: Site,
    lang: str,
    title: str,
    main: str,
    *,
    head_extra: str = "",
    related: list[tuple[str, str]] = (),
    robots: list[str] = (),
    body_extra: str = "",
) -> bytes:
    """A full HTML page in the site's chrome; `main` is already-escaped HTML."""
    home, about, contact, privacy, related_label, rights = UI.get(lang, UI["en"])
    nav = " | ".join(
        [
            link("/", home),
            link("/about.html", about),
            link("/contact.html", contact),
            link("/privacy.html", privacy),
        ]
    )
    aside = ""
    if related:
        items = "".join(f"<li>{link(href, text)}</li>" for href, text in related)
        aside = f'<aside class="related"><h2>{escape(related_label)}</h2><ul>{items}</ul></aside>'
    # Sites differ in their chrome so near-duplicate copies differ outside the main text too.
    header_cls = f"hdr-{site.kind}"
    page = (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)} | {escape(site.name)}</title>\n"
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"{meta_robots(list(robots))}{head_extra}\n</head>\n<body>\n"
        f'<header class="{header_cls}"><div class="logo">{escape(site.name)}</div><nav>{nav}</nav></header>\n'
        f"<main>\n{main}\n</main>\n{aside}\n"
        f"<footer><p>© 2025 {escape(site.name)}. {escape(rights)}.</p>"
        f"<p>{link('/privacy.html', privacy)} · {link('/contact.html', contact)}</p></footer>\n"
        f"{body_extra}</body>\n</html>\n"
    )
    return page.encode("utf-8")


def article(
    title: str, paras: list[str], *, items: list[str] = (), extra: str = "", byline: str = ""
) -> str:
    """Main-content HTML of an article-like page."""
    items_html = "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>" if items else ""
    by = f'<p class="byline">{escape(byline)}</p>' if byline else ""
    return f"<article><h1>{escape(title)}</h1>{by}{paragraphs(paras[:1])}{items_html}{paragraphs(paras[1:])}{extra}</article>"


def forum_thread(title: str, posts: list[tuple[str, str]]) -> str:
    """Main-content HTML of a forum thread: one <div class=post> per (user, text)."""
    body = "".join(
        f'<div class="post" id="post-{i + 1}"><div class="author">{escape(user)}</div>'
        f'<div class="body"><p>{escape(text)}</p></div></div>'
        for i, (user, text) in enumerate(posts)
    )
    return f'<div class="thread"><h1>{escape(title)}</h1>{body}</div>'


def table_html(
    header: list[str],
    rows: list[list[str]],
    *,
    rowspan_first: int = 0,
    total: tuple[str, str] | None = None,
) -> str:
    """A <table> with a header row; the first column may merge `rowspan_first` rows, and a colspan total row."""
    head = "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"
    body = []
    for i, row in enumerate(rows):
        cells = [f"<td>{escape(c)}</td>" for c in row]
        if rowspan_first:
            if i % rowspan_first == 0:
                cells[0] = (
                    f'<td rowspan="{min(rowspan_first, len(rows) - i)}">{escape(row[0])}</td>'
                )
            else:
                cells = cells[1:]
        body.append("<tr>" + "".join(cells) + "</tr>")
    if total:
        body.append(
            f'<tr class="total"><td colspan="{len(header) - 1}">{escape(total[0])}</td><td>{escape(total[1])}</td></tr>'
        )
    return f"<table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"
