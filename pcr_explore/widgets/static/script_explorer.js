// ScriptExplorer's front end: an anywidget module. Two scan scripts side by side: their
// bytes-vs-MS-SSIM curves and decode times (SVG charts drawn here), and each script's image
// at its highest level within a byte budget.
//
// The model holds, for each chosen script (`sides`), every level's picture, byte share and
// caption of the image shown, so the byte budget slider moves the pictures, captions and the
// budget line without asking the kernel; a new script or image is measured there.
import { el, lineChart } from "./chart.js";
import { button, explorerRoot, picker, pictureUrl, slider } from "./controls.js";

const COLORS = ["#1f77b4", "#d62728"];
const BUDGET = "#595959";

function options(select, names, value) {
  select.replaceChildren();
  names.forEach((name, i) => el("option", {value: value(name, i)}, select, name));
}

// The highest level whose byte share is at most `budget` (level 1 when even that reads more):
// the kernel's rule (script_explorer._level_within).
function levelWithin(share, budget) {
  let k = 0;
  while (k < share.length && share[k] <= budget + 1e-12) k++;
  return Math.max(1, k);
}

const percent = x => `${Math.round(x * 100)}%`;

function build(host) {
  const root = explorerRoot(host, "pcr-scripts");
  const row1 = el("div", {class: "pcr-row"}, root);
  const pickA = picker(row1, "script A");
  const pickB = picker(row1, "script B");
  const present = button(row1, "presentation", "larger text for a projector",
                         {"aria-pressed": "false"});
  const status = el("div", {class: "pcr-status", role: "status"}, root);
  const main = el("div", {class: "pcr-main pcr-script-main"}, root);
  const charts = el("section", {class: "pcr-charts", "aria-label": "bytes, quality and decode time"},
                    main);
  const curves = el("div", {class: "pcr-chart"}, charts);
  const times = el("div", {class: "pcr-chart"}, charts);
  const row2 = el("div", {class: "pcr-row"}, main);
  const {input: budget, out: budgetOut} = slider(row2, "byte budget", 0.05, 1.05, 0.01, true);
  const pickImage = picker(row2, "image");
  const pics = el("section", {class: "pcr-pair pcr-script-pics",
                              "aria-label": "each script's image at the byte budget"}, main);
  const figs = [0, 1].map(() => {
    const fig = el("figure", {class: "pcr-fig pcr-script-fig"}, pics);
    const img = el("img", {alt: ""}, fig);
    const cap = el("figcaption", {"aria-live": "polite"}, fig);
    return {fig, img, cap};
  });
  const table = el("table", {class: "pcr-readout pcr-script-table"}, main);
  const error = el("pre", {class: "pcr-error", role: "alert", hidden: true}, root);
  return {root, pickA, pickB, present, status, curves, times, budget, budgetOut, pickImage,
          figs, table, error};
}

function render({model, el: host}) {
  const v = build(host);
  const get = k => model.get(k);
  const save = (k, value) => { model.set(k, value); model.save_changes(); };
  let urls = [], made = [];  // per side, per level: object URLs of the image shown

  function pictures() {
    for (const u of made.splice(0)) URL.revokeObjectURL(u);
    urls = (get("sides") || []).map(s => (s.pictures || []).map(p => pictureUrl(p, made)));
  }

  function controls() {
    const names = get("names") || [];
    options(v.pickA, names, n => n);
    options(v.pickB, names, n => n);
    options(v.pickImage, get("images") || [], (_, i) => i);
    picks();
  }

  function picks() {
    v.pickA.value = get("script_a");
    v.pickB.value = get("script_b");
    v.pickImage.value = String(get("image"));
  }

  function charts() {
    const sides = get("sides") || [], lab = get("labels") || {}, b = get("budget");
    const rule = {axis: "x", value: b, color: BUDGET, dash: true, name: "byte budget"};
    const names = sides.map(s => s.label).join(" and ");
    const right = Math.max(1.05, b, ...sides.flatMap(s => s.x || [])) + 0.03;
    for (const [box, y, tips, title, yLabel] of [
      [v.curves, "q", "q_tips", lab.curves, lab.q], [v.times, "ms", "ms_tips", lab.times, lab.ms],
    ]) {
      lineChart(box, {
        title, xLabel: lab.x, yLabel, xFormat: "percent", xDomain: [0, right], height: 240,
        label: `${title}: ${names}, byte budget ${percent(b)}`,
        series: sides.map((s, j) => ({name: s.label, x: s.x, y: s[y], color: COLORS[j],
                                      points: true, tips: s[tips]})),
        rules: [rule],
      });
    }
  }

  function draw() {  // the budget: slider, line, each script's level, picture and caption
    const b = get("budget"), sides = get("sides") || [];
    v.budget.value = String(b);
    v.budgetOut.textContent = percent(b);
    v.budget.setAttribute("aria-valuetext", `${percent(b)} of the reference's bytes`);
    v.figs.forEach((f, j) => {
      const s = sides[j];
      f.fig.hidden = !s;
      if (!s) return;
      const k = levelWithin(s.share || [], b), url = (urls[j] || [])[k - 1];
      f.fig.style.maxWidth = `${get("max_side")}px`;
      f.img.hidden = !url;
      if (url && f.img.src !== url) f.img.src = url;
      f.img.alt = (s.alts || [])[k - 1] || s.name;
      f.cap.innerHTML = (s.captions || [])[k - 1] || "";
    });
    charts();
  }

  function rows() {
    v.table.replaceChildren();
    for (const [name, text] of get("table") || []) {
      const tr = el("tr", {}, v.table);
      el("th", {scope: "row"}, tr, name);
      el("td", {}, tr, text);
    }
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

  // -- the controls ------------------------------------------------------------
  v.budget.addEventListener("input", () => save("budget", Number(v.budget.value)));
  v.pickA.addEventListener("change", () => save("script_a", v.pickA.value));
  v.pickB.addEventListener("change", () => save("script_b", v.pickB.value));
  v.pickImage.addEventListener("change", () => save("image", Number(v.pickImage.value)));
  v.present.addEventListener("click", () => save("presentation", !get("presentation")));
  // keys pressed in the explorer are the explorer's, not the notebook's

  // -- the model -----------------------------------------------------------------
  const on = (keys, fn) => { for (const k of keys) model.on(`change:${k}`, fn); };
  on(["sides"], () => { pictures(); draw(); });
  on(["budget", "labels", "max_side"], draw);
  on(["names", "images"], controls);
  on(["script_a", "script_b", "image"], picks);
  on(["table"], rows);
  on(["status", "error"], status);
  on(["presentation"], presentation);
  pictures();
  controls();
  draw();
  rows();
  status();
  presentation();
  return () => { for (const u of made.splice(0)) URL.revokeObjectURL(u); };
}

export default { render };
