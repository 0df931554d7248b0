"""The one directory the MCP tools may read and write (``clusterloom mcp --root``).

A path an agent gives is taken relative to the root (an absolute path must already lie under
it); it is resolved with every symbolic link followed, so neither ``..`` nor a link leads out.
A path outside is refused as a ``SpecError`` naming the argument, which the server turns into a
finding. Everything a tool writes goes under the root too (``Root.output``).
"""

from __future__ import annotations

from pathlib import Path

from clusterloom.errors import Problem, SpecError

__all__ = ["MAX_PATH_CHARS", "Root"]

#: characters of one path argument (Linux's PATH_MAX)
MAX_PATH_CHARS = 4096


class Root:
    """The directory the tools are confined to."""

    def __init__(self, path: str | Path) -> None:
        root = Path(path).expanduser()
        if not root.is_dir():
            raise SpecError([Problem("--root", f"{path}: not a directory")])
        self.path = root.resolve()

    def __repr__(self) -> str:
        return f"Root({str(self.path)!r})"

    def _inside(self, field: str, given: str) -> Path:
        if not given or "\x00" in given:
            raise SpecError([Problem(field, "give a path under the root, e.g. cluster.yaml")])
        raw = Path(given).expanduser()
        resolved = (raw if raw.is_absolute() else self.path / raw).resolve()
        if not resolved.is_relative_to(self.path):
            raise SpecError(
                [
                    Problem(
                        field,
                        f"{given!r} is outside the root {self.path}; give a path under it "
                        "(relative to it), or start the server with another --root",
                    )
                ]
            )
        return resolved

    def existing(self, field: str, given: str) -> Path:
        """The file or directory ``given`` (argument ``field``) under the root; it must exist."""
        path = self._inside(field, given)
        if not path.exists():
            raise SpecError(
                [Problem(field, f"{given!r}: no such file or directory under the root")]
            )
        return path

    def output(self, field: str, given: str) -> Path:
        """Where a tool may write the run directory ``given`` (argument ``field``): under the
        root, and not the root itself."""
        path = self._inside(field, given)
        if path == self.path:
            raise SpecError([Problem(field, "name a directory under the root, not the root")])
        return path

    def shown(self, path: Path) -> str:
        """``path`` as the tools report it: relative to the root (the same on every machine)."""
        return path.relative_to(self.path).as_posix()
