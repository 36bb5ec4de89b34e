"""The package's own source as the structure tests read it: each file parsed, and walked, once a run."""

import ast
import functools
import pathlib


@functools.cache
def parsed(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text())


@functools.cache
def walked(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node under ``tree`` (one of ``parsed``'s, or a node of one), walked once a run: the structure
    tests walk the whole package several times, and ``ast.walk`` is most of their time."""
    return tuple(ast.walk(tree))
