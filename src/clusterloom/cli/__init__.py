"""The ``clusterloom`` command line (Typer + Rich); thin over the library."""
