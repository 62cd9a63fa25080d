"""fluid's op protos: what each registered op declares (input and output slots, attributes), as
``OpProtoHolder.instance().get_op_proto(type)`` and ``fluid.op.get_all_op_protos()`` return them.

minifluid's registry (ops/registry.py) knows per slot whether it takes a list (duplicable) and whether it
may be left out (an optional input: dispensable). fluid also marks some outputs *intermediate* (kept for
the gradient, such as dropout's Mask); minifluid does not distinguish them and marks every output
intermediate, so a caller may leave any output out and gets a temporary for it.
"""
from collections import namedtuple

from ..ops.registry import COMMON_ATTRS, get_op_spec, registered_ops

__all__ = ["OpProto", "OpProtoHolder", "VarProto", "AttrProto", "get_all_op_protos"]

VarProto = namedtuple("VarProto", "name comment duplicable intermediate dispensable")
AttrProto = namedtuple("AttrProto", "name comment generated")
OpProto = namedtuple("OpProto", "type inputs outputs attrs comment")


def _proto(op_type):
    spec = get_op_spec(op_type)
    inputs = [VarProto(s, "", s in spec.duplicable, False, s in spec.optional) for s in spec.inputs]
    outputs = [VarProto(s, "", s in spec.duplicable, True, False) for s in spec.outputs]
    attrs = [AttrProto(a, "", a in COMMON_ATTRS) for a in dict.fromkeys(list(spec.attrs) + list(COMMON_ATTRS))]
    return OpProto(op_type, inputs, outputs, attrs, "")


class OpProtoHolder:
    """The protos of every registered op (fluid's singleton; ``update_op_proto`` picks up ops
    registered since)."""

    _instance = None

    @classmethod
    def instance(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def __init__(self):
        self.op_proto_map = {}
        self.update_op_proto()

    def update_op_proto(self):
        for op_type in registered_ops():
            if op_type not in self.op_proto_map:
                self.op_proto_map[op_type] = _proto(op_type)

    def get_op_proto(self, op_type):
        if op_type not in self.op_proto_map:
            self.update_op_proto()
        if op_type not in self.op_proto_map:
            raise ValueError(f'Operator "{op_type}" has not been registered.')
        return self.op_proto_map[op_type]

    @staticmethod
    def generated_op_attr_names():
        return set(COMMON_ATTRS)


def get_all_op_protos():
    """Every registered op's proto (fluid.op.get_all_op_protos)."""
    holder = OpProtoHolder.instance()
    holder.update_op_proto()
    return list(holder.op_proto_map.values())
