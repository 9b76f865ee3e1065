"""The default German quality model on German web prose as real sites lay it out.

A reviewer's run of `refinery filter` on trafilatura's real German evaluation pages cut 17 of 68
(magazine articles, travel essays, wine reviews, press releases, a test report with a table),
all language-identified at >= 0.98: the old German recipe (`reference+shuffled`) ranked real
prose below the sample web's crawl. The documents here were written for this test in the style
of such pages (none is copied from them): the default set's German model must keep them at
about the configured keep rate and still drop German junk (a cookie wall, a link list, SEO spam, a
shop grid).
"""

import pytest

from filters.annotate import DocumentAnnotator
from filters.config import config_from_dict
from filters.quality import DEFAULT_KEEP_RATE
from filters.quality.default import QualityScorer, recipe_for

PROSE = [
    # magazine article: title, teaser, byline, subheadings
    """Warum wir im Herbst so gern Kürbis essen
Kaum wird es draußen kühler, stapeln sich auf den Wochenmärkten orangefarbene Kugeln. Eine kleine Kulturgeschichte des Kürbisses und drei Gründe, warum er besser ist als sein Ruf.
Von Miriam Hoffmann | 14. Oktober 2021
Noch vor dreißig Jahren kannten viele Menschen in Deutschland den Kürbis vor allem als Dekoration für den Hauseingang. Heute gehört die Suppe aus Hokkaido zum festen Repertoire jeder Kantine, und im Supermarkt liegen im Oktober mehr Sorten als Äpfel.
Eine Frucht mit langer Reise
Ursprünglich stammt der Kürbis aus Mittel- und Südamerika, wo er schon vor rund zehntausend Jahren angebaut wurde. Mit den spanischen Seefahrern kam er nach Europa, blieb hier aber lange ein Futtermittel für Schweine. Erst in den Nachkriegsjahren, als Kartoffeln knapp waren, landete er häufiger auf dem Teller.
Gesund und günstig
Ernährungsberaterinnen schätzen den Kürbis, weil er wenig Kalorien hat, aber viel Beta-Carotin, Kalium und Ballaststoffe liefert. Dazu kommt, dass er sich monatelang lagern lässt, wenn man ihn kühl und trocken aufbewahrt. Wer einen ganzen Kürbis kauft, kommt deshalb oft günstiger weg als mit vorgeschnittenem Gemüse.""",
    # travel essay, first person
    """Drei Tage auf dem Rennsteig
Am ersten Morgen hängt der Nebel so tief über dem Thüringer Wald, dass ich die Markierung an den Bäumen erst sehe, wenn ich fast davor stehe. Das weiße R auf den Stämmen begleitet mich von Hörschel an der Werra bis nach Blankenstein, gut 170 Kilometer, die ich mir in drei Etappen vorgenommen habe.
Schon nach wenigen Stunden merke ich, dass ich mich verschätzt habe. Der Weg ist zwar gut ausgebaut, aber die ständigen kleinen Anstiege gehen in die Beine. In einer Schutzhütte treffe ich ein älteres Ehepaar aus Gotha, das den Rennsteig zum zwölften Mal läuft. Sie lachen, als ich von meinem Plan erzähle, und empfehlen mir, den zweiten Tag lieber kürzer zu machen.
Ich folge ihrem Rat und übernachte in einer kleinen Pension in Oberhof. Die Wirtin serviert Klöße und Rotkohl, und während draußen der Regen gegen die Fenster schlägt, frage ich mich, warum ich eigentlich nicht öfter zu Fuß unterwegs bin.""",
    # wine review
    """2019 Spätburgunder trocken, Weingut Brenner, Baden
Im Glas leuchtet der Wein in einem hellen, fast durchscheinenden Rubinrot. In der Nase zeigen sich zunächst Sauerkirsche und Himbeere, nach einigen Minuten kommen Noten von Waldboden, getrockneten Kräutern und ein Hauch Vanille aus dem Holzfass hinzu.
Am Gaumen ist der Spätburgunder schlank und frisch, die Säure trägt die Frucht gut, und die Tannine sind fein und bereits gut eingebunden. Der Abgang ist mittellang mit einer leicht rauchigen Note.
Wir haben ihn zu einem Rinderschmorbraten getrunken, er passt aber auch zu Pilzgerichten oder einer Käseplatte mit Weichkäse. Wer Geduld hat, kann ihn noch drei bis fünf Jahre im Keller liegen lassen.
Bewertung: 89 Punkte
Preis: 16,50 Euro ab Hof""",
    # press release
    """Pressemitteilung
Stadtwerke eröffnen neue Ladestationen am Bahnhof
Kassel, 3. März 2022. Die Stadtwerke haben am Dienstag zwölf neue Ladepunkte für Elektroautos auf dem Parkplatz am Hauptbahnhof in Betrieb genommen. Die Säulen liefern bis zu 150 Kilowatt und können damit ein Mittelklassefahrzeug in rund einer halben Stunde zu achtzig Prozent laden.
„Gerade Pendlerinnen und Pendler, die mit dem Auto zum Zug fahren, profitieren von dem Angebot", sagte der Geschäftsführer bei der Eröffnung. Bezahlt werden kann mit gängigen Ladekarten, per App oder direkt mit der Girokarte an der Säule.
Das Projekt wurde zur Hälfte aus Mitteln des Landes gefördert. Bis Ende des Jahres sollen im Stadtgebiet weitere vierzig Ladepunkte entstehen, unter anderem an Schulen, Schwimmbädern und Einkaufszentren.
Pressekontakt: Abteilung Unternehmenskommunikation""",
    # test report with a table
    """Akkustaubsauger im Test: Sechs Geräte im Vergleich
Wir haben sechs kabellose Staubsauger zwischen 150 und 600 Euro vier Wochen lang im Alltag getestet, auf Teppich, Parkett und in der Polsterecke. Entscheidend waren für uns die Saugleistung, die Akkulaufzeit und wie einfach sich der Behälter leeren lässt.
Modell | Preis | Laufzeit | Gewicht | Note
Modell A | 599 Euro | 60 Minuten | 2,6 kg | 1,7
Modell B | 349 Euro | 45 Minuten | 2,4 kg | 2,1
Modell C | 159 Euro | 25 Minuten | 2,1 kg | 3,0
Testsieger ist das teuerste Gerät, das auch auf dichtem Teppich kaum Krümel liegen ließ. Das Preis-Leistungs-Verhältnis stimmt aber eher beim zweiten Modell, das in der Wohnung nur wenig schlechter abschnitt und deutlich leichter in der Hand liegt. Beim günstigsten Sauger reichte der Akku in unserem Test nicht für eine Dreizimmerwohnung.""",
    # local news
    """Brücke über die Lahn bleibt bis Sommer gesperrt
Autofahrer in Marburg müssen sich auf weitere Monate mit Umleitungen einstellen. Die Sanierung der Weidenhäuser Brücke dauert länger als geplant, weil bei den Arbeiten größere Schäden an den Pfeilern entdeckt wurden, teilte die Stadt am Montag mit.
Ursprünglich sollte die Brücke Ende März wieder freigegeben werden. Nun rechnet das Tiefbauamt mit einer Fertigstellung im Juli. Fußgänger und Radfahrer können die Brücke weiterhin auf einem abgetrennten Streifen überqueren.
Die Mehrkosten von rund 400.000 Euro trägt zum größten Teil das Land. Der Einzelhandel in der Innenstadt beklagt seit Beginn der Bauarbeiten weniger Kundschaft, die Stadt will deshalb an den Samstagen bis zur Freigabe kostenlose Busfahrten anbieten.""",
    # blog post, personal
    """Warum ich mein Smartphone abends in die Küche lege
Seit ein paar Monaten habe ich eine neue Regel: Um neun Uhr abends kommt das Handy in eine Schublade in der Küche, und dort bleibt es bis zum nächsten Morgen. Was zuerst wie eine Strafe klang, ist inzwischen eine der besten Gewohnheiten, die ich mir angewöhnt habe.
Früher habe ich im Bett noch schnell die Nachrichten gelesen, dann ein paar Videos geschaut und plötzlich war es halb eins. Am nächsten Morgen war ich müde und gereizt. Jetzt lese ich vor dem Schlafen wieder Bücher, ganz altmodisch auf Papier, und schlafe meistens nach zwanzig Seiten ein.
Natürlich klappt das nicht jeden Tag. Wenn ich Bereitschaft habe oder jemand aus der Familie krank ist, bleibt das Telefon in Reichweite. Aber an den meisten Abenden vermisse ich es erstaunlich wenig.""",
    # interview
    """„Bienen brauchen keine perfekten Gärten"
Die Biologin Katrin Albers erforscht seit fünfzehn Jahren Wildbienen. Im Gespräch erklärt sie, was jeder auf dem Balkon tun kann.
Frau Albers, wie geht es den Wildbienen in Deutschland?
Nicht gut. Etwa die Hälfte der rund 560 Arten steht auf der Roten Liste. Vielen fehlen Nistplätze und die passenden Blüten, denn manche Arten sammeln Pollen nur an einer einzigen Pflanzengattung.
Was kann man auf dem Balkon tun?
Schon ein paar Töpfe mit heimischen Kräutern helfen, etwa Thymian, Salbei oder Schnittlauch, wenn man sie blühen lässt. Wichtig ist, dass vom Frühjahr bis in den Herbst immer etwas blüht. Ein Insektenhotel aus dem Baumarkt ist dagegen oft schlecht gebaut und wird kaum angenommen.""",
    # recipe with intro
    """Apfelkuchen vom Blech nach Omas Art
Dieser Kuchen ist bei uns jedes Jahr der erste, wenn im September die Äpfel im Garten reif werden. Der Teig ist schnell gemacht, und man kann fast jede Apfelsorte verwenden, am besten eignen sich aber säuerliche wie Boskop oder Elstar.
Für den Teig werden Butter, Zucker und Eier schaumig gerührt, dann kommen Mehl, Backpulver und etwas Milch dazu. Den Teig auf einem gefetteten Blech verstreichen und dicht mit Apfelspalten belegen.
Wer mag, streut vor dem Backen noch Zimt und gehobelte Mandeln darüber. Nach etwa vierzig Minuten bei 180 Grad ist der Kuchen goldbraun. Am besten schmeckt er lauwarm mit einem Klecks geschlagener Sahne.""",
    # club news
    """Saisonabschluss beim Ruderverein
Mit einem Grillfest und der traditionellen Abrudern-Regatta hat der Ruderverein am Samstag die Saison beendet. Bei strahlendem Sonnenschein gingen zwölf Boote an den Start, darunter zum ersten Mal ein Achter aus der neuen Jugendgruppe.
Der Vorsitzende dankte in seiner Ansprache vor allem den Trainerinnen und Trainern, die im Sommer drei Anfängerkurse betreut haben. Zwanzig neue Mitglieder konnte der Verein in diesem Jahr begrüßen, so viele wie seit zehn Jahren nicht mehr.
Im Winter trainieren die Mannschaften im Kraftraum und auf dem Ergometer. Das Anrudern ist für den ersten Sonntag im April geplant, Gäste sind wie immer willkommen.""",
    # science explainer
    """Wie entsteht eigentlich ein Regenbogen?
Ein Regenbogen zeigt sich, wenn die Sonne hinter uns steht und vor uns Regen fällt. Jeder einzelne Tropfen wirkt dabei wie ein winziges Prisma: Das Sonnenlicht wird beim Eintritt in den Tropfen gebrochen, an der Rückseite gespiegelt und beim Austritt noch einmal gebrochen.
Weil die verschiedenen Farben des Lichts unterschiedlich stark gebrochen werden, fächert sich das weiße Licht in seine Bestandteile auf. Rot erscheint dabei immer außen, Violett innen. Manchmal ist über dem Hauptbogen ein zweiter, blasserer Bogen zu sehen, bei dem die Reihenfolge der Farben umgekehrt ist.
Übrigens sieht jeder Mensch seinen eigenen Regenbogen: Da der Winkel zwischen Sonne, Tropfen und Auge immer gleich ist, stammt das Licht für zwei Beobachter nie aus denselben Tropfen.""",
    # product-page prose / shop article text (real content, not a grid)
    """Wanderschuhe richtig einlaufen
Neue Wanderschuhe sollten nie direkt auf eine lange Tour mitgenommen werden. Auch wenn sie im Geschäft bequem sitzen, braucht das Leder einige Zeit, bis es sich an die Form des Fußes angepasst hat.
Am besten tragen Sie die Schuhe zunächst einige Tage zu Hause und auf kurzen Spaziergängen. Danach folgen längere Runden mit leichtem Gepäck, möglichst auch bergab, denn dort rutscht der Fuß nach vorne und Druckstellen zeigen sich am schnellsten.
Spüren Sie an einer Stelle Reibung, hilft es oft, die Schnürung anders zu führen oder eine dünnere Socke zu wählen. Bleibt der Druck nach zwei Wochen bestehen, passt der Schuh wahrscheinlich nicht, und ein Umtausch ist die bessere Lösung.""",
]

