"""Scan scripts: parsing, validation, transcoding, datasets that store them, old datasets."""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from pcr_explore import encode_dataset, open_dataset
from pcr_explore.errors import CorruptRecordError, ScanScriptError
from pcr_explore.jpeg import GRAY_LEVELS_IN_COLOR, STANDARD_SCRIPT_GRAY, split_scans
from pcr_explore.jpeg.scan_script import (
    SCRIPTS,
    STANDARD,
    ScanScript,
    parse_scans,
    resolve_scan_script,
    script_from_record,
)
from pcr_explore.jpeg.transcode import transcode
from pcr_explore.read.sources import FolderSource
from pcr_explore.records.format import parse_header

# The standard script with its two chroma scans swapped: valid, as many levels, not standard.
SWAPPED = STANDARD.text().replace(
    "2: 1-63, 0, 1;\n1: 1-63, 0, 1;", "1: 1-63, 0, 1;\n2: 1-63, 0, 1;"
)


def test_the_grayscale_script_is_derived_as_libjpeg_writes_it() -> None:
    assert STANDARD.gray == STANDARD_SCRIPT_GRAY
    assert STANDARD.gray_levels == GRAY_LEVELS_IN_COLOR
    assert SCRIPTS["spectral"].gray_levels == (1, 2, 5)
    assert [SCRIPTS["spectral"].gray_scans_at(k) for k in range(1, 6)] == [1, 2, 2, 2, 3]


def test_the_reduced_scripts_bands_end_at_the_corners_of_reduced_idcts() -> None:
    # zig-zag 0, 4 and 24 close the 1x1, 2x2 and 4x4 corners of a block
    reduced = SCRIPTS["reduced"]
    assert [(s.ss, s.se) for s in reduced.color] == [(0, 0)] + [
        band for band in ((1, 4), (5, 24), (25, 63)) for _ in range(3)
    ]
    assert [s.components for s in reduced.color[1:4]] == [(1,), (2,), (0,)]  # chroma first
    assert all(s.ah == s.al == 0 for s in reduced.color)  # each band sent whole
    assert reduced.gray_levels == (1, 4, 7, 10)
    assert [reduced.gray_scans_at(k) for k in (1, 3, 4, 6, 7, 10)] == [1, 1, 2, 2, 3, 4]
    assert not reduced.is_standard and resolve_scan_script("reduced") is reduced


def test_named_scripts_are_valid_and_round_trip_through_text() -> None:
    for name, script in SCRIPTS.items():
        again = ScanScript.parse(script.text(), name=name)
        assert again.color == script.color
        assert script_from_record(script.text(), source="x") is script
    assert [s.num_levels for s in SCRIPTS.values()] == [10, 9, 5, 7, 10]
    assert script_from_record(None, source="x") is STANDARD
    assert script_from_record("", source="x") is STANDARD


def test_parser_reads_jpegtran_syntax_with_comments_and_defaults() -> None:
    scans = parse_scans("# DC first\n0 , 1,2 : 0-0, 0,1 ;  # comment\n0;")
    assert scans[0].components == (0, 1, 2) and (scans[0].ss, scans[0].al) == (0, 1)
    assert (scans[1].ss, scans[1].se, scans[1].ah, scans[1].al) == (0, 63, 0, 0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no scans"),
        ("0,1,2 0-0;", "scan 1 '0,1,2 0-0' is not"),
        ("0: 1-63, 0, 0; 0,1,2: 0-0, 0, 0;", "scan 1 .*AC coefficients sent before the DC"),
        ("0,1,2: 0-5, 0, 0;", "a DC scan"),
        ("0,1,2: 0-0, 0, 0; 0,1: 1-63, 0, 0;", "an AC scan holds one component"),
        ("0,3: 0-0, 0, 0;", "component indices"),
        ("1,0,2: 0-0, 0, 0;", "distinct and increasing"),
        ("0,1,2: 0-0, 0, 0; 0: 1-70, 0, 0;", "0 <= Ss <= Se <= 63"),
        ("0,1,2: 0-0, 0, 11;", "at most 10"),
        ("0,1,2: 0-0, 1, 0;", "refined \\(Ah=1\\) before its first scan"),
        (
            "0,1,2: 0-0,0,0; 0:1-63,0,2; 0:1-63,2,0; 1:1-63,0,0; 2:1-63,0,0;",
            "scan 3 .*bits down to 2; a refinement must have",
        ),
        (
            "0,1,2: 0-0,0,0; 0:1-63,0,0; 1:1-63,0,0;",
            "coefficients 1-63 of component 2 are not sent",
        ),
        (
            "0,1,2: 0-0,0,0; 0:1-9,0,0; 0:20-63,0,1; 1:1-63,0,0; 2:1-63,0,0;",
            "coefficients 10-19,20-63 of component 0|coefficients 10-63 of component 0",
        ),
    ],
)
def test_invalid_scripts_are_refused_naming_the_scan(text: str, message: str) -> None:
    with pytest.raises(ScanScriptError, match=message):
        ScanScript.parse(text, source="my.scans")


