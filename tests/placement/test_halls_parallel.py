"""The hall models solved as tasks on an executor give the serial run's placement, byte for
byte: moe-2k's four scalable units on two halls (two units each), so there are two hall models
that do not depend on each other."""

from __future__ import annotations

import pickle
from typing import Any

import yaml

from clusterloom.examples import example_text
from clusterloom.exec import LocalExecutor, Task
from clusterloom.fabric import design_fabric, fabric_names
from clusterloom.placement import place
from clusterloom.spec import parse_spec


class _Counting(LocalExecutor):
    """The local pool, recording what it was given."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.given: list[Task] = []

    def _submit(self, task: Task) -> Any:
        self.given.append(task)
        return super()._submit(task)


def test_hall_models_on_a_pool_place_every_rack_where_the_serial_run_does() -> None:
    doc = yaml.safe_load(example_text("moe-2k"))
    hall = doc["site"]["buildings"][0]["halls"][0]
    hall["template"]["rows"] = 2
    doc["site"]["buildings"][0]["halls"] = [hall, {**hall, "name": "h2", "x_m": 20}]
    doc.pop("job")
    spec = parse_spec(yaml.safe_dump(doc))
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    serial = place(spec, fabrics)
    with _Counting(2) as ex:
        pooled = place(spec, fabrics, executor=ex)
    halls = [s for s in serial.solves if s.name != "campus"]
    assert len(halls) == 2
    assert sorted(t.inputs["hall"] for t in ex.given) == [0, 1]  # one task per hall model
    assert pooled.rack_position.tobytes() == serial.rack_position.tobytes()
    assert pooled.solves == serial.solves
    assert pickle.dumps(pooled.lengths) == pickle.dumps(serial.lengths)
    assert pooled.findings == serial.findings
