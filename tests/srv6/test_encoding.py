"""uSID encodings against RFC 9800's rules, worked by hand, and their closed forms."""

from __future__ import annotations

import ipaddress

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.srv6.encoding import (
    Format,
    capacity,
    container,
    encap_bytes,
    global_limit,
    next_csid,
    pack,
    to_text,
    usids_of,
    words,
)


def a(text: str) -> int:
    return int(ipaddress.IPv6Address(text))


@pytest.mark.parametrize(
    ("block", "usid", "expected"),
    [(32, 16, 6), (48, 16, 5), (64, 16, 4), (96, 16, 2), (112, 16, 1), (32, 32, 3), (40, 24, 3),
     (16, 8, 14), (64, 32, 2)],
)  # fmt: skip
def test_container_capacity_is_the_bits_after_the_block_over_the_usid_length(
    block: int, usid: int, expected: int
) -> None:
    assert capacity(block, usid) == expected == (128 - block) // usid
    assert Format(block, usid).problems() == []


def test_next_csid_shifts_the_argument_behind_the_block_and_zero_fills() -> None:
    """RFC 9800 4.1.1: DA = block:active:arg -> block:arg:0, down to the end of the carrier."""
    fmt = Format(32, 16)
    da = a("fcbb:bb00:100:200:300:d6::")
    steps = []
    while da is not None:
        steps.append(to_text(da))
        da = next_csid(da, fmt)
    assert steps == [
        "fcbb:bb00:100:200:300:d6::",
        "fcbb:bb00:200:300:d6::",
        "fcbb:bb00:300:d6::",
        "fcbb:bb00:d6::",
    ]  # the last uSID's argument is zero: the end of the carrier (the SRH's turn)


def test_next_csid_with_a_full_container_and_other_lengths() -> None:
    fmt = Format(32, 16)
    full = a("fcbb:bb00:1:2:3:4:5:6")
    assert to_text(next_csid(full, fmt) or 0) == "fcbb:bb00:2:3:4:5:6:0"
    f48 = Format(48, 16)
    assert to_text(next_csid(a("fc00:0:1:a:b::"), f48) or 0) == "fc00:0:1:b::"
    f32 = Format(32, 32)  # 32-bit uSIDs: two 16-bit groups move at once
    assert to_text(next_csid(a("fcbb:bb00:1:2:3:4::"), f32) or 0) == "fcbb:bb00:3:4::"


@given(
    st.sampled_from([(32, 16), (48, 16), (64, 16), (32, 32), (16, 8), (40, 24)]),
    st.data(),
)
def test_a_container_shifts_once_per_usid_then_ends(
    lengths: tuple[int, int], data: st.DataObject
) -> None:
    fmt = Format(*lengths)
    block = data.draw(st.integers(0, (1 << fmt.block_bits) - 1)) << (128 - fmt.block_bits)
    usids = data.draw(
        st.lists(st.integers(1, (1 << fmt.usid_bits) - 1), min_size=1, max_size=fmt.capacity)
    )
    da: int | None = container(block, fmt, usids)
    seen = []
    while da is not None:
        assert da >> (128 - fmt.block_bits) << (128 - fmt.block_bits) == block
        seen.append(usids_of(da, fmt)[0])
        da = next_csid(da, fmt)
    assert seen == usids  # each End made the next uSID active, in order, and no more


def test_pack_one_container_when_it_fits_else_an_srh_of_containers_and_the_nic_sid() -> None:
    fmt = Format(32, 16)
    block = a("fcbb:bb00::")
    nic = container(block, fmt, [7, 9])
    assert pack([3], fmt, block, nic) == [a("fcbb:bb00:3:7:9::")]
    assert pack([3, 4, 5, 6], fmt, block, nic) == [a("fcbb:bb00:3:4:5:6:7:9")]
    five = [1, 2, 3, 4, 5]  # 5 transit + 2 > 6: containers of 6 transit, then the NIC SID
    assert pack(five, fmt, block, nic) == [container(block, fmt, five), nic]
    f96 = Format(96, 16)
    b96 = a("fcbb:bb00::")
    nic96 = container(b96, f96, [2, 1])
    assert pack([3], f96, b96, nic96) == [container(b96, f96, [3]), nic96]


def test_encapsulation_bytes() -> None:
    assert encap_bytes(1) == 40  # H.Encaps.Red with one SID: no SRH
    assert encap_bytes(2) == 40 + 8 + 16  # reduced: the first SID only in the destination
    assert encap_bytes(2, reduced=False) == 40 + 8 + 32


def test_global_space_keeps_the_top_eighth_local() -> None:
    assert global_limit(16) == 0xDFFF
    assert global_limit(32) == 0xDFFFFFFF


@pytest.mark.parametrize(
    ("block", "usid", "field"),
    [
        (112, 24, "srv6.usid_bits"),
        (104, 32, "srv6.usid_bits"),
        (32, 12, "srv6.usid_bits"),
        (33, 16, "srv6.block_bits"),
        (120, 16, "srv6.block_bits"),
    ],
)
def test_formats_the_block_cannot_hold_are_refused_naming_the_field(
    block: int, usid: int, field: str
) -> None:
    with pytest.raises(SpecError) as e:
        Format(block, usid).check()
    assert [p.where for p in e.value.problems] == [field]


@given(st.lists(st.lists(st.integers(1, 0xFFFF), min_size=1, max_size=6), min_size=1, max_size=8))
def test_words_are_the_containers_low_bits(rows: list[list[int]]) -> None:
    fmt = Format(32, 16)
    values = np.zeros((len(rows), 6), dtype=np.int64)
    for i, r in enumerate(rows):
        values[i, : len(r)] = r
    got = words(values, fmt)
    for i, r in enumerate(rows):
        c = container(0, fmt, r)
        assert (int(got[i, 0]) << 64 | int(got[i, 1])) == c
