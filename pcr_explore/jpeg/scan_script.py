"""Scan scripts: which scans a progressive JPEG holds, and in what order.

A dataset's scan levels mean the same fidelity for every image only when every
image uses the same script. The script is a dataset-wide choice, written in
jpegtran's ``-scans`` syntax (one scan per ``;``-terminated entry: component
indices, then ``: Ss-Se, Ah, Al``)::

    0,1,2: 0-0, 0, 1 ;   # DC of all components, all but the lowest bit
    0:     1-5, 0, 2 ;   # luminance AC 1-5, all but the two lowest bits
    ...

A script is given for a 3-component (YCbCr) image. A grayscale image in the
same dataset uses the luminance scans of it (:attr:`ScanScript.gray`), stored at
the colour levels where that luminance information is complete
(:attr:`ScanScript.gray_levels`), so at every level it has the same luminance
fidelity as the colour images.

:data:`SCRIPTS` holds the named scripts: ``standard`` (libjpeg's
``jpeg_simple_progression``, the default), alternatives trading middle-level
quality for decode speed, and ``reduced``, whose bands line up with decoding at
1/8, 1/4 and 1/2 scale. See ``docs/FORMAT.md`` and ``bench/bench_scans.py``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from itertools import groupby
from pathlib import Path

from .._checks import check_scan
from ..errors import ScanScriptError
from ._progressive import STANDARD_SCRIPT_COLOR, ProgressiveJPEG, ScanHeader

__all__ = ["ScanScript", "SCRIPTS", "STANDARD", "resolve_scan_script", "parse_scans"]

_NUM_COMPONENTS = 3
_MAX_SCANS = 64  # the record format's limit on scan groups
_MAX_BIT = 10  # libjpeg's limit on Ah/Al for 8-bit samples


def parse_scans(text: str, *, source: str = "<scan script>") -> tuple[ScanHeader, ...]:
    """Parse jpegtran ``-scans`` text into scan headers (syntax only).

    ``#`` starts a comment; an entry without ``: Ss-Se, Ah, Al`` means a
    sequential scan (0-63, 0, 0).

    Raises
    ------
    ScanScriptError
        Naming *source*, the entry and what is wrong with it.

    Examples
    --------
    >>> parse_scans("0,1,2: 0-0, 0, 0; 0: 1-63, 0, 0;")[1]
    ScanHeader(components=(0,), ss=1, se=63, ah=0, al=0)
    """
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    entries = [e.strip() for e in body.split(";")]
    if entries and entries[-1] == "":
        entries.pop()
    if not entries:
        raise ScanScriptError(f"{source}: no scans")
    scans = []
    for k, entry in enumerate(entries, start=1):
        m = re.fullmatch(
            r"(\d+(?:\s*,\s*\d+)*)\s*(?::\s*(\d+)\s*-\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+))?", entry
        )
        if m is None:
            raise ScanScriptError(
                f"{source}: scan {k} {entry!r:.60} is not 'components: Ss-Se, Ah, Al'"
            )
        comps = tuple(int(c) for c in m.group(1).split(","))
        ss, se, ah, al = (int(g) for g in m.group(2, 3, 4, 5)) if m.group(2) else (0, 63, 0, 0)
        scans.append(ScanHeader(comps, ss, se, ah, al))
    return tuple(scans)


def _format_scans(scans: tuple[ScanHeader, ...]) -> str:
    return "".join(
        f"{','.join(map(str, s.components))}: {s.ss}-{s.se}, {s.ah}, {s.al};\n" for s in scans
    )


def _validate(scans: tuple[ScanHeader, ...], source: str) -> None:
    """Check *scans* the way libjpeg will, and that they code every bit of every coefficient."""
    if len(scans) > _MAX_SCANS:
        raise ScanScriptError(f"{source}: {len(scans)} scans; at most {_MAX_SCANS}")
    # bits still to send per component and coefficient; None = not started
    last: list[list[int | None]] = [[None] * 64 for _ in range(_NUM_COMPONENTS)]
    for k, s in enumerate(scans, start=1):
        where = f"{source}: scan {k} ({_format_scans((s,)).strip()})"
        comps = s.components
        if not comps or len(comps) > 4:
            raise ScanScriptError(f"{where}: a scan holds 1 to 4 components")
        if any(c >= _NUM_COMPONENTS for c in comps):
            raise ScanScriptError(
                f"{where}: component indices are 0 (Y), 1 (Cb) and 2 (Cr) of a YCbCr image"
            )
        if list(comps) != sorted(set(comps)):
            raise ScanScriptError(f"{where}: components must be distinct and increasing")
        if not 0 <= s.ss <= s.se <= 63:
            raise ScanScriptError(f"{where}: spectral range must satisfy 0 <= Ss <= Se <= 63")
        if s.ah > _MAX_BIT or s.al > _MAX_BIT:
            raise ScanScriptError(f"{where}: Ah and Al must be at most {_MAX_BIT}")
        if s.ss == 0 and s.se != 0:
            raise ScanScriptError(f"{where}: a DC scan (Ss=0) must have Se=0")
        if s.ss > 0 and len(comps) != 1:
            raise ScanScriptError(f"{where}: an AC scan holds one component")
        for c in comps:
            if s.ss > 0 and last[c][0] is None:
                raise ScanScriptError(
                    f"{where}: AC coefficients sent before the DC of component {c}"
                )
            for q in range(s.ss, s.se + 1):
                prev = last[c][q]
                if prev is None:
                    if s.ah != 0:
                        raise ScanScriptError(
                            f"{where}: coefficient {q} of component {c} refined (Ah={s.ah}) "
                            "before its first scan"
                        )
                elif prev == 0 or s.ah != prev or s.al != s.ah - 1:
                    raise ScanScriptError(
                        f"{where}: coefficient {q} of component {c} already has "
                        + ("every bit" if prev == 0 else f"bits down to {prev}")
                        + "; a refinement must have Ah = the previous Al and Al = Ah - 1"
                    )
                last[c][q] = s.al
    for c in range(_NUM_COMPONENTS):
        missing = [q for q in range(64) if last[c][q] != 0]
        if missing:
            raise ScanScriptError(
                f"{source}: coefficients {_ranges(missing)} of component {c} are not sent to "
                "the last bit; the full level must hold every bit of every coefficient"
            )


def _ranges(qs: list[int]) -> str:
    """Sorted integers as runs: ``[1, 2, 3, 7]`` -> ``"1-3,7"``."""
    # in a run, each integer less its position is the same
    runs = [[q for _, q in run] for _, run in groupby(enumerate(qs), lambda t: t[1] - t[0])]
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


@dataclass(frozen=True)
class ScanScript:
    """A validated scan script for YCbCr images, and the grayscale one it implies.

    Use :meth:`parse` (or :func:`resolve_scan_script`) to build one; the
    constructor does not validate.

    Attributes
    ----------
    name : str
        ``"standard"``, a name from :data:`SCRIPTS`, or ``"custom"``.
    color : tuple of ScanHeader
        The scans of a colour image; one scan level each.
    description : str
        What the script is for.
    """

    name: str
    color: tuple[ScanHeader, ...]
    description: str = ""

    @classmethod
    def parse(
        cls, text: str, *, name: str = "custom", description: str = "", source: str | None = None
    ) -> ScanScript:
        """Parse and validate jpegtran ``-scans`` text.

        Raises
        ------
        ScanScriptError
            If the text is not a script libjpeg accepts, or if the last scan
            leaves any bit of any coefficient unsent (DC must come first).
        """
        where = source or f"scan script {name!r}"
        scans = parse_scans(text, source=where)
        _validate(scans, where)
        return cls(name, scans, description)

    @property
    def num_levels(self) -> int:
        """Scan levels of a dataset using this script (its colour scans)."""
        return len(self.color)

    @property
    def is_standard(self) -> bool:
        """True for libjpeg's standard progression (what ``-progressive`` writes)."""
        return self.color == STANDARD_SCRIPT_COLOR

    @cached_property
    def gray_levels(self) -> tuple[int, ...]:
        """The colour level holding each grayscale scan (those that include Y)."""
        return tuple(k for k, s in enumerate(self.color, start=1) if 0 in s.components)

    @cached_property
    def gray(self) -> tuple[ScanHeader, ...]:
        """The grayscale script: the luminance part of every scan that has one."""
        return tuple(
            ScanHeader((0,), s.ss, s.se, s.ah, s.al) for s in self.color if 0 in s.components
        )

    def gray_scans_at(self, level: int) -> int:
        """How many of a grayscale image's scans colour level *level* holds.

        Examples
        --------
        >>> [STANDARD.gray_scans_at(k) for k in range(1, 11)]
        [1, 2, 2, 2, 3, 4, 5, 5, 5, 6]

        Raises
        ------
        ValueError
            If *level* is not a level of the script (an int in ``1..num_levels``).
        """
        k = check_scan(level, self.num_levels, where=f"the {self.name} scan script")
        return sum(1 for g in self.gray_levels if g <= k)

    def text(self, *, gray: bool = False) -> str:
        """The script in jpegtran ``-scans`` syntax (the grayscale one if *gray*)."""
        return _format_scans(self.gray if gray else self.color)

    def check(self, pj: ProgressiveJPEG, *, source: str = "<bytes>") -> None:
        """Check that *pj* uses exactly this script (its grayscale form for 1 component).

        Raises
        ------
        ScanScriptError
            Naming the first scan that differs, or the component count.
        """
        if not pj.progressive:
            raise ScanScriptError(f"{source}: not a progressive JPEG (frame marker 0x{pj.sof:02X})")
        if pj.num_components not in (1, 3):
            raise ScanScriptError(
                f"{source}: {pj.num_components}-component JPEG ({pj.num_scans} scans); only "
                "grayscale and YCbCr images share a dataset's scan levels"
            )
        want = self.color if pj.num_components == 3 else self.gray
        if pj.num_scans != len(want):
            raise ScanScriptError(
                f"{source}: {pj.num_scans} scans, the {self.name} script has {len(want)}"
            )
        for k, (got, exp) in enumerate(zip(pj.scans, want), start=1):
            if got != exp:
                raise ScanScriptError(
                    f"{source}: scan {k} is '{got.describe()}', the {self.name} script has "
                    f"'{exp.describe()}'"
                )

    def describe_levels(self) -> list[str]:
        """One line per level: what its scan adds."""
        return [s.describe() for s in self.color]


