"""Bokeh figure builders shared by the audit report, the notebooks and the widgets.

Each builder returns the figure together with its data sources. Every column
a figure draws comes from those sources, so a widget updates a figure by
assigning ``source.data = new_data`` once per source (``CurveFigure.update``
does exactly that), which ``jupyter_bokeh`` syncs without ``push_notebook``.

=====================  ===============================================
:mod:`._quality`       quality against bytes over a sample of images
:mod:`._bytes`         bytes per level; reading speed per level
:mod:`._scales`        what is drawn: dB view, level labels, font sizes
=====================  ===============================================
"""

from __future__ import annotations

from ._bytes import BytesFigure, bytes_data, bytes_figure, reading_data, reading_figure
from ._quality import (
    CurveFigure,
    curve_data,
    images_data,
    quality_figure,
    recommended_data,
    target_location,
)
from ._scales import (
    FONT_SIZES,
    SCALES,
    axis_label,
    drawable,
    level_labels,
    set_font_size,
    to_db,
)

__all__ = [
    "FONT_SIZES",
    "SCALES",
    "BytesFigure",
    "CurveFigure",
    "axis_label",
    "bytes_data",
    "bytes_figure",
    "curve_data",
    "drawable",
    "images_data",
    "level_labels",
    "quality_figure",
    "reading_data",
    "reading_figure",
    "recommended_data",
    "set_font_size",
    "target_location",
    "to_db",
]
