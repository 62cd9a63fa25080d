"""Tensor-creation and plumbing ops: fill_constant, assign, cast, random initialisers."""
import numpy as np

from ..framework.dtypes import convert_dtype, to_numpy_dtype
from .registry import register_grad, register_op, same_as


def _shape_dtype_infer(attrs, *ins):
    return (tuple(attrs["shape"]), convert_dtype(attrs["dtype"]))


@register_op("fill_constant", inputs=(), outputs=("Out",),
             attrs={"shape": [1], "dtype": "float32", "value": 0.0, "force_cpu": False, "str_value": ""},
             infer_shape=_shape_dtype_infer)
def _fill_constant_forward(attrs):
    return np.full(attrs["shape"], attrs["value"], dtype=to_numpy_dtype(attrs["dtype"]))


@register_op("assign", inputs=("X",), outputs=("Out",), infer_shape=same_as(0))
def _assign_forward(attrs, x):
    return x.copy()


@register_grad("assign")
def _assign_backward(attrs, ins, outs, douts, need):
    return (douts[0],)


@register_op("cast", inputs=("X",), outputs=("Out",), attrs={"in_dtype": "float32", "out_dtype": "float32"},
             infer_shape=lambda attrs, x: (x.shape, convert_dtype(attrs["out_dtype"])))
def _cast_forward(attrs, x):
    return x.astype(to_numpy_dtype(attrs["out_dtype"]))


@register_grad("cast")
def _cast_backward(attrs, ins, outs, douts, need):
    return (douts[0].astype(ins[0].dtype),)


def _rng(attrs):
    """A seeded generator when the op has a seed, else numpy's global RNG (np.random.seed works)."""
    seed = attrs.get("seed", 0)
    return np.random.RandomState(seed) if seed else np.random


@register_op("uniform_random", inputs=(), outputs=("Out",),
             attrs={"shape": [1], "dtype": "float32", "min": -1.0, "max": 1.0, "seed": 0},
             infer_shape=_shape_dtype_infer)
def _uniform_random_forward(attrs):
    out = _rng(attrs).uniform(attrs["min"], attrs["max"], size=attrs["shape"])
    return out.astype(to_numpy_dtype(attrs["dtype"]))


@register_op("gaussian_random", inputs=(), outputs=("Out",),
             attrs={"shape": [1], "dtype": "float32", "mean": 0.0, "std": 1.0, "seed": 0},
             infer_shape=_shape_dtype_infer)
def _gaussian_random_forward(attrs):
    out = _rng(attrs).normal(attrs["mean"], attrs["std"], size=attrs["shape"])
    return out.astype(to_numpy_dtype(attrs["dtype"]))


@register_op("truncated_gaussian_random", inputs=(), outputs=("Out",),
             attrs={"shape": [1], "dtype": "float32", "mean": 0.0, "std": 1.0, "seed": 0},
             infer_shape=_shape_dtype_infer)
def _truncated_gaussian_random_forward(attrs):
    rng = _rng(attrs)
    out = rng.normal(0.0, 1.0, size=attrs["shape"])
    bad = np.abs(out) > 2.0
    while bad.any():  # resample the tails; converges in a few rounds
        out[bad] = rng.normal(0.0, 1.0, size=int(bad.sum()))
        bad = np.abs(out) > 2.0
    return (out * attrs["std"] + attrs["mean"]).astype(to_numpy_dtype(attrs["dtype"]))
