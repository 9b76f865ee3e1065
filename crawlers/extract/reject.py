"""Pages that answer 200 but hold no document: a login form, a not-found notice.

A forum or wiki answers many URLs with HTTP 200 and a page that only says what cannot be shown:
"You need to login in order to reply", "The requested topic does not exist." Their main text is
a notice, not a document; `notice_reject` names them (`login_wall`, `soft_404`) so extraction
rejects them. Only a short main text can be a notice (`SHORT_NOTICE_CHARS`): an article that
merely mentions "not found" or has a login box beside it is longer than that, and a title counts
only where it is the notice itself ("Login", "404 Not Found"), not where it contains the words.
"""

from __future__ import annotations

import re

from lxml.etree import XPath

from crawlers.render.decide import text_weight

# Main text (text_weight: characters without spaces, CJK double; lines that are a link's text
# not counted) below this may be a notice.
SHORT_NOTICE_CHARS = 400
# A not-found phrase in the text alone (the title saying nothing) counts below this much text.
BARE_NOTICE_CHARS = 150
_MAX_TITLE_WORDS = 6  # a title segment longer than this is a headline, not a notice

# Phrases of a page that does not exist, in the main text (lower-cased).
_NOT_FOUND = re.compile(
    r"\b404\b|not found|nothing found|does not exist|doesn't exist|doesn’t exist|"
    r"no longer exists?|no longer available|(?:could|can)(?:not|n't|n’t)? (?:be )?found|"
    r"(?:could|can)(?:not|n't|n’t) find|page you (?:are|were) looking for|"
    r"nicht gefunden|existiert nicht|nicht mehr verfügbar|introuvable|n['’]existe (?:pas|plus)|"
    r"pas été trouvée?|no (?:se )?(?:ha )?encontrad[ao]|no se (?:pudo )?encontr|no existe|"
    r"non (?:è stat[ao] )?trovat[ao]|non esiste|não (?:foi )?encontrad[ao]|não existe|"
    r"niet gevonden|bestaat niet|nie znaleziono|nie (?:została )?znalezion|nie istnieje|"
    r"не найден|не существует|не знайдено|не існує|bulunamadı|mevcut değil|hittades inte|"
    r"finns inte|nebyla nalezena|neexistuje|找不到|不存在|未找到|見つかりません|存在しません|"
    r"찾을 수 없|존재하지 않|غير موجود|لم يتم العثور"
)
# A title segment that is a not-found notice: "404", "Page not found", "Seite nicht gefunden".
_NOT_FOUND_TITLE = re.compile(
    r"(?:(?:error|http|erreur|fehler|errore|erro|błąd|ошибка)\s*:?\s*)?(?:404\b.*|"
    r"(?:(?:the\s+)?(?:page|file|document|url|topic|thread|post|article|resource|content|"
    r"seite|datei|página|pagina|strona|страница)\s+)?(?:not found|nothing found|"
    r"nicht gefunden|introuvable|non trouvée|no encontrad[ao]|non trovat[ao]|"
    r"não encontrad[ao]|niet gevonden|nie znaleziono|nie została znaleziona|не найдена?|"
    r"bulunamadı|hittades inte)[.!]*|"
    r".{0,8}(?:找不到|不存在|未找到|見つかりません|存在しません|찾을 수 없|존재하지 않).{0,8})"
)
# What a page that asks for an account says (lower-cased main text).
_LOGIN_NEEDED = re.compile(
    r"(?:must|need to|have to|required to|please|first)\s+(?:be\s+)?(?:registered\s+and\s+)?"
    r"(?:log(?:ged)?\s*-?\s*in|sign(?:ed)?\s*-?\s*in|log\s*on|registered|register)|"
    r"(?:log\s*-?\s*in|sign\s*-?\s*in|registration)\s+(?:is\s+)?required|"
    r"(?:log|sign)\s*-?\s*in\s+to\s+(?:view|see|read|continue|access|reply|post)|"
    r"not\s+(?:permitted|authori[sz]ed|allowed)\s+to|you do not have (?:the )?permission|"
    r"anmelden|angemeldet sein|einloggen|connectez-vous|vous devez être (?:connecté|inscrit)|"
    r"inicia(?:r)? sesión|debes (?:estar registrado|iniciar)|effettua(?:re)? l['’]accesso|"
    r"devi (?:essere registrato|effettuare)|faça login|inicie sessão|inloggen|log in om|"
    r"zaloguj się|musisz być zalogowany|войдите|необходимо (?:войти|авторизоваться)|"
    r"请(?:先)?登录|請(?:先)?登入|ログインしてください|ログインが必要|로그인(?:이 필요|하세요|해 주세요)|"
    r"giriş yap(?:ın|malısınız)|يجب تسجيل الدخول"
)
# A title segment that is a login page: "Login", "User login", "Sign in", "Anmelden".
_LOGIN_TITLE = re.compile(
    r"(?:user\s+|member\s+|account\s+)?(?:log\s*-?\s*in|sign\s*-?\s*in|log\s*on)"
    r"(?:\s+(?:required|page|form))?|anmelden|anmeldung|connexion|se connecter|"
    r"iniciar sesión|accedi|accesso|entrar|iniciar sessão|inloggen|aanmelden|logowanie|"
    r"zaloguj się|вход|войти|авторизация|giriş(?: yap)?|登录|登入|ログイン|로그인|تسجيل الدخول"
)
_PASSWORD = XPath("//input[translate(@type, 'PASSWORD', 'password') = 'password']")
_LINKS = XPath("//a[not(ancestor::a)]")
_TITLE = XPath("(//title)[1]//text()", smart_strings=False)
_TITLE_SEPARATORS = re.compile(r"\s+[-–—:·|»«/]\s+|\s*[|»«·]\s*|\s+[–—]\s*|\s*[–—]\s+")


