"""How each path's cost grows with the dataset: per-image time and peak memory from 1,000 images up.

A generated labelled dataset of N distinct images stands in for a scaled-down
ImageNet: random crops (a quarter to all of the side), flips, quarter turns,
colour gains and gamma of the bundled sample photos (scikit-image's, the
ones ``pcr-explore sample`` uses), saved as baseline JPEGs of 128-384 px
(quality 80-95), one in fifty grayscale, in 10 class folders. Planted at
fixed rates: an exact copy (1 in 200), a resized and recompressed near copy
(1 in 200), a truncated file (1 in 1,000). The folder is generated once per
N and kept in ``--work``.

For each N every step below runs in a fresh process (``bench/_procs.py``
measures the process tree: wall and CPU time, peak resident memory of the
main process and of the largest worker):

==============  ===================================================  ===========
step            what runs                                            per
==============  ===================================================  ===========
encode          ``encode_dataset(src, workers=2)``                   image
open            ``open_dataset`` + ``summary()``                     image
read-1/5/10     every image decoded by ``ds.iter(scan=L)``           image
loader          one DataLoader pass, level 5, 128 px, 2 workers      image
random          1,000 ``ds.image(i, scan=5)`` at random ``i`` (the   read
                reads alone, timed in the process)
verify          ``verify_dataset``                                   image
audit           ``audit(src, workers=2)`` (the defaults: bytes       image
                estimated from 32 files, quality sample 32)
audit-bytes     the same with exact bytes (``bytes_sample=None``)    image
quality         ``quality_curve(pcr, sample=256, workers=2)``        sampled
budget          ``budget(pcr)`` without training (sample 64)         call
export          ``export_dataset(pcr, scan=5)`` to WebDataset        image
cache           a level-5 pass through a prefix cache holding a      image
                quarter of the level-5 bytes (evicting all along)
==============  ===================================================  ===========

``--million`` checks a dataset of 1,000,000 tiny images (32-64 px) whose
records are written directly: 1,000 generated images are encoded once into
one record, and that record file is copied 1,000 times under the names the
encoder gives, with a manifest listing the 1,000 records (encoding a
million images would take this 2-core machine most of an hour and measure
the encoder again, which the main table already does). Its steps:
``m-open`` (``open_dataset`` + ``summary()``), ``m-random`` (1,000 random
``ds.image(i, scan=5)``) and ``m-verify`` (every byte of every record read
and checked).

The table gives each step's time per unit at every N and its ratio to the
smallest N (the goal: within 1.3x at 100,000), and the peak memory with its
ratio. Results accumulate in ``bench/results/scale.json`` (a step run again
replaces its row), so the large N can be run on its own later; the log-log
plot (time per unit and peak memory against N) is written to
``bench/results/scale.html`` and, where Chromium is installed, ``scale.png``.

Usage::

    python bench/bench_scale.py --n 1000 10000 [--steps encode read-5 ...]
        [--work /tmp/pcr-scale]
    python bench/bench_scale.py --report     # the table and plot of what is saved
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _procs import measure  # noqa: E402

RESULTS = HERE / "results" / "scale.json"
CLASSES = 10
EXACT_EVERY, NEAR_EVERY, BROKEN_EVERY = 200, 200, 1000

# step -> what its cost is divided by
UNITS = {
    "encode": "image",
    "open": "image",
    "read-1": "image",
    "read-5": "image",
    "read-10": "image",
    "loader": "image",
    "random": "read",
    "verify": "image",
    "audit": "image",
    "audit-bytes": "image",
    "quality": "sampled",
    "budget": "call",
    "export": "image",
    "cache": "image",
}
MILLION = {"m-open": "image", "m-random": "read", "m-verify": "image"}
MILLION_COPIES = 1000
RANDOM_READS = 1000
QUALITY_SAMPLE = 256

# -- the generated dataset ---------------------------------------------------------------

_BASES: list[np.ndarray] = []


def _bases() -> list[np.ndarray]:
    if not _BASES:
        from pcr_explore.encode.sample import SAMPLE_CLASSES

        for photos in SAMPLE_CLASSES.values():
            for load in photos.values():
                a = load()
                _BASES.append(np.dstack([a] * 3) if a.ndim == 2 else a[..., :3])
    return _BASES


def _make(i: int) -> Any:
    """Image *i* of every generated dataset (the same for every N)."""
    from PIL import Image

    rng = np.random.default_rng(i)
    base = _bases()[int(rng.integers(len(_bases())))]
    h, w = base.shape[:2]
    side = float(rng.uniform(0.25, 1.0))
    ch, cw = max(16, int(h * side * rng.uniform(0.8, 1.0))), max(16, int(w * side))
    y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
    a = base[y : y + ch, x : x + cw].astype(np.float32)
    if rng.random() < 0.5:
        a = a[:, ::-1]
    a = np.rot90(a, int(rng.integers(4)))
    gains = rng.uniform(0.7, 1.3, 3).astype(np.float32)
    gamma = float(rng.uniform(0.7, 1.4))
    a = 255.0 * (np.clip(a * gains / 255.0, 0, 1) ** gamma)
    im = Image.fromarray(a.astype(np.uint8))
    long = int(rng.integers(128, 385))
    scale = long / max(im.size)
    im = im.resize((max(8, round(im.width * scale)), max(8, round(im.height * scale))))
    if rng.random() < 0.02:
        im = im.convert("L")
    return im, int(rng.integers(80, 96))


def _write(args: tuple[Path, int, int]) -> int:
    from PIL import Image

    root, start, stop = args
    for i in range(start, stop):
        path = root / f"c{i % CLASSES}" / f"img{i:07d}.jpg"
        if i % EXACT_EVERY == EXACT_EVERY - 1:  # an exact copy of the image before it
            im, q = _make(i - 1)
            im.save(path, "JPEG", quality=q)
        elif i % NEAR_EVERY == NEAR_EVERY // 2:  # a resized, recompressed copy
            im, _ = _make(i - 1)
            im.resize((im.width * 4 // 5, im.height * 4 // 5), Image.Resampling.LANCZOS).save(
                path, "JPEG", quality=70
            )
        else:
            im, q = _make(i)
            im.save(path, "JPEG", quality=q)
        if i % BROKEN_EVERY == BROKEN_EVERY // 3:  # a truncated file
            data = path.read_bytes()
            path.write_bytes(data[: len(data) // 2])
    return stop - start


def generate(work: Path, n: int) -> Path:
    """The folder of N generated images (made once, kept)."""
    root = work / f"src-{n}"
    done = root / ".complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    for c in range(CLASSES):
        (root / f"c{c}").mkdir(parents=True)
    chunks = [(root, s, min(s + 500, n)) for s in range(0, n, 500)]
    t = time.perf_counter()
    with Pool(2) as pool:
        for _ in pool.imap_unordered(_write, chunks):
            pass
    done.write_text(f"{n}\n")
    print(f"generated {n:,} images in {time.perf_counter() - t:.0f} s: {root}", flush=True)
    return root


def build_million(work: Path) -> Path:
    """A 1,000,000-image dataset: one encoded record of 1,000 tiny images, copied 1,000 times."""
    import pcr_explore as pcr
    from pcr_explore.encode._plan import record_file

    root = work / "million"
    if (root / "manifest.json").exists():
        return root
    src = work / "src-tiny"
    if not (src / ".complete").exists():
        shutil.rmtree(src, ignore_errors=True)
        for c in range(CLASSES):
            (src / f"c{c}").mkdir(parents=True)
        for i in range(MILLION_COPIES):
            im, q = _make(i)
            im.thumbnail((64, 64))
            im.save(src / f"c{i % CLASSES}" / f"img{i:07d}.jpg", "JPEG", quality=q)
        (src / ".complete").write_text("1\n")
    one = work / "pcr-tiny"
    pcr.encode_dataset(src, one, workers=2, progress=False, overwrite=True, record_size=1 << 30)
    m = json.loads((one / "manifest.json").read_text())
    (entry,) = m["records"]
    staging = work / ".million-staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    records = []
    for i in range(MILLION_COPIES):
        shutil.copyfile(one / entry["file"], staging / record_file(i))
        records.append({**entry, "file": record_file(i)})
    m.update(
        records=records,
        images=entry["images"] * MILLION_COPIES,
        source_bytes=m["source_bytes"] * MILLION_COPIES,
        skipped=[],
    )
    (staging / "manifest.json").write_text(json.dumps(m))
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    return root


# -- one step, in its own process --------------------------------------------------------


def _one(step: str, n: int, work: Path, out: Path) -> None:
    import warnings

    import pcr_explore as pcr

    warnings.simplefilter("ignore")  # the planted broken files warn on every pass
    src, ds_path = work / f"src-{n}", work / f"pcr-{n}"
    if step.startswith("m-"):
        ds_path = work / "million"
        step = step[2:]
    info: dict[str, Any] = {}
    if step == "encode":
        s = pcr.encode_dataset(src, ds_path, workers=2, progress=False, overwrite=True)
        info = {"images": s.images, "skipped": s.skipped}
    elif step == "open":
        ds = pcr.open_dataset(str(ds_path))
        summary = ds.summary()
        info = {"images": summary.images, "records": summary.records, "len": len(ds)}
    elif step.startswith("read-"):
        ds = pcr.open_dataset(str(ds_path))
        scan = min(int(step[5:]), ds.num_scans)
        info = {"images": sum(1 for _ in ds.iter(scan, on_error="skip")), "scan": scan}
    elif step == "loader":
        from torch.utils.data import DataLoader

        data = pcr.read.torch_dataset(str(ds_path), scan=5, size=(128, 128))
        loader = DataLoader(data, batch_size=64, num_workers=2)
        info = {"images": sum(len(labels) for _, labels in loader)}
    elif step == "random":
        ds = pcr.open_dataset(str(ds_path))
        rng = random.Random(0)
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(RANDOM_READS):
            ds.image(rng.randrange(len(ds)), scan=5)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        # the reads alone: the start and the open are as long at every N (the open step)
        info = {"reads": RANDOM_READS, "bytes_read": ds.stats.bytes_read}
        info |= {"reads_wall_s": round(wall, 4), "reads_cpu_s": round(cpu, 4)}
    elif step == "verify":
        r = pcr.verify_dataset(str(ds_path))
        info = {"ok": bool(r.ok), "records": r.records}
    elif step in ("audit", "audit-bytes"):
        opts = pcr.AuditOptions(bytes_sample=None) if step == "audit-bytes" else pcr.AuditOptions()
        r = pcr.audit(src, workers=2, progress=False, options=opts)
        info = {
            "images": r.images,
            "issue_counts": r.issue_counts,
            "duplicate_sets": len(r.duplicate_sets),
        }
    elif step == "quality":
        c = pcr.quality_curve(str(ds_path), sample=QUALITY_SAMPLE, workers=2, progress=False)
        info = {"levels": len(c.scans), "sampled": len(c.indices)}
    elif step == "budget":
        r = pcr.budget(str(ds_path), progress=False)
        info = {"recommended": r.recommended}
    elif step == "export":
        s = pcr.export_dataset(
            str(ds_path), work / f"export-{n}", scan=5, overwrite=True, progress=False
        )
        info = {"images": s.images}
    elif step == "cache":
        cache = work / f"cache-{n}"
        shutil.rmtree(cache, ignore_errors=True)
        whole = pcr.open_dataset(str(ds_path))
        limit = whole.summary().bytes_per_scan[4] // 4  # cumulative: level 5 is index 4
        ds = pcr.open_dataset(str(ds_path), cache_dir=cache, cache_max_bytes=limit)
        images = sum(1 for _ in ds.iter(5, on_error="skip"))
        info = {"images": images, "limit": limit, "cache_bytes": ds.stats.cache_bytes}
    else:
        raise SystemExit(f"unknown step {step!r}; steps: {', '.join(UNITS)}")
    out.write_text(json.dumps(info, default=str))


def _units(step: str, n: int) -> int:
    if step.startswith("m-"):
        return RANDOM_READS if step == "m-random" else n
    return {"random": RANDOM_READS, "quality": min(n, QUALITY_SAMPLE), "budget": 1}.get(step, n)


def run_step(step: str, n: int, work: Path) -> dict[str, Any]:
    out = work / f".step-{os.getpid()}.json"
    load = os.getloadavg()[0]
    cost = measure([sys.executable, __file__, "--one", step, str(n), str(work), str(out)])
    if cost.returncode != 0:
        raise SystemExit(f"step {step} at N={n} failed (exit status {cost.returncode})")
    info = json.loads(out.read_text())
    out.unlink()
    units = _units(step, n)
    # random reads: per read from the reads' own time, measured in the process
    wall_s, cpu_s = info.get("reads_wall_s", cost.wall_s), info.get("reads_cpu_s", cost.cpu_s)
    return {
        "n": n,
        "step": step,
        "units": units,
        "wall_s": cost.wall_s,
        "cpu_s": cost.cpu_s,
        "wall_ms_per_unit": 1e3 * wall_s / units,
        "cpu_ms_per_unit": 1e3 * cpu_s / units,
        "main_mb": cost.main_mb,
        "worker_max_mb": cost.worker_max_mb,
        "peak_mb": max(cost.main_mb, cost.worker_max_mb),
        "load_at_start": load,
        "info": info,
    }


# -- the saved results: table and plot ---------------------------------------------------


def _load() -> dict[str, Any]:
    if RESULTS.exists():
        return json.loads(RESULTS.read_text())
    return {"rows": []}


def _save(saved: dict[str, Any]) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(saved, indent=1) + "\n")
    os.replace(tmp, RESULTS)


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: time per unit at each N, wall and CPU ratios to the smallest N, peak memory."""
    ns = sorted({r["n"] for r in rows})
    by = {(r["step"], r["n"]): r for r in rows}
    head = ["step", "per"] + [f"ms N={n:,}" for n in ns]
    head += [f"wall x {n:,}" for n in ns[1:]] + [f"CPU x {n:,}" for n in ns[1:]]
    head += [f"MB N={n:,}" for n in ns] + [f"MB x {n:,}" for n in ns[1:]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def ratio(g: dict[str, Any] | None, first: dict[str, Any] | None, key: str) -> str:
        return f"{g[key] / first[key]:.2f}" if g and first and first[key] else ""

    for step in UNITS:
        got = [by.get((step, n)) for n in ns]
        if not any(got):
            continue
        first = got[0]
        cells = [step, UNITS[step]]
        cells += [f"{g['wall_ms_per_unit']:.3g}" if g else "" for g in got]
        cells += [ratio(g, first, "wall_ms_per_unit") for g in got[1:]]
        cells += [ratio(g, first, "cpu_ms_per_unit") for g in got[1:]]
        cells += [f"{g['peak_mb']:.0f}" if g else "" for g in got]
        cells += [ratio(g, first, "peak_mb") for g in got[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]]) -> Path:
    """Log-log: CPU time per unit over its value at the smallest N, and peak memory, against N."""
    from bokeh.embed import file_html
    from bokeh.layouts import row
    from bokeh.models import Span
    from bokeh.palettes import Category20
    from bokeh.plotting import figure
    from bokeh.resources import INLINE

    opts: dict[str, Any] = {
        "x_axis_type": "log",
        "y_axis_type": "log",
        "width": 600,
        "height": 440,
        "toolbar_location": None,
        "x_axis_label": "images (N)",
    }
    # CPU time: on a shared machine the wall time follows the load as much as N
    time_fig = figure(title="CPU time per unit / at the smallest N (measured)", **opts)
    time_fig.yaxis.axis_label = "ratio (1.3: the goal's limit)"
    time_fig.add_layout(Span(location=1.3, dimension="width", line_dash="dashed"))
    mem_fig = figure(title="peak resident memory, largest process (measured)", **opts)
    mem_fig.yaxis.axis_label = "MB"
    for k, step in enumerate(UNITS):
        pts = sorted(((r["n"], r) for r in rows if r["step"] == step), key=lambda p: p[0])
        if not pts:
            continue
        xs = [n for n, _ in pts]
        colour = Category20[20][k % 20]
        first = pts[0][1]["cpu_ms_per_unit"]
        for fig, ys in (
            (time_fig, [r["cpu_ms_per_unit"] / first for _, r in pts]),
            (mem_fig, [r["peak_mb"] for _, r in pts]),
        ):
            fig.line(xs, ys, color=colour, legend_label=step, line_width=2)
            fig.scatter(xs, ys, color=colour, legend_label=step, size=6)
    for fig in (time_fig, mem_fig):
        fig.legend.click_policy = "hide"
        fig.add_layout(fig.legend[0], "right")
    html = RESULTS.with_suffix(".html")
    html.write_text(file_html(row(time_fig, mem_fig), INLINE, "pcr_explore: cost against N"))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        png = RESULTS.with_suffix(".png")
        argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        argv += [f"--screenshot={png}", "--window-size=1460,470", html.as_uri()]
        subprocess.run(argv, capture_output=True, check=False, timeout=120)
    return html


