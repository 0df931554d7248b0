"""A network-namespace lab on this Linux kernel: nodes are namespaces, links veth pairs; it
applies rendered iproute2 files, captures on interfaces and sends UDP probes from Python
sockets (no ``ping``, no tcpdump). Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN).

Every namespace it makes is named ``cl6-PID-N`` (``PID`` the making process): :meth:`Lab.close`
deletes them all, also when a check failed, and :func:`sweep` deletes those of processes that
are gone (a run killed before its cleanup).

Captures use a ``PACKET_RX_RING`` (TPACKET_V2): the kernel copies each frame into the ring when
the tap sees it, so an ingress capture shows the packet as it arrived, before that node's End
rewrites the destination in place (a plain ``recv`` copies later and can show the rewrite).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import socket
import struct
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from clusterloom.errors import ClusterloomError

PREFIX = "cl6-"
NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
ETH_P_IPV6 = 0x86DD
SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_VERSION = 10
TPACKET_V2 = 1
TP_STATUS_USER = 1
PACKET_OUTGOING = 4
FRAME = 2048
FRAMES = 128


class LabError(ClusterloomError):
    """The lab cannot run here (no root, no namespaces) or a command the lab ran failed."""

    def __init__(self, message: str) -> None:
        self.problems = (message,)
        super().__init__(message)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc().setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise LabError(f"setns failed: {os.strerror(err)}")


@contextlib.contextmanager
def inside(namespace: str) -> Iterator[None]:
    """Run the block's socket calls in ``namespace`` (this thread only), then come back."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(NETNS_DIR / namespace, os.O_RDONLY)
    try:
        _setns(target)
        yield
    finally:
        _setns(home)
        os.close(target)
        os.close(home)


def run(args: list[str], stdin: str | None = None) -> str:
    """Run a command; LabError with its error text if it fails."""
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        first = (done.stderr.strip() or done.stdout.strip()).splitlines()[:3]
        raise LabError(f"{' '.join(args[:6])}...: {'; '.join(first)}")
    return done.stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep() -> list[str]:
    """Delete the lab namespaces of processes that no longer run; return their names."""
    gone: list[str] = []
    if not NETNS_DIR.is_dir():
        return gone
    for entry in sorted(NETNS_DIR.iterdir()):
        parts = entry.name.split("-")
        ours = entry.name.startswith(PREFIX) and len(parts) == 3 and parts[1].isdigit()
        if ours and not _alive(int(parts[1])):
            subprocess.run(["ip", "netns", "del", entry.name], capture_output=True, check=False)
            gone.append(entry.name)
    return gone


@dataclass(frozen=True)
class Seen:
    """One captured IPv6 frame: where, which direction, outer destination, Segments Left (None
    without an SRH) and the bytes after the outer headers."""

    node: str
    ifname: str
    outgoing: bool
    destination: bytes
    segments_left: int | None
    frame: bytes


class Ring:
    """A TPACKET_V2 receive ring on one interface of one namespace."""

    def __init__(self, namespace: str, node: str, ifname: str) -> None:
        self.node, self.ifname = node, ifname
        with inside(namespace):
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        req = struct.pack("IIII", FRAME * FRAMES, 1, FRAME, FRAMES)
        self.sock.setsockopt(SOL_PACKET, PACKET_RX_RING, req)
        self.map = mmap.mmap(self.sock.fileno(), FRAME * FRAMES)
        with inside(namespace):
            self.sock.bind((ifname, ETH_P_ALL))
        self.next = 0

    def drain(self) -> list[Seen]:
        """Frames the ring holds, in arrival order; their slots are handed back."""
        out: list[Seen] = []
        for _ in range(FRAMES):
            base = self.next * FRAME
            status, _, snap, mac = struct.unpack_from("IIIH", self.map, base)
            if not status & TP_STATUS_USER:
                break
            pkttype = self.map[base + 32 + 10]
            data = bytes(self.map[base + mac : base + mac + snap])
            struct.pack_into("I", self.map, base, 0)
            self.next = (self.next + 1) % FRAMES
            if seen := _parse(self.node, self.ifname, pkttype == PACKET_OUTGOING, data):
                out.append(seen)
        return out

    def close(self) -> None:
        self.map.close()
        self.sock.close()


