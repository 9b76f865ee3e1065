"""A held-out quality set unlike the sample web: good web prose against five kinds of bad page.

Good documents are built from hand-written paragraphs on topics the sample web does not cover
(astronomy, law, medicine, finance, mountaineering, programming); bad documents are generated
per language: keyword spam, navigation dumps, word salad from the language's own vocabulary (the
judged split's good paragraphs), placeholder pages and doorway pages (city x service keywords).

Two disjoint splits, deterministic for a seed:
- `dev`: the first DEV_PARAGRAPHS paragraphs of each language and their vocabulary, seed + 1000.
  Choices (cuts, the rescue score) may be made here.
- `test`: the remaining paragraphs, their vocabulary, and other seeds. Judged only; never tune on it.

Nothing here is read by the quality models' training (which sees only the sample web).

Run `.venv/bin/python -m tests.filters.heldout_quality [--split dev|test]` to print the default
scorer's AUC per language.
"""

from __future__ import annotations

import random

DEV_PARAGRAPHS = 3

GOOD: dict[str, list[str]] = {
    "en": [
        "Amateur astronomers who want to photograph faint galaxies soon learn that the telescope matters less than the mount. A long exposure only works if the mount tracks the sky smoothly, correcting for the rotation of the Earth to within a few arcseconds. That is why experienced observers spend an evening on polar alignment before they take a single frame.",
        "When a tenant stops paying rent, the landlord cannot simply change the locks. In most jurisdictions the law requires written notice, a waiting period and, if the debt remains, a court order. Skipping these steps can expose the landlord to damages even when the unpaid rent is beyond dispute.",
        "Sunscreen is tested in laboratories at a thickness of two milligrams per square centimetre, which is far more than most people apply. At half that amount the protection drops sharply, so dermatologists suggest using roughly a shot glass of lotion for the whole body and reapplying it after swimming.",
        "An index fund does not try to beat the market; it tries to be the market. By holding every company in a benchmark in proportion to its size, the fund keeps trading to a minimum, and its low fees compound over decades into a difference that many actively managed funds never recover.",
        "On the final ridge below the summit the guide insisted that we turn around at two o'clock, whatever the weather. Afternoon storms build quickly in the high mountains, and a descent in wet snow and poor visibility is where most accidents happen, not on the way up.",
        "A memory leak in a long-running server rarely shows up in unit tests. It appears after days, when a cache that was never bounded has grown until the process is killed. Profiling the heap at intervals and comparing the snapshots usually points to the structure that keeps growing.",
        "The light we see from the Andromeda galaxy left it about two and a half million years ago. Despite that distance, Andromeda and the Milky Way are moving towards each other, and in several billion years the two spirals are expected to merge into a single elliptical galaxy.",
        "A will that is not signed in front of the required number of witnesses may be declared invalid, and the estate is then divided according to the rules of intestacy. Those rules often differ from what the deceased wanted, which is why lawyers recommend reviewing a will after every major change in life.",
        "Antibiotics do nothing against the common cold, which is caused by viruses. Taking them anyway exposes the bacteria in the body to the drug without need and helps resistant strains spread. Rest, fluids and time remain the most reliable treatment for an ordinary cold.",
        "Compound interest rewards patience more than cleverness. A saver who puts aside a modest amount every month from the age of twenty-five will usually end up with more than someone who starts at forty with twice the monthly contribution, simply because the early money has longer to grow.",
        "Version control is not only for teams. Even a single developer benefits from committing small, well described changes, because the history then explains why a line of code exists and makes it possible to find the exact commit that introduced a bug.",
        "Acclimatisation cannot be rushed. Climbers who ascend more than a few hundred metres of sleeping altitude per day above three thousand metres risk headaches, nausea and, in severe cases, fluid in the lungs or brain, conditions that only a rapid descent reliably cures.",
    ],
    "de": [
        "Wer zum ersten Mal durch ein Teleskop auf den Saturn blickt, vergisst den Anblick selten. Schon bei fünfzigfacher Vergrößerung sind die Ringe deutlich zu erkennen, und in ruhigen Nächten zeigt sich sogar die dunkle Cassini-Teilung als feine Linie zwischen den beiden hellen Ringen.",
        "Ein Arbeitsvertrag kann auch mündlich geschlossen werden, doch der Arbeitgeber muss die wesentlichen Bedingungen spätestens nach einem Monat schriftlich festhalten. Fehlt diese Niederschrift, bleibt der Vertrag zwar gültig, im Streitfall wird es für beide Seiten aber deutlich schwieriger, die Vereinbarungen zu beweisen.",
        "Bluthochdruck verursacht oft jahrelang keine Beschwerden und wird deshalb häufig erst spät erkannt. Dabei schädigt der dauerhaft erhöhte Druck die Gefäße, das Herz und die Nieren. Eine regelmäßige Messung beim Hausarzt oder in der Apotheke ist daher auch für Menschen ohne Symptome sinnvoll.",
        "Wer sein Geld breit streut, verringert das Risiko, durch den Einbruch einer einzelnen Branche viel zu verlieren. Ein Depot aus Aktien verschiedener Länder und Anleihen mit unterschiedlichen Laufzeiten schwankt weniger stark als eine Wette auf wenige Unternehmen, auch wenn die Rendite im besten Jahr geringer ausfällt.",
        "Beim Abstieg vom Gipfel passieren mehr Unfälle als beim Aufstieg. Die Beine sind müde, die Konzentration lässt nach, und auf nassem Fels oder Firn reicht ein kurzer Moment der Unachtsamkeit. Erfahrene Bergsteiger planen deshalb genügend Zeit und Kraftreserven für den Rückweg ein.",
        "Automatisierte Tests sind nur so gut wie ihre Fälle. Ein Test, der lediglich prüft, ob eine Funktion ohne Fehler durchläuft, findet kaum Fehler. Aussagekräftig wird er erst, wenn er konkrete Ergebnisse erwartet, auch für Randfälle wie leere Eingaben oder sehr große Werte.",
        "Sternschnuppen sind keine Sterne, sondern kleine Staubteilchen, die mit hoher Geschwindigkeit in die Erdatmosphäre eindringen und dabei verglühen. Besonders viele sind Mitte August zu sehen, wenn die Erde die Staubspur des Kometen Swift-Tuttle durchquert und die Perseiden am Himmel aufleuchten.",
        "Wer eine gebrauchte Sache von privat kauft, hat nur eingeschränkte Gewährleistungsrechte, wenn der Verkäufer sie wirksam ausgeschlossen hat. Verschweigt der Verkäufer jedoch einen Mangel, den er kannte, kann sich der Käufer trotz des Ausschlusses auf arglistige Täuschung berufen und den Vertrag anfechten.",
        "Eine Impfung trainiert das Immunsystem, ohne dass der Körper die eigentliche Krankheit durchmachen muss. Nach der Impfung bildet er Antikörper und Gedächtniszellen, die bei einem späteren Kontakt mit dem Erreger schneller reagieren. Manche Impfungen müssen nach einigen Jahren aufgefrischt werden.",
        "Die Inflation frisst still an Ersparnissen, die auf einem unverzinsten Konto liegen. Steigen die Preise um drei Prozent im Jahr, verliert das Geld in zehn Jahren gut ein Viertel seiner Kaufkraft. Deshalb lohnt es sich, zumindest einen Teil des Vermögens in Anlagen zu halten, die mit der Zeit wachsen.",
        "Eine gut gewählte Datenstruktur spart oft mehr Zeit als jede Optimierung im Detail. Wer in einer langen Liste immer wieder nach Einträgen sucht, sollte prüfen, ob ein Wörterbuch oder eine Menge die Suche nicht von linearer auf konstante Zeit verkürzen kann.",
        "Im Hochgebirge ändert sich das Wetter oft innerhalb einer Stunde. Ziehen am Nachmittag Quellwolken auf, droht ein Gewitter, und auf einem ausgesetzten Grat gibt es kaum Schutz vor Blitzen. Wer früh aufbricht, steht meist schon wieder im Tal, bevor sich die Wolken entladen.",
    ],
    "fr": [
        "La Lune s'éloigne de la Terre d'environ trois centimètres par an. Ce lent recul s'explique par les marées : en freinant la rotation de notre planète, elles transfèrent une partie de son énergie à la Lune, qui gagne ainsi de l'altitude sur son orbite au fil des millions d'années.",
        "Un contrat de location doit préciser le montant du loyer, la durée du bail et le dépôt de garantie. Si le propriétaire conserve ce dépôt sans justifier de dégradations, le locataire peut lui adresser une mise en demeure, puis saisir la commission de conciliation avant d'envisager le tribunal.",
        "Le sommeil joue un rôle essentiel dans la consolidation de la mémoire. Pendant les phases de sommeil profond, le cerveau trie les informations de la journée et renforce celles qui ont été répétées. Un adulte a besoin en moyenne de sept à neuf heures de sommeil par nuit.",
        "Avant de contracter un crédit immobilier, il est utile de comparer le taux annuel effectif global plutôt que le seul taux nominal. Ce taux inclut les frais de dossier, l'assurance emprunteur et les garanties, et donne donc une image plus fidèle du coût réel de l'emprunt.",
        "La traversée du glacier s'est faite encordés, à quelques mètres les uns des autres. Sous la neige fraîche, les crevasses restent invisibles, et seule la corde tendue permet d'arrêter la chute d'un compagnon si un pont de neige cède sous ses pas.",
        "Un bon message de commit explique pourquoi une modification a été faite, et pas seulement ce qu'elle change. Quelques mois plus tard, lorsqu'il faudra comprendre l'origine d'un comportement inattendu, cette explication fera gagner un temps précieux à toute l'équipe.",
        "Les étoiles filantes d'août, appelées Perséides, proviennent de poussières laissées par une comète. Pour les observer, il suffit de s'éloigner des lumières de la ville, de laisser ses yeux s'habituer à l'obscurité pendant une vingtaine de minutes et de regarder une large portion du ciel.",
        "Le droit de rétractation permet à un consommateur de revenir sur un achat effectué à distance dans un délai de quatorze jours. Le vendeur doit alors rembourser la totalité des sommes versées, y compris les frais de livraison initiaux, au plus tard quatorze jours après la décision.",
        "L'activité physique régulière réduit le risque de maladies cardiovasculaires, de diabète et de certains cancers. Les recommandations actuelles conseillent au moins cent cinquante minutes d'effort modéré par semaine, comme la marche rapide ou le vélo, réparties sur plusieurs jours.",
        "Un fonds d'urgence équivalent à trois à six mois de dépenses protège contre les imprévus, comme une perte d'emploi ou une réparation coûteuse. Placé sur un livret disponible à tout moment, il évite de devoir vendre des placements au mauvais moment ou de recourir à un crédit à la consommation.",
        "La récursivité consiste à définir une fonction qui s'appelle elle-même sur un problème plus petit. Elle rend certains algorithmes très lisibles, comme le parcours d'un arbre, mais il faut toujours prévoir un cas de base, sans quoi la pile d'appels finit par déborder.",
        "En haute montagne, la déshydratation survient plus vite qu'en plaine. L'air sec et froid, la respiration accélérée et l'effort prolongé font perdre beaucoup d'eau, alors que la sensation de soif diminue. Les alpinistes expérimentés boivent donc régulièrement, même sans en ressentir le besoin.",
    ],
    "es": [
        "Los anillos de Saturno están formados por miles de millones de fragmentos de hielo y roca, desde granos diminutos hasta bloques del tamaño de una casa. Aunque parecen sólidos desde la Tierra, su grosor apenas alcanza unas decenas de metros en la mayoría de las zonas.",
        "El contrato de arrendamiento debe recoger la duración, la renta y la fianza. Si al terminar el alquiler el propietario no devuelve la fianza sin justificar daños en la vivienda, el inquilino puede reclamarla por escrito y, si no obtiene respuesta, acudir a los tribunales.",
        "La diabetes tipo dos suele desarrollarse de forma silenciosa durante años. Un análisis de sangre sencillo permite detectarla a tiempo, y en muchos casos una dieta equilibrada, la actividad física regular y la pérdida de peso bastan para controlar los niveles de glucosa.",
        "Antes de invertir en bolsa conviene tener claro el horizonte temporal. El dinero que se necesitará dentro de un año no debería estar en acciones, porque una caída del mercado podría obligar a vender con pérdidas; en cambio, a veinte años vista las oscilaciones tienden a compensarse.",
        "Salimos del refugio a las cuatro de la madrugada para cruzar el glaciar antes de que el sol ablandara la nieve. Con la luz de las linternas frontales avanzábamos en silencio, atentos a cada grieta, mientras el cielo comenzaba a clarear detrás de las cumbres.",
        "Un buen nombre de variable ahorra comentarios. Cuando el código dice lo que hace con claridad, quien lo lee después entiende la intención sin necesidad de explicaciones adicionales, y los comentarios pueden dedicarse a explicar por qué se tomó una decisión.",
        "Las estrellas más masivas viven poco y mueren de forma violenta. Tras agotar su combustible, su núcleo colapsa en una fracción de segundo y las capas exteriores salen despedidas en una explosión de supernova que puede brillar más que toda una galaxia durante semanas.",
        "Quien compra por internet dispone de catorce días para desistir del contrato sin dar explicaciones. El vendedor debe devolver el importe pagado, incluidos los gastos de envío ordinarios, y solo puede retener el reembolso hasta recibir el producto devuelto o una prueba de su envío.",
        "El hierro es necesario para fabricar la hemoglobina que transporta el oxígeno en la sangre. Su déficit provoca cansancio, palidez y falta de concentración. Las legumbres, la carne roja y las verduras de hoja verde son buenas fuentes, sobre todo si se acompañan de vitamina C.",
        "Un presupuesto doméstico no tiene por qué ser complicado. Basta con anotar durante un mes todos los gastos, agruparlos en categorías y compararlos con los ingresos. A menudo aparecen pequeñas suscripciones olvidadas que, sumadas a lo largo del año, representan una cantidad considerable.",
        "Las pruebas automáticas permiten modificar el código con confianza. Si cada función importante tiene pruebas que comprueban su comportamiento, un cambio que rompe algo se detecta en segundos, antes de que el error llegue a los usuarios.",
        "El mal de altura puede afectar a cualquiera por encima de los dos mil quinientos metros, sin importar su forma física. Los primeros síntomas son dolor de cabeza, insomnio y pérdida de apetito, y la regla más segura es no seguir subiendo mientras persistan.",
    ],
    "ja": [
        "皆既日食では、月が太陽を完全に隠し、昼間の空が数分間だけ暗くなる。そのとき、普段は明るすぎて見えない太陽の外側の大気、コロナが白く広がって見える。同じ場所で皆既日食が見られるのは、平均すると数百年に一度しかない。",
        "賃貸住宅を退去するとき、借主は通常の使用による汚れや傷まで元に戻す必要はない。経年劣化の修繕費は貸主が負担するのが原則であり、敷金から不当に差し引かれた場合は、内訳の説明を求めることができる。",
        "十分な睡眠をとらないと、集中力や判断力が低下するだけでなく、免疫の働きも弱くなる。大人に必要な睡眠時間には個人差があるが、多くの研究では七時間前後が目安とされている。寝る前に画面を見る時間を減らすことも効果的だ。",
        "積立投資では、毎月決まった金額で同じ商品を買い続ける。価格が高いときには少なく、安いときには多く買うことになるため、購入単価が平均化される。短期的な値動きに一喜一憂せず、長く続けることが大切である。",
        "山頂直下の岩場では、三点支持を守りながら一歩ずつ体を持ち上げた。手足のうち三つを常に岩に置いておけば、一つが滑っても体は支えられる。焦らずに足場を確かめることが、結局はいちばん早く安全に登る方法だった。",
        "プログラムの不具合を直すときは、まず問題を再現する最小の手順を見つけるとよい。再現できれば原因を絞り込みやすくなり、修正後に同じ手順で確認することもできる。再現できない不具合は、直ったかどうかも分からない。",
        "流れ星の正体は、宇宙空間を漂う小さな塵が地球の大気に飛び込み、高温になって光る現象である。毎年八月中旬にはペルセウス座流星群が見られ、街明かりの少ない場所なら一時間に数十個の流れ星を数えることもできる。",
        "契約書に署名する前には、解約の条件や違約金の有無を必ず確認したい。口頭で説明された内容が書面に記載されていなければ、後で争いになったときに証明するのは難しい。分からない条項があれば、その場で質問するべきである。",
        "風邪の多くはウイルスによって起こるため、抗生物質は効かない。必要のない服用は体内の細菌に薬剤耐性を生じさせる原因にもなる。安静にして水分と栄養をとり、症状が長引く場合には医療機関を受診することが勧められる。",
        "家計を見直すときは、まず固定費から手をつけると効果が大きい。通信費や保険料、使っていない定額サービスは、一度見直せば毎月の支出が自動的に減る。食費を細かく削るよりも、無理なく続けやすい方法である。",
        "変数や関数に分かりやすい名前をつけることは、コメントを書くことと同じくらい重要だ。名前が処理の内容を正しく表していれば、読む人は細部を追わなくても全体の流れを理解できる。",
        "標高の高い山では、急に高度を上げると高山病にかかることがある。頭痛や吐き気、眠れないといった症状が出たら、それ以上登らずに様子を見るか、少し高度を下げるのが基本だ。体を慣らしながらゆっくり登ることが予防になる。",
    ],
    "zh": [
        "月球总是以同一面朝向地球，这是因为它的自转周期与绕地球公转的周期相同。这种现象被称为潮汐锁定。直到上世纪五十年代末，人类才借助探测器第一次拍到了月球背面的照片。",
        "签订房屋租赁合同时，应当写明租金、租期、押金以及维修责任。租期届满后，如果房屋没有超出正常使用的损坏，出租人应当退还押金。遇到拒不退还的情况，承租人可以保留证据并依法提起诉讼。",
        "高血压在早期往往没有明显症状，因此常被称为无声的杀手。长期血压偏高会损害心脏、大脑和肾脏的血管。成年人即使感觉身体良好，也应该定期测量血压，并注意控制盐的摄入量。",
        "分散投资是降低风险的基本方法。把资金分配到不同行业、不同地区和不同类型的资产上，即使其中一部分出现亏损，整体的波动也会小很多。没有人能够准确预测哪一只股票会上涨。",
        "我们在凌晨两点离开营地，沿着冰川边缘向上攀登。头灯只能照亮脚下几米的范围，每个人都用绳子连在一起。天亮时，我们已经站在山脊上，看着远处的雪峰一点点被阳光染红。",
        "写代码时，函数应当尽量短小，只做一件事情。这样的函数更容易测试，也更容易被别人理解。如果一个函数需要很长的注释才能说明它在做什么，往往说明它应该被拆分成几个更小的部分。",
        "光年是长度单位，而不是时间单位，它表示光在一年中传播的距离，大约是九万五千亿公里。我们在夜空中看到的许多星星，发出的光在几百年甚至几千年前就已经出发了。",
        "网上购物时，消费者在收到商品之日起七日内，一般可以无理由退货。不过，定制商品、鲜活易腐的商品以及已经拆封的音像制品等不在此列。商家应当在收到退回商品后及时退款。",
        "规律的体育锻炼可以增强心肺功能，降低患慢性疾病的风险。专家建议成年人每周至少进行一百五十分钟中等强度的运动，例如快走、游泳或骑自行车，并且最好分散在一周的几天里完成。",
        "复利的力量在于时间。每个月坚持存下一笔不大的钱，二十年后的结果往往会超出预期。越早开始储蓄和投资，收益就有越长的时间继续产生新的收益。",
        "版本控制系统记录了代码的每一次修改。当程序出现问题时，开发者可以查看历史记录，找到引入错误的那次提交，并了解当时为什么要这样修改。即使是个人项目，也值得使用版本控制。",
        "在高海拔地区，空气中的氧气含量明显降低，人体需要时间来适应。登山者通常会在不同高度的营地停留几天，白天向上攀登，晚上回到较低的地方睡觉，以减少高原反应的发生。",
    ],
}

