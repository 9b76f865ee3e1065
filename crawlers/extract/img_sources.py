"""The image a browser ends up showing for an <img>, where its `src` is not it: lazy loading.

trafilatura keeps an <img> as an image of the main content only when its `data-src`, `src` or
another `data-src*` attribute is a URL ending in an image extension (`trafilatura.utils.
image_src`). Lazy-loading scripts keep the real URL elsewhere and a placeholder in `src` (an
empty string, a `data:` URI, a 1x1 GIF) until the image scrolls into view; a page read without
a browser then loses those images, or keeps the placeholder. On 1,031 real pages (trafilatura's
evaluation set, read at run time) 598 <img> held their image in a lazy attribute with a
placeholder in `src`, and 166 only in a `srcset`.

`resolve_lazy_images(tree)` sets each such <img>'s `data-src` (the attribute trafilatura reads
first) to the URL the browser would load:

- where `src` is a placeholder (empty, a `data:` URI, or named like one: `1x1.trans.gif`,
  `blank.gif`, `placeholder.png`, `clear.gif`) or no image URL trafilatura reads: `data-src`
  or a lazy attribute, by the libraries that write them: `data-lazy-src` (WP Rocket, Jetpack),
  `data-original` (jQuery lazyload), `data-cfsrc` (Cloudflare Rocket Loader), `data-lazy`,
  `data-lsrc`, when it holds a URL (a path, not a JSON object or a flag);
- else the largest candidate of the <img>'s `data-lazy-srcset`, `data-srcset` or `srcset`, or
  of its <picture>'s first <source> (the browser's own fallback order);
- else, `src` a placeholder, any other `data-*` attribute holding an image file's URL (SVG
  included): lazy loaders name theirs as they like (`data-pagespeed-lazy-src`, `data-img-url`,
  `data-gt-lazy-src`, `data-m-lazyloader-src` on trafilatura's evaluation pages);
- else its `src`, but a stand-in (`is_stand_in`) or a tracking pixel's (width and height
  attributes of at most 1): what an <img> shows is an image whatever its name (an SVG, a CDN's
  `/photo-123?w=800`, msn's `AAkk5fh.img?h=820`), which trafilatura's extension test misses.

trafilatura reads any attribute starting with `data-src`, `data-srcset` included: it took a
whole srcset ("a-360.jpg 360w, a-1536.jpg 1536w") as one URL, which no server has. The largest
candidate set as `data-src` is read first instead.

Many lazy loaders also write the image a browser without scripts shows: a <noscript> beside the
<img> holding an <img src> of its own (Medium: a 60px `?q=20` preview, an empty <img> the script
fills, then the full-size image in <noscript>). trafilatura drops <noscript>, so where the <img>
beside it has no image of its own (`src` a placeholder or missing, no lazy attribute) or shows a
preview of the same file (same file name), the <noscript> image's URL is set as that <img>'s
`data-src`, and the other <img>s of the same image (the preview beside the empty one) go: one
image, one reference, at the full URL (`unwrap_noscript_images`).

trafilatura keeps only a source with an image extension: a URL without one is set with
`IMAGE_MARK` after it (a fragment, which no server sees) and `unmark_image` takes it off the
image trafilatura keeps. A `src` that is an image file and no placeholder is never replaced,
and an <img> trafilatura already reads from `data-src` is left as it is. A source that still
only holds a place once the lazy one is looked for (`is_stand_in`: `pixel.gif`,
`placeholder.png`, Yahoo's `clear.gif`), and every source of a tracking pixel (width and height
attributes of at most 1), is removed: a spacer is no image of the page. The tree
is changed in place (only those `data-src` and stand-in attributes, and the style that hides an
<img> until Rocket Loader loads it).

`absolute_image_sources(tree, base)` then makes each source trafilatura reads (`src`,
`data-src*` but srcsets) absolute as a browser does: ASCII whitespace around it stripped, tabs
and newlines in it removed, spaces %20, resolved against the page's `<base href>`
(`content.document_base`), not the page URL trafilatura would use; a source that is then no
http(s) URL (javascript:, file:, data:, gopher:, ...) is removed, so no such image reaches the
Markdown, the interleaved blocks or image_refs.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from lxml import html as lxml_html
from lxml.etree import ParserError, XPath
from trafilatura.utils import is_image_file

LAZY_ATTRS = ("data-lazy-src", "data-original", "data-cfsrc", "data-lazy", "data-lsrc")
# A src that only holds the place of a lazily loaded image: by its file name (Jetpack's
# 1x1.trans.gif, jQuery lazyload's grey.gif, themes' placeholder.png, ...).
_PLACEHOLDER_NAME = re.compile(
    r"(?:^|[_.\-])(placeholder|blank|spacer|lazy|loading|loader|transparent|trans|pixel|1x1|"
    r"dummy|empty|gr[ae]y|clear)(?:[_.\-]|$)",
    re.IGNORECASE,
)
# A file named for holding a place and nothing else (placeholder.png, 1x1.trans.gif, lazy-load.svg):
# its stem is placeholder words, sizes and separators only.
_STAND_IN_STEM = re.compile(
    r"(?:placeholder|blank|spacer|lazy|load|loading|loader|transparent|trans|pixel|px|dummy|"
    r"empty|gr[ae]y|clear|\d+x\d+|[_.\-])+",
    re.IGNORECASE,
)
# A GIF with one of these anywhere in its name holds a place (spacer_2.gif, clearpixel.gif).
_STAND_IN_GIF = re.compile(r"pixel|spacer|blank|transparent|placeholder|1x1", re.IGNORECASE)
SRCSET_ATTRS = ("data-lazy-srcset", "data-srcset", "srcset")
# An image file's URL trafilatura's extension test misses: an SVG.
_SVG_FILE = re.compile(r"[^\s]+\.svgz?(\b|$)", re.IGNORECASE)
# Set after a source without an image extension, so that trafilatura keeps it (a fragment: the
# URL fetched is the same); `unmark_image` takes it off again.
IMAGE_MARK = "#refinery-image.png"
_IMGS = XPath("//img")
_DESCRIPTOR = re.compile(r"^(\d+(?:\.\d+)?)([wx])$")


def srcset_candidates(srcset: str) -> list[tuple[str, str]]:
    """(url, descriptor) of each candidate of a srcset, as the HTML standard splits it: a URL
    runs to the next whitespace (so commas inside it, a CDN's `w_400,h_300`, stay; trailing
    commas end it with no descriptor), its descriptor to the next comma."""
    out: list[tuple[str, str]] = []
    s, i, n = srcset, 0, len(srcset)
    while i < n:
        while i < n and (s[i].isspace() or s[i] == ","):
            i += 1
        j = i
        while j < n and not s[j].isspace():
            j += 1
        url, i = s[i:j], j
        if not url:
            break
        if url.endswith(","):
            out.append((url.rstrip(","), ""))
            continue
        j = s.find(",", i)
        j = n if j < 0 else j
        out.append((url, s[i:j].strip()))
        i = j + 1
    return out


def largest_candidate(srcset: str) -> str | None:
    """The URL of a srcset's largest candidate (by its `w`, else `x` descriptor; none is 1x);
    None when it has no candidate but data: URIs."""
    best, best_size = None, -1.0
    for url, descriptor in srcset_candidates(srcset):
        if url.startswith("data:"):
            continue
        size = 1000.0  # 1x
        m = _DESCRIPTOR.match(descriptor)
        if m:
            size = float(m.group(1)) * (1.0 if m.group(2) == "w" else 1000.0)
        if size > best_size:
            best, best_size = url, size
    return best


def _no_host(src: str) -> bool:
    """A URL naming a host, and that one empty (`//:0`, an image that loads nothing)."""
    try:
        return "//" in src[:8] and not urlsplit(src).hostname
    except ValueError:
        return True


def is_placeholder(src: str | None) -> bool:
    """No image of its own: empty, a data: URI, a URL of no host (`//:0`), or a placeholder by
    its file name."""
    src = (src or "").strip()
    if not src or src.startswith("data:") or _no_host(src):
        return True
    return bool(_PLACEHOLDER_NAME.search(_file_name(src)))


def is_stand_in(src: str | None) -> bool:
    """A placeholder no page means as its image: empty, a data: URI, a URL of no host, a GIF
    named like a placeholder (`pixel.gif`, `1x1.trans.gif`, `clear.gif`, `clearpixel.gif`) or
    a file named for nothing else (`placeholder.png`, `lazy-load.svg`); a photo whose name only
    has such a word in it (`grey-heron.jpg`) is none."""
    src = (src or "").strip()
    name = _file_name(src)
    if name.lower().endswith(".gif") and _STAND_IN_GIF.search(name):
        return True
    if not is_placeholder(src):
        return False
    if not name or src.startswith("data:") or _no_host(src) or name.lower().endswith(".gif"):
        return True
    return bool(_STAND_IN_STEM.fullmatch(name.rsplit(".", 1)[0]))


def is_image_path(value: str | None) -> bool:
    """Whether `value` is the URL of an image file by its name: trafilatura's extensions
    (`is_image_file`) or an SVG."""
    return is_image_file(value) or bool(value and len(value) <= 8192 and _SVG_FILE.search(value))


def _url_like(value: str) -> bool:
    """Whether an attribute's value can be a URL: a path or an image file's name, not a JSON
    object, a flag (`data-lazy="true"`) or a data: URI."""
    if not value or value.startswith(("data:", "{", "[", "<")) or _SPACE.search(value):
        return False
    return "/" in value or is_image_path(value)


def _pixel_sized(img) -> bool:
    """Whether `img`'s width and height attributes, those it has (one at least), are at most 1
    (a tracking pixel: `<img src="/track?u=1" width="1">`)."""
    sizes = [img.get(a) for a in ("width", "height") if img.get(a) is not None]
    try:
        return bool(sizes) and all(float(v.strip().removesuffix("px")) <= 1 for v in sizes)
    except ValueError:
        return False


def _picture_source(img) -> str | None:
    """The largest candidate of the first <source> of `img`'s <picture> that has one."""
    # libxml2's HTML parser does not know <source> is empty: the <img> after it ends up inside
    # it, so the <picture> is an ancestor, its <source>s in document order
    picture = next(img.iterancestors("picture"), None)
    if picture is not None:
        for source in picture.iter("source"):
            for attr in SRCSET_ATTRS:
                url = largest_candidate(source.get(attr) or "")
                if url:
                    return url
    return None


