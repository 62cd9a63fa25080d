"""Shape ops: reshape2, transpose2, squeeze / unsqueeze / flatten (fluid's v1 ops and their ``*2``), concat, split,
stack, unstack, unbind.

The ``*2`` ops have fluid's auxiliary ``XShape`` output: like fluid, an empty array of shape
``[0] + x.shape`` (no data). minifluid's grads read X's shape directly, but the grad ops that
``append_backward`` builds list XShape as an input, so it must hold a value.
Infer-shape helpers keep -1 (unknown, e.g. batch) dims as -1.
"""
import numpy as np

from .registry import array_module, register_grad, register_op
from .tensor_attrs import int_list, known_list, scalar


def _prod(dims):
    dims = list(dims)
    return -1 if any(d < 0 for d in dims) else int(np.prod(dims, dtype=np.int64))


def _xshape(x):
    return ((0,) + tuple(x.shape), x.dtype)


def _xshape_value(x):
    """XShape at run time: an empty array of shape ``[0] + x.shape`` (nothing to allocate)."""
    return array_module(x).empty((0,) + tuple(x.shape), x.dtype)


# --- reshape2 ----------------------------------------------------------------------------------
def _reshape_target(x_shape, shape):
    """fluid's rule: 0 copies the input dim, one -1 is inferred. Unknown (-1) input dims that are
    copied in place by a 0 cancel out, so reshape([-1, 4, 4], [0, -1]) infers [-1, 16]."""
    out = [x_shape[i] if s == 0 else int(s) for i, s in enumerate(shape)]
    if -1 in shape:
        i = list(shape).index(-1)
        copied = {j for j, s in enumerate(shape) if s == 0 and x_shape[j] < 0}
        total = _prod(d for j, d in enumerate(x_shape) if j not in copied)
        rest = _prod(d for j, d in enumerate(out) if j != i and j not in copied)
        out[i] = -1 if total < 0 or rest <= 0 else total // rest
    return tuple(out)


def _reshape_shape(attrs, shape_t, shape_list):
    if shape_list:
        return [int(s.reshape(-1)[0]) for s in shape_list]
    if shape_t is not None:
        return [int(s) for s in shape_t.reshape(-1).tolist()]
    return attrs["shape"]


def _reshape_infer(attrs, x, shape_t, shape_list):
    """fluid's compile-time rule: with a ShapeTensor list, the attr's entries (-1 where a tensor gives one, 0
    copying the input's dimension); with only a Shape tensor, all -1; else the ``shape`` attr."""
    if shape_list:
        shape = known_list(attrs["shape"], None, shape_list)
        return (tuple(x.shape[i] if d == 0 else d for i, d in enumerate(shape)), x.dtype), _xshape(x)
    if shape_t is not None and not attrs["shape"]:
        shape = known_list([], shape_t)
        return ((-1,) * len(shape or ()), x.dtype), _xshape(x)
    return (_reshape_target(x.shape, attrs["shape"]), x.dtype), _xshape(x)


@register_op("reshape2", inputs=("X", "Shape", "ShapeTensor"), outputs=("Out", "XShape"),
             attrs={"shape": [], "use_quantizer": False}, optional=("Shape", "ShapeTensor"),
             duplicable=("ShapeTensor",), no_grad_inputs=("Shape", "ShapeTensor"), infer_shape=_reshape_infer)
def _reshape2_forward(attrs, x, shape_t, shape_list):
    return x.reshape(_reshape_target(x.shape, _reshape_shape(attrs, shape_t, shape_list))), _xshape_value(x)


@register_grad("reshape2", out_grads=("Out",))
def _reshape2_backward(attrs, ins, outs, douts, need):
    return douts[0].reshape(ins[0].shape), None, []  # [] (not None) for the duplicable ShapeTensor slot


# --- transpose2 --------------------------------------------------------------------------------
@register_op("transpose2", inputs=("X",), outputs=("Out", "XShape"),
             attrs={"axis": [], "use_mkldnn": False, "data_format": "AnyLayout"},
             infer_shape=lambda attrs, x: ((tuple(x.shape[a] for a in attrs["axis"]), x.dtype), _xshape(x)))
def _transpose2_forward(attrs, x):
    return x.transpose(attrs["axis"]), _xshape_value(x)


@register_grad("transpose2", out_grads=("Out",))
def _transpose2_backward(attrs, ins, outs, douts, need):
    return (douts[0].transpose(np.argsort(attrs["axis"]).tolist()),)


