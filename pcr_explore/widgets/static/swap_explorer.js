// SwapExplorer's front end: an anywidget module. The same file draws the explorer in a
// notebook (the model is the kernel's widget) and on the kernel-free demo page (the model
// is the page's, fed with steps simulated before the page was written: swap_demo.js).
//
// Three charts of its own, drawn as SVG: each codec's compression ratio against sparsity
// (a log axis), the swap time and stall of the step per policy (horizontal bars), and the
// step's timeline on the compute and copy streams. Legends sit above the plots. While the
// sparsity slider moves, the page moves its line and the codecs' markers (read off the
// analytic lines it holds) at once; the bars and readouts follow from the kernel.
import { el, format, svg, ticks } from "./chart.js";
import { button, explorerRoot, fillPicker, picker, slider } from "./controls.js";

const SHAPES = [["constant", "one value", "one sparsity for every ReLU and pooling output"],
                ["ramp", "ramp with depth", "deeper layers sparser: from shallow to deep"],
                ["traced", "as traced", "the sparsity the trace measured, layer by layer"]];
const KINDS = {compute: "#9ecae1", compress: "#ff7f0e", decompress: "#2ca02c",
               copy: "#9467bd", stall: "#d62728"};
const BARS = [["swap_ms", "swap (codec + copy)", "#6baed6"], ["stall_ms", "stall added", "#d62728"]];
const RULE = "#555555";
const WAITING = "the timeline is redrawn when the sparsity stops moving";

const isNum = v => v !== null && v !== undefined && Number.isFinite(Number(v));
const pct = s => `${Math.round(Number(s) * 100)}%`;
const ms = v => `${Number(v).toFixed(2)} ms`;
const times = r => `${format(r)}x`;

// The legend above a plot: [{name, draw(icon)}], each icon a 24x14 SVG.
function swapLegend(parent, items) {
  const box = el("div", {class: "pcr-legend"}, parent);
  for (const {name, draw} of items) {
    const span = el("span", {}, box);
    draw(svg("svg", {width: 24, height: 14, "aria-hidden": "true"}, span));
    span.appendChild(document.createTextNode(name));
  }
}

const lineIcon = (color, dash) => g => svg("line", {x1: 1, y1: 7, x2: 23, y2: 7, stroke: color,
  "stroke-width": 2, "stroke-dasharray": dash ? "5 3" : null}, g);
const boxIcon = color => g => svg("rect", {x: 4, y: 1, width: 16, height: 12, fill: color}, g);

function triangle(x, y, r) {
  return `${x},${y - r} ${x + r * 0.9},${y + r * 0.6} ${x - r * 0.9},${y + r * 0.6}`;
}

function frame(root, m, W, H) {
  svg("rect", {x: m.left, y: m.top, width: W - m.left - m.right, height: H - m.top - m.bottom,
               class: "pcr-frame"}, root);
}

function axisLabels(root, m, W, H, xLabel, yLabel) {
  if (xLabel) {
    svg("text", {x: (m.left + W - m.right) / 2, y: H - 6, "text-anchor": "middle",
                 class: "pcr-axis-label"}, root, xLabel);
  }
  if (yLabel) {
    const cy = (m.top + H - m.bottom) / 2;
    svg("text", {x: 19, y: cy, transform: `rotate(-90 19 ${cy})`, "text-anchor": "middle",
                 class: "pcr-axis-label"}, root, yLabel);
  }
}

// Ticks of a log axis over [10^a, 10^b]: 1, 2 and 5 times the powers of ten, or the powers
// alone when those would crowd the axis.
function logTicks(a, b) {
  const all = [];
  for (let e = Math.floor(a); e <= Math.ceil(b); e++) {
    for (const k of [1, 2, 5]) {
      const t = Math.log10(k) + e;
      if (t >= a - 1e-9 && t <= b + 1e-9) all.push(t);
    }
  }
  return all.length > 8 ? all.filter(t => Math.abs(t - Math.round(t)) < 1e-9) : all;
}

// A codec's ratio at sparsity `s`, read off its analytic line (linear between its points).
function onLine(xs, ys, s) {
  for (let i = 1; i < xs.length; i++) {
    if (xs[i] >= s) {
      const f = (s - xs[i - 1]) / (xs[i] - xs[i - 1]);
      return ys[i - 1] + f * (ys[i] - ys[i - 1]);
    }
  }
  return ys[ys.length - 1];
}