def _named(name: str, description: str, text: str) -> ScanScript:
    return ScanScript.parse(text, name=name, description=description)


STANDARD = ScanScript(
    "standard",
    STANDARD_SCRIPT_COLOR,
    "libjpeg's jpeg_simple_progression: successive approximation on every component",
)

SCRIPTS: dict[str, ScanScript] = {
    "standard": STANDARD,
    "lean": _named(
        "lean",
        "the standard script without its middle luminance refinement: every AC "
        "coefficient first sent to bit 1, then the last bit",
        """
        0,1,2: 0-0, 0, 1;
        0: 1-5, 0, 1;
        2: 1-63, 0, 1;
        1: 1-63, 0, 1;
        0: 6-63, 0, 1;
        0,1,2: 0-0, 1, 0;
        2: 1-63, 1, 0;
        1: 1-63, 1, 0;
        0: 1-63, 1, 0;
        """,
    ),
    "spectral": _named(
        "spectral",
        "spectral selection only: every coefficient sent whole, no refinement scans "
        "(fastest full decode, coarser middle levels)",
        """
        0,1,2: 0-0, 0, 0;
        0: 1-5, 0, 0;
        2: 1-63, 0, 0;
        1: 1-63, 0, 0;
        0: 6-63, 0, 0;
        """,
    ),
    "hybrid": _named(
        "hybrid",
        "successive approximation on DC and luminance AC 1-5 only; chroma and high "
        "luminance AC sent whole",
        """
        0,1,2: 0-0, 0, 1;
        0: 1-5, 0, 1;
        2: 1-63, 0, 0;
        1: 1-63, 0, 0;
        0: 6-63, 0, 0;
        0,1,2: 0-0, 1, 0;
        0: 1-5, 1, 0;
        """,
    ),
    # The DC is sent whole: a 1/8 decode needs every bit of it, and a
    # refinement scan would cost every reduced decode one more pass.
    "reduced": _named(
        "reduced",
        "for decoding at a reduced size: spectral bands that end at the corners a "
        "reduced inverse DCT starts from (zig-zag 4: 2x2, 24: 4x4), each sent whole, "
        "chroma before luminance; the level after the 1-4 bands decodes at 1/4 close "
        "to the full file (lossy: libjpeg's 2x2 IDCT reads beyond its corner)",
        """
        0,1,2: 0-0, 0, 0;
        1: 1-4, 0, 0;
        2: 1-4, 0, 0;
        0: 1-4, 0, 0;
        1: 5-24, 0, 0;
        2: 5-24, 0, 0;
        0: 5-24, 0, 0;
        1: 25-63, 0, 0;
        2: 25-63, 0, 0;
        0: 25-63, 0, 0;
        """,
    ),
}


