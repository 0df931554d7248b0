"""The installed version, read once; a base module that imports nothing of clusterloom, so the
package's ``__init__`` and the modules it re-exports (``pipeline``) can both read it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("clusterloom")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
