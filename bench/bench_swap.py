"""Benchmark the swap simulation subpackage against its targets, in one run.

Compared in the same run:

* codecs: encode/decode throughput and ratio of every codec on 64 MiB
  float32 activations (16 x 64 x 128 x 128, blobby zeros) at sparsity
  0 .. 0.95, against a plain ``np.copyto`` of the same tensor (the memcpy a
  raw swap costs on the host side); target: ZVC >= 1 GB/s both ways at 70%;
* simulation speed: all policies on the 51-tensor ResNet-50 trace, against
  the 50 ms budget of a live notebook slider;
* cswap against vdnn, every always:<codec> and the oracle on each built-in
  trace and profile (targets: cswap stall <= all fixed policies, within 5% of
  oracle);
* a sparsity / batch / link sweep reproducing the papers' qualitative result;
* the headline (simulated): V100 + PCIe 3.0, VGG-16, batch 64, 65% sparsity,
  cswap's swap-time reduction over vDNN next to the paper's "up to 50.9%";
  dense VGG-16 with ZFP (CSwap+) next to the paper's "up to 46.1%".

Measured on real training (PyTorch on this machine's CPU, one thread,
flowers5 photos squashed to 48x48, batch 32, SGD with momentum 0.9):

* per-layer sparsity of the small CNN at the start and end of 200 steps
  (captured every 40 steps), and max-pool against ReLU outputs;
  vgg-small and resnet-small are captured at steps 1 and 40 for the
  predictor's tensors;
* every lossless codec (and binarize where it keeps what backward reads) on
  the saved activations for 20 steps: identical loss sequence (exact) and the
  activation bytes saved;
* ZFP at 4, 8 and 16 bits per value: validation accuracy after the same 200
  steps (5 epochs) as the uncompressed run (32x32 images, to keep ZFP's CPU
  time in budget), three seeds, bytes saved, CPU time per step;
* predictors of codec time (non-negative linear, power law, nearest
  neighbours) fitted on measured times of half the captured layers, graded on
  the other half against the oracle of measured times (the stall gap);
* swap latency of the captured tensors from measured CPU codec times over a
  modelled link (no GPU here: CUDA capture and copy timings are not run).

Usage::

    python bench/bench_swap.py [--quick] [--data ../shared/data/flowers5] [--no-train]

Prints tables and writes bench/results/swap.json. Never asserts a time. One
run took 250 s in all on the 2-core development machine (about half of it
the training parts); it takes longer when the shared cores are busy.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from pcr_explore._json import to_json
from pcr_explore.swap import (
    codec_names,
    default_policies,
    get_profile,
    measure,
    measured_trace,
    profile_names,
    simulate_many,
    synthetic_activations,
)
from pcr_explore.swap.traces.architectures import resnet50_trace, vgg16_trace

OUT = Path(__file__).resolve().parent / "results" / "swap.json"
DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "flowers5"
PAPER_DENSE_REDUCTION = 0.461
SHAPE = (16, 64, 128, 128)  # 16 Mi float32 = 64 MiB
PAPER_REDUCTION = 0.509


def _copy_gbps(x: np.ndarray, repeats: int) -> float:
    dst = np.empty_like(x)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, x)
        best = min(best, time.perf_counter() - t0)
    return x.nbytes / best / 1e9


def bench_codecs(sparsities, quick: bool) -> list[dict]:
    shape = (4, 64, 128, 128) if quick else SHAPE
    rows = []
    print(
        f"\n== codecs on {np.prod(shape) * 4 / 2**20:.0f} MiB float32 activations "
        "(best of repeats, one core) =="
    )
    print(
        f"{'sparsity':>8} {'codec':<9}{'ratio':>8}{'enc GB/s':>10}{'dec GB/s':>10}"
        f"{'enc/copy':>9}{'rel L2':>10}"
    )
    for s in sparsities:
        x = synthetic_activations(shape, sparsity=s, correlation=2.0, seed=1)
        copy = _copy_gbps(x, 5)
        print(f"{s:>8.2f} {'memcpy':<9}{1.0:>8.2f}{copy:>10.2f}{copy:>10.2f}{1.0:>9.2f}")
        for name in codec_names():
            reps = 5 if name == "zvc" else (1 if name in ("zstd", "zfp", "delta8", "rle") else 2)
            m = measure(name, x, repeats=reps)
            rows.append(
                {
                    "sparsity": s,
                    "codec": m.codec,
                    "ratio": m.ratio,
                    "encode_gbps": m.encode_gbps,
                    "decode_gbps": m.decode_gbps,
                    "encode_vs_memcpy": m.encode_gbps / copy,
                    "memcpy_gbps": copy,
                    "max_abs_error": m.error.max_abs,
                    "rel_l2_error": m.error.rel_l2,
                    "bytes": m.encoded_bytes,
                }
            )
            print(
                f"{'':>8} {m.codec:<9}{m.ratio:>8.2f}{m.encode_gbps:>10.2f}"
                f"{m.decode_gbps:>10.2f}{m.encode_gbps / copy:>9.2f}{m.error.rel_l2:>10.1e}"
            )
    return rows


def bench_sim_speed(repeats: int) -> dict:
    policies = [
        *default_policies("v100-pcie3"),
        "cswap+lossy",
        "oracle+lossy",
        "cswap:zvc",
        "oracle:zvc",
    ]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        trace = resnet50_trace(batch=64, sparsity=(0.4, 0.8))  # a slider move rebuilds it
        res = simulate_many(trace, profile="v100-pcie3", policies=policies)
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    print(f"\n== simulation speed: {len(trace)} tensors, {len(res)} policies ==")
    print(f"median {ms:.1f} ms per slider move (target <= 50 ms: {ms / 50:.2f}x of budget)")
    return {
        "tensors": len(trace),
        "policies": len(res),
        "median_ms": ms,
        "min_ms": min(times) * 1e3,
        "budget_ms": 50.0,
        "fraction_of_budget": ms / 50,
    }


def bench_policies() -> list[dict]:
    rows = []
    print(
        "\n== cswap-all vs fixed policies and oracle-all (simulated: stall ms per step under "
        "each profile's assumptions; a self-consistency check, the predictor fits the same "
        "cost model) =="
    )
    print(
        f"{'trace':<20}{'profile':<12}{'vdnn':>9}{'best fixed':>22}{'cswap-all':>10}"
        f"{'oracle-all':>11}{'<=fixed':>8}{'gap':>7}{'cswap':>9}"
    )
    traces = [vgg16_trace(64, sparsity=0.65), resnet50_trace(64, sparsity=(0.4, 0.8))]
    for trace in traces:
        for prof in profile_names():
            res = simulate_many(trace, profile=prof)
            fixed = {
                k: r.stall_seconds
                for k, r in res.items()
                if (k == "vdnn" or k.startswith("always:")) and k != "always:zfp"
            }
            best = min(fixed, key=fixed.__getitem__)
            c, o = res["cswap-all"].stall_seconds, res["oracle-all"].stall_seconds
            ok = c <= min(fixed.values()) + 1e-12
            gap = c / o - 1 if o > 0 else 0.0
            rows.append(
                {
                    "trace": trace.name,
                    "profile": prof,
                    "vdnn_stall": fixed["vdnn"],
                    "best_fixed": best,
                    "best_fixed_stall": fixed[best],
                    "cswap_all_stall": c,
                    "oracle_all_stall": o,
                    "cswap_all_le_fixed": ok,
                    "gap_to_oracle": gap,
                    "cswap_stall": res["cswap"].stall_seconds,
                    "cswap_swap": res["cswap"].swap_seconds,
                    "cswap_all_swap": res["cswap-all"].swap_seconds,
                    "vdnn_swap": res["vdnn"].swap_seconds,
                    "kind": "simulated",
                    "assumptions": prof,
                }
            )
            print(
                f"{trace.name:<20}{prof:<12}{fixed['vdnn'] * 1e3:>9.1f}"
                f"{best + ' ' + format(fixed[best] * 1e3, '.1f'):>22}{c * 1e3:>10.1f}"
                f"{o * 1e3:>11.1f}{'yes' if ok else 'NO':>8}{gap:>7.1%}"
                f"{res['cswap'].stall_seconds * 1e3:>9.1f}"
            )
    return rows


def bench_sweep() -> dict:
    out: dict = {"sparsity": [], "batch": [], "link": []}
    print(
        "\n== sweep (simulated, assumptions v100-pcie3): VGG-16 on V100 + PCIe 3.0, batch 64 "
        "(swap ms / stall ms) =="
    )
    print(
        f"{'sparsity':>8}{'vdnn swap':>11}{'cswap swap':>11}{'vdnn stall':>11}"
        f"{'cswap stall':>12}{'swap cut':>9}  cswap codecs"
    )
    for s in (0.0, 0.2, 0.4, 0.5, 0.65, 0.8, 0.9):
        res = simulate_many(
            vgg16_trace(64, sparsity=s), profile="v100-pcie3", policies=["vdnn", "cswap"]
        )
        v, c = res["vdnn"], res["cswap"]
        cut = 1 - c.swap_seconds / v.swap_seconds
        counts = c.summary()["codec_counts"]
        out["sparsity"].append(
            {
                "sparsity": s,
                "vdnn_swap": v.swap_seconds,
                "cswap_swap": c.swap_seconds,
                "vdnn_stall": v.stall_seconds,
                "cswap_stall": c.stall_seconds,
                "codecs": counts,
            }
        )
        print(
            f"{s:>8.2f}{v.swap_seconds * 1e3:>11.1f}{c.swap_seconds * 1e3:>11.1f}"
            f"{v.stall_seconds * 1e3:>11.1f}{c.stall_seconds * 1e3:>12.1f}{cut:>9.1%}  {counts}"
        )
    print("\n-- batch size (65% sparsity): small tensors do not pay for ZVC's fixed 128 KiB --")
    for b in (1, 4, 16, 64):
        res = simulate_many(
            vgg16_trace(b, sparsity=0.65), profile="v100-pcie3", policies=["vdnn", "cswap"]
        )
        c = res["cswap"]
        counts = c.summary()["codec_counts"]
        out["batch"].append(
            {
                "batch": b,
                "codecs": counts,
                "stall_cut": 1 - c.stall_seconds / max(res["vdnn"].stall_seconds, 1e-30),
            }
        )
        print(
            f"batch {b:>3}: cswap (ZVC) uses {counts}, "
            f"stall cut {out['batch'][-1]['stall_cut']:.1%}"
        )
    print("\n-- link speed (VGG-16, batch 64, 65%): faster links hide more copies --")
    for prof in profile_names():
        for factor in (1.0, 4.0):
            p = get_profile(prof)
            p = p.replace(link_gbps=p.link_gbps * factor)
            res = simulate_many(
                vgg16_trace(64, sparsity=0.65), profile=p, policies=["vdnn", "cswap-all"]
            )
            v, c = res["vdnn"], res["cswap-all"]
            n_comp = sum(k for name, k in c.summary()["codec_counts"].items() if name != "raw")
            out["link"].append(
                {
                    "profile": prof,
                    "link_gbps": p.link_gbps,
                    "vdnn_stall": v.stall_seconds,
                    "cswap_stall": c.stall_seconds,
                    "compressed_tensors": n_comp,
                }
            )
            print(
                f"{prof:<11} link {p.link_gbps:>6.1f} GB/s: vdnn stall {v.stall_seconds * 1e3:7.1f}"
                f" ms, cswap-all {c.stall_seconds * 1e3:7.1f} ms, {n_comp:>2}/21 tensors compressed"
            )
    return out


def bench_headline() -> dict:
    trace = vgg16_trace(64, 224, sparsity=0.65)
    pols = ["vdnn", "always:zvc", "cswap", "cswap+lossy", "cswap-all", "oracle"]
    res = simulate_many(trace, profile="v100-pcie3", policies=pols)
    v = res["vdnn"]
    out = {
        "kind": "simulated",
        "assumptions": "v100-pcie3",
        "trace": trace.name,
        "profile": "v100-pcie3",
        "mean_sparsity_bytes_weighted": trace.mean_sparsity,
        "paper_swap_reduction_up_to": PAPER_REDUCTION,
        "paper_dense_swap_reduction_up_to": PAPER_DENSE_REDUCTION,
    }
    print(
        "\n== headline (simulated, assumptions v100-pcie3): V100 + PCIe 3.0, VGG-16, batch 64, "
        "224 px, 65% ReLU/pool sparsity =="
    )
    print(
        f"(byte-weighted mean over all swapped tensors incl. the dense input: "
        f"{trace.mean_sparsity:.3f}); cswap = raw or ZVC (CSWAP's set), cswap+lossy adds ZFP "
        "(CSwap+), cswap-all = every lossless codec (wider than the papers')"
    )
    for name in ("always:zvc", "cswap", "cswap+lossy", "cswap-all"):
        r = res[name]
        sw = 1 - r.swap_seconds / v.swap_seconds
        st = 1 - r.stall_seconds / v.stall_seconds
        out[name] = {
            "swap_reduction": sw,
            "stall_reduction": st,
            "swap_seconds": r.swap_seconds,
            "stall_seconds": r.stall_seconds,
        }
        print(
            f"{name:<12} swap time {r.swap_seconds * 1e3:7.1f} ms vs vdnn "
            f"{v.swap_seconds * 1e3:7.1f} ms: -{sw:.1%}   stall -{st:.1%}   "
            f"(paper, measured on V100: up to -{PAPER_REDUCTION:.1%} swap latency)"
        )
    dense = simulate_many(
        vgg16_trace(64, 224, sparsity=0.0), profile="v100-pcie3", policies=["vdnn", "cswap+lossy"]
    )
    cut = 1 - dense["cswap+lossy"].swap_seconds / dense["vdnn"].swap_seconds
    out["dense_cswap+lossy"] = {
        "swap_reduction": cut,
        "codecs": dense["cswap+lossy"].summary()["codec_counts"],
    }
    print(
        f"dense VGG-16 (0% sparsity) cswap+lossy (ZFP rate 16): swap time -{cut:.1%} "
        f"(paper, measured: up to -{PAPER_DENSE_REDUCTION:.1%} for dense models)"
    )
    # the same network with the sparsity measured on the small VGG after 300 steps on flowers5
    shipped = measured_trace("vgg-small-flowers5")
    measured = dataclasses.replace(shipped, sparsity=shipped.sparsity[-1:])
    onto = vgg16_trace(64, 224, sparsity=measured)
    mres = simulate_many(onto, profile="v100-pcie3", policies=["vdnn", "cswap", "cswap-all"])
    out["measured_sparsity"] = {
        "from": measured.name,
        "mean_sparsity_bytes_weighted": onto.mean_sparsity,
        **{k: 1 - mres[k].swap_seconds / mres["vdnn"].swap_seconds for k in ("cswap", "cswap-all")},
    }
    print(
        f"VGG-16 with the ReLU/pool sparsity measured on vgg-small after 300 steps on flowers5 "
        f"(mean {onto.mean_sparsity:.2f}): cswap -{out['measured_sparsity']['cswap']:.1%}, "
        f"cswap-all -{out['measured_sparsity']['cswap-all']:.1%} swap time"
    )
    out["vdnn_swap_seconds"] = v.swap_seconds
    out["vdnn_stall_seconds"] = v.stall_seconds
    out["assumptions_text"] = (
        "PCIe 3.0 x16 15.75 GB/s at 80% efficiency; V100 15.7 TFLOP/s FP32 at 60%; ZVC kernels "
        "at 25% of 900 GB/s HBM2; ZFP at 15%; every ReLU/pool output 65% zeros, input dense; "
        "cswap picks raw or ZVC per tensor by least predicted stall, so tensors whose copy is "
        "hidden stay raw"
    )
    return out


# ---------------------------------------------------------------- measured on real training

SIZE, ZFP_SIZE, BATCH = 48, 32, 32
LINKS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


def _settings(quick: bool) -> dict:
    if quick:
        return {
            "capture_steps": 40,
            "every": 13,
            "lossless_steps": 6,
            "zfp_steps": 20,
            "seeds": [0],
            "aux_steps": 2,
            "repeats": 1,
        }
    return {
        "capture_steps": 200,
        "every": 40,
        "lossless_steps": 20,
        "zfp_steps": 200,
        "seeds": [0, 1, 2],
        "aux_steps": 40,
        "repeats": 3,
    }


def bench_sparsity(images, cfg: dict) -> tuple[dict, list, list]:
    """Capture the small CNN over training; return the table and the kept tensors."""
    import torch

    from pcr_explore.swap import build_net, capture_training
    from pcr_explore.swap.training.codec_training import ImageBatches

    torch.manual_seed(0)
    net = build_net("small-cnn", num_classes=len(images.classes))
    t0 = time.perf_counter()
    cap = capture_training(
        net,
        loader=ImageBatches(images, BATCH, seed=0),
        steps=cfg["capture_steps"],
        every=cfg["every"],
        name="small-cnn-flowers5",
        keep_tensors=True,
    )
    seconds = time.perf_counter() - t0
    tab = cap.sparsity_table()
    first, last = tab.steps[0], tab.steps[-1]
    print(
        f"\n== sparsity of the small CNN's saved activations, flowers5 {SIZE} px, batch {BATCH} "
        f"(measured on this machine, {cfg['capture_steps']} steps in {seconds:.0f} s) =="
    )
    print(
        f"{'tensor':<14}{'op':<12}{'shape':<14}{'step ' + str(first):>9}"
        f"{'step ' + str(last):>10}{'change':>8}"
    )
    rows = []
    for i, name in enumerate(tab.names):
        if tab.kinds[i] not in ("relu", "pool"):
            continue
        a, b = float(tab.sparsity[0, i]), float(tab.sparsity[-1, i])
        rows.append(
            {"tensor": name, "op": tab.ops[i], "shape": list(tab.shapes[i]), "start": a, "end": b}
        )
        shape = "x".join(map(str, tab.shapes[i]))
        print(f"{name:<14}{tab.ops[i]:<12}{shape:<14}{a:>9.3f}{b:>10.3f}{b - a:>+8.3f}")
    kinds = tab.mean_by_kind()
    print(
        f"mean ReLU output: {kinds['relu'][0]:.3f} -> {kinds['relu'][-1]:.3f}; "
        f"mean max-pool output: {kinds['pool'][0]:.3f} -> {kinds['pool'][-1]:.3f} "
        "(pools are less sparse than the ReLUs they read)"
    )
    tensors, groups = [], []
    for step in (first, last):
        tensors += cap.tensors[step]
        groups += [f"small-cnn/{r.name}" for r in cap.trace.tensors]
    # two more networks at the start and after a few steps, for the predictor's layer set
    for name in ("vgg-small", "resnet-small"):
        torch.manual_seed(0)
        other = capture_training(
            build_net(name, num_classes=len(images.classes)),
            loader=ImageBatches(images, BATCH, seed=0),
            steps=cfg["aux_steps"],
            every=max(1, cfg["aux_steps"] - 1),
            keep_tensors=True,
        )
        for step in other.steps:
            tensors += other.tensors[step]
            groups += [f"{name}/{r.name}" for r in other.trace.tensors]
    out = {
        "kind": "measured on this machine",
        "steps": list(tab.steps),
        "layers": rows,
        "mean_relu": kinds["relu"],
        "mean_pool": kinds["pool"],
        "table": tab.to_dict(),
        "seconds": seconds,
    }
    return out, tensors, groups


def bench_lossless(images, cfg: dict) -> list[dict]:
    from pcr_explore.swap import smallest_encoding, train_run

    steps = cfg["lossless_steps"]
    base = train_run(images, codec=None, steps=steps, seed=0)
    print(
        f"\n== lossless codecs on the small CNN's saved activations, {steps} steps, seed 0 "
        "(measured on this machine; every codec on every saved activation of >= 4 KiB) =="
    )
    print(
        f"{'codec':<22}{'same losses':>12}{'MiB/step':>10}{'stored':>9}{'saved':>8}"
        f"{'codec ms/step':>15}{'step ms':>9}"
    )
    print(f"{'uncompressed':<22}{'':>54}{base.seconds / steps * 1e3:>9.0f}")
    rows = []
    runs = [
        (c, c, None) for c in ("zvc", "bitmap", "csr", "delta8", "rle", "lz4", "zstd", "binarize")
    ]
    runs.append(("zvc where smaller", None, smallest_encoding(["zvc"])))
    for label, codec, policy in runs:
        r = train_run(images, codec=codec, steps=steps, seed=0, policy=policy)
        a = r.activations or {}
        same = r.losses == base.losses
        codec_ms = (a["encode_seconds"] + a["decode_seconds"]) / steps * 1e3
        rows.append(
            {
                "codec": label,
                "identical_losses": same,
                "raw_bytes_per_step": a["raw_bytes"] / steps,
                "stored_bytes_per_step": a["stored_bytes"] / steps,
                "saved_fraction": a["saved_fraction"],
                "codec_ms_per_step": codec_ms,
                "step_ms": r.seconds / steps * 1e3,
                "uncompressed_step_ms": base.seconds / steps * 1e3,
                "by_codec": a["by_codec"],
            }
        )
        print(
            f"{label:<22}{'yes' if same else 'NO':>12}{a['raw_bytes'] / steps / 2**20:>10.2f}"
            f"{a['stored_bytes'] / steps / 2**20:>9.2f}{a['saved_fraction']:>8.1%}"
            f"{codec_ms:>15.1f}{r.seconds / steps * 1e3:>9.0f}"
        )
    print(
        "(binarize acts only on ReLU outputs read by a ReLU or max-pool backward; saved < 0: "
        "the codec makes those tensors larger, e.g. ZVC's 128 KiB of masks and offsets)"
    )
    return rows


def bench_zfp(images, cfg: dict) -> dict:
    from pcr_explore.swap import train_run

    steps, seeds = cfg["zfp_steps"], cfg["seeds"]
    print(
        f"\n== ZFP on the saved activations: validation accuracy after {steps} steps, seeds "
        f"{seeds}, {images.train_x.shape[-1]} px (measured on this machine; "
        f"{len(images.val_y)} validation images) =="
    )
    print(
        f"{'run':<14}{'val acc':>9}{'per seed':>22}{'val loss':>10}{'saved':>8}"
        f"{'codec ms/step':>15}{'step ms':>9}"
    )
    out: dict = {"steps": steps, "seeds": seeds, "runs": {}}
    for codec in (None, "zfp:16", "zfp:8", "zfp:4"):
        runs = [train_run(images, codec=codec, steps=steps, seed=s) for s in seeds]
        accs = [r.val_accuracy for r in runs]
        losses = [r.val_loss for r in runs]
        acts = [r.activations or {} for r in runs]
        saved = float(np.mean([a.get("saved_fraction", 0.0) for a in acts]))
        codec_ms = float(
            np.mean(
                [
                    (a.get("encode_seconds", 0) + a.get("decode_seconds", 0)) / steps * 1e3
                    for a in acts
                ]
            )
        )
        step_ms = float(np.mean([r.seconds / steps * 1e3 for r in runs]))
        label = codec or "uncompressed"
        out["runs"][label] = {
            "val_accuracy": accs,
            "val_loss": losses,
            "mean_accuracy": float(np.mean(accs)),
            "saved_fraction": saved,
            "codec_ms_per_step": codec_ms,
            "step_ms": step_ms,
            "final_train_loss": [float(np.mean(r.losses[-10:])) for r in runs],
        }
        per = " ".join(f"{a:.3f}" for a in accs)
        print(
            f"{label:<14}{np.mean(accs):>9.3f}{per:>22}{np.nanmean(losses):>10.3f}{saved:>8.1%}"
            f"{codec_ms:>15.1f}{step_ms:>9.0f}"
        )
    base = out["runs"]["uncompressed"]["mean_accuracy"]
    for r in out["runs"].values():
        r["accuracy_change"] = r["mean_accuracy"] - base
    print(
        "accuracy change vs uncompressed: "
        + ", ".join(
            f"{k} {v['accuracy_change']:+.3f}"
            for k, v in out["runs"].items()
            if k != "uncompressed"
        )
    )
    return out


def bench_predictor(tensors: list, groups: list, cfg: dict) -> dict:
    from pcr_explore.swap.model.predictor_eval import evaluate_predictors, measure_times

    t0 = time.perf_counter()
    # tensors below 4 KiB are not worth swapping (compressed_activations keeps them raw)
    keep = [i for i, t in enumerate(tensors) if t.nbytes >= 4096]
    tensors, groups = [tensors[i] for i in keep], [groups[i] for i in keep]
    times = measure_times(tensors, groups, ["zvc", "zfp"], repeats=cfg["repeats"])
    # CPU codecs run at 0.1-2 GB/s, so compressing pays only on links slower than that
    # (network or NVMe offload): these are the speeds where the decision is not trivial
    ev = evaluate_predictors(times, link_gbps=LINKS)
    print(
        f"\n== predictor vs oracle on measured codec times ({len(tensors)} real tensors of "
        f"{len(set(groups))} layers of 3 networks, >= 4 KiB, timed on this machine's CPU in "
        f"{time.perf_counter() - t0:.0f} s; decisions on held-out layers; "
        "stall = encode + decode + 2 x copy, no compute overlap) =="
    )
    print(ev.to_text())
    print(
        "stall gap over all links and codec sets: "
        + ", ".join(f"{f} {ev.gap(f):+.1%}" for f in ("linear-nnls", "power-law", "knn"))
    )
    print(
        "median relative error of predicted times on held-out tensors: "
        + "; ".join(
            f"{f}: "
            + ", ".join(f"{c} enc {e['encode']:.0%} dec {e['decode']:.0%}" for c, e in errs.items())
            for f, errs in ev.errors.items()
        )
    )
    out = ev.to_dict()
    out["times"] = times
    out["groups"] = groups
    return out


def bench_cpu_swap(pred: dict) -> dict:
    """Swap latency of the small CNN's last captured step from measured CPU codec times."""
    times, groups = pred.pop("times"), pred.pop("groups")
    g = np.array(groups)
    n_layers = sum(1 for x in set(groups) if x.startswith("small-cnn/"))
    idx = np.flatnonzero(np.char.startswith(g, "small-cnn/"))[-n_layers:]
    out = {"kind": "measured codec times on this machine's CPU, modelled link", "links": []}
    print(
        "\n== swap latency of the small CNN's saved activations (last captured step) from "
        "measured CPU codec times; link modelled, 10 us per copy =="
    )
    print(f"{'link GB/s':>10}{'raw ms':>9}{'zvc ms':>9}{'change':>11}{'zfp ms':>9}{'change':>11}")
    raw_b = times.raw_bytes[idx]
    for gbps in (0.1, 1.0, 12.6):

        def copy(b: np.ndarray, gbps: float = gbps) -> np.ndarray:
            return 2 * (10e-6 + b / (gbps * 1e9))

        raw = copy(raw_b).sum()
        row = {"link_gbps": gbps, "raw_s": float(raw)}
        line = f"{gbps:>10g}{raw * 1e3:>9.2f}"
        for i, c in enumerate(times.codecs):
            t = (times.encode_s[i, idx] + times.decode_s[i, idx] + copy(times.bytes[i, idx])).sum()
            row[f"{c}_s"] = float(t)
            row[f"{c}_change"] = float(t / raw - 1)
            line += f"{t * 1e3:>9.2f}{t / raw - 1:>+11.1%}"
        out["links"].append(row)
        print(line)
    print(
        "(12.6 GB/s = PCIe 3.0 x16 at the profiles' 80% efficiency: CPU codecs lose to a raw "
        "copy there; the papers run the codecs as GPU kernels)"
    )
    return out


