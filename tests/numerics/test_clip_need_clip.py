"""Gradient clips' ``need_clip`` filter and their handling of missing gradients (clip.py)."""
import numpy as np
import pytest

import minifluid as fluid


def _grads():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        h = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name="w1"), bias_attr=False)
        loss = fluid.layers.reduce_sum(fluid.layers.fc(h, 2, param_attr=fluid.ParamAttr(name="w2"), bias_attr=False))
        params_grads = fluid.backward.append_backward(loss)
    return main, startup, params_grads


@pytest.mark.parametrize("make", [
    lambda need: fluid.clip.GradientClipByValue(0.01, -0.01, need_clip=need),
    lambda need: fluid.clip.GradientClipByNorm(0.01, need_clip=need),
    lambda need: fluid.clip.GradientClipByGlobalNorm(0.01, need_clip=need),
])
def test_need_clip_leaves_the_filtered_out_gradients_alone_and_drops_missing_ones(make):
    main, startup, params_grads = _grads()
    clip = make(lambda param: param.name == "w2")
    with fluid.program_guard(main, startup):
        out = clip(params_grads + [(main.global_block().var("w1"), None)])
    assert [p.name for p, _ in out] == ["w1", "w2"]  # the pair without a gradient is left out
    (_, g1), (_, g2) = out
    assert g1.name == "w1@GRAD" and g2.name != "w2@GRAD"
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        raw1, raw2, clipped1, clipped2 = exe.run(main, feed={"x": np.full((4, 3), 5.0, "float32")},
                                                 fetch_list=[params_grads[0][1], params_grads[1][1], g1, g2])
    np.testing.assert_array_equal(clipped1, raw1)
    assert np.abs(clipped2).max() <= 0.01 + 1e-7 < np.abs(raw2).max()


def test_need_clip_must_be_callable_and_clips_print_fluids_text():
    with pytest.raises(TypeError, match="The type of need_clip must be funciton"):
        fluid.clip.GradientClipByGlobalNorm(1.0, need_clip="w")
    assert str(fluid.clip.GradientClipByValue(0.2, 0.1)) == "Gradient Clip By Value, min = 0.100000, max=0.200000"
    assert str(fluid.clip.GradientClipByNorm(0.2)) == "Gradient Clip By Norm, clip_norm=0.200000"
    assert str(fluid.clip.GradientClipByGlobalNorm(0.2)) == "Gradient Clip By GlobalNorm, global_norm=0.200000"
