"""JavaScript run inside rendered pages: settle probes, interaction steps (scrolling, load-more,
pagers, tabs), keeping content clicks replace, shadow-DOM flattening and frame inlining."""

from __future__ import annotations

import json
from importlib.resources import files

from crawlers.render.decide import _NOUN_WORDS, PAGER_DENY_PATTERN, PAGER_PATTERN

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

# Scroll the page down one viewport at a time (its main scroller: the window, or the tallest
# scrolled box of an app shell whose window does not scroll), pausing two frames and `pause_ms`
# after each step, so IntersectionObserver sections a jump to the end would pass over (lazy
# modules mid-page) come into view and start loading; at most `steps` steps and `max_ms` in all.
# Then each observed target the steps did not reach is scrolled into view the same way (at most
# 20). Returns the steps taken. The pauses are the renderer's own timers (not the page's).
SCROLL_THROUGH = """async ([steps, maxMs, pauseMs]) => {
  const s = window.__refinery;
  const sleep = (ms) => (s && s.sleep) ? s.sleep(ms) : new Promise((r) => setTimeout(r, ms));
  const frame = () => new Promise((resolve) => {
    let done = false;
    const fin = () => { if (!done) { done = true; resolve(); } };
    requestAnimationFrame(() => requestAnimationFrame(fin));
    sleep(100).then(fin);
  });
  const t0 = performance.now();
  const root = document.scrollingElement || document.documentElement;
  let box = null;
  if (root.scrollHeight <= window.innerHeight + 20) {
    let best = 0;
    for (const el of document.querySelectorAll('body *')) {
      if (el.scrollHeight > el.clientHeight + 20 && el.clientHeight > best) {
        const oy = getComputedStyle(el).overflowY;
        if (oy === 'auto' || oy === 'scroll') { box = el; best = el.clientHeight; }
      }
    }
  }
  const view = box ? box.clientHeight : window.innerHeight;
  const step = Math.max(200, Math.floor(view * 0.85));
  const at = () => box ? box.scrollTop : window.scrollY;
  const go = (y) => box ? box.scrollTo({top: y, behavior: 'instant'})
    : window.scrollTo({top: y, behavior: 'instant'});
  let n = 0, y = at();
  while (n < steps && performance.now() - t0 < maxMs) {
    const end = (box ? box.scrollHeight : root.scrollHeight) - view;
    if (y >= end) break;
    y = Math.min(end, y + step); go(y); n++;
    if (s) s.lastMutation = performance.now();
    await frame(); await sleep(pauseMs);
  }
  if (s && s.observed) {
    let k = 0;
    const reached = (box ? box.getBoundingClientRect().top : 0) + view;
    for (const [, t] of s.observed.slice()) {
      if (k >= 20 || performance.now() - t0 >= maxMs) break;
      if (!t.isConnected || t.getBoundingClientRect().top <= reached) continue;
      t.scrollIntoView({block: 'center', behavior: 'instant'}); k++;
      s.lastMutation = performance.now();
      await frame(); await sleep(pauseMs);
    }
  }
  return n;
}"""

# While the renderer cycles tabs and pagers, content a click takes out of the page (a shared
# panel's previous tab, a list's previous page) is kept: each mutation's removed nodes (in the
# body, not moved elsewhere, 20+ characters of text, not a loading placeholder: a skeleton, a
# spinner, aria-busy) and each text node's previous value (a framework updating text in place).
# `KEEP_FINISH` puts the kept content back.
KEEP_START = """() => {
  const s = window.__refinery;
  if (!s) return false;
  if (s.keeper) return true;
  s.kept = s.kept || []; s.keptChars = s.keptChars || 0;
  const esc = (t) => t.replace(/[&<>]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;'})[c]);
  const skip = /^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE|LINK|META)$/i;
  const waiting = '[aria-busy=true], [role=progressbar], [class*=skeleton], [class*=spinner], ' +
    '[class*=loading], [class*=placeholder], [class*=shimmer]';
  const grab = (html, text, anchor) => {
    text = text.replace(/\\s+/g, ' ').trim();
    if (text.length < 20 || s.keptChars > 2000000) return;
    s.kept.push({html, text, anchor}); s.keptChars += html.length;
  };
  s.keepRecords = (records) => {
    const body = document.body;
    for (const r of records) {
      if (!body || !r.target.isConnected || !body.contains(r.target)) continue;
      if (r.type === 'characterData') {
        const p = r.target.parentElement;
        if (p && r.oldValue && !p.closest('script, style, noscript, template'))
          grab('<p>' + esc(r.oldValue) + '</p>', r.oldValue, p);
        continue;
      }
      let html = '', text = '';
      for (const n of r.removedNodes) {
        if (n.isConnected) continue;  // moved, not removed
        if (n.nodeType === 1 && !skip.test(n.tagName) && !n.matches(waiting)) {
          html += n.outerHTML; text += ' ' + n.textContent;
        }
        else if (n.nodeType === 3) { html += esc(n.data); text += ' ' + n.data; }
      }
      if (html) grab(html, text, r.target);
    }
  };
  s.keeper = new MutationObserver(s.keepRecords);
  s.keeper.observe(document, {childList: true, subtree: true, characterData: true,
                              characterDataOldValue: true});
  return true;
}"""

