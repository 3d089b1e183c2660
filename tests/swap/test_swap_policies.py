"""Policy specs: parsing, defaults and the codec sets they choose among."""

from __future__ import annotations

import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import default_policies, get_profile
from pcr_explore.swap.simulator.policies import (
    Policy,
    candidate_codecs,
    loses_values,
    parse_policy,
    policies_for_codecs,
)


def test_policy_parsing_and_errors():
    assert parse_policy("CSWAP+lossy").name == "cswap+lossy"
    assert parse_policy("oracle:zvc,zfp").codecs == ("zvc", "zfp")
    assert parse_policy("oracle:zvc,zfp").lossy and not parse_policy("cswap:zvc,csr").lossy
    assert parse_policy(" always:ZSTD:9 ") == Policy("always", "zstd:9")
    p = Policy("cswap", codecs=("zvc",))
    assert parse_policy(p) is p and parse_policy(p.name) == p
    for bad in ("random", "cswap+fast", "always:nothing", "cswap:", "vdnn:zvc"):
        with pytest.raises(SwapError):
            parse_policy(bad)
    with pytest.raises(SwapError, match="string"):
        parse_policy(3)  # type: ignore[arg-type]


def test_default_and_candidate_codecs():
    p = get_profile("v100-pcie3")
    assert default_policies(p) == [
        "vdnn",
        *(f"always:{c}" for c in p.codecs),
        "cswap",
        "cswap-all",
        "oracle",
        "oracle-all",
    ]
    assert candidate_codecs(p) == ["zvc", "bitmap", "csr", "delta8", "rle", "binarize"]
    assert candidate_codecs(p, lossy=True) == list(p.codecs)
    assert [loses_values(c) for c in ("zfp", "zfp:8", "binarize", "lz4")] == [
        True,
        True,
        False,
        False,
    ]


def test_cswap_uses_the_papers_codecs_and_the_wider_set_is_named_apart():
    p = get_profile("v100-pcie3")
    assert parse_policy("cswap").choices(p) == ["zvc"]
    assert parse_policy("cswap+lossy").choices(p) == ["zvc", "zfp"]
    assert parse_policy("oracle").choices(p) == ["zvc"]
    assert parse_policy("cswap-all").choices(p) == candidate_codecs(p)
    assert parse_policy("oracle-all+lossy").choices(p) == list(p.codecs)
    assert parse_policy("CSWAP-ALL+lossy") == Policy("cswap", None, True, wide=True)
    assert parse_policy("cswap-all+lossy").name == "cswap-all+lossy"
    assert parse_policy("cswap:zvc,csr").choices(p) == ["zvc", "csr"]
    for bad in ("cswap-some", "oracle-all+fast", "vdnn-all"):
        with pytest.raises(SwapError):
            parse_policy(bad)
    # a profile without ZVC leaves cswap nothing to choose: every tensor raw
    bare = p.with_codec("zvc", None)
    assert parse_policy("cswap").choices(bare) == []


def test_policies_for_chosen_codecs():
    assert policies_for_codecs("a100-pcie4", ["csr", "lz4", "zvc"]) == [
        "vdnn",
        "always:csr",
        "always:zvc",
        "cswap:csr,zvc",
        "oracle:csr,zvc",
    ]
    assert policies_for_codecs("a100-pcie4", ["lz4"]) == ["vdnn"]  # not priced on a GPU
    assert policies_for_codecs("a100-pcie4", []) == ["vdnn"]
    assert parse_policy(policies_for_codecs("a100-pcie4", ["zvc", "zfp"])[-2]).lossy
