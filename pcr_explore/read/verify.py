"""Check a whole PCR dataset: every record, every checksum, nothing missing or extra.

:func:`verify_dataset` reads every record in full and reports every problem
it finds (it does not stop at the first), so one run tells a user what to
re-encode or restore. ``pcr-explore verify`` prints the report and exits
non-zero on any problem.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any

from .._public import public
from ..errors import PCRError
from ..records.summary import count
from .pipeline import OnError
from .reader import PCRDataset, open_dataset

__all__ = ["VerifyReport", "verify_dataset"]


@public("pcr_explore")
@dataclass(frozen=True)
class VerifyReport:
    """What :func:`verify_dataset` found.

    Attributes
    ----------
    path : str
        The dataset checked.
    records : int
        Records listed in the manifest.
    images : int
        Images in records that passed every check.
    problems : list of str
        One line per problem, naming the file; empty when all is well.
    extra_files : list of str
        Record-like files (``*.pcr``) in the folder that the manifest does not list.
    """

    path: str
    records: int
    images: int
    problems: list[str] = field(default_factory=list)
    extra_files: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem was found (extra files are reported, not failures)."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields plus ``ok``."""
        return {"path": self.path, "ok": self.ok, **asdict(self)}  # ok right after the path

    def __str__(self) -> str:
        head = (
            f"{self.path}: {count(self.records, 'record')}, {count(self.images, 'image')} verified"
            if self.ok
            else f"{self.path}: {count(len(self.problems), 'problem')} in "
            f"{count(self.records, 'record')}"
        )
        lines = [head, *(f"  problem: {p}" for p in self.problems)]
        lines += [f"  not in the manifest: {f}" for f in self.extra_files]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in self.problems)
        return f"<pre>{html.escape(str(self).splitlines()[0])}</pre><ul>{items}</ul>"


@public("pcr_explore")
def verify_dataset(dataset: PCRDataset | str) -> VerifyReport:
    """Read every record in full and check every header, group and piece.

    Parameters
    ----------
    dataset : PCRDataset or str
        An open dataset, or its folder / URL.

    Returns
    -------
    VerifyReport
        Every problem found, one per record at most (a record's first fault
        makes the rest of it unreadable anyway).

    Raises
    ------
    DatasetError
        If the manifest itself cannot be read.

    Examples
    --------
    >>> report = verify_dataset("photos.pcr")
    >>> report.ok
    True
    """
    ds = open_dataset(dataset) if isinstance(dataset, str) else dataset
    problems: list[str] = []
    images = 0
    # records are read ahead (with the dataset's read_ahead) while the current one is checked
    failed = OnError(lambda where, exc: problems.append(str(exc)))
    for _, prefix in ds._prefixes(range(len(ds.records)), ds.num_scans, failed):
        try:
            prefix.check_pieces()
            images += prefix.header.num_images
        except PCRError as exc:
            problems.append(str(exc))
    listed = {rec.file for rec in ds.records}
    extra: list[str] = []
    try:
        names = ds.folder_files()
        extra = sorted(n for n in names if n.endswith(".pcr") and n not in listed)
    except (OSError, NotImplementedError):  # a store that cannot list: nothing to compare
        pass
    return VerifyReport(ds.url, len(ds.records), images, problems, extra)
