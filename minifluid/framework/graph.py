"""Graph analysis with networkx: an op graph per Block (dependency order, pruning for fetches,
cycles, DOT export) and the graph of a Program's blocks (which block runs which).

The Executor runs ops in list order (as fluid does); these helpers answer questions
about that list without re-implementing graph algorithms. They run when plans are built
or programs are drawn, never per run.
"""
import networkx as nx

from ..ops.registry import OpRole
from .block import Block

__all__ = ["block_cycle", "block_graph", "find_cycle", "op_graph", "ops_needed_for", "to_dot",
           "topological_op_order"]


def op_graph(block):
    """A DiGraph with one node per op index; edge a -> b when op b reads a var op a last wrote.

    Node attrs: ``type``; edge attrs: ``vars`` (the names that flow).
    """
    g = nx.DiGraph()
    last_writer = {}
    for i, op in enumerate(block.ops):
        g.add_node(i, type=op.type)
        for name in op.input_arg_names:
            src = last_writer.get(name)
            if src is not None and src != i:
                if g.has_edge(src, i):
                    g.edges[src, i]["vars"].append(name)
                else:
                    g.add_edge(src, i, vars=[name])
        for name in op.output_arg_names:
            last_writer[name] = i
    return g


def ops_needed_for(block, fetch_names, fed=(), target_ops=()):
    """Indices (in list order) of the ops the fetches need, stopping at the ``fed`` variables: an op
    is needed when it writes a fetched variable, is one of ``target_ops`` (indices), or writes one that a
    needed op after it reads (any earlier writer of it: an in-place update keeps what it updates); an op
    that writes only fed variables is not (the feed stands in for it). An optimizer op (op_role Optimize)
    is needed only as one of ``target_ops``: it rewrites the parameters the forward ops read, which is no
    dependency of theirs (as in fluid's prune). ``Program._prune_with_input`` keeps these ops.
    """
    fed, target_ops = set(fed), set(target_ops)
    wanted = set(fetch_names) - fed
    g = nx.DiGraph()
    writers, targets = {}, []
    for i, op in enumerate(block.ops):
        outs = set(op.output_arg_names) - fed
        optimize = bool(int(op.attrs.get("op_role", 0)) & OpRole.Optimize)
        if i in target_ops:
            targets.append(i)
        elif not outs or optimize:
            continue
        elif outs & wanted:
            targets.append(i)
        g.add_node(i)
        for name in set(op.input_arg_names) - fed:
            g.add_edges_from((w, i) for w in writers.get(name, ()))
        if not optimize:
            for name in outs:
                writers.setdefault(name, []).append(i)
    needed = set(targets)
    for t in targets:
        needed |= nx.ancestors(g, t)
    return sorted(needed)


def topological_op_order(block):
    """A dependency-respecting order of op indices (list order breaks ties)."""
    return list(nx.lexicographical_topological_sort(op_graph(block)))


def find_cycle(block):
    """A cycle of op indices in the variable-level graph, or None.

    Built on variables (var -> op -> var), so an op that reads and writes the same
    variable (in-place updates such as optimizers) is not reported.
    """
    g = nx.DiGraph()
    for i, op in enumerate(block.ops):
        for name in op.input_arg_names:
            g.add_edge(("var", name), ("op", i))
        for name in op.output_arg_names:
            if name not in op.input_arg_names:
                g.add_edge(("op", i), ("var", name))
    try:
        return [n[1] for n, _ in nx.find_cycle(g) if n[0] == "op"]
    except nx.NetworkXNoCycle:
        return None


def to_dot(block, name="program"):
    """Graphviz DOT text for the op graph: ops as boxes, variables as ellipses."""
    lines = [f'digraph "{name}" {{', "  rankdir=TB;"]
    seen_vars = set()
    for i, op in enumerate(block.ops):
        lines.append(f'  op{i} [label="{op.type}", shape=box, style=filled, fillcolor="#dde8f7"];')
        for name in op.input_arg_names + op.output_arg_names:
            if name not in seen_vars:
                seen_vars.add(name)
                lines.append(f'  "{name}" [shape=ellipse];')
        for name in op.input_arg_names:
            lines.append(f'  "{name}" -> op{i};')
        for name in op.output_arg_names:
            lines.append(f'  op{i} -> "{name}";')
    lines.append("}")
    return "\n".join(lines)


def _blocks_in(value):
    if isinstance(value, Block):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Block)]
    return []


def block_graph(program):
    """A DiGraph of block indices: parent -> child for nesting, owner -> block for an op that runs a
    sub-block (a Block among its attrs, as fluid's ``sub_block``). Edge attr ``ops``: the op types."""
    g = nx.DiGraph()
    for block in program.blocks:
        g.add_node(block.idx)
        if block.parent_idx >= 0:
            g.add_edge(block.parent_idx, block.idx, ops=[])
        for op in block.ops:
            for value in op.attrs.values():
                for sub in _blocks_in(value):
                    if not g.has_edge(block.idx, sub.idx):
                        g.add_edge(block.idx, sub.idx, ops=[])
                    g.edges[block.idx, sub.idx]["ops"].append(op.type)
    return g


def block_cycle(program):
    """Block indices that run (or nest) each other in a cycle, or None: such a program never ends."""
    try:
        return [a for a, _ in nx.find_cycle(block_graph(program))]
    except nx.NetworkXNoCycle:
        return None
