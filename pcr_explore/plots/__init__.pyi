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
