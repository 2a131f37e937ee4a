"""Reads and writes the safetensors format directly with numpy (no safetensors package here).

Format: u64 little-endian header length N, N bytes of JSON header, then the raw buffer.
The header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
relative to the buffer) and may hold "__metadata__": {str: str}.
"""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
_NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


class BFloat16:
    """Marks a float array to be stored as BF16 (numpy has no bfloat16 dtype).

    Values are rounded to nearest, ties to even, as torch does; `bits` holds the uint16 words.
    """

    def __init__(self, array):
        f32 = np.asarray(array, dtype=np.float32)
        f32 = np.ascontiguousarray(f32).reshape(f32.shape)
        u32 = f32.view(np.uint32).astype(np.uint64)
        rounded = (u32 + 0x7FFF + ((u32 >> 16) & 1)) >> 16
        nan = np.isnan(f32)
        self.bits = np.where(nan, (u32 >> 16) | 0x40, rounded).astype(np.uint16)

    def to_float32(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


def serialize(tensors, metadata=None):
    """Returns the bytes of a safetensors file holding `tensors` (name -> numpy array, or
    BFloat16 for a BF16 tensor)."""
    header, chunks, offset = {}, [], 0
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("safetensors metadata must map str to str")
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        if isinstance(tensors[name], BFloat16):
            dtype, array = "BF16", tensors[name].bits
        else:
            array = np.asarray(tensors[name])
            array = np.ascontiguousarray(array).reshape(array.shape)  # keeps 0-d arrays 0-d
            dtype = _NAMES.get(array.dtype)
        if dtype is None:
            raise TypeError(f"tensor {name}: dtype {array.dtype} is not supported")
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # pad so the buffer starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save_file(tensors, path, metadata=None):
    with open(path, "wb") as f:
        f.write(serialize(tensors, metadata))


def load_file(path):
    """Returns (tensors, metadata) from a safetensors file written by any conforming writer."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    metadata = header.pop("__metadata__", {})
    buffer = memoryview(blob)[8 + n:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        if info["dtype"] == "BF16":
            raw = np.frombuffer(buffer[begin:end], dtype="<u2").astype(np.uint32) << 16
            array = raw.view(np.float32)
        else:
            array = np.frombuffer(buffer[begin:end], dtype=np.dtype(DTYPES[info["dtype"]]).newbyteorder("<"))
        tensors[name] = array.reshape(info["shape"]).copy()
    return tensors, metadata
