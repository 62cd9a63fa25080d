"""``fluid.dygraph.TracedLayer`` (1.8): run a Layer's forward once in dygraph mode and keep the ops it ran as a
static Program, which an Executor runs and ``save_inference_model`` saves.

While ``TracedLayer.trace(layer, inputs)`` calls the layer, the tracer hands every op it runs to a recorder
(``Tracer._recorder``, tracer.py), which appends the same op, with the attributes it ran with, to the
Program's global block. Names follow fluid: the inputs are ``feed_0``, ``feed_1`` ... (batch dimension -1),
the outputs ``fetch_0`` ..., intermediates ``t_0`` ...; a parameter keeps its name, and any other tensor the
ops read that no recorded op made (a constant made before the call) becomes a persistable ``t_<k>``. The
traced layer's scope reads those tensors' current values on each run: training the dygraph layer further
changes what the static program computes, as in fluid. Python control flow is frozen at the branch the trace took.
"""
import itertools

from ..executor import Executor, Scope, scope_guard
from ..executor.compiled import BuildStrategy, ExecutionStrategy
from ..framework import _dygraph_guard, dygraph_mode
from ..framework.program import Program
from ..framework.variable import Variable
from ..inference_model import save_inference_model as _save_inference_model
from ..places import CPUPlace
from .layer import Layer
from .tensor import ParamBase, Tensor

__all__ = ["TracedLayer", "extract_vars"]


def extract_vars(inputs):
    """The Variables in ``inputs`` (a Variable, or nested lists / tuples of them), depth first."""
    if isinstance(inputs, Variable):
        return [inputs]
    if isinstance(inputs, (list, tuple)):
        return [v for item in inputs for v in extract_vars(item)]
    return []




def _static():
    """Write to the recorded Program as to any static one, though dygraph mode is on (NOTE [ Blocks in dygraph
    mode ] in framework/block.py: Blocks run their ops eagerly there)."""
    return _dygraph_guard(None)

class _Recorder:
    """Appends each op the tracer runs to ``program`` (see the module docstring)."""

    def __init__(self, feeds):
        self.program = Program()
        self.block = self.program.global_block()
        self.names, self.held, self.captured, self.tmp = {}, [], {}, set()
        self._count = itertools.count()
        for i, t in enumerate(feeds):
            self._declare(t, f"feed_{i}", shape=[-1] + list(t.shape[1:]))

    def _declare(self, t, name, shape=None, persistable=False):
        self.names[id(t)] = name
        self.held.append(t)  # keeps the id taken while the trace runs
        with _static():
            self.block.create_var(name=name, shape=shape, dtype=t.dtype, persistable=persistable)
        return name

    def _input(self, t):
        name = self.names.get(id(t))
        if name is None:  # a parameter, or a value no recorded op made: the program reads it from its scope
            name = t.name  # its own name, as fluid (a generated one if another variable has it)
            if not isinstance(t, ParamBase) and (name in self.block.vars or name.startswith(("feed_", "fetch_", "t_"))):
                name = f"t_{next(self._count)}"
            self._declare(t, name, shape=list(t.shape), persistable=True)
            self.captured[name] = t
        return name

    def _output(self, t):
        name = self.names.get(id(t))
        if name is None:
            name = self._declare(t, f"t_{next(self._count)}")
            self.tmp.add(name)
        return name

    def __call__(self, type, in_plan, ins, out_plan, outputs, attrs):
        inputs = {}
        for (slot, is_dup, _), v in zip(in_plan, ins):
            if v is not None:
                inputs[slot] = [self._input(u) for u in (v if is_dup else [v])]
        written, made = {}, []
        for _, slot, is_dup in out_plan:
            ts = outputs.get(slot)
            if ts is not None:
                ts = list(ts) if isinstance(ts, (list, tuple)) else [ts]
                written[slot] = [self._output(t) for t in ts]
                made += zip(written[slot], ts)
        with _static():
            self.block.append_op(type=type, inputs=inputs, outputs=written, attrs=dict(attrs))
        for name, t in made:  # what the op's shape inference could not say: the shape it ran with
            var = self.block.vars[name]
            if var.shape is None and t._value is not None:
                var.shape = tuple(t.shape)

    def finish(self, outputs):
        """Name the layer's outputs ``fetch_<i>``; returns the fetch names."""
        names = []
        for i, t in enumerate(outputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"TracedLayer.trace: the layer's output {i} is a {type(t).__name__}, not a Tensor")
            old, new = self.names.get(id(t)), f"fetch_{i}"
            if old in self.tmp:
                self._rename(old, new)
                self.tmp.discard(old)
            else:  # an input or a parameter handed straight back: copy it out
                source = self._input(t)
                with _static():
                    self.block.create_var(name=new, dtype=t.dtype, shape=list(t.shape))
                    self.block.append_op(type="assign", inputs={"X": [source]}, outputs={"Out": [new]})
            self.names[id(t)] = new
            names.append(new)
        return names

    def _rename(self, old, new):
        var = self.block.vars.pop(old)
        var.name = new
        self.block.vars[new] = var
        for op in self.block.ops:
            for table in (op.inputs, op.outputs):
                for slot, names in table.items():
                    table[slot] = [new if n == old else n for n in names]
        self.program._bump_version()


