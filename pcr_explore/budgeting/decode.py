"""What decoding an image costs at each scan level, measured on this machine.

A level's prefix is fewer bytes to read but not proportionally less work to
decode: the Huffman decoding shrinks with the bytes, while the inverse DCT,
the upsampling and the colour conversion stay. The cost is measured on one
core, with the decoder and at the size training uses, so that the budget can
say at which storage bandwidth reading stops being the bottleneck.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_scan
from .._public import public
from ..jpeg import decode, decoder_name
from ..read.sources import LevelSource, open_source

__all__ = ["DecodeCost", "measure_decode"]


@public("pcr_explore.budgeting")
@dataclass(frozen=True)
class DecodeCost:
    """Seconds one core takes to decode one image at each level.

    Attributes
    ----------
    scans : tuple of int
        1..S.
    seconds_per_image : tuple of float
        The fastest of ``repeats`` passes over the sample, divided by its
        images (the fastest pass is the one least disturbed by the rest of
        the machine).
    images : int
        Images in the sample.
    size : int or None
        Side of the square the images were decoded to (None: full size).
    repeats : int
        Passes per level.
    decoder : str
        The JPEG decoder measured (``simplejpeg`` or ``pillow``).
    """

    scans: tuple[int, ...]
    seconds_per_image: tuple[float, ...]
    images: int
    size: int | None
    repeats: int
    decoder: str

    def at(self, scan: int) -> float:
        """Seconds per image at level *scan* (an int in 1..num_scans)."""
        n = len(self.seconds_per_image)
        return self.seconds_per_image[check_scan(scan, n, where="the decode cost") - 1]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return {
            "scans": list(self.scans),
            "seconds_per_image": list(self.seconds_per_image),
            "images": self.images,
            "size": self.size,
            "repeats": self.repeats,
            "decoder": self.decoder,
        }


@public("pcr_explore.budgeting")
def measure_decode(
    source: LevelSource | str | os.PathLike[str],
    *,
    indices: Sequence[int] | None = None,
    sample: int = 32,
    size: int | None = 64,
    repeats: int = 3,
    seed: int = 0,
    progress: bool = False,
) -> DecodeCost:
    """Time the decoding of a sample of images at every level, on one core.

    The JPEG bytes are read first; only the decoding is timed.

    Parameters
    ----------
    source : LevelSource or path
        A PCR dataset, a folder of images or an image file.
    indices : sequence of int, optional
        The images to time (default: *sample* drawn with *seed*).
    sample : int
        Images to draw when *indices* is not given.
    size : int or None
        Decode to *size* x *size* pixels, as training does (None: full size).
    repeats : int
        Passes per level; the fastest counts.
    seed : int
        Seed of the sample.
    progress : bool
        Show a progress bar, one step per level.

    Returns
    -------
    DecodeCost

    Raises
    ------
    ValueError
        If *sample*, *repeats* or *size* is not positive.

    Examples
    --------
    >>> cost = measure_decode("photos.pcr", sample=8)
    >>> cost.images, cost.size, len(cost.scans)
    (8, 64, 10)
    >>> print(f"level 1: {cost.at(1) * 1000:.2f} ms per image")  # on this machine
    level 1: ... ms per image
    """
    if sample < 1 or repeats < 1 or (size is not None and size < 1):
        raise ValueError(
            f"sample, repeats and size must be positive, got {sample}, {repeats}, {size}"
        )
    src = source if isinstance(source, LevelSource) else open_source(source)
    if indices is None:
        rng = np.random.default_rng(seed)
        indices = sorted(rng.permutation(len(src))[: min(sample, len(src))].tolist())
    idx = [int(i) for i in indices]
    shape = None if size is None else (size, size)
    per_image = []
    from .._pool import progress_bar

    with progress_bar(
        total=src.num_scans, desc="decode cost", unit="level", disable=not progress
    ) as bar:
        for k in range(1, src.num_scans + 1):
            datas = [src.jpeg_bytes(i, k) for i in idx]
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                for d in datas:
                    decode(d, size=shape, mode="RGB")
                best = min(best, time.perf_counter() - t0)
            per_image.append(best / max(1, len(datas)))
            bar.update(1)
    return DecodeCost(
        scans=tuple(range(1, src.num_scans + 1)),
        seconds_per_image=tuple(per_image),
        images=len(idx),
        size=size,
        repeats=repeats,
        decoder=decoder_name(),
    )
