// ScanExplorer's front end: an anywidget module. The same file draws the explorer in a
// notebook (the model is the kernel's widget) and on the kernel-free demo page (the model
// is the page's, fed with numbers measured before the page was written).
//
// The model holds, for the image shown, every level's picture, byte counter and readouts
// (`levels` names the levels held: all in a notebook, those embedded on a page), so the
// level slider and the play button show a level without asking the kernel; the zoom, its
// centre and the split line are drawn in the page too.
import { el, lineChart } from "./chart.js";
import { Pictures, button, explorerRoot, grids, picker, pictureUrl, slider, table, toggleGroup }
  from "./controls.js";

const MODES = [["level", "level", "the level alone"],
               ["side", "side by side", "the full image next to it"],
               ["split", "split", "the full image right of the line (move it with x)"],
               ["diff", "difference", "where the level differs from the full image"]];
const COLORS = {image: "#e6550d", dataset: "#3182bd", band: "#9ecae1", marker: "#d62728"};

function build(host) {
  const root = explorerRoot(host, "pcr-scan");
  const row1 = el("div", {class: "pcr-row"}, root);
  const imagePicker = picker(row1, "image");
  const prev = button(row1, "\u25c0", "previous image", {"aria-label": "previous image"});
  const next = button(row1, "\u25b6", "next image", {"aria-label": "next image"});
  const present = button(row1, "presentation", "larger text for a projector",
                         {"aria-pressed": "false"});
  const row2 = el("div", {class: "pcr-row"}, root);
  const play = button(row2, "\u25b6 play", "play the levels", {"aria-label": "play the levels"});
  const level = slider(row2, "scan level", 0, 0, 1, true);
  const zoom = slider(row2, "zoom", 1, 8, 0.5);
  const zx = slider(row2, "x", 0, 1, 0.01);
  const zy = slider(row2, "y", 0, 1, 0.01);
  const scanToggle = button(row2, "what each scan adds",
                            "the coefficients, bits, bytes and pixels the scan at this level adds",
                            {"aria-pressed": "false"});
  const status = el("div", {class: "pcr-status", role: "status"}, root);
  const main = el("div", {class: "pcr-main"}, root);
  const pics = el("section", {class: "pcr-pics", "aria-label": "the image at the level shown"},
                  main);
  const caption = el("div", {class: "pcr-caption", "aria-live": "polite"}, pics);
  const pair = el("div", {class: "pcr-pair"}, pics);
  const fig = el("figure", {class: "pcr-fig"}, pair);
  const stage = el("div", {class: "pcr-stage"}, fig);
  const zoomBox = el("div", {class: "pcr-zoom"}, stage);
  const img = el("img", {alt: "the image at the level shown"}, zoomBox);
  const over = el("img", {class: "pcr-over", alt: "the full image, right of the line",
                          hidden: true}, zoomBox);
  const line = el("div", {class: "pcr-split-line", hidden: true}, zoomBox);
  const right = el("figure", {class: "pcr-fig", hidden: true}, pair);
  const rightStage = el("div", {class: "pcr-stage"}, right);
  const rightZoom = el("div", {class: "pcr-zoom"}, rightStage);
  const other = el("img", {alt: "the full image"}, rightZoom);
  const rightCaption = el("figcaption", {}, right);
  const side = el("section", {class: "pcr-side", "aria-label": "bytes and quality"}, main);
  const chart = el("div", {class: "pcr-chart"}, side);
  const row3 = el("div", {class: "pcr-row"}, side);
  el("span", {class: "pcr-hint"}, side, "click a point to show its level");
  const readout = el("table", {class: "pcr-readout"}, side);
  const panel = el("section", {class: "pcr-scan-panel", hidden: true,
                               "aria-label": "what the scan at this level adds"}, root);
  const error = el("pre", {class: "pcr-error", role: "alert", hidden: true}, root);
  return {root, row1, picker: imagePicker, prev, next, present, play, level, zoom, zx, zy,
          scanToggle,
          status, caption, stage, zoomBox, img, over, line, right, rightZoom, other,
          rightCaption, chart, row3, readout, panel, error};
}

