"""Control flow in the graph (fluid 1.8's layers/control_flow.py): tensor arrays, While, cond, IfElse,
Switch and StaticRNN.

A construct's body is built into a sub-block of the Program (``Program._create_block`` while the
``with`` lasts); leaving it appends one op that runs the block (ops/control_flow.py) with the outside
variables the block reads as its inputs and those it writes as its outputs, so append_backward can
differentiate it (backward_blocks.py). StaticRNN runs on While: its step inputs, memories and outputs
are tensor arrays indexed by the step counter.
"""
import contextlib

import numpy as np

from ..errors import check_type
from ..framework import dygraph_mode, unique_name
from ..framework.variable import Variable, VarType
from .activation import check_variable_and_dtype
from .compare import less_than, logical_and, logical_not
from .helper import LayerHelper
from .manip import fill_constant_batch_size_like, increment, shape, slice, stack
from .tensor import assign, cast, concat, fill_constant

__all__ = ["IfElse", "StaticRNN", "Switch", "While", "array_length", "array_read", "array_write", "cond",
           "create_array", "is_empty", "tensor_array_to_tensor"]


def _outer_io(block):
    from ..backward_blocks import outer_reads_and_writes  # noqa: PLC0415 - backward sits above layers
    return outer_reads_and_writes(block)


def _check_type(value, name, types, where):
    if not isinstance(value, types):
        names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise TypeError(f"The type of '{name}' in {where} must be {names}, but received {type(value).__name__}. ")


# --- tensor arrays -------------------------------------------------------------------------------------
def _eager_index(i, where):
    """A dygraph index tensor of shape [1] as an int (fluid 1.8 keeps dygraph tensor arrays as lists)."""
    if not isinstance(i, Variable) or list(i.shape) != [1]:
        raise TypeError(f"The index 'i' in {where} must be a Variable of shape [1] in dygraph mode, got "
                        f"{type(i).__name__}{' of shape ' + str(list(i.shape)) if isinstance(i, Variable) else ''}")
    return int(i.numpy().reshape(-1)[0])


def _eager_array(array, where):
    if not isinstance(array, list):
        raise TypeError(f"The 'array' in {where} must be a list in dygraph mode, got {type(array).__name__}")
    return array


def create_array(dtype):
    """An empty tensor array (fluid's LoDTensorArray variable) of ``dtype`` entries; a list in dygraph mode."""
    if dygraph_mode.in_dygraph_mode():
        return []
    helper = LayerHelper("array")
    return helper.create_variable(name=unique_name.generate("array.out"), type=VarType.LOD_TENSOR_ARRAY,
                                  dtype=dtype)


def array_write(x, i, array=None):
    """Write ``x`` at index ``i`` (an int64 [1] tensor) of ``array`` (a new one when None); returns it."""
    if dygraph_mode.in_dygraph_mode():
        _check_type(x, "x", Variable, "array_write")
        k, array = _eager_index(i, "array_write"), _eager_array([] if array is None else array, "array_write")
        if k > len(array):
            raise IndexError(f"array_write: index {k} is greater than the length of 'array' ({len(array)}) in "
                             "dygraph mode")
        array[k:k + 1] = [x]
        return array
    check_variable_and_dtype(i, "i", ("int64",), "array_write")
    _check_type(x, "x", Variable, "array_write")
    if array is None:
        array = create_array(x.dtype)
    elif not isinstance(array, Variable) or array.type != VarType.LOD_TENSOR_ARRAY:
        raise TypeError("array should be tensor array vairable in array_write Op")
    LayerHelper("array_write").append_op(type="write_to_array", inputs={"X": [x], "I": [i]},
                                         outputs={"Out": [array]})
    if array.shape is None and x.shape is not None:  # an entry's shape, as fluid's infer-shape records it
        array.shape, array.lod_level = x.shape, x.lod_level
    return array


