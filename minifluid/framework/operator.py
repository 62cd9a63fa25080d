"""Operator: an op type, its input/output slots (slot -> variable names) and attributes."""
import builtins

from ..dtypes import from_proto_dtype
from ..ops.registry import COMMON_ATTRS, OpRole, get_op_spec, op_type_hint
from .scopes import current_device, current_name_scope

__all__ = ["Operator", "DTYPE_ATTRS", "named_dtypes"]

FLUID_COMMON_ATTRS = ["op_role", "op_role_var", "op_namescope", "op_callstack", "op_device"]  # fluid 1.8's
DTYPE_ATTRS = frozenset({"dtype", "in_dtype", "out_dtype"})  # the attributes holding an element type


def _names(value):
    """Normalise a slot value (Variable, name, or a list of either) to a list of names."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        value = [value]
    return [v if isinstance(v, str) else v.name for v in value]


def named_dtypes(spec, attrs):
    """Turn dtype attributes given as fluid's VarType codes (as op descs hold them: 5 for float32) into names,
    in place, where the op's attribute holds a name."""
    for key in DTYPE_ATTRS:
        val = attrs.get(key)
        if builtins.type(val) is int and isinstance(spec.attrs.get(key), str):
            attrs[key] = from_proto_dtype(val)


class Operator:
    """One node of a Block, validated against the registry's OpSpec when built."""

    def __init__(self, block, type, inputs=None, outputs=None, attrs=None):
        self.block = block
        self.type = type
        if type is None:
            raise ValueError("`type` to initialized an Operator can not be None.")
        try:
            spec = get_op_spec(type)
        except KeyError:
            raise ValueError(f'Operator "{type}" has not been registered.{op_type_hint(type)}') from None
        self.inputs = {slot: _names(v) for slot, v in (inputs or {}).items()}
        self.outputs = {slot: _names(v) for slot, v in (outputs or {}).items()}
        for kind, given, allowed in (("input", self.inputs, spec.inputs), ("output", self.outputs, spec.outputs)):
            unknown = set(given) - set(allowed)
            if unknown:
                raise ValueError(f"Operator {type!r} has no {kind} slot(s) {sorted(unknown)}; "
                                 f"its {kind}s are {list(allowed)} (defined at {spec.source})")
        missing = [s for s in spec.inputs if not self.inputs.get(s) and s not in spec.optional]
        if missing:
            raise ValueError(f"Operator {type!r} needs input slot(s) {missing}")
        merged = dict(spec.attrs)
        for key, val in (attrs or {}).items():
            if key not in spec.attrs and key not in COMMON_ATTRS:
                raise ValueError(f"Operator {type!r} has no attribute {key!r}; "
                                 f"known: {sorted(spec.attrs)} (defined at {spec.source})")
            if val is None:  # fluid's rule: an attribute given as None keeps its default
                continue
            merged[key] = val
        named_dtypes(spec, merged)
        scope, device = current_name_scope(), current_device()  # labels only (scopes.py)
        if scope != "/":
            merged.setdefault("op_namescope", scope)
        if device is not None:
            merged.setdefault("op_device", device)
        self.attrs = merged

    # fluid's accessor names -------------------------------------------------------
    def input(self, slot):
        return list(self.inputs.get(slot, []))

    def output(self, slot):
        return list(self.outputs.get(slot, []))

    @property
    def input_names(self):
        return list(self.inputs)

    @property
    def output_names(self):
        return list(self.outputs)

    @property
    def input_arg_names(self):
        return [n for names in self.inputs.values() for n in names]

    @property
    def output_arg_names(self):
        return [n for names in self.outputs.values() for n in names]

    def attr(self, name):
        """The attribute's value; fluid's common attributes (op_role, op_namescope ...) default as in fluid."""
        if name not in self.attrs and name in COMMON_ATTRS:
            return COMMON_ATTRS[name]
        return self.attrs[name]

    def has_attr(self, name):
        return name in self.attrs

    @property
    def attr_names(self):
        """The op's attribute names, with the ones fluid 1.8 gives every op (op_role, op_callstack ...)."""
        return list(dict.fromkeys(list(self.attrs) + FLUID_COMMON_ATTRS))

    def attr_type(self, name):
        """The attribute's fluid AttrType (``core.AttrType.INT`` ...)."""
        return self.desc.attr_type(name)

    @property
    def idx(self):
        """The op's index in its block."""
        for i, op in enumerate(self.block.ops):
            if op is self:
                return i
        raise ValueError("Can't find op itself in it's block. It could be a bug of Paddle.")

    def _is_optimize_op(self):
        """Whether the op updates parameters (its op_role has the Optimize bit)."""
        return bool(int(self.attr("op_role")) & OpRole.Optimize)

    def _is_backward_op(self):
        return bool(int(self.attr("op_role")) & OpRole.Backward)

    def all_attrs(self):
        return dict(self.attrs)

    def _set_attr(self, name, value):
        self.attrs[name] = value
        self.block.program._bump_version()

    @property
    def desc(self):
        """fluid's ``op.desc`` (the C++ OpDesc) as legacy code reads it: ``type()``, ``attr(name)``,
        ``has_attr``, ``input(slot)`` / ``output(slot)``, ``input_names()`` ... answered by this Operator."""
        return _OpDescView(self)

    def to_string(self):
        outs = ", ".join(f"{k}={v}" for k, v in self.outputs.items())
        ins = ", ".join(f"{k}={v}" for k, v in self.inputs.items())
        attrs = ", ".join(f"{k}={v!r}" for k, v in sorted(self.attrs.items())
                          if k not in COMMON_ATTRS or k == "op_role" and v)
        return f"{{{outs}}} = {self.type}(inputs={{{ins}}}, {attrs})"

    __str__ = to_string

    def __repr__(self):
        return f"Operator({self.to_string()})"


class _OpDescView:
    """``Operator.desc``: the OpDesc accessors, as methods, over one Operator."""

    def __init__(self, op):
        self._op = op

    def type(self):
        return self._op.type

    def attr(self, name):
        return self._op.attr(name)

    def has_attr(self, name):
        return name in self._op.attrs or name in COMMON_ATTRS

    def attr_names(self):
        return list(self._op.attrs)

    def attr_type(self, name):
        """The attribute's fluid AttrType (BOOLEAN, INT, FLOAT, ...: the number a program file stores)."""
        from .program_desc import attr_type  # noqa: PLC0415 - program_desc imports this module
        return attr_type(self._op, name)

    def _set_attr(self, name, value):
        self._op._set_attr(name, value)

    set_attr = _set_attr

    def input(self, slot):
        return self._op.input(slot)

    def output(self, slot):
        return self._op.output(slot)

    def input_names(self):
        return self._op.input_names

    def output_names(self):
        return self._op.output_names

    def input_arg_names(self):
        return self._op.input_arg_names

    def output_arg_names(self):
        return self._op.output_arg_names

    def infer_var_type(self, block_desc):
        """fluid's compile-time type inference: a Block infers its new ops' output types and shapes when the
        op is appended (Block._infer_outputs), so there is nothing left to do."""

    def infer_shape(self, block_desc):
        """See ``infer_var_type``: shapes are inferred when the op is appended."""