def _data_image(img) -> str | None:
    """The first other `data-*` attribute of `img` holding an image file's URL (or a srcset of
    them: its largest candidate), whatever the lazy loader named it."""
    for name, value in img.attrib.items():
        if not name.startswith("data-") or name in LAZY_ATTRS or name in SRCSET_ATTRS:
            continue
        url = largest_candidate(value.strip()) if "srcset" not in name else None
        if url and _url_like(url) and is_image_path(url) and not is_placeholder(url):
            return url
    return None


def lazy_source(img) -> str | None:
    """The image URL a browser would load for `img` where trafilatura would not read it (see
    the module docstring: a lazy attribute, a srcset, an image URL without an image extension);
    None where trafilatura reads it already or `img` shows none."""
    if is_image_file(img.get("data-src")):
        return None  # trafilatura reads it first already
    src = (img.get("src") or "").strip()
    placeholder = is_placeholder(src)
    if not placeholder and is_image_file(src):
        return None  # its src is the image trafilatura reads
    for attr in ("data-src", *LAZY_ATTRS):
        value = (img.get(attr) or "").strip()
        if _url_like(value):
            return value
    for attr in SRCSET_ATTRS:
        url = largest_candidate(img.get(attr) or "")
        if url:
            return url
    url = _picture_source(img)
    if url:
        return url
    if placeholder:
        url = _data_image(img)
        if url or is_stand_in(src):
            return url
    # an <img>'s own source is its image, whatever its name (a photo named like a placeholder,
    # `grey-heron`, too), but a tracking pixel's
    return None if _pixel_sized(img) or is_image_file(src) else src


