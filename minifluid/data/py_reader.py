"""``fluid.layers.py_reader`` and ``create_py_reader_by_data``: a READER variable fed from Python.

They need both sides of feeding: the graph (reader ops, built by ``layers/io.py``) and the runtime
(queue, producer, built by ``data/loader.py``), so they live here, above both; ``minifluid/__init__.py``
lists them in ``fluid.layers``, where legacy code looks for them.
"""
from ..framework import unique_name
from ..framework.program import default_main_program, default_startup_program
from ..layers.io import build_reader_ops
from .loader import GeneratorLoader

__all__ = ["create_py_reader_by_data", "py_reader"]


def _py_reader(capacity, shapes, dtypes, lod_levels, need_check_feed, slot_names, name, use_double_buffer):
    if name is None:
        names = [unique_name.generate(key) for key in ("lod_tensor_blocking_queue", "create_py_reader", "double_buffer")]
    else:
        names = [f"{name}_queue", f"{name}_reader", f"{name}_double_buffer"]
    queue_name, reader_name, double_buffer_name = names
    slots = list(zip(slot_names, shapes, dtypes, lod_levels, need_check_feed))
    reader_names = [reader_name, double_buffer_name] if use_double_buffer else [reader_name]
    runtime = GeneratorLoader._for_reader_ops(capacity, use_double_buffer, queue_name, reader_names, slots)
    return build_reader_ops(default_main_program().global_block(), queue_name, reader_name,
                            double_buffer_name if use_double_buffer else None, shapes, dtypes, lod_levels,
                            need_check_feed, runtime, startup_block=default_startup_program().global_block())


def py_reader(capacity, shapes, dtypes, lod_levels=None, name=None, use_double_buffer=True):
    """fluid.layers.py_reader: a READER variable fed from Python; read it with ``read_file``.

    Names come from the global ``unique_name`` (or ``name``: X_queue, X_reader, X_double_buffer).
    """
    lod_levels = list(lod_levels) if lod_levels is not None else [0] * len(shapes)
    slot_names = [f"py_reader_slot_{i}" for i in range(len(shapes))]
    return _py_reader(capacity, shapes, dtypes, lod_levels, [False] * len(shapes), slot_names, name,
                      use_double_buffer)


def create_py_reader_by_data(capacity, feed_list, name=None, use_double_buffer=True):
    """fluid.layers.create_py_reader_by_data: like py_reader, with shapes and dtypes taken from data vars."""
    if not isinstance(feed_list, list):
        raise TypeError(f"feed_list of create_py_reader_by_data must be a list, but received {type(feed_list).__name__}")
    return _py_reader(capacity, [v.shape for v in feed_list], [v.dtype for v in feed_list],
                      [v.lod_level for v in feed_list], [v.need_check_feed for v in feed_list],
                      [v.name for v in feed_list], name, use_double_buffer)
