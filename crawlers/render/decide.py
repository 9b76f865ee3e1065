"""Decide from the static HTML alone whether a page needs a browser to show its content.

Rendering costs ~100x static extraction, so a page is rendered only on evidence that part of its
main content is missing from the HTML and would be produced by a script:

* visible text versus markup: the main content region has (almost) no text while scripts run;
* empty containers that scripts target: an empty element an inline script writes into, an empty
  custom element, an empty id-named element that ends the main content (or sits in a page with
  little text) next to external scripts, an empty box beside a load-more button;
* loading placeholders: "Loading…" in many languages, aria-busy, progress bars, spinner and
  skeleton elements in the main content;
* feeds that end in a sentinel: an empty box named for it, or a library's scroll trigger (htmx's
  `hx-get` with `hx-trigger` revealed / intersect);
* scripts that write into the main content: an inline script that fetches data (GET), waits on a
  timer or observes scrolling and writes text into the page, `document.write` of content, shadow
  roots, and prose carried by scripts or JSON data blobs that the visible page does not show.

Script loaders that only add other scripts (analytics, tag managers, pixels, SDKs), the empty
mount points of consent managers and analytics, <noscript> fallbacks, plain "Read more" links,
JSON-LD, menus and lazy images are not evidence, and a server-rendered (declarative) shadow root
is text in the page: a page whose content is all in its HTML is left static however many of them
it carries.

Weak evidence alone (an empty box mid-article or named only by class next to external scripts,
as maps, players and share widgets are; a section with a heading and nothing under it; a
load-more button with nothing to load into; little text) makes a decision `ambiguous`: not
rendered by `needs_render`, and settled by a short probe render (`crawlers.render.probe`; the
render stage's `--render auto` probes them). Reasons name the evidence; static ones start
"static".

Consent is read the same way: robots directives a script writes (a `<meta name=robots
content=noai>` it appends to the head) hold for the page as if its HTML stated them, and only a
render shows them. An inline script that writes a `<meta>` naming robots, our tokens or a
directive (noai, noimageai, noindex) sends its page to render, first of its evidence ("consent:
..."). What external scripts write cannot be read here: each decision names its page's scripts
(`RenderDecision.scripts`, the same for the pages of one template), and the probe renders a page
of every template per host to learn whether those scripts write directives
(`crawlers.render.probe.settle_pages`).
"""

from __future__ import annotations

import html as html_lib
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from lxml import etree
from lxml import html as lxml_html

# Main content with less text than this (CJK characters count double) is taken as empty.
EMPTY_MAIN_CHARS = 100
# Below this much main-content text, a page with scripts is weak evidence on its own.
SHELL_TEXT_CHARS = 400
# Prose in scripts or data blobs that the page does not show: at least this much is evidence.
MISSING_PROSE_CHARS = 150

LOAD_MORE_TEXTS = (
    "load more",
    "show more",
    "see more",
    "view more",
    "more results",
    "read more comments",
    "mehr laden",
    "mehr anzeigen",
    "weitere laden",
    "voir plus",
    "charger plus",
    "afficher plus",
    "cargar más",
    "cargar mas",
    "ver más",
    "mostrar más",
    "carica altro",
    "mostra altro",
    "carregar mais",
    "ver mais",
    "meer laden",
    "toon meer",
    "załaduj więcej",
    "pokaż więcej",
    "загрузить ещё",
    "показать ещё",
    "もっと見る",
    "さらに表示",
    "加载更多",
    "显示更多",
    "查看更多",
    "載入更多",
    "더 보기",
    "더보기",
    "daha fazla",
    "visa fler",
    "vis flere",
    "näytä lisää",
    "more stories",
    "more articles",
    "more posts",
    "more comments",
    "show all comments",
    "load older",
    "weitere beiträge",
    "weitere artikel",
    "plus d'articles",
    "voir plus",
    "afficher la suite",
    "mostra di più",
    "carica altri",
    "mostrar mais",
    "ver mais",
    "laad meer",
    "meer tonen",
    "ladda fler",
    "visa mer",
    "indlæs flere",
    "vis mere",
    "last flere",
    "lataa lisää",
    "načíst další",
    "zobrazit více",
    "több betöltése",
    "încarcă mai multe",
    "vezi mai multe",
    "φόρτωση περισσότερων",
    "περισσότερα",
    "завантажити ще",
    "показати більше",
    "показать больше",
    "טען עוד",
    "הצג עוד",
    "تحميل المزيد",
    "عرض المزيد",
    "المزيد من",
    "और लोड करें",
    "और दिखाएँ",
    "और देखें",
    "xem thêm",
    "tải thêm",
    "muat lebih banyak",
    "lihat lebih banyak",
    "โหลดเพิ่ม",
    "ดูเพิ่มเติม",
    "さらに読み込む",
    "もっと読み込む",
    "続きを表示",
    "さらに表示",
    "더 불러오기",
    "더보기",
    "顯示更多",
    "查看更多",
    "更多",
    # An article cut short behind a button that fetches the rest ("Continue reading"): a
    # control, not a link (a teaser's "Read more" link to the article navigates away).
    "continue reading",
    "read more",
    "read full article",
    "read the full article",
    "read full story",
    "read the full story",
    "weiterlesen",
    "mehr lesen",
    "artikel weiterlesen",
    "lire la suite",
    "lire plus",
    "seguir leyendo",
    "leer más",
    "leer mas",
    "continuar leyendo",
    "continua a leggere",
    "leggi tutto",
    "continuar lendo",
    "leia mais",
    "verder lezen",
    "lees meer",
    "czytaj dalej",
    "czytaj więcej",
    "читать далее",
    "читать полностью",
    "続きを読む",
    "阅读全文",
    "展开全文",
    "閱讀全文",
    "전체 보기",
    "계속 읽기",
    "devamını oku",
    "läs mer",
    "les mer",
    "læs mere",
    "lue lisää",
)
# Labels that put the words apart ("Load 10 more", "Mehr Artikel laden", "Plus de résultats"):
# one regular expression, also run in the browser (JavaScript syntax, case-insensitive).
_NOUNS = (
    r"(results|posts|articles|stories|news|items|comments|replies|reviews|entries|videos|photos|"
    r"ergebnisse|beiträge|artikel|kommentare|nachrichten|meldungen|résultats|commentaires|"
    r"actualités|actus|vidéos|noticias|resultados|artículos|comentários|notícias|articoli|"
    r"notizie|risultati)"
)
LOAD_MORE_PATTERN = (
    r"^\W*((load|show|see|view|display) (\d+ )?(more|older)( " + _NOUNS + r")?|"
    r"(more|older) " + _NOUNS + r"|"
    r"(mehr|weitere|ältere) (\d+ )?("
    + _NOUNS
    + r" )?(laden|anzeigen|zeigen)|ältere "
    + _NOUNS
    + r"|(voir|afficher|charger) plus( (de |d')"
    + _NOUNS
    + r")?|plus (de |d')"
    + _NOUNS
    + r"|(ver|mostrar|cargar|carregar) (más|mas|mais)( "
    + _NOUNS
    + r")?|(carica|mostra) (altro|altri)( "
    + _NOUNS
    + r")?)\W*$"
)
_LOAD_MORE_RE = re.compile(LOAD_MORE_PATTERN, re.I)


# Names of load-more controls (class, id): an icon-only button carries its meaning only there.
MORE_NAME_PATTERN = (
    r"(^|[-_ .])(load-?more|show-?more|view-?more|loadmore|showmore|more-?(posts|articles|stories|"
    r"items|results|news|entries)|(btn|button|js)-?more)($|[-_ .\d])"
)
_MORE_NAME = re.compile(MORE_NAME_PATTERN, re.I)


def _alt(words: str) -> str:
    return "|".join(re.escape(w) for w in words.split())


