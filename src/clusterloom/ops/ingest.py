"""Telemetry from outside into the model's tables (``ops.model``), checked against a design
(issue 23, item 1).

Three readers, one per table: :func:`read_counters` (:data:`~clusterloom.ops.model.COUNTER_SCHEMA`),
:func:`read_probes` (``PROBE_SCHEMA``) and :func:`read_collectives` (``COLLECTIVE_SCHEMA``), each
of Prometheus / OpenMetrics text exposition (``prom``: our own strict parser, below), CSV (a
header of the schema's column names, in any order) or Parquet (columns by name, cast to the
schema). Every reader returns an :class:`Ingested`: the good rows in the schema, one
:class:`~clusterloom.errors.Problem` per bad row or line (``FILE line N`` / ``FILE row N`` and
what is wrong) and how many rows were read. A bad row never drops a good one.

What is refused, row by row: a device or interface the design does not have (probes: a source
or destination that is not a host NIC port; collectives: a rank that is not a host, or whose
server is not ``device``), a timestamp not after the latest earlier sample of the same series
(as Prometheus's TSDB refuses out-of-order samples), a duplicate, a negative, fractional,
non-numeric or too large counter, a missing required field, a malformed exposition line or a
wrong label set. What is refused for the whole file (``SpecError``): an unreadable file, an
unknown format, a CSV or Parquet file without a required column, a Parquet column of a type
that cannot be cast.

Limits, so that hostile input cannot exhaust memory: exposition lines of at most
:data:`MAX_LINE` characters and :data:`MAX_LABELS` labels; at most :data:`MAX_PROBLEMS`
problems are listed (then one that counts the rest).

:func:`counter_rates` turns cumulative counters into :data:`RATE_SCHEMA` rates per interval;
a counter that went back is a 64-bit wrap when the rate across the wrap is one the link can
carry, and a reset otherwise (its rate is null for that interval, and a note says so).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from weakref import WeakKeyDictionary

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.ops.fabric import OpsFabric
from clusterloom.ops.model import (
    COLLECTIVE_SCHEMA,
    COUNTER_SCHEMA,
    COUNTERS,
    PROBE_SCHEMA,
    RATE_SCHEMA,
)

__all__ = [
    "FOREIGN_COUNTERS",
    "MAX_LABELS",
    "MAX_LINE",
    "MAX_PROBLEMS",
    "Ingested",
    "Kind",
    "counter_rates",
    "counter_rates_noted",
    "guess_kind",
    "interface_codes",
    "latest_samples",
    "read_collectives",
    "read_counters",
    "read_probes",
    "read_telemetry",
    "to_exposition",
    "validate",
]

Kind = Literal["counters", "probes", "collectives"]
Fmt = Literal["prom", "csv", "parquet"]

#: longest exposition line read (characters); a longer one is a problem, skipped unread
MAX_LINE = 65_536
#: most labels on one exposition sample
MAX_LABELS = 32
#: most problems listed by one read; the rest are counted in one last problem
MAX_PROBLEMS = 10_000

U64_MAX = 2**64 - 1
#: a counter that went back is taken as a 64-bit wrap when the rate across the wrap is at most
#: this share of what the link can carry (slack for the exporters' timestamp jitter)
WRAP_SLACK = 1.05
#: smallest Ethernet frame on the wire (64 bytes plus 8 of preamble and 12 of gap): no packet
#: counter of a link can run faster than its rate over this many bits
MIN_FRAME_BITS = (64 + 20) * 8
#: rows of rates worked out at once per counter (temporaries of 8 MB a column)
RATE_SLICE = 1 << 20

SCHEMAS: dict[str, pa.Schema] = {
    "counters": COUNTER_SCHEMA,
    "probes": PROBE_SCHEMA,
    "collectives": COLLECTIVE_SCHEMA,
}


@dataclass(frozen=True)
class Ingested:
    """What a reader kept: ``table`` the good rows in the kind's schema (in the input's
    order), ``problems`` one per bad row or line, ``rows_read`` the rows the input held (CSV
    and Parquet rows; exposition samples of the accepted metrics, after merging the metrics of
    one series and timestamp into one row)."""

    table: pa.Table
    problems: tuple[Problem, ...]
    rows_read: int


# -- the design's names, looked up once per fabric ------------------------------------------


@dataclass(frozen=True)
class _PairIndex:
    """Name pairs (a device and an interface) to codes, for vectorised lookups: the distinct
    left and right names, and each known pair as ``(left index, right index) -> code``."""

    left: pa.Array
    right: pa.Array
    li: NDArray[np.int64]
    ri: NDArray[np.int64]
    code: NDArray[np.int64]

    @staticmethod
    def of(dev: pa.Array, ifs: pa.Array, code: NDArray[np.int64]) -> _PairIndex:
        d = pc.dictionary_encode(dev)
        f = pc.dictionary_encode(ifs)
        return _PairIndex(
            d.dictionary,
            f.dictionary,
            np.asarray(d.indices, dtype=np.int64),
            np.asarray(f.indices, dtype=np.int64),
            np.asarray(code, dtype=np.int64),
        )

    def lookup(
        self, a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array
    ) -> NDArray[np.int64]:
        """The code of each row's ``(a, b)``, -1 where there is none."""
        da, db = _dictionary(a), _dictionary(b)
        n = len(da)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        pos_a = np.asarray(
            pc.fill_null(pc.index_in(da.dictionary, value_set=self.left), -1), dtype=np.int64
        )
        pos_b = np.asarray(
            pc.fill_null(pc.index_in(db.dictionary, value_set=self.right), -1), dtype=np.int64
        )
        ia = np.asarray(da.indices.fill_null(0), dtype=np.int64)
        ib = np.asarray(db.indices.fill_null(0), dtype=np.int64)
        na, nb = len(da.dictionary), len(db.dictionary)
        if na == 0 or nb == 0:
            return np.full(n, -1, dtype=np.int64)
        # the known pairs in the input's dictionary positions
        inv_a = np.full(len(self.left), -1, dtype=np.int64)
        inv_a[pos_a[pos_a >= 0]] = np.flatnonzero(pos_a >= 0)
        inv_b = np.full(len(self.right), -1, dtype=np.int64)
        inv_b[pos_b[pos_b >= 0]] = np.flatnonzero(pos_b >= 0)
        ka, kb = inv_a[self.li], inv_b[self.ri]
        ok = (ka >= 0) & (kb >= 0)
        if na * nb <= 1 << 24:
            grid = np.full((na, nb), -1, dtype=np.int64)
            grid[ka[ok], kb[ok]] = self.code[ok]
            out: NDArray[np.int64] = grid[ia, ib]
        else:  # many distinct names (odd or hostile input): a sorted search
            keys = ka[ok] * nb + kb[ok]
            order = np.argsort(keys)
            keys, codes = keys[order], self.code[ok][order]
            want = ia * nb + ib
            at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
            out = (
                np.where((len(keys) > 0) & (keys[at] == want), codes[at], -1)
                if len(keys)
                else np.full(n, -1, dtype=np.int64)
            )
        if da.null_count or db.null_count:
            out[np.asarray(pc.or_(pc.is_null(da), pc.is_null(db)))] = -1
        return out


