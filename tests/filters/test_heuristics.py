"""Relaxed heuristics: each rule has its own reason; CJK lengths count characters."""

import re
import unicodedata

import pytest

from filters.config import HeuristicsConfig
from filters.heuristics import check, gopher_baseline, mojibake_ratio, strip_boilerplate

CFG = HeuristicsConfig()
PROSE = (
    "The old stone bridge crosses the river at its narrowest point, where the current is strong.\n"
    "Engineers rebuilt the central arch after the flood of 1890, using granite from a nearby quarry.\n"
    "Today the bridge carries pedestrians and cyclists, while cars use a newer crossing downstream.\n"
    "Local historians keep records of every repair, which show how methods changed over a century.\n"
)


def test_clean_prose_is_kept():
    assert check(PROSE, "en", CFG)[1] is None


def test_short_text_is_dropped_as_too_short():
    assert check("Just a few words here.", "en", CFG)[1] == "too_short"


def test_cjk_length_counts_characters():
    zh = (
        "这座古老的石桥横跨河流最窄的地方，水流湍急。工程师在洪水之后重建了中央拱门，使用了附近采石场的花岗岩。"
        * 2
    )
    assert check(zh, "zh", CFG)[1] is None
    assert check(zh[:30], "zh", CFG)[1] == "too_short"
    # The same text read as a spaced language has almost no "words".
    assert check(zh, "en", CFG)[1] == "too_short"


def test_symbol_soup_is_dropped():
    junk = PROSE + "\n" + " ".join(["$$$ ### @@@ ^^^ ~~~ |||"] * 40)
    assert check(junk, "en", CFG)[1] == "symbol_ratio"


def test_repeated_lines_are_dropped():
    text = PROSE + "\n".join(["Click here to buy the best cheap watches online now today"] * 12)
    assert check(text, "en", CFG)[1] == "repeated_lines"


def test_repeated_ngrams_are_dropped():
    text = " ".join(["cheap watches online"] * 60) + "\n" + PROSE
    assert check(text, "en", CFG)[1] == "repeated_ngrams"


def test_boilerplate_lines_are_stripped_and_mostly_boilerplate_drops():
    text = (
        "We use cookies. Accept all\n" + PROSE + "© 2025 Example Ltd. All rights reserved.\nHome\n"
    )
    clean, kept, removed = strip_boilerplate(text, CFG)
    assert removed == 3 and "cookies" not in clean and "Engineers rebuilt" in clean
    assert check(text, "en", CFG)[0] == clean
    nav = (
        "\n".join(["Home", "Menu", "Login", "Share", "Privacy policy", "Next"])
        + "\nA short line of text."
    )
    assert check(nav, "en", CFG)[1] == "boilerplate"


def test_gopher_baseline_is_stricter_than_relaxed_rules():
    short_but_fine = " ".join(PROSE.split()[:45])
    assert check(short_but_fine, "en", CFG)[1] is None
    assert gopher_baseline(short_but_fine, "en") == "gopher_length"


def _mojibake(text: str) -> str:
    """What a page looks like when its UTF-8 bytes are read as Windows-1252."""
    return text.encode("utf-8").decode("cp1252", errors="replace")


@pytest.mark.parametrize(
    ("lang", "text"),
    [
        (
            "fr",
            "Le comité a présenté son rapport sur la qualité de l’eau dans les quartiers du nord.\n"
            "Les habitants se plaignaient depuis des années d’un goût étrange au robinet.\n"
            "Les vieilles canalisations sous la place du marché seront remplacées avant l’hiver.\n"
            "La municipalité publiera chaque trimestre les résultats des analyses effectuées.",
        ),
        (
            "de",
            "Die Bürgerinitiative übergab am Freitag fünftausend Unterschriften gegen die Schließung.\n"
            "Die Bücherei im Südviertel ist seit über fünfzig Jahren ein Treffpunkt für Schüler.\n"
            "Der Gemeinderat will im Frühjahr über eine günstigere Lösung für das Gebäude beraten.\n"
            "Bis dahin bleiben die Öffnungszeiten unverändert, teilte die Verwaltung mit.",
        ),
        (
            "es",
            "La reunión del comité terminó tarde y la votación se aplazó hasta después del verano.\n"
            "Los vecinos pidieron más información sobre el coste de las obras en la plaza mayor.\n"
            "El alcalde prometió publicar el presupuesto detallado antes de la próxima sesión.\n"
            "Mientras tanto, la biblioteca seguirá abierta por las tardes durante todo el año.",
        ),
    ],
)
def test_mojibake_is_dropped_but_clean_accented_text_is_kept(lang, text):
    assert check(text, lang, CFG)[1] is None
    assert mojibake_ratio(text) == 0.0
    garbled = _mojibake(text)
    assert mojibake_ratio(garbled) > CFG.max_mojibake_ratio
    assert check(garbled, lang, CFG)[1] == "encoding_errors"


