"""DataFeeder (REFERENCE E23-E29, seed 004)."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.lod_tensor import LoDTensor


@pytest.fixture
def prog():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        yield main


def test_seed_004_simple_usage(prog):
    img = fluid.layers.data(name="image", shape=[1, 28, 28])
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    feeder = fluid.DataFeeder([img, label], fluid.CPUPlace())
    result = feeder.feed([([0] * 784, [9]), ([1] * 784, [1])])
    assert set(result) == {"image", "label"}
    assert all(isinstance(t, LoDTensor) for t in result.values())
    image = np.asarray(result["image"])
    assert image.shape == (2, 1, 28, 28) and image.dtype == np.float32  # E25: flat 784 -> [2,1,28,28]
    assert np.all(image[0] == 0) and np.all(image[1] == 1)
    lab = np.asarray(result["label"])
    assert lab.dtype == np.int64 and lab.tolist() == [[9], [1]]


def test_feed_runs_in_the_executor(prog):
    x = fluid.data(name="x", shape=[None, 3], dtype="float32")
    out = fluid.layers.mean(x)
    feeder = fluid.DataFeeder([x], fluid.CPUPlace(), program=prog)
    exe = fluid.Executor(fluid.CPUPlace())
    (value,) = exe.run(prog, feed=feeder.feed([([1, 2, 3],), ([4, 5, 6],)]), fetch_list=[out])
    assert np.allclose(value, 3.5)


def test_feed_list_by_name_and_bad_elements(prog):
    fluid.data(name="a", shape=[None, 2], dtype="float32")
    feeder = fluid.DataFeeder(["a"], fluid.CPUPlace(), program=prog)
    assert feeder.feed_names == ["a"]
    with pytest.raises(TypeError, match="Feed list should contain a list of variable"):
        fluid.DataFeeder([3], fluid.CPUPlace(), program=prog)


def test_field_count_mismatch(prog):
    a = fluid.data(name="a", shape=[None, 1], dtype="float32")
    b = fluid.data(name="b", shape=[None, 1], dtype="float32")
    feeder = fluid.DataFeeder([a, b], fluid.CPUPlace())
    with pytest.raises(AssertionError, match=r"The number of fields in data \(1\) does not match len\(feed_list\) \(2\)"):
        feeder.feed([([1.0],)])


def test_dtype_cast(prog):
    f = fluid.data(name="f", shape=[None, 2], dtype="float32")
    i = fluid.data(name="i", shape=[None, 1], dtype="int64")
    out = fluid.DataFeeder([f, i], fluid.CPUPlace()).feed([(np.array([1.5, 2.5], "float64"), [3])])
    assert np.asarray(out["f"]).dtype == np.float32 and np.asarray(out["i"]).dtype == np.int64


def test_reshape_rules(prog):
    one_neg = fluid.layers.data(name="lbl", shape=[1], dtype="int64")  # [-1, 1]
    two_neg = fluid.data(name="free", shape=[None, None], dtype="float32")
    feeder = fluid.DataFeeder([one_neg, two_neg], fluid.CPUPlace())
    out = feeder.feed([(1, [1.0, 2.0, 3.0]), (2, [4.0, 5.0, 6.0])])
    assert np.asarray(out["lbl"]).shape == (2, 1)  # label [l] -> [N, 1]
    assert np.asarray(out["free"]).shape == (2, 3)  # more than one negative dim: no reshape
    bad = fluid.data(name="bad", shape=[None, 3], dtype="float32")
    with pytest.raises(ValueError, match=r"Reshape error\. What is defined in data layer is \(-1, 3\), but receive"):
        fluid.DataFeeder([bad], fluid.CPUPlace()).feed([([[1.0, 2.0]],), ([[3.0, 4.0]],)])


def test_ragged_dense_field_raises_numpy_value_error(prog):
    x = fluid.data(name="x", shape=[None, 2], dtype="float32")
    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        fluid.DataFeeder([x], fluid.CPUPlace()).feed([([1.0, 2.0],), ([1.0],)])


def test_lod_level_1(prog):
    words = fluid.data(name="words", shape=[None, 1], dtype="int64", lod_level=1)
    out = fluid.DataFeeder([words], fluid.CPUPlace()).feed([([1, 2, 3],), ([4, 5],), ([6, 7, 8, 9],)])
    t = out["words"]
    assert np.asarray(t).shape == (9, 1)
    assert t.recursive_sequence_lengths() == [[3, 2, 4]]
    assert np.asarray(t).ravel().tolist() == list(range(1, 10))


def test_lod_level_2(prog):
    para = fluid.data(name="para", shape=[None, 1], dtype="int64", lod_level=2)
    out = fluid.DataFeeder([para], fluid.CPUPlace()).feed([([[1, 2, 3], [4, 5]],), ([[6, 7, 8, 9]],)])
    t = out["para"]
    assert t.recursive_sequence_lengths() == [[2, 1], [3, 2, 4]]
    assert np.asarray(t).shape == (9, 1)


def test_feed_parallel(prog, monkeypatch):
    x = fluid.data(name="x", shape=[None, 1], dtype="float32")
    feeder = fluid.DataFeeder([x], fluid.CPUPlace())
    dicts = list(feeder.feed_parallel([[([1.0],)], [([2.0],), ([3.0],)]], num_places=2))
    assert [np.asarray(d["x"]).ravel().tolist() for d in dicts] == [[1.0], [2.0, 3.0]]
    with pytest.raises(ValueError, match="The number of devices and number of mini-batches must be same"):
        list(feeder.feed_parallel([[([1.0],)]], num_places=2))
    monkeypatch.setenv("CPU_NUM", "3")
    assert len(feeder._places(None)) == 3


def test_decorate_reader_single_and_multi_device(prog):
    x = fluid.data(name="x", shape=[None, 1], dtype="float32")
    feeder = fluid.DataFeeder([x], fluid.CPUPlace())

    def batches():
        for i in range(5):
            yield [([float(i)],)]

    single = list(feeder.decorate_reader(batches, multi_devices=False)())
    assert len(single) == 5 and np.asarray(single[3]["x"]).tolist() == [[3.0]]
    multi = list(feeder.decorate_reader(batches, multi_devices=True, num_places=2)())
    assert len(multi) == 2 and [len(m) for m in multi] == [2, 2]  # the 5th batch is dropped
    assert np.asarray(multi[1][1]["x"]).tolist() == [[3.0]]
    with pytest.raises(ValueError, match="The data batch which cannot fit for devices will be dropped is not "
                                         "implementation"):
        list(feeder.decorate_reader(batches, multi_devices=True, num_places=2, drop_last=False)())


def test_default_num_places_warns_without_cpu_num(prog, monkeypatch, capsys):
    x = fluid.data(name="x", shape=[None, 1], dtype="float32")
    monkeypatch.delenv("CPU_NUM", raising=False)
    assert fluid.DataFeeder([x], fluid.CPUPlace())._num_places(None) == 1
    assert "CPU_NUM" in capsys.readouterr().err


# --- deferred fields: big samples stacked straight into their destination (shared memory) --------------
def _deferred_vs_converted(specs, samples):
    from minifluid.data.feeder import DeferredField, convert_or_defer, convert_sample_list, make_converters
    converters = make_converters(specs)
    expected = convert_sample_list(samples, converters, AssertionError)
    fields = convert_or_defer(samples, converters, AssertionError)
    built = []
    for field in fields:
        if type(field) is DeferredField:
            out = np.full(field.shape, 7, field.dtype)  # garbage in the destination must not show
            field = field.fill(out)
            assert np.shares_memory(field, out)  # built in place, no copy
        built.append(field)
    for got, want in zip(built, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    return [type(f) is DeferredField for f in fields]


def test_big_dense_fields_are_deferred_and_fill_gives_what_the_feeder_gives():
    from minifluid.data.feeder import SlotSpec
    rng = np.random.RandomState(0)
    samples = [(rng.rand(3, 32, 64), np.array([i], "int32")) for i in range(5)]  # float64 -> float32, 48 KB
    specs = [SlotSpec("image", (-1, 3 * 32 * 64), np.dtype("float32")), SlotSpec("label", (-1, 1), np.dtype("int64"))]
    assert _deferred_vs_converted(specs, samples) == [True, False]  # reshaped to [-1, 6144]; the label is small
    specs[0] = SlotSpec("image", (-1, 3, 32, 64), np.dtype("float32"))
    assert _deferred_vs_converted(specs, samples) == [True, False]


def test_fields_that_are_not_ndarrays_of_one_shape_are_converted_as_before():
    from minifluid.data.feeder import DeferredField, SlotSpec, convert_or_defer, make_converters
    spec = [SlotSpec("x", (-1, 8192), np.dtype("float32"))]
    lists = [(list(np.ones(8192)),), (list(np.zeros(8192)),)]
    assert _deferred_vs_converted(spec, lists) == [False]
    mixed = [(np.ones((2, 4096), "float32"),), (np.ones((4096, 2), "float32"),)]  # same size, not the same shape
    with pytest.raises(ValueError):
        convert_or_defer(mixed, make_converters(spec), AssertionError)
    lod = [SlotSpec("s", (-1, 1), np.dtype("int64"), lod_level=1)]
    fields = convert_or_defer([(np.arange(5000).reshape(5000, 1),)], make_converters(lod), AssertionError)
    assert type(fields[0]) is not DeferredField and fields[0].recursive_sequence_lengths() == [[5000]]
