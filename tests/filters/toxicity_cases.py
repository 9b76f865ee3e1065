"""Cases written for the safety classifiers' tests (tests/filters/test_toxicity.py): clean
texts that word lists and naive classifiers flag (medical and educational text about sex and
drugs, reclaimed words, slurs quoted in news reports) in five languages, hateful statements,
and obscene posts; and the same kinds of cases in Japanese (`*_JA`), scored by the Japanese
model. They are never trained on."""

ADVERSARIAL = [
    # medical and educational: sex
    (
        "en",
        "Condoms lower the risk of sexually transmitted infections during vaginal, anal and oral sex. Ask your doctor about testing for chlamydia and HIV.",
    ),
    (
        "en",
        "Puberty brings changes to the penis, testicles, breasts and vagina; the sex education unit explains masturbation, consent and contraception in plain terms.",
    ),
    (
        "en",
        "The clinic offers confidential advice on erectile dysfunction, painful intercourse and low libido, and refers patients with suspected cervical cancer.",
    ),
    (
        "en",
        "Pornography addiction is discussed in the chapter on compulsive behaviour, with research on how explicit material affects teenagers.",
    ),
    # medical and educational: drugs
    (
        "en",
        "Heroin and fentanyl overdoses killed more than seventy thousand people last year; naloxone reverses an opioid overdose within minutes.",
    ),
    (
        "en",
        "Cocaine raises heart rate and blood pressure. Mixing it with alcohol forms cocaethylene, which is more toxic to the liver than either drug alone.",
    ),
    (
        "en",
        "Harm reduction services hand out clean needles and test kits so that people who inject drugs can check for contaminants.",
    ),
    # reclaimed words
    (
        "en",
        "As a queer woman and a dyke who has marched in every pride parade since 1995, I am proud of this community.",
    ),
    (
        "en",
        "The exhibition celebrates queer artists who took back the words once thrown at them and wore them with pride.",
    ),
    # quoted slurs in news
    (
        "en",
        'The court heard that the defendant called his neighbour a "faggot" and a "nigger" before the attack; the judge called the words vile slurs and raised the sentence.',
    ),
    (
        "en",
        "Players walked off the pitch after fans chanted racist abuse at the striker, and the league said it would ban anyone found guilty of hate speech.",
    ),
    (
        "en",
        "The report documents how extremist forums describe immigrants as vermin, language that historians compare with propaganda before the genocide.",
    ),
    # German
    (
        "de",
        "Kondome senken das Risiko sexuell übertragbarer Infektionen beim Geschlechtsverkehr. Lassen Sie sich in der Praxis auf HIV und Chlamydien testen.",
    ),
    (
        "de",
        "Heroin und Kokain führen jedes Jahr zu tausenden Todesfällen; Naloxon kann eine Überdosis mit Opioiden innerhalb von Minuten aufheben.",
    ),
    (
        "de",
        'Vor Gericht sagte eine Zeugin aus, der Angeklagte habe den Mann als "Kanake" beschimpft; die Richterin nannte das eine rassistische Beleidigung.',
    ),
    (
        "de",
        "Viele schwule und lesbische Menschen nutzen das Wort queer heute selbstbewusst für sich und ihre Gemeinschaft.",
    ),
    # French
    (
        "fr",
        "Le préservatif réduit le risque d'infections sexuellement transmissibles lors des rapports sexuels. Le dépistage du VIH est gratuit au centre de santé.",
    ),
    (
        "fr",
        "L'héroïne et la cocaïne provoquent des milliers de décès chaque année; la naloxone permet d'inverser une overdose d'opioïdes.",
    ),
    (
        "fr",
        'Selon le procès-verbal, l\'accusé a traité la victime de "sale nègre"; le tribunal a retenu la circonstance aggravante de racisme.',
    ),
    (
        "fr",
        "Les militantes féministes se réapproprient fièrement le mot gouine lors de la marche des fiertés.",
    ),
    # Spanish
    (
        "es",
        "El preservativo reduce el riesgo de infecciones de transmisión sexual durante las relaciones sexuales. La prueba del VIH es gratuita en el centro de salud.",
    ),
    (
        "es",
        "La heroína y la cocaína causan miles de muertes cada año; la naloxona revierte una sobredosis de opioides en pocos minutos.",
    ),
    (
        "es",
        'Según la sentencia, el acusado llamó "maricón" a la víctima antes de agredirla, y el juez lo consideró un delito de odio.',
    ),
    (
        "es",
        "Muchas personas del colectivo usan hoy con orgullo la palabra marica para hablar de sí mismas.",
    ),
    # Chinese
    ("zh", "安全套可以降低性传播感染的风险。医生建议定期进行艾滋病病毒检测。"),
    ("zh", "海洛因和可卡因每年导致数千人死亡，纳洛酮可以在几分钟内逆转阿片类药物过量。"),
    ("zh", "法庭记录显示，被告曾用种族歧视的词语辱骂受害人，法官认定这是仇恨犯罪。"),
    # German, harder: educational text, counter-speech that quotes hate, a quoted insult in news
    (
        "de",
        "Im Biologieunterricht lernen die Schülerinnen, wie Eisprung, Menstruation und Befruchtung zusammenhängen; besprochen werden auch Verhütung mit Pille und Kondom.",
    ),
    (
        "de",
        "Die Suchtberatung informiert anonym über Cannabis, Crystal Meth und Ecstasy und vermittelt bei Abhängigkeit einen Platz für den Entzug.",
    ),
    (
        "de",
        "Wer Geflüchtete als Ungeziefer bezeichnet, verbreitet Hetze. Wir stellen uns dagegen: Die Würde des Menschen gilt für alle.",
    ),
    (
        "de",
        "Der Satz „Ausländer raus“ ist keine Meinung, sondern Rassismus, und wir widersprechen ihm überall, wo er fällt.",
    ),
    (
        "de",
        "Der Stürmer wurde von Zuschauern mit Affenlauten beleidigt; der Verein zeigte die Täter an, und der Verband verhängte eine Geldstrafe.",
    ),
    (
        "de",
        "Auf dem Christopher Street Day trugen viele Schwule und Lesben Schilder mit der Aufschrift „Stolz und queer“.",
    ),
]
# Japanese: the same kinds of hard clean text (not trained on).
ADVERSARIAL_JA = [
    (
        "ja",
        "コンドームは性感染症のリスクを下げます。HIVやクラミジアの検査は保健所で無料で受けられます。",
    ),
    (
        "ja",
        "性教育の授業では、思春期の体の変化や避妊、性的同意の大切さについて学びます。",
    ),
    (
        "ja",
        "ヘロインやコカインの過剰摂取で毎年多くの人が亡くなっており、ナロキソンはオピオイドの過剰摂取を数分で回復させます。",
    ),
    (
        "ja",
        "裁判では、被告が被害者に差別的な言葉を浴びせたことが明らかになり、裁判官はヘイトクライムと認定した。",
    ),
    (
        "ja",
        "「外国人は出ていけ」という言葉はヘイトスピーチであり、私たちは決して許しません。",
    ),
    ("ja", "ゲイであることを誇りに思う人たちが、東京のプライドパレードに参加した。"),
]

