"""Base model of every spec section: frozen, no unknown fields, no infinite or NaN number,
defaults validated. Numeric ranges are the annotated types of ``limits.py``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SpecModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )
