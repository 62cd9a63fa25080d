"""The paddle/fluid names Paddle's own unit tests (and the scripts of the era) reach for: star imports of
the compat modules, paddle.compat / framework / static, fluid.generator, fluid.reader's switches,
core.VarDesc.VarType, places' _type/_equals, LoDTensor._place(), fluid.executor._as_lodtensor."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.errors import ReaderKilledError


@pytest.mark.parametrize("module, names", [
    ("paddle.io", {"Dataset", "DataLoader", "BatchSampler", "WeightedRandomSampler", "get_worker_info"}),
    ("paddle.fluid", {"Program", "Executor", "data", "layers"}),
    ("paddle.fluid.core", {"LoDTensor", "EOFException", "VarDesc"}),
    ("paddle.fluid.reader", {"GeneratorLoader", "keep_data_loader_order", "DataLoader"}),
])
def test_star_import_of_a_compat_module_binds_its_public_names(paddle, module, names):
    namespace = {}
    exec(f"from {module} import *", namespace)
    assert names <= set(namespace), sorted(names - set(namespace))
    assert not any(name.startswith("_") for name in namespace if name != "__builtins__")


def test_paddle_compat_text_helpers(paddle):
    import paddle.compat as cpt  # noqa: PLC0415
    assert cpt.to_text(b"abc") == "abc" and cpt.to_bytes("abc") == b"abc"
    assert cpt.to_text([b"a", "b", None]) == ["a", "b", None]
    items = {b"x", b"y"}
    assert cpt.to_text(items, inplace=True) is items and items == {"x", "y"}
    assert cpt.to_bytes({"k": "v"}) == {b"k": b"v"}
    assert cpt.round(2.5) == 3.0 and cpt.round(-2.5) == -3.0 and cpt.round(1.25, 1) == 1.3
    assert cpt.floor_division(7, 2) == 3 and cpt.get_exception_message(ValueError("boom")) == "boom"
    assert cpt.long_type is int


def test_set_default_dtype_drives_static_data_but_not_fluid_data(paddle):
    import paddle.fluid as pfluid  # noqa: PLC0415
    from paddle.fluid import core  # noqa: PLC0415
    try:
        with pfluid.program_guard(pfluid.Program(), pfluid.Program()):
            assert paddle.static.data("a", [2, 3]).dtype == core.VarDesc.VarType.FP32
            paddle.set_default_dtype("float64")
            assert paddle.get_default_dtype() == "float64"
            assert paddle.static.data("b", [2, 3]).dtype == core.VarDesc.VarType.FP64
            assert pfluid.data("c", [2, 3]).dtype == "float32"  # fluid.data's own default
            assert paddle.to_tensor([1.5]).numpy().dtype == np.float64
            with pytest.raises(TypeError, match="only supports \\[float16, float32, float64\\]"):
                paddle.set_default_dtype("int32")
            paddle.set_default_dtype(np.float16)
            assert paddle.get_default_dtype() == "float16"
    finally:
        paddle.set_default_dtype("float32")


def test_paddle_static_has_every_fluid_name():
    from minifluid.compat import static_ns
    fluid_names = [n for n in static_ns.__all__ if n not in static_ns.STATIC_ONLY]
    assert fluid_names == fluid.__all__, "add the new name to minifluid/compat/static_ns.py's __all__ too"
    assert all(hasattr(static_ns, n) for n in static_ns.STATIC_ONLY)
    assert static_ns.Executor is fluid.Executor and static_ns.data is not fluid.data


def test_var_type_enum_values_work_as_dtypes():
    VarType = fluid.core.VarDesc.VarType
    assert np.dtype(VarType.FP32) == np.float32 and np.zeros(2, dtype=VarType.INT64).dtype == np.int64
    assert int(VarType.FP32) == 5 and int(VarType.BOOL) == 0 and repr(VarType.FP64) == "VarType.FP64"
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 2], dtype=VarType.INT32)
        assert x.dtype == VarType.INT32 == "int32" and type(x.dtype) is str
        assert fluid.layers.cast(x, VarType.FP64).dtype == "float64"


def test_manual_program_seed_makes_new_programs_initialise_alike(paddle):
    import paddle.fluid as pfluid  # noqa: PLC0415

    def init_weight():
        main, startup = pfluid.Program(), pfluid.Program()
        with pfluid.program_guard(main, startup):
            pfluid.layers.fc(pfluid.data("x", [None, 4]), size=3, param_attr=pfluid.ParamAttr(name="w"))
        scope = pfluid.Scope()
        pfluid.Executor(pfluid.CPUPlace()).run(startup, scope=scope)
        return np.array(scope.find_var("w").get_tensor())

    try:
        paddle.framework.random._manual_program_seed(7)
        first = init_weight()
        np.random.seed(12345)  # the programs' own seed decides, not numpy's global state
        assert np.array_equal(first, init_weight())
        assert pfluid.Program().random_seed == 7
    finally:
        paddle.framework.random._manual_program_seed(0)
    assert pfluid.Program().random_seed == 0


def test_generator_state_round_trips(paddle):
    import paddle.fluid.generator as generator  # noqa: PLC0415
    gen = generator.Generator()
    gen.manual_seed(123123143)
    assert gen.initial_seed() == 123123143
    state = gen.get_state()
    first = [gen.random() for _ in range(3)]
    gen.set_state(state)
    assert [gen.random() for _ in range(3)] == first
    assert all(0 <= v < 2**64 for v in first) and len(set(first)) == 3
    assert generator.Generator().initial_seed() != generator.Generator().initial_seed()
    with pytest.raises(ValueError, match="only support generator with CPUPlace"):
        generator.Generator(place=fluid.CUDAPlace(0))


def test_places_type_and_equals():
    cpu, gpu0, gpu1, pinned = fluid.CPUPlace(), fluid.CUDAPlace(0), fluid.CUDAPlace(1), fluid.CUDAPinnedPlace()
    assert len({cpu._type(), gpu0._type(), pinned._type()}) == 3 and gpu0._type() == gpu1._type()
    assert cpu._equals(fluid.CPUPlace()) and not cpu._equals(gpu0) and not gpu0._equals(gpu1)
    held = fluid.core.Place()
    held.set_place(gpu1)
    assert held.is_gpu_place() and held.gpu_device_id() == 1 and held._type() == gpu1._type()
    assert held._equals(gpu1) and gpu1._equals(held) and not held._equals(gpu0)
    assert fluid.core.get_cuda_device_count() == (len(fluid.cuda_places()) if fluid.is_compiled_with_cuda() else 0)


def test_lod_tensor_place_is_a_method_like_fluid():
    t = fluid.LoDTensor()
    t.set(np.ones([2, 2], "float32"), fluid.CPUPlace())
    assert t._place()._equals(fluid.CPUPlace())
    bare = fluid.LoDTensor(np.zeros(3))  # no place given: numpy data lives on the CPU
    assert bare._place() == fluid.CPUPlace()


def test_as_lodtensor():
    from minifluid.executor import _as_lodtensor  # noqa: PLC0415
    t = _as_lodtensor(np.arange(6, dtype="int64").reshape(3, 2), fluid.CPUPlace())
    assert t.shape() == [3, 2] and t._dtype() == np.int64 and t._place() == fluid.CPUPlace()
    assert np.asarray(_as_lodtensor([[1, 2]], fluid.CPUPlace(), "float32")).dtype == np.float32
    assert _as_lodtensor(3.0, fluid.CPUPlace(), fluid.core.VarDesc.VarType.FP64).shape() == [1]
    with pytest.raises(AssertionError, match="dtype should be given"):
        _as_lodtensor([1, 2], fluid.CPUPlace())
    with pytest.raises(TypeError, match="not supported"):
        _as_lodtensor({"a": 1}, fluid.CPUPlace(), "float32")


def test_a_failing_readers_error_is_both_fluid_1_8s_and_paddle_2s():
    error = ReaderKilledError("Blocking queue is killed because the data reader raises an exception.")
    assert isinstance(error, fluid.core.EnforceNotMet) and isinstance(error, SystemError)

    def bad_reader():
        yield (np.ones([1, 2], "float32"),)
        raise KeyError("gone")

    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 2])
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2)
    loader.set_batch_generator(bad_reader, places=fluid.CPUPlace())
    with pytest.raises(fluid.core.EnforceNotMet) as caught:
        for _ in loader():
            pass
    assert isinstance(caught.value.__cause__, KeyError)


def test_fluid_data_refuses_dygraph_mode():
    with fluid.dygraph.guard():
        for make in (fluid.data, fluid.layers.data):
            with pytest.raises(AssertionError, match="only supported in static graph mode"):
                make("x", [2, 3])
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        assert fluid.data("x", [2, 3]).shape == (2, 3)


def test_tracer_generates_unique_names():
    with fluid.dygraph.guard():
        tracer = fluid.framework._dygraph_tracer()
        assert tracer._generate_unique_name() == "dygraph_tmp_0"
        assert tracer._generate_unique_name("dygraph_tmp") == "dygraph_tmp_1"
        assert tracer._generate_unique_name("x") == "x_0"
    assert fluid.framework._dygraph_tracer() is None
    assert fluid.framework.grad_var_name("w") == "w@GRAD"


def test_fluid_binds_its_dygraph_layers_at_the_top_level_as_fluid_1_8_does():
    for name in ("BatchNorm", "Conv2D", "Conv2DTranspose", "Dropout", "Embedding", "Layer", "LayerNorm", "Linear",
                 "PRelu", "Pool2D"):
        assert getattr(fluid, name) is getattr(fluid.dygraph, name)
    with fluid.dygraph.guard():
        emb = fluid.Embedding(size=[10, 3])
        out = fluid.LayerNorm([3])(emb(fluid.dygraph.to_variable(np.array([[1], [4]], "int64"))))
        assert list(out.shape) == [2, 1, 3]


def test_fluid_layers_rnn_is_the_function_and_its_module_imports_too(paddle):
    import paddle.fluid.layers as layers  # noqa: PLC0415
    from paddle.fluid.layers.rnn import BeamSearchDecoder, GRUCell, dynamic_lstm  # noqa: PLC0415
    from paddle.fluid.layers import rnn  # noqa: PLC0415
    from paddle.fluid.layers.utils import map_structure  # noqa: PLC0415
    assert callable(rnn) and rnn is layers.rnn and rnn.__name__ == "rnn"  # not shadowed by the module
    assert GRUCell is layers.GRUCell and BeamSearchDecoder is layers.BeamSearchDecoder
    assert dynamic_lstm is layers.dynamic_lstm
    assert map_structure(lambda v: v * 2, [1, (2, 3)]) == [2, (4, 6)]
