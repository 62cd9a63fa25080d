"""``fluid.transpiler.InferenceTranspiler`` (fluid 1.5): fold each batch_norm into the conv2d before it.

A conv2d followed by batch_norm, or by elementwise_add (the conv's bias) and then batch_norm, computes

    y = ((input * W + bias) - mean) / sqrt(variance + epsilon) * scale + shift
      = input * (W * t) + ((bias - mean) * t + shift),       t = scale / sqrt(variance + epsilon)

per output channel, so the pair becomes conv2d with filter ``W * t`` and one elementwise_add of the
folded bias, and the batch_norm op goes. The folded values are new parameters, ``<name>_fuse_bn``, set in
the scope: the original program and its parameters stay as they were, so both can run side by side.
The batch_norm's ``epsilon`` attribute is used (fluid's transpiler assumed 1e-5). A pair is folded only
when nothing else reads the values in between (the conv's output, the bias sum) and the layouts are NCHW.
Every op with an ``is_test`` attribute is then set to inference mode.
"""
import sys

import numpy as np

from ..executor.scope import Scope, global_scope
from ..framework.program import Program
from ..places import CPUPlace, CUDAPlace

__all__ = ["InferenceTranspiler"]


class InferenceTranspiler:
    """``t = fluid.transpiler.InferenceTranspiler(); t.transpile(program, place, scope=None)``: rewrites
    ``program`` in place (pass a clone to keep the original)."""

    def transpile(self, program, place, scope=None):
        sys.stderr.write("InferenceTranspiler is deprecated since it's not safe. Users should be responsible "
                         "for constructing the inference program\n")
        if not isinstance(program, Program):
            raise TypeError("program should be as Program type")
        if not isinstance(place, (CPUPlace, CUDAPlace)):
            raise TypeError("place should be as CPUPlace/CUDAPlace type")
        scope = global_scope() if scope is None else scope
        if not isinstance(scope, Scope):
            raise TypeError("scope should be as Scope type or None")
        self._fuse_batch_norm(program.global_block(), place, scope)
        for op in program.global_block().ops:
            if op.has_attr("is_test"):
                op._set_attr("is_test", True)

    def _fuse_batch_norm(self, block, place, scope):
        renamed = {}  # a removed batch_norm's output -> the elementwise_add output that replaces it
        i = 0
        while i < len(block.ops) - 1:
            conv, nxt = block.ops[i], block.ops[i + 1]
            if conv.type == "conv2d" and self._foldable(block, conv, nxt):
                if nxt.type == "batch_norm":
                    bn = nxt
                    add = block._insert_op(i + 1, "elementwise_add",
                                           inputs={"X": conv.output("Output"), "Y": bn.input("Bias")},
                                           outputs={"Out": bn.output("Y")}, attrs={"axis": 1})
                    bias = None
                else:
                    add, bn = nxt, block.ops[i + 2]
                    renamed[bn.output("Y")[0]] = add.output("Out")[0]
                    bias = _value(scope, add.input("Y")[0])
                self._fold(block, scope, place, conv, add, bn, bias)
                block._remove_op(block.ops.index(bn))
                i += 1
            i += 1
        for op in block.ops:
            for slot, names in op.inputs.items():
                op.inputs[slot] = [renamed.get(n, n) for n in names]
        used = {n for op in block.ops for n in op.input_arg_names + op.output_arg_names}
        for name in [n for n in block.vars if n not in used]:
            block._remove_var(name)
        block.program._bump_version()

    @staticmethod
    def _foldable(block, conv, nxt):
        """conv2d -> batch_norm, or conv2d -> elementwise_add(axis 1, a parameter) -> batch_norm, with
        nothing else reading the conv's output or the sum."""
        ops = block.ops
        at = ops.index(conv)
        if conv.attrs.get("data_format", "NCHW") not in ("NCHW", "AnyLayout"):
            return False
        chain = [conv, nxt]
        if nxt.type == "elementwise_add":
            bias = block._find_var_recursive(nxt.input("Y")[0])
            if (at + 2 >= len(ops) or ops[at + 2].type != "batch_norm" or nxt.input("X") != conv.output("Output")
                    or nxt.attrs.get("axis", -1) != 1 or bias is None or not bias.persistable):
                return False
            chain.append(ops[at + 2])
        elif nxt.type != "batch_norm":
            return False
        bn = chain[-1]
        if bn.input("X") != chain[-2].output("Out" if len(chain) == 3 else "Output") \
                or bn.attrs.get("data_layout", "NCHW") not in ("NCHW", "AnyLayout"):
            return False
        inner = {n for op in chain[:-1] for n in op.output_arg_names}
        readers = [op for op in ops if op not in chain and inner & set(op.input_arg_names)]
        return not readers

    @staticmethod
    def _fold(block, scope, place, conv, add, bn, bias):
        shift, scale, mean, variance = (_value(scope, bn.input(slot)[0]).astype(np.float64)
                                        for slot in ("Bias", "Scale", "Mean", "Variance"))
        factor = scale / np.sqrt(variance + bn.attrs.get("epsilon", 1e-5))
        weight = _value(scope, conv.input("Filter")[0])
        folded_bias = ((np.zeros_like(mean) if bias is None else bias.reshape(-1)) - mean) * factor + shift
        folded_weight = weight * factor.reshape((-1,) + (1,) * (weight.ndim - 1))
        for op, slot, value in ((conv, "Filter", folded_weight), (add, "Y", folded_bias)):
            old = block.var(op.input(slot)[0])
            name = old.name + "_fuse_bn"
            block.create_parameter(name=name, shape=list(old.shape), dtype=old.dtype)
            op.inputs[slot] = [name]
            scope.var(name).get_tensor().set(np.asarray(value, dtype=old.dtype).reshape(old.shape), place)


def _value(scope, name):
    var = scope.find_var(name)
    if var is None or not var.is_initialized():
        raise ValueError(f"InferenceTranspiler needs the value of parameter {name!r}, which is not in the scope: "
                         "load or initialise the program's parameters first")
    return np.array(var.get_tensor())
