"""Thumbnails for the report: the worst flagged images of each check, and duplicate sets.

Made after the checks, in this process, for the few images the report shows
(at most ``worst`` per issue type and the members of the first duplicate
sets), each as a small JPEG in a ``data:`` URI so the page is one file.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

from PIL import Image

from ..errors import PCRError
from ..jpeg import decode
from ._checks import CHECKS

__all__ = ["MAX_SETS_SHOWN", "MAX_SET_MEMBERS_SHOWN", "gallery", "thumb_uri"]

# Duplicate sets shown with pictures (label leaks first), and members per set.
MAX_SETS_SHOWN = 12
MAX_SET_MEMBERS_SHOWN = 6


def thumb_uri(data: bytes, size: int = 160) -> str:
    """Return a small JPEG of an image file's bytes as a ``data:`` URI.

    Examples
    --------
    >>> buf = io.BytesIO()
    >>> Image.new("RGB", (640, 480), (10, 120, 200)).save(buf, "PNG")
    >>> thumb_uri(buf.getvalue()).startswith("data:image/jpeg;base64,")
    True
    """
    arr = decode(data, size=size)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def gallery(
    problems: list[dict[str, str]],
    scores: list[dict[str, Any]],
    duplicate_sets: list[dict[str, Any]],
    load: Callable[[int], bytes],
    worst: int,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Return the worst examples of each check and the thumbnails the report shows.

    Parameters
    ----------
    problems : list of dict
        The audit's problems (``file``, ``type``, ``issue``).
    scores : list of dict
        One row per image, by index (``file`` and a score per check).
    duplicate_sets : list of dict
        The duplicate sets (``files``, ``label_leak``).
    load : callable
        Image index to its bytes (the source file, or the dataset's full JPEG).
    worst : int
        Examples kept per issue type.

    Returns
    -------
    examples : dict of str to list of dict
        Per check with flagged images: up to *worst* ``{"file", "score"}``,
        lowest score first.
    thumbnails : dict of str to str
        File name to ``data:`` URI, for every example and shown set member.
    """
    index = {r["file"]: i for i, r in enumerate(scores)}
    examples: dict[str, list[dict[str, Any]]] = {}
    for kind in CHECKS:
        if kind == "near_duplicate":
            continue  # shown as sets
        files = {p["file"] for p in problems if p.get("type") == kind}
        ranked = sorted(files, key=lambda f: (scores[index[f]][kind], f))[:worst]
        if ranked:
            examples[kind] = [{"file": f, "score": scores[index[f]][kind]} for f in ranked]
    shown = [f for rows in examples.values() for f in (r["file"] for r in rows)]
    leaks_first = sorted(duplicate_sets, key=lambda s: not s["label_leak"])
    for s in leaks_first[:MAX_SETS_SHOWN]:
        shown += s["files"][:MAX_SET_MEMBERS_SHOWN]
    thumbs: dict[str, str] = {}
    for f in dict.fromkeys(shown):
        try:
            thumbs[f] = thumb_uri(load(index[f]))
        except (PCRError, OSError, ValueError):
            pass  # the report shows the name without a picture
    return examples, thumbs
