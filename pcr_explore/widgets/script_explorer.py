"""ScriptExplorer: two scan scripts side by side: curves, decode times, images at equal bytes."""

from __future__ import annotations

import html
import io
import os
from typing import Any

import numpy as np
import traitlets as t
from cachetools import LRUCache
from PIL import Image

from .._public import public
from ..jpeg.scan_script import SCRIPTS, ScanScript
from ..quality import ScriptComparison, compare_scripts
from ..quality.compare._views import encode_jpeg
from ._demo import static_text
from ._module_widget import ModuleWidget, module_text
from ._static import hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["ScriptExplorer"]


def _faster(ratio: float) -> str:
    """A decode-speed ratio as words: "1.42x faster", "1.25x slower", "as fast"."""
    if abs(ratio - 1.0) < 0.005:
        return "as fast as the reference"
    return f"{ratio:.2f}x faster" if ratio > 1 else f"{1 / ratio:.2f}x slower"


def _level_within(share: np.ndarray, budget: float) -> int:
    """The highest level whose share is at most *budget* (level 1 when even that reads more).

    The page picks the level with the same rule (``static/script_explorer.js``).
    """
    return max(1, int(np.searchsorted(share, budget + 1e-12, side="right")))


@public("pcr_explore.widgets")
class ScriptExplorer(ModuleWidget):
    """Compare two scan scripts on a folder of images.

    Every named script (and any passed in) is measured once on the same
    sampled images (:func:`~pcr_explore.quality.compare_scripts`). Pick two:
    the left plot shows their bytes-vs-quality curves (bytes as a share of
    the first script's full level), the right one the time to decode each
    level on this machine. The byte slider picks a budget; below, each
    script's image is shown at its highest level within that budget.

    The front end is one ES module (``static/script_explorer.js``, on
    anywidget). The page holds every level's picture of both scripts for the
    image shown, so the byte budget slider moves the pictures, captions and
    the budget line with no round trip to the kernel.

    Parameters
    ----------
    folder : path
        A folder of images (or one image file).
    scripts : sequence of str or ScanScript, optional
        Scripts to offer (default: every named script); the first is the
        reference the byte shares are taken against.
    sample : int
        Images measured (default 8).
    max_side : int
        Longer side of the images shown.
    comparison : ScriptComparison, optional
        A comparison measured already (skips the measurement).

    Attributes
    ----------
    script_a, script_b : str
        The two scripts shown (traitlets: set ``explorer.script_b = "lean"``
        from code, or observe them); :meth:`chosen` gives both.
    image : int
        Index, in :attr:`images`, of the image shown.
    budget : float
        The byte budget, as a share of the reference's full level
        (0.05-1.05).
    names, images : list of str
        The scripts offered (reference first) and the sampled images.
    sides : list of dict
        What the page draws for each chosen script: its mean curve and
        decode times per level, this image's byte share, caption, ``alt``
        text and picture at every level.
    table : list of [str, str]
        One summary row per chosen script.
    presentation : bool
        Larger text for a projector.

    Examples
    --------
    >>> ex = ScriptExplorer("photos/")
    >>> ex.script_b = "lean"
    >>> ex.budget = 0.5
    >>> ex  # a notebook shows the explorer
    <pcr_explore.widgets.ScriptExplorer object at 0x...>
    """

    _esm = module_text("script_explorer.js")
    _css = static_text("explorer.css") + static_text("script_explorer.css")

    names = t.List(t.Unicode()).tag(sync=True)
    script_a = t.Unicode().tag(sync=True)
    script_b = t.Unicode().tag(sync=True)
    images = t.List(t.Unicode()).tag(sync=True)
    image = t.Int(0).tag(sync=True)
    budget = t.Float(0.3, min=0.05, max=1.05).tag(sync=True)
    max_side = t.Int(360).tag(sync=True)
    labels = t.Dict().tag(sync=True)
    sides = t.List(t.Dict()).tag(sync=True)
    table = t.List(t.List(t.Unicode())).tag(sync=True)

    def __init__(
        self,
        folder: str | os.PathLike[str],
        scripts: list[str | ScanScript] | None = None,
        *,
        sample: int = 8,
        max_side: int = 360,
        comparison: ScriptComparison | None = None,
    ) -> None:
        self.comparison = comparison or compare_scripts(
            folder, scripts=scripts or list(SCRIPTS), sample=sample, progress=False
        )
        cmp = self.comparison
        names = cmp.names
        ref = cmp.reference.name
        self._pictures: LRUCache[tuple[str, str], list[bytes]] = LRUCache(maxsize=16)
        super().__init__(
            names=names, script_a=names[0],
            script_b="spectral" if "spectral" in names else names[-1],
            images=list(cmp.reference.curve.per_image.names), max_side=max_side,
            labels={
                "curves": "Bytes read vs mean MS-SSIM (sample)",
                "times": "Decode time per level (measured on this machine)",
                "x": f"bytes read (share of {ref}'s full level)",
                "q": "mean MS-SSIM",
                "ms": "ms per image",
            },
        )  # fmt: skip
        self.observe(self._guarded(self.update), names=["script_a", "script_b", "image"])
        self.observe(lambda _: self._changed(), names=["budget", "presentation"])
        self.update()

    @t.validate("script_a", "script_b")
    def _valid_script(self, proposal: Any) -> str:
        name = str(proposal["value"])
        if name not in self.names:
            raise t.TraitError(f"no script {name!r} in this comparison ({', '.join(self.names)})")
        return name

    @t.validate("image")
    def _valid_image(self, proposal: Any) -> int:
        i = int(proposal["value"])
        if not 0 <= i < len(self.images):
            raise t.TraitError(f"no image {i}: the sample holds 0..{len(self.images) - 1}")
        return i

    # -- what the widget shows ---------------------------------------------------

    def chosen(self) -> list[str]:
        """The two scripts shown (A, B)."""
        return [str(self.script_a), str(self.script_b)]

    @property
    def image_name(self) -> str:
        """The name of the image shown."""
        return str(self.images[int(self.image)])

    def levels_at_budget(self) -> list[int]:
        """Each chosen script's highest level within the byte budget, for the image shown."""
        return [_level_within(np.asarray(s["share"]), float(self.budget)) for s in self.sides]

    def captions_at_budget(self) -> list[str]:
        """What the page writes under each picture at the budget (HTML)."""
        return [s["captions"][k - 1] for s, k in zip(self.sides, self.levels_at_budget())]

    def update(self, change: object = None) -> None:
        """Measure what the page shows for the chosen scripts and image."""
        with self.busy(f"drawing {html.escape(self.image_name)} in both scripts..."):
            sides = [self._side(j, name) for j, name in enumerate(self.chosen())]
        with self.hold_sync():
            self.sides = sides
            self.table = self._rows()

    def _side(self, j: int, name: str) -> dict[str, Any]:
        """One script's curves, and its captions and pictures at every level of the image shown."""
        cmp, image = self.comparison, self.image_name
        c = cmp[name]
        n = c.script.num_levels
        x, q, ms = cmp.x(name), c.curve.mean, c.decode_ms
        share = c.share(image, cmp.reference)
        per = c.curve.per_image
        own = per.values[per.names.index(image)] if image in per.names else np.full(n, np.nan)
        esc = html.escape(name)
        levels = range(1, n + 1)
        return {
            "name": name,
            "label": f"{'AB'[j]}: {name}",
            "num_levels": n,
            "x": [float(v) for v in x],
            "q": [float(v) for v in q],
            "ms": [float(v) for v in ms],
            "q_tips": [f"{name} level {k}: {x[k - 1]:.1%} of the bytes, "
                       f"MS-SSIM {q[k - 1]:.4f}" for k in levels],
            "ms_tips": [f"{name} level {k}: {ms[k - 1]:.2f} ms per image" for k in levels],
            "share": [float(v) for v in share],
            "captions": [f"<b>{esc}</b> level {k} of {n}: {share[k - 1]:.1%} of the bytes, "
                         f"MS-SSIM {float(own[k - 1]):.4f}" for k in levels],
            "alts": [f"{image} in the {name} script at level {k} of {n}, "
                     f"{share[k - 1]:.1%} of the bytes" for k in levels],
            "pictures": self._pictures_of(name, image),
        }  # fmt: skip

    def _pictures_of(self, name: str, image: str) -> list[bytes]:
        key = (name, image)
        if key not in self._pictures:
            c = self.comparison[name]
            self._pictures[key] = [
                encode_jpeg(c.image(image, k, size=int(self.max_side)))
                for k in range(1, c.script.num_levels + 1)
            ]
        return self._pictures[key]

    def _rows(self) -> list[list[str]]:
        """The summary table's rows for the chosen scripts: what each number is, and which way."""
        ref = self.comparison.reference.script.name
        return [
            [
                str(r["script"]),
                f"{r['levels']} levels; full level {r['bytes_vs_reference']:.3f}x the "
                f"{ref} script's bytes; worst MS-SSIM gap at equal bytes "
                f"{r['worst_gap']:+.4f}; full decode {r['full_decode_ms']:.2f} ms "
                f"({_faster(r['full_decode_speedup'])})",  # type: ignore[arg-type]
            ]
            for r in self.comparison.rows()
            if r["script"] in self.chosen()
        ]

    # -- static picture ----------------------------------------------------------

    def snapshot(self) -> bytes:
        """Both curves, and the two images at the budget, as one JPEG."""
        series = [
            (s["label"], np.asarray(s["x"], float), np.asarray(s["q"], float)) for s in self.sides
        ]
        chart = line_chart(
            series,
            title="Bytes read vs mean MS-SSIM",
            xlabel=self.labels["x"],
            ylabel="mean MS-SSIM",
            size=(440, 300),
            xfmt="{:.0%}",
        )
        pics = []
        for s, k in zip(self.sides, self.levels_at_budget()):
            im = Image.open(io.BytesIO(s["pictures"][k - 1]))
            im.thumbnail((300, 300))
            pics.append(im)
        notes = [f"byte budget {self.budget:.0%}"] + [
            html.unescape(c).replace("<b>", "").replace("</b>", "")
            for c in self.captions_at_budget()
        ]
        return to_jpeg(vstack([hstack([chart, *pics]), text_panel(notes, 900)]))