# Pager labels in more words than the phrases above say ("Pokaż starsze wpisy", "次の10件",
# "عرض المزيد من الأخبار", "Show 20 more", "Ältere Beiträge anzeigen"). Matched on the label's
# words (`label_words`: letters, digits and marks, lower case, one space apart), the same in the
# browser (`PAGER_PATTERN` is JavaScript syntax too). A word for more, older or further goes with
# a verb of showing or loading, a content noun or a count; a word for next or previous with a
# count or a plural noun ("Next 10", not "Next article"); Chinese, Japanese, Korean and Thai
# labels by their own markers (更多, さらに, 次の10件, 더 보기). A few other words may stand
# around them, none naming a menu, a setting, details or sharing ("More options").
_MORE_WORDS = _alt(
    "more older earlier mehr weitere weiteren ältere älteren frühere früheren "
    "plus anciens anciennes más mas antiguos antiguas mais antigos antigas altri altre altro più "
    "meer oudere eerdere więcej wiecej starsze starszych wcześniejsze kolejne kolejnych dalsze "
    "ещё еще больше старые ще більше fazla thêm cũ lainnya lagi lebih المزيد مزيد أكثر الأقدم "
    "עוד נוספים další více starší ďalšie viac staršie fler mer äldre flere mere ældre eldre "
    "lisää vanhemmat több további régebbi multe vechi περισσότερα περισσότερες παλαιότερα अधिक"
)
_NEXT_WORDS = _alt(
    "next previous nächste nächsten vorherige vorherigen suivants suivantes précédents "
    "précédentes siguientes anteriores próximos próximas seguintes successivi successive "
    "precedenti vorige następne następnych poprzednie poprzednich следующие предыдущие наступні "
    "попередні sonraki önceki tiếp trước selanjutnya berikutnya sebelumnya التالية السابقة "
    "הבאים הקודמים předchozí nästa föregående næste forrige neste seuraavat edelliset "
    "következő előző următoarele anterioare επόμενα προηγούμενα"
)
_VERBS = _alt(
    "load show see view display get fetch reveal laden nachladen anzeigen zeigen einblenden "
    "ansehen lade zeige voir afficher charger ver mostrar cargar carregar exibir mostra carica "
    "vedi visualizza laad toon tonen bekijk bekijken pokaż pokaz załaduj zaladuj wczytaj zobacz "
    "wyświetl pobierz показать загрузить посмотреть показати завантажити göster yükle gör "
    "görüntüle xem tải hiển lihat muat tampilkan عرض اعرض تحميل شاهد הצג טען zobrazit načíst "
    "zobraziť načítať visa ladda vis indlæs hent last näytä lataa mutass betöltése încarcă "
    "incarca vezi arată φόρτωση εμφάνιση δείτε देखें दिखाएँ दिखाएं"
)
_NOUN_WORDS = _alt(
    "posts articles stories news items entries results comments replies reviews videos photos "
    "updates headlines answers questions events topics threads messages products listings "
    "beiträge beitrage artikel einträge meldungen nachrichten ergebnisse kommentare antworten "
    "bewertungen fotos themen storys actualités actus résultats commentaires billets "
    "publications nouvelles vidéos avis réponses sujets artículos noticias entradas resultados "
    "comentarios publicaciones respuestas reseñas opiniones vídeos fotos historias artigos "
    "notícias publicações comentários respostas histórias articoli notizie post risultati "
    "commenti risposte recensioni storie artikelen berichten nieuws resultaten reacties verhalen "
    "wpisy wpisów wpisow posty postów artykuły artykułów wiadomości wiadomosci komentarze "
    "komentarzy wyniki wyników newsy aktualności opinie odpowiedzi recenzje новости новостей "
    "статьи статей записи записей публикации публикаций комментарии комментариев результаты "
    "результатов посты постов отзывы отзывов новини статті коментарі публікації haber haberler "
    "yazı yazılar yorum yorumlar sonuç sonuçlar gönderi gönderiler bài tin tức luận berita "
    "postingan komentar hasil tulisan الأخبار أخبار المقالات مقالات التعليقات تعليقات النتائج "
    "نتائج المنشورات منشورات כתבות פוסטים תגובות תוצאות חדשות články příspěvky zprávy "
    "komentáře výsledky príspevky správy artiklar inlägg nyheter kommentarer resultat artikler "
    "indlæg nyheder resultater innlegg artikkelit artikkeleita uutiset uutisia kommentit "
    "kommentteja tulokset tuloksia cikkek hírek bejegyzések hozzászólások eredmények találatok "
    "articole știri stiri postări comentarii rezultate άρθρα ειδήσεις σχόλια αποτελέσματα "
    "αναρτήσεις लेख खबरें समाचार पोस्ट परिणाम"
)
# Words that make a "more" label a menu's, a setting's, a share's, an expander's or a paywall's.
_DENY_WORDS = _alt(
    "options option settings setting preferences filters filter details detail info infos "
    "information sharing share menu tools actions languages language less fewer categories "
    "vendors partners purposes cookies about subscription subscribe premium print drucken slider "
    "slide slides slideshow carousel karussell carrousel carrusel carosello diashow "
    "imprimer imprimir stampa afdrukken drukuj печать yazdır optionen "
    "einstellungen informationen teilen menü sprachen weniger kategorien partner zwecke abo "
    "abonnieren paramètres réglages filtres détails informations partager partage langues moins "
    "catégories partenaires finalités abonnement opciones ajustes configuración filtros detalles "
    "información compartir menú idiomas menos categorías socios opções configurações definições "
    "detalhes informações compartilhar partilhar categorias parceiros opzioni impostazioni filtri "
    "dettagli informazioni condividi lingue categorie opties instellingen informatie delen "
    "talen minder opcje opcji ustawienia filtry szczegóły szczegółów informacje informacji "
    "udostępnij języki mniej kategorie opcje опции настройки параметры фильтры подробности "
    "подробнее информация информации поделиться меню языки меньше категории seçenekler ayarlar "
    "filtreler ayrıntılar detaylar bilgi paylaş menü chọn đặt lọc tiết thông chia ít opsi "
    "pilihan pengaturan setelan rincian informasi bagikan bahasa sedikit kategori خيارات "
    "الخيارات إعدادات الإعدادات تفاصيل التفاصيل معلومات المعلومات مشاركة القائمة أقل "
    "אפשרויות הגדרות פרטים מידע שתף תפריט פחות možnosti nastavení podrobnosti informace sdílet "
    "méně alternativ inställningar detaljer dela mindre indstillinger muligheder oplysninger "
    "innstillinger alternativer informasjon asetukset vaihtoehdot lisätiedot tiedot jaa "
    "vähemmän beállítások lehetőségek részletek információ megosztás kevesebb opțiuni setări "
    "detalii informații distribuie puțin επιλογές ρυθμίσεις λεπτομέρειες πληροφορίες "
    "λιγότερα विकल्प सेटिंग्स विवरण जानकारी साझा कम"
)
_DENY_MARKS = _alt(
    "选项 選項 设置 設定 詳細 详情 詳情 詳しく オプション 分享 共有 シェア 操作 菜单 選單 メニュー "
    "收起 閉じる 옵션 설정 공유 자세히 메뉴 접기 ตัวเลือก ตั้งค่า แชร์"
)
_CJK_MORE = (
    r"更多|さらに|もっと|続きを(?:表示|読|見)|[次前]の ?\d* ?件|\d+ ?件を?(?:表示|読み込|見)|"
    r"(?:過去|以前|古い)の(?:記事|投稿|ニュース|話題|エントリー|トピック)|"
    r"(?:次|前)の(?:記事|投稿|ニュース|話題|エントリー|トピック)を(?:表示|読み込|見)|"
    r"下一?\d+ ?[条條篇]|(?:更早|较早|較早|以前|之前)的|再(?:加载|載入|载入)|"
    r"더 ?(?:보기|불러오기|읽기|많은)|다음 ?\d+ ?(?:개|건)|\d+ ?(?:개|건) ?더|"
    r"이전 ?(?:글|게시물|기사|소식|뉴스)|(?:โหลด|ดู|แสดง)\S*เพิ่ม"
)


def _word(words: str) -> str:
    return rf"(?:^| )(?:{words})(?= |$)"


