"""``fluid.core``: the names legacy code imports from the C++ core, backed by Python objects."""
from .errors import EOFException
from .flags import registry as globals  # noqa: A001 - fluid's core.globals()
from .backward import grad_op_descs
from .dygraph.op_functions import Layer, VarBase, ops
from .executor.scope import Scope
from .lod_tensor import LoDTensor, LoDTensorArray
from .selected_rows import SelectedRows
from .framework.proto import framework_pb2 as _pb
from .framework.variable import VarType
from .inference_api import NativeConfig, PaddleBuf, PaddleDType, PaddleTensor, create_paddle_predictor
from .ops.registry import EMPTY_VAR_NAME, OpRole, registered_ops
from .places import CPUPlace, CUDAPinnedPlace, CUDAPlace, Place, get_cuda_device_count, is_compiled_with_cuda

EnforceNotMet = RuntimeError
"""fluid's C++ enforcement error. minifluid's runtime errors are RuntimeErrors (a failing reader's
``ReaderKilledError`` too), so ``except core.EnforceNotMet`` catches what fluid's would."""

__all__ = ["AttrType", "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "EOFException", "EnforceNotMet", "Layer",
           "LoDTensor", "LoDTensorArray", "NativeConfig", "PaddleBuf", "PaddleDType", "PaddleTensor", "Place", "Scope",
           "SelectedRows", "VarBase", "VarDesc", "create_paddle_predictor", "empty_var_name", "get_cuda_device_count",
           "get_grad_op_desc", "globals", "grad_var_suffix", "has_grad_op_maker", "has_infer_inplace",
           "is_compiled_with_cuda", "is_float16_supported", "op_proto_and_checker_maker", "op_support_gpu", "ops"]


def _set_eager_deletion_mode(threshold, fraction, fast):
    """fluid's garbage-collection switch: minifluid's Executor always frees a variable after its last use
    (executor/plan.py), so the setting has nothing to change."""


def _set_fuse_parameter_group_size(size):
    """fluid's fused-gradient grouping (multi-device all-reduce): nothing to group in one process."""


class op_proto_and_checker_maker:  # noqa: N801 - fluid's name
    """The attribute names fluid adds to every op, and its op roles (``OpRole.Forward`` ...)."""
    OpRole = OpRole

    @staticmethod
    def kOpRoleAttrName():  # noqa: N802 - fluid's names
        return "op_role"

    @staticmethod
    def kOpRoleVarAttrName():  # noqa: N802
        return "op_role_var"

    @staticmethod
    def kOpNameScopeAttrName():  # noqa: N802
        return "op_namescope"

    @staticmethod
    def kOpCreationCallstackAttrName():  # noqa: N802
        return "op_callstack"

    @staticmethod
    def kOpDeviceAttrName():  # noqa: N802
        return "op_device"


def has_grad_op_maker(op_type):
    """Whether ``op_type`` has a gradient (a grad kernel or grad-op builder)."""
    spec = registered_ops().get(op_type)
    return spec is not None and spec.has_grad


def has_infer_inplace(op_type):
    """fluid's in-place buffer reuse hint: minifluid never runs an op in place of its input, so none has one."""
    return False


def get_grad_op_desc(op_desc, no_grad_set, grad_sub_block_list=()):
    """(grad op descs of the forward op ``op_desc``, {gradient name: forward variable name}), as
    append_backward would emit them (backward.py ``grad_op_descs``). ``no_grad_set`` names the gradients
    not to make (``x@GRAD``), as fluid's binding takes them; a forward name is read as its gradient."""
    suffix = grad_var_suffix()
    return grad_op_descs(op_desc, {n[:-len(suffix)] if n.endswith(suffix) else n for n in no_grad_set or ()})


def _get_all_register_op_kernels():
    """op type -> its kernel keys: one CPU kernel per registered op (gradient ops included)."""
    key = "{data_type[float]; data_layout[ANY_LAYOUT]; place[CPUPlace]; library_type[PLAIN]}"
    return {op_type: [key] for op_type in registered_ops()}


def op_support_gpu(op_type):
    """Whether ``op_type`` has a CUDA kernel in this build (none: ``is_compiled_with_cuda()`` is False)."""
    return False


def is_float16_supported(place):
    return False


class AttrType:
    """fluid's ``core.AttrType``: the kinds of op attribute a program file stores, as ``op.desc.attr_type(name)``
    gives them (``core.AttrType.INT``, ``FLOAT``, ``STRING``, ``INTS``, ... ``BOOLEAN``, ``LONG``)."""


for _name, _value in _pb.AttrType.items():
    setattr(AttrType, _name, _value)


class VarDesc:
    """fluid's ``core.VarDesc``, for its ``VarType`` enum (``core.VarDesc.VarType.FP32``)."""
    VarType = VarType


def empty_var_name():
    """The name a grad op's slot holds for a gradient nobody computes (``@EMPTY@``)."""
    return EMPTY_VAR_NAME


def grad_var_suffix():
    """The suffix of a variable's gradient name: ``x`` -> ``x@GRAD``."""
    return "@GRAD"
