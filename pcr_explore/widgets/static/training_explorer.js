// TrainingExplorer's front end: an anywidget module. The controls are native (check boxes
// for the levels, pickers, a slider, a text field, a button), the accuracy plots and the
// gradient-similarity bars are drawn here in SVG (./chart.js), with one legend above the
// three plots: nothing covers a line. Training runs in the kernel: the Train button sends
// a message, and each finished epoch arrives as the `runs` trait grows.
import { barChart, el, lineChart, svg } from "./chart.js";
import { button, explorerRoot, slider } from "./controls.js";

// Bokeh's Category10, the colours the package's own training figures use.
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf"];
const CHOSEN = "#d62728", OTHER = "#1f77b4", THRESHOLD = "#555555";
const PLOTS = [
  ["epoch", "epoch", "Validation accuracy per epoch"],
  ["mbytes", "MB read from storage", "... against MB read"],
  ["seconds", "training seconds (load + compute)", "... against time"],
];

// A labelled field (Notebook 7's shortcut mark on it, as on every control).
function labelled(parent, label, tag, attrs = {}) {
  const wrap = el("label", {class: "pcr-slider"}, parent);
  el("span", {class: "pcr-label"}, wrap, label);
  return el(tag, {"data-lm-suppress-shortcuts": "true", ...attrs}, wrap);
}

function rowsTable(parent, rows) {
  parent.replaceChildren();
  for (const [k, v] of rows || []) {
    const tr = el("tr", {}, parent);
    el("th", {scope: "row"}, tr, k);
    el("b", {}, el("td", {}, tr), v);
  }
}

// One legend for the three plots (they share the runs and their colours), above them.
function runLegend(parent, runs) {
  parent.replaceChildren();
  runs.forEach((r, i) => {
    const item = el("span", {}, parent);
    const icon = svg("svg", {width: 24, height: 14, "aria-hidden": "true"}, item);
    svg("line", {x1: 1, y1: 7, x2: 23, y2: 7, stroke: PALETTE[i % 10], "stroke-width": 2}, icon);
    svg("circle", {cx: 12, cy: 7, r: 4, fill: PALETTE[i % 10]}, icon);
    item.appendChild(document.createTextNode(r.label));
  });
}

function resultTable(parent, table) {
  parent.replaceChildren();
  parent.hidden = !(table && (table.rows || []).length);
  if (parent.hidden) return;
  const t = el("table", {class: "pcr-result"}, parent);
  el("caption", {}, t, table.caption);
  const head = el("tr", {}, el("thead", {}, t));
  for (const c of table.columns) el("th", {scope: "col"}, head, c);
  const body = el("tbody", {}, t);
  for (const row of table.rows) {
    const tr = el("tr", {}, body);
    row.forEach((v, i) => el(i ? "td" : "th", i ? {} : {scope: "row"}, tr, v));
  }
}

function build(host) {
  const root = explorerRoot(host, "pcr-training");
  const row1 = el("div", {class: "pcr-row"}, root);
  const levels = el("div", {class: "pcr-levels", role: "group", "aria-label": "scan levels"},
                    row1);
  el("span", {class: "pcr-label", "aria-hidden": "true"}, levels, "scan levels");
  const boxes = el("span", {class: "pcr-boxes"}, levels);
  const present = button(row1, "presentation", "larger text for a projector",
                         {"aria-pressed": "false"});
  const row2 = el("div", {class: "pcr-row"}, root);
  const size = labelled(row2, "size", "select", {title: "training image side in pixels"});
  const {input: epochs, out: epochOut} = slider(row2, "epochs", 1, 30, 1);
  const storage = labelled(row2, "storage", "select",
                           {title: "storage bandwidth the training reads are held to"});
  const schedule = labelled(row2, "curriculum", "input", {
    type: "text", placeholder: "e.g. ramp:1-10:1-3", size: 18, spellcheck: "false",
    title: "one more run whose level changes per epoch: ramp:START-END:FROM-TO "
      + "or steps:EPOCH=LEVEL,...",
  });
  const train = button(row2, "Train", "train one model per ticked level, then tune",
                       {class: "pcr-button pcr-primary"});
  const status = el("div", {class: "pcr-status", role: "status"}, root);
  const progress = el("table", {class: "pcr-readout", "aria-live": "polite"}, root);
  const main = el("div", {class: "pcr-main pcr-stack"}, root);
  const curves = el("section", {class: "pcr-curves", "aria-label": "validation accuracy"}, main);
  const legend = el("div", {class: "pcr-legend pcr-run-legend"}, curves);
  const charts = el("div", {class: "pcr-charts"}, curves);
  const plots = PLOTS.map(() => el("div", {class: "pcr-chart"}, charts));
  const tuners = el("section", {class: "pcr-tuners pcr-row pcr-top", hidden: true,
                                "aria-label": "the tuners' choices"}, main);
  const bars = el("div", {class: "pcr-chart pcr-bars"}, tuners);
  const comparison = el("table", {class: "pcr-readout"}, tuners);
  const table = el("div", {class: "pcr-table-box", role: "region", tabindex: 0,
                             "aria-label": "the finished run, level by level"}, main);
  const error = el("pre", {class: "pcr-error", role: "alert", hidden: true}, root);
  return {root, boxes, present, size, epochs, epochOut, storage, schedule, train, status,
          progress, legend, plots, tuners, bars, comparison, table, error};
}

