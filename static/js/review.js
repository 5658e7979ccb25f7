/* Run page: failure links and trace highlights select their place in the overlay
 * (static/js/overlay.js, mounted declaratively from the page's json_script payload). */
(function () {
  "use strict";
  function view() {
    const o = window.ContractEvalOverlay;
    return o && o.views && o.views[0];
  }
  document.addEventListener("click", function (ev) {
    const link = ev.target.closest("a.failure-link[data-failure]");
    if (link) {
      const v = view();
      if (!v) return; // no overlay: the href still jumps to the section
      ev.preventDefault();
      document.getElementById("overlay").scrollIntoView({ behavior: "smooth", block: "start" });
      v.select("failure", link.getAttribute("data-failure"));
      return;
    }
    const mark = ev.target.closest(".trace mark[data-o]");
    if (mark) {
      document.querySelectorAll(".trace mark.is-sel").forEach((m) => m.classList.remove("is-sel"));
      const id = mark.getAttribute("data-o").split(" ")[0];
      document.querySelectorAll(".trace mark[data-o]").forEach((m) => {
        if (m.getAttribute("data-o").split(" ").includes(id)) m.classList.add("is-sel");
      });
      const v = view();
      if (v) {
        document.getElementById("overlay").scrollIntoView({ behavior: "smooth", block: "start" });
        v.select("observed", id);
      }
    }
  });
})();

/* Run page keys: a (agree) and d (disagree) pick the verdict and put the cursor in the
 * note; n opens the next unreviewed run. A refused verdict comes back beside the form
 * (htmx) and takes the focus. */
(function () {
  "use strict";
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.closest && ev.target.closest("input, textarea, select, [contenteditable]")) return;
    const form = document.querySelector("[data-testid=verdict-form]");
    if (!form) return;
    const pick = { a: "yes", d: "no" }[ev.key];
    if (pick) {
      const radio = form.querySelector("input[name=agrees][value=" + pick + "]");
      if (radio) radio.checked = true;
      const note = form.querySelector("textarea[name=note]");
      if (note) note.focus();
      ev.preventDefault();
    } else if (ev.key === "n") {
      const next = document.querySelector("[data-testid=next-unreviewed]");
      if (next) { next.click(); ev.preventDefault(); }
    }
  });
  document.body.addEventListener("htmx:afterSwap", function () {
    const err = document.getElementById("verdict-error");
    if (err) err.focus();
  });
})();
