"""Codec round trips, exact sizes, analytic-vs-measured sizes, measuring and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pcr_explore.errors import PCRError, SwapError
from pcr_explore.swap import (
    CodecError,
    Encoded,
    codec_names,
    get_codec,
    measure,
    measure_ratios,
    ratio_curve,
    synthetic_activations,
)
from pcr_explore.swap.codecs import ZVC, zfp_available

LOSSLESS = ["zvc", "zvc:7", "zvc:64", "bitmap", "csr", "delta8", "rle", "lz4", "zstd", "zstd:1"]
LOSSLESS_NAMES = [c for c in codec_names(include_unavailable=True) if get_codec(c).lossless]
EXACT = ["zvc", "zvc:7", "zvc:64", "bitmap", "csr", "binarize"]

# bit patterns that break value-based zero tests: -0.0, NaN payloads, inf, denormals
SPECIAL = {
    np.dtype("float32"): [0x80000000, 0x7FC00001, 0xFFBADBAD, 0x7F800000, 0x00000001, 0x807FFFFF],
    np.dtype("float16"): [0x8000, 0x7E01, 0xFD55, 0x7C00, 0x0001, 0x83FF],
    np.dtype("float64"): [0x8000000000000000, 0x7FF8000000000001, 0x0000000000000001],
}


@st.composite
def tensors(draw):
    dtype = draw(st.sampled_from(["float32", "float16", "float64", "int32", "uint8"]))
    dt = np.dtype(dtype)
    bits = 8 * dt.itemsize
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=9))
    sparsity = draw(st.sampled_from([0.0, 0.3, 0.7, 0.95, 1.0]))
    special = SPECIAL.get(dt, [])
    elements = st.one_of(
        st.integers(0, 2**bits - 1),
        st.sampled_from(special) if special else st.integers(0, 2**bits - 1),
    )
    raw = draw(hnp.arrays(np.dtype(f"u{dt.itemsize}"), shape, elements=elements))
    zero = draw(hnp.arrays(np.float64, shape, elements=st.floats(0, 1))) < sparsity
    raw[zero] = 0
    return raw.view(dt)


@st.composite
def float32_tensors(draw):
    """float32 tensors of any shape whose zeros (+0.0) cover a drawn fraction."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=12))
    sparsity = draw(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.99, 1.0])))
    x = draw(hnp.arrays(np.float32, shape, elements=st.floats(width=32)))
    zero = draw(hnp.arrays(np.float64, shape, elements=st.floats(0, 1))) < sparsity
    x[zero] = 0
    return x


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.dtype.itemsize}")


def _nnz(x: np.ndarray) -> int:
    return int(np.count_nonzero(_bits(np.ascontiguousarray(x)).reshape(-1)))


@settings(max_examples=60, deadline=None)
@given(tensors())
def test_lossless_round_trip_is_bit_exact(x):
    for name in LOSSLESS:
        codec = get_codec(name)
        enc = codec.encode(x)
        out = codec.decode(enc)
        assert out.shape == x.shape and out.dtype == x.dtype, name
        np.testing.assert_array_equal(_bits(out), _bits(x), err_msg=name)


def test_every_lossless_codec_is_covered():
    assert LOSSLESS_NAMES == ["zvc", "bitmap", "csr", "delta8", "rle", "lz4", "zstd"]


@pytest.mark.parametrize("name", LOSSLESS_NAMES)
@settings(max_examples=40, deadline=None)
@given(x=float32_tensors())
def test_each_lossless_codec_round_trips_float32(name, x):
    codec = get_codec(name)
    enc = codec.encode(x)
    out = codec.decode(enc)
    assert out.shape == x.shape and out.dtype == np.float32
    np.testing.assert_array_equal(_bits(out), _bits(x))
    assert enc.raw_nbytes == x.nbytes and enc.shape == x.shape


@settings(max_examples=60, deadline=None)
@given(tensors())
def test_exact_size_models_match_measured_bytes(x):
    nnz = _nnz(x)
    for name in EXACT:
        codec = get_codec(name)
        predicted = codec.size_for_nnz(x.size, nnz, itemsize=x.itemsize, shape=x.shape)
        assert codec.encode(x).nbytes == predicted, name


