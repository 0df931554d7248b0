"""The compiled data plane of the packet engine (numba): the event heap, the directed links'
output queues, serialization and propagation, ECN marking, drop-tail, trimming, PFC and link
failures, over packets that are rows of preallocated integer arrays.

:func:`step` runs events until one needs Python (a packet delivered to a host, a transport
timer, a scheduled Python action, an injected delivery) and returns it; what Python asks of the
data plane in between (sends, timers, link state changes) is queued as commands and applied,
in order, at the start of the next :func:`step`. Every push takes the next sequence number, so
the order of events is exactly that of a Python loop doing the same work one call at a time.

State layout (all ``int64``):

- ``L[dl, :]``: one row per directed link, columns ``L_*``; queues and the wire are singly
  linked lists of packet ids through ``P[:, P_NEXT]``.
- ``P[pid, :]``: one row per packet slot, columns ``P_*``; ``P[:S[S_NFREE], P_FREE]`` is the
  stack of free slots.
- ``H[:S[S_HN], :]``: the 4-ary heap of events ``(time, seq, kind, a, b)``.
- ``S``: scalars and counters (``S_*``), then the configuration (``C_*``).
- ``RL``: the routes back to back; a packet holds the offset of its route's first link and its
  hop index into it.
- ``T[:S[S_TN], :]``: records for Python ``(time, what, pid, x)``, in order: drops and trims
  when ``S[C_TRACE]`` is set (``x`` the link), the deliveries of quiet packets
  (``TR_QUIET``, below; ``x`` the packet's tag) and the data packets the loop sent for a
  sender (``TR_SENT``; ``pid`` the flow, ``x`` the sequence and EV index, as in a tag).
- A **quiet** packet (``TAG_QUIET`` in ``P_TAG``, set by the send) is one whose delivery
  the transport handles without sending or scheduling anything (``receiver-driven``'s ACKs):
  the loop logs its delivery in ``T`` and goes on instead of returning, and Python hands it to
  its connection before the event that made the loop return. Nothing the handler does reaches
  the data plane, so the run is the same event for event; it saves a return to Python per
  such packet. A quiet packet may also be **made** (``TAG_MADE`` as well: Python sent it
  without an object, :meth:`PacketSim.send_made`): ``receiver-driven``'s ACKs, whose flow
  and sequence are the tag's flow and count fields, logged with the record.
- ``R[e, :]``: per endpoint id (connections and pull pacers), ``R_*``: ``receiver-driven``'s
  pull pacers and, for a connection the loop receives for (``R_CRX``), its receiver and the
  ACK side of its sender; ``RR``: the offsets in ``RL`` of such a connection's reverse paths by
  EV index (its pulls' and ACKs'); ``B``: per packet of such a connection three flag bytes
  (received, acknowledged, outstanding), shared with the connection's Python side.
- A data packet of a connection the loop receives for (``TAG_RX``, with its flow, EV index
  and sequence in the tag) is placed by the loop (:func:`_receive`), which sends its ACK (a
  made quiet packet, handled by the loop at the sender: :func:`_acked`) and queues a pull at
  the host's pacer, the steps of ``ReceiverDriven.receiver_packet``; a packet that would
  complete the flow, a trimmed one, or one to a connection done at both ends goes to Python
  (with its object, or for one the loop sent, ``TAG_MADE`` as well, to be given one), which
  does the same steps there. A pull reaching such a connection's sender is answered by the
  loop while it has nothing to resend (:func:`_pulled`: the next new sequence on the next EV,
  a data packet without a Python object, logged for the sender's timeout bookkeeping).
- ``CM[:n, :]``: Python's commands (``CMD_*``). Python takes a send's packet slot from the
  free stack itself (the core never allocates), so it can keep the packet's object by id.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clusterloom.sim._aot import njit
from clusterloom.units import BITS_PER_BYTE, PS_PER_S

# link columns
L_TO, L_RATE, L_PROP, L_SW, L_LIMIT = 0, 1, 2, 3, 4
L_QH, L_QT, L_QB, L_HH, L_HT, L_HB = 5, 6, 7, 8, 9, 10
L_MAXQ, L_FREE, L_PEND, L_PAUSED, L_ALIVE, L_EPOCH = 11, 12, 13, 14, 15, 16
L_WH, L_WT, L_WN, L_ING = 17, 18, 19, 20
#: per-port counters (``run.PortCounters``), counted while ``S[C_PORTS]`` is set: packets and
#: bytes that started on the link's wire and that arrived at its far end, drops at its output
#: port (buffer full, dead link), packets lost on its wire (random loss, a failure emptying
#: it), trims, ECN marks at its port, PFC pauses that stopped it; and its random loss per
#: packet arriving over it (a probability scaled to 2**53, :data:`LOSS_ONE`; 0: none)
L_NTX, L_BTX, L_NRX, L_BRX, L_NDROP, L_NLOST, L_NTRIM, L_NMARK, L_NPAUSE = range(21, 30)
L_LOSS = 30
L_COLS = 31
#: the counter columns, in ``run.PortCounters``' order
L_COUNTERS = (L_NTX, L_BTX, L_NRX, L_BRX, L_NDROP, L_NLOST, L_NTRIM, L_NMARK, L_NPAUSE)
LOSS_ONE = 1 << 53

# packet columns
P_SIZE, P_PRIO, P_ECN, P_TRIM, P_ROUTE, P_HOP, P_ING, P_NEXT, P_ARR, P_FREE = range(10)
#: one column for what only quiet packets, packets the core made and data packets for a
#: compiled receiver need, to keep a row at 88 bytes: TAG_QUIET, TAG_MADE, TAG_RX, the flow
#: (28 bits) and a made packet's count (32 bits) or a data packet's EV index and sequence
P_TAG = 10
P_COLS = 11
TAG_QUIET, TAG_MADE, TAG_RX, TAG_FLOW_SHIFT = 1 << 61, 1 << 62, 1 << 60, 32
TAG_FLOW_MASK, TAG_CUM_MASK = (1 << 28) - 1, (1 << 32) - 1
#: a data packet for a compiled receiver (TAG_RX): its EV index (8 bits) and sequence (24)
TAG_EVI_SHIFT, TAG_SEQ_MASK = 24, (1 << 24) - 1

# endpoint columns (R, one row per endpoint id): a receiver-driven connection's pull state,
# and a pull pacer's (the pacer is an endpoint of its own)
R_WANT, R_FIN, R_SDONE, R_PULLS, R_K, R_ROFF, R_QNEXT = 0, 1, 2, 3, 4, 5, 6
R_SRC, R_DST = 7, 8
R_ARMED, R_NEXTFREE, R_IVL, R_HEAD, R_TAIL = 9, 10, 11, 12, 13
#: a receiver-driven connection's receiver and ACK state in the loop (``_receive``, ``_acked``):
#: whether the loop handles its data and ACKs (R_CRX), its packets, where its flags start in
#: ``B`` (got, then acked, then outstanding, ``R_N`` bytes each), the cumulative sequence, the
#: payload placed, packets acknowledged, bytes in flight, when the sender saw every ACK (-1:
#: not yet), the full and the last packet's payload, its receiving host's pacer
R_CRX, R_N, R_BOFF, R_CUM, R_PLACED, R_NACKED, R_INFL = 14, 15, 16, 17, 18, 19, 20
R_SDPS, R_MSS, R_LAST, R_PACER = 21, 22, 23, 24
#: and its sender's answer to a pull (``_pulled``): the next new sequence, the last EV index
#: used, the pulls seen, pulls kept as credit, whether the loop may answer (R_FAST: nothing
#: to resend, no EV bad, not failed; set by Python)
R_NXT, R_RR, R_PSEEN, R_CREDIT, R_FAST = 25, 26, 27, 28, 29
#: a ``roce-ecmp`` connection's in-order receiver and ACK side in the loop (R_CRX = CRX_ROCE:
#: ``_roce_receive``, ``_roce_acked``): the first unacknowledged sequence, timeouts without
#: progress, packets received since the last ACK, whether a NAK was sent, ACK every so many
RC_UNA, RC_RETRIES, RC_UNACKED, RC_NAKSENT, RC_EVERY = 30, 31, 32, 33, 34
#: an ``mrc-spray`` connection's sender in the loop (``_mrc_sacked``; MR_ON set by Python,
#: which holds the same state while one of its handlers runs: ``MrcSpray._pull``, ``_push``):
#: its block of RR (``MB_*`` below) and of records (``MQ_*``, 4 integers each: sequence,
#: transmission, time, next; a free list from MR_QF), its retransmission queue (records from
#: MR_RH to MR_RT), EVs, acknowledged prefix, packets acknowledged, bytes in flight, next new
#: sequence, last EV used, window and its ceiling (float64 bits), the window's round (end,
#: ACKs, congested ACKs), whether its timeout timer is set, whether it failed, base RTT, the
#: delay bound of a congested ACK, the timeout, max_skip, ecn_threshold (float64 bits),
#: retransmissions
MR_ON, MR_A, MR_QB, MR_QF, MR_RH, MR_RT, MR_K, MR_SNDCUM = 35, 36, 37, 38, 39, 40, 41, 42
MR_NACKED, MR_INFL, MR_NXT, MR_RR, MR_CWND, MR_MAXCWND = 43, 44, 45, 46, 47, 48
MR_WEND, MR_WACKS, MR_WMARKS, MR_TIMER, MR_FAILED, MR_RTT = 49, 50, 51, 52, 53, 54
MR_DBOUND, MR_RTO, MR_MAXSKIP, MR_ECNT, MR_RETX = 55, 56, 57, 58, 59
#: a ``roce-ecmp`` connection's pacer in the loop (``_roce_pace``; without DCQCN, RP_ON set by
#: Python at start): the next sequence, whether it paces, when the port is free, whether it
#: failed, the highest sequence sent plus one (a send below it is a retransmission: go-back-N
#: sends in order from ``nxt``), retransmissions, the serialization time of a full packet and
#: of the last (at line rate: no DCQCN)
RP_ON, RP_NXT, RP_PACING, RP_NEXTFREE, RP_FAILED, RP_HW = 60, 61, 62, 63, 64, 65
RP_RETX, RP_SERF, RP_SERL = 66, 67, 68
R_COLS = 69
#: an mrc-spray sender's block of RR from MR_A, by k EVs and n packets: the index
#: ``ev_index`` gives each EV's value (an echo's EV), the forward route (-2: not computed
#: yet), penalty, level, bad, the head and tail record of its packets in flight; then per
#: packet its transmissions and when it was last sent
MB_MAP, MB_FWD, MB_PEN, MB_LEV, MB_BAD, MB_EVH, MB_EVT, MB_TXC = 0, 1, 2, 3, 4, 5, 6, 7
#: (the per-packet parts start at 7 k: MB_TXC k, then n further on)
NOT_HELD = -2
#: the timer token of the sender's timeout (``transports._RTO``)
TOKEN_RTO = 1
#: R_CRX: which transport's receiver the loop runs for the connection (0: none)
CRX_RD, CRX_ROCE, CRX_MRC = 1, 2, 3

# scalars
S_NOW, S_SEQ, S_HN, S_NFREE, S_EVENTS, S_RUN_N = 0, 1, 2, 3, 4, 5
S_DROPS, S_TRIMS, S_MARKS, S_PAUSES, S_RNG, S_TN = 6, 7, 8, 9, 10, 11
S_QSYNC, S_NOROUTE, S_DELIV = 12, 13, 14
S_MRC_SEQ = 15  # the sequence an mrc-spray pump stopped at (EV_MRC_PUMP)

# configuration, in S after the scalars
C_NHOSTS, C_HEADER, C_CTRL, C_KMIN, C_KMAX, C_ECN = 16, 17, 18, 19, 20, 21
C_TRIMMING, C_PFC, C_XOFF, C_XON, C_RNGKEY, C_TRACE = 22, 23, 24, 25, 26, 27
#: per-port counting on (``L_NTX``...), and the time of the next sample of the counters: the
#: loop returns ``ST_SAMPLE`` before running the first event at or after it (never when off)
C_PORTS, S_SAMPLE = 28, 29
S_COLS = 30
NEVER = 1 << 62

# event kinds (those below EV_WIRE are Python's)
EV_TIMER, EV_ACTION, EV_ARRIVE, EV_DELIVER = 0, 1, 2, 3
EV_WIRE, EV_TXDONE, EV_PAUSE, EV_RESUME = 4, 5, 6, 7
EV_PACE, EV_DELIVER_MADE = 8, 9  # a compiled pacer's turn; a packet the core made delivered
#: an ``mrc-spray`` SACK the loop made reached its sender: ``step`` returns its fields
#: ``(ST_PYTHON, EV_SACK, flow, evi << 24 | seq, now, cum, sack bits, ecn echo, 0)``
EV_SACK = 10
#: an ``mrc-spray`` sender in the loop stopped its pump for Python: ``(ST_PYTHON, EV_MRC_PUMP,
#: flow, EV index or -1, now, sequence, 0, 0, 0)``: send that sequence on that EV (its route
#: is not held yet) and pump on, or (-1: the loop's room ran short) pump from there
EV_MRC_PUMP = 11

# commands
CMD_SEND, CMD_PUSH, CMD_DOWN, CMD_UP = 0, 1, 2, 3
CMD_COLS = 8

# what step returns
ST_EMPTY, ST_LIMIT, ST_PYTHON, ST_STOP_CHECK, ST_GROW, ST_SYNC = 0, 1, 2, 3, 4, 5
ST_SAMPLE = 6

# trace record kinds
TR_DROP, TR_TRIM, TR_QUIET, TR_SENT = 0, 1, 2, 3

PS8 = BITS_PER_BYTE * PS_PER_S  # bits to picoseconds at 1 b/s
NIL = -1

#: compiled and cached (numba; the kernels Python calls built ahead of time, ``sim._aot``, so
#: a run loads them without numba); integer division by a rate never sees zero (rates are at
#: least 1 b/s), so numpy's error model spares the check
_jit = njit(cache=True, error_model="numpy")


@_jit
def push(H: Any, S: Any, time: int, kind: int, a: int, b: int) -> None:
    """Add an event; it takes the next sequence number. The heap is 4-ary (half the depth of a
    binary one, and the children of a node are adjacent rows)."""
    seq = S[S_SEQ] + 1
    S[S_SEQ] = seq
    i = S[S_HN]
    S[S_HN] = i + 1
    while i > 0:  # move parents down into the hole until the new event fits
        parent = (i - 1) >> 2
        pt = H[parent, 0]
        if pt < time or (pt == time and H[parent, 1] < seq):
            break
        for c in range(5):
            H[i, c] = H[parent, c]
        i = parent
    H[i, 0] = time
    H[i, 1] = seq
    H[i, 2] = kind
    H[i, 3] = a
    H[i, 4] = b


@_jit
def _pop(H: Any, S: Any) -> None:
    """Remove the first event (read it from ``H[0]`` before)."""
    n = S[S_HN] - 1
    S[S_HN] = n
    if n == 0:
        return
    time = H[n, 0]
    seq = H[n, 1]
    i = 0
    while True:  # move the smallest child up into the hole until the last event fits
        first = 4 * i + 1
        if first >= n:
            break
        child = first
        ct = H[first, 0]
        cs = H[first, 1]
        for k in range(first + 1, min(first + 4, n)):
            kt = H[k, 0]
            if kt < ct or (kt == ct and H[k, 1] < cs):
                child = k
                ct = kt
                cs = H[k, 1]
        if time < ct or (time == ct and seq < cs):
            break
        for c in range(5):
            H[i, c] = H[child, c]
        i = child
    for c in range(5):
        H[i, c] = H[n, c]


@_jit
def _mix(x: Any) -> Any:
    """splitmix64 of one uint64 (as :func:`clusterloom.sim.paths.splitmix64`)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@_jit
