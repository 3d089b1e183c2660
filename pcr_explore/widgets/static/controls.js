// The explorers' controls, tables and pictures: native elements with accessible names,
// the same in every explorer and on the kernel-free pages.
import { el, svg } from "./chart.js";

// Notebook 7 matches its shortcuts (an arrow key moves between cells) against the focused
// element itself, before Lumino looks further up for this mark: every control carries it.
const SUPPRESS = {"data-lm-suppress-shortcuts": "true"};

// The element an explorer draws into: the notebook leaves the keys pressed in it alone.
export function explorerRoot(host, className) {
  host.replaceChildren();
  host.dataset.lmSuppressShortcuts = "true";
  const root = el("div", {class: `pcr-explorer ${className}`}, host);
  root.addEventListener("keydown", ev => ev.stopPropagation());
  return root;
}

// A button named by its text (an icon's name in `extra["aria-label"]`), `tip` on hover.
export function button(parent, text, tip, extra = {}) {
  return el("button", {type: "button", class: "pcr-button", title: tip, ...SUPPRESS, ...extra},
            parent, text);
}

// A labelled native slider, with its value shown beside it (`out`).
export function slider(parent, label, min, max, step, wide = false) {
  const wrap = el("label", {class: wide ? "pcr-slider pcr-wide" : "pcr-slider"}, parent);
  el("span", {class: "pcr-label"}, wrap, label);
  const input = el("input", {type: "range", min, max, step, ...SUPPRESS}, wrap);
  const out = el("output", {class: "pcr-value", "aria-hidden": "true"}, wrap);
  return {wrap, input, out};
}

// A labelled list to pick from; fill it with `fillPicker`.
export function picker(parent, label) {
  const wrap = el("label", {class: "pcr-slider"}, parent);
  el("span", {class: "pcr-label"}, wrap, label);
  return el("select", {...SUPPRESS}, wrap);
}

// Put `options` ([[value, text], ...]) into a list (only when they changed) and pick `value`.
export function fillPicker(select, options, value) {
  const now = options.map(o => `${o[0]}\u0000${o[1]}`).join("\u0001");
  if (select.dataset.options !== now) {
    select.replaceChildren();
    for (const [v, text] of options) el("option", {value: String(v)}, select, String(text));
    select.dataset.options = now;
  }
  select.value = String(value);
}

// Buttons of which one is pressed: options [[value, text, tip], ...].
export function toggleGroup(parent, label, options, onPick) {
  const group = el("div", {class: "pcr-toggles", role: "group", "aria-label": label}, parent);
  const buttons = options.map(([value, text, tip]) => {
    const b = button(group, text, tip || text, {"aria-pressed": "false"});
    b.addEventListener("click", () => onPick(value));
    return [value, b];
  });
  return {group, show(now) {
    for (const [v, b] of buttons) b.setAttribute("aria-pressed", String(v === now));
  }};
}

// Label and value rows into a table (values are the kernel's own text, escaped there).
export function table(parent, rows) {
  parent.replaceChildren();
  for (const [k, v] of rows || []) {
    const tr = el("tr", {}, parent);
    el("th", {scope: "row"}, tr, k);
    el("b", {}, el("td", {}, tr)).innerHTML = v;
  }
}

// A picture from the model: a data: URL (a page) or JPEG bytes (a kernel), as a URL an
// <img> shows; object URLs made are pushed to `made`, for the caller to revoke.
export function pictureUrl(value, made) {
  if (typeof value === "string") return value || null;
  if (!value || !value.byteLength) return null;
  const bytes = value instanceof ArrayBuffer ? new Uint8Array(value)
    : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  const url = URL.createObjectURL(new Blob([bytes], {type: "image/jpeg"}));
  made.push(url);
  return url;
}

// Lists of pictures by key, their object URLs revoked when replaced.
export class Pictures {
  constructor() { this.made = {}; this.urls = {}; }
  set(key, values) {
    for (const u of (this.made[key] || []).splice(0)) URL.revokeObjectURL(u);
    this.made[key] = [];
    this.urls[key] = (values || []).map(v => pictureUrl(v, this.made[key]));
  }
  get(key, i) { return (this.urls[key] || [])[i] || null; }
  clear() { for (const key of Object.keys(this.made)) this.set(key, []); }
}

// The zig-zag grids of what a scan sends: cells and column heads as measured in the kernel
// (pcr_explore.plots._scan_grid.scan_grid_data).
export function grids(parent, grid, title) {
  parent.replaceChildren();
  const cell = 20, cells = grid.cells || {}, heads = grid.heads || {};
  const n = (cells.x || []).length;
  if (!n) return;
  const width = Math.max(...cells.x) * cell + cell + 4, top = 2 * cell + 8;
  const root = svg("svg", {viewBox: `0 0 ${width} ${top + 8 * cell + 8}`, role: "img",
                           "aria-label": title, class: "pcr-grids"}, parent);
  for (let i = 0; i < n; i++) {
    const x0 = cells.x[i] * cell, y0 = top + (7 - cells.y[i]) * cell;
    svg("rect", {x: x0, y: y0, width: cell - 2, height: cell - 2, fill: cells.fill[i],
                 stroke: cells.line[i], "stroke-width": cells.width[i]}, root);
    if (cells.text[i]) {
      svg("text", {x: x0 + cell / 2 - 1, y: y0 + cell / 2 + 3, "text-anchor": "middle",
                   fill: cells.ink[i], class: "pcr-grid-text"}, root, cells.text[i]);
    }
  }
  for (let i = 0; i < (heads.x || []).length; i++) {
    svg("text", {x: (heads.x[i] + 0.5) * cell, y: heads.y[i] > 9 ? 12 : cell + 12,
                 fill: heads.color[i], class: "pcr-grid-head"}, root, heads.text[i]);
  }
}