# Put kept content (KEEP_START) back, each piece in a <div data-refinery-panel> just before the
# box it was taken from (or at the end of the main content when that box is gone), in the order
# it was taken: page 1 before page 2 before the live page 3. Content the final page still shows
# (a pane that was only hidden, a list re-rendered with the same items) is not copied again.
KEEP_FINISH = """() => {
  const s = window.__refinery;
  if (!s || !s.keeper) return 0;
  s.keepRecords(s.keeper.takeRecords()); s.keeper.disconnect(); s.keeper = null;
  const kept = s.kept || []; s.kept = [];
  if (!kept.length || !document.body) return 0;
  const live = document.body.textContent.replace(/\\s+/g, ' ');
  const seen = new Set();
  const main = document.querySelector('main, [role=main]') || document.body;
  let n = 0;
  for (const k of kept) {
    if (seen.has(k.text) || live.includes(k.text)) continue;
    seen.add(k.text);
    const box = document.createElement('div');
    box.setAttribute('data-refinery-panel', '');
    box.innerHTML = k.html;
    const a = k.anchor;
    if (a && a.isConnected && a.parentNode && a !== main && !a.contains(main) && main.contains(a))
      a.parentNode.insertBefore(box, a);
    else main.appendChild(box);
    n++;
  }
  return n;
}"""

# Tab groups, tagged for `TAB_CLICK` (data-refinery-tab="g.i"): tabs (role=tab, Bootstrap's
# data-*-toggle=tab/pill, .tabs/.nav-tabs buttons) and button groups whose members say where
# their content comes from or goes (data-src, data-url, hx-get, aria-controls, data-target,
# data-bs-target): two or more such controls in one box (a tablist, or the nearest of three
# ancestors holding two). Not a control that navigates (a real href), opens a menu, a dialog, a
# collapse or a carousel slide, nor one in a form or a dialog. Returns the groups' tag lists.
TAB_GROUPS = """([maxGroups, maxTabs]) => {
  const tabs = '[role=tab], [data-toggle=tab], [data-bs-toggle=tab], [data-toggle=pill], ' +
    '[data-bs-toggle=pill], .tabs button, .nav-tabs button, .nav-tabs a, .nav-pills button, ' +
    '.nav-pills a, button.tab, a.tab, [role=tab][data-tab], button[data-tab]';
  const says = ['data-src', 'data-url', 'data-href', 'hx-get', 'aria-controls', 'data-target',
                'data-bs-target'];
  const ctl = 'button, [role=button], a, [role=tab]';
  const widened = says.map((a) => ctl.split(', ').map((c) => c + '[' + a + ']').join(', ')).join(', ');
  const away = 'form, [role=dialog], [role=alertdialog], [aria-modal=true], .carousel, .slider, ' +
    '.swiper, .slick-slider, .splide, .glide';
  const other = /^(collapse|modal|dropdown|offcanvas|tooltip|popover|button)$/i;
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 || r.height > 0; };
  const ok = (el, wide) => {
    if (el.disabled || el.getAttribute('aria-disabled') === 'true' || !shown(el)) return false;
    if (el.closest(away)) return false;
    const href = el.tagName === 'A' ? (el.getAttribute('href') || '') : '';
    if (href && !href.startsWith('#') && !href.startsWith('javascript')) return false;
    const tog = el.getAttribute('data-toggle') || el.getAttribute('data-bs-toggle') || '';
    if (other.test(tog) || el.matches('[data-slide], [data-bs-slide], [data-slide-to], [data-bs-slide-to]'))
      return false;
    if (wide && el.matches('[aria-expanded], [aria-haspopup]')) return false;
    const text = (el.innerText || el.textContent || '').trim();
    return text.length <= 60;
  };
  const cands = new Set();
  document.querySelectorAll(tabs).forEach((el) => { if (ok(el, false)) cands.add(el); });
  document.querySelectorAll(widened).forEach((el) => { if (ok(el, true)) cands.add(el); });
  const groups = [], used = new Set();
  for (const el of cands) {
    if (used.has(el) || groups.length >= maxGroups) continue;
    let box = el.closest('[role=tablist]');
    for (let a = el.parentElement, d = 0; !box && a && d < 3; a = a.parentElement, d++)
      if ([...cands].filter((c) => a.contains(c)).length >= 2) box = a;
    if (!box) continue;
    const members = [...cands].filter((c) => box.contains(c) && !used.has(c));
    if (members.length < 2) continue;
    const g = groups.length, ids = [];
    members.slice(0, maxTabs).forEach((c, i) => {
      used.add(c); c.setAttribute('data-refinery-tab', g + '.' + i); ids.push(g + '.' + i);
    });
    members.forEach((c) => used.add(c));
    groups.push(ids);
  }
  return groups;
}"""