def _uniform(S: Any) -> float:
    """The next number in [0, 1) of the run's counter-based generator."""
    z = _mix(np.uint64(S[C_RNGKEY]) + np.uint64(S[S_RNG]))
    S[S_RNG] += 1
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@_jit
def _free(P: Any, S: Any, pid: int) -> None:
    P[S[S_NFREE], P_FREE] = pid
    S[S_NFREE] += 1


@_jit
def _trace(T: Any, S: Any, what: int, pid: int, dl: int) -> None:
    if S[C_TRACE]:
        i = S[S_TN]
        T[i, 0] = S[S_NOW]
        T[i, 1] = what
        T[i, 2] = pid
        T[i, 3] = dl
        S[S_TN] = i + 1


@_jit
def _release(L: Any, P: Any, H: Any, S: Any, pid: int) -> None:
    """PFC accounting of a packet that leaves its switch (sent on or dropped)."""
    ing = P[pid, P_ING]
    if ing >= 0:
        P[pid, P_ING] = NIL
        left = L[ing, L_ING] - P[pid, P_SIZE]
        L[ing, L_ING] = left
        if L[ing, L_PAUSED] and left <= S[C_XON]:
            push(H, S, S[S_NOW] + L[ing, L_PROP], EV_RESUME, ing, 0)


