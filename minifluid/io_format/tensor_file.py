"""fluid's binary LoDTensor format: what its save / load and save_combine / load_combine ops write.

One tensor is, in this order (little-endian, as fluid writes it on x86 and ARM):

    uint32   version, 0
    uint64   number of LoD levels
             per level: uint64 byte size of the level, then the level's uint64 offsets
    uint32   tensor version, 0
    int32    byte size of the TensorDesc message, then the message (VarType.TensorDesc: data_type, dims)
             the elements, row-major

A combined file (``save_combine``; ``save_vars(filename=...)``) is such tensors one after another, in
the order of the sorted variable names. Reading checks every field, so a truncated or foreign file is a
``ModelFormatError`` naming the file, the variable and what was expected there.
"""
import struct

import numpy as np

from ..dtypes import from_proto_dtype, to_proto_dtype
from ..framework.proto import framework_pb2

__all__ = ["ModelFormatError", "tensor_to_bytes", "write_tensor", "read_tensor", "read_tensors", "sniff_format"]

_U32, _U64, _I32 = struct.Struct("<I"), struct.Struct("<Q"), struct.Struct("<i")
_MAX_LOD_LEVELS = 64        # fluid's LoD has a handful of levels; more means the bytes are not a tensor
_MAX_DESC_BYTES = 1 << 16   # a TensorDesc is a dtype and the dims: a few dozen bytes


class ModelFormatError(RuntimeError):
    """A model or parameter file that is truncated, damaged, or in another format."""


def sniff_format(head):
    """What a file starting with the bytes ``head`` looks like, in words (for error messages)."""
    if head.startswith(b"\x93NUMPY"):
        return "a numpy .npy file"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive (numpy .npz)"
    if head[:1] == b"\x80":
        return "a Python pickle"
    if not head:
        return "nothing (the file is empty)"
    return f"the bytes {head[:8].hex(' ')}"


def tensor_to_bytes(array, lod=None):
    """The bytes of one tensor: ``array`` with LoD ``lod`` (offsets per level, as ``LoDTensor.lod()``)."""
    header, data = _encode(np.asarray(array), lod)
    return header + data.tobytes()


def write_tensor(f, array, lod=None):
    """Write one tensor to the binary file ``f``."""
    header, data = _encode(np.asarray(array), lod)
    f.write(header)
    f.write(memoryview(data).cast("B") if data.size else b"")


def _encode(array, lod):
    desc = framework_pb2.VarType.TensorDesc(data_type=to_proto_dtype(array.dtype), dims=array.shape)
    desc_bytes = desc.SerializeToString()
    parts = [_U32.pack(0), _U64.pack(len(lod or ()))]
    for level in lod or ():
        offsets = np.asarray(level, dtype="<u8")
        parts += [_U64.pack(offsets.nbytes), offsets.tobytes()]
    parts += [_U32.pack(0), _I32.pack(len(desc_bytes)), desc_bytes]
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return b"".join(parts), data


class _Reader:
    """Exact reads from a binary file, each failing with what was being read."""

    def __init__(self, f, source):
        self.f, self.source = f, source

    def read(self, n, name, what):
        data = self.f.read(n)
        if len(data) != n:
            raise ModelFormatError(
                f"{self.source} is truncated: it ends inside variable {name!r}'s {what} "
                f"(expected {n} bytes, found {len(data)}); the file is incomplete or damaged")
        return data

    def unpack(self, fmt, name, what):
        return fmt.unpack(self.read(fmt.size, name, what))[0]

    def fail(self, name, problem):
        return ModelFormatError(f"{self.source} is not a fluid LoDTensor file where variable {name!r} "
                                f"should be: {problem}")


def read_tensor(f, source, name):
    """Read one tensor from the binary file ``f``: ``(array, lod)`` (LoD as offsets per level).

    ``source`` (the file's path, or a description) and ``name`` (the variable) go into the errors.
    """
    r = _Reader(f, source)
    head = f.read(4)
    if not head:
        raise r.fail(name, "the data ends before it (no bytes left)")
    if len(head) < 4:
        raise ModelFormatError(f"{source} is truncated: it ends inside variable {name!r}'s version "
                               f"(expected 4 bytes, found {len(head)}); the file is incomplete or damaged")
    if _U32.unpack(head)[0] != 0:
        raise r.fail(name, f"it starts with {sniff_format(head + f.read(4))}, not tensor version 0")
    levels = r.unpack(_U64, name, "LoD level count")
    if levels > _MAX_LOD_LEVELS:
        raise r.fail(name, f"it claims {levels} LoD levels")
    lod = []
    for i in range(levels):
        size = r.unpack(_U64, name, f"LoD level {i} size")
        if size % 8 or size > (1 << 40):
            raise r.fail(name, f"LoD level {i} has a byte size of {size}, not a whole number of uint64 offsets")
        lod.append(np.frombuffer(r.read(size, name, f"LoD level {i}"), "<u8").tolist())
    version = r.unpack(_U32, name, "tensor version")
    if version != 0:
        raise r.fail(name, f"tensor version {version} is not supported (fluid writes 0)")
    desc_size = r.unpack(_I32, name, "TensorDesc size")
    if not 0 <= desc_size <= _MAX_DESC_BYTES:
        raise r.fail(name, f"its TensorDesc size is {desc_size} bytes")
    desc = framework_pb2.VarType.TensorDesc()
    try:
        desc.ParseFromString(r.read(desc_size, name, "TensorDesc"))
        dtype = np.dtype(from_proto_dtype(desc.data_type)).newbyteorder("<")
    except ModelFormatError:
        raise
    except Exception as e:  # a DecodeError, or an element type minifluid lacks
        raise r.fail(name, f"its TensorDesc cannot be used ({e})") from None
    shape = tuple(desc.dims)
    if any(d < 0 for d in shape):
        raise r.fail(name, f"its dims {list(shape)} are negative")
    array = np.empty(shape, dtype)
    nbytes = array.nbytes
    if nbytes:
        got = f.readinto(memoryview(array).cast("B"))
        if got != nbytes:
            raise ModelFormatError(
                f"{source} is truncated: variable {name!r} ({dtype.name}{list(shape)}) needs {nbytes} bytes "
                f"of data, the file has {got}; the file is incomplete or damaged")
    return array.astype(array.dtype.newbyteorder("="), copy=False), lod


def read_tensors(f, source, names):
    """Read a combined file holding ``names`` (in this order); ``{name: (array, lod)}``."""
    found = {name: read_tensor(f, source, name) for name in names}
    if f.read(1):
        raise ModelFormatError(
            f"{source} holds more data after the {len(names)} variable(s) asked for ({', '.join(names)}): it "
            "was saved from a program with other persistable variables (load it with that program, or pass "
            "the same vars= it was saved with)")
    return found
