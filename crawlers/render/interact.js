// Injected before any page script runs: tracks pending short timers and DOM mutations so the
// renderer can tell when a page has settled (delayed insertion uses setTimeout, not the network).
(() => {
  if (window.__refinery) return;
  const state = { timers: new Set(), lastMutation: performance.now(), pending: 0 };
  window.__refinery = state;
  // Page-side fetch/XHR calls count as pending from the call (before the request reaches the
  // renderer's route handler) until they settle; their start and end count as activity, so the
  // page gets the idle time to insert what a response brought.
  const begin = () => { state.pending++; state.lastMutation = performance.now(); };
  const end = () => { state.pending = Math.max(0, state.pending - 1); state.lastMutation = performance.now(); };
  if (window.fetch) {
    const origFetch = window.fetch;
    window.fetch = function (...args) {
      begin();
      let p;
      try { p = origFetch.apply(this, args); } catch (e) { end(); throw e; }
      return p.then((r) => { end(); return r; }, (e) => { end(); throw e; });
    };
  }
  if (window.XMLHttpRequest) {
    const origSend = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (...args) {
      begin();
      let done = false;
      const fin = () => { if (!done) { done = true; end(); } };
      this.addEventListener("loadend", fin);
      try { return origSend.apply(this, args); } catch (e) { fin(); throw e; }
    };
  }
  // Same-origin URLs the page gave itself with history.pushState/replaceState (a client-side
  // pager's "?page=2"): the renderer reports them, so the crawl can fetch those states too.
  state.history = [];
  if (window.History && window.location) {
    const H = window.History.prototype, start = String(location.href).split("#")[0];
    for (const name of ["pushState", "replaceState"]) {
      const orig = H[name];
      if (typeof orig !== "function") continue;
      H[name] = function (data, title, url) {
        try {
          if (url !== undefined && url !== null && state.history.length < 200) {
            const u = new URL(String(url), location.href);
            const href = u.href.split("#")[0];
            if (u.origin === location.origin && href !== start && !state.history.includes(href))
              state.history.push(href);
          }
        } catch (e) { /* an unparsable URL: the call below throws as it would have */ }
        return orig.apply(this, arguments);
      };
    }
  }
  const origSet = window.setTimeout, origClear = window.clearTimeout;
  // The renderer's own pauses (stepped scrolling): not counted as the page's pending timers.
  state.sleep = (ms) => new Promise((resolve) => origSet.call(window, resolve, ms));
  window.setTimeout = function (fn, delay, ...args) {
    const short = (Number(delay) || 0) <= 5000;
    let id;
    const wrapped = function () {
      state.timers.delete(id);
      return typeof fn === "function" ? fn.apply(this, args) : undefined;
    };
    id = origSet.call(window, wrapped, delay);
    if (short) state.timers.add(id);
    return id;
  };
  window.clearTimeout = function (id) {
    state.timers.delete(id);
    return origClear.call(window, id);
  };
  // IntersectionObserver targets, per observer: a feed's sentinel that stays in view after the
  // renderer scrolls to the end gets no new callback (observers report changes only), so the
  // renderer re-observes the targets in view, as a reader's scrolling away and back would.
  state.observed = [];
  if (window.IntersectionObserver) {
    const P = window.IntersectionObserver.prototype;
    const observe = P.observe, unobserve = P.unobserve, disconnect = P.disconnect;
    state.reobserve = (ob, t) => { unobserve.call(ob, t); observe.call(ob, t); };
    P.observe = function (t) {
      if (!state.observed.some(([o, x]) => o === this && x === t)) state.observed.push([this, t]);
      return observe.call(this, t);
    };
    P.unobserve = function (t) {
      state.observed = state.observed.filter(([o, x]) => !(o === this && x === t));
      return unobserve.call(this, t);
    };
    P.disconnect = function () {
      state.observed = state.observed.filter(([o]) => o !== this);
      return disconnect.call(this);
    };
  }
  const start = () => new MutationObserver(() => { state.lastMutation = performance.now(); })
    .observe(document, { childList: true, subtree: true, characterData: true, attributes: false });
  if (document.documentElement) start(); else document.addEventListener("DOMContentLoaded", start);
})();