# --- squeeze2 / unsqueeze2 / flatten2 ----------------------------------------------------------
def _squeeze_shape(shape, axes):
    nd = len(shape)
    drop = {a % nd for a in axes if shape[a % nd] in (1, -1)} if axes else {i for i, d in enumerate(shape) if d == 1}
    return tuple(d for i, d in enumerate(shape) if i not in drop)


def _unsqueeze_shape(shape, axes):
    out = list(shape)
    for a in axes:  # fluid inserts one at a time; negative axes count from the growing end
        out.insert(a + len(out) + 1 if a < 0 else a, 1)
    return tuple(out)


def _flatten_shape(shape, axis):
    return (_prod(shape[:axis]) if axis else 1, _prod(shape[axis:]))


def _unsqueeze_known(shape, a, axes_t=None, axes_list=None):
    """Compile time: with axes given by tensors only the rank is known (fluid gives all dims -1)."""
    if a["axes"] or (axes_t is None and not axes_list):
        return _unsqueeze_shape(shape, a["axes"])
    axes = known_list([], axes_t, axes_list)
    if axes is None:
        raise ValueError(f"Input(AxesTensor)'s shape must be known. But received AxesTensor's shape = "
                         f"{list(axes_t.shape)}")
    return (-1,) * (len(shape) + len(axes))


_AXES_TENSORS = ("AxesTensor", "AxesTensorList")
_RELAYOUT = {  # fluid's v1 name (Out only; name + "2" adds XShape): (attrs, run-time shape rule, compile-time
    # rule, the inputs that may replace the attribute)
    "squeeze": ({"axes": []}, lambda shape, a: _squeeze_shape(shape, a["axes"]), None, ()),
    "unsqueeze": ({"axes": []}, lambda shape, a, t, ts: _unsqueeze_shape(shape, int_list(a["axes"], t, ts)),
                  _unsqueeze_known, _AXES_TENSORS),
    "flatten": ({"axis": 1}, lambda shape, a: _flatten_shape(shape, a["axis"]), None, ()),
}


def _register_relayout(name, attrs, rule, known, tensors, xshape):
    known = known or rule
    lists = tuple(s for s in tensors if s.endswith("List"))
    outputs = ("Out", "XShape") if xshape else ("Out",)

    def infer(a, x, *ts):
        out = (known(tuple(x.shape), a, *ts), x.dtype)
        return (out, _xshape(x)) if xshape else out

    def kernel(a, x, *ts):
        out = x.reshape(rule(x.shape, a, *ts))
        return (out, _xshape_value(x)) if xshape else out

    def grad(a, ins, outs, douts, need):  # [] (not None) for a duplicable slot
        return (douts[0].reshape(ins[0].shape),) + tuple([] if s in lists else None for s in tensors)
    register_op(name, inputs=("X",) + tensors, outputs=outputs, attrs=attrs, infer_shape=infer, optional=tensors,
                duplicable=lists, no_grad_inputs=tensors)(kernel)
    register_grad(name, out_grads=("Out",))(grad)


for _name, (_attrs, _rule, _known, _tensors) in _RELAYOUT.items():
    _register_relayout(_name, _attrs, _rule, _known, _tensors, False)
    _register_relayout(_name + "2", _attrs, _rule, _known, _tensors, True)


# --- concat / split ----------------------------------------------------------------------------
def _concat_infer(attrs, xs, axis_t):
    """An axis given by AxisTensor is unknown until the op runs: every dimension is -1 then (as fluid)."""
    if axis_t is not None:
        return ((-1,) * len(xs[0].shape), xs[0].dtype)
    shape = list(xs[0].shape)
    axis = attrs["axis"] % len(shape)
    dims = [x.shape[axis] for x in xs]
    shape[axis] = -1 if any(d < 0 for d in dims) else sum(dims)
    return (tuple(shape), xs[0].dtype)


@register_op("concat", inputs=("X", "AxisTensor"), outputs=("Out",), attrs={"axis": 0, "use_quantizer": False},
             duplicable=("X",), optional=("AxisTensor",), no_grad_inputs=("AxisTensor",), infer_shape=_concat_infer,
             share_lod={"Out": "X"}, grad_share_lod={})
def _concat_forward(attrs, xs, axis_t):
    return array_module(xs[0]).concatenate(xs, axis=int(scalar(attrs["axis"], axis_t)))


@register_grad("concat")
def _concat_backward(attrs, ins, outs, douts, need):
    xs, dout = ins[0], douts[0]
    axis = int(scalar(attrs["axis"], ins[1])) % dout.ndim
    bounds = np.cumsum([x.shape[axis] for x in xs])[:-1].tolist()
    return array_module(dout).split(dout, bounds, axis=axis), None


