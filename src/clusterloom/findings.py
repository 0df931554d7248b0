"""Validation results as data: every check returns findings instead of printing or raising."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    """How much a finding matters. Errors make a design unbuildable or wrong."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class Finding:
    """One result of a check: how bad, a stable code, a message with numbers, and where."""

    severity: Severity
    code: str
    message: str
    where: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "severity": self.severity.value,
            "code": self.code,
            "message": self.message,
            "where": self.where,
        }


def worst(findings: Iterable[Finding]) -> Severity | None:
    """The most severe level among ``findings`` (None when there are none)."""
    levels = [f.severity for f in findings]
    return max(levels, key=lambda s: s.rank) if levels else None


def errors(findings: Iterable[Finding]) -> list[Finding]:
    """Only the findings of severity error."""
    return [f for f in findings if f.severity is Severity.ERROR]
