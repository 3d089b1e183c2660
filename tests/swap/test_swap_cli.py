"""The swap-sim subcommand, driven through a throwaway argparse parser."""

from __future__ import annotations

import argparse
import json

import pytest

from pcr_explore.errors import PCRError
from pcr_explore.swap import resnet50_trace
from pcr_explore.swap.cli import add_swap_sim_parser, run_swap_sim


def _run(argv):
    parser = argparse.ArgumentParser(prog="pcr-explore")
    add_swap_sim_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["swap-sim", *argv])
    assert args.func is run_swap_sim
    return args.func(args)


def test_default_run_prints_a_table_per_policy(capsys):
    assert _run(["--batch", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vgg16-b8-r224 on v100-pcie3")
    for pol in ("vdnn", "always:zvc", "cswap", "oracle"):
        assert f"\n{pol} " in out


def test_json_report(tmp_path, capsys):
    out = tmp_path / "r.json"
    _run(
        [
            "--model",
            "resnet50",
            "--batch",
            "4",
            "--resolution",
            "128",
            "--profile",
            "a100-pcie4",
            "--sparsity-ramp",
            "0.3:0.8",
            "--policies",
            "vdnn",
            "cswap",
            "oracle:zvc",
            "--json",
            str(out),
        ]
    )
    rep = json.loads(out.read_text())
    assert set(rep["policies"]) == {"vdnn", "cswap", "oracle:zvc"}
    for p in rep["policies"].values():
        assert {"swap_seconds", "stall_seconds", "link_bytes"} <= set(p)
        assert p["stall_seconds"] >= 0
    assert len(rep["tensors"]) == 51
    t = rep["tensors"][1]
    assert t["name"] == "stem.relu" and t["bytes"] == 4 * 64 * 64 * 64 * 4
    assert t["sparsity"] == pytest.approx(0.3)
    assert set(t["decisions"]) == {"vdnn", "cswap", "oracle:zvc"}
    assert t["decisions"]["vdnn"]["codec"] == "raw"
    assert rep["policies"]["vdnn"]["link_bytes"] == 2 * sum(x["bytes"] for x in rep["tensors"])


def test_trace_file_with_sparsity_override(tmp_path, capsys):
    path = tmp_path / "t.json"
    resnet50_trace(batch=2, resolution=64).save(path)
    _run(["--trace", str(path), "--sparsity", "0.9", "--policies", "vdnn", "cswap"])
    assert "resnet50-b2-r64" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--profile", "k80"], "unknown profile"),
        (["--policies", "random"], "unknown policy"),
        (["--sparsity", "1.5"], r"\[0, 1\]"),
        (["--batch", "0"], "batch"),
        (["--trace", "/nonexistent/t.json"], "cannot read"),
        (["--policies", "always:zstd"], "no kernel cost"),
    ],
)
def test_bad_input_raises_pcr_errors(argv, match):
    with pytest.raises(PCRError, match=match):
        _run(argv)


def test_bad_ramp_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit):
        _run(["--sparsity-ramp", "0.5"])
    assert "A:B" in capsys.readouterr().err
