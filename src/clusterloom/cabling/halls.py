"""Cable routes by hall, mapped over an executor (``clusterloom.exec``).

A hall's trays (its row, cross-aisle and spine segments) meet the rest of the campus only at
its door, so a route between two points of one hall never leaves it (it would pass the door
twice), and the cables of one hall load only that hall's trays. :func:`route_by_hall` splits
the pairs to route into **parts**: one per hall (both ends in the hall: trunks between its
frames, a frame's trunk to its HDF), then the pairs between halls (HDF to HDF: backbones),
routed on the segments between halls (``hall``, ``riser``, ``campus``). Each part is routed,
and spread off full trays (``route.spread``), on its own sub-graph, so the parts do not depend
on each other: with an executor and two or more halls to route, each hall is one task; the
part between halls is routed after them, here. A pair that fits no part (a routed assembly
from one hall to another) makes the whole set one part on the whole graph.

The result is the same wherever the parts run, byte for byte: a part is routed by the same
code from the same inputs, and its routes come back as an Arrow table (a length and the
route's segments per pair, ``moved`` in its metadata) that holds exactly the arrays a serial
run computes. A task's inputs are the part and the path and SHA-256 of one file with what every
part shares (the tray graph and the pairs: ``exec.write_shared``, once per call, in a
temporary directory), so the workers must see that directory (a local pool or a Ray on this
machine). A part whose task fails is routed again here.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling.pathways import Pathways
from clusterloom.cabling.route import route_pairs, spread
from clusterloom.exec import Task, read_shared, write_shared

if TYPE_CHECKING:
    from clusterloom.exec import Executor

__all__ = ["BETWEEN_HALLS", "WHOLE", "hall_parts", "route_by_hall", "route_task"]

#: the part of the pairs between halls (HDF to HDF), routed on the segments between halls
BETWEEN_HALLS = -1
#: every pair on the whole graph (a pair fits no hall and is not between two doors)
WHOLE = -2

Routed = tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int32], int]


@dataclass(frozen=True, eq=False)
class _Job:
    """What every part of one :func:`route_by_hall` call shares; ``area`` None: shortest
    routes only (no spreading)."""

    pw: Pathways
    src: NDArray[np.int64]
    dst: NDArray[np.int64]
    area: NDArray[np.float64] | None
    base: NDArray[np.float64] | None
    max_length: NDArray[np.float64] | None
    slack: NDArray[np.float64] | None
    parts: tuple[tuple[int, NDArray[np.int64]], ...]


def hall_parts(
    pw: Pathways, src: NDArray[np.int64], dst: NDArray[np.int64]
) -> tuple[tuple[int, NDArray[np.int64]], ...]:
    """The parts of the pairs ``src[i] -> dst[i]`` (module docstring): ``(hall, pair ids)``
    in hall order, then ``(BETWEEN_HALLS, pair ids)``; or ``((WHOLE, every pair),)``."""
    in_hall = np.flatnonzero(pw.seg_hall >= 0)
    node_hall = np.full(pw.n_nodes, -1, dtype=np.int64)
    node_hall[pw.seg_a[in_hall]] = pw.seg_hall[in_hall]
    node_hall[pw.seg_b[in_hall]] = pw.seg_hall[in_hall]
    between = pw.seg_hall < 0
    at_door = np.zeros(pw.n_nodes, dtype=bool)
    at_door[pw.seg_a[between]] = True
    at_door[pw.seg_b[between]] = True
    h_src, h_dst = node_hall[src], node_hall[dst]
    hall = np.where((h_src == h_dst) & (h_src >= 0), h_src, BETWEEN_HALLS)
    out = hall == BETWEEN_HALLS
    if not (at_door[src[out]].all() and at_door[dst[out]].all()):
        return ((WHOLE, np.arange(src.shape[0], dtype=np.int64)),)
    parts = [(int(h), np.flatnonzero(hall == h)) for h in np.unique(hall[hall >= 0]).tolist()]
    if out.any():
        parts.append((BETWEEN_HALLS, np.flatnonzero(out)))
    return tuple(parts)


def _local(ids: NDArray[np.integer], nodes: NDArray[np.int64]) -> NDArray[np.int32]:
    """Global node ids as ids in ``nodes`` (sorted), -1 for those not in it."""
    at = np.minimum(np.searchsorted(nodes, ids), max(nodes.shape[0] - 1, 0))
    found = nodes[at] == ids if nodes.shape[0] else np.zeros(ids.shape, dtype=bool)
    return np.where(found, at, -1).astype(np.int32)


def _sub_graph(pw: Pathways, part: int) -> tuple[Pathways, NDArray[np.int64], NDArray[np.int64]]:
    """The tray graph of one part (for routing: its nodes and segments renumbered in their
    order; row ends, doors and entrances outside it at -1), its nodes and its segments."""
    if part == WHOLE:
        return pw, np.arange(pw.n_nodes, dtype=np.int64), np.arange(pw.n_segments, dtype=np.int64)
    segs = np.flatnonzero(pw.seg_hall == part).astype(np.int64)  # BETWEEN_HALLS: seg_hall -1
    nodes = np.unique(np.concatenate([pw.seg_a[segs], pw.seg_b[segs]])).astype(np.int64)
    sub = dataclasses.replace(
        pw,
        n_positions=int((nodes < pw.n_positions).sum()),
        node_names=tuple(pw.node_names[i] for i in nodes.tolist()),
        node_xy=pw.node_xy[nodes],
        row_head=_local(pw.row_head, nodes),
        row_tail=_local(pw.row_tail, nodes),
        hall_door=_local(pw.hall_door, nodes),
        building_entrance=_local(pw.building_entrance, nodes),
        seg_a=_local(pw.seg_a[segs], nodes),
        seg_b=_local(pw.seg_b[segs], nodes),
        seg_length_m=pw.seg_length_m[segs],
        seg_kind=pw.seg_kind[segs],
        seg_area_mm2=pw.seg_area_mm2[segs],
        seg_capacity_mm2=pw.seg_capacity_mm2[segs],
        seg_hall=pw.seg_hall[segs],
        seg_building=pw.seg_building[segs],
    )
    return sub, nodes, segs


def _cut(a: NDArray[Any] | None, idx: NDArray[np.int64]) -> NDArray[Any] | None:
    return None if a is None else a[idx]


def route_part(job: _Job, k: int) -> Routed:
    """Part ``k`` of ``job`` routed (and spread when it carries areas) on its own sub-graph:
    each of its pairs' length, the routes' (pair in the part, segment) incidence grouped by
    pair in walk order, and the pairs moved off their shortest route."""
    part, idx = job.parts[k]
    sub, nodes, segs = _sub_graph(job.pw, part)
    src, dst = _local(job.src[idx], nodes), _local(job.dst[idx], nodes)
    if job.area is None or job.base is None:
        length, pair, seg = route_pairs(sub, src, dst)
        moved = 0
    else:
        length, pair, seg, moved = spread(
            sub,
            src,
            dst,
            job.area[idx],
            job.base[segs],
            _cut(job.max_length, idx),
            _cut(job.slack, idx),
        )
    order = np.argsort(pair, kind="stable")
    return length, pair[order], segs[seg[order]].astype(np.int32), moved


def _to_table(routed: Routed) -> Any:
    import pyarrow as pa

    length, pair, seg, moved = routed
    offsets = np.concatenate([[0], np.cumsum(np.bincount(pair, minlength=length.shape[0]))])
    routes = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(seg, pa.int32()))
    table = pa.table({"length": pa.array(length, pa.float64()), "route": routes})
    return table.replace_schema_metadata({"moved": json.dumps(moved)})


def _from_table(table: Any) -> Routed:
    routes = table.column("route").combine_chunks()
    counts = np.diff(routes.offsets.to_numpy())
    length = table.column("length").to_numpy().astype(np.float64)
    pair = np.repeat(np.arange(length.shape[0], dtype=np.int64), counts)
    seg = routes.flatten().to_numpy().astype(np.int32)
    return length, pair, seg, int(json.loads(table.schema.metadata[b"moved"]))


def route_task(inputs: dict[str, Any]) -> Any:
    """One hall's routes (the task): ``route_part`` of the shared job, as an Arrow table."""
    return _to_table(route_part(read_shared(inputs), int(inputs["part"])))