// The ratio chart: one line per codec (analytic), triangles (measured), the markers and the
// line at the sparsity shown. `spec`: lines, measured, markers: {x, codecs, y}, colors,
// title, measuredLabel.
function ratioChart(parent, spec) {
  parent.replaceChildren();
  el("div", {class: "pcr-chart-title"}, parent, spec.title);
  const L = spec.lines || {}, M = spec.measured || {}, now = spec.markers || {};
  const codecs = L.codecs || [], color = c => (spec.colors || {})[c] || "#333";
  const items = codecs.map(c => ({name: c, draw: lineIcon(color(c))}));
  if ((M.codecs || []).length) {
    items.push({name: spec.measuredLabel || "measured", draw: g => svg("polygon",
      {points: triangle(12, 7, 5), fill: "#fff", stroke: "#333", "stroke-width": 2}, g)});
  }
  items.push({name: "sparsity shown", draw: lineIcon(RULE, true)});
  swapLegend(parent, items);
  const W = 440, H = 270, m = {left: 62, right: 22, top: 8, bottom: 40};
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", class: "pcr-chart-svg",
                           "aria-label": `${spec.title}: each codec's ratio, the sparsity shown `
                             + `at ${pct(now.x)}`}, parent);
  const all = [...(L.y || []).flat(), ...(M.y || []).flat()].filter(v => isNum(v) && v > 0);
  let a = Math.log10(Math.min(...all, 1)), b = Math.log10(Math.max(...all, 2));
  const pad = (b - a) * 0.06;
  a -= pad; b += pad;
  const px = x => m.left + x * (W - m.left - m.right);
  const py = v => H - m.bottom - (Math.log10(v) - a) / (b - a) * (H - m.top - m.bottom);
  const axes = svg("g", {class: "pcr-axes"}, root);
  for (const t of logTicks(a, b)) {
    const y = py(10 ** t);
    svg("line", {x1: m.left, x2: W - m.right, y1: y, y2: y, class: "pcr-grid"}, axes);
    svg("text", {x: m.left - 6, y: y + 4, "text-anchor": "end"}, axes, format(10 ** t));
  }
  for (const t of ticks(0, 1)) {
    svg("line", {x1: px(t), x2: px(t), y1: H - m.bottom, y2: H - m.bottom + 4, class: "pcr-tick"},
        axes);
    svg("text", {x: px(t), y: H - m.bottom + 16, "text-anchor": "middle"}, axes, pct(t));
  }
  frame(axes, m, W, H);
  axisLabels(axes, m, W, H, "sparsity (share of zeros)", "raw bytes / encoded bytes");
  codecs.forEach((c, i) => {
    const xs = L.x || [], ys = L.y[i] || [];
    const d = xs.map((x, j) => `${j ? "L" : "M"}${px(x).toFixed(1)},${py(ys[j]).toFixed(1)}`);
    svg("path", {d: d.join(""), fill: "none", stroke: color(c), "stroke-width": 2}, root);
  });
  (M.codecs || []).forEach((c, i) => {
    (M.x || []).forEach((x, j) => {
      const y = M.y[i][j];
      if (!isNum(y) || y <= 0) return;
      const t = svg("polygon", {points: triangle(px(x), py(y), 5.5), fill: "#fff",
                                stroke: color(c), "stroke-width": 2, class: "pcr-measured"}, root);
      svg("title", {}, t, `${c}, measured at ${pct(x)}: ${times(y)}`);
    });
  });
  if (isNum(now.x)) {
    svg("line", {x1: px(now.x), x2: px(now.x), y1: m.top, y2: H - m.bottom, stroke: RULE,
                 "stroke-width": 2, "stroke-dasharray": "6 4", class: "pcr-rule"}, root);
  }
  (now.codecs || []).forEach((c, i) => {
    const y = now.y[i];
    if (!isNum(y) || y <= 0) return;
    const dot = svg("circle", {cx: px(now.x), cy: py(y), r: 5.5, fill: color(c), stroke: "#fff",
                               "stroke-width": 1.5, class: "pcr-marker"}, root);
    svg("title", {}, dot, `${c} at ${pct(now.x)}: ${times(y)}`);
  });
}

