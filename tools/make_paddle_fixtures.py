"""Write the reference files of tests/io_format/fixtures/paddle262 with real PaddlePaddle 2.6.2.

Runs only where paddle is importable, in a side environment (never a dependency of minifluid):

    python3 -m venv /tmp/pd && /tmp/pd/bin/pip install paddlepaddle==2.6.2 "numpy<2"
    /tmp/pd/bin/python tools/make_paddle_fixtures.py [OUT_DIR]

Every file is written by Paddle's own save functions. The one change made afterwards: the
``op_callstack`` attribute (Python stack traces of the generating run, with paths of this machine) is
emptied in the model files, with Paddle's own protobuf module, so the fixtures hold data only.
What the tests compare against is in ``expected.npz`` (plain numpy, no pickle) and ``lod.json``:

    params/<name>, params_combined   save_vars: one file per variable, and filename= (names sorted); the
                                     types the save op has no CPU kernel for (bool, float16, uint8)
                                     through paddle.save(use_binary_format=True), the same serializer
    mlp_v1/__model__ + files         a fluid 1.x inference model, parameters one per file
    mlp_combined/__model__ + params  the same with params_filename
    conv.pdmodel + conv.pdiparams    paddle.static.save_inference_model (conv2d, batch_norm, pool2d, fc)
    ckpt_p2.*, ckpt_p4.*             paddle.static.save (fluid.save) after one Adam step, pickle protocol 2/4
    linear.pdparams, adam.pdopt      paddle.save of a dygraph Linear's and its Adam's state dicts
    nested.pdtensor, lodtensor.pdtensor   paddle.save of a list/dict holding Tensors, and of a bare LoDTensor
"""
import json
import os
import sys

import numpy as np

try:
    import paddle
    from paddle.base.proto import framework_pb2
except ImportError:
    sys.exit('this script needs real PaddlePaddle: pip install paddlepaddle==2.6.2 "numpy<2" (in a side venv)')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "io_format", "fixtures", "paddle262")
RNG = np.random.RandomState(2026)

# name -> value of the parameter-file fixtures: every element type fluid writes, a 0-d tensor, LoD
PARAM_VALUES = {
    "w_f32": (np.arange(12, dtype="float32").reshape(3, 4) * 0.5 - 2.0),
    "b_f64": np.linspace(-1, 1, 5),
    "ids_i64": np.array([[-3, 0, 7], [2**40, -(2**35), 1]], "int64"),
    "i32": np.array([1, -2, 3, -4], "int32"),
    "i16": np.array([300, -300], "int16"),
    "mask_bool": np.array([[True, False], [False, True]]),
    "h_f16": np.array([0.5, -1.25, 3.0], "float16"),
    "u8": np.arange(250, 256, dtype="uint8"),
    "i8": np.array([[-128, 127], [0, 1]], "int8"),
    "scalar_f32": np.array(3.5, "float32"),
    "seq_lod": RNG.rand(5, 2).astype("float32"),
}
LODS = {"seq_lod": [[0, 1, 3], [0, 2, 3, 5]]}
SAVE_OP_DTYPES = ("float32", "float64", "int32", "int64", "int16", "int8")  # Paddle's save/save_combine kernels


def strip_callstacks(path):
    desc = framework_pb2.ProgramDesc()
    with open(path, "rb") as f:
        desc.ParseFromString(f.read())
    for block in desc.blocks:
        for op in block.ops:
            for attr in op.attrs:
                if attr.name == "op_callstack":
                    del attr.strings[:]
    with open(path, "wb") as f:
        f.write(desc.SerializeToString())


def save_param_files(exe, scope):
    main = paddle.static.Program()
    block = main.global_block()
    made = []
    for name, value in PARAM_VALUES.items():
        tensor = scope.var(name).get_tensor()
        tensor.set(value, paddle.CPUPlace())
        if name in LODS:
            tensor.set_lod(LODS[name])
        if value.dtype.name in SAVE_OP_DTYPES:
            made.append(block.create_var(name=name, shape=value.shape, dtype=value.dtype, persistable=True))
        else:  # the same serializer, reached without the save op (whose CPU kernels lack this type)
            paddle.save(tensor, os.path.join(OUT, "params", name), use_binary_format=True)
    paddle.static.save_vars(exe, os.path.join(OUT, "params"), main, vars=made)
    paddle.static.save_vars(exe, OUT, main, vars=made, filename="params_combined")


def randomize_persistables(program, scope):
    """Non-trivial values everywhere (batch norm's moving variance stays positive)."""
    for var in program.list_vars():
        if var.persistable and var.name not in ("feed", "fetch"):
            tensor = scope.find_var(var.name).get_tensor()
            shape = np.array(tensor).shape
            value = RNG.uniform(0.5, 1.5, shape) if var.name.endswith("w_2") else RNG.uniform(-1, 1, shape)
            tensor.set(value.astype(np.array(tensor).dtype), paddle.CPUPlace())


