"""Code structure read from the source: the stages' largest modules are lists of named steps,
no function in them longer than a screenful and a half."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "clusterloom"
MAX_LINES = 120


def _long_functions(path: Path, limit: int) -> list[str]:
    tree = ast.parse(path.read_text())
    return sorted(
        f"{node.name} ({(node.end_lineno or node.lineno) - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > limit
    )


@pytest.mark.parametrize("module", ["cabling/stage.py", "placement/solve.py"])
def test_no_function_is_longer_than_120_lines(module: str) -> None:
    assert _long_functions(ROOT / module, MAX_LINES) == []


def test_the_length_check_counts_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(
        f"def long() -> None:\n{body}\n\n\ndef short() -> None:\n    pass\n"
    )
    assert _long_functions(tmp_path / "long.py", MAX_LINES) == [f"long ({MAX_LINES + 1} lines)"]