def array_read(array, i):
    """The entry at index ``i`` (an int64 [1] tensor) of ``array``, with the LoD it was written with."""
    if dygraph_mode.in_dygraph_mode():
        return _eager_array(array, "array_read")[_eager_index(i, "array_read")]
    if not isinstance(array, Variable) or array.type != VarType.LOD_TENSOR_ARRAY:
        raise TypeError("array should be tensor array vairable")
    check_variable_and_dtype(i, "i", ("int64",), "array_read")
    helper = LayerHelper("array_read")
    out = helper.create_variable_for_type_inference(array.dtype)
    helper.append_op(type="read_from_array", inputs={"X": [array], "I": [i]}, outputs={"Out": [out]})
    out.shape, out.lod_level = array.shape, array.lod_level
    return out


def array_length(array):
    """The number of entries of ``array``: an int64 [1] tensor (an int in dygraph mode, as in fluid)."""
    if dygraph_mode.in_dygraph_mode():
        return len(_eager_array(array, "array_length"))
    if not isinstance(array, Variable) or array.type != VarType.LOD_TENSOR_ARRAY:
        raise TypeError("array should be tensor array vairable in array_length Op")
    helper = LayerHelper("array_length")
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="lod_array_length", inputs={"X": [array]}, outputs={"Out": [out]})
    return out


