// Grove's main script (besides htmx; the library's bulk bar is bulk.js). Everything
// works without it; it adds keyboard shortcuts, copy buttons, the note page's panels, the
// editor's keyboard save, unsaved-changes warning and drafts, and the browser's time zone
// on "What your agents read" and Settings. Loaded from a file: the CSP allows no inline
// script.
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

// Menus that open in place (<details data-menu>: the account menu, the library's
// filters on a phone): Escape closes the open one (the focus goes back to its summary), a
// click anywhere outside it closes it, and opening one closes the others.
function closeMenus(except = null) {
  document.querySelectorAll("details[data-menu][open]").forEach((menu) => {
    if (menu !== except) menu.open = false;
  });
}

document.addEventListener("click", (event) => {
  closeMenus(event.target.closest && event.target.closest("details[data-menu]"));
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  const menu = event.target.closest && event.target.closest("details[data-menu][open]")
    || document.querySelector("details[data-menu][open]");
  if (!menu) return;
  event.stopImmediatePropagation();  // this Escape closed a menu, nothing more
  menu.open = false;
  menu.querySelector("summary").focus();
});

// The library's filters: on a phone they fold away behind a button (the stylesheet hides
// a folded form's fields only on narrow screens), so the first notes are in view.
document.addEventListener("DOMContentLoaded", () => {
  const toggle = document.querySelector("[data-filters-toggle]");
  const form = toggle && document.getElementById(toggle.getAttribute("aria-controls"));
  if (!form) return;
  toggle.hidden = false;
  form.classList.add("folded");
  toggle.addEventListener("click", () => {
    const open = form.classList.toggle("folded") === false;
    toggle.setAttribute("aria-expanded", String(open));
    if (open) {
      const first = form.querySelector("select, input:not([type=hidden])");
      if (first) first.focus();
    }
  });
});

// Keyboard: "/" search, "j"/"k" move through the notes list, "enter" opens,
// "e" edits (the selected note, or the note on its page), "n" new note.
function typing(target) {
  // A row's box (bulk.js) keeps the focus after a click: the keys still work there.
  return target.closest("input:not([type=checkbox]), textarea, select, [contenteditable]")
    !== null;
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

window.groveList = { notes, select };  // bulk.js: Shift+J/K move as j/k do

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
        openPanel("edit");
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


// The note page's panels (Edit, Move, History, Share, Delete). Without this script a
// toolbar link opens its panel by :target; with it the links toggle their panel (the
// address keeps its #name, so a link to #edit still opens the editor), and an opened
// panel takes the focus — the editor its text.
const PANELS = ".note-panels > .panel";

function focusIn(panel) {
  const field = panel.querySelector(panel.id === "edit" ? "textarea"
    : "select, input:not([type=hidden]), textarea, button, a[href]");
  if (field) field.focus({ preventScroll: true });
}

function openPanel(id, { focus = true } = {}) {
  const panel = document.getElementById(id);
  if (!panel || !panel.matches(PANELS)) return false;
  document.querySelectorAll(PANELS).forEach((p) => p.classList.toggle("open", p === panel));
  document.querySelectorAll("a[data-panel]").forEach((link) => {
    link.setAttribute("aria-expanded", String(link.dataset.panel === id));
  });
  if (window.location.hash !== `#${id}`) history.replaceState(history.state, "", `#${id}`);
  if (focus) focusIn(panel);
  panel.scrollIntoView({ block: "nearest" });
  return true;
}

// Arriving at /notes/…#edit the browser focuses the panel itself (tabindex=-1), maybe
// after this script ran: pass the focus on to its first field (not when a click in the
// panel focused it: that would move the focus away from where the pointer is).
let pointing = false;
document.addEventListener("pointerdown", () => { pointing = true; }, true);
document.addEventListener("pointerup", () => { setTimeout(() => { pointing = false; }); }, true);
document.addEventListener("focusin", (event) => {
  if (!pointing && event.target.matches && event.target.matches(PANELS)) focusIn(event.target);
});

function closePanels() {
  document.querySelectorAll(PANELS).forEach((p) => p.classList.remove("open"));
  document.querySelectorAll("a[data-panel]").forEach((link) => {
    link.setAttribute("aria-expanded", "false");
  });
  if (window.location.hash) {
    history.replaceState(history.state, "", window.location.pathname + window.location.search);
  }
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-panel], a[data-close-panel]");
  if (!link || !document.querySelector(".note-panels.enhanced")) return;
  event.preventDefault();
  const panel = document.getElementById(link.dataset.panel || "");
  if (!panel || panel.classList.contains("open")) closePanels();
  else openPanel(link.dataset.panel);
});

