"""fluid's binary LoDTensor files: byte-identical to Paddle 2.6.2's for the same values, and every
field checked when reading (truncated or foreign files name the file, the variable, what was expected)."""
import io
import os

import numpy as np
import pytest

import minifluid as fluid
from minifluid.io_format.tensor_file import ModelFormatError, read_tensor, read_tensors, tensor_to_bytes

PARAM_NAMES = ["w_f32", "b_f64", "ids_i64", "i32", "i16", "mask_bool", "h_f16", "u8", "i8", "scalar_f32", "seq_lod"]
COMBINED = ["b_f64", "i16", "i32", "i8", "ids_i64", "scalar_f32", "seq_lod", "w_f32"]  # the save op's types


def _program_with(values):
    main = fluid.Program()
    block = main.global_block()
    made = [block.create_var(name=n, shape=v.shape, dtype=v.dtype.name, persistable=True) for n, v in values.items()]
    return main, made


def _scope_with(values, lods):
    scope = fluid.Scope()
    for name, value in values.items():
        tensor = scope.var(name).get_tensor()
        tensor.set(value)
        if name in lods:
            tensor.set_lod(lods[name])
            scope.var(name).get_tensor().set_recursive_sequence_lengths(tensor.recursive_sequence_lengths())
    return scope


@pytest.mark.parametrize("name", PARAM_NAMES)
def test_each_element_type_reads_and_writes_byte_identical_to_paddle(paddle_files, expected, fixture_lods, name):
    with open(os.path.join(paddle_files, "params", name), "rb") as f:
        paddle_bytes = f.read()
    array, lod = read_tensor(io.BytesIO(paddle_bytes), name, name)
    want = expected["param/" + name]
    assert array.dtype == want.dtype and array.shape == want.shape
    np.testing.assert_array_equal(array, want)
    assert lod == fixture_lods.get(name, [])
    assert tensor_to_bytes(want, fixture_lods.get(name)) == paddle_bytes


def test_save_vars_files_equal_paddles_byte_for_byte(tmp_path, paddle_files, expected, fixture_lods):
    values = {n: expected["param/" + n] for n in PARAM_NAMES}
    main, made = _program_with(values)
    scope = _scope_with(values, fixture_lods)
    fluid.io.save_vars(fluid.Executor(), str(tmp_path / "sep"), main, vars=made, scope=scope)
    fluid.io.save_vars(fluid.Executor(), str(tmp_path), main, vars=[v for v in made if v.name in COMBINED],
                       filename="combined", scope=scope)
    for name in PARAM_NAMES:
        assert (tmp_path / "sep" / name).read_bytes() == open(os.path.join(paddle_files, "params", name), "rb").read()
    assert (tmp_path / "combined").read_bytes() == open(os.path.join(paddle_files, "params_combined"), "rb").read()


def test_load_vars_reads_paddles_files_with_values_and_lod(paddle_files, expected, fixture_lods):
    values = {n: expected["param/" + n] for n in PARAM_NAMES}
    main, made = _program_with(values)
    for filename, dirname, names in ((None, os.path.join(paddle_files, "params"), PARAM_NAMES),
                                     ("params_combined", paddle_files, COMBINED)):
        scope = fluid.Scope()
        chosen = [v for v in made if v.name in names]
        fluid.io.load_vars(fluid.Executor(), dirname, main, vars=chosen, filename=filename, scope=scope)
        for name in names:
            tensor = scope.find_var(name).get_tensor()
            np.testing.assert_array_equal(np.array(tensor), values[name])
            assert np.array(tensor).dtype == values[name].dtype
            assert tensor.lod() == fixture_lods.get(name, [])


def test_save_to_memory_and_load_from_memory(expected):
    values = {n: expected["param/" + n] for n in COMBINED}
    main, made = _program_with(values)
    scope = _scope_with(values, {})
    data = fluid.io.save_vars(fluid.Executor(), None, main, vars=made, scope=scope)
    assert isinstance(data, bytes) and data[:4] == b"\0\0\0\0"
    other = fluid.Scope()
    fluid.io.load_vars(fluid.Executor(), None, main, vars=made, filename=data, scope=other)
    for name, value in values.items():
        np.testing.assert_array_equal(np.array(other.find_var(name).get_tensor()), value)