# Languages without a model of their own in the default set: a few paragraphs each, used to
# check the multilingual fallback scores them and says so.
FALLBACK_GOOD: dict[str, list[str]] = {
    "it": [
        "Il telescopio spaziale ha fotografato una galassia lontana miliardi di anni luce. Gli astronomi studiano la sua luce per capire come si formavano le stelle quando l'universo era ancora giovane, e confrontano i dati con quelli raccolti dagli osservatori a terra.",
        "Prima di firmare un contratto di affitto conviene leggere con attenzione le clausole sulla durata, sul deposito cauzionale e sulle spese condominiali. In caso di dubbi, un avvocato o un'associazione di inquilini può spiegare quali diritti spettano a chi prende in locazione una casa.",
    ],
    "pt": [
        "A vacina ensina o sistema imunológico a reconhecer um agente infeccioso sem que a pessoa precise adoecer. Depois da aplicação, o organismo produz anticorpos e células de memória, que reagem mais depressa quando entram em contato com o vírus verdadeiro.",
        "Quem começa a investir cedo se beneficia dos juros compostos por mais tempo. Mesmo valores pequenos, aplicados todos os meses durante muitos anos, podem se transformar numa reserva importante para a aposentadoria, desde que os custos das aplicações sejam baixos.",
    ],
    "ru": [
        "Весной альпинисты начинают восхождение рано утром, пока снег ещё плотный после ночного мороза. Днём солнце размягчает склоны, и риск схода лавин заметно возрастает, поэтому опытные группы стараются вернуться в лагерь до полудня.",
        "Хороший программист пишет код так, чтобы его было легко читать другим людям. Понятные имена переменных, короткие функции и автоматические тесты помогают команде быстрее находить ошибки и безопасно вносить изменения в проект.",
    ],
    "ko": [
        "별똥별은 우주를 떠돌던 작은 먼지가 지구 대기에 들어오면서 타는 현상이다. 매년 팔월 중순에는 페르세우스자리 유성우가 나타나는데, 도시의 불빛이 적은 곳에서는 한 시간에 수십 개의 별똥별을 볼 수 있다.",
        "규칙적인 운동은 심장과 폐의 기능을 강화하고 만성 질환의 위험을 줄인다. 전문가들은 성인에게 일주일에 최소 백오십 분 정도의 중간 강도 운동을 권장하며, 빠르게 걷기나 자전거 타기처럼 꾸준히 할 수 있는 활동이 좋다.",
    ],
}

