"""Built-in example specs (the same files as the repository's ``examples/`` folder)."""

from __future__ import annotations

from importlib import resources

from clusterloom.errors import Problem, SpecError

DEFAULT_EXAMPLE = "hgx-1k-roce"


def example_names() -> tuple[str, ...]:
    """Names of the built-in examples, sorted."""
    files = resources.files(__name__).iterdir()
    return tuple(sorted(f.name[: -len(".yaml")] for f in files if f.name.endswith(".yaml")))


def example_text(name: str) -> str:
    """The YAML text of example ``name``."""
    if name not in example_names():
        known = ", ".join(example_names())
        raise SpecError([Problem("--example", f"no example '{name}'; known: {known}")])
    return resources.files(__name__).joinpath(f"{name}.yaml").read_text("utf-8")
