"""The eager Tensor (fluid's VarBase / paddle 2.x Tensor) and eager Parameters.

A Tensor holds a numpy (or CuPy) array in ``_value``. It is a ``Variable`` subclass, so the static
layer builders, clip and regularizer code accept it where they check ``isinstance(x, Variable)``;
in dygraph mode those builders run their ops at once through the tracer (layers/helper.py).
Arithmetic operators are built on the registered ``elementwise_*`` / ``scale`` / ``matmul`` ops, so
their gradients come from the registry like every other op (NOTE [ Eager autograd ] in tracer.py).

``dtype`` is fluid's dtype *name* (``'float32'``), as on static Variables; ``shape`` is a list.
"""
import numpy as np

from ..dtypes import convert_dtype
from ..framework import dygraph_mode
from ..framework import unique_name
from ..framework.program import default_main_program
from ..framework.variable import Parameter, Variable
from ..lod_tensor import LoDTensor, float_friendly
from ..ops.registry import array_module
from ..places import CPUPlace, CUDAPlace
from .tracer import Tracer, run_backward

__all__ = ["Tensor", "ParamBase", "EagerBlock", "apply", "default_tracer"]

_DEFAULT_TRACER = Tracer()
"""Runs Tensor arithmetic outside dygraph mode (a Tensor always computes eagerly)."""


def default_tracer():
    return dygraph_mode._tracer or _DEFAULT_TRACER


def apply(op_type, inputs, attrs=None, out_slot="Out"):
    """Run ``op_type`` eagerly and return the tensor of its output slot ``out_slot``."""
    out = Tensor(None, stop_gradient=False)
    (dygraph_mode._tracer or _DEFAULT_TRACER).trace_op(op_type, inputs, {out_slot: out}, attrs)
    return out


def _scale(x, scale=1.0, bias=0.0):
    return apply("scale", {"X": x}, {"scale": float(scale), "bias": float(bias), "bias_after_scale": True})


def _binary(op_type, x, y, reverse=False):
    if not isinstance(y, Tensor):  # a scalar: as a full tensor when it becomes X (fluid broadcasts Y onto X)
        xp = array_module(x._value)
        y = Tensor(xp.full_like(x._value, y) if reverse else xp.asarray(y, dtype=x._value.dtype))
    if reverse:
        x, y = y, x
    return apply(op_type, {"X": x, "Y": y}, {"axis": -1})


