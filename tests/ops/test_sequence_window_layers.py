"""row_conv, add_position_encoding, sequence_scatter and im2sequence through the Executor: fluid 1.8
signatures and parameters, LoD in and out, a model that learns through row_conv, and fluid's errors (the
ops' values and gradients: tests/ops/sequence_window_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

PLACE = fluid.CPUPlace()
L = fluid.layers
rng = np.random.RandomState(5)


def seqs(values, lengths, dtype="float32"):
    return fluid.create_lod_tensor(np.asarray(values, dtype).reshape(sum(lengths), -1), [lengths], PLACE)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_layers_take_fluids_signatures():
    e = inspect.Parameter.empty
    assert _signature(L.row_conv) == [("input", e), ("future_context_size", e), ("param_attr", None), ("act", None)]
    assert _signature(L.add_position_encoding) == [("input", e), ("alpha", e), ("beta", e), ("name", None)]
    assert _signature(L.sequence_scatter) == [("input", e), ("index", e), ("updates", e), ("name", None)]
    assert _signature(L.im2sequence) == [("input", e), ("filter_size", 1), ("stride", 1), ("padding", 0),
                                         ("input_image_size", None), ("out_stride", 1), ("name", None)]


def test_row_conv_learns_a_lookahead_and_keeps_the_lod():
    """The target is the next step's value (zero at a sequence's end): only the lookahead tap can give it."""
    lengths = [4, 0, 6, 1, 5]
    x = rng.randn(16, 2).astype("float32")
    ends = np.cumsum(lengths)[np.array(lengths) > 0] - 1
    target = np.vstack([x[1:], np.zeros((1, 2), "float32")])
    target[ends] = 0.0
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("x", [None, 2], "float32", lod_level=1)
        t = fluid.data("t", [None, 2], "float32")
        out = L.row_conv(v, future_context_size=2, param_attr=fluid.ParamAttr(name="rc_w"))
        loss = L.mean(L.square(out - t))
        fluid.optimizer.SGD(0.5).minimize(loss)
    assert out.lod_level == 1 and main.global_block().var("rc_w").shape == (3, 2)
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    feed = {"x": seqs(x, lengths), "t": target}
    for _ in range(300):
        last, got = exe.run(main, feed=feed, fetch_list=[loss, out], return_numpy=False)
    assert got.recursive_sequence_lengths() == [lengths]
    w = fluid.global_scope().find_var("rc_w").get_tensor()
    np.testing.assert_allclose(np.array(w), [[0, 0], [1, 1], [0, 0]], atol=0.05)
    assert np.array(last).ravel()[0] < 1e-3


def test_add_position_encoding_on_lod_and_padded_input():
    x = rng.randn(5, 4).astype("float32")

    def build():
        return [L.add_position_encoding(fluid.data("x", [None, 4], "float32", lod_level=1), alpha=1.0, beta=1.0),
                L.add_position_encoding(fluid.data("p", [None, 3, 4], "float32"), alpha=0.0, beta=1.0)]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
    got, padded = fluid.Executor(PLACE).run(main, feed={"x": seqs(x, [2, 3]), "p": np.zeros((2, 3, 4), "float32")},
                                            fetch_list=outs, return_numpy=False)
    pos = np.array([0, 1, 0, 1, 2])[:, None] / 10000.0 ** np.array([0.0, 1.0])
    np.testing.assert_allclose(np.array(got), x + np.hstack([np.sin(pos), np.cos(pos)]), rtol=1e-5, atol=1e-6)
    assert got.recursive_sequence_lengths() == [[2, 3]]
    pos = np.arange(3)[:, None] / 10000.0 ** np.array([0.0, 1.0])
    np.testing.assert_allclose(np.array(padded)[1], np.hstack([np.sin(pos), np.cos(pos)]), rtol=1e-5, atol=1e-6)


def test_sequence_scatter_and_im2sequence_layers():
    x = np.zeros((3, 5), "float32")
    image = np.arange(2 * 1 * 3 * 3, dtype="float32").reshape(2, 1, 3, 3)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        scattered = L.sequence_scatter(fluid.data("x", [None, 5]), fluid.data("ids", [None, 1], "int64", lod_level=1),
                                       fluid.data("upd", [None, 1], "float32", lod_level=1))
        img = fluid.data("img", [None, 1, 3, 3])
        cols = L.im2sequence(img, filter_size=2, stride=1, padding=[0, 0])
        real = L.im2sequence(img, filter_size=[2, 2], input_image_size=fluid.data("size", [None, 2]), out_stride=1)
    assert scattered.lod_level == 0 and cols.lod_level == 1 and list(cols.shape) == [-1, 4]
    ids = seqs([[1], [1], [4], [0]], [2, 0, 2], "int64")
    upd = seqs([[1.0], [2.0], [3.0], [4.0]], [2, 0, 2])
    out, c, r = fluid.Executor(PLACE).run(main, feed={"x": x, "ids": ids, "upd": upd, "img": image,
                                                      "size": np.array([[3, 3], [2, 3]], "float32")},
                                          fetch_list=[scattered, cols, real], return_numpy=False)
    expected = np.zeros((3, 5))
    expected[0, 1], expected[2, 4], expected[2, 0] = 3.0, 3.0, 4.0
    np.testing.assert_array_equal(np.array(out), expected)
    assert c.recursive_sequence_lengths() == [[4, 4]] and r.recursive_sequence_lengths() == [[4, 2]]
    np.testing.assert_array_equal(np.array(c)[:2], [[0, 1, 3, 4], [1, 2, 4, 5]])


def test_layer_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        with pytest.raises(TypeError, match="The data type of 'input' in row_conv must be"):
            L.row_conv(fluid.data("i", [None, 3], "int64"), 2)
        with pytest.raises(ValueError, match=r"im2sequence: 'padding' must be an int or a list of 2 or 4 ints"):
            L.im2sequence(fluid.data("img", [None, 1, 4, 4]), 2, padding=[1, 1, 1])
        with pytest.raises(TypeError, match="The data type of 'index' in sequence_scatter must be"):
            L.sequence_scatter(fluid.data("s", [None, 4]), x, x)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        odd = L.add_position_encoding(fluid.data("odd", [None, 3], "float32", lod_level=1), 1.0, 1.0)
    with pytest.raises(ValueError, match="feature size of AddPositionEncodingOp only support even"):
        fluid.Executor(PLACE).run(main, feed={"odd": seqs(np.zeros((2, 3)), [2])}, fetch_list=[odd])
