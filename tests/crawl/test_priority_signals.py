"""The frontier's URL-shape and topic signals on addresses and pages as sites in other languages
write them: a title slug in its own script (percent-encoded in the link), slugs that end in a
site's id scheme, listings named in the CMS's translation, item ids in the query, and topics in
German, French, Spanish, Russian, Chinese and Japanese."""

from __future__ import annotations

from collections import defaultdict
from urllib.parse import quote

import pytest

from crawlers.crawl.priority import TOPIC_KEYWORDS, classify_topic, path_signal, tokens_of

H = "http://zeitung.test"


def _slug(*words: str) -> str:
    return quote("-".join(words))


@pytest.mark.parametrize(
    "url",
    [
        # titles in their own script, percent-encoded as a link carries them
        f"{H}/politik/{_slug('bundesregierung', 'plant', 'höhere', 'steuern', 'für', 'ölheizungen')}",
        f"{H}/article/20417/{_slug('الحكومة', 'تعلن', 'عن', 'خطة', 'جديدة')}",
        f"{H}/novosti/{_slug('правительство', 'утвердило', 'новый', 'бюджет')}",
        f"{H}/{_slug('ακρίβεια', 'στα', 'τρόφιμα', 'νέα', 'μέτρα')}/",
        f"{H}/wiki/{quote('第十七届全国运动会开幕式举行')}",
        f"{H}/artikel/{_slug('हिन्दी', 'भाषा', 'दिवस', 'पर', 'कार्यक्रम')}.html",
        # slugs ending in the site's own id scheme
        f"{H}/wirtschaft/bahn-kuendigt-neuen-fahrplan-an-1.4471120",
        f"{H}/kultur/mit-allen-wassern-gewaschen-ld.1161246",
        f"{H}/die-zukunft-der-arbeit-auf-der-titanic.911.de.html?dram:article_id=385022",
        f"{H}/wiadomosci/7,114883,27037150,naukowcy-odkryli-nowy-gatunek.html",
        f"{H}/opinie/2116693,1,ambasada-pisze-do-rzadu.read",
        # the title is the segment before an id or an index file
        f"{H}/Kohlemine-wird-doch-gebaut/!5655255/",
        f"{H}/inhalte/entwicklung-der-schule-ermoeglicht/index.html",
        # numbers among the words, and single letters
        f"{H}/garten/topinambur-ernten-47065",
        f"{H}/interview/q-and-a-poland",
        # wiki titles joined by underscores
        f"{H}/wiki/Gebet_f%C3%BCr_die_islamische_Welt",
    ],
)
def test_title_slugs_in_any_script_and_id_scheme_are_articles(url):
    score, why = path_signal(url)
    assert "article slug" in why, (url, why)
    assert score > 0, (url, score, why)


@pytest.mark.parametrize(
    "url,segment",
    [
        (f"{H}/kategorie/politik/", "kategorie"),
        (f"{H}/schlagworte/energiewende", "schlagworte"),
        (f"{H}/{quote('catégorie')}/monde", "catégorie"),
        (f"{H}/etiqueta/{_slug('elecciones', 'generales', 'de', 'julio')}", "etiqueta"),
        (f"{H}/autore/mario-rossi", "autore"),
        (f"{H}/suche/?q=wahl", "suche"),
        (f"{H}/blog/seite/4", "seite"),
        (f"{H}/zoeken?term=fiets", "zoeken"),
        (f"{H}/kategoria/polityka/", "kategoria"),
        (f"{H}/{quote('рубрика')}/{quote('политика')}/", "рубрика"),
        (f"{H}/{quote('标签')}/{quote('经济')}", "标签"),
        (f"{H}/{quote('タグ')}/{quote('政治')}/", "タグ"),
    ],
)
def test_listings_named_in_other_languages_are_listings(url, segment):
    score, why = path_signal(url)
    assert f"listing segment {segment}" in why, (url, why)
    assert score <= 0, (url, score, why)


@pytest.mark.parametrize(
    "url", [f"{H}/?paged=3", f"{H}/blog?seite=2", f"{H}/news?tag=wahl", f"{H}/?cat=12", f"{H}/?p=2"]
)
def test_paging_and_tag_parameters_are_listings(url):
    assert "listing/session query parameter" in path_signal(url)[1], url


@pytest.mark.parametrize(
    "url",
    [
        f"{H}/?p=3289",  # a WordPress post without pretty permalinks
        f"{H}/dettaglio.php?id=58354",
        f"{H}/modules/news/article.php?storyid=504",
        f"{H}/autonews.php?newsid=6486128",
    ],
)
def test_an_item_number_in_the_query_is_one_item(url):
    score, why = path_signal(url)
    assert "numeric id" in why and "listing/session query parameter" not in why, (url, why)
    assert score > 0


@pytest.mark.parametrize(
    "url",
    [
        f"{H}/2016/06/",  # a month's archive is not an item because its year has 4 digits
        f"{H}/service/news_vod_list.htm?lang=e",  # a script's name_like_this is no title
        f"{H}/politik/",
        f"{H}/wiki/{quote('日本')}",  # a short CJK segment is a section or a name, not a title
    ],
)
def test_archives_sections_and_script_names_are_not_articles(url):
    score, why = path_signal(url)
    assert "article slug" not in why and "numeric id" not in why, (url, why)


@pytest.mark.parametrize(
    "text,topic",
    [
        ("Der Bundestag stimmt ab: die Regierung und die Partei vor der Wahl", "politics"),
        ("Der Fußball-Trainer lobt die Mannschaft nach dem Spiel in der Bundesliga", "sports"),
        ("Le gouvernement et le président avant les élections au parlement", "politics"),
        ("La receta: la cocina de la abuela, queso, sopa y los ingredientes", "food"),
        ("Учёные провели эксперимент: исследование клетки и климата", "science"),
        ("新的软件和算法让计算机处理数据更快", "technology"),
        ("首相は選挙の前に国会で政治改革を語った", "politics"),
        ("病院の医師が患者の症状と治療を説明した", "health"),
        ("/wirtschaft/boerse-aktien-unternehmen", "business"),  # umlauts as addresses spell them
        ("/sante/medecine-hopital-patients", "health"),  # accents dropped
    ],
)
def test_topics_in_other_languages(text, topic):
    assert classify_topic(tokens_of(text))[0] == topic, tokens_of(text)


def test_no_keyword_names_two_topics_and_english_is_kept():
    topics_of = defaultdict(set)
    for topic, words in TOPIC_KEYWORDS.items():
        for w in words:
            topics_of[w].add(topic)
    assert {w: t for w, t in topics_of.items() if len(t) > 1} == {}
    assert classify_topic(tokens_of("The team won the match and the league title"))[0] == "sports"
    assert classify_topic(tokens_of("Lorem ipsum dolor sit amet")) == ("other", 0.0)
