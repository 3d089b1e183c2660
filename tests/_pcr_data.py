"""Small datasets of distinct generated photos for the loader and mix tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from pcr_explore import encode_dataset


def random_dataset(out: Path, images: int, records: int, seed: int = 0) -> Path:
    """A dataset of *images* distinct 48x40 JPEGs in two classes, in *records* records."""
    rng = np.random.default_rng(seed)
    src = out.with_name(out.name + "-src")
    for i in range(images):
        cls = src / ("a" if i % 2 == 0 else "b")
        cls.mkdir(parents=True, exist_ok=True)
        ramp = np.linspace(0, 255, 48)[None, :, None] * rng.random(3)[None, None, :]
        x = ramp + rng.integers(0, 40, (40, 48, 3))
        Image.fromarray(x.clip(0, 255).astype(np.uint8)).save(cls / f"{i:03d}.jpg", quality=90)
    total = sum(p.stat().st_size for p in src.rglob("*.jpg"))
    encode_dataset(src, out, record_size=total // records + 1, workers=1, progress=False)
    return out


def digest(image: Any) -> str:
    """A short digest of an image tensor's pixels, to tell images apart."""
    return hashlib.sha256(image.numpy().tobytes()).hexdigest()[:16]