PAGER_PATTERN = (
    rf"^(?!.*{_word(_DENY_WORDS)})(?!.*(?:{_DENY_MARKS}))"
    rf"(?:(?=.*{_word(_MORE_WORDS)})(?=.*(?:{_word(_VERBS + '|' + _NOUN_WORDS)}|\d))"
    rf"|(?=.*{_word(_NEXT_WORDS)})(?=.*(?:{_word(_NOUN_WORDS)}|\d))"
    rf"|(?=.*(?:{_CJK_MORE})))"
    r"[^ ]+(?: [^ ]+){0,5}$"
)
_PAGER_RE = re.compile(PAGER_PATTERN)
# What no "more" control says, however it is worded (`label_words`; JavaScript syntax too).
PAGER_DENY_PATTERN = rf"{_word(_DENY_WORDS)}|{_DENY_MARKS}"
_PAGER_DENY_RE = re.compile(PAGER_DENY_PATTERN)


def label_words(label: str) -> str:
    """A label's words: letters, digits and combining marks, lower case, one space apart
    (what `PAGER_PATTERN` reads; the browser side splits the same way)."""
    text = "".join(c if unicodedata.category(c)[0] in "LNM" else " " for c in label.lower())
    return " ".join(text.split())


def promises_more(label: str) -> bool:
    """True if a control's label promises more content ("Load more", "Mehr laden", "更多",
    "Pokaż starsze wpisy", "次の10件", ...)."""
    return _promise(label) > 0


def _promise(label: str) -> int:
    """2 if a known phrase says the label promises more ("Load more"), 1 if only its words do
    (`PAGER_PATTERN`: "Pokaż starsze wpisy"), 0 if it promises nothing."""
    text = " ".join(label.split()).lower()
    if not text or len(text) >= 60 or _PAGER_DENY_RE.search(label_words(text)):
        return 0  # "Show more options" opens a menu, "Mehr Informationen" an expander
    if _LOAD_MORE_RE.search(text):
        return 2
    for m in LOAD_MORE_TEXTS:
        if m in text:
            # The phrase is the label, give or take one word ("Show more comments", not "show
            # more sharing options": that opens a menu).
            rest = re.sub(r"[\W\d_]+", " ", text.replace(m, " ", 1)).split()
            if len(rest) <= 1:
                return 2
    return 1 if _PAGER_RE.search(label_words(text)) else 0


# "Loading" as a placeholder says in many languages (matched on short element texts only).
LOADING_TEXTS = (
    "loading",
    "please wait",
    "wird geladen",
    "werden geladen",
    "lädt",
    "laden …",
    "laden...",
    "chargement",
    "cargando",
    "carregando",
    "a carregar",
    "caricamento",
    "загрузка",
    "загружается",
    "ładowanie",
    "wczytywanie",
    "yükleniyor",
    "načítání",
    "betöltés",
    "φόρτωση",
    "טוען",
    "جارٍ التحميل",
    "جار التحميل",
    "جاري التحميل",
    "लोड हो रहा",
    "लोड हो रही",
    "読み込み中",
    "ロード中",
    "加载中",
    "載入中",
    "正在加载",
    "불러오는 중",
    "로딩 중",
    "đang tải",
    "memuat",
    "กำลังโหลด",
)
_PLACEHOLDER_CLASS = re.compile(
    r"(^|[-_ ])(spinner|skeleton|loader|loading|shimmer|preloader)($|[-_ ])", re.I
)
# Classes that say the opposite ("no-loading", "is-loaded") or hide the element ("hidden").
_NOT_LOADING_CLASS = re.compile(
    r"(^|\s)(no|not|non|stop|done)[-_]?load(ing|er)?($|\s)|(^|\s)(is-)?loaded($|\s)|"
    r"(^|\s)(hidden|d-none|is-hidden|hide|invisible)($|\s)",
    re.I,
)

_SKIP_TEXT = {"script", "style", "noscript", "template"}
_CHROME = {"nav", "header", "footer", "aside", "form", "button", "select", "label"}
_CONTAINERS = {"div", "section", "main", "article", "ul", "ol", "tbody", "table", "dl", "aside"}
_MEDIA = {
    "img",
    "picture",
    "video",
    "audio",
    "iframe",
    "svg",
    "canvas",
    "object",
    "embed",
    "input",
    "textarea",
    "select",
    "math",
}
_JS_TYPES = {"", "text/javascript", "application/javascript", "module", "text/ecmascript"}
_DATA_TYPES = {"application/json", "text/json", "text/x-template", "text/template"}

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# Writes that put text or markup into the DOM (not attribute, class or style changes).
_TEXT_WRITE = re.compile(
    r"\.innerHTML\s*\+?=|\.outerHTML\s*=|insertAdjacent(HTML|Text)\s*\(|document\.write(ln)?\s*\(|"
    r"\btextContent\s*[:=](?!=)|\binnerText\s*=(?!=)|createTextNode\s*\(|replaceChildren\s*\(|"
    r"\.(append|prepend|before|after|html|text)\s*\(\s*[^)\s]|attachShadow\s*\(|importNode\s*\(|"
    r"\.content\.cloneNode\s*\("
)
_FETCH = re.compile(
    r"\bfetch\s*\(|XMLHttpRequest|\$\.(ajax|get|getJSON|post)\s*\(|\baxios\b|\bimport\s*\("
)
_WRITE_METHOD = re.compile(r"""method\s*:\s*['"`](POST|PUT|PATCH|DELETE)""", re.I)
_TIMER = re.compile(
    r"\bset(Timeout|Interval)\s*\(|requestAnimationFrame\s*\(|requestIdleCallback\s*\("
)
_SCROLL = re.compile(
    r"IntersectionObserver|addEventListener\(\s*['\"]scroll|\bonscroll\b|\.scroll\s*\("
)
# Handlers a renderer never triggers (it does not type or submit forms).
_USER_INPUT = re.compile(
    r"addEventListener\(\s*['\"](submit|input|keyup|keydown|change)['\"]|\.submit\s*\(|onsubmit|oninput"
)
_DOC_WRITE = re.compile(r"document\.write(ln)?\s*\(")
_SHADOW = re.compile(r"attachShadow\s*\(")
_REFS = re.compile(
    r"""getElementById\(\s*['"]([\w:-]+)['"]|getElementsByClassName\(\s*['"]([\w -]+)['"]|"""
    r"""querySelector(?:All)?\(\s*['"]([^'"]+)['"]|\$\(\s*['"]([^'"]+)['"]"""
)
_STRING = re.compile(
    r""""((?:[^"\\\n]|\\.){12,})"|'((?:[^'\\\n]|\\.){12,})'|`((?:[^`\\]|\\.){12,})`""", re.S
)
_TAG = re.compile(r"<[^>]*>")
_ATTRIBUTE = re.compile(r"""\b[\w-]+\s*=\s*['"\\]""")
_SENTENCE = re.compile(r"(?<=[.!?。！？।])\s*")


@dataclass(frozen=True)
class RenderDecision:
    """Whether to render, the evidence for it (or why not), and whether the evidence was weak.

    `ambiguous` decisions are not rendered by `needs_render`; a probe render can settle them.
    `evidence` names each piece found, strongest first. `scripts` names the scripts the page runs
    (`script_family`; '' when it runs none): pages of one host with the same `scripts` run the
    same code, so a probe of one tells what the others' scripts write (robots directives).
    """

    render: bool
    reason: str
    ambiguous: bool = False
    evidence: tuple[str, ...] = field(default=(), compare=False)
    scripts: str = field(default="", compare=False)


# Weak evidence that names a place in the main content where script-made text would go.
_PLACE_EVIDENCE = (
    "heading with nothing under it",
    "empty box",
    "empty custom element",
    "loading placeholder mid-content",
    "load-more control beside",
    "load-more control mid-content",
)


def probe_priority(decision: RenderDecision) -> int:
    """Which ambiguous pages a capped probe settles first: 0 thin main content ("little text":
    what scripts add would be most of the page), 1 a place for content in it (an empty box, a
    heading with nothing under it, a loader mid-content), 2 the rest (prose in scripts, an
    inline fetch, a noscript hint beside a page full of text)."""
    if any(e.startswith("little text") for e in decision.evidence):
        return 0
    return 1 if any(e.startswith(_PLACE_EVIDENCE) for e in decision.evidence) else 2


