// ScanPanel's front end: an anywidget module. What the scan at one level adds to an image:
// the zig-zag grids of each component (drawn here as SVG from the cells measured in the
// kernel), the scan's readouts, the image at this level and the amplified picture of what
// the scan adds.
//
// The model holds every level's panel of the image shown (`panels`), so the level slider
// and the arrow keys show a level without asking the kernel; a new image is measured there.
import { el } from "./chart.js";
import { button, explorerRoot, grids, picker, pictureUrl, slider, table } from "./controls.js";

function build(host) {
  const root = explorerRoot(host, "pcr-step-panel");
  const row = el("div", {class: "pcr-row"}, root);
  const {input: level, out: levelOut} = slider(row, "scan level", 1, 1, 1, true);
  const imagePicker = picker(row, "image");
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
  return {root, row, level, levelOut, picker: imagePicker, present, status, body, caption, title, gridBox,
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
