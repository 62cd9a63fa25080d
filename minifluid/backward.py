"""append_backward / gradients: a reverse walk that appends one ``<type>_grad`` op per forward op.

Everything op-specific comes from the registry (``OpSpec.grad``, ``no_grad_inputs``); this module
only decides *which* gradients exist and wires names.

NOTE [ Which gradients backward computes ]
A variable gets a gradient only when all of these hold:
  * it is a float tensor, not ``stop_gradient`` and not in ``no_grad_set``;
  * it depends on a *seed*: a parameter being trained or a variable no op writes whose ``stop_gradient``
    the user set False (``append_backward``), or one of the ``inputs`` (``gradients``), through ops
    that have a registered gradient, entering them
    through slots that are not ``no_grad_inputs``;
  * some op consuming it has an output with a gradient (so it lies on a path to a target).
A grad op is appended for a forward op only if one of its outputs has a gradient and one of its
inputs needs one, and it carries ``<in>@GRAD`` output slots only for the inputs that need one.
So data inputs (the image fed to the first ``fc``, integer labels) never get gradients, and the
matmul that would produce them is never run.

NOTE [ Gradient accumulation ]
A variable read by k > 1 ops (or twice by one op) receives k gradient contributions. A first
planning pass counts them; contributions are then named ``x@GRAD@RENAME@0 .. k-1`` and a ``sum``
op right after the last one writes ``x@GRAD``. With a single contribution it is written to
``x@GRAD`` directly. Output gradients missing from a duplicable slot (one unused ``split`` output)
are filled with ``fill_zeros_like`` (a grad-op builder is told None instead); a missing non-duplicable
one reaches the kernel as None.
A tensor array's contributions all go to one array of gradients, ``x@GRAD`` (``x@GRAD@k`` in a later
backward pass over the same program), declared beside the array:
its grad ops accumulate into it in place (ops/tensor_array.py), so no ``sum`` op is needed.
NOTE [ Repeated backward passes ]
A second ``append_backward`` / ``gradients`` over the same block (a second optimizer's ``minimize``, a
gradient of a gradient) must not write the gradients the first one made: a gradient name the block
already has from an earlier pass gets a unique variant (``x@GRAD_0``), as fluid renames them, so each
pass's optimizer ops and returned gradients keep their own values.
Sub-blocks (while, conditional_block) build their gradient blocks with this walk: backward_blocks.py.

NOTE [ Undoing in-place increments ]
A grad op reads its forward op's inputs by name, after the whole forward pass: a counter that an
``increment`` advanced in place after the forward op read it (array_write(x, i); increment(i); ...)
holds a later value by then. As in fluid, when the user made the counter differentiable
(``i.stop_gradient = False``) and a grad op reads it, the backward pass runs the opposite increment at
the mirrored position, so each grad op sees the value its forward op saw.
"""
from collections import Counter

from .backward_paths import (_append_grad_suffix_, _find_no_grad_vars, _find_op_path_,  # noqa: F401 (fluid's
                             _get_no_grad_set_name, _get_stop_gradients_, _strip_grad_suffix_)  # helpers)
from .backward_recompute import Recompute
from .dtypes import is_float_dtype
from .errors import check_type
from .framework import unique_name
from .framework.variable import Variable, VarType
from .ops.registry import EMPTY_VAR_NAME, OpRole, get_op_spec, grad_var_name

__all__ = ["append_backward", "gradients", "EMPTY_VAR_NAME"]
_RENAME = "@RENAME@"
_APPEND, _GRADIENTS = "fluid.backward.append_backward", "fluid.backward.gradients"


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple, set, frozenset)) else [x]



