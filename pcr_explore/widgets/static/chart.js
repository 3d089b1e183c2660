// Small SVG charts drawn in the page: lines with points, a shaded band, a marker, bars.
// No library and no network, so a chart draws wherever the explorer's module runs
// (JupyterLab, Notebook 7, VS Code, Colab, marimo, a page opened from a file).
// The legend is HTML above the plot: it never covers data.

const SVG = "http://www.w3.org/2000/svg";

export function svg(tag, attrs = {}, parent = null, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  }
  if (text !== null) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

export function el(tag, attrs = {}, parent = null, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  if (text !== null) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

const finite = v => v !== null && v !== undefined && Number.isFinite(Number(v));

// Round tick positions covering [lo, hi]: about `count` of them, at 1, 2 or 5 times a power of ten.
export function ticks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}

function extent(values, pad) {
  const v = values.filter(finite).map(Number);
  if (!v.length) return [0, 1];
  let lo = Math.min(...v), hi = Math.max(...v);
  if (hi === lo) { lo -= 0.5; hi += 0.5; }
  const d = (hi - lo) * pad;
  return [lo - d, hi + d];
}

export function format(value, kind) {
  if (!finite(value)) return "-";
  const v = Number(value);
  if (kind === "percent") return `${Math.round(v * 100)}%`;
  if (Math.abs(v) >= 1000) return v.toLocaleString("en-US", {maximumFractionDigits: 0});
  return String(Number(v.toPrecision(3)));
}

// The legend: one entry per named series, band and marker, drawn as the plot draws them.
function legend(parent, spec) {
  const box = el("div", {class: "pcr-legend"}, parent);
  const item = (name, draw) => {
    const span = el("span", {}, box);
    const icon = svg("svg", {width: 24, height: 14, "aria-hidden": "true"}, span);
    draw(icon);
    span.appendChild(document.createTextNode(name));
  };
  for (const s of spec.series || []) {
    if (!s.name || !(s.x || []).length) continue;
    item(s.name, g => {
      svg("line", {x1: 1, y1: 7, x2: 23, y2: 7, stroke: s.color, "stroke-width": 2,
                   "stroke-dasharray": s.dash ? "5 3" : null}, g);
      if (s.points) svg("circle", {cx: 12, cy: 7, r: 4, fill: s.color}, g);
    });
  }
  for (const b of spec.bands || []) {
    if (!b.name || !(b.x || []).length) continue;
    item(b.name, g => svg("rect", {x: 1, y: 2, width: 22, height: 10, fill: b.color,
                                   "fill-opacity": 0.35}, g));
  }
  for (const b of spec.bars || []) {
    if (b.name) item(b.name, g => svg("rect", {x: 4, y: 1, width: 16, height: 12, fill: b.color}, g));
  }
  for (const r of spec.rules || []) {
    if (!r.name) continue;
    item(r.name, g => svg("line", {x1: 1, y1: 7, x2: 23, y2: 7, stroke: r.color,
                                   "stroke-width": 2, "stroke-dasharray": r.dash ? "6 4" : null},
                          g));
  }
  if (spec.marker && spec.marker.name) {
    item(spec.marker.name, g => svg("circle", {cx: 12, cy: 7, r: 5.5, fill: "none",
                                               stroke: spec.marker.color, "stroke-width": 3}, g));
  }
  return box;
}

