"""Which URL to fetch next, and why: language, topic and path signals, plus trap detection.

Each signal is stored with the URL in the frontier so a user can see why it was chosen:
- lang_signal: share of target-language pages seen so far on the host (smoothed with a prior,
  or the filter stage's per-host language dataset when given);
- topic / topic_signal: a keyword-centroid classifier over URL tokens, anchor text and page text
  (~10 topics), with per-topic quotas applied at scheduling time;
- path_signal: URL-shape heuristics (archives, tags, pagination, session ids, calendars and deep
  or query-heavy URLs down; article-like slugs, dates and ids up).

Trap detection (calendar walks, multiplying parameters, ever-deepening paths, near-identical
page runs) lives in `crawlers.crawl.traps` and is re-exported here as `TrapDetector`.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from common.words import CJK_CLASS
from crawlers.crawl.canon import host_of
from crawlers.crawl.traps import TrapDetector, calendar_family

__all__ = [
    "TOPICS",
    "TOPIC_KEYWORDS",
    "LanguageTracker",
    "TrapDetector",
    "Weights",
    "classify_topic",
    "combine",
    "path_pattern",
    "path_signal",
    "queued_row",
    "tokens_of",
    "topic_quota_penalty",
]

# ~10 topics, each a keyword centroid; a URL/page is scored by keyword hits. TOPICS holds the
# English keywords; TOPIC_KEYWORDS adds German, French, Spanish, Italian, Portuguese, Dutch,
# Russian, Chinese and Japanese (a site in those languages is not all "other", so the per-topic
# quotas still spread its crawl). Words that mean something else in another language are left
# out (es "partido" is a party and a match; fr "art" is German "kind"; es/it "studio"/"estudio").
TOPICS: dict[str, tuple[str, ...]] = {
    "science": tuple(
        "science research physics chemistry biology experiment study molecule species astronomy climate scientist theory cell".split()
    ),
    "technology": tuple(
        "software computer programming code python linux data algorithm internet device app digital network tech".split()
    ),
    "health": tuple(
        "health medical medicine doctor disease patient hospital nutrition symptom treatment vaccine fitness clinic virus pandemic covid coronavirus infection".split()
    ),
    "sports": tuple(
        "sport sports football soccer match team league player tennis olympic score championship coach goal".split()
    ),
    "politics": tuple(
        "politics election government minister parliament policy vote law president senate party campaign".split()
    ),
    "business": tuple(
        "business market finance economy stock company bank price investment trade startup revenue money".split()
    ),
    "culture": tuple(
        "music film movie art book novel museum theatre painting culture poetry album history".split()
    ),
    "travel": tuple(
        "travel trip hotel city beach tour flight destination island mountain guide journey".split()
    ),
    "food": tuple(
        "food recipe cooking bread cheese kitchen dish restaurant wine cake soup ingredient bake".split()
    ),
    "education": tuple(
        "school education student teacher university course lesson learn exam tutorial class homework".split()
    ),
}
_CJK_RANGE = re.compile(f"[{CJK_CLASS}]")
_OTHER_LANGUAGES: dict[str, str] = {
    "science": """
        wissenschaft forschung physik chemie biologie studie molekül astronomie klima
        wissenschaftler forscher theorie zelle
        sciences recherche physique chimie expérience étude molécule climat scientifique
        scientifiques chercheurs cellule
        ciencia ciencias investigación física química biología experimento estudio molécula
        astronomía científico científicos célula
        scienza ricerca fisica chimica esperimento molecola scienziato scienziati cellula
        ciência pesquisa estudo cientista cientistas
        wetenschap onderzoek natuurkunde scheikunde molecuul sterrenkunde klimaat wetenschapper
        onderzoekers
        наука исследование исследования физика химия биология эксперимент молекула астрономия
        климат учёные ученые клетка
        科学 研究 物理 化学 生物 实验 天文 气候 科学家 细胞 分子 実験 気候 科学者 細胞
    """,
    "technology": """
        technik technologie programmierung daten algorithmus netzwerk digitalisierung smartphone
        informatique logiciel ordinateur programmation données algorithme numérique réseau
        tecnología informática ordenador computadora programación datos algoritmo
        tecnologia informatica programmazione dati digitale rete
        computador programação dados
        programmeren gegevens algoritme digitaal netwerk
        технологии технология компьютер программирование программа данные алгоритм интернет
        цифровой сеть
        科技 技术 计算机 电脑 软件 编程 数据 算法 互联网 网络 手机
        技術 テクノロジー コンピュータ ソフトウェア プログラミング データ アルゴリズム インターネット
        ネットワーク デジタル スマホ
    """,
    "health": """
        gesundheit medizin arzt ärzte krankheit patienten krankenhaus klinik ernährung symptome
        behandlung impfung therapie pandemie impfstoff infektion
        santé médecine médecin maladie patients hôpital clinique symptômes traitement vaccin
        pandémie
        salud medicina médico enfermedad paciente pacientes clínica nutrición síntomas
        tratamiento vacuna pandemia
        salute medico malattia pazienti ospedale clinica nutrizione sintomi trattamento vaccino
        saúde doença nutrição sintomas tratamento vacina
        gezondheid geneeskunde arts ziekte patiënt patiënten ziekenhuis kliniek voeding
        symptomen behandeling
        здоровье медицина врач болезнь пациент пациентов больница клиника питание симптомы
        лечение вакцина пандемия коронавирус
        健康 医学 医生 疾病 患者 病人 医院 营养 症状 治疗 疫苗 医師 病気 病院 栄養 治療 ワクチン
    """,
    "sports": """
        fußball fussball mannschaft liga bundesliga spieler olympia meisterschaft handball
        équipe ligue joueur joueurs olympique championnat entraîneur rugby
        deporte deportes fútbol equipo jugador jugadores tenis olímpico campeonato entrenador
        calcio partita squadra campionato giocatore giocatori olimpiadi allenatore
        esporte esportes desporto futebol equipe equipa jogador jogadores tênis treinador
        voetbal wedstrijd ploeg competitie speler spelers kampioenschap
        спорт футбол матч команда лига игрок игроки теннис чемпионат тренер
        体育 足球 篮球 比赛 球队 联赛 球员 网球 奥运 教练
        スポーツ サッカー 野球 試合 チーム リーグ 選手 テニス オリンピック 監督
    """,
    "politics": """
        politik wahl wahlen regierung ministerin parlament bundestag gesetz präsident partei
        kanzler abstimmung
        politique élection élections gouvernement ministre parlement président sénat parti
        député
        política elecciones elección gobierno ministro parlamento congreso presidente senado
        votación
        politica elezioni governo legge presidente senato partito
        eleição eleições congresso
        politiek verkiezingen regering partij kabinet
        политика выборы правительство министр парламент закон президент сенат партия
        голосование депутат
        政治 选举 政府 部长 议会 法律 总统 政党 投票 国会 選挙 大臣 議会 大統領 首相
    """,
    "business": """
        wirtschaft markt finanzen börse aktien unternehmen preis preise investition handel
        umsatz geld
        économie marché finances bourse entreprise entreprises banque investissement commerce
        argent
        economía mercado finanzas empresa empresas banco precio precios inversión comercio
        dinero
        economia mercato borsa azienda aziende banca prezzo prezzi investimenti soldi
        finanças preço preços investimento comércio dinheiro
        economie financiën beurs bedrijf bedrijven prijs prijzen investering
        экономика рынок финансы биржа акции компания банк цена цены инвестиции торговля деньги
        бизнес
        经济 市场 金融 股票 股市 公司 银行 价格 投资 贸易 企业 経済 株価 会社 銀行 価格 投資 貿易
        ビジネス
    """,
    "culture": """
        musik kino kunst buch museum theater malerei kultur gedichte lyrik geschichte
        musique cinéma livre musée théâtre peinture poésie histoire
        música película cine arte libro novela museo teatro pintura cultura poesía historia
        musica cinema romanzo pittura poesia storia
        filme livro museu história
        muziek bioscoop boek schilderij cultuur poëzie geschiedenis
        музыка фильм кино искусство книга роман музей театр живопись культура поэзия альбом
        история
        音乐 电影 艺术 小说 博物馆 戏剧 绘画 文化 诗歌 专辑 历史 音楽 映画 芸術 博物館 美術館 演劇
        絵画 歴史 アルバム
    """,
    "travel": """
        reise reisen urlaub stadt strand flug reiseziel insel berge wandern
        voyage voyages vacances hôtel ville plage île montagne randonnée
        viaje viajes vacaciones ciudad playa vuelo destino isla montaña turismo
        viaggio viaggi vacanze albergo città spiaggia volo destinazione isola turismo
        viagem viagens férias cidade praia ilha montanha
        vakantie vlucht bestemming eiland bergen
        путешествие путешествия отпуск отель гостиница пляж остров горы туризм
        旅游 旅行 酒店 海滩 航班 目的地 岛屿 景点 ホテル 観光 ビーチ 航空券 温泉
    """,
    "food": """
        rezept rezepte kochen brot käse küche restaurant wein kuchen suppe zutaten backen
        recette recettes cuisiner pain fromage gâteau soupe ingrédients
        comida receta recetas cocina cocinar queso plato restaurante vino pastel sopa
        ingredientes
        cibo ricetta ricette cucina cucinare pane formaggio piatto ristorante torta zuppa
        ingredienti
        receita receitas cozinha cozinhar pão queijo prato vinho bolo
        recept recepten koken brood kaas keuken gerecht wijn taart soep ingrediënten
        еда рецепт рецепты кухня готовить хлеб сыр блюдо ресторан вино торт суп ингредиенты
        美食 食谱 烹饪 面包 奶酪 厨房 菜肴 餐厅 葡萄酒 蛋糕 食材 料理 レシピ 食べ物 チーズ キッチン
        レストラン ワイン ケーキ スープ
    """,
    "education": """
        schule bildung schüler lehrer universität hochschule studium kurs unterricht prüfung
        studenten ausbildung
        école éducation élève élèves enseignant professeur université cours leçon examen
        étudiants
        escuela educación alumno alumnos profesor universidad curso lección estudiantes colegio
        scuola istruzione alunni studenti insegnante professore università corso lezione esame
        escola educação aluno alunos universidade lição exame
        onderwijs leerling leerlingen leraar docent universiteit cursus
        школа образование ученик ученики учитель университет курс урок экзамен студенты студент
        学校 教育 学生 老师 教师 大学 课程 考试 作业 生徒 先生 教師 授業 試験 宿題
    """,
}


def _spellings(word: str) -> list[str]:
    """A keyword as addresses write it too: German umlauts as ae/oe/ue and ß as ss
    (/wirtschaft/boerse-...), accents dropped (/economie/, /sante/)."""
    german = word.replace("ä", "ae").replace("ö", "oe").replace("ü", "ue").replace("ß", "ss")
    plain = "".join(
        c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c)
    ).replace("ß", "ss")
    return list(dict.fromkeys([word, german, plain]))


TOPIC_KEYWORDS: dict[str, tuple[str, ...]] = {
    t: tuple(
        dict.fromkeys(
            w
            for kw in TOPICS[t] + tuple(_OTHER_LANGUAGES[t].split())
            for w in (_spellings(kw) if not _CJK_RANGE.search(kw) else [kw])
        )
    )
    for t in TOPICS
}
# A run of 3+ letters of any script; in scripts written without spaces a whole run, whose
# keywords are found inside it (_CJK_KEYWORD). Combining marks split a word here: no keyword is in
# a script that writes them, and the plain class is twice as fast.
_TOKEN = re.compile(r"[^\W\d_]{3,}")
_KEYWORD_TOPIC = {
    kw: t for t, kws in TOPIC_KEYWORDS.items() for kw in kws if not _CJK_RANGE.search(kw)
}
_CJK_TOPIC = {kw: t for t, kws in TOPIC_KEYWORDS.items() for kw in kws if _CJK_RANGE.search(kw)}
_CJK_KEYWORD = re.compile("|".join(sorted(_CJK_TOPIC, key=len, reverse=True)))

# Path segments of listings, search, accounts and print copies, in English and in the other
# languages whose sites share a CMS's words (WordPress, Drupal, TYPO3 and the rest translate them).
_BAD_SEGMENTS = frozenset(
    """
    tag tags category categories archive archives page feed search login signin register cart
    print share calendar author comment comments wp-admin cgi-bin sort filter
    kategorie kategorien schlagwort schlagworte stichwort stichworte archiv seite suche autor
    autoren anmelden registrieren warenkorb drucken kommentare
    categorie catégorie catégories étiquette etiquette étiquettes mot-cle mot-clé mots-cles
    mots-clés recherche auteur auteurs connexion panier imprimer commentaires
    categoria categoría categorias categorías etiqueta etiquetas buscar busqueda búsqueda
    pagina página paginas autores carrito imprimir comentarios
    autore ricerca cerca carrello stampa commenti busca pesquisa carrinho
    zoeken winkelwagen reacties
    kategoria tagi szukaj wyszukiwanie strona autorzy koszyk komentarze
    категория категории рубрика теги тег метки поиск страница автор авторы корзина комментарии
    标签 分类 搜索 作者 归档 タグ カテゴリー カテゴリ 検索 著者 アーカイブ
    """.split()
)
_BAD_PARAMS = frozenset(
    """
    page p paged pg pag seite pagina sort order orderby filter view print replytocom date month
    year day share session sessionid sid phpsessid jsessionid offset tag tags category cat
    """.split()
)
_DATE_PATH = re.compile(r"/(19|20)\d\d/(0?[1-9]|1[0-2])(/\d{1,2})?/")
_ID = re.compile(r"(^|[-_/!.,=])\d{3,}($|[-_./,])")
_CALENDAR_TAIL = re.compile(r"/(19|20)\d\d(/\d{1,2}){0,2}/?$")
# A page file's extension, stripped before a segment is read as a slug.
_PAGE_EXT = re.compile(r"\.(s?html?|php\d?|aspx?|jspx?|cfm|cgi)$")
# What joins the words of a slug (an article's title in its own script: /das-ministerium-für-
# club-kultur/, /الناشط-الحقوقي-.../, /Gebet_für_die_islamische_Welt).
_SLUG_SEP = re.compile(r"[-_+,]+")
_LETTER = re.compile(r"[^\W\d_]")
# A title in a script written without spaces: 8+ ideographs, kana or hangul in one segment.
_CJK_TITLE = re.compile(f"[{CJK_CLASS}]{{8,}}")
# The last segment of an article whose title is the segment before: an id (taz's /!5655255/) or
# an index file (/entwicklung-der-waldorfschule/index.html).
_AFTER_TITLE = re.compile(r"!?\d+|(index|default|main|start)")
# A query key naming an item by number (?p=3289, ?id=58354, ?storyid=504, ?article_id=385022):
# with a 3+ digit value the URL is one item's page, not a listing (?p=2 stays a page number).
_ITEM_KEY = re.compile(r"(p|id|[\w:.\[\]]*(article|story|post|item|news|node|entry|doc)_?id)")


def _is_slug(segment: str) -> bool:
    """Whether a decoded, lower-cased path segment reads as an article's title: 3+ parts joined by
    -, _, + or commas, 2+ of them holding letters of any script (joined by _ alone: 4+ parts; a
    name_like_this is as often a file's or a script's), or a title written without spaces (8+
    CJK characters)."""
    seg = _PAGE_EXT.sub("", segment)
    parts = [p for p in _SLUG_SEP.split(seg) if p]
    words = sum(1 for p in parts if _LETTER.search(p))
    need = 4 if "_" in seg and not re.search(r"[-+,]", seg) else 3
    if len(parts) >= need and words >= 2:
        return True
    return bool(_CJK_TITLE.search(seg))


def tokens_of(*texts: str) -> list[str]:
    """Lower-case word tokens (3+ letters, any script) of URLs and texts (URLs split on
    /-_.?=&, percent-escapes decoded). A run of CJK characters is one token."""
    return [t for text in texts for t in _TOKEN.findall(unquote(text or "").lower())]


def classify_topic(text_tokens: list[str]) -> tuple[str, float]:
    """(topic, confidence in [0, 1]); ('other', 0.0) when no topic keyword occurs. A CJK token's
    keywords are found inside it (the longest first)."""
    hits: Counter[str] = Counter()
    for t in text_tokens:
        topic = _KEYWORD_TOPIC.get(t)
        if topic is not None:
            hits[topic] += 1
        elif t[0] >= "\u3040" and _CJK_RANGE.match(t):
            hits.update(_CJK_TOPIC[k] for k in _CJK_KEYWORD.findall(t))
    if not hits:
        return "other", 0.0
    (topic, n), total = hits.most_common(1)[0], sum(hits.values())
    # Confidence grows with evidence and with how dominant the winning topic is.
    return topic, round((n / total) * min(1.0, n / 3), 4)


def path_signal(url: str) -> tuple[float, list[str]]:
    """URL-shape score in [-1, 1] and the reasons behind it. The path is read decoded, so a
    title slug in any script counts (/article/164913/%D8%A7%D9%84...: an Arabic title)."""
    parts = urlsplit(url)
    raw_path = parts.path.lower()
    path = unquote(raw_path, errors="replace").lower()
    segs = [s for s in path.split("/") if s]
    params = parse_qsl(parts.query, keep_blank_values=True)
    items = [
        k
        for k, v in params
        if len(v) >= 3 and v.isdigit() and _ITEM_KEY.fullmatch(k.lower().strip())
    ]
    score, why = 0.0, []
    bad = [s for s in segs if s in _BAD_SEGMENTS]
    if bad:
        score -= 0.4
        why.append(f"listing segment {bad[0]}")
    if any(k.lower() in _BAD_PARAMS and k not in items for k, _ in params):
        score -= 0.3
        why.append("listing/session query parameter")
    if len(params) > 2:
        score -= 0.1 * (len(params) - 2)
        why.append(f"{len(params)} query parameters")
    if len(segs) > 6:
        score -= 0.1 * (len(segs) - 6)
        why.append(f"deep path ({len(segs)} segments)")
    if _CALENDAR_TAIL.search(raw_path) or calendar_family(url) is not None:  # /2024/05/, ?m=2024
        score -= 0.3
        why.append("date archive")
    last = segs[-1] if segs else ""
    titled = [last]
    if len(segs) > 1 and _AFTER_TITLE.fullmatch(_PAGE_EXT.sub("", last)):
        titled.append(segs[-2])
    if any(_is_slug(s) for s in titled):
        score += 0.4
        why.append("article slug")
    elif _ID.search("/" + last) or items:
        score += 0.2
        why.append("numeric id")
    if _DATE_PATH.search(raw_path + "/") and not _CALENDAR_TAIL.search(raw_path):
        score += 0.2
        why.append("dated article")
    if not segs:
        score += 0.2
        why.append("home page")
    return max(-1.0, min(1.0, round(score, 4))), why


def path_pattern(url: str) -> str:
    """A URL's shape: host + path with digit runs replaced, query keys only (for reports).

    Not a trap signal: a news site's articles share one pattern; traps.TrapDetector decides."""
    parts = urlsplit(url)
    path = re.sub(r"\d+", "N", parts.path)
    keys = ",".join(sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}))
    return f"{parts.netloc}{path}?{keys}"