class _Walk:
    """One backward construction over ``block`` (see the NOTEs above)."""

    def __init__(self, block, no_grad_set, callbacks):
        self.block = block
        self.no_grad = no_grad_set
        self.callbacks = callbacks
        self.ops = list(block.ops)
        self.count = Counter()     # forward var -> number of gradient contributions
        self.emitted = Counter()   # forward var -> contributions named so far
        self.parts = {}            # forward var -> contribution names
        self.grad_of = {}          # forward var -> name of its complete gradient
        self.array_grads = {}      # tensor array -> its array of gradients in this pass
        self.made = set()          # gradient names this pass declared

    def _var(self, name):
        return self.block._find_var_recursive(name)

    def _differentiable(self, name):
        v = self._var(name)
        return (v is not None and name not in self.no_grad and not v.stop_gradient
                and v.dtype is not None and is_float_dtype(v.dtype))

    def requires_grad(self, seeds):
        """Forward pass: the variables whose gradient can be non-zero for some seed."""
        req = {n for n in seeds if self._differentiable(n)}
        for op in self.ops:
            spec = get_op_spec(op.type)
            if not spec.differentiates(op) and spec.forward is None:  # a grad op without one: plan() refuses it
                continue
            if any(n in req for slot, names in op.inputs.items() if slot not in spec.no_grad_inputs
                   for n in names):
                req.update(n for n in op.output_arg_names if self._differentiable(n))
        return req

    def plan(self, targets, req):
        """Reverse pass without emitting: (op, {slot: [needs grad per var]}) in backward order."""
        has_grad = set(targets)
        self.count.update(targets)
        steps = []
        for op in reversed(self.ops):
            spec = get_op_spec(op.type)
            if not any(n in has_grad for n in op.output_arg_names):
                continue
            if not spec.differentiates(op):
                if spec.forward is not None and any(n in req for n in op.input_arg_names):
                    raise NotImplementedError(
                        f"The gradient of {op.type!r} (a gradient op of an earlier backward pass) is not supported: "
                        f"a gradient of a gradient flows only through {_grad_of_grad_ops()}")
                continue
            need = {}
            for slot in spec.inputs:
                names = op.inputs.get(slot) or []
                flags = [n in req for n in names]
                if slot not in spec.no_grad_inputs and any(flags):
                    need[slot] = flags
            if not need:
                continue
            steps.append((op, need))
            for slot, flags in need.items():
                for name, flag in zip(op.inputs[slot], flags):
                    if flag:
                        has_grad.add(name)
                        self.count[name] += 1
        return steps

    # --- emitting ------------------------------------------------------------------------------
    def _contribution(self, name, fixed=None):
        k = self.emitted[name]
        self.emitted[name] += 1
        fwd = self._var(name)
        if fwd is not None and fwd.type == VarType.LOD_TENSOR_ARRAY:  # accumulated in place (NOTE above)
            gname = fixed or self.array_grads.get(name)
            if gname is None:  # a fresh array: an earlier backward pass may have filled one of this name
                gname, k = grad_var_name(name), 0
                while fwd.block._find_var_recursive(gname) is not None:
                    k += 1
                    gname = f"{grad_var_name(name)}@{k}"
            if fwd.block._find_var_recursive(gname) is None:
                fwd.block.create_var(name=gname, dtype=fwd.dtype, type=VarType.LOD_TENSOR_ARRAY)
            self.array_grads[name] = gname
            self.parts[name] = [gname]
            self.grad_of[name] = gname
            return gname
        if fixed is not None:
            gname = fixed
        else:
            gname = self._fresh(grad_var_name(name) if self.count[name] == 1 else f"{grad_var_name(name)}{_RENAME}{k}")
            fwd = self._var(name)
            self.block.create_var(name=gname, shape=fwd.shape, dtype=fwd.dtype, lod_level=fwd.lod_level)
        self.parts.setdefault(name, []).append(gname)
        return gname

    def _fresh(self, gname):
        """``gname``, or a unique variant when an earlier backward pass over the block made that name
        (NOTE [ Repeated backward passes ])."""
        if gname in self.block.vars and gname not in self.made:
            gname = unique_name.generate(gname)
        self.made.add(gname)
        return gname

    def _finish(self, name):
        """After the last contribution to ``name``: record its gradient, summing when needed."""
        if self.emitted[name] != self.count[name] or name in self.grad_of:
            return
        parts = self.parts[name]
        if len(parts) == 1:
            self.grad_of[name] = parts[0]
            return
        fwd = self._var(name)
        out = self.block.create_var(name=self._fresh(grad_var_name(name)), shape=fwd.shape, dtype=fwd.dtype,
                                    lod_level=fwd.lod_level)
        self._append("sum", {"X": parts}, {"Out": [out.name]}, {})
        self.grad_of[name] = out.name

    def _append(self, type, inputs, outputs, attrs, role=OpRole.Backward):
        attrs = dict(attrs, op_role=role)
        op = self.block.append_op(type=type, inputs=inputs, outputs=outputs, attrs=attrs)
        if self.callbacks:  # context: gradient name -> variable name (complete gradients, made or to come)
            context = {grad_var_name(n): n for n in self.count}
            context.update((g, n) for n, g in self.grad_of.items())
            for cb in self.callbacks:
                cb(block=self.block, context=context)
        return op

    def seed(self, target, given):
        """The gradient of a target: the given variable, or ones shaped like the target."""
        role = OpRole.Backward | OpRole.Loss
        if given is not None:
            self._contribution(target.name, fixed=given.name)
        elif target.shape is not None and all(d >= 0 for d in target.shape):
            self._append("fill_constant", {}, {"Out": [self._contribution(target.name)]},
                         {"shape": list(target.shape), "dtype": target.dtype, "value": 1.0}, role=role)
        else:  # a batch-sized target (fluid.gradients): ones like its run-time value
            self._append("fill_any_like", {"X": [target.name]}, {"Out": [self._contribution(target.name)]},
                         {"value": 1.0}, role=role)
        self._finish(target.name)

    def undo_increment(self, op):
        """The reverse of an in-place ``increment`` (NOTE [ Undoing in-place increments ])."""
        x = op.input("X")
        self._append("increment", {"X": x}, {"Out": x}, {"step": -float(op.attr("step"))})

    def emit(self, op, need):
        spec = get_op_spec(op.type)
        reads = spec.grad_reads if spec.grad_builder is None else None  # register_grad's ``reads``
        wired = [s for s in spec.inputs + spec.outputs if reads is None or s in reads]
        inputs = {slot: op.inputs[slot] for slot in spec.inputs if slot in wired and op.inputs.get(slot)}
        inputs.update((slot, op.outputs[slot]) for slot in spec.outputs if slot in wired and op.outputs.get(slot))
        for slot in spec.outputs:
            names = op.outputs.get(slot) or []
            grads = [self.grad_of.get(n) for n in names]
            if not any(grads) or spec.grad_out_slots is not None and slot not in spec.grad_out_slots:
                continue
            if slot in spec.duplicable and not all(grads) and spec.grad_builder is None:
                grads = [g or self._zeros_like(n) for n, g in zip(names, grads)]
            inputs[grad_var_name(slot)] = grads
        outputs, produced, role_var = {}, [], []
        for slot, flags in need.items():
            names = []
            for name, flag in zip(op.inputs[slot], flags):
                if flag:
                    names.append(self._contribution(name))
                    produced.append(name)
                    if getattr(self._var(name), "trainable", False):
                        role_var += [name, names[-1]]
                else:
                    names.append(EMPTY_VAR_NAME)
            outputs[grad_var_name(slot)] = names
        if spec.grad_builder is not None:  # the op builds its own grad ops (ops/registry.py)
            for type, ins, outs, attrs in spec.grad_builder(op, _GradNames(op, inputs, outputs)):
                written = {n for names in outs.values() for n in names}
                pairs = [x for i in range(0, len(role_var), 2) if role_var[i + 1] in written
                         for x in role_var[i:i + 2]]
                self._append(type, ins, outs, dict(attrs or {}, op_role_var=pairs))
        else:
            self._append(op.type + "_grad", inputs, outputs, dict(op.attrs, op_role_var=role_var))
        for name in dict.fromkeys(produced):
            self._finish(name)

    def _zeros_like(self, name):
        fwd = self._var(name)
        zname = self._fresh(grad_var_name(name) + "@ZERO")
        self.block.create_var(name=zname, shape=fwd.shape, dtype=fwd.dtype)
        self._append("fill_zeros_like", {"X": [name]}, {"Out": [zname]}, {})
        return zname


