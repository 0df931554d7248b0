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
from numba import njit

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
R_COLS = 35
#: R_CRX: which transport's receiver the loop runs for the connection (0: none)
CRX_RD, CRX_ROCE = 1, 2

# scalars
S_NOW, S_SEQ, S_HN, S_NFREE, S_EVENTS, S_RUN_N = 0, 1, 2, 3, 4, 5
S_DROPS, S_TRIMS, S_MARKS, S_PAUSES, S_RNG, S_TN = 6, 7, 8, 9, 10, 11
S_QSYNC, S_NOROUTE, S_DELIV = 12, 13, 14

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

#: compiled and cached; integer division by a rate never sees zero (rates are at least 1 b/s),
#: so numpy's error model spares the check
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
                        elif _roce_receive(L, P, H, S, T, RL, R, RR, B, c, tag, P[pid, P_SIZE]):
                            continue
                elif tag & TAG_MADE and not tag & TAG_QUIET:  # a pull the loop may answer
                    c = (tag >> TAG_FLOW_SHIFT) & TAG_FLOW_MASK
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