class LanguageTracker:
    """Per-host share of target-language pages, smoothed toward a prior (host dataset or 0.5)."""

    def __init__(
        self,
        target_languages: list[str],
        host_languages: Path | str | None = None,
        weight: float = 3.0,
    ):
        self.targets = {t.lower() for t in target_languages}
        self.weight = weight
        self.counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # host -> [target, total]
        self.priors: dict[str, float] = {}
        if host_languages:
            self.load_host_dataset(Path(host_languages))

    def load_host_dataset(self, path: Path) -> None:
        """Read the filter stage's per-host language parquet (host, lang, share)."""
        import pyarrow.parquet as pq

        if not path.exists():
            raise FileNotFoundError(
                f"host language dataset {path} does not exist (option host_languages_path)"
            )
        table = pq.read_table(path)
        missing = {"host", "lang", "share"} - set(table.column_names)
        if missing:
            raise ValueError(
                f"{path}: missing column(s) {sorted(missing)}; expected host, lang, share"
            )
        priors: dict[str, float] = defaultdict(float)
        for row in table.select(["host", "lang", "share"]).to_pylist():
            priors[str(row["host"]).lower()] += (
                float(row["share"] or 0) if str(row["lang"]).lower() in self.targets else 0.0
            )
        self.priors = {h: min(1.0, s) for h, s in priors.items()}

    def observe(self, host: str, lang: str) -> None:
        """Count one fetched page of `host` identified as `lang`."""
        c = self.counts[host]
        c[0] += lang.lower() in self.targets
        c[1] += 1

    def signal(self, host: str) -> float:
        """Smoothed share of target-language pages on the host, in [0, 1]."""
        prior = self.priors.get(host.split(":")[0], self.priors.get(host, 0.5))
        target, total = self.counts.get(host, (0, 0))
        return round((target + prior * self.weight) / (total + self.weight), 4)


