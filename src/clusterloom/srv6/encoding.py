"""SRv6 compressed-SID encodings (RFC 9800 NEXT-C-SID, "uSID"), as integers and numpy arrays.

An IPv6 address is a 128-bit integer. A *uSID container* is one address: a locator block of
``block_bits`` (LBL) followed by up to :func:`capacity` uSIDs of ``usid_bits`` (LNFL) each, the
unused low bits zero. The *active* uSID sits right after the block. An End with the NEXT-C-SID
flavour (RFC 9800, section 4.1) whose argument (the bits after the active uSID) is non-zero
copies the argument into the bits right after the block and zero-fills the rest: the next uSID
becomes active. A zero argument is the *end of the carrier*: the node processes the segment
routing header (Segments Left decremented, the next SID copied into the destination) when
there is one, else it is the packet's last segment.

A path longer than one container is carried in a segment routing header (RFC 8754): a list of
containers (and a last full SID), 8 bytes of header plus 16 per SID.

uSID value 0 never names a node: it is the end of the carrier. The uSID space of one block is
split into a global part (``1 .. global_limit``: one ID per node, significant in the whole
block) and a local part above it (significant at one node only), as uSID deployments do; the
split keeps the top eighth local.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError

ADDRESS_BITS = 128
IPV6_HEADER_BYTES = 40
SRH_FIXED_BYTES = 8
SID_BYTES = 16


def capacity(block_bits: int, usid_bits: int) -> int:
    """uSIDs one container holds after a ``block_bits`` block: ``(128 - LBL) // LNFL``."""
    return (ADDRESS_BITS - block_bits) // usid_bits


def global_limit(usid_bits: int) -> int:
    """The highest global uSID value: the lower seven eighths of the space, 0 excluded."""
    return (1 << usid_bits) - (1 << (usid_bits - 3)) - 1


@dataclass(frozen=True)
class Format:
    """A uSID format: block length and uSID length in bits (RFC 9800's LBL and LNFL)."""

    block_bits: int = 32
    usid_bits: int = 16

    @property
    def capacity(self) -> int:
        return capacity(self.block_bits, self.usid_bits)

    @property
    def global_limit(self) -> int:
        return global_limit(self.usid_bits)

    def problems(self, where: str = "srv6") -> list[Problem]:
        """What makes this format unusable (empty when it is fine)."""
        out: list[Problem] = []
        b, u = self.block_bits, self.usid_bits
        if not 8 <= b <= 112 or b % 8:
            out.append(Problem(f"{where}.block_bits", f"{b} is not a multiple of 8 in 8..112"))
        if u not in (8, 16, 24, 32):
            out.append(Problem(f"{where}.usid_bits", f"{u} is not one of 8, 16, 24, 32"))
        elif not out and capacity(b, u) < 1:
            out.append(
                Problem(
                    f"{where}.usid_bits",
                    f"a {b}-bit block leaves {ADDRESS_BITS - b} bits, too few for one "
                    f"{u}-bit uSID; use a shorter block or uSID",
                )
            )
        return out

    def check(self, where: str = "srv6") -> None:
        if found := self.problems(where):
            raise SpecError(found)


def container(block: int, fmt: Format, usids: Sequence[int]) -> int:
    """The address carrying ``usids`` after ``block`` (the block's value in its top bits)."""
    if len(usids) > fmt.capacity:
        raise ValueError(f"{len(usids)} uSIDs exceed a container's {fmt.capacity}")
    value = block
    shift = ADDRESS_BITS - fmt.block_bits
    for u in usids:
        if not 0 < u < (1 << fmt.usid_bits):
            raise ValueError(f"uSID {u} is not in 1..{(1 << fmt.usid_bits) - 1}")
        shift -= fmt.usid_bits
        value |= u << shift
    return value


def block_value(prefix: int, fmt: Format) -> int:
    """The block bits of ``prefix`` (the rest zeroed)."""
    low = ADDRESS_BITS - fmt.block_bits
    return (prefix >> low) << low


def next_csid(address: int, fmt: Format) -> int | None:
    """The destination after an End with NEXT-C-SID at the active uSID (RFC 9800 4.1.1): the
    argument shifted up by one uSID behind the block, zero-filled; ``None`` at the end of the
    carrier (a zero argument: the SRH, if any, gives the next SID)."""
    arg_bits = ADDRESS_BITS - fmt.block_bits - fmt.usid_bits
    argument = address & ((1 << arg_bits) - 1)
    if argument == 0:
        return None
    return block_value(address, fmt) | (argument << fmt.usid_bits)


def usids_of(address: int, fmt: Format) -> list[int]:
    """The non-zero uSIDs of a container, active first (stops at the first zero)."""
    out: list[int] = []
    shift = ADDRESS_BITS - fmt.block_bits
    mask = (1 << fmt.usid_bits) - 1
    for _ in range(fmt.capacity):
        shift -= fmt.usid_bits
        u = (address >> shift) & mask
        if u == 0:
            break
        out.append(u)
    return out


def pack(usids: Sequence[int], fmt: Format, block: int, last: int) -> list[int]:
    """The SIDs carrying transit uSIDs ``usids`` and then the final SID ``last``: one container
    when ``usids`` and the final SID's uSIDs fit together (``last`` must then be a container of
    this block), else containers of ``capacity`` transit uSIDs each and ``last`` as a full SID."""
    tail = usids_of(last, fmt) if block_value(last, fmt) == block else None
    fits = tail is not None and len(usids) + len(tail) <= fmt.capacity
    if tail is not None and fits and container(block, fmt, tail) == last:
        return [container(block, fmt, [*usids, *tail])]
    c = fmt.capacity
    return [container(block, fmt, usids[i : i + c]) for i in range(0, len(usids), c)] + [last]


def encap_bytes(sids: int, reduced: bool = True) -> int:
    """Bytes an H.Encaps adds: the outer IPv6 header plus an SRH of ``sids`` SIDs; with
    ``reduced`` (H.Encaps.Red, RFC 8986 5.2) one SID travels in the destination only."""
    if reduced and sids == 1:
        return IPV6_HEADER_BYTES
    carried = sids - 1 if reduced else sids
    return IPV6_HEADER_BYTES + SRH_FIXED_BYTES + SID_BYTES * carried


def to_text(address: int) -> str:
    """The compressed text form of an address (``fcbb:bb00:1:2::``)."""
    return str(ipaddress.IPv6Address(address))


def parse_prefix(text: str, where: str) -> tuple[int, int]:
    """``(network address, length)`` of an IPv6 prefix; SpecError naming ``where``."""
    try:
        net = ipaddress.IPv6Network(text, strict=True)
    except ValueError as exc:
        raise SpecError([Problem(where, f"{text!r} is not an IPv6 prefix ({exc})")]) from exc
    return int(net.network_address), net.prefixlen


def words(values: NDArray[np.int64], fmt: Format) -> NDArray[np.uint64]:
    """Rows of uSIDs (``n x k``, zero-padded, ``k <= capacity``) as the two 64-bit halves of
    their containers' low ``128 - block_bits`` bits: ``(n, 2)`` uint64, high half first."""
    n, k = values.shape
    out = np.zeros((n, 2), dtype=np.uint64)
    shift = ADDRESS_BITS - fmt.block_bits
    for i in range(k):
        shift -= fmt.usid_bits
        col = values[:, i].astype(np.uint64)
        if shift >= 64:
            out[:, 0] |= col << np.uint64(shift - 64)
        else:
            out[:, 1] |= col << np.uint64(shift)
            if shift + fmt.usid_bits > 64:
                out[:, 0] |= col >> np.uint64(64 - shift)
    return out