// Swap time and stall per policy: horizontal bars, one pair per policy, labels at the left.
function policyBars(parent, bars, profile, big) {
  parent.replaceChildren();
  const title = "Swap time and stall per step";
  el("div", {class: "pcr-chart-title"}, parent, title);
  swapLegend(parent, BARS.map(([, name, color]) => ({name, draw: boxIcon(color)})));
  const names = bars.policy || [], n = names.length;
  const longest = Math.max(4, ...names.map(p => p.length));
  const W = 440, band = big ? 34 : 28;
  const m = {left: 14 + longest * (big ? 9 : 7), right: 16, top: 8, bottom: 40};
  const H = m.top + m.bottom + band * Math.max(1, n);
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", class: "pcr-chart-svg",
                           "aria-label": `${title}, in ms, for ${names.join(", ")}`}, parent);
  const top = Math.max(1e-9, ...(bars.swap_ms || []), ...(bars.stall_ms || [])) * 1.08;
  const px = v => m.left + v / top * (W - m.left - m.right);
  const axes = svg("g", {class: "pcr-axes"}, root);
  for (const t of ticks(0, top)) {
    svg("line", {x1: px(t), x2: px(t), y1: m.top, y2: H - m.bottom, class: "pcr-grid"}, axes);
    svg("text", {x: px(t), y: H - m.bottom + 16, "text-anchor": "middle"}, axes, format(t));
  }
  frame(axes, m, W, H);
  axisLabels(axes, m, W, H, `ms per step (simulated, ${profile})`, null);
  names.forEach((p, i) => {
    const y0 = m.top + band * i;
    svg("text", {x: m.left - 6, y: y0 + band / 2 + 4, "text-anchor": "end"}, axes, p);
    const tip = `${p}: swap ${ms(bars.swap_ms[i])}, stall ${ms(bars.stall_ms[i])}`
      + (bars.label && bars.label[i] ? `; codecs ${bars.label[i]}` : "");
    BARS.forEach(([key, , color], j) => {
      const v = Number((bars[key] || [])[i]) || 0;
      const h = (band - 8) / 2;
      const r = svg("rect", {x: m.left, y: y0 + 4 + j * h, width: Math.max(0, px(v) - m.left),
                             height: h - 1, fill: color, class: "pcr-bar"}, root);
      svg("title", {}, r, tip);
    });
  });
}

// The step's events on the compute and copy streams (ms from the start of the step).
function timelineChart(parent, ev, big) {
  parent.replaceChildren();
  const title = "Simulated timeline of the step (forward, then backward)";
  el("div", {class: "pcr-chart-title"}, parent, title);
  swapLegend(parent, Object.entries(KINDS).map(([name, color]) => ({name, draw: boxIcon(color)})));
  const W = 900, H = 130, lanes = ["compute", "copy"];
  const m = {left: big ? 86 : 64, right: 14, top: 6, bottom: 40};
  const start = ev.start || [], end = ev.end || [];
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", class: "pcr-chart-svg",
                           "aria-label": `${title}: ${start.length} events`}, parent);
  const right = Math.max(1e-9, ...end);
  const px = v => m.left + v / right * (W - m.left - m.right);
  const lane = (H - m.top - m.bottom) / lanes.length;
  const axes = svg("g", {class: "pcr-axes"}, root);
  for (const t of ticks(0, right)) {
    svg("line", {x1: px(t), x2: px(t), y1: m.top, y2: H - m.bottom, class: "pcr-grid"}, axes);
    svg("text", {x: px(t), y: H - m.bottom + 16, "text-anchor": "middle"}, axes, format(t));
  }
  lanes.forEach((name, i) => {
    svg("text", {x: m.left - 6, y: m.top + lane * (i + 0.5) + 4, "text-anchor": "end"}, axes,
        name);
  });
  frame(axes, m, W, H);
  axisLabels(axes, m, W, H, "ms from the start of the step", null);
  for (let i = 0; i < start.length; i++) {
    const row = Math.max(0, lanes.indexOf(ev.lane[i]));
    const r = svg("rect", {x: px(start[i]), y: m.top + lane * row + lane * 0.15,
                           width: Math.max(0.5, px(end[i]) - px(start[i])), height: lane * 0.7,
                           fill: KINDS[ev.kind[i]] || "#999", class: "pcr-event"}, root);
    const codec = ev.codec[i] && ev.codec[i] !== "raw" ? ` ${ev.codec[i]}` : "";
    svg("title", {}, r, `${ev.kind[i]} ${ev.name[i]} (${ev.phase[i]})${codec}: `
      + `${Number(start[i]).toFixed(3)} - ${Number(end[i]).toFixed(3)} ms`);
  }
}

