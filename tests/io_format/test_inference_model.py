"""Inference models as fluid writes them: ProgramDesc ``__model__`` / ``.pdmodel`` files, feed and fetch ops,
parameter files; Paddle 2.6.2's models run in minifluid with Paddle's outputs."""
import os
import shutil

import numpy as np
import pytest

import minifluid as fluid
from minifluid.framework.program_desc import UnsupportedModelError
from minifluid.framework.proto import framework_pb2 as pb


def _run(prog, feeds, fetches, x):
    (out,) = fluid.Executor().run(prog, feed={feeds[0]: x}, fetch_list=fetches)
    return out


@pytest.mark.parametrize("where, kwargs", [("mlp_v1", {}), ("mlp_combined", {"params_filename": "params"})])
def test_paddle_1x_layout_runs_with_paddles_outputs(paddle_files, expected, where, kwargs):
    with fluid.scope_guard(fluid.Scope()):
        prog, feeds, fetches = fluid.io.load_inference_model(os.path.join(paddle_files, where), fluid.Executor(),
                                                             **kwargs)
        assert feeds == ["x"] and len(fetches) == 1 and fetches[0].name.startswith("save_infer_model/scale_0.tmp_")
        np.testing.assert_allclose(_run(prog, feeds, fetches, expected["mlp_x"]), expected["mlp_out"], rtol=1e-5,
                                   atol=1e-6)


def test_paddle_2x_pdmodel_and_pdiparams_run_with_paddles_outputs(paddle_files, expected):
    prefix = os.path.join(paddle_files, "conv")
    for args, kwargs in (((prefix,), {}),
                         ((paddle_files,), {"model_filename": "conv.pdmodel", "params_filename": "conv.pdiparams"})):
        with fluid.scope_guard(fluid.Scope()):
            prog, feeds, fetches = fluid.io.load_inference_model(*args, fluid.Executor(), **kwargs)
            assert [op.type for op in prog.global_block().ops] == [
                "feed", "conv2d", "elementwise_add", "batch_norm", "relu", "pool2d", "mul", "elementwise_add",
                "softmax", "scale", "fetch"]
            np.testing.assert_allclose(_run(prog, feeds, fetches, expected["conv_x"]), expected["conv_out"],
                                       rtol=1e-5, atol=1e-6)


def test_model_and_params_from_memory(paddle_files, expected):
    with open(os.path.join(paddle_files, "mlp_combined", "__model__"), "rb") as f:
        model = f.read()
    with open(os.path.join(paddle_files, "mlp_combined", "params"), "rb") as f:
        params = f.read()
    with fluid.scope_guard(fluid.Scope()):
        prog, feeds, fetches = fluid.io.load_inference_model(None, fluid.Executor(), model, params)
        np.testing.assert_allclose(_run(prog, feeds, fetches, expected["mlp_x"]), expected["mlp_out"], rtol=1e-5,
                                   atol=1e-6)
    with pytest.raises(ValueError, match="The path of params cannot be None when the directory path is None"):
        fluid.io.load_inference_model(None, fluid.Executor(), model)


def test_parse_from_string_and_desc_serialize_round_trip(paddle_files):
    with open(os.path.join(paddle_files, "conv.pdmodel"), "rb") as f:
        program = fluid.Program.parse_from_string(f.read())
    data = program.desc.serialize_to_string()
    again = fluid.Program.parse_from_string(data)
    assert again.desc.serialize_to_string() == data
    assert program.desc.get_feed_target_names() == ["img"]
    bn = next(op for op in again.global_block().ops if op.type == "batch_norm")
    assert bn.attr("is_test") is True and abs(bn.attr("epsilon") - 1e-5) < 1e-9
    assert again.global_block().var("img").shape == (-1, 1, 6, 6) and again.global_block().var("img").need_check_feed


def _edited_model(paddle_files, tmp_path, edit):
    desc = pb.ProgramDesc()
    with open(os.path.join(paddle_files, "conv.pdmodel"), "rb") as f:
        desc.ParseFromString(f.read())
    edit(desc.blocks[0])
    shutil.copy(os.path.join(paddle_files, "conv.pdiparams"), tmp_path / "m.pdiparams")
    (tmp_path / "m.pdmodel").write_bytes(desc.SerializeToString())
    return str(tmp_path / "m")


def test_unknown_op_types_are_listed_with_the_model_file(paddle_files, tmp_path):
    def rename(block):
        block.ops[4].type = "my_fused_op"
        block.ops[5].type = "tensorrt_engine"
    prefix = _edited_model(paddle_files, tmp_path, rename)
    with pytest.raises(UnsupportedModelError, match=r"m\.pdmodel uses operator type\(s\) minifluid does not "
                                                    r"implement: my_fused_op, tensorrt_engine"):
        fluid.io.load_inference_model(prefix, fluid.Executor())