def text_weight(text: str) -> int:
    """Characters of text without spaces, CJK characters counting double (they carry more)."""
    compact = "".join(text.split())
    return len(compact) + len(_CJK.findall(compact))


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


# Tab and accordion panels stay text while `hidden` (a click shows them; extraction keeps them).
UNHIDDEN_PANEL_ROLES = ("tabpanel", "region")
UNHIDDEN_PANEL_CLASSES = ("panel", "tab-pane", "tab-panel", "accordion-panel", "collapse")


def unrendered(el) -> bool:
    """An element below <body> with the `hidden` attribute, but a tab or accordion panel: what
    a browser does not show until a script unhides it, and what extraction drops
    (crawlers.extract.content.drop_unrendered). Its text is no static text to the decision, so a
    page whose article sits in a wrapper its own script unhides is rendered."""
    if el.get("hidden") is None or el.tag in ("body", "html"):
        return False
    if el.get("role") in UNHIDDEN_PANEL_ROLES:
        return False
    return not set((el.get("class") or "").split()) & set(UNHIDDEN_PANEL_CLASSES)


def _texts(el, skip: set[str] = _SKIP_TEXT, links: bool = True):
    """Text nodes below el, skipping script-like elements, `hidden` ones (`unrendered`), and
    links/chrome when asked."""
    if (
        not isinstance(el.tag, str)
        or el.tag in skip
        or (not links and el.tag == "a")
        or unrendered(el)
    ):
        return
    if el.text:
        yield el.text
    for child in el:
        yield from _texts(child, skip, links)
        if child.tail:
            yield child.tail


def _weight(el, skip: set[str] = _SKIP_TEXT, links: bool = True) -> int:
    return sum(text_weight(t) for t in _texts(el, skip, links))


def _hidden(el) -> bool:
    style = (el.get("style") or "").replace(" ", "").lower()
    return el.get("hidden") is not None or "display:none" in style


def _describe(el) -> str:
    if el.get("id"):
        return f"#{el.get('id')}"
    cls = (el.get("class") or "").split()
    return f"<{el.tag}{'.' + cls[0] if cls else ''}>"


def _main_region(body, weight=None):
    """The element holding the main content: <main>, role=main, the article, or the densest block."""
    for xp in (".//main", ".//*[@role='main']"):
        found = body.xpath(xp)
        if found:
            return found[0]
    articles = body.xpath(".//article")
    if len(articles) == 1:
        return articles[0]
    if articles:
        parents = {a.getparent() for a in articles}
        return parents.pop() if len(parents) == 1 else body
    # Else the deepest block holding most of the paragraph text.
    held: dict = {}
    total = 0
    for p in body.iter("p"):
        w = weight(p) if weight else _weight(p)
        total += w
        for anc in p.iterancestors():
            held[anc] = held.get(anc, 0) + w
    if not total:
        return body
    best, best_depth = body, -1
    for el, w in held.items():
        if el.tag in _CONTAINERS and w >= 0.6 * total:
            depth = sum(1 for _ in el.iterancestors())
            if depth > best_depth:
                best, best_depth = el, depth
    # One item of a list (a card among cards) is not the region: its list is.
    parent = best.getparent()
    while parent is not None and best is not body:
        same = [s for s in parent if s.tag == best.tag and s.get("class") == best.get("class")]
        if len(same) < 2:
            break
        best, parent = parent, parent.getparent()
    return best


def _main_flow(region) -> list:
    """The region and the siblings after it (comments, a second half) that are not page chrome."""
    flow = [region]
    for sib in region.itersiblings():
        if sib.tag == "footer":
            break  # what follows the page footer is page furniture (banners, SDK roots)
        if isinstance(sib.tag, str) and sib.tag not in _CHROME | _SKIP_TEXT and not _ad_named(sib):
            flow.append(sib)  # not a sidebar, an ad column or a related-links box
    return flow


def _measure(body) -> tuple[dict, set]:
    """Text weight of every element below body and the elements holding media, in one pass."""
    weights: dict = {}
    media: set = set()
    for el in reversed(list(body.iter())):  # children before their parents
        if not isinstance(el.tag, str):
            continue
        if el.tag in _SKIP_TEXT:
            weights[el] = 0
            continue
        w = text_weight(el.text) if el.text else 0
        has_media = el.tag in _MEDIA
        for child in el:
            if isinstance(child.tag, str):
                w += weights.get(child, 0)
                has_media = has_media or child in media
            if child.tail:
                w += text_weight(child.tail)
        weights[el] = w
        if has_media:
            media.add(el)
    return weights, media


def _ends_flow(el, page) -> bool:
    """True if no text follows el in the main content (where "the rest" of a page would go)."""
    flow = {id(f) for f in page.flow}
    node = el
    while True:
        top = id(node) in flow
        for sib in node.itersiblings():
            if top and id(sib) not in flow:
                continue
            if (
                isinstance(sib.tag, str)
                and sib.tag not in _SKIP_TEXT | _CHROME
                and page.weight(sib)
            ):
                return False
        if top or node.getparent() is None:
            return True
        node = node.getparent()


def _open_wrappers(body, weights: dict) -> None:
    """A form, header, aside, footer or nav that holds most of the page's text is a wrapper, not
    chrome (ASP.NET wraps every page in one <form>; an unclosed <header> swallows the article):
    it becomes a div, so the text a reader meets is measured as the main content."""
    total = weights.get(body, 0)
    if total < SHELL_TEXT_CHARS:
        return
    for el in body.iter("form", "header", "aside", "footer", "nav"):
        if weights.get(el, 0) >= 0.5 * total:
            el.tag = "div"


def _heading_only(el) -> bool:
    """A box whose only content is one heading: a section whose items have not arrived."""
    kids = [k for k in el if isinstance(k.tag, str) and k.tag not in _SKIP_TEXT]
    return (
        len(kids) == 1
        and kids[0].tag in ("h2", "h3", "h4", "h5", "h6")
        and not (el.text or "").strip()
        and not (kids[0].tail or "").strip()
    )


def is_loading_text(text: str) -> bool:
    t = _norm(text)
    return 0 < len(t) <= 60 and any(t.startswith(w) or f" {w}" in t for w in LOADING_TEXTS)


def _js_strings(source: str):
    for m in _STRING.finditer(source):
        raw = next(g for g in m.groups() if g is not None)
        raw = re.sub(r"\$\{[^}]*\}", " ", raw)
        try:
            yield json.loads(f'"{raw}"') if "\\" in raw else raw
        except ValueError:
            yield raw.replace("\\'", "'").replace('\\"', '"')


def _json_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _json_strings(v)


def _prose_missing(strings, visible: str) -> int:
    """Weight of sentences in prose-like strings that the visible page does not contain."""
    missing = 0
    for s in strings:
        # markup is markup also when escaped (&lt;div ...&gt;) or cut at a string's edge
        text = _TAG.sub(" ", html_lib.unescape(s))
        if len(_ATTRIBUTE.findall(text)) >= 2:
            continue  # attribute lists (id="..." style="..."): a piece of a tag, not prose
        if text_weight(text) < 40 or (len(text.split()) < 6 and not _CJK.search(text)):
            continue
        if "http://" in text or "https://" in text or "{" in text or "=>" in text:
            continue
        for chunk in _SENTENCE.split(text):
            if text_weight(chunk) >= 12 and _norm(chunk) not in visible:
                missing += text_weight(chunk)
    return missing