// Draw a line chart into `parent` (emptied first). `spec`:
//   title, xLabel, yLabel, xFormat ("percent" or "number"), xDomain, yDomain (optional),
//   series: [{name, x, y, color, dash, points, labels, tips, onPoint(i)}],
//   bands: [{name, x, lo, hi, color}], marker: {x, y, name, color},
//   rules: [{axis: "x" or "y", value, color, dash, name}] (lines across the plot),
//   a series with `line: false` draws its points alone;
//   width, height (of the plot's drawing, in CSS pixels: it scales to its box), label (alt).
export function lineChart(parent, spec) {
  parent.replaceChildren();
  if (spec.title) el("div", {class: "pcr-chart-title"}, parent, spec.title);
  legend(parent, spec);
  const W = spec.width || 440, H = spec.height || 260;
  const m = {left: 62, right: 14, top: 8, bottom: 40};
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", class: "pcr-chart-svg",
                           "aria-label": spec.label || spec.title || "chart"}, parent);
  const xs = [], ys = [];
  for (const s of spec.series || []) { xs.push(...(s.x || [])); ys.push(...(s.y || [])); }
  for (const b of spec.bands || []) {
    xs.push(...(b.x || [])); ys.push(...(b.lo || []), ...(b.hi || []));
  }
  const [x0, x1] = spec.xDomain || extent(xs, 0.04);
  const [y0, y1] = spec.yDomain || extent(ys, 0.06);
  const px = x => m.left + (Number(x) - x0) / (x1 - x0) * (W - m.left - m.right);
  const py = y => H - m.bottom - (Number(y) - y0) / (y1 - y0) * (H - m.top - m.bottom);
  const axes = svg("g", {class: "pcr-axes"}, root);
  for (const t of ticks(y0, y1)) {
    svg("line", {x1: m.left, x2: W - m.right, y1: py(t), y2: py(t), class: "pcr-grid"}, axes);
    svg("text", {x: m.left - 6, y: py(t) + 4, "text-anchor": "end"}, axes, format(t));
  }
  for (const t of ticks(x0, x1)) {
    svg("line", {x1: px(t), x2: px(t), y1: H - m.bottom, y2: H - m.bottom + 4,
                 class: "pcr-tick"}, axes);
    svg("text", {x: px(t), y: H - m.bottom + 16, "text-anchor": "middle"}, axes,
        format(t, spec.xFormat));
  }
  svg("rect", {x: m.left, y: m.top, width: W - m.left - m.right, height: H - m.top - m.bottom,
               class: "pcr-frame"}, axes);
  if (spec.xLabel) {
    svg("text", {x: (m.left + W - m.right) / 2, y: H - 6, "text-anchor": "middle",
                 class: "pcr-axis-label"}, axes, spec.xLabel);
  }
  if (spec.yLabel) {
    const cy = (m.top + H - m.bottom) / 2;
    svg("text", {x: 19, y: cy, transform: `rotate(-90 19 ${cy})`, "text-anchor": "middle",
                 class: "pcr-axis-label"}, axes, spec.yLabel);
  }
  for (const b of spec.bands || []) {
    const idx = (b.x || []).map((_, i) => i).filter(i => finite(b.lo[i]) && finite(b.hi[i]));
    if (!idx.length) continue;
    const upper = idx.map(i => `${px(b.x[i])},${py(b.hi[i])}`);
    const lower = idx.slice().reverse().map(i => `${px(b.x[i])},${py(b.lo[i])}`);
    svg("polygon", {points: [...upper, ...lower].join(" "), fill: b.color,
                    "fill-opacity": 0.35, stroke: "none"}, root);
  }
  for (const s of spec.series || []) {
    const x = s.x || [], y = s.y || [];
    let path = "", pen = false;
    for (let i = 0; i < x.length; i++) {
      if (!finite(y[i])) { pen = false; continue; }
      path += `${pen ? "L" : "M"}${px(x[i]).toFixed(1)},${py(y[i]).toFixed(1)}`;
      pen = true;
    }
    if (s.line !== false) {
      svg("path", {d: path, fill: "none", stroke: s.color, "stroke-width": 2,
                   "stroke-dasharray": s.dash ? "5 3" : null}, root);
    }
    if (!s.points) continue;
    for (let i = 0; i < x.length; i++) {
      if (!finite(y[i])) continue;
      const dot = svg("circle", {cx: px(x[i]), cy: py(y[i]), r: 4.5, fill: s.color,
                                 class: s.onPoint ? "pcr-point pcr-clickable" : "pcr-point"},
                      root);
      if (s.tips) svg("title", {}, dot, s.tips[i]);
      if (s.onPoint) dot.addEventListener("click", () => s.onPoint(i));
      if (s.labels) {
        svg("text", {x: px(x[i]) + 6, y: py(y[i]) - 6, class: "pcr-point-label"}, root,
            s.labels[i]);
      }
    }
  }
  for (const r of spec.rules || []) {
    if (!finite(r.value)) continue;
    const at = r.axis === "x" ? px(r.value) : py(r.value);
    const [xa, xb, ya, yb] = r.axis === "x" ? [at, at, m.top, H - m.bottom]
      : [m.left, W - m.right, at, at];
    svg("line", {x1: xa, x2: xb, y1: ya, y2: yb, stroke: r.color, "stroke-width": 2,
                 "stroke-dasharray": r.dash ? "6 4" : null, class: "pcr-rule"}, root);
  }
  const mk = spec.marker;
  if (mk && finite(mk.x) && finite(mk.y)) {
    svg("circle", {cx: px(mk.x), cy: py(mk.y), r: 8, fill: "none", stroke: mk.color,
                   "stroke-width": 3, class: "pcr-marker"}, root);
  }
  return root;
}

