"""What the store hands out: frozen records, never its ORM rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["read", "write"]
ROLES: tuple[Role, ...] = ("read", "write")


@dataclass(frozen=True)
class DesignRecord:
    """A recorded design: ``version`` counts the designs of one ``name`` (the spec's cluster
    name) from 1; ``parent`` is the design it was recorded after (by default the previous
    version of the same name)."""

    id: str
    name: str
    version: int
    spec_hash: str
    parent: str | None
    created: str
    user: str
    summary: dict[str, float | int | str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        """``name@version``, a reference ``Store.design`` accepts."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class RunRecord:
    """A recorded simulation run: its scenario (``scenario.json``) and per-transport figures."""

    id: str
    design_id: str | None
    created: str
    user: str
    scenario: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Artifact:
    """One file of a design's or a run's directory: its relative path, hash, size and type."""

    name: str
    sha256: str
    size: int
    media_type: str


@dataclass(frozen=True)
class TokenRecord:
    id: str
    user: str
    role: Role
    created: str
    revoked: bool


@dataclass(frozen=True)
class IncidentRecord:
    """A stored incident (``clusterloom.ops.incident``): what the store indexes it by, and the
    incident itself (``body``, its JSON form: ``ops.incident.incident_from_json`` reads it)."""

    id: str
    design_id: str | None
    design: str
    opened_ms: int
    last_ms: int
    status: str
    proposal: str | None
    user: str
    created: str
    updated: str
    body: dict[str, Any] = field(default_factory=dict)
