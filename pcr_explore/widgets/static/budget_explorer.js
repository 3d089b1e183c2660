// BudgetExplorer's front end: an anywidget module.
//
// An epoch's reading time is its bytes over the bandwidth: the page draws that line itself
// while the bandwidth slider is dragged (the model holds each level's bytes and decoding
// seconds); the kernel re-prices the report for the sentence and the table under it.
import { el, lineChart } from "./chart.js";
import { button, explorerRoot, slider } from "./controls.js";

const COLORS = {decode: "#9a6700", read: "#1f77b4", recommended: "#cf222e"};
const LOG_MIN = -1, LOG_MAX = 4;  // the slider: 0.1 to 10,000 MB/s

// Python's format(v, ".3g"), as the kernel writes figures (pcr_explore.budgeting).
function g3(v) {
  const s = Number(v).toPrecision(3);
  const m = /^(-?[\d.]+)e([+-])(\d+)$/.exec(s);
  if (!m) return String(Number(s));
  return `${Number(m[1])}e${m[2]}${m[3].padStart(2, "0")}`;
}

// Bytes per second as the kernel's format_bandwidth writes them ("731 kB/s", "20 MB/s").
export function formatBandwidth(bps) {
  for (const [unit, scale] of [["GB/s", 1e9], ["MB/s", 1e6], ["kB/s", 1e3]]) {
    if (bps >= scale) return `${g3(bps / scale)} ${unit}`;
  }
  return `${g3(bps)} B/s`;
}

function build(host) {
  const root = explorerRoot(host, "pcr-budget");
  const row = el("div", {class: "pcr-row"}, root);
  const {input: bandwidth, out} = slider(row, "storage bandwidth", LOG_MIN, LOG_MAX, 0.01, true);
  const present = button(row, "presentation", "larger text for a projector",
                         {"aria-pressed": "false"});
  const status = el("div", {class: "pcr-status", role: "status"}, root);
  const chart = el("section", {class: "pcr-chart pcr-budget-chart",
                               "aria-label": "input time of one epoch per scan level"}, root);
  const readout = el("div", {class: "pcr-budget-readout", "aria-live": "polite"}, root);
  // a wide table scrolls: a keyboard reaches it too
  const table = el("div", {class: "pcr-table-box", tabindex: "0", role: "region",
                           "aria-label": "the report per scan level"}, root);
  const error = el("pre", {class: "pcr-error", role: "alert", hidden: true}, root);
  return {root, slider: bandwidth, out, present, status, chart, readout, table, error};
}

function render({model, el: host}) {
  const v = build(host);
  const get = k => model.get(k);

  function bandwidth() {  // the slider and its readout, at the model's bandwidth
    const bw = get("bandwidth"), text = formatBandwidth(bw * 1e6);
    v.slider.value = String(Math.log10(bw));
    v.out.textContent = text;
    v.slider.setAttribute("aria-valuetext", text);
  }

  function chart() {
    const lv = get("levels") || {}, scans = lv.scans || [], bps = get("bandwidth") * 1e6;
    const read = (lv.bytes || []).map(b => b / bps), decode = lv.decode || [];
    const k = lv.recommended;
    const secs = s => `${g3(s)} s`;
    lineChart(v.chart, {
      title: `Input time of one epoch per scan level `
        + `(${Number(lv.images || 0).toLocaleString("en-US")} images)`,
      xLabel: "scan level", yLabel: "seconds per epoch", xFormat: "number",
      xDomain: [0.5, scans.length + 0.5], width: 860, height: 320,
      label: `input time of one epoch per scan level at ${formatBandwidth(bps)}; `
        + `level ${k} recommended`,
      series: [
        {name: `decoding, ${lv.workers} cores (measured)`, x: scans, y: decode,
         color: COLORS.decode, points: true,
         tips: scans.map((n, i) => `level ${n}: decoding ${secs(decode[i])}`)},
        {name: "reading at the bandwidth (bytes / bandwidth)", x: scans, y: read,
         color: COLORS.read, points: true,
         tips: scans.map((n, i) => `level ${n}: reading ${secs(read[i])}`)},
      ],
      rules: [{axis: "x", value: k, color: COLORS.recommended, dash: true,
               name: `recommended level ${k}`}],
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
    v.present.setAttribute("aria-pressed", String(Boolean(get("presentation"))));
  }

  v.slider.addEventListener("input", () => {
    const mbps = Number((10 ** Number(v.slider.value)).toPrecision(6));
    model.set("bandwidth", mbps);
    model.save_changes();
  });
  v.present.addEventListener("click", () => {
    model.set("presentation", !get("presentation"));
    model.save_changes();
  });

  const on = (keys, fn) => { for (const k of keys) model.on(`change:${k}`, fn); };
  on(["bandwidth"], () => { bandwidth(); chart(); });
  on(["levels"], chart);
  on(["readout"], () => { v.readout.innerHTML = get("readout") || ""; });
  on(["table"], () => { v.table.innerHTML = get("table") || ""; });
  on(["status", "error"], status);
  on(["presentation"], presentation);
  bandwidth();
  chart();
  v.readout.innerHTML = get("readout") || "";
  v.table.innerHTML = get("table") || "";
  status();
  presentation();
}

export default { render };

