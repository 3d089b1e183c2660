"""Scan scripts side by side: bytes, quality and decode time per level, on the same images.

Every script stores the same DCT coefficients; what differs is how they are
cut into scans. Successive approximation (sending a coefficient's high bits
first, its low bits in later *refinement* scans) spends the bytes of the
middle levels well, but refinement scans are what makes a progressive decode
slow. :func:`compare_scripts` measures that trade-off on a folder: the same
sampled images in every script, their bytes per level as a share of the
*first* script's full level (so a script that costs more bytes in total shows
it), the mean quality per level, and the time to decode each level.
"""

from __future__ import annotations

import functools
import html
import os
import timeit
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._checks import check_count
from .._public import public
from ..jpeg._orient import decode_upright
from ..jpeg.scan_script import ScanScript, resolve_scan_script
from ..read.sources import FolderSource
from ._curve import QualityCurve
from ._sampler import quality_curve

__all__ = ["ScriptCurve", "ScriptComparison", "compare_scripts"]


@public("pcr_explore.quality")
@dataclass(frozen=True)
class ScriptCurve:
    """One script measured on the sample.

    Attributes
    ----------
    script : ScanScript
        The script.
    curve : QualityCurve
        Quality per level over the sample.
    level_bytes : numpy.ndarray
        Bytes of the sampled images at each level, summed.
    decode_ms : numpy.ndarray
        Milliseconds to decode one image at each level (mean over the sample
        of each image's fastest of the repeats), measured on this machine.
    source : FolderSource
        The folder in this script (images are transcoded on demand).
    """

    script: ScanScript
    curve: QualityCurve
    level_bytes: np.ndarray
    decode_ms: np.ndarray
    source: FolderSource = field(repr=False, compare=False)

    def image(self, name: str, level: int, *, size: int | None = None) -> np.ndarray:
        """Sampled image *name* decoded at *level* of this script, upright."""
        i = self.source.names.index(name)
        return self.source.image(i, level, size=size)

    def share(self, name: str, reference: ScriptCurve) -> np.ndarray:
        """Image *name*'s bytes at each level, as a share of its full level in *reference*."""
        mine = self.source.level_bytes(self.source.names.index(name))
        return mine / float(reference.source.level_bytes(reference.source.names.index(name))[-1])

    @property
    def name(self) -> str:
        """The script's name."""
        return self.script.name


@public("pcr_explore.quality")
@dataclass(frozen=True)
class ScriptComparison:
    """Scripts measured on the same images; the first is the reference.

    ``x(name)`` is each level's bytes as a share of the reference's full
    level; ``gap(name)`` is a script's mean quality at each level minus the
    reference's curve interpolated at the same bytes.
    """

    curves: tuple[ScriptCurve, ...]
    metric: str
    source: str

    def __getitem__(self, name: str) -> ScriptCurve:
        for c in self.curves:
            if c.name == name:
                return c
        raise KeyError(f"no script {name!r} in this comparison ({', '.join(self.names)})")

    @property
    def names(self) -> list[str]:
        """The scripts, reference first."""
        return [c.name for c in self.curves]

    @property
    def reference(self) -> ScriptCurve:
        """The script the others are compared with (the first)."""
        return self.curves[0]

    def x(self, name: str) -> np.ndarray:
        """Bytes at each level of *name*, as a share of the reference's full level."""
        return self[name].level_bytes / float(self.reference.level_bytes[-1])

    def gap(self, name: str) -> np.ndarray:
        """Quality at each level minus the reference's, interpolated at equal bytes."""
        ref = self.reference
        return self[name].curve.mean - np.interp(self.x(name), self.x(ref.name), ref.curve.mean)

    def level_at(self, name: str, fraction: float) -> int:
        """The highest level of *name* that reads at most *fraction* of the reference's bytes.

        Level 1 when even that reads more.
        """
        return max(1, int(np.searchsorted(self.x(name), fraction + 1e-12, side="right")))

    def rows(self) -> list[dict[str, object]]:
        """One summary row per script (what the table and the JSON show)."""
        ref = self.reference
        out = []
        for c in self.curves:
            gap = self.gap(c.name)[:-1]
            out.append(
                {
                    "script": c.name,
                    "levels": c.script.num_levels,
                    "bytes_vs_reference": float(c.level_bytes[-1] / ref.level_bytes[-1]),
                    "worst_gap": float(gap.min()) if len(gap) else 0.0,
                    "full_decode_ms": float(c.decode_ms[-1]),
                    "full_decode_speedup": float(ref.decode_ms[-1] / c.decode_ms[-1]),
                }
            )
        return out

    def __str__(self) -> str:
        head = (
            f"{len(self.reference.curve.indices)} images of {self.source}, {self.metric}; "
            f"decode times measured on this machine\n"
            f"{'script':<10} {'levels':>6} {'bytes':>7} {'worst gap':>10} {'full ms':>8} "
            f"{'speed-up':>8}"
        )
        lines = (
            f"{r['script']:<10} {r['levels']:>6} {r['bytes_vs_reference']:>7.3f} "
            f"{r['worst_gap']:>+10.4f} {r['full_decode_ms']:>8.2f} "
            f"{r['full_decode_speedup']:>7.2f}x"
            for r in self.rows()
        )
        return "\n".join([head, *lines])

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><td>{html.escape(str(r['script']))}</td><td>{r['levels']}</td>"
            f"<td>{r['bytes_vs_reference']:.3f}</td><td>{r['worst_gap']:+.4f}</td>"
            f"<td>{r['full_decode_ms']:.2f}</td><td>{r['full_decode_speedup']:.2f}x</td></tr>"
            for r in self.rows()
        )
        return (
            f"<p>{len(self.reference.curve.indices)} images of {html.escape(self.source)}; "
            f"bytes and worst {html.escape(self.metric)} gap at equal bytes against "
            f"<b>{html.escape(self.reference.name)}</b>; decode times measured on this "
            "machine</p><table><tr><th>script</th><th>levels</th><th>bytes</th>"
            "<th>worst gap</th><th>full decode ms</th><th>speed-up</th></tr>"
            f"{cells}</table>"
        )