@_jit
def _transmit(L: Any, P: Any, H: Any, S: Any, dl: int) -> None:
    """Start sending the next packet of port ``dl`` if it has one it may send."""
    pid = L[dl, L_HH]
    if pid != NIL:
        L[dl, L_HH] = P[pid, P_NEXT]
        if P[pid, P_NEXT] == NIL:
            L[dl, L_HT] = NIL
        L[dl, L_HB] -= P[pid, P_SIZE]
    else:
        pid = L[dl, L_QH]
        if pid == NIL or L[dl, L_PAUSED]:
            return
        L[dl, L_QH] = P[pid, P_NEXT]
        if P[pid, P_NEXT] == NIL:
            L[dl, L_QT] = NIL
        L[dl, L_QB] -= P[pid, P_SIZE]
    if P[pid, P_ING] >= 0:
        _release(L, P, H, S, pid)
    if S[C_PORTS]:
        L[dl, L_NTX] += 1
        L[dl, L_BTX] += P[pid, P_SIZE]
    now = S[S_NOW]
    end = now + P[pid, P_SIZE] * PS8 // L[dl, L_RATE]
    L[dl, L_FREE] = end
    arrival = end + L[dl, L_PROP]
    P[pid, P_ARR] = arrival
    _append(L, P, dl, pid, L_WH, L_WT)
    L[dl, L_WN] += 1
    if L[dl, L_WN] == 1:
        push(H, S, arrival, EV_WIRE, dl, L[dl, L_EPOCH])
    if L[dl, L_HH] != NIL or (L[dl, L_QH] != NIL and not L[dl, L_PAUSED]):
        L[dl, L_PEND] = 1
        push(H, S, end, EV_TXDONE, dl, 0)


@_jit
def _append(L: Any, P: Any, dl: int, pid: int, head: int, tail: int) -> None:
    P[pid, P_NEXT] = NIL
    if L[dl, tail] == NIL:
        L[dl, head] = pid
    else:
        P[L[dl, tail], P_NEXT] = pid
    L[dl, tail] = pid


@_jit
def _enqueue(L: Any, P: Any, H: Any, S: Any, T: Any, dl: int, pid: int) -> None:
    """Queue packet ``pid`` on output port ``dl`` (or drop, mark, trim it)."""
    if not L[dl, L_ALIVE]:
        S[S_DROPS] += 1
        if S[C_PORTS]:
            L[dl, L_NDROP] += 1
        _release(L, P, H, S, pid)
        _free(P, S, pid)
        return
    if not P[pid, P_PRIO] and L[dl, L_SW]:
        qb = L[dl, L_QB]
        if qb + P[pid, P_SIZE] > L[dl, L_LIMIT] and not S[C_PFC]:
            if S[C_TRIMMING]:  # cut to the header, sent at high priority
                S[S_TRIMS] += 1
                if S[C_PORTS]:
                    L[dl, L_NTRIM] += 1
                P[pid, P_TRIM] = 1
                P[pid, P_PRIO] = 1
                P[pid, P_SIZE] = S[C_HEADER]
                _trace(T, S, TR_TRIM, pid, dl)
            else:
                S[S_DROPS] += 1
                if S[C_PORTS]:
                    L[dl, L_NDROP] += 1
                _trace(T, S, TR_DROP, pid, dl)
                _release(L, P, H, S, pid)
                _free(P, S, pid)
                return
        else:
            kmin = S[C_KMIN]
            if (
                S[C_ECN]
                and qb > kmin
                and not P[pid, P_ECN]
                and (qb >= S[C_KMAX] or _uniform(S) * (S[C_KMAX] - kmin) < qb - kmin)
            ):
                P[pid, P_ECN] = 1
                S[S_MARKS] += 1
                if S[C_PORTS]:
                    L[dl, L_NMARK] += 1
    size = P[pid, P_SIZE]
    if P[pid, P_PRIO]:
        hb = L[dl, L_HB] + size
        if hb > S[C_CTRL] and L[dl, L_SW]:
            S[S_DROPS] += 1
            if S[C_PORTS]:
                L[dl, L_NDROP] += 1
            _release(L, P, H, S, pid)
            _free(P, S, pid)
            return
        _append(L, P, dl, pid, L_HH, L_HT)
        L[dl, L_HB] = hb
    else:
        _append(L, P, dl, pid, L_QH, L_QT)
        qb = L[dl, L_QB] + size
        L[dl, L_QB] = qb
        if qb > L[dl, L_MAXQ]:
            L[dl, L_MAXQ] = qb
    if not L[dl, L_PEND]:
        if L[dl, L_FREE] <= S[S_NOW]:
            _transmit(L, P, H, S, dl)
        else:
            L[dl, L_PEND] = 1
            push(H, S, L[dl, L_FREE], EV_TXDONE, dl, 0)


@_jit
def _link_down(L: Any, P: Any, H: Any, S: Any, dl: int) -> None:
    """A hard failure of directed link ``dl``: it drops what it holds and what is on the wire."""
    if not L[dl, L_ALIVE]:
        return
    L[dl, L_ALIVE] = 0
    L[dl, L_EPOCH] += 1
    S[S_DROPS] += L[dl, L_WN]
    if S[C_PORTS]:
        L[dl, L_NLOST] += L[dl, L_WN]
    pid = L[dl, L_WH]
    while pid != NIL:
        nxt = P[pid, P_NEXT]
        _free(P, S, pid)
        pid = nxt
    L[dl, L_WH] = NIL
    L[dl, L_WT] = NIL
    L[dl, L_WN] = 0
    for head, tail in ((L_QH, L_QT), (L_HH, L_HT)):
        pid = L[dl, head]
        while pid != NIL:
            nxt = P[pid, P_NEXT]
            S[S_DROPS] += 1
            if S[C_PORTS]:
                L[dl, L_NDROP] += 1
            _release(L, P, H, S, pid)
            _free(P, S, pid)
            pid = nxt
        L[dl, head] = NIL
        L[dl, tail] = NIL
    L[dl, L_QB] = 0
    L[dl, L_HB] = 0