def mlp():
    x = paddle.static.data("x", [None, 6], "float32")
    hidden = paddle.static.nn.fc(x, 8, activation="relu")
    return x, paddle.static.nn.fc(hidden, 3, activation="softmax")


def conv_net():
    x = paddle.static.data("img", [None, 1, 6, 6], "float32")
    conv = paddle.static.nn.conv2d(x, 4, 3, padding=1)
    norm = paddle.static.nn.batch_norm(conv, act="relu")
    pooled = paddle.nn.functional.max_pool2d(norm, 2, 2)
    return x, paddle.static.nn.fc(pooled, 3, activation="softmax")


def save_v1_model(exe, main, x, out, dirname, params_filename):
    """What fluid 1.x's save_inference_model wrote: the normalized program as __model__ + parameters."""
    os.makedirs(dirname, exist_ok=True)
    program = paddle.static.normalize_program(main, [x], [out])
    with open(os.path.join(dirname, "__model__"), "wb") as f:
        f.write(program.desc.serialize_to_string())
    paddle.static.save_vars(exe, dirname, program, predicate=paddle.static.io.is_persistable,
                            filename=params_filename)
    strip_callstacks(os.path.join(dirname, "__model__"))


def models(exe, scope, expected):
    for build, tag in ((mlp, "mlp"), (conv_net, "conv")):
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            x, out = build()
        exe.run(startup)
        randomize_persistables(main, scope)
        shape = [4] + list(x.shape[1:])
        feed = RNG.rand(*shape).astype("float32")
        test_program = main.clone(for_test=True)
        (result,) = exe.run(test_program, feed={x.name: feed}, fetch_list=[out])
        expected[f"{tag}_x"], expected[f"{tag}_out"] = feed, result
        if tag == "mlp":
            save_v1_model(exe, main, x, out, os.path.join(OUT, "mlp_v1"), None)
            save_v1_model(exe, main, x, out, os.path.join(OUT, "mlp_combined"), "params")
        else:
            paddle.static.save_inference_model(os.path.join(OUT, "conv"), [x], [out], exe, program=main)
            strip_callstacks(os.path.join(OUT, "conv.pdmodel"))


def checkpoints(exe, scope, expected):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x, out = mlp()
        label = paddle.static.data("label", [None, 1], "int64")
        loss = paddle.mean(paddle.nn.functional.cross_entropy(out, label, use_softmax=False))
        paddle.optimizer.Adam(0.01).minimize(loss)
    exe.run(startup)
    exe.run(main, feed={"x": RNG.rand(4, 6).astype("float32"), "label": np.array([[0], [1], [2], [1]])},
            fetch_list=[loss])
    for protocol in (2, 4):
        paddle.static.save(main, os.path.join(OUT, f"ckpt_p{protocol}"), protocol=protocol)
        os.remove(os.path.join(OUT, f"ckpt_p{protocol}.pdmodel"))
    for var in main.list_vars():
        if var.persistable and var.name not in ("feed", "fetch", "x", "label"):
            expected["ckpt/" + var.name] = np.array(scope.find_var(var.name).get_tensor())


def dygraph_files(expected):
    paddle.disable_static()
    paddle.seed(7)
    layer = paddle.nn.Linear(3, 2)
    opt = paddle.optimizer.Adam(0.1, parameters=layer.parameters())
    layer(paddle.rand([4, 3])).mean().backward()
    opt.step()
    paddle.save(layer.state_dict(), os.path.join(OUT, "linear.pdparams"))
    paddle.save(opt.state_dict(), os.path.join(OUT, "adam.pdopt"))
    for key, value in layer.state_dict().items():
        expected["linear/" + key] = value.numpy()
    for key, value in opt.state_dict().items():
        if hasattr(value, "numpy"):
            expected["adam/" + key] = value.numpy()
    weight = layer.weight
    paddle.save([weight, {"bias": layer.bias, "n": 3}], os.path.join(OUT, "nested.pdtensor"))
    paddle.save(weight.value().get_tensor(), os.path.join(OUT, "lodtensor.pdtensor"))
    expected["nested/weight"], expected["nested/bias"] = weight.numpy(), layer.bias.numpy()
    expected["nested/names"] = np.array([weight.name, layer.bias.name])
    paddle.enable_static()


def main():
    os.makedirs(OUT, exist_ok=True)
    paddle.enable_static()
    paddle.seed(2026)  # the checkpoint's initial values: reruns write the same files
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.global_scope()
    expected = {"param/" + k: v for k, v in PARAM_VALUES.items()}
    save_param_files(exe, scope)
    models(exe, scope, expected)
    checkpoints(exe, scope, expected)
    dygraph_files(expected)
    np.savez(os.path.join(OUT, "expected.npz"), **expected)
    with open(os.path.join(OUT, "lod.json"), "w") as f:
        json.dump(LODS, f)
    print("paddle", paddle.__version__, "wrote", OUT)


if __name__ == "__main__":
    main()