class _Page:
    """What the evidence checks need: parsed tree, scripts, text measures, main region."""

    def __init__(self, tree):
        self.tree = tree
        self.body = tree.find(".//body")
        if self.body is None:
            self.body = tree
        self.inline: list[str] = []
        self.inline_els: list = []
        self.external: list[str] = []
        self.islands: list[tuple[str, str]] = []
        for s in tree.iter("script"):
            kind = (s.get("type") or "").strip().lower()
            if kind in _JS_TYPES:
                if s.get("src"):
                    self.external.append(s.get("src"))
                elif (s.text or "").strip():
                    self.inline.append(s.text)
                    self.inline_els.append(s)
            elif kind in _DATA_TYPES:
                self.islands.append((s.get("id") or kind, s.text or ""))
        self.handlers = any(
            k.startswith("on") for el in tree.iter() if isinstance(el.tag, str) for k in el.attrib
        )
        self._weights, self._media = _measure(self.body)
        _open_wrappers(self.body, self._weights)
        self.region = _main_region(self.body, self.weight)
        self.flow = _main_flow(self.region)
        self.main_weight = (
            0  # inside a `hidden` wrapper: no text until a script shows it
            if any(unrendered(a) for a in self.region.iterancestors())
            else _weight(self.region, _SKIP_TEXT | _CHROME, links=False)
        )
        if self.main_weight < SHELL_TEXT_CHARS and self.region is not self.body:
            # The guess missed the page's text (a teaser box, an empty <main> beside the real
            # article): a reader meets the body's prose, so that is the main content.
            body_weight = _weight(self.body, _SKIP_TEXT | _CHROME, links=False)
            if body_weight >= 2 * SHELL_TEXT_CHARS:
                self.region, self.main_weight = self.body, body_weight
                self.flow = [self.body]
        self.visible = _norm(" ".join(_texts(self.body)) + " " + (tree.findtext(".//title") or ""))

    @property
    def markup_kb(self) -> float:
        return len(etree.tostring(self.tree)) / 1024 if self.main_weight < SHELL_TEXT_CHARS else 0.0

    @property
    def runs_scripts(self) -> bool:
        return bool(self.inline or self.external or self.handlers)

    def in_flow(self, el) -> bool:
        return any(el is f or f in el.iterancestors() for f in self.flow)

    def weight(self, el) -> int:
        """Text weight of el (scripts, styles, noscript and templates left out)."""
        w = self._weights.get(el)
        return _weight(el) if w is None else w

    def empty(self, el) -> bool:
        """No text and no media below (a loading note counts as empty: scripts replace it)."""
        if el in self._media:
            return False
        w = self.weight(el)
        return w == 0 or (w <= 60 and is_loading_text(" ".join(_texts(el))))

    def flow_elements(self):
        for f in self.flow:
            yield from f.iter()

    def scroll_triggers(self):
        """Elements that fetch more of the page when scrolled into view (htmx's hx-get with
        hx-trigger "revealed" or "intersect", also spelled data-hx-*): a library's sentinel."""
        for el in _HX_GETS(self.tree):
            if _HX_SCROLL.search(_hx(el, "trigger")):
                yield el


_HX_GETS = etree.XPath("//@hx-get/.. | //@data-hx-get/..")  # attribute tests: the cheap way
_HX_SCROLL = re.compile(r"\b(revealed|intersect)\b")


def _hx(el, name: str) -> str:
    return el.get(f"hx-{name}") or el.get(f"data-hx-{name}") or ""


def _refs(source: str) -> tuple[set[str], set[str], set[str]]:
    """Ids, classes and tag names an inline script looks up."""
    ids, classes, tags = set(), set(), set()
    for m in _REFS.finditer(source):
        by_id, by_class, sel, jq = m.groups()
        if by_id:
            ids.add(by_id)
        if by_class:
            classes.update(by_class.split())
        for s in (sel, jq):
            if s:
                ids.update(re.findall(r"#([\w-]+)", s))
                classes.update(re.findall(r"\.([\w-]+)", s))
                tags.update(t for t in re.findall(r"(?:^|[\s>,])([a-z][\w-]*)", s))
    return ids, classes, tags


def _fetches_content(source: str) -> bool:
    n = len(_FETCH.findall(source))
    return n > len(_WRITE_METHOD.findall(source))


def _script_evidence(page: _Page) -> tuple[list[str], list[str], set[int]]:
    """(strong, weak) evidence from inline scripts; also the ids of empty elements they write into."""
    found: list[str] = []
    weak: list[str] = []
    written: set[int] = set()
    little_text = page.main_weight < SHELL_TEXT_CHARS
    empties = [
        el
        for el in page.body.iter()
        if isinstance(el.tag, str) and (el.tag in _CONTAINERS or "-" in el.tag) and page.empty(el)
    ]
    for src, el in zip(page.inline, page.inline_els, strict=True):
        if _DOC_WRITE.search(src) and (little_text or page.in_flow(el)):
            # document.write runs while the page is parsed; real pages write ad slots, script
            # tags, dates. Only prose the page does not show is missing main content.
            written_prose = _prose_missing(
                [t for t in _js_strings(src) if "<script" not in t.lower()], page.visible
            )
            if written_prose >= MISSING_PROSE_CHARS:
                found.append(f"document.write of {written_prose} chars of text")
        if not _TEXT_WRITE.search(src):
            continue
        ids, classes, tags = _refs(src)
        targets = [
            el
            for el in empties
            if el.get("id") in ids
            or set((el.get("class") or "").split()) & classes
            or (el.tag in tags and el.tag in ("main", "article", "section"))
        ]
        written.update(id(el) for el in targets)
        if _SCROLL.search(src) and _fetches_content(src) and not _USER_INPUT.search(src):
            # A feed that loads more as the reader scrolls: the script watches a sentinel or
            # the scroll position and appends to a feed of the main content.
            feeds = [
                el
                for el in page.flow_elements()
                if isinstance(el.tag, str)
                and (el.get("id") in ids or set((el.get("class") or "").split()) & classes)
                and (_SENTINEL_NAME.search(_names(el)) or _content_named(el))
            ]
            if feeds or little_text:
                where = f" ({_describe(feeds[0])})" if feeds else ""
                found.append(f"infinite scroll: inline script loads more on scroll{where}")
        # Writes only into boxes outside the main content (a header search, a footer form) or
        # only on typing and submitting are no evidence of missing main content.
        outside = targets and page.main_weight >= EMPTY_MAIN_CHARS
        outside = outside and not any(page.in_flow(el) for el in targets)
        user_only = bool(_USER_INPUT.search(src)) or outside
        ad_only = targets and all(
            _ad_named(el, aux=False)
            or not (
                _content_named(el, comments=True)
                or el.tag in ("main", "article", "section")
                or little_text
                or (page.in_flow(el) and _ends_flow(el, page))
            )
            for el in targets
        )
        if _fetches_content(src) and not user_only and not ad_only:
            where = f" into {_describe(targets[0])}" if targets else " into the page"
            if targets or little_text:
                found.append(f"inline script fetches data and writes it{where}")
            else:  # real pages fetch for widgets, consent, ads: only a probe can tell
                weak.append(f"inline script fetches data and writes it{where}")
        elif targets and not user_only and not ad_only:
            when = " after a timer" if _TIMER.search(src) else ""
            found.append(f"inline script writes text into empty {_describe(targets[0])}{when}")
        if _SHADOW.search(src):
            found.append("shadow dom: inline script attaches a shadow root")
    return list(dict.fromkeys(found)), list(dict.fromkeys(weak)), written


_MEDIA_FILE = re.compile(r"\.(jpe?g|png|gif|webp|avif|svg|mp4|webm|m3u8|mp3|pdf)(\?|#|$)", re.I)


def _source_attr(el) -> str:
    """A data-* attribute of el whose value is a URL of a non-media resource (data-src="/api/x"):
    the box says where a script will fetch its content from."""
    for k, v in el.attrib.items():
        v = v.strip()
        if k.startswith("data-") and v.startswith(("/", "http://", "https://", "./")):
            if not _MEDIA_FILE.search(v):
                return k
    return ""


def _own_module(tag: str, external: list[str]) -> bool:
    """True if one of the page's script files of its own origin (a relative URL) is named for the
    custom element `tag` (/js/components/x-river.3f9a1c.js): a component build's file."""
    for src in external:
        src = src.strip().lower()
        if src.startswith(("http:", "https:", "//")):
            continue  # another origin's, most likely (a vendor's widget)
        name = src.split("?")[0].rsplit("/", 1)[-1]
        if re.match(rf"{re.escape(tag)}([.-][\w.-]*)?\.m?js$", name):
            return True
    return False


