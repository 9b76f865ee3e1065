"""Alt text to caption: normalise, then reject filenames, URLs, generic words ("image", "logo",
"写真"), placeholders, boilerplate and bad lengths with reason `bad_caption` and a detail.

A caption is rejected as generic only when EVERY word of it is generic or a filler ("company
logo", "Bild 3", "the image"); a real caption that mentions a logo ("The Apple logo on a store
front") keeps its other words and passes.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from filters.images.config import CaptionConfig

BAD_CAPTION = "bad_caption"
# Details of a `bad_caption` rejection, in the order the checks run.
DETAILS = (
    "empty",
    "url",
    "filename",
    "placeholder",
    "boilerplate",
    "generic",
    "no_letters",
    "too_short",
    "too_long",
)


def _phrases(text: str) -> frozenset[str]:
    """`a|b|c` to a set of casefolded phrases."""
    return frozenset(p.strip().casefold() for p in text.split("|") if p.strip())


# Words that say "this is an image" and nothing about it (en, de, fr, es, it, pt, ru; casefolded).
GENERIC_WORDS = _phrases(
    "abb|abbildung|avatar|badge|banner|banners|banniere|bannière|bild|bilder|button|fig|"
    "figure|foto|fotografia|fotografía|fotos|gallery|grafik|graphic|graphics|header|hero|"
    "icon|icone|icono|icons|icône|illustration|ilustracion|ilustración|image|imagen|"
    "imagenes|images|img|imágenes|logo|logos|logotipo|logotype|miniatura|photo|photograph|"
    "photographie|photography|photos|pic|pics|picture|pictures|screenshot|slide|slider|"
    "symbol|symbolbild|thumb|thumbnail|titelbild|vignette|vorschaubild|ícono|"
    "immagine|immagini|icona|imagem|imagens|ícone|icone|"
    "изображение|картинка|фото|фотография|логотип|иконка|баннер|рисунок"
)

# Words that may stand next to a generic word without making it a caption ("our company logo").
FILLER_WORDS = _phrases(
    "a|alt|an|article|aucune|author|big|blog|brand|company|d|das|de|default|del|der|des|"
    "die|du|ein|eine|einer|el|empresa|entreprise|featured|file|firmen|footer|for|here|is|"
    "kein|keine|l|la|large|las|le|les|los|main|my|nav|navigation|new|no|notre|nuestra|"
    "nuestro|of|our|page|para|post|pour|preview|profile|site|sitio|small|text|that|the|"
    "this|top|un|una|une|unser|unsere|user|vom|von|web|website|your|zum|zur|"
    "di|della|dello|il|lo|nostro|do|da|o|os|nosso|nossa|empresa|компании|сайта|наш"
)

# Generic words and fillers of languages written without spaces (ja, zh, ko), matched as
# substrings, longest first.
CJK_GENERIC = tuple(
    sorted(
        _phrases(
            "画像|写真|図|ロゴ|アイコン|バナー|イメージ|サムネイル|フォト|"
            "图片|图像|圖片|圖像|照片|相片|标志|標誌|商标|图标|圖標|横幅|橫幅|缩略图|插图|配图|头像|"
            "이미지|사진|로고|아이콘|배너"
        ),
        key=len,
        reverse=True,
    )
)
CJK_FILLER = tuple(
    sorted(_phrases("の|的|这|這|个|張|张|本|公司|网站|網站|サイト|会社|一"), key=len, reverse=True)
)

# Whole captions that hold a place (en, de, fr, es, ja, zh).
PLACEHOLDERS = _phrases(
    "1x1|alt|alt tag|alt text|alttext|blank|clear|default|dummy|empty|espace réservé|"
    "image not found|image placeholder|insert alt text|marcador de posición|n/a|na|nan|"
    "no image|none|null|pixel|placeholder|platzhalter|s.gif|sample|sans titre|shim|"
    "sin titulo|sin título|spacer|tbd|test|todo|transparent|unbenannt|undefined|unknown|"
    "untitled|プレースホルダー|占位符|无标题|未命名|無題"
)

# Whole captions that are page chrome (en, de, fr, es, ja, zh).
BOILERPLATE = _phrases(
    "ad|ads|advertisement|anterior|anuncio|anzeige|back|back to top|clic aquí|click|"
    "click here|cliquez ici|close|compartir|continue reading|descargar|download|email|"
    "en savoir plus|facebook|follow us|haga clic aquí|haz clic aquí|herunterladen|"
    "hier klicken|home|instagram|klicken sie hier|learn more|leer mas|leer más|like|"
    "linkedin|lire la suite|loading|loading...|mehr|mehr lesen|menu|more|next|partager|"
    "pinterest|prev|previous|print|précédent|publicidad|publicite|publicité|read more|rss|"
    "scroll to top|search|see more|share|share on facebook|share on linkedin|"
    "share on twitter|siguiente|sponsored|subscribe|suivant|teilen|tweet|twitter|"
    "télécharger|view more|weiterlesen|werbung|whatsapp|youtube|ここをクリック|もっと見る|クリック|シェア|"
    "ダウンロード|下载|分享|广告|広告|廣告|更多|点击|点击此处|点击这里|続きを読む|閱讀更多|阅读更多"
)
_BOILERPLATE_PATTERNS = (
    r"^(share|pin|post|tweet) (this |it )?(on|to|via) \w+$",
    r"^(follow|find|like) us on \w+$",
    r"^(click|tap) (here )?to (enlarge|zoom|view|open|play|download|see)\b.*$",
    r"^(opens|open) in (a )?new (window|tab)$",
    r"^(powered by|made with|built with) \w+$",
    r"^(copyright|©)\b",
    r"^(tracking|tracker|analytics|counter|beacon)( pixel)?$",
)
_IMAGE_EXT = r"(jpe?g|jpe|jfif|png|gif|webp|svg|bmp|tiff?|avif|heic|heif|ico)"
_FILENAME = re.compile(rf"^[\w\-.()+~%@ ]{{0,200}}\.{_IMAGE_EXT}(\?\S*)?$", re.IGNORECASE)
# Camera and tool defaults without an extension: IMG_0423, DSC00123, PXL_20230101_120000, ...
_CAMERA = re.compile(
    r"^(img|dsc|dscn|dscf|dcim|pxl|mvimg|gopr|gp|sam|wp|p|screenshot|screen shot|image|photo|pic"
    r"|file|untitled|capture|scan)[ _\-]?[\d_\-. ]{3,}(\s*\(\d+\))?$",
    re.IGNORECASE,
)
_SCREENSHOT = re.compile(
    r"^(screenshot|screen shot|bildschirmfoto|capture d.écran|captura de pantalla)[ _\-]?"
    r"[\d\-_. ]+((at|um|à|a las?) [\d.:h ]+)?(\s*(am|pm))?$",
    re.IGNORECASE,
)
_HEXNAME = re.compile(
    r"^([0-9a-f]{16,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I
)
_URL = re.compile(r"^(https?://|ftp://|www\.|//|data:|file:/|blob:)\S*$", re.IGNORECASE)
_URL_ANYWHERE = re.compile(r"(https?://|www\.)\S+", re.IGNORECASE)
_DIMENSIONS = re.compile(r"^\d+\s*[x×*]\s*\d+(\s*px)?$", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_CONTROL_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn"}
_SPACE_LIKE = {"\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\u2028", "\u2029"}


@dataclass(frozen=True)
class CaptionVerdict:
    """The cleaned caption (None when rejected), why it was rejected, and its language."""

    caption: str | None
    drop_reason: str | None  # None or "bad_caption"
    detail: str | None  # one of DETAILS when rejected
    lang: str = "und"
    lang_score: float = 0.0


def normalise_alt(alt: str | None) -> str:
    """Unescape HTML entities (twice, for double-escaped `&amp;amp;`), Unicode NFC, control and
    format characters removed (line breaks and NBSP become spaces), whitespace collapsed."""
    if not alt:
        return ""
    text = html.unescape(html.unescape(alt))
    text = unicodedata.normalize("NFC", text)
    out = []
    for ch in text:
        if ch in _SPACE_LIKE:
            out.append(" ")
        elif unicodedata.category(ch) in _CONTROL_CATEGORIES and ch != "\u200d":
            continue  # NUL, BOM, zero-width spaces, soft hyphens, bidi marks, private use
        else:
            out.append(ch)
    return " ".join("".join(out).split())


def _key(text: str) -> str:
    """Casefolded, punctuation at the ends stripped, inner whitespace single."""
    return " ".join(text.casefold().strip(" \t.,;:!?-–—_'\"“”‘’«»()[]{}<>|/\\*#~…").split())


def _strip_cjk(token: str, terms: tuple[str, ...]) -> str:
    for term in terms:  # longest first
        token = token.replace(term, "")
    return token


def _is_generic(text: str, extra: frozenset[str]) -> bool:
    """True when every word is a generic word, a filler or a number, and at least one is generic."""
    generic = GENERIC_WORDS | extra
    saw_generic = False
    for token in _WORD.findall(text.casefold()):
        if token in generic:
            saw_generic = True
        elif token in FILLER_WORDS or token.isdigit():
            continue
        elif _CJK.search(token):
            rest = _strip_cjk(token, CJK_GENERIC)
            if rest != token:
                saw_generic = True
            rest = _strip_cjk(rest, CJK_FILLER)
            if rest.strip("0123456789０１２３４５６７８９"):
                return False
        else:
            return False
    return saw_generic


def _cjk_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(bool(_CJK.match(c)) for c in letters) / len(letters) if letters else 0.0


def reject_detail(caption: str, cfg: CaptionConfig | None = None) -> str | None:
    """Why a normalised caption is not a caption (one of DETAILS), or None when it is one."""
    cfg = cfg or CaptionConfig()
    if not caption:
        return "empty"
    key = _key(caption)
    if _URL.match(caption) or (_URL_ANYWHERE.search(caption) and len(_WORD.findall(caption)) < 6):
        return "url"
    if any(p.match(key) for p in (_CAMERA, _SCREENSHOT, _HEXNAME)) or _FILENAME.match(caption):
        return "filename"
    if key in PLACEHOLDERS or _DIMENSIONS.match(key):
        return "placeholder"
    patterns = _BOILERPLATE_PATTERNS + tuple(cfg.extra_boilerplate_patterns)
    if key in BOILERPLATE or any(re.search(p, key, re.IGNORECASE) for p in patterns):
        return "boilerplate"
    if _is_generic(caption, frozenset(w.casefold() for w in cfg.extra_generic_words)):
        return "generic"
    if not any(c.isalpha() for c in caption):
        return "no_letters"
    letters = sum(c.isalnum() for c in caption)
    minimum = cfg.min_chars_cjk if _cjk_share(caption) > 0.5 else cfg.min_chars
    if letters < minimum:
        return "too_short"
    if len(caption) > cfg.max_chars or len(caption.split()) > cfg.max_words:
        return "too_long"
    return None


def clean_caption(alt: str | None, cfg: CaptionConfig | None = None) -> CaptionVerdict:
    """One alt text to a verdict, without language identification (see `clean_captions`)."""
    caption = normalise_alt(alt)
    detail = reject_detail(caption, cfg)
    if detail is not None:
        return CaptionVerdict(None, BAD_CAPTION, detail)
    return CaptionVerdict(caption, None, None)


def clean_captions(
    alts: Iterable[str | None], cfg: CaptionConfig | None = None, lang_id=None
) -> list[CaptionVerdict]:
    """Clean many alt texts; `lang_id` (a `common.langid.LanguageIdentifier`, or anything with its
    `predict_batch`) labels the kept captions in one batched call; None leaves them "und"."""
    verdicts = [clean_caption(a, cfg) for a in alts]
    if lang_id is None:
        return verdicts
    kept = [i for i, v in enumerate(verdicts) if v.caption is not None]
    preds = lang_id.predict_batch([verdicts[i].caption for i in kept]) if kept else []
    for i, (lang, score) in zip(kept, preds, strict=True):
        v = verdicts[i]
        verdicts[i] = CaptionVerdict(v.caption, None, None, lang, score)
    return verdicts


def caption_rows(
    rows: Iterable[dict], cfg: CaptionConfig | None = None, lang_id=None
) -> list[dict]:
    """Rows with `alt` (image_refs or pairs rows) to copies with `caption`, `caption_lang`,
    `caption_lang_score`, `caption_detail` and `drop_reason` ("bad_caption" or the row's own
    earlier reason, which is kept); every other column (`surrounding_text` included) is carried."""
    rows = list(rows)
    verdicts = clean_captions([r.get("alt") for r in rows], cfg, lang_id)
    out = []
    for row, v in zip(rows, verdicts, strict=True):
        new = dict(row)
        new["caption"] = v.caption
        new["caption_lang"] = v.lang
        new["caption_lang_score"] = v.lang_score
        new["caption_detail"] = v.detail
        if new.get("drop_reason") is None:
            new["drop_reason"] = v.drop_reason
        out.append(new)
    return out
