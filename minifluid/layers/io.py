"""Graph side of feeding: data variables (``fluid.data`` and ``layers.data``)."""
from ..framework.program import default_main_program

__all__ = ["data", "layers_data"]


def _check_name_shape(name, shape):
    if not isinstance(name, str):
        raise TypeError(f"The type of 'name' in data must be str, but received {type(name).__name__}.")
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"The type of 'shape' in data must be list or tuple, but received {type(shape).__name__}.")


def data(name, shape, dtype="float32", lod_level=0):
    """fluid.data: the shape as given (None -> -1), checked at feed time."""
    _check_name_shape(name, shape)
    shape = [-1 if d is None else int(d) for d in shape]
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=dtype, lod_level=lod_level, stop_gradient=True,
        need_check_feed=True, is_data=True)


def layers_data(name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=None,
                stop_gradient=True):
    """fluid.layers.data: prepends a -1 batch dim unless the shape already has one; not feed-checked."""
    _check_name_shape(name, shape)
    shape = [-1 if d is None else int(d) for d in shape]
    if append_batch_size and not any(d < 0 for d in shape):
        shape = [-1] + shape
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=dtype, lod_level=lod_level, stop_gradient=stop_gradient,
        need_check_feed=False, is_data=True)
