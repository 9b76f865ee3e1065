"""JavaScript run inside rendered pages: settle probes, interaction steps and shadow-DOM flattening."""

from __future__ import annotations

from importlib.resources import files

INIT_SCRIPT = files("crawlers.render").joinpath("interact.js").read_text(encoding="utf-8")

# Milliseconds since the last activity (DOM mutation, interaction, fetch/XHR start or end), and
# how many short timers and page-side fetch/XHR calls are still pending.
SETTLE_PROBE = """() => {
  const s = window.__refinery;
  if (!s) return [1e9, 0];
  return [performance.now() - s.lastMutation, s.timers.size + s.pending];
}"""

# Click the first visible, enabled control whose text matches one of the given phrases (or, with
# no letters in its label, whose class or id names it a load-more control): a button,
# an <a> that loads rather than navigates (no href, "#..." or "javascript:"), a role=button, in
# the light DOM or any open shadow root; failing that, the one short-worded control right under
# a feed (decide._feed_end_controls' evidence, in the live DOM).
CLICK_LOAD_MORE = """([phrases, pattern, names]) => {
  const re = new RegExp(pattern, 'i'), named = new RegExp(names || '$^', 'i');
  const sel = 'button, a, [role=button], input[type=button], input[type=submit]';
  const roots = [document];
  for (let i = 0; i < roots.length; i++)
    for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
  for (const root of roots) for (const el of root.querySelectorAll(sel)) {
    const text = (el.innerText || el.textContent || el.value || el.getAttribute('aria-label') || '')
      .trim().replace(/\\s+/g, ' ').toLowerCase();
    // An icon-only control (no letters in its label) says "load more" by its class or id only.
    const unlabelled = !/\\p{L}/u.test(text) &&
      named.test((el.id || '') + ' ' + (typeof el.className === 'string' ? el.className : ''));
    if ((!text && !unlabelled) || text.length > 60 || el.disabled || el.getAttribute('aria-disabled') === 'true') continue;
    if (el.closest('form') && el.type === 'submit') continue;
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 && rect.height === 0) continue;
    const href = (el.tagName === 'A' && el.getAttribute('href')) || '';
    if (href && !href.startsWith('#') && !href.startsWith('javascript')) continue;  // a real link navigates away
    if ((text && (phrases.some(p => text.includes(p)) || re.test(text))) || unlabelled) {
      el.scrollIntoView({block: 'center'}); el.click();
      if (window.__refinery) window.__refinery.lastMutation = performance.now();
      return text || el.className || el.id;
    }
  }
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
  for (const root of roots) for (const el of root.querySelectorAll(sel)) {
    const text = (el.innerText || el.textContent || el.value || el.getAttribute('aria-label') || '')
      .trim().replace(/\\s+/g, ' ');
    const words = text.replace(/[\\p{P}\\p{S}\\d_]+/gu, ' ').trim().split(/\\s+/).filter(Boolean);
    if (!words.length || words.join('').length < 3 || words.length > 5 || text.length > 40) continue;
    if (el.disabled || el.getAttribute('aria-disabled') === 'true' || el.closest('form, nav, header, footer')) continue;
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 && rect.height === 0) continue;
    const href = (el.tagName === 'A' && el.getAttribute('href')) || '';
    if (href && !href.startsWith('#') && !href.startsWith('javascript')) continue;
    const acts = (o) => !(o.tagName === 'A' && /^(?!#|javascript)./.test(o.getAttribute('href') || ''));
    const box = el.parentElement;  // one of several controls: carousel arrows, a pager
    if (box && [...box.querySelectorAll(sel)].some((o) => o !== el && acts(o))) continue;
    if (feedAbove(el)) {
      el.scrollIntoView({block: 'center'}); el.click();
      if (window.__refinery) window.__refinery.lastMutation = performance.now();
      return text.toLowerCase();
    }
  }
  return null;
}"""

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
