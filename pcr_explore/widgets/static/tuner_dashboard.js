// TunerDashboard's front end: an anywidget module.
//
// The kernel measures the sample and recommends (a bootstrap over its images); the page
// draws the curve and, while the target slider is dragged, moves the target line and the
// recommended level's marker itself: the model holds the per-level statistics the kernel
// decides on (`lines.stats`), so the marker lands where the kernel's readout will say.
// The quality axis (the metric or its loss in dB) is switched in the page too.
import { el, lineChart } from "./chart.js";
import { button, explorerRoot, picker, pictureUrl, slider, toggleGroup } from "./controls.js";

const COLORS = {images: "#c9c9c9", band: "#9ecae1", median: "#4a7fb0", p5: "#08306b",
                mean: "#e6550d", target: "#1a7f37", marker: "#d62728"};
const STATISTICS = [["p5", "5th percentile", "nearly every image good enough"],
                    ["mean", "mean of images", "the images' mean"]];
const STAT_NAMES = {p5: "5th percentile", mean: "mean"};

// Where the page draws the target on the quality axis (null: off the axis).
function drawnTarget(value, scale) {
  if (scale !== "db") return value;
  return value >= 1 ? null : -10 * Math.log10(1 - value);
}

// The level the kernel recommends: the first whose statistic reaches the target, else the last.
export function recommendedIndex(stats, target) {
  for (let i = 0; i < stats.length; i++) {
    if (stats[i] !== null && stats[i] >= target) return i;
  }
  return stats.length - 1;
}

function build(host) {
  const root = explorerRoot(host, "pcr-tuner");
  const row1 = el("div", {class: "pcr-row"}, root);
  const metric = picker(row1, "metric");
  const row2 = el("div", {class: "pcr-row"}, root);
  const {input: target, out: targetOut} = slider(row2, "target", 0, 1, 0.01, true);
  const sample = picker(row2, "sample (images)");
  const status = el("div", {class: "pcr-status", role: "status"}, root);
  const main = el("div", {class: "pcr-main"}, root);
  const chart = el("section", {class: "pcr-chart pcr-tuner-chart",
                               "aria-label": "quality per scan level over the sample"}, main);
  const side = el("section", {class: "pcr-side", "aria-label": "the recommendation"}, main);
  const sideRow = el("div", {class: "pcr-row"}, side);
  const readout = el("div", {class: "pcr-tune-readout", "aria-live": "polite"}, side);
  const gallery = el("section", {class: "pcr-gallery", "aria-label": "the images that suffer most"},
                     root);
  const galleryTitle = el("div", {class: "pcr-caption"}, gallery);
  const cards = el("div", {class: "pcr-cards"}, gallery);
  const error = el("pre", {class: "pcr-error", role: "alert", hidden: true}, root);
  return {root, row1, metric, target, targetOut, sample, status, chart, sideRow, readout,
          galleryTitle, cards, error};
}

