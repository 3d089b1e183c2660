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

2. Speed and memory on photos of the size users have: 500 photos of about
   110 kB (600x450 crops of the Kodak suite, JPEG quality 95, flipped and
   turned: ImageNet's bytes per photo), among them planted exact duplicates,
   near duplicates, dark photos and truncated files (``--photos DIR`` times
   another folder instead, e.g. ``../shared/data/flowers5``). The default
   audit (``pcr``) against cleanvision's default checks, each tool in a
   fresh process with 2 workers, ``--repeat`` rounds of one run each,
   interleaved (the tool that goes first alternates). cleanvision cannot
   open a truncated file (its whole run fails, part 1), so it runs on a copy
   of the folder without them. The figure is CPU time per image (every
   process the tool starts, so other work on a shared machine counts
   less than in wall time) and the ratio within each round, with their
   median; whether each tool found each planted problem is listed beside.
   Memory: the peak resident set (VmHWM) of every process the tool starts,
   polled every 50 ms; the table gives the largest worker and the main
   process, against the 1 GB per worker the audit aims for. With
   ``--exact`` a third run per round, ``pcr-exact``, audits with
   ``AuditOptions(bytes_sample=None)`` (every image transcoded: the exact
   bytes per level), and the default run's estimate and its 95% interval
   are compared with them.

3. ``--huge``: a PNG that decodes to 13,000 x 13,000 pixels (a few hundred
   KB on disk) among three photos, audited with every image in the quality
   sample: the peak memory per worker, which the audit bounds by measuring
   such images at a reduced size.

Usage: ``python bench/bench_audit.py [--repeat 3] [--huge] [--photos DIR]
[--exact]``.
Prints tables and writes bench/results/audit.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
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
OUT = HERE / "results" / "audit.json"
PHOTOS = HERE / "_data" / "audit-photos"

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


# the speed folder's planted files -> the issue type each must be flagged with
PHOTO_PLANTS = {
    # copies sit in their original's class (c0): duplicates, not label leaks
    **{f"c0/exact_copy{k}.jpg": "exact_duplicate" for k in range(3)},
    **{f"c0/near_copy{k}.jpg": "near_duplicate" for k in range(3)},
    **{f"c{k % 2}/dark{k}.jpg": "dark" for k in range(3)},
    **{f"c{k % 2}/truncated{k}.jpg": "bad_file" for k in range(2)},
}
_DIHEDRAL = [None, *Image.Transpose]  # the 8 ways to flip and turn a picture


def build_photos(root: Path, n: int = 500) -> Path:
    """*n* distinct photos of about 110 kB from the Kodak suite, with planted problems (cached).

    Each photo is a 600x450 crop (at 1x or 1.15x, from the left or the
    right) of a Kodak photo, flipped and turned one of 8 ways, saved at JPEG
    quality 95: about 110 kB, ImageNet's bytes per photo. Among them, as in
    :data:`PHOTO_PLANTS`: exact copies, resized re-compressed copies (near
    duplicates), darkened photos and truncated files.
    """
    done = root / f".complete-{n}-v4"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    (root / "c0").mkdir(parents=True)
    (root / "c1").mkdir()
    photos = [
        im if im.width >= im.height else im.transpose(Image.Transpose.ROTATE_90)
        for im in _photos(24)
    ]
    variants = [
        (p, s, x, t) for p in range(24) for s in (1.0, 1.15) for x in (0, 1) for t in range(8)
    ]
    rng = np.random.default_rng(0)
    # the last three crops are only seen darkened: a dark photo, not a copy of another;
    # past 768 photos (--scale) the crops come round again, a grey level brighter each time
    want = n - len(PHOTO_PLANTS) + 3
    picks = np.concatenate([rng.permutation(len(variants)) for _ in range(-(-want // 768))])
    picks = picks[:want]
    names = []
    for k, v in enumerate(picks):
        p, s, x, t = variants[v]
        im = photos[p]
        if s != 1.0:
            im = im.resize((round(im.width * s), round(im.height * s)), Image.Resampling.BICUBIC)
        left, top = (im.width - 600) * x, (im.height - 450) * x
        im = im.crop((left, top, left + 600, top + 450))
        if _DIHEDRAL[t] is not None:
            im = im.transpose(_DIHEDRAL[t])
        if k >= len(picks) - 3:
            dark = np.asarray(im, np.float32) * 0.2
            j = k - len(picks) + 3
            Image.fromarray(dark.astype(np.uint8)).save(root / f"c{j % 2}/dark{j}.jpg", quality=95)
            continue
        if k >= len(variants):  # a crop seen before: other bytes, the same picture
            im = Image.fromarray(
                np.clip(np.asarray(im, np.int16) + k // len(variants), 0, 255).astype(np.uint8)
            )
        name = f"c{k % 2}/photo{k:05d}.jpg"
        im.save(root / name, "JPEG", quality=95)
        names.append(name)
    for k in range(3):
        shutil.copy(root / names[2 * k], root / f"c0/exact_copy{k}.jpg")
        with Image.open(root / names[2 * k + 10]) as im:
            near = im.resize((im.width * 4 // 5, im.height * 4 // 5), Image.Resampling.LANCZOS)
        near.save(root / f"c0/near_copy{k}.jpg", quality=80)
    for k in range(2):
        whole = (root / names[2 * k + 30]).read_bytes()
        (root / f"c{k % 2}/truncated{k}.jpg").write_bytes(whole[: len(whole) // 2])
    done.write_text("1\n")
    return root


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


def _run_pcr(folder: str, out: str, sample: int, exact: bool = False) -> None:
    from pcr_explore.auditing import AuditOptions, audit

    t = time.perf_counter()
    r = audit(
        folder,
        **({} if sample < 0 else {"sample": sample}),  # < 0: the audit's default
        workers=2,
        progress=False,
        options=AuditOptions(bytes_sample=None) if exact else AuditOptions(),
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
        "bytes_measured": r.bytes_measured,
        "bytes_interval": None if r.bytes_interval is None else r.bytes_interval.tolist(),
    }
    Path(out).write_text(json.dumps(res))


def _run_cleanvision(folder: str, out: str) -> None:
    from cleanvision import Imagelab

    t = time.perf_counter()
    try:
        # its progress bars and prints, which verbose=False leaves on, would fill the table
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
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
        res = {"flagged": flagged, "images": len(issues)}
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


def _found_in_photos(res: dict[str, Any], tool: str, folder: Path) -> dict[str, Any]:
    """Per planted file of the photo folder: found, missed, or why not looked at."""
    rows: dict[str, Any] = {}
    by_file: dict[str, set[str]] = {}
    for p in res.get("problems", []):
        by_file.setdefault(p["file"], set()).add(p["type"])
    for file, kind in PHOTO_PLANTS.items():
        if tool != "cleanvision":
            rows[file] = _found(res, by_file, file, kind)
        elif kind == "bad_file":
            rows[file] = "left out: it crashes cleanvision"
        else:
            rows[file] = os.path.join(str(folder), file) in {
                os.path.join(str(folder), f) for f in res["flagged"].get(CLEANVISION[kind], [])
            }
    return rows


def bench_speed(folder: Path, repeat: int, have_cv: bool, exact: bool = False) -> dict[str, Any]:
    planted = folder == PHOTOS
    if planted:
        build_photos(folder)
    bad = {f for f, k in PHOTO_PLANTS.items() if k == "bad_file"} if planted else set()
    readable = folder.with_name(folder.name + "-readable") if bad else folder
    if have_cv and bad:  # cleanvision's copy: without the files it cannot open
        shutil.rmtree(readable, ignore_errors=True)
        shutil.copytree(
            folder,
            readable,
            ignore=lambda d, names: [
                n for n in names if os.path.relpath(Path(d) / n, folder) in bad
            ],
        )
    runs: dict[str, list[dict[str, Any]]] = {"pcr": [], "cleanvision": []}
    args = {"pcr": ["pcr", str(folder), "-1"], "cleanvision": ["cleanvision", str(readable)]}
    if exact:
        runs["pcr-exact"] = []
        args["pcr-exact"] = ["pcr-exact", str(folder), "-1"]
    rounds = []
    for k in range(repeat):
        order = [t for t in runs if have_cv or t != "cleanvision"]
        order = order[k % len(order) :] + order[: k % len(order)]  # who goes first rotates
        for tool in order:
            load = os.getloadavg()[0]
            res, mem = run_tool(args[tool])
            if "error" in res:
                raise SystemExit(f"{tool} failed on {args[tool][1]}: {res['error']}")
            per_image = mem["cpu_s"] / res["images"]
            runs[tool].append({**res, "memory": mem, "load_at_start": load, "cpu_ms": per_image})
        if have_cv:
            cv = runs["cleanvision"][-1]
            rnd: dict[str, Any] = {"first": order[0]}
            for tool, key in (("pcr", ""), ("pcr-exact", "exact_")):
                if tool in runs:
                    ours = runs[tool][-1]
                    rnd[f"{key}wall_ratio"] = (ours["seconds"] / ours["images"]) / (
                        cv["seconds"] / cv["images"]
                    )
                    rnd[f"{key}cpu_ratio"] = ours["cpu_ms"] / cv["cpu_ms"]
            rounds.append(rnd)
    keys = [k for k in (rounds[0] if rounds else {}) if k.endswith("_ratio")]
    found = {
        tool: _found_in_photos(v[-1], tool, readable if tool == "cleanvision" else folder)
        for tool, v in runs.items()
        if v and planted
    }
    return {
        "folder": str(folder),
        "images": runs["pcr"][0]["images"],
        "mean_kb": float(np.mean([f.stat().st_size for f in folder.rglob("*.jpg")]) / 1e3),
        "repeat": repeat,
        "runs": runs,
        "rounds": rounds,
        "median": {key: float(np.median([r[key] for r in rounds])) for key in keys} or None,
        "median_cpu_ms": {
            t: float(np.median([r["cpu_ms"] for r in v])) for t, v in runs.items() if v
        },
        "found": found,
        "worker_max_mb": max(r["memory"]["worker_max_mb"] for r in runs["pcr"]),
    }


def bench_scale(n: int) -> dict[str, Any]:
    """The default audit alone on *n* photos built as part 2's: CPU per image as N grows."""
    folder = build_photos(HERE / "_data" / f"audit-photos-{n}", n)
    res, mem = run_tool(["pcr", str(folder), "-1"])
    return {
        "folder": str(folder),
        "images": res["images"],
        "seconds": res["seconds"],
        "cpu_s": mem["cpu_s"],
        "cpu_ms": mem["cpu_s"] / res["images"] * 1e3,
        "timings": res["timings"],
        "issue_counts": res["issue_counts"],
        "memory": mem,
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
    print(
        f"\n2. {s['folder']}: {s['images']} images, {s['mean_kb']:.0f} kB on average; "
        f"{s['repeat']} rounds, 2 workers each"
    )
    print(
        f"{'round':<7}{'tool':<13}{'load':>6}{'images':>8}{'wall s':>8}{'CPU s':>8}"
        f"{'CPU ms/img':>12}{'main MB':>9}{'worker MB':>11}"
    )
    for k in range(s["repeat"]):
        for name in s["runs"]:
            if len(s["runs"][name]) <= k:
                continue
            r = s["runs"][name][k]
            m = r["memory"]
            print(
                f"{k + 1:<7}{name:<13}{r['load_at_start']:6.1f}{r['images']:8}{r['seconds']:8.1f}"
                f"{m['cpu_s']:8.1f}{r['cpu_ms'] * 1e3:12.1f}{m['main_mb']:9.0f}"
                f"{m['worker_max_mb']:11.0f}"
            )
    med = s["median"]
    if med:
        cpus = ", ".join(f"{r['cpu_ratio']:.2f}" for r in s["rounds"])
        walls = ", ".join(f"{r['wall_ratio']:.2f}" for r in s["rounds"])
        ms = s["median_cpu_ms"]
        print(
            f"CPU per image, median: pcr-explore {ms['pcr'] * 1e3:.1f} ms, cleanvision "
            f"{ms['cleanvision'] * 1e3:.1f} ms; pcr-explore / cleanvision per round: CPU {cpus} "
            f"(median {med['cpu_ratio']:.2f}); wall per image {walls} (median "
            f"{med['wall_ratio']:.2f})"
        )
        if "exact_cpu_ratio" in med:
            print(
                "pcr-exact (AuditOptions(bytes_sample=None)) / cleanvision, CPU per image: "
                + ", ".join(f"{r['exact_cpu_ratio']:.2f}" for r in s["rounds"])
                + f" (median {med['exact_cpu_ratio']:.2f})"
            )
    if "pcr-exact" in s["runs"]:
        ours = s["runs"]["pcr"][0]
        exact = np.array(s["runs"]["pcr-exact"][0]["level_bytes"], np.float64)
        est = np.array(ours["level_bytes"], np.float64)
        err = np.abs(est / exact - 1).max() if exact.all() else float("nan")
        line = f"the default's bytes per level, estimated from {ours['bytes_measured']} images: "
        line += f"at most {err:.2%} from the exact ones"
        if ours["bytes_interval"] is not None:
            lo, hi = np.array(ours["bytes_interval"], np.float64)
            inside = int(((lo <= exact) & (exact <= hi)).sum())
            half = ((hi - lo) / 2 / est).max()
            line += f"; 95% interval at most +-{half:.2%}, holding the exact value at "
            line += f"{inside} of {len(exact)} levels"
        print(line)
    if s["found"]:
        tools = list(s["found"])
        print(f"{'planted file':<24}{'issue':<17}" + "".join(f"{t:>16}" for t in tools))
        for file, kind in PHOTO_PLANTS.items():
            cells = []
            for t in tools:
                v = s["found"][t][file]
                cells.append(("found" if v else "MISSED") if isinstance(v, bool) else "crashes it")
            print(f"{file:<24}{kind:<17}" + "".join(f"{c:>16}" for c in cells))
    print(f"largest pcr-explore worker: {s['worker_max_mb']:.0f} MB (aim: under 1,024 MB)")
    last = s["runs"]["pcr"][-1]
    print(
        "pcr-explore, last run: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in last["timings"].items())
        + f"; flags: {last['issue_counts']}; recommended level {last['recommended_scan']}"
    )
    cv = s["runs"]["cleanvision"]
    if cv and "flagged" in cv[-1]:
        counts = {k: len(v) for k, v in cv[-1]["flagged"].items() if v}
        print(f"cleanvision flags: {counts}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="rounds: one timed run per tool each")
    ap.add_argument(
        "--photos", type=Path, default=None, help="time this folder (default: 500 Kodak crops)"
    )
    ap.add_argument("--huge", action="store_true", help="also audit a 13,000 x 13,000 PNG")
    ap.add_argument(
        "--exact",
        action="store_true",
        help="also time audit(..., options=AuditOptions(bytes_sample=None)) in every round",
    )
    ap.add_argument(
        "--scale",
        type=int,
        default=None,
        metavar="N",
        help="also audit N photos built as part 2's (crops repeat past 768), ours only",
    )
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        if args.one[0] in ("pcr", "pcr-exact"):
            _run_pcr(args.one[1], args.one[3], int(args.one[2]) or 10**9, args.one[0] != "pcr")
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
    photos = PHOTOS if args.photos is None else args.photos
    if photos == PHOTOS or photos.is_dir():
        speed = bench_speed(photos, args.repeat, have_cv, args.exact)
        _print_speed(speed)
    else:
        print(f"\n2. skipped: no photos at {photos}")
    scale = None
    if args.scale:
        scale = bench_scale(args.scale)
        print(
            f"\n2b. the default audit on {scale['images']:,} such photos: {scale['cpu_s']:.1f} "
            f"CPU s, {scale['cpu_ms']:.1f} CPU ms per image, {scale['seconds']:.1f} s wall; "
            f"flags {scale['issue_counts']}"
        )
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
                "scale": scale,
                "huge": huge,
            }
        )
        + "\n"
    )
    print(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
