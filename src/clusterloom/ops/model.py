"""What the parts of runtime operations (issue 23) hand each other: the telemetry tables, the
faults injected or suspected, and the suspects localisation returns. Nothing here reads a file
or runs a simulator; the schemas are pyarrow's, the records frozen dataclasses.

Telemetry comes in three tables, each keyed by the design's own names (``export.naming``:
devices ``node00012`` and ``be-p0-leaf0003``, interfaces ``gpu3p0`` and ``swp7s2``):

- **counters** (:data:`COUNTER_SCHEMA`): one row per interface and sample, the interface's
  cumulative counters as a switch or NIC exports them (unsigned 64-bit, so they wrap at 2**64;
  a column may be null when a source does not export it), whether the link is up and its
  operational speed (a gauge), and for a host's NIC its retransmissions (optional);
- **probes** (:data:`PROBE_SCHEMA`): Pingmesh-style path probes, one row per source endpoint,
  destination endpoint, entropy value (EV: the UDP source port, or the EV a spraying NIC puts
  in its header) and interval: probes sent, probes lost, the RTT of those that came back;
- **collectives** (:data:`COLLECTIVE_SCHEMA`): one row per rank, job step and collective: how
  long the rank spent in it.

Times are integer milliseconds since the Unix epoch (UTC) in every table (``ts_ms``); a
counter sample is the state at ``ts_ms``, a probe or collective row the interval that ends at
``ts_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import pyarrow as pa

__all__ = [
    "COLLECTIVE_SCHEMA",
    "COUNTERS",
    "COUNTER_SCHEMA",
    "OPTIONAL_COUNTERS",
    "OPTIONAL_RATE_COLUMNS",
    "PROBE_SCHEMA",
    "RATE_SCHEMA",
    "Fault",
    "FaultKind",
    "Suspect",
    "SuspectKind",
]

#: the cumulative counters of an interface, in the order of :data:`COUNTER_SCHEMA`
COUNTERS: tuple[str, ...] = (
    "bytes_tx",
    "bytes_rx",
    "packets_tx",
    "packets_rx",
    "drops",  #: packets dropped at this interface (either direction; tail drop, errors)
    "ecn_marks",  #: packets this interface's egress queue marked CE
    "pfc_pauses",  #: PFC pause frames this interface received (its egress was paused)
    "fec_corrected",  #: FEC codewords corrected
    "fec_uncorrected",  #: FEC codewords that could not be corrected
)

COUNTER_SCHEMA = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("device", pa.string(), nullable=False),
        pa.field("interface", pa.string(), nullable=False),
        *(pa.field(c, pa.uint64()) for c in COUNTERS),
        #: operational state at the sample (null: not exported)
        pa.field("link_up", pa.bool_()),
        #: operational speed at the sample, bits per second: a gauge, not a counter (IF-MIB
        #: ``ifHighSpeed``, node_exporter ``node_network_speed_bytes``, gNMI
        #: ``negotiated-port-speed``); below the design's rate when a link trained down to
        #: fewer lanes (null: not exported)
        pa.field("speed_bps", pa.uint64()),
        #: packets the interface's RoCE NIC sent again (a host interface; cumulative, like
        #: mlx5's ``roce_adp_retrans`` hardware counter; null: not exported, as a switch port)
        pa.field("retransmissions", pa.uint64()),
    ]
)

#: the cumulative counters of :data:`COUNTER_SCHEMA` a source may leave out (null): exported
#: by NICs only (read and checked as :data:`COUNTERS` are; not in the rates yet: a 64-bit wrap
#: is taken as :data:`COUNTERS`' are, modulo 2**64, by whoever differences it)
OPTIONAL_COUNTERS: tuple[str, ...] = ("retransmissions",)

PROBE_SCHEMA = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("src_device", pa.string(), nullable=False),
        pa.field("src_interface", pa.string(), nullable=False),
        pa.field("dst_device", pa.string(), nullable=False),
        pa.field("dst_interface", pa.string(), nullable=False),
        #: the entropy value: a UDP source port, or a spraying NIC's EV
        pa.field("ev", pa.int32(), nullable=False),
        pa.field("sent", pa.int32(), nullable=False),
        pa.field("lost", pa.int32(), nullable=False),
        #: mean RTT of the probes that came back, microseconds (null when all were lost)
        pa.field("rtt_us", pa.float64()),
        #: their largest RTT, microseconds (null when all were lost)
        pa.field("rtt_max_us", pa.float64()),
    ]
)

#: counters turned into rates per interface and interval (``ops.ingest`` computes them: the
#: difference of two samples, a 64-bit wrap taken as one, a counter that went back by more
#: than a wrap explains as a reset; divided by the interval). ``up`` is the share of the
#: interval's samples with the link up, ``flaps`` the number of up/down changes in it; a rate
#: is null where its counter was not exported.
RATE_SCHEMA = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),  #: the interval's end
        pa.field("device", pa.string(), nullable=False),
        pa.field("interface", pa.string(), nullable=False),
        pa.field("link", pa.int64(), nullable=False),  #: physical link (``OpsFabric``)
        pa.field("end", pa.int8(), nullable=False),  #: 0 the lower end, 1 the upper
        pa.field("seconds", pa.float64(), nullable=False),
        pa.field("tx_bps", pa.float64()),
        pa.field("rx_bps", pa.float64()),
        pa.field("tx_pps", pa.float64()),
        pa.field("rx_pps", pa.float64()),
        pa.field("drops_ps", pa.float64()),
        pa.field("ecn_ps", pa.float64()),
        pa.field("pfc_ps", pa.float64()),
        pa.field("fec_corrected_ps", pa.float64()),
        pa.field("fec_uncorrected_ps", pa.float64()),
        pa.field("up", pa.float64()),
        pa.field("flaps", pa.int32()),
        #: the operational speed at the interval's closing sample, bits per second (null: not
        #: exported); optional in a rates table given to ``ops.detect``
        pa.field("speed_bps", pa.float64()),
    ]
)

#: the columns of :data:`RATE_SCHEMA` a rates table may leave out (null)
OPTIONAL_RATE_COLUMNS: tuple[str, ...] = ("speed_bps",)

COLLECTIVE_SCHEMA = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("job", pa.string(), nullable=False),
        pa.field("step", pa.int64(), nullable=False),
        #: the rank, which is topology host ``rank`` (accelerator ``rank`` of the backend)
        pa.field("rank", pa.int32(), nullable=False),
        #: its server (``node00012``)
        pa.field("device", pa.string(), nullable=False),
        pa.field("collective", pa.string(), nullable=False),
        pa.field("duration_us", pa.float64(), nullable=False),
    ]
)


class FaultKind(StrEnum):
    """The faults ``ops synth`` injects and localisation names (issue 23)."""

    GRAY_LINK = "gray-link"  #: a link that loses packets or runs below its rate, still up
    FLAPPING_LINK = "flapping-link"  #: a link going down and up again
    DEAD_LINK = "dead-link"  #: a link down for good
    SLOW_NIC_PORT = "slow-nic-port"  #: a host port running below its rate
    DEAD_EV = "dead-ev"  #: one entropy value's path black-holes (a bad ECMP member or SID)
    MIS_HASHED_SWITCH = "mis-hashed-switch"  #: a switch sending most flows to one uplink
    CONGESTED_SPINE = "congested-spine"  #: a spine hot with traffic; no fault, load
    STRAGGLER_RANK = "straggler-rank"  #: one rank slow to compute: its steps start late


@dataclass(frozen=True)
class Fault:
    """One fault, injected by ``ops synth`` (the truth beside the telemetry it writes) or
    suspected by localisation.

    ``target`` names the object in the design's terms:

    - a link (``gray-link``, ``flapping-link``, ``dead-link``): its label
      ``device:interface~device:interface``, lower end first (``OpsFabric.link_label``);
    - a host port (``slow-nic-port``): ``device:interface`` of the NIC end;
    - an EV (``dead-ev``): ``device:interface>device:interface#ev`` (source port, destination
      port, EV), or ``device#ev`` when every path of that EV through the switch ``device`` is
      dead;
    - a switch (``mis-hashed-switch``, ``congested-spine``): its device name;
    - a rank (``straggler-rank``): ``rank:N``.

    ``severity`` is the fault's size in its kind's unit: the loss probability of a lossy gray
    link (``loss``), the fraction of the rate left to a slow link or port (``rate``), flaps per
    minute, the share of flows a mis-hashed switch sends to its favourite uplink, the extra
    load on a congested spine as a fraction of its capacity, a straggler's delay per step in
    microseconds. ``start_ms`` and ``end_ms`` bound it (``end_ms`` None: to the end).
    """

    kind: FaultKind
    target: str
    start_ms: int
    end_ms: int | None = None
    loss: float = 0.0
    rate: float = 1.0
    severity: float = 0.0
    note: str = ""


class SuspectKind(StrEnum):
    """What localisation may blame."""

    LINK = "link"
    DEVICE = "device"
    PORT = "port"
    EV = "ev"
    RANK = "rank"
    CONGESTION = "congestion"  #: the symptoms are load, not a fault: blame nothing to repair


@dataclass(frozen=True)
class Suspect:
    """One explanation of the symptoms, ranked by ``confidence`` (0..1; a localisation's
    suspects are sorted by it, highest first).

    ``target`` uses :class:`Fault`'s names for its kind; ``fault`` is the kind of fault the
    evidence points to (a lossy link is ``gray-link``, one that went down and up
    ``flapping-link``); ``explained`` and ``unexplained`` count the bad observations (probes,
    flows, interfaces) the suspect accounts for and those it leaves; ``evidence`` says in words
    what points at it (counters, probes, the paths shared).
    """

    kind: SuspectKind
    target: str
    confidence: float
    fault: FaultKind | None = None
    explained: int = 0
    unexplained: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    evidence: tuple[str, ...] = field(default_factory=tuple)
