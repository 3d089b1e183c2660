"""ScriptExplorer: two scan scripts side by side: curves, decode times, images at equal bytes."""

from __future__ import annotations

import html
import io
import os
from typing import cast

import ipywidgets as w
import numpy as np
from bokeh.core.properties import value
from bokeh.layouts import row
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models.annotations import LegendItem, Span
from bokeh.plotting import figure
from PIL import Image

from .._public import public
from ..jpeg.scan_script import SCRIPTS, ScanScript
from ..quality import ScriptComparison, compare_scripts
from ..quality.compare._views import encode_jpeg
from ._explorer import Explorer, html_table
from ._static import hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["ScriptExplorer"]

_COLORS = ("#1f77b4", "#d62728")
_ROW = w.Layout(flex_flow="row wrap", align_items="center", width="100%")


def _faster(ratio: float) -> str:
    """A decode-speed ratio as words: "1.42x faster", "0.80x: slower", "as fast"."""
    if abs(ratio - 1.0) < 0.005:
        return "as fast as the reference"
    return f"{ratio:.2f}x faster" if ratio > 1 else f"{1 / ratio:.2f}x slower"


@public("pcr_explore.widgets")
class ScriptExplorer(Explorer):
    """Compare two scan scripts on a folder of images.

    Every named script (and any passed in) is measured once on the same
    sampled images (:func:`~pcr_explore.quality.compare_scripts`). Pick two:
    the left plot shows their bytes-vs-quality curves (bytes as a share of
    the first script's full level), the right one the time to decode each
    level on this machine. The byte slider picks a budget; below, each
    script's image is shown at its highest level within that budget.

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

    Examples
    --------
    >>> ScriptExplorer("photos/")  # a notebook shows the explorer
    <pcr_explore.widgets.ScriptExplorer object at 0x...>
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        scripts: list[str | ScanScript] | None = None,
        *,
        sample: int = 8,
        max_side: int = 360,
        comparison: ScriptComparison | None = None,
    ) -> None:
        super().__init__()
        self.comparison = comparison or compare_scripts(
            folder, scripts=scripts or list(SCRIPTS), sample=sample, progress=False
        )
        self.max_side = max_side
        names = self.comparison.names
        self.pick = [
            w.Dropdown(options=names, value=names[0], description="script A"),
            w.Dropdown(
                options=names,
                value="spectral" if "spectral" in names else names[-1],
                description="script B",
            ),
        ]
        ref = self.comparison.reference
        self.image_pick = w.Dropdown(options=list(ref.curve.per_image.names), description="image")
        self.budget = w.FloatSlider(
            value=0.3,
            min=0.05,
            max=1.05,
            step=0.01,
            description="byte budget",
            readout_format=".0%",
            continuous_update=False,
            layout=w.Layout(width="420px"),
        )
        self.curves_fig, self.times_fig, self.sources, self.marker = self._figures()
        self.pictures = [
            w.Image(format="jpeg", layout=w.Layout(width=f"{max_side}px", height="auto"))
            for _ in range(2)
        ]
        self.captions = [w.HTML(layout=w.Layout(width=f"{max_side}px")) for _ in range(2)]
        self.table = w.HTML()
        for c in (*self.pick, self.image_pick, self.budget):
            c.observe(self._guarded(self.update), names="value")
        self.presentation.layout.width = "auto"
        pics = [w.VBox([p, c]) for p, c in zip(self.pictures, self.captions)]
        self.view = w.VBox(
            [
                w.HBox([*self.pick, self.presentation], layout=_ROW),
                self._plot(row(self.curves_fig, self.times_fig, sizing_mode="stretch_width")),
                w.HBox([self.budget, self.image_pick], layout=_ROW),
                w.HBox(pics, layout=_ROW),
                self.table,
                self.status,
                self.errors,
            ]
        )
        self.update()

    def _figures(self) -> tuple[figure, figure, list[ColumnDataSource], Span]:
        def plot(title: str, y_label: str) -> figure:  # both against the same bytes axis
            return figure(
                height=300,
                title=title,
                x_axis_label=f"bytes (share of {self.comparison.reference.name}'s full level)",
                y_axis_label=y_label,
                sizing_mode="stretch_width",
                tools="pan,wheel_zoom,reset",
            )

        curves = plot("Bytes read vs mean MS-SSIM (sample)", "mean MS-SSIM")
        times = plot("Decode time per level (measured on this machine)", "ms per image")
        sources = []
        for k, color in enumerate(_COLORS):
            src = ColumnDataSource({"x": [], "q": [], "ms": [], "level": [], "name": []})
            label = f"script {'AB'[k]}"
            for fig, y in ((curves, "q"), (times, "ms")):
                fig.line("x", y, source=src, color=color, line_width=2, legend_label=label)
                fig.scatter("x", y, source=src, color=color, size=7, legend_label=label)
            sources.append(src)
        hover = [("script", "@name"), ("level", "@level"), ("bytes", "@x{0.0%}")]
        curves.add_tools(HoverTool(tooltips=[*hover, ("MS-SSIM", "@q{0.0000}")]))
        times.add_tools(HoverTool(tooltips=[*hover, ("decode", "@ms{0.00} ms")]))
        for fig in (curves, times):
            fig.legend.location = "bottom_right" if fig is curves else "top_left"
        marker = Span(location=0.3, dimension="height", line_color="#888", line_dash="dashed")
        curves.add_layout(marker)
        return curves, times, sources, marker

    def chosen(self) -> list[str]:
        """The two scripts shown (A, B)."""
        return [str(p.value) for p in self.pick]

    def levels_at_budget(self) -> list[int]:
        """Each chosen script's highest level within the byte budget, for the image shown."""
        return [self._level_for(name) for name in self.chosen()]

    def _level_for(self, name: str) -> int:
        cmp = self.comparison
        share = cmp[name].share(str(self.image_pick.value), cmp.reference)
        return max(1, int(np.searchsorted(share, float(self.budget.value) + 1e-12, side="right")))

    def update(self, change: object = None) -> None:
        """Redraw the curves, the pictures and the table for the current controls."""
        cmp = self.comparison
        for fig in (self.curves_fig, self.times_fig):
            items = cast(list[LegendItem], fig.legend[0].items)
            for item, name in zip(items, self.chosen()):
                item.label = value(name)
        for src, name in zip(self.sources, self.chosen()):
            c = cmp[name]
            n = c.script.num_levels
            src.data = {
                "x": cmp.x(name).tolist(),
                "q": c.curve.mean.tolist(),
                "ms": c.decode_ms.tolist(),
                "level": list(range(1, n + 1)),
                "name": [name] * n,
            }
        self.marker.location = float(self.budget.value)
        shown = str(self.image_pick.value)
        for pic, caption, name, level in zip(
            self.pictures, self.captions, self.chosen(), self.levels_at_budget()
        ):
            pic.value, caption.value = self._picture_at(name, shown, level)
        ref = html.escape(cmp.reference.script.name)
        self.table.value = html_table(
            [
                (
                    f"<b>{html.escape(str(r['script']))}</b>",
                    f"{r['levels']} levels; full level {r['bytes_vs_reference']:.3f}x the "
                    f"{ref} script's bytes; worst MS-SSIM gap at equal bytes "
                    f"{r['worst_gap']:+.4f}; full decode {r['full_decode_ms']:.2f} ms "
                    f"({_faster(r['full_decode_speedup'])})",  # type: ignore[arg-type]
                )
                for r in cmp.rows()
                if r["script"] in self.chosen()
            ]
        )

    def _picture_at(self, name: str, image: str, level: int) -> tuple[bytes, str]:
        c = self.comparison[name]
        share = c.share(image, self.comparison.reference)[level - 1]
        per = c.curve.per_image
        q = float(per.values[per.names.index(image), level - 1]) if image in per.names else np.nan
        text = (
            f"<b>{html.escape(name)}</b> level {level} of {c.script.num_levels}: "
            f"{share:.1%} of the bytes, MS-SSIM {q:.4f}"
        )
        return encode_jpeg(c.image(image, level, size=self.max_side)), text

    def snapshot(self) -> bytes:
        """Both curves, and the two images at the budget, as one JPEG."""
        series = [
            (name, self.comparison.x(name), self.comparison[name].curve.mean)
            for name in self.chosen()
        ]
        chart = line_chart(
            series,
            title="Bytes vs mean MS-SSIM",
            xlabel="bytes (share of the reference's full level)",
            ylabel="mean MS-SSIM",
            size=(440, 300),
            xfmt="{:.0%}",
        )
        pics = []
        for pic in self.pictures:
            im = Image.open(io.BytesIO(pic.value))
            im.thumbnail((300, 300))
            pics.append(im)
        notes = [
            html.unescape(c.value).replace("<b>", "").replace("</b>", "") for c in self.captions
        ]
        return to_jpeg(vstack([hstack([chart, *pics]), text_panel(notes, 900)]))