JUNK = [
    # cookie wall
    """Wir respektieren Ihre Privatsphäre
Wir und unsere Partner speichern und greifen auf Informationen auf einem Gerät zu, wie eindeutige Kennungen in Cookies, um personenbezogene Daten zu verarbeiten.
Alle akzeptieren
Ablehnen
Einstellungen anpassen
Notwendig
Statistik
Marketing
Externe Medien
Speichern
Datenschutzerklärung | Impressum""",
    # link list / navigation
    """Startseite
Nachrichten
Politik
Wirtschaft
Sport
Kultur
Reise
Auto
Digital
Wissen
Gesundheit
Karriere
Immobilien
Podcasts
Newsletter
Abo
Anmelden
Impressum | Datenschutz | AGB | Kontakt | Mediadaten""",
    # SEO spam
    """Schlüsseldienst Berlin günstig Schlüsseldienst Berlin Mitte Schlüsseldienst Berlin 24 Stunden
Schlüsseldienst Berlin Neukölln Schlüsseldienst Berlin Kreuzberg Schlüsseldienst Berlin Notdienst
Türöffnung Berlin günstig Türöffnung Berlin sofort Türöffnung Berlin Festpreis
Schlüsseldienst Berlin Spandau Schlüsseldienst Berlin Pankow Schlüsseldienst Berlin billig
Jetzt anrufen Schlüsseldienst Berlin günstig Schlüsseldienst Berlin""",
    # shop grid
    """Damen Sneaker
Sortieren nach: Beliebtheit
Neu
Weiße Sneaker Low
59,99 €
In den Warenkorb
Sale
Plateau Sneaker Schwarz
-30 %
41,99 €
In den Warenkorb
Leder Sneaker Beige
89,95 €
In den Warenkorb
Canvas Sneaker Blau
34,99 €
In den Warenkorb
Seite 1 von 12
Weiter""",
]