def _grad_of_grad_ops():
    from .ops.registry import registered_ops  # noqa: PLC0415 - the error path only
    return ", ".join(sorted(t for t, spec in registered_ops().items() if spec.forward is not None and spec.has_grad))


class _GradNames:
    """What a grad-op builder is told: ``output(slot)`` names the gradients of the forward op's outputs
    (None where one has none), ``input(slot)`` the variables for its inputs' gradients (EMPTY_VAR_NAME
    where none is needed; [] for a slot that needs none at all)."""

    def __init__(self, op, grad_op_inputs, grad_op_outputs):
        self._op, self._ins, self._outs = op, grad_op_inputs, grad_op_outputs

    def output(self, slot):
        names = self._ins.get(grad_var_name(slot))
        return list(names) if names else [None] * len(self._op.outputs.get(slot) or ())

    def input(self, slot):
        return list(self._outs.get(grad_var_name(slot), ()))


def _enclosing(block):
    """``block`` and the blocks around it, outermost first."""
    chain = [block]
    while chain[-1].parent_idx >= 0:
        chain.append(block.program.block(chain[-1].parent_idx))
    return chain[::-1]


def _build(targets, seeds, target_gradients, no_grad_set, callbacks, recompute=None):
    block = targets[0].block
    walk = _Walk(block, _get_no_grad_set_name(no_grad_set), _as_list(callbacks))
    # NOTE [ A target inside a sub-block ]: its block runs after the ops built so far in the blocks around
    # it, so the walk goes through those too (an optimizer minimized inside a cond branch trains the layers
    # built before the branch); every grad op lands in the target's block and runs with it, as in fluid
    walk.ops = [op for b in _enclosing(block) for op in b.ops]
    req = walk.requires_grad(seeds)
    steps = walk.plan([t.name for t in targets], req)
    givens = _as_list(target_gradients) or [None] * len(targets)
    if len(givens) != len(targets):
        raise ValueError(f"target_gradients has {len(givens)} entries but there are {len(targets)} targets")
    for target, given in zip(targets, givens):
        walk.seed(target, given)
    undo = _increments_to_undo(walk, steps)
    for op, need in steps:
        position = walk.ops.index(op) if undo else 0
        while undo and undo[-1][0] > position:  # NOTE [ Undoing in-place increments ]
            walk.undo_increment(undo.pop()[1])
        rename = recompute.before(walk, op) if recompute is not None else None
        start = len(walk.block.ops)
        walk.emit(op, need)
        if rename:  # NOTE [ Recompute segments ] in backward_recompute.py
            recompute.rename(walk.block.ops[start:], rename)
    return walk


