"""Block: an ordered list of ops and a table of variables, with lookup up the parent chain."""
from ..dtypes import convert_dtype
from ..ops.registry import get_op_spec
from . import dygraph_mode, unique_name
from .block_desc import BlockDescView
from .operator import Operator
from .variable import Parameter, Variable

__all__ = ["Block"]


_DEFAULT_DTYPE = object()  # create_var's dtype when the caller gave none (float32 for a new variable)


def _check_same(var, shape, dtype):
    """fluid's check when a name is created again: a shape or dtype that was given must match."""
    if shape is not None and var.shape is not None and tuple(int(d) for d in shape) != var.shape:
        raise ValueError(f"Variable {var.name} has been created before. the previous shape is {var.shape}; "
                         f"the new shape is {tuple(int(d) for d in shape)}. They are not matched.")
    if dtype is not _DEFAULT_DTYPE and dtype is not None and var.dtype is not None \
            and convert_dtype(dtype) != var.dtype:
        raise ValueError(f"Variable {var.name} has been created before. The previous data type is {var.dtype}; "
                         f"the new data type is {convert_dtype(dtype)}. They are not matched.")
    return var


class Block:
    """Ops run in list order; vars are looked up here, then in the parent block."""

    def __init__(self, program, idx, parent_idx=-1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.vars = {}
        self.ops = []

    # --- variables ---------------------------------------------------------------
    @property
    def desc(self):
        """fluid's BlockDesc binding over this Block (block_desc.py): ops, variables, ``append_op()``."""
        return BlockDescView(self)

    def var(self, name):
        if not isinstance(name, str):
            raise TypeError(f"var name must be a str, got {type(name).__name__}")
        v = self.vars.get(name)
        if v is None:
            raise ValueError(f"var {name} not in this block")
        return v

    def has_var(self, name):
        return name in self.vars

    def _find_var_recursive(self, name):
        block = self
        while block is not None:
            if name in block.vars:
                return block.vars[name]
            block = self.program.block(block.parent_idx) if block.parent_idx >= 0 else None
        return None

    def _var_recursive(self, name):
        v = self._find_var_recursive(name)
        if v is None:
            raise ValueError(f"Var {name} is not found recursively")
        return v

    def create_var(self, name=None, shape=None, dtype=_DEFAULT_DTYPE, initializer=None, **kwargs):
        """A new Variable (or the existing one of that name); ``initializer`` appends its init op here. In
        dygraph mode, as in fluid, an empty eager tensor of that name instead (NOTE [ Blocks in dygraph mode ])."""
        tracer = dygraph_mode.current_tracer()
        if tracer is not None:
            return tracer.tensor_type(None, name=name or unique_name.generate("_generated_var"),
                                      stop_gradient=kwargs.get("stop_gradient", False),
                                      persistable=bool(kwargs.get("persistable", False)),
                                      dtype="float32" if dtype is _DEFAULT_DTYPE or dtype is None else dtype)
        name = name or unique_name.generate("_generated_var")
        if name in self.vars:  # fluid returns the existing var for a repeated name, if it matches
            return _check_same(self.vars[name], shape, dtype)
        v = Variable(self, name, shape, "float32" if dtype is _DEFAULT_DTYPE else dtype, **kwargs)
        if dtype is _DEFAULT_DTYPE:  # float32 until an op or set_dtype types it; to_string(True) names it
            v._dtype_unset = True
        self.vars[name] = v
        self.program._bump_version()
        if initializer is not None:
            initializer(v, self)
        return v

    def create_parameter(self, name, shape, dtype="float32", initializer=None, **kwargs):
        """A new Parameter; ``initializer`` appends its init op here unless an op already writes it."""
        p = Parameter(self, name, shape, dtype, **kwargs)
        self.vars[name] = p
        self.program._bump_version()
        if initializer is not None and not any(name in op.output_arg_names for op in self.ops):
            initializer(p, self)
        return p

    def _remove_var(self, name):
        self.vars.pop(name, None)
        self.program._bump_version()

    def all_parameters(self):
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    iter_parameters = all_parameters

    # --- ops ---------------------------------------------------------------------
    def _make_op(self, type, inputs, outputs, attrs):
        op = Operator(self, type, inputs, outputs, attrs)
        for name in op.output_arg_names:  # typed by the op, as fluid's InferVarType does
            v = self._find_var_recursive(name)
            if v is not None:
                v.__dict__.pop("_dtype_unset", None)
        self._infer_outputs(op)
        self._share_lod_levels(op)
        return op

    # NOTE [ Blocks in dygraph mode ]
    # Code written against Blocks (fluid's op tests, layer code of fluid 1.x) runs unchanged under
    # ``fluid.dygraph.guard()``, as in fluid: ``create_var`` makes an empty eager tensor and ``append_op``
    # runs the op at once on the tracer (dygraph/tracer.py), writing its results into the output tensors;
    # nothing is added to the Block.
    def append_op(self, type=None, inputs=None, outputs=None, attrs=None, **_ignored):
        tracer = dygraph_mode.current_tracer()
        if tracer is not None:
            tracer.trace_op(type, inputs or {}, outputs or {}, {k: v for k, v in (attrs or {}).items() if v is not None})
            return None
        return self._insert_op(len(self.ops), type, inputs, outputs, attrs)

    def _prepend_op(self, type, inputs=None, outputs=None, attrs=None, **_ignored):
        return self._insert_op(0, type, inputs, outputs, attrs)

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None):
        op = self._make_op(type, inputs, outputs, attrs)
        self.ops.insert(index, op)
        self.program._bump_version()
        return op

    def _remove_op(self, index):
        del self.ops[index]
        self.program._bump_version()

    def _infer_outputs(self, op):
        """Fill unknown output shapes/dtypes from the op's infer_shape (one place per op)."""
        spec = get_op_spec(op.type)
        if spec.infer_shape is None:
            self._infer_in_place(op, spec)
            return
        ins = []
        for slot in spec.inputs:
            vs = [self._find_var_recursive(n) for n in op.inputs.get(slot, [])]
            if any(v is None or v.shape is None for v in vs):
                return
            ins.append(vs if slot in spec.duplicable else (vs[0] if vs else None))
        metas = spec.infer_shape(op.attrs, *ins)
        if len(spec.outputs) == 1:
            metas = (metas,)
        for slot, meta in zip(spec.outputs, metas):
            names = op.outputs.get(slot, [])
            slot_metas = meta if slot in spec.duplicable else [meta]
            for name, m in zip(names, slot_metas):
                v = self._find_var_recursive(name)
                if v is None or m is None:
                    continue
                shape, dtype = m
                if v.shape is None:
                    v.shape = tuple(int(d) for d in shape)
                if v.dtype is None and dtype is not None:
                    v.dtype = dtype

    def _infer_in_place(self, op, spec):
        """An update op's outputs (registry.py ``inplace``) are shaped and typed as the inputs they update."""
        for out_slot, in_slot in spec.inplace:
            for out_name, in_name in zip(op.outputs.get(out_slot) or (), op.inputs.get(in_slot) or ()):
                out, src = self._find_var_recursive(out_name), self._find_var_recursive(in_name)
                if out is None or src is None or out is src:
                    continue
                if out.shape is None and src.shape is not None:
                    out.shape = src.shape
                if out.dtype is None and src.dtype is not None:
                    out.dtype = src.dtype

    def _share_lod_levels(self, op):
        """An output that shares an input's LoD (the op's ``share_lod`` rule) gets its ``lod_level``, as
        fluid tracks it while building; the Executor decides from it which ops move LoD at run time."""
        for out_slot, in_slot in get_op_spec(op.type).share_lod:
            src = self._find_var_recursive((op.inputs.get(in_slot) or [""])[0])
            if src is None or not src.lod_level:
                continue
            for name in op.outputs.get(out_slot) or ():
                v = self._find_var_recursive(name)
                if v is not None and not v.lod_level:
                    v.lod_level = src.lod_level

    def to_string(self, throw_on_error=False, with_details=False):
        """fluid's text of the block; ``throw_on_error``: a ValueError for a variable whose element type was
        never set (created without a dtype, written by no op), as fluid's uninitialized VarDesc field."""
        unset = [n for n, v in self.vars.items() if v.__dict__.get("_dtype_unset")]
        if throw_on_error and unset:
            raise ValueError(f"blocks[{self.idx}].vars {unset}: type.lod_tensor.tensor.data_type are not "
                             "initialized (create the variable with a dtype, or set_dtype it)")
        lines = [f"block {{ idx: {self.idx}, parent_idx: {self.parent_idx}"]
        lines += ["  " + v._summary(with_details) for v in self.vars.values()]
        lines += ["  " + op.to_string() for op in self.ops]
        return "\n".join(lines) + "\n}"

    __str__ = to_string

    def __repr__(self):  # how an op's sub_block attribute prints
        return f"Block(idx={self.idx}, parent_idx={self.parent_idx})"
