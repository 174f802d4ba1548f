// Typing `[[` in the editor suggests notes by name (issue 38): after `[[` and a few
// letters, the notes whose title, alias or file name starts with them are listed under
// the text (GET data-titles?q=…, notebooks.views.editor.note_titles); ↓ and ↑ move, Enter
// or Tab puts the title in and closes the link, Escape leaves the text as typed. Without
// JavaScript a link is typed in full, as in any Markdown editor.
"use strict";

(() => {
  const OPEN = /\[\[([^[\]|#\n]{1,200})$/;
  let box = null;
  let area = null;
  let items = [];
  let active = -1;
  let asked = 0;
  let timer = null;

  function typed(text) {
    const found = OPEN.exec(text.value.slice(0, text.selectionStart));
    return found ? found[1] : null;
  }

  function close() {
    if (box) box.remove();
    if (area) {
      area.removeAttribute("aria-activedescendant");
      area.setAttribute("aria-expanded", "false");
    }
    box = null;
    items = [];
    active = -1;
  }

  function move(index) {
    active = (index + items.length) % items.length;
    box.querySelectorAll("li").forEach((li, n) => {
      li.setAttribute("aria-selected", n === active ? "true" : "false");
    });
    area.setAttribute("aria-activedescendant", `link-suggestion-${active}`);
  }

  function choose(index) {
    const item = items[index];
    const words = area && typed(area);
    if (!item || words === null) return close();
    const end = area.selectionStart;
    const start = end - words.length;
    const closed = area.value.slice(end).startsWith("]]");
    area.setRangeText(item.title + (closed ? "" : "]]"), start, end, "end");
    if (closed) area.selectionStart = area.selectionEnd = start + item.title.length + 2;
    close();
    area.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function draw(text, found) {
    close();
    area = text;
    items = found;
    if (!found.length) return;
    box = document.createElement("ul");
    box.id = "link-suggestions";
    box.className = "suggestions";
    box.setAttribute("role", "listbox");
    box.setAttribute("aria-label", "Notes to link to");
    found.forEach((item, index) => {
      const li = document.createElement("li");
      li.id = `link-suggestion-${index}`;
      li.setAttribute("role", "option");
      li.textContent = item.matched ? `${item.title} (${item.matched})` : item.title;
      li.addEventListener("mousedown", (event) => {
        event.preventDefault();
        choose(index);
      });
      box.appendChild(li);
    });
    text.insertAdjacentElement("afterend", box);
    text.setAttribute("aria-controls", box.id);
    text.setAttribute("aria-expanded", "true");
    move(0);
  }

  async function lookup(text) {
    const words = typed(text);
    const mine = ++asked;
    if (words === null || !words.trim()) return close();
    const response = await fetch(`${text.dataset.titles}?q=${encodeURIComponent(words)}`, {
      credentials: "same-origin", headers: { Accept: "application/json" } });
    if (mine !== asked || !response.ok) return;
    draw(text, (await response.json()).data);
  }

  document.addEventListener("input", (event) => {
    const text = event.target;
    if (!text.matches || !text.matches("textarea[data-titles]")) return;
    clearTimeout(timer);
    timer = setTimeout(() => lookup(text).catch(close), 120);
  });
  document.addEventListener("keydown", (event) => {
    if (!box || event.target !== area) return;
    const keys = {
      ArrowDown: () => move(active + 1), ArrowUp: () => move(active - 1),
      Enter: () => choose(active), Tab: () => choose(active), Escape: close,
    };
    if (!(event.key in keys)) return;
    event.preventDefault();
    event.stopPropagation();
    keys[event.key]();
  }, true);
  document.addEventListener("focusout", (event) => {
    if (event.target === area) setTimeout(close, 150);
  });
})();