window.addEventListener("hashchange", () => {
  const id = window.location.hash.slice(1);
  if (!openPanel(id) && id === "diff") openPanel("history", { focus: false });
});

document.addEventListener("DOMContentLoaded", () => {
  const panels = document.querySelector(".note-panels");
  if (!panels) return;
  panels.classList.add("enhanced");  // from now on .open alone shows a panel
  const id = window.location.hash.slice(1);
  const open = panels.querySelector(".panel.open");
  if (open) openPanel(open.id, { focus: open.id === "edit" });
  else if (!openPanel(id) && id === "diff") openPanel("history", { focus: false });
});

// The editor (the note page's Edit panel, the new-note page):
// * Ctrl/Cmd+S and Ctrl/Cmd+Enter save; Enter in the title line goes on to the text.
// * Leaving the page with unsaved changes asks first (not once the form is submitted).
// * What is typed is kept in this browser (localStorage, "grove:draft:<note>:<version>")
//   until it is saved, so a crash or a closed tab loses nothing: coming back offers
//   "Restore unsaved draft" or "Discard", and never fills the form by itself. A draft
//   made on an older version is restored with that version as its fence, so saving it
//   meets the ordinary conflict (the newer text shown, the draft kept) — nothing is
//   overwritten unseen. A save that arrived clears the note's drafts.
const DRAFTS = "grove:draft:";
const SAVING = "grove:saving";
let leaving = false;  // an editor form was submitted: no warning for that navigation

function editorForms() {
  return Array.from(document.querySelectorAll("form[data-editor]"));
}

function fenceOf(form) {
  return form.elements.expected_version ? Number(form.elements.expected_version.value) : 0;
}

function draftKey(form) {
  return `${DRAFTS}${form.dataset.draftNote}:${fenceOf(form)}`;
}

function changed(form) {
  return ["title", "content"].some((name) => {
    const field = form.elements[name];
    return field && field.value !== field.defaultValue;
  });
}

function unsaved(form) {
  return form.hasAttribute("data-unsaved") || changed(form);
}

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null;  // storage turned off: no drafts, everything else works
  }
}

function draftsOf(note) {
  const store = storage();
  if (!store) return [];
  const found = [];
  for (let i = 0; i < store.length; i += 1) {
    const key = store.key(i);
    if (!key || !key.startsWith(`${DRAFTS}${note}:`)) continue;
    try {
      found.push({ key, ...JSON.parse(store.getItem(key)) });
    } catch {
      store.removeItem(key);
    }
  }
  return found.sort((a, b) => b.at - a.at);
}

function forgetDrafts(note) {
  const store = storage();
  if (store) draftsOf(note).forEach((draft) => store.removeItem(draft.key));
}

function keepDraft(form) {
  const store = storage();
  if (!store) return;
  if (!unsaved(form)) {
    store.removeItem(draftKey(form));
    return;
  }
  const draft = { title: form.elements.title.value, content: form.elements.content.value,
    version: fenceOf(form), at: Date.now() };
  try {
    store.setItem(draftKey(form), JSON.stringify(draft));
  } catch {
    // full: the warning on leaving still protects the text
  }
}

function offerDraft(form) {
  if (form.hasAttribute("data-unsaved")) {
    keepDraft(form);  // a refused save shown again: the form holds the draft; keep it
    return;
  }
  const [draft] = draftsOf(form.dataset.draftNote);
  const offer = form.querySelector(".draft-offer");
  if (!draft || !offer) return;
  if (draft.title === form.elements.title.value
      && draft.content === form.elements.content.value) {
    forgetDrafts(form.dataset.draftNote);  // nothing the form does not hold already
    return;
  }
  const when = new Date(draft.at).toLocaleString();
  const older = draft.version && draft.version < fenceOf(form)
    ? ` It was made on v${draft.version}; the note is now at v${fenceOf(form)}, so saving it`
      + " shows you the newer text first." : "";
  offer.querySelector(".draft-offer-text").textContent =
    `This browser kept an unsaved draft of this note from ${when}.${older}`;
  offer.hidden = false;
  openPanel("edit", { focus: false });
  offer.querySelector("[data-draft=restore]").focus();
  offer.addEventListener("click", (event) => {
    const choice = event.target.closest("[data-draft]");
    if (!choice) return;
    offer.hidden = true;
    if (choice.dataset.draft === "discard") {
      forgetDrafts(form.dataset.draftNote);
      form.elements.content.focus();
      return;
    }
    form.elements.title.value = draft.title;
    form.elements.content.value = draft.content;
    if (draft.version && form.elements.expected_version) {
      form.elements.expected_version.value = String(draft.version);
    }
    form.elements.content.focus();
    // The preview follows (htmx listens for input), and the draft is kept again.
    form.elements.content.dispatchEvent(new Event("input", { bubbles: true }));
  });
}

