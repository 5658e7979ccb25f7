/* ContractEval run overlay: the expected graph of one run, coloured by outcome, beside the
 * contract artifact and the trace, with the metrics and the failure list.
 *
 * Input: the payload of matching/overlay.py (format "contracteval.overlay/v1").
 * Needs, loaded before this file, the vendored libraries in static/vendor/:
 *   cytoscape.min.js, dagre.min.js, cytoscape-dagre.js
 *
 *   const view = ContractEvalOverlay.mount(rootElement, payload, {collapseInactive: "auto"});
 *   view.select("node", "verify_owner");   // also "observed", "edge", "invariant", "failure"
 *   view.destroy();
 *
 * Or declaratively (no inline script): <div data-contracteval-overlay="payload-script-id">,
 * where the id names a <script type="application/json"> (Django's json_script). With
 * data-trace-text="pre-id", a payload whose trace.text is null takes the text of that
 * element (the run page's <pre>), so that the page carries a long trace once; a trace
 * the page loads in parts is drawn part by part as they arrive. With
 * data-overlay-url (and an empty data-contracteval-overlay), the payload is fetched.
 *
 * Pairing in the graph: with data-teach="<id>" naming the run page's correction box (its
 * pair form and unpair forms), a "Pair steps" button draws the observed steps under the
 * graph; click a free step and then the obligation it enacts, or a pairing line, and
 * confirm: the same form the reviewer could fill in by hand is submitted.
 *
 * Every piece of user text (labels, artifact, trace, details) is inserted with text nodes;
 * nothing here assigns innerHTML.
 */