function build(host) {
  const root = explorerRoot(host, "pcr-swap");
  const row1 = el("div", {class: "pcr-row"}, root);
  const shapes = el("div", {class: "pcr-toggles", role: "group",
                            "aria-label": "sparsity of the layers"}, row1);
  const play = button(row1, "\u25b6 play", "step through the sparsities simulated");
  const sparsity = slider(row1, "sparsity", 0, 0.99, 0.01, true);
  const shallow = slider(row1, "shallow layers", 0, 0.99, 0.01);
  const deep = slider(row1, "deep layers", 0, 0.99, 0.01);
  const present = button(row1, "presentation", "larger text for a projector",
                             {"aria-pressed": "false"});
  const row2 = el("div", {class: "pcr-row"}, root);
  const trace = picker(row2, "trace");
  trace.style.maxWidth = "none";  // a trace's name is long: show it whole
  const device = picker(row2, "device");
  const size = picker(row2, "tensor size");
  const codecs = el("div", {class: "pcr-row", role: "group", "aria-label": "codecs"}, root);
  const notes = el("div", {class: "pcr-notes"}, root);
  const status = el("div", {class: "pcr-status", role: "status"}, root);
  const main = el("div", {class: "pcr-main"}, root);
  const ratio = el("section", {class: "pcr-chart", style: "flex: 1 1 400px; min-width: 0",
                               "aria-label": "compression ratio"}, main);
  const bars = el("section", {class: "pcr-chart", style: "flex: 1 1 360px; min-width: 0",
                              "aria-label": "swap time and stall"}, main);
  const timeline = el("section", {class: "pcr-timeline", "aria-label": "timeline"}, root);
  const row3 = el("div", {class: "pcr-row"}, timeline);
  const policy = picker(row3, "timeline of");
  const caption = el("span", {class: "pcr-hint", "aria-live": "polite"}, row3);
  const events = el("div", {class: "pcr-chart"}, timeline);
  const readout = el("table", {class: "pcr-readout"}, root);
  const error = el("pre", {class: "pcr-error", role: "alert", hidden: true}, root);
  return {root, shapes, play, sparsity, shallow, deep, present, row2, trace, device, size,
          codecs, notes, status, ratio, bars, timeline, policy, caption, events, readout, error};
}

