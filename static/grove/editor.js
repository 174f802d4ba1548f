// The editor's limit (templates/notebooks/_editor.html): the note's characters — its
// title line and the text under it, trimmed, counted as the server counts them (code
// points) — against its kind's limit, as the reader types; the limit follows a change of
// kind. The limits come from the text's `data-limits` (notebooks.rules.content_limits),
// so nothing here knows a number. Without JavaScript the page states the limit and the
// fields' maxlength holds it.
"use strict";

(() => {
  const number = new Intl.NumberFormat("en");

  function count(form) {
    const text = form.querySelector("textarea[data-limits]");
    const counter = form.querySelector("[data-counter]");
    if (!text || !counter) return;
    const limits = JSON.parse(text.dataset.limits);
    const kind = form.querySelector("select[name=kind]");
    const limit = (kind && limits[kind.value]) || Math.max(...Object.values(limits));
    const title = form.querySelector("input[name=title]");
    const head = title ? title.value : "";
    const used = Array.from((head ? `${head}\n${text.value}` : text.value).trim()).length;
    // maxlength counts UTF-16 units, never fewer than code points: it can only be stricter.
    if (title) title.maxLength = limit;
    text.maxLength = Math.max(0, limit - (head ? head.length + 1 : 0));
    const over = used > limit;
    counter.textContent = `${number.format(used)} of ${number.format(limit)} characters`
      + (over ? ` — ${number.format(used - limit)} over the limit` : "");
    counter.classList.toggle("over", over);
  }

  function editorOf(event) {
    return event.target.closest && event.target.closest("form[data-editor]");
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("form[data-editor]").forEach(count);
  });
  for (const type of ["input", "change"]) {
    document.addEventListener(type, (event) => {
      const form = editorOf(event);
      if (form) count(form);
    });
  }
  // A draft put back from this browser's storage is not typed: count it too.
  document.addEventListener("click", (event) => {
    const form = editorOf(event);
    if (form && event.target.closest("[data-draft]")) setTimeout(() => count(form));
  });
})();