def test_replacement_characters_count_as_encoding_errors_but_one_stray_is_tolerated():
    assert check(PROSE + "\ufffd", "en", CFG)[1] is None
    broken = PROSE.replace("e", "\ufffd")
    assert check(broken, "en", CFG)[1] == "encoding_errors"
    assert check(broken, "en", HeuristicsConfig(max_mojibake_ratio=1.0))[1] is None


@pytest.mark.parametrize(
    ("lang", "lines"),
    [
        (
            "de",
            [
                "Wir verwenden Cookies, um Ihnen ein besseres Nutzererlebnis zu bieten.",
                "Alle Rechte vorbehalten.",
                "Zum Inhalt springen",
            ],
        ),
        (
            "fr",
            [
                "En poursuivant votre navigation, vous acceptez notre politique de confidentialité.",
                "Tous droits réservés.",
                "Retour en haut de page",
            ],
        ),
        (
            "es",
            [
                "Utilizamos cookies para mejorar su experiencia.",
                "Todos los derechos reservados.",
                "Ir al contenido principal",
            ],
        ),
        ("zh", ["本网站使用Cookie来改善您的体验。", "版权所有，未经许可不得转载。", "返回顶部"]),
        (
            "ja",
            [
                "当サイトではクッキーを使用しています。",
                "無断転載を禁じます。",
                "ページの先頭へ戻る",
            ],
        ),
    ],
)
def test_per_language_boilerplate_lexicons_strip_lines(lang, lines):
    clean, _, removed = strip_boilerplate("\n".join(lines), CFG, lang)
    assert removed == len(lines) and clean == ""
    # Without the language (or with the lexicon off) only the generic patterns apply.
    assert strip_boilerplate("\n".join(lines), CFG)[2] < len(lines)
    off = HeuristicsConfig(boilerplate_lexicon=False)
    assert strip_boilerplate("\n".join(lines), off, lang)[2] < len(lines)


def test_cookie_recipes_are_not_boilerplate():
    line = "Bake the cookies for twelve minutes, until the edges turn golden and the centres set."
    assert strip_boilerplate(line, CFG, "en")[2] == 0


def test_lexicons_spare_every_good_sample_web_line_and_drop_every_boilerplate_page():
    from filters.config import FilterConfig
    from sampleweb.labels import labelled_documents

    cfg = FilterConfig()
    for doc in labelled_documents(0):
        if not doc["lang"]:
            continue
        h = cfg.heuristics_for(doc["lang"])
        if doc["quality"] in ("high", "medium"):
            assert strip_boilerplate(doc["text"], h, doc["lang"])[2] == 0, doc["id"]
        elif doc["page_type"] == "boilerplate":
            assert check(doc["text"], doc["lang"], h)[1] == "boilerplate", doc["id"]
        elif doc["page_type"] == "garbled":
            assert check(doc["text"], doc["lang"], h)[1] == "encoding_errors", doc["id"]


def test_custom_lexicon_dir_and_clear_errors(tmp_path):
    (tmp_path / "en.txt").write_text("# comment\n\\bbuy now\\b\n")
    cfg = HeuristicsConfig(boilerplate_lexicon_dir=str(tmp_path), boilerplate_patterns=[])
    assert strip_boilerplate("Buy now!\nA real sentence about rivers.", cfg, "en")[2] == 1
    assert strip_boilerplate("Buy now!", cfg, "de")[2] == 0  # no de.txt there: no lexicon
    (tmp_path / "fr.txt").write_text("ok\n(unclosed\n")
    with pytest.raises(ValueError, match=r"fr\.txt:2: invalid regular expression"):
        strip_boilerplate("x", cfg, "fr")
    missing = HeuristicsConfig(boilerplate_lexicon_dir=str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match="boilerplate_lexicon_dir"):
        strip_boilerplate("x", missing, "en")


def test_character_classes_agree_with_str_methods_on_every_code_point():
    """The regexes that count spaces and odd symbols in C classify each of the 1,114,112 code
    points as str.isspace / str.isalnum and the punctuation list do, so the ratios are the
    per-character loops' values."""
    from filters import heuristics

    every = "".join(map(chr, range(0x110000)))
    spaces = {m.start() for m in heuristics._SPACE.finditer(every)}
    assert spaces == {i for i, c in enumerate(every) if c.isspace()}

    def mark(c):  # a combining mark of the Basic Multilingual Plane (filters.heuristics._marks)
        return c < "\U00010000" and unicodedata.category(c)[0] == "M"

    odd = {m.start() for m in heuristics._ODD.finditer(every)}
    ok = heuristics._PUNCT_OK
    assert odd == {
        i for i, c in enumerate(every) if not (c.isspace() or c.isalnum() or mark(c) or c in ok)
    }
    word = {m.start() for m in re.finditer(f"[{heuristics.WORD_CLASS}]", every)}
    assert word == {i for i, c in enumerate(every) if c.isalnum() or c == "_" or mark(c)}
    text = "Caf\u00e9 \u00c3\u00a9t\u00e9 \u2003 a_b \u00bd\u2460 \u0663 \ufffd!!\n\u3000\u6f22\u5b57\u3002"
    chars = [c for c in text if not c.isspace()]
    assert heuristics.non_space_chars(text) == len(chars)
    odd_n = sum(1 for c in chars if not (c.isalnum() or c in ok))
    assert heuristics.symbol_ratio(text) == odd_n / len(chars)
    assert heuristics.tokens(text, "zh") == [c for c in text if c.isalnum()]


# Prose in scripts that write vowels, vowel points, tones or diacritics as combining marks, one
# or two sentences each (Vietnamese decomposed, as text from some systems arrives).
_MARKED_PROSE = {
    "hi": "भारत एक विशाल देश है। यहाँ अनेक भाषाएँ बोली जाती हैं और हर राज्य की अपनी संस्कृति है।",
    "bn": "বাংলা ভাষা দক্ষিণ এশিয়ার একটি প্রধান ভাষা। কোটি কোটি মানুষ এই ভাষায় কথা বলেন।",
    "ta": "தமிழ் மொழி மிகவும் பழமையான மொழிகளில் ஒன்று. இது இலக்கிய வளம் மிக்கது.",
    "ar": "ذَهَبَ الوَلَدُ إِلَى المَدْرَسَةِ فِي الصَّبَاحِ، وَقَرَأَ كِتَابًا جَدِيدًا.",
    "he": "בְּרֵאשִׁית בָּרָא אֱלֹהִים אֵת הַשָּׁמַיִם וְאֵת הָאָרֶץ.",
    "ur": "اردو پاکستان کی قومی زبان ہے۔ کیا آپ اردو بولتے ہیں؟",
    "hy": "Երևանը Հայաստանի մայրաքաղաքն է։",
    "vi": unicodedata.normalize("NFD", "Tiếng Việt là ngôn ngữ chính thức của Việt Nam."),
    "th": "ภาษาไทยเป็นภาษาราชการของประเทศไทย",
    "my": "မြန်မာဘာသာစကားသည် မြန်မာနိုင်ငံ၏ ရုံးသုံးဘာသာစကား ဖြစ်သည်။",
    "bo": "བོད་ཀྱི་སྐད་ཡིག་ནི་གལ་ཆེན་པོ་ཡིན།",
}


@pytest.mark.parametrize("lang", sorted(_MARKED_PROSE))
def test_combining_marks_belong_to_their_words(lang):
    """A vowel sign, virama, vowel point or tone mark is part of its word, not a symbol and not a
    word break: every space-separated word is one token (each letter of a CJK-like language one
    token, with its marks), and clean prose has no symbols."""
    from filters import heuristics
    from filters.dedup import normalise

    text = _MARKED_PROSE[lang]
    assert heuristics.symbol_ratio(text) == 0.0
    toks = heuristics.tokens(text, lang)
    if heuristics.is_char_lang(lang):
        letters = [c for c in text if not (c.isspace() or c in heuristics._PUNCT_OK)]
        assert "".join(toks) == "".join(letters)
        assert not any(unicodedata.category(t[0])[0] == "M" for t in toks)
        assert any(len(t) > 1 for t in toks)  # marks went with their letters
    else:
        words = re.sub(f"[{re.escape(heuristics._PUNCT_OK)}]", " ", text).lower().split()
        assert toks == words
        # de-duplication's key keeps the words whole too
        assert normalise(text).split() == unicodedata.normalize("NFKC", " ".join(words)).split()


def test_prose_in_marked_scripts_passes_the_heuristics():
    """Hindi prose long enough for the word rules passes every rule (it was dropped as
    symbol_ratio, half its characters being marks)."""
    sentences = [
        "भारत एक विशाल देश है।",
        "यहाँ अनेक भाषाएँ बोली जाती हैं और हर राज्य की अपनी संस्कृति है।",
        "गंगा नदी उत्तर भारत के मैदानों से होकर बहती है।",
        "दिल्ली देश की राजधानी है और मुंबई सबसे बड़ा व्यापारिक नगर।",
        "गाँवों में अधिकतर लोग खेती करते हैं, शहरों में उद्योग और सेवाएँ हैं।",
    ]
    text = "\n".join(sentences)
    assert check(text, "hi", CFG)[1] is None


def test_top_ngram_frac_counts_every_ngram_and_breaks_ties_by_first_occurrence():
    """The n-grams are every window of n tokens; among equally frequent n-grams the first in the
    text decides (its characters are the share), as with a Counter of tuple slices."""
    from collections import Counter

    from filters.heuristics import top_ngram_frac

    def reference(toks, n):
        if len(toks) < n + 1:
            return 0.0
        grams = Counter(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))
        gram, count = grams.most_common(1)[0]
        if count < 2:
            return 0.0
        return min(1.0, count * sum(len(t) for t in gram) / max(1, sum(len(t) for t in toks)))

    # Two bigrams twice each, of different lengths: the first one seen sets the share.
    toks = ["a", "b", "xxxx", "yyyy", "a", "b", "xxxx", "yyyy"]
    assert top_ngram_frac(toks, 2) == reference(toks, 2) == 2 * 2 / 20
    rng = __import__("random").Random(3)
    for _ in range(300):
        toks = [rng.choice(["la", "mer", "est", "bleue", "x"]) for _ in range(rng.randint(0, 30))]
        for n in (1, 2, 3, 5):
            assert top_ngram_frac(toks, n) == reference(toks, n)


# --- no_sentences: keyword lists in any script, prose in any script ---

_KEYWORD_LISTS = {
    "ru": "купить дешево\nкредит онлайн быстро\nказино бонус\nскачать бесплатно фильмы\nпохудеть",
    "ja": "激安 通販\n即日発送 送料無料\n最安値 比較\nポイント 還元率\nブランド 格安",
    "ar": "شراء رخيص\nقرض سريع\nكازينو مكافأة\nتحميل مجاني\nخصم كبير",
    "de": "Kredit ohne Schufa\nBilligflüge Mallorca\nCasino Bonus ohne Einzahlung\nAbnehmen schnell",
    "pt": "comprar barato\nempréstimo rápido\nbônus de cassino\nbaixar grátis\nperder peso já",
}
_PROSE = {
    "hi": "यह एक छोटा सा गाँव है।\nयहाँ लोग खेती करते हैं\nबच्चे स्कूल जाते हैं",
    "ar": "هل زرت المدينة القديمة؟\nالأسواق مزدحمة في المساء\nالناس يشترون الخبز",
    "hy": "Երևանը Հայաստանի մայրաքաղաքն է։\nՔաղաքը հին է\nԱյն ունի շատ թանգարաններ",
    "zh": "今天天气很好。\n我们去公园散步\n孩子们在草地上玩",
    "en": "The council met on Tuesday\nIt approved the budget\n“We are pleased,” the mayor said.",
    "fr": "Le train part à huit heures\nLes voyageurs attendent sur le quai\nIl pleut (encore).",
}


@pytest.mark.parametrize("lang", sorted(_KEYWORD_LISTS))
def test_a_keyword_list_has_no_sentences_in_any_script(lang):
    from filters.heuristics import no_sentences

    assert no_sentences(_KEYWORD_LISTS[lang], lang, HeuristicsConfig())


@pytest.mark.parametrize("lang", sorted(_PROSE))
def test_one_line_ending_a_sentence_keeps_prose_in_its_own_script(lang):
    from filters.heuristics import no_sentences

    assert not no_sentences(_PROSE[lang], lang, HeuristicsConfig())


def test_a_paragraph_of_sentences_that_ends_on_a_list_is_prose():
    """A film blog's post (seen on trafilatura's evaluation pages): a title line, a synopsis
    whose last sentence is its cast list (no full stop), a row of decorative symbols."""
    from filters.heuristics import no_sentences

    cfg = HeuristicsConfig()
    post = (
        "- The Orchard · A. Director (1987)\n"
        "- Two stories run side by side and hardly a word is spoken. A mother carries her child "
        "through a crowd of photographers. Two brothers open a bakery and lose it. Director: "
        "A. Director · Cast: B. Actor, C. Actor and D. Actor\n"
        "\u2665\u2014\u2665\u2014\u2665"
    )
    assert not no_sentences(post, "en", cfg)
    zh = "他们走进公园。孩子们在草地上玩。老人在树下下棋，一直到傍晚" * 3
    assert not no_sentences(f"标题\n{zh}\n分享", "zh", cfg)
    # short keyword lines with full stops inside stay a keyword list
    assert no_sentences(
        "Kredit. Casino. Bonus\nBilligflüge. Mallorca\nAbnehmen. Schnell", "de", cfg
    )


def test_no_sentences_spares_short_texts_tables_thai_and_can_be_turned_off():
    from filters.heuristics import no_sentences

    cfg = HeuristicsConfig()
    assert not no_sentences("Home\nNews", "en", cfg)  # fewer lines than the rule needs
    table = "| city | people |\n| --- | --- |\n| Lyon | 500000 |\n| Nice | 340000 |"
    assert not no_sentences(table, "fr", cfg)  # Markdown table rows are not counted
    assert no_sentences(table + "\nLyon\nNice\nParis", "fr", cfg)
    assert not no_sentences(table + "\nCities of France by population.", "fr", cfg)
    thai = "วันนี้อากาศดีมาก\nเราไปเดินเล่นที่สวน\nเด็กๆ เล่นบนสนามหญ้า"
    assert not no_sentences(thai, "th", cfg)  # Thai ends sentences without punctuation
    off = HeuristicsConfig(min_lines_no_sentences=0)
    assert not no_sentences(_KEYWORD_LISTS["ru"], "ru", off)


def test_the_filter_drops_a_keyword_list_as_no_sentences_after_the_safety_step():
    from filters.annotate import DocumentAnnotator
    from filters.config import FilterConfig
    from filters.stats import step_of

    cfg = FilterConfig()
    cfg.quality.use_default_models = False
    ann = DocumentAnnotator(cfg)
    import random

    rng = random.Random(7)
    words = (
        "préstamo rápido bono casino barato ganar dinero relojes baratos dieta milagro "
        "seguidores gratis descarga oferta limitada promoción exclusiva sorteo perder peso "
        "tarjeta crédito viajes hoteles vuelos ofertas apuestas deportivas lotería premios"
    ).split()
    spam = "\n".join(" ".join(rng.sample(words, 12)) for _ in range(8))
    row = {"id": "1", "url": "http://a.example/x", "text": spam, "training_allowed": True}
    out = ann.annotate(row)
    assert out["lang"] == "es" and out["drop_reason"] == "no_sentences"
    prose = spam.replace("\n", ".\n") + "."
    assert ann.annotate({**row, "text": prose})["drop_reason"] != "no_sentences"
    assert step_of("no_sentences") == "quality"