export function renderSwap({model, el: host}) {
  const v = build(host);
  const get = k => model.get(k);
  const save = (k, value) => { model.set(k, value); model.save_changes(); };
  const kernel = get("has_kernel") !== false;  // the demo page has none: fixed settings
  const grid = () => get("grid") || [];  // the page's sparsities (empty: any, by 1%)
  let timer = null, waiting = false;

  const shapeButtons = SHAPES.map(([value, text, tip]) => {
    const b = button(v.shapes, text, tip, {"aria-pressed": "false"});
    b.addEventListener("click", () => save("shape", value));
    return [value, b];
  });
  for (const part of [v.shapes, v.row2, v.codecs, v.timeline, v.shallow.wrap, v.deep.wrap]) {
    part.hidden = !kernel;
  }
  v.play.hidden = !grid().length;

  // The sparsity the charts show now: the slider's (the page moves at once), or the mean of
  // a ramp or a trace (the kernel's).
  function shown() {
    const cur = get("current") || {};
    return get("shape") === "constant" ? get("sparsity") : cur.x;
  }

  function markers() {
    const cur = get("current") || {}, s = shown();
    if (!isNum(s) || Math.abs(Number(cur.x) - s) < 1e-9) return cur;
    const L = get("lines") || {}, codecs = cur.codecs || [];
    return {x: s, codecs, y: codecs.map(c => {
      const i = (L.codecs || []).indexOf(c);
      return i < 0 ? null : onLine(L.x || [], L.y[i], s);
    })};
  }

  function drawRatio() {
    ratioChart(v.ratio, {title: get("ratio_title"), lines: get("lines"),
                         measured: get("measured_points"), markers: markers(),
                         colors: get("colors"),
                         measuredLabel: (get("measured_points") || {}).label});
  }

  function drawBars() { policyBars(v.bars, get("bars") || {}, get("profile"), get("presentation")); }

  function drawTimeline() {
    const ev = get("events") || {};
    if (kernel) timelineChart(v.events, ev, get("presentation"));
    v.caption.textContent = waiting ? WAITING : get("timeline_caption") || "";
  }

  function table() {
    v.readout.replaceChildren();
    for (const [k, value] of get("readouts") || []) {
      const tr = el("tr", {}, v.readout);
      el("th", {scope: "row"}, tr, k);
      el("b", {}, el("td", {}, tr), value);
    }
  }

  function drawNotes() {
    v.notes.replaceChildren();
    for (const [codec, note] of get("notes") || []) {
      const d = el("div", {style: "color: #7a5200"}, v.notes);
      el("b", {}, d, codec);
      d.appendChild(document.createTextNode(`: ${note}`));
    }
  }

  function controls() {
    const s = get("sparsity"), g = grid(), shape = get("shape");
    if (g.length) {
      v.sparsity.input.max = String(g.length - 1);
      v.sparsity.input.step = "1";
      let at = 0;
      g.forEach((x, i) => { if (Math.abs(x - s) < Math.abs(g[at] - s)) at = i; });
      v.sparsity.input.value = String(at);
    } else {
      v.sparsity.input.value = String(s);
    }
    v.sparsity.out.textContent = pct(s);
    v.sparsity.input.setAttribute("aria-valuetext", pct(s));
    v.sparsity.wrap.hidden = kernel && shape !== "constant";
    const [lo, hi] = get("ramp") || [0, 0];
    for (const [part, value] of [[v.shallow, lo], [v.deep, hi]]) {
      part.input.value = String(value);
      part.out.textContent = pct(value);
      part.input.setAttribute("aria-valuetext", pct(value));
      part.wrap.hidden = !kernel || shape !== "ramp";
    }
    for (const [value, b] of shapeButtons) b.setAttribute("aria-pressed", String(value === shape));
    fillPicker(v.trace, get("trace_options") || [], get("trace_name"));
    fillPicker(v.device, (get("profiles") || []).map(p => [p, p]), get("profile"));
    fillPicker(v.size, get("tensor_sizes") || [], get("tensor_size"));
    fillPicker(v.policy, get("policy_options") || [], get("timeline_policy"));
    const ticked = get("codecs") || [];
    const all = get("all_codecs") || [];
    if (v.codecs.dataset.all !== all.join(",")) {
      v.codecs.replaceChildren();
      for (const c of all) {
        const wrap = el("label", {class: "pcr-slider"}, v.codecs);
        const box = el("input", {type: "checkbox", value: c}, wrap);
        wrap.appendChild(document.createTextNode(c));
        box.addEventListener("change", () => {
          const now = new Set(get("codecs") || []);
          if (box.checked) now.add(c); else now.delete(c);
          save("codecs", all.filter(x => now.has(x)));
        });
      }
      v.codecs.dataset.all = all.join(",");
    }
    for (const box of v.codecs.querySelectorAll("input")) box.checked = ticked.includes(box.value);
  }

  function showStatus() {
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
    drawBars();
    drawTimeline();
  }

  function stop() {
    clearInterval(timer); timer = null;
    v.play.textContent = "\u25b6 play";
  }

  // -- the controls ------------------------------------------------------------
  function moved(value) {  // the sparsity slider moved: the page answers before the kernel
    if ((get("events") || {}).start && (get("events").start.length)) waiting = true;
    save("sparsity", value);
    drawTimeline();
  }
  v.sparsity.input.addEventListener("input", () => {
    const g = grid(), x = Number(v.sparsity.input.value);
    moved(g.length ? g[Math.round(x)] : x);
  });
  const ramp = () => save("ramp", [Number(v.shallow.input.value), Number(v.deep.input.value)]);
  v.shallow.input.addEventListener("input", ramp);
  v.deep.input.addEventListener("input", ramp);
  v.trace.addEventListener("change", () => save("trace_name", v.trace.value));
  v.device.addEventListener("change", () => save("profile", v.device.value));
  v.size.addEventListener("change", () => save("tensor_size", Number(v.size.value)));
  v.policy.addEventListener("change", () => save("timeline_policy", v.policy.value));
  v.present.addEventListener("click", () => save("presentation", !get("presentation")));
  v.play.addEventListener("click", () => {
    if (timer !== null) { stop(); return; }
    const g = grid();
    if (!g.length) return;
    if (get("sparsity") >= g[g.length - 1]) moved(g[0]);
    v.play.textContent = "\u275a\u275a pause";
    timer = setInterval(() => {
      const next = g.find(x => x > get("sparsity") + 1e-9);
      if (next === undefined) { stop(); return; }
      moved(next);
      if (next >= g[g.length - 1]) stop();
    }, 500);
  });

  // -- the model -----------------------------------------------------------------
  const on = (keys, fn) => { for (const k of keys) model.on(`change:${k}`, fn); };
  on(["sparsity", "ramp", "shape", "trace_name", "trace_options", "profile", "profiles",
      "tensor_size", "tensor_sizes", "codecs", "all_codecs", "timeline_policy",
      "policy_options"], controls);
  on(["sparsity", "current", "lines", "measured_points", "ratio_title", "colors"], drawRatio);
  on(["bars", "profile"], drawBars);
  on(["events", "timeline_caption"], () => {
    if (get("timeline_caption") !== WAITING) waiting = false;
    drawTimeline();
  });
  on(["readouts"], table);
  on(["notes"], drawNotes);
  on(["status", "error"], showStatus);
  on(["presentation"], presentation);
  controls();
  drawRatio();
  drawTimeline();
  table();
  drawNotes();
  showStatus();
  presentation();
  return () => stop();
}

export default { render: renderSwap };