def tensor_array_to_tensor(input, axis=1, name=None, use_stack=False):
    """The entries of ``input`` concatenated (or stacked) along ``axis``, and each one's size there. In
    dygraph mode the array is a list of tensors, as fluid's."""
    if dygraph_mode.in_dygraph_mode():
        if not isinstance(input, list):
            raise TypeError(f"The 'input' in tensor_array_to_tensor must be list, got {type(input).__name__}")
        joined = (stack if use_stack else concat)(input, axis=axis)
        return joined, assign(np.array([int(x.shape[axis]) for x in input], dtype=np.int64))
    check_type(input, "input", (list, Variable), "tensor_array_to_tensor")
    if isinstance(input, list):
        for i, x in enumerate(input):
            check_type(x, f"input[{i}]", (Variable,), "tensor_array_to_tensor")
    helper = LayerHelper("tensor_array_to_tensor", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    index = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op(type="tensor_array_to_tensor", inputs={"X": [input]},
                     outputs={"Out": [out], "OutIndex": [index]}, attrs={"axis": axis, "use_stack": use_stack})
    if input.shape is not None:  # the entries' shape with the joined axis of unknown size
        shape = list(input.shape)
        shape[axis:axis + (0 if use_stack else 1)] = [-1]
        out.shape = tuple(shape)
    return out, index


def is_empty(x, cond=None):
    """A bool [1] tensor: whether ``x`` has no elements."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), "is_empty")
    helper = LayerHelper("is_empty")
    if cond is None:
        cond = helper.create_variable_for_type_inference("bool", stop_gradient=True)
    helper.append_op(type="is_empty", inputs={"X": [x]}, outputs={"Out": [cond]})
    return cond


# --- blocks ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _sub_block(finish):
    """Build ops into a new sub-block; on a clean exit call ``finish(block, parent)`` in the parent."""
    program = LayerHelper("block").main_program
    block = program._create_block()
    try:
        yield block
    except BaseException:
        program._rollback()
        raise
    program._rollback()
    finish(block, program.current_block())


class While:
    """``with While(cond).block():`` runs the block while ``cond`` (a bool [1] the block updates) holds.

    Example::

        i = fluid.layers.fill_constant([1], "int64", 0)
        n = fluid.layers.fill_constant([1], "int64", 10)
        cond = fluid.layers.less_than(i, n)
        loop = fluid.layers.While(cond)
        with loop.block():
            ...
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, n, cond=cond)
    """

    def __init__(self, cond, is_test=False, name=None):
        self.helper = LayerHelper("while", name=name)
        check_variable_and_dtype(cond, "cond", ("bool",), "fluid.layers.While")
        if cond.shape is not None and len(cond.shape) and _numel(cond.shape) != 1:
            raise TypeError(f"condition expected shape as [1], but given shape as {list(cond.shape)}.")
        self.cond_var, self.is_test = cond, is_test

    def block(self):
        return _sub_block(self._finish)

    def _finish(self, block, parent):
        reads, writes = _outer_io(block)
        if self.cond_var.name not in writes:
            raise ValueError(f"The While block never updates its condition {self.cond_var.name!r}, so the loop "
                             "would never end: write it inside the block (e.g. fluid.layers.less_than(i, n, "
                             "cond=cond))")
        scopes = parent.create_var(name=unique_name.generate("_step_scopes"), type=VarType.STEP_SCOPES, dtype=None)
        parent.append_op(type="while", inputs={"X": reads, "Condition": [self.cond_var]},
                         outputs={"Out": writes, "StepScopes": [scopes]},
                         attrs={"sub_block": block, "is_test": self.is_test})


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class ConditionalBlock:
    """A block run once when its condition holds (``is_scalar_condition``) or its inputs have elements."""

    def __init__(self, inputs, is_scalar_condition=False, name=None):
        for x in inputs:
            _check_type(x, "each input", Variable, "ConditionalBlock")
        self.inputs, self.is_scalar_condition = list(inputs), is_scalar_condition

    def block(self):
        return _sub_block(self._finish)

    def _finish(self, block, parent):
        reads, writes = _outer_io(block)
        scope = parent.create_var(name=unique_name.generate("_cond_scope"), type=VarType.STEP_SCOPES, dtype=None)
        parent.append_op(type="conditional_block", inputs={"Cond": self.inputs, "Input": reads},
                         outputs={"Out": writes, "Scope": [scope]},
                         attrs={"sub_block": block, "is_scalar_condition": self.is_scalar_condition})


def _copy_to_parent(var, helper):
    """An outside variable like ``var``, assigned from it at the end of the block (cond's outputs)."""
    program = helper.main_program
    parent = program.block(program.current_block().parent_idx)
    out = parent.create_var(name=unique_name.generate(f"{helper.name}.out"), dtype=var.dtype, shape=var.shape,
                            lod_level=var.lod_level)
    assign(var, out)
    return out


def _map(fn, *structures):
    first = structures[0]
    if isinstance(first, (list, tuple)):
        if any(not isinstance(s, (list, tuple)) or len(s) != len(first) for s in structures):
            raise ValueError("Incompatible return values of true_fn and false_fn in cond: the two structures "
                             "differ")
        return type(first)(_map(fn, *parts) for parts in zip(*structures))
    return fn(*structures)


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if ``pred`` (a bool [1] tensor) holds, else ``false_fn()``: both are built, one runs."""
    if dygraph_mode._tracer is not None:
        chosen = true_fn if bool(pred.numpy().reshape(-1)[0]) else false_fn
        return chosen() if chosen is not None else None
    check_variable_and_dtype(pred, "pred", ("bool",), "fluid.layers.cond")
    helper = LayerHelper("cond", name=name)
    outputs = []
    for fn, which, condition in ((true_fn, "true_fn", lambda: pred), (false_fn, "false_fn", lambda: logical_not(pred))):
        if fn is not None and not callable(fn):
            raise TypeError(f"The {which} in cond must be callable, but received {type(fn).__name__}")
        result = None
        if fn is not None:
            with ConditionalBlock([condition()], is_scalar_condition=True).block():
                built = fn()
                if built is not None:
                    result = _map(lambda v: _copy_to_parent(v, helper), built)
        outputs.append(result)
    true_out, false_out = outputs
    if true_out is None and false_out is None:
        return None
    if true_out is None or false_out is None:
        none, other = ("true_fn", "false_fn") if true_out is None else ("false_fn", "true_fn")
        raise ValueError(f"Incompatible return values of true_fn and false_fn in cond: {none} returns None while "
                         f"{other} returns non-None")
    mask = cast(pred, "int32")

    def select(false_var, true_var):
        out = helper.create_variable_for_type_inference(true_var.dtype)
        helper.append_op(type="select_input", inputs={"X": [false_var, true_var], "Mask": [mask]},
                         outputs={"Out": [out]})
        out.shape = true_var.shape
        return out
    return _map(select, false_out, true_out)


class Switch:
    """``with Switch() as s:`` then ``with s.case(cond):`` blocks and ``with s.default():``: the first case
    whose bool [1] condition holds runs, else the default."""

    def __init__(self, name=None):
        self.helper = LayerHelper("switch", name=name)
        self.inside_scope = False
        self.pre_not_conditions = []

    def case(self, condition):
        if not self.inside_scope:
            raise ValueError("case should be called inside with")
        check_variable_and_dtype(condition, "condition", ("bool",), "the member function case of fluid.layers.Switch")
        if not self.pre_not_conditions:
            run_if = condition
            self.pre_not_conditions.append(logical_not(condition))
        else:
            pre = self.pre_not_conditions[-1]
            self.pre_not_conditions.append(logical_and(pre, logical_not(condition)))
            run_if = logical_and(pre, condition)
        return ConditionalBlock([run_if], is_scalar_condition=True).block()

    def default(self):
        if not self.pre_not_conditions:
            raise ValueError("there should be at least one condition")
        return ConditionalBlock([self.pre_not_conditions[-1]], is_scalar_condition=True).block()

    def __enter__(self):
        self.inside_scope = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.inside_scope = False
        return False


class IfElse:
    """Rows of a batch go through a true block or a false block by a bool [N, 1] mask; ``ie()`` merges
    each pair of outputs back in row order.

    Example::

        ie = fluid.layers.IfElse(fluid.layers.less_than(x, y))
        with ie.true_block():
            ie.output(ie.input(x) * 2)
        with ie.false_block():
            ie.output(ie.input(x) - 1)
        out, = ie()
    """
    OUT_IF_ELSE_BLOCKS, IN_IF_ELSE_TRUE_BLOCKS, IN_IF_ELSE_FALSE_BLOCKS = 0, 1, 2

    def __init__(self, cond, name=None):
        _check_type(cond, "cond", Variable, "fluid.layers.IfElse")
        if name is not None:
            _check_type(name, "name", str, "fluid.layers.IfElse")
        self.helper = LayerHelper("ifelse", name=name)
        self.cond = cond
        self.input_table = {}
        self.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.output_table = ([], [])  # (false outputs, true outputs)

    def _parent_block(self):
        program = self.helper.main_program
        return program.block(program.current_block().parent_idx)

    def input(self, x):
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("input must in true/false blocks")
        if id(x) not in self.input_table:
            parent = self._parent_block()
            parts = [parent.create_var(name=unique_name.generate(f"ifelse_input{self.helper.name}"), dtype=x.dtype,
                                       shape=x.shape) for _ in range(2)]
            parent.append_op(type="split_lod_tensor", inputs={"X": [x], "Mask": [self.cond]},
                             outputs={"OutTrue": [parts[0]], "OutFalse": [parts[1]]}, attrs={"level": 0})
            self.input_table[id(x)] = parts
        out_true, out_false = self.input_table[id(x)]
        return out_true if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else out_false

    @contextlib.contextmanager
    def _branch(self, status):
        if self.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("You cannot invoke IfElse.block() inside a block")
        self.status = status
        try:
            with ConditionalBlock([self.cond]).block():
                yield
        finally:
            self.status = IfElse.OUT_IF_ELSE_BLOCKS

    def true_block(self):
        return self._branch(IfElse.IN_IF_ELSE_TRUE_BLOCKS)

    def false_block(self):
        return self._branch(IfElse.IN_IF_ELSE_FALSE_BLOCKS)

    def output(self, *outs):
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("output can only be invoked in the sub-block")
        table = self.output_table[1 if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else 0]
        parent = self._parent_block()
        for out in outs:
            _check_type(out, "each output", Variable, "fluid.layers.IfElse.output")
            outside = parent.create_var(name=unique_name.generate(f"{self.helper.name}_output"), dtype=out.dtype,
                                        shape=out.shape)
            table.append(outside)
            assign(out, outside)

    def __call__(self):
        if self.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse::__call__ must be out of sub-block")
        false_len, true_len = map(len, self.output_table)
        if false_len == 0 and true_len == 0:
            raise ValueError("Must invoke true_block/false_block before __call__")
        if false_len != true_len and false_len != 0 and true_len != 0:
            raise ValueError("The output side must be same")
        if false_len == 0 or true_len == 0:
            return self.output_table[0 if false_len != 0 else 1]
        merged = []
        for false_var, true_var in zip(*self.output_table):
            out = self.helper.create_variable_for_type_inference(true_var.dtype)
            self.helper.append_op(type="merge_lod_tensor",
                                  inputs={"X": [self.cond], "Mask": [self.cond], "InTrue": [true_var],
                                          "InFalse": [false_var]},
                                  outputs={"Out": [out]}, attrs={"level": 0})
            if true_var.shape is not None:
                out.shape = (-1,) + tuple(true_var.shape[1:])
            merged.append(out)
        return merged


@contextlib.contextmanager
def in_parent_block(program):
    """Layers called inside build into the block around the current one (before the loop that runs it)."""
    inner = program.current_block_idx
    program.current_block_idx = program.current_block().parent_idx
    try:
        yield
    finally:
        program.current_block_idx = inner


class StaticRNN:
    """A recurrent network over sequences of one length (inputs shaped [seq_len, batch, ...]; a seq_len of -1
    is read from the first step input at run time).

    Example::

        rnn = fluid.layers.StaticRNN()
        with rnn.step():
            word = rnn.step_input(x)                     # x: [seq_len, batch, d] -> word: [batch, d]
            prev = rnn.memory(shape=[-1, h], batch_ref=word)
            hidden = fluid.layers.fc([word, prev], h, act="relu")
            rnn.update_memory(prev, hidden)
            rnn.step_output(hidden)
        out = rnn()                                      # [seq_len, batch, h]

    The step runs in a While over tensor arrays (each step input and output one entry per step, each
    memory its value at every step), so append_backward differentiates it like any While.
    """
    BEFORE_RNN_BLOCK, IN_RNN_BLOCK, AFTER_RNN_BLOCK = 0, 1, 2

    def __init__(self, name=None):
        self.helper = LayerHelper("static_rnn", name=name)
        self.memories = {}  # inner memory name -> [memory array, new value or None]
        self.inputs = {}  # inner step input name -> outer variable
        self.outputs = []
        self.status = StaticRNN.BEFORE_RNN_BLOCK
        self.seq_len = None
        self._step_arrays = []

    def _assert_in_rnn_block_(self, method):
        if self.status != StaticRNN.IN_RNN_BLOCK:
            raise ValueError(f"You must invoke {method} in rnn block")

    @contextlib.contextmanager
    def step(self):
        if self.status != StaticRNN.BEFORE_RNN_BLOCK:
            raise ValueError("rnn.step() can only be invoked once")
        self.counter = fill_constant([1], "int64", 0)
        self.status = StaticRNN.IN_RNN_BLOCK
        program = self.helper.main_program
        program._create_block()
        try:
            yield
        except BaseException:
            program._rollback()
            raise
        if not self.inputs:
            program._rollback()
            raise ValueError("StaticRNN needs at least one step_input")
        self._close(program)

    def _close(self, program):
        for name, (array, new) in self.memories.items():
            if new is None:
                program._rollback()
                raise ValueError(f"StaticRNN memory {name!r} is never updated: call rnn.update_memory(mem, var)")
        i = self.counter
        increment(i, in_place=True)
        for array, new in self.memories.values():
            array_write(new, i, array)
        body = program.current_block()
        program._rollback()
        if self.seq_len >= 0:
            n = fill_constant([1], "int64", self.seq_len)
        else:  # the length is dimension 0 of the first step input, read at run time
            n = cast(slice(shape(next(iter(self.inputs.values()))), axes=[0], starts=[0], ends=[1]), "int64")
        cond = less_than(i, n)
        body.append_op(type="less_than", inputs={"X": [i], "Y": [n]}, outputs={"Out": [cond]})
        While(cond)._finish(body, program.current_block())
        self.status = StaticRNN.AFTER_RNN_BLOCK
        self.outputs = [tensor_array_to_tensor(array, axis=0, use_stack=True)[0] for array in self._step_arrays]
        for out in self.outputs:
            out.shape = (self.seq_len,) + tuple(out.shape[1:]) if out.shape is not None else None

    def _in_parent(self):
        return in_parent_block(self.helper.main_program)

    def step_input(self, x):
        self._assert_in_rnn_block_("step_input")
        _check_type(x, "x", Variable, "fluid.layers.StaticRNN.step_input")
        if self.seq_len is None:
            self.seq_len = x.shape[0]  # -1: the length is read from this input at run time
        elif x.shape[0] != -1 and self.seq_len != -1 and self.seq_len != x.shape[0]:
            raise ValueError("Static RNN only take fix seq_len input")
        with self._in_parent():
            array = create_array(x.dtype)
            self.helper.append_op(type="tensor_to_array", inputs={"X": [x]}, outputs={"Out": [array]},
                                  attrs={"axis": 0})
        step = array_read(array, self.counter)
        step.shape = tuple(x.shape[1:])
        self.inputs[step.name] = x
        return step

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0, init_batch_dim_idx=0,
               ref_batch_dim_idx=1):
        self._assert_in_rnn_block_("memory")
        _check_type(init, "init", (Variable, type(None)), "fluid.layers.StaticRNN.memory")
        _check_type(shape, "shape", (list, tuple, type(None)), "fluid.layers.StaticRNN.memory")
        _check_type(batch_ref, "batch_ref", (Variable, type(None)), "fluid.layers.StaticRNN.memory")
        with self._in_parent():
            if init is None:
                if shape is None or batch_ref is None:
                    raise ValueError("if init is None, memory at least need shape and batch_ref")
                init = fill_constant_batch_size_like(self.inputs.get(batch_ref.name, batch_ref), shape,
                                                     batch_ref.dtype, init_value, ref_batch_dim_idx,
                                                     init_batch_dim_idx)
            array = array_write(init, self.counter)
        mem = array_read(array, self.counter)
        mem.shape = init.shape
        self.memories[mem.name] = [array, None]
        return mem

    def update_memory(self, mem, var):
        _check_type(mem, "mem", Variable, "fluid.layers.StaticRNN.update_memory")
        _check_type(var, "var", Variable, "fluid.layers.StaticRNN.update_memory")
        if mem.name not in self.memories:
            raise ValueError(f"{mem.name!r} is not a memory of this StaticRNN (create it with rnn.memory)")
        self.memories[mem.name][1] = var

    def step_output(self, o):
        self._assert_in_rnn_block_("step_output")
        _check_type(o, "o", Variable, "fluid.layers.StaticRNN.step_output")
        with self._in_parent():
            array = create_array(o.dtype)
        array_write(o, self.counter, array)
        self._step_arrays.append(array)

    def output(self, *outputs):
        for each in outputs:
            self.step_output(each)

    def __call__(self, *args, **kwargs):
        if self.status != StaticRNN.AFTER_RNN_BLOCK:
            raise ValueError("RNN output can only be retrieved after rnn block")
        if not self.outputs:
            raise ValueError("RNN has no output")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs
