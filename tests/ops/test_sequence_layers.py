"""The sequence (LoD) layers through the Executor: fluid 1.8 signatures, lod_level tracked while building,
the ops without a gradient (sequence_mask, sequence_enumerate), errors, fluid.embedding,
fluid.create_random_int_lodtensor, and a sequence_conv_pool text classifier that learns."""
import numpy as np
import pytest

import minifluid as fluid

PLACE = fluid.CPUPlace()


def run(build, feed, return_numpy=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
    exe, scope = fluid.Executor(PLACE), fluid.Scope()
    exe.run(startup, scope=scope)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return outs, exe.run(main, feed=feed, fetch_list=list(outs), scope=scope, return_numpy=return_numpy)


def seqs(values, lengths, dtype="float32"):
    return fluid.create_lod_tensor(np.asarray(values, dtype).reshape(sum(lengths), -1), [lengths], PLACE)


def test_lod_levels_follow_fluid_while_building():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 4], "float32", lod_level=2)
        pooled = fluid.layers.sequence_pool(x, "sum")
        conv = fluid.layers.sequence_conv(fluid.data("y", [None, 4], "float32", lod_level=1), 3)
        padded, length = fluid.layers.sequence_pad(conv, fluid.layers.fill_constant([1], "float32", 0.0))
        unpadded = fluid.layers.sequence_unpad(padded, length)
        reset = fluid.layers.lod_reset(fluid.data("z", [None, 1], "float32"), target_lod=[0, 1])
    assert (pooled.lod_level, conv.lod_level, padded.lod_level, unpadded.lod_level, reset.lod_level) == (1, 1, 0, 1, 1)
    assert fluid.layers.lod_append.__module__ == "minifluid.layers.sequence"


def test_sequence_pool_on_an_empty_sequence_gives_pad_value_and_first_last_steps():
    def build():
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        return [fluid.layers.sequence_pool(x, "average", pad_value=-7.0), fluid.layers.sequence_first_step(x),
                fluid.layers.sequence_last_step(x)]
    data = np.arange(10, dtype="float32").reshape(5, 2)
    _, (avg, first, last) = run(build, {"x": seqs(data, [2, 0, 3])}, return_numpy=True)
    np.testing.assert_allclose(avg, [[1, 2], [-7, -7], [6, 7]])
    np.testing.assert_allclose(first, [[0, 1], [0, 0], [4, 5]])
    np.testing.assert_allclose(last, [[2, 3], [0, 0], [8, 9]])


def test_sequence_mask_and_enumerate():
    def build():
        lengths = fluid.data("n", [None], "int64")
        ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
        return [fluid.layers.sequence_mask(lengths, maxlen=4, dtype="float32"),
                fluid.layers.sequence_mask(lengths), fluid.layers.sequence_enumerate(ids, win_size=3, pad_value=-1)]
    ids = seqs([1, 2, 3, 4, 5], [3, 2], "int64")
    _, (mask, mask_default, windows) = run(build, {"n": np.array([2, 0, 3]), "ids": ids})
    np.testing.assert_array_equal(np.asarray(mask), [[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]])
    assert np.asarray(mask).dtype == np.float32 and np.asarray(mask_default).shape == (3, 3)
    np.testing.assert_array_equal(np.asarray(windows), [[1, 2, 3], [2, 3, -1], [3, -1, -1], [4, 5, -1], [5, -1, -1]])
    assert windows.recursive_sequence_lengths() == [[3, 2]]


def test_sequence_ops_name_what_is_wrong():
    def build():
        x = fluid.data("x", [None, 2], "float32")  # lod_level 0: sequence_pool refuses it while building
        return fluid.layers.sequence_pool(x, "max")
    with pytest.raises(ValueError, match=r"LoD level of Input\(X\) of SequencePoolOp should be larger than 0"):
        run(build, {})

    def softmax():
        return fluid.layers.sequence_softmax(fluid.data("x", [None, 1], "float32"))
    with pytest.raises(ValueError, match=r"Input\(X\) Tensor of SequenceSoftmaxOp does not contain LoD"):
        run(softmax, {"x": np.ones((3, 1), "float32")})

    def reshape():
        return fluid.layers.sequence_reshape(fluid.data("x", [None, 3], "float32", lod_level=1), new_dim=2)
    with pytest.raises(ValueError, match="can be divided by new_dim with no remainder"):
        run(reshape, {"x": seqs(np.ones(9), [1, 2])})
    with pytest.raises(ValueError, match="y and target_lod should not be both none"):
        run(lambda: fluid.layers.lod_reset(fluid.data("x", [None, 1], "float32")), {})


def test_fluid_embedding_takes_ids_of_any_shape_and_keeps_their_lod():
    def build():
        ids = fluid.data("ids", [None], "int64", lod_level=1)
        grid = fluid.data("grid", [None, 3], "int64")
        return [fluid.embedding(ids, size=[10, 4], padding_idx=-1, param_attr="table"),
                fluid.embedding(grid, size=[10, 4], param_attr="table")]
    ids = fluid.create_lod_tensor(np.array([1, 9, 2], "int64"), [[2, 1]], PLACE)
    _, (by_id, by_grid) = run(build, {"ids": ids, "grid": np.array([[1, 9, 2]], "int64")})
    assert by_id.recursive_sequence_lengths() == [[2, 1]] and np.asarray(by_grid).shape == (1, 3, 4)
    np.testing.assert_array_equal(np.asarray(by_id)[1], 0)  # padding_idx -1 is row 9
    np.testing.assert_array_equal(np.asarray(by_grid)[0, [0, 2]], np.asarray(by_id)[[0, 2]])
    with pytest.raises(TypeError, match=r"'input' in fluid.embedding must be \['int64'\]"):
        run(lambda: fluid.embedding(fluid.data("f", [None], "float32"), size=[3, 2]), {})


def test_create_random_int_lodtensor():
    t = fluid.create_random_int_lodtensor([[2, 3]], [1], PLACE, low=4, high=5)
    assert t.recursive_sequence_lengths() == [[2, 3]] and t.shape() == [5, 1]
    values = np.asarray(t)
    assert values.dtype == np.int64 and set(np.unique(values)) <= {4, 5}
    many = np.asarray(fluid.create_random_int_lodtensor([[400]], [1], PLACE, low=0, high=1))
    assert set(np.unique(many)) == {0, 1}  # high is included, as in fluid


def test_a_sequence_conv_pool_classifier_learns_which_word_marks_the_class():
    """Texts of uneven length; class 1 texts hold word 1 somewhere. Adam on nets.sequence_conv_pool."""
    rng = np.random.default_rng(0)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        words = fluid.data("words", [None, 1], "int64", lod_level=1)
        label = fluid.data("label", [None, 1], "int64")
        emb = fluid.layers.embedding(words, size=[20, 8])
        pooled = fluid.nets.sequence_conv_pool(emb, num_filters=8, filter_size=3, act="tanh", pool_type="max")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(fluid.layers.fc(pooled, 2, act="softmax"), label))
        fluid.optimizer.Adam(0.05).minimize(loss)
    exe, scope = fluid.Executor(PLACE), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(60):
        lengths = rng.integers(1, 9, 16)
        labels = rng.integers(0, 2, 16)
        ids = rng.integers(2, 20, lengths.sum())
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        ids[(starts + rng.integers(0, lengths))[labels == 1]] = 1
        feed = {"words": fluid.create_lod_tensor(ids.reshape(-1, 1), [lengths.tolist()], PLACE),
                "label": labels.reshape(-1, 1)}
        losses.append(float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]))
    assert np.mean(losses[:5]) > 0.5 and np.mean(losses[-5:]) < 0.1, losses