def mark_image(url: str) -> str:
    """`url` as trafilatura keeps it as an image's source: `IMAGE_MARK` after it where it has
    no image extension trafilatura knows."""
    return url if is_image_file(url) else url + IMAGE_MARK


def unmark_image(src: str | None) -> str | None:
    """An image source trafilatura kept, without the `IMAGE_MARK` `mark_image` set."""
    if src and src.endswith(IMAGE_MARK):
        return src[: -len(IMAGE_MARK)]
    return src


# <noscript>s that may hold an image (libxml2 parses their markup; kept as text, it is parsed).
_NOSCRIPTS = XPath("//noscript[.//img or contains(., '<img')]")
_SINGLE_IMAGE_SCAN = 12  # elements read to tell that a wrapper holds one image and no text


def _noscript_image(noscript):
    """The one <img> a <noscript> holds and nothing else (no text), else None."""
    if len(noscript) == 0 and "<img" in (noscript.text or ""):
        try:
            parts = lxml_html.fragments_fromstring(noscript.text)
        except (ParserError, ValueError):
            return None
        if any(isinstance(p, str) and p.strip() for p in parts):
            return None
        imgs = [i for p in parts if not isinstance(p, str) for i in p.iter("img")]
        return imgs[0] if len(imgs) == 1 else None
    imgs = list(noscript.iter("img"))
    if len(imgs) != 1 or noscript.text_content().strip():
        return None
    return imgs[0]


