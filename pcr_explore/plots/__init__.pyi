from ._bytes import BytesFigure, bytes_figure, reading_figure
from ._quality import CurveFigure, quality_figure
from ._scales import set_font_size, to_db
from ._scan_grid import ScanGridFigure, scan_grid_figure
from ._stages import StageFigure, stage_figure

__all__ = [
    "quality_figure",
    "CurveFigure",
    "bytes_figure",
    "BytesFigure",
    "reading_figure",
    "set_font_size",
    "to_db",
    "scan_grid_figure",
    "ScanGridFigure",
    "stage_figure",
    "StageFigure",
]