def _split_sizes(dim, attrs):
    """Section sizes along the split axis (one -1 section is inferred; unknown dims stay -1)."""
    if attrs["num"] > 0:
        return [dim // attrs["num"] if dim >= 0 else -1] * attrs["num"]
    sections = list(attrs["sections"])
    if -1 in sections:
        i = sections.index(-1)
        sections[i] = dim - sum(s for j, s in enumerate(sections) if j != i) if dim >= 0 else -1
    return sections


def _split_infer(attrs, x, axis_t, sections_t):
    """An AxisTensor leaves every dimension -1; sizes from SectionsTensorList are -1 (fluid's layer writes -1
    where a Variable gives one)."""
    n = attrs["num"] or len(sections_t or attrs["sections"])
    if axis_t is not None:
        return [((-1,) * len(x.shape), x.dtype)] * n
    axis = attrs["axis"] % len(x.shape)
    sizes = _split_sizes(x.shape[axis], attrs) if not sections_t else [-1] * n
    metas = []
    for size in sizes:
        shape = list(x.shape)
        shape[axis] = size
        metas.append((tuple(shape), x.dtype))
    return metas


@register_op("split", inputs=("X", "AxisTensor", "SectionsTensorList"), outputs=("Out",),
             attrs={"axis": 0, "num": 0, "sections": []}, duplicable=("Out", "SectionsTensorList"),
             optional=("AxisTensor", "SectionsTensorList"), no_grad_inputs=("AxisTensor", "SectionsTensorList"),
             infer_shape=_split_infer)
def _split_forward(attrs, x, axis_t, sections_t):
    axis = int(scalar(attrs["axis"], axis_t))
    if sections_t:
        attrs = {**attrs, "num": 0, "sections": int_list([], None, sections_t)}
    bounds = np.cumsum(_split_sizes(x.shape[axis], attrs))[:-1].tolist()
    return array_module(x).split(x, bounds, axis=axis)


@register_grad("split")
def _split_backward(attrs, ins, outs, douts, need):
    xp = array_module(ins[0])
    pieces = [d if d is not None else xp.zeros_like(o) for o, d in zip(outs[0], douts[0])]
    axis = int(scalar(attrs["axis"], ins[1]))
    return xp.concatenate(pieces, axis=axis), None, []  # [] for the duplicable SectionsTensorList


# --- stack / unstack ---------------------------------------------------------------------------
def _stacked_shape(shape, axis, n):
    axis = axis % (len(shape) + 1)
    return tuple(shape[:axis]) + (n,) + tuple(shape[axis:])


@register_op("stack", inputs=("X",), outputs=("Y",), attrs={"axis": 0}, duplicable=("X",),
             infer_shape=lambda attrs, xs: (_stacked_shape(xs[0].shape, attrs["axis"], len(xs)), xs[0].dtype))
def _stack_forward(attrs, xs):
    return array_module(xs[0]).stack(xs, axis=attrs["axis"])


@register_grad("stack")
def _stack_backward(attrs, ins, outs, douts, need):
    dy = douts[0]
    axis = attrs["axis"] % dy.ndim
    return ([dy.take(i, axis=axis) for i in range(dy.shape[axis])],)


def _unstack_infer(attrs, x):
    axis = attrs["axis"] % len(x.shape)
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    return [(shape, x.dtype)] * (attrs["num"] or x.shape[axis])


@register_op("unstack", inputs=("X",), outputs=("Y",), attrs={"axis": 0, "num": 0}, duplicable=("Y",),
             infer_shape=_unstack_infer)
def _unstack_forward(attrs, x):
    axis = attrs["axis"] % x.ndim
    return [x.take(i, axis=axis) for i in range(x.shape[axis])]


@register_grad("unstack")
def _unstack_backward(attrs, ins, outs, douts, need):
    xp = array_module(ins[0])
    pieces = [d if d is not None else xp.zeros_like(o) for o, d in zip(outs[0], douts[0])]
    return (xp.stack(pieces, axis=attrs["axis"]),)


# --- unbind: unstack with one output per slice (fluid's grad op is a stack) --------------------------------------
def _unbind_infer(attrs, x):
    axis = attrs["axis"] % len(x.shape)
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    if x.shape[axis] < 0:
        raise ValueError(f"unbind: the size of axis {attrs['axis']} must be known, got shape {list(x.shape)}")
    return [(shape, x.dtype)] * x.shape[axis]


@register_op("unbind", inputs=("X",), outputs=("Out",), attrs={"axis": 0}, duplicable=("Out",),
             infer_shape=_unbind_infer)
def _unbind_forward(attrs, x):
    return _unstack_forward(attrs, x)


register_grad("unbind")(_unstack_backward)