# Bad-page material per language: commercial keywords, navigation labels, placeholder phrases,
# cities and services for doorway pages.
SPAM: dict[str, list[str]] = {
    "en": [
        "cheap",
        "best price",
        "buy now",
        "free shipping",
        "discount",
        "top deals",
        "limited offer",
        "replica watches",
        "casino bonus",
        "loans fast",
        "100% free",
        "click here",
        "sale",
        "online pharmacy",
    ],
    "de": [
        "günstig",
        "billig kaufen",
        "bester Preis",
        "jetzt bestellen",
        "gratis Versand",
        "Rabatt",
        "Sonderangebot",
        "Schnäppchen",
        "Kredit sofort",
        "Casino Bonus",
        "hier klicken",
        "100% kostenlos",
        "Top Angebote",
    ],
    "fr": [
        "pas cher",
        "meilleur prix",
        "acheter maintenant",
        "livraison gratuite",
        "promo",
        "réduction",
        "offre limitée",
        "casino en ligne",
        "crédit rapide",
        "cliquez ici",
        "100% gratuit",
        "soldes",
        "bon plan",
    ],
    "es": [
        "barato",
        "mejor precio",
        "comprar ahora",
        "envío gratis",
        "descuento",
        "oferta limitada",
        "casino online",
        "préstamo rápido",
        "haz clic aquí",
        "100% gratis",
        "rebajas",
        "chollos",
        "promoción",
    ],
    "ja": [
        "激安",
        "最安値",
        "今すぐ購入",
        "送料無料",
        "割引",
        "限定セール",
        "カジノボーナス",
        "即日融資",
        "ここをクリック",
        "完全無料",
        "お得",
        "ポイント還元",
        "人気ランキング",
    ],
    "zh": [
        "特价",
        "最低价",
        "立即购买",
        "包邮",
        "打折",
        "限时优惠",
        "网上赌场",
        "快速贷款",
        "点击这里",
        "完全免费",
        "促销",
        "爆款",
        "热销排行",
    ],
}
NAV: dict[str, list[str]] = {
    "en": [
        "Home",
        "About us",
        "Products",
        "Services",
        "Blog",
        "Contact",
        "FAQ",
        "Careers",
        "Press",
        "Sitemap",
        "Log in",
        "Register",
        "Cart",
        "Help",
        "Shop",
        "News",
        "Events",
        "Support",
    ],
    "de": [
        "Startseite",
        "Über uns",
        "Produkte",
        "Leistungen",
        "Blog",
        "Kontakt",
        "FAQ",
        "Karriere",
        "Presse",
        "Sitemap",
        "Anmelden",
        "Registrieren",
        "Warenkorb",
        "Hilfe",
        "Shop",
        "Aktuelles",
        "Termine",
        "Service",
    ],
    "fr": [
        "Accueil",
        "Qui sommes-nous",
        "Produits",
        "Services",
        "Blog",
        "Contact",
        "FAQ",
        "Carrières",
        "Presse",
        "Plan du site",
        "Connexion",
        "Inscription",
        "Panier",
        "Aide",
        "Boutique",
        "Actualités",
        "Agenda",
        "Assistance",
    ],
    "es": [
        "Inicio",
        "Quiénes somos",
        "Productos",
        "Servicios",
        "Blog",
        "Contacto",
        "Preguntas frecuentes",
        "Empleo",
        "Prensa",
        "Mapa del sitio",
        "Iniciar sesión",
        "Registrarse",
        "Carrito",
        "Ayuda",
        "Tienda",
        "Noticias",
        "Eventos",
        "Soporte",
    ],
    "ja": [
        "ホーム",
        "会社概要",
        "製品情報",
        "サービス",
        "ブログ",
        "お問い合わせ",
        "よくある質問",
        "採用情報",
        "ニュース",
        "サイトマップ",
        "ログイン",
        "新規登録",
        "カート",
        "ヘルプ",
        "ショップ",
        "イベント",
        "サポート",
        "アクセス",
    ],
    "zh": [
        "首页",
        "关于我们",
        "产品中心",
        "服务项目",
        "博客",
        "联系我们",
        "常见问题",
        "招聘信息",
        "新闻动态",
        "网站地图",
        "登录",
        "注册",
        "购物车",
        "帮助中心",
        "商城",
        "活动",
        "客户支持",
        "下载",
    ],
}
PLACEHOLDER: dict[str, list[str]] = {
    "en": [
        "Coming soon!",
        "This page is under construction.",
        "Check back later.",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
        "Content goes here.",
        "Insert text here",
        "Welcome to our new website",
        "Stay tuned",
    ],
    "de": [
        "Demnächst verfügbar!",
        "Diese Seite befindet sich im Aufbau.",
        "Bitte schauen Sie später wieder vorbei.",
        "Lorem ipsum dolor sit amet.",
        "Hier steht bald Inhalt.",
        "Text hier einfügen",
        "Willkommen auf unserer neuen Webseite",
        "Bald geht es los",
    ],
    "fr": [
        "Bientôt disponible !",
        "Cette page est en construction.",
        "Revenez plus tard.",
        "Lorem ipsum dolor sit amet.",
        "Contenu à venir.",
        "Insérer le texte ici",
        "Bienvenue sur notre nouveau site",
        "Restez connectés",
    ],
    "es": [
        "¡Próximamente!",
        "Esta página está en construcción.",
        "Vuelva más tarde.",
        "Lorem ipsum dolor sit amet.",
        "Contenido próximamente.",
        "Insertar texto aquí",
        "Bienvenido a nuestra nueva web",
        "Muy pronto",
    ],
    "ja": [
        "近日公開！",
        "このページは現在準備中です。",
        "しばらくお待ちください。",
        "ここに本文が入ります。",
        "テキストを入力してください",
        "新しいサイトへようこそ",
        "工事中",
        "乞うご期待",
    ],
    "zh": [
        "敬请期待！",
        "本页面正在建设中。",
        "请稍后再来访问。",
        "此处为正文内容。",
        "在此输入文字",
        "欢迎访问我们的新网站",
        "网站维护中",
        "即将上线",
    ],
}
CITIES: dict[str, list[str]] = {
    "en": [
        "London",
        "Manchester",
        "Leeds",
        "Bristol",
        "Glasgow",
        "Cardiff",
        "Liverpool",
        "Sheffield",
        "Leicester",
        "Norwich",
        "York",
        "Bath",
    ],
    "de": [
        "Berlin",
        "Hamburg",
        "München",
        "Köln",
        "Frankfurt",
        "Stuttgart",
        "Düsseldorf",
        "Leipzig",
        "Dresden",
        "Hannover",
        "Bremen",
        "Nürnberg",
    ],
    "fr": [
        "Paris",
        "Lyon",
        "Marseille",
        "Toulouse",
        "Nice",
        "Nantes",
        "Strasbourg",
        "Bordeaux",
        "Lille",
        "Rennes",
        "Reims",
        "Dijon",
    ],
    "es": [
        "Madrid",
        "Barcelona",
        "Valencia",
        "Sevilla",
        "Zaragoza",
        "Málaga",
        "Murcia",
        "Bilbao",
        "Alicante",
        "Córdoba",
        "Valladolid",
        "Granada",
    ],
    "ja": [
        "東京",
        "大阪",
        "名古屋",
        "札幌",
        "福岡",
        "神戸",
        "京都",
        "横浜",
        "仙台",
        "広島",
        "川崎",
        "千葉",
    ],
    "zh": [
        "北京",
        "上海",
        "广州",
        "深圳",
        "成都",
        "杭州",
        "武汉",
        "西安",
        "南京",
        "重庆",
        "天津",
        "苏州",
    ],
}
SERVICES: dict[str, list[str]] = {
    "en": [
        "emergency plumber",
        "locksmith 24/7",
        "cheap removals",
        "roof repair",
        "carpet cleaning",
        "dentist near me",
    ],
    "de": [
        "Schlüsseldienst",
        "Rohrreinigung Notdienst",
        "Umzugsfirma günstig",
        "Dachdecker",
        "Teppichreinigung",
        "Zahnarzt in der Nähe",
    ],
    "fr": [
        "serrurier urgence",
        "plombier pas cher",
        "déménagement",
        "couvreur",
        "nettoyage moquette",
        "dentiste proche",
    ],
    "es": [
        "cerrajero urgente",
        "fontanero barato",
        "mudanzas",
        "reparación de tejados",
        "limpieza de alfombras",
        "dentista cerca",
    ],
    "ja": [
        "鍵の交換",
        "水漏れ修理",
        "格安引越し",
        "屋根修理",
        "カーペットクリーニング",
        "歯医者 近く",
    ],
    "zh": ["开锁公司", "管道疏通", "搬家公司", "屋顶维修", "地毯清洗", "附近牙科"],
}
BAD_KINDS = ("keyword_spam", "navigation", "word_salad", "placeholder", "doorway")
CJK = {"ja", "zh"}


