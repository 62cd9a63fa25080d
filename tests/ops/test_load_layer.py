"""fluid.layers.load: a program's load op reads a file fluid.io.save_vars wrote (fluid's LoDTensor format), with
its LoD, a slice (seek / shape) or as float16; a missing file is an error naming it."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

PLACE = fluid.CPUPlace()


def _saved(tmp_path, name, value, lod=None):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        var = main.global_block().create_var(name=name, shape=value.shape, dtype=str(value.dtype), persistable=True)
    scope = fluid.Scope()
    scope.var(name).get_tensor().set(value, PLACE)
    scope.var(name).get_tensor().set_recursive_sequence_lengths(lod or [])
    fluid.io.save_vars(fluid.Executor(PLACE), str(tmp_path), main, vars=[var], scope=scope)
    return str(tmp_path / name)


def _load(path, dtype, **kw):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        out = main.global_block().create_var(name="out", dtype=dtype, persistable=True)
        fluid.layers.load(out, path, **kw)
    return main, out


def test_signature_is_fluids():
    params = inspect.signature(fluid.layers.load).parameters
    assert [(p.name, p.default) for p in params.values()] == [("out", inspect.Parameter.empty),
                                                             ("file_path", inspect.Parameter.empty),
                                                             ("load_as_fp16", None)]
    assert "load" in fluid.layers.__all__


def test_load_reads_value_and_lod(tmp_path):
    value = np.arange(12, dtype="float32").reshape(6, 2)
    path = _saved(tmp_path, "w", value, [[2, 4]])
    main, out = _load(path, "float32")
    (got,) = fluid.Executor(PLACE).run(main, fetch_list=[out], return_numpy=False)
    np.testing.assert_array_equal(np.array(got), value)
    assert got.recursive_sequence_lengths() == [[2, 4]]
    main, out = _load(path, "float32", load_as_fp16=True)
    (half,) = fluid.Executor(PLACE).run(main, fetch_list=[out], return_numpy=False)
    half = np.array(half)
    assert half.dtype == np.float16 and np.array_equal(half, value.astype(np.float16))


def test_load_slice_with_seek_and_shape(tmp_path):
    path = _saved(tmp_path, "v", np.arange(10, dtype="int64"))
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        out = main.global_block().create_var(name="out", dtype="int64", persistable=True)
        main.global_block().append_op(type="load", outputs={"Out": [out]},
                                      attrs={"file_path": path, "seek": 3, "shape": [2, 2]})
    (got,) = fluid.Executor(PLACE).run(main, fetch_list=[out])
    np.testing.assert_array_equal(got, [[3, 4], [5, 6]])


def test_load_missing_file_names_it(tmp_path):
    main, out = _load(str(tmp_path / "nothing"), "float32")
    with pytest.raises(Exception, match="Load operator fail to open file .*nothing"):
        fluid.Executor(PLACE).run(main, fetch_list=[out])
