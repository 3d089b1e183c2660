"""Benchmark the dataset audit: planted problems found, flags on clean photos, speed, memory.

1. A planted folder, rebuilt each run from the Kodak suite (``../shared/data/
   kodak24``; generated images where it is missing) in two class folders:
   clean photos, and one file per problem: exact duplicate, resized and
   re-compressed near duplicate, the same across classes (label leak),
   blurry, dark, light, 500x50, odd size, grayscale stored as RGB, mode L,
   flat grey (low information), tiny, truncated JPEG, empty file, PNG named
   .jpg. Every planted problem must be found by ``audit``; the flags raised
   on the clean photos are counted. cleanvision (``Imagelab.find_issues``)
   runs on the same folder where it is installed (``pip install
   pcr-explore[bench]``), and its findings are listed beside ours.

2. Speed and memory on real photos: ``../shared/data/flowers5`` (1,500
   Flickr JPEGs, mostly 320x240 to 500x375), every check and the 64-image
   quality sample, against cleanvision's default checks in the same run,
   each tool in a fresh process with 2 workers, ``--repeat`` rounds of one
   run each, interleaved (the tool that goes first alternates). On a shared
   machine the other work changes from minute to minute, so the figure is
   the ratio within each round (wall time, and CPU time of every process
   the tool starts), with their median; the best runs are shown too.
   Memory: the peak resident set (VmHWM) of every process the tool starts,
   polled every 50 ms; the table gives the largest worker and the main
   process, against the 1 GB per worker the audit aims for. Ratios, never
   asserted. The flags raised on these unplanted photos are counted per
   issue type. With ``--bytes-sample N`` a third run per round,
   ``pcr-quick``, audits with ``bytes_sample=N`` (only N images transcoded,
   the bytes per level estimated from them), and its estimate is compared
   with the exact bytes of the default run.

3. ``--huge``: a PNG that decodes to 13,000 x 13,000 pixels (a few hundred
   KB on disk) among three photos, audited with every image in the quality
   sample: the peak memory per worker, which the audit bounds by measuring
   such images at a reduced size.

Usage: ``python bench/bench_audit.py [--repeat 3] [--huge] [--photos DIR]
[--bytes-sample N]``.
Prints tables and writes bench/results/audit.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _procs import measure  # noqa: E402

SHARED = HERE.parent.parent / "shared" / "data"
KODAK = SHARED / "kodak24"
FLOWERS = SHARED / "flowers5"
OUT = HERE / "results" / "audit.json"

# planted file -> the issue type the audit must flag it with
PLANTED = {
    "c1/exact_copy.jpg": "exact_duplicate",
    "c0/near_copy.jpg": "near_duplicate",
    "c1/cross_class_copy.jpg": "label_leak",
    "c1/blurry.jpg": "blurry",
    "c0/dark.jpg": "dark",
    "c0/light.jpg": "light",
    "c1/strip_500x50.jpg": "odd_aspect_ratio",
    "c0/odd_size.jpg": "odd_size",
    "c1/gray_as_rgb.jpg": "grayscale",
    "c0/mode_l.jpg": "grayscale",
    "c1/flat_grey.jpg": "low_information",
    "c0/tiny.jpg": "tiny",
    "c1/truncated.jpg": "bad_file",
    "c0/empty.jpg": "bad_file",
    "c1/png_named.jpg": "misnamed",
}
# what cleanvision calls the same problem (None: it has no such check)
CLEANVISION = {
    "exact_duplicate": "exact_duplicates",
    "near_duplicate": "near_duplicates",
    "label_leak": "near_duplicates",
    "blurry": "blurry",
    "dark": "dark",
    "light": "light",
    "odd_aspect_ratio": "odd_aspect_ratio",
    "odd_size": "odd_size",
    "grayscale": "grayscale",
    "low_information": "low_information",
    "tiny": "odd_size",
    "bad_file": None,
    "misnamed": None,
}


def _photos(n: int) -> list[Image.Image]:
    """n distinct RGB photos: the Kodak suite, or generated scenes where it is missing."""
    files = sorted(KODAK.glob("*.png"))
    if len(files) >= n:
        return [Image.open(p).convert("RGB") for p in files[:n]]
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        low = rng.integers(0, 256, (16, 24, 3), dtype=np.uint8)
        base = np.asarray(Image.fromarray(low).resize((768, 512), Image.Resampling.BICUBIC))
        grain = rng.normal(0, 12, (512, 768, 1))
        out.append(Image.fromarray(np.clip(base + grain, 0, 255).astype(np.uint8)))
    return out


def build_planted(root: Path) -> tuple[Path, list[str]]:
    """Rebuild the planted folder; return it and the names of its clean photos."""
    shutil.rmtree(root, ignore_errors=True)
    (root / "c0").mkdir(parents=True)
    (root / "c1").mkdir()
    ph = _photos(24)
    clean = []
    for i in range(12):  # photos 0..11 are clean, six per class
        name = f"c{i % 2}/kodim{i + 1:02d}.jpg"
        ph[i].save(root / name, "JPEG", quality=90)
        clean.append(name)
    shutil.copy(root / "c1/kodim02.jpg", root / "c1/exact_copy.jpg")
    ph[2].resize((512, 341), Image.Resampling.LANCZOS).save(root / "c0/near_copy.jpg", quality=70)
    # kodim05 sits in c0: a resized copy of it in c1 is a label leak
    ph[4].resize((600, 400), Image.Resampling.LANCZOS).save(
        root / "c1/cross_class_copy.jpg", quality=75
    )
    ph[12].filter(ImageFilter.GaussianBlur(6)).save(root / "c1/blurry.jpg", quality=90)
    dark = (np.asarray(ph[13], np.float32) * 0.25).astype(np.uint8)
    Image.fromarray(dark).save(root / "c0/dark.jpg", quality=90)
    light = (np.asarray(ph[14], np.float32) * 0.25 + 185).astype(np.uint8)
    Image.fromarray(light).save(root / "c0/light.jpg", quality=90)
    ph[15].crop((0, 200, 768, 277)).resize((500, 50), Image.Resampling.LANCZOS).save(
        root / "c1/strip_500x50.jpg", quality=90
    )
    ph[16].resize((2304, 1536), Image.Resampling.BICUBIC).save(root / "c0/odd_size.jpg", quality=90)
    ph[17].convert("L").convert("RGB").save(root / "c1/gray_as_rgb.jpg", quality=90)
    ph[18].convert("L").save(root / "c0/mode_l.jpg", quality=90)
    rng = np.random.default_rng(1)
    flat = np.clip(128 + rng.normal(0, 1.5, (512, 768, 3)), 0, 255).astype(np.uint8)
    Image.fromarray(flat).save(root / "c1/flat_grey.jpg", quality=90)
    ph[19].resize((24, 16), Image.Resampling.LANCZOS).save(root / "c0/tiny.jpg", quality=90)
    ph[20].save(root / "c1/whole.jpg", quality=90)
    whole = (root / "c1/whole.jpg").read_bytes()
    (root / "c1/whole.jpg").unlink()
    (root / "c1/truncated.jpg").write_bytes(whole[: len(whole) // 2])
    (root / "c0/empty.jpg").write_bytes(b"")
    ph[21].save(root / "c1/png_named.jpg", format="PNG")
    return root, clean


def build_huge(root: Path) -> Path:
    """Three photos and a PNG that decodes to 13,000 x 13,000 pixels (cached)."""
    done = root / ".complete"
    if done.exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    for i, im in enumerate(_photos(3)):
        im.save(root / f"photo{i}.jpg", quality=90)
    side = 13_000
    row = np.linspace(40, 215, side, dtype=np.float32)
    img = np.empty((side, side, 3), np.uint8)
    img[..., 0] = row[None, :].astype(np.uint8)
    img[..., 1] = row[:, None].astype(np.uint8)
    img[..., 2] = 128
    Image.MAX_IMAGE_PIXELS = None  # our own file: no bomb warning while writing it
    Image.fromarray(img).save(root / "huge.png", compress_level=9)
    done.write_text("1\n")
    return root


# -- one tool in a fresh process ---------------------------------------------------------


def _run_pcr(folder: str, out: str, sample: int, bytes_sample: int | None = None) -> None:
    from pcr_explore.auditing import AuditOptions, audit

    t = time.perf_counter()
    r = audit(
        folder,
        sample=sample,
        workers=2,
        progress=False,
        options=AuditOptions(bytes_sample=bytes_sample),
    )
    seconds = time.perf_counter() - t
    res = {
        "seconds": seconds,
        "timings": r.timings,
        "images": r.images,
        "problems": r.problems,
        "issue_counts": r.issue_counts,
        "notes": r.notes,
        "recommended_scan": r.recommended_scan,
        "duplicate_sets": r.duplicate_sets,
        "level_bytes": [int(b) for b in r.level_bytes],
    }
    Path(out).write_text(json.dumps(res))


def _run_cleanvision(folder: str, out: str) -> None:
    from cleanvision import Imagelab

    t = time.perf_counter()
    try:
        lab = Imagelab(data_path=folder)
        lab.find_issues(n_jobs=2, verbose=False)
    except Exception as exc:  # noqa: BLE001 - the bench records how it failed
        res: dict[str, Any] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    else:
        issues = lab.issues
        flagged: dict[str, list[str]] = {}
        for col in issues.columns:
            if col.startswith("is_") and col.endswith("_issue"):
                kind = col[3:-6]
                files = issues.index[issues[col]].tolist()
                flagged[kind] = [os.path.relpath(f, folder) for f in files]
        res = {"flagged": flagged}
    res["seconds"] = time.perf_counter() - t
    Path(out).write_text(json.dumps(res))


def run_tool(args: list[str]) -> tuple[dict[str, Any], dict[str, float]]:
    """Run this script's ``--one`` mode in a fresh process; return its JSON and peak memory."""
    out = HERE / "results" / f".one-{os.getpid()}.json"
    cost = measure([sys.executable, __file__, "--one", *args, str(out)])
    if cost.returncode != 0:
        raise SystemExit(f"{args[0]} failed with exit status {cost.returncode}")
    res = json.loads(out.read_text())
    out.unlink()
    mem = {
        "main_mb": cost.main_mb,
        "worker_max_mb": cost.worker_max_mb,
        "workers": cost.workers,
        "other_child_max_mb": cost.other_child_max_mb,  # jpegtran
        # CPU seconds of the tool's processes: less sensitive than wall time to
        # other work on a shared machine
        "cpu_s": cost.cpu_s,
    }
    return res, mem


