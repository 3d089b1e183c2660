"""The swap-sim subcommand, driven through a throwaway argparse parser and the real CLI."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pcr_explore.cli import _swap, main
from pcr_explore.cli._swap import add_swap_sim_parser, run_swap_sim
from pcr_explore.errors import PCRError, SwapError
from pcr_explore.swap import Trace, report, simulate
from pcr_explore.swap.simulator.simulate import MAX_CELLS
from pcr_explore.swap.traces._trace import MAX_ITERATIONS, MAX_TRACE_BYTES
from pcr_explore.swap.traces.architectures import resnet50_trace


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
    # the table is the library's report, printed as is
    assert out == report("vgg16", profile="v100-pcie3", batch=8).to_text() + "\n"


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
    lib = report(
        "resnet50",
        profile="a100-pcie4",
        policies=["vdnn", "cswap", "oracle:zvc"],
        batch=4,
        resolution=128,
        sparsity=(0.3, 0.8),
    )
    assert rep == lib.to_dict()
    for name, p in rep["policies"].items():
        assert p["stall_seconds"] == lib.results[name].stall_seconds
    assert (
        rep["policies"]["oracle:zvc"]["stall_seconds"] <= rep["policies"]["vdnn"]["stall_seconds"]
    )
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
    out = capsys.readouterr().out
    assert out.startswith("resnet50-b2-r64 on v100-pcie3: 51 tensors")
    assert out == report(trace=path, policies=["vdnn", "cswap"], sparsity=0.9).to_text() + "\n"


def test_iterations_and_drift(tmp_path):
    out = tmp_path / "r.json"
    argv = ["--batch", "2", "--iterations", "3", "--drift", "0.2", "--policies", "cswap"]
    _run([*argv, "--json", str(out)])
    rep = json.loads(out.read_text())
    assert len(rep["policies"]["cswap"]["per_iteration"]["stall_seconds"]) == 3
    lib = report("vgg16", policies=["cswap"], batch=2, iterations=3, drift=0.2)
    assert rep == lib.to_dict()


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


def test_main_prints_swap_errors_as_one_line(capsys):
    assert main(["swap-sim", "--profile", "k80"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pcr-explore: error: unknown profile 'k80'") and err.count("\n") == 1


def test_swap_sim_says_simulated_and_takes_a_measured_trace(capsys):
    assert main(["swap-sim", "--trace", "measured:small-cnn-flowers5", "--policies", "vdnn"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("small-cnn-flowers5 on v100-pcie3")
    assert out[1] == "simulated, assumptions profile v100-pcie3 (docs/SWAP.md), not measured"


# A child whose address space is capped: reading an endless file or allocating
# a billion iterations fails fast there (MemoryError, a traceback) instead of
# swapping the machine; the bounded command refuses in one line before that.
_LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from pcr_explore.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _limited(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", _LIMITED, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_trace_file_is_refused_in_one_line():
    run = _limited("swap-sim", "--trace", "/dev/zero", "--policies", "vdnn")
    assert run.returncode == 1, run.stderr
    assert run.stderr == (
        f"pcr-explore: error: /dev/zero: larger than {MAX_TRACE_BYTES >> 20} MiB, the most a "
        "trace file may hold; read no further\n"
    )


def test_a_billion_iterations_are_refused_in_one_line():
    run = _limited("swap-sim", "--iterations", "1000000000", "--policies", "vdnn")
    assert run.returncode == 1, run.stderr
    assert run.stderr == (
        f"pcr-explore: error: --iterations must lie in [1, {MAX_ITERATIONS}], got 1000000000\n"
    )


def test_the_limits_the_help_states_are_the_librarys(capsys):
    assert (_swap.MAX_ITERATIONS, _swap.MAX_TRACE_MIB << 20) == (MAX_ITERATIONS, MAX_TRACE_BYTES)
    with pytest.raises(SystemExit):
        main(["swap-sim", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"at most {MAX_ITERATIONS};" in text and f"(at most {MAX_TRACE_BYTES >> 20} MiB)" in text


def test_the_library_bounds_iterations_and_simulated_cells(tmp_path):
    with pytest.raises(SwapError, match=r"iterations must be an integer in \[1, 1000\]"):
        report("vgg16", batch=2, iterations=MAX_ITERATIONS + 1, policies=["vdnn"])
    with pytest.raises(SwapError, match=r"iterations must be an integer in \[1, 1000\]"):
        resnet50_trace(batch=2).with_drift(10**9)
    wide = resnet50_trace(batch=2).with_drift(MAX_ITERATIONS)
    tall = Trace(wide.name, wide.tensors * 3, np.tile(wide.sparsity, 3))
    with pytest.raises(SwapError, match=f"at most {MAX_CELLS}"):
        simulate(tall, profile="v100-pcie3", policy="vdnn")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_TRACE_BYTES + 1))
    with pytest.raises(SwapError, match="larger than 16 MiB"):
        Trace.load(big)