@pytest.fixture(scope="module")
def german(models_dir):
    model = QualityScorer(models_dir).models["de"]
    return model


def test_the_default_german_model_keeps_german_web_prose_at_the_keep_rate(german):
    scores = german.score(PROSE, "de")
    kept = [s >= german.threshold for s in scores]
    # at most one of the twelve below the cut: the keep rate (0.95) with one page's slack
    assert sum(kept) >= len(PROSE) - 1 >= DEFAULT_KEEP_RATE * len(PROSE) - 1, (
        f"{recipe_for('de')}: cut {german.threshold:.4g}, scores {[round(s, 4) for s in scores]}"
    )


def test_the_default_filter_keeps_german_prose_and_drops_german_junk(models_dir):
    """End to end (the default config's annotator over the default set): the prose is kept at
    the keep rate, every junk page dropped (the shop grid by its repeated n-grams: the German
    model alone scores it just above its cut)."""
    ann = DocumentAnnotator(config_from_dict({}), models_dir)

    def annotate(texts):
        return [
            ann.annotate(
                {"id": f"d{i}", "url": f"http://h{i}.test/", "text": t, "training_allowed": True}
            )
            for i, t in enumerate(texts)
        ]

    prose = annotate(PROSE)
    assert all(r["lang"] == "de" for r in prose)
    dropped = [(r["drop_reason"], round(r["quality_score"], 4)) for r in prose if r["drop_reason"]]
    assert len(dropped) <= 1, f"German prose dropped: {dropped}"
    junk = annotate(JUNK)
    assert all(r["drop_reason"] for r in junk), [
        (r["drop_reason"], r["quality_score"]) for r in junk
    ]
