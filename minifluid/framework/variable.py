"""Variable and Parameter: symbolic handles in a Block (no data lives here; data lives in a Scope)."""
from ..dtypes import convert_dtype

__all__ = ["Variable", "Parameter", "VarType"]


class _VarTypeValue(str):
    """One value of fluid's ``VarDesc.VarType`` enum. It *is* the string minifluid uses for it (a dtype's
    numpy name such as ``"float32"``, a kind's name such as ``"LOD_TENSOR"``), so it works wherever a
    dtype or kind does (``np.dtype(VarType.FP32)``, ``var.dtype == VarType.FP32``); ``int()`` gives fluid's
    enum number and ``.name`` its enum name."""

    def __new__(cls, text, name, number):
        value = super().__new__(cls, text)
        value.name, value.number = name, number
        return value

    def __int__(self):
        return self.number

    __index__ = __int__

    def __repr__(self):
        return f"VarType.{self.name}"

    def __reduce__(self):
        return getattr, (VarType, self.name)


class VarType:
    """fluid's ``VarDesc.VarType``: the dtypes and the variable kinds (names and numbers as in fluid)."""
    BOOL = _VarTypeValue("bool", "BOOL", 0)
    INT16 = _VarTypeValue("int16", "INT16", 1)
    INT32 = _VarTypeValue("int32", "INT32", 2)
    INT64 = _VarTypeValue("int64", "INT64", 3)
    FP16 = _VarTypeValue("float16", "FP16", 4)
    FP32 = _VarTypeValue("float32", "FP32", 5)
    FP64 = _VarTypeValue("float64", "FP64", 6)
    UINT8 = _VarTypeValue("uint8", "UINT8", 20)
    INT8 = _VarTypeValue("int8", "INT8", 21)
    COMPLEX64 = _VarTypeValue("complex64", "COMPLEX64", 23)
    COMPLEX128 = _VarTypeValue("complex128", "COMPLEX128", 24)
    LOD_TENSOR = _VarTypeValue("LOD_TENSOR", "LOD_TENSOR", 7)
    SELECTED_ROWS = _VarTypeValue("SELECTED_ROWS", "SELECTED_ROWS", 8)
    STEP_SCOPES = _VarTypeValue("STEP_SCOPES", "STEP_SCOPES", 11)
    LOD_RANK_TABLE = _VarTypeValue("LOD_RANK_TABLE", "LOD_RANK_TABLE", 12)
    FEED_MINIBATCH = _VarTypeValue("FEED_MINIBATCH", "FEED_MINIBATCH", 9)
    FETCH_LIST = _VarTypeValue("FETCH_LIST", "FETCH_LIST", 10)
    STEP_SCOPES = _VarTypeValue("STEP_SCOPES", "STEP_SCOPES", 11)
    LOD_RANK_TABLE = _VarTypeValue("LOD_RANK_TABLE", "LOD_RANK_TABLE", 12)
    LOD_TENSOR_ARRAY = _VarTypeValue("LOD_TENSOR_ARRAY", "LOD_TENSOR_ARRAY", 13)
    PLACE_LIST = _VarTypeValue("PLACE_LIST", "PLACE_LIST", 14)
    READER = _VarTypeValue("READER", "READER", 15)
    RAW = _VarTypeValue("RAW", "RAW", 17)


def _eager_only(method):
    raise AssertionError(f"'{method}' should be called by imperative Varible in imperative mode, please use "
                         "fluid.dygraph.guard() as context to run it in imperative mode")


