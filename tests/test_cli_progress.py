"""The long commands show progress on every step: the bars written to stderr, counted.

tqdm draws a bar at most every 0.1 s by default; ``TQDM_MININTERVAL=0`` and
``TQDM_MINITERS=1`` (tqdm reads its defaults from the environment) make it
draw on every update, so the frames written count the updates exactly,
whatever the machine's speed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _photos import photo
from PIL import Image

# one drawing of a bar: "desc:  40%|████      | 2/5 [00:01<00:01, 1.9img/s]"
FRAME = re.compile(r"^(?P<desc>[A-Za-z][\w ]*): +\d+%\|[^|]*\| (?P<n>\d+)/(?P<total>\d+) ")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TQDM_MININTERVAL": "0", "TQDM_MINITERS": "1"}
    cmd = [sys.executable, "-m", "pcr_explore", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def bars(stderr: str) -> list[tuple[str, list[int], int]]:
    """Each bar drawn, in order: its description, the counts it showed, its total."""
    out: list[tuple[str, list[int], int]] = []
    for frame in re.split(r"[\r\n]", stderr):
        m = FRAME.match(frame)
        if m is None:
            continue
        desc, n, total = m["desc"], int(m["n"]), int(m["total"])
        counts = out.pop()[1] if out and out[-1][0] == desc else []
        out.append((desc, [*counts, n], total))  # the total last drawn
    return out


def erased(stderr: str) -> bool:
    """Whether a bar was wiped when it closed (tqdm's leave=False writes blanks over it)."""
    return any(f and not f.strip() for f in stderr.split("\r"))


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six small photos in two class folders."""
    root = tmp_path_factory.mktemp("progress_photos")
    layout = {
        "animals": ["astronaut", "coffee", "chelsea"],
        "things": ["rocket", "camera", "coins"],
    }
    for cls, names in layout.items():
        (root / cls).mkdir()
        for name in names:
            Image.fromarray(photo(name, 48)).save(root / cls / f"{name}.jpg", quality=90)
    return root


def test_demo_shows_each_step(photos: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.html"
    r = run_cli("demo", str(photos), str(out), "--images", "6", "--dataset-sample", "3")
    assert r.returncode == 0, r.stderr
    assert out.exists() and r.stdout.startswith(f"wrote {out} (")
    drawn = bars(r.stderr)
    # the dataset's sample, the shown images it does not hold, then the pictures and page
    assert [(d, t) for d, _, t in drawn] == [
        ("quality sample", 3),
        ("image quality", 3),
        ("pictures and page", 1),
    ]
    for desc, counts, total in drawn:  # every image measured is one update, drawn
        assert sorted(set(counts)) == list(range(total + 1)), (desc, counts)
        assert counts[-1] == total
    assert not erased(r.stderr)


def test_demo_with_no_dataset_sample_measures_only_the_images_shown(
    photos: Path, tmp_path: Path
) -> None:
    out = tmp_path / "demo.html"
    r = run_cli("demo", str(photos), str(out), "--images", "2", "--dataset-sample", "0")
    assert r.returncode == 0, r.stderr
    assert [(d, c[-1]) for d, c, _ in bars(r.stderr)] == [
        ("image quality", 2),
        ("pictures and page", 1),
    ]
    quiet = run_cli(
        "demo", str(photos), str(out), "--images", "2", "--dataset-sample", "0", "--quiet"
    )
    assert quiet.returncode == 0 and bars(quiet.stderr) == [] and "%|" not in quiet.stderr


def test_a_bad_demo_option_fails_before_anything_is_measured(photos: Path, tmp_path: Path) -> None:
    r = run_cli("demo", str(photos), str(tmp_path / "x.html"), "--max-side", "8")
    assert r.returncode == 1 and bars(r.stderr) == []
    assert r.stderr.splitlines() == ["pcr-explore: error: max_side must be 16-4096 pixels, got 8"]


def test_budget_shows_each_step_and_leaves_its_bars(photos: Path) -> None:
    pytest.importorskip("torch")
    cmd = ["budget", str(photos), "--sample", "4", "--size", "32", "--workers", "1"]
    r = run_cli(*cmd, "--scans", "1,10")
    assert r.returncode == 0, r.stderr
    assert "recommendation: level " in r.stdout
    drawn = bars(r.stderr)
    assert [d for d, _, _ in drawn] == ["quality", "loading PyTorch", "gradients", "decode cost"]
    steps = {d: (counts, total) for d, counts, total in drawn}
    assert steps["quality"][1] == 4 and steps["decode cost"][1] == 10
    for desc, (counts, total) in steps.items():  # one drawing per update, the last complete
        assert sorted(set(counts)) == list(range(total + 1)), (desc, counts)
    # one batch of the 6 images: a gradient pass at full quality and one at level 1
    assert steps["gradients"][0][-1] == steps["gradients"][1] in (1, 2)
    assert not erased(r.stderr)
    quiet = run_cli(*cmd, "--scans", "1,10", "--quiet")
    assert quiet.returncode == 0 and bars(quiet.stderr) == []