// After a save: the page it led to says whether it arrived — the note's page at a newer
// version (or, for a new note, any note's page), not the editor shown again with an error.
function settleSave() {
  let saving = null;
  try {
    saving = JSON.parse(window.sessionStorage.getItem(SAVING) || "null");
    window.sessionStorage.removeItem(SAVING);
  } catch {
    return;
  }
  if (!saving) return;
  const refused = editorForms().some((form) => form.dataset.draftNote === saving.note
    && form.hasAttribute("data-unsaved"));
  const page = document.querySelector("article.note-page");
  if (refused || !page) return;
  if (saving.note === "new" || (page.dataset.note === saving.note
      && Number(page.dataset.version) > saving.version)) {
    forgetDrafts(saving.note);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  settleSave();
  editorForms().forEach((form) => {
    let timer = null;
    form.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => keepDraft(form), 400);
    });
    form.addEventListener("submit", () => {
      clearTimeout(timer);
      keepDraft(form);  // until the next page says the save arrived
      leaving = true;
      try {
        window.sessionStorage.setItem(SAVING, JSON.stringify(
          { note: form.dataset.draftNote, version: fenceOf(form) }));
      } catch {
        // no session storage: the draft stays until discarded
      }
    });
    offerDraft(form);
  });
});

window.addEventListener("beforeunload", (event) => {
  if (leaving || !editorForms().some(unsaved)) return;
  event.preventDefault();
  event.returnValue = "";  // older browsers need it set to ask
});

window.addEventListener("pageshow", () => {
  leaving = false;  // back from the page a submit went to (the back/forward cache)
});

document.addEventListener("keydown", (event) => {
  if (event.isComposing) return;
  const form = event.target.closest && event.target.closest("form[data-editor]");
  if ((event.ctrlKey || event.metaKey) && !event.altKey) {
    const key = event.key.toLowerCase();
    if (key !== "s" && key !== "enter") return;
    // Ctrl+S saves the editor that is open even from outside it; Ctrl+Enter only inside.
    const target = form || (key === "s"
      ? editorForms().find((f) => f.offsetParent !== null) : null);
    if (!target) return;
    event.preventDefault();
    target.requestSubmit();
    return;
  }
  if (form && event.key === "Enter" && !event.shiftKey && !event.altKey
      && event.target === form.elements.title) {
    event.preventDefault();  // not a submit: the text follows the title
    const text = form.elements.content;
    text.focus();
    text.setSelectionRange(0, 0);
  }
});

// Settings: "Use my browser's time zone" (<button data-browser-zone-for="field id">,
// hidden without this script) puts the browser's zone in the field and saves it: one
// click. Without the script the owner types the zone's name.
function browserZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch {
    return "";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const zone = browserZone();
  if (!zone) return;
  document.querySelectorAll("button[data-browser-zone-for]").forEach((button) => {
    button.textContent = `Use my browser's time zone (${zone})`;
    button.hidden = false;
  });
});

document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-browser-zone-for]");
  if (!button) return;
  const field = document.getElementById(button.dataset.browserZoneFor);
  const zone = browserZone();
  if (!field || !zone) return;
  field.value = zone;
  field.form.requestSubmit();
});

// Ingest upload: a folder chosen in <input type=file webkitdirectory data-paths-into="id">
// sends its files; browsers keep only each file's name in the upload, so the relative
// paths go along in the hidden field named by data-paths-into (JSON, in the same order).
// Without this script the files arrive without their folders.
document.addEventListener("change", (event) => {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || !input.dataset.pathsInto) return;
  const field = document.getElementById(input.dataset.pathsInto);
  if (field) {
    field.value = JSON.stringify(Array.from(input.files, (f) => f.webkitRelativePath || f.name));
  }
});
