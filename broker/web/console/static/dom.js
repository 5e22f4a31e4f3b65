// Building DOM nodes without innerHTML: every text is a text node, so names and payloads from the
// broker can never become markup.

/** h("a", {href: "#/", class: "x", onclick: fn}, "text", child, [more]) -> an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** A table: columns [{label, num?, sort?}], rows of cells (nodes or text, or {cells, class}). */
export function table(columns, rows, empty = "Nothing here yet.") {
  const head = h("tr", {}, columns.map((c) => h("th", {class: c.num ? "num" : null, scope: "col"},
    c.header || c.label)));
  const body = rows.length ? rows.map((row) => {
    const cells = Array.isArray(row) ? row : row.cells;
    return h("tr", {class: row.class || null}, cells.map((cell, i) =>
      h("td", {class: columns[i] && columns[i].num ? "num" : null}, cell)));
  }) : [h("tr", {}, h("td", {class: "empty", colspan: columns.length}, empty))];
  return h("div", {class: "panel"}, h("table", {}, h("thead", {}, head), h("tbody", {}, body)));
}

export function card(label, value) {
  return h("div", {class: "card"}, h("div", {class: "label"}, label), h("div", {class: "value"}, value));
}

/** Replace el's children with the given nodes. */
export function fill(el, ...children) {
  el.replaceChildren();
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined && child !== false) el.append(child);
  }
  return el;
}

/** A short message at the corner of the screen (errors stay longer). */
export function toast(text, kind = "") {
  const el = h("div", {class: `toast ${kind}`}, text);
  document.getElementById("toasts").append(el);
  setTimeout(() => el.remove(), kind === "error" ? 8000 : 4000);
}

/** fill, keeping the keyboard focus on the element with the same data-focus-key when there was one
 *  (a view redraws every refresh; a keyboard user must not lose their place). */
export function refill(el, ...children) {
  const key = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.focusKey : null;
  fill(el, ...children);
  if (key) {
    const again = el.querySelector(`[data-focus-key="${CSS.escape(key)}"]`);
    if (again) again.focus();
  }
  return el;
}