export function renderScan({model, el: host}) {
  const v = build(host);
  const pictures = new Pictures(), diffs = new Pictures(), panelUrls = [];
  const get = k => model.get(k);
  const save = (k, value) => { model.set(k, value); model.save_changes(); };
  let timer = null;

  const mode = toggleGroup(v.row1, "view", MODES.map(([m, t, tip]) => [
    m, m === "diff" ? `difference x${get("gain")}` : t, tip]), m => save("mode", m));
  v.row1.insertBefore(mode.group, v.present);
  const label = get("labels") || {};
  const scale = toggleGroup(v.row3, "quality axis", [
    ["value", label.metric || "value", "the metric itself"],
    ["db", `${label.metric || "value"} in dB`, "-10 log10(1 - value): spreads the upper levels"],
  ], s => save("scale", s));
  scale.group.hidden = !label.db;
  v.scanToggle.hidden = get("has_panel") === false;  // a page without a kernel has no panel

  function names() {
    v.picker.replaceChildren();
    (get("names") || []).forEach((name, i) => el("option", {value: i}, v.picker, name));
    v.picker.value = String(get("image"));
    const several = (get("names") || []).length > 1;
    v.prev.hidden = v.next.hidden = !several;
  }

  function viewNote() {
    const pct = x => `${Math.round(x * 100)}%`;
    let text = "";
    const z = get("zoom"), cx = get("zoom_x"), cy = get("zoom_y");
    if (z > 1) text += ` &middot; zoom x${z} at (${pct(cx)}, ${pct(cy)})`;
    if (get("mode") === "split") text += ` &middot; ${get("split_note")}`;
    return text;
  }

  function chart() {
    const k = get("level"), p = position(), c = get("curve") || {}, d = get("dataset") || {};
    const s = get("scale"), lab = get("labels") || {}, levels = get("levels") || [];
    const x = c.x || [], y = c[`y_${s}`] || [];
    const tips = x.map((_, i) => `scan ${levels[i]}: ${(c.bytes || [])[i]} bytes`);
    lineChart(v.chart, {
      title: lab.title, xLabel: lab.x, yLabel: lab[`y_${s}`], xFormat: "percent",
      xDomain: [-0.03, 1.08], label: `${lab.title}: this image's curve, level ${k} marked`,
      series: [
        {name: "dataset mean", x: d.x || [], y: d[`mean_${s}`] || [], color: COLORS.dataset,
         dash: true},
        {name: "this image", x, y, color: COLORS.image, points: true, tips,
         labels: levels.map(String), onPoint: i => showLevel(levels[i], true)},
      ],
      bands: [{name: "dataset p5-p95", x: d.x || [], lo: d[`lo_${s}`] || [],
               hi: d[`hi_${s}`] || [], color: COLORS.band}],
      marker: {x: x[p], y: y[p], name: "level shown", color: COLORS.marker},
    });
  }

  function zoomed() {
    const z = get("zoom"), cx = get("zoom_x"), cy = get("zoom_y");
    for (const box of [v.zoomBox, v.rightZoom]) {
      box.style.transform = z > 1 ? `scale(${z})` : "";
      box.style.transformOrigin = `${cx * 100}% ${cy * 100}%`;
      box.classList.toggle("pcr-pixels", z > 1);
    }
  }

  function draw() {  // the pictures, counter, readouts and marker of the level shown
    const k = get("level"), n = get("num_scans"), m = get("mode"), p = position();
    v.level.input.value = String(p);
    v.level.out.textContent = `${k} / ${n}`;
    v.level.input.setAttribute("aria-valuetext", `scan ${k} of ${n}`);
    const url = pictures.get("levels", p);
    v.img.hidden = !url;
    if (url) v.img.src = url;
    const [w, h] = get("size") || [0, 0];
    if (w) { v.img.width = w; v.img.height = h; v.other.width = w; v.other.height = h; }
    v.img.alt = `${(get("names") || [])[get("image")] || "the image"} at scan level ${k} of ${n}`;
    const full = pictures.get("levels", (get("levels") || []).length - 1);
    v.over.hidden = v.line.hidden = m !== "split" || !full;
    if (m === "split" && full) {
      v.over.src = full;
      const at = (get("zoom_x") * 100).toFixed(2);
      v.over.style.clipPath = `inset(0 0 0 ${at}%)`;
      v.line.style.left = `${at}%`;
    }
    const rightShown = m === "side" || m === "diff";
    v.right.hidden = !rightShown;
    if (rightShown) {
      const src = m === "side" ? full : diffs.get("diffs", p);
      v.other.hidden = !src;
      if (src) v.other.src = src;
      v.other.alt = m === "side" ? "the full image"
        : `where scan level ${k} differs from the full image, amplified x${get("gain")}`;
      v.rightCaption.innerHTML = !src && m === "diff" ? "drawing the difference maps..."
        : m === "side" ? get("side_caption") : get("diff_caption");
    }
    const captions = get("captions") || [];
    v.caption.innerHTML = (captions[p] || "").replace("<!--view-->", viewNote());
    table(v.readout, (get("readouts") || [])[p]);
    chart();
  }

  function controls() {
    const m = get("mode"), z = get("zoom");
    v.level.input.max = String((get("levels") || []).length - 1);
    v.zoom.input.value = String(z);
    v.zoom.out.textContent = `x${z}`;
    v.zx.input.value = String(get("zoom_x"));
    v.zy.input.value = String(get("zoom_y"));
    v.zx.out.textContent = `${Math.round(get("zoom_x") * 100)}%`;
    v.zy.out.textContent = `${Math.round(get("zoom_y") * 100)}%`;
    v.zx.input.disabled = !(z > 1 || m === "split");
    v.zy.input.disabled = !(z > 1);
    mode.show(m);
    scale.show(get("scale"));
    v.picker.value = String(get("image"));
    zoomed();
  }

  function position() { return Math.max(0, (get("levels") || []).indexOf(get("level"))); }

  // Show level `k` (a level held) or the one `d` places from the level shown.
  function showLevel(k, send, d = 0) {
    const levels = get("levels") || [];
    if (d) k = levels[Math.min(levels.length - 1, Math.max(0, position() + d))];
    if (k === undefined || k === get("level") || !levels.includes(k)) return;
    model.set("level", k);
    if (send) model.save_changes();
  }

  function stop() {
    clearInterval(timer); timer = null;
    v.play.textContent = "\u25b6 play";
    v.play.setAttribute("aria-label", "play the levels");
  }

  function panel() {
    const open = get("scan_open"), p = get("scan_panel") || {};
    v.scanToggle.setAttribute("aria-pressed", String(open));
    v.panel.hidden = !open;
    if (!open) return;
    v.panel.replaceChildren();
    for (const u of panelUrls.splice(0)) URL.revokeObjectURL(u);
    if (!p.grid) { el("p", {class: "pcr-hint"}, v.panel, "drawing what the scan adds..."); return; }
    el("div", {class: "pcr-caption"}, v.panel).innerHTML = p.caption;
    el("div", {class: "pcr-chart-title"}, v.panel, p.title);
    grids(el("div", {class: "pcr-grid-box"}, v.panel), p.grid, p.title);
    el("p", {class: "pcr-hint"}, v.panel, p.legend);
    const below = el("div", {class: "pcr-row pcr-top"}, v.panel);
    table(el("table", {class: "pcr-readout"}, below), p.rows);
    for (const [key, cap, alt] of [["picture", p.picture_caption, p.picture_alt],
                                   ["added", p.added_caption, p.added_alt]]) {
      const f = el("figure", {class: "pcr-fig pcr-small"}, below);
      el("figcaption", {}, f).innerHTML = cap;
      const url = pictureUrl(p[key], panelUrls);
      if (url) el("img", {src: url, alt}, f);
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

  // -- the controls ------------------------------------------------------------
  v.level.input.addEventListener("input", () => {
    showLevel((get("levels") || [])[Number(v.level.input.value)], true);
  });
  v.picker.addEventListener("change", () => save("image", Number(v.picker.value)));
  const step = d => {
    const n = (get("names") || []).length;
    save("image", (get("image") + d + n) % n);
  };
  v.prev.addEventListener("click", () => step(-1));
  v.next.addEventListener("click", () => step(1));
  v.zoom.input.addEventListener("input", () => save("zoom", Number(v.zoom.input.value)));
  v.zx.input.addEventListener("input", () => save("zoom_x", Number(v.zx.input.value)));
  v.zy.input.addEventListener("input", () => save("zoom_y", Number(v.zy.input.value)));
  v.present.addEventListener("click", () => save("presentation", !get("presentation")));
  v.scanToggle.addEventListener("click", () => save("scan_open", !get("scan_open")));
  v.play.addEventListener("click", () => {
    if (timer !== null) { stop(); return; }
    const levels = get("levels") || [], last = levels[levels.length - 1];
    if (get("level") >= last) showLevel(levels[0], true);
    v.play.textContent = "\u275a\u275a pause";
    v.play.setAttribute("aria-label", "pause");
    timer = setInterval(() => {
      showLevel(null, true, 1);
      if (get("level") >= last) stop();
    }, 700);
  });
  // In split mode a press moves the line; otherwise it sets the zoom's centre.
  const point = ev => {
    const r = v.stage.getBoundingClientRect(), z = get("zoom");
    const f = [(ev.clientX - r.left) / r.width, (ev.clientY - r.top) / r.height];
    const c = [get("zoom_x"), get("zoom_y")];
    const u = z > 1 ? f.map((x, i) => c[i] + (x - c[i]) / z) : f;
    const [x, y] = u.map(q => Math.round(Math.min(1, Math.max(0, q)) * 100) / 100);
    model.set("zoom_x", x);
    if (get("mode") !== "split") model.set("zoom_y", y);
    model.save_changes();
  };
  v.stage.addEventListener("pointerdown", ev => { v.stage.setPointerCapture(ev.pointerId); point(ev); });
  v.stage.addEventListener("pointermove", ev => { if (ev.buttons && get("mode") === "split") point(ev); });
  v.root.addEventListener("keydown", ev => {
    if (ev.target.closest("input, select")) return;  // a slider or a list steps by itself
    const d = {ArrowRight: 1, ArrowLeft: -1}[ev.key];
    if (!d) return;
    showLevel(null, true, d);
    ev.preventDefault();
  });

  // -- the model -----------------------------------------------------------------
  const on = (keys, fn) => { for (const k of keys) model.on(`change:${k}`, fn); };
  const redraw = () => { controls(); draw(); };
  on(["pictures"], () => { pictures.set("levels", get("pictures")); draw(); });
  on(["diffs"], () => { diffs.set("diffs", get("diffs")); draw(); });
  on(["level", "captions", "readouts", "curve", "dataset", "scale", "labels"], draw);
  on(["mode", "zoom", "zoom_x", "zoom_y", "image", "levels"], redraw);
  on(["names"], names);
  on(["scan_open", "scan_panel"], panel);
  on(["status", "error"], status);
  on(["presentation"], () => {
    v.root.classList.toggle("pcr-present", get("presentation"));
    v.present.setAttribute("aria-pressed", String(get("presentation")));
  });
  pictures.set("levels", get("pictures"));
  diffs.set("diffs", get("diffs"));
  names();
  redraw();
  panel();
  status();
  v.root.classList.toggle("pcr-present", get("presentation"));
  v.present.setAttribute("aria-pressed", String(get("presentation")));
  return () => { stop(); pictures.clear(); diffs.clear(); };
}

export default { render: renderScan };
