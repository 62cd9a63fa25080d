"""``block.desc``: fluid's BlockDesc binding over one Block, for code that edits a Program through descs.

fluid's tests build a gradient op by hand: ``core.get_grad_op_desc(op.desc, no_grad_set, [])`` gives the
grad op descs, ``block.desc.append_op()`` an empty OpDesc at the end of the block that ``copy_from(desc)``
fills, ``block.desc.var(name)`` creates the variables it writes and ``find_var(name).set_dtype(...)`` types
them. minifluid's Block is the description itself, so every call here acts on the Block at once: the
copied op is appended as an Operator (its missing variables created, typed like those of the desc it
copies) and ``program._sync_with_cpp()`` has nothing left to do. Names may be given as bytes, as the
binding took them.
"""

__all__ = ["BlockDescView"]


def _text(name):
    return name.decode("utf-8") if isinstance(name, bytes) else name


class BlockDescView:
    """``block.desc`` / ``program.desc.block(i)``: ops by index, variables by name, and ``append_op()``."""

    def __init__(self, block):
        self._block = block

    def op(self, index):
        return self._block.ops[index].desc

    def op_size(self):
        return len(self._block.ops)

    def has_var(self, name):
        return self._block.has_var(_text(name))

    def var(self, name):
        """The VarDesc of ``name`` in this block, created (a float32 LoDTensor of unknown shape) if missing."""
        name = _text(name)
        var = self._block.vars.get(name)
        if var is None:
            var = self._block.create_var(name=name)
        return var.desc

    def find_var(self, name):
        """The VarDesc of ``name`` in this block, or None."""
        var = self._block.vars.get(_text(name))
        return None if var is None else var.desc

    def find_var_recursive(self, name):
        var = self._block._find_var_recursive(_text(name))
        return None if var is None else var.desc

    def all_vars(self):
        return [v.desc for v in self._block.vars.values()]

    def append_op(self):
        """An empty OpDesc at the end of the block (fluid's ``BlockDesc.AppendOp``); ``copy_from`` fills it."""
        return _BlankOpDesc(self._block, len(self._block.ops))

    @property
    def id(self):
        return self._block.idx

    @property
    def parent(self):
        return self._block.parent_idx


class _BlankOpDesc:
    """An OpDesc with no op yet. ``copy_from(desc)`` makes it a copy of ``desc``'s op, inserted where
    ``append_op`` was called; afterwards it answers as that op's desc."""

    def __init__(self, block, index):
        self._block, self._index, self._op = block, index, None

    def copy_from(self, other):
        src = getattr(other, "_op", None)
        if src is None:
            raise TypeError(f"copy_from needs an OpDesc (an op's .desc), got {type(other).__name__}")
        block = self._block
        for name in dict.fromkeys(src.input_arg_names + src.output_arg_names):
            if block._find_var_recursive(name) is None:
                like = src.block._find_var_recursive(name)
                block.create_var(name=name, shape=getattr(like, "shape", None),
                                 dtype=getattr(like, "dtype", None) or "float32",
                                 lod_level=getattr(like, "lod_level", 0))
        inputs = {slot: list(names) for slot, names in src.inputs.items()}
        outputs = {slot: list(names) for slot, names in src.outputs.items()}
        if self._op is not None:  # copied again: the new op takes the old one's place
            block._remove_op(block.ops.index(self._op))
        self._op = block._insert_op(min(self._index, len(block.ops)), src.type, inputs, outputs, dict(src.attrs))

    def __getattr__(self, name):
        op = self.__dict__.get("_op")
        if op is None:
            raise AttributeError(f"this OpDesc is empty (block.desc.append_op()): copy_from(an op's desc) fills it "
                                 f"before {name!r} can be read")
        return getattr(op.desc, name)