TOXIC = [
    (
        "en",
        "I hate all immigrants, they are filthy vermin and should be thrown out of this country.",
    ),
    ("en", "Women are stupid and belong in the kitchen, not in parliament."),
    ("en", "Gay people are disgusting and should be locked away."),
    ("en", "Muslims are terrorists and should all die."),
    ("en", "Black people are subhuman animals."),
    ("de", "Ich hasse alle Ausländer, sie sind dreckiges Ungeziefer und gehören abgeschoben."),
    ("de", "Frauen sind dumm und sollten den Mund halten."),
    ("de", "Schwule sind ekelhaft und sollten weggesperrt werden."),
    ("fr", "Je déteste les immigrés, ce sont des parasites qui devraient dégager de ce pays."),
    ("fr", "Les femmes sont stupides et devraient rester à la cuisine."),
    ("fr", "Les homosexuels sont dégoûtants et devraient être enfermés."),
    ("es", "Odio a los inmigrantes, son una plaga y deberían largarse de este país."),
    ("es", "Las mujeres son estúpidas y deberían callarse."),
    ("es", "Los gays son asquerosos y deberían estar encerrados."),
    ("zh", "我讨厌所有移民，他们是害虫，应该被赶出这个国家。"),
    ("zh", "女人都很愚蠢，应该闭嘴。"),
    ("zh", "同性恋很恶心，应该被关起来。"),
    ("de", "Diese Flüchtlinge sind alle kriminell und sollen sofort aus Deutschland verschwinden."),
    ("de", "Muslime sind Terroristen und gehören nicht zu Deutschland."),
    ("de", "Behinderte sind eine Last für die Gesellschaft und sollten nicht leben dürfen."),
    ("de", "Du bist so ein dummes Stück Scheiße, halt endlich dein Maul."),
]
TOXIC_JA = [
    ("ja", "外国人は全員犯罪者だ。日本から出ていけ。"),
    ("ja", "女は馬鹿だから黙っていろ。"),
    ("ja", "障害者は社会のお荷物だ、生きる価値がない。"),
    ("ja", "同性愛者は気持ち悪いから消えろ。"),
    ("ja", "お前みたいなブスは死ね。"),
]
NSFW = [
    ("en", "that bitch sucked my dick last night lmao"),
    ("en", "wanna see my pussy? dm me for nudes"),
    ("en", "fuck that hoe she a thot"),
    ("en", "shut the fuck up you stupid bitch"),
    ("en", "horny af send me your tits"),
]
