"""What a decoder knows after the first scans of a progressive JPEG.

Every 8x8 block of every component holds 64 DCT coefficients, numbered in
zig-zag order (0 is DC, the block's average; 63 the highest frequency). A
scan sends one band ``Ss..Se`` of them for one or more components, either
from the top bit down to bit ``Al`` (a first pass, ``Ah = 0``; *spectral
selection* picks the band, *successive approximation* holds the ``Al`` low
bits back) or one more bit, bit ``Al`` (a refinement, ``Ah = Al + 1``).
After scans ``1..k`` each coefficient is either not sent yet or known down
to some bit: :func:`scan_coverage` says which, for any scan script.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._public import public
from ._progressive import ProgressiveJPEG, ScanHeader
from .scan_script import ScanScript

__all__ = ["ZIGZAG", "COMPONENT_NAMES", "ScanCoverage", "scan_coverage", "describe_bits"]


def _zigzag() -> np.ndarray:
    """Natural positions (row * 8 + column) in zig-zag order: walk the anti-diagonals."""
    order = sorted(
        ((r, c) for r in range(8) for c in range(8)),
        # odd diagonals run down-left (row rising), even ones up-right (row falling)
        key=lambda rc: (rc[0] + rc[1], rc[0] if (rc[0] + rc[1]) % 2 else -rc[0]),
    )
    out = np.array([r * 8 + c for r, c in order], np.int64)
    out.flags.writeable = False
    return out


ZIGZAG: np.ndarray = _zigzag()
"""``ZIGZAG[q]`` is the natural position ``row * 8 + column`` of zig-zag coefficient *q*."""

COMPONENT_NAMES: tuple[str, ...] = ("Y", "Cb", "Cr", "K")


def describe_bits(ah: int, al: int) -> str:
    """Say which bits of its coefficients a scan with these ``Ah``, ``Al`` sends.

    Examples
    --------
    >>> describe_bits(0, 0), describe_bits(0, 2), describe_bits(2, 1)
    ('all bits (Al=0)', 'bits >=2 (Al=2)', 'bit 1 (refine, Ah=2, Al=1)')
    """
    if ah == 0:
        return "all bits (Al=0)" if al == 0 else f"bits >={al} (Al={al})"
    return f"bit {al} (refine, Ah={ah}, Al={al})"


@public("pcr_explore.jpeg")
@dataclass(frozen=True, eq=False)
class ScanCoverage:
    """The coefficients known after scans ``1..level`` of a script, and to how many bits.

    Build one with :func:`scan_coverage`. Arrays are in zig-zag order, one
    row per component; :meth:`grid` lays a row out as the 8x8 block.

    Attributes
    ----------
    scans : tuple of ScanHeader
        The whole script.
    level : int
        Scans read, ``0..len(scans)``.
    low_bit : ndarray of int8, shape (C, 64)
        The lowest bit known of each coefficient: 0 means exact, 2 means its
        two lowest bits are still missing (known to a multiple of 4), -1
        means not sent yet.
    added : ndarray of bool, shape (C, 64)
        The coefficients scan *level* sends bits of (none at level 0).
    """

    scans: tuple[ScanHeader, ...]
    level: int
    low_bit: np.ndarray
    added: np.ndarray

    @property
    def num_components(self) -> int:
        """Components of the image (1 grayscale, 3 YCbCr)."""
        return int(self.low_bit.shape[0])

    @property
    def component_names(self) -> tuple[str, ...]:
        """``("Y",)``, ``("Y", "Cb", "Cr")``, ..."""
        return tuple(_name(c) for c in range(self.num_components))

    @property
    def scan(self) -> ScanHeader | None:
        """The scan that brought this level (None at level 0)."""
        return self.scans[self.level - 1] if self.level > 0 else None

    @property
    def known(self) -> np.ndarray:
        """(C, 64) bool: coefficients with at least their top bits known."""
        return self.low_bit >= 0

    @property
    def exact(self) -> np.ndarray:
        """(C, 64) bool: coefficients known to every bit."""
        return self.low_bit == 0

    def grid(self, component: int, values: np.ndarray | None = None) -> np.ndarray:
        """One component's values as the 8x8 block (row = vertical frequency).

        Parameters
        ----------
        component : int
            Component index.
        values : ndarray, shape (C, 64), optional
            Zig-zag ordered values (default: :attr:`low_bit`).

        Examples
        --------
        >>> from pcr_explore.jpeg import STANDARD_SCRIPT_GRAY
        >>> scan_coverage(STANDARD_SCRIPT_GRAY, level=2).grid(0)[:3, :3].tolist()
        [[1, 2, 2], [2, 2, -1], [2, -1, -1]]
        """
        v = self.low_bit if values is None else values
        out = np.empty(64, v.dtype)
        out[ZIGZAG] = v[component]
        return out.reshape(8, 8)

    def label(self) -> str:
        """What the last scan sends, e.g. ``"Y AC 1-5, bits >=2 (Al=2)"``."""
        s = self.scan
        if s is None:
            return "nothing read yet"
        comps = ",".join(_name(c) for c in s.components)
        band = "DC" if s.ss == 0 else f"AC {s.ss}-{s.se}"
        return f"{comps} {band}, {describe_bits(s.ah, s.al)}"

    def component_summary(self, component: int) -> str:
        """How much of one component is known, e.g. ``"6 of 64 sent, 1 exact"``."""
        low = self.low_bit[component]
        sent, exact = int((low >= 0).sum()), int((low == 0).sum())
        return f"{sent} of 64 sent, {exact} exact"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{name}</td><td>{self.component_summary(c)}</td>"
            f"<td>{int(self.added[c].sum())}</td></tr>"
            for c, name in enumerate(self.component_names)
        )
        return (
            f"<b>after scan {self.level} of {len(self.scans)}</b>: {html.escape(self.label())}"
            f"<table><tr><th>component</th><th>coefficients</th><th>touched by this scan</th>"
            f"</tr>{rows}</table>"
        )


def _name(c: int) -> str:
    return COMPONENT_NAMES[c] if c < len(COMPONENT_NAMES) else str(c)


@public("pcr_explore.jpeg")
def scan_coverage(
    scans: ScanScript | ProgressiveJPEG | Sequence[ScanHeader],
    *,
    level: int,
    gray: bool = False,
    components: int | None = None,
) -> ScanCoverage:
    """Say, per component, which coefficients scans ``1..level`` have sent and to how many bits.

    Parameters
    ----------
    scans : ScanScript, ProgressiveJPEG or sequence of ScanHeader
        A script (its colour scans, or its grayscale ones with *gray*), a
        split file (its own scans and component count), or scan headers.
    level : int
        Scans read, ``0..number of scans``.
    gray : bool
        With a :class:`~pcr_explore.jpeg.scan_script.ScanScript`: the
        grayscale script it implies.
    components : int, optional
        Components of the image (default: 1 for a grayscale script, 3 for a
        colour one, the file's own count, or the highest index scanned + 1).

    Returns
    -------
    ScanCoverage

    Raises
    ------
    ValueError
        If *level* is outside ``0..number of scans`` or a scan names a
        component the image does not have.

    Examples
    --------
    >>> from pcr_explore.jpeg.scan_script import STANDARD
    >>> cov = scan_coverage(STANDARD, level=2)
    >>> cov.label()
    'Y AC 1-5, bits >=2 (Al=2)'
    >>> cov.low_bit[0, :8].tolist(), cov.low_bit[1, :2].tolist()
    ([1, 2, 2, 2, 2, 2, -1, -1], [1, -1])
    """
    headers, count = _headers(scans, gray, components)
    if not 0 <= level <= len(headers):
        raise ValueError(f"level {level} is outside 0..{len(headers)} (the script's scans)")
    low = np.full((count, 64), -1, np.int8)
    added = np.zeros((count, 64), bool)
    for k, s in enumerate(headers[:level], start=1):
        if max(s.components) >= count:
            raise ValueError(
                f"scan {k} ({s.describe()}) codes component {max(s.components)}, "
                f"the image has {count}"
            )
        for c in s.components:
            low[c, s.ss : s.se + 1] = s.al
            if k == level:
                added[c, s.ss : s.se + 1] = True
    low.flags.writeable = False
    added.flags.writeable = False
    return ScanCoverage(tuple(headers), level, low, added)


def _headers(
    scans: ScanScript | ProgressiveJPEG | Sequence[ScanHeader], gray: bool, components: int | None
) -> tuple[tuple[ScanHeader, ...], int]:
    """The scan headers and the image's component count."""
    if isinstance(scans, ScanScript):
        headers, count = (scans.gray, 1) if gray else (scans.color, 3)
    elif isinstance(scans, ProgressiveJPEG):
        headers, count = scans.scans, scans.num_components
    else:
        headers = tuple(scans)
        count = max((max(s.components) for s in headers), default=0) + 1
    return headers, components if components is not None else count