def _sep(lang: str) -> str:
    return "" if lang in CJK else " "


def _words(paragraphs: list[str], lang: str) -> list[str]:
    """The vocabulary of the paragraphs: words, or for CJK short runs of 1-3 characters."""
    if lang in CJK:
        text = "".join(c for p in paragraphs for c in p if c.isalnum())
        out, i, rng = [], 0, random.Random(len(text))
        while i < len(text):
            k = rng.randint(1, 3)
            out.append(text[i : i + k])
            i += k
        return out
    return [
        w.strip(".,;:!?¡¿'\"()") for p in paragraphs for w in p.split() if w.strip(".,;:!?¡¿'\"()")
    ]


def _bad(kind: str, lang: str, rng: random.Random, vocab: list[str]) -> str:
    sep = _sep(lang)
    end = "。" if lang in CJK else "."
    if kind == "keyword_spam":
        kw = SPAM[lang]
        return "\n".join(
            sep.join(rng.choice(kw) for _ in range(rng.randint(6, 12)))
            for _ in range(rng.randint(5, 9))
        )
    if kind == "navigation":
        nav = NAV[lang]
        lines = [rng.choice(nav) for _ in range(rng.randint(25, 45))]
        lines += [" | ".join(rng.sample(nav, 6)) for _ in range(3)]
        return "\n".join(lines)
    if kind == "word_salad":
        paras = []
        for _ in range(rng.randint(2, 4)):
            sents = []
            for _ in range(rng.randint(3, 5)):
                words = [rng.choice(vocab) for _ in range(rng.randint(8, 16))]
                s = sep.join(words)
                sents.append(s[:1].upper() + s[1:] + end)
            paras.append((sep or " ").join(sents) if lang not in CJK else "".join(sents))
        return "\n".join(paras)
    if kind == "placeholder":
        ph = PLACEHOLDER[lang]
        lines = rng.sample(ph, rng.randint(3, 6))
        if rng.random() < 0.5:
            lines.append(
                "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor."
            )
        lines += rng.sample(NAV[lang], 4)
        return "\n".join(lines)
    if kind == "doorway":
        cities, services = CITIES[lang], SERVICES[lang]
        service = rng.choice(services)
        lines = []
        for city in rng.sample(cities, rng.randint(8, 12)):
            other = rng.choice(services)
            if lang in CJK:
                lines.append(
                    f"{city}{service} {city}{other} {city}で{service}"
                    if lang == "ja"
                    else f"{city}{service} {city}{other} {city}最好的{service}"
                )
            else:
                lines.append(
                    f"{service} {city} - {other} {city} - {service} {city} {rng.choice(SPAM[lang])}"
                )
        return "\n".join(lines)
    raise ValueError(f"unknown bad kind {kind!r}; known: {', '.join(BAD_KINDS)}")


