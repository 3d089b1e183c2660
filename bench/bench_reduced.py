"""Reduced-size decoding: which DCT coefficients a scaled decode reads; what skipping others saves.

Decoding a JPEG at 1/2, 1/4 or 1/8 scale (Pillow's ``draft``, simplejpeg's
``min_width``) makes libjpeg-turbo run a 4x4, 2x2 or 1x1 inverse DCT per 8x8
block. A progressive file could skip the scans such an IDCT cannot use, as
``pcr_explore.jpeg._eighth`` does at 1/8, if its spectral bands lined up with
what the IDCT reads. Two measurements say whether they can:

1. **Reads.** A photo is transcoded losslessly (jpegtran) with one scan per AC
   coefficient of one component (grey; the Y of a 4:4:4 image; the Cb of a
   4:2:0 image). For each coefficient, a variant declares it zero (its scan
   replaced by an end-of-band scan, as ``_eighth`` does) and another leaves its
   scan out; both decode at every scale with Pillow and simplejpeg and are
   compared with the whole file's pixels. A coefficient is *read* at a scale
   when declaring it zero changes the pixels there (the photo is saved at
   quality 100, so nearly every coefficient is nonzero somewhere: the full
   size map shows which). Printed as 8x8 maps in natural order (row =
   vertical frequency), ``#`` read, ``.`` not, with the coefficients not
   read as runs of zig-zag indices (the bands a script would need to drop
   exactly them).

2. **Cost.** Per output scale, CPU per image (median of ``--repeat``
   interleaved rounds, one thread, the decoder forced) and MS-SSIM (three
   scales) against the baseline's decode at that scale, for

   - ``baseline + draft``: the original baseline JPEG;
   - ``standard, all scans``: the standard progressive transcode, whole;
   - ``standard, 1/8 rewrite``: the same through ``_eighth`` (1/8 only);
   - ``corner, all scans``: a transcode with spectral bands DC, 1-4, 5-24,
     25-63 per component (the zig-zag prefixes holding the 2x2 and 4x4
     corners), whole;
   - ``corner, cut``: that file with the bands beyond the corner the
     component's IDCT size holds declared zero (lossy where the IDCT reads
     coefficients outside its corner);
   - ``corner, cut, smoothed``: the same scans left out, not declared zero,
     as a level (a prefix of a script in that order) decodes: libjpeg's block
     smoothing estimates the missing low coefficients;
   - ``corner, cut as at 1/4`` (1/2 only): the 1/4 cut decoded at 1/2;
   - ``DC only (a floor)``: every AC band declared zero, the least work a
     progressive file can ask for at that scale.

3. **Levels.** The same per scale for every level of the ``reduced`` named
   script (``pcr_explore.jpeg.scan_script.SCRIPTS``: DC; Cb, Cr, Y 1-4; Cb,
   Cr, Y 5-24; Cb, Cr, Y 25-63) and of the standard script, each level
   decoded as a reader decodes it (a prefix of the file; at 1/8 through
   ``_eighth`` where it applies), against the whole file's decode at that
   scale. Each ``reduced`` level is paired with the first standard level
   whose mean MS-SSIM at that scale is at least as high (the nearest from
   above: the bytes the standard script needs for the same quality), and
   their bytes and CPU compared.

4. **Tune** (``--tune``). The level :func:`pcr_explore.tune` picks for a
   5th-percentile MS-SSIM of ``--target`` over the Kodak photos (all of one
   pixel count), in each script, measured at full size and at 1/2, 1/4 and
   1/8 (``max_pixels``: the decode a reader makes for that training size).

Sources: ../shared/data/kodak24 saved as baseline 4:2:0 JPEGs (Pillow,
quality 90) and photos of ../shared/data/flowers5/train as stored (baseline
4:4:4).

Usage::

    python bench/bench_reduced.py [--images 12] [--repeat 5] [--skip-reads] [--only-levels]
                                  [--tune [--target 0.995]]

Prints the maps and a table, writes bench/results/reduced.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image, features  # noqa: E402

from pcr_explore.jpeg import _decoders, _eighth, split_scans  # noqa: E402
from pcr_explore.jpeg._coverage import ZIGZAG  # noqa: E402
from pcr_explore.jpeg._frame import read_frame  # noqa: E402
from pcr_explore.jpeg._progressive import ScanHeader  # noqa: E402
from pcr_explore.jpeg.scan_script import SCRIPTS, STANDARD, _ranges  # noqa: E402
from pcr_explore.jpeg.transcode import find_jpegtran  # noqa: E402
from pcr_explore.quality.metrics import ms_ssim  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"
SCALES = (8, 4, 2)
EOI = b"\xff\xd9"
# The last zig-zag index of the k x k corner of a block, for IDCT size k.
CORNER_END = {1: 0, 2: 4, 4: 24, 8: 63}
CORNER_BANDS = ((1, 4), (5, 24), (25, 63))


def jpegtran(data: bytes, script: str) -> bytes:
    exe = find_jpegtran()
    if exe is None:
        sys.exit("jpegtran not found (Debian: libjpeg-turbo-progs)")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(script)
    try:
        run = subprocess.run(
            [exe, "-copy", "none", "-optimize", "-scans", f.name],
            input=data,
            capture_output=True,
            check=True,
        )
    finally:
        os.unlink(f.name)
    return run.stdout


def idct_size(scale: int, h: int, v: int, hmax: int, vmax: int) -> int:
    """The IDCT size libjpeg-turbo gives a component at 1/scale (jdmaster.c's rule).

    A subsampled component is scaled up by a larger IDCT where the sizes divide.
    """
    size = low = 8 // scale
    while size < 8 and (hmax * low) % (h * size * 2) == 0 and (vmax * low) % (v * size * 2) == 0:
        size *= 2
    return size


def zero_band(component_id: int, ss: int, se: int, blocks: int) -> bytes:
    """A DHT and a first AC scan that declares coefficients ss..se of *blocks* zero."""
    scan = bytearray(_eighth.zero_ac_scan(component_id, blocks))
    at = scan.index(b"\xff\xda")
    scan[at + 7], scan[at + 8] = ss, se  # the end-of-band runs do not depend on the band
    return bytes(scan)


def rewrite(data: bytes, keep: Callable[[ScanHeader], bool], *, declare_zero: bool) -> bytes:
    """*data* without the scans *keep* rejects; with *declare_zero*, each as a zero band at the end.

    A dropped AC band declared zero is not estimated by libjpeg's block smoothing.
    """
    pj = split_scans(data)
    frame = read_frame(data)
    assert frame is not None
    comps = frame.components
    hmax, vmax = max(c[1] for c in comps), max(c[2] for c in comps)
    out: list[bytes] = []
    zeros: list[bytes] = []
    for piece, scan in zip(pj.pieces(), pj.scans):
        if keep(scan):
            out.append(piece)
            continue
        out.append(piece[: piece.index(b"\xff\xda")])  # its tables: later scans may use them
        if declare_zero:
            assert scan.ss > 0 and scan.ah == 0 and len(scan.components) == 1
            cid, h, v = comps[scan.components[0]]
            blocks = -(-frame.width * h // (8 * hmax)) * -(-frame.height * v // (8 * vmax))
            zeros.append(zero_band(cid, scan.ss, scan.se, blocks))
    return b"".join(out + zeros) + EOI


def baseline_jpeg(im: Image.Image, subsampling: int, quality: int = 90) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality, subsampling=subsampling)
    return buf.getvalue()


def decode_at(backend: object, data: bytes, scale: int) -> np.ndarray:
    """Pixels at the DCT scale 1/scale (no resize after), through *backend* (None: Pillow)."""

    def target_for(w: int, h: int) -> tuple[int, int] | None:
        return None if scale == 1 else (w // scale, h // scale)

    return _decoders._decode(backend, data, target_for, None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- 1. reads


def one_coefficient_script(n_components: int, target: int) -> str:
    """DC, then one scan per AC coefficient of component *target*, others' AC whole."""
    if n_components == 1:
        lines = ["0: 0-0, 0, 0;"]
    else:
        lines = ["0,1,2: 0-0, 0, 0;"]
        lines += [f"{c}: 1-63, 0, 0;" for c in range(n_components) if c != target]
    lines += [f"{target}: {q}-{q}, 0, 0;" for q in range(1, 64)]
    return "\n".join(lines) + "\n"


def reads(photo: Image.Image, backends: dict[str, object]) -> dict[str, dict]:
    cases = {
        "grey, Y": (baseline_jpeg(photo.convert("L"), 0, 100), 0),
        "4:4:4, Y": (baseline_jpeg(photo, 0, 100), 0),
        "4:2:0, Cb": (baseline_jpeg(photo, 2, 100), 1),
    }
    out: dict[str, dict] = {}
    for label, (base, target) in cases.items():
        n = 1 if label.startswith("grey") else 3
        data = jpegtran(base, one_coefficient_script(n, target))
        frame = read_frame(data)
        assert frame is not None
        comps = frame.components
        hmax, vmax = max(c[1] for c in comps), max(c[2] for c in comps)
        _, h, v = comps[target]
        whole = {(b, s): decode_at(be, data, s) for b, be in backends.items() for s in (1, *SCALES)}
        maps: dict[str, list[int]] = {}  # "variant | decoder | scale" -> read natural positions
        for q in range(1, 64):

            def drop(scan: ScanHeader, q: int = q, target: int = target) -> bool:
                return not (scan.components == (target,) and scan.ss == q)

            for variant, zero in (("declared zero", True), ("left out", False)):
                cut = rewrite(data, drop, declare_zero=zero)
                for b, be in backends.items():
                    for s in (1, *SCALES):
                        key = f"{variant} | {b} | 1/{s}"
                        got = decode_at(be, cut, s)
                        if not np.array_equal(got, whole[b, s]):
                            maps.setdefault(key, []).append(int(ZIGZAG[q]))
        out[label] = {
            "idct_size": {f"1/{s}": idct_size(s, h, v, hmax, vmax) for s in SCALES},
            "read": {k: sorted(v) for k, v in maps.items()},
        }
    return out


def _runs(qs: list[int]) -> str:
    """Sorted integers as runs, and how many: ``[1, 2, 3, 7]`` -> ``"1-3,7 (2 runs)"``."""
    text = _ranges(qs)
    return f"{text} ({text.count(',') + 1} runs)" if qs else ""


def print_maps(found: dict[str, dict]) -> None:
    for label, res in found.items():
        for variant in ("declared zero", "left out"):
            names = sorted({k.split(" | ")[1] for k in res["read"]})
            for b in names:
                grids = []
                title = []
                for s in (1, *SCALES):
                    pos = set(res["read"].get(f"{variant} | {b} | 1/{s}", []))
                    pos.add(0)  # the DC is always read
                    grids.append(
                        [
                            "".join("#" if r * 8 + c in pos else "." for c in range(8))
                            for r in range(8)
                        ]
                    )
                    size = 8 if s == 1 else res["idct_size"][f"1/{s}"]
                    title.append(f"1/{s} ({size}x{size}, {len(pos)})".ljust(16))
                print(f"\n{label}, AC coefficient {variant}, {b}: read (#) at each scale")
                print("  ".join(title))
                for r in range(8):
                    print("  ".join(g[r].ljust(16) for g in grids))
            for s in SCALES:
                pos = set(res["read"].get(f"{variant} | {names[0]} | 1/{s}", []))
                unread = [q for q in range(1, 64) if int(ZIGZAG[q]) not in pos]
                print(f"  1/{s}: not read, in zig-zag order: {_runs(unread) or 'none'}")


# ---------------------------------------------------------------- 2. cost

CORNER_SCRIPT = "0,1,2: 0-0, 0, 0;\n" + "".join(
    f"{c}: {a}-{b}, 0, 0;\n" for a, b in CORNER_BANDS for c in range(3)
)


def corpus(n: int) -> dict[str, list[bytes]]:
    """Baseline JPEGs by kind; flowers at least 328 pixels a side (41 at 1/8: 3 MS-SSIM scales)."""
    kodak = sorted((DATA / "kodak24").glob("*.png"))
    flowers = [
        p
        for p in sorted((DATA / "flowers5" / "train").rglob("*.jpg"))
        if min(Image.open(p).size) >= 328 and Image.open(p).mode == "RGB"
    ]
    if not kodak or not flowers:
        sys.exit(f"{DATA}: kodak24 or flowers5 not found")
    kodak = kodak[:: max(1, len(kodak) // n)][:n]
    flowers = flowers[:: max(1, len(flowers) // n)][:n]
    return {
        "kodak 4:2:0": [baseline_jpeg(Image.open(p).convert("RGB"), 2) for p in kodak],
        "flowers 4:4:4": [p.read_bytes() for p in flowers],
    }


def corner_cut(data: bytes, scale: int, *, declare_zero: bool = True) -> bytes:
    frame = read_frame(data)
    assert frame is not None
    comps = frame.components
    hmax, vmax = max(c[1] for c in comps), max(c[2] for c in comps)
    end = [CORNER_END[idct_size(scale, h, v, hmax, vmax)] for _, h, v in comps]

    def keep(scan: ScanHeader) -> bool:
        return scan.ss == 0 or all(scan.se <= end[c] for c in scan.components)

    return rewrite(data, keep, declare_zero=declare_zero)


def variants(base: bytes, scale: int) -> dict[str, bytes]:
    standard = jpegtran(base, STANDARD.text(gray=False))
    corner = jpegtran(base, CORNER_SCRIPT)
    out = {
        "baseline + draft": base,
        "standard, all scans": standard,
    }
    if scale == 8:
        lean = _eighth.at_eighth(standard)
        out["standard, 1/8 rewrite"] = standard if lean is None else lean
    out["corner, all scans"] = corner
    out["corner, cut"] = corner_cut(corner, scale)
    out["corner, cut, smoothed"] = corner_cut(corner, scale, declare_zero=False)
    if scale == 2:
        out["corner, cut as at 1/4"] = corner_cut(corner, 4)
    out["DC only (a floor)"] = rewrite(corner, lambda scan: scan.ss == 0, declare_zero=True)
    return out


def cost(kind: str, files: list[bytes], backends: dict[str, object], repeat: int) -> list[dict]:
    rows = []
    for scale in SCALES:
        per_file = [variants(f, scale) for f in files]
        names = list(per_file[0])
        quality: dict[str, list[float]] = {v: [] for v in names}
        exact: dict[str, int] = {v: 0 for v in names}
        for vs in per_file:
            ref = decode_at(None, vs["baseline + draft"], scale)
            for v, data in vs.items():
                got = decode_at(None, data, scale)
                same = np.array_equal(got, ref)
                exact[v] += int(same)
                quality[v].append(1.0 if same else ms_ssim(ref, got, scales=3))
        for b, be in backends.items():
            cpu: dict[str, list[float]] = {v: [] for v in names}
            for _ in range(repeat):
                spent = dict.fromkeys(names, 0.0)
                for vs in per_file:
                    for v in names:  # interleaved: each image decoded in every variant in turn
                        c = time.process_time()
                        decode_at(be, vs[v], scale)
                        spent[v] += time.process_time() - c
                for v in names:
                    cpu[v].append(spent[v] / len(files) * 1e3)
            base_ms = statistics.median(cpu["baseline + draft"])
            for v in names:
                ms = statistics.median(cpu[v])
                rows.append(
                    {
                        "images": kind,
                        "scale": f"1/{scale}",
                        "decoder": b,
                        "variant": v,
                        "cpu_ms": ms,
                        "ratio": ms / base_ms,
                        "ms_ssim_mean": statistics.fmean(quality[v]),
                        "ms_ssim_min": min(quality[v]),
                        "identical": f"{exact[v]}/{len(files)}",
                        "kB": statistics.fmean(len(vs[v]) for vs in per_file) / 1e3,
                    }
                )
    return rows


# ---------------------------------------------------------------- 3. levels

LEVEL_SCRIPTS = ("reduced", "standard")


def script_levels(base: bytes, scale: int) -> tuple[dict[str, bytes], dict[str, int]]:
    """Every level of the reduced and standard scripts as a reader decodes it at 1/scale,
    and the bytes each level reads."""
    out = {"baseline + draft": base}
    nbytes = {"baseline + draft": len(base)}
    for name in LEVEL_SCRIPTS:
        pj = split_scans(jpegtran(base, SCRIPTS[name].text()))
        for k in range(1, pj.num_scans + 1):
            level = pj.level(k)
            lean = _eighth.at_eighth(level) if scale == 8 else None
            out[f"{name} {k}"] = level if lean is None else lean
            nbytes[f"{name} {k}"] = len(level)
    return out, nbytes


def levels_cost(
    kind: str, files: list[bytes], backends: dict[str, object], repeat: int
) -> list[dict]:
    rows = []
    for scale in SCALES:
        both = [script_levels(f, scale) for f in files]
        per_file = [vs for vs, _ in both]
        names = list(per_file[0])
        quality: dict[str, list[float]] = {v: [] for v in names}
        for vs in per_file:
            ref = decode_at(None, vs["baseline + draft"], scale)
            for v, data in vs.items():
                got = decode_at(None, data, scale)
                quality[v].append(1.0 if np.array_equal(got, ref) else ms_ssim(ref, got, scales=3))
        kb = {v: statistics.fmean(nb[v] for _, nb in both) / 1e3 for v in names}
        mean = {v: statistics.fmean(quality[v]) for v in names}
        for b, be in backends.items():
            cpu: dict[str, list[float]] = {v: [] for v in names}
            for _ in range(repeat):
                spent = dict.fromkeys(names, 0.0)
                for vs in per_file:
                    for v in names:
                        c = time.process_time()
                        decode_at(be, vs[v], scale)
                        spent[v] += time.process_time() - c
                for v in names:
                    cpu[v].append(spent[v] / len(files) * 1e3)
            med = {v: statistics.median(cpu[v]) for v in names}
            standard = [u for u in names if u.startswith("standard")]
            for v in names[1:]:
                # the first standard level at least as good (mean MS-SSIM), else its last
                peer = next((u for u in standard if mean[u] >= mean[v]), standard[-1])
                rows.append(
                    {
                        "images": kind,
                        "scale": f"1/{scale}",
                        "decoder": b,
                        "level": v,
                        "kB": kb[v],
                        "cpu_ms": med[v],
                        "ratio": med[v] / med["baseline + draft"],
                        "ms_ssim_mean": mean[v],
                        "ms_ssim_min": min(quality[v]),
                        "standard_peer": peer,
                        "peer_kB": kb[peer],
                        "peer_ratio": med[peer] / med["baseline + draft"],
                        "peer_ms_ssim_mean": mean[peer],
                        "bytes_vs_peer": kb[v] / kb[peer],
                    }
                )
    return rows


def print_levels(rows: list[dict]) -> None:
    print(
        f"\n{'images':14} {'scale':5} {'decoder':10} {'level':10} {'kB':>6} {'x base':>7} "
        f"{'MS-SSIM':>7} {'min':>7} | {'nearest':11} {'kB':>6} {'x base':>7} {'MS-SSIM':>7} "
        f"{'bytes':>6}"
    )
    for r in rows:
        peer = (
            f"{r['standard_peer']:11} {r['peer_kB']:6.1f} {r['peer_ratio']:7.2f} "
            f"{r['peer_ms_ssim_mean']:7.4f} {r['bytes_vs_peer']:6.3f}"
            if r["level"].startswith("reduced")
            else ""
        )
        print(
            f"{r['images']:14} {r['scale']:5} {r['decoder']:10} {r['level']:10} {r['kB']:6.1f} "
            f"{r['ratio']:7.2f} {r['ms_ssim_mean']:7.4f} {r['ms_ssim_min']:7.4f} | {peer}"
        )


# ---------------------------------------------------------------- 4. tune


def tune_levels(files: list[bytes], target: float) -> list[dict]:
    """The level tune() picks per script and scale, over *files* (one pixel count)."""
    from pcr_explore import tune
    from pcr_explore.read.sources import FolderSource

    w, h = Image.open(io.BytesIO(files[0])).size
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, data in enumerate(files):
            (Path(tmp) / f"{i:02d}.jpg").write_bytes(data)
        for name in LEVEL_SCRIPTS:
            for scale in (1, *SCALES[::-1]):
                r = tune(
                    FolderSource(tmp, scan_script=name),
                    target=target,
                    sample=None,
                    workers=1,
                    progress=False,
                    max_pixels=None if scale == 1 else w * h // scale**2,
                )
                rows.append(
                    {
                        "script": name,
                        "scale": f"1/{scale}",
                        "level": r.scan,
                        "p5": r.value,
                        "p5_below": r.value_below,
                        "bytes_fraction": r.bytes_fraction,
                        "met": r.met,
                    }
                )
                below = "-" if r.value_below is None else f"{r.value_below:.4f}"
                print(
                    f"tune {name:9} 1/{scale}: level {r.scan:2} (p5 {r.value:.4f}, below {below})"
                    f", {r.bytes_fraction:.1%} of the bytes"
                )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=12, help="kodak and flowers photos each")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-reads", action="store_true")
    ap.add_argument("--tune", action="store_true", help="also the level tune() picks (4.)")
    ap.add_argument("--target", type=float, default=0.995, help="tune()'s p5 MS-SSIM target")
    ap.add_argument(
        "--only-levels", action="store_true", help="only the levels of the named scripts (3.)"
    )
    args = ap.parse_args()
    backends: dict[str, object] = {"pillow": None}
    try:
        backends["simplejpeg"] = _decoders._SimpleJPEG()
    except ImportError:
        pass
    report: dict = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "libjpeg_turbo": features.version("libjpeg_turbo"),
        "command": " ".join(sys.argv),
    }
    if not (args.skip_reads or args.only_levels):
        photo = Image.open(sorted((DATA / "kodak24").glob("*.png"))[22]).convert("RGB")
        found = reads(photo, backends)
        print_maps(found)
        report["reads"] = found
    rows = []
    level_rows = []
    for kind, files in corpus(args.images).items():
        if not args.only_levels:
            rows += cost(kind, files, backends, args.repeat)
        level_rows += levels_cost(kind, files, backends, args.repeat)
        if args.tune and kind.startswith("kodak"):
            report["tune"] = tune_levels(files, args.target)
    report["cost"] = rows
    report["levels"] = level_rows
    print(
        f"\n{'images':14} {'scale':5} {'decoder':10} {'variant':22} {'kB':>6} {'CPU ms':>7} "
        f"{'x base':>7} {'MS-SSIM':>7} {'min':>7} {'same px':>7}"
    )
    for r in rows:
        print(
            f"{r['images']:14} {r['scale']:5} {r['decoder']:10} {r['variant']:22} {r['kB']:6.1f} "
            f"{r['cpu_ms']:7.2f} {r['ratio']:7.2f} {r['ms_ssim_mean']:7.4f} "
            f"{r['ms_ssim_min']:7.4f} {r['identical']:>7}"
        )
    print_levels(level_rows)
    out = HERE / "results" / "reduced.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