# Click one tagged tab (TAB_GROUPS), marking it opened so OPEN_EXPANDERS leaves it alone.
TAB_CLICK = """(id) => {
  const el = document.querySelector('[data-refinery-tab="' + id + '"]');
  if (!el || !el.isConnected || el.disabled) return false;
  el.setAttribute('data-refinery-opened', '1');
  el.click();
  if (window.__refinery) window.__refinery.lastMutation = performance.now();
  return true;
}"""

# "Next page" in words (a label's `label_words`, whole), in the languages decide.py's pager words
# cover: next (page), page next, older/earlier posts. A bare "next" or an arrow needs a pager
# around it (NEXT_PAGE_BOX) or rel=next; a label here is a pager anywhere outside forms, dialogs
# and carousels.
_NEXT = (
    "next|nächste|naechste|weiter|suivant|suivante|siguiente|próximo|próxima|proximo|proxima|"
    "seguinte|successivo|successiva|avanti|volgende|następna|nastepna|dalej|следующая|далее|"
    "вперёд|вперед|наступна|далі|sonraki|ileri|tiếp|tiếp theo|berikutnya|selanjutnya|التالي|"
    "التالية|הבא|הבאה|další|ďalšia|ďalej|nästa|næste|neste|seuraava|következő|tovább|"
    "următoarea|urmatoarea|επόμενη|επόμενο|अगला|अगले|次へ|次|下一页|下一頁|下页|다음"
)
_PAGE = (
    "page|seite|pagina|página|strona|страница|сторінка|sayfa|trang|halaman|صفحة|"
    "الصفحة|עמוד|strana|stránka|sida|side|sivu|oldal|σελίδα|पृष्ठ|पेज|ページ|页|頁|페이지"
)
_OLDER = (
    "older|earlier|ältere|älteren|frühere|anciens|anciennes|antiguas|antiguos|antigos|antigas|"
    "precedenti|oudere|starsze|starszych|старые|eski|cũ|lama|الأقدم|starší|äldre|ældre|eldre|"
    "vanhemmat|régebbi|vechi|παλαιότερα|पुराने"
)
NEXT_PAGE_PATTERN = (
    rf"^(?:(?:{_NEXT})(?: (?:{_PAGE}))?|(?:{_PAGE}) (?:{_NEXT})|(?:{_NEXT}) \d+|"
    rf"(?:{_OLDER}) (?:{_NOUN_WORDS})|次のページ|下一 ?[页頁]|다음 ?페이지)$"
)
NEXT_WORD_PATTERN = rf"^(?:{_NEXT})$"
# A pager's box: a nav, or a box whose class or id names a pager ("pagination", "pager",
# "page-numbers") or whose aria-label speaks of pages ("Pagination", "Seitennavigation").
NEXT_PAGE_BOX = (
    r"(^|[-_ ])(pagination|paginate|paginator|pager|pagenav|page-?nav|page-?numbers|paging|"
    r"pages-?nav)($|[-_ ])"
)
NEXT_PAGE_LABEL = r"pag|seite|страниц|sayfa|ページ|页|頁|페이지"

