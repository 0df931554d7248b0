"""htsim's RoCE configuration as the packet engine runs it (``sim.crossval.HTSIM_ROCE``), held
to htsim's own pause and resume points in whole packets."""

from __future__ import annotations

import math

from clusterloom.sim.crossval import HTSIM_ROCE

#: htsim ``-mtu 4000``: payload bytes per packet, and a data packet on the wire (RoCE header)
HTSIM_MTU, WIRE = 4000, 4000 + 64


def _pause_at(xoff: int) -> int:
    """Data packets held at an ingress when the packet engine pauses it (``held > xoff``)."""
    return xoff // WIRE + 1


def _resume_at(xon: int) -> int:
    """The most data packets held at which it resumes (``held <= xon``)."""
    return xon // WIRE


def test_htsim_roce_pauses_and_resumes_at_htsims_packet_counts() -> None:
    """htsim (``queue_lossless_input.cpp``) pauses when an ingress holds more than
    ``15 * mtu`` bytes and resumes below ``12 * mtu``, counting 4,064 bytes per data packet:
    it pauses at the 15th packet and resumes at 11. The packet engine's thresholds give the
    same counts (before: 16 and 12, thresholds of 15 and 12 wire packets)."""
    cfg, options = HTSIM_ROCE
    htsim_pause = math.floor(15 * HTSIM_MTU / WIRE) + 1  # the first count > 60,000 bytes
    htsim_resume = math.ceil(12 * HTSIM_MTU / WIRE) - 1  # the last count < 48,000 bytes
    assert (htsim_pause, htsim_resume) == (15, 11)
    assert _pause_at(cfg.pfc_xoff) == htsim_pause
    assert _resume_at(cfg.pfc_xon) == htsim_resume
    assert (cfg.mtu, cfg.header) == (HTSIM_MTU, WIRE - HTSIM_MTU)
    assert cfg.ecn is False and options == {"dcqcn": 0.0, "ack_every": 1.0}


def test_broken_thresholds_are_caught() -> None:
    """The count functions see a threshold of whole wire packets as one packet later."""
    assert _pause_at(15 * WIRE) == 16
    assert _resume_at(12 * WIRE) == 12
