"""``fluid.op``: one operator built from keyword arguments and run against a Scope, without a Program
(fluid's OperatorFactory, which Paddle's op tests use for numeric gradients).

``Operator("mul", X="x", Y="y", Out="out", x_num_col_dims=1)`` names each slot's variables (a name or a
list of names; keywords that are not slots are attributes), and ``op.run(scope, place)`` reads the
inputs from ``scope`` and writes the outputs into it. The op runs as a one-op Program on an Executor
whose plan is built on the first run and reused: a numeric gradient check runs the op twice per
element of each input it checks.
"""
from .executor.executor import Executor
from .framework.op_proto import get_all_op_protos
from .framework.program import Program
from .ops.registry import COMMON_ATTRS, get_op_spec, registered_ops
from .places import CPUPlace
from .selected_rows import SelectedRows

__all__ = ["Operator", "get_all_op_protos"]


def _names(value):
    if isinstance(value, str):
        return [value]
    names = list(value)
    bad = [v for v in names if not isinstance(v, str)]
    if bad:
        raise TypeError(f"an operator slot takes variable names (str), got {bad!r}")
    return names


class Operator:
    """One op of ``type``; keyword arguments name its slots' variables or set its attributes."""

    def __init__(self, type, **kwargs):
        spec = get_op_spec(type)
        self._type, self._inputs, self._outputs, self._attrs = type, {}, {}, {}
        for key, value in kwargs.items():
            if key in spec.inputs:
                self._inputs[key] = _names(value)
            elif key in spec.outputs:
                self._outputs[key] = _names(value)
            else:
                self._attrs[key] = value
        self._program = Program()
        block = self._program.global_block()
        for names in list(self._inputs.values()) + list(self._outputs.values()):
            for name in names:
                if not block.has_var(name):
                    block.create_var(name=name, persistable=True)  # read from / written to the scope
        self._op = block.append_op(type=type, inputs=self._inputs, outputs=self._outputs, attrs=self._attrs)
        self._executors = {}

    def run(self, scope, place=None):
        """Run the op once on the values in ``scope``; its outputs are written into ``scope``. An output
        variable that holds a SelectedRows keeps that object, which takes the result (as fluid's kernels fill
        the SelectedRows they are given: ``scope.var(name).get_selected_rows()`` taken before the run sees it)."""
        key = type(place).__name__
        exe = self._executors.get(key)
        if exe is None:
            exe = self._executors[key] = Executor(place if place is not None else CPUPlace())
        held = {name: value for name in dict.fromkeys(n for names in self._outputs.values() for n in names)
                if isinstance(value := scope._vars.get(name), SelectedRows)}
        exe.run(self._program, feed={}, fetch_list=[], scope=scope)
        for name, rows in held.items():
            result = scope._vars.get(name)
            if isinstance(result, SelectedRows) and result is not rows:
                rows.assign(result)
            elif result is not None and result is not rows:  # a dense result: the value tensor
                rows.get_tensor()._array = result
            scope._vars[name] = rows

    def type(self):
        return self._type

    def inputs(self):
        return {slot: list(names) for slot, names in self._inputs.items()}

    def outputs(self):
        return {slot: list(names) for slot, names in self._outputs.items()}

    def input(self, slot):
        return list(self._inputs.get(slot, []))

    def output(self, slot):
        return list(self._outputs.get(slot, []))

    def input_vars(self):
        return [n for names in self._inputs.values() for n in names]

    def output_vars(self):
        return [n for names in self._outputs.values() for n in names]

    def attr(self, name):
        return self._op.attr(name)

    def support_gpu(self):
        return False

    def __repr__(self):
        return f"Operator({self._op.to_string()})"

    @staticmethod
    def get_op_inputs(type):
        """[(slot, duplicable), ...] of op ``type``'s inputs."""
        spec = get_op_spec(type)
        return [(slot, slot in spec.duplicable) for slot in spec.inputs]

    @staticmethod
    def get_op_outputs(type):
        spec = get_op_spec(type)
        return [(slot, slot in spec.duplicable) for slot in spec.outputs]

    @staticmethod
    def get_op_input_names(type):
        return list(get_op_spec(type).inputs)

    @staticmethod
    def get_op_output_names(type):
        return list(get_op_spec(type).outputs)

    @staticmethod
    def get_op_attr_names(type):
        return list(dict.fromkeys(list(get_op_spec(type).attrs) + list(COMMON_ATTRS)))

    @staticmethod
    def types():
        return sorted(registered_ops())
