"""A seeded, held-out corpus for the render decision, shaped unlike the sample web's JS pages.

`generate(seed, n)` returns `HeldoutPage`s of two families:

* JS pages, whose `js_only` paragraphs appear only after scripts run: text after a 1-4 s timer,
  fetch()/XHR then insert, infinite-scroll feeds with a real first screen, shadow DOM (custom
  elements, template clones, external modules), app shells without framework keywords,
  document.write, innerHTML into an empty <main>/<article>, skeleton/loading placeholders,
  hydration from a JSON <script> blob, and partly static pages whose comments or second half load
  by script;
* static pages, whose whole text is in the HTML although they carry scripts: analytics snippets
  (gtag, GTM, a tracking pixel, all `createElement('script')` loaders), cookie banners, <noscript>
  iframes and "enable JavaScript" notes, plain "Read more"/"Show more" links, share widgets, JSON-LD,
  jQuery menus, lazy-loading images, ad slots, SSR app pages with their data blob
  (`__NEXT_DATA__`, `window.__NUXT__`, ...), forms that post by fetch, short pages, and maps,
  players or charts mounted in an empty box mid-article.

Some JS pages are hard on purpose (a class-only box or a titled section filled by an external
script): static evidence is weak there, and only a probe render can tell them apart from the
static pages' widget boxes.

Text comes from per-language phrase pools in 13 languages and 7 scripts, so nothing here matches
the sample web's documents. Each page lives under its own path prefix and lists the sub-resources
(JSON, JS) a loopback server must serve for it; third-party snippets point at `third_party` (any
unreachable origin), so no real network is needed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from html import escape

JS_KINDS = (
    "timer",
    "fetch",
    "infinite_scroll",
    "shadow_dom",
    "app_shell",
    "document_write",
    "inner_html",
    "skeleton",
    "json_hydrate",
    "partial",
)
STATIC_KINDS = (
    "analytics",
    "cookie_banner",
    "noscript",
    "read_more_links",
    "share_widgets",
    "json_ld",
    "jquery_menu",
    "lazy_images",
    "ssr_app",
    "ad_slots",
    "post_form",
    "short_page",
    "embeds",
)

# Phrase pools: subjects x predicates x complements give thousands of distinct sentences per language.
_POOLS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "en": (
        [
            "The night train to the coast",
            "A retired ferry captain",
            "The village bakery",
            "Our tram depot",
            "The glacier survey team",
            "A small orchard cooperative",
            "The harbour museum",
            "Every beekeeper in the valley",
        ],
        [
            "kept a careful record of",
            "spent the winter repairing",
            "reported a sharp rise in",
            "quietly changed the schedule for",
            "published a long study of",
            "argued for years about",
            "finally found a buyer for",
            "still remembers the cost of",
        ],
        [
            "the old signal boxes along the line",
            "copper kettles from the last century",
            "rainfall over the northern plateau",
            "apple varieties nobody grows anymore",
            "ice cores drilled near the summit",
            "the brass instruments in the hall",
            "timber bridges on the river road",
            "the first electric streetlights",
        ],
    ),
    "de": (
        [
            "Der Nachtzug an die Küste",
            "Eine pensionierte Fährkapitänin",
            "Die Dorfbäckerei",
            "Unser Straßenbahndepot",
            "Das Gletschermessteam",
            "Eine kleine Obstgenossenschaft",
            "Das Hafenmuseum",
            "Jeder Imker im Tal",
        ],
        [
            "führte genau Buch über",
            "verbrachte den Winter mit der Reparatur",
            "meldete einen starken Anstieg bei",
            "änderte still den Fahrplan für",
            "veröffentlichte eine lange Studie über",
            "stritt jahrelang über",
            "fand endlich einen Käufer für",
            "erinnert sich noch an die Kosten für",
        ],
        [
            "die alten Stellwerke entlang der Strecke",
            "kupferne Kessel aus dem letzten Jahrhundert",
            "den Regen über dem nördlichen Hochland",
            "Apfelsorten, die niemand mehr anbaut",
            "Eisbohrkerne vom Gipfel",
            "die Blechblasinstrumente im Saal",
            "hölzerne Brücken an der Flussstraße",
            "die ersten elektrischen Straßenlaternen",
        ],
    ),
    "fr": (
        [
            "Le train de nuit vers la côte",
            "Une capitaine de ferry à la retraite",
            "La boulangerie du village",
            "Notre dépôt de tramways",
            "L'équipe d'étude du glacier",
            "Une petite coopérative fruitière",
            "Le musée du port",
            "Chaque apiculteur de la vallée",
        ],
        [
            "a tenu un registre précis de",
            "a passé l'hiver à réparer",
            "a signalé une forte hausse de",
            "a discrètement modifié l'horaire de",
            "a publié une longue étude sur",
            "s'est disputé pendant des années sur",
            "a enfin trouvé un acheteur pour",
            "se souvient encore du prix de",
        ],
        [
            "les vieux postes d'aiguillage de la ligne",
            "des bouilloires en cuivre du siècle dernier",
            "la pluie sur le plateau du nord",
            "des variétés de pommes oubliées",
            "des carottes de glace forées au sommet",
            "les cuivres de la salle des fêtes",
            "les ponts en bois de la route du fleuve",
            "les premiers réverbères électriques",
        ],
    ),
    "es": (
        [
            "El tren nocturno a la costa",
            "Una capitana de transbordador jubilada",
            "La panadería del pueblo",
            "Nuestra cochera de tranvías",
            "El equipo que mide el glaciar",
            "Una pequeña cooperativa frutícola",
            "El museo del puerto",
            "Cada apicultor del valle",
        ],
        [
            "llevó un registro minucioso de",
            "pasó el invierno reparando",
            "informó de un fuerte aumento de",
            "cambió en silencio el horario de",
            "publicó un largo estudio sobre",
            "discutió durante años sobre",
            "encontró por fin comprador para",
            "todavía recuerda el precio de",
        ],
        [
            "las viejas casetas de señales de la línea",
            "teteras de cobre del siglo pasado",
            "la lluvia sobre la meseta del norte",
            "variedades de manzana que ya nadie cultiva",
            "testigos de hielo del glaciar",
            "los metales de la banda municipal",
            "los puentes de madera del camino del río",
            "las primeras farolas eléctricas",
        ],
    ),
    "pt": (
        [
            "O comboio noturno para o litoral",
            "Uma antiga comandante de balsa",
            "A padaria da aldeia",
            "A nossa garagem de elétricos",
            "A equipa que estuda o glaciar",
            "Uma pequena cooperativa de fruta",
            "O museu do porto",
            "Cada apicultor do vale",
        ],
        [
            "manteve um registo cuidadoso de",
            "passou o inverno a reparar",
            "relatou um forte aumento de",
            "mudou discretamente o horário de",
            "publicou um longo estudo sobre",
            "discutiu durante anos sobre",
            "encontrou finalmente comprador para",
            "ainda se lembra do custo de",
        ],
        [
            "as velhas cabines de sinalização da linha",
            "chaleiras de cobre do século passado",
            "a chuva sobre o planalto do norte",
            "variedades de maçã esquecidas",
            "amostras de gelo tiradas do cume",
            "os metais da filarmónica local",
            "as pontes de madeira da estrada do rio",
            "os primeiros candeeiros elétricos",
        ],
    ),
    "ru": (
        [
            "Ночной поезд к побережью",
            "Бывший капитан парома",
            "Деревенская пекарня",
            "Наше трамвайное депо",
            "Группа, изучающая ледник",
            "Небольшой фруктовый кооператив",
            "Портовый музей",
            "Каждый пасечник в долине",
        ],
        [
            "тщательно записывал",
            "всю зиму ремонтировал",
            "сообщил о резком росте",
            "тихо изменил расписание для",
            "опубликовал большое исследование о",
            "годами спорил о",
            "наконец нашёл покупателя на",
            "до сих пор помнит цену на",
        ],
        [
            "старые сигнальные будки вдоль линии",
            "медные чайники прошлого века",
            "осадки над северным плато",
            "сорта яблок, которые больше никто не выращивает",
            "ледяные керны с вершины",
            "духовые инструменты в зале",
            "деревянные мосты на речной дороге",
            "первые электрические фонари",
        ],
    ),
    "pl": (
        [
            "Nocny pociąg nad morze",
            "Emerytowana kapitan promu",
            "Wiejska piekarnia",
            "Nasza zajezdnia tramwajowa",
            "Zespół badający lodowiec",
            "Mała spółdzielnia sadownicza",
            "Muzeum portowe",
            "Każdy pszczelarz w dolinie",
        ],
        [
            "starannie notował",
            "spędził zimę na naprawie",
            "zgłosił gwałtowny wzrost",
            "po cichu zmienił rozkład dla",
            "opublikował obszerne badanie o",
            "latami spierał się o",
            "w końcu znalazł kupca na",
            "wciąż pamięta cenę",
        ],
        [
            "starych nastawni wzdłuż linii",
            "miedzianych czajników z zeszłego wieku",
            "opadów nad północnym płaskowyżem",
            "odmian jabłek, których nikt już nie uprawia",
            "rdzeni lodowych ze szczytu",
            "instrumentów dętych w sali",
            "drewnianych mostów przy drodze nad rzeką",
            "pierwszych latarni elektrycznych",
        ],
    ),
    "tr": (
        [
            "Sahile giden gece treni",
            "Emekli bir feribot kaptanı",
            "Köy fırını",
            "Tramvay depomuz",
            "Buzul ölçüm ekibi",
            "Küçük bir meyve kooperatifi",
            "Liman müzesi",
            "Vadideki her arıcı",
        ],
        [
            "titizlikle kayıt altına aldı",
            "kışı onararak geçirdi",
            "keskin bir artış bildirdi",
            "sessizce tarifeyi değiştirdi",
            "uzun bir inceleme yayımladı",
            "yıllarca tartıştı",
            "sonunda bir alıcı buldu",
            "hâlâ fiyatını hatırlıyor",
        ],
        [
            "hat boyunca eski makas kulübelerini",
            "geçen yüzyıldan kalma bakır çaydanlıkları",
            "kuzey yaylasındaki yağışları",
            "artık kimsenin yetiştirmediği elma türlerini",
            "zirveden alınan buz karotlarını",
            "salondaki üflemeli çalgıları",
            "nehir yolundaki ahşap köprüleri",
            "ilk elektrikli sokak lambalarını",
        ],
    ),
    "ja": (
        [
            "海辺へ向かう夜行列車は",
            "引退したフェリーの船長は",
            "村のパン屋は",
            "私たちの路面電車の車庫は",
            "氷河の調査班は",
            "小さな果樹園の組合は",
            "港の博物館は",
            "谷の養蜂家たちは",
        ],
        [
            "長年にわたって丁寧に記録してきた",
            "冬のあいだずっと修理していた",
            "急な増加を報告した",
            "静かに予定を変えた",
            "詳しい研究を発表した",
            "何年も議論を続けた",
            "ようやく買い手を見つけた",
            "今でも値段を覚えている",
        ],
        [
            "線路沿いの古い信号小屋について",
            "前世紀の銅のやかんについて",
            "北の高原に降る雨について",
            "もう誰も育てないりんごの品種について",
            "山頂で掘られた氷の試料について",
            "ホールの金管楽器について",
            "川沿いの道の木の橋について",
            "最初の電気街灯について",
        ],
    ),
    "zh": (
        [
            "开往海边的夜班火车",
            "一位退休的渡轮船长",
            "村里的面包店",
            "我们的电车车库",
            "冰川测量小组",
            "一个小型果园合作社",
            "港口博物馆",
            "山谷里的每一位养蜂人",
        ],
        [
            "多年来仔细记录了",
            "整个冬天都在修理",
            "报告了明显增长的",
            "悄悄调整了",
            "发表了一份长篇研究，内容是",
            "多年来一直争论",
            "终于为之找到了买家的",
            "至今还记得价格的",
        ],
        [
            "铁路沿线的旧信号房",
            "上个世纪的铜水壶",
            "北部高原上的降雨",
            "已经没人种植的苹果品种",
            "山顶钻取的冰芯",
            "礼堂里的铜管乐器",
            "河边道路上的木桥",
            "第一批电力路灯",
        ],
    ),
    "ko": (
        [
            "해안으로 가는 야간열차는",
            "은퇴한 여객선 선장은",
            "마을 빵집은",
            "우리 전차 차고는",
            "빙하 조사팀은",
            "작은 과수원 협동조합은",
            "항구 박물관은",
            "골짜기의 모든 양봉가는",
        ],
        [
            "오랫동안 꼼꼼하게 기록해 왔다",
            "겨울 내내 수리했다",
            "급격한 증가를 보고했다",
            "조용히 일정을 바꾸었다",
            "긴 연구를 발표했다",
            "몇 년 동안 논쟁했다",
            "마침내 구매자를 찾았다",
            "아직도 그 가격을 기억한다",
        ],
        [
            "선로를 따라 늘어선 옛 신호소에 대해",
            "지난 세기의 구리 주전자에 대해",
            "북쪽 고원의 강수량에 대해",
            "더는 아무도 기르지 않는 사과 품종에 대해",
            "정상에서 뚫은 얼음 시료에 대해",
            "강당의 금관악기에 대해",
            "강변 길의 나무 다리에 대해",
            "최초의 전기 가로등에 대해",
        ],
    ),
    "ar": (
        [
            "قطار الليل المتجه إلى الساحل",
            "قبطانة عبّارة متقاعدة",
            "مخبز القرية",
            "مستودع الترام لدينا",
            "فريق مسح النهر الجليدي",
            "جمعية صغيرة لزراعة الفاكهة",
            "متحف الميناء",
            "كل نحّال في الوادي",
        ],
        [
            "احتفظ بسجل دقيق عن",
            "قضى الشتاء في إصلاح",
            "أبلغ عن ارتفاع حاد في",
            "غيّر بهدوء جدول",
            "نشر دراسة طويلة عن",
            "تجادل لسنوات حول",
            "وجد أخيرًا مشتريًا لـ",
            "ما زال يتذكر ثمن",
        ],
        [
            "أكشاك الإشارات القديمة على طول الخط",
            "الغلايات النحاسية من القرن الماضي",
            "الأمطار فوق الهضبة الشمالية",
            "أصناف التفاح التي لم يعد أحد يزرعها",
            "عينات الجليد من القمة",
            "الآلات النحاسية في القاعة",
            "الجسور الخشبية على طريق النهر",
            "أول مصابيح الشوارع الكهربائية",
        ],
    ),
    "hi": (
        [
            "तट की ओर जाने वाली रात की ट्रेन",
            "एक सेवानिवृत्त नौका कप्तान",
            "गाँव की बेकरी",
            "हमारा ट्राम डिपो",
            "ग्लेशियर सर्वेक्षण दल",
            "एक छोटी बागवानी सहकारी समिति",
            "बंदरगाह संग्रहालय",
            "घाटी का हर मधुमक्खी पालक",
        ],
        [
            "ने ध्यान से दर्ज किया",
            "ने पूरी सर्दी मरम्मत की",
            "ने तेज़ बढ़ोतरी की सूचना दी",
            "ने चुपचाप समय-सारिणी बदली",
            "ने एक लंबा अध्ययन प्रकाशित किया",
            "ने वर्षों तक बहस की",
            "ने आखिरकार खरीदार ढूँढा",
            "को अब भी कीमत याद है",
        ],
        [
            "लाइन के किनारे पुराने सिग्नल केबिनों के बारे में",
            "पिछली सदी की तांबे की केतलियों के बारे में",
            "उत्तरी पठार पर बारिश के बारे में",
            "उन सेब किस्मों के बारे में जिन्हें अब कोई नहीं उगाता",
            "शिखर से निकाले गए बर्फ के नमूनों के बारे में",
            "सभागार के पीतल वाद्यों के बारे में",
            "नदी वाली सड़क के लकड़ी के पुलों के बारे में",
            "पहली बिजली की स्ट्रीट लाइटों के बारे में",
        ],
    ),
}
LANGS = tuple(_POOLS)
_CJK = ("ja", "zh")
_STOP = {"ja": "。", "zh": "。", "ar": ".", "hi": "।"}

# Per-language UI strings: nav, loading notes, load/read/show more, share, enable-JS note, cookie text.
_UI: dict[str, dict[str, str]] = {
    "en": {
        "home": "Home",
        "news": "News",
        "about": "About us",
        "contact": "Contact",
        "loading": "Loading…",
        "loading_comments": "Loading comments…",
        "read_more": "Read more",
        "show_more": "Show more",
        "load_more": "Load more",
        "share": "Share",
        "enable_js": "For the best experience, please enable JavaScript.",
        "cookies": "We use cookies to measure traffic and remember your settings.",
        "accept": "Accept",
        "comments": "Comments",
        "subscribe": "Subscribe",
        "thanks": "Thanks for subscribing!",
    },
    "de": {
        "home": "Startseite",
        "news": "Nachrichten",
        "about": "Über uns",
        "contact": "Kontakt",
        "loading": "Wird geladen …",
        "loading_comments": "Kommentare werden geladen …",
        "read_more": "Weiterlesen",
        "show_more": "Mehr anzeigen",
        "load_more": "Mehr laden",
        "share": "Teilen",
        "enable_js": "Für die beste Darstellung aktivieren Sie bitte JavaScript.",
        "cookies": "Wir verwenden Cookies, um Zugriffe zu messen und Ihre Einstellungen zu speichern.",
        "accept": "Akzeptieren",
        "comments": "Kommentare",
        "subscribe": "Abonnieren",
        "thanks": "Danke für Ihr Abonnement!",
    },
    "fr": {
        "home": "Accueil",
        "news": "Actualités",
        "about": "À propos",
        "contact": "Contact",
        "loading": "Chargement…",
        "loading_comments": "Chargement des commentaires…",
        "read_more": "Lire la suite",
        "show_more": "Afficher plus",
        "load_more": "Charger plus",
        "share": "Partager",
        "enable_js": "Pour une meilleure expérience, activez JavaScript.",
        "cookies": "Nous utilisons des cookies pour mesurer l'audience et mémoriser vos réglages.",
        "accept": "Accepter",
        "comments": "Commentaires",
        "subscribe": "S'abonner",
        "thanks": "Merci de votre inscription !",
    },
    "es": {
        "home": "Inicio",
        "news": "Noticias",
        "about": "Quiénes somos",
        "contact": "Contacto",
        "loading": "Cargando…",
        "loading_comments": "Cargando comentarios…",
        "read_more": "Leer más",
        "show_more": "Mostrar más",
        "load_more": "Cargar más",
        "share": "Compartir",
        "enable_js": "Para una mejor experiencia, activa JavaScript.",
        "cookies": "Usamos cookies para medir el tráfico y recordar tus ajustes.",
        "accept": "Aceptar",
        "comments": "Comentarios",
        "subscribe": "Suscribirse",
        "thanks": "¡Gracias por suscribirte!",
    },
    "pt": {
        "home": "Início",
        "news": "Notícias",
        "about": "Sobre nós",
        "contact": "Contacto",
        "loading": "Carregando…",
        "loading_comments": "Carregando comentários…",
        "read_more": "Ler mais",
        "show_more": "Mostrar mais",
        "load_more": "Carregar mais",
        "share": "Partilhar",
        "enable_js": "Para uma melhor experiência, ative o JavaScript.",
        "cookies": "Usamos cookies para medir o tráfego e guardar as suas definições.",
        "accept": "Aceitar",
        "comments": "Comentários",
        "subscribe": "Subscrever",
        "thanks": "Obrigado pela subscrição!",
    },
    "ru": {
        "home": "Главная",
        "news": "Новости",
        "about": "О нас",
        "contact": "Контакты",
        "loading": "Загрузка…",
        "loading_comments": "Загрузка комментариев…",
        "read_more": "Читать далее",
        "show_more": "Показать ещё",
        "load_more": "Загрузить ещё",
        "share": "Поделиться",
        "enable_js": "Для удобной работы включите JavaScript.",
        "cookies": "Мы используем cookie, чтобы считать посещения и помнить ваши настройки.",
        "accept": "Принять",
        "comments": "Комментарии",
        "subscribe": "Подписаться",
        "thanks": "Спасибо за подписку!",
    },
    "pl": {
        "home": "Strona główna",
        "news": "Aktualności",
        "about": "O nas",
        "contact": "Kontakt",
        "loading": "Ładowanie…",
        "loading_comments": "Ładowanie komentarzy…",
        "read_more": "Czytaj dalej",
        "show_more": "Pokaż więcej",
        "load_more": "Załaduj więcej",
        "share": "Udostępnij",
        "enable_js": "Aby wygodnie korzystać ze strony, włącz JavaScript.",
        "cookies": "Używamy plików cookie, aby mierzyć ruch i pamiętać ustawienia.",
        "accept": "Akceptuję",
        "comments": "Komentarze",
        "subscribe": "Subskrybuj",
        "thanks": "Dziękujemy za subskrypcję!",
    },
    "tr": {
        "home": "Ana sayfa",
        "news": "Haberler",
        "about": "Hakkımızda",
        "contact": "İletişim",
        "loading": "Yükleniyor…",
        "loading_comments": "Yorumlar yükleniyor…",
        "read_more": "Devamını oku",
        "show_more": "Daha fazla göster",
        "load_more": "Daha fazla yükle",
        "share": "Paylaş",
        "enable_js": "En iyi deneyim için JavaScript'i etkinleştirin.",
        "cookies": "Trafiği ölçmek ve ayarlarınızı hatırlamak için çerez kullanıyoruz.",
        "accept": "Kabul et",
        "comments": "Yorumlar",
        "subscribe": "Abone ol",
        "thanks": "Abone olduğunuz için teşekkürler!",
    },
    "ja": {
        "home": "ホーム",
        "news": "ニュース",
        "about": "会社概要",
        "contact": "お問い合わせ",
        "loading": "読み込み中…",
        "loading_comments": "コメントを読み込み中…",
        "read_more": "続きを読む",
        "show_more": "もっと見る",
        "load_more": "さらに読み込む",
        "share": "シェア",
        "enable_js": "快適にご利用いただくにはJavaScriptを有効にしてください。",
        "cookies": "アクセス解析と設定の保存のためにクッキーを使用しています。",
        "accept": "同意する",
        "comments": "コメント",
        "subscribe": "購読する",
        "thanks": "ご登録ありがとうございます。",
    },
    "zh": {
        "home": "首页",
        "news": "新闻",
        "about": "关于我们",
        "contact": "联系我们",
        "loading": "加载中…",
        "loading_comments": "正在加载评论…",
        "read_more": "阅读全文",
        "show_more": "显示更多",
        "load_more": "加载更多",
        "share": "分享",
        "enable_js": "为获得最佳体验，请启用 JavaScript。",
        "cookies": "我们使用 Cookie 统计访问量并记住您的设置。",
        "accept": "接受",
        "comments": "评论",
        "subscribe": "订阅",
        "thanks": "感谢订阅！",
    },
    "ko": {
        "home": "홈",
        "news": "뉴스",
        "about": "소개",
        "contact": "문의",
        "loading": "불러오는 중…",
        "loading_comments": "댓글을 불러오는 중…",
        "read_more": "더 읽기",
        "show_more": "더 보기",
        "load_more": "더 불러오기",
        "share": "공유",
        "enable_js": "원활한 이용을 위해 자바스크립트를 켜 주세요.",
        "cookies": "방문 통계와 설정 저장을 위해 쿠키를 사용합니다.",
        "accept": "동의",
        "comments": "댓글",
        "subscribe": "구독",
        "thanks": "구독해 주셔서 감사합니다!",
    },
    "ar": {
        "home": "الرئيسية",
        "news": "أخبار",
        "about": "من نحن",
        "contact": "اتصل بنا",
        "loading": "جارٍ التحميل…",
        "loading_comments": "جارٍ تحميل التعليقات…",
        "read_more": "اقرأ المزيد",
        "show_more": "عرض المزيد",
        "load_more": "تحميل المزيد",
        "share": "مشاركة",
        "enable_js": "لأفضل تجربة، يرجى تفعيل جافاسكربت.",
        "cookies": "نستخدم ملفات تعريف الارتباط لقياس الزيارات وحفظ إعداداتك.",
        "accept": "موافق",
        "comments": "التعليقات",
        "subscribe": "اشترك",
        "thanks": "شكرًا لاشتراكك!",
    },
    "hi": {
        "home": "मुखपृष्ठ",
        "news": "समाचार",
        "about": "हमारे बारे में",
        "contact": "संपर्क",
        "loading": "लोड हो रहा है…",
        "loading_comments": "टिप्पणियाँ लोड हो रही हैं…",
        "read_more": "और पढ़ें",
        "show_more": "और दिखाएँ",
        "load_more": "और लोड करें",
        "share": "साझा करें",
        "enable_js": "बेहतर अनुभव के लिए कृपया JavaScript चालू करें।",
        "cookies": "हम ट्रैफ़िक मापने और आपकी सेटिंग याद रखने के लिए कुकी का उपयोग करते हैं।",
        "accept": "स्वीकार करें",
        "comments": "टिप्पणियाँ",
        "subscribe": "सदस्यता लें",
        "thanks": "सदस्यता के लिए धन्यवाद!",
    },
}


@dataclass
class HeldoutPage:
    """One page: its HTML, the sub-resources it loads, and which paragraphs only scripts produce."""

    path: str
    kind: str
    variant: str
    lang: str
    html: str
    resources: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    static_text: list[str] = field(default_factory=list)
    js_only: list[str] = field(default_factory=list)

    @property
    def needs_js(self) -> bool:
        """True if some of the page's main text appears only after scripts run."""
        return bool(self.js_only)


