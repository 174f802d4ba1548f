// Grove's only script (besides htmx). Everything works without it; it adds keyboard
// shortcuts, copy buttons and the browser's time zone on "What your agents read". Loaded from a file: the CSP allows no inline script.
"use strict";

// Copy buttons: <button data-copy="#selector"> copies that input's value.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.querySelector(button.dataset.copy);
  if (!field) return;
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    field.select();
    document.execCommand("copy");
  }
  button.textContent = "Copied";
});

// Keyboard: "/" search, "j"/"k" move through the notes list, "enter" opens,
// "e" edits (the selected note, or the note on its page), "n" new note.
function typing(target) {
  return target.closest("input, textarea, select, [contenteditable]") !== null;
}

let wanted = null;  // where "j" is going while the next page of notes loads

function notes() {
  return Array.from(document.querySelectorAll("ol[data-keynav] > li.note"));
}

function select(items, index) {
  items.forEach((item) => item.classList.remove("selected"));
  const item = items[index];
  if (!item) return;
  item.classList.add("selected");
  item.scrollIntoView({ block: "nearest" });
  item.querySelector("a.title").focus({ preventScroll: true });
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
  const items = notes();
  const current = items.findIndex((item) => item.classList.contains("selected")
    || item.contains(document.activeElement));
  switch (event.key) {
    case "/": {
      const search = document.getElementById("q");
      if (!search) return;
      event.preventDefault();
      search.focus();
      search.select();
      break;
    }
    case "j": {
      if (!items.length) return;
      event.preventDefault();
      const next = (wanted === null ? current : wanted) + 1;
      const more = document.querySelector("ol[data-keynav] > li.more a");
      if (next > items.length - 1 && more) {
        // Past the last note shown: load the next page (as scrolling would), and go
        // on to where the presses meanwhile lead once it is there.
        if (wanted === null) {
          document.body.addEventListener("htmx:afterSettle", () => {
            const list = notes();
            select(list, Math.min(wanted, list.length - 1));
            wanted = null;
          }, { once: true });
          if (!more.classList.contains("htmx-request")) more.click();
        }
        wanted = next;
        return;
      }
      select(items, Math.min(next, items.length - 1));
      break;
    }
    case "k":
      if (!items.length) return;
      event.preventDefault();
      select(items, Math.max(current - 1, 0));
      break;
    case "Enter":
      if (current < 0 || document.activeElement.closest("li.note")) return;
      event.preventDefault();
      items[current].querySelector("a.title").click();
      break;
    case "e": {
      const editor = document.querySelector("#edit textarea");
      if (editor) {
        event.preventDefault();
        editor.focus();
        editor.scrollIntoView({ block: "center" });
      } else if (current >= 0) {
        event.preventDefault();
        window.location.href = items[current].querySelector("a.title").href + "#edit";
      }
      break;
    }
    case "?": {
      const sheet = document.getElementById("shortcuts");
      if (!sheet || sheet.open) return;
      event.preventDefault();
      sheet.showModal();
      break;
    }
    case "n": {
      const link = document.querySelector("a.new-note");
      if (!link) return;
      event.preventDefault();
      window.location.href = link.href;
      break;
    }
    default:
  }
});

// The sidebar's notebook tree: a parent folded away stays folded on the next page (this
// browser remembers which, by notebook id) — unless the notebook shown is inside it.
const FOLDED = "grove.folded-notebooks";

function foldedNotebooks() {
  try {
    const ids = JSON.parse(localStorage.getItem(FOLDED) || "[]");
    return new Set(Array.isArray(ids) ? ids : []);
  } catch {
    return new Set();
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const folded = foldedNotebooks();
  document.querySelectorAll(".sidebar details.branch[data-notebook]").forEach((branch) => {
    if (folded.has(branch.dataset.notebook)
        && !branch.querySelector(":scope > ul [aria-current='page']")) branch.open = false;
  });
});

// "toggle" does not bubble: listen while it goes down to the <details>.
document.addEventListener("toggle", (event) => {
  const branch = event.target;
  if (!(branch instanceof HTMLDetailsElement) || !branch.matches(".sidebar details.branch")) {
    return;
  }
  const folded = foldedNotebooks();
  if (branch.open) folded.delete(branch.dataset.notebook);
  else folded.add(branch.dataset.notebook);
  try {
    localStorage.setItem(FOLDED, JSON.stringify(Array.from(folded)));
  } catch {
    // Storage refused (a private window): folding still works on this page.
  }
}, true);

// Grant pickers (keys, approvals, grants): a notebook's grant does not cover the
// notebooks inside it — the picker says so. The button beside a parent ticks it and
// every notebook inside; without this script it stays hidden.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-notebook-tree] [data-tick-children]").forEach((button) => {
    button.hidden = false;
  });
});

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-notebook-tree] [data-tick-children]");
  if (!button) return;
  button.closest("li").querySelectorAll("input[type=checkbox]").forEach((box) => {
    box.checked = true;
  });
});

// Ask: Enter sends the question, Shift+Enter starts a new line.
document.addEventListener("keydown", (event) => {
  const box = event.target.closest && event.target.closest(".ask-form textarea");
  if (!box || event.key !== "Enter" || event.shiftKey || event.isComposing) return;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  event.preventDefault();
  if (box.value.trim()) box.form.requestSubmit();
});

// A #edit link on the note page focuses the editor.
document.addEventListener("DOMContentLoaded", () => {
  if (window.location.hash === "#edit") {
    const editor = document.querySelector("#edit textarea");
    if (editor) editor.focus();
  }
});

// "What your agents read": a time zone nobody chose yet (<input data-browser-zone>, UTC
// by default) becomes the browser's, and the brief is shown again in it. Without this
// script the brief stays in UTC, which its header names.
document.addEventListener("DOMContentLoaded", () => {
  const field = document.querySelector("input[data-browser-zone]");
  if (!field) return;
  let zone = "";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch {
    return;
  }
  field.removeAttribute("data-browser-zone");
  if (!zone || zone === field.value) return;
  field.value = zone;
  field.form.requestSubmit();
});
