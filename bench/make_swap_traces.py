"""Make the measured swap traces shipped in pcr_explore/swap/traces/measured_traces/.

For each network of ``pcr_explore.swap.capture.nets`` (small-cnn, vgg-small,
resnet-small), train from a fixed seed on flowers5 (1,200 training photos in
five classes, squashed to 48x48) with SGD (momentum 0.9, the network's
default learning rate), batch 32, and capture every saved activation at steps
1, 51, 101, ..., 251 and 300 (``capture_training(..., every=50)``). Each trace
records, per tensor, its shape, the op that produced it, FLOPs of the
producing modules, its sparsity at each captured step, and the ZVC, bitmap,
CSR, delta8 and RLE sizes measured on the first captured step's tensors.
Sparsities are rounded to 4 decimals to keep the files small.

Usage::

    python bench/make_swap_traces.py [--data ../shared/data/flowers5] [--steps 300]

One thread (``torch.set_num_threads(1)``): about 3 minutes on the 2-core
development machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from pcr_explore import open_source
from pcr_explore.swap import capture_training, load_labelled_images
from pcr_explore.swap.capture.nets import DEFAULT_LR, NETS, build_net
from pcr_explore.swap.traces import Trace
from pcr_explore.swap.training.codec_training import ImageBatches, evaluate

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "pcr_explore" / "swap" / "traces" / "measured_traces"
CODECS = ("zvc", "bitmap", "csr", "delta8", "rle")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "flowers5"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--size", type=int, default=48)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(1)
    images = load_labelled_images(args.data, size=args.size, opener=open_source)
    print(images)
    OUT.mkdir(parents=True, exist_ok=True)
    for net in NETS:
        t0 = time.time()
        torch.manual_seed(0)
        model = build_net(net, num_classes=len(images.classes))
        opt = torch.optim.SGD(model.parameters(), lr=DEFAULT_LR[net], momentum=0.9)
        cap = capture_training(
            model,
            loader=ImageBatches(images, args.batch, seed=0),
            steps=args.steps,
            every=args.every,
            optimizer=opt,
            name=f"{net}-flowers5",
            measure_codecs=CODECS,
            meta={
                "net": net,
                "dataset": "flowers5",
                "images": len(images.train_y),
                "size": args.size,
                "batch": args.batch,
                "lr": DEFAULT_LR[net],
                "seed": 0,
                "torch": torch.__version__,
                "made_by": "bench/make_swap_traces.py",
            },
        )
        acc, _ = evaluate(model, images)
        tr = cap.trace
        meta = dict(tr.meta, val_accuracy_at_end=round(acc, 4))
        meta["losses"] = [round(v, 4) for v in meta["losses"]]
        small = Trace(
            tr.name,
            tr.tensors,
            np.round(tr.sparsity, 4),
            tr.tail_fwd_flops,
            tr.tail_fwd_mem_bytes,
            meta,
        )
        path = OUT / f"{net}-flowers5.json"
        small.save(path)
        print(f"\n{net}: {time.time() - t0:.0f} s, val accuracy {acc:.3f}, wrote {path}")
        print(cap.sparsity_table().to_text())


if __name__ == "__main__":
    main()
