"""Base model of every spec section: frozen, no unknown fields, assignment validated."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
