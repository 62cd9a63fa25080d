"""fluid.transpiler.InferenceTranspiler: batch_norm folded into the conv2d before it, outputs unchanged."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.transpiler import InferenceTranspiler


def _net(with_bias, branch=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        img = fluid.data("img", [None, 3, 8, 8], "float32")
        conv = fluid.layers.conv2d(img, 6, 3, padding=1, bias_attr=None if with_bias else False)
        bn = fluid.layers.batch_norm(conv, act="relu", epsilon=1e-3)
        conv2 = fluid.layers.conv2d(bn, 4, 3, bias_attr=False, groups=2)
        bn2 = fluid.layers.batch_norm(conv2)
        out = fluid.layers.reduce_mean(bn2, dim=[2, 3])
        if branch:  # the first conv's output is read again: that pair must stay
            out = out + fluid.layers.reduce_mean(conv, dim=[1, 2, 3], keep_dim=True)
        loss = fluid.layers.mean(out)
        fluid.optimizer.Momentum(0.05, 0.9).minimize(loss)
    return main, startup, out


def _trained(with_bias, branch=False):
    main, startup, out = _net(with_bias, branch)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    rng = np.random.RandomState(3)
    with fluid.scope_guard(scope):
        exe.run(startup)
        for _ in range(5):  # moving mean/variance and scale/shift move away from 0 and 1
            exe.run(main, feed={"img": rng.randn(4, 3, 8, 8).astype("float32") * 2 + 1})
    return main.clone(for_test=True), out, scope, exe


@pytest.mark.parametrize("with_bias", [False, True])
def test_folded_program_gives_the_same_outputs_without_batch_norm(with_bias, capsys):
    test_program, out, scope, exe = _trained(with_bias)
    folded = test_program.clone()
    img = np.random.RandomState(0).randn(5, 3, 8, 8).astype("float32")
    with fluid.scope_guard(scope):
        before, = exe.run(test_program, feed={"img": img}, fetch_list=[out])
        InferenceTranspiler().transpile(folded, fluid.CPUPlace())
        after, = exe.run(folded, feed={"img": img}, fetch_list=[out])
        again, = exe.run(test_program, feed={"img": img}, fetch_list=[out])
    assert "InferenceTranspiler is deprecated" in capsys.readouterr().err
    types = [op.type for op in folded.global_block().ops]
    assert "batch_norm" not in types and types.count("conv2d") == 2 and types.count("elementwise_add") == 2
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(again, before)  # the original parameters are untouched
    fused = [name for name in folded.global_block().vars if name.endswith("_fuse_bn")]
    assert len(fused) == 4 and all(scope.find_var(name).is_initialized() for name in fused)
    kept = [v.name for v in folded.global_block().vars.values() if v.persistable and "_fuse_bn" not in v.name]
    assert not [name for name in kept if name.startswith("batch_norm")]  # scale, shift, mean, variance dropped
    assert not np.allclose(after, 0)


def test_a_conv_output_read_elsewhere_keeps_its_batch_norm():
    test_program, out, scope, exe = _trained(True, branch=True)
    folded = test_program.clone()
    img = np.random.RandomState(1).randn(2, 3, 8, 8).astype("float32")
    with fluid.scope_guard(scope):
        before, = exe.run(test_program, feed={"img": img}, fetch_list=[out])
        InferenceTranspiler().transpile(folded, fluid.CPUPlace(), scope)
        after, = exe.run(folded, feed={"img": img}, fetch_list=[out])
    assert [op.type for op in folded.global_block().ops].count("batch_norm") == 1  # only the second pair folded
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-5)


def test_is_test_is_set_and_fluids_argument_errors():
    main, _, _ = _net(False)
    program = main.clone(for_test=True)
    with pytest.raises(TypeError, match="program should be as Program type"):
        InferenceTranspiler().transpile("main", fluid.CPUPlace())
    with pytest.raises(TypeError, match="place should be as CPUPlace/CUDAPlace type"):
        InferenceTranspiler().transpile(program, "cpu")
    with pytest.raises(TypeError, match="scope should be as Scope type or None"):
        InferenceTranspiler().transpile(program, fluid.CPUPlace(), scope={})
    with pytest.raises(ValueError, match="which is not in the scope"):
        InferenceTranspiler().transpile(program, fluid.CPUPlace(), fluid.Scope())
    training = main.clone()  # the backward ops read each conv's output: nothing folds, no value is needed
    assert not any(op.attrs["is_test"] for op in training.global_block().ops if op.type == "batch_norm")
    InferenceTranspiler().transpile(training, fluid.CPUPlace(), fluid.Scope())
    norms = [op for op in training.global_block().ops if op.type == "batch_norm"]
    assert len(norms) == 2 and all(op.attrs["is_test"] for op in norms)


def test_saved_after_folding_the_model_loads_and_runs(tmp_path):
    test_program, out, scope, exe = _trained(False)
    img = np.random.RandomState(2).randn(3, 3, 8, 8).astype("float32")
    with fluid.scope_guard(scope):
        before, = exe.run(test_program, feed={"img": img}, fetch_list=[out])
        folded = test_program.clone()
        InferenceTranspiler().transpile(folded, fluid.CPUPlace())
        fluid.io.save_inference_model(str(tmp_path), ["img"], [out], exe, folded)
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
        loaded, = exe.run(program, feed={feeds[0]: img}, fetch_list=fetches)
    np.testing.assert_allclose(loaded, before, rtol=1e-4, atol=1e-5)
    assert "batch_norm" not in [op.type for op in program.global_block().ops]