(function (global) {
  "use strict";

  // ------------------------------------------------------------------ palette
  // [fill, border, ink]; ink on fill and border on white both pass WCAG AA for text.
  const STATE_COLORS = {
    direct: ["#dcf2e3", "#1f7a45", "#11452a"],
    derived: ["#d8efef", "#1c6e70", "#0f3f40"],
    covered: ["#dde8f7", "#2f5f9e", "#1a355c"],
    passed: ["#dcf2e3", "#1f7a45", "#11452a"],
    omitted: ["#fbe1de", "#b3261e", "#6e140f"],
    unsatisfied: ["#fbefd5", "#9a5b00", "#5a3500"],
    not_applicable: ["#eef0f4", "#5d6b82", "#2e3747"],
    wrong_branch: ["#f1e2f7", "#8535a8", "#4d1a63"],
    failed: ["#fbe1de", "#b3261e", "#6e140f"],
    inactive_branch: ["#f1f0ec", "#8b8f99", "#555a66"],
    pruned: ["#f4f3ef", "#a9acb4", "#6b707c"],
  };
  const STATE_NAMES = {
    direct: "Direct",
    derived: "Derived",
    covered: "Covered",
    passed: "Output passes",
    omitted: "Omitted",
    unsatisfied: "Unsatisfied",
    not_applicable: "Not applicable",
    wrong_branch: "Wrong branch",
    failed: "Output fails",
    inactive_branch: "Unchosen branch",
    pruned: "Not active",
  };
  const OBS_NAMES = {
    paired: "paired",
    output: "final output",
    repeat: "repeat",
    wrong_branch: "wrong branch",
    extra: "extra action",
  };
  // a family reads as its name, as the server's pages write it: "wrong_branch" is "Wrong branch"
  const familyName = (f) => (f ? f.charAt(0).toUpperCase() + f.slice(1).replace(/_/g, " ") : "");
  const METRIC_NAMES = {
    required_recall: "Required recall",
    observed_precision: "Observed precision",
    edge_conformance: "Edge conformance",
    branch_correctness: "Branch correctness",
    invariant_score: "Invariants",
    output_validity: "Output validity",
  };
  const TYPE_NAMES = {
    intent: "intent",
    action: "action",
    decision: "decision",
    branch_condition: "outcome",
    output_requirement: "output",
    refusal: "refusal",
    validation: "validation",
  };
  const LEAF_SHAPES = {
    decision: "round-diamond",
    branch_condition: "round-tag",
    output_requirement: "cut-rectangle",
    refusal: "round-octagon",
  };
  const LABEL_MAX = 64;
  const AUTO_COLLAPSE_AT = 80;
  const WRAP_AT = 60;

  // ------------------------------------------------------------------ DOM helpers
  function h(tag, attrs, children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const k of Object.keys(attrs)) {
        const v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") el.className = v;
        else if (k === "text") el.textContent = String(v);
        // through the CSSOM: the Content-Security-Policy refuses style attributes
        else if (k === "style") Object.assign(el.style, v);
        else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
        else el.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (const c of [].concat(children || [])) {
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return el;
  }

  function truncate(s, n) {
    s = String(s || "").replace(/\s+/g, " ").trim();
    return s.length > n ? s.slice(0, n - 1).trimEnd() + "\u2026" : s;
  }

  function fmtMetric(v) {
    return v === null || v === undefined ? "n/a" : Math.round(v * 1000) / 10 + "%";
  }

  function chip(kind, value, text) {
    return h("span", { class: "ce-chip ce-" + kind + "--" + value, text: text });
  }

  function svgEl(tag, attrs) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const k of Object.keys(attrs)) el.setAttribute(k, String(attrs[k]));
    return el;
  }

  // ------------------------------------------------------------------ text with spans
  /* Render `text` into `box` as text nodes; `spans` = [{start, end, owner, cls}] become
   * <mark> segments carrying data-owners (space-separated). Overlaps split into segments;
   * a segment's class comes from its narrowest span. Returns owner -> [mark elements]. */
  function renderSpans(box, text, spans, onClick) {
    const byOwner = new Map();
    const size = text.length;
    const good = spans.filter((s) => s.start >= 0 && s.end <= size && s.start < s.end);
    const cuts = new Set([0, size]);
    for (const s of good) {
      cuts.add(s.start);
      cuts.add(s.end);
    }
    const points = Array.from(cuts).sort((a, b) => a - b);
    const starts = good.slice().sort((a, b) => a.start - b.start);
    let open = [];
    let next = 0;
    const frag = document.createDocumentFragment();
    for (let i = 0; i + 1 < points.length; i++) {
      const a = points[i];
      const b = points[i + 1];
      open = open.filter((s) => s.end > a);
      while (next < starts.length && starts[next].start <= a) {
        if (starts[next].end > a) open.push(starts[next]);
        next++;
      }
      const piece = text.slice(a, b);
      if (!open.length) {
        frag.appendChild(document.createTextNode(piece));
        continue;
      }
      const top = open.reduce((x, y) => (y.end - y.start < x.end - x.start ? y : x));
      const owners = Array.from(new Set(open.map((s) => s.owner)));
      const mark = h("mark", {
        class: "ce-hl " + (top.cls || ""),
        "data-owner": top.owner,
        "data-owners": owners.join(" "),
      }, [piece]);
      if (top.badge && top.start === a) {
        mark.insertBefore(h("span", { class: "ce-badge", "aria-hidden": "true", text: top.badge }), mark.firstChild);
      }
      if (onClick) {
        mark.addEventListener("click", (ev) => {
          ev.stopPropagation();
          onClick(top.owner);
        });
      }
      for (const o of owners) {
        if (!byOwner.has(o)) byOwner.set(o, []);
        byOwner.get(o).push(mark);
      }
      frag.appendChild(mark);
    }
    box.appendChild(frag);
    return byOwner;
  }

  function scrollIntoPanel(panel, el) {
    if (!panel || !el) return;
    const p = panel.getBoundingClientRect();
    const r = el.getBoundingClientRect();
    const target = panel.scrollTop + (r.top - p.top) - panel.clientHeight / 3;
    panel.scrollTop = Math.max(0, target);
  }

  // ------------------------------------------------------------------ graph elements
  function nodeSize(label, isLeaf) {
    if (!isLeaf) return { w: 0, h: 0 };
    const perLine = 22;
    const lines = Math.min(3, Math.max(1, Math.ceil(label.length / perLine)));
    return { w: 168, h: 20 + lines * 14 };
  }

  /* Cytoscape elements for the payload. With `collapse`, every top-most node outside the
   * expected graph stands for its whole subtree (its descendants are not drawn). */
  function buildElements(payload, collapse) {
    const byId = new Map(payload.nodes.map((n) => [n.id, n]));
    const kids = new Map();
    for (const n of payload.nodes) {
      if (n.parent !== null && byId.has(n.parent)) {
        if (!kids.has(n.parent)) kids.set(n.parent, []);
        kids.get(n.parent).push(n.id);
      }
    }
    const shownAs = new Map(); // node id -> id of the element that draws it
    const hiddenBelow = new Map(); // collapsed node id -> number of hidden descendants
    for (const n of payload.nodes) {
      if (shownAs.has(n.id)) continue;
      shownAs.set(n.id, n.id);
      const parentActive = n.parent === null || (byId.get(n.parent) || {}).active;
      if (collapse && !n.active && parentActive && kids.has(n.id)) {
        let count = 0;
        const stack = (kids.get(n.id) || []).slice();
        while (stack.length) {
          const k = stack.pop();
          shownAs.set(k, n.id);
          count++;
          for (const kk of kids.get(k) || []) stack.push(kk);
        }
        hiddenBelow.set(n.id, count);
      }
    }
    const drawn = payload.nodes.filter((n) => shownAs.get(n.id) === n.id);
    const hasKids = new Set();
    for (const n of drawn) if (n.parent !== null && shownAs.get(n.parent) === n.parent) hasKids.add(n.parent);

    const els = [];
    for (const n of drawn) {
      const isLeaf = !hasKids.has(n.id);
      const more = hiddenBelow.get(n.id);
      let short = truncate(n.label, isLeaf ? LABEL_MAX : 48);
      if (more) short += " (+" + more + ")";
      const size = nodeSize(short, isLeaf);
      const classes = ["st-" + n.state, "ty-" + n.type, isLeaf ? "leaf" : "box"];
      if (!n.active) classes.push("faint");
      if (more) classes.push("collapsed");
      if (!n.in_required_set && n.active) classes.push("optional");
      els.push({
        group: "nodes",
        data: {
          id: n.id,
          parent: n.parent !== null && shownAs.get(n.parent) === n.parent ? n.parent : undefined,
          label: isLeaf || n.type !== "decision" ? short : short + "  \u00b7  decision",
          w: size.w,
          h: size.h,
          lw: 260,
          shape: (isLeaf && LEAF_SHAPES[n.type]) || "round-rectangle",
        },
        classes: classes.join(" "),
      });
    }
    const isAncestor = (a, b) => {
      let p = byId.get(b) && byId.get(b).parent;
      while (p !== null && p !== undefined) {
        if (p === a) return true;
        p = byId.get(p) ? byId.get(p).parent : null;
      }
      return false;
    };
    const leafOf = (id, last) => {
      // a drawn leaf at or below `id` (first or last in declaration order), for layout edges
      let cur = id;
      for (;;) {
        const ks = (kids.get(cur) || []).filter((k) => shownAs.get(k) === k);
        if (!ks.length) return cur;
        cur = last ? ks[ks.length - 1] : ks[0];
      }
    };
    const seen = new Set();
    for (const e of payload.edges) {
      const s = shownAs.get(e.source);
      const t = shownAs.get(e.target);
      if (!s || !t || s === t) continue;
      const key = s + "|" + t + "|" + e.kind;
      if (seen.has(key)) continue;
      seen.add(key);
      const classes = ["k-" + e.kind];
      if (!e.active) classes.push("faint");
      if (drawn.length > WRAP_AT) classes.push("quiet");
      if (e.ordering_violation) classes.push("violation");
      const nested = isAncestor(s, t) || isAncestor(t, s);
      if (nested) classes.push("nested");
      els.push({
        group: "edges",
        data: { id: "e:" + e.id, eid: e.id, source: s, target: t, kind: e.kind },
        classes: classes.join(" "),
      });
      // dagre ignores edges that touch a box: give it the order between the leaves
      if (!nested && e.kind !== "produces" && (hasKids.has(s) || hasKids.has(t))) {
        const ls = leafOf(s, true);
        const lt = leafOf(t, false);
        if (ls !== lt && !isAncestor(ls, lt) && !isAncestor(lt, ls)) {
          els.push({
            group: "edges",
            data: { id: "L:" + e.id, source: ls, target: lt },
            classes: "layout-only",
          });
        }
      }
    }
    // Large graphs: lay the leaves out in reading order (the artifact's pre-order), wrapped
    // into columns, instead of by the declared edges (which would make one long chain).
    const leaves = [];
    const walk = (id) => {
      const ks = (kids.get(id) || []).filter((k) => shownAs.get(k) === k);
      if (!ks.length) leaves.push(id);
      for (const k of ks) walk(k);
    };
    for (const n of drawn) if (n.parent === null || shownAs.get(n.parent) !== n.parent) walk(n.id);
    const wrap = drawn.length > WRAP_AT;
    if (wrap) {
      const perColumn = Math.max(6, Math.ceil(Math.sqrt(leaves.length) * 1.6));
      let inColumn = 1;
      for (let i = 1; i < leaves.length; i++) {
        const a = leaves[i - 1];
        const b = leaves[i];
        const sameBox = byId.get(a).parent === byId.get(b).parent;
        if (inColumn >= perColumn * 1.5 || (inColumn >= perColumn && !sameBox)) {
          inColumn = 1;
          continue;
        }
        inColumn++;
        els.push({ group: "edges", data: { id: "W:" + i, source: a, target: b }, classes: "layout-only wrap" });
      }
    }
    return { elements: els, shownAs, hiddenBelow, wrap };
  }

  /* Nested layered layout: every box's children are laid out by dagre (rank = the declared
   * order edges between them, lifted to that level), bottom-up, so each box is sized to its
   * contents and boxes never overlap; then positions are composed top-down. A level whose
   * siblings have no order between them wraps into columns in declaration order. */
  const BOX_PAD = 12;
  const BOX_LABEL = 22;
  const MANY_SIBLINGS = 12;

  function nestedLayout(cy, payload, shownAs, dir, aspect) {
    const dagre = global.dagre;
    const kidsOf = new Map();
    const parentOf = new Map();
    cy.nodes().forEach((n) => {
      const pid = n.data("parent") || "";
      parentOf.set(n.id(), pid);
      if (!kidsOf.has(pid)) kidsOf.set(pid, []);
      kidsOf.get(pid).push(n.id());
    });
    const chain = (id) => {
      const out = [id];
      let p = parentOf.get(id);
      while (p) {
        out.push(p);
        p = parentOf.get(p);
      }
      out.push("");
      return out;
    };
    const lifted = new Map();
    for (const e of payload.edges) {
      const s = shownAs.get(e.source);
      const t = shownAs.get(e.target);
      if (!s || !t || s === t) continue;
      const cs = chain(s);
      const ct = chain(t);
      const inT = new Set(ct);
      const li = cs.findIndex((x) => inT.has(x));
      const lca = cs[li];
      const a = cs[li - 1];
      const b = ct[ct.indexOf(lca) - 1];
      if (a === undefined || b === undefined || a === b) continue; // nested: one inside the other
      if (!lifted.has(lca)) lifted.set(lca, []);
      lifted.get(lca).push([a, b]);
    }
    const size = new Map();
    const rel = new Map();
    const runDagre = (ks, edges, wrapAt) => {
      const g = new dagre.graphlib.Graph();
      g.setGraph({ rankdir: dir, nodesep: 18, ranksep: 30, marginx: 0, marginy: 0, ranker: "network-simplex" });
      g.setDefaultEdgeLabel(() => ({}));
      for (const k of ks) g.setNode(k, { width: size.get(k).w, height: size.get(k).h });
      for (const [a, b] of edges) if (!g.hasEdge(a, b)) g.setEdge(a, b, { weight: 2, minlen: 1 });
      if (wrapAt) {
        // reading order: consecutive siblings without an order of their own, in columns
        for (let i = 1; i < ks.length; i++) {
          if (i % wrapAt === 0) continue;
          if (!g.hasEdge(ks[i - 1], ks[i]) && !g.hasEdge(ks[i], ks[i - 1])) g.setEdge(ks[i - 1], ks[i], { weight: 1, minlen: 1 });
        }
      }
      dagre.layout(g);
      let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
      for (const k of ks) {
        const n = g.node(k);
        x1 = Math.min(x1, n.x - n.width / 2);
        y1 = Math.min(y1, n.y - n.height / 2);
        x2 = Math.max(x2, n.x + n.width / 2);
        y2 = Math.max(y2, n.y + n.height / 2);
      }
      const pos = new Map(ks.map((k) => [k, { x: g.node(k).x - x1, y: g.node(k).y - y1 }]));
      return { pos, w: x2 - x1, h: y2 - y1 };
    };
    const lay = (pid) => {
      const ks = kidsOf.get(pid) || [];
      for (const k of ks) {
        if (kidsOf.has(k)) lay(k);
        else size.set(k, { w: cy.getElementById(k).data("w"), h: cy.getElementById(k).data("h") });
      }
      const edges = lifted.get(pid) || [];
      let res;
      if (ks.length > MANY_SIBLINGS) {
        // many siblings: their declared order would make long, sparse ranks; lay them out
        // in reading order, in columns sized for a landscape view (edges are still drawn)
        let aw = 0, ah = 0;
        for (const k of ks) {
          aw += size.get(k).w + 18;
          ah += size.get(k).h + 30;
        }
        aw /= ks.length;
        ah /= ks.length;
        const target = !pid || !parentOf.get(pid) ? aspect : 1.3; // the outer levels fill the view
        const cols = Math.max(1, Math.round(Math.sqrt((target * ks.length * ah) / aw)));
        res = runDagre(ks, [], Math.ceil(ks.length / cols));
      } else {
        res = runDagre(ks, edges, 0);
        if (ks.length >= 5 && res.w > 1.8 * res.h) {
          const per = Math.max(3, Math.ceil(Math.sqrt(ks.length * (res.w / Math.max(res.h, 1)) / 3)));
          const wrapped = runDagre(ks, edges, Math.min(per, ks.length));
          const ratio = (r) => Math.max(r.w / r.h, r.h / r.w);
          if (ratio(wrapped) < ratio(res)) res = wrapped;
        }
      }
      for (const [k, p] of res.pos) rel.set(k, p);
      if (pid) size.set(pid, { w: res.w + 2 * BOX_PAD, h: res.h + 2 * BOX_PAD + BOX_LABEL, cw: res.w, ch: res.h });
      else size.set("", { w: res.w, h: res.h });
    };
    lay("");
    const positions = {};
    const place = (pid, ox, oy) => {
      for (const k of kidsOf.get(pid) || []) {
        const r = rel.get(k);
        const cx = ox + r.x;
        const cy0 = oy + r.y;
        if (kidsOf.has(k)) {
          const sz = size.get(k);
          place(k, cx - sz.w / 2 + BOX_PAD, cy0 - sz.h / 2 + BOX_LABEL + BOX_PAD);
        } else {
          positions[k] = { x: cx, y: cy0 };
        }
      }
    };
    place("", 0, 0);
    cy.nodes().filter((n) => !n.isParent()).positions((n) => positions[n.id()]);
    for (const [k, sz] of size) if (k) cy.getElementById(k).data("lw", Math.max(40, sz.w - 8));
    return { size, levels: kidsOf.size };
  }

  function graphStyle() {
    const st = [
      {
        selector: "node",
        style: {
          label: "data(label)",
          "font-family": "Inter, Segoe UI, system-ui, Liberation Sans, DejaVu Sans, sans-serif",
          "font-size": 11,
          "text-wrap": "wrap",
          "text-max-width": 150,
          "text-valign": "center",
          "text-halign": "center",
          "min-zoomed-font-size": 7,
          width: "data(w)",
          height: "data(h)",
          shape: "data(shape)",
          "border-width": 1.5,
          "border-style": "solid",
        },
      },
      {
        selector: "node.box",
        style: {
          shape: "round-rectangle",
          "text-valign": "top",
          "text-halign": "center",
          "text-margin-y": -3,
          "text-wrap": "ellipsis",
          "text-max-width": "data(lw)",
          "font-size": 11,
          "font-weight": 600,
          padding: BOX_PAD,
          "background-opacity": 0.45,
          "compound-sizing-wrt-labels": "exclude",
          "min-zoomed-font-size": 5,
        },
      },
      { selector: "node.ty-intent.box", style: { "border-width": 2.5, "background-opacity": 0.25 } },
      { selector: "node.ty-decision", style: { "border-style": "double", "border-width": 4 } },
      { selector: "node.ty-branch_condition.box", style: { "border-style": "dashed" } },
      { selector: "node.optional.leaf", style: { "border-style": "dashed" } },
      { selector: "node.faint", style: { opacity: 0.55, "border-style": "dashed" } },
      { selector: "node.st-pruned", style: { opacity: 0.4 } },
      { selector: "node.st-not_applicable", style: { "border-style": "dotted" } },
      { selector: "node.collapsed", style: { "border-style": "dashed", "font-style": "italic" } },
      {
        selector: "edge",
        style: {
          width: 1.6,
          "curve-style": "bezier",
          "line-color": "#5d6472",
          "target-arrow-color": "#5d6472",
          "target-arrow-shape": "triangle",
          "arrow-scale": 0.9,
        },
      },
      { selector: "edge.k-enables", style: { "line-style": "dashed", "line-dash-pattern": [6, 4] } },
      {
        selector: "edge.k-branches_to",
        style: { "line-style": "dotted", "line-color": "#8a6a2f", "target-arrow-color": "#8a6a2f", width: 1.8 },
      },
      {
        selector: "edge.k-produces",
        style: { width: 1, "line-color": "#aeb2ba", "target-arrow-color": "#aeb2ba", "target-arrow-shape": "vee" },
      },
      { selector: "edge.faint", style: { opacity: 0.3 } },
      { selector: "edge.quiet", style: { opacity: 0.28, width: 1 } },
      { selector: "edge.quiet.faint", style: { opacity: 0.12 } },
      {
        selector: "edge.violation",
        style: {
          width: 3.5,
          "line-color": "#c8261b",
          "target-arrow-color": "#c8261b",
          "line-style": "solid",
          opacity: 1,
          "z-index": 20,
          label: "order",
          "edge-text-rotation": "autorotate",
          "text-margin-y": -7,
          "font-size": 10,
          "font-weight": 700,
          color: "#9b1c14",
          "text-background-color": "#fff",
          "text-background-opacity": 0.9,
          "text-background-padding": 2,
        },
      },
      { selector: "edge.layout-only", style: { display: "none" } },
      // a decision -> its own outcome: the nesting already shows it
      { selector: "edge.nested", style: { display: "none" } },
      { selector: "edge.nested.violation", style: { display: "element", "curve-style": "straight" } },
      {
        selector: "node.related, edge.related",
        style: { "underlay-color": "#3a5ba0", "underlay-opacity": 0.14, "underlay-padding": 6 },
      },
      { selector: "edge.related", style: { opacity: 1, width: 2, "z-index": 25 } },
      {
        selector: "node.sel, edge.sel",
        style: {
          "underlay-color": "#2453c9",
          "underlay-opacity": 0.35,
          "underlay-padding": 10,
          "border-color": "#2453c9",
          "border-width": 3,
          "z-index": 30,
        },
      },
      { selector: "edge.sel", style: { "line-color": "#2453c9", "target-arrow-color": "#2453c9", width: 3 } },
      { selector: "edge.violation.sel", style: { "line-color": "#c8261b", "target-arrow-color": "#c8261b" } },
      {
        selector: "node.obs",
        style: { shape: "round-rectangle", "background-color": "#ffffff", "border-color": "#5d6472", color: "#1f2430", "border-style": "dashed" },
      },
      { selector: "node.obs-free", style: { "border-color": "#9a5b00", "border-width": 2, "border-style": "solid" } },
      { selector: "node.pick", style: { "underlay-color": "#9a5b00", "underlay-opacity": 0.3, "underlay-padding": 8, "border-width": 3 } },
      {
        selector: "edge.pairing",
        style: {
          "curve-style": "straight",
          "line-style": "dashed",
          "line-dash-pattern": [4, 3],
          "line-color": "#2453c9",
          "target-arrow-color": "#2453c9",
          width: 2.5,
          "z-index": 15,
        },
      },
      { selector: "edge.pairing.pick", style: { width: 4, "line-color": "#b3261e", "target-arrow-color": "#b3261e" } },
    ];
    for (const [state, [fill, border, ink]] of Object.entries(STATE_COLORS)) {
      st.splice(3, 0, {
        selector: "node.st-" + state,
        style: { "background-color": fill, "border-color": border, color: ink },
      });
    }
    for (const state of ["omitted", "wrong_branch", "failed"]) {
      st.push({ selector: "node.leaf.st-" + state, style: { "border-width": 2.5 } });
    }
    return st;
  }

  // ------------------------------------------------------------------ the view
  function Overlay(root, payload, options) {
    this.root = root;
    this.p = payload;
    this.opts = Object.assign({ collapseInactive: "auto", layoutDir: "TB" }, options || {});
    this.nodes = new Map(payload.nodes.map((n) => [n.id, n]));
    this.obs = new Map(payload.observed.map((o) => [o.id, o]));
    this.edges = new Map(payload.edges.map((e) => [e.id, e]));
    this.invs = new Map(payload.invariants.map((i) => [i.id, i]));
    this.failuresOf = new Map(); // "node:id" / "observed:id" / ... -> [failure index]
    payload.failures.forEach((f, i) => {
      for (const [kind, list] of [["node", f.nodes], ["edge", f.edges], ["observed", f.observed], ["invariant", f.invariants]]) {
        for (const id of list) {
          const key = kind + ":" + id;
          if (!this.failuresOf.has(key)) this.failuresOf.set(key, []);
          this.failuresOf.get(key).push(i);
        }
      }
    });
    this.collapse =
      this.opts.collapseInactive === "auto"
        ? payload.nodes.length > AUTO_COLLAPSE_AT
        : Boolean(this.opts.collapseInactive);
    this.selection = null;
    this.build();
  }

  Overlay.prototype.build = function () {
    const p = this.p;
    const root = this.root;
    while (root.firstChild) root.removeChild(root.firstChild);
    root.classList.add("ce-ov");

    // header: what was judged, the verdict and the metrics
    const title = (p.contract.title || p.contract.id) + "";
    const verdictClean = p.verdict === "clean";
    const metrics = h("dl", { class: "ce-metrics" });
    for (const key of Object.keys(METRIC_NAMES)) {
      const v = p.metrics[key];
      const tone = v === null || v === undefined ? "na" : v >= 0.999 ? "ok" : v >= 0.75 ? "warn" : "bad";
      metrics.appendChild(
        h("div", { class: "ce-metric ce-metric--" + tone, "data-metric": key }, [
          h("dt", { text: METRIC_NAMES[key] }),
          h("dd", { text: fmtMetric(v) }),
        ])
      );
    }
    const header = h("header", { class: "ce-head" }, [
      h("div", { class: "ce-head-main" }, [
        h("div", { class: "ce-verdict ce-verdict--" + (verdictClean ? "clean" : "bad"), text: verdictClean ? "Clean" : "Non-clean" }),
        h("div", { class: "ce-title" }, [
          h("div", { class: "ce-title-1" }, [
            h("strong", { text: title }),
            h("span", { class: "ce-muted", text: "  \u00b7  query " + p.query.id + "  \u00b7  " + p.mode + " matching" }),
          ]),
          p.query.text ? h("div", { class: "ce-title-2", title: p.query.text, text: "\u201c" + truncate(p.query.text, 160) + "\u201d" }) : null,
        ]),
      ]),
      metrics,
    ]);

    // left: failures, unpaired steps, invariants
    // Failures grouped by family, each group collapsible; every failure listed once.
    this.failList = h("div", { class: "ce-fail-groups" });
    const groups = new Map();
    p.failures.forEach((f, i) => {
      if (!groups.has(f.family)) {
        const list = h("ol", { class: "ce-fails" });
        const count = p.failures.filter((x) => x.family === f.family).length;
        const box = h("details", { class: "ce-fail-group", open: "" }, [
          h("summary", {}, [chip("fam", f.family, familyName(f.family)), h("span", { class: "ce-muted", text: " " + count })]),
          list,
        ]);
        groups.set(f.family, list);
        this.failList.appendChild(box);
      }
      const item = h("li", {}, [
        h("button", {
          type: "button",
          class: "ce-fail ce-fam--" + f.family,
          "data-failure": String(i),
          title: f.detail,
          onclick: () => this.select("failure", String(i)),
        }, [
          h("span", { class: "ce-fail-top" }, [
            chip("fam", f.family, familyName(f.family)),
            h("code", { class: "ce-loc", text: f.location }),
          ]),
          h("span", { class: "ce-fail-detail", text: f.detail }),
        ]),
      ]);
      groups.get(f.family).appendChild(item);
    });
    const unpaired = p.observed.filter((o) => o.status !== "paired" && o.status !== "output");
    this.extraList = h("ul", { class: "ce-extras" });
    for (const o of unpaired) {
      const target = o.expected ? this.nodes.get(o.expected) : null;
      this.extraList.appendChild(
        h("li", {}, [
          h("button", {
            type: "button",
            class: "ce-extra",
            "data-observed": o.id,
            title: o.label,
            onclick: () => this.select("observed", o.id),
          }, [
            h("span", { class: "ce-fail-top" }, [
              chip("obs", o.status, OBS_NAMES[o.status] || o.status),
              h("code", { class: "ce-loc", text: o.id + " \u00b7 step " + o.step }),
            ]),
            h("span", { class: "ce-fail-detail", text: truncate(o.label, 90) }),
            target ? h("span", { class: "ce-extra-of", text: (o.relation === "repeats" ? "repeats " : "acts on ") + truncate(target.label, 60) }) : null,
          ]),
        ])
      );
    }
    for (const d of p.dropped) {
      this.extraList.appendChild(
        h("li", { class: "ce-dropped" }, [
          h("span", { class: "ce-fail-top" }, [chip("obs", "dropped", "dropped"), h("code", { class: "ce-loc", text: d.id })]),
          h("span", { class: "ce-fail-detail", text: d.reason }),
        ])
      );
    }
    const invList = h("ul", { class: "ce-invs" });
    for (const inv of p.invariants.filter((x) => x.active)) {
      const tone = inv.violated ? "bad" : inv.judged ? "ok" : "na";
      invList.appendChild(
        h("li", {}, [
          h("button", {
            type: "button",
            class: "ce-inv ce-inv--" + tone,
            "data-invariant": inv.id,
            title: inv.description || inv.label,
            onclick: () => this.select("invariant", inv.id),
          }, [
            h("span", { class: "ce-inv-score", text: inv.judged ? String(inv.score) : "unjudged" }),
            h("span", { class: "ce-inv-label", text: truncate(inv.label, 70) }),
          ]),
        ])
      );
    }
    const side = h("aside", { class: "ce-side" }, [
      h("section", { class: "ce-sec" }, [
        h("h3", { class: "ce-h" }, ["Failures ", h("span", { class: "ce-count", text: String(p.failures.length) })]),
        p.failures.length ? this.failList : h("p", { class: "ce-empty", text: "No failures: every active obligation is met in order." }),
      ]),
      h("section", { class: "ce-sec" }, [
        h("h3", { class: "ce-h" }, ["Steps outside the contract ", h("span", { class: "ce-count", text: String(unpaired.length + p.dropped.length) })]),
        unpaired.length || p.dropped.length ? this.extraList : h("p", { class: "ce-empty", text: "Every observed step pairs with an active obligation." }),
      ]),
      h("section", { class: "ce-sec" }, [
        h("h3", { class: "ce-h" }, ["Invariants ", h("span", { class: "ce-count", text: String(invList.childNodes.length) })]),
        invList.childNodes.length ? invList : h("p", { class: "ce-empty", text: "None apply." }),
      ]),
    ]);

    // centre: the graph
    this.cyBox = h("div", { class: "ce-cy", role: "img", "aria-label": "Expected graph of the run" });
    this.cyBox.addEventListener("mouseleave", () => (this.tip.hidden = true));
    this.tip = h("div", { class: "ce-tip", hidden: true });
    this.collapseBtn = h("button", {
      type: "button",
      class: "ce-btn",
      "aria-pressed": String(this.collapse),
      onclick: () => {
        this.collapse = !this.collapse;
        this.collapseBtn.setAttribute("aria-pressed", String(this.collapse));
        this.collapseBtn.textContent = this.collapse ? "Expand inactive" : "Collapse inactive";
        this.drawGraph();
      },
      text: this.collapse ? "Expand inactive" : "Collapse inactive",
    });
    const tools = h("div", { class: "ce-tools" }, [
      h("button", { type: "button", class: "ce-btn", title: "Fit the graph to the view", onclick: () => this.fit(), text: "Fit" }),
      h("button", { type: "button", class: "ce-btn", title: "Zoom in", "aria-label": "Zoom in", onclick: () => this.zoomBy(1.25), text: "+" }),
      h("button", { type: "button", class: "ce-btn", title: "Zoom out", "aria-label": "Zoom out", onclick: () => this.zoomBy(0.8), text: "\u2212" }),
      this.collapseBtn,
      (this.maxBtn = h("button", {
        type: "button",
        class: "ce-btn",
        "aria-pressed": "false",
        title: "Give the overlay the whole window (Esc gives it back)",
        "data-testid": "overlay-maximise",
        onclick: () => this.maximise(!this.root.classList.contains("ce-maximised")),
        text: "Maximise",
      })),
      this.opts.teach ? this.teachButton() : null,
      (this.stat = h("span", { class: "ce-muted ce-stat" })),
      // always there when pairing is offered, and of a fixed height: the graph's pane
      // keeps its size (and its zoom) while the messages change
      this.opts.teach ? (this.teachBar = h("div", { class: "ce-teach", "aria-live": "polite", "data-testid": "teach-bar" })) : null,
    ]);
    this.details = h("div", { class: "ce-details", "aria-live": "polite" });
    const centre = h("section", { class: "ce-centre" }, [
      tools,
      h("div", { class: "ce-cy-wrap" }, [this.cyBox, this.tip]),
      this.legend(),
      this.details,
    ]);

    // right: the artifact and the trace
    this.artBox = h("div", { class: "ce-text ce-text--artifact", tabindex: "0" });
    this.traceBox = h("div", { class: "ce-text ce-text--trace", tabindex: "0" });
    const artSpans = [];
    for (const n of p.nodes) {
      for (const s of n.spans) artSpans.push({ start: s.start, end: s.end, owner: "node:" + n.id, cls: "ce-src ce-src--" + n.state });
    }
    for (const inv of p.invariants) {
      for (const s of inv.spans) artSpans.push({ start: s.start, end: s.end, owner: "invariant:" + inv.id, cls: "ce-src ce-src--inv" });
    }
    this.artMarks = renderSpans(this.artBox, p.artifact.text || "", artSpans, (owner) => this.selectOwner(owner));
    const traceSpans = [];
    for (const o of p.observed) {
      o.spans.forEach((s, k) =>
        traceSpans.push({ start: s.start, end: s.end, owner: "observed:" + o.id, cls: "ce-obs ce-obs--" + o.status + (o.weak ? " ce-obs--weak" : ""), badge: k === 0 ? o.id : null })
      );
    }
    if (this.opts.traceParts) this.drawTraceParts(traceSpans);
    else this.traceMarks = renderSpans(this.traceBox, p.trace.text || "", traceSpans, (owner) => this.selectOwner(owner));
    let outputBlock = null;
    if (p.trace.output !== null && p.trace.output !== undefined) {
      outputBlock = h("div", { class: "ce-output" }, [h("div", { class: "ce-output-h", text: "Final output" }), h("pre", { class: "ce-output-body", tabindex: "0", text: p.trace.output })]);
    }
    const right = h("section", { class: "ce-right" }, [
      h("div", { class: "ce-panel" }, [
        h("h3", { class: "ce-h" }, ["Contract artifact ", h("span", { class: "ce-muted", text: p.artifact.media_type || "" })]),
        this.artBox,
      ]),
      h("div", { class: "ce-panel" }, [
        h("h3", { class: "ce-h" }, [p.trace.kind === "response" ? "Response " : "Trace ", h("span", { class: "ce-muted", text: p.observed.length + " observed steps" })]),
        this.traceBox,
        outputBlock,
      ]),
    ]);

    root.appendChild(header);
    root.appendChild(h("div", { class: "ce-body" }, [side, centre, right]));
    root.addEventListener("keydown", (ev) => {
      if (ev.key !== "Escape") return;
      if (root.classList.contains("ce-maximised")) return this.maximise(false);
      this.clear();
      if (this.teaching) this.teachPrompt();
    });
    this.showDetails(null);
    this.drawGraph();
  };

  // The pane is as big as the page allows; a long contract reads better on the whole
  // window. The resize observer fits the graph to the new size.
  Overlay.prototype.maximise = function (on) {
    this.root.classList.toggle("ce-maximised", on);
    this.maxBtn.setAttribute("aria-pressed", String(on));
    this.maxBtn.textContent = on ? "Restore" : "Maximise";
    if (on) this.maxBtn.focus();
  };

  Overlay.prototype.legend = function () {
    const counts = this.p.counts || {};
    const items = [];
    for (const state of Object.keys(STATE_COLORS)) {
      const [fill, border] = STATE_COLORS[state];
      const n = counts[state] || 0;
      items.push(
        h("li", { class: n ? "" : "ce-zero", title: (this.p.states || {})[state] || "" }, [
          h("span", { class: "ce-swatch ce-swatch--" + state, style: { background: fill, borderColor: border } }),
          STATE_NAMES[state] + " ",
          h("span", { class: "ce-muted", text: String(n) }),
        ])
      );
    }
    const edgeItem = (cls, label, attrs) => {
      const svg = svgEl("svg", { width: 26, height: 10, "aria-hidden": "true" });
      svg.appendChild(svgEl("line", Object.assign({ x1: 1, y1: 5, x2: 25, y2: 5, "stroke-width": 2 }, attrs)));
      return h("li", { class: "ce-edge-key " + cls }, [svg, label]);
    };
    items.push(edgeItem("", "requires", { stroke: "#5d6472" }));
    items.push(edgeItem("", "enables", { stroke: "#5d6472", "stroke-dasharray": "5 3" }));
    items.push(edgeItem("", "produces", { stroke: "#aeb2ba", "stroke-width": 1 }));
    items.push(edgeItem("", "order broken", { stroke: "#c8261b", "stroke-width": 3.5 }));
    return h("ul", { class: "ce-legend", "aria-label": "Legend" }, items);
  };

  Overlay.prototype.drawGraph = function () {
    const cytoscape = global.cytoscape;
    if (this.cy) {
      this.cy.destroy();
      this.cy = null;
    }
    const built = buildElements(this.p, this.collapse);
    this.shownAs = built.shownAs;
    const cy = cytoscape({
      container: this.cyBox,
      elements: built.elements,
      style: graphStyle(),
      layout: { name: "preset" },
      minZoom: 0.05,
      maxZoom: 3,
      boxSelectionEnabled: false,
      autoungrabify: true,
      selectionType: "single",
    });
    this.cy = cy;
    const drawnNodes = cy.nodes().length;
    this.root.setAttribute("data-rendered-nodes", String(drawnNodes));
    this.root.setAttribute("data-rendered-edges", String(cy.edges().not(".layout-only").length));
    const hidden = this.p.nodes.length - drawnNodes;
    this.stat.textContent = drawnNodes + " nodes shown" + (hidden ? ", " + hidden + " collapsed" : "");
    this.collapseBtn.hidden = !built.hiddenBelow.size && !this.collapse;
    if (!built.hiddenBelow.size && this.collapse) this.collapseBtn.hidden = true;

    try {
      if (this.opts.layout === "cytoscape-dagre") throw new Error("cytoscape-dagre requested");
      const aspect = Math.min(2.5, Math.max(0.6, (cy.width() || 800) / (cy.height() || 600)));
      this.layoutInfo = nestedLayout(cy, this.p, built.shownAs, this.opts.layoutDir, aspect);
      this.root.setAttribute("data-layout", "nested-dagre");
    } catch (err) {
      if (this.opts.layout !== "cytoscape-dagre") console.warn("overlay: nested layout failed, using cytoscape-dagre", err);
      try {
        cy.layout({
          name: "dagre",
          rankDir: this.opts.layoutDir,
          nodeSep: 18,
          rankSep: 34,
          fit: false,
          animate: false,
          eles: built.wrap ? cy.nodes().union(cy.edges(".wrap")) : cy.elements(),
        }).run();
        this.root.setAttribute("data-layout", "dagre");
      } catch (err2) {
        console.warn("overlay: dagre layout failed, using a grid", err2);
        cy.layout({ name: "grid", fit: false, animate: false }).run();
        this.root.setAttribute("data-layout", "grid");
      }
    }
    if (this.teaching) this.drawSteps(cy);
    if (this.opts.teach && !this.teachBar.firstChild) this.teachPrompt();
    this.fit();
    // Fit again whenever the graph's pane changes size (window resize, panes moved);
    // the size the first layout saw may not be the one the page settles on.
    if (global.ResizeObserver && !this.resizeObserver) {
      let timer = null;
      let last = "";
      this.resizeObserver = new global.ResizeObserver(() => {
        const box = this.cy.container();
        const size = box.clientWidth + "x" + box.clientHeight;
        if (size === last) return;
        last = size;
        clearTimeout(timer);
        timer = setTimeout(() => this.fit(), 60);
      });
      this.resizeObserver.observe(cy.container());
    }

    cy.on("tap", "node", (ev) => {
      if (this.teaching && this.teachTap(ev.target)) return;
      this.select("node", this.drawnToPayload(ev.target.id()));
    });
    cy.on("tap", "edge", (ev) => {
      if (this.teaching && this.teachTap(ev.target)) return;
      const eid = ev.target.data("eid");
      if (eid) this.select("edge", eid);
    });
    cy.on("tap", (ev) => {
      if (ev.target !== cy) return;
      this.clear();
      if (this.teaching) this.teachPrompt();
    });
    cy.on("mouseover", "node, edge", (ev) => this.showTip(ev));
    cy.on("mouseout", "node, edge", () => (this.tip.hidden = true));
    cy.on("viewport", () => (this.tip.hidden = true));
    if (this.selection) this.select(this.selection.kind, this.selection.id, { keepView: true });
  };

  Overlay.prototype.drawnToPayload = function (id) {
    return id;
  };

  Overlay.prototype.fit = function (eles) {
    if (!this.cy) return;
    this.cy.resize();
    this.cy.fit(eles && eles.length ? eles : undefined, 24);
    if (!eles && this.cy.zoom() > 1.6) {
      this.cy.zoom(1.6);
      this.cy.center();
    }
  };

  Overlay.prototype.zoomBy = function (f) {
    const cy = this.cy;
    cy.zoom({ level: cy.zoom() * f, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  };

  Overlay.prototype.showTip = function (ev) {
    const t = ev.target;
    const tip = this.tip;
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    if (t.isNode()) {
      const n = this.nodes.get(t.id());
      if (!n) return;
      tip.appendChild(h("div", { class: "ce-tip-title", text: n.label }));
      tip.appendChild(
        h("div", { class: "ce-tip-meta" }, [chip("st", n.state, STATE_NAMES[n.state] || n.state), " " + (TYPE_NAMES[n.type] || n.type) + " \u00b7 " + n.id])
      );
    } else {
      const e = this.edges.get(t.data("eid"));
      if (!e) return;
      tip.appendChild(h("div", { class: "ce-tip-title", text: e.source + " \u2192 " + e.target }));
      tip.appendChild(h("div", { class: "ce-tip-meta", text: e.kind + (e.ordering_violation ? " \u00b7 order broken" : "") }));
    }
    const pos = ev.renderedPosition || t.renderedMidpoint();
    const w = this.cyBox.clientWidth;
    tip.style.left = Math.min(Math.max(8, pos.x + 14), w - 290) + "px";
    tip.style.top = pos.y + 14 + "px";
    tip.hidden = false;
  };

  // ------------------------------------------------------------------ selection
  Overlay.prototype.selectOwner = function (owner) {
    const i = owner.indexOf(":");
    this.select(owner.slice(0, i), owner.slice(i + 1));
  };

  Overlay.prototype.clear = function () {
    this.selection = null;
    if (this.cy) this.cy.elements().removeClass("sel related");
    for (const box of [this.artBox, this.traceBox]) {
      for (const m of box.querySelectorAll("mark.is-selected, mark.is-related")) m.classList.remove("is-selected", "is-related");
    }
    for (const b of this.root.querySelectorAll(".ce-side .is-selected")) b.classList.remove("is-selected");
    this.showDetails(null);
  };

  /* Select a graph node ("node"), an observed step ("observed"), an edge "u->v" ("edge"),
   * an invariant ("invariant") or a failure by index ("failure"). */
  Overlay.prototype.select = function (kind, id, how) {
    how = how || {};
    this.tip.hidden = true;
    this.clear();
    this.selection = { kind, id };
    const nodeIds = [];
    const relatedNodes = [];
    const edgeIds = [];
    const obsIds = [];
    const relatedObs = [];
    const invIds = [];
    if (kind === "node") {
      const n = this.nodes.get(id);
      if (!n) return;
      nodeIds.push(id);
      for (const o of n.observed) obsIds.push(o.id);
    } else if (kind === "observed") {
      const o = this.obs.get(id);
      if (!o) return;
      obsIds.push(id);
      if (o.expected) relatedNodes.push(o.expected);
    } else if (kind === "edge") {
      const e = this.edges.get(id);
      if (!e) return;
      edgeIds.push(id);
      relatedNodes.push(e.source, e.target);
      for (const x of [e.source, e.target]) for (const o of this.nodes.get(x).observed) relatedObs.push(o.id);
    } else if (kind === "invariant") {
      if (!this.invs.has(id)) return;
      invIds.push(id);
    } else if (kind === "failure") {
      const f = this.p.failures[Number(id)];
      if (!f) return;
      nodeIds.push(...f.nodes);
      edgeIds.push(...f.edges);
      obsIds.push(...f.observed);
      invIds.push(...f.invariants);
      for (const x of f.nodes) for (const o of this.nodes.get(x) ? this.nodes.get(x).observed : []) relatedObs.push(o.id);
      const btn = this.failList.querySelector('[data-failure="' + Number(id) + '"]');
      const group = btn && btn.closest("details");
      if (group) group.open = true;
      if (btn) btn.classList.add("is-selected");
    } else {
      return;
    }

    // graph
    const cy = this.cy;
    let focus = cy.collection();
    const drawn = (x) => cy.getElementById(this.shownAs.get(x) || x);
    for (const x of nodeIds) {
      const el = drawn(x).addClass("sel");
      el.connectedEdges().not(".layout-only").addClass("related");
      focus = focus.union(el);
    }
    for (const x of relatedNodes) focus = focus.union(drawn(x).addClass(kind === "observed" ? "sel" : "related"));
    for (const x of edgeIds) {
      const el = cy.edges().filter((e) => e.data("eid") === x);
      el.addClass("sel");
      focus = focus.union(el).union(el.connectedNodes());
    }
    if (!how.keepView && focus.length) {
      const ext = focus.renderedBoundingBox();
      const vw = cy.width();
      const vh = cy.height();
      const visible = ext.x1 >= 0 && ext.y1 >= 0 && ext.x2 <= vw && ext.y2 <= vh;
      const tiny = cy.zoom() < 0.5;
      if (!visible || tiny) {
        const bb = focus.boundingBox();
        const pad = Math.max(60, Math.min(vw, vh) / 5);
        const fitZoom = Math.min((vw - 2 * pad) / Math.max(bb.w, 1), (vh - 2 * pad) / Math.max(bb.h, 1));
        const zoom = Math.max(cy.minZoom(), Math.min(1.3, fitZoom));
        const pan = { x: vw / 2 - zoom * (bb.x1 + bb.w / 2), y: vh / 2 - zoom * (bb.y1 + bb.h / 2) };
        cy.animate({ zoom, pan }, { duration: 250 });
      }
    }

    // texts
    let firstArt = null;
    const markAll = (marks, key, cls) => {
      const list = marks.get(key) || [];
      for (const m of list) m.classList.add(cls);
      return list[0] || null;
    };
    for (const x of [...nodeIds, ...relatedNodes]) firstArt = markAll(this.artMarks, "node:" + x, nodeIds.includes(x) || kind === "observed" ? "is-selected" : "is-related") || firstArt;
    for (const x of invIds) firstArt = markAll(this.artMarks, "invariant:" + x, "is-selected") || firstArt;
    if (nodeIds.length || invIds.length) {
      const first = markAll(this.artMarks, nodeIds.length ? "node:" + nodeIds[0] : "invariant:" + invIds[0], "is-selected");
      firstArt = first || firstArt;
    }
    let firstTrace = null;
    for (const x of relatedObs) markAll(this.traceMarks, "observed:" + x, "is-related");
    for (const x of obsIds) {
      const m = markAll(this.traceMarks, "observed:" + x, "is-selected");
      firstTrace = firstTrace || m;
    }
    if (!firstTrace && relatedObs.length) firstTrace = (this.traceMarks.get("observed:" + relatedObs[0]) || [])[0] || null;
    scrollIntoPanel(this.artBox, firstArt);
    this.scrollTrace(firstTrace);
    for (const x of obsIds) {
      const b = this.extraList.querySelector('[data-observed="' + CSS.escape(x) + '"]');
      if (b) b.classList.add("is-selected");
    }
    for (const x of invIds) {
      const b = this.root.querySelector('[data-invariant="' + CSS.escape(x) + '"]');
      if (b) b.classList.add("is-selected");
    }
    this.root.setAttribute("data-selected", kind + ":" + id);
    this.showDetails({ kind, id });
    this.selectWhenDrawn(kind, id, how, obsIds.length ? obsIds : relatedObs.slice(0, 1));
  };

  // ------------------------------------------------------------------ a trace in parts
  /* A long trace comes in parts (the run page's <pre>, audit/selectors/trace.py; the
   * `traceParts` option reads and loads them): the pane draws the parts loaded so far,
   * each a block the browser lays out only near the view (content-visibility), loads
   * the next when the pane's end comes into view, and loads up to a step's evidence
   * before showing it. */
  Overlay.prototype.drawTraceParts = function (spans) {
    this.traceSpans = spans;
    this.traceMarks = new Map();
    this.traceShown = 0;
    this.tracePartsShown = 0;
    this.traceTail = h("div", { class: "ce-trace-more", "data-testid": "overlay-trace-more", text: "Loading the rest of the trace\u2026" });
    this.traceBox.appendChild(this.traceTail);
    this.traceIO = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting)) this.loadTrace(this.traceShown + 1);
      },
      { root: this.traceBox, rootMargin: "0px 0px 600px 0px" }
    );
    this.appendTrace();
  };

  // Draw the parts the page's <pre> holds beyond those the pane shows, one block each.
  Overlay.prototype.appendTrace = function () {
    const parts = this.opts.traceParts;
    for (const part of parts.list().slice(this.tracePartsShown)) {
      const from = this.traceShown;
      const to = from + part.length;
      const clipped = [];
      for (const s of this.traceSpans) {
        if (s.end <= from || s.start >= to) continue;
        const start = Math.max(s.start, from) - from;
        clipped.push(Object.assign({}, s, { start, end: Math.min(s.end, to) - from, badge: s.start >= from ? s.badge : null }));
      }
      const box = h("div", { class: "ce-trace-part" });
      const marks = renderSpans(box, part, clipped, (owner) => this.selectOwner(owner));
      for (const [owner, list] of marks) {
        if (!this.traceMarks.has(owner)) this.traceMarks.set(owner, []);
        this.traceMarks.get(owner).push(...list);
      }
      this.traceBox.insertBefore(box, this.traceTail);
      this.traceShown = to;
      this.tracePartsShown += 1;
    }
    this.traceIO.unobserve(this.traceTail);
    if (parts.done()) {
      this.traceTail.remove();
      this.traceIO.disconnect();
    } else {
      this.traceIO.observe(this.traceTail); // a fresh look: is the end still in view?
    }
  };

  /* A promise: the trace drawn at least up to offset `end` (or to its last part). */
  Overlay.prototype.loadTrace = function (end) {
    this.appendTrace();
    const parts = this.opts.traceParts;
    if (this.traceShown >= end || parts.done()) return Promise.resolve();
    return parts.next().then((ok) => (ok ? this.loadTrace(end) : undefined));
  };

  /* Scroll the trace pane to `el`. A trace in parts scrolls again over the next frames:
   * the parts it passes are laid out only now, and their real height moves `el`. */
  Overlay.prototype.scrollTrace = function (el, frames) {
    scrollIntoPanel(this.traceBox, el);
    if (!this.opts.traceParts || !el) return;
    frames = frames === undefined ? 3 : frames;
    if (frames > 0) requestAnimationFrame(() => this.scrollTrace(el, frames - 1));
  };

  // A selection whose evidence lies in a part not loaded yet: load it, then select again.
  Overlay.prototype.selectWhenDrawn = function (kind, id, how, obsIds) {
    if (!this.opts.traceParts || this.opts.traceParts.done()) return;
    let need = 0;
    for (const x of obsIds) {
      const o = this.obs.get(x);
      for (const sp of (o && o.spans) || []) need = Math.max(need, sp.end);
    }
    if (need <= this.traceShown) return;
    this.root.setAttribute("data-trace-loading", "true");
    this.loadTrace(need).then(() => {
      this.root.removeAttribute("data-trace-loading");
      const s = this.selection;
      if (s && s.kind === kind && s.id === id) this.select(kind, id, Object.assign({}, how, { keepView: true }));
    });
  };

  // ------------------------------------------------------------------ details card
  Overlay.prototype.link = function (kind, id, text) {
    return h("button", { type: "button", class: "ce-link", onclick: () => this.select(kind, id), text: text });
  };

  Overlay.prototype.failureLinks = function (key) {
    const idx = this.failuresOf.get(key) || [];
    if (!idx.length) return null;
    return h("div", { class: "ce-d-row" }, [
      h("span", { class: "ce-d-k", text: "Failures" }),
      ...idx.map((i) => this.link("failure", String(i), familyName(this.p.failures[i].family) + " at " + this.p.failures[i].location)),
    ]);
  };

  Overlay.prototype.showDetails = function (sel) {
    const box = this.details;
    while (box.firstChild) box.removeChild(box.firstChild);
    if (!sel) {
      box.appendChild(
        h("p", { class: "ce-empty" }, [
          "Click a node, an edge, a highlighted passage or a failure to see its evidence. ",
          h("span", { class: "ce-muted", text: "Scroll to zoom, drag to pan, Esc to clear." }),
        ])
      );
      return;
    }
    const row = (k, ...v) => h("div", { class: "ce-d-row" }, [h("span", { class: "ce-d-k", text: k }), ...v]);
    if (sel.kind === "node") {
      const n = this.nodes.get(sel.id);
      const flags = [n.in_required_set ? "required" : "optional", n.explicit ? "explicit" : null, n.combine === "any" ? "any one child" : null].filter(Boolean).join(" \u00b7 ");
      box.appendChild(h("div", { class: "ce-d-title" }, [chip("st", n.state, STATE_NAMES[n.state] || n.state), h("strong", { text: n.label })]));
      box.appendChild(row("Node", h("code", { text: n.id }), " " + (TYPE_NAMES[n.type] || n.type) + " \u00b7 " + flags + (n.pos ? " \u00b7 step " + (n.pos[0] === n.pos[1] ? n.pos[0] : n.pos[0] + "\u2013" + n.pos[1]) : "")));
      if (n.description) box.appendChild(row("Says", h("span", { text: n.description })));
      if (n.chosen_outcome) box.appendChild(row("Query picks", this.link("node", n.chosen_outcome, this.nodes.get(n.chosen_outcome).label)));
      if (n.branch_of) box.appendChild(row("Not chosen at", this.link("node", n.branch_of, this.nodes.get(n.branch_of).label)));
      if (n.observed.length) {
        box.appendChild(row("Evidence", ...n.observed.map((o) => this.link("observed", o.id, o.id + " (" + o.relation.replace("_", " ") + ")"))));
      } else if (n.active) {
        box.appendChild(row("Evidence", h("span", { class: "ce-muted", text: n.state === "covered" || n.state === "derived" ? "through " + (n.state === "covered" ? "an enclosing task" : "its children") : "no observed step of its own" })));
      }
      const f = this.failureLinks("node:" + n.id);
      if (f) box.appendChild(f);
    } else if (sel.kind === "observed") {
      const o = this.obs.get(sel.id);
      box.appendChild(h("div", { class: "ce-d-title" }, [chip("obs", o.status, OBS_NAMES[o.status] || o.status), h("strong", { text: o.label })]));
      box.appendChild(row("Step", h("code", { text: o.id }), " step " + o.step + (o.score !== null && o.score !== undefined ? " \u00b7 similarity " + o.score : "")));
      if (o.description) box.appendChild(row("Says", h("span", { text: o.description })));
      if (o.expected) box.appendChild(row(o.relation === "pairs" ? "Pairs with" : o.relation === "repeats" ? "Repeats" : "Acts on", this.link("node", o.expected, this.nodes.get(o.expected).label)));
      const f = this.failureLinks("observed:" + o.id);
      if (f) box.appendChild(f);
    } else if (sel.kind === "edge") {
      const e = this.edges.get(sel.id);
      box.appendChild(h("div", { class: "ce-d-title" }, [h("strong", { text: e.kind + " edge" }), e.ordering_violation ? chip("fam", "ordering", "order broken") : null]));
      box.appendChild(row("From", this.link("node", e.source, this.nodes.get(e.source).label)));
      box.appendChild(row("To", this.link("node", e.target, this.nodes.get(e.target).label)));
      const f = this.failureLinks("edge:" + e.id);
      if (f) box.appendChild(f);
    } else if (sel.kind === "invariant") {
      const inv = this.invs.get(sel.id);
      box.appendChild(h("div", { class: "ce-d-title" }, [h("strong", { text: inv.label })]));
      box.appendChild(row("Invariant", h("code", { text: inv.id }), " " + (inv.judged ? "score " + inv.score : "unjudged") + (inv.checked ? " \u00b7 checked by a pattern" : "")));
      if (inv.description) box.appendChild(row("Says", h("span", { text: inv.description })));
      const f = this.failureLinks("invariant:" + inv.id);
      if (f) box.appendChild(f);
    } else if (sel.kind === "failure") {
      const f = this.p.failures[Number(sel.id)];
      box.appendChild(h("div", { class: "ce-d-title" }, [chip("fam", f.family, familyName(f.family)), h("code", { text: f.location })]));
      box.appendChild(h("p", { class: "ce-d-detail", text: f.detail }));
      const links = [
        ...f.nodes.map((x) => this.link("node", x, this.nodes.get(x) ? this.nodes.get(x).label : x)),
        ...f.observed.map((x) => this.link("observed", x, x)),
        ...f.invariants.map((x) => this.link("invariant", x, x)),
      ];
      if (links.length) box.appendChild(row("Involves", ...links));
    }
  };


  // ------------------------------------------------------------------ pairing in the graph
  /* What the correction box offers (its forms are the source of truth and the keyboard
   * path): the steps that may be paired, the obligations, the current pairings. */
  function readTeach(box) {
    const pairForm = box && box.querySelector("form[data-testid=pair-form]");
    if (!pairForm) return null;
    const stepSelect = pairForm.querySelector("select[name=observed]");
    const obSelect = pairForm.querySelector("select[name=expected]");
    const unpairForms = Array.from(box.querySelectorAll("form[data-testid=unpair-form]"));
    return {
      steps: Array.from(stepSelect.options).map((o) => o.value),
      obligations: new Set(Array.from(obSelect.options).map((o) => o.value)),
      pairs: unpairForms.map((f) => ({ expected: f.getAttribute("data-expected"), observed: f.getAttribute("data-observed") })),
      pair(observed, expected) {
        stepSelect.value = observed;
        obSelect.value = expected;
        pairForm.requestSubmit();
      },
      unpair(expected) {
        const f = unpairForms.find((x) => x.getAttribute("data-expected") === expected);
        if (f) f.requestSubmit();
      },
    };
  }

  Overlay.prototype.teachButton = function () {
    this.teaching = false;
    this.teachBtn = h("button", {
      type: "button",
      class: "ce-btn",
      "aria-pressed": "false",
      "data-testid": "teach-toggle",
      title: "Draw the observed steps to pair or unpair them in the graph",
      onclick: () => {
        this.teaching = !this.teaching;
        this.pick = null;
        this.teachBtn.setAttribute("aria-pressed", String(this.teaching));
        this.root.setAttribute("data-teaching", String(this.teaching));
        this.drawGraph();
        this.teachPrompt();
      },
      text: "Pair steps",
    });
    return this.teachBtn;
  };

  /* The steps of the correction box, in trace order, drawn in rows under the graph, and a
   * pairing line from each paired step to its obligation. */
  Overlay.prototype.drawSteps = function (cy) {
    const t = this.opts.teach;
    const free = new Set(t.steps);
    const pairedTo = new Map(t.pairs.map((p) => [p.observed, p.expected]));
    const order = this.p.observed.map((o) => o.id).filter((id) => free.has(id) || pairedTo.has(id));
    const bb = cy.nodes().boundingBox();
    const gap = 190;
    // a row a little wider than the graph, so that the lines to the graph stay short
    const perRow = Math.max(3, Math.min(8, Math.ceil(bb.w / gap) + 1));
    order.forEach((id, i) => {
      const o = this.obs.get(id);
      const label = id + " \u00b7 " + truncate(o ? o.label : "", 40);
      const size = nodeSize(label, true);
      cy.add({
        group: "nodes",
        data: { id: "obs:" + id, step: id, label: label, w: Math.min(size.w, 170), h: size.h, shape: "round-rectangle" },
        classes: "obs " + (free.has(id) ? "obs-free" : "obs-paired"),
        position: { x: bb.x1 + (i % perRow) * gap + 85, y: bb.y2 + 80 + Math.floor(i / perRow) * 70 },
      });
    });
    for (const p of t.pairs) {
      const target = this.shownAs.get(p.expected);
      if (!target || !cy.getElementById("obs:" + p.observed).length) continue;
      cy.add({
        group: "edges",
        data: { id: "pair:" + p.expected, source: "obs:" + p.observed, target: target, pairExpected: p.expected, pairObserved: p.observed },
        classes: "pairing",
      });
    }
    this.root.setAttribute("data-teach-steps", String(order.length));
  };

  /* A tap while pairing: true when it was a pairing gesture (else the usual selection). */
  Overlay.prototype.teachTap = function (el) {
    const t = this.opts.teach;
    if (el.isEdge()) {
      if (!el.hasClass("pairing")) return false;
      const e = el.data("pairExpected");
      const o = el.data("pairObserved");
      this.markPick(el);
      this.teachConfirm("Unpair step " + o + " from obligation " + e + "?", "Unpair", () => t.unpair(e));
      return true;
    }
    if (el.hasClass("obs")) {
      const step = el.data("step");
      if (el.hasClass("obs-paired")) {
        this.teachPrompt("Step " + step + " is paired: click its pairing line to unpair it.");
        return true;
      }
      this.pick = step;
      this.markPick(el);
      this.teachPrompt("Step " + step + " chosen: now click the obligation it enacts.");
      return true;
    }
    if (!this.pick) return false;
    const id = this.drawnToPayload(el.id());
    if (!t.obligations.has(id)) {
      this.teachPrompt(id + " is not an active obligation of this query: choose another.");
      return true;
    }
    const step = this.pick;
    this.markPick(el, true);
    this.teachConfirm("Pair step " + step + " with obligation " + id + "?", "Pair", () => t.pair(step, id));
    return true;
  };

  Overlay.prototype.markPick = function (el, keep) {
    if (!keep) this.cy.elements(".pick").removeClass("pick");
    el.addClass("pick");
  };

  Overlay.prototype.teachPrompt = function (text) {
    const bar = this.teachBar;
    while (bar.firstChild) bar.removeChild(bar.firstChild);
    if (!this.teaching) {
      bar.appendChild(h("span", { text: "Pair steps draws the observed steps under the graph, to pair or unpair them by clicking (or use the reviewer corrections below)." }));
      return;
    }
    if (!text) {
      this.pick = null;
      if (this.cy) this.cy.elements(".pick").removeClass("pick");
    }
    bar.appendChild(
      h("span", {
        text: text || "Click a step drawn under the graph (orange: not paired), then the obligation it enacts; or click a blue pairing line to unpair it.",
      })
    );
  };

  Overlay.prototype.teachConfirm = function (question, verb, submit) {
    const bar = this.teachBar;
    while (bar.firstChild) bar.removeChild(bar.firstChild);
    const ok = h("button", {
      type: "button",
      class: "ce-btn ce-btn--primary",
      "data-testid": "teach-confirm",
      onclick: () => {
        ok.disabled = true;
        submit();
      },
      text: verb,
    });
    bar.appendChild(h("span", { text: question + " " }));
    bar.appendChild(ok);
    bar.appendChild(h("button", { type: "button", class: "ce-btn", onclick: () => this.teachPrompt(), text: "Cancel" }));
    ok.focus();
  };

  Overlay.prototype.destroy = function () {
    if (this.resizeObserver) this.resizeObserver.disconnect();
    if (this.cy) this.cy.destroy();
    while (this.root.firstChild) this.root.removeChild(this.root.firstChild);
    this.root.classList.remove("ce-ov");
  };

  // ------------------------------------------------------------------ entry points
  function mount(root, payload, options) {
    if (!root) throw new Error("ContractEvalOverlay.mount: no root element");
    if (!payload || payload.format !== "contracteval.overlay/v1") {
      throw new Error("ContractEvalOverlay.mount: expected a contracteval.overlay/v1 payload");
    }
    if (!global.cytoscape) throw new Error("ContractEvalOverlay: load static/vendor/cytoscape.min.js first");
    if (global.cytoscapeDagre && !global.cytoscape("layout", "dagre")) {
      // cytoscape-dagre registers itself when it finds a global cytoscape; else do it here
      global.cytoscape.use(global.cytoscapeDagre);
    }
    return new Overlay(root, payload, options);
  }

  /* The views of the page's overlays (one entry each). A long payload is fetched from
   * data-overlay-url: its view joins the list when it arrives. */
  function mountAll(doc) {
    const out = [];
    for (const el of (doc || document).querySelectorAll("[data-contracteval-overlay]")) {
      const url = el.getAttribute("data-overlay-url");
      const src = document.getElementById(el.getAttribute("data-contracteval-overlay"));
      if (url) {
        if (el.hasAttribute("data-overlay-loading")) continue;
        el.setAttribute("data-overlay-loading", "");
        fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
          .then((r) => (r.ok ? r.json() : Promise.reject(new Error("overlay: " + r.status))))
          .then((payload) => out.push(mountFrom(el, payload)))
          .catch((err) => console.error(err))
          .finally(() => el.removeAttribute("data-overlay-loading"));
      } else if (src) {
        out.push(mountFrom(el, JSON.parse(src.textContent)));
      }
    }
    return out;
  }

  function mountFrom(el, payload) {
    const teachId = el.getAttribute("data-teach");
    const teach = teachId ? readTeach(document.getElementById(teachId)) : null;
    const opts = teach ? { teach } : {};
    // The page carries a long trace once: in its <pre>, whose text the payload left out;
    // a longer one in parts, of which the <pre> holds those loaded so far.
    const traceId = el.getAttribute("data-trace-text");
    const pre = traceId ? document.getElementById(traceId) : null;
    if (pre && payload.trace && payload.trace.text == null) {
      payload.trace.text = partsText(pre);
      if (pre.querySelector("a.trace-more")) opts.traceParts = traceParts(pre);
    }
    return mount(el, payload, opts);
  }

  function partsText(pre) {
    const parts = pre.querySelectorAll(".trace-part");
    return parts.length ? Array.from(parts, (p) => p.textContent).join("") : pre.textContent;
  }

  /* The parts of a long trace in the page's <pre>: list() of the texts of those loaded, done(), and next(), a
   * promise of the next part (true once it is in the <pre>, false if it failed), fetched
   * by its "trace-more" link's own htmx request (one at a time: hx-sync drop). */
  function traceParts(pre) {
    let pending = null;
    const next = () => {
      const more = pre.querySelector("a.trace-more");
      if (!more) return Promise.resolve(false);
      return new Promise((resolve) => {
        const done = (ok) => {
          watch.disconnect();
          document.body.removeEventListener("htmx:responseError", failed);
          document.body.removeEventListener("htmx:sendError", failed);
          resolve(ok);
        };
        const watch = new MutationObserver(() => {
          if (!more.isConnected) done(true);
        });
        const failed = (ev) => {
          if (ev.detail && ev.detail.elt === more) done(false);
        };
        watch.observe(pre, { childList: true, subtree: true });
        document.body.addEventListener("htmx:responseError", failed);
        document.body.addEventListener("htmx:sendError", failed);
        global.htmx.process(more); // a link just swapped in may not be wired up yet
        global.htmx.trigger(more, "trace-more");
      });
    };
    return {
      list: () => Array.from(pre.querySelectorAll(".trace-part"), (p) => p.textContent),
      done: () => !pre.querySelector("a.trace-more"),
      next: () => pending || (pending = next().finally(() => (pending = null))),
    };
  }

  global.ContractEvalOverlay = { mount, mountAll, STATE_COLORS, version: 1 };
  if (typeof document !== "undefined") {
    const auto = () => {
      if (document.querySelector("[data-contracteval-overlay]")) global.ContractEvalOverlay.views = mountAll(document);
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", auto);
    else auto();
    // A correction re-renders the run's reading in place: mount the graph it brings.
    document.addEventListener("htmx:afterSettle", () => {
      const fresh = Array.from(document.querySelectorAll("[data-contracteval-overlay]")).some(
        (el) => !el.hasChildNodes() && !el.hasAttribute("data-overlay-loading")
      );
      // after a paint: the reviewer reads the new headline while the graph is laid out
      const mount = () => (global.ContractEvalOverlay.views = mountAll(document));
      if (fresh) requestAnimationFrame(() => setTimeout(mount, 0));
    });
  }
})(typeof window !== "undefined" ? window : this);