@_jit
def _apply(L: Any, P: Any, H: Any, S: Any, T: Any, RL: Any, CM: Any, n: int) -> None:
    """Apply Python's first ``n`` queued commands in order."""
    for i in range(n):
        op = CM[i, 0]
        if op == CMD_SEND:  # size, prio, ecn, trimmed, route offset, packet id, tag
            pid = CM[i, 6]
            P[pid, P_TAG] = CM[i, 7]
            P[pid, P_SIZE] = CM[i, 1]
            P[pid, P_PRIO] = CM[i, 2]
            P[pid, P_ECN] = CM[i, 3]
            P[pid, P_TRIM] = CM[i, 4]
            r = CM[i, 5]
            P[pid, P_ROUTE] = r
            P[pid, P_HOP] = 1
            P[pid, P_ING] = NIL
            _enqueue(L, P, H, S, T, RL[r], pid)
        elif op == CMD_PUSH:
            push(H, S, CM[i, 1], CM[i, 2], CM[i, 3], CM[i, 4])
        elif op == CMD_DOWN:
            _link_down(L, P, H, S, CM[i, 1])
        else:
            L[CM[i, 1], L_ALIVE] = 1
            L[CM[i, 1], L_RATE] = CM[i, 2]


@_jit
def step(
    L: Any,
    P: Any,
    H: Any,
    S: Any,
    T: Any,
    RL: Any,
    CM: Any,
    R: Any,
    RR: Any,
    B: Any,
    n_cm: int,
    limit: int,
    check_stop: bool,
    skip_check: bool,
) -> tuple[int, int, int, int, int, int, int, int, int]:
    """Apply the first ``n_cm`` commands of ``CM``, then run events up to ``limit`` until one
    needs Python. Returns ``(status, kind, a, b, now, size, prio, ecn, trimmed)``:
    ``ST_PYTHON`` with the event's kind and arguments (for a delivery, ``a`` is the packet id,
    ``b`` the link, and its header fields follow); ``ST_EMPTY``; ``ST_LIMIT`` (the next event
    is past ``limit``); ``ST_STOP_CHECK`` (the run's 4,096th event is due and ``check_stop``
    asks Python whether to go on; the event is not run); ``ST_GROW`` (the heap, the log or
    the packet pool needs room); ``ST_SYNC`` (a pacer's turn is due while the log holds a
    quiet delivery to a finished connection, which may end its pulls: Python takes the log
    first; the event is not run); ``ST_SAMPLE`` (the next event is at or after ``S[S_SAMPLE]``:
    Python samples the per-port counters and moves the time on; the event is not run, so a
    sample sees every event before its time and none after). ``EV_DELIVER_MADE``: a packet
    the core made (a pull, or a data packet it sent for a connection: ``TAG_RX`` in its tag),
    which has no Python object."""
    _apply(L, P, H, S, T, RL, CM, n_cm)
    n_hosts = S[C_NHOSTS]
    hcap = H.shape[0]
    tcap = T.shape[0]
    skip = skip_check
    while True:
        if S[S_HN] == 0:
            return ST_EMPTY, 0, 0, 0, S[S_NOW], 0, 0, 0, 0
        time = H[0, 0]
        if time > limit:
            return ST_LIMIT, 0, 0, 0, S[S_NOW], 0, 0, 0, 0
        if S[S_HN] + 8 > hcap or S[S_TN] + 4 > tcap or S[S_NFREE] < 1:
            return ST_GROW, 0, 0, 0, S[S_NOW], 0, 0, 0, 0
        if S[S_QSYNC] and H[0, 2] == EV_PACE:
            return ST_SYNC, 0, 0, 0, S[S_NOW], 0, 0, 0, 0
        if time >= S[S_SAMPLE]:  # the counters' sample is due (NEVER when not counting)
            return ST_SAMPLE, 0, 0, 0, S[S_NOW], 0, 0, 0, 0
        if check_stop and not skip and ((S[S_RUN_N] + 1) & 4095) == 0:
            return ST_STOP_CHECK, 0, 0, 0, S[S_NOW], 0, 0, 0, 0
        skip = False
        kind = H[0, 2]
        a = H[0, 3]
        b = H[0, 4]
        _pop(H, S)
        S[S_NOW] = time
        S[S_RUN_N] += 1
        S[S_EVENTS] += 1
        if kind == EV_WIRE:
            dl = a
            if b != L[dl, L_EPOCH]:  # the link failed since: its wire was emptied
                continue
            pid = L[dl, L_WH]
            nxt = P[pid, P_NEXT]
            L[dl, L_WH] = nxt
            L[dl, L_WN] -= 1
            if nxt == NIL:
                L[dl, L_WT] = NIL
            else:
                push(H, S, P[nxt, P_ARR], EV_WIRE, dl, b)
            if L[dl, L_LOSS] and _uniform(S) * LOSS_ONE < L[dl, L_LOSS]:  # lost on the wire
                S[S_DROPS] += 1
                if S[C_PORTS]:
                    L[dl, L_NLOST] += 1
                _trace(T, S, TR_DROP, pid, dl)
                _free(P, S, pid)
                continue
            if S[C_PORTS]:
                L[dl, L_NRX] += 1
                L[dl, L_BRX] += P[pid, P_SIZE]
            if L[dl, L_TO] < n_hosts:
                _free(P, S, pid)  # its row is read by Python before the next send reuses it
                tag = P[pid, P_TAG]
                if tag & TAG_RX:  # data for a receiver the loop may handle
                    c = (tag >> TAG_FLOW_SHIFT) & TAG_FLOW_MASK
                    crx = R[c, R_CRX]
                    if crx and not P[pid, P_TRIM]:
                        if crx == CRX_RD:
                            if _receive(L, P, H, S, T, RL, R, RR, B, c, tag, P[pid, P_SIZE]):
                                continue
                        elif crx == CRX_ROCE:
                            if _roce_receive(L, P, H, S, T, RL, R, RR, B, c, tag, P[pid, P_SIZE]):
                                continue
                        elif _mrc_receive(
                            L, P, H, S, T, RL, R, RR, B, c, tag, P[pid, P_SIZE], P[pid, P_ECN]
                        ):
                            continue
                elif tag & TAG_MADE and not tag & TAG_QUIET:  # a pull the loop may answer
                    c = (tag >> TAG_FLOW_SHIFT) & TAG_FLOW_MASK
                    if R[c, R_CRX] == CRX_MRC:  # a SACK the loop made: its sender's
                        v = -2 - P[pid, P_ING]
                        if R[c, MR_ON]:
                            i = _mrc_sacked(
                                L, P, H, S, T, RL, R, RR, B, c, tag & TAG_CUM_MASK,
                                v >> 1, P[pid, P_ECN], v & 1,
                            )  # fmt: skip
                            if i == -3:
                                continue
                            return (
                                ST_PYTHON,
                                EV_MRC_PUMP,
                                c,
                                i,
                                time,
                                S[S_MRC_SEQ],
                                0,
                                0,
                                0,
                            )
                        return (
                            ST_PYTHON,
                            EV_SACK,
                            c,
                            tag & TAG_CUM_MASK,
                            time,
                            v >> 1,
                            P[pid, P_ECN],
                            v & 1,
                            0,
                        )
                    if (
                        R[c, R_CRX]
                        and R[c, R_FAST]
                        and _pulled(L, P, H, S, T, RL, R, RR, B, c, tag)
                    ):
                        continue
                elif tag & TAG_QUIET:  # logged for Python, which hands it over before going on
                    c = (tag >> TAG_FLOW_SHIFT) & TAG_FLOW_MASK
                    if tag & TAG_MADE and R[c, R_CRX]:  # an ACK the loop handles at the sender
                        if R[c, R_CRX] == CRX_RD:
                            _acked(R, B, c, tag & TAG_CUM_MASK, time)
                        else:
                            _roce_acked(R, c, tag & TAG_CUM_MASK, time)
                        continue
                    if R[c, R_FIN]:  # the pulls may end
                        S[S_QSYNC] = 1
                    i = S[S_TN]
                    T[i, 0] = time
                    T[i, 1] = TR_QUIET
                    T[i, 2] = pid
                    T[i, 3] = tag  # the flow and sequence of a made ACK (no Python object)
                    S[S_TN] = i + 1
                    continue
                return (
                    ST_PYTHON,
                    EV_DELIVER_MADE if tag & TAG_MADE else EV_DELIVER,
                    pid,
                    dl,
                    time,
                    P[pid, P_SIZE],
                    P[pid, P_PRIO],
                    P[pid, P_ECN],
                    P[pid, P_TRIM],
                )
            hop = P[pid, P_HOP]
            out = RL[P[pid, P_ROUTE] + hop]
            P[pid, P_HOP] = hop + 1
            if S[C_PFC] and not P[pid, P_PRIO]:
                P[pid, P_ING] = dl
                held = L[dl, L_ING] + P[pid, P_SIZE]
                L[dl, L_ING] = held
                if held > S[C_XOFF] and not L[dl, L_PAUSED]:
                    push(H, S, time + L[dl, L_PROP], EV_PAUSE, dl, 0)
            _enqueue(L, P, H, S, T, out, pid)
        elif kind == EV_TXDONE:
            L[a, L_PEND] = 0
            _transmit(L, P, H, S, a)
        elif kind == EV_PAUSE:
            if L[a, L_ING] > S[C_XON] and not L[a, L_PAUSED]:
                L[a, L_PAUSED] = 1
                S[S_PAUSES] += 1
                if S[C_PORTS]:
                    L[a, L_NPAUSE] += 1
        elif kind == EV_RESUME:
            if L[a, L_PAUSED] and L[a, L_ING] <= S[C_XON]:
                L[a, L_PAUSED] = 0
                if not L[a, L_PEND] and L[a, L_QH] != NIL:
                    if L[a, L_FREE] <= time:
                        _transmit(L, P, H, S, a)
                    else:
                        L[a, L_PEND] = 1
                        push(H, S, L[a, L_FREE], EV_TXDONE, a, 0)
        elif kind == EV_PACE:
            _pace(L, P, H, S, T, RL, R, RR, a)
        elif kind == EV_TIMER and b == 0 and R[a, RP_ON] and S[S_NFREE] >= 2:
            _roce_pace(L, P, H, S, T, RL, R, RR, a)  # a roce-ecmp pacer's turn (token 0)
        else:
            return ST_PYTHON, kind, a, b, time, 0, 0, 0, 0