def heldout_documents(split: str = "test", seed: int = 0, per_kind: int = 4) -> list[dict]:
    """Labelled documents (lang, text, label 1 good / 0 bad, kind) of one split, all languages."""
    if split not in ("dev", "test"):
        raise ValueError(f"split must be 'dev' or 'test', got {split!r}")
    rng = random.Random((seed + (1000 if split == "dev" else 0)) * 7919 + 17)
    docs = []
    for lang in sorted(GOOD):
        paras = GOOD[lang][:DEV_PARAGRAPHS] if split == "dev" else GOOD[lang][DEV_PARAGRAPHS:]
        # Good documents: every paragraph alone, and seeded runs of two or three paragraphs.
        goods = [[p] for p in paras]
        for _ in range(len(paras)):
            goods.append(rng.sample(paras, min(len(paras), rng.randint(2, 3))))
        for i, ps in enumerate(goods):
            docs.append(
                {
                    "id": f"{split}-{lang}-good-{i}",
                    "lang": lang,
                    "text": "\n".join(ps),
                    "label": 1,
                    "kind": "prose",
                }
            )
        vocab = _words(paras, lang)
        for kind in BAD_KINDS:
            for i in range(per_kind):
                docs.append(
                    {
                        "id": f"{split}-{lang}-{kind}-{i}",
                        "lang": lang,
                        "text": _bad(kind, lang, rng, vocab),
                        "label": 0,
                        "kind": kind,
                    }
                )
    return docs


def fallback_documents() -> list[dict]:
    """Good paragraphs in languages the default set has no model of (it, pt, ru, ko)."""
    return [
        {"id": f"fallback-{lang}-{i}", "lang": lang, "text": p, "label": 1, "kind": "prose"}
        for lang, ps in sorted(FALLBACK_GOOD.items())
        for i, p in enumerate(ps)
    ]


def auc_by_language(docs: list[dict], scorer) -> dict[str, float]:
    """Per-language ROC AUC of `scorer(texts, lang) -> scores` on labelled documents."""
    from filters.quality import roc_auc

    out = {}
    for lang in sorted({d["lang"] for d in docs}):
        sub = [d for d in docs if d["lang"] == lang]
        out[lang] = roc_auc([d["label"] for d in sub], scorer([d["text"] for d in sub], lang))
    return out


def rescue_candidates(docs: list[dict], models_dir) -> list[dict]:
    """Documents a relaxed heuristic drops for a rescuable reason, with their quality score
    (the default config's annotator with the rescue off)."""
    from filters.annotate import DocumentAnnotator
    from filters.config import config_from_dict

    ann = DocumentAnnotator(config_from_dict({"quality": {"rescue_score": None}}), models_dir)
    out = []
    for d in docs:
        row = ann.annotate({"id": d["id"], "url": "", "text": d["text"], "training_allowed": True})
        if row["heuristic_drop"] in ann.cfg.quality.rescue_reasons:
            out.append(
                {**d, "heuristic_drop": row["heuristic_drop"], "score": row["quality_score"]}
            )
    return out


