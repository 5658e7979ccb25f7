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