function render({model, el: host}) {
  const v = build(host);
  const get = k => model.get(k);
  const save = (k, value) => { model.set(k, value); model.save_changes(); };

  function levels() {
    v.boxes.replaceChildren();
    const ticked = new Set(get("scans") || []);
    for (let k = 1; k <= get("num_scans"); k++) {
      const wrap = el("label", {class: "pcr-check"}, v.boxes);
      const box = el("input", {type: "checkbox", value: k, checked: ticked.has(k),
                               "aria-label": `scan level ${k}`,
                               "data-lm-suppress-shortcuts": "true"}, wrap);
      el("span", {"aria-hidden": "true"}, wrap, String(k));
      box.addEventListener("change", () => {
        const now = [...v.boxes.querySelectorAll("input:checked")].map(b => Number(b.value));
        save("scans", now);
      });
    }
  }

  function controls() {
    const ticked = new Set(get("scans") || []);
    for (const b of v.boxes.querySelectorAll("input")) b.checked = ticked.has(Number(b.value));
    v.size.replaceChildren();
    for (const s of get("sizes") || []) el("option", {value: s}, v.size, `${s} px`);
    v.size.value = String(get("size"));
    v.storage.replaceChildren();
    (get("bandwidths") || []).forEach(([label], i) => el("option", {value: i}, v.storage, label));
    const at = (get("bandwidths") || []).findIndex(([, b]) => b === get("bandwidth"));
    v.storage.value = String(Math.max(0, at));
    v.epochs.max = String(get("max_epochs"));
    epochShown(get("epochs"));
    if (document.activeElement !== v.schedule) v.schedule.value = get("schedule") || "";
    const running = get("running");
    v.train.disabled = running;
    v.train.textContent = running ? "Training..." : "Train";
    for (const c of [v.size, v.epochs, v.storage, v.schedule, ...v.boxes.querySelectorAll("input")]) {
      c.disabled = running;
    }
  }

  function epochShown(n) {
    v.epochs.value = String(n);
    v.epochOut.textContent = String(n);
    v.epochs.setAttribute("aria-valuetext", `${n} epochs per level`);
  }

  function curves() {
    const runs = get("runs") || [];
    runLegend(v.legend, runs);
    // whole epochs on the epoch axis: a span of at least 3 makes every tick a whole number
    const last = Math.max(3, get("run_epochs") || 0, ...runs.map(r => r.epoch.length));
    PLOTS.forEach(([key, xLabel, title], i) => {
      const drawn = runs.filter(r => r.epoch.length);
      lineChart(v.plots[i], {
        title, xLabel, yLabel: "validation accuracy", width: 340, height: 250,
        xDomain: key === "epoch" ? [0.5, last + 0.5] : undefined,
        yDomain: [0, 1.02],
        label: `${title.replace("...", "validation accuracy")}: `
          + (drawn.length ? drawn.map(r => `${r.label} ${r.accuracy.map(a => a.toFixed(3))
            .join(", ")}`).join("; ") : "nothing trained yet"),
        series: runs.map((r, j) => ({
          x: r[key], y: r.accuracy, color: PALETTE[j % 10], points: true,
          tips: r.epoch.map((e, n) => `${r.label}, epoch ${e} (read scan ${r.scan[n]}): `
            + `accuracy ${r.accuracy[n].toFixed(3)}, ${r.mbytes[n].toFixed(1)} MB, `
            + `${r.seconds[n].toFixed(1)} s`),
        })),
      });
    });
  }

  function tuners() {
    const s = get("similarity") || {};
    v.tuners.hidden = !(s.scans || []).length;
    rowsTable(v.comparison, get("comparison"));
    if (v.tuners.hidden) { v.bars.replaceChildren(); return; }
    const pick = same => s.scans.map((k, i) => (k === s.chosen) === same
      ? Math.max(0, s.mean[i]) : null);
    barChart(v.bars, {
      title: s.title, yLabel: "mean cosine similarity", width: 420, height: 240,
      categories: s.scans.map(k => `scan ${k}`), stacked: true, yDomain: [0, 1.05],
      label: `${s.title}: ` + s.scans.map((k, i) => `scan ${k} ${s.mean[i].toFixed(3)}`)
        .join(", ") + `; chosen scan ${s.chosen}`,
      series: [
        {name: "other levels", values: pick(false), color: OTHER},
        {name: `chosen: scan ${s.chosen}`, values: pick(true), color: CHOSEN},
      ].map(x => ({...x, tips: s.scans.map((k, i) =>
        `scan ${k}: ${s.mean[i].toFixed(3)} \u00b1 ${s.std[i].toFixed(3)}`)})),
      rules: [{value: s.threshold, color: THRESHOLD, dash: true,
               name: `threshold ${s.threshold}`}],
    });
  }

  function readouts() {
    const rows = get("progress") || [];
    if (rows.length) rowsTable(v.progress, rows);
    else {
      v.progress.replaceChildren();
      el("i", {}, el("td", {}, el("tr", {}, v.progress)), "Pick levels and press Train.");
    }
  }

  function status() {
    const text = get("status");
    v.status.textContent = text ? `\u231b ${text}...` : "";
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
  v.size.addEventListener("change", () => save("size", Number(v.size.value)));
  v.storage.addEventListener("change", () => {
    const option = (get("bandwidths") || [])[Number(v.storage.value)];
    if (option) save("bandwidth", option[1]);
  });
  // The epoch axis follows the slider in the page; the kernel hears of it on release.
  v.epochs.addEventListener("input", () => {
    const n = Number(v.epochs.value);
    epochShown(n);
    model.set("epochs", n);
  });
  v.epochs.addEventListener("change", () => save("epochs", Number(v.epochs.value)));
  v.schedule.addEventListener("change", () => save("schedule", v.schedule.value.trim()));
  v.train.addEventListener("click", () => {
    if (v.schedule.value.trim() !== (get("schedule") || "")) {
      save("schedule", v.schedule.value.trim());
    }
    model.send({event: "train"});
  });
  v.present.addEventListener("click", () => save("presentation", !get("presentation")));
  v.root.addEventListener("keydown", ev => {
    if (ev.key === "Enter" && ev.target === v.schedule) v.schedule.blur();
  });

  // -- the model -----------------------------------------------------------------
  const on = (keys, fn) => { for (const k of keys) model.on(`change:${k}`, fn); };
  on(["num_scans"], () => { levels(); controls(); });
  on(["scans", "sizes", "size", "bandwidths", "bandwidth", "max_epochs", "epochs", "schedule",
      "running"], controls);
  on(["runs", "run_epochs"], curves);
  on(["similarity", "comparison"], tuners);
  on(["progress"], readouts);
  on(["table"], () => resultTable(v.table, get("table")));
  on(["status", "error"], status);
  on(["presentation"], presentation);
  levels();
  controls();
  readouts();
  curves();
  tuners();
  resultTable(v.table, get("table"));
  status();
  presentation();
}

export default { render };