def _increments_to_undo(walk, steps):
    """(forward position, op) of the in-place ``increment`` ops whose counter the user left differentiable
    (stop_gradient False) and a planned grad op reads, in forward order (NOTE [ Undoing in-place increments ])."""
    read = {n for op, _ in steps for n in op.input_arg_names}
    return [(k, op) for k, op in enumerate(walk.ops)
            if op.type == "increment" and op.input("X") == op.output("Out") and op.input("X")[0] in read
            and not getattr(walk._var(op.input("X")[0]), "stop_gradient", True)]


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None, checkpoints=None):
    """Append the backward ops of ``loss`` to its block.

    Args:
        loss (Variable): the scalar-like loss (shape fully known, e.g. [1]).
        parameter_list (list of Parameter or str, optional): parameters to differentiate;
            default every trainable parameter of the program.
        no_grad_set (set of Variable or str, optional): variables that get no gradient.
        callbacks (list of callable, optional): ``cb(block=, context=)`` after each appended op.
        checkpoints (list of Variable, optional): recompute the activations between them in the backward
            pass instead of keeping them (NOTE [ Recompute segments ] in backward_recompute.py).

    Returns:
        list of (Parameter, Variable): each parameter with its gradient, in program order.
    """
    check_type(loss, "loss", (Variable,), _APPEND)
    if parameter_list is not None:
        check_type(parameter_list, "parameter_list", (list, tuple, set), _APPEND)
        for i, param in enumerate(parameter_list):
            check_type(param, f"parameter_list[{i}]", (Variable, str), _APPEND)
    if callbacks is not None:
        check_type(callbacks, "callbacks", (list,), _APPEND)
    block = loss.block
    program = block.program
    if parameter_list:
        params = [program.global_block()._var_recursive(p) if isinstance(p, str) else p for p in parameter_list]
    else:
        params = [p for p in program.global_block().all_parameters() if p.trainable]
    for op in reversed(block.ops):
        if loss.name in op.output_arg_names:
            op._set_attr("op_role", int(op.attrs.get("op_role", 0)) | OpRole.Forward | OpRole.Loss)
            break
    if loss.shape is None or any(d < 0 for d in loss.shape):
        raise ValueError(f"append_backward: the loss {loss.name!r} has shape {loss.shape}; it must have a fully "
                         "known shape such as [1] (reduce it with fluid.layers.mean or reduce_mean)")
    empty = checkpoints is None or isinstance(checkpoints, (list, tuple)) and not checkpoints
    recompute = None if empty else Recompute(block, loss, checkpoints)
    walk = _build([loss], {p.name for p in params} | _open_leaves(block), None, no_grad_set, callbacks, recompute)
    return [(p, block._var_recursive(walk.grad_of[p.name])) for p in params if p.name in walk.grad_of]