def resolve_scan_script(spec: str | os.PathLike[str] | ScanScript | None) -> ScanScript:
    """The script a user named: a :class:`ScanScript`, a name in :data:`SCRIPTS`, or a file.

    Parameters
    ----------
    spec : str, path, ScanScript or None
        ``None`` or ``"standard"`` for the default; another name from
        :data:`SCRIPTS`; or the path of a file in jpegtran ``-scans`` syntax.

    Raises
    ------
    ScanScriptError
        If the name is unknown and no such file exists, or the file's script
        is invalid (the message names the file and the scan).

    Examples
    --------
    >>> resolve_scan_script("spectral").num_levels
    5
    >>> resolve_scan_script(None) is STANDARD
    True
    """
    if spec is None:
        return STANDARD
    if isinstance(spec, ScanScript):
        return spec
    key = os.fspath(spec)
    if key in SCRIPTS:
        return SCRIPTS[key]
    path = Path(key)
    if not path.is_file():
        raise ScanScriptError(
            f"unknown scan script {key!r}: choose one of {', '.join(SCRIPTS)} or give a file "
            "in jpegtran -scans syntax"
        )
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScanScriptError(f"{path}: cannot read scan script: {exc}") from exc
    script = ScanScript.parse(text, name="custom", source=str(path))
    return STANDARD if script.is_standard else script


def script_from_record(text: str | None, *, source: str) -> ScanScript:
    """The script stored in a manifest or record header (``None`` or empty: the standard one)."""
    if not text:
        return STANDARD
    script = ScanScript.parse(text, source=f"{source}: stored scan script")
    return next((named for named in SCRIPTS.values() if named.color == script.color), script)


def script_option(script: ScanScript) -> str:
    """How an encode's options name *script*: its name if it is a named one, else its text."""
    return script.name if SCRIPTS.get(script.name) == script else script.text()


def script_from_option(value: str | None) -> ScanScript:
    """The script an encode's ``scan_script`` option names (missing: the standard one)."""
    if value is None:
        return STANDARD
    return SCRIPTS[value] if value in SCRIPTS else script_from_record(value, source="options")
