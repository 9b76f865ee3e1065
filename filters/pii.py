"""PII scrubbing: emails, phone numbers, IP addresses, payment cards, IBANs and credentials (API
keys and tokens of well-known shapes, private keys, a URL's user:password) become typed
placeholders. Every candidate is validated (Luhn, mod-97, libphonenumber, `ipaddress`, an
address's top-level domain against the root zone's list in tlds.txt) so version numbers, dates,
prices, ISBNs, UUIDs and file names ("logo@2x.png") are left alone. Addresses written to keep
harvesters off count too: "john [at] example [dot] com", "info(at)firma.de", "jane AT gmail DOT
com", "john dot doe at example dot com", "john&#64;example.com".

Works in every script: boundaries are ASCII-only (Python's ``\\w`` counts CJK, Thai, Arabic...
letters as word characters, so ``邮件至zhang.wei@example.com联系`` would otherwise hide the
address), non-ASCII digits and full-width forms are read as their ASCII twins (one character for
one, so spans stay aligned), and national phone formats are read in the regions of the document
language, of the scripts in the text, then of a configurable default list.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import phonenumbers
from phonenumbers import PhoneMetadata

PLACEHOLDERS = {
    "email": "<EMAIL>",
    "phone": "<PHONE>",
    "ip": "<IP>",
    "card": "<CARD>",
    "iban": "<IBAN>",
    "secret": "<SECRET>",
}

# Regions used to read national-format phone numbers, by document language (first = likeliest).
LANG_REGION = {
    "en": "US",
    "de": "DE",
    "fr": "FR",
    "es": "ES",
    "it": "IT",
    "pt": "PT",
    "nl": "NL",
    "pl": "PL",
    "sv": "SE",
    "da": "DK",
    "fi": "FI",
    "ru": "RU",
    "ja": "JP",
    "zh": "CN",
    "ko": "KR",
    "tr": "TR",
    "cs": "CZ",
}
LANG_REGIONS: dict[str, tuple[str, ...]] = {
    "en": ("US", "GB", "IE", "AU", "CA", "NZ", "IN", "ZA"),
    "de": ("DE", "AT", "CH"),
    "fr": ("FR", "BE", "CH", "CA"),
    "es": ("ES", "MX", "AR", "CO"),
    "it": ("IT", "CH"),
    "pt": ("PT", "BR"),
    "nl": ("NL", "BE"),
    "pl": ("PL",),
    "sv": ("SE",),
    "da": ("DK",),
    "fi": ("FI",),
    "no": ("NO",),
    "nb": ("NO",),
    "is": ("IS",),
    "ru": ("RU", "BY", "KZ"),
    "uk": ("UA",),
    "be": ("BY",),
    "bg": ("BG",),
    "sr": ("RS",),
    "mk": ("MK",),
    "kk": ("KZ",),
    "ja": ("JP",),
    "zh": ("CN", "TW", "HK", "SG"),
    "ko": ("KR",),
    "th": ("TH",),
    "vi": ("VN",),
    "id": ("ID",),
    "ms": ("MY",),
    "tl": ("PH",),
    "ar": ("SA", "AE", "EG", "MA", "JO", "IQ"),
    "fa": ("IR",),
    "ur": ("PK",),
    "he": ("IL",),
    "iw": ("IL",),
    "hi": ("IN",),
    "mr": ("IN",),
    "ne": ("NP",),
    "bn": ("BD", "IN"),
    "ta": ("IN", "LK"),
    "te": ("IN",),
    "el": ("GR", "CY"),
    "tr": ("TR",),
    "cs": ("CZ",),
    "sk": ("SK",),
    "hu": ("HU",),
    "ro": ("RO",),
    "hr": ("HR",),
    "sl": ("SI",),
    "et": ("EE",),
    "lv": ("LV",),
    "lt": ("LT",),
    "ca": ("ES",),
    "eu": ("ES",),
    "gl": ("ES",),
    "ga": ("IE",),
    "cy": ("GB",),
    "sw": ("KE", "TZ"),
    "am": ("ET",),
    "ka": ("GE",),
    "hy": ("AM",),
}
# Regions suggested by the scripts that occur in the text (first matching range wins).
SCRIPT_REGIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("hiragana/katakana", "\u3040-\u30ff", ("JP",)),
    ("hangul", "\uac00-\ud7af\u1100-\u11ff", ("KR",)),
    ("han", "\u4e00-\u9fff\u3400-\u4dbf", ("CN", "TW", "HK")),
    ("thai", "\u0e00-\u0e7f", ("TH",)),
    ("hebrew", "\u0590-\u05ff", ("IL",)),
    ("arabic", "\u0600-\u06ff\u0750-\u077f", ("SA", "AE", "EG")),
    ("devanagari", "\u0900-\u097f", ("IN",)),
    ("bengali", "\u0980-\u09ff", ("BD", "IN")),
    ("cyrillic", "\u0400-\u04ff", ("RU", "UA")),
    ("greek", "\u0370-\u03ff", ("GR",)),
    ("georgian", "\u10a0-\u10ff", ("GE",)),
    ("armenian", "\u0530-\u058f", ("AM",)),
)
# Regions tried last for national formats whatever the language (configurable per call).
DEFAULT_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "IN")

# IBAN length per country (ISO 13616 registry, common SEPA and nearby countries).
IBAN_LENGTHS = {
    "AD": 24,
    "AT": 20,
    "BE": 16,
    "BG": 22,
    "CH": 21,
    "CY": 28,
    "CZ": 24,
    "DE": 22,
    "DK": 18,
    "EE": 20,
    "ES": 24,
    "FI": 18,
    "FR": 27,
    "GB": 22,
    "GR": 27,
    "HR": 21,
    "HU": 28,
    "IE": 22,
    "IS": 26,
    "IT": 27,
    "LI": 21,
    "LT": 20,
    "LU": 20,
    "LV": 21,
    "MC": 27,
    "MT": 31,
    "NL": 18,
    "NO": 15,
    "PL": 28,
    "PT": 25,
    "RO": 24,
    "SE": 24,
    "SI": 19,
    "SK": 24,
    "SM": 27,
    "TR": 26,
    "AE": 23,
    "SA": 24,
    "IL": 23,
    "UA": 29,
    "RS": 22,
    "BA": 20,
    "ME": 22,
    "MK": 19,
    "AL": 28,
    "GE": 22,
    "KZ": 20,
    "QA": 29,
    "KW": 30,
    "BH": 22,
    "JO": 30,
    "LB": 28,
    "EG": 29,
    "BR": 29,
}

# All patterns run on the ASCII view of the text (see _ascii_view); boundaries are ASCII-only
# so that letters of other scripts right before or after a value do not hide it.
# Internationalised addresses (RFC 6531/IDNA) in alphabetic scripts: Latin with diacritics,
# Greek, Cyrillic. CJK, Thai, Arabic... run into the surrounding text without spaces: their
# addresses need a delimiter (_EMAIL_WIDE below).
_EAI = "A-Za-z0-9\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0370-\u03ff\u0400-\u04ff"
# The local part is RFC 5322's dot-atom: besides letters, digits and "_.%+-", the atext
# characters "'&!#$*=?^~" ("o'brien@", "bill&ted@"). "/", "|", "{}" and "`" are atext too but
# delimit paths, table cells and code in web text ("medium.com/@jane.doe" is a handle, not an
# address). A match starts only where a run of these characters starts (so a scan is linear);
# _emails drops what comes before the run's first letter, digit or "_" (a quote, a dot), and
# ends the domain after its last label that is a top-level domain (_domain_end, _TLDS below).
_ATEXT = f"{_EAI}_.%+!#$&'*=?^~-"
_LOCAL_LEAD = re.compile(f"[^{_EAI}_@]*")
_EMAIL = re.compile(
    rf"(?<![{_ATEXT}])[{_ATEXT}]+@(?:[{_EAI}-]+\.)+"
    r"(?:[A-Za-z]{2,24}|[\u0400-\u04ff]{2,24}|xn--[a-z0-9-]{2,59})"
    rf"(?![{_EAI}-])"
)
# Addresses in scripts written without spaces between words (Han, kana, Hangul, Thai, Arabic;
# Hebrew and Devanagari with them): "张伟@例子.中国", "user@例え.jp". Such a local part could run
# back into the sentence, so it must start the text or follow white space or punctuation
# (ASCII, full-width, CJK: "邮箱：张伟@…", "（user@例え.jp）"), and it is read back to there
# ("请发邮件到张伟@…" goes whole; over 64 octets, RFC 5321's limit, it is left alone); a local
# part of atext alone starts where its run does, as above. The domain ends in an ASCII,
# punycode or Cyrillic TLD, or an IDN TLD of the list below, which no letter of these scripts
# may follow ("张伟@例子.中国联系" is left alone: where the address ends cannot be told).
_WIDE = (
    "\u3005\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7a3\u0e01-\u0e3a\u0e40-\u0e4e"
    "\u0620-\u065f\u066e-\u06d3\u06d5\u06fa-\u06ff\u05d0-\u05ea\u05f0-\u05f2"
    "\u0900-\u0963\u0966-\u097f"
)
_WIDE_CHAR = re.compile(f"[{_WIDE}]")
# What may stand right before such a local part (on the ASCII view: full-width "：，（" are
# ":,(" there).
_EMAIL_DELIM = (
    "\\s:;,<>()\\[\\]{}\"'`|/\\\\!?\u3001\u3002\u300a-\u3011\u3014-\u301f"
    "\u2018-\u201f\u2039\u203a\u00ab\u00bb\u30fb\u00b7\u060c\u061b\u061f"
)
# Such a local part: atext less "'!?" (delimiters here: a scan reads each run once), ending in
# a letter of those scripts ("张伟@"; after "请发邮件至zhang.wei@" or "QQ邮箱12345@" the address is
# the ASCII run, as above).
_WIDE_LOCAL = f"{_EAI}{_WIDE}_.%+#$&*=^~-"
# IDN top-level domains of those scripts (IANA root zone): country codes, then common generic
# ones. A Cyrillic label is read as a TLD if it is one of the root zone's (рф, укр, срб...;
# _TLDS below).
_IDN_TLDS = (
    "中国 中國 香港 台湾 台灣 新加坡 澳門 澳门 한국 ไทย "
    "السعودية امارات مصر قطر الاردن الجزائر المغرب تونس سورية عمان البحرين فلسطين عراق "
    "ایران پاکستان سودان اليمن موريتانيا مليسيا بھارت ڀارت ישראל भारत भारतम् भारोत "
    "公司 网络 在线 中文网 网址 网店 网站 商城 商店 商标 集团 移动 手机 游戏 企业 政务 公益 "
    "信息 世界 我爱你 八卦 时尚 微博 健康 招聘 购物 娱乐 みんな コム クラウド ストア ポイント "
    "セール ファッション 닷컴 닷넷 삼성 คอม شبكة موقع عرب كوم بيتك ابوظبي همراه بازار कॉम नेट संगठन"
).split()
_IDN_TLD = "|".join(sorted(_IDN_TLDS, key=len, reverse=True))
_WIDE_LEAD = re.compile(f"[^{_EAI}{_WIDE}_@]*")
_EMAIL_WIDE = re.compile(
    rf"(?:(?<![^{_EMAIL_DELIM}])[{_WIDE_LOCAL}]*[{_WIDE}]|(?<![{_ATEXT}])[{_ATEXT}]+)"
    rf"@(?:[{_EAI}{_WIDE}-]+\.)+"
    rf"(?:(?:[A-Za-z]{{2,24}}|[\u0400-\u04ff]{{2,24}}|xn--[a-z0-9-]{{2,59}})(?![{_EAI}-])"
    rf"|(?:{_IDN_TLD})(?![{_EAI}{_WIDE}-]))"
)

# Top-level domains: the root zone's (tlds.txt, with its source and date), in punycode and in
# Unicode, plus the names of private networks an address can live in (RFC 6762's .local,
# ICANN's .internal, .lan, .corp, .home...). An address's domain must end in one: "logo@2x.png",
# "sunset@beach.jpg" are files. RFC 2606's .example, .test, .invalid and .localhost are in
# neither: an address there is no one's.
_TLD_FILE = Path(__file__).with_name("tlds.txt")
_PRIVATE_TLDS = frozenset({"local", "internal", "lan", "localdomain", "corp", "home", "intranet"})


def _read_tlds() -> frozenset[str]:
    try:
        lines = _TLD_FILE.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise RuntimeError(
            f"{_TLD_FILE}: top-level domain list unreadable ({e.strerror}); "
            "restore filters/tlds.txt from git (or reinstall refinery)"
        ) from e
    names = {line.strip().lower() for line in lines if line.strip() and line[0] != "#"}
    names |= {n[4:].encode("ascii").decode("punycode") for n in names if n.startswith("xn--")}
    return frozenset(names | _PRIVATE_TLDS)


_TLDS = _read_tlds()
# A domain whose name is an image's pixel density is a file: "logo@2x.zip", "icon@1.5x.mov"
# (.zip and .mov are TLDs).
_DENSITY = re.compile(r"\d{1,2}(?:\.\d{1,2})?[xX]")
_DOT = re.compile(r"\.")
# An address's domain, as _EMAIL reads it (for the quoted local parts below).
_DOMAIN = (
    rf"(?:[{_EAI}-]+\.)+(?:[A-Za-z]{{2,24}}|[\u0400-\u04ff]{{2,24}}|xn--[a-z0-9-]{{2,59}})"
    rf"(?![{_EAI}-])"
)
# A quoted local part (RFC 5322): '"john.doe"@example.com'; no white space inside ('"a" and
# "b"@x.org' is quotes in prose).
_EMAIL_QUOTED = re.compile(rf'(?<!["{_ATEXT}])"[^"\s\\@]{{1,64}}"@{_DOMAIN}')
# Obfuscated addresses, as pages write them to keep harvesters off: "john [at] example [dot]
# com", "info(at)firma.de" (German imprints), "jane.smith AT gmail DOT com", "john.doe&#64;
# example.com". The at sign is a word in brackets (also "(ät)", "[arroba]", "(arobase)",
# "(chiocciola)", "[собака]", "(małpa)", "(zavináč)", "(kukac)", "(snabel-a)", "[@]"), an
# upper-case " AT " or a character reference (&#64; &#x40; &commat;); each dot is ".", a word
# in brackets ("[dot]", "(punkt)", "[point]", "(punto)", "[.]"...), " DOT ", &#46; or &period;.
_BR_OPEN, _BR_CLOSE = r"[\[({<]", r"[\])}>]"
_AT_WORD = r"at|ät|@|arroba|arobase|chiocciola|snabel-?a|kukac|ma[łl]pa|zavin[aá][čc]|собака"
_DOT_WORD = r"dot|\.|punkt|point|punto|ponto|pont|kropka|te[čc]ka|piste|prikk|punt|точка"
_OBF_AT = (
    rf"[ \t]*{_BR_OPEN}[ \t]*(?i:{_AT_WORD})[ \t]*{_BR_CLOSE}[ \t]*|[ \t]+AT[ \t]+"
    r"|&#0*64;|&#[xX]0*40;|&commat;"
)
_OBF_DOT = (
    rf"[ \t]*{_BR_OPEN}[ \t]*(?i:{_DOT_WORD})[ \t]*{_BR_CLOSE}[ \t]*|[ \t]+DOT[ \t]+"
    r"|&#0*46;|&period;"
)
_OBF_SEP = re.compile(rf"{_OBF_DOT}|\.")
_DNS_LABEL = rf"[{_EAI}](?:[{_EAI}-]*[{_EAI}])?"
_EMAIL_OBFUSCATED = re.compile(
    rf"(?<![{_ATEXT}])[{_ATEXT}]+(?:(?:{_OBF_DOT})[{_ATEXT}]+)*(?P<at>{_OBF_AT})"
    rf"{_DNS_LABEL}(?:(?:{_OBF_DOT}|\.){_DNS_LABEL})+(?![{_EAI}-])"
)
# What an obfuscated address needs in the text: its scan is skipped without one.
_OBF_HINT = re.compile(
    rf"{_BR_OPEN}[ \t]*(?i:{_AT_WORD})[ \t]*{_BR_CLOSE}|[ \t]AT[ \t]|&#0*64;|&#[xX]0*40;|&commat;"
)
# Addresses spelled out in lower case: "john dot doe at example dot com", "juan arroba correo
# punto es". Prose says "look at the dot com bubble" and "available at amazon dot com", so the
# domain ends in a TLD after a spelled dot (a "." after a spelled "at" is prose: "at
# amazon.com"), no word of it is a function word ("the", "this"...), and the local part looks
# like one: a dot, digit, "_", "-" or "+" in it, a role's name ("info", "sales"), or an e-mail's
# cue just before ("Email:", "write to", "contact").
_SPELLED = (("at", "dot|punkt"), ("arroba|arobase|chiocciola", "punto|point|ponto|dot"))
_EMAIL_SPELLED = tuple(
    (
        re.compile(
            rf"(?<![{_ATEXT}])[{_ATEXT}]+(?:[ \t]+(?:{dot})[ \t]+[{_ATEXT}]+)*[ \t]+(?:{at})[ \t]+"
            rf"{_DNS_LABEL}(?:[ \t]+(?:{dot})[ \t]+{_DNS_LABEL})+(?![{_EAI}-])"
        ),
        re.compile(rf"[ \t]+(?:{dot})[ \t]+"),
        re.compile(rf"[ \t]+(?:{at})[ \t]+"),
    )
    for at, dot in _SPELLED
)
_SPELLED_HINT = re.compile(r"[ \t](?:at|arroba|arobase|chiocciola)[ \t]")
_PROSE_WORDS = frozenset(
    "a an the this that these those my your our his her their its it us me him them you we he "
    "she they i one all any some each every no not and or but of to in on for with by from as "
    "so if than very more most least what which who where when there here just only also "
    "el la los las un una unos unas lo le les des du de del da do dos das mi tu su sus il gli "
    "mon ma mes ton ta ses notre votre leur ce cet cette ces que qui y e o et ou".split()
)
_ROLES = frozenset(
    "info contact support sales admin office webmaster hello help mail press jobs team service "
    "enquiries inquiries kontakt postmaster billing feedback editor news marketing careers "
    "redaktion contacto contato".split()
)
_EMAIL_CUE = re.compile(
    r"(?i)(?:e-?mail|mail|contact|kontakt|write|reach|courriel|correo|adresse?|address|escrib"
    r"|[ée]cri|scriv|schreib)\w*"
    r"\W{0,3}(?:\w+\W{1,3}){0,2}$"
)
_LOCAL_SHAPE = re.compile(r"[\d._+-]")
# Grouped by spaces or dashes, upper or lower case ("de89 3704 ...", "GB82-WEST-1234-...").
_IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}(?:[ -]?[A-Za-z0-9]{1,4})?"
    r"(?![A-Za-z0-9])"
)
# Not right after or before "/", "=", "#" or "&": digits in an address (a post's id in
# facebook.com/.../posts/2395361813834269) are no one's card; nor a decimal's digits ("3.4111...").
_CARD = re.compile(
    r"(?<![A-Za-z0-9_/=#&-])(?<!\d\.)(?:\d[ .-]?){12,18}\d(?![A-Za-z0-9_/=#&-]|\.\d)"
)
# How cards are printed when their digits are grouped: fours (the last group 1-4 digits:
# 13-19-digit cards), or Amex's and Diners' 4-6-5 and 4-6-4, by spaces, dashes or dots. Groups
# of 3 ("608-616 406-410", a table's page ranges; "1.234.567" thousands) or two kinds of
# separator in one number are not a card.
_CARD_GROUPS = re.compile(
    r"\d{4}(?:([ .-])\d{4}(?:\1\d{4}(?:\1\d{1,4})?(?:\1\d{1,3})?)?|([ .-])\d{6}\2\d{4,5})"
)
# A final '.' ends the sentence; '.<digit>' would make it a longer dotted number (a version).
_IPV4 = re.compile(r"(?<![A-Za-z0-9_.])(?:\d{1,3}\.){3}\d{1,3}(?![A-Za-z0-9_]|\.\d)")
# Four one-digit parts are a section, clause or version number ("3.2.2.6", "1.2.3.4" in a
# standard); the addresses written so (1.1.1.1, 8.8.8.8, 9.9.9.9) are public resolvers, not
# anyone's machine.
_SECTION = re.compile(r"\d\.\d\.\d\.\d")
# An IPv4-mapped or -embedded address ("::ffff:203.0.113.77") ends in a dotted quad: one span.
# A scoped address's zone id goes with it: "fe80::1%eth0", "fe80::1%25eth0" in a URL.
_IPV6 = re.compile(
    r"(?<![A-Za-z0-9_:])(?:[0-9A-Fa-f]{0,4}:){2,7}"
    r"(?:(?:\d{1,3}\.){3}\d{1,3}(?!\.\d)|[0-9A-Fa-f]{0,4})"
    r"(?:%[0-9A-Za-z_~-]+(?:\.[0-9A-Za-z_~-]+)*)?(?![A-Za-z0-9_:])"
)
_IBAN_HEAD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}[ -]?$")
# A preceding "version"/"v"/"ISBN"/"build" word (in many languages) means the digits are not PII.
_NOT_PII_BEFORE = re.compile(
    r"(?i)(?:(?<![A-Za-z])v(?:ersion|er\.?)?|(?<![A-Za-z])(?:isbn|issn)(?:-1[03])?|release|build|"
    r"arxiv|doi|pmid|نسخة|النسخة|"
    r"versi[oó]n[e]?|vers[aã]o|versie|wersj[ai]|verze|verzi[oó]|s[üu]r[üu]m|верси\w*|выпуск|"
    r"сборка|バージョン|版本|버전|เวอร์ชัน|รุ่น|إصدار|الإصدار|גרסה|संस्करण|वर्ज़न|वर्जन|έκδοση)"
    r"[\s:#.-]*$"
)
_ANY_DIGIT = re.compile(r"\d")  # the \d of the patterns: a text without one has no match
_LETTER = re.compile(r"[A-Za-z]")
# Values that look numeric but are never personal data: their spans shield what they contain.
_UUID = re.compile(
    r"(?<![0-9A-Fa-f-])[0-9A-Fa-f]{8}-(?:[0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}(?![0-9A-Fa-f-])"
)
_ISBN = re.compile(
    r"(?<![0-9A-Za-z-])(?:97[89][- ]?)?\d{1,5}[- ]\d{1,7}[- ]\d{1,7}[- ][\dX](?![0-9A-Za-z-])"
)
# Dates: ISO and numeric day-month-year; with dots, a space may follow each one, as German,
# Czech, Slovak, Polish or Armenian write them ("06.08. 2013", "6. 8. 2013"), and Hungarian
# writes the year first ("2013. 08. 06.").
_DATE = re.compile(
    r"(?<![\d.-])(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}|\d{1,2}[./]\d{1,2}[./]\d{2}"
    r"|\d{1,2}\. ?\d{1,2}\. ?\d{4}|\d{4}\. ?\d{1,2}\. ?\d{1,2}\.?"
    r"|(?:1[5-9]|20)\d{2} ?[-\u2013/] ?(?:1[5-9]|20)\d{2})"  # year ranges: 1990-1995
    r"(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?(?!\d|[.-]\d)"
)
# Ranges of decimals or clock times: "0.932 – 0.998", "09.00 - 12.00", "9:30-17:00".
_RANGE = re.compile(
    r"(?<![\d.,:])\d{1,4}[.,:]\d{1,4} ?[-\u2013] ?\d{1,4}[.,:]\d{1,4}(?![\d]|[.,:]\d)"
)
# Ranges of 24-hour times written HHMM: "0900-1730" (opening hours), both sides 0000-2359
# (2400 may end one). Nothing may continue the number on either side ("0800-1234 567", "+44
# 0900-1230" stay phones).
_HHMM = r"(?:[01]\d|2[0-3])[0-5]\d"
_TIME_RANGE = re.compile(
    rf"(?<![\d+.,:/-])(?<![\d+] ){_HHMM} ?[-\u2013] ?(?:{_HHMM}|2400)(?! ?[-.,:/]? ?\d)"
)
# A phone's label just before a number: there "0211-1530" is a phone, whatever it looks like.
_PHONE_LABEL = re.compile(
    r"(?i)(?<![a-z])(?:tel|phone|fax|mobile?|cell|call|handy|t[eé]l[eé]fono?|t[eé]l[eé]phone|"
    r"telefone|телефон|тел|電話|电话|전화)\w*\.?[\s:.]*$|[☎📞]\s*$"
)
# Phone labels in many languages and scripts, for the numbers written right after one (see
# _labelled_phones): words of cased and spaced scripts stand alone (no letter on either side);
# those of scripts written without spaces may be glued to the text before them
# ("...รังสิตโทรศัพท์ : 02 997 2222"). "No."/"Nr."/"number" may follow ("Tel.-Nr.", "Phone No:"),
# and a second label after "/" ("tel/faks:").
_LABEL_SPACED = (
    r"tel|tlf|tfn|telp|tlp|tel[eéè]?f(?:on|ax)\w{0,8}|t[eé]l[eé]phone|telem[oó]vel|phone|ph\.|fon"
    r"|fax|faks\w{0,3}|mob(?:\.|il(?:e|n[ií]|n[yý]|telefon)?|iil|iel|itel)?|cell(?:ulare?|phone)?"
    r"|cel\.|celular|m[oó]vil|handy|hotline|helpline|whatsapp|puh\.|puhelin\w{0,3}|t[aā]lr\."
    r"|t[aā]lru[nņ]\w{0,3}|điện thoại|s?đt|тел|тэл|тлф|т\.|тел[еэ]фон\w{0,4}|тэлефон\w{0,4}"
    r"|моб(?:\.|ил\w{0,6})?|сот\.|факс|τηλ\.?|τηλ[εέ]φων\w{0,3}|κιν\.|φαξ|հեռ\.|հեռախոս\w{0,4}"
    r"|ტელ\.?|ტელეფონ\w{0,2}|טלפון|טל[׳'\".]|פקס|נייד|फोन|फ़ोन|मोबाइल|दूरभाष|ফোন|মোবাইল"
)
_LABEL_GLUED = (
    r"(?:ال)?هاتف|تلفون|تلفن|جوال|موبايل|موبایل|فاكس|โทร(?:ศัพท์|สาร)?|แฟกซ์|มือถือ"
    r"|(?:電話|电话|手机|手機|携帯|傳真|传真|전화|휴대폰|핸드폰|팩스)(?:号码|號碼|番号|번호)?"
)
_LABEL = (
    rf"(?:(?<![^\W\d_])(?:{_LABEL_SPACED})(?![^\W\d_])|{_LABEL_GLUED})"
    r"(?:\s?[/&]\s?(?:fax|faks|факс|mob\.?|моб\.?)(?![^\W\d_]))?"
    r"(?:[\s.-]{0,2}(?:no|nr|n[º°]|number|nummer|numer|n[uú]mero|numéro|č|číslo|номер|№)"
    r"(?![^\W\d_])\.?)?"
)
# A label, or a word that leads to a number ("CALL US 0800 ..."), anywhere shortly before.
_LABEL_NEAR = re.compile(
    rf"(?i){_LABEL}|(?<![^\W\d_])(?:call|contact|kontakt|info|ring)(?![^\W\d_])"
)
_LABEL_BEFORE = re.compile(rf"(?i){_LABEL}[\s.:：=\-\u2013\u2014]{{0,4}}\(?$")
# A run of digits and the characters phone numbers are written with, from which a number after
# a label is read (a space only before more of the number: "0220 - 456 48", "8 (41) 523 575").
_NUMBER_RUN = re.compile(r"\+?\(?\d(?:[\d().\-/]|\s(?=\s?[-/]?\s?[\d(]))*")
# No phone, even after a label: two separators in a row ("09-.00-16.30", a garbled time range), an
# amount in thousands.
_MIXED_PUNCT = re.compile(r"[-./]{2}")
_DECIMAL_AFTER = re.compile(r"[.,]\d")  # "1.234.567,89": an amount
_AMOUNT = re.compile(r"[1-9]\d{0,2}(?:([.,])\d{3})(?:\1\d{3})+")  # "1.234.567", "12,345,678"
# A catalogue's or a register's identifier: after a code of 2-5 capitals ("IRAS 05264-6347",
# "ESO 111-12", "ИНН 7707083893"), of two Thai consonants (a government letter's number, "ศธ
# 0506(2)/15546"), or a code word ("ID", "Ref.", "код", "коды —", "№"). Not for "+" numbers or
# NANP's shapes ("Springfield, IL (217) 555-0123").
_CODE_BEFORE = re.compile(
    r"(?:(?<!\w)[A-ZÀ-ÖØ-ÞΑ-ΩА-ЯЁЄІЇЎ]{2,5}|(?<![\u0e01-\u0e4e])[\u0e01-\u0e2e]{2}) $"
    r"|(?i:(?<![^\W\d_])(?:id|ref|code|kod|код\w{0,2}|№)[\s:#.№\-\u2013\u2014]*$)"
)
# Germany's municipality keys (Amtlicher Gemeindeschlüssel "03 2 56 001", with the association
# "05 3 15 0000 000"): no phone is grouped 2-1-2-3.
_ADMIN_CODE = re.compile(r"\d{2} \d \d{2} (?:\d{3}|\d{4} \d{3})")
# A day of the month after a number ("0875975877 25 มี.ค.", "... 3 mai", "... 12 日"): read up
# to the month's name, abbreviation or the day's sign, the day is not part of the number.
_MONTHS = (
    r"jan(?:uary?|uar|vier|eiro)?|feb(?:ruary?|ruar|braio)?|mar(?:ch|s|ts|zo|ço|et)?|apr(?:il|ile)?"
    r"|may(?:o|ıs)?|ma[ij]o?|june?|july?|aug(?:ust|usti|ustus)?|sept?(?:ember)?|o[ck]t(?:ober)?"
    r"|nov(?:ember)?|de[cz](?:ember)?|jänner|märz?|juni|juli|dezember|desember|janv(?:ier)?"
    r"|f[eé]vr?(?:ier)?|avr(?:il)?|juin|juil(?:let)?|ao[uû]t|septembre|octobre|novembre"
    r"|d[eé]cembre|ene(?:ro)?|febrero|abr(?:il)?|agosto|ago(?=\.)|junio|julio|se?tiembre|octubre"
    r"|noviembre|dic(?:iembre)?|genn?(?:aio)?|mag(?:gio)?|giu(?:gno)?|lug(?:lio)?|settembre"
    r"|ott(?:obre)?|fevereiro|junho|julho|setembro|outubro|(?:set|out)(?=\.)|mei|mrt|maart|ocak|[şs]ubat"
    r"|nisan|haziran|temmuz|a[ğg]ustos|eyl[üu]l|ekim|kas[ıi]m|aral[ıi]k|stycz\w*|lutego|marca"
    r"|kwietni\w*|czerwc\w*|lipc\w*|sierpni\w*|wrze[sś]ni\w*|pa[źz]dziernik\w*|listopad\w*"
    r"|grudni\w*|ledna|února|března|dubna|května|června|července|srpna|září|října|prosince"
    r"|январ\w*|феврал\w*|март\w*|апрел\w*|ма[йя]|июн[ья]?|июл[ья]?|август\w*|сентябр\w*"
    r"|октябр\w*|ноябр\w*|декабр\w*|янв|фев|мар|апр|авг|сент?|окт|ноя|дек|січ\w*|лют\w*"
    r"|берез\w*|квіт\w*|травн\w*|червн\w*|липн\w*|серпн\w*|верес\w*|жовт\w*|грудн\w*|th[áa]ng"
)
# A last group of one or two digits after white space: a day, a count, rarely a number's end.
_SHORT_TAIL = re.compile(r"\s+\d{1,2}\.?$")
_MONTH_NEXT = re.compile(
    rf"\.?\s*(?:(?i:(?:de\s+)?(?:{_MONTHS})\.?(?![^\W\d_]))"
    r"|(?:ม\.ค|ก\.พ|มี\.ค|เม\.ย|พ\.ค|มิ\.ย|ก\.ค|ส\.ค|ก\.ย|ต\.ค|พ\.ย|ธ\.ค)\."
    r"|มกรา|กุมภา|มีนา|เมษา|พฤษภา|มิถุนา|กรกฎา|สิงหา|กันยา|ตุลา|พฤศจิกา|ธันวา|[日일号號])"
)
# A national-format number: trunk prefix 0 (or Russia's 8), a bracketed area code, or a Chinese
# mobile (1[3-9]x), then digit groups with single separators.
_NATIONAL = re.compile(
    r"(?<![0-9A-Za-z+_])(?<!\d[.,/-])(?:\(0?\d{1,5}\)|0\d{1,5}|8(?=[\s(-])|1[3-9]\d)"
    r"(?:[ .-]?\(?\d{1,5}\)?){1,5}(?![0-9A-Za-z_]|[.,/-]\d)"
)
# A number written without a trunk prefix, in groups with single separators ("55 1234 5678" in
# Mexico, "11 4321-5678" in Buenos Aires, "2345 6789" in Hong Kong, "495 123-45-67" in Moscow):
# read only in the document's regions whose plan writes numbers so (see _bare_formats).
_GROUPED = re.compile(
    r"(?<![0-9A-Za-z+_(])(?<!\d[.,/-])[1-9]\d{0,4}(?:[ .-]\d{1,5}){1,4}(?![0-9A-Za-z_]|[.,/-]\d)"
)
# Years side by side ("2019 2020" heading a table's columns) are no phone, whatever the plan.
_YEARS = re.compile(r"(?:1[5-9]\d\d|20\d\d)(?:[ .-](?:1[5-9]\d\d|20\d\d))+")


# Credentials: keys and tokens of a well-known shape (AWS access key ids, GitHub, Stripe,
# OpenAI/Anthropic-style "sk-", Google API and Slack tokens, JSON Web Tokens), an AWS secret key
# after its label, private-key blocks (to their END line, or the base64 lines of a cut-off one)
# and the user:password part of a URL ("https://user:pass@host" keeps its scheme and host).
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_-])(?:(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36}"
    r"|github_pat_[A-Za-z0-9_]{22,255}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_-]{20,}"
    r"|AIza[0-9A-Za-z_-]{35}|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})(?![A-Za-z0-9_-])"
)
_LABELLED_SECRET = re.compile(
    r"(?i)secret_access_key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:\s+[A-Za-z0-9+/=]{16,})*)"
)
# userinfo: RFC 3986's characters less quotes, brackets, "," and ";", which end a URL written in
# JSON or code ("https://schema.org","@type") more often than they stand in a password.
_USERINFO = re.compile(
    r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://([a-z0-9._~%!$&*+=:-]+)@(?=[a-z0-9\[])"
)
# What each of those needs in the text: a scan that cannot match is skipped.
_SECRET_HINT = re.compile(
    r"AKIA|ASIA|gh[pousr]_|github_pat_|[sr]k[-_]|AIza|xox[abposr]-|eyJ|(?i:secret_access_key)"
)


@dataclass(frozen=True)
class Span:
    """One PII hit: its type, position and the original text."""

    type: str
    start: int
    end: int
    value: str


class _AsciiFold(dict):
    """str.translate table: any decimal digit -> ASCII digit, full-width ASCII -> ASCII.

    One character always maps to one character, so positions in the view are positions in the
    original text.
    """

    def __missing__(self, cp: int) -> str:
        ch = chr(cp)
        if 0xFF01 <= cp <= 0xFF5E:  # full-width forms
            out = chr(cp - 0xFEE0)
        elif (d := unicodedata.decimal(ch, None)) is not None:
            out = str(d)
        elif ch in "\u2010\u2011\u2012\u2013\u2212":  # hyphens and minus signs
            out = "-"
        elif ch in "\u00a0\u2007\u202f\u3000":  # no-break and ideographic spaces
            out = " "
        else:
            out = ch
        self[cp] = out
        return out


_FOLD = _AsciiFold()


def _ascii_view(text: str) -> str:
    return text if text.isascii() else text.translate(_FOLD)


def luhn_ok(digits: str) -> bool:
    """Luhn checksum of a digit string (payment cards)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    """ISO 13616 check: known country length and mod-97 == 1 (any case, spaces or dashes)."""
    s = re.sub(r"[ -]", "", candidate).upper()
    if IBAN_LENGTHS.get(s[:2]) != len(s):
        return False
    rearranged = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def isbn_ok(candidate: str) -> bool:
    """ISBN-10 (mod 11, 'X' = 10) or ISBN-13 (mod 10) check digit."""
    s = re.sub(r"[- ]", "", candidate).upper()
    if len(s) == 10 and s[:9].isdigit() and (s[9].isdigit() or s[9] == "X"):
        total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(s))
        return total % 11 == 0
    if len(s) == 13 and s.isdigit():
        return sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(s)) % 10 == 0
    return False