# -- the three parts -------------------------------------------------------------------------


def _found(ours: dict[str, Any], by_file: dict[str, set[str]], file: str, kind: str) -> bool:
    """Whether the audit found *kind* on *file*; a duplicate counts by set membership."""
    if kind in ("exact_duplicate", "near_duplicate", "label_leak"):
        want = {"exact_duplicate": "exact", "near_duplicate": "near"}.get(kind)
        return any(
            file in s["files"] and (s["kind"] == want if want else s["label_leak"])
            for s in ours["duplicate_sets"]
        )
    return kind in by_file.get(file, set())


def _cleanvision_rows(folder: Path, bad: set[str]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """cleanvision on the folder; and, if it fails, on a copy without the unreadable files."""
    cv = run_tool(["cleanvision", str(folder)])[0]
    if "error" not in cv:
        return cv, None
    trimmed = folder.with_name(folder.name + "-readable")
    shutil.rmtree(trimmed, ignore_errors=True)
    shutil.copytree(folder, trimmed, ignore=lambda d, names: [n for n in names if n in bad])
    return cv, run_tool(["cleanvision", str(trimmed)])[0]


def bench_planted(root: Path, have_cv: bool) -> dict[str, Any]:
    folder, clean = build_planted(root)
    ours, mem = run_tool(["pcr", str(folder), "8"])
    by_file: dict[str, set[str]] = {}
    for p in ours["problems"]:
        by_file.setdefault(p["file"], set()).add(p["type"])
    cv = retry = None
    if have_cv:
        bad = {Path(f).name for f, k in PLANTED.items() if k == "bad_file"}
        cv, retry = _cleanvision_rows(folder, bad)
    rows = []
    for file, kind in PLANTED.items():
        row: dict[str, Any] = {
            "file": file,
            "planted": kind,
            "pcr": _found(ours, by_file, file, kind),
        }
        if cv is not None:
            got = retry if retry is not None else cv
            cv_kind = CLEANVISION[kind]
            if kind == "bad_file":
                row["cleanvision"] = "crashed" if "error" in cv else "missed"
            elif cv_kind is None:
                row["cleanvision"] = "no such check"
            elif "error" in got:
                row["cleanvision"] = "crashed"
            else:
                row["cleanvision"] = file in got["flagged"].get(cv_kind, [])
        rows.append(row)
    clean_flags = {f: sorted(by_file[f]) for f in clean if f in by_file}
    # a clean photo that has a planted copy is rightly in a duplicate set
    copied = {"c1/kodim02.jpg", "c0/kodim03.jpg", "c0/kodim05.jpg"}
    unexpected = {
        f: t
        for f, t in clean_flags.items()
        if not (f in copied and set(t) <= {"label_leak", "near_duplicate", "exact_duplicate"})
    }
    cv_clean = None
    if cv is not None:
        got = retry if retry is not None else cv
        if "flagged" in got:
            cv_clean = {
                f: sorted(k for k, files in got["flagged"].items() if f in files)
                for f in clean
                if any(f in files for files in got["flagged"].values())
            }
    return {
        "folder": str(folder),
        "rows": rows,
        "all_found": all(r["pcr"] for r in rows),
        "clean_photos": len(clean),
        "clean_flags": clean_flags,
        "unexpected_clean_flags": unexpected,
        "pcr_seconds": ours["seconds"],
        "pcr_memory": mem,
        "cleanvision": cv,
        "cleanvision_without_unreadable_files": retry,
        "cleanvision_clean_flags": cv_clean,
    }


def bench_speed(
    folder: Path, repeat: int, have_cv: bool, bytes_sample: int | None = None
) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"pcr": [], "cleanvision": []}
    args = {"pcr": ["pcr", str(folder), "64"], "cleanvision": ["cleanvision", str(folder)]}
    if bytes_sample is not None:
        runs["pcr-quick"] = []
        args["pcr-quick"] = ["pcr-quick", str(folder), "64", str(bytes_sample)]
    rounds = []
    for k in range(repeat):
        order = [t for t in runs if have_cv or t != "cleanvision"]
        order = order[k % len(order) :] + order[: k % len(order)]  # who goes first rotates
        for tool in order:
            load = os.getloadavg()[0]
            res, mem = run_tool(args[tool])
            runs[tool].append({**res, "memory": mem, "load_at_start": load})
        if have_cv:
            cv = runs["cleanvision"][-1]
            rnd: dict[str, Any] = {"first": order[0]}
            for tool, key in (("pcr", ""), ("pcr-quick", "quick_")):
                if tool in runs:
                    ours = runs[tool][-1]
                    rnd[f"{key}wall_ratio"] = ours["seconds"] / cv["seconds"]
                    rnd[f"{key}cpu_ratio"] = ours["memory"]["cpu_s"] / cv["memory"]["cpu_s"]
            rounds.append(rnd)
    best = {k: min(v, key=lambda r: r["seconds"]) for k, v in runs.items() if v}
    keys = [k for k in (rounds[0] if rounds else {}) if k.endswith("_ratio")]
    median = {key: float(np.median([r[key] for r in rounds])) for key in keys}
    return {
        "folder": str(folder),
        "repeat": repeat,
        "runs": runs,
        "best": best,
        "rounds": rounds,
        "median": median if rounds else None,
        "worker_max_mb": max(r["memory"]["worker_max_mb"] for r in runs["pcr"]),
        "bytes_sample": bytes_sample,
    }


