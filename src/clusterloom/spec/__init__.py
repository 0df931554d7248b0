"""The cluster spec: the one input document, its models, loading and the equipment catalog."""

from clusterloom.spec.catalog import Catalog, MediaModel, RackModel, SwitchModel, builtin_catalog
from clusterloom.spec.growth import GrowthSpec
from clusterloom.spec.load import check_spec, compute_rack_name, load_spec, parse_spec, spec_hash
from clusterloom.spec.models import (
    LINK_TIERS,
    SPEC_VERSION,
    SWITCH_ROLES,
    ClusterSpec,
    ComputeSpec,
    FabricSpec,
    LinkTier,
    SwitchRole,
)
from clusterloom.spec.site import SiteSpec

__all__ = [
    "LINK_TIERS",
    "SPEC_VERSION",
    "SWITCH_ROLES",
    "Catalog",
    "ClusterSpec",
    "ComputeSpec",
    "FabricSpec",
    "GrowthSpec",
    "LinkTier",
    "MediaModel",
    "RackModel",
    "SiteSpec",
    "SwitchModel",
    "SwitchRole",
    "builtin_catalog",
    "check_spec",
    "compute_rack_name",
    "load_spec",
    "parse_spec",
    "spec_hash",
]