def _open_leaves(block):
    """Variables whose ``stop_gradient`` was set False that are read before any op of ``block`` with a
    gradient writes them (a data variable a user wants the gradient of, even when a loop then advances it
    in place, or a ``fill_constant`` output made differentiable, as fluid gives them: the layers of ops
    without a gradient set ``stop_gradient``); parameters are seeded separately."""
    blocks = _enclosing(block)
    written = set()
    for op in (op for b in blocks for op in b.ops):
        if get_op_spec(op.type).differentiates(op):
            written.update(n for n in op.output_arg_names if n not in op.input_arg_names or n in written)
    return {name for b in blocks for name, v in b.vars.items()
            if not v.stop_gradient and name not in written and type(v) is Variable}


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """Gradients of ``targets`` (summed) with respect to ``inputs``.

    Args:
        targets (Variable or list): what to differentiate.
        inputs (Variable or list): what to differentiate with respect to.
        target_gradients (Variable or list, optional): the gradients of the targets; default ones.
        no_grad_set (set of Variable or str, optional): variables that get no gradient.

    Returns:
        list of Variable: one gradient per input, None where an input gets none (for example a
        ``stop_gradient`` data variable, as in fluid).
    """
    check_type(targets, "targets", (Variable, list), _GRADIENTS)
    check_type(inputs, "inputs", (Variable, list), _GRADIENTS)
    check_type(target_gradients, "target_gradients", (Variable, list, type(None)), _GRADIENTS)
    targets, inputs = _as_list(targets), _as_list(inputs)
    walk = _build(targets, {v.name for v in inputs}, target_gradients, no_grad_set, None)
    block = targets[0].block
    return [block._var_recursive(walk.grad_of[v.name]) if v.name in walk.grad_of else None for v in inputs]


def grad_op_descs(op_desc, no_grad_set=()):
    """fluid's ``core.get_grad_op_desc``: the grad ops append_backward emits for one forward op (its
    ``desc``), built in a scratch Program over copies of the op's variables, as (their descs,
    {gradient name: forward variable name}). Every input not in ``no_grad_set`` gets a gradient."""
    from .framework.program import Program  # noqa: PLC0415 - framework imports this module's users
    op = op_desc._op
    spec = get_op_spec(op.type)
    if not spec.differentiates(op):
        return [], {}
    block = Program().global_block()
    for name in dict.fromkeys(op.input_arg_names + op.output_arg_names):
        src = op.block._find_var_recursive(name)
        block.create_var(name=name, shape=getattr(src, "shape", None), dtype=getattr(src, "dtype", None) or "float32",
                         lod_level=getattr(src, "lod_level", 0), stop_gradient=False)
    fwd = block.append_op(type=op.type, inputs=op.inputs, outputs=op.outputs, attrs=op.attrs)
    walk = _Walk(block, set(no_grad_set or ()), None)
    read = spec.grad_out_slots
    for name in dict.fromkeys(n for slot, names in fwd.outputs.items() if read is None or slot in read for n in names):
        walk.grad_of[name] = block.create_var(name=grad_var_name(name), shape=block.var(name).shape,
                                              dtype=block.var(name).dtype).name
    walk.made.update(walk.grad_of.values())  # made here, not by an earlier pass: no renaming
    need = {slot: [n not in walk.no_grad for n in names] for slot, names in fwd.inputs.items()
            if slot not in spec.no_grad_inputs and names}
    need = {slot: flags for slot, flags in need.items() if any(flags)}
    walk.count.update(n for slot, flags in need.items() for n, f in zip(fwd.inputs[slot], flags) if f)
    start = len(block.ops)
    walk.emit(fwd, need)
    grads = {grad_var_name(n): n for n in fwd.input_arg_names + fwd.output_arg_names}
    return [o.desc for o in block.ops[start:]], grads


calc_gradient = gradients  # fluid 1.8's older name