def _title_segments(tree) -> list[str]:
    title = " ".join("".join(_TITLE(tree)).split()).lower()
    parts = (p.strip(" .!") for p in _TITLE_SEPARATORS.split(title))
    return [p for p in parts if p and len(p.split()) <= _MAX_TITLE_WORDS]


def _without_link_lines(tree, text: str) -> str:
    """`text` without its lines that are the text of a link of the page: a notice page short
    enough for trafilatura's baseline comes with its menu."""
    links = {" ".join("".join(a.itertext()).split()).lower() for a in _LINKS(tree)}
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(x for x in lines if x and x.lower() not in links)


def notice_reject(tree, text: str) -> tuple[str, str] | None:
    """(reason, detail) when the page's main `text` is only a notice, else None:
    `login_wall`, a password field beside short main text that asks to log in (or a title that
    is "Login"); `soft_404`, short main text saying the page does not exist (or a title that is
    "Page not found")."""
    if text_weight(text) >= SHORT_NOTICE_CHARS * 2:  # not worth reading the links
        return None
    text = _without_link_lines(tree, text)
    weight = text_weight(text)
    if weight >= SHORT_NOTICE_CHARS:
        return None
    lowered = " ".join(text.split()).lower()
    segments = _title_segments(tree)
    size = f"{weight} characters of main text, below {SHORT_NOTICE_CHARS}"
    if _PASSWORD(tree):
        said = _LOGIN_NEEDED.search(lowered)
        titled = next((s for s in segments if _LOGIN_TITLE.fullmatch(s)), None)
        if said or titled:
            why = f"says {said.group(0)!r}" if said else f"is titled {titled!r}"
            return "login_wall", f"a login form: the page has a password field, {why}; {size}"
    titled = next((s for s in segments if _NOT_FOUND_TITLE.fullmatch(s)), None)
    if titled:
        return "soft_404", f"a not-found page answered with 200: titled {titled!r}; {size}"
    said = _NOT_FOUND.search(lowered)
    if said and weight < BARE_NOTICE_CHARS:
        return "soft_404", (
            f"a not-found page answered with 200: says {said.group(0)!r}; {weight} characters "
            f"of main text, below {BARE_NOTICE_CHARS}"
        )
    return None
