"""JavaScript run inside rendered pages: settle probes, interaction steps and shadow-DOM flattening."""

from __future__ import annotations

import json
from importlib.resources import files

from crawlers.render.decide import PAGER_DENY_PATTERN, PAGER_PATTERN

INIT_SCRIPT = files("crawlers.render").joinpath("interact.js").read_text(encoding="utf-8")

# Milliseconds since the last activity (DOM mutation, interaction, fetch/XHR start or end), and
# how many short timers and page-side fetch/XHR calls are still pending.
SETTLE_PROBE = """() => {
  const s = window.__refinery;
  if (!s) return [1e9, 0];
  return [performance.now() - s.lastMutation, s.timers.size + s.pending];
}"""

# Click the first visible, enabled control whose label promises more (one of the given phrases,
# the given pattern, or decide.PAGER_PATTERN on its words: "Pokaż starsze wpisy", "次の10件"; with
# no letters in its label, a class or id naming it a load-more control): a button, an <a> that
# loads rather than navigates (no href, "#..." or "javascript:"), a role=button, in the light DOM
# or any open shadow root, not in a dialog and not saying "options", "settings", "share".
# Failing that, the one short-worded control right under a feed (decide._feed_end_controls'
# evidence, in the live DOM); failing that, the one short control that ends the main content
# (the last interactive element after its text, alone in its box): the caller keeps clicking
# only while the page's text grows, so a control that loads nothing is clicked once.
CLICK_LOAD_MORE = """([phrases, pattern, names]) => {
  const re = new RegExp(pattern, 'i'), named = new RegExp(names || '$^', 'i');
  const pager = new RegExp(__PAGER__, 'u'), deny = new RegExp(__DENY__, 'u');
  const words = (t) => t.toLowerCase().replace(/[^\\p{L}\\p{N}\\p{M}]+/gu, ' ').trim();
  const sel = 'button, a, [role=button], input[type=button], input[type=submit]';
  const away = '[role=dialog], [role=alertdialog], [aria-modal=true], [aria-haspopup=true], [aria-haspopup=menu]';
  const label = (el) => (el.innerText || el.textContent || el.value || el.getAttribute('aria-label') || '')
    .trim().replace(/\\s+/g, ' ');
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 || r.height > 0; };
  const off = (el) => el.disabled || el.getAttribute('aria-disabled') === 'true';
  // A real link navigates away; "#id" of an element in the page jumps to it ("Back to top").
  const navigates = (el) => {
    const href = (el.tagName === 'A' && el.getAttribute('href')) || '';
    if (href.startsWith('#')) return href.length > 1 && !!document.getElementById(href.slice(1));
    return !!href && !href.startsWith('javascript');
  };
  const click = (el, text) => {
    el.scrollIntoView({block: 'center'}); el.click();
    if (window.__refinery) window.__refinery.lastMutation = performance.now();
    return text;
  };
  const roots = [document];
  for (let i = 0; i < roots.length; i++)
    for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
  for (const root of roots) for (const el of root.querySelectorAll(sel)) {
    const text = label(el).toLowerCase();
    // An icon-only control (no letters in its label) says "load more" by its class or id only.
    const unlabelled = !/\\p{L}/u.test(text) &&
      named.test((el.id || '') + ' ' + (typeof el.className === 'string' ? el.className : ''));
    if ((!text && !unlabelled) || text.length > 60 || off(el)) continue;
    if (el.closest('form') && el.type === 'submit') continue;
    if (!shown(el) || navigates(el) || el.closest(away) || deny.test(words(text))) continue;
    if ((text && (phrases.some(p => text.includes(p)) || re.test(text) || pager.test(words(text)))) || unlabelled)
      return click(el, text || el.className || el.id);
  }
  // A short worded label, one control alone in its box (not carousel arrows, not a pager).
  const short = (el) => {
    const text = label(el);
    const w = text.replace(/[\\p{P}\\p{S}\\d_]+/gu, ' ').trim().split(/\\s+/).filter(Boolean);
    if (!w.length || w.join('').length < 3 || w.length > 5 || text.length > 40) return false;
    if (off(el) || el.closest('form, nav, header, footer, aside') || el.closest(away)) return false;
    if (!shown(el) || navigates(el) || deny.test(words(text))) return false;
    const box = el.parentElement;
    return !(box && [...box.querySelectorAll(sel)].some((o) => o !== el && !navigates(o)));
  };
  // No label in the known phrases: the one control right under a feed (3+ items of one tag and
  // class that each link somewhere) promises more of it, in whatever language it is worded.
  const isItem = (c) => (c.innerText || c.textContent || '').trim() &&
    (c.matches('a[href]') || c.querySelector('a[href]'));
  const feedAbove = (el) => {
    let node = el;
    for (let k = 0; k < 3 && node; k++, node = node.parentElement) {
      let prev = node.previousElementSibling;
      while (prev && /^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE)$/.test(prev.tagName)) prev = prev.previousElementSibling;
      if (!prev) continue;
      let box = prev;
      for (let d = 0; d < 3 && box.children.length === 1; d++) box = box.children[0];
      const counts = {};
      for (const c of box.children) if (isItem(c)) counts[c.tagName + '.' + c.className] = (counts[c.tagName + '.' + c.className] || 0) + 1;
      let run = 0;
      for (let x = prev; x && x.tagName === prev.tagName; x = x.previousElementSibling)
        if (x.className === prev.className && isItem(x)) run++;
      return Math.max(run, 0, ...Object.values(counts)) >= 3;
    }
    return false;
  };
  for (const root of roots) for (const el of root.querySelectorAll(sel))
    if (short(el) && feedAbove(el)) return click(el, label(el).toLowerCase());
  // The control that ends the main content: after its text (no text and no other interactive
  // element follow it there), in the page's flow (not fixed: a chat launcher, a banner's), not
  // named for sharing, printing, comments or consent.
  const main = document.querySelector('main, [role=main]') || document.body;
  if (!main) return null;
  const chrome = 'nav, header, footer, aside, form, script, style, noscript, template, ' + away;
  const last = [...main.querySelectorAll(sel + ', input, select, textarea')]
    .filter((el) => shown(el) && !el.closest(chrome)).pop();
  if (!last || !last.matches(sel) || !short(last)) return null;
  const odd = /(^|[-_ ])(share|sharing|social|print|comments?|cookie|consent|newsletter|subscribe|login|search|menu|modal|popup|chat|top|close|toggle)($|[-_ ])/i;
  for (let a = last; a && a !== main; a = a.parentElement) {
    if (odd.test((a.id || '') + ' ' + (typeof a.className === 'string' ? a.className : ''))) return null;
    const pos = getComputedStyle(a).position;
    if (pos === 'fixed' || pos === 'sticky') return null;
  }
  const walk = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  let before = 0, after = 0;
  for (let t = walk.nextNode(); t; t = walk.nextNode()) {
    const p = t.parentElement;
    if (!p || p.closest(chrome) || last.contains(t)) continue;
    const n = t.textContent.trim().length;
    if (last.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING) after += n; else before += n;
  }
  return before >= 100 && after < 20 ? click(last, label(last).toLowerCase()) : null;
}""".replace("__PAGER__", json.dumps(PAGER_PATTERN)).replace(
    "__DENY__", json.dumps(PAGER_DENY_PATTERN)
)

