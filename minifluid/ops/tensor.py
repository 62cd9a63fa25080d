"""Tensor-creation and plumbing ops: fill_constant, fill_constant_batch_size_like, assign_value, fill_zeros_like,
fill_any_like, assign, cast, random initialisers."""
import numpy as np

from ..dtypes import convert_dtype, to_numpy_dtype
from .registry import InvalidArgumentError, array_module, register_grad, register_op, same_as
from .tensor_attrs import int_list, known_list


def _shape_dtype_infer(attrs, *ins):
    return (tuple(attrs["shape"]), convert_dtype(attrs["dtype"]))


# --- fill_constant: shape and value may come from tensors (fluid's ShapeTensor(List) / ValueTensor) -----------
_SHAPE_TENSORS = ("ShapeTensor", "ShapeTensorList")


def _shape_known(attrs, shape_t, shape_list):
    """The output shape when the program is built: -1 where a tensor gives a dimension."""
    shape = known_list(attrs["shape"], shape_t, shape_list, "ShapeTensor")
    if shape is None:
        raise ValueError(f"The length of Input(ShapeTensor) must be known, but received its shape "
                         f"{list(shape_t.shape)}")
    return tuple(shape)


def _shape_infer(attrs, *ins):
    return (_shape_known(attrs, *ins[-2:]), convert_dtype(attrs["dtype"]))


def _fill_value(attrs, value_t):
    """fluid's precedence: ValueTensor, else str_value (exact for int64, "inf" / "nan" too), else value."""
    if value_t is not None:
        if value_t.size != 1:
            raise ValueError(f"When use Tensor as value to set Tensor value in fill_constant, value "
                             f"input(ValueTensor) size must be 1, but get {value_t.size}")
        return value_t.reshape(-1)[0]
    text = attrs["str_value"]
    if not text:
        return attrs["value"]
    return int(text) if convert_dtype(attrs["dtype"]) == "int64" else float(text)


@register_op("fill_constant", inputs=("ValueTensor",) + _SHAPE_TENSORS, outputs=("Out",),
             attrs={"shape": [1], "dtype": "float32", "value": 0.0, "force_cpu": False, "str_value": ""},
             optional=("ValueTensor",) + _SHAPE_TENSORS, duplicable=("ShapeTensorList",), infer_shape=_shape_infer,
             no_gradient=True)
def _fill_constant_forward(attrs, value_t, shape_t, shape_list):
    return np.full(int_list(attrs["shape"], shape_t, shape_list), _fill_value(attrs, value_t),
                   dtype=to_numpy_dtype(attrs["dtype"]))


@register_op("assign", inputs=("X",), outputs=("Out",), infer_shape=same_as(0), share_lod={"Out": "X"})
def _assign_forward(attrs, x):
    return x.copy()


@register_grad("assign")
def _assign_backward(attrs, ins, outs, douts, need):
    return (douts[0],)


@register_op("cast", inputs=("X",), outputs=("Out",), attrs={"in_dtype": "float32", "out_dtype": "float32"},
             infer_shape=lambda attrs, x: (x.shape, convert_dtype(attrs["out_dtype"])), share_lod={"Out": "X"})
def _cast_forward(attrs, x):
    return x.astype(to_numpy_dtype(attrs["out_dtype"]))


def _cast_backward(attrs, ins, outs, douts, need):
    return (douts[0].astype(ins[0].dtype),)


@register_grad("cast", builder=True, eager=_cast_backward)
def _build_cast_grad(op, grads):
    """fluid's gradient of a cast: a cast of Out@GRAD back to X's dtype (no ``cast_grad`` op type)."""
    if grads.output("Out")[0] is None:
        return []
    attrs = {"in_dtype": op.attrs["out_dtype"], "out_dtype": op.attrs["in_dtype"]}
    return [("cast", {"X": grads.output("Out")}, {"Out": grads.input("X")}, attrs)]


def _rng(attrs):
    """A seeded generator when the op has a seed, else numpy's global RNG (np.random.seed works)."""
    seed = attrs.get("seed", 0)
    return np.random.RandomState(seed) if seed else np.random


def _uniform_infer(attrs, *shape_tensors):
    if not attrs["min"] < attrs["max"]:
        raise ValueError(f"The uniform_random's min must less then max. But received min = {attrs['min']} great "
                         f"than or equal max = {attrs['max']}.")
    if attrs["diag_num"] < 0 or attrs["diag_step"] < 0:
        raise ValueError(f"The uniform_random's diag_num and diag_step must be at least 0, but received "
                         f"diag_num {attrs['diag_num']}, diag_step {attrs['diag_step']}")
    return _shape_infer(attrs, *shape_tensors)