class Tensor(Variable):
    """An eager tensor: data now, plus what ``backward()`` needs.

    Args:
        value (ndarray or cupy.ndarray, or None for an op's output not yet run).
        name (str, optional): default ``eager_tmp_<n>``, generated when first asked for.
        stop_gradient (bool, default True): False makes ``backward()`` compute a gradient for it.
    """

    _node = None
    _slot = -1
    _k = -1
    _grad = None
    _name = None
    persistable = False
    lod_level = 0
    need_check_feed = False
    is_data = False

    def __init__(self, value=None, name=None, stop_gradient=True, persistable=False, dtype=None):
        self._value = value
        self.stop_gradient = stop_gradient
        if name is not None:
            self._name = name
        if persistable:
            self.persistable = True
        if dtype is not None and value is None:
            self._dtype = convert_dtype(dtype)

    # --- metadata --------------------------------------------------------------------------------
    @property
    def name(self):
        if self._name is None:
            self._name = unique_name.generate("eager_tmp")
        return self._name

    @name.setter
    def name(self, value):
        self._name = value

    @property
    def block(self):
        """In dygraph mode the default main program's global block (as fluid), whose ``append_op`` runs the op
        at once; outside it (paddle 2.x eager tensors) a stand-in block that does the same."""
        return default_main_program().global_block() if dygraph_mode._tracer is not None else _EAGER_BLOCK

    @property
    def shape(self):
        return list(self._value.shape)

    @property
    def dtype(self):
        value = self._value
        if value is None:
            return getattr(self, "_dtype", None)
        return value.dtype.name  # fluid's dtype names are numpy's

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def size(self):
        return int(self._value.size)

    @property
    def place(self):
        return CPUPlace() if type(self._value) is np.ndarray else CUDAPlace(int(self._value.device.id))

    @property
    def type(self):
        return "LOD_TENSOR"

    # --- data ----------------------------------------------------------------------------------------
    def value(self):
        """fluid's ``VarBase.value()``: a handle whose ``get_tensor()`` is a LoDTensor over this tensor's value;
        ``set`` on it replaces the value. Sequence lengths set there stay on this tensor: the tracer does not
        carry LoD from op to op."""
        return _ValueHandle(self)

    def numpy(self):
        """A numpy copy of the data; a one-element result still converts with ``float()`` and ``%f`` on
        numpy 2.4+ (as fetched losses do: ``float_friendly`` in lod_tensor.py)."""
        value = self._value
        if value is None:
            raise RuntimeError(f"Tensor of {self.name} is Empty, please check if it has no data.")
        return float_friendly(value.get() if hasattr(value, "get") else np.array(value))

    def __array__(self, dtype=None, copy=None):
        value = self._value
        value = value.get() if hasattr(value, "get") else value
        return value if dtype is None else value.astype(dtype)

    def item(self):
        return self.numpy().reshape(-1)[0].item() if self.size == 1 else self.numpy().item()

    def set_value(self, value):
        """Replace the data (same shape) with ``value`` (ndarray or Tensor), keeping dtype and place.

        Raises:
            AssertionError: ``value`` has another shape (fluid's message).
        """
        value = value._value if isinstance(value, Tensor) else value
        assert list(np.shape(value)) == self.shape, (
            f"Variable Shape not match, Variable [ {self.name} ] need tensor with shape {self.shape} but load set "
            f"tensor with shape {list(np.shape(value))}")
        xp = array_module(self._value)
        self._value = xp.asarray(value, dtype=self._value.dtype).copy()

    def detach(self):
        """The same data, cut off from the graph (stop_gradient=True)."""
        return Tensor(self._value)

    def astype(self, dtype):
        dtype = convert_dtype(dtype)
        return apply("cast", {"X": self}, {"in_dtype": self.dtype, "out_dtype": dtype})

    # --- autograd --------------------------------------------------------------------------------------
    def backward(self, backward_strategy=None, retain_graph=False):
        """Compute gradients of this tensor into every leaf that requires one (they accumulate)."""
        run_backward(self, None, retain_graph)

    def gradient(self):
        """The accumulated gradient as a numpy array, or None."""
        grad = self._grad
        if grad is None:
            return None
        return grad.get() if hasattr(grad, "get") else np.array(grad)

    @property
    def grad(self):
        """paddle 2.x: the gradient as a Tensor (None when there is none)."""
        return None if self._grad is None else Tensor(self._grad)

    def _grad_ivar(self):
        """fluid 1.8's gradient accessor: the gradient as a Tensor named ``<name>@GRAD``, or None."""
        return None if self._grad is None else Tensor(self._grad, self.name + "@GRAD")

    def clear_gradient(self):
        self._grad = None

    clear_grad = clear_gradient

    # --- operators (registered ops, so their gradients come from the registry) -------------------------
    def __add__(self, other):
        return _binary("elementwise_add", self, other) if isinstance(other, Tensor) else _scale(self, 1.0, other)

    __radd__ = __add__

    def __sub__(self, other):
        return _binary("elementwise_sub", self, other) if isinstance(other, Tensor) else _scale(self, 1.0, -other)

    def __rsub__(self, other):
        return _scale(self, -1.0, other)

    def __mul__(self, other):
        return _binary("elementwise_mul", self, other) if isinstance(other, Tensor) else _scale(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return _binary("elementwise_div", self, other) if isinstance(other, Tensor) else _scale(self, 1.0 / other)

    def __rtruediv__(self, other):
        return _binary("elementwise_div", self, other, reverse=True)

    def __pow__(self, other):
        return _binary("elementwise_pow", self, other)

    def __neg__(self):
        return _scale(self, -1.0)

    def __matmul__(self, other):
        return apply("matmul", {"X": self, "Y": other})

    # comparisons give bool tensors (fluid's compare ops), == and != too
    __lt__ = lambda self, other: _binary("less_than", self, other)  # noqa: E731
    __le__ = lambda self, other: _binary("less_equal", self, other)  # noqa: E731
    __gt__ = lambda self, other: _binary("greater_than", self, other)  # noqa: E731
    __ge__ = lambda self, other: _binary("greater_equal", self, other)  # noqa: E731
    def __eq__(self, other):  # eager: compares values, as in fluid 1.8
        return _binary("equal", self, other) if isinstance(other, (Tensor, int, float)) else NotImplemented

    def __ne__(self, other):
        return _binary("not_equal", self, other) if isinstance(other, (Tensor, int, float)) else NotImplemented

    __hash__ = object.__hash__

    def __len__(self):
        return len(self._value)

    def __bool__(self):
        return bool(self._value)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        """A one-element integer tensor used as an index (``range(t)``, ``a_list[t]``), as in fluid."""
        assert self.size == 1, "only one element variable can be converted to python index."
        if self._value.dtype.kind not in "iub":
            raise TypeError(f"only an integer tensor can be used as an index, but {self.name!r} is {self.dtype}")
        return int(self._value.reshape(-1)[0])

    def __iter__(self):
        """The sub-tensors along dimension 0 (``self[0]``, ``self[1]``, ...), as fluid's indexing gives them."""
        if self._value.ndim == 0:
            raise TypeError(f"iteration over a 0-d tensor {self.name!r}")
        return (self[i] for i in range(self._value.shape[0]))

    def __repr__(self):
        data = np.array2string(self.numpy(), prefix="       ", separator=", ") if self._value is not None else None
        return (f"Tensor(shape={self.shape if self._value is not None else None}, dtype={self.dtype}, "
                f"place={self.place if self._value is not None else None}, stop_gradient={self.stop_gradient},\n"
                f"       {data})")

    __str__ = __repr__

    def to_string(self, throw_on_error=False, with_details=False):
        return repr(self)


class ParamBase(Tensor, Parameter):
    """An eager parameter: persistable, trainable (``stop_gradient = not trainable``), with the static
    Parameter's optimizer settings (``optimize_attr``, ``regularizer``, ``gradient_clip_attr``)."""

    persistable = True

    def __init__(self, value, name, trainable=True, optimize_attr=None, regularizer=None,
                 gradient_clip_attr=None, do_model_average=None):
        super().__init__(value, name, stop_gradient=not trainable, persistable=True)
        self.optimize_attr = optimize_attr or {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.gradient_clip_attr = gradient_clip_attr
        self.do_model_average = do_model_average

    @property
    def trainable(self):
        return not self.stop_gradient

    @trainable.setter
    def trainable(self, value):
        self.stop_gradient = not value

    def __repr__(self):
        return f"Parameter {self.name}: " + super().__repr__()


class _ValueHandle:
    __slots__ = ("_owner",)

    def __init__(self, owner):
        self._owner = owner

    def get_tensor(self):
        return _TensorView(self._owner)


class _TensorView(LoDTensor):
    """A LoDTensor over an eager tensor's value (``Tensor.value().get_tensor()``)."""

    __slots__ = ("_owner",)

    def __init__(self, owner):
        super().__init__(owner._value, getattr(owner, "_lod", None))
        self._owner = owner

    def set(self, array, place=None):
        super().set(array, place)
        self._owner._value = self._array

    def set_recursive_sequence_lengths(self, lengths):
        super().set_recursive_sequence_lengths(lengths)
        self._owner._lod = self._lod


class EagerBlock:
    """Stands in for a Block in dygraph mode: code written for static graphs (gradient clipping,
    regularizers, optimizer update ops) that does ``var.block.append_op(...)`` runs the op at once."""

    ops = ()

    def create_var(self, name=None, shape=None, dtype="float32", stop_gradient=False, **_ignored):
        return Tensor(None, name=name, stop_gradient=stop_gradient, dtype=dtype)

    def append_op(self, type, inputs=None, outputs=None, attrs=None, **_ignored):
        default_tracer().trace_op(type, inputs or {}, outputs or {}, attrs)


_EAGER_BLOCK = EagerBlock()
Tracer.tensor_type, Tracer.param_type = Tensor, ParamBase