def _context_blocks(text: str, start: int) -> bool:
    return bool(_NOT_PII_BEFORE.search(text[max(0, start - 24) : start]))


def _card_ok(raw: str) -> bool:
    digits = re.sub(r"\D", "", raw)
    if len(digits) != len(raw) and not _CARD_GROUPS.fullmatch(raw):
        return False
    # Issuer prefixes (Visa, Mastercard, Amex, Discover/UnionPay, JCB, Diners) keep the
    # Luhn check from matching arbitrary long numbers, 1 in 10 of which pass it.
    if not 13 <= len(digits) <= 19 or not re.match(r"4|5[1-5]|2[2-7]|3[47]|6|35|30|36|38", digits):
        return False
    if digits.startswith(("978", "979")):  # ISBN-13 prefixes
        return False
    return luhn_ok(digits)


def _shielded(view: str, has_digit: bool = True) -> list[tuple[int, int]]:
    """Spans of UUIDs, valid ISBNs, dates, ranges and HHMM time ranges: digits inside them are
    never PII."""
    out = [(m.start(), m.end()) for m in _UUID.finditer(view)] if "-" in view else []
    if has_digit:
        out += [(m.start(), m.end()) for m in _ISBN.finditer(view) if isbn_ok(m.group())]
        out += [(m.start(), m.end()) for m in _DATE.finditer(view)]
        out += [(m.start(), m.end()) for m in _RANGE.finditer(view)]
        out += [
            (m.start(), m.end())
            for m in _TIME_RANGE.finditer(view)
            if not _PHONE_LABEL.search(view[max(0, m.start() - 24) : m.start()])
        ]
    return out


