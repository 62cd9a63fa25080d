"""``fluid.reader``: what ``fluid.io`` has of the loaders, plus the module's own names (the loader
classes and the process-wide switches ``keep_data_loader_order`` / ``use_pinned_memory``)."""
from .data.collate import default_collate_fn
from .data.loader import DataLoader, DataLoaderBase, GeneratorLoader
from .data.options import keep_data_loader_order, use_pinned_memory
from . import io as _io
from .io import PyReader

__all__ = ["DataLoader", "DataLoaderBase", "GeneratorLoader", "PyReader", "default_collate_fn",
           "keep_data_loader_order", "use_pinned_memory"]


def __getattr__(name):
    """Anything else ``fluid.io`` has (the datasets, samplers, decorators) is ``fluid.reader``'s too."""
    return getattr(_io, name)