@pytest.mark.parametrize(
    "n,nnz,threads",
    [
        (0, 0, 16384),
        (1, 1, 16384),
        (1, 0, 16384),
        (16384 * 32, 1000, 16384),
        (16384 * 32 + 1, 7, 16384),
        (100_003, 60_000, 16384),
        (1 << 22, 1 << 20, 16384),
        (1000, 999, 7),
        (33, 33, 1),
    ],
)
def test_zvc_byte_formula_float32(n, nnz, threads):
    rng = np.random.default_rng(n)
    x = np.zeros(n, dtype=np.float32)
    x[rng.permutation(n)[:nnz]] = rng.random(nnz, dtype=np.float32) + 1
    enc = ZVC(threads).encode(x)
    p = threads
    expected = 4 * nnz + 4 * p * math.ceil(math.ceil(n / p) / 32) + 4 * p
    assert enc.nbytes == expected
    assert enc.parts["masks"].size == p * math.ceil(math.ceil(n / p) / 32)
    assert enc.parts["offsets"].dtype == np.dtype("<u4") and enc.parts["offsets"].size == p
    np.testing.assert_array_equal(ZVC(threads).decode(enc), x)


def test_zvc_float16_uses_two_byte_values_and_32_bit_words():
    x = synthetic_activations((4, 8, 33, 31), sparsity=0.6, dtype="float16")
    enc = ZVC().encode(x)
    nnz = _nnz(x)
    p, n = 16384, x.size
    assert enc.nbytes == 2 * nnz + 4 * p * math.ceil(math.ceil(n / p) / 32) + 4 * p


def test_zvc_offsets_are_per_thread_starts():
    x = np.zeros(64, dtype=np.float32)
    x[[0, 1, 17, 40, 63]] = 1.0
    enc = ZVC(4).encode(x)  # chunks of 16 elements
    assert enc.parts["offsets"].tolist() == [0, 2, 3, 4]
    assert enc.parts["masks"].tolist() == [0b11, 0b10, 1 << 8, 1 << 15]


def test_zvc_large_tensor_ratio_tends_to_paper_values():
    curve = ratio_curve(["zvc"], sparsities=[0.5, 0.7, 0.9], n=1 << 26)["zvc"]
    limit = 1 / (1 - np.array([0.5, 0.7, 0.9]) + 1 / 32)
    np.testing.assert_allclose(curve, limit, rtol=3e-3)  # + 4P/n of offsets
    np.testing.assert_allclose(curve, [1.88, 3.0, 7.6], rtol=0.01)


def test_zvc_small_tensor_does_not_pay():
    # the fixed 128 KiB of masks and offsets outweighs a 128 KiB tensor, even 90% sparse
    n, nnz = 1 << 15, round(0.1 * (1 << 15))
    zvc = ratio_curve(["zvc"], sparsities=[0.9], n=n)["zvc"][0]
    assert zvc == pytest.approx(4 * n / (4 * nnz + 4 * 16384 * 1 + 4 * 16384), rel=1e-12)
    assert zvc == pytest.approx(0.909, abs=5e-4)
    bitmap = ratio_curve(["bitmap"], sparsities=[0.9], n=n)["bitmap"][0]
    assert bitmap == pytest.approx(4 * n / (4 * nnz + n / 8), rel=1e-12)
    assert bitmap == pytest.approx(7.62, abs=5e-3)


@pytest.mark.parametrize(
    "name,rtol", [("delta8", 0.02), ("rle", 0.03), ("lz4", 0.1), ("zstd", 0.1)]
)
def test_estimated_sizes_track_measured_on_iid_zeros(name, rtol):
    rng = np.random.default_rng(3)
    codec = get_codec(name)
    for s in (0.0, 0.5, 0.9, 0.99):
        x = np.abs(rng.standard_normal(1 << 18)).astype(np.float32) + np.float32(1e-30)
        x[rng.random(x.size) < s] = 0
        measured = codec.encode(x).nbytes
        predicted = codec.size_for_nnz(x.size, _nnz(x))
        assert predicted == pytest.approx(measured, rel=rtol), (name, s)