# The start of a web address: a scheme, www., or a host with a top-level domain and a slash.
# Digits in an address are an article's or a post's id (ert.at/content/0021115-Umfragen-...,
# facebook.com/.../posts/2395361813834269), not a phone or a card; an IP address in one stays
# an IP address.
_ADDRESS_HEAD = re.compile(
    r"[a-z][a-z0-9+.-]*://|www\.|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/", re.I
)
_SPACE = re.compile(r"\s")


def _in_address(view: str, start: int) -> bool:
    """Whether `start` is inside a web address: the text from the last space before it (at most
    200 characters back) holds an address's start."""
    token = _SPACE.split(view[max(0, start - 200) : start])[-1]
    return "/" in token and _ADDRESS_HEAD.search(token) is not None


def _overlaps(start: int, end: int, spans: Iterable[tuple[int, int]]) -> bool:
    return any(start < e and s < end for s, e in spans)


def _secrets(view: str) -> list[tuple[int, int]]:
    """Spans of credentials: well-known token shapes, private keys, URL user:password parts."""
    out: list[tuple[int, int]] = []
    if _SECRET_HINT.search(view):
        for m in _TOKEN.finditer(view):
            # "sk-" and 20 more letters can be a hyphenated name; a generated key mixes letters
            # and digits.
            tail = m.group()[3:]
            if m.group().startswith("sk-") and not (
                _ANY_DIGIT.search(tail) and _LETTER.search(tail)
            ):
                continue
            out.append(m.span())
        out += [m.span(1) for m in _LABELLED_SECRET.finditer(view)]
    if "PRIVATE KEY" in view:
        out += [m.span() for m in _PRIVATE_KEY.finditer(view)]
    if "://" in view and "@" in view:
        out += [m.span(1) for m in _USERINFO.finditer(view)]
    return out


