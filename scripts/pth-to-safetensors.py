#!/usr/bin/env python3
"""Convert a PyTorch state dict in the LEGACY (pre-1.6, non-zip) format to safetensors.

Python standard library only: no torch, no numpy. Used by scripts/fetch-models for the
EfficientNet-Lite0 weights, which candle cannot read directly.

The legacy format, as torch.serialization's `_legacy_save` writes it, is five pickles and
raw bytes back to back in one file:

  1. the magic number 0x1950a86a20f9469cfc6c,
  2. the protocol version (1001),
  3. a sys-info dict (endianness, sizes of short/int/long),
  4. the object itself (here an OrderedDict of name -> tensor); each tensor is
     `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)` whose storage is a
     *persistent id* ('storage', StorageClass, key, location, numel, view_metadata),
  5. the list of storage keys in the order their data follows,

then, for each key in that order, an int64 element count and the storage's raw bytes
(little-endian on the machines that wrote these files; the sys-info pickle says so and the
converter checks it).

A tensor is a view into its storage: `offset`, `size` and `stride` are in elements. Many
tensors here are not contiguous (transposed views), so each one is gathered element by
element into row-major order before it is written.

safetensors: an 8-byte little-endian header length, a JSON header
{name: {dtype, shape, data_offsets: [begin, end]}} (offsets relative to the data area),
then the data. Tensors are written in sorted-name order.

Usage: pth-to-safetensors.py IN.pth OUT.safetensors
"""

import collections
import json
import os
import pickle
import struct
import sys

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001

# storage class name -> (safetensors dtype, element size, struct format char)
STORAGE_TYPES = {
    "FloatStorage": ("F32", 4, "f"),
    "DoubleStorage": ("F64", 8, "d"),
    "HalfStorage": ("F16", 2, "e"),
    "LongStorage": ("I64", 8, "q"),
    "IntStorage": ("I32", 4, "i"),
    "ShortStorage": ("I16", 2, "h"),
    "CharStorage": ("I8", 1, "b"),
    "ByteStorage": ("U8", 1, "B"),
    "BoolStorage": ("BOOL", 1, "?"),
}


class StorageType:
    """Stands in for torch.FloatStorage & co: only its name is needed."""

    def __init__(self, name):
        self.name = name


class Storage:
    """One storage of the file; `data` is filled once the raw bytes are read."""

    def __init__(self, key, storage_type, numel):
        self.key = key
        self.dtype, self.itemsize, self.fmt = STORAGE_TYPES[storage_type.name]
        self.numel = numel
        self.data = None


class TensorRef:
    """A tensor as the pickle describes it: a strided view into a storage."""

    def __init__(self, storage, offset, size, stride):
        self.storage = storage
        self.offset = offset
        self.size = tuple(size)
        self.stride = tuple(stride)

    def is_contiguous(self):
        expected = 1
        for dim, st in zip(reversed(self.size), reversed(self.stride)):
            if dim != 1 and st != expected:
                return False
            expected *= dim
        return True

    def contiguous_bytes(self):
        data = self.storage.data
        item = self.storage.itemsize
        numel = 1
        for d in self.size:
            numel *= d
        if self.is_contiguous():
            start = self.offset * item
            return data[start : start + numel * item]
        out = bytearray(numel * item)
        # Walk the index space in row-major order, copying one element at a time.
        pos = 0
        index = [0] * len(self.size)
        src = self.offset
        for _ in range(numel):
            out[pos : pos + item] = data[src * item : (src + 1) * item]
            pos += item
            for axis in range(len(self.size) - 1, -1, -1):
                index[axis] += 1
                src += self.stride[axis]
                if index[axis] < self.size[axis]:
                    break
                src -= self.stride[axis] * self.size[axis]
                index[axis] = 0
        return bytes(out)


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, *rest):
    return TensorRef(storage, storage_offset, size, stride)


def rebuild_tensor(storage, storage_offset, size, stride):
    return TensorRef(storage, storage_offset, size, stride)


def rebuild_parameter(data, requires_grad, backward_hooks, *rest):
    return data


class LegacyUnpickler(pickle.Unpickler):
    def __init__(self, f, storages):
        super().__init__(f, encoding="latin1")
        self.storages = storages

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_tensor":
            return rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return rebuild_parameter
        if module == "torch" and name in STORAGE_TYPES:
            return StorageType(name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: not part of a plain state dict")

    def persistent_load(self, pid):
        kind, storage_type, key, _location, numel, view_metadata = pid
        if kind != "storage":
            raise pickle.UnpicklingError(f"unknown persistent id kind {kind!r}")
        if view_metadata is not None:
            raise pickle.UnpicklingError("storage views are not supported")
        if key not in self.storages:
            self.storages[key] = Storage(key, storage_type, numel)
        return self.storages[key]


def load_legacy(path):
    with open(path, "rb") as f:
        if f.read(2) == b"PK":
            raise SystemExit(f"{path} is a zip-format checkpoint, not the legacy format")
        f.seek(0)
        magic = pickle.load(f)
        if magic != MAGIC_NUMBER:
            raise SystemExit(f"{path}: bad magic number {magic!r}")
        protocol = pickle.load(f)
        if protocol != PROTOCOL_VERSION:
            raise SystemExit(f"{path}: unsupported protocol version {protocol!r}")
        sys_info = pickle.load(f)
        if not sys_info.get("little_endian", False):
            raise SystemExit(f"{path}: big-endian checkpoints are not supported")
        storages = {}
        state = LegacyUnpickler(f, storages).load()
        keys = pickle.load(f)
        for key in keys:
            st = storages[key]
            (numel,) = struct.unpack("<q", f.read(8))
            if numel != st.numel:
                raise SystemExit(f"{path}: storage {key} has {numel} elements, expected {st.numel}")
            st.data = f.read(numel * st.itemsize)
            if len(st.data) != numel * st.itemsize:
                raise SystemExit(f"{path}: truncated storage {key}")
    if not isinstance(state, dict):
        raise SystemExit(f"{path}: not a state dict")
    return state


def write_safetensors(state, out_path):
    header = {}
    chunks = []
    offset = 0
    for name in sorted(state):
        t = state[name]
        data = t.contiguous_bytes()
        header[name] = {"dtype": t.storage.dtype, "shape": list(t.size), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # Pad the header with spaces so the data area starts 8-byte aligned, as the format allows.
    header_bytes += b" " * ((8 - len(header_bytes) % 8) % 8)
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for c in chunks:
            f.write(c)
    os.replace(tmp, out_path)


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: pth-to-safetensors.py IN.pth OUT.safetensors")
    state = load_legacy(sys.argv[1])
    non_contiguous = sum(1 for t in state.values() if not t.is_contiguous())
    write_safetensors(state, sys.argv[2])
    print(f"converted {len(state)} tensors ({non_contiguous} non-contiguous) -> {sys.argv[2]}")


if __name__ == "__main__":
    main()
