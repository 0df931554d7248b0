"""SRv6 for a designed fabric: addressing plan, path programs, endpoint failover, rendering
and the proof on a Linux kernel. A lifecycle part: it reads designs, designs never import it."""

from clusterloom.srv6.encoding import Format, capacity, container, next_csid
from clusterloom.srv6.plan import AddressPlan, PlanOptions, plan_addresses
from clusterloom.srv6.programs import Programs, default_evs, hops_of, programs_for

__all__ = [
    "AddressPlan",
    "Format",
    "PlanOptions",
    "Programs",
    "capacity",
    "container",
    "default_evs",
    "hops_of",
    "next_csid",
    "plan_addresses",
    "programs_for",
]
