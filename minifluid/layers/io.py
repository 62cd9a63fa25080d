"""Graph side of feeding: data variables (``fluid.data``, ``layers.data``) and the reader ops of the
non-iterable DataLoader and the legacy ``py_reader`` / ``read_file`` / ``double_buffer``.

Reader ops go to the **head** of block 0 (create_py_reader, create_double_buffer_reader, then read),
so a loader created after the network still feeds it (REFERENCE "goes beyond" 4). ``py_reader`` and an
unordered loader (``fluid.reader.keep_data_loader_order(False)``) create their reader in the startup
program instead, as fluid does; the main program then starts with the double buffer and the read. The runtime
behind a reader (queue, producer thread) lives in ``minifluid.data``; layers never import the data pipeline
(STYLE §7): ``py_reader`` and ``create_py_reader_by_data``, which need both, are built in
``minifluid/data/py_reader.py`` on the graph builders here, and ``minifluid/__init__.py`` lists them in
``fluid.layers`` (this module works without them).
"""
import copy

from ..dtypes import convert_dtype
from ..framework import dygraph_mode, unique_name
from ..framework.program import default_main_program
from ..framework.variable import Variable, VarType
from .helper import LayerHelper

__all__ = ["data", "layers_data", "static_only", "read_file", "double_buffer", "ReaderVariable", "build_reader_ops",
           "insert_read_op", "load"]


def static_only(api_name):
    """fluid's check that a static-graph-only API is not called in dygraph mode (an AssertionError)."""
    assert not dygraph_mode.in_dygraph_mode(), (
        f"'{api_name}()' is only supported in static graph mode, and dygraph mode is on. Call it outside "
        "fluid.dygraph.guard(), or after fluid.disable_dygraph() / paddle.enable_static().")


def _check_name_shape(name, shape):
    if not isinstance(name, str):
        raise TypeError(f"The type of 'name' in data must be str, but received {type(name).__name__}.")
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"The type of 'shape' in data must be list or tuple, but received {type(shape).__name__}.")


def data(name, shape, dtype="float32", lod_level=0):
    """fluid.data: the shape as given (None -> -1), checked at feed time."""
    static_only("data")
    _check_name_shape(name, shape)
    shape = [-1 if d is None else int(d) for d in shape]
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=dtype, lod_level=lod_level, stop_gradient=True,
        need_check_feed=True, is_data=True)


def layers_data(name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=None,
                stop_gradient=True):
    """fluid.layers.data: prepends a -1 batch dim unless the shape already has one; not feed-checked."""
    static_only("data")
    _check_name_shape(name, shape)
    shape = [-1 if d is None else int(d) for d in shape]
    if append_batch_size and not any(d < 0 for d in shape):
        shape = [-1] + shape
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=dtype, lod_level=lod_level, stop_gradient=stop_gradient,
        need_check_feed=False, is_data=True)


# --- reader ops (shared by DataLoader.from_generator(iterable=False) and py_reader) -------------------
def _slot_attrs(shapes, dtypes, lod_levels, need_check_feed):
    shapes = [[int(d) for d in s] for s in shapes]
    return {"shape_concat": [d for s in shapes for d in s], "ranks": [len(s) for s in shapes],
            "lod_levels": [int(n) for n in lod_levels], "dtypes": [convert_dtype(d) for d in dtypes],
            "need_check_feed": [int(bool(c)) for c in need_check_feed]}


def _new_reader_var(block, name, runtime, meta):
    var = ReaderVariable(block, name, runtime, meta)
    block.vars[name] = var
    block.program._bump_version()
    return var


def build_reader_ops(block, queue_name, reader_name, double_buffer_name, shapes, dtypes, lod_levels,
                     need_check_feed, runtime=None, startup_block=None):
    """Queue and reader variables plus their create ops at the head of ``block``, or, with
    ``startup_block``, the queue and create_py_reader there and the reader variable in ``block`` too.

    Returns the READER variable a ``read`` op should take (the double-buffer one when
    ``double_buffer_name`` is given). ``runtime`` (py_reader) makes the reader variables
    ``ReaderVariable``s that drive it.
    """
    attrs = _slot_attrs(shapes, dtypes, lod_levels, need_check_feed)
    meta = (tuple(tuple(s) for s in shapes), tuple(attrs["dtypes"]), tuple(attrs["lod_levels"]))
    create_block = startup_block if startup_block is not None else block
    create_block.create_var(name=queue_name, type=VarType.RAW, persistable=True, stop_gradient=True, dtype=None)
    reader = _new_reader_var(create_block, reader_name, runtime, meta)
    create_block._insert_op(0 if startup_block is None else len(startup_block.ops), "create_py_reader",
                            inputs={"blocking_queue": [queue_name]}, outputs={"Out": [reader]}, attrs=attrs)
    if startup_block is not None:
        reader = _new_reader_var(block, reader_name, runtime, meta)  # the main program's copy
    if double_buffer_name is not None:
        buffered = _new_reader_var(block, double_buffer_name, runtime, meta)
        block._insert_op(0 if startup_block is not None else 1, "create_double_buffer_reader",
                         inputs={"UnderlyingReader": [reader]}, outputs={"Out": [buffered]})
        reader = buffered
    return reader


