"""Write a Program's op graph as Graphviz DOT (and a PNG when matplotlib is installed).

Usage:
    python tools/draw_program.py [--example mlp|lenet] [--out program.dot] [--png program.png]
or from code: ``draw(program, "out.dot", png="out.png")``.
"""
import argparse
import sys

import networkx as nx

import minifluid as fluid
from minifluid.framework import graph


def draw(program, dot_path, png=None, block_idx=0):
    block = program.block(block_idx)
    with open(dot_path, "w") as f:
        f.write(graph.to_dot(block) + "\n")
    if png:
        try:
            import matplotlib  # noqa: PLC0415 - optional
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt  # noqa: PLC0415
        except ImportError:
            print("matplotlib is not installed: wrote only the DOT file", file=sys.stderr)
            return dot_path, None
        g = graph.op_graph(block)
        labels = {i: f"{i}:{data['type']}" for i, data in g.nodes(data=True)}
        layers = {i: d for d, nodes in enumerate(nx.topological_generations(g)) for i in nodes}
        nx.set_node_attributes(g, layers, "layer")
        pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal")
        plt.figure(figsize=(8, max(4, len(set(layers.values())) * 0.6)))
        nx.draw_networkx(g, pos, labels=labels, node_color="#dde8f7", node_shape="s", font_size=7, arrows=True)
        plt.axis("off")
        plt.savefig(png, dpi=120, bbox_inches="tight")
        plt.close()
    return dot_path, png


def _example(kind):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        if kind == "lenet":
            x = fluid.data("image", [None, 1, 8, 8])
            h = fluid.layers.pool2d(fluid.layers.conv2d(x, 8, 3, padding=1, act="relu"), 2, pool_stride=2)
        else:
            x = fluid.data("image", [None, 64])
            h = fluid.layers.fc(x, 32, act="relu")
        label = fluid.data("label", [None, 1], dtype="int64")
        loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 10), label))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--example", choices=["mlp", "lenet"], default="mlp")
    ap.add_argument("--out", default="program.dot")
    ap.add_argument("--png", default=None)
    args = ap.parse_args()
    dot, png = draw(_example(args.example), args.out, args.png)
    print(f"wrote {dot}" + (f" and {png}" if png else ""))


if __name__ == "__main__":
    main()
