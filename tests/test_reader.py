"""Reading datasets: prefix reads, byte accounting, checksums, remote stores."""

from __future__ import annotations

import functools
import http.server
import inspect
import json
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _loopback import FileServer

from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.errors import (
    CorruptRecordError,
    DatasetError,
    RangeIgnoredWarning,
    SkippedWarning,
)
from pcr_explore.read.reader import open_dataset
from pcr_explore.read.sources import open_source


@pytest.fixture(scope="module")
def dataset_dir(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rd") / "ds"
    encode_dataset(photo_folder, out, record_size=20_000, workers=1, progress=False)
    return out


def test_level_read_transfers_header_and_groups_only(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    cum = [list(r.bytes_per_scan) for r in ds.records]
    for k in (1, 4, 10):
        ds.stats.reset()
        out = list(ds.iter(scan=k))
        assert len(out) == len(ds)
        assert ds.stats.bytes_read == ds.bytes_at(k) == sum(c[k - 1] for c in cum)
        assert ds.stats.requests == len(ds.records)
    assert ds.bytes_at(1) < 0.2 * ds.bytes_at(None)
    ds.stats.reset()
    ds.read_record(1, 3)
    assert ds.stats.bytes_read == cum[1][2]


def test_summary_is_the_manifest_in_numbers(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    s = ds.summary()
    assert (s.images, s.scans, s.classes) == (7, 10, ["animals", "things"])
    assert s.records == len(list(dataset_dir.glob("*.pcr")))
    assert s.total_bytes == sum(p.stat().st_size for p in dataset_dir.glob("*.pcr"))
    assert s.bytes_per_scan == [ds.bytes_at(k) for k in range(1, 11)]
    assert s.fraction_per_scan[-1] == 1.0 and s.fraction_per_scan[0] < 0.2
    d = s.to_dict()
    assert d["total_bytes"] == s.total_bytes and d["fraction_per_scan"] == s.fraction_per_scan
    lines = str(s).splitlines()
    assert len(lines) == 13 and lines[-2].split()[:3] == ["10", f"{s.total_bytes:,}", "1.000"]
    assert lines[-1].startswith("bytes: what reading each level takes, record headers included")
    assert s._repr_html_().count("<tr>") == 11


def test_iter_yields_labels_and_shuffles_deterministically(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    plain = [lab for _, lab in ds.iter(scan=1, size=32)]
    assert plain == ds.labels.tolist()
    a = [int(img.sum()) for img, _ in ds.iter(scan=2, size=32, shuffle=True, seed=5)]
    b = [int(img.sum()) for img, _ in ds.iter(scan=2, size=32, shuffle=True, seed=5)]
    c = [int(img.sum()) for img, _ in ds.iter(scan=2, size=32, shuffle=False)]
    assert a == b and sorted(a) == sorted(c) and a != c


def test_random_access_reads_only_the_image_pieces(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    ds.header(0)
    ds.stats.reset()
    data = ds.jpeg_bytes(1, scan=5)
    assert ds.stats.bytes_read == len(data) - 2 == int(ds.level_bytes(1)[4]) - 2
    assert (
        ds.image(1, scan=5, size=40).shape[1] == 40 or ds.image(1, scan=5, size=40).shape[0] == 40
    )
    with pytest.raises(IndexError):
        ds.jpeg_bytes(len(ds))
    with pytest.raises(ValueError, match="outside 1..10"):
        ds.jpeg_bytes(0, scan=0)


def test_corrupt_group_fails_only_reads_that_reach_it(dataset_dir: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(dataset_dir, bad)
    ds = open_dataset(str(bad))
    h = ds.header(0)
    rec = bad / ds.records[0].file
    buf = bytearray(rec.read_bytes())
    buf[int(h.group_offsets[5]) + 3] ^= 0x40
    rec.write_bytes(bytes(buf))
    ds = open_dataset(str(bad))
    assert len(list(ds.iter(scan=5))) == len(ds)
    with pytest.raises(CorruptRecordError, match=r"record-00000\.pcr: scan group 6 checksum"):
        list(ds.iter(scan=6))
    with pytest.raises(CorruptRecordError, match="scan group 6"):
        ds.verify()


def test_iter_jpeg_skips_a_corrupt_record_as_iter_does(dataset_dir: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(dataset_dir, bad)
    ds = open_dataset(str(bad))
    h, rec = ds.header(0), bad / ds.records[0].file
    buf = bytearray(rec.read_bytes())
    buf[int(h.group_offsets[1]) + 3] ^= 0x40
    rec.write_bytes(bytes(buf))
    ds = open_dataset(str(bad))
    with pytest.raises(CorruptRecordError, match="scan group 2"):
        list(ds.iter_jpeg(3))
    with pytest.warns(SkippedWarning, match="1 unreadable item"):
        kept = [i for i, _, _ in ds.iter_jpeg(3, on_error="skip")]
    assert kept == list(range(h.num_images, len(ds)))  # the bad record, and nothing else


def test_settings_are_keywords_in_iter_iter_jpeg_and_image(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    # issue 35: a bool was taken for a size ("size must be a positive integer, got True")
    with pytest.raises(TypeError, match=r"iter\(\) takes from 1 to 2 positional arguments"):
        ds.iter(3, True)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional arguments"):
        ds.iter_jpeg(3, True)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional arguments"):
        ds.image(0, 3, 64)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional arguments"):
        ds.read_record(0, 3, False)  # type: ignore[misc]
    # the scan level stays the one positional subject of a pass
    assert [lab for _, lab in ds.iter(2, size=16)] == [lab for _, _, lab in ds.iter_jpeg(2)]
    # iter and iter_jpeg agree on the names they share, in the same order
    a = list(inspect.signature(ds.iter).parameters)
    b = list(inspect.signature(ds.iter_jpeg).parameters)
    assert [n for n in a if n in b] == b == ["scan", "shuffle", "seed", "on_error"]


def test_iter_threads_decode_with_the_decoder_chosen_at_the_call(
    dataset_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pcr_explore.jpeg import _decoders, decoder_name, use_decoder

    used: list[tuple[str, str]] = []
    pillow, backend = _decoders.pillow_decode, _decoders.backend_decode

    def pillow_spy(*args: Any) -> Any:
        used.append((threading.current_thread().name, "pillow"))
        return pillow(*args)

    def backend_spy(b: Any, *args: Any) -> Any:
        used.append((threading.current_thread().name, b.name))
        return backend(b, *args)

    monkeypatch.setattr(_decoders, "pillow_decode", pillow_spy)
    monkeypatch.setattr(_decoders, "backend_decode", backend_spy)
    ds = open_dataset(str(dataset_dir))
    with use_decoder("pillow"):
        pairs = ds.iter(4, size=24, workers=3)
    assert len(list(pairs)) == len(ds)  # iterated after the block: the call's choice holds
    assert {d for _, d in used} == {"pillow"}
    assert "MainThread" not in {t for t, _ in used}  # the pool's threads decoded
    default = decoder_name()
    if default == "pillow":
        pytest.skip("no faster decoder installed")
    used.clear()
    pairs = ds.iter(4, size=24, workers=3)  # asked for with the default in force
    with use_decoder("pillow"):
        assert len(list(pairs)) == len(ds)
    assert {d for _, d in used} == {default}


def test_truncated_record_is_named(dataset_dir: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "trunc"
    shutil.copytree(dataset_dir, bad)
    rec = bad / "record-00001.pcr"
    rec.write_bytes(rec.read_bytes()[:-100])
    ds = open_dataset(str(bad))
    with pytest.raises(CorruptRecordError, match=r"record-00001\.pcr: truncated"):
        ds.read_record(1)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda m: m.pop("records"), "malformed manifest"),
        (lambda m: m.update(format="zip"), "not a PCR dataset manifest"),
        (lambda m: m.update(format_version=7), "version 7"),
        (lambda m: m["records"][0].update(file="../etc/passwd"), "unsafe file name"),
        (lambda m: m["records"][0].update(bytes_per_scan=[1, 2]), "2 levels, expected 10"),
        (lambda m: m["records"][0].update(images=1e999), "images must be an integer"),
        (lambda m: m["records"][0].update(images=2.0), "images must be an integer"),
        (lambda m: m["records"][0].pop("checksum"), "missing field 'checksum'"),
        (lambda m: m["records"][0].update(checksum="zz"), "checksum must be 8 hex digits"),
        (lambda m: m["records"][0].update(file=5), "no file name|unsafe file name"),
        (lambda m: m["records"][0].update(file=""), "record entry 0: no file name"),
        (lambda m: m["records"][0].update(file="%2e%2e%2fx.pcr"), "URL-decodes to '../x.pcr'"),
        (lambda m: m["records"][0].update(file="%252e%252e%252fx"), "URL-decodes to '../x'"),
        (lambda m: m["records"][0].update(file="a%2Fb.pcr"), "URL-decodes to 'a/b.pcr'"),
        (lambda m: m["records"][0].update(file="http:x.pcr"), "unsafe file name"),
        (lambda m: m["records"][0].update(file="a\\b.pcr"), "unsafe file name"),
        (lambda m: m["records"][0].update(file=".hidden"), "unsafe file name"),
        (lambda m: m["records"][0].update(file="x..pcr"), "contains '..'"),
        (lambda m: m["records"][0].update(file="\uff0e\uff0e"), "unsafe file name"),
        (lambda m: m["records"].append(dict(m["records"][0])), "names 'record-00000.pcr' a"),
        (lambda m: m.update(classes="animals"), "classes must be a list of strings"),
        (lambda m: m.update(images=m["images"] + 1), "but the records hold 7"),
    ],
)
def test_bad_manifests(dataset_dir: Path, tmp_path: Path, mutate, match: str) -> None:  # type: ignore[no-untyped-def]
    m = json.loads((dataset_dir / "manifest.json").read_text())
    mutate(m)
    (tmp_path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DatasetError, match=match):
        open_dataset(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="nowhere: no such file or folder"):
        open_dataset(str(tmp_path / "nowhere"))


def test_deeply_nested_manifest_is_a_dataset_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DatasetError, match=r"manifest\.json: not valid JSON"):
        open_dataset(str(tmp_path))


def test_a_file_given_as_the_dataset_says_so(dataset_dir: Path) -> None:
    with pytest.raises(DatasetError, match=r"record-00000\.pcr: is a file, not a dataset folder"):
        open_dataset(str(dataset_dir / "record-00000.pcr"))


def test_manifest_and_record_mismatch(dataset_dir: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "swap"
    shutil.copytree(dataset_dir, bad)
    a, b = bad / "record-00000.pcr", bad / "record-00001.pcr"
    tmp = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(tmp)
    with pytest.raises(
        CorruptRecordError,
        match=r"record-00000\.pcr: (has trailing bytes|truncated): the file has [\d,]+ "
        r"bytes, the manifest says [\d,]+",
    ):
        open_dataset(str(bad)).header(0)


def _edited_copy(dataset_dir: Path, dst: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    import shutil

    shutil.copytree(dataset_dir, dst)
    m = json.loads((dst / "manifest.json").read_text())
    edit(m)
    (dst / "manifest.json").write_text(json.dumps(m))
    return dst


def test_manifest_is_cross_checked_against_each_header(dataset_dir: Path, tmp_path: Path) -> None:
    def header_len(m: dict) -> None:  # type: ignore[type-arg]
        m["records"][0]["header_bytes"] += 1

    bad = _edited_copy(dataset_dir, tmp_path / "h", header_len)
    with pytest.raises(CorruptRecordError, match=r"header is \d+ bytes but the manifest says"):
        open_dataset(str(bad)).header(0)

    def group_sizes(m: dict) -> None:  # type: ignore[type-arg]
        m["records"][0]["bytes_per_scan"][3] -= 1  # still ordered, last level unchanged

    bad = _edited_copy(dataset_dir, tmp_path / "g", group_sizes)
    with pytest.raises(CorruptRecordError, match="disagree with the manifest's bytes_per_scan"):
        open_dataset(str(bad)).read_record(0, 2)

    def fewer_classes(m: dict) -> None:  # type: ignore[type-arg]
        m["classes"] = ["animals"]

    bad = _edited_copy(dataset_dir, tmp_path / "c", fewer_classes)
    with pytest.raises(DatasetError, match=r"label 1 has no class name; the manifest lists 1"):
        _ = open_dataset(str(bad)).labels


def test_record_files_are_checked_before_reading(dataset_dir: Path, tmp_path: Path) -> None:
    import os
    import shutil

    bad = tmp_path / "t"
    shutil.copytree(dataset_dir, bad)
    with open(bad / "record-00001.pcr", "ab") as f:
        f.write(b"\0" * 10)
    with pytest.raises(CorruptRecordError, match=r"record-00001\.pcr: has trailing bytes"):
        open_dataset(str(bad)).verify()
    # A FIFO named like a record would block a read forever.
    (bad / "record-00002.pcr").unlink()
    os.mkfifo(bad / "record-00002.pcr")
    with pytest.raises(DatasetError, match=r"record-00002\.pcr: not a regular file"):
        open_dataset(str(bad)).read_record(2, 1)


# -- remote reads over a real HTTP server on loopback ------------------------


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with single byte-range support, counting bytes sent."""

    sent: list[int]

    def log_message(self, *args: object) -> None:
        pass

    def send_head(self):  # type: ignore[no-untyped-def]
        rng = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return None
        data = path.read_bytes()
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not m:
                self.send_error(416)
                return None
            start = int(m.group(1))
            end = min(int(m.group(2)) + 1 if m.group(2) else len(data), len(data))
            body = data[start:end]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if self.command == "GET":  # a HEAD sends no body
            self.sent.append(len(body))
        import io

        return io.BytesIO(body)


@pytest.fixture
def http_root(dataset_dir: Path) -> Iterator[tuple[str, list[int]]]:
    pytest.importorskip("aiohttp")
    sent: list[int] = []
    handler = functools.partial(
        type("H", (_RangeHandler,), {"sent": sent}), directory=str(dataset_dir)
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", sent
    finally:
        server.shutdown()
        server.server_close()


def test_http_prefix_reads(http_root: tuple[str, list[int]], dataset_dir: Path) -> None:
    url, sent = http_root
    ds = open_dataset(url)
    local = open_dataset(str(dataset_dir))
    sent.clear()
    ds.stats.reset()
    imgs = [img for img, _ in ds.iter(scan=2)]
    assert sum(sent) == ds.stats.bytes_read == local.bytes_at(2)
    assert len(sent) == len(ds.records)
    ref = [img for img, _ in local.iter(scan=2)]
    assert all(np.array_equal(a, b) for a, b in zip(imgs, ref))
    assert ds.jpeg_bytes(3, scan=7) == local.jpeg_bytes(3, scan=7)
    assert isinstance(open_source(url), type(ds))


def test_parts_of_a_record_from_a_server_without_range_are_one_read_from_byte_0(
    dataset_dir: Path,
) -> None:
    """A span's groups, or an image's pieces: one GET of the bytes up to the last of them."""
    local = open_dataset(str(dataset_dir))
    r = next(i for i, rec in enumerate(local.records) if rec.images >= 3)
    first, n = int(local._starts[r]), local.records[r].images
    with FileServer(dataset_dir, ranges=False) as srv:
        ds = open_dataset(srv.url)
        with pytest.warns(RangeIgnoredWarning, match="ignores Range"):
            ds.header(r)
        srv.log.clear()
        ds.stats.reset()
        span = ds.read_span(r, 1, n - 1, 5)
        end = int(ds.header(r).piece_ranges(n - 2, 5)[0][-1] + ds.header(r).piece_lengths[n - 2, 4])
        assert [g.range for g in srv.gets()] == [f"bytes=0-{end - 1}"]
        assert (ds.stats.requests, ds.stats.bytes_read) == (1, end)  # the bytes moved
        for i in range(1, n - 1):
            assert span.jpeg_bytes(i) == local.jpeg_bytes(first + i, 5)
        srv.log.clear()
        assert ds.jpeg_bytes(first + 1, 7) == local.jpeg_bytes(first + 1, 7)
        assert len(srv.gets()) == 1


def test_threaded_decoding_keeps_order_and_pixels(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    serial = list(ds.iter(scan=4, size=48))
    threaded = list(ds.iter(scan=4, size=48, workers=3))
    assert [lab for _, lab in threaded] == [lab for _, lab in serial]
    assert all(np.array_equal(a, b) for (a, _), (b, _) in zip(serial, threaded))
    rgb = [img for img, _ in ds.iter(scan=1, size=16, mode="RGB", workers=2)]
    assert all(img.ndim == 3 and img.shape[2] == 3 for img in rgb)
    with pytest.raises(ValueError, match="workers must be at least 1"):
        next(ds.iter(workers=0))


def test_the_manifest_is_typed_once(dataset_dir: Path) -> None:
    import dataclasses
    import json

    from pcr_explore.records import Manifest, RecordEntry

    ds = open_dataset(str(dataset_dir))
    m = ds.manifest
    raw = json.loads((dataset_dir / "manifest.json").read_text())
    assert isinstance(m, Manifest) and all(isinstance(r, RecordEntry) for r in ds.records)
    assert [r.file for r in m.records] == [r["file"] for r in raw["records"]]
    assert m.records[0].bytes_per_scan == tuple(raw["records"][0]["bytes_per_scan"])
    assert m.images == raw["images"] == len(ds) and m.classes == tuple(raw["classes"])
    assert m.scan_script.name == "standard" and m.num_scans == 10
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.records[0].file = "../elsewhere.pcr"  # type: ignore[misc]
    bad = dict(raw, records=[dict(raw["records"][0], images=0)])
    with pytest.raises(DatasetError, match="record entry 0 images must be an integer >= 1"):
        Manifest.from_json(bad, "m.json")


def test_a_manifest_that_is_not_a_regular_file_is_refused_at_once(
    dataset_dir: Path, tmp_path: Path
) -> None:
    import os
    import shutil

    fifo = tmp_path / "fifo"
    shutil.copytree(dataset_dir, fifo)
    (fifo / "manifest.json").unlink()
    os.mkfifo(fifo / "manifest.json")  # reading it would wait for a writer forever
    with pytest.raises(DatasetError, match=r"manifest\.json: not a regular file"):
        open_dataset(str(fifo))
    zero = tmp_path / "zero"
    shutil.copytree(dataset_dir, zero)
    (zero / "manifest.json").unlink()
    (zero / "manifest.json").symlink_to("/dev/zero")  # endless
    with pytest.raises(DatasetError, match="not a regular file"):
        open_dataset(str(zero))


def test_an_endless_manifest_over_http_is_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    import http.server
    import threading

    from pcr_explore.read import _fetch

    class Endless(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b" " * 65536)
            except OSError:  # the reader hung up, as it must
                pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(_fetch, "MAX_MANIFEST_BYTES", 1 << 20)
    try:
        with pytest.raises(DatasetError, match="more than 1,048,576 bytes: not a manifest"):
            open_dataset(f"http://127.0.0.1:{server.server_address[1]}/ds")
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda m: m["records"][0].update(bytes_per_scan=[2**63] * 10), "more than a file offset"),
        (lambda m: m.update(source_bytes="lots"), "source_bytes must be an integer"),
        (lambda m: m.update(skipped=5), "skipped must be a list of objects"),
        (lambda m: m.update(conversions=["x"]), "conversions must be a list of objects"),
    ],
)
def test_odd_manifest_values_are_dataset_errors(  # type: ignore[no-untyped-def]
    dataset_dir: Path, tmp_path: Path, edit, match: str
) -> None:
    bad = _edited_copy(dataset_dir, tmp_path / "odd", edit)
    with pytest.raises(DatasetError, match=match):
        open_dataset(str(bad)).summary()


def test_a_manifest_link_loop_is_a_dataset_error(dataset_dir: Path, tmp_path: Path) -> None:
    import shutil

    loop = tmp_path / "loop"
    shutil.copytree(dataset_dir, loop)
    (loop / "manifest.json").unlink()
    (loop / "manifest.json").symlink_to(loop / "manifest.json")
    with pytest.raises(DatasetError, match=r"manifest\.json: cannot be read"):
        open_dataset(str(loop))


def test_a_malformed_content_length_names_the_url() -> None:
    import http.server
    import threading

    from pcr_explore.errors import RemoteReadError
    from pcr_explore.storage.remote import HTTPStore

    class Odd(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "abc")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Odd)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/r.pcr"
    try:
        with pytest.raises(RemoteReadError, match=r"r\.pcr: the server sent Content-Length 'abc'"):
            HTTPStore().info(url)
    finally:
        server.shutdown()
        server.server_close()


def test_a_bounded_cache_says_once_which_level_fits(dataset_dir: Path, tmp_path: Path) -> None:
    import warnings

    from pcr_explore import CacheTooSmallWarning

    ds = open_dataset(str(dataset_dir))
    limit = ds.bytes_at(4) + 1
    assert ds.level_that_fits(limit) == 4 and ds.level_that_fits(ds.bytes_at(4) - 1) == 3
    assert ds.level_that_fits(1) is None and ds.level_that_fits("1TB") == ds.num_scans
    cached = open_dataset(str(dataset_dir), cache_dir=tmp_path, cache_max_bytes=limit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(cached.iter_jpeg(scan=4))  # fits: no word
    want = ds.bytes_at(6) - limit
    with pytest.warns(CacheTooSmallWarning) as caught:
        list(cached.iter_jpeg(scan=6))
        list(cached.iter_jpeg(scan=6))  # once per level
        cached.prefetch(6)
    assert len(caught) == 1
    assert str(caught[0].message) == (
        f"{dataset_dir}: the cache holds {limit:,} bytes, level 6 of every record takes "
        f"{ds.bytes_at(6):,}: each pass at level 6 fetches at least {want:,} bytes again; "
        f"level 4 and below fit ({ds.bytes_at(4):,} bytes) and are fetched once"
    )
    assert cached.check_cache_fits(6) == want and cached.check_cache_fits(4) is None
    assert open_dataset(str(dataset_dir)).check_cache_fits(10) is None  # no cache, no bound


def test_headers_kept_are_bounded_and_a_dropped_one_is_read_again(dataset_dir: Path) -> None:
    from pcr_explore.read._headers import HeaderCache

    ds = open_dataset(str(dataset_dir))
    assert len(ds.records) >= 3
    whole = [(img.tobytes(), label) for img, label in ds.iter(3)]
    largest = max(r.header_bytes for r in ds.records)
    ds._headers = HeaderCache(max_bytes=2 * largest)
    labels = ds.labels
    assert 1 <= len(ds._headers) <= 2  # every header was read; at most two are kept
    assert [(img.tobytes(), label) for img, label in ds.iter(3)] == whole
    assert len(ds._headers) <= 2
    ds.header(0)
    ds.stats.reset()
    assert ds.image(0, 3).tobytes() == whole[0][0]
    held = (ds.stats.requests, ds.stats.bytes_read)
    ds.header(1), ds.header(2)  # record 0's header is dropped ...
    ds.stats.reset()
    assert ds.image(0, 3).tobytes() == whole[0][0]  # ... and read again, one request more
    header = ds.records[0].header_bytes
    assert (ds.stats.requests, ds.stats.bytes_read) == (held[0] + 1, held[1] + header)
    assert np.array_equal(ds.labels, labels) and labels.tolist() == [w[1] for w in whole]


def test_the_header_cache_drops_the_least_recently_used() -> None:
    import pickle

    from pcr_explore.read._headers import HeaderCache
    from pcr_explore.records.format import RecordHeader

    heads = [RecordHeader.__new__(RecordHeader) for _ in range(4)]
    cache = HeaderCache(max_bytes=300)
    for r in range(3):
        cache.put(r, heads[r], 100)
    assert cache.get(0) is heads[0]  # 0 is now the most recently used
    cache.put(3, heads[3], 100)
    assert cache.get(1) is None and [cache.get(r) is heads[r] for r in (0, 2, 3)] == [True] * 3
    cache.put(0, heads[0], 250)  # larger now: the rest go
    assert len(cache) == 1 and cache.get(0) is heads[0]
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.max_bytes == 300 and len(copy) == 1
    with pytest.raises(ValueError, match="max_bytes"):
        HeaderCache(max_bytes=-1)


def test_credentials_in_a_url_are_sent_as_a_header_and_never_kept(
    dataset_dir: Path, tmp_path: Path
) -> None:
    import base64

    from _loopback import FileServer

    root = tmp_path / "site"
    shutil.copytree(dataset_dir, root / "ds")
    with FileServer(root) as srv:
        host = srv.url.split("://", 1)[1]
        url = f"http://ann:s%40cret@{host}/ds"
        cache = tmp_path / "cache"
        ds = open_dataset(url, cache_dir=cache)
        assert len(list(ds.iter(scan=2))) == len(ds)
        sent = {r.headers.get("authorization") for r in srv.log}
    assert sent == {"Basic " + base64.b64encode(b"ann:s@cret").decode()}
    for shown in (ds.url, repr(ds), str(ds.options), str(ds.summary())):
        assert "cret" not in shown and "ann" not in shown
    kept = b"".join(p.read_bytes() for p in cache.rglob("*") if p.is_file())
    assert b"cret" not in kept and b"ann:" not in kept
    # the caller's own Authorization header wins over the URL's
    with FileServer(root) as srv:
        host = srv.url.split("://", 1)[1]
        mine = {"headers": {"Authorization": "Bearer t0ken"}}
        ds = open_dataset(f"http://ann:x@{host}/ds", storage_options=mine)
        ds.image(0, scan=1)
        assert {r.headers.get("authorization") for r in srv.log} == {"Bearer t0ken"}
