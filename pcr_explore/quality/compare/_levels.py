"""What each scan level adds to an image, in words and in pictures."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..._checks import check_scan, check_scans
from ..._public import public
from ...jpeg import Size
from ...jpeg._orient import decode_upright
from ...jpeg.scan_script import STANDARD, ScanScript
from ...read.sources import LevelSource, orientation_of, source_name

__all__ = ["caption", "scan_content", "level_note", "level_strip"]

_CHANNELS = ("brightness (Y)", "blue-difference colour (Cb)", "red-difference colour (Cr)")


@public("pcr_explore.quality.compare")
def scan_content(k: int, script: ScanScript = STANDARD) -> str:
    """Say what scan *k* of a scan script (colour images) carries.

    Parameters
    ----------
    k : int
        The scan, 1..number of scans in *script*.
    script : ScanScript
        The script (default: libjpeg's standard one).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If *k* is not an int in 1..num_scans.

    Examples
    --------
    >>> scan_content(1)
    'all channels: 8x8 block averages (DC), first pass'
    >>> scan_content(3)
    'red-difference colour (Cr): frequencies 1-63 (AC), first pass'
    >>> scan_content(10)
    'brightness (Y): frequencies 1-63 (AC), last bit'
    >>> from pcr_explore.jpeg.scan_script import SCRIPTS
    >>> scan_content(5, SCRIPTS["spectral"])
    'brightness (Y): frequencies 6-63 (AC), whole'
    """
    k = check_scan(k, script.num_levels, where=f"the {script.name} scan script")
    h = script.color[k - 1]
    who = "all channels" if len(h.components) > 1 else _CHANNELS[h.components[0]]
    what = "8x8 block averages (DC)" if h.ss == 0 else f"frequencies {h.ss}-{h.se} (AC)"
    if h.ah == 0:
        how = "whole" if h.al == 0 else "first pass"
    else:
        how = "last bit" if h.al == 0 else "one more bit"
    return f"{who}: {what}, {how}"


@public("pcr_explore.quality.compare")
def level_note(
    level_bytes: Sequence[int] | np.ndarray, k: int, script: ScanScript = STANDARD
) -> str:
    """Say what level *k* adds to one image, and why when it adds nothing.

    A grayscale image in a colour dataset has empty pieces at the colour
    scans (3, 4, 8 and 9 of the standard script), so those levels look
    exactly like the level below; without a word of explanation that looks
    like a bug.

    Parameters
    ----------
    level_bytes : sequence of int
        The image's cumulative bytes at levels 1..S.
    k : int
        The level.
    script : ScanScript
        The dataset's scan script (default: the standard one).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If *k* is not an int in 1..S.

    Examples
    --------
    >>> gray = [900, 1500, 1500, 1500, 4000, 5000, 5100, 5100, 5100, 6000]
    >>> level_note(gray, 2)
    'scan 2 adds 600 bytes: brightness (Y): frequencies 1-5 (AC), first pass'
    >>> level_note(gray, 3)  # doctest: +NORMALIZE_WHITESPACE
    'scan 3 adds no bytes to this image: it carries red-difference colour (Cr) only
     and this image is grayscale, so it looks exactly like scan 2'
    """
    b = np.asarray(level_bytes, np.int64)
    n = len(b)
    k = check_scan(k, n, where="level_note")
    added = int(b[k - 1] - (b[k - 2] if k > 1 else 0))
    if n != script.num_levels:
        raise ValueError(f"{n} levels of bytes for the {script.name} script's {script.num_levels}")
    if added > 0:
        return f"scan {k} adds {added:,} bytes: {scan_content(k, script)}"
    scan = script.color[k - 1]
    if 0 not in scan.components:
        channel = _CHANNELS[scan.components[0]]
        return (
            f"scan {k} adds no bytes to this image: it carries {channel} only and this "
            f"image is grayscale, so it looks exactly like scan {k - 1}"
        )
    return f"scan {k} adds no bytes to this image: it looks exactly like scan {k - 1}"


@public("pcr_explore.quality.compare")
def level_strip(
    source: LevelSource,
    i: int,
    *,
    scans: Sequence[int] | None = None,
    size: Size = 224,
    gap: int = 6,
) -> Image.Image:
    """What a model is fed at each level: image *i* decoded at *size*, side by side.

    Each picture is captioned with its level and the share of the image's
    bytes it reads.

    Parameters
    ----------
    source : LevelSource
        A PCR dataset, folder or image file.
    i : int
        Image index.
    scans : sequence of int, optional
        Levels shown (default 1, 2, 3, 5 and the full level).
    size : int or (int, int)
        Decode size, as a training loop would ask for it.
    gap : int
        Pixels between pictures.

    Returns
    -------
    PIL.Image.Image
        RGB; a notebook shows it as a picture.

    Raises
    ------
    ValueError
        If *scans* is empty or a level is not an int in 1..num_scans (the
        default's levels above the source's are left out).

    Examples
    --------
    >>> from pcr_explore import open_source
    >>> strip = level_strip(open_source("photos.pcr"), 0, scans=[1, 10])
    >>> strip.size
    (454, 169)
    """
    n = int(source.num_scans)
    if scans is None:
        levels = sorted({k for k in (1, 2, 3, 5, n) if k <= n})
    else:
        levels = list(check_scans(scans, n, where=source_name(source)))
    if not levels:
        raise ValueError(f"{source_name(source)}: no level to show (scans=[])")
    nbytes = np.asarray(source.level_bytes(i), np.float64)
    o = orientation_of(source, i)
    pics = [
        Image.fromarray(decode_upright(source.jpeg_bytes(i, k), size, o)).convert("RGB")
        for k in levels
    ]
    cap = 20
    width = sum(p.width for p in pics) + gap * (len(pics) - 1)
    out = Image.new("RGB", (width, max(p.height for p in pics) + cap), "white")
    x = 0
    for k, pic in zip(levels, pics):
        out.paste(pic, (x, cap))
        label = "full" if k == n else f"scan {k}"
        caption(out, (x + 2, 2), f"{label}: {nbytes[k - 1] / nbytes[-1]:.0%} of the bytes")
        x += pic.width + gap
    return out


def caption(picture: Image.Image, xy: tuple[int, int], text: str) -> None:
    """Write *text* on *picture* at *xy*, as the strips and sheets caption their pictures."""
    ImageDraw.Draw(picture).text(xy, text, fill="#222222", font=ImageFont.load_default(size=13))
