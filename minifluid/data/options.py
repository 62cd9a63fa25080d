"""Process-wide switches of the feeding runtime, set through ``fluid.reader``'s functions of the same names.

Each is called without an argument to read it and with one bool to set it (anything else is an
AssertionError, as in fluid). A loader reads the order when it is built and the pinned-memory switch
when an epoch starts on CUDA places.
"""
__all__ = ["keep_data_loader_order", "use_pinned_memory"]


class _Switch:
    """``switch()`` -> the value; ``switch(True|False)`` sets it."""

    def __init__(self, name, value, doc):
        self.__name__, self.value, self.__doc__ = name, value, doc

    def __call__(self, *args):
        if not args:
            return self.value
        assert len(args) == 1 and isinstance(args[0], bool), f"{self.__name__}() takes no argument or one bool, " \
                                                               f"got {args!r}"
        self.value = args[0]
        return None

    def __repr__(self):
        return f"<fluid.reader.{self.__name__}: {self.value}>"


keep_data_loader_order = _Switch("keep_data_loader_order", True, """
    Whether loaders built from now on keep the generator's batch order across places (True, the
    default). ``keep_data_loader_order(False)``: they need not, as fluid's unordered loaders, whose places
    read one shared queue: a non-iterable one creates its reader in the startup program, and an iterable
    one's last step gives each place it has no batch for an empty entry (fluid's shape for that step)
    where an ordered one gives fewer entries. minifluid still hands out the batches in generator order.""")

use_pinned_memory = _Switch("use_pinned_memory", None, """
    None (the default: the CUDA double buffer copies host -> GPU through pinned staging buffers) or
    the bool last set; ``use_pinned_memory(False)`` makes it copy from the batch's own memory.""")