def main() -> None:
    import argparse
    import math

    from filters.quality.default import default_scorer
    from sampleweb.labels import labelled_documents

    ap = argparse.ArgumentParser(description="Default quality scorer's AUC on the held-out set")
    ap.add_argument("--split", default="test", choices=["dev", "test"])
    ap.add_argument(
        "--models-root", default=None, help="default models cache (default: a temp dir)"
    )
    ap.add_argument(
        "--rescue", action="store_true", help="dev only: the rescue-score choice (docs/filters.md)"
    )
    args = ap.parse_args()
    scorer = default_scorer(labelled_documents(0), args.models_root)
    docs = heldout_documents(args.split)
    aucs = auc_by_language(docs, lambda texts, lang: scorer.score(texts, lang)[0])
    fb = scorer.fallback
    fb_aucs = auc_by_language(docs, lambda texts, lang: fb.score(texts, lang)) if fb else {}
    for lang, auc in aucs.items():
        extra = f"; multilingual fallback in its place {fb_aucs[lang]:.3f}" if fb_aucs else ""
        print(f"{lang}: AUC {auc:.3f} ({sum(d['lang'] == lang for d in docs)} docs){extra}")
    if args.rescue:
        if args.split != "dev":
            raise SystemExit("choices are made on the dev split only: use --split dev")
        models_dir = next(iter(scorer.models.values())).path.parent
        cands = rescue_candidates(docs, models_dir)
        bad = [c["score"] for c in cands if not c["label"]]
        good = [c["score"] for c in cands if c["label"]]
        print(f"dropped by a rescuable heuristic: {len(bad)} bad, {len(good)} good")
        print("bad scores:", sorted(round(x, 3) for x in bad))
        print("good scores:", sorted(round(x, 3) for x in good))
        # Rule: the lowest multiple of 0.05 above every such bad page's score (no bad dev page
        # is rescued), and never below 0.5.
        cut = max(0.5, math.floor(max(bad, default=0.0) / 0.05 + 1) * 0.05)
        print(f"rescue_score (dev rule): {min(cut, 1.0):.2f}")


if __name__ == "__main__":
    main()