@dataclass
class Weights:
    """How the signals combine into one priority."""

    lang: float = 1.0
    topic: float = 0.3
    path: float = 1.0
    depth: float = 0.1
    sitemap: float = 0.2


def combine(
    lang: float, topic_signal: float, path: float, depth: int, from_sitemap: bool, w: Weights
) -> float:
    """The stored priority of a URL (higher is fetched first)."""
    return round(
        w.lang * lang
        + w.topic * topic_signal
        + w.path * path
        - w.depth * depth
        + (w.sitemap if from_sitemap else 0.0),
        4,
    )


def topic_quota_penalty(
    topic: str, fetched_by_topic: Counter[str], max_share: float, min_pages: int = 20
) -> float:
    """Penalty for a topic already over its share of fetched pages (no topic swamps the crawl)."""
    total = sum(fetched_by_topic.values())
    if total < min_pages or topic == "other":
        return 0.0
    share = fetched_by_topic[topic] / total
    return (
        0.0
        if share <= max_share
        else round(2.0 * (share - max_share) / max(1e-9, 1 - max_share) + 0.5, 4)
    )


def queued_row(
    url: str,
    depth: int,
    source: str,
    parent: str | None,
    anchor: str,
    parent_topic: str,
    tier: int,
    langs: LanguageTracker,
    weights: Weights,
) -> dict[str, Any]:
    """The frontier row of a newly found URL: its signals, priority and the reasons for it."""
    host = host_of(url)
    topic, topic_sig = classify_topic(tokens_of(url.split("://", 1)[-1].partition("/")[2], anchor))
    if topic == "other" and parent_topic != "other":
        topic, topic_sig = parent_topic, 0.1  # weak prior: pages link within their topic
    lang_sig = langs.signal(host)
    p_sig, why = path_signal(url)
    prio = combine(lang_sig, topic_sig, p_sig, depth, source == "sitemap", weights)
    reasons = [f"lang {lang_sig:.2f}", f"topic {topic} {topic_sig:.2f}", *why, f"depth {depth}"]
    if tier == 0:
        first = "seed" if source == "seed" else "redirect of a seed"
        reasons.insert(0, f"{first}: fetched before discovered URLs")
    return {
        "url": url,
        "host": host,
        "depth": depth,
        "state": "queued",
        "source": source,
        "parent": parent,
        "anchor": anchor[:200],
        "priority": prio,
        "lang_signal": lang_sig,
        "topic": topic,
        "topic_signal": topic_sig,
        "path_signal": p_sig,
        "priority_reasons": "; ".join(reasons),
        "attempts": 0,
        "tier": tier,
    }