class TracedLayer:
    """A Layer's forward as a static Program (``program``), with the layer's parameters in its own scope.

    Build one with ``TracedLayer.trace(layer, inputs)``; call it with a list of inputs (Tensors or arrays) to
    get the list of output arrays; ``save_inference_model`` saves it for ``fluid.io.load_inference_model``.
    """

    def __init__(self, program, parameters, feed_names, fetch_names):
        self._program, self._feed_names, self._fetch_names = program, list(feed_names), list(fetch_names)
        # parameters: Parameters, or {name: tensor} (what the trace read: parameters and captured constants)
        self._named = list(parameters.items() if isinstance(parameters, dict) else [(p.name, p) for p in parameters])
        self._params = [t for _, t in self._named]
        tracer = dygraph_mode.current_tracer()
        self._place = tracer.expected_place if tracer is not None and tracer.expected_place else CPUPlace()
        self._scope = Scope()
        self._exe = Executor(self._place)
        self._build_strategy = self._exec_strategy = None

    @property
    def program(self):
        return self._program

    def _switch(self, is_test=True):
        """Set ``is_test`` on every op of the program that has it (inference or training behaviour)."""
        for block in self._program.blocks:
            for op in block.ops:
                if op.has_attr("is_test"):
                    op._set_attr("is_test", is_test)

    @staticmethod
    def trace(layer, inputs):
        """Run ``layer(*inputs)`` in dygraph mode, recording its ops; returns ``(outputs, traced_layer)``.

        Raises:
            AssertionError: outside dygraph mode. TypeError: ``layer`` is no Layer or an input no Tensor.
        """
        tracer = dygraph_mode.current_tracer()
        assert tracer is not None, ("We Only support TracedLayer.trace in imperative mode, please use "
                                    "fluid.dygraph.guard() as context to run it in imperative mode")
        if not isinstance(layer, Layer):
            raise TypeError(f"TracedLayer.trace traces a fluid.dygraph.Layer, but got {type(layer).__name__}")
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        for i, x in enumerate(inputs):
            if not isinstance(x, Tensor):
                raise TypeError(f"TracedLayer.trace: input {i} must be a Tensor, but got {type(x).__name__}")
        recorder = _Recorder(inputs)
        tracer._recorder = recorder
        try:
            outputs = layer(*inputs)
        finally:
            tracer._recorder = None
        fetch_names = recorder.finish(list(outputs) if isinstance(outputs, (list, tuple)) else [outputs])
        feed_names = [f"feed_{i}" for i in range(len(inputs))]
        return outputs, TracedLayer(recorder.program, recorder.captured, feed_names, fetch_names)

    def set_strategy(self, build_strategy=None, exec_strategy=None):
        """Keep the strategies for running the program (minifluid's Executor needs neither)."""
        assert build_strategy is None or isinstance(build_strategy, BuildStrategy)
        assert exec_strategy is None or isinstance(exec_strategy, ExecutionStrategy)
        self._build_strategy, self._exec_strategy = build_strategy, exec_strategy

    def _share(self):
        """Point the scope at the tensors' current values: later dygraph updates show here too."""
        for name, t in self._named:
            self._scope.var(name).set_value(t._value)

    def _feed(self, inputs):
        assert isinstance(inputs, (list, tuple)), "Inputs should be a list or tuple of variables"
        assert len(inputs) == len(self._feed_names), (
            f"TracedLayer takes {len(self._feed_names)} inputs, but got {len(inputs)}")
        return {name: x.numpy() if isinstance(x, Tensor) else x for name, x in zip(self._feed_names, inputs)}

    def __call__(self, inputs):
        """The outputs (numpy arrays) of the traced program on ``inputs``."""
        self._share()
        with scope_guard(self._scope):
            return self._exe.run(self._program, feed=self._feed(inputs), fetch_list=self._fetch_names)

    def save_inference_model(self, dirname, feed=None, fetch=None):
        """Save the program and its parameters in fluid's inference-model format; ``feed`` / ``fetch`` pick
        inputs and outputs by index (default: all)."""
        def pick(names, indices, what):
            if indices is None:
                return list(names)
            bad = [i for i in indices if not isinstance(i, int) or not -len(names) <= i < len(names)]
            assert not bad, f"{what} indices {bad} out of range (the traced layer has {len(names)} {what}s)"
            return [names[i] for i in indices]
        feeds = pick(self._feed_names, feed, "input")
        targets = [self._program.global_block().var(n) for n in pick(self._fetch_names, fetch, "output")]
        self._share()
        with scope_guard(self._scope), _static():
            _save_inference_model(dirname, feeds, targets, self._exe, main_program=self._program.clone())
