"""Files minifluid 0.1 wrote (numpy .npy / .npz parameters, a pickled Program as __model__) still load, with a
DeprecationWarning; a pickled __model__ is read with graph classes only, so a crafted one cannot run code."""
import os
import pickle

import numpy as np
import pytest

import minifluid as fluid
from minifluid.io_format.tensor_file import ModelFormatError
from minifluid.io_format.safe_pickle import UnsafePickleError


def _net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4])
        out = fluid.layers.fc(fluid.layers.fc(x, 5, act="relu"), 3, act="softmax")
    return main, startup, out


def _write_like_minifluid_0_1(dirname, main, out, scope, combined=False):
    """minifluid 0.1's save_inference_model: a pickled pruned Program and numpy parameter files."""
    infer = main.clone(for_test=True)
    infer._minifluid_feed_target_names, infer._minifluid_fetch_target_names = ["x"], [out.name]
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, "__model__"), "wb") as f:
        pickle.dump(infer, f)
    values = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}
    if combined:
        with open(os.path.join(dirname, "params"), "wb") as f:
            np.savez(f, **values)
    for name, value in values.items():
        with open(os.path.join(dirname, name), "wb") as f:
            np.save(f, value, allow_pickle=False)


@pytest.mark.parametrize("combined", [False, True])
def test_old_inference_model_loads_with_a_deprecation_warning(tmp_path, combined):
    main, startup, out = _net()
    exe, x = fluid.Executor(), np.random.RandomState(0).rand(3, 4).astype("float32")
    with fluid.scope_guard(fluid.Scope()) as _:
        exe.run(startup)
        (want,) = exe.run(main, feed={"x": x}, fetch_list=[out])
        _write_like_minifluid_0_1(str(tmp_path), main, out, fluid.global_scope(), combined)
    kind = "numpy .npz archive" if combined else "numpy .npy file"
    with fluid.scope_guard(fluid.Scope()), pytest.warns(DeprecationWarning) as caught:
        prog, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe,
                                                             params_filename="params" if combined else None)
        (got,) = exe.run(prog, feed={feeds[0]: x}, fetch_list=fetches)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    messages = [str(w.message) for w in caught]
    assert any("pickled minifluid Program" in m for m in messages) and any(kind in m for m in messages)


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_crafted_pickled_model_is_refused_without_running_code(tmp_path):
    marker = tmp_path / "pwned"
    main, _, out = _net()
    main._minifluid_feed_target_names, main._minifluid_fetch_target_names = ["x"], [out.name]
    main.payload = _Payload(marker)
    (tmp_path / "__model__").write_bytes(pickle.dumps(main))
    with pytest.warns(DeprecationWarning), pytest.raises(ModelFormatError, match="posix.system|os.system"):
        fluid.io.load_inference_model(str(tmp_path), fluid.Executor())
    assert not marker.exists()
    (tmp_path / "__model__").write_bytes(pickle.dumps({"not": "a program"}))
    with pytest.warns(DeprecationWarning), pytest.raises(ModelFormatError, match="pickle of a dict"):
        fluid.io.load_inference_model(str(tmp_path), fluid.Executor())


def test_old_npy_holding_objects_is_refused(tmp_path):
    main = fluid.Program()
    w = main.global_block().create_var(name="w", shape=[2], dtype="float32", persistable=True)
    with open(tmp_path / "w", "wb") as f:
        np.save(f, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.warns(DeprecationWarning), pytest.raises(ModelFormatError, match="without unpickling"):
        fluid.io.load_vars(fluid.Executor(), str(tmp_path), main, vars=[w])
    assert isinstance(UnsafePickleError("x"), pickle.UnpicklingError)
