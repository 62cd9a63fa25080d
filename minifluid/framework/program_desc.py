"""Program <-> fluid's ProgramDesc protobuf (the ``__model__`` / ``.pdmodel`` file format).

Writing follows what fluid writes: variables sorted by name (its BlockDesc keeps them in a map), op
attributes sorted by name and typed as fluid declares them (a dtype attribute is its VarType code,
a float attribute stays FLOAT even when it holds a whole number), empty input slots kept. Reading
builds minifluid's Program from any Paddle 1.x / 2.x file: an op slot left empty is dropped, an
attribute minifluid's op does not have is dropped (the op runs with minifluid's kernel), and op types
minifluid lacks are reported all at once with the file's name.
"""
from ..ops.registry import COMMON_ATTRS, get_op_spec, registered_ops
from .block import Block
from ..dtypes import from_proto_dtype, to_proto_dtype
from .operator import DTYPE_ATTRS, Operator
from .proto import framework_pb2 as pb
from .variable import Parameter, Variable, VarType

__all__ = ["program_to_desc", "desc_to_program", "serialize_program", "parse_program", "feed_target_names",
           "fetch_target_names", "ProgramDescView", "UnsupportedModelError", "PROGRAM_VERSION"]

PROGRAM_VERSION = 0  # fluid 1.x's program version; Paddle 2.x reads every version
_A = pb.AttrType
_T = pb.VarType
_STRING_LIST_ATTRS = frozenset({"op_role_var", "op_callstack"})
_KINDS = {VarType.LOD_TENSOR: _T.LOD_TENSOR, VarType.READER: _T.READER, VarType.RAW: _T.RAW,
          VarType.LOD_RANK_TABLE: _T.LOD_RANK_TABLE, VarType.STEP_SCOPES: _T.STEP_SCOPES,
          VarType.FEED_MINIBATCH: _T.FEED_MINIBATCH, VarType.FETCH_LIST: _T.FETCH_LIST}
_INT32 = (-(1 << 31), (1 << 31) - 1)


class UnsupportedModelError(NotImplementedError):
    """A model file that uses op types (or op slots) minifluid does not have."""


# --- writing -------------------------------------------------------------------------------------------
def _is_block(value):
    return hasattr(value, "program") and hasattr(value, "idx") and hasattr(value, "ops")


def _fill_attr(attr, op, name, value, default):
    """Store ``value`` in the OpDesc.Attr ``attr`` with the type fluid gives attribute ``name``."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if _is_block(value):
        attr.type, attr.block_idx = _A.BLOCK, value.idx
    elif isinstance(value, bool):
        attr.type, attr.b = _A.BOOLEAN, value
    elif isinstance(value, str) and name in DTYPE_ATTRS:
        attr.type, attr.i = _A.INT, to_proto_dtype(value)
    elif isinstance(value, float) or isinstance(value, int) and isinstance(default, float):
        attr.type, attr.f = _A.FLOAT, value
    elif isinstance(value, int) and _INT32[0] <= value <= _INT32[1]:
        attr.type, attr.i = _A.INT, value
    elif isinstance(value, int):
        attr.type, attr.l = _A.LONG, value
    elif isinstance(value, str):
        attr.type, attr.s = _A.STRING, value
    elif isinstance(value, (list, tuple)):
        _fill_list_attr(attr, op, name, list(value), default)
    else:
        raise TypeError(f"Cannot write attribute {name!r} of operator {op.type!r} to a program file: "
                        f"{type(value).__name__} values have no fluid attribute type")


def _fill_list_attr(attr, op, name, items, default):
    sample = items or (list(default) if isinstance(default, (list, tuple)) else [])
    if not sample and name in _STRING_LIST_ATTRS or sample and all(isinstance(v, str) for v in sample):
        kind, field = _A.STRINGS, "strings"
    elif sample and all(_is_block(v) for v in sample):
        kind, field, items = _A.BLOCKS, "blocks_idx", [v.idx for v in items]
    elif sample and all(isinstance(v, bool) for v in sample):
        kind, field = _A.BOOLEANS, "bools"
    elif any(isinstance(v, float) for v in sample):
        kind, field, items = _A.FLOATS, "floats", [float(v) for v in items]
    elif all(isinstance(v, int) for v in items):
        small = all(_INT32[0] <= v <= _INT32[1] for v in items)
        kind, field = (_A.INTS, "ints") if small else (_A.LONGS, "longs")
    else:
        raise TypeError(f"Cannot write attribute {name!r} of operator {op.type!r} to a program file: "
                        f"the list {items!r} mixes types")
    attr.type = kind
    getattr(attr, field).extend(items)


def _var_to_desc(var, desc):
    desc.name = var.name
    desc.type.type = _KINDS[var.type] if var.type in _KINDS else getattr(_T, str(var.type), _T.LOD_TENSOR)
    if desc.type.type == _T.LOD_TENSOR:
        tensor = desc.type.lod_tensor.tensor
        tensor.data_type = to_proto_dtype(var.dtype or "float32")
        tensor.dims.extend(var.shape or ())
        if var.lod_level:
            desc.type.lod_tensor.lod_level = var.lod_level
    if var.persistable:
        desc.persistable = True
    if var.need_check_feed:
        desc.need_check_feed = True
    if isinstance(var, Parameter):  # Paddle 2.x's fields (fluid 1.x skips them): a Parameter stays one
        desc.is_parameter = True
    if var.stop_gradient:
        desc.stop_gradient = True


def var_debug_string(var):
    """``var``'s VarDesc in protobuf text format, as fluid prints a Variable."""
    from google.protobuf import text_format  # noqa: PLC0415 - only when a variable is printed
    desc = pb.VarDesc()
    _var_to_desc(var, desc)
    desc.persistable = bool(var.persistable)  # fluid's VarDesc always states it
    return text_format.MessageToString(desc)