def bench_huge(root: Path) -> dict[str, Any]:
    folder = build_huge(root)
    res, mem = run_tool(["pcr", str(folder), "0"])  # 0: every image in the quality sample
    return {
        "folder": str(folder),
        "png_bytes": (folder / "huge.png").stat().st_size,
        **res,
        "memory": mem,
    }


def _print_planted(p: dict[str, Any]) -> None:
    print("\n1. planted folder")
    cv = p["cleanvision"] is not None
    print(
        f"{'planted file':<26}{'issue':<18}{'pcr-explore':>12}"
        + (f"{'cleanvision':>15}" if cv else "")
    )
    for r in p["rows"]:
        mark = "found" if r["pcr"] else "MISSED"
        other = ""
        if cv:
            v = r["cleanvision"]
            other = f"{('found' if v else 'missed') if isinstance(v, bool) else v:>15}"
        print(f"{r['file']:<26}{r['planted']:<18}{mark:>12}{other}")
    print(
        f"every planted problem found: {p['all_found']}; flags on the {p['clean_photos']} clean "
        f"photos: {sum(len(v) for v in p['clean_flags'].values())} "
        f"({', '.join(f'{f}: {t}' for f, t in p['clean_flags'].items()) or 'none'}); "
        f"not explained by a planted copy: {len(p['unexpected_clean_flags'])}"
    )
    cv = p["cleanvision"]
    if cv is not None and "error" in cv:
        print(f"cleanvision on this folder: {cv['error'][:90]}; its column is from a copy")
        print("without the truncated and empty files (which it cannot skip)")
    if p["cleanvision_clean_flags"] is not None:
        print(f"cleanvision flags on the clean photos: {p['cleanvision_clean_flags']}")