class _Page:
    """Builder state for one page: language, RNG, path prefix, resources."""

    def __init__(self, rng: random.Random, index: int, kind: str, third_party: str):
        self.rng = rng
        self.kind = kind
        self.lang = rng.choice(LANGS)
        self.ui = _UI[self.lang]
        self.prefix = f"/h{index:04d}"
        self.third_party = third_party.rstrip("/")
        self.resources: dict[str, tuple[bytes, str]] = {}
        self.static_text: list[str] = []
        self.js_only: list[str] = []
        self.variant = ""
        self._used: set[str] = set()

    # --- text -----------------------------------------------------------------------------
    def sentence(self) -> str:
        subj, pred, comp = _POOLS[self.lang]
        r = self.rng
        a, b, c = r.choice(subj), r.choice(pred), r.choice(comp)
        year = r.randint(1871, 2023)
        stop = _STOP.get(self.lang, ".")
        if self.lang in _CJK:
            return (
                f"{year}年、{a}{c}{b}{stop}" if self.lang == "ja" else f"{year}年，{a}{b}{c}{stop}"
            )
        if self.lang == "ko":
            return f"{year}년에 {a} {c} {b}."
        if self.lang in ("tr", "hi"):
            return f"{year}: {a} {c} {b}{stop}"
        return f"{a} {b} {c} ({year}){stop}"

    def para(self, sentences: tuple[int, int] = (3, 5)) -> str:
        while True:
            n = self.rng.randint(*sentences)
            text = ("" if self.lang in _CJK else " ").join(self.sentence() for _ in range(n))
            if text not in self._used:
                self._used.add(text)
                return text

    def paras(self, n: int) -> list[str]:
        return [self.para() for _ in range(n)]

    def title(self) -> str:
        subj, _, comp = _POOLS[self.lang]
        sep = "" if self.lang in _CJK else " — "
        return f"{self.rng.choice(subj)}{sep}{self.rng.choice(comp)}"

    # --- resources --------------------------------------------------------------------------
    def res(self, name: str, body: str | bytes, ctype: str) -> str:
        path = f"{self.prefix}/{name}"
        self.resources[path] = (body.encode("utf-8") if isinstance(body, str) else body, ctype)
        return path

    def json_res(self, name: str, data: object) -> str:
        return self.res(name, json.dumps(data, ensure_ascii=False), "application/json")

    def js_res(self, name: str, source: str) -> str:
        return self.res(name, source, "text/javascript; charset=utf-8")

    def ident(self, *choices: str) -> str:
        return self.rng.choice(choices)