def route_by_hall(
    pw: Pathways,
    src: NDArray[np.integer],
    dst: NDArray[np.integer],
    area: NDArray[np.float64] | None = None,
    base: NDArray[np.float64] | None = None,
    *,
    max_length: NDArray[np.float64] | None = None,
    slack: NDArray[np.float64] | None = None,
    executor: Executor | None = None,
) -> Routed:
    """Route ``src[i] -> dst[i]`` part by part (module docstring): shortest routes, or with
    ``area`` and ``base`` spread off full trays as ``route.spread`` does (``max_length``,
    ``slack`` as there). Returns each pair's length, the incidence (pair ids, segment ids)
    grouped by pair with each route's hops in walk order, and the pairs moved."""
    s = np.asarray(src, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64)
    job = _Job(pw, s, d, area, base, max_length, slack, hall_parts(pw, s, d))
    done: dict[int, Routed] = {}
    halls = [k for k, (part, _) in enumerate(job.parts) if part >= 0]
    if executor is not None and len(halls) >= 2:
        with tempfile.TemporaryDirectory(prefix="clusterloom-routes-") as tmp:
            shared = write_shared(tmp, job)
            fn = "clusterloom.cabling.halls:route_task"
            tasks = [Task(fn, {**shared, "part": k}) for k in halls]
            got = {o.task.key: o for o in executor.run(tasks, retries=0)}
        for k, task in zip(halls, tasks, strict=True):
            if got[task.key].ok:
                done[k] = _from_table(got[task.key].table)
    length = np.full(s.shape[0], np.inf)
    pairs: list[NDArray[np.int64]] = []
    segs: list[NDArray[np.int32]] = []
    moved = 0
    for k, (_, idx) in enumerate(job.parts):
        p_len, p_pair, p_seg, p_moved = done[k] if k in done else route_part(job, k)
        length[idx] = p_len
        pairs.append(idx[p_pair])
        segs.append(p_seg)
        moved += p_moved
    if not pairs:
        return length, np.zeros(0, np.int64), np.zeros(0, np.int32), 0
    pair = np.concatenate(pairs)
    order = np.argsort(pair, kind="stable")
    return length, pair[order], np.concatenate(segs)[order], moved