def test_resolve_names_files_and_refuses_unknown_names(tmp_path: Path) -> None:
    assert resolve_scan_script(None) is STANDARD
    assert resolve_scan_script("lean") is SCRIPTS["lean"]
    f = tmp_path / "swapped.scans"
    f.write_text(SWAPPED)
    custom = resolve_scan_script(f)
    assert custom.name == "custom" and custom.num_levels == 10 and not custom.is_standard
    (tmp_path / "std.scans").write_text(STANDARD.text())
    assert resolve_scan_script(tmp_path / "std.scans") is STANDARD
    with pytest.raises(ScanScriptError, match="unknown scan script 'fast': choose one of standard"):
        resolve_scan_script("fast")
    (tmp_path / "bad.scans").write_text("0: 1-63, 0, 0;")
    with pytest.raises(ScanScriptError, match=r"bad.scans: scan 1 .*before the DC"):
        resolve_scan_script(tmp_path / "bad.scans")


@pytest.mark.jpegtran
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_transcode_writes_the_script_losslessly(name: str, encode_jpeg, sk_photo) -> None:
    script = SCRIPTS[name]
    src = encode_jpeg(sk_photo("chelsea", 120))
    pixels = np.asarray(Image.open(io.BytesIO(src)))
    res = transcode(src, scan_script=name)
    assert res.lossless and res.jpeg.scans == script.color
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(res.jpeg.data))), pixels)
    gray = transcode(encode_jpeg(sk_photo("camera", 100)), scan_script=name)
    assert gray.jpeg.scans == script.gray


@pytest.mark.jpegtran
def test_the_pillow_backend_applies_other_scripts_with_jpegtran(sk_photo, monkeypatch) -> None:
    buf = io.BytesIO()
    Image.fromarray(sk_photo("coffee", 90)).save(buf, "PNG")
    res = transcode(buf.getvalue(), backend="pillow", scan_script="spectral")
    assert res.backend == "pillow" and res.jpeg.scans == SCRIPTS["spectral"].color
    monkeypatch.setenv("PCR_JPEGTRAN", "/nonexistent/jpegtran")
    with pytest.raises(ScanScriptError, match="png.*spectral scan script needs jpegtran"):
        transcode(buf.getvalue(), backend="pillow", scan_script="spectral", name="x.png")
    assert transcode(buf.getvalue(), backend="pillow").jpeg.scans == STANDARD.color


@pytest.mark.jpegtran
def test_a_dataset_in_another_script_reads_every_level(photo_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    encode_dataset(photo_folder, out, scan_script="spectral", progress=False, record_size=30_000)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["num_scans"] == 5 and manifest["format_version"] == 2
    assert manifest["scan_script"] == {"name": "spectral", "scans": SCRIPTS["spectral"].text()}
    ds = open_dataset(str(out))
    assert ds.scan_script is SCRIPTS["spectral"] and ds.num_scans == 5
    assert ds.summary().scan_script == "spectral"
    assert parse_header((out / ds.records[0].file).read_bytes(), "r").scan_script == (
        SCRIPTS["spectral"].text()
    )
    folder = FolderSource(photo_folder, scan_script="spectral")
    for i, name in enumerate(ds.names):
        j = folder.names.index(name)
        assert list(ds.level_bytes(i)) == list(folder.level_bytes(j))
        for k in range(1, 6):
            assert ds.jpeg_bytes(i, k) == folder.jpeg_bytes(j, k)
        assert np.array_equal(ds.image(i), folder.image(j))
    gray = ds.names.index("things/camera.jpg")
    b = ds.level_bytes(gray)
    assert b[2] == b[1] == ds.level_bytes(gray)[1] and b[3] == b[2]  # chroma-only levels 3, 4


def _v1_record(v2: bytes) -> bytes:
    """The same record as format version 1 writes it (no orientations, no script)."""
    h = parse_header(v2, "v2")
    n, s = h.num_images, h.num_scans
    names = [x.encode() for x in h.names]
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in names])]).astype("<u4")
    header_len = 24 + 24 * s + 13 * n + 8 * n * s + 4 + int(offsets[-1]) + 4
    shift = header_len - h.header_len
    groups = b"".join(
        struct.pack("<QQII", int(o) + shift, int(ln), int(c), 0)
        for o, ln, c in zip(h.group_offsets, h.group_lengths, h.group_crcs)
    )
    head = b"".join(
        [
            struct.pack("<8sHHIQ", b"\x89PCR\r\n\x1a\n", 1, s, n, header_len),
            groups,
            h.labels.astype("<i4").tobytes(),
            h.widths.astype("<u2").tobytes(),
            h.heights.astype("<u2").tobytes(),
            h.components.astype("u1").tobytes(),
            h.piece_lengths.astype("<u4").tobytes(),
            h.piece_crcs.astype("<u4").tobytes(),
            offsets.tobytes(),
            *names,
        ]
    )
    return head + struct.pack("<I", zlib.crc32(head)) + v2[h.header_len :]


