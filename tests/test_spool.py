"""An interrupted encode keeps the images of its unfinished record, not only whole records."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pcr_explore.encode.encoder as encoder
from pcr_explore import encode_dataset
from pcr_explore.encode._shard import Transcoded
from pcr_explore.encode._spool import Spool, spool_file
from pcr_explore.records.format import RecordImage


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def one_record(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The photo folder as one record, encoded without interruption."""
    out = tmp_path_factory.mktemp("spool") / "ds"
    encode_dataset(photo_folder, out, workers=1, progress=False)
    return out


_TRANSCODE = encoder.transcode_source


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, n: int) -> list[str]:
    """Make the encoder's transcode raise KeyboardInterrupt after *n* sources; log the names."""
    real = _TRANSCODE
    calls: list[str] = []

    def counted(*args: Any) -> Transcoded:
        if len(calls) == n:
            raise KeyboardInterrupt
        calls.append(args[2])
        return real(*args)

    monkeypatch.setattr(encoder, "transcode_source", counted)
    return calls


def test_a_resumed_encode_transcodes_only_what_the_interrupt_lost(
    photo_folder: Path, tmp_path: Path, one_record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "ds"
    first = _interrupt_after(monkeypatch, 4)
    with pytest.raises(KeyboardInterrupt):
        encode_dataset(photo_folder, out, workers=1, progress=False)
    assert len(first) == 4 and (out / spool_file(0)).stat().st_size > 0
    assert not list(out.glob("*.pcr"))  # no record was finished
    second = _interrupt_after(monkeypatch, 1000)
    encode_dataset(photo_folder, out, workers=1, progress=False)
    assert len(second) == 3 and not set(first) & set(second)  # the other 3 of 7
    assert _tree(out) == _tree(one_record)  # same bytes, no spool left


@pytest.mark.parametrize("damage", ["torn", "flipped"])
def test_a_damaged_spool_is_cut_at_the_damage(
    photo_folder: Path,
    tmp_path: Path,
    one_record: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
) -> None:
    out = tmp_path / "ds"
    _interrupt_after(monkeypatch, 5)
    with pytest.raises(KeyboardInterrupt):
        encode_dataset(photo_folder, out, workers=1, progress=False)
    spool = out / spool_file(0)
    data = bytearray(spool.read_bytes())
    if damage == "torn":
        spool.write_bytes(data[:-10])  # the last entry lost its end
    else:
        data[len(data) // 2] ^= 0x40  # a bit flip inside an entry
        spool.write_bytes(data)
    again = _interrupt_after(monkeypatch, 1000)
    encode_dataset(photo_folder, out, workers=1, progress=False)
    assert 3 <= len(again) <= 7
    assert _tree(out) == _tree(one_record)


def test_overwrite_and_finished_records_remove_spools(
    photo_folder: Path, tmp_path: Path, one_record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "ds"
    _interrupt_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        encode_dataset(photo_folder, out, workers=1, progress=False)
    _interrupt_after(monkeypatch, 1000)
    encode_dataset(photo_folder, out, workers=1, progress=False, overwrite=True, seed=1)
    assert not list(out.glob(".*.spool"))


def _result(i: int) -> Transcoded:
    image = RecordImage(f"n{i}", i % 3, 8, 8, 3, [b"a" * (i + 1), b"", b"bc"], None, 1 + i % 8)
    return Transcoded(i, f"n{i}", image, 100 + i, "jpegtran", "note" if i % 2 else "")


def test_spool_round_trip(tmp_path: Path) -> None:
    s = Spool(tmp_path, 3)
    for i in range(10, 14):
        s.append(_result(i))
    s.append(Transcoded(14, "n14", None, 0, error="n14: broken"))
    s.close()
    got = Spool(tmp_path, 3).load(10, [f"n{i}" for i in range(10, 15)], 3)
    assert [r.index for r in got] == [10, 11, 12, 13, 14]
    assert got[2].image is not None and list(got[2].image.pieces) == [b"a" * 13, b"", b"bc"]
    assert got[3].image.orientation == 1 + 13 % 8 and got[3].note == "note"
    assert got[4].image is None and got[4].error == "n14: broken"
    # a spool of another plan (other names) keeps nothing, and is cut to nothing
    assert Spool(tmp_path, 3).load(10, ["x"] * 5, 3) == []
    assert (tmp_path / spool_file(3)).stat().st_size == 0


@given(junk=st.binary(max_size=300), cut=st.integers(0, 400))
def test_any_spool_bytes_load_as_a_valid_prefix(tmp_path_factory, junk: bytes, cut: int) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    s = Spool(folder, 0)
    for i in range(3):
        s.append(_result(i))
    s.close()
    path = folder / spool_file(0)
    data = path.read_bytes()
    path.write_bytes(data[: min(cut, len(data))] + junk)
    got = Spool(folder, 0).load(0, ["n0", "n1", "n2"], 3)
    assert [r.index for r in got] == list(range(len(got)))
    for r in got:
        assert r.image is not None and list(r.image.pieces) == list(_result(r.index).image.pieces)
