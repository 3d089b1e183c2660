"""Bokeh figure builders shared by the audit report and the notebooks.

Each builder returns the figure together with its data sources. Every column
a figure draws comes from those sources, so a figure is updated by assigning
``source.data = new_data`` once per source (``CurveFigure.update`` does
exactly that).

=====================  ===============================================
:mod:`._quality`       quality against bytes over a sample of images
:mod:`._bytes`         bytes per level; reading speed per level
:mod:`._stages`        seconds per read stage (waiting, decode, batch) per level
:mod:`._scales`        what is drawn: dB view, level labels, font sizes
=====================  ===============================================
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