@pytest.mark.jpegtran
def test_datasets_written_in_format_version_1_still_read(
    photo_folder: Path, tmp_path: Path
) -> None:
    new = tmp_path / "v2"
    encode_dataset(photo_folder, new, progress=False, record_size=30_000)
    old = tmp_path / "v1"
    shutil.copytree(new, old)
    m = json.loads((new / "manifest.json").read_text())
    m["format_version"] = 1
    del m["scan_script"]
    for rec in m["records"]:
        v1 = _v1_record((new / rec["file"]).read_bytes())
        (old / rec["file"]).write_bytes(v1)
        h = parse_header(v1, rec["file"])
        assert h.version == 1 and h.scan_script is None and set(h.orientations) == {1}
        rec["header_bytes"] = h.header_len
        rec["checksum"] = f"{h.header_crc:08x}"
        rec["bytes_per_scan"] = h.cumulative_bytes()
    (old / "manifest.json").write_text(json.dumps(m))
    a, b = open_dataset(str(new)), open_dataset(str(old))
    assert b.scan_script is STANDARD and b.verify() == len(a)
    for i in range(len(a)):
        for k in (1, 4, 10):
            assert a.jpeg_bytes(i, k) == b.jpeg_bytes(i, k)


@pytest.mark.jpegtran
def test_a_record_in_another_script_than_the_manifest_is_refused(
    photo_folder: Path, tmp_path: Path
) -> None:
    (tmp_path / "swapped.scans").write_text(SWAPPED)
    out = tmp_path / "ds"
    encode_dataset(photo_folder, out, scan_script=tmp_path / "swapped.scans", progress=False)
    m = json.loads((out / "manifest.json").read_text())
    assert m["scan_script"]["name"] == "custom" and m["options"]["scan_script"] == SWAPPED
    assert split_scans(open_dataset(str(out)).jpeg_bytes(0)).scans[2].components == (1,)
    m["scan_script"] = {"name": "standard", "scans": STANDARD.text()}
    (out / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(CorruptRecordError, match="record's scan script differs from the manifest"):
        open_dataset(str(out)).jpeg_bytes(0, 1)


def test_the_cli_refuses_a_bad_script_before_creating_anything(
    photo_folder: Path, tmp_path: Path
) -> None:
    (tmp_path / "bad.scans").write_text("0,1,2: 0-0, 0, 0;")
    for script in ("turbo", str(tmp_path / "bad.scans")):
        out = tmp_path / "out"
        proc = subprocess.run(
            [sys.executable, "-m", "pcr_explore", "encode", str(photo_folder), str(out)]
            + ["--scan-script", script],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode != 0 and not out.exists()
        assert (
            "unknown scan script 'turbo'" if script == "turbo" else "bad.scans: coefficients"
        ) in (proc.stderr)


@pytest.mark.jpegtran
def test_the_cli_encodes_in_a_script_file_and_inspect_names_it(
    photo_folder: Path, tmp_path: Path
) -> None:
    (tmp_path / "swapped.scans").write_text("# chroma scans swapped\n" + SWAPPED)
    out = tmp_path / "ds"
    run = [sys.executable, "-m", "pcr_explore"]
    subprocess.run(
        [*run, "encode", str(photo_folder), str(out), "--quiet"]
        + ["--scan-script", str(tmp_path / "swapped.scans")],
        check=True,
    )
    info = json.loads(
        subprocess.run(
            [*run, "inspect", str(out), "--json"], check=True, capture_output=True, text=True
        ).stdout
    )
    assert info["scan_script"] == "custom" and info["scans"] == 10
    assert info["scan_content"][2] == "Cb AC 1-63 first (Ah=0, Al=1)"
    text = subprocess.run(
        [*run, "inspect", str(out)], check=True, capture_output=True, text=True
    ).stdout
    assert "custom scan script" in text and "Cb AC 1-63 first" in text


_entry = st.tuples(
    st.lists(st.integers(0, 4), min_size=1, max_size=4),
    st.integers(0, 64),
    st.integers(0, 64),
    st.integers(0, 11),
    st.integers(0, 11),
).map(lambda t: f"{','.join(map(str, t[0]))}: {t[1]}-{t[2]}, {t[3]}, {t[4]};")


@given(
    text=st.one_of(
        st.text(max_size=120),
        st.lists(_entry, min_size=1, max_size=12).map("\n".join),
    )
)
def test_any_script_text_is_either_valid_or_refused_with_a_scan_script_error(text: str) -> None:
    try:
        script = ScanScript.parse(text, source="fuzz.scans")
    except ScanScriptError as exc:
        assert str(exc).startswith("fuzz.scans")
    else:  # a valid script codes every bit of every coefficient, DC first
        assert script.color[0].ss == 0 and 1 <= script.num_levels <= 64
        assert ScanScript.parse(script.text()).color == script.color