def test_csr_pays_only_above_half_sparsity():
    r = ratio_curve(["csr"], sparsities=[0.4, 0.6], n=1 << 20, shape=(1 << 10, 1 << 10))["csr"]
    nnz = np.rint((1 << 20) * np.array([0.6, 0.4]))
    np.testing.assert_allclose(r, 4 * (1 << 20) / (8 * nnz + 4 * (1024 + 1)), rtol=1e-12)
    # ~1 / (2 (1 - s)): 0.83x at 40% sparsity, 1.25x at 60%
    np.testing.assert_allclose(r, [1 / 1.2, 1 / 0.8], rtol=2e-3)


def test_blobby_activations_favour_rle_over_iid():
    blob = measure_ratios(["rle"], sparsity=0.8, shape=(4, 16, 32, 32), correlation=3.0)["rle"]
    iid = measure_ratios(["rle"], sparsity=0.8, shape=(4, 16, 32, 32), correlation=0.0)["rle"]
    assert blob > 1.5 * iid


def test_binarize_keeps_exactly_the_relu_mask():
    x = synthetic_activations((2, 3, 9, 9), sparsity=0.5)
    x.flat[0] = -0.0
    codec = get_codec("binarize")
    enc = codec.encode(x)
    assert enc.nbytes == math.ceil(x.size / 8)
    out = codec.decode(enc)
    np.testing.assert_array_equal(out > 0, x > 0)
    np.testing.assert_array_equal(out, (x > 0).astype(np.float32))
    err = codec.error(x, out)
    diff = out.astype(np.float64) - x.astype(np.float64)
    assert err.max_abs == pytest.approx(np.abs(diff).max(), rel=1e-12)
    assert err.rel_l2 == pytest.approx(
        np.linalg.norm(diff) / np.linalg.norm(x.astype(np.float64)), rel=1e-12
    )


@pytest.mark.skipif(not zfp_available(), reason="zfpy not installed")
@pytest.mark.parametrize("shape", [(1000,), (30, 17), (2, 3, 9, 10), (2, 3, 4, 5, 6)])
def test_zfp_fixed_rate_size_and_error(shape):
    x = synthetic_activations(shape, sparsity=0.5, correlation=1.0)
    for rate in (8, 16, 32):
        codec = get_codec(f"zfp:{rate}")
        enc = codec.encode(x)
        assert enc.nbytes == codec.size_for_nnz(x.size, _nnz(x), shape=x.shape)
        out = codec.decode(enc)
        assert out.shape == x.shape and out.dtype == x.dtype
        err = codec.error(x, out)
        assert err.rel_l2 < {8: 0.1, 16: 1e-3, 32: 1e-6}[rate]
    assert get_codec("zfp:8").encode(x).nbytes < get_codec("zfp:16").encode(x).nbytes


@pytest.mark.skipif(not zfp_available(), reason="zfpy not installed")
def test_zfp_float16_empty_and_bad_values():
    codec = get_codec("zfp")
    x16 = synthetic_activations((3, 8, 8), sparsity=0.3, dtype="float16")
    out = codec.decode(codec.encode(x16))
    assert out.dtype == np.float16 and codec.error(x16, out).rel_l2 < 1e-3
    empty = np.zeros((0, 4), dtype=np.float32)
    assert codec.decode(codec.encode(empty)).shape == (0, 4)
    with pytest.raises(SwapError, match="NaN"):
        codec.encode(np.array([1.0, np.nan], dtype=np.float32))
    with pytest.raises(SwapError, match="float"):
        codec.encode(np.arange(8, dtype=np.int32))
    with pytest.raises(SwapError, match="rate"):
        get_codec("zfp:2")


def test_lossless_error_is_zero_and_measure_checks_round_trip():
    x = synthetic_activations((2, 4, 16, 16), sparsity=0.7)
    m = measure("zvc", x, repeats=2)
    assert m.error == CodecError(0.0, 0.0)
    assert m.encoded_bytes == get_codec("zvc").size_for_nnz(x.size, _nnz(x))
    assert m.ratio == pytest.approx(x.nbytes / m.encoded_bytes)
    assert m.raw_bytes == x.nbytes and m.codec == "zvc"
    assert m.encode_gbps == pytest.approx(x.nbytes / m.encode_seconds / 1e9)
    assert m.decode_gbps == pytest.approx(x.nbytes / m.decode_seconds / 1e9)


