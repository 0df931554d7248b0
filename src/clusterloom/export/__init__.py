"""Every data file a design is written out as: ``design.json`` (the stable, versioned
document), ``bom.csv`` and ``options.csv``, NetBox bulk-import CSVs, placement and cabling
files, graph files of small fabrics, the workload's files and a prediction's results. Every file
is written atomically; names are stable (``naming``) and outputs are byte-identical for the same
spec. The pages (``report.html``, ``simulation.html``) are the ``report`` package's; a whole run,
files and pages, is written by :mod:`clusterloom.write`, so neither package imports the other.
"""

from __future__ import annotations

from pathlib import Path

from clusterloom.atomic import StrPath, atomic_open, atomic_write
from clusterloom.export.bom_csv import write_bom_csv, write_options_csv
from clusterloom.export.cabling_files import write_cabling
from clusterloom.export.design_json import design_document, design_schema, write_design_json
from clusterloom.export.graph import (
    GRAPH_LINK_LIMIT,
    graphable,
    to_networkx,
    write_graphml,
    write_node_link,
)
from clusterloom.export.growth_files import write_growth
from clusterloom.export.netbox import write_devices, write_interfaces
from clusterloom.export.netbox_setup import write_netbox_setup
from clusterloom.export.placement_files import write_placement
from clusterloom.export.workload_files import (
    write_flows,
    write_traffic_matrix,
    write_workload_json,
)
from clusterloom.pipeline import Design

__all__ = [
    "GRAPH_LINK_LIMIT",
    "atomic_open",
    "atomic_write",
    "design_document",
    "design_schema",
    "graphable",
    "to_networkx",
    "write_bom_csv",
    "write_cabling",
    "write_design_json",
    "write_devices",
    "write_exports",
    "write_flows",
    "write_graphml",
    "write_interfaces",
    "write_node_link",
    "write_options_csv",
    "write_placement",
    "write_traffic_matrix",
    "write_workload_json",
]


def write_exports(design: Design, out_dir: StrPath, *, flows: bool = False) -> list[Path]:
    """Write every data file of ``design`` into ``out_dir`` (created when missing), each file
        atomically, and return the paths written in this order: ``design.json``, ``bom.csv``,
        ``options.csv``, ``netbox/devices.csv``, ``netbox/interfaces.csv``, with a placement the
    files of ``write_placement`` (``placement/racks.csv``, ``placement/elevations.csv``, NetBox
    sites, locations, racks and rack devices), with a cabling the files of ``write_cabling``
    (cut sheet, trunks, pull list, cabling BOM, NetBox ``cables.csv`` and the plant), NetBox's
    prerequisites and ``netbox/IMPORT_ORDER.txt`` (``write_netbox_setup``), then per fabric
        ``<fabric>.nodelink.json`` and ``<fabric>.graphml`` (only for fabrics of at most
        ``GRAPH_LINK_LIMIT`` links), with a job ``workload.json``, ``traffic_matrix.csv`` and,
        when ``flows`` is set, ``flows.npz`` (every flow of a step: hundreds of MB on the
        largest examples). No page: ``clusterloom.write.write_design`` adds the prediction's
        ``simulation/`` and ``report.html``.

        Raises ``OutputError`` when a file cannot be written; files written before it stay.
    """
    out = Path(out_dir)
    catalog = design.spec.resolved_catalog()
    paths = [
        write_design_json(design, out / "design.json"),
        write_bom_csv(design, out / "bom.csv"),
        write_options_csv(design, out / "options.csv"),
        write_devices(design, out / "netbox" / "devices.csv"),
        write_interfaces(design, out / "netbox" / "interfaces.csv"),
    ]
    paths += write_placement(design, out)
    paths += write_cabling(design, out)
    paths += write_growth(design, out)
    paths += write_netbox_setup(design, out)
    for fd in design.fabrics:
        if not graphable(fd.topology):
            continue
        graph = to_networkx(fd.topology, catalog=catalog)
        for path, writer in (
            (out / f"{fd.name}.nodelink.json", write_node_link),
            (out / f"{fd.name}.graphml", write_graphml),
        ):
            if writer(fd.topology, path, catalog=catalog, graph=graph):
                paths.append(path)
    if design.workload is not None:
        paths.append(write_workload_json(design, out / "workload.json"))
        paths.append(write_traffic_matrix(design.workload, out / "traffic_matrix.csv"))
        if flows:
            paths.append(write_flows(design.workload, out / "flows.npz"))
    return paths