def _decode_ms(src: FolderSource, indices: np.ndarray, repeats: int) -> np.ndarray:
    """Mean over *indices* of each image's fastest decode at every level."""
    out = np.zeros(src.num_scans)
    for i in indices:
        o = src.transcoded(int(i)).orientation
        decode_upright(src.jpeg_bytes(int(i)), None, o)  # warm-up: not timed
        for k in range(1, src.num_scans + 1):
            decode = functools.partial(decode_upright, src.jpeg_bytes(int(i), k), None, o)
            out[k - 1] += min(timeit.repeat(decode, number=1, repeat=repeats))
    return out * 1e3 / max(1, len(indices))


@public("pcr_explore.quality")
def compare_scripts(
    folder: str | os.PathLike[str],
    *,
    scripts: Sequence[str | ScanScript] = ("standard", "spectral"),
    sample: int = 16,
    seed: int = 0,
    metric: str = "mssim",
    repeats: int = 3,
    workers: int | None = None,
    progress: bool = True,
) -> ScriptComparison:
    """Measure scan scripts on the same sampled images of a folder.

    Parameters
    ----------
    folder : path
        A folder of images (or one image file), transcoded in memory into
        each script.
    scripts : sequence of str or ScanScript
        Names from :data:`pcr_explore.jpeg.scan_script.SCRIPTS`, script files or
        scripts; the first is the reference.
    sample, seed, metric, workers, progress
        As for :func:`~pcr_explore.quality.quality_curve`; the same seed
        samples the same images for every script.
    repeats : int
        Decodes per image and level; the fastest counts.

    Returns
    -------
    ScriptComparison

    Examples
    --------
    >>> cmp = compare_scripts("photos/", scripts=["standard", "spectral"])
    >>> print(cmp)
    14 images of photos/, mssim; decode times measured on this machine
    script     levels   bytes  worst gap  full ms speed-up
    standard       10   1.000    +0.0000 ...
    spectral        5   1.025    -0.0213 ...
    """
    if not scripts:
        raise ValueError("give at least one scan script")
    check_count(repeats, "repeats")
    curves = []
    for spec in scripts:
        script = resolve_scan_script(spec)
        src = FolderSource(folder, scan_script=script, cache_size=max(64, sample))
        curve = quality_curve(
            src, sample=sample, seed=seed, metric=metric, workers=workers, progress=progress
        )
        idx = curve.indices
        level_bytes = np.sum([src.level_bytes(int(i)) for i in idx], axis=0)
        curves.append(
            ScriptCurve(script, curve, level_bytes, _decode_ms(src, idx, repeats), source=src)
        )
    return ScriptComparison(tuple(curves), metric, os.fspath(folder))
