// Injected before any page script runs: tracks pending short timers and DOM mutations so the
// renderer can tell when a page has settled (delayed insertion uses setTimeout, not the network).
(() => {
  if (window.__refinery) return;
  const state = { timers: new Set(), lastMutation: performance.now() };
  window.__refinery = state;
  const origSet = window.setTimeout, origClear = window.clearTimeout;
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
  const start = () => new MutationObserver(() => { state.lastMutation = performance.now(); })
    .observe(document, { childList: true, subtree: true, characterData: true, attributes: false });
  if (document.documentElement) start(); else document.addEventListener("DOMContentLoaded", start);
})();