def _labels(view: str, start: int, end: int, sep: re.Pattern[str]) -> list[tuple[int, int]]:
    """Spans of the labels of the domain view[start:end], whose dots `sep` matches."""
    out, pos = [], start
    for m in sep.finditer(view, start, end):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, end))
    return out


def _domain_end(view: str, labels: list[tuple[int, int]]) -> int | None:
    """Where an address's domain ends: after its last label that is a top-level domain, with a
    name before it ("kontakt@firma.de.Weitere" ends at ".de"); None without one, or when the
    name is an image's pixel density ("logo@2x.zip")."""
    for k in range(len(labels) - 1, 0, -1):
        if view[labels[k][0] : labels[k][1]].lower() in _TLDS:
            if _DENSITY.fullmatch(view, labels[0][0], labels[k - 1][1]):
                return None
            return labels[k][1]
    return None


def _emails(view: str) -> list[tuple[int, int]]:
    """Spans of addresses: plain, with a quoted local part, obfuscated, spelled out."""
    out: list[tuple[int, int]] = []
    if "@" in view:
        for m in _EMAIL.finditer(view):
            start = _LOCAL_LEAD.match(view, m.start()).end()
            if view[start] == "@":  # a local part of punctuation alone ("'@x.org") is none
                continue
            at = view.index("@", start)
            end = _domain_end(view, _labels(view, at + 1, m.end(), _DOT))
            # "git@github.com:user/repo.git", an SSH remote: the host's shared account.
            if end is None or (view[start:at] == "git" and view.startswith(":", end)):
                continue
            out.append((start, end))
        if '"@' in view:
            for m in _EMAIL_QUOTED.finditer(view):
                at = view.index('"@', m.start()) + 1
                if (end := _domain_end(view, _labels(view, at + 1, m.end(), _DOT))) is not None:
                    out.append((m.start(), end))
    if _OBF_HINT.search(view):
        for m in _EMAIL_OBFUSCATED.finditer(view):
            start = _LOCAL_LEAD.match(view, m.start()).end()
            end = _domain_end(view, _labels(view, m.end("at"), m.end(), _OBF_SEP))
            if start >= m.start("at") or end is None:
                continue
            # An upper-case "AT" between upper-case words is a shouted sentence; before a domain
            # with real dots it needs a local part that looks like one ("jane.doe AT x.org",
            # "jane AT x.org", not "Sales AT Amazon.com").
            if m.group("at").strip() == "AT":
                local, domain = view[start : m.start("at")], view[m.end("at") : end]
                if not any(c.islower() for c in view[start:end]) or (
                    "DOT" not in domain and not (_LOCAL_SHAPE.search(local) or local.islower())
                ):
                    continue
            out.append((start, end))
    if _SPELLED_HINT.search(view):
        for pattern, sep, at_word in _EMAIL_SPELLED:
            for m in pattern.finditer(view):
                at = at_word.search(view, m.start(), m.end())
                labels = _labels(view, at.end(), m.end(), sep)
                end = _domain_end(view, labels)
                if end is None or not view[end - 1].islower():  # "... at example dot COM"
                    continue
                local = view[m.start() : at.start()]
                local_words = sep.split(local)
                words = local_words + [view[s:e] for s, e in labels if e < end]
                if any(w.lower() in _PROSE_WORDS for w in words):
                    continue
                if not (
                    _LOCAL_SHAPE.search(local)
                    or len(local_words) > 1  # "john dot doe"
                    or local.lower() in _ROLES
                    or _EMAIL_CUE.search(view, max(0, m.start() - 40), m.start())
                ):
                    continue
                out.append((m.start(), end))
    return out