def _parse(node: str, ifname: str, outgoing: bool, data: bytes) -> Seen | None:
    if len(data) < 54 or struct.unpack_from("!H", data, 12)[0] != ETH_P_IPV6:
        return None
    ip = data[14:]
    sl = ip[40 + 3] if ip[6] == 43 and len(ip) > 44 else None
    return Seen(node, ifname, outgoing, ip[24:40], sl, ip)


@dataclass
class Lab:
    """Namespaces joined by veth pairs. Use as a context manager: closing deletes them."""

    tag: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}")
    names: dict[str, str] = field(default_factory=dict)
    rings: list[Ring] = field(default_factory=list)

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def namespace(self, node: str) -> str:
        return self.names[node]

    def add_nodes(self, nodes: Iterable[str]) -> None:
        """One namespace per node, DAD off (addresses usable at once), loopback up."""
        for node in nodes:
            ns = f"{self.tag}-{len(self.names)}"
            run(["ip", "netns", "add", ns])
            self.names[node] = ns
            run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w",
                 "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
                 "net.ipv6.conf.all.keep_addr_on_down=1"])  # fmt: skip
            run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def add_links(self, links: Iterable[tuple[str, str, str, str]]) -> None:
        """veth pairs ``(node a, interface a, node b, interface b)``, both ends up."""
        batch, ups = [], []
        for a, ia, b, ib in links:
            na, nb = self.names[a], self.names[b]
            batch.append(f"link add name {ia} netns {na} type veth peer name {ib} netns {nb}")
            ups += [(na, ia), (nb, ib)]
        run(["ip", "-batch", "-"], "\n".join(batch) + "\n")
        by_ns: dict[str, list[str]] = {}
        for ns, ifname in ups:
            by_ns.setdefault(ns, []).append(f"link set {ifname} up")
        for ns, cmds in by_ns.items():
            run(["ip", "-n", ns, "-batch", "-"], "\n".join(cmds) + "\n")

    def apply(self, node: str, text: str) -> None:
        """Run a rendered file in ``node``: ``sysctl`` lines one by one, ``ip -6`` lines as one
        batch; a failing command raises LabError naming it."""
        ns = self.names[node]
        batch = []
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            if line.startswith("sysctl "):
                run(["ip", "netns", "exec", ns, *line.split()])
            elif line.startswith("ip -6 "):
                batch.append(line[len("ip -6 ") :])
            else:
                raise LabError(f"{node}: cannot apply {line!r}")
        if batch:
            run(["ip", "-6", "-n", ns, "-batch", "-"], "\n".join(batch) + "\n")

    def capture(self, node: str, ifname: str) -> Ring:
        ring = Ring(self.names[node], node, ifname)
        self.rings.append(ring)
        return ring

    def drain(self) -> list[Seen]:
        return [s for r in self.rings for s in r.drain()]

    def send_udp(self, node: str, source: str, sport: int, target: str, payload: bytes) -> None:
        """One UDP datagram from ``[source]:sport`` to ``[target]:9`` in ``node``."""
        with inside(self.names[node]):
            s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        try:
            s.bind((source, sport))
            s.sendto(payload, (target, 9))
        finally:
            s.close()

    def receiver(self, node: str, address: str) -> socket.socket:
        """A non-blocking UDP socket bound to ``[address]:9`` in ``node``."""
        with inside(self.names[node]):
            s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.bind((address, 9))
        s.setblocking(False)
        return s

    def ip(self, node: str, *args: str) -> str:
        return run(["ip", "-n", self.names[node], *args])

    def close(self) -> None:
        """Close every capture and delete every namespace this lab made."""
        for ring in self.rings:
            with contextlib.suppress(OSError, ValueError, BufferError):
                ring.close()
        self.rings.clear()
        for ns in self.names.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        self.names.clear()


def can_make_namespaces() -> str | None:
    """None when this process can make namespaces, else why not (one line)."""
    if os.geteuid() != 0:
        return "the kernel lab needs root (network namespaces and veth pairs); run as root"
    probe = f"{PREFIX}{os.getpid()}-probe"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"cannot create a network namespace: {done.stderr.strip() or 'ip netns add failed'}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return None