# Length of the page's visible text, open shadow roots included: what interaction tries to grow.
CONTENT_SIZE = """() => {
  let n = document.body ? (document.body.innerText || '').length : 0;
  const roots = [document];
  for (let i = 0; i < roots.length; i++)
    for (const el of roots[i].querySelectorAll('*'))
      if (el.shadowRoot) { roots.push(el.shadowRoot); n += (el.shadowRoot.textContent || '').length; }
  return n;
}"""

# Open <details>, select each tab once and expand collapsed accordions; return how many acted on.
_TABS = (
    "[role=tab], [aria-expanded=false], [data-tab], [data-toggle=tab], [data-bs-toggle=tab], "
    "[data-toggle=collapse], [data-bs-toggle=collapse], .tabs button, .tab, .accordion button, "
    ".accordion-toggle"
)
OPEN_EXPANDERS = """() => {
  const TAB_SELECTORS = "__TABS__";
  let n = 0;
  document.querySelectorAll('details:not([open])').forEach(d => { d.open = true; n++; });
  const clickables = document.querySelectorAll(
    TAB_SELECTORS.split(',').map(s => s.trim() + ':not([data-refinery-opened])').join(','));
  for (const el of clickables) {
    if (el.tagName === 'A' && el.getAttribute('href') && !el.getAttribute('href').startsWith('#')) continue;
    el.setAttribute('data-refinery-opened', '1');
    el.click(); n++;
  }
  return n;
}""".replace("__TABS__", _TABS)

# Copy each open shadow root's content into its host's light DOM (innermost first) so the
# serialised HTML carries it; closed shadow roots are unreachable by design. Once per page: a
# timed-out page's snapshot runs it again, maybe after the render's own run went through.
FLATTEN_SHADOW = """() => {
  if (window.__refineryFlattened) return 0;
  try { Object.defineProperty(window, '__refineryFlattened', {value: true}); } catch (e) { return 0; }
  let n = 0;
  const flatten = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) {
        flatten(el.shadowRoot);
        const box = document.createElement('div');
        box.setAttribute('data-refinery-shadow-root', 'open');
        box.innerHTML = el.shadowRoot.innerHTML;
        el.appendChild(box); n++;
      }
    }
  };
  flatten(document);
  return n;
}"""

