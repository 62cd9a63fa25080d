"""Gradients of ops that run a sub-block (while, conditional_block): the grad-op builders that
append_backward calls when it meets one. Each builds a gradient block once, with the same walk as
backward.py, and appends one ``while_grad`` / ``conditional_block_grad`` op that runs it over the
forward's kept step scopes (NOTE [ Sub-block gradients ] in ops/control_flow.py).

NOTE [ What a gradient block can and cannot follow ]
* Tensor arrays carry state from step to step (StaticRNN and DynamicRNN memories, outputs): their
  gradients accumulate in place, entry by entry, so every step's contribution reaches the step that
  wrote the entry.
* Outside tensors the block only reads (parameters, inputs): their gradients are summed over steps.
* An outside tensor the block writes and does not read gets the incoming gradient in its last step.
* A loop counter advanced in place by ``increment`` is stepped back by an ``increment`` of the opposite
  step at the same point of the gradient block (as fluid's increment gradient does), so the gradient ops
  of each step read the index that step used, and the ops before the loop read the index they used
  (ops/control_flow.py). So one backward pass may cross a loop: a second one over the same loop is
  refused (compute every gradient in one ``fluid.gradients`` call).
* A float tensor that the block both reads and overwrites (state carried in a plain variable) would need
  every step's old value: building its gradient is refused with a message saying to carry it in a tensor
  array. A float counter the block only advances by ``increment`` is no such state: it is stepped back.
"""
from .backward import EMPTY_VAR_NAME, _Walk
from .framework.block import Block
from .framework.variable import VarType
from .ops.registry import register_grad

__all__ = ["outer_reads_and_writes"]


def outer_reads_and_writes(block):
    """(reads, writes): names the ops of ``block`` (and of blocks they run) read before writing them, and
    names they write, keeping those not declared in ``block`` itself, in first-use order."""
    reads, writes, written = {}, {}, set()
    for op in block.ops:
        ins, outs = op.input_arg_names, op.output_arg_names
        sub = op.attrs.get("sub_block")
        if isinstance(sub, Block):
            sub_reads, sub_writes = outer_reads_and_writes(sub)
            ins, outs = ins + sub_reads, outs + sub_writes
        for name in ins:
            if name not in written:
                reads.setdefault(name)
        for name in outs:
            written.add(name)
            writes.setdefault(name)
    return [n for n in reads if n not in block.vars], [n for n in writes if n not in block.vars]


def _is_array(var):
    return var is not None and var.type == VarType.LOD_TENSOR_ARRAY


def _counters(block):
    """Outside variables that the ops of ``block`` write only by an in-place ``increment``: loop counters,
    stepped back by the gradient block (see the NOTE), never state whose old values are lost."""
    written_otherwise = {n for op in block.ops if not _is_counter_step(op, block) for n in op.output_arg_names}
    return {op.inputs["X"][0] for op in block.ops if _is_counter_step(op, block)} - written_otherwise


def _is_counter_step(op, block):
    return op.type == "increment" and op.inputs["X"] == op.outputs["Out"] and op.inputs["X"][0] not in block.vars


def _builder(grad_type, in_slot, scopes_slot):
    def build(op, grads):
        if getattr(op, "_grad_built", False):
            raise NotImplementedError(
                f"A second backward pass over the same {op.type!r} op is not supported: its gradient steps the loop "
                "counter back to where it started, as fluid's does. Compute every gradient in one pass "
                "(fluid.gradients(loss, parameters + inputs)).")
        op._grad_built = True
        fwd = op.attrs["sub_block"]
        program = fwd.program
        xs = op.inputs.get(in_slot) or []
        x_grads = grads.input(in_slot) or [EMPTY_VAR_NAME] * len(xs)
        outs = op.outputs.get("Out") or []
        out_grads = grads.output("Out")
        current = program.current_block_idx
        gblock = program._create_block(parent_idx=fwd.idx)
        program.current_block_idx = current
        try:
            return _build_grad_block(op, grads, gblock, xs, x_grads, outs, out_grads)
        except BaseException:
            if program.blocks[-1] is gblock:  # a refused gradient leaves no block behind
                program.blocks.pop()
            raise

    def _build_grad_block(op, grads, gblock, xs, x_grads, outs, out_grads):
        fwd = op.attrs["sub_block"]
        walk = _Walk(gblock, set(), [])
        walk.ops = list(fwd.ops)
        seeds = {x for x, g in zip(xs, x_grads) if g != EMPTY_VAR_NAME}
        walk.array_grads = {n: g for n, g in zip(xs + outs, x_grads + out_grads)
                            if g and g != EMPTY_VAR_NAME and _is_array(walk._var(n))}
        reads, writes = outer_reads_and_writes(fwd)
        req = walk.requires_grad(seeds)
        while not (req & set(reads)) <= seeds:  # state carried round the loop: one more pass
            seeds |= req & set(reads)
            req = walk.requires_grad(seeds)
        counted = _counters(fwd)
        carried = [n for n in reads if n in writes and n in req and not _is_array(walk._var(n)) and n not in counted]
        if carried:
            raise NotImplementedError(
                f"Cannot build the gradient of {op.type!r}: its block reads and overwrites the float variable(s) "
                f"{carried}, so each step's old value is lost. Carry such state in a tensor array "
                "(fluid.layers.array_write / array_read at the step index), as StaticRNN and DynamicRNN do.")
        targets, seed_names, seed_grads = [], [], []
        for name, g in zip(outs, out_grads):
            if name not in req:
                continue
            var = walk._var(name)
            if _is_array(var) and (g or name in reads):  # later steps read it: their gradients flow in
                targets.append((name, g or None))
            elif not g:
                continue
            else:
                local = gblock.create_var(name=f"{g}@SEED", shape=var.shape, dtype=var.dtype).name
                targets.append((name, local))
                seed_names.append(local)
                seed_grads.append(g)
        steps = dict((id(o), need) for o, need in walk.plan([t for t, _ in targets], req))
        for name, given in targets:
            walk._contribution(name, fixed=given)
            walk._finish(name)
        counters = []
        for fop in reversed(walk.ops):
            if id(fop) in steps:
                walk.emit(fop, steps[id(fop)])
            elif _is_counter_step(fop, fwd):  # a loop counter: step it back (see the NOTE)
                walk._append("increment", {"X": fop.inputs["X"]}, {"Out": fop.inputs["X"]},
                             {"step": -float(fop.attrs["step"])})
                counters.append(fop.inputs["X"][0])
        locals_ = []
        for x, g in zip(xs, x_grads):
            if g == EMPTY_VAR_NAME or _is_array(walk._var(x)):
                locals_.append("")
            else:
                locals_.append(walk.grad_of.get(x, EMPTY_VAR_NAME))
        inputs = {"X": xs, "Out@GRAD": seed_grads, scopes_slot: op.outputs[scopes_slot]}
        attrs = {"sub_block": gblock, "forward_block": fwd, "x_grad_locals": locals_, "seeds": seed_names,
                 "counters": counters}
        return [(grad_type, inputs, {"X@GRAD": x_grads}, attrs)]
    return build


register_grad("while", builder=True)(_builder("while_grad", "X", "StepScopes"))
register_grad("conditional_block", builder=True)(_builder("conditional_block_grad", "Input", "Scope"))