def _names(el) -> str:
    """id, classes, tag and data-attribute names: what a page calls an element."""
    data = " ".join(k[5:] for k in el.attrib if k.startswith("data-"))
    return f"{el.get('id') or ''} {el.get('class') or ''} {el.tag} {data}".lower()


# Names of boxes where a page's content goes (a feed, the rest of an article, comments, an app).
_CONTENT_NAME = re.compile(
    r"(^|[-_ .])(app|root|content|article|story|stories|body|text|feed|stream|list|items?|posts?|"
    r"results?|reviews?|rest|continued|part|timeline|entries|entry|cards|reader|mount|spa|"
    r"chapter|__next|__nuxt)($|[-_ .\d])"
)
# Names of boxes that hold no main content: ads, trackers, social and media widgets, consent.
_AD_NAME = re.compile(
    r"(^|[-_ .])(ad|ads|adv|advert\w*|adslot|adspot|anzeige|werbung|banner|gpt|dfp|sponsor\w*|"
    r"promo\w*|taboola|outbrain|plista|teads|billboard|skyscraper|leaderboard|rectangle|share|"
    r"sharing|social|newsletter|cookie\w*|consent|gdpr|tracking|pixel|widget|player|video|audio|"
    r"map|maps|chart|fb|twitter|tweet|instagram|youtube|facebook|disqus\w*|search|menu|nav|login|"
    r"cart|modal|dialog|popup|toast|tooltip|icon|logo|rating|gallery|slider|carousel|weather|"
    r"ticker|countdown|clearfix|clear|spacer|sticky|overlay|subscribe|paywall|notice|"
    r"progress\w*|paid\w*|analytics|button|btn|tile|tray|img|image|picture|photo)"
    r"($|[-_ .\d])"
)
# Boxes beside the main content: what an empty one of them misses is not the page's main text.
_AUX_NAME = re.compile(
    r"(^|[-_ .])(sidebar|side|secondary|related|recirc\w*|recommend\w*|teaser|aside|comments?|discussion|"
    r"respond|reply|replies|count|breadcrumbs?|tags?|author|meta|state)($|[-_ .\d])"
)
# An element a feed watches (IntersectionObserver) or scrolls to, at the end of its items.
_SENTINEL_NAME = re.compile(
    r"sentinel|infinite|load-?more|loadmore|feed-?end|end-of-feed|scroll-?trigger|observer|"
    r"pagination-?trigger|next-?page|scroll-?anchor|end-?marker|bottom-?marker|"
    r"load-?trigger|more-?trigger|page-?end|list-?end",
    re.I,
)


# A custom element whose name says it holds the text (not a button, tile or image).
_CUSTOM_CONTENT = re.compile(
    r"(^|-)(article|story|body|text|content|post|entry|feed|reader|chapter|reviews?|timeline|"
    r"stream|posts|list|items)(-|$)"
)


# Mount points of consent managers, analytics and comment plugins (vendor names; their ids join
# words with underscores or none, so they are matched anywhere in the names).
_VENDOR_NAME = re.compile(
    r"usercentrics|onetrust|didomi|cookiebot|sp_message|qc-cmp|borlabs|truste|iubenda|"
    r"cookieyes|klaro|parsely|chartbeat|cxense|(^|[-_ .])cx-|wpdiscuz"
)


def _ad_named(el, aux: bool = True) -> bool:
    names = _names(el)
    return bool(
        _AD_NAME.search(names) or _VENDOR_NAME.search(names) or (aux and _AUX_NAME.search(names))
    )


def _content_named(el, comments: bool = False) -> bool:
    """Named for content; with `comments`, a comment box counts (a script filling it adds text)."""
    names = _names(el)
    if comments and re.search(r"(^|[-_ .])comments?($|[-_ .\d])", names):
        return not _AD_NAME.search(names)
    return bool(_CONTENT_NAME.search(names)) and not _ad_named(el)


# Boxes a metered or paid article's rest arrives in: named like ads' boxes are, but what loads
# into them is the article.
_PAYWALL_NAME = re.compile(
    r"(^|[-_ .])(paywall|paid\w*|premium|subscribe\w*|subscription|metered|regwall|notice|hint)"
    r"($|[-_ .\d])"
)
# A loading note that says what it loads is not the article: an ad, a comment section, a video.
_AD_TEXT = re.compile(
    r"\b(ads?|advert\w*|advertisement|anzeige|werbung|publicit\w*|publicidad|pubblicit\w*|"
    r"reklam\w*|реклам\w*|comments?|kommentare|commentaires|comentarios|video|player|map)\b|"
    r"広告|广告|廣告|광고|コメント|评论|評論|댓글"
)


def _placeholders(page: _Page) -> list[tuple[str, object]]:
    found = []
    for el in page.flow_elements():
        if not isinstance(el.tag, str) or el.tag in _SKIP_TEXT:
            continue
        if el.get("aria-busy") == "true":
            what = f"aria-busy {_describe(el)}"
        elif el.get("role") == "progressbar" or el.tag == "progress":
            what = f"progress indicator {_describe(el)}"
        elif (
            _PLACEHOLDER_CLASS.search(el.get("class") or "")
            and not _NOT_LOADING_CLASS.search(el.get("class") or "")
            and page.weight(el) == 0
        ):
            what = f"{_PLACEHOLDER_CLASS.search(el.get('class')).group(2).lower()} {_describe(el)}"
        elif len(el) == 0 and el.text and len(el.text) <= 80 and is_loading_text(el.text):
            what = f'"{" ".join(el.text.split())}"'
        else:
            continue
        if _hidden(el) or any(a.tag in ("form", "button") for a in el.iterancestors()):
            continue
        if what.startswith('"'):
            # A reader sees "Loading the full story…" whatever the note's class says (a
            # "paywall-hint", a "notice"); an ad's, a widget's or the comments' box around it,
            # or a note that names one ("Anzeige wird geladen"), is still theirs.
            if _AD_TEXT.search(_norm(el.text)) or any(
                _ad_named(a) and not _PAYWALL_NAME.search(_names(a))
                for a in el.iterancestors()
                if page.in_flow(a)
            ):
                continue
        elif _ad_named(el) or any(_ad_named(a) for a in el.iterancestors() if page.in_flow(a)):
            continue  # a widget's, an ad's or the comments' own loader
        if any(
            a.get("role") in ("dialog", "alertdialog") or a.get("aria-modal") == "true"
            for a in el.iterancestors()
        ):
            continue  # a lightbox's or a modal's loader (PhotoSwipe's .pswp): not the page's text
        found.append((what, el))
    return found


def _inside_main(el, page: _Page) -> bool:
    """True if a <nav>, <header> or <footer> is a section's own, not the site's: it sits in a
    <main>, <article> or <section> of the main content (a list's pager, an article's footer)."""
    return any(
        a.tag in ("main", "article", "section") and page.in_flow(a) for a in el.iterancestors()
    )


def _load_more_controls(page: _Page) -> list[tuple[str, object, bool]]:
    """Controls a reader would click to get more of the page: a button, an <a> that loads rather
    than navigates, a role=button, labelled "load more" (or "mehr laden", "voir plus", ...);
    each with whether only its words say so (`_promise` 1: "Ältere Beiträge anzeigen")."""
    out = []
    for text, el in _controls(page):
        if promise := _promise(text):
            out.append((text, el, promise == 1))
        elif not re.sub(r"[\W\d_]+", "", text) and _MORE_NAME.search(_names(el)):
            out.append((f"unlabelled {_describe(el)}", el, False))  # an icon-only "load more"
    return out


