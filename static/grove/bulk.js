// The library's bulk bar (templates/notebooks/_bulk.html, notebooks/views/bulk.py).
// Without this script the rows' boxes and the bar are a plain form (the stylesheet shows
// the bar once a box is ticked). With it:
// * the bar counts the ticked notes ("3 selected") and offers Select all and Clear;
// * Shift+click on a box ticks (or unticks) every box between it and the last one clicked;
// * "x" ticks or unticks the note selected with j/k, Shift+J / Shift+K tick it and go on
//   ticking the next (previous) ones, Esc unticks them all;
// * a row dragged onto a notebook in the sidebar (or Personal) is moved there — with the
//   other ticked rows when it is ticked itself — by the same form's Move: one post, and
//   the library comes back with the message and its Undo.
// Loaded from a file: the CSP allows no inline script.
"use strict";

(() => {
  const ROWS = "ol[data-keynav] > li.note";
  let anchor = null;  // the box clicked last: where a Shift+click range starts
  let dragged = null;  // the boxes of the rows being dragged
  let target = null;  // the sidebar link under them

  const bar = () => document.getElementById("bulk");
  const boxes = () => Array.from(document.querySelectorAll(`${ROWS} > input.pick`));

  function update() {
    const form = bar();
    if (!form) return;
    const all = boxes();
    const count = all.filter((box) => box.checked).length;
    const max = Number(form.dataset.bulkMax) || 100;
    form.querySelector("[data-bulk-count]").textContent = `${count} selected`;
    form.querySelector("[data-bulk=all]").hidden = count === all.length;
    form.querySelector("[data-bulk=clear]").hidden = count === 0;
    form.querySelector("[data-bulk-limit]").hidden = count <= max;
    form.querySelectorAll("button[type=submit]").forEach((button) => {
      button.disabled = count === 0 || count > max;
    });
    all.forEach((box) => {
      const row = box.closest("li");
      row.classList.toggle("picked", box.checked);
      row.draggable = true;
    });
  }

  function tick(box, on) {
    if (box) box.checked = on;
  }

  // A fresh operation id when the page comes back from the back/forward cache: the one
  // it was served with may have been used by the batch that led away from it.
  function operationId() {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`
      + hex.slice(20);
  }

  document.addEventListener("DOMContentLoaded", update);
  document.addEventListener("htmx:afterSettle", update);  // a new search, the next page
  window.addEventListener("pageshow", (event) => {
    const form = bar();
    if (event.persisted && form) form.elements.operation_id.value = operationId();
    update();
  });
  document.addEventListener("change", (event) => {
    if (event.target.matches && event.target.matches(`${ROWS} > input.pick`)) update();
  });

  document.addEventListener("click", (event) => {
    const control = event.target.closest && event.target.closest("#bulk [data-bulk]");
    if (control) {
      boxes().forEach((box) => tick(box, control.dataset.bulk === "all"));
      update();
      return;
    }
    const box = event.target.closest && event.target.closest(`${ROWS} > input.pick`);
    if (!box) return;
    const all = boxes();
    if (event.shiftKey && anchor && anchor !== box && all.includes(anchor)) {
      const [from, to] = [all.indexOf(anchor), all.indexOf(box)].sort((a, b) => a - b);
      all.slice(from, to + 1).forEach((each) => tick(each, box.checked));
    }
    anchor = box;
    update();
  });

  // A move needs a notebook, a tag a tag: say so at the field instead of posting.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.id !== "bulk") return;
    const action = event.submitter ? event.submitter.value : "";
    const field = action === "move" ? form.elements.destination
      : (action === "tag" || action === "untag") ? form.elements.tag : null;
    if (!field || field.value.trim()) return;
    event.preventDefault();
    field.setCustomValidity(action === "move" ? "Pick the notebook to move them to."
      : "Type the tag to add or remove.");
    field.reportValidity();
    field.addEventListener("input", () => field.setCustomValidity(""), { once: true });
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const typing = event.target.closest && event.target.closest(
      "input:not([type=checkbox]), textarea, select, [contenteditable]");
    if (typing || document.querySelector("dialog[open]") || !bar()) return;
    const rows = Array.from(document.querySelectorAll(ROWS));
    const current = rows.findIndex((row) => row.classList.contains("selected")
      || row.contains(document.activeElement));
    const box = (index) => rows[index] && rows[index].querySelector("input.pick");
    if (event.key === "x" && !event.shiftKey) {
      if (current < 0) return;
      event.preventDefault();
      anchor = box(current);
      tick(anchor, !anchor.checked);
    } else if ((event.key === "J" || event.key === "K") && event.shiftKey) {
      if (!rows.length) return;
      event.preventDefault();
      const next = current < 0 ? 0 : Math.min(Math.max(current + (event.key === "J" ? 1 : -1),
        0), rows.length - 1);
      tick(box(current), true);
      tick(box(next), true);
      anchor = box(next);
      window.groveList.select(rows, next);  // grove.js: j/k's own highlight and focus
    } else if (event.key === "Escape" && boxes().some((each) => each.checked)) {
      event.preventDefault();
      boxes().forEach((each) => tick(each, false));
    } else {
      return;
    }
    update();
  });

  // Drag and drop onto the sidebar: its notebooks (li[data-notebook]) and Personal.
  function dropOn(element) {
    const link = element && element.closest && element.closest(
      ".sidebar li[data-notebook] a.notebook, .sidebar a[data-drop]");
    if (!link) return null;
    return { link, place: link.dataset.drop || link.closest("li[data-notebook]").dataset.notebook };
  }

  function highlight(link) {
    if (target === link) return;
    if (target) target.classList.remove("drop-target");
    target = link;
    if (target) target.classList.add("drop-target");
  }

  document.addEventListener("dragstart", (event) => {
    const row = event.target.closest && event.target.closest(ROWS);
    if (!row || !bar()) return;
    const own = row.querySelector("input.pick");
    dragged = own.checked ? boxes().filter((box) => box.checked) : [own];
    dragged.forEach((box) => box.closest("li").classList.add("dragging"));
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", dragged.length === 1
      ? row.querySelector("a.title").textContent : `${dragged.length} notes`);
  });

  document.addEventListener("dragover", (event) => {
    if (!dragged) return;
    const drop = dropOn(event.target);
    highlight(drop && drop.link);
    if (!drop) return;
    event.preventDefault();  // this is a place to drop on
    event.dataTransfer.dropEffect = "move";
  });

  document.addEventListener("dragleave", (event) => {
    if (dragged && target && !target.contains(event.relatedTarget)) highlight(null);
  });

  document.addEventListener("drop", (event) => {
    const drop = dragged && dropOn(event.target);
    if (!drop) return;
    event.preventDefault();
    const form = bar();
    const moving = dragged;
    boxes().forEach((box) => tick(box, moving.includes(box)));
    update();
    const move = form.querySelector("button[name=action][value=move]");
    if (move.disabled) return;  // more than a batch: the bar says so
    form.elements.destination.value = drop.place;
    form.requestSubmit(move);
  });

  document.addEventListener("dragend", () => {
    highlight(null);
    document.querySelectorAll(`${ROWS}.dragging`).forEach((row) => {
      row.classList.remove("dragging");
    });
    dragged = null;
  });
})();