def bench_training(data: Path, quick: bool) -> dict:
    import torch

    from pcr_explore import open_source
    from pcr_explore.swap import load_labelled_images

    torch.set_num_threads(1)  # steadier timings on a shared machine
    cfg = _settings(quick)
    images = load_labelled_images(
        data, size=SIZE, per_class=40 if quick else None, opener=open_source
    )
    print(f"\n{images}; torch {torch.__version__}, 1 thread, settings {cfg}")
    sparsity, tensors, groups = bench_sparsity(images, cfg)
    small = load_labelled_images(
        data, size=ZFP_SIZE, per_class=40 if quick else None, opener=open_source
    )
    out = {
        "settings": {
            **cfg,
            "size": SIZE,
            "zfp_size": ZFP_SIZE,
            "batch": BATCH,
            "data": str(data),
            "train_images": len(images.train_y),
            "val_images": len(images.val_y),
            "torch": torch.__version__,
            "threads": 1,
            "device": "cpu",
        },
        "gpu": "no GPU on this machine: CUDA capture and real copy timings not run",
        "sparsity": sparsity,
        "lossless": bench_lossless(images, cfg),
        "zfp": bench_zfp(small, cfg),
    }
    out["predictor"] = bench_predictor(tensors, groups, cfg)
    out["cpu_swap"] = bench_cpu_swap(out["predictor"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="16 MiB tensors, fewer sparsities")
    ap.add_argument("--data", type=Path, default=DATA, help="flowers5 (train/ and val/)")
    ap.add_argument("--no-train", action="store_true", help="skip the PyTorch measurements")
    ap.add_argument(
        "--train-only",
        action="store_true",
        help="only the PyTorch measurements (written to bench/results/swap_training.json)",
    )
    args = ap.parse_args()
    if args.train_only:
        t0 = time.time()
        res = bench_training(args.data, args.quick)
        res["seconds"] = time.time() - t0
        out = OUT.with_name("swap_training.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(to_json(res))
        print(f"\nwrote {out} ({res['seconds']:.0f} s)")
        return
    sparsities = (0.0, 0.7, 0.95) if args.quick else (0.0, 0.3, 0.5, 0.7, 0.9, 0.95)
    t0 = time.time()
    codecs = bench_codecs(sparsities, args.quick)
    zvc70 = next(r for r in codecs if r["codec"] == "zvc" and r["sparsity"] == 0.7)
    print(
        f"\nZVC at 70%: encode {zvc70['encode_gbps']:.2f} GB/s, decode "
        f"{zvc70['decode_gbps']:.2f} GB/s (target >= 1: "
        f"{'met' if min(zvc70['encode_gbps'], zvc70['decode_gbps']) >= 1 else 'MISSED'})"
    )
    result = {
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
        },
        "codecs": codecs,
        "zvc_70": {"encode_gbps": zvc70["encode_gbps"], "decode_gbps": zvc70["decode_gbps"]},
        "sim_speed": bench_sim_speed(10 if args.quick else 30),
        "policies": bench_policies(),
        "sweep": bench_sweep(),
        "headline": bench_headline(),
    }
    if args.no_train:
        result["training"] = "skipped (--no-train)"
    elif not (args.data / "train").is_dir():
        print(f"\n{args.data} not found: the measurements on real training are skipped")
        result["training"] = f"skipped: {args.data} not found"
    else:
        try:
            result["training"] = bench_training(args.data, args.quick)
        except ImportError as exc:
            print(f"\nPyTorch missing ({exc}): the measurements on real training are skipped")
            result["training"] = "skipped: PyTorch not installed"
    result["seconds"] = time.time() - t0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(to_json(result))
    print(f"\nwrote {OUT} ({result['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
