"""A record's scan groups: one prefix read gives every image of the record at a lower fidelity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from ..._checks import check_scans
from ..._public import public
from ...jpeg._orient import decode_upright
from ...read.reader import PCRDataset
from ._levels import caption

__all__ = ["record_sheet"]


@public("pcr_explore.quality.compare")
def record_sheet(
    dataset: PCRDataset,
    *,
    record: int = 0,
    scans: Sequence[int] | None = None,
    images: int = 6,
    size: int = 96,
) -> Image.Image:
    """Every image of one record as the first *k* scan groups give it, one row per *k*.

    Each row is decoded from a single prefix read of the record file (its
    header and scan groups ``1..k``) and captioned with the bytes that read
    takes, as a share of the whole file.

    Parameters
    ----------
    dataset : PCRDataset
        An opened dataset (:func:`~pcr_explore.open_dataset`).
    record : int
        The record.
    scans : sequence of int, optional
        Prefix lengths in scan groups (default 1, 2, 5 and all).
    images : int
        Images of the record shown (the first ones).
    size : int
        Longer side of each picture.

    Returns
    -------
    PIL.Image.Image
        RGB; a notebook shows it as a picture.

    Raises
    ------
    ValueError
        If a scan count is not an int in 1..num_scans.

    Examples
    --------
    >>> from pcr_explore import open_dataset
    >>> sheet = record_sheet(open_dataset("photos.pcr"), scans=[1, 10])
    >>> sheet.size
    (360, 244)
    """
    n = int(dataset.num_scans)
    levels = (
        list(check_scans(scans, n, where=dataset.url))
        if scans is not None
        else sorted({1, min(2, n), min(5, n), n})
    )
    header = dataset.header(record)
    count = min(images, header.num_images)
    rows = []
    for k in levels:
        prefix = dataset.read_record(record, k)
        pics = [
            decode_upright(prefix.jpeg_bytes(j), size, int(header.orientations[j]))
            for j in range(count)
        ]
        rows.append((k, header.prefix_length(k), pics))
    return _sheet(rows, header.file_size, size)


def _sheet(rows: list[tuple[int, int, list[np.ndarray]]], total: int, size: int) -> Image.Image:
    """Rows of pictures, each under its caption."""
    gap, cap = 6, 20
    width = max(len(p) for _, _, p in rows) * (size + gap) - gap
    out = Image.new("RGB", (max(width, 360), len(rows) * (size + cap + gap)), "white")
    y = 0
    for k, nbytes, pics in rows:
        groups = "scan group 1" if k == 1 else f"scan groups 1-{k}"
        read = f"one read of {nbytes:,} bytes ({nbytes / total:.0%} of the record)"
        caption(out, (2, y + 2), f"{groups}: {read}")
        x = 0
        for arr in pics:
            pic = Image.fromarray(arr).convert("RGB")
            out.paste(pic, (x, y + cap))
            x += size + gap
        y += size + cap + gap
    return out