// Draw a bar chart into `parent` (emptied first): one group of bars per category, one bar
// per series in each (or stacked). `spec`: title, label (alt), categories, yLabel,
// series: [{name, values, color, tips}], stacked, yFormat ("percent" or "number"),
// yDomain (optional), rules: [{value, color, dash, name}] (horizontal lines), width, height.
export function barChart(parent, spec) {
  parent.replaceChildren();
  if (spec.title) el("div", {class: "pcr-chart-title"}, parent, spec.title);
  legend(parent, {bars: spec.series, rules: spec.rules});
  const W = spec.width || 440, H = spec.height || 240;
  const m = {left: 62, right: 14, top: 8, bottom: 44};
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", class: "pcr-chart-svg",
                           "aria-label": spec.label || spec.title || "chart"}, parent);
  const cats = spec.categories || [], series = spec.series || [];
  const tops = cats.map((_, i) => spec.stacked
    ? series.reduce((a, s) => a + (finite(s.values[i]) ? Number(s.values[i]) : 0), 0)
    : Math.max(0, ...series.map(s => finite(s.values[i]) ? Number(s.values[i]) : 0)));
  const ruleTops = (spec.rules || []).filter(r => finite(r.value)).map(r => Number(r.value));
  const [y0, y1] = spec.yDomain || [0, Math.max(1e-12, ...tops, ...ruleTops) * 1.08];
  const py = y => H - m.bottom - (Number(y) - y0) / (y1 - y0) * (H - m.top - m.bottom);
  const band = (W - m.left - m.right) / Math.max(1, cats.length);
  const axes = svg("g", {class: "pcr-axes"}, root);
  for (const t of ticks(y0, y1)) {
    svg("line", {x1: m.left, x2: W - m.right, y1: py(t), y2: py(t), class: "pcr-grid"}, axes);
    svg("text", {x: m.left - 6, y: py(t) + 4, "text-anchor": "end"}, axes,
        format(t, spec.yFormat));
  }
  svg("rect", {x: m.left, y: m.top, width: W - m.left - m.right, height: H - m.top - m.bottom,
               class: "pcr-frame"}, axes);
  cats.forEach((c, i) => {
    svg("text", {x: m.left + band * (i + 0.5), y: H - m.bottom + 16, "text-anchor": "middle"},
        axes, c);
  });
  if (spec.yLabel) {
    const cy = (m.top + H - m.bottom) / 2;
    svg("text", {x: 19, y: cy, transform: `rotate(-90 19 ${cy})`, "text-anchor": "middle",
                 class: "pcr-axis-label"}, axes, spec.yLabel);
  }
  const inner = band * 0.8, width = spec.stacked ? inner : inner / Math.max(1, series.length);
  cats.forEach((_, i) => {
    let base = 0;
    series.forEach((s, j) => {
      const v = finite(s.values[i]) ? Number(s.values[i]) : null;
      if (v === null) return;
      const x = m.left + band * i + band * 0.1 + (spec.stacked ? 0 : j * width);
      const lo = spec.stacked ? base : 0, hi = lo + v;
      const bar = svg("rect", {x, y: py(hi), width: Math.max(1, width - 1),
                               height: Math.max(0, py(lo) - py(hi)), fill: s.color,
                               class: "pcr-bar"}, root);
      if (s.tips) svg("title", {}, bar, s.tips[i]);
      base = hi;
    });
  });
  for (const r of spec.rules || []) {
    if (!finite(r.value)) continue;
    svg("line", {x1: m.left, x2: W - m.right, y1: py(r.value), y2: py(r.value), stroke: r.color,
                 "stroke-width": 2, "stroke-dasharray": r.dash ? "6 4" : null,
                 class: "pcr-rule"}, root);
  }
  return root;
}
