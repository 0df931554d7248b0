"""Running checks against an implementation: results as data, a JUnit XML report.

A check that does not apply (a feature the implementation does not claim) is ``n/a``. An
exception raised by the implementation under test while it runs a check is that check's
failure (with the exception in the detail), never a crash of the suite.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from xml.etree import ElementTree as ET

from clusterloom.conformance.checks import CHECKS, Check
from clusterloom.conformance.harness import Implementation, check_implementation

__all__ = ["CheckResult", "Status", "junit_xml", "run_suite", "write_junit"]


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NA = "n/a"


@dataclass(frozen=True)
class CheckResult:
    check: str
    group: str
    title: str
    implementation: str
    status: Status
    detail: str


def run_check(check: Check, impl: Implementation) -> CheckResult:
    def result(status: Status, detail: str) -> CheckResult:
        return CheckResult(check.id, check.group, check.title, impl.name, status, detail)

    features = frozenset(impl.features)
    if not check.applies(features):
        need = sorted(check.requires - features) or sorted(check.any_of)
        return result(Status.NA, "needs " + " or ".join(need))
    try:
        outcomes = [impl.run(s) for s in check.scenarios(impl)]
    except Exception as exc:  # the implementation under test crashed: a failed check
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return result(
            Status.FAIL,
            f"implementation crashed: {type(exc).__name__}: {exc} "
            f"({Path(where.filename).name}:{where.lineno})",
        )
    try:
        verdict = check.judge(outcomes, impl)
    except Exception as exc:  # an outcome the observable cannot be read from
        return result(Status.FAIL, f"outcome unreadable: {type(exc).__name__}: {exc}")
    return result(Status.PASS if verdict.passed else Status.FAIL, verdict.detail)


def run_suite(impl: Implementation, checks: Sequence[Check] = CHECKS) -> list[CheckResult]:
    """Every check against ``impl`` (refused first if it lacks a required method)."""
    check_implementation(impl)
    return [run_check(c, impl) for c in checks]


def junit_xml(results: Sequence[CheckResult]) -> str:
    """JUnit XML: one testsuite per implementation, one testcase per check (n/a: skipped)."""
    root = ET.Element("testsuites", name="clusterloom conformance")
    for impl in dict.fromkeys(r.implementation for r in results):
        rows = [r for r in results if r.implementation == impl]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=impl,
            tests=str(len(rows)),
            failures=str(sum(r.status is Status.FAIL for r in rows)),
            skipped=str(sum(r.status is Status.NA for r in rows)),
            errors="0",
        )
        for r in rows:
            case = ET.SubElement(
                suite, "testcase", classname=f"{impl}.{r.group}", name=f"{r.check} {r.title}"
            )
            if r.status is Status.FAIL:
                ET.SubElement(case, "failure", message=r.detail).text = r.detail
            elif r.status is Status.NA:
                ET.SubElement(case, "skipped", message=r.detail)
            else:
                ET.SubElement(case, "system-out").text = r.detail
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(results: Sequence[CheckResult], path: Path) -> Path:
    from clusterloom.atomic import atomic_write

    atomic_write(path, junit_xml(results))
    return path