def find_pii(text: str, lang: str = "en", *, regions: Sequence[str] | None = None) -> list[Span]:
    """All validated PII spans of a text, non-overlapping, in text order.

    `lang` (an ISO 639-1 code, e.g. from language ID) and the scripts in the text pick the
    regions whose national phone formats are read; `regions` replaces DEFAULT_REGIONS, the
    regions tried after those.
    """
    view = _ascii_view(text)
    # Each pattern below needs a literal it is skipped without (an '@', a '-', a \d): a scan
    # of a text that has none finds nothing, and the lookbehind each pattern opens with is
    # tried at every position (tests/filters/test_pii.py checks each skip on folded text).
    has_digit = _ANY_DIGIT.search(view) is not None
    shield = _shielded(view, has_digit)
    spans: list[Span] = []

    def add(kind: str, start: int, end: int) -> None:
        spans.append(Span(kind, start, end, text[start:end]))

    for start, end in _secrets(view):
        add("secret", start, end)
    for start, end in _emails(view):
        add("email", start, end)
    if "@" in view and _WIDE_CHAR.search(view):  # _non_overlapping drops what both find
        for m in _EMAIL_WIDE.finditer(view):
            start = _WIDE_LEAD.match(view, m.start()).end()
            at = view.index("@", start)
            end = _domain_end(view, _labels(view, at + 1, m.end(), _DOT))
            # A local part is at most 64 octets (RFC 5321): a longer run is a clause, not a name.
            if start < at and end is not None and len(text[start:at].encode()) <= 64:
                add("email", start, end)
    for m in _IBAN.finditer(view) if has_digit else ():
        # Written in one case: "de89 3704 ..." is an IBAN, "Mo12 Abcd ..." is words.
        letters = re.sub(r"[^A-Za-z]", "", m.group())
        if (letters.isupper() or letters.islower()) and iban_ok(m.group()):
            add("iban", m.start(), m.end())
    for m in _CARD.finditer(view) if has_digit else ():
        # Digits right after "DE89 " are an (invalid) IBAN's body, not a card.
        iban_tail = _IBAN_HEAD.search(view[max(0, m.start() - 5) : m.start()])
        if (
            _card_ok(m.group())
            and not iban_tail
            and not _context_blocks(text, m.start())
            and not _overlaps(m.start(), m.end(), shield)
            and not _in_address(view, m.start())
        ):
            add("card", m.start(), m.end())
    for m in _IPV4.finditer(view) if has_digit else ():
        if _context_blocks(text, m.start()) or _overlaps(m.start(), m.end(), shield):
            continue
        try:
            ipaddress.IPv4Address(m.group())
        except ValueError:
            continue
        if _SECTION.fullmatch(m.group()):
            continue
        add("ip", m.start(), m.end())
    if "::" in view or view.count(":") >= 7:
        for m in _IPV6.finditer(view):
            try:
                address = ipaddress.IPv6Address(m.group())
            except ValueError:
                continue
            # "::" and "::1" name no machine of anyone's ("::1." was a score in a Macedonian
            # sports report); every other address is kept as an address.
            if address.is_unspecified or address.is_loopback:
                continue
            if not _overlaps(m.start(), m.end(), shield):
                add("ip", m.start(), m.end())
    taken = [(s.start, s.end) for s in spans]
    for start, end in _phones(view, lang, regions, shield + taken):
        add("phone", start, end)
    return _non_overlapping(spans)