def _js(value: object) -> str:
    """A JS literal safe inside an inline <script>."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


def _ps(texts: list[str], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return "".join(f"<p{attr}>{escape(t)}</p>" for t in texts)


# A few ways real sites put paragraphs into a container; none names a library.
_ADDERS = (
    "function {f}(el,list){{list.forEach(function(t){{var p=document.createElement('p');p.textContent=t;el.appendChild(p);}});}}",
    "function {f}(el,list){{el.innerHTML+=list.map(function(t){{return '<p>'+t.replace(/&/g,'&amp;').replace(/</g,'&lt;')+'</p>';}}).join('');}}",
    "function {f}(el,list){{for(const t of list){{el.insertAdjacentHTML('beforeend','<p class=\"x-para\"></p>');el.lastElementChild.textContent=t;}}}}",
    "const {f}=(el,list)=>el.append(...list.map(t=>Object.assign(document.createElement('p'),{{textContent:t}})));",
)


def _adder(p: _Page) -> tuple[str, str]:
    name = p.ident("render", "put", "addParas", "fill", "paint", "_a")
    return name, p.rng.choice(_ADDERS).format(f=name)


# --- page chrome -------------------------------------------------------------------------------


def _chrome(p: _Page, title: str, main: str, head: str = "", body_end: str = "") -> str:
    ui = p.ui
    site = p.ident(
        "Coastline Review", "Valley Post", "Tramway Notes", "Orchard Weekly", "Glacier Log"
    )
    links = "".join(
        f'<li><a href="/{k}">{escape(ui[k])}</a></li>' for k in ("home", "news", "about", "contact")
    )
    layout = p.ident("semantic", "divsoup", "blog", "plain")
    dir_attr = ' dir="rtl"' if p.lang == "ar" else ""
    css = f'<link rel="stylesheet" href="{p.prefix}/site.css">' if p.rng.random() < 0.5 else ""
    if layout == "semantic":
        body = (
            f'<header class="site-header"><a class="brand" href="/">{site}</a><nav><ul>{links}</ul></nav></header>'
            f'<main id="main">{main}</main>'
            f'<aside class="sidebar"><h2>{escape(ui["news"])}</h2><ul>{links}</ul></aside>'
            f'<footer class="site-footer"><p>© 2026 {site}</p></footer>'
        )
    elif layout == "divsoup":
        body = (
            f'<div class="wrapper"><div class="top-bar"><span class="logo">{site}</span><ul class="menu">{links}</ul></div>'
            f'<div id="content" class="container"><div class="col-main">{main}</div>'
            f'<div class="col-side widget-area"><div class="widget"><h3>{escape(ui["news"])}</h3><ul>{links}</ul></div></div></div>'
            f'<div class="bottom">© {site}</div></div>'
        )
    elif layout == "blog":
        body = (
            f'<div id="page" class="site"><header id="masthead"><p class="site-title">{site}</p>'
            f'<nav class="main-navigation"><ul>{links}</ul></nav></header>'
            f'<div id="primary" class="content-area"><main id="main" class="site-main">{main}</main></div>'
            f'<footer id="colophon"><div class="site-info">{site} · <a href="/privacy">Privacy</a></div></footer></div>'
        )
    else:
        body = f'<div class="page">{main}</div>'
    return (
        f'<!DOCTYPE html><html lang="{p.lang}"{dir_attr}><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · {site}</title>{css}{head}</head>"
        f"<body>{body}{body_end}</body></html>"
    )


def _article(p: _Page, title: str, inner: str, tag: str | None = None) -> str:
    tag = tag or p.ident("article", "div", "section")
    cls = p.ident("post", "entry", "story", "article-body")
    byline = f'<p class="byline">{escape(p.title()[:24])} · 2026-0{p.rng.randint(1, 9)}-1{p.rng.randint(0, 9)}</p>'
    return f'<{tag} class="{cls}"><h1>{escape(title)}</h1>{byline}{inner}</{tag}>'


# --- JS pages -------------------------------------------------------------------------------------


def _timer(p: _Page) -> str:
    title = p.title()
    first, later = p.paras(p.rng.randint(0, 2)), p.paras(p.rng.randint(2, 5))
    p.static_text, p.js_only = first, later
    delay = p.rng.randint(1000, 4000)
    box = p.ident("late-content", "story-rest", "continued", "body-2")
    f, adder = _adder(p)
    placeholder = escape(p.ui["loading"]) if p.rng.random() < 0.3 else ""
    p.variant = p.ident("inline_text", "then_fetch", "external", "external_class_box")
    if p.variant == "external_class_box":  # no id, no placeholder: only a probe can tell
        src = p.js_res(
            "bundle.js",
            f"{adder}\nsetTimeout(()=>{f}(document.querySelector('.{box}'),{_js(later)}),{delay});\n",
        )
        script = f'<script src="{src}" async></script>'
        main = _article(p, title, f'{_ps(first)}<div class="{box}"></div>')
        return _chrome(p, title, main, body_end=script)
    if p.variant == "inline_text":
        script = f"<script>{adder}setTimeout(function(){{var b=document.getElementById('{box}');b.textContent='';{f}(b,{_js(later)});}},{delay});</script>"
    elif p.variant == "then_fetch":
        api = p.json_res("rest.json", {"items": later})
        script = (
            f"<script>{adder}setTimeout(()=>fetch('{api}').then(r=>r.json()).then(d=>{{"
            f"const b=document.getElementById('{box}');b.textContent='';{f}(b,d.items);}}),{delay});</script>"
        )
    else:
        src = p.js_res(
            f"late.{p.rng.randrange(16**6):06x}.js",
            f"{adder}\nwindow.setTimeout(function(){{var b=document.getElementById('{box}');b.textContent='';{f}(b,{_js(later)});}},{delay});\n",
        )
        script = f'<script src="{src}" defer></script>'
    main = _article(p, title, f'{_ps(first)}<div id="{box}">{placeholder}</div>')
    return _chrome(p, title, main, body_end=script)


def _fetch(p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(3, 6))
    p.js_only = body
    api = p.json_res("article.json", {"id": p.prefix, "title": title, "body": body})
    f, adder = _adder(p)
    p.variant = p.ident("fetch", "xhr", "external_fetch", "into_empty_article")
    box = p.ident("article-body", "content-area", "text", "post-content")
    if p.variant == "fetch":
        script = f"<script>{adder}fetch('{api}').then(function(r){{return r.json();}}).then(function(d){{{f}(document.getElementById('{box}'),d.body);}});</script>"
        main = _article(p, title, f'<div id="{box}"></div>')
    elif p.variant == "xhr":
        script = (
            f"<script>{adder}var x=new XMLHttpRequest();x.open('GET','{api}');x.responseType='json';"
            f"x.onload=function(){{{f}(document.querySelector('.{box}'),x.response.body);}};x.send();</script>"
        )
        main = _article(p, title, f'<div class="{box}"></div>')
    elif p.variant == "external_fetch":
        src = p.js_res(
            "main.js",
            f"{adder}\nfetch('{api}').then(r=>r.json()).then(d=>{f}(document.getElementById('{box}'),d.body));\n",
        )
        script = f'<script src="{src}"></script>'
        main = _article(p, title, f'<div id="{box}"></div>')
    else:
        script = (
            f"<script>{adder}fetch('{api}').then(r=>r.json()).then(d=>{{const a=document.querySelector('article');"
            f"const h=document.createElement('h1');h.textContent=d.title;a.appendChild(h);{f}(a,d.body);}});</script>"
        )
        main = "<article></article>"
    return _chrome(p, title, main, body_end=script)


def _infinite_scroll(p: _Page) -> str:
    title = p.title()
    first = p.paras(p.rng.randint(3, 5))
    pages = [p.paras(2) for _ in range(p.rng.randint(2, 3))]
    p.static_text, p.js_only = first, [t for page in pages for t in page]
    urls = [p.json_res(f"feed-{i + 2}.json", {"items": items}) for i, items in enumerate(pages)]
    for i in range(len(urls)):  # each page names the next one, like a cursor
        body = json.dumps({"items": pages[i], "next": urls[i + 1] if i + 1 < len(urls) else None})
        p.resources[urls[i]] = (body.encode("utf-8"), "application/json")
    f, adder = _adder(p)
    feed = p.ident("feed", "stream", "timeline", "posts")
    p.variant = p.ident("observer", "scroll_listener", "external_loader")
    items = "".join(f'<div class="card"><p>{escape(t)}</p></div>' for t in first)
    load = (
        f"var next='{urls[0]}',busy=false,io=null,sentinel=null;function more(){{if(busy||!next)return;busy=true;"
        f"fetch(next).then(r=>r.json()).then(d=>{{{f}(document.getElementById('{feed}'),d.items);next=d.next;busy=false;"
        # re-arm the observer: a sentinel still in view after a short page asks for the next one
        "if(io){io.unobserve(sentinel);io.observe(sentinel);}});}"
    )
    if p.variant == "observer":
        script = f"<script>{adder}{load}sentinel=document.getElementById('sentinel');io=new IntersectionObserver(es=>{{if(es[0].isIntersecting)more();}});io.observe(sentinel);</script>"
        tail = '<div id="sentinel"></div>'
    elif p.variant == "scroll_listener":
        script = (
            f"<script>{adder}{load}window.addEventListener('scroll',function(){{"
            "if(window.innerHeight+window.scrollY>=document.body.offsetHeight-400)more();},{passive:true});more();</script>"
        )
        tail = '<div style="height:1800px"></div>'
    else:
        src = p.js_res(
            "feed.js",
            f"{adder}\n{load}\nsentinel=document.querySelector('.feed-end');io=new IntersectionObserver(function(es){{if(es[0].isIntersecting)more();}});io.observe(sentinel);\n",
        )
        script = f'<script src="{src}" async></script>'
        spinner = p.ident(
            f'<div class="feed-end" aria-busy="true">{escape(p.ui["loading"])}</div>',
            '<div class="feed-end"><div class="spinner" role="progressbar"></div></div>',
            f'<div class="feed-end loading">{escape(p.ui["loading"])}</div>',
        )
        tail = spinner
    main = f'<h1>{escape(title)}</h1><div id="{feed}" class="feed">{items}</div>{tail}'
    return _chrome(p, title, main, body_end=script)


def _shadow_dom(p: _Page) -> str:
    title = p.title()
    first, inner = p.paras(p.rng.randint(0, 2)), p.paras(p.rng.randint(2, 4))
    p.static_text, p.js_only = first, inner
    tag = p.ident("story-body", "x-article", "rich-text", "post-content-el")
    cls = "".join(w.title() for w in tag.split("-"))
    p.variant = p.ident("constructor_text", "template_clone", "external_module")
    if p.variant == "constructor_text":
        script = (
            f"<script>class {cls} extends HTMLElement{{constructor(){{super();const r=this.attachShadow({{mode:'open'}});"
            f"r.innerHTML='<style>p{{margin:1em 0}}</style>'+{_js(inner)}.map(t=>'<p>'+t+'</p>').join('');}}}}"
            f"customElements.define('{tag}',{cls});</script>"
        )
        extra = ""
    elif p.variant == "template_clone":
        extra = (
            f'<template id="{tag}-tpl"><style>:host{{display:block}}</style>{_ps(inner)}</template>'
        )
        script = (
            f"<script>customElements.define('{tag}',class extends HTMLElement{{connectedCallback(){{"
            f"this.attachShadow({{mode:'open'}}).appendChild(document.getElementById('{tag}-tpl').content.cloneNode(true));}}}});</script>"
        )
    else:
        api = p.json_res("text.json", {"paragraphs": inner})
        src = p.js_res(
            "elements.mjs",
            f"customElements.define('{tag}',class extends HTMLElement{{async connectedCallback(){{"
            f"const root=this.attachShadow({{mode:'open'}});const d=await (await fetch('{api}')).json();"
            "for(const t of d.paragraphs){const q=document.createElement('p');q.textContent=t;root.appendChild(q);}}});\n",
        )
        script = f'<script type="module" src="{src}"></script>'
        extra = ""
    main = _article(p, title, f"{_ps(first)}<{tag}></{tag}>{extra}")
    return _chrome(p, title, main, body_end=script)


def _app_shell(p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(3, 6))
    p.js_only = body
    root = p.ident("app-root", "mount", "page-root", "container", "spa", "view")
    h = f"{p.rng.randrange(16**8):08x}"
    # The bundle carries its own data, like a prerendered store; it names no framework.
    bundle = (
        f"(()=>{{const S={_js({'title': title, 'blocks': body})};const m=document.getElementById('{root}');"
        "const e=(t,c,x)=>{const n=document.createElement(t);if(c)n.className=c;if(x)n.textContent=x;return n;};"
        "const a=e('article','view-article');a.appendChild(e('h1','',S.title));"
        "S.blocks.forEach(b=>a.appendChild(e('p','blk',b)));m.appendChild(a);})();\n"
    )
    src = p.js_res(f"assets/index-{h}.js", bundle)
    p.variant = p.ident("module_bundle", "defer_bundle", "with_chrome")
    head = f'<link rel="modulepreload" href="{src}"><link rel="stylesheet" href="{p.prefix}/assets/index-{h[:6]}.css">'
    if p.variant == "module_bundle":
        script = f'<script type="module" crossorigin src="{src}"></script>'
        return (
            f'<!DOCTYPE html><html lang="{p.lang}"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'{head}</head><body><div id="{root}"></div>{script}</body></html>'
        )
    if p.variant == "defer_bundle":
        return (
            f'<!DOCTYPE html><html lang="{p.lang}"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'{head}<script defer src="{src}"></script></head><body><noscript>{escape(p.ui["enable_js"])}</noscript>'
            f'<div id="{root}"></div></body></html>'
        )
    return _chrome(
        p, title, f'<div id="{root}"></div>', head=head, body_end=f'<script src="{src}"></script>'
    )


def _document_write(p: _Page) -> str:
    title = p.title()
    first, written = p.paras(p.rng.randint(0, 2)), p.paras(p.rng.randint(2, 4))
    p.static_text, p.js_only = first, written
    p.variant = p.ident("writeln_loop", "single_write")
    if p.variant == "writeln_loop":
        script = f"<script>var T={_js(written)};for(var i=0;i<T.length;i++){{document.writeln('<p>'+T[i]+'</p>');}}</script>"
    else:
        html = "".join(f"<p>{escape(t)}</p>" for t in written)
        script = f"<script>document.write({_js(html)});</script>"
    main = _article(p, title, f"{_ps(first)}{script}")
    return _chrome(p, title, main)


def _inner_html(p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(3, 5))
    p.js_only = body
    html = f"<h1>{escape(title)}</h1>" + "".join(f"<p>{escape(t)}</p>" for t in body)
    target = p.ident("main", "article")
    p.variant = p.ident("inline", "external", "on_dom_ready")
    if p.variant == "inline":
        script = f"<script>document.querySelector('{target}').innerHTML={_js(html)};</script>"
    elif p.variant == "on_dom_ready":
        script = f"<script>document.addEventListener('DOMContentLoaded',()=>{{document.querySelector('{target}').innerHTML={_js(html)};}});</script>"
    else:
        src = p.js_res("page.js", f"document.querySelector('{target}').innerHTML={_js(html)};\n")
        script = f'<script src="{src}"></script>'
    if target == "main":
        chrome_title = title
        page = _chrome(p, chrome_title, "", body_end=script)
        if '<main id="main"></main>' not in page:  # layouts without <main>: give them one
            page = page.replace('<div class="page">', '<div class="page"><main></main>', 1)
            page = page.replace('<div class="col-main">', '<div class="col-main"><main></main>', 1)
        return page
    return _chrome(p, title, "<article></article>", body_end=script)


def _skeleton(p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(3, 5))
    p.js_only = body
    api = p.json_res("content.json", {"paragraphs": body})
    f, adder = _adder(p)
    delay = p.rng.randint(200, 1500)
    box = p.ident("content", "article-text", "reader")
    p.variant = p.ident("loading_text", "spinner", "skeleton_lines", "aria_busy")
    if p.variant == "loading_text":
        ph = f'<p class="msg">{escape(p.ui["loading"])}</p>'
    elif p.variant == "spinner":
        ph = '<div class="spinner"><div></div><div></div><div></div></div>'
    elif p.variant == "skeleton_lines":
        ph = "".join('<div class="skeleton-line"></div>' for _ in range(p.rng.randint(4, 8)))
    else:
        ph = '<div class="ph" aria-hidden="true"></div><div class="ph" aria-hidden="true"></div>'
    busy = ' aria-busy="true"' if p.variant == "aria_busy" or p.rng.random() < 0.3 else ""
    src = p.js_res(
        "reader.js",
        f"{adder}\nsetTimeout(function(){{fetch('{api}').then(function(r){{return r.json();}}).then(function(d){{"
        f"var b=document.getElementById('{box}');b.innerHTML='';b.removeAttribute('aria-busy');{f}(b,d.paragraphs);}});}},{delay});\n",
    )
    main = _article(p, title, f'<div id="{box}"{busy}>{ph}</div>')
    return _chrome(p, title, main, body_end=f'<script src="{src}" defer></script>')


def _json_hydrate(p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(3, 6))
    p.js_only = body
    blob_id = p.ident("page-data", "initial-state", "preload", "app-state")
    state = {
        "page": {"title": title, "sections": [{"type": "paragraph", "text": t} for t in body]},
        "user": None,
        "flags": {"newLayout": True},
    }
    blob = f'<script type="application/json" id="{blob_id}">{_js(state)}</script>'
    mount = p.ident("hydrate-root", "reader", "mount")
    code = (
        f"var s=JSON.parse(document.getElementById('{blob_id}').textContent);var m=document.getElementById('{mount}');"
        "var h=document.createElement('h1');h.textContent=s.page.title;m.appendChild(h);"
        "s.page.sections.forEach(function(x){var q=document.createElement('p');q.textContent=x.text;m.appendChild(q);});"
    )
    p.variant = p.ident("inline", "external")
    if p.variant == "inline":
        script = f"<script>{code}</script>"
    else:
        script = f'<script src="{p.js_res("hydrate.js", code)}"></script>'
    return _chrome(p, title, f'<div id="{mount}"></div>{blob}', body_end=script)


def _partial(p: _Page) -> str:
    title = p.title()
    first, rest = p.paras(p.rng.randint(2, 4)), p.paras(p.rng.randint(2, 4))
    p.static_text, p.js_only = first, rest
    f, adder = _adder(p)
    p.variant = p.ident(
        "comments_fetch", "second_half_external", "second_half_xhr_class", "titled_section_external"
    )
    if p.variant == "titled_section_external":  # a heading with nothing under it yet
        api = p.json_res("reviews.json", {"reviews": rest})
        src = p.js_res(
            "reviews.js",
            f"{adder}\nfetch('{api}').then(r=>r.json()).then(d=>{f}(document.getElementById('reviews'),d.reviews));\n",
        )
        script = f'<script src="{src}" defer></script>'
        main = _article(p, title, _ps(first)) + (
            f'<section id="reviews"><h2>{escape(p.ui["comments"])}</h2></section>'
        )
        return _chrome(p, title, main, body_end=script)
    if p.variant == "comments_fetch":
        api = p.json_res("comments.json", {"comments": [{"author": "r", "body": t} for t in rest]})
        ph = p.ident(escape(p.ui["loading_comments"]), "")
        script = (
            f"<script>{adder}fetch('{api}').then(r=>r.json()).then(d=>{{const c=document.getElementById('comments');"
            f"c.innerHTML='<h2>{escape(p.ui['comments'])}</h2>';{f}(c,d.comments.map(x=>x.body));}});</script>"
        )
        main = _article(p, title, _ps(first)) + f'<section id="comments">{ph}</section>'
    elif p.variant == "second_half_external":
        api = p.json_res("part2.json", {"html": "".join(f"<p>{escape(t)}</p>" for t in rest)})
        src = p.js_res(
            "part2.js",
            f"fetch('{api}').then(r=>r.json()).then(d=>{{document.getElementById('part-2').innerHTML=d.html;}});\n",
        )
        script = f'<script src="{src}" async></script>'
        main = _article(p, title, f'{_ps(first)}<div id="part-2"></div>')
    else:
        api = p.json_res("more.json", {"paragraphs": rest})
        script = (
            f"<script>{adder}(function(){{var x=new XMLHttpRequest();x.onreadystatechange=function(){{"
            f"if(x.readyState===4&&x.status===200){{{f}(document.querySelector('.article-rest'),JSON.parse(x.responseText).paragraphs);}}}};"
            f"x.open('GET','{api}',true);x.send();}})();</script>"
        )
        main = _article(p, title, f'{_ps(first)}<div class="article-rest"></div>')
    return _chrome(p, title, main, body_end=script)


# --- static pages -----------------------------------------------------------------------------


def _analytics_snippets(p: _Page, k: int | None = None) -> tuple[str, str, list[str]]:
    """(head, body-start HTML, names) of 1-3 tracking snippets, all `createElement('script')` loaders."""
    tp = p.third_party
    tag = f"{p.rng.randrange(16**8):08X}"
    gtag = (
        f'<script async src="{tp}/gtag/js?id=G-{tag}"></script><script>window.dataLayer=window.dataLayer||[];'
        f"function gtag(){{dataLayer.push(arguments);}}gtag('js',new Date());gtag('config','G-{tag}');</script>"
    )
    gtm = (
        "<script>(function(w,d,s,l,i){w[l]=w[l]||[];w[l].push({'gtm.start':new Date().getTime(),event:'gtm.js'});"
        "var f=d.getElementsByTagName(s)[0],j=d.createElement(s),dl=l!='dataLayer'?'&l='+l:'';j.async=true;"
        f"j.src='{tp}/gtm.js?id='+i+dl;f.parentNode.insertBefore(j,f);}})(window,document,'script','dataLayer','GTM-{tag[:6]}');</script>"
    )
    gtm_ns = f'<noscript><iframe src="{tp}/ns.html?id=GTM-{tag[:6]}" height="0" width="0" style="display:none;visibility:hidden"></iframe></noscript>'
    pixel = (
        "<script>!function(f,b,e,v,n,t,s){if(f.fbq)return;n=f.fbq=function(){n.callMethod?"
        "n.callMethod.apply(n,arguments):n.queue.push(arguments)};if(!f._fbq)f._fbq=n;n.push=n;n.loaded=!0;"
        "n.version='2.0';n.queue=[];t=b.createElement(e);t.async=!0;t.src=v;s=b.getElementsByTagName(e)[0];"
        f"s.parentNode.insertBefore(t,s)}}(window,document,'script','{tp}/en_US/fbevents.js');"
        f"fbq('init','{p.rng.randrange(10**15)}');fbq('track','PageView');</script>"
        f'<noscript><img height="1" width="1" style="display:none" src="{tp}/tr?ev=PageView&noscript=1"></noscript>'
    )
    chosen = p.rng.sample(["gtag", "gtm", "pixel"], k or p.rng.randint(1, 3))
    head = "".join({"gtag": gtag, "gtm": gtm, "pixel": pixel}[c] for c in chosen)
    body_start = gtm_ns if "gtm" in chosen else ""
    return head, body_start, sorted(chosen)


def _static_article(p: _Page, n: tuple[int, int] = (5, 9)) -> tuple[str, list[str]]:
    title = p.title()
    body = p.paras(p.rng.randint(*n))
    p.static_text = body
    mid = len(body) // 2
    inner = f"{_ps(body[:mid])}<h2>{escape(p.title())}</h2>{_ps(body[mid:])}"
    return title, [inner]


def _analytics(p: _Page) -> str:
    title, (inner,) = _static_article(p)
    head, ns, names = _analytics_snippets(p)
    p.variant = "+".join(names)
    page = _chrome(p, title, _article(p, title, inner), head=head)
    return page.replace("<body>", f"<body>{ns}", 1)


def _cookie_banner(p: _Page) -> str:
    title, (inner,) = _static_article(p)
    p.variant = p.ident("static_banner", "consent_loader")
    banner = (
        f'<div id="cookie-notice" class="cookie-banner" role="dialog"><p>{escape(p.ui["cookies"])}</p>'
        f'<button type="button" id="cookie-accept">{escape(p.ui["accept"])}</button></div>'
        "<script>(function(){var b=document.getElementById('cookie-notice');"
        "if(localStorage.getItem('consent')==='1'){b.style.display='none';}"
        "document.getElementById('cookie-accept').addEventListener('click',function(){"
        "localStorage.setItem('consent','1');b.classList.add('is-hidden');b.setAttribute('aria-hidden','true');});})();</script>"
    )
    if p.variant == "consent_loader":  # a consent platform mounts itself in an empty box
        banner = (
            f'<div id="consent-root"></div><script src="{p.third_party}/consent/v2/loader.js" '
            'data-domain-script="a1b2c3" async></script>'
        )
    head, _, _ = _analytics_snippets(p, 1)
    return _chrome(p, title, _article(p, title, inner), head=head, body_end=banner)


def _noscript(p: _Page) -> str:
    title, (inner,) = _static_article(p)
    p.variant = p.ident("iframe", "enable_js_note", "img_fallback")
    if p.variant == "iframe":
        ns = f'<noscript><iframe src="{p.third_party}/embed/map?id=42" width="600" height="300"></iframe></noscript>'
    elif p.variant == "enable_js_note":
        ns = f'<noscript><div class="js-off">{escape(p.ui["enable_js"])}</div></noscript>'
    else:
        ns = f'<noscript><img src="{p.prefix}/fallback.png" alt="{escape(p.title())}"></noscript>'
    scripts = f'<script src="{p.prefix}/js/site.min.js"></script><script src="{p.prefix}/js/menu.js" defer></script>'
    return _chrome(p, title, _article(p, title, ns + inner), body_end=scripts)


def _read_more_links(p: _Page) -> str:
    title = p.title()
    teasers = [p.para((2, 3)) for _ in range(p.rng.randint(4, 7))]
    p.static_text = teasers
    ui = p.ui
    p.variant = p.ident("teaser_list", "pager_link", "css_expander")
    if p.variant == "teaser_list":
        items = "".join(
            f'<article class="teaser"><h2><a href="/story/{i}">{escape(p.title())}</a></h2><p>{escape(t)}</p>'
            f'<a class="more-link" href="/story/{i}">{escape(ui["read_more"])} »</a></article>'
            for i, t in enumerate(teasers)
        )
        main = f"<h1>{escape(title)}</h1>{items}"
    elif p.variant == "pager_link":
        main = _article(p, title, _ps(teasers)) + (
            f'<nav class="pager"><a class="btn" href="?page=2">{escape(ui["load_more"])}</a> '
            f'<a href="/archive">{escape(ui["show_more"])}</a></nav>'
        )
    else:  # the whole text is in the page; a button only lifts a CSS clamp
        main = _article(
            p,
            title,
            f'<div class="clamp" id="full-text">{_ps(teasers)}</div>'
            f'<button type="button" class="expand" aria-controls="full-text">{escape(ui["show_more"])}</button>',
        )
        main += (
            "<script>document.querySelector('.expand').addEventListener('click',function(e){"
            "document.getElementById('full-text').classList.toggle('clamp');"
            f"e.target.textContent=e.target.textContent==={_js(ui['show_more'])}?'−':{_js(ui['show_more'])};}});</script>"
        )
    head, _, _ = _analytics_snippets(p, 1)
    return _chrome(p, title, main, head=head)


def _share_widgets(p: _Page) -> str:
    title, (inner,) = _static_article(p)
    url = f"https://example.org{p.prefix}"
    share = (
        f'<div class="share-bar"><span>{escape(p.ui["share"])}:</span>'
        f'<a href="https://twitter.com/intent/tweet?url={url}" target="_blank" rel="noopener">X</a>'
        f'<a href="https://www.facebook.com/sharer/sharer.php?u={url}" target="_blank" rel="noopener">Facebook</a>'
        f'<a href="mailto:?subject={escape(title)}&amp;body={url}">E-mail</a></div>'
        f'<div class="fb-like" data-href="{url}" data-layout="button_count" data-action="like"></div>'
        '<div class="sharethis-inline-share-buttons"></div>'
    )
    sdk = (
        '<div id="fb-root"></div>'
        "<script>(function(d,s,id){var js,fjs=d.getElementsByTagName(s)[0];if(d.getElementById(id))return;"
        f"js=d.createElement(s);js.id=id;js.src='{p.third_party}/sdk.js#xfbml=1&version=v18.0';"
        "fjs.parentNode.insertBefore(js,fjs);}(document,'script','facebook-jssdk'));</script>"
        f'<script src="{p.third_party}/js/sharethis.js#property=5f2&product=inline-share-buttons" async></script>'
    )
    p.variant = "links+widgets"
    page = _chrome(p, title, _article(p, title, inner + share))
    return page.replace("<body>", f"<body>{sdk}", 1)


def _json_ld(p: _Page) -> str:
    title, (inner,) = _static_article(p)
    p.variant = p.ident("article_body", "breadcrumbs_org")
    data: dict = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": title,
        "datePublished": "2026-03-04",
        "inLanguage": p.lang,
    }
    if p.variant == "article_body":
        data["articleBody"] = " ".join(p.static_text)
    else:
        data["publisher"] = {
            "@type": "Organization",
            "name": "Valley Post",
            "description": p.para((1, 1)),
        }
    head = f'<script type="application/ld+json">{_js(data)}</script>'
    return _chrome(p, title, _article(p, title, inner), head=head)


def _jquery_menu(p: _Page) -> str:
    title, (inner,) = _static_article(p)
    p.variant = p.ident("toggle", "dropdown")
    scripts = (
        f'<script src="{p.prefix}/js/jquery-3.7.1.min.js"></script><script>'
        "$(function(){$('.menu-toggle').on('click',function(){$('nav, .menu').toggleClass('open');"
        "$(this).attr('aria-expanded',function(i,v){return v==='true'?'false':'true';});});"
        "$('.has-sub > a').on('click',function(e){e.preventDefault();$(this).next('ul').slideToggle(150);});"
        "$(window).on('scroll',function(){$('.site-header, .top-bar').toggleClass('sticky',$(this).scrollTop()>80);});});</script>"
    )
    toggle = '<button class="menu-toggle" aria-expanded="false" aria-label="Menu">☰</button>'
    return _chrome(p, title, toggle + _article(p, title, inner), body_end=scripts)


def _lazy_images(p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(5, 8))
    p.static_text = body
    parts = []
    for i, t in enumerate(body):
        parts.append(f"<p>{escape(t)}</p>")
        if i % 2 == 1:
            alt = escape(p.title())
            parts.append(
                p.ident(
                    f'<figure><img loading="lazy" src="{p.prefix}/img/{i}.jpg" alt="{alt}" width="800" height="450"></figure>',
                    f'<figure><img class="lazyload" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="{p.prefix}/img/{i}.jpg" alt="{alt}"></figure>',
                    f'<div class="img-wrap"><img class="lazy" data-src="{p.prefix}/img/{i}.webp" alt="{alt}"></div>',
                )
            )
    p.variant = p.ident("observer_swap", "native_only")
    script = ""
    if p.variant == "observer_swap":
        script = (
            "<script>document.addEventListener('DOMContentLoaded',function(){var io=new IntersectionObserver(function(es){"
            "es.forEach(function(e){if(e.isIntersecting){var im=e.target;im.src=im.dataset.src;im.classList.remove('lazy','lazyload');"
            "io.unobserve(im);}});},{rootMargin:'200px'});document.querySelectorAll('img[data-src]').forEach(function(im){io.observe(im);});});</script>"
        )
    return _chrome(p, title, _article(p, title, "".join(parts)), body_end=script)


def _ssr_app(p: _Page) -> str:
    title, (inner,) = _static_article(p)
    h = f"{p.rng.randrange(16**8):08x}"
    p.variant = p.ident("next", "nuxt", "vue_ssr", "svelte_kit", "react_root")
    article = _article(p, title, inner, tag="article")
    props = {
        "props": {"pageProps": {"post": {"title": title, "body": p.static_text}}},
        "page": "/[slug]",
        "buildId": h,
    }
    if p.variant == "next":
        body = f'<div id="__next">{article}</div><script id="__NEXT_DATA__" type="application/json">{_js(props)}</script>'
        body += f'<script src="{p.prefix}/_next/static/chunks/main-{h}.js" defer></script>'
    elif p.variant == "nuxt":
        body = f'<div id="__nuxt"><div id="__layout">{article}</div></div>'
        body += f"<script>window.__NUXT__={_js({'data': [{'post': {'title': title, 'body': p.static_text}}]})}</script>"
        body += f'<script src="{p.prefix}/_nuxt/{h}.js" defer></script>'
    elif p.variant == "vue_ssr":
        body = f'<div id="app" data-server-rendered="true">{article}</div><script>window.__INITIAL_STATE__={_js({"post": {"title": title}})}</script>'
        body += f'<script src="{p.prefix}/js/app.{h}.js" defer></script>'
    elif p.variant == "svelte_kit":
        body = f'<div style="display: contents">{article}</div>'
        body += f"<script type=\"module\">import {{ start }} from '{p.prefix}/_app/immutable/start-{h}.js';/* start({{target: document.body}}) */</script>"
    else:
        body = f'<div id="root" data-reactroot="">{article}</div><script src="{p.prefix}/static/js/main.{h}.js"></script>'
    return _chrome(p, title, body)


def _ad_slots(p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(5, 8))
    p.static_text = body
    slots, parts = [], []
    for i, t in enumerate(body):
        parts.append(f"<p>{escape(t)}</p>")
        if i in (1, 4):
            sid = f"div-gpt-ad-{p.rng.randrange(10**12)}-{i}"
            slots.append(sid)
            parts.append(f'<div id="{sid}" class="ad-slot" style="min-height:250px"></div>')
    head = (
        f'<script async src="{p.third_party}/tag/js/gpt.js"></script><script>window.googletag=window.googletag||{{cmd:[]}};'
        "googletag.cmd.push(function(){"
        + "".join(
            f"googletag.defineSlot('/1234/news',[300,250],'{s}').addService(googletag.pubads());"
            for s in slots
        )
        + "googletag.enableServices();});</script>"
    )
    calls = "".join(
        f"<script>googletag.cmd.push(function(){{googletag.display('{s}');}});</script>"
        for s in slots
    )
    p.variant = "gpt"
    return _chrome(p, title, _article(p, title, "".join(parts)), head=head, body_end=calls)


def _post_form(p: _Page) -> str:
    title, (inner,) = _static_article(p)
    ui = p.ui
    form = (
        f'<form id="signup" class="newsletter"><input type="email" name="email" required>'
        f'<button type="submit">{escape(ui["subscribe"])}</button><div class="spinner" hidden></div>'
        '<p class="form-msg" aria-live="polite"></p></form>'
        "<script>document.getElementById('signup').addEventListener('submit',function(e){e.preventDefault();"
        "var f=e.target;f.querySelector('.spinner').hidden=false;"
        f"fetch('{p.prefix}/subscribe',{{method:'POST',body:new FormData(f)}}).then(function(){{"
        f"f.querySelector('.form-msg').textContent={_js(ui['thanks'])};f.querySelector('.spinner').hidden=true;}});}});</script>"
    )
    p.variant = "newsletter"
    return _chrome(p, title, _article(p, title, inner + form))


def _short_page(p: _Page) -> str:
    title = p.title()
    p.variant = p.ident("contact", "gallery")
    if p.variant == "contact":
        text = [p.sentence()]
        inner = _ps(text) + (
            '<address>Harbour Street 4<br>Tel. +49 421 555 0100<br><a href="mailto:desk@example.org">desk@example.org</a></address>'
        )
    else:
        text = [p.sentence() for _ in range(2)]
        inner = "".join(
            f'<figure><img src="{p.prefix}/g/{i}.jpg" alt="{escape(p.title())}" loading="lazy">'
            f"<figcaption>{escape(t)}</figcaption></figure>"
            for i, t in enumerate(text)
        )
    p.static_text = text
    head, _, _ = _analytics_snippets(p, 1)
    return _chrome(p, title, _article(p, title, inner), head=head)


def _embeds(p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(5, 8))
    p.static_text = body
    p.variant = p.ident("map", "player", "chart")
    box = {"map": "map-canvas", "player": "video-player", "chart": "price-chart"}[p.variant]
    at = p.rng.randint(1, len(body) - 2)
    inner = _ps(body[:at]) + f'<div id="{box}" style="height:360px"></div>' + _ps(body[at:])
    scripts = f'<script src="{p.third_party}/{p.variant}/v3/embed.js" async></script>'
    scripts += f'<script src="{p.prefix}/js/{p.variant}-init.js" defer></script>'
    return _chrome(p, title, _article(p, title, inner), body_end=scripts)


_BUILDERS = {
    "timer": _timer,
    "fetch": _fetch,
    "infinite_scroll": _infinite_scroll,
    "shadow_dom": _shadow_dom,
    "app_shell": _app_shell,
    "document_write": _document_write,
    "inner_html": _inner_html,
    "skeleton": _skeleton,
    "json_hydrate": _json_hydrate,
    "partial": _partial,
    "analytics": _analytics,
    "cookie_banner": _cookie_banner,
    "noscript": _noscript,
    "read_more_links": _read_more_links,
    "share_widgets": _share_widgets,
    "json_ld": _json_ld,
    "jquery_menu": _jquery_menu,
    "lazy_images": _lazy_images,
    "ssr_app": _ssr_app,
    "ad_slots": _ad_slots,
    "post_form": _post_form,
    "short_page": _short_page,
    "embeds": _embeds,
}


def generate(
    seed: int, n: int = 120, js_share: float = 0.5, third_party: str = "http://127.0.0.1:9"
) -> list[HeldoutPage]:
    """`n` pages, about `js_share` of them JS pages, kinds cycled then shuffled; same seed, same pages.

    `third_party` is the origin of analytics, ad and widget scripts (default: a closed loopback
    port, so a browser fails fast on them as it would on a blocked tracker).
    """
    if n < 1:
        raise ValueError(f"n={n}: ask for at least one page")
    if not 0.0 <= js_share <= 1.0:
        raise ValueError(f"js_share={js_share}: must be within [0, 1]")
    rng = random.Random(seed)
    n_js = round(n * js_share)
    kinds = [JS_KINDS[i % len(JS_KINDS)] for i in range(n_js)]
    kinds += [STATIC_KINDS[i % len(STATIC_KINDS)] for i in range(n - n_js)]
    rng.shuffle(kinds)
    pages = []
    for i, kind in enumerate(kinds):
        p = _Page(random.Random(rng.randrange(2**63)), i, kind, third_party)
        html = _BUILDERS[kind](p)
        pages.append(
            HeldoutPage(
                path=f"{p.prefix}/index.html",
                kind=kind,
                variant=p.variant,
                lang=p.lang,
                html=html,
                resources=p.resources,
                static_text=p.static_text,
                js_only=p.js_only,
            )
        )
    return pages
