"""fluid's native inference API (``core.PaddleTensor``, ``PaddleBuf``, ``PaddleDType``, ``NativeConfig``,
``create_paddle_predictor``) over a saved inference model, as legacy scripts and the book tests call it:
``CompiledProgram(program).with_inference_optimize(config)`` then ``exe.run(compiled, feed=[tensors])``.

A predictor loads ``config.model_dir`` (or ``prog_file`` / ``param_file``) into its own Scope once and runs
the inputs, in the model's feed order (by name with ``specify_input_name``), through an Executor.
"""
import enum
import os

import numpy as np

from .executor import Executor, Scope, scope_guard
from .inference_model import load_inference_model
from .lod_tensor import LoDTensor, lengths_to_offsets, offsets_to_lengths
from .places import CPUPlace

__all__ = ["NativeConfig", "PaddleBuf", "PaddleDType", "PaddleTensor", "create_paddle_predictor"]


class PaddleDType(enum.IntEnum):
    FLOAT32 = 0
    INT64 = 1
    INT32 = 2
    UINT8 = 3


_NUMPY = {PaddleDType.FLOAT32: np.float32, PaddleDType.INT64: np.int64, PaddleDType.INT32: np.int32,
          PaddleDType.UINT8: np.uint8}


class PaddleBuf:
    """A flat buffer: ``PaddleBuf(ndarray)`` (or a list, or a byte size) with typed views of its values."""

    def __init__(self, data=0):
        self._array = np.zeros(data, np.uint8) if isinstance(data, int) else np.asarray(data)

    def float_data(self):
        return self._array.reshape(-1).astype(np.float32).tolist()

    def int64_data(self):
        return self._array.reshape(-1).astype(np.int64).tolist()

    def int32_data(self):
        return self._array.reshape(-1).astype(np.int32).tolist()

    def length(self):
        return self._array.nbytes

    def empty(self):
        return self._array.size == 0

    def tolist(self):
        return self._array.reshape(-1).tolist()


class PaddleTensor:
    """One input or output of a predictor: ``name``, ``shape``, ``data`` (a PaddleBuf), ``dtype`` and
    ``lod`` (offsets, as ``LoDTensor.lod()`` gives them)."""

    def __init__(self, data=None, name=""):
        self.name, self.lod = name, []
        array = np.asarray(data) if data is not None else np.zeros(0, np.float32)
        self.data, self.shape = PaddleBuf(array), list(array.shape)
        self.dtype = {np.dtype(v): k for k, v in _NUMPY.items()}.get(array.dtype, PaddleDType.FLOAT32)

    def as_ndarray(self):
        return self.data._array.astype(_NUMPY[PaddleDType(self.dtype)], copy=False).reshape(self.shape)


class NativeConfig:
    """Where the model is (``model_dir``, or ``prog_file`` and ``param_file``) and fluid's device fields
    (accepted; minifluid predicts on the CPU)."""

    def __init__(self):
        self.model_dir = self.prog_file = self.param_file = ""
        self.use_gpu, self.device, self.fraction_of_gpu_memory = False, 0, -1.0
        self.specify_input_name = False

    def _create_predictor(self):
        return create_paddle_predictor(self)


class _NativePredictor:
    def __init__(self, config):
        self._scope, self._exe = Scope(), Executor(CPUPlace())
        if config.model_dir:
            where = (config.model_dir, None, None)
        elif config.prog_file:
            where = (os.path.dirname(config.prog_file) or ".", os.path.basename(config.prog_file),
                     os.path.basename(config.param_file) if config.param_file else None)
        else:
            raise ValueError("NativeConfig: set model_dir, or prog_file (and param_file), to the saved model")
        with scope_guard(self._scope):
            self._program, self._feeds, self._fetches = load_inference_model(where[0], self._exe, where[1], where[2])
        self._by_name = config.specify_input_name

    def run(self, inputs):
        if len(inputs) != len(self._feeds):
            raise ValueError(f"the predictor takes {len(self._feeds)} inputs ({self._feeds}), got {len(inputs)}")
        names = [t.name for t in inputs] if self._by_name else self._feeds
        feed = {name: LoDTensor(t.as_ndarray(), offsets_to_lengths(t.lod) if t.lod else None)
                for name, t in zip(names, inputs)}
        results = self._exe.run(self._program, feed=feed, fetch_list=self._fetches, scope=self._scope,
                                return_numpy=False)
        outputs = []
        for var, value in zip(self._fetches, results):
            tensor = PaddleTensor(np.asarray(value), var.name)
            tensor.lod = lengths_to_offsets(value.recursive_sequence_lengths())
            outputs.append(tensor)
        return outputs


def create_paddle_predictor(config):
    """A predictor (``predictor.run([PaddleTensor, ...])`` -> list of PaddleTensor) for a NativeConfig."""
    if not isinstance(config, NativeConfig):
        raise TypeError(f"create_paddle_predictor needs a NativeConfig, got {type(config).__name__}")
    return _NativePredictor(config)