def _op_to_desc(op, desc):
    desc.type = op.type
    for slots, target in ((op.inputs, desc.inputs), (op.outputs, desc.outputs)):
        for slot, names in slots.items():
            target.add(parameter=slot, arguments=names)
    defaults = dict(COMMON_ATTRS)
    spec = registered_ops().get(op.type)
    if spec is not None:
        defaults.update(spec.attrs)
    for name in sorted(op.attrs):
        value = op.attrs[name]
        if value is None:
            continue
        _fill_attr(desc.attrs.add(name=name), op, name, value, defaults.get(name))


def attr_type(op, name):
    """The AttrType a program file gives attribute ``name`` of ``op`` (fluid's ``OpDesc.attr_type``)."""
    defaults = dict(COMMON_ATTRS)
    spec = registered_ops().get(op.type)
    if spec is not None:
        defaults.update(spec.attrs)
    attr = pb.OpDesc.Attr(name=name)
    _fill_attr(attr, op, name, op.attr(name), defaults.get(name))
    return attr.type


def program_to_desc(program):
    """The ProgramDesc message of ``program``."""
    desc = pb.ProgramDesc()
    for block in program.blocks:
        block_desc = desc.blocks.add(idx=block.idx, parent_idx=block.parent_idx)
        for name in sorted(block.vars):
            _var_to_desc(block.vars[name], block_desc.vars.add())
        for op in block.ops:
            _op_to_desc(op, block_desc.ops.add())
    desc.version.version = PROGRAM_VERSION
    return desc


def serialize_program(program):
    """``program`` as the bytes of a ``__model__`` / ``.pdmodel`` file."""
    return program_to_desc(program).SerializeToString()


# --- reading -------------------------------------------------------------------------------------------
def _attr_value(attr, blocks):
    kind = attr.type
    if kind == _A.BLOCK:
        return blocks[attr.block_idx]
    if kind == _A.BLOCKS:
        return [blocks[i] for i in attr.blocks_idx]
    if kind == _A.SCALAR:
        return _scalar(attr.scalar)
    if kind == _A.SCALARS:
        return [_scalar(s) for s in attr.scalars]
    field = {_A.INT: "i", _A.FLOAT: "f", _A.STRING: "s", _A.INTS: "ints", _A.FLOATS: "floats",
             _A.STRINGS: "strings", _A.BOOLEAN: "b", _A.BOOLEANS: "bools", _A.LONG: "l", _A.LONGS: "longs",
             _A.FLOAT64S: "float64s", _A.VAR: "var_name", _A.VARS: "vars_name", _A.FLOAT64: "float64"}[kind]
    value = getattr(attr, field)
    return list(value) if not isinstance(value, (int, float, str, bool)) else value


def _scalar(s):
    return {1: s.b, 2: s.i, 3: s.r}.get(s.type, complex(s.c.r, s.c.i))