@_jit
def _pace(L: Any, P: Any, H: Any, S: Any, T: Any, RL: Any, R: Any, RR: Any, h: int) -> None:
    """Pacer ``h``'s turn (``receiver-driven``): the first queued connection that still wants
    pulls sends one, goes to the back if it wants more, and the pacer's next turn is one
    interval later while any wait. A connection whose both ends are done is dropped from the
    queue (``transports._Pacer.on_timer``, the same steps in Python)."""
    R[h, R_ARMED] = 0
    while R[h, R_HEAD] != NIL:
        c = R[h, R_HEAD]
        R[h, R_HEAD] = R[c, R_QNEXT]
        if R[h, R_HEAD] == NIL:
            R[h, R_TAIL] = NIL
        if R[c, R_WANT] <= 0 or (R[c, R_FIN] and R[c, R_SDONE]):
            R[c, R_WANT] = 0
            continue
        R[c, R_WANT] -= 1
        if R[c, R_WANT] > 0:
            _pace_append(R, h, c)
        _send_pull(L, P, H, S, T, RL, R, RR, c)
        R[h, R_NEXTFREE] = S[S_NOW] + R[h, R_IVL]
        if R[h, R_HEAD] != NIL:
            R[h, R_ARMED] = 1
            push(H, S, R[h, R_NEXTFREE], EV_PACE, h, 0)
        return


@_jit
def _pace_append(R: Any, h: int, c: int) -> None:
    """Connection ``c`` to the back of pacer ``h``'s queue."""
    R[c, R_QNEXT] = NIL
    if R[h, R_TAIL] == NIL:
        R[h, R_HEAD] = c
    else:
        R[R[h, R_TAIL], R_QNEXT] = c
    R[h, R_TAIL] = c


@_jit
def _send_pull(L: Any, P: Any, H: Any, S: Any, T: Any, RL: Any, R: Any, RR: Any, c: int) -> None:
    """Connection ``c``'s receiver sends its next pull (``ReceiverDriven.send_pull``): the
    pull count in ``cum``, on EV ``pulls % k``'s reverse ECMP path (``RR``; none: the pull is
    lost, as a send without a route)."""
    pulls = R[c, R_PULLS] + 1
    R[c, R_PULLS] = pulls
    r = RR[R[c, R_ROFF] + pulls % R[c, R_K]]
    if r < 0:
        S[S_NOROUTE] += 1
        return
    k = S[S_NFREE] - 1  # the loop keeps one slot free (ST_GROW)
    S[S_NFREE] = k
    pid = P[k, P_FREE]
    P[pid, P_SIZE] = S[C_HEADER]
    P[pid, P_PRIO] = 1
    P[pid, P_ECN] = 0
    P[pid, P_TRIM] = 0
    P[pid, P_ROUTE] = r
    P[pid, P_HOP] = 1
    P[pid, P_ING] = NIL
    P[pid, P_TAG] = TAG_MADE | (c << TAG_FLOW_SHIFT) | pulls
    _enqueue(L, P, H, S, T, RL[r], pid)


@_jit
def _pay(R: Any, c: int, seq: int) -> Any:
    """The payload of connection ``c``'s packet ``seq`` (one message: all full but the last)."""
    return R[c, R_LAST] if seq == R[c, R_N] - 1 else R[c, R_MSS]


@_jit
def _receive(
    L: Any,
    P: Any,
    H: Any,
    S: Any,
    T: Any,
    RL: Any,
    R: Any,
    RR: Any,
    B: Any,
    c: int,
    tag: int,
    size: int,
) -> bool:
    """Connection ``c``'s receiver takes a data packet (not trimmed) of the EV index and
    sequence in ``tag``, the steps of ``ReceiverDriven.receiver_packet``: place it, send its
    ACK on the EV's reverse path (a made quiet packet), queue a pull unless the receiver is
    done. False, with nothing changed, when Python must take it: the packet would complete
    the flow (its completion runs there), or both ends are done (the connection may be
    retired, its reverse paths no longer kept up to date)."""
    if R[c, R_FIN] and R[c, R_SDONE]:
        return False
    seq = tag & TAG_SEQ_MASK
    n = R[c, R_N]
    got = R[c, R_BOFF]
    if seq < n and not B[got + seq]:
        cum = R[c, R_CUM]
        if seq == cum:
            cum += 1
            while cum < n and B[got + cum]:
                cum += 1
            if cum >= n:
                return False
            R[c, R_CUM] = cum
        B[got + seq] = 1
        R[c, R_PLACED] += _pay(R, c, seq)
    S[S_DELIV] += size - S[C_HEADER]
    r = RR[R[c, R_ROFF] + ((tag >> TAG_EVI_SHIFT) & 255)]
    if r < 0:  # no reverse path: the ACK is lost, as a send without a route
        S[S_NOROUTE] += 1
    else:
        k = S[S_NFREE] - 1  # the delivery freed a slot
        S[S_NFREE] = k
        pid = P[k, P_FREE]
        P[pid, P_SIZE] = S[C_HEADER]
        P[pid, P_PRIO] = 1
        P[pid, P_ECN] = 0
        P[pid, P_TRIM] = 0
        P[pid, P_ROUTE] = r
        P[pid, P_HOP] = 1
        P[pid, P_ING] = NIL
        P[pid, P_TAG] = TAG_QUIET | TAG_MADE | (c << TAG_FLOW_SHIFT) | seq
        _enqueue(L, P, H, S, T, RL[r], pid)
    if not R[c, R_FIN]:
        _request(H, S, R, c)
    return True