# Scroll the window and every scrolled box (feeds in an overflow container) to their ends. The
# scroll counts as activity: its event handlers and IntersectionObserver callbacks run after this
# returns, so settling must wait at least the idle time for the requests they start. A page no
# taller than the viewport cannot scroll, so no scroll event fires: one is sent, as a reader's
# wheel would. IntersectionObserver targets in view (a sentinel that never left it while the
# feed grew) are observed afresh: observers report changes only, so it would never fire again.
SCROLL_TO_END = """() => {
  const h = document.documentElement.scrollHeight;
  window.scrollTo(0, h);
  for (const el of document.querySelectorAll('*')) {
    if (el.scrollHeight > el.clientHeight + 20 && el.clientHeight > 0) {
      const oy = getComputedStyle(el).overflowY;
      if (oy === 'auto' || oy === 'scroll') el.scrollTop = el.scrollHeight;
    }
  }
  document.dispatchEvent(new Event('scroll', {bubbles: true}));
  const s = window.__refinery;
  if (s && s.reobserve) {
    for (const [ob, t] of s.observed.slice()) {
      if (!t.isConnected) continue;
      const r = t.getBoundingClientRect();
      if (r.bottom >= -200 && r.top <= window.innerHeight + 200) s.reobserve(ob, t);
    }
  }
  if (s) s.lastMutation = performance.now();
  return h; }"""

# Dismiss a cookie-consent overlay: a dialog (role=dialog/alertdialog, aria-modal) or a box named
# for cookies or consent, whose text speaks of cookies or privacy; click its "reject" control
# ("Reject all", "Only necessary", "Alle ablehnen", ...) where it has one, else its accept control.
# Some sites load their content only once the visitor has chosen. Returns the label clicked.
REJECT_LABELS = (
    "reject",
    "decline",
    "refuse",
    "deny",
    "necessary",
    "essential",
    "disagree",
    "ablehnen",
    "notwendige",
    "erforderliche",
    "refuser",
    "sans accepter",
    "rechazar",
    "rejeitar",
    "recusar",
    "rifiuta",
    "weiger",
    "avvisa",
    "afvis",
    "avslå",
    "hylkää",
    "odrzuć",
    "отклонить",
    "отказаться",
    "reddet",
    "拒否",
    "拒绝",
    "拒絕",
    "거부",
    "رفض",
    "अस्वीकार",
    "từ chối",
    "tolak",
)
ACCEPT_LABELS = (
    "accept",
    "agree",
    "allow",
    "got it",
    "ok",
    "akzeptieren",
    "zustimmen",
    "einverstanden",
    "accepter",
    "j'accepte",
    "aceptar",
    "aceitar",
    "accetta",
    "akkoord",
    "godkänn",
    "принять",
    "согласен",
    "akceptuj",
    "zgadzam",
    "kabul",
    "同意",
    "接受",
    "동의",
    "موافق",
    "स्वीकार",
    "chấp nhận",
    "setuju",
)
DISMISS_CONSENT = """([reject, accept]) => {
  const named = /cookie|consent|gdpr|cmp|privacy|datenschutz/i;
  const talk = /cookie|consent|privacy|datenschutz|クッキー|쿠키|çerez|ciastecz|куки|cookie|隐私|隱私|プライバシー|تعريف الارتباط|कुकी/i;
  const boxes = [...document.querySelectorAll(
    '[role=dialog], [role=alertdialog], [aria-modal=true], [id], [class]')].filter(el =>
      (el.matches('[role=dialog], [role=alertdialog], [aria-modal=true]') ||
       named.test((el.id || '') + ' ' + (typeof el.className === 'string' ? el.className : ''))) &&
      talk.test(el.textContent || '') && (el.textContent || '').length < 5000);
  for (const box of boxes) {
    const rect = box.getBoundingClientRect();
    if (rect.width === 0 && rect.height === 0) continue;
    const controls = [...box.querySelectorAll('button, a, [role=button], input[type=button], input[type=submit]')]
      .filter(el => { const r = el.getBoundingClientRect(); return r.width > 0 || r.height > 0; })
      .map(el => [el, (el.innerText || el.textContent || el.value || el.getAttribute('aria-label') || '')
        .trim().replace(/\\s+/g, ' ').toLowerCase()])
      .filter(([, t]) => t && t.length <= 40);
    // A short word is the whole label ("OK"), not a part of one ("cookie settings").
    const says = (t, w) => w.length <= 3 ? t.replace(/[^\\p{L}\\p{N} ]/gu, '').trim() === w : t.includes(w);
    const stays = (el) => !(el.tagName === 'A' && (el.getAttribute('href') || '#')[0] !== '#');
    const hit = controls.find(([el, t]) => reject.some(w => says(t, w)) && stays(el)) ||
      controls.find(([el, t]) => accept.some(w => says(t, w)) && !reject.some(w => says(t, w)) && stays(el));
    if (hit) {
      hit[0].click();
      if (window.__refinery) window.__refinery.lastMutation = performance.now();
      return hit[1];
    }
  }
  return null;
}"""

# Characters of the DOM's HTML, measured in the page before it is serialised and sent over.
DOM_SIZE = """() => {
  const root = document.documentElement;
  return root ? root.outerHTML.length : 0;
}"""

# Tabs hide the panels they are not showing; the content is real, so un-hide it for extraction.
UNHIDE_PANELS = """() => {
  let n = 0;
  const panels = '[role=tabpanel], [role=region], .panel, .tab-pane, .tab-panel, .accordion-panel, .collapse';
  document.querySelectorAll(panels).forEach(el => {
    if (el.hidden || el.style.display === 'none') { el.hidden = false; el.style.display = ''; n++; }
  });
  return n;
}"""
