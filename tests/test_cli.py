"""The pcr-explore command: exit codes, one-line errors, JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pcr_explore", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture(scope="module")
def cli_dataset(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "ds"
    r = run(
        "encode", str(photo_folder), str(out), "--record-size", "20000", "--workers", "2", "--quiet"
    )
    assert r.returncode == 0, r.stderr
    assert "7 images in" in r.stdout
    return out


def test_inspect_json(cli_dataset: Path) -> None:
    r = run("inspect", str(cli_dataset), "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["images"] == 7 and info["scans"] == 10 and info["records"] >= 3
    assert info["classes"] == ["animals", "things"]
    cum = info["bytes_per_scan"]
    assert len(cum) == 10 and cum == sorted(cum) and cum[-1] == info["total_bytes"]
    assert info["total_bytes"] == sum(p.stat().st_size for p in cli_dataset.glob("*.pcr"))
    assert 0 < info["source_bytes"]
    table = run("inspect", str(cli_dataset))
    assert (
        table.returncode == 0 and "of full" in table.stdout and len(table.stdout.splitlines()) == 13
    )
    assert table.stdout.splitlines()[-1].startswith("bytes: what reading each level takes")


def test_read_json(cli_dataset: Path) -> None:
    r = run("read", str(cli_dataset), "--scan", "3", "--size", "32", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    info = json.loads(run("inspect", str(cli_dataset), "--json").stdout)
    assert out["scan"] == 3 and out["images"] == 7
    assert out["bytes_read"] == info["bytes_per_scan"][2]
    assert out["images_per_second"] == pytest.approx(7 / out["seconds"])


def test_errors_are_one_line_without_traceback(tmp_path: Path, cli_dataset: Path) -> None:
    r = run("inspect", str(tmp_path / "missing"))
    assert r.returncode == 1
    assert (
        r.stderr.strip().count("\n") == 0 and "missing" in r.stderr and "Traceback" not in r.stderr
    )
    r = run("read", str(cli_dataset), "--scan", "11")
    assert r.returncode == 1 and "outside 1..10" in r.stderr
    r = run("--debug", "read", str(cli_dataset), "--scan", "11")
    assert r.returncode == 1 and "Traceback" in r.stderr
    r = run("read", str(cli_dataset))
    assert r.returncode == 2 and "--scan" in r.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["read", "x"], "the following arguments are required: --scan"),
        (["read", "x", "--scan", "abc"], "argument --scan: invalid int value: 'abc'"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["audit", "x", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    ],
)
def test_a_mistake_in_the_command_line_is_one_line_and_status_2(argv: list[str], said: str) -> None:
    r = run(*argv)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert said in r.stderr and "usage:" not in r.stderr and r.stderr.endswith("--help')\n")


def test_encode_strict_and_skip(
    tmp_path: Path, encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.jpg").write_bytes(encode_jpeg(sk_photo("coffee", 64)))
    (src / "bad.jpg").write_bytes(b"\x89PNG renamed")
    r = run("encode", str(src), str(tmp_path / "a"), "--quiet", "--workers", "1")
    assert r.returncode == 0 and "1 skipped" in r.stdout
    r = run("encode", str(src), str(tmp_path / "b"), "--quiet", "--strict", "--workers", "1")
    assert r.returncode == 1 and "bad.jpg" in r.stderr and "Traceback" not in r.stderr


def test_sample_builds_and_prints_the_table(tmp_path: Path) -> None:
    r = run("sample", str(tmp_path / "s"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "16 images" in r.stdout and "of full" in r.stdout
    assert (tmp_path / "s" / "pcr" / "manifest.json").exists()
    assert len(list((tmp_path / "s" / "images").rglob("*.jpg"))) == 16


def test_verify_reports_every_damaged_record(cli_dataset: Path, tmp_path: Path) -> None:
    import shutil

    r = run("verify", str(cli_dataset), "--json")
    assert r.returncode == 0, r.stderr
    good = json.loads(r.stdout)
    assert good["ok"] is True and good["images"] == 7 and good["problems"] == []
    bad = tmp_path / "bad"
    shutil.copytree(cli_dataset, bad)
    for name in ("record-00000.pcr", "record-00002.pcr"):
        data = bytearray((bad / name).read_bytes())
        data[-3] ^= 0xFF  # a flipped bit in the last scan group
        (bad / name).write_bytes(bytes(data))
    (bad / "record-00099.pcr").write_bytes(b"stray")
    r = run("verify", str(bad))
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0] == f"{bad}: 2 problems in 3 records"
    assert sum("record-00000.pcr" in x for x in lines) == 1
    assert sum("record-00002.pcr" in x for x in lines) == 1
    assert lines[-1] == "  not in the manifest: record-00099.pcr"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("inspect", "{ds}/record-00000.pcr"), "record-00000.pcr: is a file, not a dataset folder"),
        (("inspect", "{tmp}/nope.pcr"), "nope.pcr: no such file or folder"),
        (("encode", "{src}", "{tmp}/afile"), "afile: exists and is not a folder"),
        (("encode", "{src}", "{tmp}/o", "--quality", "200"), "quality must be an integer"),
        (("encode", "{src}", "{tmp}/o", "--workers", "0"), "workers must be at least 1"),
    ],
)
def test_errors_say_what_is_wrong(
    cli_dataset: Path, photo_folder: Path, tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    (tmp_path / "afile").write_text("x")
    fill = {"ds": str(cli_dataset), "tmp": str(tmp_path), "src": str(photo_folder)}
    r = run(*(a.format(**fill) for a in args))
    assert r.returncode == 1
    assert r.stderr.startswith("pcr-explore: error: ") and expected in r.stderr
    assert "Errno" not in r.stderr and len(r.stderr.splitlines()) == 1
    assert not (tmp_path / "o").exists()  # a bad option creates nothing


def test_a_reader_that_goes_away_ends_the_output_quietly(cli_dataset: Path) -> None:
    # `pcr-explore inspect ... | head -0`: the pipe is closed before anything is written
    read, write = os.pipe()
    os.close(read)
    proc = subprocess.run(
        [sys.executable, "-m", "pcr_explore", "inspect", str(cli_dataset)],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    os.close(write)
    assert proc.stderr == "" and proc.returncode == 141  # 128 + SIGPIPE, no "Broken pipe"


def test_counts_read_as_words(photo_folder: Path, tmp_path: Path) -> None:
    src = tmp_path / "one"
    (src / "a").mkdir(parents=True)
    (src / "a" / "x.jpg").write_bytes((photo_folder / "animals" / "coffee.jpg").read_bytes())
    assert run("encode", str(src), str(tmp_path / "ds"), "--quiet").returncode == 0
    out = run("inspect", str(tmp_path / "ds")).stdout
    assert ": 1 image, 1 record, 1 class," in out  # not "1 images, 1 records"
    assert "1 record, 1 image verified" in run("verify", str(tmp_path / "ds")).stdout


def test_tune_prints_the_level_or_its_json(cli_dataset: Path) -> None:
    import pcr_explore as pcr

    want = pcr.tune(str(cli_dataset), target=0.97, sample=4, seed=2, progress=False)
    got = run(
        "tune", str(cli_dataset), "--target", "0.97", "--sample", "4", "--seed", "2", "--json"
    )
    assert got.returncode == 0, got.stderr
    d = json.loads(got.stdout)
    assert (d["scan"], d["sample_size"], d["target"]) == (want.scan, 4, 0.97)
    small = pcr.tune(str(cli_dataset), sample=4, progress=False, max_pixels=1000)
    got = run("tune", str(cli_dataset), "--sample", "4", "--max-pixels", "1000", "--json")
    assert got.returncode == 0, got.stderr
    d = json.loads(got.stdout)
    assert (d["scan"], d["value"]) == (small.scan, pytest.approx(small.value))
    text = run("tune", str(cli_dataset), "--sample", "4", "--quiet").stdout
    assert text.startswith("scan ") and "of the bytes" in text
    bad = run("tune", str(cli_dataset), "--target", "95")
    assert bad.returncode == 1 and "did you mean 0.95" in bad.stderr


def test_the_same_mistakes_read_the_same_way(
    cli_dataset: Path, photo_folder: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "photoz"
    for cmd in (["encode", str(missing), str(tmp_path / "x.pcr")], ["audit", str(missing)]):
        r = run(*cmd, "--quiet")
        assert r.returncode == 1 and r.stderr.strip().endswith(f"{missing}: no such file or folder")
    again = run("encode", str(photo_folder), str(cli_dataset), "--quiet")
    assert again.returncode == 1 and "use overwrite=True (--overwrite)" in again.stderr
    zero = run("read", str(cli_dataset), "--scan", "2", "--size", "0")
    assert zero.returncode == 2 and "read scan" not in zero.stderr  # refused before any work


def test_verify_checks_each_images_pieces(cli_dataset: Path, tmp_path: Path) -> None:
    import shutil
    import zlib

    from pcr_explore.records.format import parse_header

    bad = tmp_path / "swapped"
    shutil.copytree(cli_dataset, bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    entry = next(e for e in manifest["records"] if e["images"] >= 2)
    path = bad / entry["file"]
    data = bytearray(path.read_bytes())
    h = parse_header(bytes(data[: entry["header_bytes"]]), str(path))
    table = h.piece_crcs.astype("<u4").tobytes()
    at = bytes(data).index(table)
    swapped = h.piece_crcs.copy()
    swapped[[0, 1]] = swapped[[1, 0]]  # two images' checksums swapped, the header re-signed
    data[at : at + len(table)] = swapped.astype("<u4").tobytes()
    end = entry["header_bytes"]
    crc = zlib.crc32(bytes(data[: end - 4]))
    data[end - 4 : end] = crc.to_bytes(4, "little")
    path.write_bytes(bytes(data))
    entry["checksum"] = f"{crc:08x}"
    (bad / "manifest.json").write_text(json.dumps(manifest))
    r = run("verify", str(bad))
    assert r.returncode == 1 and "piece checksum mismatch" in r.stdout, r.stdout + r.stderr


def test_a_missing_path_reads_the_same_everywhere(tmp_path: Path) -> None:
    """One wording and one type, whichever verb or function meets the mistake."""
    import pcr_explore as pcr

    nope = tmp_path / "photoz"
    calls = [
        lambda: pcr.open_dataset(str(nope)),
        lambda: pcr.open_source(nope),
        lambda: pcr.audit(nope, progress=False),
        lambda: pcr.encode_dataset(nope, tmp_path / "out", progress=False),
        lambda: pcr.verify_dataset(str(nope)),
    ]
    for call in calls:
        with pytest.raises(FileNotFoundError) as info:
            call()
        assert str(info.value) == f"{nope}: no such file or folder"
    for verb in (("encode", str(nope), str(tmp_path / "o")), ("inspect", str(nope)),
                 ("audit", str(nope)), ("verify", str(nope)), ("tune", str(nope)),
                 ("read", str(nope), "--scan", "1")):  # fmt: skip
        r = run(*verb)
        assert r.returncode == 1
        assert r.stderr == f"pcr-explore: error: {nope}: no such file or folder\n", verb


def test_the_defaults_shown_in_help_are_the_librarys() -> None:
    """cli/_defaults.py copies them so that --help loads no numpy: each copy must agree."""
    from pcr_explore.auditing._options import MAX_QUALITY_PIXELS
    from pcr_explore.cli import _defaults as shown
    from pcr_explore.encode.encoder import DEFAULT_RECORD_SIZE
    from pcr_explore.jpeg.scan_script import SCRIPTS
    from pcr_explore.quality.metrics import DEFAULT_TARGETS, METRICS
    from pcr_explore.quality.tune import DEFAULT_STATISTIC, STATISTICS
    from pcr_explore.storage import remote
    from pcr_explore.swap.model.profiles import profile_names
    from pcr_explore.swap.traces.architectures import BUILTIN_MODELS
    from pcr_explore.widgets._scan_demo import DEFAULT_DATASET_SAMPLE

    assert shown.METRICS == METRICS
    assert shown.DEFAULT_TARGETS == DEFAULT_TARGETS
    assert shown.STATISTICS == STATISTICS
    assert shown.DEFAULT_STATISTIC == DEFAULT_STATISTIC
    assert shown.MAX_QUALITY_PIXELS == MAX_QUALITY_PIXELS
    assert shown.SCRIPT_LEVELS == {name: s.num_levels for name, s in SCRIPTS.items()}
    assert list(shown.SCRIPT_LEVELS) == list(SCRIPTS)  # the help lists them in this order
    assert shown.DEFAULT_RECORD_SIZE == DEFAULT_RECORD_SIZE
    assert shown.DEFAULT_TIMEOUT == remote.DEFAULT_TIMEOUT
    assert shown.DEFAULT_RETRIES == remote.DEFAULT_RETRIES
    assert shown.DEFAULT_DEADLINE == remote.DEFAULT_DEADLINE
    assert shown.PROFILES == tuple(profile_names())
    assert shown.BUILTIN_MODELS == tuple(sorted(BUILTIN_MODELS))
    assert shown.DEFAULT_DATASET_SAMPLE == DEFAULT_DATASET_SAMPLE
    assert set(shown.__all__) == {n for n in vars(shown) if n.isupper()}


def test_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from pcr_explore.cli import main

    for argv, expected in (
        (["encode", "--help"], ["standard (10 levels)", "hybrid (7 levels)", "default 67108864"]),
        (["audit", "--help"], ["mssim 0.95", "psnr 35", "blurry 0.12", "default 4,194,304"]),
        (["read", "--help"], ["(default 10)", "(default 3)", "(default 120;"]),
        (["swap-sim", "--help"], ["{resnet50,vgg16}", "v100-pcie3, a100-pcie4, h100-pcie5"]),
        (["swap-train", "--help"], ["{small-cnn,vgg-small,resnet-small}"]),
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
        text = " ".join(capsys.readouterr().out.split())  # unwrapped
        missing = [e for e in expected if e not in text]
        assert missing == [], argv