def _controls(page: _Page):
    """(label, element) of every control that acts on this page rather than navigating away: a
    button, an <a> without a target (or to '#', 'javascript:'), a role=button; outside the site's
    forms, menus, header and footer; visible; not an expander over text already in the page."""
    for el in page.body.iter("button", "a", "span", "div", "li", "input"):
        if el.tag in ("span", "div", "li") and el.get("role") != "button":
            continue
        if el.tag == "input" and (el.get("type") or "").lower() not in ("button", "submit"):
            continue
        href = (el.get("href") or "").strip()
        if el.tag == "a" and href and not href.startswith(("#", "javascript:")):
            continue  # a real link: it navigates, it loads nothing into this page
        if any(
            a.tag == "form" or (a.tag in ("nav", "header", "footer") and not _inside_main(a, page))
            for a in el.iterancestors()
        ):
            continue  # the site's menus and forms; a list's own <nav>/<footer> pager counts
        if _hidden(el):
            continue
        controls = el.get("aria-controls")
        if controls:
            target = next((t for t in page.tree.iter() if t.get("id") == controls), None)
            if target is not None and page.weight(target) > 0:
                continue  # an expander over text already in the page
        text = " ".join((el.get("value") or "" if el.tag == "input" else el.text_content()).split())
        yield (text or el.get("aria-label") or el.get("title") or "").lower(), el


def _is_item(el) -> bool:
    """A feed's item: text and a link to what it lists (a teaser, a card, a result), which an
    article's paragraphs mostly are not."""
    return (
        isinstance(el.tag, str)
        and _weight(el) > 0
        and (el.tag == "a" and bool(el.get("href")) or el.find(".//a[@href]") is not None)
    )


def _items(el) -> int:
    """How many repeated items (`_is_item`) el holds, of one tag and class: cards, teasers,
    list items; looking through wrappers of a single child."""
    for _ in range(3):
        kids = [c for c in el if isinstance(c.tag, str) and c.tag not in _SKIP_TEXT]
        if len(kids) == 1:
            el = kids[0]
            continue
        shapes = Counter((c.tag, c.get("class") or "") for c in kids if _is_item(c))
        return shapes.most_common(1)[0][1] if shapes else 0
    return 0


def _feed_end_controls(page: _Page) -> list[tuple[str, object]]:
    """Controls under a feed, whatever their language: one control (see `_controls`) with a short
    worded label where the main content ends, right after a run of 3+ repeated items, on a page
    with script files of its own origin: what a reader meets at the end of a list a click extends
    ("Mehr Beiträge", "次の記事を読み込む", "Zobrazit další"). A carousel's or a pager's controls
    come several together; a real link to the next page navigates and is no control."""
    own = [s for s in page.external if not s.strip().lower().startswith(("http:", "https:", "//"))]
    if not own:
        return []
    pairs = list(_controls(page))
    every = {id(el) for _, el in pairs}
    out = []
    for text, el in pairs:
        words = re.sub(r"[\W\d_]+", " ", text).split()
        if not words or len(text) > 40 or len(words) > 5 or len("".join(words)) < 3:
            continue  # no words ('↩', '»', an icon): a direction, not a promise
        if not page.in_flow(el) or not _ends_flow(el, page):
            continue
        if any(_ad_named(a) for a in el.iterancestors() if page.in_flow(a)):
            continue  # a widget's, a gallery's or the comments' own
        node, feed = el, 0
        for _ in range(3):  # the control, or a wrapper it is alone in
            prev = node.getprevious()
            while prev is not None and (not isinstance(prev.tag, str) or prev.tag in _SKIP_TEXT):
                prev = prev.getprevious()
            if prev is not None:
                run, sib = 0, prev  # or the control as the last of the items themselves
                while sib is not None and isinstance(sib.tag, str) and sib.tag == prev.tag:
                    run += (sib.get("class") or "") == (prev.get("class") or "") and _is_item(sib)
                    sib = sib.getprevious()
                feed = max(_items(prev), run)
                break
            node = node.getparent()
            if node is None or node is page.region:
                break
        box = el.getparent()
        if feed < 3 or (
            box is not None and any(c is not el and id(c) in every for c in box.iter())
        ):
            continue  # no feed above it, or one of several controls (carousel arrows, a pager)
        out.append((text, el))
    return out


def _evidence(page: _Page) -> tuple[list[str], list[str], list[str]]:
    """(strong, weak, supporting) evidence of script-made main content.

    Strong evidence is what a reader of the page would meet: (almost) no main text, a control
    that promises more content, a feed that ends in a sentinel or a spinner, an empty box named
    for content where the main content ends, an empty custom element (a shadow-root host) that
    holds the article, an inline script that writes into such a box. Boxes named for ads,
    widgets and trackers are no evidence; prose in scripts or data blobs counts only where the
    page has a place for it (little text, or an empty content box).
    """
    strong: list[str] = []
    weak: list[str] = []
    places: list[str] = []  # weak places for content: an upgrade target for missing prose
    support: list[str] = []
    kb = page.markup_kb
    if page.main_weight < EMPTY_MAIN_CHARS:
        strong.append(
            f"app shell: {page.main_weight} chars of text in the main content "
            f"({_describe(page.region)}), {kb:.1f} KB of markup"
        )
    elif page.main_weight < SHELL_TEXT_CHARS:
        weak.append(
            f"little text: {page.main_weight} chars in the main content, {kb:.1f} KB of markup"
        )
    little_text = page.main_weight < SHELL_TEXT_CHARS
    script_found, script_weak, written = _script_evidence(page)
    strong += script_found
    weak += script_weak
    scripts = page.runs_scripts
    # Empty boxes in the main content that no inline script explains: external scripts may fill them.
    explained = set(written)
    quoted = " ".join(page.inline)
    for el in page.flow_elements():
        if not isinstance(el.tag, str) or id(el) in explained or el is page.region:
            continue
        custom = "-" in el.tag
        if not (custom or el.tag in _CONTAINERS) or not page.empty(el):
            continue
        names = _names(el)
        sentinel = _SENTINEL_NAME.search(names) and "lazy" not in names
        if sentinel and scripts and not _ad_named(el) and _ends_flow(el, page):
            strong.append(f"feed ends in a sentinel {_describe(el)}")
        elif _ad_named(el):
            continue
        elif custom:
            if little_text or (_content_named(el) and _CUSTOM_CONTENT.search(el.tag)):
                strong.append(f"shadow dom: empty custom element <{el.tag}> in the main content")
            elif _own_module(el.tag, page.external) and _ends_flow(el, page):
                # Where the main content ends, an element defined by a script file of the page's
                # own (named for it, as component builds name them; its name need not say what
                # it holds: <x-river>) is where the rest of it goes.
                strong.append(
                    f"shadow dom: empty custom element <{el.tag}> ends the main content, "
                    "with external scripts"
                )
            else:
                places.append(f"empty custom element <{el.tag}> mid-content")
        elif not (_content_named(el) or (little_text and el.get("id"))):
            continue  # an unnamed box in a page full of text: a widget's, most likely
        elif el.get("id") and re.search(rf"""['"`]#?{re.escape(el.get("id"))}['"`]""", quoted):
            continue  # an inline script handles it and writes no text (a widget)
        elif page.external and el.get("id") and _ends_flow(el, page):
            strong.append(
                f"empty container {_describe(el)} ends the main content, with external scripts"
            )
        elif (
            page.external
            and _CONTENT_NAME.search(f"{el.get('id') or ''} {el.get('class') or ''}".lower())
            and _ends_flow(el, page)
            and _source_attr(el)
        ):
            # No id, but a class naming content and a source (data-src="/api/..."): where the
            # article's rest or a feed's items will come from.
            strong.append(
                f"empty container {_describe(el)} ends the main content and names its source "
                f"({_source_attr(el)}), with external scripts"
            )
        elif page.external:
            places.append(f"empty box {_describe(el)} in the main content, with external scripts")
    for el in page.scroll_triggers():
        if page.in_flow(el) and _ends_flow(el, page) and not _ad_named(el):
            strong.append(f"feed ends in a sentinel {_describe(el)} (loads {_hx(el, 'get')})")
            break
    if page.external:
        for el in page.flow_elements():
            if isinstance(el.tag, str) and el.tag in _CONTAINERS and _heading_only(el):
                if not _ad_named(el):
                    places.append(
                        f"heading with nothing under it in {_describe(el)}, with external scripts"
                    )
                    break
    if scripts:
        holders = _placeholders(page)
        ending = [d for d, el in holders if el.get("aria-busy") == "true" or _ends_flow(el, page)]
        if ending or (holders and little_text):
            strong.append(
                f"loading placeholder ({', '.join((ending or [d for d, _ in holders])[:3])})"
            )
        elif holders:
            places.append(
                f"loading placeholder mid-content ({', '.join(d for d, _ in holders[:3])})"
            )
    prose: list[str] = []
    strings = [s for src in page.inline for s in _js_strings(src)]
    missing = _prose_missing(strings, page.visible) if page.inline else 0
    if missing >= MISSING_PROSE_CHARS:
        prose.append(f"scripts carry {missing} chars of text the page does not show")
    for name, blob in page.islands:
        try:
            values = list(_json_strings(json.loads(blob)))
        except ValueError:
            values = list(_js_strings(blob)) or [blob]
        missing = _prose_missing(values, page.visible)
        if missing >= MISSING_PROSE_CHARS and scripts:
            prose.append(
                f"data blob #{name} carries {missing} chars of text the page does not show"
            )
    templates = [" ".join(_texts(t, set())) for t in page.body.iter("template")]
    if templates and page.inline:
        missing = _prose_missing(templates, page.visible)
        if missing >= MISSING_PROSE_CHARS:
            prose.append(f"template carries {missing} chars of text a script shows")
    controls = _load_more_controls(page)
    ending = _feed_end_controls(page)
    if ending and scripts:
        strong.append(f"control under a feed ({ending[0][0]})")
    if controls and scripts:
        # In the main content (not beside it, under related links or comments), or on a page
        # with little text: what it loads is the page's own content. A label only its words
        # make a pager ("Ältere Beiträge") counts where the main content ends; mid-content it is
        # as likely a section's own control.
        main, mid = [], []
        for t, el, worded in controls:
            if not (
                little_text
                or (
                    page.in_flow(el)
                    and not any(
                        _ad_named(a)
                        for a in el.iterancestors()
                        if page.in_flow(a) and a.tag not in ("nav", "header", "footer")
                    )
                )
            ):
                continue
            if little_text or not worded or _ends_flow(el, page):
                main.append(t)
            else:
                mid.append(t)
        if main:
            strong.append(f"load-more control ({main[0]})")
        elif mid:
            weak.append(f"load-more control mid-content ({mid[0]})")
        else:
            weak.append(f"load-more control beside the main content ({controls[0][0]})")
    if prose and little_text:
        strong += prose  # text the page does not show, and little text where it would go
    else:
        weak += places + prose
    noscript = " ".join(" ".join(n.itertext()) for n in page.tree.iter("noscript")).strip()
    if noscript and scripts:
        support.append("noscript hint")
    return strong, weak, support


