"""The package's one convention for JSON output.

Every ``--json`` output, report and saved result goes through
:func:`to_json`: numpy scalars and arrays become plain numbers and lists, and
a non-finite float (NaN, infinity) becomes ``null``, because strict JSON has
no spelling for them and ``"inf"`` strings break numeric columns in the
tools that read the file. The field's documentation says what ``null`` means
there (for PSNR: identical images).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

__all__ = ["displayable", "json_safe", "to_json"]


def displayable(text: str) -> str:
    r"""*text* with the bytes of a file name that is not UTF-8 written as ``\xNN`` escapes.

    Python keeps such bytes as lone surrogates, which no UTF-8 file can hold
    and strict JSON parsers reject.

    Examples
    --------
    >>> displayable("caf\udce9.jpg"), displayable("café.jpg")
    ('caf\\xe9.jpg', 'café.jpg')
    """
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def json_safe(obj: Any) -> Any:
    """Return *obj* with non-finite floats as ``None`` and numpy values as Python ones.

    Parameters
    ----------
    obj : object
        Nested dicts, lists, tuples, numpy arrays and scalars, numbers, strings.

    Returns
    -------
    object
        The same structure, made of types :func:`json.dumps` accepts strictly.

    Examples
    --------
    >>> import numpy as np
    >>> json_safe({"a": np.float64("inf"), "b": np.arange(2)})
    {'a': None, 'b': [0, 1]}
    """
    if isinstance(obj, str):
        return displayable(obj)
    if isinstance(obj, dict):
        return {displayable(str(k)): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    np = sys.modules.get("numpy")  # no numpy value can exist before numpy is imported
    if np is not None and isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if np is not None and isinstance(obj, np.generic):
        return json_safe(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def to_json(obj: Any, *, indent: int | None = 1) -> str:
    """Serialise *obj* as strict JSON after :func:`json_safe` (no trailing newline).

    Examples
    --------
    >>> to_json({"psnr": float("inf")}, indent=None)
    '{"psnr": null}'
    """
    return json.dumps(json_safe(obj), indent=indent, allow_nan=False)
