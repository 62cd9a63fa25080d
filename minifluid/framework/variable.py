"""Variable and Parameter: symbolic handles in a Block (no data lives here; data lives in a Scope)."""
from ..dtypes import convert_dtype

__all__ = ["Variable", "Parameter", "VarType"]


class VarType:
    """The variable kinds minifluid distinguishes (names follow fluid's VarDesc.VarType)."""
    LOD_TENSOR = "LOD_TENSOR"
    READER = "READER"
    RAW = "RAW"
    FEED_MINIBATCH = "FEED_MINIBATCH"
    FETCH_LIST = "FETCH_LIST"


class Variable:
    """A named tensor slot of a Block: shape (-1 for unknown dims), dtype, LoD level and flags."""

    def __init__(self, block, name, shape=None, dtype="float32", lod_level=0, persistable=False,
                 stop_gradient=False, type=VarType.LOD_TENSOR, need_check_feed=False, is_data=False):
        self.block = block
        self.name = name
        self.shape = tuple(int(d) for d in shape) if shape is not None else None
        self.dtype = convert_dtype(dtype) if dtype is not None else None
        self.lod_level = lod_level
        self.persistable = persistable
        self.stop_gradient = stop_gradient
        self.type = type
        self.need_check_feed = need_check_feed
        self.is_data = is_data

    @property
    def ndim(self):
        return len(self.shape) if self.shape is not None else None

    def __bool__(self):
        raise TypeError(f"Variable {self.name!r} is symbolic: it has no truth value until an Executor runs it")

    def __iter__(self):
        raise TypeError(f"Variable {self.name!r} is symbolic and cannot be iterated; fetch it with Executor.run")

    def __len__(self):
        raise TypeError(f"Variable {self.name!r} is symbolic: use .shape")

    def to_string(self, throw_on_error=False, with_details=False):
        flags = "persist " if self.persistable else ""
        kind = "param" if isinstance(self, Parameter) else "var"
        shape = list(self.shape) if self.shape is not None else "?"
        lod = f", lod_level={self.lod_level}" if self.lod_level else ""
        extra = f", stop_gradient={self.stop_gradient}" if with_details else ""
        return f"{flags}{kind} {self.name} : {self.type}.shape{shape}.dtype({self.dtype}){lod}{extra}"

    __str__ = to_string

    def __repr__(self):
        return f"Variable({self.to_string()})"

    def _copy_meta(self):
        return dict(shape=self.shape, dtype=self.dtype, lod_level=self.lod_level,
                    persistable=self.persistable, stop_gradient=self.stop_gradient, type=self.type,
                    need_check_feed=self.need_check_feed, is_data=self.is_data)


class Parameter(Variable):
    """A persistable, trainable Variable initialised by the startup program."""

    def __init__(self, block, name, shape, dtype="float32", trainable=True, optimize_attr=None,
                 regularizer=None, gradient_clip_attr=None, do_model_average=None, **kwargs):
        if shape is None or any(d < 0 for d in shape):
            raise ValueError(f"Parameter {name!r} needs a fully known shape, got {shape}")
        kwargs.setdefault("persistable", True)
        super().__init__(block, name, shape, dtype, **kwargs)
        self.trainable = trainable
        self.stop_gradient = not trainable
        self.optimize_attr = optimize_attr or {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.gradient_clip_attr = gradient_clip_attr
        self.do_model_average = do_model_average