@_jit
def _pulled(
    L: Any, P: Any, H: Any, S: Any, T: Any, RL: Any, R: Any, RR: Any, B: Any, c: int, tag: int
) -> bool:
    """Connection ``c``'s sender takes its receiver's pull number ``tag & TAG_CUM_MASK``
    (``ReceiverDriven._pulled`` and ``send_one`` when nothing waits to be resent and no EV is
    bad): for each pull not seen, the next new sequence on the next EV (its reverse-path
    partner in ``RR`` is the ACK's), or a credit when every sequence was sent. False, with
    nothing changed, when Python must answer: more than two new pulls (the room kept free
    for a step's sends)."""
    count = tag & TAG_CUM_MASK
    new = count - R[c, R_PSEEN]
    if new <= 0:
        return True
    if new > 2 or S[S_NFREE] < new:
        return False
    R[c, R_PSEEN] = count
    n = R[c, R_N]
    k = R[c, R_K]
    for _ in range(new):
        seq = R[c, R_NXT]
        if seq >= n:  # nothing to send: the pull is kept for a retransmission
            if R[c, R_CREDIT] < n - R[c, R_NACKED]:
                R[c, R_CREDIT] += 1
            continue
        i = R[c, R_RR] + 1
        if i >= k:
            i = 0
        R[c, R_RR] = i
        R[c, R_NXT] = seq + 1
        B[R[c, R_BOFF] + 2 * n + seq] = 1
        pay = _pay(R, c, seq)
        R[c, R_INFL] += pay
        j = S[S_TN]
        T[j, 0] = S[S_NOW]
        T[j, 1] = TR_SENT
        T[j, 2] = c
        T[j, 3] = (i << TAG_EVI_SHIFT) | seq
        S[S_TN] = j + 1
        r = RR[R[c, R_ROFF] + k + i]
        if r < 0:  # no path: lost, as a send without a route
            S[S_NOROUTE] += 1
            continue
        f = S[S_NFREE] - 1
        S[S_NFREE] = f
        pid = P[f, P_FREE]
        P[pid, P_SIZE] = S[C_HEADER] + pay
        P[pid, P_PRIO] = 0
        P[pid, P_ECN] = 0
        P[pid, P_TRIM] = 0
        P[pid, P_ROUTE] = r
        P[pid, P_HOP] = 1
        P[pid, P_ING] = NIL
        P[pid, P_TAG] = TAG_RX | TAG_MADE | (c << TAG_FLOW_SHIFT) | (i << TAG_EVI_SHIFT) | seq
        _enqueue(L, P, H, S, T, RL[r], pid)
    return True


@_jit
def _roce_receive(
    L: Any,
    P: Any,
    H: Any,
    S: Any,
    T: Any,
    RL: Any,
    R: Any,
    RR: Any,
    B: Any,
    c: int,
    tag: int,
    size: int,
) -> bool:
    """``roce-ecmp``'s in-order receiver (``RoceEcmp.receiver_packet`` without DCQCN) takes
    the next packet in order: placed, the NAK state cleared, an ACK of the new cumulative
    sequence every ``RC_EVERY`` packets (a made quiet packet on the reverse path ``RR``).
    False, with nothing changed, for Python: a packet out of order (a NAK or a duplicate's
    ACK) or the one that completes the flow."""
    seq = tag & TAG_SEQ_MASK
    cum = R[c, R_CUM]
    if seq != cum or cum + 1 >= R[c, R_N]:
        return False
    B[R[c, R_BOFF] + seq] = 1  # in order: nothing above it was placed
    R[c, R_CUM] = cum + 1
    R[c, R_PLACED] += _pay(R, c, seq)
    S[S_DELIV] += size - S[C_HEADER]
    R[c, RC_NAKSENT] = 0
    unacked = R[c, RC_UNACKED] + 1
    if unacked < R[c, RC_EVERY]:
        R[c, RC_UNACKED] = unacked
        return True
    R[c, RC_UNACKED] = 0
    r = RR[R[c, R_ROFF]]
    if r < 0:  # no reverse path: the ACK is lost, as a send without a route
        S[S_NOROUTE] += 1
        return True
    k = S[S_NFREE] - 1  # the delivery freed a slot
    S[S_NFREE] = k
    pid = P[k, P_FREE]
    P[pid, P_SIZE] = S[C_HEADER]
    P[pid, P_PRIO] = 1
    P[pid, P_ECN] = 0
    P[pid, P_TRIM] = 0
    P[pid, P_ROUTE] = r
    P[pid, P_HOP] = 1
    P[pid, P_ING] = NIL
    P[pid, P_TAG] = TAG_QUIET | TAG_MADE | (c << TAG_FLOW_SHIFT) | (cum + 1)
    _enqueue(L, P, H, S, T, RL[r], pid)
    return True


@_jit
def _mrc_receive(
    L: Any,
    P: Any,
    H: Any,
    S: Any,
    T: Any,
    RL: Any,
    R: Any,
    RR: Any,
    B: Any,
    c: int,
    tag: int,
    size: int,
    ecn: int,
) -> bool:
    """``mrc-spray``'s receiver (``MrcSpray.receiver_packet`` for a data packet not trimmed)
    takes the packet of the EV index and sequence in ``tag``: placed out of order, answered
    with a SACK on the EV's reverse source route (``RR``): the sequence and EV index in the
    tag, the cumulative sequence and the ECN echo in ``P_ING`` (``-2 - (2 cum + ecn)``, below
    zero as a control packet's ingress always is) and the 64 bits of packets received above
    the cumulative sequence in ``P_ECN`` (a control packet is never marked). A made packet
    without ``TAG_QUIET`` or ``TAG_RX``; at the sender the loop returns its fields
    (``EV_SACK``). False, with nothing changed, for Python: the packet that completes the flow."""
    seq = tag & TAG_SEQ_MASK
    n = R[c, R_N]
    got = R[c, R_BOFF]
    cum = R[c, R_CUM]
    if seq < n and not B[got + seq]:
        if seq == cum:
            cum += 1
            while cum < n and B[got + cum]:
                cum += 1
            if cum >= n:
                return False
            R[c, R_CUM] = cum
        B[got + seq] = 1
        R[c, R_PLACED] += _pay(R, c, seq)
    S[S_DELIV] += size - S[C_HEADER]
    sack = 0
    base = got + cum + 1
    for j in range(min(64, n - cum - 1)):
        if B[base + j]:
            sack |= 1 << j
    r = RR[R[c, R_ROFF] + ((tag >> TAG_EVI_SHIFT) & 255)]
    if r < 0:  # no reverse path: the SACK is lost, as a send without a route
        S[S_NOROUTE] += 1
        return True
    k = S[S_NFREE] - 1  # the delivery freed a slot
    S[S_NFREE] = k
    pid = P[k, P_FREE]
    P[pid, P_SIZE] = S[C_HEADER]
    P[pid, P_PRIO] = 1
    P[pid, P_ECN] = sack
    P[pid, P_TRIM] = 0
    P[pid, P_ROUTE] = r
    P[pid, P_HOP] = 1
    P[pid, P_ING] = -2 - (2 * cum + (1 if ecn else 0))
    P[pid, P_TAG] = TAG_MADE | (c << TAG_FLOW_SHIFT) | (tag & TAG_CUM_MASK)
    _enqueue(L, P, H, S, T, RL[r], pid)
    return True


@_jit
def _mrc_ack(R: Any, B: Any, c: int, s: int, now: int) -> None:
    """``_Sprayer._ack`` of packet ``s`` (acknowledged once, out of flight)."""
    n = R[c, R_N]
    a = R[c, R_BOFF] + n + s
    if B[a]:
        return
    B[a] = 1
    R[c, MR_NACKED] += 1
    if B[a + n]:
        B[a + n] = 0
        R[c, MR_INFL] -= _pay(R, c, s)
    if R[c, MR_NACKED] == n and R[c, R_SDPS] < 0:
        R[c, R_SDPS] = now


@_jit
def _mrc_record(RR: Any, R: Any, c: int, seq: int, tx: int, time: int) -> Any:
    """A record from the connection's free list (the caller made sure there is one)."""
    q = R[c, MR_QF]
    at = R[c, MR_QB] + 4 * q
    R[c, MR_QF] = RR[at + 3]
    RR[at] = seq
    RR[at + 1] = tx
    RR[at + 2] = time
    RR[at + 3] = NIL
    return q