def test_names_round_trip_through_registry():
    for name in codec_names():
        assert get_codec(get_codec(name).name) == get_codec(name)
    assert get_codec("ZSTD:9").name == "zstd:9"
    assert get_codec("zvc:16384").name == "zvc"


@pytest.mark.parametrize(
    "bad",
    [np.array(["a", "b"]), np.array([object(), 1], dtype=object), np.array([1 + 2j]), "text"],
)
def test_non_numeric_arrays_are_rejected(bad):
    for name in ("zvc", "lz4", "binarize"):
        with pytest.raises(SwapError, match="dtype|array"):
            get_codec(name).encode(bad)


def test_bad_specs_sizes_and_sparsities():
    with pytest.raises(SwapError, match="unknown codec"):
        get_codec("zip")
    with pytest.raises(SwapError, match="integer"):
        get_codec("zstd:high")
    with pytest.raises(SwapError, match="no parameter"):
        get_codec("bitmap:3")
    with pytest.raises(SwapError, match="threads"):
        ZVC(0)
    with pytest.raises(SwapError, match="non-negative"):
        get_codec("zvc").encoded_size(-5, 0.5)
    with pytest.raises(SwapError, match=r"\[0, 1\]"):
        get_codec("zvc").encoded_size(100, 1.5)
    with pytest.raises(SwapError, match="exceeds"):
        get_codec("bitmap").size_for_nnz(10, 11)
    assert issubclass(SwapError, PCRError) and issubclass(SwapError, ValueError)


def test_decode_rejects_foreign_or_corrupt_data():
    x = synthetic_activations((2, 2, 8, 8), sparsity=0.5)
    enc = get_codec("zvc").encode(x)
    with pytest.raises(SwapError, match="cannot decode"):
        get_codec("bitmap").decode(enc)
    short = Encoded(
        enc.codec, enc.shape, enc.dtype, dict(enc.parts, values=enc.parts["values"][:-1])
    )
    with pytest.raises(SwapError, match="corrupt"):
        get_codec("zvc").decode(short)
    bad_off = dict(enc.parts, offsets=enc.parts["offsets"] + np.uint32(1))
    with pytest.raises(SwapError, match="offsets"):
        get_codec("zvc").decode(Encoded(enc.codec, enc.shape, enc.dtype, bad_off))
    z = get_codec("zstd").encode(x)
    with pytest.raises(SwapError, match="corrupt"):
        get_codec("zstd").decode(Encoded(z.codec, z.shape, z.dtype, {"stream": b"junk"}))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int16", "uint32"])
def test_every_codec_gives_back_the_values_of_either_byte_order(dtype: str) -> None:
    rng = np.random.default_rng(4)
    native = (rng.random((3, 5, 7)) * 100).astype(dtype)
    native[rng.random(native.shape) < 0.6] = 0
    swapped = native.astype(
        native.dtype.newbyteorder(">" if native.dtype.byteorder != ">" else "<")
    )
    for name in codec_names():
        c = get_codec(name)
        try:
            from_native = c.decode(c.encode(native))
        except SwapError:
            continue  # a codec that does not take this dtype refuses both orders alike
        from_swapped = c.decode(c.encode(swapped))
        np.testing.assert_array_equal(from_swapped, from_native, err_msg=name)
        if c.lossless:
            np.testing.assert_array_equal(from_swapped, native, err_msg=name)
            measure(c, swapped)  # and measure agrees: the round trip is exact


def test_measure_refuses_a_round_trip_that_keeps_the_bytes_but_not_the_values() -> None:
    class SameBytesOtherOrder(type(get_codec("lz4"))):  # type: ignore[misc]
        def decode(self, encoded):  # type: ignore[no-untyped-def]
            out = super().decode(encoded)
            return out.view(out.dtype.newbyteorder())  # the bytes as they were, misread

    a = np.array([0, 1.5, 0, 2.25], np.float32)
    with pytest.raises(SwapError, match="not bit-exact"):
        measure(SameBytesOtherOrder(), a)
