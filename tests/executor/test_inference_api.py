"""fluid's native inference API (minifluid/inference_api.py): PaddleTensor in, PaddleTensor out, through
``CompiledProgram.with_inference_optimize(NativeConfig)``, matching a plain run of the loaded model."""
import numpy as np
import pytest

import minifluid as fluid

core = fluid.core


def _save_model(folder):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = fluid.data("words", [None, 1], "int64", lod_level=1)
        emb = fluid.layers.embedding(words, size=[12, 4])
        pooled = fluid.layers.sequence_pool(emb, "sum")
        prob = fluid.layers.fc(pooled, 3, act="softmax")
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        fluid.io.save_inference_model(str(folder), ["words"], [prob, emb], exe, main_program=main)
    return exe


def _as_paddle_tensor(lod_tensor):
    t = core.PaddleTensor()
    t.lod, t.data, t.shape = lod_tensor.lod(), core.PaddleBuf(np.array(lod_tensor)), lod_tensor.shape()
    t.dtype = core.PaddleDType.INT64
    return t


def test_a_native_predictor_runs_the_saved_model_like_the_executor(tmp_path):
    exe = _save_model(tmp_path)
    words = fluid.create_lod_tensor(np.array([[1], [5], [7], [2], [11]], "int64"), [[2, 3]], fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
        expected = exe.run(program, feed={feeds[0]: words}, fetch_list=fetches, return_numpy=False)
        config = core.NativeConfig()
        config.model_dir = str(tmp_path)
        compiled = fluid.CompiledProgram(program).with_inference_optimize(config)
        prob, emb = exe.run(compiled, feed=[_as_paddle_tensor(words)])
    assert compiled._is_inference and prob.shape == [2, 3] and emb.lod == [[0, 2, 5]]
    np.testing.assert_allclose(prob.data.float_data(), np.asarray(expected[0]).reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(emb.as_ndarray(), np.asarray(expected[1]), rtol=1e-6)


def test_native_config_mistakes_are_named(tmp_path):
    with pytest.raises(TypeError, match="needs a fluid.core.NativeConfig"):
        fluid.CompiledProgram(fluid.Program()).with_inference_optimize({"model_dir": str(tmp_path)})
    with pytest.raises(ValueError, match="set model_dir, or prog_file"):
        core.create_paddle_predictor(core.NativeConfig())
    _save_model(tmp_path)
    config = core.NativeConfig()
    config.model_dir = str(tmp_path)
    with pytest.raises(ValueError, match=r"takes 1 inputs \(\['words'\]\), got 2"):
        core.create_paddle_predictor(config).run([core.PaddleTensor(np.zeros((1, 1), "int64"))] * 2)