def _show(r: dict[str, Any], unit: str) -> None:
    print(
        f"N={r['n']:>9,} {r['step']:<12} {r['wall_s']:8.1f} s wall {r['cpu_s']:8.1f} s CPU "
        f"{r['wall_ms_per_unit']:8.3f} ms/{unit:<7} peak {r['peak_mb']:6.0f} MB "
        f"(load {r['load_at_start']:.1f}) {r['info']}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument("--steps", nargs="+", default=list(UNITS), choices=list(UNITS))
    ap.add_argument("--work", type=Path, default=HERE / "_data" / "scale")
    ap.add_argument("--million", action="store_true", help="also the 1,000,000-image check")
    ap.add_argument("--report", action="store_true", help="only print the saved results")
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        step, n, work, out = args.one
        _one(step, int(n), Path(work), Path(out))
        return
    saved = _load()
    if not args.report:
        args.work.mkdir(parents=True, exist_ok=True)
        saved["machine"] = {"cores": os.cpu_count(), "python": platform.python_version()}
        for n in args.n:
            generate(args.work, n)
            order = [s for s in UNITS if s in args.steps]
            if "encode" not in order and not (args.work / f"pcr-{n}" / "manifest.json").exists():
                order.insert(0, "encode")
            for step in order:
                row_ = run_step(step, n, args.work)
                _show(row_, UNITS[step])
                saved["rows"] = [r for r in saved["rows"] if (r["step"], r["n"]) != (step, n)] + [
                    row_
                ]
                _save(saved)
        if args.million:
            build_million(args.work)
            for step in MILLION:
                row_ = run_step(step, 1_000_000, args.work)
                _show(row_, MILLION[step])
                saved["million"] = [r for r in saved.get("million", []) if r["step"] != step]
                saved["million"].append(row_)
                _save(saved)
    print("\n" + table(saved["rows"]))
    for r in saved.get("million", []):
        print(
            f"N=1,000,000 {r['step']}: {r['wall_s']:.1f} s wall, "
            f"{r['wall_ms_per_unit']:.4f} ms per {MILLION[r['step']]}, "
            f"peak {r['peak_mb']:.0f} MB {r['info']}"
        )
    if saved["rows"]:
        print(f"\nplot: {plot(saved['rows'])}")


if __name__ == "__main__":
    main()