def phone_regions(text: str, lang: str = "", regions: Sequence[str] | None = None) -> list[str]:
    """Regions to read national phone formats in: language's, then scripts', then defaults."""
    out = list(LANG_REGIONS.get((lang or "").split("-")[0].lower(), ()))
    if not text.isascii():
        for _name, chars, script_regions in SCRIPT_REGIONS:
            if re.search(f"[{chars}]", text):
                out.extend(script_regions)
    out.extend(DEFAULT_REGIONS if regions is None else regions)
    return [r for r in dict.fromkeys(r.upper() for r in out) if _metadata(r) is not None]


def _metadata(region: str):
    return PhoneMetadata.metadata_for_region(region, None)


_GROUP_BEFORE = re.compile(r"\d[ .-]?$")
_GROUP_AFTER = re.compile(r"[ .-]?\d")
_TAIL_AFTER = re.compile(r"\s+\d{1,2}(?!\d|[ .,:/-]\d)")  # "... 25 มี.ค.", "... 2 persons"
_GLUED = re.compile(r"[A-Za-z0-9_]")  # a number glued to a word ("70924_0.54804700.jpg")
_DATE_LIKE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}")
# A calendar date anywhere in a candidate (a page's timestamps run together as "10:00:002022-
# 10-27 08:15", and "002022-10-27 08" reads as an international number).
_ISO_DATE_IN = re.compile(r"(?:19|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])")
_AFTER_CLOCK = re.compile(r"\d:$")  # right after a clock time's digits and colon ("10:00:00...")
# "(604)-822-2510": a bracketed area code may be followed by a dash as well as a space.
_NANP_SHAPE = re.compile(r"(?:\+?1[\s.-]?)?(?:\(\d{3}\)[\s-]?|\d{3}[\s.-])\d{3}[\s.-]\d{4}")


def _format_of(number, meta):
    """The region's format for a number (libphonenumber's choice: the first whose leading digits
    and pattern fit its national significant number), or None."""
    nsn = phonenumbers.national_significant_number(number)
    for fmt in meta.number_format:
        lead = fmt.leading_digits_pattern
        if lead and not re.match(lead[-1], nsn):
            continue
        if re.fullmatch(fmt.pattern, nsn):
            return fmt
    return None


def _written_bare(fmt, prefix: str) -> bool:
    """Whether the region writes numbers of this format without its trunk prefix: it has none,
    the format's national rule has none ("(\\1)" in Brazil, China's mobiles) or the metadata
    marks the prefix optional (Argentina, India's mobiles, Russia)."""
    rule = (fmt.national_prefix_formatting_rule or "").replace("\\1", "")
    return (
        not prefix
        or not rule
        or prefix not in rule
        or bool(fmt.national_prefix_optional_when_formatting)
    )


@cache
def _bare_formats(region: str) -> tuple[tuple[re.Pattern[str], re.Pattern[str] | None], ...]:
    """(pattern, leading digits) of the region's formats written without a trunk prefix."""
    meta = _metadata(region)
    if meta is None:
        return ()
    prefix = meta.national_prefix or ""
    return tuple(
        (
            re.compile(f.pattern),
            re.compile(f.leading_digits_pattern[-1]) if f.leading_digits_pattern else None,
        )
        for f in meta.number_format
        if _written_bare(f, prefix)
    )


def _may_be_bare(region: str, digits: str, first: str) -> bool:
    """Whether a format of the region written without its trunk prefix has these digits, in a
    first group of `first` (a test before parsing: most grouped numbers fail it)."""
    for pattern, lead in _bare_formats(region):
        if lead is not None and not lead.match(digits):
            continue
        grouped = pattern.fullmatch(digits)
        if grouped is not None and grouped.group(1) == first:
            return True
    return False


def _area_fits(raw: str, number, fmt) -> bool:
    """The first digit group as written is the format's first group (the area code): "55 1234
    5678" and "(495) 123-45-67" are, "9 876 543 210" (a sum in Russia) and "(2019) 123-45-67"
    (a citation) are not."""
    nsn = phonenumbers.national_significant_number(number)
    grouped = re.fullmatch(fmt.pattern, nsn) if fmt is not None else None
    first = re.match(r"\(?(\d+)", raw.strip())
    return (
        grouped is not None
        and first is not None
        and re.sub(r"\D", "", raw) == nsn
        and first.group(1) == grouped.group(1)
    )


def _national_ok(raw: str, number, region: str, primary: bool) -> bool:
    """A national-format candidate (no '+') is a phone only in a shape people write numbers in.

    `primary`: the region comes from the document's language or scripts (not the defaults).
    """
    digits = re.sub(r"\D", "", raw)
    meta = _metadata(region)
    prefix = (meta.national_prefix or "") if meta is not None else ""
    separated = bool(re.search(r"[\s().-]", raw))
    if number.country_code == 1:  # NANP: "(415) 555-2671", "415-555-2671", "1 415 555 2671"
        return bool(_NANP_SHAPE.fullmatch(raw.strip())) and phonenumbers.is_valid_number(number)
    if prefix and digits.startswith(prefix) and not raw.startswith("("):
        # Trunk prefix: "030 1234567", "07700 900058", "8 (495) 123-45-67".
        # Written bare, only a full-length number: "01234567" is more likely a count or code.
        return len(digits) >= 8 and (separated or len(digits) >= 10)
    if raw.startswith("(0"):  # bracketed area code: "(030) 1234567", "(0221) 254 4992"
        return len(digits) >= 8 and phonenumbers.is_possible_number(number)
    if _YEARS.fullmatch(raw.strip()):
        return False
    if raw.startswith("("):
        # A bracketed 2-5 digit area code, in the document's region, on a valid number: "(11)
        # 91234-5678" in Brazil, "(495) 123-45-67" in Moscow; "(2019) 123-145" is a citation.
        area = re.match(r"\(\d{2,5}\)", raw) is not None
        return (
            primary
            and area
            and len(digits) >= 8
            and phonenumbers.is_valid_number(number)
            and _area_fits(raw, number, _format_of(number, meta))
        )
    # No trunk prefix: plans without one (Spain "912 345 678", Italy, Poland, Greece, Mexico,
    # Hong Kong...) or numbers written without it (India "98765 43210", China "138 1234 5678",
    # Buenos Aires "11 4321-5678"). These look like any grouped number, so they need the
    # document's own region and a valid number.
    if not primary or not phonenumbers.is_valid_number(number):
        return False
    if prefix:
        mobile = phonenumbers.number_type(number) == phonenumbers.PhoneNumberType.MOBILE
        if mobile and (region, len(digits)) in (("CN", 11), ("IN", 10)):
            return True  # also unseparated: "13812345678"
        # Else only where libphonenumber's format writes the number without the prefix, in the
        # format's own groups.
        fmt = _format_of(number, meta)
        return (
            separated
            and fmt is not None
            and _written_bare(fmt, prefix)
            and _area_fits(raw, number, fmt)
        )
    return separated and len(digits) >= 8