def _make_var(block, desc):
    kind = desc.type.type
    common = dict(persistable=desc.persistable, stop_gradient=desc.stop_gradient,
                  need_check_feed=desc.need_check_feed)
    if kind in (_T.LOD_TENSOR, _T.LOD_TENSOR_ARRAY, _T.SELECTED_ROWS):
        tensor = {_T.LOD_TENSOR: desc.type.lod_tensor.tensor, _T.SELECTED_ROWS: desc.type.selected_rows,
                  _T.LOD_TENSOR_ARRAY: desc.type.tensor_array.tensor}[kind]
        meta = dict(shape=list(tensor.dims), dtype=from_proto_dtype(tensor.data_type),
                    lod_level=desc.type.lod_tensor.lod_level if kind == _T.LOD_TENSOR else 0)
    else:
        meta = dict(shape=None, dtype=None)
    type_name = next((k for k, v in _KINDS.items() if v == kind), _T.Type.Name(kind))
    if desc.is_parameter and meta["shape"] is not None and all(d >= 0 for d in meta["shape"]):
        var = Parameter(block, desc.name, meta["shape"], meta["dtype"], trainable=not desc.stop_gradient,
                        type=type_name, lod_level=meta["lod_level"], need_check_feed=desc.need_check_feed)
    else:
        var = Variable(block, desc.name, type=type_name, **meta, **common)
    block.vars[desc.name] = var


def _slots(op_desc, allowed, kind, source):
    slots = {}
    for var in (op_desc.inputs if kind == "input" else op_desc.outputs):
        if not var.arguments:
            continue
        if var.parameter not in allowed:
            raise UnsupportedModelError(
                f"{source}: operator {op_desc.type!r} uses {kind} slot {var.parameter!r} ({list(var.arguments)}), "
                f"which minifluid's {op_desc.type} does not have (its {kind}s: {list(allowed)})")
        slots[var.parameter] = list(var.arguments)
    return slots


def _make_op(block, op_desc, blocks, source):
    spec = get_op_spec(op_desc.type)
    attrs = {}
    for attr in op_desc.attrs:
        if attr.name not in spec.attrs and attr.name not in COMMON_ATTRS:
            continue
        value = _attr_value(attr, blocks)
        attrs[attr.name] = value
    inputs = _slots(op_desc, spec.inputs, "input", source)
    outputs = _slots(op_desc, spec.outputs, "output", source)
    block.ops.append(Operator(block, op_desc.type, inputs, outputs, attrs))


def desc_to_program(desc, program_cls, source="the program"):
    """A ``program_cls`` (Program) built from the ProgramDesc ``desc``; ``source`` names it in errors."""
    known = registered_ops()
    missing = sorted({op.type for b in desc.blocks for op in b.ops if op.type not in known})
    if missing:
        raise UnsupportedModelError(
            f"{source} uses operator type(s) minifluid does not implement: {', '.join(missing)}")
    program = program_cls()
    program.blocks = []
    for block_desc in sorted(desc.blocks, key=lambda b: b.idx):
        block = Block(program, block_desc.idx, block_desc.parent_idx)
        program.blocks.append(block)
        for var_desc in block_desc.vars:
            _make_var(block, var_desc)
    blocks = program.blocks
    for block_desc in desc.blocks:
        for op_desc in block_desc.ops:
            _make_op(blocks[block_desc.idx], op_desc, blocks, source)
    program._bump_version()
    return program


def parse_program(data, program_cls, source="the program"):
    """A Program from the bytes of a ``__model__`` / ``.pdmodel`` file."""
    desc = pb.ProgramDesc()
    try:
        desc.ParseFromString(bytes(data))
        if not desc.blocks:
            raise ValueError("it has no blocks")
    except Exception as e:
        from_head = data[:1] == b"\x80" and " (it is a Python pickle)" or ""
        raise ValueError(f"{source} is not a fluid program (a ProgramDesc protobuf){from_head}: {e}") from None
    return desc_to_program(desc, program_cls, source)


def _targets(program, op_type, slot):
    ops = [op for op in program.global_block().ops if op.type == op_type]
    return [op.input(slot)[0] if slot == "X" else op.output(slot)[0]
            for op in sorted(ops, key=lambda op: op.attrs.get("col", 0))]


def feed_target_names(program):
    """The variables the program's feed ops fill, by column."""
    return _targets(program, "feed", "Out")


def fetch_target_names(program):
    """The variables the program's fetch ops return, by column."""
    return _targets(program, "fetch", "X")


class ProgramDescView:
    """``program.desc``: the parts of fluid's ProgramDesc binding that legacy code calls."""

    def __init__(self, program):
        self._program = program

    def serialize_to_string(self):
        return serialize_program(self._program)

    def num_blocks(self):
        return self._program.num_blocks

    def block(self, index):
        """fluid's BlockDesc binding over block ``index``: ``op(i)`` / ``op_size()`` / ``has_var(name)``."""
        return self._program.block(index).desc

    def get_feed_target_names(self):
        return feed_target_names(self._program)

    def get_fetch_target_names(self):
        return fetch_target_names(self._program)

    def flush(self):
        """Nothing to do: minifluid's Program is its own description."""

    def _set_version(self, version=PROGRAM_VERSION):
        """Programs are always written with fluid 1.x's version number."""
