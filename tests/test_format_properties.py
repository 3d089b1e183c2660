"""Property tests: the record writer and parser, the manifest checker, the journal loader.

Each runs a short search in ``make test``; ``HYPOTHESIS_PROFILE=long`` (see
conftest) searches 50x longer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcr_explore.encode._journal import JOURNAL, PLAN, Journal
from pcr_explore.errors import DatasetError, PCRFormatError
from pcr_explore.jpeg import EOI
from pcr_explore.jpeg.scan_script import SCRIPTS
from pcr_explore.records.format import (
    MAX_SIDE,
    RecordImage,
    encode_record,
    is_safe_name,
    parse_header,
)
from pcr_explore.records.manifest import FORMAT_NAME, FORMAT_VERSION, check_manifest
from pcr_explore.records.prefix import parse_prefix

# Names a record must store exactly: any Unicode text but surrogates and NUL that
# stays inside the dataset's folder (no "..", no absolute path: those are refused).
_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=40
).filter(is_safe_name)


@st.composite
def _records(draw: st.DrawFn) -> tuple[list[RecordImage], int]:
    scans = draw(st.integers(1, 12))
    n = draw(st.integers(1, 6))
    images = []
    for _ in range(n):
        pieces = [draw(st.binary(max_size=40)) for _ in range(scans)]
        images.append(
            RecordImage(
                draw(_names),
                draw(st.integers(-1, 2**31 - 1)),
                draw(st.integers(1, MAX_SIDE)),
                draw(st.integers(1, MAX_SIDE)),
                draw(st.sampled_from([1, 3])),
                pieces,
            )
        )
    return images, scans


@given(_records())
def test_every_field_and_level_round_trips(record: tuple[list[RecordImage], int]) -> None:
    images, scans = record
    data = b"".join(encode_record(images, scans))
    h = parse_header(data, "p.pcr", file_size=len(data))
    assert (h.num_images, h.num_scans, h.file_size) == (len(images), scans, len(data))
    assert list(h.names) == [im.name for im in images]
    assert h.labels.tolist() == [im.label for im in images]
    assert h.widths.tolist() == [im.width for im in images]
    assert h.heights.tolist() == [im.height for im in images]
    for k in {1, (scans + 1) // 2, scans}:
        prefix = parse_prefix(data[: h.prefix_length(k)], "p.pcr", k)
        for i, im in enumerate(images):
            assert prefix.jpeg_bytes(i) == b"".join(im.pieces[:k]) + EOI


def _manifest() -> dict[str, object]:
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "num_scans": 5,
        "scan_script": {"name": "spectral", "scans": SCRIPTS["spectral"].text()},
        "images": 3,
        "classes": ["a"],
        "records": [
            {
                "file": "record-00000.pcr",
                "images": 3,
                "header_bytes": 100,
                "bytes_per_scan": [150, 200, 210, 220, 230],
                "checksum": "0badf00d",
            }
        ],
    }


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=20,
)


@given(
    path=st.sampled_from(
        [
            ("num_scans",),
            ("scan_script",),
            ("scan_script", "scans"),
            ("images",),
            ("classes",),
            ("records",),
            ("records", 0),
            ("records", 0, "file"),
            ("records", 0, "images"),
            ("records", 0, "header_bytes"),
            ("records", 0, "bytes_per_scan"),
            ("records", 0, "bytes_per_scan", 1),
            ("records", 0, "checksum"),
        ]
    ),
    value=_json_values,
)
def test_the_manifest_checker_raises_only_dataset_errors(
    path: tuple[str | int, ...], value: object
) -> None:
    m: object = _manifest()
    check_manifest(m, "m.json")  # the unmodified manifest is valid
    target = m
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = value  # type: ignore[index]
    try:
        check_manifest(m, "m.json")
    except DatasetError as exc:
        assert str(exc).startswith("m.json: ")


_plans = st.one_of(
    st.binary(max_size=200),
    _json_values.map(lambda v: json.dumps(v).encode()),
    _json_values.map(lambda v: json.dumps({"digest": "d" * 64, "options": v}).encode()),
)
_journal_lines = st.lists(
    st.one_of(
        _json_values,
        st.fixed_dictionaries(
            {
                "slice": st.integers(-1, 3) | _json_values,
                "start": st.sampled_from([0, 3, 5]) | _json_values,
                "end": st.sampled_from([3, 5, 9]) | _json_values,
                "file": st.sampled_from([None, "record-00000.pcr"]) | _json_values,
            },
            optional={
                "images": st.integers(0, 3) | _json_values,
                "bytes_per_scan": _json_values,
                "skipped": _json_values,
                "notes": _json_values,
                "source_bytes": _json_values,
            },
        ),
    ).map(json.dumps),
    max_size=5,
)
SLICES = [(0, 3), (3, 5), (5, 9)]  # a plan of three records over nine sources


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=_plans, lines=_journal_lines)
def test_the_journal_loader_never_crashes(tmp_path: Path, plan: bytes, lines: list[str]) -> None:
    (tmp_path / PLAN).write_bytes(plan)
    (tmp_path / JOURNAL).write_text("\n".join(lines) + "\n")
    j = Journal(tmp_path, "d" * 64, {"seed": 0})
    try:
        done = j.load(SLICES)
    except DatasetError as exc:
        assert "interrupted encode" in str(exc)
    else:
        # No record file exists here, so only entries without one can be kept,
        # each for a planned slice, at most once.
        assert all(e["file"] is None and e["images"] == 0 for e in done.values())
        assert all([e["start"], e["end"]] == list(SLICES[i]) for i, e in done.items())


def test_a_skipped_only_entry_is_kept(tmp_path: Path) -> None:
    entry = {"slice": 1, "start": 3, "end": 5, "file": None, "images": 0}
    entry |= {"skipped": [], "notes": [], "source_bytes": 0}
    (tmp_path / PLAN).write_text(json.dumps({"digest": "d" * 64, "options": {}}))
    (tmp_path / JOURNAL).write_text(json.dumps(entry) + "\n")
    assert list(Journal(tmp_path, "d" * 64, {}).load(SLICES)) == [1]


# Names from the characters that decide safety, so that unsafe ones are common
_risky_names = st.lists(
    st.text(st.sampled_from(["a", ".", "/", "\\", "C", ":", "\0", "é", "\n"]), max_size=6),
    min_size=1,
    max_size=6,
)


@given(names=_risky_names)
@settings(deadline=None)
def test_the_header_refuses_exactly_the_unsafe_names(names: list[str]) -> None:
    # the header checks every name at once; is_safe_name, one at a time, is the reference
    images = [RecordImage(n, 0, 8, 8, 3, [b"ab"]) for n in names]
    data = b"".join(encode_record(images, 1))
    unsafe = [i for i, n in enumerate(names) if not is_safe_name(n)]
    if not unsafe:
        assert parse_header(data, "r.pcr").names == tuple(names)
        return
    with pytest.raises(PCRFormatError, match=f"image {unsafe[0]} is named"):
        parse_header(data, "r.pcr")
