"""Imports flow down: the package's parts (subpackages and top-level modules) import each other without
cycles, and the op checker does not depend on the feeding runtime."""
import ast
import pathlib
import subprocess
import sys

import networkx as nx

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "minifluid"


def _imports(path):
    """The ``minifluid...`` modules (or names in them) that ``path`` imports, as dotted names."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    package = list(rel.parts[:-1])  # the package a relative import starts from
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if node.module:
                yield target
            else:
                yield from (f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def _part(dotted):
    """minifluid.framework.block -> 'framework'; minifluid.backward -> 'backward'; minifluid -> None."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "minifluid" else None


def part_graph():
    g = nx.DiGraph()
    for path in PACKAGE.rglob("*.py"):
        src = _part(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for target in _imports(path):
            dst = _part(target)
            if src is not None and dst is not None and dst != src:
                g.add_edge(src, dst)
    return g


def test_parts_import_each_other_without_cycles():
    g = part_graph()
    assert g.has_edge("framework", "ops") and g.has_edge("executor", "framework")  # the graph is real
    cycles = list(nx.simple_cycles(g))
    assert not cycles, f"import cycles between parts of minifluid: {cycles}"


def test_ops_and_the_op_checker_stay_below_the_runtime():
    g = part_graph()
    assert set(g.successors("ops")) <= {"dtypes"}, sorted(g.successors("ops"))
    assert "data" not in set(g.successors("testing")), "minifluid.testing must not import the feeding runtime"


def test_layers_io_keeps_no_hook_that_the_feeding_runtime_must_fill_first():
    """layers/io.py builds graphs on its own: no module state a later import has to set (it had a reader
    runtime factory that minifluid.data.loader installed when imported); py_reader lives with the runtime."""
    tree = ast.parse((PACKAGE / "layers" / "io.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Global)]
    import minifluid
    from minifluid.data import py_reader
    assert minifluid.layers.py_reader is minifluid.layers.io.py_reader is py_reader.py_reader


def test_importing_minifluid_does_not_import_networkx():
    """networkx takes a good part of a second to import; only programs with sub-blocks need it."""
    out = subprocess.run([sys.executable, "-c", "import sys, minifluid; print('networkx' in sys.modules)"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
