"""The encoder under faults: concurrent runs, kills, bad options, odd source files."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pcr_explore.encode.discover import find_sources
from pcr_explore.encode.encoder import EncodeOptions, encode_dataset
from pcr_explore.errors import DatasetError, LabelWarning, SourceImageError
from pcr_explore.jpeg.transcode import transcode
from pcr_explore.read.reader import open_dataset
from pcr_explore.storage._lock import FolderLock


def test_a_second_encode_into_a_locked_folder_fails_at_once(
    photo_folder: Path, tmp_path: Path
) -> None:
    out = tmp_path / "o"
    out.mkdir()
    with FolderLock(out):
        # Refused, not queued behind the holder: the holder is this thread, so a queued
        # encode would never return (the per-test timeout turns that into a failure).
        with pytest.raises(DatasetError, match=rf"another encode is writing .*pid {os.getpid()}"):
            encode_dataset(photo_folder, out, workers=1, progress=False)
        # ... and refused before any work: nothing but the holder's lock file in the folder
        assert [p.name for p in out.iterdir()] == [".pcr-lock"]
    # Released: the folder is usable and the lock file is gone afterwards.
    encode_dataset(photo_folder, out, workers=1, progress=False)
    assert not (out / ".pcr-lock").exists()


def _descendants(pid: int) -> set[int]:
    out: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        for k in map(int, kids):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_workers_end_when_the_encode_is_killed(
    tmp_path: Path, encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(60):
        (src / f"{i:03d}.jpg").write_bytes(encode_jpeg(sk_photo("astronaut", 384)))
    script = (
        "from pcr_explore.encode.encoder import EncodeOptions, encode_dataset\n"
        "if __name__ == '__main__':\n"
        f"    encode_dataset({str(src)!r}, {str(tmp_path / 'o')!r}, workers=2,"
        " record_size=20_000, progress=False,"
        " options=EncodeOptions(backend='pillow', parallel='processes'))\n"
    )
    (tmp_path / "enc.py").write_text(script)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "enc.py")])
    # The waits below end on a condition, however busy the machine; a worker that never
    # ends (or an encode that never writes) is a hang, which the per-test timeout reports.
    try:
        while not list((tmp_path / "o").glob("record-*.pcr")):
            assert proc.poll() is None, "the encode ended before writing a record"
            time.sleep(0.05)
        children = _descendants(proc.pid)
        assert len(children) >= 2  # the pool's workers (and its fork server)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        while any(_running(c) for c in children):
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The killed run is resumable, and a re-run leaves nothing of its own behind.
    (tmp_path / "o" / ".record-00099.pcr.abc123.tmp").write_bytes(b"debris")
    summary = encode_dataset(
        src,
        tmp_path / "o",
        workers=1,
        record_size=20000,
        progress=False,
        options=EncodeOptions(backend="pillow"),
    )
    assert summary.images == 60 and summary.resumed_records >= 1
    leftovers = sorted(p.name for p in (tmp_path / "o").iterdir() if not p.name.endswith(".pcr"))
    assert leftovers == ["manifest.json"]


def test_overwrite_removes_only_the_encoders_files(photo_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    encode_dataset(photo_folder, out, record_size=20_000, workers=1, progress=False)
    (out / "old-model.pcr").write_bytes(b"a user's file")
    (out / "notes.txt").write_text("keep me")
    encode_dataset(photo_folder, out, workers=1, progress=False, overwrite=True)
    assert (out / "old-model.pcr").read_bytes() == b"a user's file"
    assert (out / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in out.glob("record-*.pcr")) == ["record-00000.pcr"]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"quality": 200}, "quality must be an integer in 1..100, got 200"),
        ({"workers": 0}, "workers must be at least 1, got 0"),
        ({"record_size": 0}, "record_size must be a positive number of bytes"),
        ({"backend": "magick"}, "unknown backend 'magick'"),
    ],
)
def test_bad_options_create_nothing(
    photo_folder: Path, tmp_path: Path, kw: dict[str, object], match: str
) -> None:
    out = tmp_path / "never"
    rare = {k: kw.pop(k) for k in list(kw) if k in EncodeOptions.__dataclass_fields__}
    with pytest.raises(ValueError, match=match):
        encode_dataset(photo_folder, out, progress=False, **kw, options=EncodeOptions(**rare))  # type: ignore[arg-type]
    assert not out.exists()


def test_a_refused_resume_names_the_differing_option(photo_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"

    def stop(idx: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        encode_dataset(
            photo_folder,
            out,
            record_size=20000,
            workers=1,
            progress=False,
            options=EncodeOptions(on_record=stop),
        )
    with pytest.raises(DatasetError, match=r"options differ: quality 90 -> 80, seed 0 -> 3"):
        encode_dataset(
            photo_folder,
            out,
            record_size=20000,
            workers=1,
            progress=False,
            seed=3,
            options=EncodeOptions(quality=80),
        )


def test_an_existing_file_as_output_is_named(photo_folder: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(DatasetError, match=r"afile: exists and is not a folder"):
        encode_dataset(photo_folder, afile, progress=False)


def test_odd_source_files_are_skipped_with_a_reason(photo_copy: Path, tmp_path: Path) -> None:
    bad_name = os.fsdecode(b"things/caf\xe9.jpg")  # Latin-1 bytes: not UTF-8
    (photo_copy / "things" / "rocket.jpg").rename(photo_copy / bad_name)
    junk = photo_copy / "things" / "huge.jpg"
    with open(junk, "wb") as f:  # sparse: large on paper, no disk used
        f.truncate(2 << 30)
    (photo_copy / "things" / "secret.txt").write_text("password=hunter2\n")
    os.symlink(photo_copy / "things" / "secret.txt", photo_copy / "things" / "link.jpg")
    summary = encode_dataset(photo_copy, tmp_path / "o", workers=1, progress=False)
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    reasons = {s["file"]: s["issue"] for s in m["skipped"]}
    assert summary.images == 6 and summary.skipped == 3
    assert "file name is not valid UTF-8" in reasons["things/caf\\xe9.jpg"]
    assert "larger than any image source allowed" in reasons["things/huge.jpg"]
    assert reasons["things/link.jpg"].endswith(
        "not a recognised image format (no JPEG, PNG, "
        "WebP, BMP, TIFF or GIF signature at the start)"
    )
    assert "hunter2" not in json.dumps(m) and "7061" not in json.dumps(m)


def test_transcode_refuses_junk_without_reading_it(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jpg"
    junk.write_bytes(b"PK\x03\x04" + b"\0" * 1000)
    with pytest.raises(SourceImageError, match=r"junk\.jpg: not a recognised image format"):
        transcode(junk)
    empty = tmp_path / "empty.png"
    empty.touch()
    with pytest.raises(SourceImageError, match=r"empty\.png: empty file"):
        transcode(empty)


def test_a_stray_image_beside_class_folders_keeps_the_labels(
    photo_copy: Path, tmp_path: Path
) -> None:
    (photo_copy / "stray.jpg").write_bytes((photo_copy / "animals" / "coffee.jpg").read_bytes())
    with pytest.warns(LabelWarning, match=r"1 image\(s\) sit beside the class folders"):
        items, classes = find_sources(photo_copy)
    assert classes == ["animals", "things"]
    assert {i.name: i.label for i in items}["stray.jpg"] is None
    assert sum(i.label is not None for i in items) == 7


def test_a_full_disk_names_the_file_being_written(
    photo_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("pcr_explore.storage._atomic.os.fsync", full)
    with pytest.raises(OSError, match="No space left on device") as info:
        encode_dataset(photo_folder, tmp_path / "o", workers=1, progress=False)
    assert info.value.filename == str(tmp_path / "o" / ".pcr-plan.json")
    assert not list((tmp_path / "o").glob("*.tmp"))
    monkeypatch.undo()
    assert len(open_dataset(str(_encode_again(photo_folder, tmp_path / "o")))) == 7


def _encode_again(src: Path, out: Path) -> Path:
    encode_dataset(src, out, workers=1, progress=False)
    return out


def test_a_run_stopped_while_cleaning_up_finishes_on_the_next(
    photo_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pcr_explore.encode._journal import Journal

    out = tmp_path / "o"
    ref = encode_dataset(
        photo_folder, tmp_path / "ref", record_size=20000, workers=1, progress=False
    )

    def killed(self: Journal) -> None:
        raise KeyboardInterrupt  # after the manifest is written, before the clean-up

    with monkeypatch.context() as m:
        m.setattr(Journal, "remove", killed)
        with pytest.raises(KeyboardInterrupt):
            encode_dataset(photo_folder, out, record_size=20000, workers=1, progress=False)
    assert (out / "manifest.json").exists() and (out / ".pcr-plan.json").exists()
    manifest = (out / "manifest.json").read_bytes()
    again = encode_dataset(photo_folder, out, record_size=20000, workers=1, progress=False)
    assert again.images == ref.images and again.records == ref.records
    assert again.resumed_records == ref.records  # nothing was encoded again
    assert not (out / ".pcr-plan.json").exists() and not (out / ".pcr-journal.jsonl").exists()
    assert (out / "manifest.json").read_bytes() == manifest
    # once clean, encoding into the folder again is refused as before
    with pytest.raises(DatasetError, match="already holds a dataset"):
        encode_dataset(photo_folder, out, record_size=20000, workers=1, progress=False)


def test_entries_that_are_not_files_are_listed_as_skipped(photo_copy: Path, tmp_path: Path) -> None:
    import os

    from pcr_explore import audit

    things = photo_copy / "things"
    os.mkfifo(things / "pipe.jpg")  # opening it would wait for a writer
    (things / "gone.jpg").symlink_to(things / "no-such-file.jpg")
    (things / "loop.jpg").symlink_to(things / "loop.jpg")
    summary = encode_dataset(photo_copy, tmp_path / "o", workers=1, progress=False)
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    skipped = {s["file"]: s["issue"] for s in manifest["skipped"]}
    assert {"things/pipe.jpg", "things/gone.jpg", "things/loop.jpg"} <= set(skipped)
    assert "not a regular file" in skipped["things/pipe.jpg"]
    assert summary.skipped == 3 and summary.images == 7
    report = audit(photo_copy, sample=1, workers=1, progress=False)
    bad = {p["file"] for p in report.problems if p["type"] == "bad_file"}
    assert {"things/pipe.jpg", "things/gone.jpg", "things/loop.jpg"} <= bad