# Click the control that shows a listing's next page in place (a client-side pager: its script
# fetches the next page, replaces the list and may call history.pushState): a button, an <a>
# that does not navigate, a role=button, labelled "Next page", "Nächste Seite", "Older posts"
# (NEXT_PAGE_PATTERN), or a bare "Next", an arrow (›, », →) or rel=next inside a pager box; or,
# failing those, the page number after the current one (aria-current, .active) in a pager box.
# Never in a form, a dialog or a carousel, never a control saying "slide". Returns its label.
CLICK_NEXT_PAGE = """([pattern, bare, boxPattern, boxLabel, deny]) => {
  const re = new RegExp(pattern, 'u'), word = new RegExp(bare, 'u');
  const boxRe = new RegExp(boxPattern, 'i'), boxSays = new RegExp(boxLabel, 'i');
  const denyRe = new RegExp(deny, 'u');
  const words = (t) => t.toLowerCase().replace(/[^\\p{L}\\p{N}\\p{M}]+/gu, ' ').trim();
  const label = (el) => (el.innerText || el.textContent || el.value || '').trim().replace(/\\s+/g, ' ');
  const aria = (el) => (el.getAttribute('aria-label') || el.getAttribute('title') || '').trim();
  const sel = 'button, a, [role=button], [role=link], input[type=button]';
  const away = 'form, [role=dialog], [role=alertdialog], [aria-modal=true], .carousel, .slider, ' +
    '.swiper, .slick-slider, .splide, .glide, [aria-roledescription=carousel]';
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 || r.height > 0; };
  const off = (el) => el.disabled || el.getAttribute('aria-disabled') === 'true' ||
    /(^|\\s)disabled(\\s|$)/.test(typeof el.className === 'string' ? el.className : '');
  const navigates = (el) => {
    const href = (el.tagName === 'A' && el.getAttribute('href')) || '';
    return !!href && !href.startsWith('#') && !href.startsWith('javascript');
  };
  const inBox = (el) => {
    for (let a = el.parentElement, d = 0; a && d < 4; a = a.parentElement, d++) {
      const cls = (a.id || '') + ' ' + (typeof a.className === 'string' ? a.className : '');
      if (boxRe.test(cls) || boxSays.test(a.getAttribute('aria-label') || '')) return a;
      if ((a.tagName === 'NAV' || a.getAttribute('role') === 'navigation') && d < 3) return a;
    }
    return null;
  };
  const usable = (el) => shown(el) && !off(el) && !navigates(el) && !el.closest(away);
  const click = (el, text) => {
    el.scrollIntoView({block: 'center'}); el.click();
    if (window.__refinery) window.__refinery.lastMutation = performance.now();
    return text || '(next page)';
  };
  const all = [...document.querySelectorAll(sel)].filter(usable);
  for (const el of all) {
    const own = label(el), said = words(own) || words(aria(el));
    if (said.length > 40 || denyRe.test(said)) continue;
    const arrow = !/[\\p{L}\\p{N}]/u.test(own) && /^[›»→>⟩❯▶⇒]+$/u.test(own.replace(/\\s+/g, ''));
    const rel = /(^|\\s)next(\\s|$)/i.test(el.getAttribute('rel') || '');
    const named = /(^|[-_ ])(next|next-?page|page-?next|pagination-?next|pager-?next)($|[-_ ])/i
      .test((el.id || '') + ' ' + (typeof el.className === 'string' ? el.className : ''));
    if (said && re.test(said) && !word.test(said)) return click(el, own || aria(el));
    if ((rel || arrow || named || (said && word.test(said))) && inBox(el))
      return click(el, own || aria(el));
  }
  // Page numbers: the one after the current page, in a pager box.
  for (const el of all) {
    const box = inBox(el);
    if (!box) continue;
    const current = box.querySelector('[aria-current=page], [aria-current=true], .active, .current, ' +
      '.is-active, .is-current, .selected, [aria-pressed=true], [aria-selected=true]');
    const cur = current ? parseInt(label(current), 10) : 1;
    if (!Number.isFinite(cur)) continue;
    if (label(el) === String(cur + 1)) return click(el, label(el));
  }
  return null;
}"""

# How many pieces of removed content KEEP_START holds so far.
KEPT_COUNT = """() => (window.__refinery && window.__refinery.kept || []).length"""

# A cheap fingerprint of the page's visible text (did a click change what the page shows?).
TEXT_PRINT = """() => {
  const t = document.body ? (document.body.innerText || '') : '';
  let h = 0;
  for (let i = 0; i < t.length; i++) h = (h * 31 + t.charCodeAt(i)) | 0;
  return t.length + ':' + h;
}"""

# The same-origin URLs the page gave itself with history.pushState/replaceState (interact.js).
HISTORY_URLS = """() => (window.__refinery && window.__refinery.history || []).slice(0, 200)"""

# A framed document's content, for inlining into its <iframe>'s place: its body's HTML (open
# shadow roots copied out first, as FLATTEN_SHADOW does for the page).
FRAME_HTML = """() => document.body ? document.body.innerHTML : ''"""

# Replace an <iframe>/<frame> element with its document's content (FRAME_HTML), in a
# <div data-refinery-frame src=...> the extraction reads like the page's own markup.
INLINE_FRAME = """(el, [html, src]) => {
  if (!el || !el.parentNode) return false;
  const box = document.createElement('div');
  box.setAttribute('data-refinery-frame', '');
  box.setAttribute('src', src);
  box.innerHTML = html;
  el.replaceWith(box);
  return true;
}"""