@register_op("uniform_random", inputs=_SHAPE_TENSORS, outputs=("Out",), optional=_SHAPE_TENSORS,
             duplicable=("ShapeTensorList",), no_gradient=True, infer_shape=_uniform_infer,
             attrs={"shape": [1], "dtype": "float32", "min": -1.0, "max": 1.0, "seed": 0, "diag_num": 0,
                    "diag_step": 0, "diag_val": 1.0})
def _uniform_random_forward(attrs, shape_t, shape_list):
    """Samples in [min, max); with diag_num > 0, the flat positions i * (diag_step + 1) for i < diag_num hold
    diag_val (fluid's identity-like initialisation)."""
    out = _rng(attrs).uniform(attrs["min"], attrs["max"], size=int_list(attrs["shape"], shape_t, shape_list))
    out = out.astype(to_numpy_dtype(attrs["dtype"]))
    num, step = attrs["diag_num"], attrs["diag_step"]
    if num > 0:
        if out.size <= (num - 1) * (step + 1):
            raise ValueError(f"ShapeInvalid: the diagonal's elements is equal (num-1) * (step-1) with num {num}, "
                             f"step {step}, It should be smaller than {out.size}, but received "
                             f"{(num - 1) * (step + 1)}")
        out.reshape(-1)[np.arange(num) * (step + 1)] = attrs["diag_val"]
    return out


@register_op("gaussian_random", inputs=_SHAPE_TENSORS, outputs=("Out",), optional=_SHAPE_TENSORS,
             duplicable=("ShapeTensorList",), no_gradient=True, infer_shape=_shape_infer,
             attrs={"shape": [1], "dtype": "float32", "mean": 0.0, "std": 1.0, "seed": 0, "use_mkldnn": False})
def _gaussian_random_forward(attrs, shape_t, shape_list):
    out = _rng(attrs).normal(attrs["mean"], attrs["std"], size=int_list(attrs["shape"], shape_t, shape_list))
    return out.astype(to_numpy_dtype(attrs["dtype"]))


@register_op("truncated_gaussian_random", inputs=(), outputs=("Out",),
             attrs={"shape": [1], "dtype": "float32", "mean": 0.0, "std": 1.0, "seed": 0},
             infer_shape=_shape_dtype_infer, no_gradient=True)
def _truncated_gaussian_random_forward(attrs):
    rng = _rng(attrs)
    out = rng.normal(0.0, 1.0, size=attrs["shape"])
    bad = np.abs(out) > 2.0
    while bad.any():  # resample the tails; converges in a few rounds
        out[bad] = rng.normal(0.0, 1.0, size=int(bad.sum()))
        bad = np.abs(out) > 2.0
    return (out * attrs["std"] + attrs["mean"]).astype(to_numpy_dtype(attrs["dtype"]))


# --- assign_value: a constant array stored in the op's attributes ----------------------------------
_VALUE_ATTRS = ("fp32_values", "int32_values", "int64_values", "bool_values")


@register_op("assign_value", inputs=(), outputs=("Out",),
             attrs={"shape": [1], "dtype": "float32", **{k: [] for k in _VALUE_ATTRS}},
             infer_shape=lambda attrs: (tuple(attrs["shape"]), attrs["dtype"]), no_gradient=True)
def _assign_value_forward(attrs):
    values = next((attrs[k] for k in _VALUE_ATTRS if attrs[k]), [])
    return np.array(values, dtype=to_numpy_dtype(attrs["dtype"])).reshape(attrs["shape"])


# --- fill_zeros_like / fill_any_like: gradients backward creates at run time ----------------------
@register_op("fill_zeros_like", inputs=("X",), outputs=("Out",), infer_shape=same_as(0), no_gradient=True,
             share_lod={"Out": "X"})
def _fill_zeros_like_forward(attrs, x):
    return array_module(x).zeros_like(x)


@register_op("fill_any_like", inputs=("X",), outputs=("Out",), attrs={"value": 0.0, "dtype": -1},
             infer_shape=lambda attrs, x: (x.shape, x.dtype if attrs["dtype"] == -1 else attrs["dtype"]),
             no_gradient=True)