def _phones(
    view: str, lang: str, regions: Sequence[str] | None, blocked: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    if sum(map(str.isdigit, view)) < 7:
        return []
    order = phone_regions(view, lang, regions)
    first = order[0] if order else "ZZ"  # no region at all: '+' numbers only
    primary = set(phone_regions(view, lang, ()))
    found: list[tuple[int, int]] = []
    # POSSIBLE leniency (length fits the region's plan): valid-number metadata lags real
    # allocations and rejects fictional ranges (Ofcom's 07700 900xxx), so the shape rules and
    # the decoy shields do the precision work instead.
    # max_tries: the matcher silently stops after that many rejected candidates (65535 by
    # default: a long number table hid every number after it). Each rejected candidate takes
    # at least one character of the text, so the text's length lets it read to the end.
    matcher = phonenumbers.PhoneNumberMatcher(
        view, first, leniency=phonenumbers.Leniency.POSSIBLE, max_tries=max(65535, len(view) + 1)
    )
    for match in matcher:
        start, raw = _balanced(match.start, match.raw_string)
        if _phone_ok(view, start, raw, match.number, first, first in primary, blocked):
            found.append((start, start + len(raw)))
    # National formats of the other candidate regions: each candidate is parsed per region.
    for m in _NATIONAL.finditer(view):
        inside = [f for f in found if m.start() <= f[0] and f[1] <= m.end()]
        if _overlaps(m.start(), m.end(), [f for f in found if f not in inside]):
            continue
        if _overlaps(m.start(), m.end(), blocked):
            continue
        start, raw = _balanced(m.start(), m.group())
        for region in _candidate_regions(raw, order, primary):
            try:
                number = phonenumbers.parse(raw, region)
            except phonenumbers.NumberParseException:
                continue
            # "0875975877 25 มี.": a number found and a day or a count after it, unless the
            # whole is a valid number of the document's own regions.
            if inside and _SHORT_TAIL.search(raw):
                if region not in primary or not phonenumbers.is_valid_number(number):
                    continue
            if phonenumbers.is_possible_number(number) and _phone_ok(
                view, start, raw, number, region, region in primary, blocked
            ):  # a longer reading ("(11) 91234-5678") replaces the part found before
                found = [f for f in found if f not in inside] + [(start, start + len(raw))]
                break
    # Grouped numbers without a trunk prefix, in the document's regions that write them so.
    bare = [r for r in order if r in primary and _bare_formats(r)]
    taken = bytearray(len(view))  # characters of the spans found or blocked (a long number
    for s, e in found + blocked if bare else ():  # table has thousands: no pairwise test)
        taken[s:e] = b"\x01" * (e - s)
    for m in _GROUPED.finditer(view) if bare else ():
        if 1 in taken[m.start() : m.end()]:
            continue
        raw = m.group()
        digits, first = re.sub(r"\D", "", raw), re.match(r"\d+", raw).group()
        for region in bare:
            if not _may_be_bare(region, digits, first):
                continue
            try:
                number = phonenumbers.parse(raw, region)
            except phonenumbers.NumberParseException:
                continue
            # In the groups of the region's format: "5 512 345 678" is a sum, not a number.
            fmt = _format_of(number, _metadata(region))
            if (
                phonenumbers.is_possible_number(number)
                and _area_fits(raw, number, fmt)
                and _phone_ok(view, m.start(), raw, number, region, True, ())
            ):
                found.append(m.span())
                break
    found += _labelled_phones(view, found, blocked)
    return [span for s, e in found if (span := _trim_day(view, s, e))]


def _labelled_phones(
    view: str, found: list[tuple[int, int]], blocked: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Numbers right after a phone's label ("tlf. 57641686", "telefon: 068/5229380", "tel. 8 (41)
    523 575", "TEL 655 8244"): phones whatever the region's plan says, with 7-15 digits written
    as numbers are (no two separators in a row, at most one one-digit group, not years or a
    date), where nothing else was found."""
    out: list[tuple[int, int]] = []
    taken = bytearray(len(view))  # the spans found or blocked (a number table has thousands)
    for s, e in found + blocked:
        taken[s:e] = b"\x01" * (e - s)
    for m in _NUMBER_RUN.finditer(view):
        start, raw = m.start(), re.split(r"\s/\s", m.group())[0].rstrip(" .-/(")
        if sum(map(str.isdigit, raw)) < 7 or not _LABEL_BEFORE.search(
            view[max(0, start - 40) : start]
        ):
            continue
        start, raw = _balanced(start, raw)
        if raw.startswith("(") and raw.endswith(")") and raw.count("(") == 1:
            start, raw = start + 1, raw[1:-1]  # the whole number in brackets: "(606/262590)"
        raw = re.sub(r"\s\d$", "", raw)  # a one-digit count after it: "... 2 persons"
        end = start + len(raw)
        digits = re.sub(r"\D", "", raw)
        groups = re.findall(r"\d+", raw)
        if (
            not 7 <= len(digits) <= 15
            or sum(len(g) == 1 for g in groups) > 1
            or _YEARS.fullmatch(raw)
            or _DATE_LIKE.fullmatch(raw)
            or _ISO_DATE_IN.search(raw)
            or _MIXED_PUNCT.search(raw)
            or _AMOUNT.fullmatch(raw)
            or _GLUED.match(view, end)
            or _DECIMAL_AFTER.match(view, end)
            or _in_address(view, start)
            or 1 in taken[start:end]
        ):
            continue
        out.append((start, end))
    return out


def _trim_day(view: str, start: int, end: int) -> tuple[int, int] | None:
    """A span without the white space at its ends, nor a day of the month the matcher read on
    ("0875975877 25 มี.ค.", "... 3 mai"); None when fewer than 7 digits are left."""
    day = _SHORT_TAIL.search(view, start, end)
    if day is not None and _MONTH_NEXT.match(view, end):
        end = day.start()
    while start < end and view[start].isspace():
        start += 1
    while end > start and view[end - 1].isspace():
        end -= 1
    return (start, end) if sum(map(str.isdigit, view[start:end])) >= 7 else None


def _balanced(start: int, raw: str) -> tuple[int, str]:
    """Drop an unpaired bracket at either end: "(+1 201-555-0123" is text, not the number."""
    if raw.startswith("(") and ")" not in raw:
        start, raw = start + 1, raw[1:]
    if raw.endswith(")") and "(" not in raw:
        raw = raw[:-1]
    return start, raw


def _candidate_regions(raw: str, order: list[str], primary: set[str]) -> Sequence[str]:
    if raw[0] == "1":  # a bare "1[3-9]x..." start can only be a Chinese mobile number
        return ("CN",) if "CN" in primary else ()
    return order


def _phone_ok(view: str, start: int, raw: str, number, region: str, primary: bool, blocked) -> bool:
    end = start + len(raw)
    if _overlaps(start, end, blocked) or _context_blocks(view, start):
        return False
    if _in_address(view, start) or _MIXED_PUNCT.search(raw):
        return False
    # A catalogue's or register's code before the digits, or a municipality key's grouping: no
    # phone, unless a phone's label stands near ("CALL US 0800 ...").
    shape = raw.strip()
    plain = not shape.startswith("+") and not _NANP_SHAPE.fullmatch(shape)
    code = _CODE_BEFORE.search(view[max(0, start - 16) : start]) or _ADMIN_CODE.fullmatch(shape)
    if plain and code and not _LABEL_NEAR.search(view[max(0, start - 30) : start]):
        return False
    if _DATE_LIKE.fullmatch(raw.strip()) or _ISO_DATE_IN.search(raw):
        return False
    if start >= 2 and _AFTER_CLOCK.search(view, start - 2, start):
        return False
    if (start and _GLUED.match(view, start - 1)) or _GLUED.match(view, end):
        return False
    # Digit groups of a longer grouped number (an IBAN body, an account number) are no phone;
    # a valid number followed by a day or a count alone ("0875975877 25 มี.ค.") is one.
    if _GROUP_BEFORE.search(view, max(0, start - 2), start):
        return False
    if _GROUP_AFTER.match(view, end) and not (
        _TAIL_AFTER.match(view, end) and phonenumbers.is_valid_number(number)
    ):
        return False
    digits = re.sub(r"\D", "", raw)
    if not 7 <= len(digits) <= 15:
        return False
    if raw.lstrip().startswith("+") or digits.startswith("00"):
        return phonenumbers.region_code_for_country_code(number.country_code) != "ZZ"
    return _national_ok(raw, number, region, primary)


def _non_overlapping(spans: list[Span]) -> list[Span]:
    # Earlier and longer spans win; the type priority breaks exact ties.
    prio = {"secret": 0, "email": 1, "iban": 2, "card": 3, "ip": 4, "phone": 5}
    spans.sort(key=lambda s: (s.start, -(s.end - s.start), prio[s.type]))
    out: list[Span] = []
    for s in spans:
        if out and s.start < out[-1].end:
            continue
        out.append(s)
    return out


def scrub(
    text: str, lang: str = "en", *, regions: Sequence[str] | None = None
) -> tuple[str, Counter[str]]:
    """Replace PII with typed placeholders; return the new text and counts per type."""
    spans = find_pii(text, lang, regions=regions)
    if not spans:
        return text, Counter()
    parts: list[str] = []
    pos = 0
    for s in spans:
        parts.append(text[pos : s.start])
        parts.append(PLACEHOLDERS[s.type])
        pos = s.end
    parts.append(text[pos:])
    return "".join(parts), Counter(s.type for s in spans)