def insert_read_op(block, reader, out_vars, drop_last=True):
    """``read(Reader=reader) -> Out=out_vars`` right after the op that creates ``reader`` (at the head
    when another program creates it)."""
    index = next((i + 1 for i, op in enumerate(block.ops) if reader.name in op.output_arg_names), 0)
    return block._insert_op(index, "read", inputs={"Reader": [reader]}, outputs={"Out": list(out_vars)},
                            attrs={"drop_last": bool(drop_last)})


class ReaderVariable(Variable):
    """A READER variable; for ``py_reader`` it also drives its runtime (start, reset, queue, decorate_*)."""

    def __init__(self, block, name, runtime, meta):
        super().__init__(block, name, shape=None, dtype=None, persistable=True, stop_gradient=True,
                         type=VarType.READER)
        self._runtime = runtime
        self.shapes, self.dtypes, self.lod_levels = meta

    def __deepcopy__(self, memo):
        """Program.clone copies the variable but shares the runtime (threads cannot be copied)."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            setattr(new, key, value if key == "_runtime" else copy.deepcopy(value, memo))
        return new

    def _driver(self):
        if self._runtime is None:
            raise AttributeError(f"READER variable {self.name!r} has no runtime; use the DataLoader that built it")
        return self._runtime

    @property
    def queue(self):
        return self._driver().queue

    @property
    def thread(self):
        """The thread feeding the queue this epoch (None when none runs)."""
        return self._driver()._thread

    @property
    def exited(self):
        """True when no thread feeds the queue (before ``start()``, after the data ran out or a stop)."""
        thread = self.thread
        return thread is None or not thread.is_alive()

    @exited.setter
    def exited(self, value):
        """``exited = True`` asks the feeding thread to stop (the reader then ends at EOF)."""
        if value:
            self._driver()._stop_feeding()

    def start(self):
        self._driver().start()

    def reset(self):
        self._driver().reset()

    def decorate_batch_generator(self, reader, places=None):
        self._driver().set_batch_generator(reader, places)

    def decorate_sample_list_generator(self, reader, places=None):
        self._driver().set_sample_list_generator(reader, places)

    def decorate_sample_generator(self, sample_generator, batch_size, drop_last=True, places=None):
        self._driver().set_sample_generator(sample_generator, batch_size, drop_last, places)

    decorate_tensor_provider = decorate_batch_generator
    decorate_paddle_reader = decorate_sample_list_generator


def read_file(reader):
    """The variables a READER yields (one per slot; a single variable when there is one slot)."""
    block = default_main_program().global_block()
    outs = [block.create_var(name=unique_name.generate("read_file.tmp"), shape=shape, dtype=dtype,
                             lod_level=lod, stop_gradient=True)
            for shape, dtype, lod in zip(reader.shapes, reader.dtypes, reader.lod_levels)]
    insert_read_op(block, reader, outs)
    return outs[0] if len(outs) == 1 else outs


def double_buffer(reader, place=None, name=None):
    """Wrap ``reader`` in a create_double_buffer_reader op (the read-ahead is the runtime's)."""
    block = reader.block
    buffered = _new_reader_var(block, name or unique_name.generate("double_buffer"), reader._runtime,
                               (reader.shapes, reader.dtypes, reader.lod_levels))
    index = next((i + 1 for i, op in enumerate(block.ops) if reader.name in op.output_arg_names), 0)
    block._insert_op(index, "create_double_buffer_reader", inputs={"UnderlyingReader": [reader]},
                     outputs={"Out": [buffered]}, attrs={"place": str(place) if place is not None else ""})
    return buffered


def load(out, file_path, load_as_fp16=None):
    """Append a ``load`` op filling the Variable ``out`` from ``file_path``, a file in fluid's LoDTensor format
    (fluid.io.save_vars writes one per variable), with its LoD; ``load_as_fp16`` casts the value to float16.
    (fluid 1.8's layer passed its output under a misspelt keyword and failed; this one works.)"""
    attrs = {"file_path": file_path}
    if load_as_fp16 is not None:
        attrs["load_as_fp16"] = load_as_fp16
    LayerHelper("load").append_op(type="load", inputs={}, outputs={"Out": [out]}, attrs=attrs)