@_jit
def _mrc_lost(RR: Any, R: Any, B: Any, c: int, s: int) -> None:
    """``_Sprayer._lost``: out of flight, queued for retransmission unless acknowledged."""
    n = R[c, R_N]
    o = R[c, R_BOFF] + 2 * n + s
    if B[o]:
        B[o] = 0
        R[c, MR_INFL] -= _pay(R, c, s)
    if not B[o - n]:
        q = _mrc_record(RR, R, c, s, 0, 0)
        t = R[c, MR_RT]
        if t == NIL:
            R[c, MR_RH] = q
        else:
            RR[R[c, MR_QB] + 4 * t + 3] = q
        R[c, MR_RT] = q


@_jit
def _mrc_sacked(
    L: Any,
    P: Any,
    H: Any,
    S: Any,
    T: Any,
    RL: Any,
    R: Any,
    RR: Any,
    B: Any,
    c: int,
    count: int,
    cum: int,
    bits: int,
    ecn: int,
) -> int:
    """``MrcSpray._sacked`` (with ``_window`` and ``pump``) of a SACK the loop made, over the
    sender's state in the loop: the ACK of the sequence and EV index in ``count``. Returns
    -3 when done, else the pump stopped for Python (``EV_MRC_PUMP``: the EV index, or -1,
    and the sequence in ``S[S_MRC_SEQ]``)."""
    F = R.view(np.float64)
    now = S[S_NOW]
    seq = count & TAG_SEQ_MASK
    k = R[c, MR_K]
    a = R[c, MR_A]
    i = RR[a + MB_MAP * k + (count >> TAG_EVI_SHIFT)]
    for s in range(R[c, MR_SNDCUM], cum):
        _mrc_ack(R, B, c, s, now)
    if cum > R[c, MR_SNDCUM]:
        R[c, MR_SNDCUM] = cum
    _mrc_ack(R, B, c, seq, now)
    n = R[c, R_N]
    acked = R[c, R_BOFF] + n
    txc = a + MB_TXC * k
    qb = R[c, MR_QB]
    if i >= 0:
        h = RR[a + MB_EVH * k + i]
        while h != NIL:  # the EV's packets in flight sent before this one
            at = qb + 4 * h
            s = RR[at]
            t = RR[at + 1]
            nxt = RR[at + 3]
            RR[at + 3] = R[c, MR_QF]  # the record back to the free list
            R[c, MR_QF] = h
            h = nxt
            if s == seq:
                break
            if (
                not B[acked + s]
                and RR[txc + s] == t
                and not (s > cum and s - cum - 1 < 64 and (bits >> (s - cum - 1)) & 1)
            ):
                _mrc_lost(RR, R, B, c, s)
        RR[a + MB_EVH * k + i] = h
        if h == NIL:
            RR[a + MB_EVT * k + i] = NIL
        if ecn:  # _penalise
            lev = min(R[c, MR_MAXSKIP], 2 * RR[a + MB_LEV * k + i] + 1)
            RR[a + MB_LEV * k + i] = lev
            RR[a + MB_PEN * k + i] = lev
        elif RR[a + MB_LEV * k + i]:
            RR[a + MB_LEV * k + i] >>= 1
    # _window
    R[c, MR_WACKS] += 1
    if ecn and now - RR[txc + n + seq] > R[c, MR_DBOUND]:
        R[c, MR_WMARKS] += 1
    else:
        mss = R[c, R_MSS]
        F[c, MR_CWND] = min(F[c, MR_MAXCWND], F[c, MR_CWND] + mss * mss / F[c, MR_CWND])
    if now >= R[c, MR_WEND]:
        frac = R[c, MR_WMARKS] / max(R[c, MR_WACKS], 1)
        if frac > F[c, MR_ECNT]:
            F[c, MR_CWND] = max(float(R[c, R_MSS]), F[c, MR_CWND] * (1 - frac / 2))
        R[c, MR_WEND] = now + R[c, MR_RTT]
        R[c, MR_WACKS] = 0
        R[c, MR_WMARKS] = 0
    return _mrc_pump(L, P, H, S, T, RL, R, RR, B, c, now)


