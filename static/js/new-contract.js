// New contract: suggest the contract id from the title until the user types one.
(() => {
  const title = document.getElementById("id_title");
  const key = document.getElementById("id_key");
  if (!title || !key) return;
  let touched = key.value !== "";
  const slug = (s) =>
    s
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9\s_-]/g, "")
      .trim()
      .replace(/[-\s]+/g, "-")
      .slice(0, 128)
      .replace(/^[-_]+|[-_]+$/g, "");
  key.placeholder = key.placeholder || "suggested from the title";
  key.addEventListener("input", () => {
    touched = key.value !== "";
  });
  const suggest = () => {
    if (!touched) key.value = slug(title.value);
  };
  title.addEventListener("input", suggest);
  // A fast typist (or a slow network) can fill the title before this deferred script runs.
  suggest();
})();