def test_header_fields_in_order():
    data = tensor_to_bytes(np.array([[1, 2]], "int32"), [[0, 1]])
    assert data[:4] == (0).to_bytes(4, "little")                         # version
    assert data[4:12] == (1).to_bytes(8, "little")                       # one LoD level
    assert data[12:20] == (16).to_bytes(8, "little")                     # its byte size
    assert data[20:36] == b"".join(i.to_bytes(8, "little") for i in (0, 1))
    assert data[36:40] == (0).to_bytes(4, "little")                      # tensor version
    size = int.from_bytes(data[40:44], "little", signed=True)
    assert data[44:44 + size] == bytes([0x08, 2, 0x10, 1, 0x10, 2])     # TensorDesc{INT32, dims 1, 2}
    assert data[44 + size:] == np.array([1, 2], "<i4").tobytes()


@pytest.mark.parametrize("cut", [0, 3, 10, 25, 40, 43, 47, 60])
def test_truncated_file_names_file_variable_and_what_was_expected(cut):
    data = tensor_to_bytes(np.arange(6, dtype="float32").reshape(2, 3), [[0, 2]])
    with pytest.raises(ModelFormatError) as err:
        read_tensor(io.BytesIO(data[:cut]), "model/fc_0.w_0", "fc_0.w_0")
    text = str(err.value)
    assert "model/fc_0.w_0" in text and "'fc_0.w_0'" in text
    assert ("truncated" in text and "expected" in text) or "ends before" in text or "needs" in text


@pytest.mark.parametrize("head, named", [(b"\x93NUMPY\x01\x00v\x00", "numpy .npy"), (b"PK\x03\x04" + b"\0" * 8, "zip"),
                                         (b"\x80\x04\x95" + b"\0" * 9, "pickle"), (b"hello world!", "68 65 6c 6c")])
def test_foreign_file_is_named_as_what_it_looks_like(head, named):
    with pytest.raises(ModelFormatError, match=f"not a fluid LoDTensor file where variable 'w' should be: .*{named}"):
        read_tensor(io.BytesIO(head), "dir/w", "w")


def test_damaged_desc_and_unsupported_type_are_clear():
    good = tensor_to_bytes(np.zeros(2, "float32"))
    bf16 = good[:20] + bytes([0x08, 22, 0x10, 2]) + good[24:]  # data_type BF16 instead of FP32
    with pytest.raises(ModelFormatError, match=r"variable 'v'.*data type code 22 \(bfloat16\) is not supported"):
        read_tensor(io.BytesIO(bf16), "f", "v")
    with pytest.raises(ModelFormatError, match="tensor version 7 is not supported"):
        read_tensor(io.BytesIO(good[:12] + (7).to_bytes(4, "little") + good[16:]), "f", "v")


def test_combined_file_with_extra_data_is_refused():
    data = tensor_to_bytes(np.zeros(2, "float32")) * 2
    assert list(read_tensors(io.BytesIO(data), "f", ["a", "b"])) == ["a", "b"]
    with pytest.raises(ModelFormatError, match="holds more data after the 1 variable"):
        read_tensors(io.BytesIO(data), "f", ["a"])


def test_missing_file_and_shape_mismatch_messages(tmp_path):
    main, made = _program_with({"w": np.zeros((2, 3), "float32")})
    with pytest.raises(ModelFormatError, match=r"Load operator fail to open file .*w, please check"):
        fluid.io.load_vars(fluid.Executor(), str(tmp_path), main, vars=made)
    (tmp_path / "w").write_bytes(tensor_to_bytes(np.zeros((3, 2), "float32")))
    with pytest.raises(RuntimeError, match=r"the Program requires a parameter with the shape of \(\(2, 3\)\), while "
                                           r"the loaded parameter \(namely \[ w \]\) has a shape of  \(\(3, 2\)\)"):
        fluid.io.load_vars(fluid.Executor(), str(tmp_path), main, vars=made, scope=fluid.Scope())
    (tmp_path / "w").write_bytes(tensor_to_bytes(np.zeros((2, 3), "float64")))
    with pytest.raises(RuntimeError, match="'w' is float32 in the program but float64 in"):
        fluid.io.load_vars(fluid.Executor(), str(tmp_path), main, vars=made, scope=fluid.Scope())


@pytest.mark.parametrize("vars", [None, "vars"])
def test_load_and_save_vars_refuse_a_main_program_that_is_not_one(tmp_path, vars):
    """fluid checks main_program whether or not ``vars`` are given (a TypeError before any file is read)."""
    for call in (fluid.io.load_vars, fluid.io.save_vars):
        with pytest.raises(TypeError, match="expected type is fluid.Program, but received <class 'str'>"):
            call(fluid.Executor(), str(tmp_path / "none"), main_program="program", vars=vars)
