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

# Click the first visible, enabled control whose text matches one of the given phrases.
CLICK_LOAD_MORE = """(phrases) => {
  const els = document.querySelectorAll('button, a, [role=button], input[type=button], input[type=submit]');
  for (const el of els) {
    const text = (el.innerText || el.value || el.getAttribute('aria-label') || '').trim().toLowerCase();
    if (!text || text.length > 60 || el.disabled) continue;
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 && rect.height === 0) continue;
    if (el.tagName === 'A' && el.getAttribute('href') && !el.getAttribute('href').startsWith('#')
        && !el.getAttribute('href').startsWith('javascript')) continue;  // a real link navigates away
    if (phrases.some(p => text.includes(p))) {
      el.scrollIntoView(); el.click();
      if (window.__refinery) window.__refinery.lastMutation = performance.now();
      return text;
    }
  }
  return null;
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

# The scroll counts as activity: its event handlers run after this returns, so settling must
# wait at least the idle time for the requests they start.
SCROLL_TO_END = """() => { window.scrollTo(0, document.documentElement.scrollHeight);
  if (window.__refinery) window.__refinery.lastMutation = performance.now();
  return document.documentElement.scrollHeight; }"""

# Tabs hide the panels they are not showing; the content is real, so un-hide it for extraction.
UNHIDE_PANELS = """() => {
  let n = 0;
  const panels = '[role=tabpanel], [role=region], .panel, .tab-pane, .tab-panel, .accordion-panel, .collapse';
  document.querySelectorAll(panels).forEach(el => {
    if (el.hidden || el.style.display === 'none') { el.hidden = false; el.style.display = ''; n++; }
  });
  return n;
}"""
