"""Reader decorators (fluid's ``paddle.reader`` / ``fluid.io`` toolkit) and ``batch``.

A *reader* is a zero-argument callable returning an iterable of samples; a decorator takes readers
and returns a new reader. Pure-Python decorators live in ``decorators``; those that use threads or
processes in ``parallel`` (see NOTE [ Reader decorator workers: protocol ] there).
"""
from minifluid.errors import ComposeNotAligned
from minifluid.reader.decorators import batch, cache, chain, compose, firstn, map_readers, shuffle
from minifluid.reader.parallel import (MULTIPROCESS_READER_MESSAGE, MultiprocessReaderError, buffered,
                                       multiprocess_reader, xmap_readers)

__all__ = [
    "ComposeNotAligned",
    "MULTIPROCESS_READER_MESSAGE",
    "MultiprocessReaderError",
    "batch",
    "buffered",
    "cache",
    "chain",
    "compose",
    "firstn",
    "map_readers",
    "multiprocess_reader",
    "shuffle",
    "xmap_readers",
]
