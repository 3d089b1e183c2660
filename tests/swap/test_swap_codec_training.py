"""swap_train and the swap-train command on a tiny generated image set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pcr_explore import open_source
from pcr_explore.cli import main
from pcr_explore.errors import DatasetError, SwapError
from pcr_explore.jpeg import decode
from pcr_explore.swap import load_labelled_images, swap_train

torch = pytest.importorskip("torch")

CLASSES = ("disc", "stripes", "noise")


def _image(kind: str, k: int) -> Image.Image:
    rng = np.random.default_rng(k)
    yy, xx = np.mgrid[:24, :24]
    if kind == "disc":
        a = ((yy - 12) ** 2 + (xx - 12) ** 2 < 40 + 5 * (k % 4)) * 200.0
    elif kind == "stripes":
        a = ((xx + k) // 3 % 2) * 220.0
    else:
        a = rng.uniform(0, 255, (24, 24))
    rgb = np.stack([a, np.roll(a, k, axis=0), 255 - a], axis=-1) + rng.normal(0, 8, (24, 24, 3))
    return Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8))


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("shapes")
    for c in CLASSES:
        (root / c).mkdir()
        for k in range(10):
            _image(c, k).save(root / c / f"{c}{k}.jpg", quality=90)
    return root


def test_images_load_split_by_name_hash(folder, tmp_path):
    im = load_labelled_images(open_source(folder), size=16)
    assert im.classes == tuple(sorted(CLASSES)) and im.source == str(folder)
    assert im.train_x.shape[1:] == (3, 16, 16) and im.train_x.dtype == np.uint8
    assert len(im.train_y) + len(im.val_y) == 30 and len(im.val_y) > 0
    again = load_labelled_images(open_source(folder), size=16)
    np.testing.assert_array_equal(again.val_x, im.val_x)  # the same split every time
    few = load_labelled_images(open_source(folder), size=16, per_class=2)
    assert np.bincount(few.train_y).tolist() == [2, 2, 2]
    split = tmp_path / "split"
    for side, names in (("train", range(7)), ("val", range(7, 10))):
        for c in CLASSES:
            (split / side / c).mkdir(parents=True)
            for k in names:
                _image(c, k).save(split / side / c / f"{k}.jpg")
    s = load_labelled_images(
        open_source(split / "train"), val=open_source(split / "val"), size=16, source="split"
    )
    assert (len(s.train_y), len(s.val_y), s.source) == (21, 9, "split")
    two = load_labelled_images(
        open_source(split / "train"), val=open_source(split / "val"), size=16, per_class=2
    )
    assert np.bincount(two.train_y).tolist() == np.bincount(two.val_y).tolist() == [2, 2, 2]
    with pytest.raises(DatasetError, match="every image must sit in a class sub-folder"):
        load_labelled_images(open_source(split / "train" / CLASSES[0] / "0.jpg"), size=16)
    for c in CLASSES[:2]:
        (tmp_path / "two" / c).mkdir(parents=True)
        _image(c, 0).save(tmp_path / "two" / c / "0.jpg")
    with pytest.raises(DatasetError, match="train and val classes differ"):
        load_labelled_images(open_source(split / "train"), val=open_source(tmp_path / "two"))
    # a path: its sides found here, opened by the opener given
    by_path = load_labelled_images(split, opener=open_source, size=16, per_class=2)
    np.testing.assert_array_equal(by_path.val_x, two.val_x)
    assert by_path.source == str(split)
    with pytest.raises(FileNotFoundError, match="missing: no such file or folder"):
        load_labelled_images(tmp_path / "missing", opener=open_source, size=16)
    with pytest.raises(DatasetError, match="is a file, not a folder of images"):
        load_labelled_images(split / "train" / CLASSES[0] / "0.jpg", opener=open_source)
    with pytest.raises(SwapError, match="a path needs opener="):
        load_labelled_images(split, size=16)


def test_images_are_the_photos_pixels(folder, tmp_path):
    from pcr_explore import encode_dataset

    im = load_labelled_images(open_source(folder), size=16)
    pcr = tmp_path / "shapes.pcr"
    encode_dataset(folder, pcr, workers=1, progress=False)
    same = load_labelled_images(open_source(pcr), size=16)  # the same photos, another order

    def rows(x):
        return sorted(a.tobytes() for a in x)

    assert rows(same.train_x) == rows(im.train_x) and rows(same.val_x) == rows(im.val_x)
    # and the pixels the source files decode to, squashed to 16 x 16
    files = sorted(folder.rglob("*.jpg"))
    direct = [decode(p.read_bytes(), size=(16, 16), mode="RGB").transpose(2, 0, 1) for p in files]
    assert sorted(rows(im.train_x) + rows(im.val_x)) == rows(direct)
    with pytest.raises(SwapError, match="a path needs opener="):
        swap_train(str(folder), codec="zvc")
    res = swap_train(folder, opener=open_source, codec="zvc", steps=1, size=16, batch_size=4)
    assert res.settings["dataset"] == str(folder) and res.settings["size"] == 16


def test_small_cnn_is_the_training_harness_network():
    from pcr_explore.swap import build_net
    from pcr_explore.train import small_cnn

    torch.manual_seed(3)
    ours = build_net("small-cnn", num_classes=5, width=4)
    torch.manual_seed(3)
    theirs = small_cnn(5, width=4)
    assert str(ours) == str(theirs)
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)


def test_a_network_passed_in_trains(images):
    from pcr_explore.swap import build_net, train_run

    def tiny(num_classes):
        return build_net("vgg-small", num_classes=num_classes, width=2)

    run = train_run(images, codec="zvc", steps=2, net=tiny, batch_size=4, min_bytes=0)
    assert len(run.losses) == 2 and run.codec == "zvc"
    res = swap_train(images, codec="zvc", steps=1, net=tiny, batch_size=4, threads=1)
    assert res.settings["net"] == "tiny" and res.settings["lr"] == 0.05


@pytest.fixture(scope="module")
def images(folder):
    return load_labelled_images(open_source(folder), size=16)


def test_lossless_run_matches_the_uncompressed_run(images):
    res = swap_train(
        images, codec="zvc", steps=4, batch_size=4, seeds=(0, 1), min_bytes=0, threads=1
    )
    assert res.identical_losses
    d = res.to_dict()
    assert (
        d["accuracy_change"] == 0.0 and d["uncompressed"]["val_loss"] == d["compressed"]["val_loss"]
    )
    assert d["activation_bytes"]["raw_per_step"] > 0
    assert d["measured"].startswith("on this machine")
    assert [s["seed"] for s in d["compressed"]["per_seed"]] == [0, 1]


def test_lossy_run_differs_and_reports_bytes_saved(images):
    res = swap_train(images, codec="zfp:8", steps=3, batch_size=4, threads=1)
    assert not res.identical_losses
    d = res.to_dict()
    # 8 of 32 bits per value, plus the padding of 2x2 feature maps into 4x4 blocks
    assert 0.5 < d["activation_bytes"]["saved_fraction"] <= 0.75
    assert d["overhead"]["codec_seconds_per_step"] > 0
    text = res.to_text()
    assert "measured on this machine" in text and "different" in text
    with pytest.raises(SwapError, match="batch_size"):
        swap_train(images, codec="zvc", steps=1, batch_size=1000)
    with pytest.raises(SwapError, match="seed"):
        swap_train(images, codec="zvc", steps=1, seeds=())


def test_swap_train_cli_json(folder, capsys):
    argv = ["swap-train", str(folder), "--codec", "zvc", "--steps", "2", "--size", "16"]
    assert main([*argv, "--batch", "4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d) >= {
        "measured",
        "settings",
        "uncompressed",
        "compressed",
        "accuracy_change",
        "identical_losses",
        "activation_bytes",
        "overhead",
    }
    assert d["settings"]["codec"] == "zvc" and d["settings"]["steps"] == 2
    assert d["identical_losses"] is True
    assert set(d["compressed"]) >= {"val_accuracy", "val_loss", "final_train_loss", "per_seed"}
    assert main([*argv, "--batch", "4"]) == 0
    assert "uncompressed" in capsys.readouterr().out
    assert main(["swap-train", str(folder), "--codec", "nope", "--steps", "1"]) == 1
    assert "nope" in capsys.readouterr().err


def test_swap_train_cli_reads_a_split_and_names_bad_paths(folder, tmp_path, capsys):
    from pcr_explore.train import split_folder

    split = split_folder(folder, tmp_path / "split", val_fraction=0.3)[0].parent
    argv = ["--codec", "zvc", "--steps", "1", "--size", "16", "--batch", "4", "--json"]
    assert main(["swap-train", str(split), *argv]) == 0
    d = json.loads(capsys.readouterr().out)["settings"]
    assert (d["dataset"], d["size"]) == (str(split), 16)
    assert d["train_images"] == len(list((split / "train").rglob("*.jpg")))
    assert d["val_images"] == len(list((split / "val").rglob("*.jpg")))
    for path, why in (
        (tmp_path / "missing", "no such file or folder"),
        (folder / CLASSES[0] / f"{CLASSES[0]}0.jpg", "is a file, not a folder of images"),
    ):
        assert main(["swap-train", str(path), *argv]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"pcr-explore: error: {path}") and why in err
        assert err.count("\n") == 1


def test_codec_sweep_rows_and_figure(images):
    from pcr_explore.swap import codec_sweep

    sweep = codec_sweep(images, codecs=["zvc", "zfp:8"], steps=2, batch_size=4)
    rows = {r["codec"]: r for r in sweep.rows()}
    assert list(rows) == ["uncompressed", "zvc", "zfp:8"]
    assert rows["zvc"]["identical_losses"] and rows["zvc"]["accuracy_change"] == 0.0
    assert not rows["zfp:8"]["identical_losses"]
    assert 0.5 < rows["zfp:8"]["saved_fraction"] <= 0.75
    assert "measured on this machine" in sweep.to_text()
    fig = sweep.figure()
    assert "measured on this machine" in fig.title.text
    assert list(fig.x_range.factors) == ["uncompressed", "zvc", "zfp:8"]
    # zfp at its default rate is labelled with it, and two rates never share a run
    both = codec_sweep(images, codecs=["zfp", "zfp:4"], steps=1, batch_size=4)
    assert [r["codec"] for r in both.rows()] == ["uncompressed", "zfp:16", "zfp:4"]
