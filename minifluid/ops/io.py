"""Reader ops of a non-iterable DataLoader / py_reader: create_py_reader, create_double_buffer_reader, read;
and feed / fetch, which a saved inference program holds (see FEED_FETCH_OPS).

The scope holds the runtime objects (see NOTE [ DataLoader.from_generator: epoch, queue and stage ] in
``data/loader.py``): the queue variable holds the BlockingQueue, and the queue's ``reader`` is the
object that feeds Programs from it. The two create ops only pass that object through, so a step
costs two attribute reads; ``read`` takes one batch from it (``read_next``), which raises
EOFException at the end of the data, ReaderKilledError (chained) when the reader failed, and a
RuntimeError at once when the loader was never started.
"""
from .registry import register_op

# The Executor feeds and fetches variables by name, so it never runs these ops: in a program they only
# record, the way fluid's files do, which variables an inference model is fed (feed: holder column `col`
# -> Out) and which it returns (fetch: X -> holder column `col`).
FEED_FETCH_OPS = frozenset({"feed", "fetch"})

_READER_ATTRS = {"shape_concat": [], "lod_levels": [], "dtypes": [], "ranks": [], "need_check_feed": []}


@register_op("create_py_reader", inputs=("blocking_queue",), outputs=("Out",), attrs=_READER_ATTRS,
             no_gradient=True)
def _create_py_reader_forward(attrs, queue):
    reader = getattr(queue, "reader", None)
    if reader is None:
        raise RuntimeError("The blocking queue fed to create_py_reader has no reader attached; build the "
                           "program with fluid.io.DataLoader.from_generator or fluid.layers.py_reader.")
    return reader


@register_op("create_double_buffer_reader", inputs=("UnderlyingReader",), outputs=("Out",),
             attrs={"place": ""}, no_gradient=True)
def _create_double_buffer_reader_forward(attrs, reader):
    return reader  # the read-ahead stage was chosen when the loader was built (data/prefetch.py)


@register_op("read", inputs=("Reader",), outputs=("Out",), duplicable=("Out",),
             attrs={"drop_last": True, "throw_eof_exp": True}, produces_lod=True, no_gradient=True)
def _read_forward(attrs, reader):
    return reader.read_next()  # LoDTensor fields carry their LoD; the executor records it (produces_lod)


@register_op("feed", inputs=("X",), outputs=("Out",), attrs={"col": 0}, no_gradient=True)
def _feed_forward(attrs, holder):
    return holder[attrs["col"]]


@register_op("fetch", inputs=("X",), outputs=("Out",), attrs={"col": 0}, no_gradient=True)
def _fetch_forward(attrs, x):
    return x
