"""The package's own source as the structure tests read it: each file parsed once a run."""

import ast
import functools
import pathlib


@functools.cache
def parsed(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text())
