"""Formulas as their TeX source: LaTeX's `\\(...\\)` inline and `\\[...\\]` displayed in the plain
text, which trafilatura's Markdown writes as `$...$` and `$$...$$` without escaping the TeX
(OpenWebMath and FineMath keep formulas so: a language model learns mathematics from them).

A page's formulas reach the browser in forms trafilatura reads as nothing or as noise:
- MediaWiki (Wikipedia and every MediaWiki site): `span.mwe-math-element` holding MathML hidden
  by an inline style and a fallback SVG `<img class="mwe-math-fallback-image-inline">` whose
  `alt` is the TeX source (`{\\displaystyle ...}`). The hidden MathML is dropped as unrendered
  and the image carries no text: "denoted by , then" on a real page.
- KaTeX (blogs, docs, Q&A sites): `span.katex` holding `span.katex-mathml` (MathML with the TeX
  in `<annotation encoding="application/x-tex">`, hidden by the stylesheet, so still in the
  tree) beside `span.katex-html` (the typeset glyphs): as text both run together, "x2x^2x2".
- MathML with `alttext` (the standard's own text equivalent).
Each is replaced, in place, by an inline element holding its TeX between the delimiters; a
formula without TeX source is left as it is."""

from __future__ import annotations

import re

from lxml import html as lxml_html
from lxml.etree import XPath

# \displaystyle, \textstyle ... wrapping the whole source: MediaWiki writes every formula so.
_STYLE = re.compile(r"\\(?:display|text|script|scriptscript)style\b\s*")
_CLASS = "contains(concat(' ', normalize-space(@class), ' '), ' {} ')"
_MWE = XPath(f"//span[{_CLASS.format('mwe-math-element')}]")
_MWE_IMG = XPath(
    f"//img[{_CLASS.format('mwe-math-fallback-image-inline')} or "
    f"{_CLASS.format('mwe-math-fallback-image-display')}]"
)
_KATEX = XPath(f"//span[{_CLASS.format('katex')}]")
_TEX_ANNOTATION = XPath(".//*[local-name()='annotation'][@encoding='application/x-tex']")
_MATHML = XPath("//*[local-name()='math'][@alttext]")


def unwrap_style(tex: str) -> str:
    """`tex` without a `{\\displaystyle ...}` group around all of it (MediaWiki's): only when
    the first brace closes at the very end (`{\\displaystyle a}+{b}` keeps its braces)."""
    tex = tex.strip()
    if not (tex.startswith("{") and tex.endswith("}")):
        return tex
    depth = 0
    for i, ch in enumerate(tex):
        if ch == "\\":
            continue
        if ch == "{" and (i == 0 or tex[i - 1] != "\\"):
            depth += 1
        elif ch == "}" and tex[i - 1] != "\\":
            depth -= 1
            if depth == 0 and i != len(tex) - 1:
                return tex  # the first group closes before the end
    inner = tex[1:-1].strip()
    return _STYLE.sub("", inner, count=1).strip() if _STYLE.match(inner) else tex


def _replace(el, tex: str, display: bool) -> None:
    tex = " ".join(unwrap_style(tex).split())
    if not tex:
        return
    span = lxml_html.Element("span")
    span.text = f" \\[{tex}\\] " if display else f"\\({tex}\\)"
    span.tail = el.tail
    parent = el.getparent()
    if parent is not None:
        parent.replace(el, span)


def _classes(el) -> set[str]:
    return set((el.get("class") or "").split()) if el is not None else set()


def _display(el) -> bool:
    """Whether a formula is displayed on a line of its own: MathML's display="block", a
    MediaWiki display fallback, a KaTeX formula inside `.katex-display`."""
    return (
        el.get("display") == "block"
        or "mwe-math-fallback-image-display" in _classes(el)
        or "katex-display" in _classes(el.getparent())
    )


def formulas_as_tex(tree) -> int:
    """Replace (in place) each formula of the parsed page whose TeX source is known by that
    source between `\\(...\\)` (inline) or `\\[...\\]` (displayed) delimiters; how many."""
    n = 0
    for el in _MWE(tree):
        img = next((i for i in el.iter("img") if i.get("alt")), None)
        math = next((m for m in el.iter() if _local(m) == "math" and m.get("alttext")), None)
        source = img if img is not None else math
        if source is not None:
            tex = source.get("alt") if source is img else source.get("alttext")
            _replace(el, tex, _display(source))
            n += 1
    for img in _MWE_IMG(tree):  # a fallback image outside its element (a mirror's markup)
        if img.get("alt"):
            _replace(img, img.get("alt"), _display(img))
            n += 1
    for el in _KATEX(tree):
        if el.getparent() is None:
            continue
        tex = next((a.text_content() for a in _TEX_ANNOTATION(el)), None)
        if tex:
            _replace(el, tex, _display(el))
            n += 1
    for math in _MATHML(tree):
        if math.getparent() is not None:
            _replace(math, math.get("alttext"), _display(math))
            n += 1
    return n


def _local(el) -> str:
    tag = el.tag if isinstance(el.tag, str) else ""
    return tag.rsplit("}", 1)[-1]