def _single_image(el):
    """`el` when it is an <img>, or the one <img> of a small wrapper without text (Medium's
    nested <div>s around its preview); None otherwise."""
    if el.tag == "img":
        return el
    if not isinstance(el.tag, str) or el.tag == "noscript":
        return None
    found = None
    for i, child in enumerate(el.iter()):
        if i > _SINGLE_IMAGE_SCAN or (child.text or "").strip():
            return None
        if child is not el and (child.tail or "").strip():
            return None
        if child.tag == "img":
            if found is not None:
                return None
            found = child
    return found


def _own_source(img) -> str | None:
    """What trafilatura would read as `img`'s image once its lazy source is set (a lazy attribute
    or srcset where its src is a placeholder, else its data-src or src); None for an <img> with
    no image of its own (no source, or a placeholder)."""
    url = lazy_source(img)
    if url:
        return url
    for attr in ("data-src", "src"):
        value = unmark_image((img.get(attr) or "").strip())
        if is_image_path(value) and not is_placeholder(value):
            return value
    return None


def _file_name(url: str) -> str:
    return url.split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def _same_image_group(noscript, url: str) -> list:
    """The <img>s beside `noscript` (its siblings before it, else after it, each an <img> or a
    wrapper of one) that stand for its image `url`: those with no image of their own, up to
    and with the first one showing a file of the same name (a preview); in document order."""
    for step in ("getprevious", "getnext"):
        group = []
        sibling = getattr(noscript, step)()
        while sibling is not None:
            img = _single_image(sibling)
            if img is None:
                break
            own = _own_source(img)
            if own is None:
                group.append(img)
            elif _file_name(own) == _file_name(url):
                group.append(img)
                break
            else:
                break
            if (sibling.tail or "").strip():
                break
            sibling = getattr(sibling, step)()
        if group:
            return group if step == "getnext" else group[::-1]
    return []


def _remove(el) -> None:
    """Remove `el` from its tree, its tail kept."""
    parent = el.getparent()
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def unwrap_noscript_images(tree) -> int:
    """For each <noscript> of `tree` holding one <img> of an image file, set that image as the
    `data-src` of the <img> beside it that stands for it (see the module docstring) and remove
    the others of its group (in place); how many <img>s were set."""
    n = 0
    for noscript in _NOSCRIPTS(tree):
        fallback = _noscript_image(noscript)
        url = _own_source(fallback) if fallback is not None else None
        if url is None:
            continue
        group = _same_image_group(noscript, url)
        if not group:
            continue
        first, rest = group[0], group[1:]
        if _own_source(first) != url:
            first.set("data-src", mark_image(url))
            n += 1
        if not first.get("alt") and fallback.get("alt"):
            first.set("alt", fallback.get("alt"))
        for img in rest:
            _remove(img)
    return n