def _fill_any_like_forward(attrs, x):
    dtype = x.dtype if attrs["dtype"] == -1 else to_numpy_dtype(attrs["dtype"])
    value = attrs["value"]
    info = np.finfo(dtype) if dtype.kind in "fc" else np.iinfo(dtype) if dtype.kind in "iu" else None
    if value != value or (info is not None and not info.min <= value <= info.max):
        raise InvalidArgumentError(f"fill_any_like: the filled value {value} is NaN or out of the range of the "
                                   f"output's dtype {dtype.name} ([{info.min}, {info.max}])")
    return array_module(x).full(x.shape, value, dtype=dtype)


# --- fill_constant_batch_size_like: a constant whose batch dim follows the input's ------------------------
def _batch_like_shape(attrs, x_shape):
    shape = list(attrs["shape"])
    i, o = attrs["input_dim_idx"], attrs["output_dim_idx"]
    if not 0 <= i < len(x_shape) or not 0 <= o < len(shape):
        raise ValueError(f"input_dim_idx ({i}) must be in [0, {len(x_shape)}) and output_dim_idx ({o}) in "
                         f"[0, {len(shape)})")
    shape[o] = x_shape[i]
    return tuple(shape)


@register_op("fill_constant_batch_size_like", inputs=("Input",), outputs=("Out",), no_gradient=True,
             attrs={"shape": [1], "dtype": "float32", "value": 0.0, "input_dim_idx": 0, "output_dim_idx": 0,
                    "force_cpu": False, "str_value": ""},
             infer_shape=lambda attrs, x: (_batch_like_shape(attrs, x.shape), convert_dtype(attrs["dtype"])))
def _fill_constant_batch_size_like_forward(attrs, x):
    return array_module(x).full(_batch_like_shape(attrs, x.shape), attrs["value"],
                                dtype=to_numpy_dtype(attrs["dtype"]))


# --- uniform / gaussian_random_batch_size_like: random samples whose batch dim follows the input's ---------------
for _name, (_draw, _attrs) in {
        "uniform_random_batch_size_like": (lambda rng, a, shape: rng.uniform(a["min"], a["max"], size=shape),
                                           {"min": -1.0, "max": 1.0}),
        "gaussian_random_batch_size_like": (lambda rng, a, shape: rng.normal(a["mean"], a["std"], size=shape),
                                            {"mean": 0.0, "std": 1.0})}.items():
    register_op(_name, inputs=("Input",), outputs=("Out",), no_gradient=True,
                attrs={"shape": [], "dtype": "float32", "input_dim_idx": 0, "output_dim_idx": 0, "seed": 0, **_attrs},
                infer_shape=lambda attrs, x: (_batch_like_shape(attrs, x.shape), convert_dtype(attrs["dtype"])))(
        lambda attrs, x, draw=_draw: draw(_rng(attrs), attrs, _batch_like_shape(attrs, x.shape)).astype(
            to_numpy_dtype(attrs["dtype"])))


@register_op("randint", inputs=(), outputs=("Out",), no_gradient=True,
             attrs={"shape": [1], "low": 0, "high": 1, "dtype": "int64", "seed": 0}, infer_shape=_shape_dtype_infer)
def _randint_forward(attrs):
    return _rng(attrs).randint(attrs["low"], attrs["high"], size=attrs["shape"]).astype(to_numpy_dtype(attrs["dtype"]))


# "device": fluid 1.8's randperm layer takes one (it becomes op_device); an op that states it runs where its
# program runs, like any op here.
@register_op("randperm", inputs=(), outputs=("Out",), no_gradient=True,
             attrs={"n": 1, "dtype": "int64", "seed": 0, "device": None},
             infer_shape=lambda attrs: ((attrs["n"],), convert_dtype(attrs["dtype"])))
def _randperm_forward(attrs):
    return _rng(attrs).permutation(attrs["n"]).astype(to_numpy_dtype(attrs["dtype"]))


@register_op("sampling_id", inputs=("X",), outputs=("Out",), no_gradient=True,
             attrs={"min": 0.0, "max": 1.0, "seed": 0}, infer_shape=lambda attrs, x: ((x.shape[0],), "int64"))
def _sampling_id_forward(attrs, x):
    """Per row of probabilities, the first id whose running sum passes a uniform draw (the last id if none does)."""
    draws = _rng(attrs).uniform(attrs["min"], attrs["max"], size=(x.shape[0], 1))
    ids = (x.cumsum(axis=1) <= draws).sum(axis=1)
    return np.minimum(ids, x.shape[1] - 1).astype(np.int64)