@_jit
def _mrc_pump(
    L: Any, P: Any, H: Any, S: Any, T: Any, RL: Any, R: Any, RR: Any, B: Any, c: int, now: int
) -> int:
    """``MrcSpray.pump``: send while the window has room (retransmissions first), each on the
    next good EV round-robin skipping penalised ones (``_pick``); then the timeout timer if
    it is not set. Stops for Python (returns the EV index or -1, the sequence in
    ``S[S_MRC_SEQ]``) before a send the loop cannot make: its EV's route not held yet, or
    no room left (a record, two packet slots, the heap)."""
    F = R.view(np.float64)
    n = R[c, R_N]
    k = R[c, MR_K]
    a = R[c, MR_A]
    qb = R[c, MR_QB]
    boff = R[c, R_BOFF]
    hcap = H.shape[0]
    while not R[c, MR_FAILED]:
        # _next_seq: retransmissions first (those acknowledged or in flight are dropped)
        seq = -1
        h = R[c, MR_RH]
        while h != NIL:
            s = RR[qb + 4 * h]
            if B[boff + n + s] or B[boff + 2 * n + s]:
                nxt = RR[qb + 4 * h + 3]
                RR[qb + 4 * h + 3] = R[c, MR_QF]
                R[c, MR_QF] = h
                h = nxt
                R[c, MR_RH] = h
                if h == NIL:
                    R[c, MR_RT] = NIL
                continue
            seq = s
            break
        if seq < 0 and R[c, MR_NXT] < n:
            seq = R[c, MR_NXT]
        if seq < 0 or R[c, MR_INFL] + _pay(R, c, seq) > F[c, MR_CWND]:
            break
        if R[c, MR_QF] == NIL or S[S_NFREE] < 2 or S[S_HN] + 8 > hcap:
            S[S_MRC_SEQ] = seq
            return -1
        # _pick
        best = -1
        best_pen = 1 << 30
        i = R[c, MR_RR]
        pen = a + MB_PEN * k
        bad = a + MB_BAD * k
        found = -1
        for _ in range(k):
            i = i + 1 if i + 1 < k else 0
            if RR[bad + i]:
                continue
            if RR[pen + i] == 0:
                found = i
                break
            RR[pen + i] -= 1
            if RR[pen + i] < best_pen:
                best = i
                best_pen = RR[pen + i]
        if found < 0:
            found = best
        if found < 0:
            break
        R[c, MR_RR] = found
        i = found
        fwd = RR[a + MB_FWD * k + i]
        if fwd == NOT_HELD:
            S[S_MRC_SEQ] = seq
            return i
        # _take
        if R[c, MR_RH] != NIL and RR[qb + 4 * R[c, MR_RH]] == seq:
            h = R[c, MR_RH]
            nxt = RR[qb + 4 * h + 3]
            RR[qb + 4 * h + 3] = R[c, MR_QF]
            R[c, MR_QF] = h
            R[c, MR_RH] = nxt
            if nxt == NIL:
                R[c, MR_RT] = NIL
        else:
            R[c, MR_NXT] += 1
        # send_on: data (a transmission counted), its time, its record on the EV
        txc = a + MB_TXC * k + seq
        tx = RR[txc] + 1
        RR[txc] = tx
        if tx > 1:
            R[c, MR_RETX] += 1
        RR[txc + n] = now
        q = _mrc_record(RR, R, c, seq, tx, now)
        t = RR[a + MB_EVT * k + i]
        if t == NIL:
            RR[a + MB_EVH * k + i] = q
        else:
            RR[qb + 4 * t + 3] = q
        RR[a + MB_EVT * k + i] = q
        B[boff + 2 * n + seq] = 1
        pay = _pay(R, c, seq)
        R[c, MR_INFL] += pay
        if fwd < 0:  # no route: lost, as a send without one
            S[S_NOROUTE] += 1
            continue
        f = S[S_NFREE] - 1
        S[S_NFREE] = f
        pid = P[f, P_FREE]
        P[pid, P_SIZE] = S[C_HEADER] + pay
        P[pid, P_PRIO] = 0
        P[pid, P_ECN] = 0
        P[pid, P_TRIM] = 0
        P[pid, P_ROUTE] = fwd
        P[pid, P_HOP] = 1
        P[pid, P_ING] = NIL
        P[pid, P_TAG] = TAG_RX | TAG_MADE | (c << TAG_FLOW_SHIFT) | (i << TAG_EVI_SHIFT) | seq
        _enqueue(L, P, H, S, T, RL[fwd], pid)
    if not R[c, MR_TIMER] and R[c, MR_NACKED] < n and not R[c, MR_FAILED]:
        R[c, MR_TIMER] = 1
        push(H, S, now + R[c, MR_RTO] // 2, EV_TIMER, c, TOKEN_RTO)
    return -3


@_jit
def mrc_export(R: Any, RR: Any, c: int) -> Any:
    """An mrc-spray sender's records for Python (``MrcSpray._pull``): rows (EV index,
    sequence, transmission, time) of each EV's packets in flight in order, then (-1,
    sequence, 0, 0) of its retransmission queue."""
    k = R[c, MR_K]
    a = R[c, MR_A]
    qb = R[c, MR_QB]
    m = 0
    for i in range(k):
        h = RR[a + MB_EVH * k + i]
        while h != NIL:
            m += 1
            h = RR[qb + 4 * h + 3]
    h = R[c, MR_RH]
    while h != NIL:
        m += 1
        h = RR[qb + 4 * h + 3]
    out = np.empty((m, 4), dtype=np.int64)
    j = 0
    for i in range(k):
        h = RR[a + MB_EVH * k + i]
        while h != NIL:
            out[j, 0] = i
            out[j, 1] = RR[qb + 4 * h]
            out[j, 2] = RR[qb + 4 * h + 1]
            out[j, 3] = RR[qb + 4 * h + 2]
            j += 1
            h = RR[qb + 4 * h + 3]
    h = R[c, MR_RH]
    while h != NIL:
        out[j, 0] = -1
        out[j, 1] = RR[qb + 4 * h]
        out[j, 2] = 0
        out[j, 3] = 0
        j += 1
        h = RR[qb + 4 * h + 3]
    return out


@_jit
def mrc_import(R: Any, RR: Any, c: int, rows: Any, cap: int) -> None:
    """The records back from Python (``MrcSpray._push``), rows as :func:`mrc_export` gives
    them, in a block of ``cap`` records at MR_QB; the rest is the free list."""
    k = R[c, MR_K]
    a = R[c, MR_A]
    qb = R[c, MR_QB]
    for i in range(k):
        RR[a + MB_EVH * k + i] = NIL
        RR[a + MB_EVT * k + i] = NIL
    R[c, MR_RH] = NIL
    R[c, MR_RT] = NIL
    m = rows.shape[0]
    for j in range(m):
        at = qb + 4 * j
        RR[at] = rows[j, 1]
        RR[at + 1] = rows[j, 2]
        RR[at + 2] = rows[j, 3]
        RR[at + 3] = NIL
        i = rows[j, 0]
        if i >= 0:
            t = RR[a + MB_EVT * k + i]
            if t == NIL:
                RR[a + MB_EVH * k + i] = j
            else:
                RR[qb + 4 * t + 3] = j
            RR[a + MB_EVT * k + i] = j
        else:
            t = R[c, MR_RT]
            if t == NIL:
                R[c, MR_RH] = j
            else:
                RR[qb + 4 * t + 3] = j
            R[c, MR_RT] = j
    for j in range(m, cap):
        RR[qb + 4 * j + 3] = j + 1 if j + 1 < cap else NIL
    R[c, MR_QF] = m if m < cap else NIL


@_jit
def _roce_pace(L: Any, P: Any, H: Any, S: Any, T: Any, RL: Any, R: Any, RR: Any, c: int) -> None:
    """``roce-ecmp``'s pacer turn (``RoceEcmp.on_timer``'s ``_PACE`` without DCQCN): the next
    sequence on the queue pair's ECMP path (``RR``, the entry after the ACKs', kept up to
    date with the routing view), a data packet without an object tagged for the loop's
    receiver, the next turn one serialization time later; none when failed, every sequence
    sent or every packet acknowledged (pacing stops)."""
    n = R[c, R_N]
    if R[c, RP_FAILED] or R[c, RP_NXT] >= n or R[c, RC_UNA] >= n:
        R[c, RP_PACING] = 0
        return
    seq = R[c, RP_NXT]
    R[c, RP_NXT] = seq + 1
    if seq < R[c, RP_HW]:
        R[c, RP_RETX] += 1
    else:
        R[c, RP_HW] = seq + 1
    pay = _pay(R, c, seq)
    r = RR[R[c, R_ROFF] + 1]
    if r < 0:  # no path: lost, as a send without a route
        S[S_NOROUTE] += 1
    else:
        f = S[S_NFREE] - 1
        S[S_NFREE] = f
        pid = P[f, P_FREE]
        P[pid, P_SIZE] = S[C_HEADER] + pay
        P[pid, P_PRIO] = 0
        P[pid, P_ECN] = 0
        P[pid, P_TRIM] = 0
        P[pid, P_ROUTE] = r
        P[pid, P_HOP] = 1
        P[pid, P_ING] = NIL
        P[pid, P_TAG] = TAG_RX | TAG_MADE | (c << TAG_FLOW_SHIFT) | seq
        _enqueue(L, P, H, S, T, RL[r], pid)
    nf = S[S_NOW] + (R[c, RP_SERL] if seq == n - 1 else R[c, RP_SERF])
    R[c, RP_NEXTFREE] = nf
    push(H, S, nf, EV_TIMER, c, 0)


@_jit
def _roce_acked(R: Any, c: int, cum: int, now: int) -> None:
    """A ``roce-ecmp`` ACK of cumulative sequence ``cum`` reached the sender (the ACK branch
    of ``RoceEcmp.sender_packet``)."""
    if cum > R[c, RC_UNA]:
        R[c, RC_UNA] = cum
        R[c, RC_RETRIES] = 0
        if cum >= R[c, R_N] and R[c, R_SDPS] < 0:
            R[c, R_SDPS] = now


@_jit
def _request(H: Any, S: Any, R: Any, c: int) -> None:
    """Connection ``c`` wants one more pull from its pacer (``transports._Pacer.request``):
    to the back of the queue if it waited for none, the pacer's turn armed if it was not."""
    h = R[c, R_PACER]
    want = R[c, R_WANT]
    if want == 0:
        _pace_append(R, h, c)
    R[c, R_WANT] = want + 1
    if not R[h, R_ARMED]:
        R[h, R_ARMED] = 1
        push(H, S, max(S[S_NOW], R[h, R_NEXTFREE]), EV_PACE, h, 0)


@_jit
def _acked(R: Any, B: Any, c: int, seq: int, now: int) -> None:
    """The ACK of connection ``c``'s packet ``seq`` reached its sender
    (``ReceiverDriven._ack``): acknowledged once, out of flight, the sender done at the last."""
    n = R[c, R_N]
    a = R[c, R_BOFF] + n + seq
    if B[a]:
        return
    B[a] = 1
    R[c, R_NACKED] += 1
    if B[a + n]:
        B[a + n] = 0
        R[c, R_INFL] -= _pay(R, c, seq)
    if R[c, R_NACKED] == n and R[c, R_SDPS] < 0:
        R[c, R_SDPS] = now
        R[c, R_SDONE] = 1


def new_links(n: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    out = np.zeros((n, L_COLS), dtype=np.int64)
    for col in (L_QH, L_QT, L_HH, L_HT, L_WH, L_WT):
        out[:, col] = NIL
    out[:, L_ALIVE] = 1
    return out
