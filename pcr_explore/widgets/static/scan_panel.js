// ScanPanel's front end: an anywidget module. What the scan at one level adds to an image:
// the zig-zag grids of each component (drawn here as SVG from the cells measured in the
// kernel), the scan's readouts, the image at this level and the amplified picture of what
// the scan adds.
//
// The model holds every level's panel of the image shown (`panels`), so the level slider
// and the arrow keys show a level without asking the kernel; a new image is measured there.
import { el, svg } from "./chart.js";

// JPEG bytes from the kernel (or a data: URL) as a URL an <img> shows.
function pictureUrl(value, made) {
  if (typeof value === "string") return value || null;
  if (!value || !value.byteLength) return null;
  const bytes = value instanceof ArrayBuffer ? new Uint8Array(value)
    : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  const url = URL.createObjectURL(new Blob([bytes], {type: "image/jpeg"}));
  made.push(url);
  return url;
}

// A button named by its text, `tip` on hover.
function button(parent, text, tip, extra = {}) {
  return el("button", {type: "button", class: "pcr-button", title: tip, ...extra}, parent, text);
}

function table(parent, rows) {
  parent.replaceChildren();
  for (const [k, v] of rows || []) {
    const tr = el("tr", {}, parent);
    el("th", {scope: "row"}, tr, k);
    const td = el("td", {}, tr);
    el("b", {}, td).innerHTML = v;  // the kernel's own text, escaped there
  }
}

// The zig-zag grids of what the scan sends: cells and column heads as measured in the kernel.
// (The same drawing as ScanExplorer's panel.)
function grids(parent, grid, title) {
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

function build(host) {
  host.replaceChildren();
  host.dataset.lmSuppressShortcuts = "true";  // JupyterLab and Notebook 7 leave our keys alone
  const root = el("div", {class: "pcr-explorer pcr-step-panel"}, host);
  const row = el("div", {class: "pcr-row"}, root);
  const wrap = el("label", {class: "pcr-slider pcr-wide"}, row);
  el("span", {class: "pcr-label"}, wrap, "scan level");
  const level = el("input", {type: "range", min: 1, max: 1, step: 1}, wrap);
  const levelOut = el("output", {class: "pcr-value", "aria-hidden": "true"}, wrap);
  const pickWrap = el("label", {class: "pcr-slider"}, row);
  el("span", {class: "pcr-label"}, pickWrap, "image");
  const picker = el("select", {}, pickWrap);
  const present = button(row, "presentation", "larger text for a projector",
                         {"aria-pressed": "false"});
  const status = el("div", {class: "pcr-status", role: "status"}, root);
  const body = el("section", {class: "pcr-step-body", "aria-label": "what the scan adds"}, root);
  const caption = el("div", {class: "pcr-caption pcr-step-caption", "aria-live": "polite"}, body);
  const title = el("div", {class: "pcr-chart-title"}, body);
  const gridBox = el("div", {class: "pcr-grid-box"}, body);
  const legend = el("p", {class: "pcr-hint"}, body);
  const below = el("div", {class: "pcr-row pcr-top"}, body);
  const readout = el("table", {class: "pcr-readout"}, below);
  const figs = ["picture", "added"].map(() => {
    const f = el("figure", {class: "pcr-fig pcr-small"}, below);
    const cap = el("figcaption", {}, f);
    const img = el("img", {alt: ""}, f);
    return {cap, img};
  });
  const error = el("pre", {class: "pcr-error", role: "alert", hidden: true}, root);
  return {root, row, level, levelOut, picker, present, status, body, caption, title, gridBox,
          legend, readout, figs, error};
}

function render({model, el: host}) {
  const v = build(host);
  const get = k => model.get(k);
  const save = (k, value) => { model.set(k, value); model.save_changes(); };
  let urls = [], made = [];  // per level: [picture, added] object URLs of the image shown

  function pictures() {
    for (const u of made.splice(0)) URL.revokeObjectURL(u);
    urls = (get("panels") || []).map(p => [pictureUrl(p.picture, made),
                                          pictureUrl(p.added, made)]);
  }

  function names() {
    v.picker.replaceChildren();
    (get("names") || []).forEach((name, i) => el("option", {value: i}, v.picker, name));
    v.picker.value = String(get("image"));
  }

  function draw() {  // the level shown: slider, grids, readouts, the two pictures
    const k = get("level"), n = get("num_scans"), p = (get("panels") || [])[k - 1];
    v.row.hidden = !get("controls");
    v.level.max = String(n);
    v.level.value = String(k);
    v.levelOut.textContent = `${k} / ${n}`;
    v.level.setAttribute("aria-valuetext", `scan ${k} of ${n}`);
    v.picker.value = String(get("image"));
    v.body.hidden = !p;
    if (!p) return;
    v.caption.innerHTML = p.caption;
    v.title.textContent = p.title;
    grids(v.gridBox, p.grid, p.title);
    v.legend.textContent = p.legend;
    table(v.readout, p.rows);
    [["picture_caption", "picture_alt"], ["added_caption", "added_alt"]].forEach(([c, a], j) => {
      const f = v.figs[j], url = (urls[k - 1] || [])[j];
      f.cap.innerHTML = p[c];
      f.img.alt = p[a];
      f.img.hidden = !url;
      if (url && f.img.src !== url) f.img.src = url;
    });
  }

  function status() {
    const text = get("status");
    v.status.textContent = text ? `\u231b ${text}` : "";
    v.root.classList.toggle("pcr-busy", Boolean(text));
    const err = get("error");
    v.error.hidden = !err;
    v.error.textContent = err || "";
  }

  function presentation() {
    v.root.classList.toggle("pcr-present", get("presentation"));
    v.present.setAttribute("aria-pressed", String(get("presentation")));
  }

  // Show the level `d` places from the level shown (kept within 1..num_scans).
  function move(d) {
    const k = Math.min(get("num_scans"), Math.max(1, get("level") + d));
    if (k !== get("level")) save("level", k);
  }

  // -- the controls ------------------------------------------------------------
  v.level.addEventListener("input", () => {
    const k = Number(v.level.value);
    if (k !== get("level")) save("level", k);
  });
  v.picker.addEventListener("change", () => save("image", Number(v.picker.value)));
  v.present.addEventListener("click", () => save("presentation", !get("presentation")));
  v.root.addEventListener("keydown", ev => {
    ev.stopPropagation();  // keys pressed in the panel are the panel's, not the notebook's
    if (ev.target.closest("input, select")) return;  // a slider or a list steps by itself
    const d = {ArrowRight: 1, ArrowLeft: -1}[ev.key];
    if (!d) return;
    move(d);
    ev.preventDefault();
  });

  // -- the model -----------------------------------------------------------------
  const on = (keys, fn) => { for (const k of keys) model.on(`change:${k}`, fn); };
  on(["panels"], () => { pictures(); draw(); });
  on(["level", "num_scans", "image", "controls"], draw);
  on(["names"], names);
  on(["status", "error"], status);
  on(["presentation"], presentation);
  pictures();
  names();
  draw();
  status();
  presentation();
  return () => { for (const u of made.splice(0)) URL.revokeObjectURL(u); };
}

export default { render };
export { render };
