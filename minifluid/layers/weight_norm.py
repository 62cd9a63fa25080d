"""Weight normalisation for a parameter made with ``WeightNormParamAttr`` (param_attr.py).

The startup program initialises ``<name>_v`` with the attribute's initializer and sets ``<name>_g`` to
||v|| over every axis but ``dim``; the main program computes ``w = v * g / ||v||``, which the layer uses in
place of a parameter, so gradients reach ``g`` and ``v`` through ordinary ops.
"""
import copy

from ..framework import unique_name

__all__ = ["weight_normalized"]


def _norm_except(block, v, dim, out, tmp_name):
    """||v|| over every axis but ``dim``, kept as [1]*rank (dim None) or with v.shape[dim] on ``dim``."""
    rank = len(v.shape)
    squared = block.create_var(name=unique_name.generate(tmp_name), shape=v.shape, dtype=v.dtype)
    total = block.create_var(name=unique_name.generate(tmp_name), shape=out.shape, dtype=v.dtype)
    block.append_op(type="square", inputs={"X": [v]}, outputs={"Out": [squared]})
    axes = [a for a in range(rank) if a != (dim % rank if dim is not None else None)]
    block.append_op(type="reduce_sum", inputs={"X": [squared]}, outputs={"Out": [total]},
                    attrs={"dim": axes, "keep_dim": True, "reduce_all": dim is None})
    block.append_op(type="sqrt", inputs={"X": [total]}, outputs={"Out": [out]})
    return out


def weight_normalized(helper, attr, shape, dtype):
    """The Variable ``w = g * v / ||v||`` for ``attr`` (a WeightNormParamAttr with name and initializer set)."""
    dim = attr.dim
    if dim is not None and not -len(shape) <= dim < len(shape):
        raise ValueError(f"WeightNormParamAttr dim {dim} is out of range for a parameter of shape {list(shape)}")
    g_shape = [1] * len(shape)
    if dim is not None:
        g_shape[dim] = shape[dim]
    g_attr, v_attr = copy.deepcopy(attr), copy.deepcopy(attr)
    g_attr.name, v_attr.name = attr.name + "_g", attr.name + "_v"
    tmp = ".".join([helper.name, "weight_norm"])
    startup = helper.startup_program.global_block()
    if not startup.has_var(v_attr.name):
        kwargs = v_attr._to_kwargs()
        del kwargs["name"]
        v0 = startup.create_parameter(v_attr.name, shape, dtype, **kwargs)
        attr.initializer(v0, startup)
        g0 = startup.create_parameter(g_attr.name, g_shape, dtype, **kwargs)
        _norm_except(startup, v0, dim, g0, tmp)
    main = helper.main_program.global_block()
    g, v = (main.var(a.name) if main.has_var(a.name) else
            main.create_parameter(a.name, s, dtype, **{k: val for k, val in a._to_kwargs().items() if k != "name"})
            for a, s in ((g_attr, g_shape), (v_attr, shape)))
    block = helper.main_program.current_block()
    norm = block.create_var(name=unique_name.generate(tmp), shape=g_shape, dtype=dtype)
    _norm_except(block, v, dim, norm, tmp)
    scale = block.create_var(name=unique_name.generate(tmp), shape=g_shape, dtype=dtype)
    w = block.create_var(name=unique_name.generate(tmp), shape=shape, dtype=dtype)
    block.append_op(type="elementwise_div", inputs={"X": [g], "Y": [norm]}, outputs={"Out": [scale]},
                    attrs={"axis": -1})
    block.append_op(type="elementwise_mul", inputs={"X": [v], "Y": [scale]}, outputs={"Out": [w]},
                    attrs={"axis": -1})
    return w