class Variable:
    """A named tensor slot of a Block: shape (-1 for unknown dims), dtype, LoD level and flags."""

    _DETAILS = ("error_clip", "stop_gradient")  # what to_string(with_details=True) adds, as in fluid

    def __init__(self, block, name, shape=None, dtype="float32", lod_level=0, persistable=False,
                 stop_gradient=False, type=VarType.LOD_TENSOR, need_check_feed=False, is_data=False,
                 error_clip=None):
        self.block = block
        self.error_clip = error_clip  # a clip.ErrorClipByValue for this variable's gradient (clip.py)
        self.name = name
        self.shape = tuple(int(d) for d in shape) if shape is not None else None
        self.dtype = convert_dtype(dtype) if dtype is not None else None
        self.lod_level = lod_level if lod_level is not None else 0  # fluid: a VarDesc starts at lod_level 0
        self.persistable = persistable
        self.stop_gradient = stop_gradient
        self.type = type
        self.need_check_feed = need_check_feed
        self.is_data = is_data
        if block is not None:  # as fluid's: a Variable made directly joins its block
            block.vars[name] = self
            block.program._bump_version()

    @property
    def grad_name(self):
        """The name of this variable's gradient: ``<name>@GRAD``."""
        return self.name + "@GRAD"

    @property
    def op(self):
        """The last op of this variable's block that writes it (fluid's ``var.op``), or None."""
        ops = self.block.ops if self.block is not None else ()
        return next((op for op in reversed(ops) if self.name in op.output_arg_names), None)

    # dygraph tensors' methods: a static Variable has them only to say so (fluid's fake_interface_only)
    def detach(self):
        _eager_only("detach")

    def numpy(self):
        _eager_only("numpy")

    def set_value(self, value):
        _eager_only("set_value")

    def backward(self, backward_strategy=None):
        _eager_only("backward")

    def gradient(self):
        _eager_only("gradient")

    def clear_gradient(self):
        _eager_only("clear_gradient")

    def _set_error_clip(self, error_clip):
        self.error_clip = error_clip

    def _set_info(self, key, value):
        """Keep ``value`` under ``key`` on this variable (fluid's per-variable notes)."""
        self.__dict__.setdefault("_info", {})[key] = value

    def _get_info(self, key):
        """The value ``_set_info`` kept under ``key``, or None."""
        return self.__dict__.get("_info", {}).get(key)

    @property
    def ndim(self):
        return len(self.shape) if self.shape is not None else None

    @property
    def grad_name(self):
        """The name of this variable's gradient (``name@GRAD``), as append_backward makes it."""
        return self.name + "@GRAD"

    def __bool__(self):
        raise TypeError(f"Variable {self.name!r} is symbolic: it has no truth value until an Executor runs it")

    def __iter__(self):
        raise TypeError(f"Variable {self.name!r} is symbolic and cannot be iterated; fetch it with Executor.run")

    def __len__(self):
        raise TypeError(f"Variable {self.name!r} is symbolic: use .shape")

    def to_string(self, throw_on_error=False, with_details=False):
        """fluid's text of a variable: its VarDesc in protobuf text format (``name: "x"``, ``type {...}``),
        then with ``with_details`` one ``field: value`` line per extra field (error_clip, stop_gradient; a
        Parameter's trainable, optimize_attr ...)."""
        from .program_desc import var_debug_string  # noqa: PLC0415 - program_desc imports this module
        text = var_debug_string(self)
        if with_details:
            text += "".join(f"{name}: {getattr(self, name)}\n" for name in self._DETAILS)
        return text

    def __str__(self):
        return self.to_string(True)

    def _summary(self, with_details=False):
        """One line for a Program's text: ``[persist ]var|param name : KIND.shape[...].dtype(...)``."""
        flags = "persist " if self.persistable else ""
        kind = "param" if isinstance(self, Parameter) else "var"
        shape = list(self.shape) if self.shape is not None else "?"
        lod = f", lod_level={self.lod_level}" if self.lod_level else ""
        extra = "".join(f", {name}={getattr(self, name)}" for name in self._DETAILS) if with_details else ""
        return f"{flags}{kind} {self.name} : {self.type}.shape{shape}.dtype({self.dtype}){lod}{extra}"

    def __repr__(self):
        return f"Variable({self._summary()})"

    @property
    def desc(self):
        """fluid's ``var.desc`` (the C++ VarDesc) as legacy code uses it: ``name()``, ``shape()``, ``dtype()``,
        ``persistable()``, ``lod_level()`` and their ``set_*`` twins, answered by this Variable."""
        return _VarDescView(self)

    def _copy_meta(self):
        return dict(shape=self.shape, dtype=self.dtype, lod_level=self.lod_level,
                    persistable=self.persistable, stop_gradient=self.stop_gradient, type=self.type,
                    need_check_feed=self.need_check_feed, is_data=self.is_data)


class _VarDescView:
    """``Variable.desc``: the VarDesc accessors, as methods, over one Variable."""

    def __init__(self, var):
        self._var = var

    def name(self):
        return self._var.name

    def shape(self):
        return list(self._var.shape)

    def dtype(self):
        return self._var.dtype

    def persistable(self):
        return self._var.persistable

    def lod_level(self):
        return self._var.lod_level

    def type(self):
        return self._var.type

    def set_shape(self, shape):
        self._set("shape", tuple(int(d) for d in shape))

    def set_dtype(self, dtype):
        """``dtype``: a VarType code (``core.VarDesc.VarType.FP32``), a numpy dtype or a name."""
        self._set("dtype", convert_dtype(dtype))

    def set_lod_level(self, lod_level):
        self._set("lod_level", int(lod_level))

    def set_persistable(self, persistable):
        self._set("persistable", bool(persistable))

    def _set(self, field, value):
        if field == "dtype":
            self._var.__dict__.pop("_dtype_unset", None)
        setattr(self._var, field, value)
        self._var.block.program._bump_version()


class Parameter(Variable):
    """A persistable, trainable Variable initialised by the startup program."""

    _DETAILS = Variable._DETAILS + ("trainable", "optimize_attr", "regularizer", "gradient_clip_attr",
                                    "do_model_average")

    def __init__(self, block, name, shape, dtype="float32", trainable=True, optimize_attr=None,
                 regularizer=None, gradient_clip_attr=None, do_model_average=None, **kwargs):
        if shape is None:
            raise ValueError(f"The shape of Parameter should not be None (Parameter {name!r})")
        if dtype is None:
            raise ValueError(f"The dtype of Parameter should not be None (Parameter {name!r})")
        if len(shape) == 0:
            raise ValueError(f"The dimensions of shape for Parameter must be greater than 0 (Parameter {name!r})")
        if any(d < 0 for d in shape):
            raise ValueError(f"Each dimension of shape for Parameter must be greater than 0, but received "
                             f"{list(shape)} (Parameter {name!r})")
        kwargs.setdefault("persistable", True)
        super().__init__(block, name, shape, dtype, **kwargs)
        self.trainable = trainable
        self.stop_gradient = not trainable
        self.optimize_attr = optimize_attr or {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.gradient_clip_attr = gradient_clip_attr
        self.do_model_average = do_model_average
