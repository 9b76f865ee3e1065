"""Formulas keep their TeX source: MediaWiki's fallback images, KaTeX's annotations, MathML's
alttext (crawlers/extract/math_tex.py), on pages built as those sites build them."""

from __future__ import annotations

import pytest

from crawlers.extract import extract_page
from crawlers.extract.math_tex import unwrap_style

PROSE = (
    "In linear algebra the matrices studied here appear in quantum mechanics, signal processing "
    "and statistics, where their real eigenvalues give measured quantities a meaning. "
)


def _mwe(tex: str, display: bool = False) -> str:
    """A formula as MediaWiki 1.4x serves it: MathML hidden by its inline style (for screen
    readers), then the SVG rendering whose alt is the TeX source."""
    kind = "display" if display else "inline"
    mml_display = ' display="block"' if display else ""
    return (
        '<span class="mwe-math-element">'
        f'<span class="mwe-math-mathml-{kind} mwe-math-mathml-a11y" style="display: none;">'
        f'<math xmlns="http://www.w3.org/1998/Math/MathML"{mml_display} alttext="{tex}">'
        '<semantics><mrow class="MJX-TeXAtom-ORD"><mstyle displaystyle="true" scriptlevel="0">'
        "<mi>A</mi></mstyle></mrow>"
        f'<annotation encoding="application/x-tex">{tex}</annotation></semantics></math></span>'
        '<img src="https://wikimedia.org/api/rest_v1/media/math/render/svg/28a0aaa74b2267a4" '
        f'class="mwe-math-fallback-image-{kind}" aria-hidden="true" '
        f'style="vertical-align: -1.005ex; width:32.77ex; height:3.009ex;" alt="{tex}"></span>'
    )


def _katex(tex: str, glyphs: str) -> str:
    """A formula as KaTeX renders it: MathML with the TeX annotation (hidden by katex.css), and
    the typeset glyphs."""
    return (
        '<span class="katex"><span class="katex-mathml"><math xmlns="http://www.w3.org/1998/'
        'Math/MathML"><semantics><mrow><msup><mi>x</mi><mn>2</mn></msup></mrow>'
        f'<annotation encoding="application/x-tex">{tex}</annotation></semantics></math></span>'
        '<span class="katex-html" aria-hidden="true"><span class="base"><span class="strut" '
        f'style="height:0.8141em;"></span><span class="mord mathnormal">{glyphs}</span>'
        "</span></span></span>"
    )


def _page(body: str) -> bytes:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Hermitian matrix'
        '</title><link rel="stylesheet" href="/w/load.php?modules=site.styles"></head><body>'
        '<div id="mw-navigation"><ul><li><a href="/wiki/Main_Page">Main page</a></li></ul></div>'
        f'<main id="content"><h1 id="firstHeading">Hermitian matrix</h1>'
        f'<div id="mw-content-text" class="mw-body-content">{body}</div></main>'
        '<footer id="footer"><p>Text is available under the Creative Commons licence.</p>'
        "</footer></body></html>"
    ).encode()


def _extract(body: str):
    r = extract_page(
        {
            "url": "https://en.wikipedia.test/wiki/Hermitian_matrix",
            "status": 200,
            "body": _page(body),
        }
    )
    assert r.document is not None
    return r


def test_mediawiki_formulas_keep_their_tex_inline_and_displayed():
    tex_h = r"{\displaystyle A^{\mathsf {H}}}"
    tex_def = r"{\displaystyle A{\text{ Hermitian}}\quad \iff \quad a_{ij}={\overline {a_{ji}}}}"
    a = _mwe(r"{\displaystyle A}")
    body = (
        f"<p>{PROSE}If the conjugate transpose of a matrix {a} is "
        f"denoted by {_mwe(tex_h)}, then the Hermitian property can be written as</p>"
        f"<dl><dd>{_mwe(tex_def, display=True)}</dd></dl>"
        f"<p>{PROSE * 2}</p>"
    )
    r = _extract(body)
    text, md = r.document["text"], r.document["markdown"]
    assert r"of a matrix \(A\) is denoted by \(A^{\mathsf {H}}\), then" in text
    assert r"\[A{\text{ Hermitian}}\quad \iff \quad a_{ij}={\overline {a_{ji}}}\]" in text
    # Markdown: $...$ and $$...$$, the TeX unescaped (no "a\_{ij}")
    assert r"denoted by $A^{\mathsf {H}}$, then" in md
    assert "$$\n" + r"A{\text{ Hermitian}}\quad \iff \quad a_{ij}={\overline {a_{ji}}}" in md
    assert "displaystyle" not in text and "wikimedia.org/api/rest_v1/media/math" not in md


def test_katex_formulas_are_their_annotation_not_glyphs_and_mathml_run_together():
    total = _katex(r"\sum_{i=1}^{n} i", "Σi=1ni")
    body = (
        f"<p>{PROSE}The square {_katex('x^2', 'x2')} grows faster than the line, and the sum "
        f'<span class="katex-display">{total}</span> is '
        f"triangular.</p><p>{PROSE * 2}</p>"
    )
    text = _extract(body).document["text"]
    assert r"The square \(x^2\) grows faster" in text
    assert r"\[\sum_{i=1}^{n} i\]" in text
    assert "x2" not in text.replace(r"\(x^2\)", "") and "Σi=1ni" not in text


def test_mathml_alttext_is_the_formula():
    body = (
        f'<p>{PROSE}Energy is <math alttext="E=mc^2"><mi>E</mi><mo>=</mo><mi>m</mi>'
        "<msup><mi>c</mi><mn>2</mn></msup></math> in the rest frame.</p>"
        f"<p>{PROSE * 2}</p>"
    )
    text = _extract(body).document["text"]
    assert r"Energy is \(E=mc^2\) in the rest frame" in text


@pytest.mark.parametrize(
    ("tex", "expected"),
    [
        (r"{\displaystyle A}", "A"),
        (r"{\displaystyle {a}+{b}}", "{a}+{b}"),
        (r"{\displaystyle a}+{b}", r"{\displaystyle a}+{b}"),  # the group ends before the end
        (r"{\textstyle \frac{1}{2}}", r"\frac{1}{2}"),
        (r"{a \{ b}", r"{a \{ b}"),  # no style command: as it is
        ("x^2", "x^2"),
    ],
)
def test_unwrap_style_removes_only_a_style_group_around_the_whole_source(tex, expected):
    assert unwrap_style(tex) == expected
