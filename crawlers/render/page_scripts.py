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

# Click the first visible, enabled control whose text matches one of the given phrases: a button,
# an <a> that loads rather than navigates (no href, "#..." or "javascript:"), a role=button, in
# the light DOM or any open shadow root.
CLICK_LOAD_MORE = """([phrases, pattern]) => {
  const re = new RegExp(pattern, 'i');
  const sel = 'button, a, [role=button], input[type=button], input[type=submit]';
  const roots = [document];
  for (let i = 0; i < roots.length; i++)
    for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
  for (const root of roots) for (const el of root.querySelectorAll(sel)) {
    const text = (el.innerText || el.textContent || el.value || el.getAttribute('aria-label') || '')
      .trim().replace(/\\s+/g, ' ').toLowerCase();
    if (!text || text.length > 60 || el.disabled || el.getAttribute('aria-disabled') === 'true') continue;
    if (el.closest('form') && el.type === 'submit') continue;
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 && rect.height === 0) continue;
    const href = (el.tagName === 'A' && el.getAttribute('href')) || '';
    if (href && !href.startsWith('#') && !href.startsWith('javascript')) continue;  // a real link navigates away
    if (phrases.some(p => text.includes(p)) || re.test(text)) {
      el.scrollIntoView({block: 'center'}); el.click();
      if (window.__refinery) window.__refinery.lastMutation = performance.now();
      return text;
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
# serialised HTML carries it; closed shadow roots are unreachable by design.
FLATTEN_SHADOW = """() => {
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
# returns, so settling must wait at least the idle time for the requests they start.
SCROLL_TO_END = """() => {
  const h = document.documentElement.scrollHeight;
  window.scrollTo(0, h);
  for (const el of document.querySelectorAll('*')) {
    if (el.scrollHeight > el.clientHeight + 20 && el.clientHeight > 0) {
      const oy = getComputedStyle(el).overflowY;
      if (oy === 'auto' || oy === 'scroll') el.scrollTop = el.scrollHeight;
    }
  }
  if (window.__refinery) window.__refinery.lastMutation = performance.now();
  return h; }"""

# Tabs hide the panels they are not showing; the content is real, so un-hide it for extraction.
UNHIDE_PANELS = """() => {
  let n = 0;
  const panels = '[role=tabpanel], [role=region], .panel, .tab-pane, .tab-panel, .accordion-panel, .collapse';
  document.querySelectorAll(panels).forEach(el => {
    if (el.hidden || el.style.display === 'none') { el.hidden = false; el.style.display = ''; n++; }
  });
  return n;
}"""