def _dictionary(a: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """A string column as one dictionary array (encoded when it is not one)."""
    if isinstance(a, pa.ChunkedArray):
        if pa.types.is_dictionary(a.type):
            return a.unify_dictionaries().combine_chunks() if a.num_chunks != 1 else a.chunk(0)
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    if pa.types.is_dictionary(a.type):
        return a
    return pc.dictionary_encode(a)


@dataclass(frozen=True)
class _Names:
    interfaces: _PairIndex  #: (device, interface) -> 2 * link + end
    endpoints: _PairIndex  #: host NIC (device, interface) -> 2 * link + end
    devices: pa.Array  #: every device name
    capacity_bps: NDArray[np.int64]  #: per physical link


_NAMES: WeakKeyDictionary[OpsFabric, _Names] = WeakKeyDictionary()


def _names(fabric: OpsFabric) -> _Names:
    hit = _NAMES.get(fabric)
    if hit is None:
        t = fabric.interface_table()
        dev = t["device"].combine_chunks()
        ifs = t["interface"].combine_chunks()
        code = 2 * t["link"].to_numpy() + t["end"].to_numpy()
        # a host NIC port is the lower end of a host-leaf link
        host = pa.array((t["tier"].to_numpy() == 1) & (t["end"].to_numpy() == 0))
        hit = _Names(
            _PairIndex.of(dev, ifs, code),
            _PairIndex.of(dev.filter(host), ifs.filter(host), code[np.asarray(host)]),
            pc.unique(dev),
            np.asarray(fabric.topology.link_capacity_bps, dtype=np.int64),
        )
        _NAMES[fabric] = hit
    return hit


def _pair_codes(
    a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array, index: _PairIndex
) -> NDArray[np.int64]:
    """The code ``index`` gives each row's ``(a, b)`` pair, -1 where it has none."""
    return index.lookup(a, b)


# -- column coercion ------------------------------------------------------------------------

_INT_RE = r"^[+]?[0-9]+$"
_NEG_RE = r"^-[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?$"
_FLOAT_RE = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


class _Checks:
    """The row problems of one table: each check marks rows and says why, lazily (messages
    are made only for the rows listed)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.bad = np.zeros(n, dtype=np.bool_)
        self._found: list[tuple[NDArray[np.bool_], Callable[[int], str]]] = []

    def add(self, mask: NDArray[np.bool_], why: Callable[[int], str]) -> None:
        mask = np.asarray(mask, dtype=np.bool_)
        if mask.any():
            self.bad |= mask
            self._found.append((mask, why))

    def problems(self, where: Callable[[int], str]) -> list[Problem]:
        rows = np.flatnonzero(self.bad)
        listed = rows[:MAX_PROBLEMS]
        out: list[Problem] = []
        for r in listed.tolist():
            whys = [why(r) for mask, why in self._found if mask[r]]
            out.append(Problem(where(r), "; ".join(whys)))
        if len(rows) > len(listed):
            out.append(
                Problem(
                    where(int(rows[len(listed)])),
                    f"and {len(rows) - len(listed):,} more bad rows, not listed",
                )
            )
        return out


def _text(arr: pa.Array, r: int) -> str:
    v = arr[r].as_py()
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "...'"


def _is_null(arr: pa.Array) -> NDArray[np.bool_]:
    return np.asarray(pc.is_null(arr).to_numpy(zero_copy_only=False), dtype=np.bool_)


def _string_numbers(
    arr: pa.Array,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_], pa.Array]:
    """Classify a string column: ``(null or empty, plain integer, other)`` masks and the
    stripped strings."""
    s = pc.utf8_trim_whitespace(arr)
    empty = np.asarray(pc.fill_null(pc.equal(s, ""), True), dtype=np.bool_)
    plain = np.asarray(pc.fill_null(pc.match_substring_regex(s, _INT_RE), False), dtype=np.bool_)
    return empty, plain, ~empty & ~plain, s


def _coerce_uint(
    name: str, arr: pa.Array, checks: _Checks, *, nullable: bool, top: int = U64_MAX, bits: int = 64
) -> pa.Array:
    """A column as unsigned integers of ``bits`` bits (at most ``top``), bad values null and
    their rows marked."""
    n = len(arr)
    out_t = {64: pa.uint64(), 32: pa.int32()}[bits]
    t = arr.type
    if t == pa.uint64() and bits == 64 and top == U64_MAX and (nullable or not arr.null_count):
        return arr  # already what the schema holds: nothing to check
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        arr = arr.cast(pa.string())
        empty, plain, other, s = _string_numbers(arr)
        digits = pc.utf8_ltrim(pc.if_else(pa.array(plain), s, "0"), characters="+")
        # 20 digits may still be above 2**64 - 1: compare as text of equal length
        ln = np.asarray(pc.utf8_length(digits), dtype=np.int64)
        digits = pc.utf8_ltrim(digits, characters="0")
        digits = pc.if_else(pc.equal(digits, ""), "0", digits)
        ln = np.asarray(pc.utf8_length(digits), dtype=np.int64)
        top_s = str(top)
        too_big = (ln > len(top_s)) | (
            (ln == len(top_s)) & np.asarray(pc.greater(digits, top_s).fill_null(False))
        )
        digits = pc.if_else(pa.array(too_big), "0", digits)
        values = np.asarray(pc.cast(digits, pa.uint64()), dtype=np.uint64).copy()
        valid = plain & ~too_big
        checks.add(too_big & plain, lambda r: f"{name} {_text(arr, r)} is above {top:,}")
        bad_other = np.flatnonzero(other)
        if len(bad_other):
            texts = s.take(pa.array(bad_other)).to_pylist()
            neg_m = np.zeros(n, np.bool_)
            frac_m = np.zeros(n, np.bool_)
            nan_m = np.zeros(n, np.bool_)
            big_m = np.zeros(n, np.bool_)
            for r, txt in zip(bad_other.tolist(), texts, strict=True):
                if not _FLOAT_RE.match(txt):
                    nan_m[r] = True
                    continue
                v = float(txt)
                if v < 0:
                    neg_m[r] = True
                elif v != int(v):
                    frac_m[r] = True
                elif int(v) > top:
                    big_m[r] = True
                else:  # an integral value in float notation (Prometheus writes 1.5e+09)
                    values[r] = int(v)
                    valid[r] = True
            checks.add(neg_m, lambda r: f"{name} {_text(arr, r)} is negative")
            checks.add(frac_m, lambda r: f"{name} {_text(arr, r)} is not an integer")
            checks.add(nan_m, lambda r: f"{name} {_text(arr, r)} is not a number")
            checks.add(big_m, lambda r: f"{name} {_text(arr, r)} is above {top:,}")
        null = empty
    elif pa.types.is_integer(t):
        raw = arr.to_numpy(zero_copy_only=False)
        null = _is_null(arr)
        if pa.types.is_signed_integer(t):
            iv = np.asarray(pc.fill_null(arr, 0), dtype=np.int64)
            neg = (iv < 0) & ~null
            checks.add(neg, lambda r: f"{name} {_text(arr, r)} is negative")
            big = (iv > top) & ~null if top < 2**63 else np.zeros(n, np.bool_)
            values = np.where(neg, 0, iv).astype(np.uint64)
        else:
            values = np.asarray(pc.fill_null(arr, 0), dtype=np.uint64)
            big = (values > np.uint64(top)) & ~null
            neg = np.zeros(n, np.bool_)
        checks.add(big, lambda r: f"{name} {_text(arr, r)} is above {top:,}")
        valid = ~null & ~neg & ~big
        del raw
    elif pa.types.is_floating(t):
        null = _is_null(arr)
        fv = np.asarray(pc.fill_null(arr.cast(pa.float64()), 0.0), dtype=np.float64)
        nan = ~np.isfinite(fv) & ~null
        fv0 = np.where(nan, 0.0, fv)
        neg = (fv0 < 0) & ~null
        frac = (fv0 != np.floor(fv0)) & ~null & ~neg
        big = (fv0 > float(top)) & ~null & ~neg
        checks.add(nan, lambda r: f"{name} {_text(arr, r)} is not a number")
        checks.add(neg, lambda r: f"{name} {_text(arr, r)} is negative")
        checks.add(frac, lambda r: f"{name} {_text(arr, r)} is not an integer")
        checks.add(big, lambda r: f"{name} {_text(arr, r)} is above {top:,}")
        valid = ~null & ~nan & ~neg & ~frac & ~big
        values = np.where(valid, fv0, 0.0).astype(np.uint64)
    else:
        raise SpecError([Problem(name, f"a column of type {t} cannot be read as an integer")])
    if not nullable:
        checks.add(null, lambda r: f"{name} is missing")
    mask = ~valid
    if bits == 64:
        return pa.array(values, type=out_t, mask=mask)
    return pa.array(values.astype(np.int64), type=pa.int64(), mask=mask).cast(out_t)


def _coerce_int(
    name: str, arr: pa.Array, checks: _Checks, *, lo: int, hi: int, out_t: pa.DataType
) -> pa.Array:
    """A required signed integer column within ``lo..hi``."""
    n = len(arr)
    t = arr.type
    if pa.types.is_signed_integer(t) and not arr.null_count and n:
        v = np.asarray(arr)
        if int(v.min()) >= lo and int(v.max()) <= hi:  # the common case, checked at once
            return arr.cast(out_t)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        arr = arr.cast(pa.string())
        s = pc.utf8_trim_whitespace(arr)
        empty = np.asarray(pc.fill_null(pc.equal(s, ""), True), dtype=np.bool_)
        ok = np.asarray(
            pc.fill_null(pc.match_substring_regex(s, r"^[+-]?[0-9]{1,18}$"), False),
            dtype=np.bool_,
        )
        values = np.asarray(
            pc.cast(pc.if_else(pa.array(ok), s, "0"), pa.int64()), dtype=np.int64
        ).copy()
        other = np.flatnonzero(~ok & ~empty)
        bad = np.zeros(n, np.bool_)
        for r, txt in zip(other.tolist(), s.take(pa.array(other)).to_pylist(), strict=True):
            if _FLOAT_RE.match(txt) and float(txt) == int(float(txt)) and abs(float(txt)) < 2**62:
                values[r] = int(float(txt))
                ok[r] = True
            else:
                bad[r] = True
        checks.add(bad, lambda r: f"{name} {_text(arr, r)} is not an integer")
        null = empty
    elif pa.types.is_integer(t):
        null = _is_null(arr)
        if pa.types.is_unsigned_integer(t):
            u = np.asarray(pc.fill_null(arr, 0), dtype=np.uint64)
            over = u > np.uint64(2**62)
            values = np.where(over, 0, u).astype(np.int64)
            ok = ~null & ~over
            checks.add(over & ~null, lambda r: f"{name} {_text(arr, r)} is above {hi:,}")
        else:
            values = np.asarray(pc.fill_null(arr, 0), dtype=np.int64)
            ok = ~null
    elif pa.types.is_floating(t):
        null = _is_null(arr)
        fv = np.asarray(pc.fill_null(arr.cast(pa.float64()), 0.0), dtype=np.float64)
        fin = np.isfinite(fv) & (np.abs(fv) < 2**62)
        fv0 = np.where(fin, fv, 0.0)
        ok = ~null & fin & (fv0 == np.floor(fv0))
        checks.add(~null & ~ok, lambda r: f"{name} {_text(arr, r)} is not an integer")
        values = np.where(ok, fv0, 0).astype(np.int64)
    else:
        raise SpecError([Problem(name, f"a column of type {t} cannot be read as an integer")])
    checks.add(null, lambda r: f"{name} is missing")
    out_range = ok & ((values < lo) | (values > hi))
    checks.add(out_range, lambda r: f"{name} {_text(arr, r)} is outside {lo:,}..{hi:,}")
    mask = ~(ok & ~out_range)
    return pa.array(np.where(mask, 0, values), type=pa.int64(), mask=mask).cast(out_t)


def _coerce_float(name: str, arr: pa.Array, checks: _Checks, *, nullable: bool) -> pa.Array:
    """A float column: finite and not negative."""
    t = arr.type
    if t == pa.float64() and (nullable or not arr.null_count):
        v = np.asarray(pc.fill_null(arr, 0.0)) if arr.null_count else np.asarray(arr)
        if np.isfinite(v).all() and (v >= 0).all():
            return arr
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        arr = arr.cast(pa.string())
        s = pc.utf8_trim_whitespace(arr)
        null = np.asarray(pc.fill_null(pc.equal(s, ""), True), dtype=np.bool_)
        ok = np.asarray(
            pc.fill_null(
                pc.match_substring_regex(s, r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"),
                False,
            ),
            dtype=np.bool_,
        )
        checks.add(~ok & ~null, lambda r: f"{name} {_text(arr, r)} is not a number")
        fv = np.asarray(pc.cast(pc.if_else(pa.array(ok), s, "0"), pa.float64()), dtype=np.float64)
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        null = _is_null(arr)
        fv = np.asarray(pc.fill_null(arr.cast(pa.float64()), 0.0), dtype=np.float64)
        ok = ~null & np.isfinite(fv)
        checks.add(~null & ~ok, lambda r: f"{name} {_text(arr, r)} is not a finite number")
        fv = np.where(ok, fv, 0.0)
    else:
        raise SpecError([Problem(name, f"a column of type {t} cannot be read as a number")])
    neg = ok & ~null & (fv < 0)
    checks.add(neg, lambda r: f"{name} {_text(arr, r)} is negative")
    if not nullable:
        checks.add(null, lambda r: f"{name} is missing")
    return pa.array(fv, type=pa.float64(), mask=~(ok & ~neg))


_TRUE = ("1", "true", "up", "yes")
_FALSE = ("0", "false", "down", "no")


def _coerce_bool(name: str, arr: pa.Array, checks: _Checks) -> pa.Array:
    """``link_up``: true/false, 1/0 (or up/down, yes/no); null where not exported."""
    t = arr.type
    if pa.types.is_boolean(t):
        return arr
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        null = _is_null(arr)
        fv = np.asarray(pc.fill_null(arr.cast(pa.float64()), 0.0), dtype=np.float64)
        ok = ~null & ((fv == 0) | (fv == 1))
        checks.add(~null & ~ok, lambda r: f"{name} {_text(arr, r)} is neither 0 nor 1")
        return pa.array(fv == 1, type=pa.bool_(), mask=~ok)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        s = pc.utf8_lower(pc.utf8_trim_whitespace(arr.cast(pa.string())))
        null = np.asarray(pc.fill_null(pc.equal(s, ""), True), dtype=np.bool_)
        yes = np.asarray(pc.fill_null(pc.is_in(s, pa.array(_TRUE)), False), dtype=np.bool_)
        no = np.asarray(pc.fill_null(pc.is_in(s, pa.array(_FALSE)), False), dtype=np.bool_)
        checks.add(~null & ~yes & ~no, lambda r: f"{name} {_text(arr, r)} is not true or false")
        return pa.array(yes, type=pa.bool_(), mask=~(yes | no))
    raise SpecError([Problem(name, f"a column of type {t} cannot be read as true/false")])


def _coerce_str(name: str, arr: pa.Array, checks: _Checks) -> pa.Array:
    """A name column; a dictionary-encoded one stays encoded (names repeat; the output is
    decoded at the end)."""
    t = arr.type
    if pa.types.is_dictionary(t) and pa.types.is_string(t.value_type):
        blank = np.asarray(pc.fill_null(pc.equal(arr.dictionary, ""), True), dtype=np.bool_)
        idx = np.asarray(arr.indices.fill_null(0), dtype=np.int64)
        empty = blank[idx] if len(blank) else np.ones(len(arr), dtype=np.bool_)
        if arr.null_count:
            empty |= _is_null(arr)
        checks.add(empty, lambda r: f"{name} is missing")
        return arr
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)):
        if pa.types.is_dictionary(t) or pa.types.is_integer(t):
            arr = arr.cast(pa.string())
        else:
            raise SpecError([Problem(name, f"a column of type {t} cannot be read as a name")])
    arr = arr.cast(pa.string())
    empty = np.asarray(pc.fill_null(pc.equal(arr, ""), True), dtype=np.bool_)
    checks.add(empty, lambda r: f"{name} is missing")
    return arr


# -- validation: a loosely typed table into the schema, with its problems ---------------------


def _later_than_before(
    key: NDArray[np.int64], ts: NDArray[np.int64], usable: NDArray[np.bool_]
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """For each usable row, whether its ``ts`` is after the largest ``ts`` of the earlier
    usable rows of the same ``key`` (in input order); and that largest earlier ``ts``."""
    n = len(key)
    if n == 0:
        return np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(usable)
    tu = ts[rows]
    if np.all(tu[1:] >= tu[:-1]):
        # in time order (as scrapes come): a row is late only when it repeats the time of
        # the previous row of its key
        order = rows[np.argsort(key[rows], kind="stable")]
        k, t = key[order], ts[order]
        same = np.zeros(len(order), dtype=np.bool_)
        same[1:] = (k[1:] == k[:-1]) & (t[1:] == t[:-1])
        later = np.ones(n, dtype=np.bool_)
        later[order[same]] = False
        return later, ts.copy()
    order = np.argsort(key, kind="stable")
    k = key[order]
    t = np.where(usable[order], ts[order], np.iinfo(np.int64).min)
    start = np.ones(n, dtype=np.bool_)
    start[1:] = k[1:] != k[:-1]
    # a running maximum that restarts at each key: shift each group above the previous ones
    tmin = int(t[usable[order]].min()) if usable.any() else 0
    tmax = int(t.max()) if n else 0
    span = tmax - tmin + 2
    group = np.cumsum(start) - 1
    if span * (int(group[-1]) + 1 if n else 1) < 2**62:
        rel = np.where(t == np.iinfo(np.int64).min, 0, t - tmin + 1)
        shifted = group.astype(np.int64) * span + rel
        run = np.maximum.accumulate(shifted)
        prev = np.empty(n, dtype=np.int64)
        prev[0] = -1
        prev[1:] = run[:-1]
        prev_rel = prev - group.astype(np.int64) * span
        prev_rel[start] = 0
        prev_ts = np.where(prev_rel <= 0, np.iinfo(np.int64).min, prev_rel - 1 + tmin)
    else:  # times too far apart for the shift: per group (rare)
        prev_ts = np.empty(n, dtype=np.int64)
        for lo, hi in _groups(start):
            seg = np.maximum.accumulate(t[lo:hi])
            prev_ts[lo] = np.iinfo(np.int64).min
            prev_ts[lo + 1 : hi] = seg[:-1]
    later = np.empty(n, dtype=np.bool_)
    later[order] = t > prev_ts
    before = np.empty(n, dtype=np.int64)
    before[order] = prev_ts
    return later, before


def _groups(start: NDArray[np.bool_]) -> Iterator[tuple[int, int]]:
    yield from itertools.pairwise([*np.flatnonzero(start).tolist(), len(start)])


def _series_key(cols: list[pa.Array]) -> NDArray[np.int64]:
    """One integer per distinct combination of the string/integer columns ``cols``."""
    codes = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:
        d = _dictionary(c)
        idx = np.asarray(d.indices.fill_null(0), dtype=np.int64)
        m = len(d.dictionary) + 1
        codes = codes * m + idx
        if codes.max(initial=0) > 2**52:
            codes = np.unique(codes, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return codes


def _as_array(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def validate(
    kind: Kind,
    table: pa.Table,
    fabric: OpsFabric,
    *,
    where: Callable[[int], str] | None = None,
) -> Ingested:
    """Check a table of ``kind`` (columns by name, of any type that casts to the schema's) and
    keep its good rows in the schema. ``where(i)`` names row ``i`` in problems (default
    ``row i+1``). ``SpecError`` when a required column is missing."""
    schema = SCHEMAS[kind]
    names = set(table.column_names)
    missing = [f.name for f in schema if not f.nullable and f.name not in names]
    if missing:
        raise SpecError(
            [
                Problem(
                    m, f"required column missing (a {kind} table has {', '.join(schema.names)})"
                )
                for m in missing
            ]
        )
    at = where or (lambda r: f"row {r + 1}")
    n = table.num_rows
    checks = _Checks(n)
    cols: dict[str, pa.Array] = {}
    for f in schema:
        if f.name not in names:
            cols[f.name] = pa.nulls(n, f.type)
            continue
        col = table.column(f.name)
        if pa.types.is_dictionary(col.type):
            raw = _dictionary(col)
            if not (f.type == pa.string() and pa.types.is_string(raw.type.value_type)):
                raw = raw.cast(raw.type.value_type)
        else:
            raw = _as_array(col)
        cols[f.name] = _coerce(kind, f, raw, checks)
    _check_rows(kind, cols, fabric, checks)
    problems = checks.problems(at)
    keep = pa.array(~checks.bad)
    out = pa.table([cols[f.name].cast(f.type) for f in schema], schema=schema.with_metadata({}))
    # the row's other fields may be null where a check failed; the row is dropped anyway
    kept = out.filter(keep) if checks.bad.any() else out
    return Ingested(kept.cast(schema), tuple(problems), n)


def _coerce(kind: str, f: pa.Field, raw: pa.Array, checks: _Checks) -> pa.Array:
    name, t = f.name, f.type
    if t == pa.uint64():
        return _coerce_uint(name, raw, checks, nullable=True)
    if t == pa.string():
        return _coerce_str(name, raw, checks)
    if t == pa.bool_():
        return _coerce_bool(name, raw, checks)
    if t == pa.float64():
        return _coerce_float(name, raw, checks, nullable=f.nullable)
    if name == "ts_ms":
        return _coerce_int(name, raw, checks, lo=0, hi=2**53, out_t=pa.int64())
    if name == "ev":
        return _coerce_int(name, raw, checks, lo=0, hi=2**31 - 1, out_t=pa.int32())
    if name in ("sent", "lost"):
        return _coerce_int(name, raw, checks, lo=0, hi=2**31 - 1, out_t=pa.int32())
    if name == "rank":
        return _coerce_int(name, raw, checks, lo=0, hi=2**31 - 1, out_t=pa.int32())
    if name == "step":
        return _coerce_int(name, raw, checks, lo=0, hi=2**62, out_t=pa.int64())
    raise AssertionError(f"no coercion for {kind}.{name}")  # pragma: no cover


def _check_rows(kind: str, cols: dict[str, pa.Array], fabric: OpsFabric, checks: _Checks) -> None:
    nm = _names(fabric)
    ts = np.asarray(pc.fill_null(cols["ts_ms"], 0), dtype=np.int64)
    if kind == "counters":
        dev, ifs = cols["device"], cols["interface"]
        code = _pair_codes(dev, ifs, nm.interfaces)
        _name_checks(checks, code, dev, ifs, nm, "device", "interface", host=False)
        key = code
        series = "interface"
    elif kind == "probes":
        for side in ("src", "dst"):
            dev, ifs = cols[f"{side}_device"], cols[f"{side}_interface"]
            code = _pair_codes(dev, ifs, nm.endpoints)
            _name_checks(
                checks, code, dev, ifs, nm, f"{side}_device", f"{side}_interface", host=True
            )
        sent = np.asarray(pc.fill_null(cols["sent"], 0), dtype=np.int64)
        lost = np.asarray(pc.fill_null(cols["lost"], 0), dtype=np.int64)
        checks.add(lost > sent, lambda r: f"lost {lost[r]} is more than sent {sent[r]}")
        rtt = np.asarray(pc.fill_null(cols["rtt_us"], -1.0), dtype=np.float64)
        rmax = np.asarray(pc.fill_null(cols["rtt_max_us"], np.inf), dtype=np.float64)
        checks.add(
            (rtt >= 0) & (rmax < rtt),
            lambda r: f"rtt_max_us {rmax[r]} is below the mean rtt_us {rtt[r]}",
        )
        back = (sent > lost) | (sent == 0)
        checks.add(
            ~back & (rtt >= 0),
            lambda r: "rtt_us is given but every probe was lost",
        )
        key = _series_key(
            [cols[c] for c in ("src_device", "src_interface", "dst_device", "dst_interface", "ev")]
        )
        series = "probe series (src, dst, ev)"
    else:
        rank = np.asarray(pc.fill_null(cols["rank"], 0), dtype=np.int64)
        hosts = int(fabric.topology.plan.hosts)
        out_of = rank >= hosts
        checks.add(out_of, lambda r: f"rank {rank[r]} is not a host of the design (0..{hosts - 1})")
        safe = np.where(out_of, 0, rank)
        expect = fabric.names.device(safe)
        dev = cols["device"].cast(pa.string())
        same = np.asarray(
            pc.fill_null(pc.equal(dev, pa.array(np.asarray(expect).tolist(), pa.string())), False),
            dtype=np.bool_,
        )
        checks.add(
            ~same & ~out_of & ~_is_null(dev),
            lambda r: f"rank {rank[r]} runs on {expect[r]}, not on {dev[r].as_py()!r}",
        )
        key = _series_key([cols[c] for c in ("job", "rank", "collective", "step")])
        series = "collective (job, rank, collective, step)"
    usable = ~checks.bad
    later, before = _later_than_before(key, ts, usable)
    if kind == "collectives":
        # collectives: one row per (job, rank, collective, step); their times may tie
        dup = usable & _duplicates(key)
        checks.add(dup, lambda r: f"a second row for this {series}")
    else:
        stale = usable & ~later
        checks.add(
            stale,
            lambda r: (
                f"timestamp {ts[r]} repeats an earlier sample of this {series}"
                if ts[r] == before[r]
                else f"timestamp {ts[r]} is before {before[r]}, an earlier sample of this "
                f"{series} (out of order)"
            ),
        )


def _duplicates(key: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Rows whose key appeared on an earlier row."""
    order = np.argsort(key, kind="stable")
    k = key[order]
    dup = np.zeros(len(key), dtype=np.bool_)
    dup_sorted = np.zeros(len(key), dtype=np.bool_)
    dup_sorted[1:] = k[1:] == k[:-1]
    dup[order] = dup_sorted
    return dup


def _name_checks(
    checks: _Checks,
    code: NDArray[np.int64],
    dev: pa.Array,
    ifs: pa.Array,
    nm: _Names,
    dname: str,
    iname: str,
    *,
    host: bool,
) -> None:
    unknown = code < 0
    if not unknown.any():
        return
    dev, ifs = dev.cast(pa.string()), ifs.cast(pa.string())
    has_dev = np.asarray(
        pc.fill_null(pc.is_in(dev, value_set=nm.devices), False),
        dtype=np.bool_,
    )
    blank = _is_null(dev) | _is_null(ifs)
    blank |= np.asarray(pc.fill_null(pc.equal(dev, ""), True)) | np.asarray(
        pc.fill_null(pc.equal(ifs, ""), True)
    )
    checks.add(
        unknown & ~has_dev & ~blank,
        lambda r: f"{dname} {dev[r].as_py()!r} is not in the design",
    )
    what = "host NIC port" if host else "interface"
    checks.add(
        unknown & has_dev & ~blank,
        lambda r: f"{dname} {dev[r].as_py()!r} has no {what} {ifs[r].as_py()!r}",
    )


# -- Prometheus / OpenMetrics text ----------------------------------------------------------


@dataclass(frozen=True)
class _Metric:
    """How one exposition metric fills a table: its ``column``; the labels that name the
    row (``labels``: table column -> label); ``combine`` ``set`` (one sample per row) or
    ``sum`` (several metrics add into one column); ``exact`` labels: no other label allowed;
    ``value``: ``plain`` or ``oper-status`` (IF-MIB's ifOperStatus, 1 is up)."""

    column: str
    labels: tuple[tuple[str, str], ...]
    combine: str = "set"
    exact: bool = True
    value: str = "plain"
    host_label: bool = False  #: the device label is a Prometheus ``instance``: drop ``:port``
    #: the value times this is the column's unit (a speed in Mb/s or bytes/s to bits/s)
    scale: int = 1

    @property
    def wanted(self) -> frozenset[str]:
        return _wanted(self.labels)


@functools.cache
def _wanted(labels: tuple[tuple[str, str], ...]) -> frozenset[str]:
    return frozenset(lbl for _, lbl in labels)


_IF = (("device", "device"), ("interface", "interface"))
_PROBE = tuple((c, c) for c in ("src_device", "src_interface", "dst_device", "dst_interface", "ev"))
_COLL = tuple((c, c) for c in ("job", "step", "rank", "device", "collective"))

#: our own metric names, per kind
NATIVE: dict[str, dict[str, _Metric]] = {
    "counters": {
        **{f"clusterloom_interface_{c}_total": _Metric(c, _IF) for c in COUNTERS},
        "clusterloom_interface_link_up": _Metric("link_up", _IF),
        "clusterloom_interface_speed_bps": _Metric("speed_bps", _IF),
        "clusterloom_interface_retransmissions_total": _Metric("retransmissions", _IF),
    },
    "probes": {
        **{f"clusterloom_probe_{c}_total": _Metric(c, _PROBE) for c in ("sent", "lost")},
        **{f"clusterloom_probe_{c}": _Metric(c, _PROBE) for c in ("sent", "lost")},
        "clusterloom_probe_rtt_us": _Metric("rtt_us", _PROBE),
        "clusterloom_probe_rtt_max_us": _Metric("rtt_max_us", _PROBE),
    },
    "collectives": {
        "clusterloom_collective_duration_us": _Metric("duration_us", _COLL),
    },
}

_NODE = (("device", "instance"), ("interface", "device"))
_SNMP = (("device", "instance"), ("interface", "ifName"))

#: the counters of common exporters we map (labels beyond those named are ignored):
#: Prometheus node_exporter's netdev and netclass collectors (the host from the ``instance``
#: label, its port dropped; the interface from ``device``) and snmp_exporter's ``if_mib``
#: module, the IF-MIB names SONiC and most switches serve (the switch from ``instance``, the
#: interface from ``ifName``). Receive and transmit drops add into ``drops``. The operational
#: speed is a gauge in its exporter's unit, scaled to bits per second: node_exporter's
#: ``node_network_speed_bytes`` (bytes/s), IF-MIB's ``ifHighSpeed`` (Mb/s).
FOREIGN_COUNTERS: dict[str, _Metric] = {
    "node_network_transmit_bytes_total": _Metric("bytes_tx", _NODE, exact=False, host_label=True),
    "node_network_receive_bytes_total": _Metric("bytes_rx", _NODE, exact=False, host_label=True),
    "node_network_transmit_packets_total": _Metric(
        "packets_tx", _NODE, exact=False, host_label=True
    ),
    "node_network_receive_packets_total": _Metric(
        "packets_rx", _NODE, exact=False, host_label=True
    ),
    "node_network_receive_drop_total": _Metric("drops", _NODE, "sum", exact=False, host_label=True),
    "node_network_transmit_drop_total": _Metric(
        "drops", _NODE, "sum", exact=False, host_label=True
    ),
    "node_network_carrier": _Metric("link_up", _NODE, exact=False, host_label=True),
    "ifHCOutOctets": _Metric("bytes_tx", _SNMP, exact=False, host_label=True),
    "ifHCInOctets": _Metric("bytes_rx", _SNMP, exact=False, host_label=True),
    "ifHCOutUcastPkts": _Metric("packets_tx", _SNMP, exact=False, host_label=True),
    "ifHCInUcastPkts": _Metric("packets_rx", _SNMP, exact=False, host_label=True),
    "ifInDiscards": _Metric("drops", _SNMP, "sum", exact=False, host_label=True),
    "ifOutDiscards": _Metric("drops", _SNMP, "sum", exact=False, host_label=True),
    "ifOperStatus": _Metric("link_up", _SNMP, exact=False, value="oper-status", host_label=True),
    "node_network_speed_bytes": _Metric("speed_bps", _NODE, exact=False, host_label=True, scale=8),
    "ifHighSpeed": _Metric("speed_bps", _SNMP, exact=False, host_label=True, scale=1_000_000),
}

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(?:\{{(.*)\}})?[ \t]+(\S+)(?:[ \t]+(\S+))?[ \t]*$")
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(,|$)')
_ESC = re.compile(r"\\(.)")
_VALUE = re.compile(r"^(?:[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN)$")
_TYPES = frozenset(
    (
        "counter",
        "gauge",
        "histogram",
        "summary",
        "untyped",
        "unknown",
        "info",
        "stateset",
        "gaugehistogram",
    )
)


class _LineError(Exception):
    pass


def _unescape(m: re.Match[str]) -> str:
    c = m.group(1)
    if c == "n":
        return "\n"
    if c in '\\"':
        return c
    raise _LineError(f'unknown escape \\{c} in a label value (only \\\\, \\" and \\n)')


def _labels(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if m is None:
            raise _LineError(f"malformed labels at {text[pos : pos + 30]!r}")
        name, raw = m.group(1), m.group(2)
        if name in out:
            raise _LineError(f"label {name} given twice")
        out[name] = _ESC.sub(_unescape, raw) if "\\" in raw else raw
        if len(out) > MAX_LABELS:
            raise _LineError(f"more than {MAX_LABELS} labels")
        pos = m.end()
        if m.group(3) == "" and pos < len(text):
            raise _LineError(f"malformed labels at {text[pos : pos + 30]!r}")
    return out


def _stamp_value(stamp: str) -> float | None:
    """A sample's timestamp as a number, to order samples (None when it is not one)."""
    text = stamp.removeprefix("@")
    if not _FLOAT_RE.match(text):
        return None
    return float(text)


def _int_token(text: str) -> int:
    """An exposition value that must be an integer (``ValueError`` otherwise)."""
    if text.isdigit():
        return int(text)
    v = float(text)
    if not v.is_integer() or v < 0:
        raise ValueError(text)
    return int(v)


def _lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """``(line number, text)`` of a text file, ``None`` for a line over :data:`MAX_LINE`
    characters (read past in pieces, never held whole): read in blocks of 4 MiB."""
    with path.open("r", encoding="utf-8", errors="replace", newline="\n") as f:
        n = 0
        carry = ""
        skipping = False  # inside a line too long to keep
        while True:
            block = f.read(1 << 22)
            if not block:
                break
            parts = block.split("\n")
            if skipping:
                if len(parts) == 1:
                    continue
                skipping = False
                parts = parts[1:]
                n += 1
                yield n, None
                if not parts:
                    continue
            parts[0] = carry + parts[0]
            carry = parts.pop()
            for line in parts:
                n += 1
                if len(line) > MAX_LINE:
                    yield n, None
                else:
                    yield n, line[:-1] if line.endswith("\r") else line
            if len(carry) > MAX_LINE:
                skipping, carry = True, ""
        if skipping:
            yield n + 1, None
        elif carry:
            yield n + 1, carry[:-1] if carry.endswith("\r") else carry


def _scaled(value: str, scale: int) -> str:
    """An exposition value times ``scale``, exactly for whole numbers; anything else (a
    fraction, ``NaN``, ``Inf``) as it is, for the column's check to judge (a negative value
    stays negative)."""
    try:
        if re.fullmatch(r"[+-]?[0-9]+", value):
            return str(int(value) * scale)
        v = float(value)
    except ValueError:
        return value
    if math.isfinite(v) and v == int(v):
        return str(int(v) * scale)
    return value


def _parse_exposition(
    path: Path, kind: Kind, label: str, scrape_ms: int | None
) -> tuple[pa.Table, NDArray[np.int64], list[Problem]]:
    """The samples of ``kind``'s metrics as a table of strings, one row per series and
    timestamp (its metrics merged), each row's first line, and the problems of the lines."""
    metrics: dict[str, _Metric] = dict(NATIVE[kind])
    if kind == "counters":
        metrics.update(FOREIGN_COUNTERS)
    families = {m.removesuffix("_total") for m in metrics} | set(metrics)
    columns = [f.name for f in SCHEMAS[kind]]
    value_cols = [
        c
        for c in columns
        if c != "ts_ms" and c not in {k for k, _ in next(iter(metrics.values())).labels}
    ]
    label_cols = [k for k, _ in next(iter(metrics.values())).labels]
    rows: dict[tuple[str, ...], list[str | None]] = {}
    first_line: dict[tuple[str, ...], int] = {}
    last: dict[tuple[str, ...], tuple[float, int]] = {}  #: series -> latest time, its line
    problems: list[Problem] = []
    label_cache: dict[str, dict[str, str]] = {}
    stamp_values: dict[str, float | None] = {}
    eof_at: int | None = None
    pos = {c: i for i, c in enumerate(value_cols)}

    def bad(n: int, why: str) -> None:
        if len(problems) <= MAX_PROBLEMS:
            problems.append(Problem(f"{label} line {n}", why))

    for n, line in _lines(path):
        if line is None:
            bad(n, f"line longer than {MAX_LINE:,} characters (skipped)")
            continue
        if eof_at is not None:
            if line.strip():
                bad(n, f"text after '# EOF' (line {eof_at})")
            continue
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if line.rstrip() == "# EOF":
                eof_at = n
            elif len(parts) >= 2 and parts[1] in ("HELP", "TYPE", "UNIT"):
                if len(parts) < 3 or not re.fullmatch(_NAME, parts[2]):
                    bad(n, f"# {parts[1]} needs a metric name")
                elif parts[1] == "TYPE":
                    typ = parts[3].strip() if len(parts) > 3 else ""
                    if typ not in _TYPES:
                        bad(n, f"unknown metric type {typ!r}")
                    elif parts[2] in families:
                        # a family read only as ``NAME_total`` is a counter; one whose plain
                        # name is read too (a probe's per-interval sent and lost) may be a gauge
                        want = (
                            "counter"
                            if parts[2].endswith("_total")
                            or (parts[2] + "_total" in metrics and parts[2] not in metrics)
                            else None
                        )
                        if want and typ not in ("counter", "untyped", "unknown"):
                            bad(n, f"{parts[2]} is a counter, not a {typ}")
            continue  # other comments are allowed in the text format
        m = _SAMPLE.match(line)
        if m is None:
            bad(n, 'malformed sample line (want: name{label="value",...} value [timestamp])')
            continue
        name, lab, value, stamp = m.groups()
        if not _VALUE.match(value):
            bad(n, f"{name}: value {value!r} is not a number")
            continue
        metric = metrics.get(name)
        if metric is None:
            continue  # another metric: exporters serve many, we read ours
        try:
            labels = label_cache.get(lab or "")
            if labels is None:
                labels = _labels(lab or "")
                if len(label_cache) < 1_000_000:
                    label_cache[lab or ""] = labels
        except _LineError as exc:
            bad(n, f"{name}: {exc}")
            continue
        wanted = metric.wanted
        ok = labels.keys() == wanted if metric.exact else wanted <= labels.keys()
        if not ok:
            absent = sorted(wanted - labels.keys())
            extra = sorted(labels.keys() - wanted) if metric.exact else []
            why = []
            if absent:
                why.append(f"missing label{'s' if len(absent) > 1 else ''} {', '.join(absent)}")
            if extra:
                why.append(f"unexpected label{'s' if len(extra) > 1 else ''} {', '.join(extra)}")
            bad(n, f"{name}: {'; '.join(why)} (want {', '.join(sorted(wanted))})")
            continue
        if stamp is None:
            if scrape_ms is None:
                bad(n, f"{name}: no timestamp (give the scrape time)")
                continue
            stamp = f"@{scrape_ms}"
        keyvals = []
        for col, lbl in metric.labels:
            v = labels[lbl]
            if metric.host_label and col == "device":
                v = v.rsplit(":", 1)[0] if v.count(":") == 1 else v
            keyvals.append(v)
        key = (stamp, *keyvals)
        series = (name, *keyvals)
        if stamp in stamp_values:
            when = stamp_values[stamp]
        else:
            when = stamp_values[stamp] = _stamp_value(stamp)
        before = last.get(series)
        if before is not None and when is not None and when <= before[0]:
            if when == before[0]:
                bad(
                    n,
                    f"{name}: a second sample of this series and time (first on line {before[1]})",
                )
            else:
                bad(
                    n,
                    f"{name}: timestamp {stamp} is before that of line {before[1]} of this "
                    "series (out of order)",
                )
            continue
        if when is not None:
            last[series] = (when, n)
        if metric.value == "oper-status":
            value = "1" if value in ("1", "1.0") else "0"
        elif metric.scale != 1:
            value = _scaled(value, metric.scale)
        row = rows.get(key)
        if row is None:
            row = [None] * len(value_cols)
            rows[key] = row
            first_line[key] = n
        i = pos[metric.column]
        so_far = row[i]
        if metric.combine == "sum" and so_far is not None:
            try:
                row[i] = str(_int_token(so_far) + _int_token(value))
            except ValueError:
                bad(n, f"{name}: value {value!r} cannot be added to the other drops")
            continue
        row[i] = value
    om = eof_at is not None
    # one row per series and time, in time order (the text lists one family after another)
    keys = sorted(rows, key=lambda k: (stamp_values[k[0]] is None, stamp_values[k[0]] or 0.0))
    stamps: list[str | None] = []
    for k in keys:
        s = k[0]
        if s.startswith("@"):
            stamps.append(s[1:])
        elif om:  # OpenMetrics: seconds, maybe fractional
            stamps.append(
                str(round(float(s) * 1000)) if _VALUE.match(s) and "n" not in s.lower() else s
            )
        else:  # Prometheus text: integer milliseconds
            stamps.append(s)
    data: dict[str, pa.Array] = {"ts_ms": pa.array(stamps, pa.string())}
    for j, c in enumerate(label_cols):
        data[c] = pa.array([k[1 + j] for k in keys], pa.string())
    for i, c in enumerate(value_cols):
        data[c] = pa.array([rows[k][i] for k in keys], pa.string())
    lines = np.array([first_line[k] for k in keys], dtype=np.int64)
    return pa.table(data), lines, problems


# -- the readers ----------------------------------------------------------------------------


def _fmt(source: Path, fmt: str | None) -> Fmt:
    if fmt is None:
        suffix = source.suffix.lower()
        fmt = {
            ".prom": "prom",
            ".txt": "prom",
            ".om": "prom",
            ".metrics": "prom",
            ".csv": "csv",
            ".parquet": "parquet",
            ".pq": "parquet",
        }.get(suffix)
        if fmt is None:
            raise SpecError(
                [
                    Problem(
                        str(source),
                        "format not known from the suffix; give fmt prom, csv or parquet",
                    )
                ]
            )
    if fmt not in ("prom", "csv", "parquet"):
        raise SpecError([Problem(str(source), f"unknown format {fmt!r} (prom, csv or parquet)")])
    return fmt  # type: ignore[return-value]


def _read_csv(path: Path, label: str) -> tuple[pa.Table, NDArray[np.int64], list[Problem]]:
    import pyarrow.csv as pcsv

    skipped: list[tuple[int, str]] = []

    def on_invalid(row: pcsv.InvalidRow) -> str:
        skipped.append(
            (
                -1 if row.number is None else int(row.number),
                f"{row.actual_columns} fields where the header has {row.expected_columns}",
            )
        )
        return "skip"

    try:
        with path.open("rb") as f:
            header = f.readline(MAX_LINE + 1).decode("utf-8", "replace").strip().split(",")
        header = [h.strip().strip('"') for h in header]
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(use_threads=False, block_size=1 << 24),
            parse_options=pcsv.ParseOptions(
                invalid_row_handler=on_invalid, newlines_in_values=False, ignore_empty_lines=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types={h: pa.string() for h in header},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (OSError, pa.ArrowInvalid) as exc:
        raise SpecError([Problem(label, f"cannot read the CSV file: {exc}")]) from exc
    # line numbers of the rows kept: physical rows counted from 1 (the header), less those
    # skipped
    total = table.num_rows + len(skipped)
    phys = np.arange(2, total + 2, dtype=np.int64)
    gone = np.array([s for s, _ in skipped if s > 0], dtype=np.int64)
    keep = np.ones(total, dtype=np.bool_)
    if len(gone):
        keep[np.clip(gone - 2, 0, total - 1)] = False
    lines = phys[keep][: table.num_rows]
    problems = [Problem(f"{label} line {s}" if s > 0 else label, why) for s, why in skipped]
    return table, lines, problems


def read_telemetry(
    kind: Kind,
    source: Path | str,
    fabric: OpsFabric,
    *,
    fmt: str | None = None,
    scrape_ms: int | None = None,
) -> Ingested:
    """Read a file of ``kind`` (see the module's docstring); ``scrape_ms`` is the time of
    exposition samples that carry no timestamp (without it they are problems)."""
    path = Path(source)
    label = path.name
    form = _fmt(path, fmt)
    if not path.is_file():
        raise SpecError([Problem(str(path), "no such file")])
    early: list[Problem] = []
    if form == "parquet":
        import pyarrow.parquet as pq

        try:
            names = set(pq.read_schema(path).names)
            encoded = [f.name for f in SCHEMAS[kind] if f.type == pa.string() and f.name in names]
            table = pq.read_table(path, read_dictionary=encoded, memory_map=True)
        except (OSError, pa.ArrowInvalid) as exc:
            raise SpecError([Problem(label, f"cannot read the Parquet file: {exc}")]) from exc
        where: Callable[[int], str] = lambda r: f"{label} row {r + 1}"  # noqa: E731
    else:
        if form == "csv":
            table, lines, early = _read_csv(path, label)
        else:
            table, lines, early = _parse_exposition(path, kind, label, scrape_ms)
        where = lambda r: f"{label} line {lines[r]}"  # noqa: E731
    schema = SCHEMAS[kind]
    unknown = [c for c in table.column_names if c not in schema.names]
    if unknown:
        early.append(
            Problem(
                label,
                f"column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} not in the "
                f"{kind} schema (ignored)",
            )
        )
    try:
        got = validate(kind, table, fabric, where=where)
    except SpecError as exc:
        raise SpecError([Problem(f"{label} {p.where}", p.message) for p in exc.problems]) from exc
    problems = sorted(early + list(got.problems), key=_line_of)
    if form == "prom":
        rows_read = got.rows_read
    else:
        rows_read = got.rows_read + (len(early) - (1 if unknown else 0))
    return Ingested(got.table, tuple(problems[: MAX_PROBLEMS + 1]), rows_read)


def _line_of(p: Problem) -> int:
    last = p.where.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


def guess_kind(source: Path | str, *, fmt: str | None = None) -> Kind:
    """Which table a file holds: by its columns (CSV header, Parquet schema: ``src_device``
    means probes, ``duration_us`` collectives, otherwise counters) or, for exposition text, by
    the first of our or the mapped metric names it uses."""
    path = Path(source)
    form = _fmt(path, fmt)
    if not path.is_file():
        raise SpecError([Problem(str(path), "no such file")])
    names: set[str]
    if form == "parquet":
        import pyarrow.parquet as pq

        try:
            names = set(pq.read_schema(path).names)
        except (OSError, pa.ArrowInvalid) as exc:
            raise SpecError([Problem(path.name, f"cannot read the Parquet file: {exc}")]) from exc
    elif form == "csv":
        with path.open("rb") as f:
            head = f.readline(MAX_LINE + 1).decode("utf-8", "replace")
        names = {h.strip().strip('"') for h in head.split(",")}
    else:
        for _, line in _lines(path):
            m = _SAMPLE.match(line) if line else None
            if m is None:
                continue
            kinds: tuple[Kind, ...] = ("probes", "collectives", "counters")
            for kind in kinds:
                if m.group(1) in NATIVE[kind] or (
                    kind == "counters" and m.group(1) in FOREIGN_COUNTERS
                ):
                    return kind
        raise SpecError(
            [Problem(path.name, "no sample of a metric we read (docs/ops.md lists them)")]
        )
    if "src_device" in names:
        return "probes"
    if "duration_us" in names:
        return "collectives"
    return "counters"


def read_counters(source: Path | str, fabric: OpsFabric, *, fmt: str | None = None) -> Ingested:
    """Interface counters (``COUNTER_SCHEMA``) from ``source`` (``fmt`` ``prom``, ``csv`` or
    ``parquet``; by suffix when None)."""
    return read_telemetry("counters", source, fabric, fmt=fmt)


def read_probes(source: Path | str, fabric: OpsFabric, *, fmt: str | None = None) -> Ingested:
    """Path probes (``PROBE_SCHEMA``) from ``source``."""
    return read_telemetry("probes", source, fabric, fmt=fmt)


def read_collectives(source: Path | str, fabric: OpsFabric, *, fmt: str | None = None) -> Ingested:
    """Collective timings (``COLLECTIVE_SCHEMA``) from ``source``."""
    return read_telemetry("collectives", source, fabric, fmt=fmt)


# -- writing exposition text ----------------------------------------------------------------


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_exposition(kind: Kind, table: pa.Table, *, openmetrics: bool = False) -> str:
    """A table of ``kind`` as exposition text in our metric names (Prometheus text: integer
    millisecond timestamps; ``openmetrics``: seconds, ``# EOF`` last), one family after the
    other; the readers read it back to the same rows."""
    metrics = {
        name: m
        for name, m in NATIVE[kind].items()
        if not (kind == "probes" and name in ("clusterloom_probe_sent", "clusterloom_probe_lost"))
    }
    cols = {c: table.column(c).to_pylist() for c in table.column_names}
    ts = cols["ts_ms"]
    stamps = [f"{t // 1000}.{t % 1000:03d}" if openmetrics else str(t) for t in ts]
    out: list[str] = []
    for name, m in metrics.items():
        family = name.removesuffix("_total") if name.endswith("_total") else name
        typ = "counter" if name.endswith("_total") else "gauge"
        if m.column not in cols:  # an optional column the table leaves out
            continue
        out.append(f"# TYPE {family} {typ}")
        values = cols[m.column]
        lab = [cols[c] for c, _ in m.labels]
        for i, v in enumerate(values):
            if v is None:
                continue
            if isinstance(v, bool):
                text = "1" if v else "0"
            elif isinstance(v, float):
                text = repr(v)
            else:
                text = str(v)
            labels = ",".join(
                f'{lbl}="{_esc(str(x[i]))}"' for (_, lbl), x in zip(m.labels, lab, strict=True)
            )
            out.append(f"{name}{{{labels}}} {text} {stamps[i]}")
    if openmetrics:
        out.append("# EOF")
    return "\n".join(out) + "\n"


# -- rates ----------------------------------------------------------------------------------

_RATE_OF = {
    "bytes_tx": "tx_bps",
    "bytes_rx": "rx_bps",
    "packets_tx": "tx_pps",
    "packets_rx": "rx_pps",
    "drops": "drops_ps",
    "ecn_marks": "ecn_ps",
    "pfc_pauses": "pfc_ps",
    "fec_corrected": "fec_corrected_ps",
    "fec_uncorrected": "fec_uncorrected_ps",
}


def interface_codes(table: pa.Table, fabric: OpsFabric) -> NDArray[np.int64]:
    """Each row's interface as ``2 * link + end`` (-1 where the design has none), from its
    ``device`` and ``interface`` columns."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return _pair_codes(table.column("device"), table.column("interface"), _names(fabric).interfaces)


def latest_samples(table: pa.Table, codes: NDArray[np.int64]) -> pa.Table:
    """The latest row (largest ``ts_ms``) of each interface ``codes`` names (rows of code -1
    left out), sorted by code."""
    keep = np.flatnonzero(codes >= 0)
    if len(keep) == 0:
        return table.slice(0, 0)
    ts = np.asarray(table.column("ts_ms"), dtype=np.int64)[keep]
    order = keep[np.lexsort((ts, codes[keep]))]
    c = codes[order]
    last = np.ones(len(order), dtype=np.bool_)
    last[:-1] = c[1:] != c[:-1]
    return table.take(pa.array(order[last]))


def _consecutive(
    code: NDArray[np.int64], ts: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Rows ``(a, b)`` of consecutive samples of one interface (``b`` the later, in input
    order; codes -1 left out; a repeated time gives no pair)."""
    known = np.flatnonzero(code >= 0)
    if len(known) < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    kt = ts[known]
    if np.all(kt[1:] >= kt[:-1]):  # in time order already (as scrapes come): sort by code
        order = known[np.argsort(code[known], kind="stable")]
    else:
        order = known[np.lexsort((kt, code[known]))]
    c, t = code[order], ts[order]
    pair = (c[1:] == c[:-1]) & (t[1:] > t[:-1])
    prev = np.full(len(code), -1, dtype=np.int64)
    prev[order[1:][pair]] = order[:-1][pair]
    b = np.flatnonzero(prev >= 0)
    return prev[b], b


def counter_rates(counters: pa.Table, fabric: OpsFabric) -> pa.Table:
    """Rates per interface and interval (``RATE_SCHEMA``) from cumulative counters
    (``COUNTER_SCHEMA``, rows in any order; checked ones, as the readers keep): one row per
    two consecutive samples of an interface, the interval ending at the later. See
    :func:`counter_rates_noted` for the wraps and resets."""
    return counter_rates_noted(counters, fabric)[0]


def counter_rates_noted(
    counters: pa.Table, fabric: OpsFabric
) -> tuple[pa.Table, tuple[Problem, ...]]:
    """:func:`counter_rates` and a note per counter reset.

    A counter that went back from ``a`` to ``b`` is a 64-bit wrap when the increase it then
    stands for, ``2**64 - a + b``, is at most :data:`WRAP_SLACK` times what the link could
    carry in the interval (bytes at the link's rate; packets, drops, marks, pauses and FEC
    codewords at one minimum frame each, :data:`MIN_FRAME_BITS`); otherwise it is a reset
    (the interface restarted its counters): the rate is null for that interval. Bit rates
    count the counters' bytes (layer 2, without preamble and gap). ``up`` is 1 when the
    interval's closing sample has the link up, ``flaps`` 1 when the state differs from the
    opening sample's; ``speed_bps`` the closing sample's operational speed (a gauge: not
    differenced); samples of interfaces the design lacks are ignored."""
    nm = _names(fabric)
    code = _pair_codes(counters.column("device"), counters.column("interface"), nm.interfaces)
    ts = np.asarray(counters.column("ts_ms").to_numpy(), dtype=np.int64)
    a_idx, b_idx = _consecutive(code, ts)
    link = code[b_idx] // 2
    end = (code[b_idx] % 2).astype(np.int8)
    seconds = (ts[b_idx] - ts[a_idx]) / 1000.0
    cap = nm.capacity_bps[link].astype(np.float64)
    take_b = pa.array(b_idx)
    out: dict[str, pa.Array] = {
        "ts_ms": pa.array(ts[b_idx], pa.int64()),
        "device": counters.column("device").take(take_b),
        "interface": counters.column("interface").take(take_b),
        "link": pa.array(link, pa.int64()),
        "end": pa.array(end, pa.int8()),
        "seconds": pa.array(seconds, pa.float64()),
    }
    per_s = 1.0 / seconds
    resets: list[Problem] = []
    for col, rate in _RATE_OF.items():
        arr = _as_array(counters.column(col))
        if arr.null_count:
            null = _is_null(arr)
            v = np.asarray(pc.fill_null(arr, 0), dtype=np.uint64)
            missing = null[a_idx] | null[b_idx]
        else:
            v = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.uint64)
            missing = None
        unit_bits = 8.0 if col.startswith("bytes") else float(MIN_FRAME_BITS)
        scale = 8.0 if col.startswith("bytes") else 1.0
        values = np.empty(len(b_idx), dtype=np.float64)
        reset = None
        # in slices, so that the temporaries stay small (a day's file has 5.9M rows: whole
        # columns of temporaries are mapped and faulted in afresh each time); elementwise,
        # so the values are those of the whole at once
        for lo in range(0, len(b_idx), RATE_SLICE):
            hi = min(lo + RATE_SLICE, len(b_idx))
            va, vb = v[a_idx[lo:hi]], v[b_idx[lo:hi]]
            delta = (vb - va).astype(np.float64)  # modulo 2**64: across a wrap, its increase
            back = vb < va
            if back.any():
                cut = back & (delta > WRAP_SLACK * cap[lo:hi] * seconds[lo:hi] / unit_bits)
                if cut.any():
                    if reset is None:
                        reset = np.zeros(len(b_idx), dtype=np.bool_)
                    reset[lo:hi] = cut
            values[lo:hi] = delta * per_s[lo:hi] * scale if scale != 1.0 else delta * per_s[lo:hi]
        mask = missing
        if reset is not None:
            mask = reset if mask is None else (mask | reset)
            shown = reset if missing is None else (reset & ~missing)
            for r in np.flatnonzero(shown)[:MAX_PROBLEMS].tolist():
                resets.append(
                    Problem(
                        f"{out['device'][r].as_py()}:{out['interface'][r].as_py()} "
                        f"at {int(ts[b_idx[r]])}",
                        f"{col} went back from {int(v[a_idx[r]]):,} to {int(v[b_idx[r]]):,}, "
                        "more than a "
                        "64-bit wrap explains: taken as a reset, rate null for the interval",
                    )
                )
        out[rate] = pa.array(values, pa.float64(), mask=mask)
    up = _as_array(counters.column("link_up"))
    ua, ub = up.take(pa.array(a_idx)), up.take(take_b)
    out["up"] = pc.if_else(ub, 1.0, 0.0).cast(pa.float64())
    out["flaps"] = pc.if_else(pc.not_equal(ua, ub), 1, 0).cast(pa.int32())
    # the speed is a gauge: the closing sample's (null where not exported)
    if "speed_bps" in counters.column_names:
        out["speed_bps"] = _as_array(counters.column("speed_bps")).take(take_b).cast(pa.float64())
    else:
        out["speed_bps"] = pa.nulls(len(b_idx), pa.float64())
    table = pa.table([out[f.name] for f in RATE_SCHEMA], schema=RATE_SCHEMA)
    return table, tuple(resets)
