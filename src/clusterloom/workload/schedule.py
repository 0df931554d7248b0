"""Pipeline schedules: which layers each stage holds and the timeline of a step.

- Layers per stage: even when they divide; else (or when ``first_stage_layers`` /
  ``last_stage_layers`` are given, Megatron-LM's ``--decoder-first/last-pipeline-num-layers``)
  the middle stages take an even share and the first and last the rest, so the layers are
  conserved and the stages with the embedding and the output layer carry fewer.
- 1F1B (PipeDream-Flush, Narayanan et al. SC21): stage ``s`` of ``p`` runs ``p - s - 1`` warm-up
  forwards, then alternates one forward and one backward, then drains the backwards.
- Interleaved 1F1B: each stage holds ``v`` model chunks (stage ``s``, chunk ``c`` is virtual
  stage ``c p + s``); Megatron-LM's order: warm-up ``(p - s - 1) x 2 + (v - 1) p`` forwards,
  micro-batches taken in groups of ``p`` per chunk. Needs ``micro_batches % p == 0``.
- The timeline: every stage runs its operations in that order, each as soon as the stage is
  free and its input has arrived (the previous virtual stage's forward, or the next one's
  backward, plus the point-to-point send between stages). The step ends with the last
  operation; the bubble is what the step lasts beyond the busiest stage's work. With equal
  work per chunk and free sends this gives the closed forms ``(p - 1) / m`` (1F1B) and
  ``(p - 1) / (v m)`` (interleaved) of the compute time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from clusterloom.spec.job import Plan, ScheduleError, plan_of, split_layers

__all__ = [
    "Plan",
    "ScheduleError",
    "Timeline",
    "plan_of",
    "simulate",
    "split_layers",
    "stage_order",
]


# -- the timeline ---------------------------------------------------------------------------


def stage_order(stage: int, pp: int, v: int, m: int) -> list[tuple[bool, int, int]]:
    """Megatron-LM's order of (is_forward, micro-batch, chunk) on ``stage``."""
    total = m * v

    def fwd(k: int) -> tuple[bool, int, int]:
        group, pos = divmod(k, pp * v)
        chunk, rank = divmod(pos, pp)
        return True, group * pp + rank, chunk

    def bwd(k: int) -> tuple[bool, int, int]:
        f = fwd(k)
        return False, f[1], v - 1 - f[2]

    # 1F1B: p - s - 1 warm-up forwards; interleaved: Megatron's count
    interleaved_warm = (pp - stage - 1) * 2 + (v - 1) * pp
    warm = min(pp - stage - 1, m) if v == 1 else min(interleaved_warm, total)
    out = [fwd(k) for k in range(warm)]
    f, b = warm, 0
    while f < total:
        out.append(fwd(f))
        f += 1
        out.append(bwd(b))
        b += 1
    out += [bwd(k) for k in range(b, total)]
    return out


@dataclass(frozen=True)
class Timeline:
    makespan: float
    busy: tuple[float, ...]  # work per stage


def simulate(
    forward: Sequence[Sequence[float]],
    backward: Sequence[Sequence[float]],
    micro_batches: int,
    send: Sequence[float] = (),
) -> Timeline:
    """Run the schedule (module docstring). ``forward[s][c]`` and ``backward[s][c]`` are the
    seconds of one micro-batch of chunk ``c`` on stage ``s``; ``send[s]`` the seconds to move an
    activation (or its gradient) across the boundary after stage ``s`` (the last entry the wrap
    from the last stage back to the first)."""
    pp, v, m = len(forward), len(forward[0]), micro_batches
    sends = list(send) or [0.0] * pp
    orders = [stage_order(s, pp, v, m) for s in range(pp)]
    pos = [0] * pp
    free = [0.0] * pp
    done: dict[tuple[bool, int, int, int], float] = {}  # (fwd, stage, chunk, mb) -> end

    def ready(s: int, op: tuple[bool, int, int]) -> float | None:
        is_f, mb, c = op
        if is_f:
            if s == 0 and c == 0:
                return 0.0
            prev = (True, s - 1, c, mb) if s else (True, pp - 1, c - 1, mb)
            link = sends[s - 1] if s else sends[pp - 1]
        elif s == pp - 1 and c == v - 1:
            prev, link = (True, s, c, mb), 0.0
        else:
            prev = (False, s + 1, c, mb) if s < pp - 1 else (False, 0, c + 1, mb)
            link = sends[s] if s < pp - 1 else sends[pp - 1]
        end = done.get(prev)
        return None if end is None else end + link

    queue = deque(range(pp))
    queued = [True] * pp
    while queue:
        s = queue.popleft()
        queued[s] = False
        progressed = False
        while pos[s] < len(orders[s]):
            op = orders[s][pos[s]]
            arrive = ready(s, op)
            if arrive is None:
                break
            is_f, mb, c = op
            work = forward[s][c] if is_f else backward[s][c]
            end = max(free[s], arrive) + work
            free[s] = end
            done[(is_f, s, c, mb)] = end
            pos[s] += 1
            progressed = True
        if progressed:
            for n in {s - 1, s + 1, 0, pp - 1}:
                if 0 <= n < pp and not queued[n] and pos[n] < len(orders[n]):
                    queue.append(n)
                    queued[n] = True
    if any(pos[s] < len(orders[s]) for s in range(pp)):
        raise RuntimeError("pipeline schedule deadlocked")  # a bug in the order, not input
    busy = tuple(m * (sum(forward[s]) + sum(backward[s])) for s in range(pp))
    return Timeline(max(free), busy)
