// The audit workspace: selection, highlights, the text-selection toolbar and the keyboard.
// Everything that changes data goes through htmx (POST with the CSRF header); this file
// only moves focus and highlights around.
(() => {
  "use strict";
  const ws = document.getElementById("ws");
  if (!ws) return;
  const canEdit = ws.dataset.canEdit === "1";
  // blind annotation: the annotator's own copy, where a selection only adds evidence
  const canDecide = ws.dataset.blind === "1" && ws.dataset.canDecide === "1";
  const canSelect = canEdit || canDecide;
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const esc = (id) => id.replace(/["\\]/g, "\\$&");
  let current = ($("#ws-detail") || {}).dataset?.node || null;
  let tab = ws.dataset.tab || "audit"; // a link without htmx may open another tab
  let selection = null; // {start, end} in code points of the artifact

  // Settle at once: the key queue below reads the panel right after each answer
  htmx.config.defaultSettleDelay = 0;

  // ---- a query's preview follows its decisions and intents. The filter lives here, not
  // in an hx-trigger expression: htmx would eval() that, and the CSP forbids eval.
  document.addEventListener("change", (e) => {
    const fields = e.target.closest(".query-fields");
    if (fields && (e.target.tagName === "SELECT" || e.target.type === "checkbox")) {
      htmx.trigger(fields, "ce-preview");
    }
  });

  // ---- CSRF for every htmx request (also htmx.ajax calls from this file)
  const csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
  document.body.addEventListener("htmx:configRequest", (e) => {
    if (csrf) e.detail.headers["X-CSRFToken"] = csrf;
  });

  // ---- selection of a node: outline item + every highlight of its evidence
  function visible(el, container) {
    const r = el.getBoundingClientRect();
    const c = container.getBoundingClientRect();
    return r.top >= c.top && r.bottom <= c.bottom;
  }
  function highlight(id, scroll) {
    $$(".is-sel").forEach((el) => el.classList.remove("is-sel"));
    current = id || null;
    if (!current) return;
    const marks = $$(`#ws-text [data-n~="${esc(current)}"]`);
    marks.forEach((m) => m.classList.add("is-sel"));
    const item = $(`#ws-outline li[data-node="${esc(current)}"]`);
    if (item) item.classList.add("is-sel");
    if (scroll) {
      const doc = $("#doc-scroll");
      if (marks[0] && !visible(marks[0], doc)) marks[0].scrollIntoView({ block: "center", behavior: "smooth" });
      const list = $(".ws-outline");
      if (item && list && !visible(item, list)) item.scrollIntoView({ block: "nearest" });
    }
  }
  function openNode(id) {
    const link = $(`#ws-outline a[data-node="${esc(id)}"]`);
    if (link) link.click();
  }

  // ---- tabs of the side panel
  function applyTab() {
    $$(".tab").forEach((t) => {
      t.classList.toggle("is-active", t.dataset.tab === tab);
      t.setAttribute("aria-selected", String(t.dataset.tab === tab));
    });
    $$(".tab-panel").forEach((p) => { p.hidden = p.dataset.panel !== tab; });
  }
  // The Queries tab is built on demand, and again after any change elsewhere, so its
  // decisions and preview follow the contract as it is now.
  let queriesStale = false;
  function loadQueries() {
    const panel = $("#ws-queries");
    if (tab !== "queries" || !panel || !(panel.dataset.lazy || queriesStale)) return;
    queriesStale = false;
    htmx.ajax("GET", ws.dataset.queriesUrl, { target: "#ws-queries", swap: "outerHTML" });
  }
  document.body.addEventListener("htmx:afterRequest", (e) => {
    const verb = (e.detail.requestConfig?.verb || "").toLowerCase();
    if (verb === "post" && !e.detail.elt.closest?.("#ws-queries")) queriesStale = true;
  });
  document.addEventListener("click", (e) => {
    const t = e.target.closest(".tab");
    if (t) { tab = t.dataset.tab; applyTab(); loadQueries(); }
  });
  if (tab !== "audit") { applyTab(); loadQueries(); }

  // ---- after every swap: keep the selection, the tab and the URL in step
  document.body.addEventListener("htmx:afterSettle", (e) => {
    const detail = $("#ws-detail");
    const id = detail ? detail.dataset.node : null;
    const moved = id && id !== current;
    if (id || e.detail.target?.id === "ws-detail") highlight(id || null, moved);
    else highlight(current, false);
    applyTab();
    if (id) history.replaceState(null, "", `?node=${encodeURIComponent(id)}`);
    applyFilter();
  });

  // ---- clicking a highlight, or Enter / Space on it (highlights are tab stops), opens
  // its most specific node
  function openMark(mark) {
    if (!mark.dataset.p.startsWith("inv:")) openNode(mark.dataset.p);
    else { tab = "invariants"; applyTab(); }
  }
  $("#doc-scroll").addEventListener("click", (e) => {
    if (!window.getSelection().isCollapsed) return;
    const mark = e.target.closest("[data-p]");
    if (mark) openMark(mark);
  });
  $("#doc-scroll").addEventListener("keydown", (e) => {
    const mark = e.target.closest?.("[data-p]");
    if (!mark || (e.key !== "Enter" && e.key !== " ") || e.ctrlKey || e.metaKey || e.altKey) return;
    e.preventDefault();
    openMark(mark);
  });

  // ---- the splitter between outline and artifact: drag it, or focus it and use the
  // arrow keys (Home / End for the narrowest / widest); the width is remembered
  const split = $("#ws-split");
  const WIDTH_KEY = "contracteval.outlineWidth";
  function widthBounds() {
    const min = +split.getAttribute("aria-valuemin");
    const side = $(".ws-side")?.getBoundingClientRect().width || 0;
    // the artifact keeps room to read: never narrower than 320px
    const room = ws.getBoundingClientRect().width - side - split.offsetWidth - 320;
    return [min, Math.max(min, Math.min(+split.dataset.max || 560, room))];
  }
  function setWidth(px, save, bounds = widthBounds()) {
    const [min, max] = bounds;
    const w = Math.round(Math.min(max, Math.max(min, px)));
    ws.style.setProperty("--outline-w", `${w}px`);
    split.setAttribute("aria-valuenow", String(w));
    split.setAttribute("aria-valuemax", String(Math.round(max)));
    if (save) { try { localStorage.setItem(WIDTH_KEY, String(w)); } catch (_) { /* private mode */ } }
    return w;
  }
  if (split) {
    split.dataset.max = split.getAttribute("aria-valuemax");
    let saved = null;
    try { saved = localStorage.getItem(WIDTH_KEY); } catch (_) { /* private mode */ }
    setWidth(saved ? +saved : $(".ws-outline").getBoundingClientRect().width, false);
    window.addEventListener("resize", () => setWidth(+split.getAttribute("aria-valuenow"), false));
    split.addEventListener("keydown", (e) => {
      const now = +split.getAttribute("aria-valuenow");
      const step = e.shiftKey ? 64 : 16;
      const to = { ArrowLeft: now - step, ArrowRight: now + step, Home: 0, End: Infinity }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      e.stopPropagation();
      setWidth(to, true);
    });
    split.addEventListener("pointerdown", (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      split.setPointerCapture(e.pointerId);
      split.classList.add("is-dragging");
      document.body.classList.add("is-resizing");
      const left = ws.getBoundingClientRect().left;
      // measured once: reading layout on every move right after writing a style forces
      // a layout per pointer event
      const bounds = widthBounds();
      const half = split.offsetWidth / 2;
      const onMove = (ev) => setWidth(ev.clientX - left - half, false, bounds);
      const onUp = (ev) => {
        split.removeEventListener("pointermove", onMove);
        split.removeEventListener("pointerup", onUp);
        split.removeEventListener("pointercancel", onUp);
        split.classList.remove("is-dragging");
        document.body.classList.remove("is-resizing");
        setWidth(+split.getAttribute("aria-valuenow"), true);
        if (split.hasPointerCapture(ev.pointerId)) split.releasePointerCapture(ev.pointerId);
      };
      split.addEventListener("pointermove", onMove);
      split.addEventListener("pointerup", onUp);
      split.addEventListener("pointercancel", onUp);
    });
  }
  // jump from a quote in the node panel to its place in the text
  document.addEventListener("click", (e) => {
    const jump = e.target.closest("[data-jump]");
    if (!jump) return;
    e.preventDefault();
    const seg = $(`#ws-text [data-s="${jump.dataset.jump}"]`);
    if (seg) {
      seg.scrollIntoView({ block: "center", behavior: "smooth" });
      seg.classList.add("flash");
      setTimeout(() => seg.classList.remove("flash"), 1200);
    }
  });

  // ---- text selection → code-point offsets → toolbar
  const cpLen = (s) => { let n = 0; for (const _ of s) n++; return n; };
  function offsetOf(node, off) {
    const text = $("#ws-text");
    if (node === text) {
      const kids = text.children;
      if (off >= kids.length) return null; // end of text: handled by caller
      return +kids[off].dataset.s;
    }
    const el = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    const seg = el.closest("[data-s]");
    if (!seg || !text.contains(seg)) return null;
    const base = +seg.dataset.s;
    if (node.nodeType === Node.TEXT_NODE) return base + cpLen(node.data.slice(0, off));
    return off === 0 ? base : base + cpLen(seg.textContent);
  }
  function readSelection() {
    const sel = window.getSelection();
    const text = $("#ws-text");
    if (!sel || sel.isCollapsed || sel.rangeCount === 0) return null;
    const r = sel.getRangeAt(0);
    if (!text.contains(r.startContainer) || !text.contains(r.endContainer)) return null;
    const total = cpLen(text.textContent);
    let start = offsetOf(r.startContainer, r.startOffset);
    let end = offsetOf(r.endContainer, r.endOffset);
    if (end === null) end = total;
    if (start === null || start >= end) return null;
    return { start, end, rect: r.getBoundingClientRect() };
  }
  const toolbar = $("#sel-toolbar");
  function showToolbar() {
    selection = readSelection();
    if (!selection || !canSelect) { toolbar.hidden = true; return; }
    const ev = $('[data-sel="evidence"]', toolbar);
    ev.disabled = !$("#ws-detail")?.dataset.pk;
    toolbar.hidden = false;
    const r = selection.rect;
    const top = r.top > 60 ? r.top - toolbar.offsetHeight - 8 : r.bottom + 8;
    toolbar.style.top = `${Math.max(8, top)}px`;
    toolbar.style.left = `${Math.max(8, Math.min(window.innerWidth - toolbar.offsetWidth - 8, r.left))}px`;
  }
  document.addEventListener("mouseup", (e) => {
    if (toolbar.contains(e.target)) return;
    setTimeout(showToolbar, 0);
  });
  document.addEventListener("selectionchange", () => {
    if (window.getSelection().isCollapsed) toolbar.hidden = true;
  });
  function selAction(kind) {
    if (!selection) selection = readSelection();
    if (!selection || !canSelect) return false;
    if (!canEdit && kind !== "evidence") return false;
    const { start, end } = selection;
    const target = { target: "#ws-detail", swap: "outerHTML" };
    if (kind === "node") {
      htmx.ajax("GET", `${ws.dataset.newUrl}?start=${start}&end=${end}`, target);
    } else if (kind === "invariant") {
      htmx.ajax("GET", `${ws.dataset.invUrl}?start=${start}&end=${end}`, target);
    } else {
      const { pk, version, copyVersion } = $("#ws-detail")?.dataset || {};
      if (!pk) return false;
      const url = ws.dataset.evidenceUrl.replace(/\/0\/evidence\/$/, `/${pk}/evidence/`);
      // the version the annotator saw: of the node, or in blind annotation of their copy
      // (0 before their first decision); a stale one is answered 409 with the panel again
      const values = canEdit ? { start, end, version } : { start, end, expected_version: copyVersion };
      htmx.ajax("POST", url, { ...target, values });
    }
    toolbar.hidden = true;
    window.getSelection().removeAllRanges();
    selection = null;
    return true;
  }
  toolbar.addEventListener("click", (e) => {
    const b = e.target.closest("[data-sel]");
    if (b) selAction(b.dataset.sel);
  });

  // ---- outline filter: text, status and type; the bulk buttons act on what it shows
  const filter = $("#outline-filter");
  const byStatus = $("#outline-status");
  const byType = $("#outline-type");
  const shownItems = () => $$("#ws-outline li.ol-item").filter((li) => !li.hidden);
  function applyFilter() {
    const q = (filter.value || "").trim().toLowerCase();
    const st = byStatus ? byStatus.value : "";
    const ty = byType ? byType.value : "";
    $$("#ws-outline li.ol-item").forEach((li) => {
      const text = q === "" || li.textContent.toLowerCase().includes(q) || li.dataset.node.toLowerCase().includes(q);
      li.hidden = !text || (st !== "" && li.dataset.status !== st) || (ty !== "" && li.dataset.type !== ty);
    });
    bulkLabels();
  }
  // A bulk decision moves the shown nodes of the status the select picked (proposed
  // while it shows any status) and leaves the others as they are; the buttons count
  // what they move and the note what they leave.
  const TARGET = { confirm: "confirmed", reject: "rejected" };
  const bulkFrom = () => (byStatus && byStatus.value) || "proposed";
  function bulkLabels() {
    const from = bulkFrom();
    const left = {};
    let moving = 0;
    shownItems().forEach((li) => {
      const s = li.dataset.status;
      if (s === from) moving++;
      else left[s] = (left[s] || 0) + 1;
    });
    $$("[data-bulk]").forEach((b) => {
      const n = TARGET[b.dataset.bulk] === from ? 0 : moving;
      $("[data-bulk-count]", b).textContent = String(n);
      $("[data-bulk-from]", b).textContent = from;
      b.disabled = n === 0;
    });
    const order = byStatus ? [...byStatus.options].map((o) => o.value) : Object.keys(left);
    const note = order.filter((s) => left[s]).map((s) => `${left[s]} ${s}`).join(", ");
    $$("[data-bulk-left]").forEach((el) => { el.textContent = note ? `${note} left as they are` : ""; });
  }
  [filter, byStatus, byType].forEach((el) => el && el.addEventListener("input", applyFilter));
  applyFilter();

  // ---- short notices where the reviewer is looking (read out by screen readers too)
  const live = $("#ws-live");
  function say(message) {
    if (!live) return;
    live.textContent = message;
    live.hidden = false;
    clearTimeout(say.timer);
    say.timer = setTimeout(() => { live.hidden = true; }, 3000);
  }

  // ---- requests in flight: a key waits until the screen shows the answer of the last one
  const pending = new Set();
  document.body.addEventListener("htmx:beforeRequest", (e) => {
    if (!e.detail.elt.closest?.("[hx-trigger^='every']")) pending.add(e.detail.xhr);
  });
  document.body.addEventListener("htmx:afterRequest", (e) => {
    pending.delete(e.detail.xhr);
    setTimeout(drain, 0);
  });
  const busy = () => pending.size > 0;

  // ---- after a swap of the panel: focus what the user will act on next
  document.body.addEventListener("htmx:afterSwap", (e) => {
    const detail = $("#ws-detail");
    if (!detail || !(e.detail.target === detail || e.detail.target?.id === "ws-detail")) return;
    const err = $(".alert.error, .error-text", detail);
    const field = $("input:not([type=hidden]), select, textarea", $("form.node-form, form.inv-form", detail) || document.createElement("div"));
    if (err) { err.setAttribute("tabindex", "-1"); err.focus(); }
    else if (field) field.focus();
  });

  // ---- review decisions
  function bulk(action) {
    const items = shownItems();
    if (!items.length) { say("No node shown to review"); return false; }
    const detail = $("#ws-detail");
    // every node shown goes with its version (one changed meanwhile refuses the whole
    // decision); the server moves only those of the status named in "from"
    const values = {
      action,
      from: bulkFrom(),
      node: items.map((li) => `${li.dataset.pk}:${li.dataset.version}`),
    };
    if (detail?.dataset.pk) values.selected = detail.dataset.pk;
    const url = $(`[data-bulk="${action}"]`).dataset.url;
    htmx.ajax("POST", url, { target: "#ws-detail", swap: "outerHTML", values });
    return true;
  }
  document.addEventListener("click", (e) => {
    const b = e.target.closest("[data-bulk]");
    if (b) bulk(b.dataset.bulk);
  });
  function undo() {
    const b = $("#ws-undo [data-key=u]");
    if (!b || b.hidden) { say("Nothing to undo"); return false; }
    b.click();
    return true;
  }

  // ---- keyboard
  const help = $("#help");
  let helpReturn = null;
  const toggleHelp = (show) => {
    const open = show === undefined ? help.hidden : show;
    help.hidden = !open;
    if (open) { helpReturn = document.activeElement; $("[data-help-close]", help).focus(); }
    else if (helpReturn) { helpReturn.focus?.(); helpReturn = null; }
  };
  document.addEventListener("click", (e) => {
    if (e.target.closest("[data-help]")) toggleHelp(true);
    else if (e.target.closest("[data-help-close]") || e.target === help) toggleHelp(false);
  });
  function move(step, onlyProposed) {
    const items = shownItems();
    if (!items.length) return false;
    const here = $("#ws-detail")?.dataset.node || current;
    let i = items.findIndex((li) => li.dataset.node === here);
    for (let n = 0; n < items.length; n++) {
      i = i < 0 ? (step > 0 ? 0 : items.length - 1) : (i + step + items.length) % items.length;
      if (!onlyProposed || items[i].dataset.status === "proposed") {
        openNode(items[i].dataset.node);
        return true;
      }
    }
    say("No proposed node left");
    return false;
  }
  const STATUS_OF = { c: "confirmed", r: "rejected" };
  function press(key) {
    const b = $(`#ws-detail [data-key="${key}"]`);
    if (!b) return false;
    if (b.disabled) {
      const status = STATUS_OF[key];
      if (status) say(`${$("#ws-detail").dataset.node} is already ${status}`);
      return false;
    }
    b.click();
    return true;
  }
  // What each key does, run only when no request is in flight (see drain)
  const ACTIONS = {
    j: () => move(1), ArrowDown: () => move(1),
    k: () => move(-1), ArrowUp: () => move(-1),
    p: () => move(1, true),
    c: () => press("c"), r: () => press("r"), e: () => press("e"),
    u: () => undo(), undo: () => undo(),
  };
  const queue = [];
  function drain() {
    while (queue.length && !busy()) ACTIONS[queue.shift()]();
  }
  document.addEventListener("keydown", (e) => {
    if (e.target.closest("input, textarea, select, [contenteditable]")) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === "z") {
      queue.push("undo");
      drain();
      e.preventDefault();
      return;
    }
    if (e.metaKey || e.ctrlKey || e.altKey) return;
    if (ACTIONS[e.key] && e.key !== "undo") {
      queue.push(e.key);
      drain();
      e.preventDefault();
      return;
    }
    switch (e.key) {
      case "n": if (!selAction("node")) return; break;
      case "a": if (!selAction("evidence")) return; break;
      case "?": toggleHelp(); break;
      case "Escape":
        if (!help.hidden) toggleHelp(false);
        else if (!toolbar.hidden) toolbar.hidden = true;
        else { const cancel = $("#ws-detail [data-cancel]"); if (cancel) cancel.click(); else return; }
        break;
      default: return;
    }
    e.preventDefault();
  });

  applyTab();
  highlight(current, true);
})();