# What Cloudflare's Rocket Loader writes on an <img> it will load (and show) from data-cfsrc.
_ROCKET_HIDDEN = re.compile(r"^\s*display\s*:\s*none\s*;\s*visibility\s*:\s*hidden\s*;?\s*$")


def _drop_stand_ins(img) -> None:
    """Remove each source trafilatura reads (`src`, `data-src*` but srcsets) of `img` that only
    holds a place (`is_stand_in`), or every one of a tracking pixel (`_pixel_sized`)."""
    pixel = _pixel_sized(img)
    for name, value in list(img.attrib.items()):
        if name == "src" or (name.startswith("data-src") and "srcset" not in name):
            if pixel or is_stand_in(value):
                del img.attrib[name]


def resolve_lazy_images(tree) -> int:
    """Set `data-src` on each <img> of `tree` whose image trafilatura would not read (lazily
    loaded, or without an image extension: `mark_image`), in place; how many were set. An <img>
    with no image but a stand-in (`is_stand_in`) loses that source. An <img> Rocket Loader
    hides until it loads it loses that style (trafilatura drops hidden elements). An <img>
    standing for a <noscript>'s image gets that image first (`unwrap_noscript_images`)."""
    n = unwrap_noscript_images(tree)
    for img in _IMGS(tree):
        url = lazy_source(img)
        if url is None:
            _drop_stand_ins(img)
            continue
        img.set("data-src", mark_image(url))
        if url == img.get("data-cfsrc") and _ROCKET_HIDDEN.match(img.get("style") or ""):
            del img.attrib["style"]
        n += 1
    return n


_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_SPACE = re.compile(r"[ \t\n\r\f]")


def http_url(base: str, ref: str) -> str | None:
    """`ref` made absolute against `base` as a browser's URL parser does (ASCII whitespace around
    it stripped, tabs and newlines in it removed, spaces in it %20), when that is an http(s) URL;
    None otherwise (javascript:, file:, data:, gopher:, ...)."""
    ref = ref.strip(" \t\n\r\f").translate(_TAB_NEWLINE).replace(" ", "%20")
    try:
        url = urljoin(base, ref)
        return url if urlsplit(url).scheme in ("http", "https") else None
    except ValueError:  # urlsplit refuses a malformed IPv6 host
        return None


def image_url(base: str, src: str | None) -> str | None:
    """The http(s) URL a browser loads for an image source `src` against `base`; None where it
    loads none: a missing or blank source (a blank link is the page itself, a blank image
    source no image) or one that is no http(s) URL (`http_url`)."""
    if not (src or "").strip():
        return None
    return http_url(base, src)


# The <img> attributes trafilatura reads a source from (`image_src`: data-src, src, data-src*),
# srcsets apart (`resolve_lazy_images` reads them).
_SOURCE_ATTRS = XPath(
    "//img/@*[name()='src' or (starts-with(name(), 'data-src') and "
    "not(contains(name(), 'srcset')))]/.."
)


def absolute_image_sources(tree, base: str) -> int:
    """Make every image source trafilatura reads (`src`, `data-src*`) of `tree` an absolute
    http(s) URL against `base` (the page's `<base href>` or its URL), in place, and remove one
    that is none (javascript:, file:, data:, ...): what trafilatura keeps of an image is then
    what a browser would load. How many sources were removed."""
    removed = 0
    for img in _SOURCE_ATTRS(tree):
        for name, value in list(img.attrib.items()):
            if name != "src" and not (name.startswith("data-src") and "srcset" not in name):
                continue
            if value.startswith(("http://", "https://")) and not _SPACE.search(value):
                continue  # absolute already (trafilatura keeps such a source as it is)
            url = image_url(base, value)
            if url is None:
                del img.attrib[name]
                removed += 1
            elif url != value:
                img.set(name, url)
    return removed