_SHADOW_TEMPLATES = etree.XPath("//template[@shadowrootmode or @shadowroot]")


def open_shadow_templates(tree):
    """The tree with its server-rendered (declarative) shadow roots shown as a browser shows
    them: a `<template shadowrootmode>` is the content of its host, not an inert template."""
    for template in _SHADOW_TEMPLATES(tree):
        template.tag = "div"
        for name in ("shadowrootmode", "shadowroot"):
            template.attrib.pop(name, None)
    return tree


# The crawl's default product tokens (crawlers.crawl.config.CrawlConfig agent, training_agent):
# a <meta> named for either states robots directives for us, as name=robots does.
ROBOTS_TOKENS = ("RefineryBot", "RefineryBot-Extended")
# Where a script writes a <meta>: creates one, writes its markup (innerHTML, insertAdjacentHTML,
# document.write, jQuery; also escaped as \x3c / \u003c), or looks one up to set its content.
_META_WRITE = re.compile(
    r"""createElement(?:NS)?\s*\([^)]{0,80}?['"`]meta['"`]\s*\)|(?:<|\\x3c|\\u003c)meta\b|"""
    r"""['"`][^'"`\n]{0,40}\bmeta\s*\[|getElementsBy(?:TagName|Name)\s*\(""",
    re.I,
)
# How near a <meta> write a robots word must stand to be what the script writes into it.
ROBOTS_WRITE_WINDOW = 300


@lru_cache(maxsize=16)
def _robots_words(tokens: tuple[str, ...]) -> re.Pattern:
    """Words that make a <meta> a robots directive for us: its name (robots, our tokens) or a
    directive it states (noai, noimageai, noindex)."""
    names = "".join(f"|{re.escape(t)}" for t in sorted(filter(None, tokens), key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(robots|noai|noimageai|noindex{names})(?!\w)", re.I)


def _robots_writes(page: _Page, tokens: tuple[str, ...]) -> list[str]:
    """The robots words (`_robots_words`) that stand within ROBOTS_WRITE_WINDOW characters of a
    <meta> write (`_META_WRITE`) in an inline script or an event handler attribute: the page's
    own scripts may write robots directives that its HTML does not state."""
    sources = list(page.inline)
    if page.handlers:
        sources += [
            v
            for el in page.tree.iter()
            if isinstance(el.tag, str)
            for k, v in el.attrib.items()
            if k.startswith("on")
        ]
    words = _robots_words(tokens)
    found: list[str] = []
    for src in sources:
        for m in _META_WRITE.finditer(src):
            window = src[max(0, m.start() - ROBOTS_WRITE_WINDOW) : m.end() + ROBOTS_WRITE_WINDOW]
            found += [w.lower() for w in words.findall(window)]
    return list(dict.fromkeys(found))


_VERSIONED = re.compile(r"[^/._~-]*\d[^/._~-]*")  # a path piece with a digit: a hash, a version


def _script_family(page: _Page) -> str:
    """What scripts the page runs, alike for the pages of one template: its external scripts'
    addresses without scheme, query and the pieces that carry a digit (build hashes, versions:
    main.8f3c2a1e.js is main.~.js), sorted; 'inline' or 'handlers' for a page that runs only
    inline scripts or only event handler attributes; '' for a page that runs none."""
    srcs = set()
    for src in page.external:
        src = src.strip().split("#", 1)[0].split("?", 1)[0].lower()
        src = re.sub(r"^https?:", "", src)
        srcs.add(_VERSIONED.sub("~", src))
    if srcs:
        return " ".join(sorted(srcs))
    return "inline" if page.inline else "handlers" if page.handlers else ""


def needs_render(html: str, tokens: tuple[str, ...] = ROBOTS_TOKENS) -> RenderDecision:
    """Decide from static HTML; the reason names every piece of evidence, strongest first.

    `tokens` are the crawl's product tokens (crawl, training): a <meta> an inline script writes
    under one of their names, as under name=robots, is robots directives only a render shows."""
    try:
        tree = open_shadow_templates(lxml_html.fromstring(html))
    except (etree.ParserError, ValueError):
        return RenderDecision(False, "static: unparseable html")
    page = _Page(tree)
    if not page.runs_scripts and not page.islands:
        return RenderDecision(False, f"static: no scripts, {page.main_weight} chars of text")
    strong, weak, support = _evidence(page)
    if not page.runs_scripts:  # a data blob alone renders nothing unless its page is empty
        strong = [s for s in strong if s.startswith("app shell")]
        weak = []
    scripts = _script_family(page)
    robots = _robots_writes(page, tokens) if page.runs_scripts else []
    if robots:  # consent before content: what the script writes holds for the page
        strong.insert(
            0,
            f"consent: an inline script writes a <meta> naming {', '.join(robots)} "
            "(robots directives only a render shows)",
        )
    if strong:
        ev = tuple(strong + weak + support)
        return RenderDecision(True, "; ".join(ev), evidence=ev, scripts=scripts)
    if weak:
        ev = tuple(weak + support)
        return RenderDecision(
            False,
            f"static, ambiguous: {'; '.join(ev)}",
            ambiguous=True,
            evidence=ev,
            scripts=scripts,
        )
    return RenderDecision(
        False,
        f"static: {page.main_weight} chars of text, no evidence of script-made content",
        scripts=scripts,
    )
