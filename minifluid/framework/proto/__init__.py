"""fluid's protobuf messages (ProgramDesc, VarType.TensorDesc, ...): ``framework.proto`` and the module
``framework_pb2`` that ``tools/gen_proto.py`` generates from it (committed; needs only ``protobuf``)."""
from . import framework_pb2

__all__ = ["framework_pb2"]