function render({model, el: host}) {
  const v = build(host);
  const get = k => model.get(k);
  const save = (k, value) => { model.set(k, value); model.save_changes(); };
  const made = [];

  const statistic = toggleGroup(v.row1, "statistic", STATISTICS, s => save("statistic", s));
  const present = button(v.row1, "presentation", "larger text for a projector",
                         {"aria-pressed": "false"});
  const scale = toggleGroup(v.sideRow, "quality axis", [
    ["value", "value", "the metric itself"],
    ["db", "in dB", "-10 log10(1 - value): spreads the upper levels"],
  ], s => save("scale", s));

  function scaleShown() {
    const lines = get("lines") || {};
    return lines.db ? get("scale") : "value";
  }

  function pickers() {
    v.metric.replaceChildren();
    for (const [m, label] of get("metrics") || []) el("option", {value: m}, v.metric, label);
    v.metric.value = get("metric");
    v.sample.replaceChildren();
    for (const n of get("sizes") || []) el("option", {value: n}, v.sample, String(n));
    v.sample.value = String(get("sample"));
  }

  function controls() {
    const range = (get("target_ranges") || {})[get("metric")] || {min: 0, max: 1, step: 0.001};
    v.metric.value = get("metric");
    v.sample.value = String(get("sample"));
    v.target.min = String(range.min);
    v.target.max = String(range.max);
    v.target.step = String(range.step);
    v.target.value = String(get("target"));
    const fixed = Number(get("target")).toFixed(range.digits ?? 3);
    const shown = range.trim ? String(Number(fixed)) : fixed;  // as the readout writes it
    v.targetOut.textContent = shown;
    v.target.setAttribute("aria-valuetext", shown);
    statistic.show(get("statistic"));
    scale.show(get("scale"));
    scale.group.hidden = !(get("lines") || {}).db;
  }

  function chart() {
    const c = get("lines") || {}, s = scaleShown(), stat = get("statistic");
    const x = c.x || [], scans = c.scans || [];
    const k = recommendedIndex((c.stats || {})[stat] || [], get("target"));
    const onStat = c[`${stat}_${s}`] || [];
    const mean = c[`mean_${s}`] || [];
    const series = (c.images || []).map(im => ({x: im.x, y: im[`y_${s}`], color: COLORS.images}));
    series.push(
      {name: "median", x, y: c[`p50_${s}`] || [], color: COLORS.median, dash: true},
      {name: "5th percentile", x, y: c[`p5_${s}`] || [], color: COLORS.p5},
      {name: "mean", x, y: mean, color: COLORS.mean, points: true,
       labels: scans.map(String),
       tips: scans.map((n, i) => `scan ${n}: mean ${mean[i] === null ? "-" : mean[i]}`)},
    );
    const scan = scans[k];
    lineChart(v.chart, {
      title: `Quality per scan level over the sample (${get("sample")} images)`,
      xLabel: "bytes read (% of the full images)", yLabel: (c.labels || {})[s],
      xFormat: "percent",
      label: `quality per scan level over the sample; the target line and scan ${scan} marked`,
      width: 500, height: 320, series,
      bands: [{name: "p5 to p95 of images", x, lo: c[`p5_${s}`] || [], hi: c[`p95_${s}`] || [],
               color: COLORS.band}],
      rules: [{axis: "y", value: drawnTarget(get("target"), s), color: COLORS.target, dash: true,
               name: "target"}],
      marker: {x: x[k], y: onStat[k], color: COLORS.marker,
               name: `recommended scan ${scan === undefined ? "" : scan} (on the ${STAT_NAMES[stat]})`},
    });
    el("div", {class: "pcr-hint"}, v.chart, "grey: each image of the sample");
  }

  function gallery() {
    for (const u of made.splice(0)) URL.revokeObjectURL(u);
    v.galleryTitle.innerHTML = get("gallery_title") || "";
    v.cards.replaceChildren();
    const side = get("thumb_side") || 160;
    v.cards.style.gridTemplateColumns = `repeat(auto-fill, minmax(${3 * side + 20}px, 1fr))`;
    const crops = get("crops") || [];
    (get("gallery") || []).forEach((card, i) => {
      const fig = el("figure", {class: "pcr-card"}, v.cards);
      el("figcaption", {}, fig).innerHTML = card.caption;
      const row = el("div", {class: "pcr-crops"}, fig);
      for (let j = 0; j < 3; j++) {
        const url = pictureUrl(crops[3 * i + j], made);
        if (url) el("img", {src: url, alt: (card.alts || [])[j] || "crop", width: side}, row);
      }
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
    v.root.classList.toggle("pcr-present", Boolean(get("presentation")));
    present.setAttribute("aria-pressed", String(Boolean(get("presentation"))));
  }

  // -- the controls ------------------------------------------------------------
  v.metric.addEventListener("change", () => save("metric", v.metric.value));
  v.sample.addEventListener("change", () => save("sample", Number(v.sample.value)));
  v.target.addEventListener("input", () => save("target", Number(v.target.value)));
  present.addEventListener("click", () => save("presentation", !get("presentation")));

  // -- the model -----------------------------------------------------------------
  const on = (keys, fn) => { for (const k of keys) model.on(`change:${k}`, fn); };
  const redraw = () => { controls(); chart(); };
  on(["target", "statistic", "scale", "lines", "metric", "sample", "target_ranges"], redraw);
  on(["metrics", "sizes"], () => { pickers(); redraw(); });
  on(["readout"], () => { v.readout.innerHTML = get("readout") || ""; });
  // the kernel sends the cards, their crops and the title in one message: drawn once
  let galleryDue = false;
  const galleryLater = () => {
    if (galleryDue) return;
    galleryDue = true;
    requestAnimationFrame(() => { galleryDue = false; gallery(); });
  };
  on(["gallery", "crops", "gallery_title", "thumb_side"], galleryLater);
  on(["status", "error"], status);
  on(["presentation"], presentation);
  pickers();
  redraw();
  v.readout.innerHTML = get("readout") || "";
  gallery();
  status();
  presentation();
  return () => { for (const u of made.splice(0)) URL.revokeObjectURL(u); };
}

export default { render };