def _print_speed(s: dict[str, Any]) -> None:
    print(f"\n2. {s['folder']}: {s['repeat']} rounds, 2 workers each")
    print(
        f"{'round':<7}{'tool':<13}{'load':>6}{'wall s':>8}{'CPU s':>8}{'main MB':>9}"
        f"{'worker MB':>11}{'jpegtran MB':>13}"
    )
    for k in range(s["repeat"]):
        for name in s["runs"]:
            if len(s["runs"][name]) <= k:
                continue
            r = s["runs"][name][k]
            m = r["memory"]
            print(
                f"{k + 1:<7}{name:<13}{r['load_at_start']:6.1f}{r['seconds']:8.1f}"
                f"{m['cpu_s']:8.1f}{m['main_mb']:9.0f}{m['worker_max_mb']:11.0f}"
                f"{m['other_child_max_mb']:13.0f}"
            )
    if s["rounds"]:
        walls = ", ".join(f"{r['wall_ratio']:.2f}" for r in s["rounds"])
        cpus = ", ".join(f"{r['cpu_ratio']:.2f}" for r in s["rounds"])
        med = s["median"]
        print(f"pcr-explore / cleanvision, per round: wall time {walls}; CPU time {cpus}")
        wall, cpu = med["wall_ratio"], med["cpu_ratio"]
        print(f"median of the rounds: wall time {wall:.2f}, CPU time {cpu:.2f}")
        best = s["best"]
        ours, theirs = best["pcr"]["seconds"], best["cleanvision"]["seconds"]
        print(f"best runs: {ours:.1f} s / {theirs:.1f} s = {ours / theirs:.2f}")
        if "quick_wall_ratio" in med:
            quick = s["runs"]["pcr-quick"]
            walls = ", ".join(f"{r['quick_wall_ratio']:.2f}" for r in s["rounds"])
            cpus = ", ".join(f"{r['quick_cpu_ratio']:.2f}" for r in s["rounds"])
            print(
                f"pcr-quick (audit(..., bytes_sample={s['bytes_sample']})) / cleanvision, per "
                f"round: wall time {walls}; CPU time {cpus}; median: wall time "
                f"{med['quick_wall_ratio']:.2f}, CPU time {med['quick_cpu_ratio']:.2f}"
            )
            exact = np.array(s["runs"]["pcr"][0]["level_bytes"], np.float64)
            est = np.array(quick[0]["level_bytes"], np.float64)
            err = np.abs(est / exact - 1).max() if exact.all() else float("nan")
            print(f"its estimated bytes per level against the exact ones: at most {err:.2%} off")
    print(f"largest pcr-explore worker: {s['worker_max_mb']:.0f} MB (aim: under 1,024 MB)")
    best_pcr = s["best"]["pcr"]
    t = best_pcr["timings"]
    print(
        "pcr-explore, best run: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in t.items())
        + f"; flags on these photos: {best_pcr['issue_counts']}"
    )
    if "cleanvision" in s["best"] and "flagged" in s["best"]["cleanvision"]:
        counts = {k: len(v) for k, v in s["best"]["cleanvision"]["flagged"].items() if v}
        print(f"cleanvision flags: {counts}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="rounds: one timed run per tool each")
    ap.add_argument("--photos", type=Path, default=FLOWERS, help="folder of photos to time")
    ap.add_argument("--huge", action="store_true", help="also audit a 13,000 x 13,000 PNG")
    ap.add_argument(
        "--bytes-sample",
        type=int,
        default=None,
        metavar="N",
        help="also time audit(..., bytes_sample=N) (pcr-quick) in every round",
    )
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        if args.one[0] == "pcr":
            _run_pcr(args.one[1], args.one[3], int(args.one[2]) or 10**9)
        elif args.one[0] == "pcr-quick":
            _run_pcr(args.one[1], args.one[4], int(args.one[2]), int(args.one[3]))
        else:
            _run_cleanvision(args.one[1], args.one[2])
        return
    try:
        import cleanvision  # noqa: F401

        have_cv = True
    except ImportError:
        have_cv = False
        print("cleanvision is not installed (pip install pcr-explore[bench]): ours only")
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} at start")
    planted = bench_planted(HERE / "_data" / "audit-planted", have_cv)
    _print_planted(planted)
    speed = None
    if args.photos.is_dir():
        speed = bench_speed(args.photos, args.repeat, have_cv, args.bytes_sample)
        _print_speed(speed)
    else:
        print(f"\n2. skipped: no photos at {args.photos}")
    huge = None
    if args.huge:
        huge = bench_huge(HERE / "_data" / "audit-huge")
        m = huge["memory"]
        print(
            f"\n3. 13,000 x 13,000 PNG ({huge['png_bytes']:,} bytes) and 3 photos, all sampled: "
            f"{huge['seconds']:.1f} s, largest worker {m['worker_max_mb']:.0f} MB, main "
            f"{m['main_mb']:.0f} MB; notes: {huge['notes'][1:]}"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    from pcr_explore._json import to_json

    OUT.write_text(
        to_json(
            {
                "machine": {
                    "cores": os.cpu_count(),
                    "load_at_start": load[0],
                    "python": platform.python_version(),
                },
                "planted": planted,
                "speed": speed,
                "huge": huge,
            }
        )
        + "\n"
    )
    print(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
