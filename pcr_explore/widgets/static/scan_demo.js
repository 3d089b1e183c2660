// The scan demo page. Every level's pictures, caption and readout were made before the page
// was written (`data`: see pcr_explore.widgets.scan_demo); these functions only pick among
// them. scanPage(data) wires the page up and returns what the Bokeh controls call.
import { player } from "./player.js";

const MODES = ["level", "side", "split", "diff"];
const ARIA = ["aria-valuenow", "aria-valuetext", "aria-valuemin", "aria-valuemax"];

// The state a page starts in: the image and level position `data.start` names.
export function initialState(data) {
  return {image: data.start.image, pos: data.start.pos, mode: "level", line: 0.5, zoom: 1,
          cx: 0.5, cy: 0.5, scale: "value", timer: null};
}

// What the zoom and the split line add to the byte counter (its `<!--view-->` slot).
export function viewText(data, state) {
  const pct = v => `${Math.round(v * 100)}%`;
  let text = "";
  if (state.zoom > 1) text += ` &middot; zoom x${state.zoom} at (${pct(state.cx)}, ${pct(state.cy)})`;
  if (state.mode === "split") text += ` &middot; ${data.split}`;
  return text;
}

// The pictures, the byte counter and the readout of `state`, drawn into `root`.
export function draw(root, data, state) {
  const $ = id => root.getElementById(id);
  const im = data.images[state.image], p = state.pos, m = state.mode;
  const img = $("pcr-level-img"), over = $("pcr-over"), line = $("pcr-split-line");
  img.width = im.w; img.height = im.h;
  img.src = data.pics[im.levels[p]];
  over.hidden = line.hidden = m !== "split";
  if (m === "split") {
    over.src = data.pics[im.full];
    over.style.clipPath = `inset(0 0 0 ${(state.line * 100).toFixed(2)}%)`;
    line.style.left = `${(state.line * 100).toFixed(2)}%`;
  }
  const right = m === "side" || m === "diff";
  $("pcr-right").hidden = !right;
  if (right) {
    const other = $("pcr-other");
    other.width = im.w; other.height = im.h;
    other.src = data.pics[m === "side" ? im.full : im.diffs[p]];
    $("pcr-right-caption").innerHTML = m === "side" ? data.side_caption : data.diff_caption;
  }
  $("pcr-caption").innerHTML = im.captions[p].replace("<!--view-->", viewText(data, state));
  $("pcr-readout").innerHTML = im.readouts[p];
  for (const el of root.querySelectorAll(".pcr-zoom")) {
    el.style.transform = state.zoom > 1 ? `scale(${state.zoom})` : "";
    el.style.transformOrigin = `${state.cx * 100}% ${state.cy * 100}%`;
    el.classList.toggle("pcr-pixels", state.zoom > 1);
  }
}

// noUiSlider, under Bokeh's categorical slider, gives its handle the position (from 0) as
// its value: a screen reader would say one less than the level shown. The handle says
// the level instead, whenever noUiSlider writes its own values back.
function sliderHandle(node) {
  for (const e of node.querySelectorAll("*")) {
    if (e.classList.contains("noUi-handle")) return e;
    const inner = e.shadowRoot && sliderHandle(e.shadowRoot);
    if (inner) return inner;
  }
  return null;
}

export function announceLevel(handle, levels, now) {
  const last = levels[levels.length - 1];
  const want = {"aria-valuenow": now, "aria-valuemin": String(levels[0]),
                "aria-valuemax": String(last), "aria-valuetext": `scan ${now} of ${last}`,
                "aria-label": "scan level"};
  for (const [k, v] of Object.entries(want)) {
    if (handle.getAttribute(k) !== v) handle.setAttribute(k, v);
  }
}