def test_an_op_slot_minifluid_lacks_is_named(paddle_files, tmp_path):
    def extra_input(block):
        block.ops[5].inputs.add(parameter="Mask", arguments=["x"])
    prefix = _edited_model(paddle_files, tmp_path, extra_input)
    with pytest.raises(UnsupportedModelError, match="operator 'pool2d' uses input slot 'Mask'"):
        fluid.io.load_inference_model(prefix, fluid.Executor())


def test_not_a_program_file_is_clear(tmp_path):
    (tmp_path / "__model__").write_bytes(b"\x01\x02garbage")
    with pytest.raises(ValueError, match=r"__model__ is not a fluid program \(a ProgramDesc protobuf\)"):
        fluid.io.load_inference_model(str(tmp_path), fluid.Executor())
    with pytest.raises(ValueError, match="There is no directory named"):
        fluid.io.load_inference_model(str(tmp_path / "nothing"), fluid.Executor())


def _trained_net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data("img", [None, 1, 6, 6])
        conv = fluid.layers.conv2d(img, 3, 3, padding=1)
        norm = fluid.layers.batch_norm(conv, act="relu")
        pooled = fluid.layers.pool2d(norm, 2, pool_stride=2)
        out = fluid.layers.fc(fluid.layers.cast(pooled, "float32"), 4, act="softmax")
    return main, startup, img, out


def test_minifluid_model_is_fluids_format_and_round_trips(tmp_path):
    main, startup, img, out = _trained_net()
    exe, x = fluid.Executor(), np.random.RandomState(3).rand(2, 1, 6, 6).astype("float32")
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        (want,) = exe.run(main.clone(for_test=True), feed={"img": x}, fetch_list=[out])
        fluid.io.save_inference_model(str(tmp_path), ["img"], [out], exe, main, params_filename="params")
    desc = pb.ProgramDesc()
    desc.ParseFromString((tmp_path / "__model__").read_bytes())
    block = desc.blocks[0]
    feed, fetch = block.ops[0], block.ops[-1]
    assert (feed.type, feed.inputs[0].arguments, feed.outputs[0].arguments) == ("feed", ["feed"], ["img"])
    assert (fetch.type, fetch.outputs[0].arguments) == ("fetch", ["fetch"])
    assert fetch.inputs[0].arguments[0].startswith("save_infer_model/scale_0.tmp_")  # fluid's unique_name
    holders = {v.name: v for v in block.vars if v.name in ("feed", "fetch")}
    assert holders["feed"].type.type == pb.VarType.FEED_MINIBATCH and holders["feed"].persistable
    assert holders["fetch"].type.type == pb.VarType.FETCH_LIST
    assert [v.name for v in block.vars] == sorted(v.name for v in block.vars)
    attrs = {a.name: a for op in block.ops if op.type == "cast" for a in op.attrs}
    assert attrs["out_dtype"].type == pb.INT and attrs["out_dtype"].i == pb.VarType.FP32
    scale = {a.name: a for op in block.ops if op.type == "scale" for a in op.attrs}
    assert scale["scale"].type == pb.FLOAT and scale["bias_after_scale"].type == pb.BOOLEAN
    assert sorted(os.listdir(tmp_path)) == ["__model__", "params"]
    with fluid.scope_guard(fluid.Scope()):
        prog, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe, params_filename="params")
        np.testing.assert_allclose(_run(prog, feeds, fetches, x), want, rtol=1e-6)
        cast = next(op for op in prog.global_block().ops if op.type == "cast")
        assert cast.attr("out_dtype") == "float32"


def test_paddle_static_2x_save_and_load_inference_model(tmp_path):
    from minifluid.compat import static_ns as static
    main, startup, img, out = _trained_net()
    exe, x = fluid.Executor(), np.random.RandomState(4).rand(2, 1, 6, 6).astype("float32")
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        (want,) = exe.run(main.clone(for_test=True), feed={"img": x}, fetch_list=[out])
        static.save_inference_model(str(tmp_path / "infer" / "net"), [img], [out], exe, program=main)
    assert sorted(os.listdir(tmp_path / "infer")) == ["net.pdiparams", "net.pdmodel"]
    with fluid.scope_guard(fluid.Scope()):
        prog, feeds, fetches = static.load_inference_model(str(tmp_path / "infer" / "net"), exe)
        np.testing.assert_allclose(_run(prog, feeds, fetches, x), want, rtol=1e-6)
    with pytest.raises(ValueError, match="should be a Variable or a list of Variable"):
        static.save_inference_model(str(tmp_path / "n"), ["img"], [out], exe, program=main)
    with pytest.raises(ValueError, match="There is no model file"):
        static.load_inference_model(str(tmp_path / "infer" / "nothing"), exe)
