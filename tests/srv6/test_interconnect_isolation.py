"""Isolation as a property: over generated interconnects (connected graphs of 3-6 nodes, 1-3
tenants drawing their prefixes from one shared pool, so tenants overlap, TE policies through
random nodes) no route of any tenant table delivers to another tenant's router or to a router
that does not own the prefix, every prefix of a tenant is reached from its other attachments,
and every walk is a path over the links ending at the right node."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.spec import parse_spec
from clusterloom.srv6.interconnect import InterconnectPlan, plan_interconnect
from clusterloom.srv6.interconnect_check import isolation_findings, reachability, walk
from clusterloom.srv6.interconnect_render import render_node
from clusterloom.srv6.verify import LAB_SPEC

POOL = [f"2001:db8:{i}::/48" for i in range(6)] + [f"10.{i}.0.0/16" for i in range(6)]


@st.composite
def interconnects(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(3, 6))
    names = [f"n{i}" for i in range(n)]
    links = {(names[draw(st.integers(0, i - 1))], names[i]) for i in range(1, n)}  # a tree
    for a, b in draw(
        st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=4)
    ):
        if a != b and (b, a) not in links:
            links.add((a, b))
    tenants, policies = [], []
    for t in range(draw(st.integers(1, 3))):
        at = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        pool = draw(st.permutations(POOL))
        attachments = []
        for k, node in enumerate(at):
            count = draw(st.integers(1, 2))
            prefixes = pool[2 * k : 2 * k + count]
            ipv6 = draw(st.sampled_from(["dt6", "dx6"]))
            attachments.append({"node": node, "prefixes": prefixes, "ipv6": ipv6})
        tenants.append({"name": f"t{t}", "attachments": attachments})
        if len(at) > 1 and draw(st.booleans()):
            via = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2))
            fallback = draw(st.sampled_from(["auto", "none"]))
            policies.append(
                {
                    "name": f"p{t}",
                    "tenant": f"t{t}",
                    "from": at[0],
                    "to": at[1],
                    "via": via,
                    "fallback": fallback,
                }
            )
    return {
        "nodes": [{"name": x} for x in names],
        "links": [{"a": a, "b": b} for a, b in sorted(links)],
        "tenants": tenants,
        "policies": policies,
    }


def _plan(section: dict[str, Any]) -> InterconnectPlan:
    spec = parse_spec(LAB_SPEC + yaml.safe_dump({"interconnect": section}))
    assert spec.interconnect is not None
    return plan_interconnect(spec.interconnect)


def _expected_routes(plan: InterconnectPlan) -> int:
    """Local DT6 routes, plus per ordered pair of one tenant's attachments the other's
    prefixes, twice where a policy with a fallback joins them."""
    fallback = {(p.tenant, p.source, p.to) for p in plan.policies if p.fallback is not None}
    total = sum(len(a.prefixes6) for a in plan.attachments if a.ipv6 == "dt6")
    for a in plan.attachments:
        for b in plan.attachments:
            if a is not b and a.tenant == b.tenant:
                ways = 2 if (a.tenant, a.node, b.node) in fallback else 1
                total += ways * len(b.prefixes6 + b.prefixes4)
    return total


@settings(max_examples=60, deadline=None)
@given(interconnects())
def test_no_tenant_reaches_another_and_every_walk_follows_the_links(
    section: dict[str, Any],
) -> None:
    plan = _plan(section)
    assert isolation_findings(plan) == []
    reach = reachability(plan)
    assert len(reach) == len(plan.routes) == _expected_routes(plan)
    links = {frozenset((k.a, k.b)) for k in plan.links}
    for x in reach:
        assert x.target is not None
        assert x.target.tenant == x.source.tenant
        mine = x.target.prefixes6 + x.target.prefixes4
        assert x.route.prefix in mine
        if x.route.segments:
            hops, svc = walk(plan, x.source.node, x.route.segments)
            assert all(frozenset((h.sender, h.node)) in links for h in hops)
            assert svc is not None and svc.node == x.target.node
            assert (x.source.node, *[h.node for h in hops]) == x.route.path
    again = _plan(section)
    for n in plan.nodes:
        assert render_node(plan, n.name) == render_node(again, n.name)