export function scanPage(data, root = document) {
  const S = initialState(data);
  const $ = id => root.getElementById(id);
  const model = name => window.Bokeh.documents[0].get_model_by_name(name);
  const redraw = () => draw(root, data, S);

  function marker(m) {
    const c = m.curves[S.image].data, p = S.pos;
    m.current.data = {x: [c.x[p]], y: [c["y_" + S.scale][p]], scan: [c.scan[p]],
                      bytes: [c.bytes[p]]};
  }
  function curve(m) {
    const c = m.curves[S.image].data;
    m.image.data = {x: c.x, y: c["y_" + S.scale], scan: c.scan, bytes: c.bytes, label: c.label,
                    dx: c.dx};
    marker(m);
  }
  function stop(button) {
    clearInterval(S.timer); S.timer = null;
    if (button) button.label = "\u25b6 play";
  }
  function watch(tries) {  // the slider is drawn once Bokeh has embedded the page
    const ready = window.Bokeh && window.Bokeh.documents.length;
    const h = ready ? sliderHandle($("pcr-slot-level")) : null;
    if (!h) { if (tries > 0) setTimeout(() => watch(tries - 1), 100); return; }
    const announce = () => announceLevel(h, data.levels, model("pcr-level").value);
    announce();
    new MutationObserver(announce).observe(h, {attributes: true, attributeFilter: ARIA});
  }

  // In split mode a drag moves the line; otherwise a click sets the zoom centre.
  function where(ev) {
    const r = $("pcr-stage").getBoundingClientRect();
    const f = [(ev.clientX - r.left) / r.width, (ev.clientY - r.top) / r.height];
    const u = S.zoom > 1 ? [S.cx + (f[0] - S.cx) / S.zoom, S.cy + (f[1] - S.cy) / S.zoom] : f;
    return u.map(v => Math.min(1, Math.max(0, v)));
  }
  function point(ev) {
    const [x, y] = where(ev);
    if (S.mode === "split") { model("pcr-line").value = Math.round(x * 100) / 100; return; }
    S.cx = x; S.cy = y; redraw();
  }
  function start() {
    redraw();
    watch(600);
    const stage = $("pcr-stage");
    stage.addEventListener("pointerdown", ev => {
      stage.setPointerCapture(ev.pointerId);
      point(ev);
    });
    stage.addEventListener("pointermove", ev => {
      if (ev.buttons && S.mode === "split") point(ev);
    });
    root.addEventListener("keydown", ev => {
      // a focused slider steps by itself; a select or a field keeps its keys
      if (ev.defaultPrevented || (ev.target.closest && ev.target.closest("select, input"))) return;
      const step = {ArrowRight: 1, ArrowLeft: -1}[ev.key];
      if (!step) return;
      const s = model("pcr-level"), cats = s.categories;
      s.value = cats[Math.min(cats.length - 1, Math.max(0, cats.indexOf(s.value) + step))];
      ev.preventDefault();
    });
  }
  if (root.readyState === "loading") root.addEventListener("DOMContentLoaded", start);
  else start();

  return {
    state: S,
    level(value, m) { S.pos = data.levels.indexOf(Number(value)); redraw(); marker(m); },
    image(i, m) { S.image = i; redraw(); curve(m); },
    step(d, picker) {
      const n = data.images.length;
      picker.value = String((Number(picker.value) + d + n) % n);
    },
    mode(active, line) { S.mode = MODES[active]; line.disabled = S.mode !== "split"; redraw(); },
    set(key, value) { S[key] = value; redraw(); },
    scale(active, m) {
      S.scale = active ? "db" : "value";
      const b = m.band.data;
      m.dataset.data = {x: b.x, mean: b["mean_" + S.scale], lo: b["lo_" + S.scale],
                        hi: b["hi_" + S.scale]};
      m.yaxis.axis_label = m.labels[active];
      curve(m);
    },
    play: player(S, stop, 700),
    tap(source, slider) {
      const idx = source.selected.indices;
      if (!idx.length) return;
      slider.value = String(source.data.scan[idx[0]]);
      source.selected.indices = [];
    },
  };
}
