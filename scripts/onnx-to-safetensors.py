#!/usr/bin/env python3
"""Converts U²-Net-P's ONNX file (rembg's `u2netp.onnx`) into a safetensors file that
`adforge_models::U2Net` reads, with the Python standard library only.

    python3 scripts/onnx-to-safetensors.py u2netp.onnx model.safetensors

ONNX is a protobuf; this reads the few messages it needs (ModelProto.graph, GraphProto's
nodes and initialisers, NodeProto, AttributeProto, TensorProto) with a small wire-format
reader instead of the `onnx` package. The export has no parameter names (batch norms are
folded into the convolutions, and the initialisers are numbered), so tensors are mapped to
modules by walking the graph's 119 Conv nodes in order, which is the order the network's
forward pass runs them: encoder stages 1-6, decoder stages 5d-1d, side outputs 1-6, the
fusing 1x1 convolution. Inside a residual U-block the order is rebnconvin, rebnconv1,
rebnconv2, ..., the dilated innermost one, then the decoder convolutions back up to
rebnconv1d. Each Conv's weight shape, dilation, padding, stride and group are checked
against that plan, so a different graph is refused instead of silently mis-mapped.

The names follow the original PyTorch module (`stage1.rebnconvin.conv_s1.weight`,
`side1.weight`, `outconv.bias`); every convolution has a bias (the folded batch norm).
The output lists tensors in sorted name order with a compact JSON header padded with
spaces to 8 bytes, so the same input always gives the same bytes (the fetch script pins
the output's sha256).
"""

import json
import struct
import sys

# Wire types of the protobuf encoding.
VARINT, I64, LEN, I32 = 0, 1, 2, 5
FLOAT = 1  # TensorProto.DataType.FLOAT


def varint(buf, i):
    """Decodes a base-128 varint at `i`; returns (value, next index)."""
    value, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf):
    """Yields (field number, wire type, value) of one message."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, i = varint(buf, i)
        elif wire == I64:
            value, i = buf[i:i + 8], i + 8
        elif wire == LEN:
            length, i = varint(buf, i)
            value, i = buf[i:i + length], i + length
        elif wire == I32:
            value, i = buf[i:i + 4], i + 4
        else:
            raise SystemExit(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def ints(wire, value):
    """A repeated int64 field's values (packed or not)."""
    if wire == VARINT:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(v)
    return out


def parse_tensor(buf):
    dims, dtype, name, raw, floats = [], None, None, None, []
    for number, wire, value in fields(buf):
        if number == 1:
            dims += ints(wire, value)
        elif number == 2:
            dtype = value
        elif number == 8:
            name = bytes(value).decode()
        elif number == 9:
            raw = bytes(value)
        elif number == 4:
            # float_data: packed little-endian floats (or one float per field).
            floats.append(bytes(value))
    if dtype != FLOAT:
        raise SystemExit(f"initialiser {name} has data type {dtype}, expected FLOAT")
    data = raw if raw is not None else b"".join(floats)
    count = 1
    for d in dims:
        count *= d
    if len(data) != 4 * count:
        raise SystemExit(f"initialiser {name}: {len(data)} bytes for shape {dims}")
    return name, dims, data


def parse_attribute(buf):
    name, ints_, i = None, [], None
    for number, wire, value in fields(buf):
        if number == 1:
            name = bytes(value).decode()
        elif number == 3:
            i = value
        elif number == 8:
            ints_ += ints(wire, value)
    return name, (ints_ if ints_ else i)


def parse_node(buf):
    node = {"inputs": [], "outputs": [], "op": None, "attrs": {}}
    for number, _, value in fields(buf):
        if number == 1:
            node["inputs"].append(bytes(value).decode())
        elif number == 2:
            node["outputs"].append(bytes(value).decode())
        elif number == 4:
            node["op"] = bytes(value).decode()
        elif number == 5:
            k, v = parse_attribute(value)
            node["attrs"][k] = v
    return node


def read_graph(path):
    with open(path, "rb") as f:
        model = memoryview(f.read())
    graph = next((v for n, w, v in fields(model) if n == 7 and w == LEN), None)
    if graph is None:
        raise SystemExit(f"{path} has no graph")
    nodes, inits, outputs = [], {}, 0
    for number, _, value in fields(graph):
        if number == 1:
            nodes.append(parse_node(value))
        elif number == 5:
            name, dims, data = parse_tensor(value)
            inits[name] = (dims, data)
        elif number == 12:
            outputs += 1
    return nodes, inits, outputs


def rsu(prefix, height, cin, mid, cout):
    """The convolutions of a residual U-block RSU-`height`, in forward order:
    (name, out channels, in channels, kernel, dilation)."""
    plan = [(f"{prefix}.rebnconvin", cout, cin, 3, 1), (f"{prefix}.rebnconv1", mid, cout, 3, 1)]
    plan += [(f"{prefix}.rebnconv{i}", mid, mid, 3, 1) for i in range(2, height)]
    plan.append((f"{prefix}.rebnconv{height}", mid, mid, 3, 2))
    plan += [(f"{prefix}.rebnconv{i}d", mid, 2 * mid, 3, 1) for i in range(height - 1, 1, -1)]
    plan.append((f"{prefix}.rebnconv1d", cout, 2 * mid, 3, 1))
    return plan


def rsu4f(prefix, cin, mid, cout):
    """RSU-4F: no pooling, dilations 1, 2, 4, 8 and back."""
    return [
        (f"{prefix}.rebnconvin", cout, cin, 3, 1),
        (f"{prefix}.rebnconv1", mid, cout, 3, 1),
        (f"{prefix}.rebnconv2", mid, mid, 3, 2),
        (f"{prefix}.rebnconv3", mid, mid, 3, 4),
        (f"{prefix}.rebnconv4", mid, mid, 3, 8),
        (f"{prefix}.rebnconv3d", mid, 2 * mid, 3, 4),
        (f"{prefix}.rebnconv2d", mid, 2 * mid, 3, 2),
        (f"{prefix}.rebnconv1d", cout, 2 * mid, 3, 1),
    ]


def u2netp_plan():
    """Every convolution of U²-Net-P (Qin et al. 2020, `U2NETP` in the authors' model
    code): RSU blocks with 16 middle and 64 outer channels."""
    mid, out = 16, 64
    plan = rsu("stage1", 7, 3, mid, out) + rsu("stage2", 6, out, mid, out)
    plan += rsu("stage3", 5, out, mid, out) + rsu("stage4", 4, out, mid, out)
    plan += rsu4f("stage5", out, mid, out) + rsu4f("stage6", out, mid, out)
    plan += rsu4f("stage5d", 2 * out, mid, out) + rsu("stage4d", 4, 2 * out, mid, out)
    plan += rsu("stage3d", 5, 2 * out, mid, out) + rsu("stage2d", 6, 2 * out, mid, out)
    plan += rsu("stage1d", 7, 2 * out, mid, out)
    plan += [(f"side{i}", 1, out, 3, 1) for i in range(1, 7)]
    plan.append(("outconv", 1, 6, 1, 1))
    return [(f"{n}.conv_s1" if ".rebnconv" in n else n, o, i, k, d) for n, o, i, k, d in plan]


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: onnx-to-safetensors.py MODEL.onnx OUT.safetensors")
    nodes, inits, outputs = read_graph(sys.argv[1])
    if outputs != 7:
        raise SystemExit(f"expected 7 graph outputs (fused mask and six side outputs), found {outputs}")
    convs = [n for n in nodes if n["op"] == "Conv"]
    plan = u2netp_plan()
    if len(convs) != len(plan):
        raise SystemExit(f"expected {len(plan)} Conv nodes, found {len(convs)}")
    tensors = {}
    for node, (name, cout, cin, k, dil) in zip(convs, plan):
        if len(node["inputs"]) != 3:
            raise SystemExit(f"{name}: the Conv has no bias input")
        w_dims, w = inits[node["inputs"][1]]
        b_dims, b = inits[node["inputs"][2]]
        a = node["attrs"]
        pad = dil if k == 3 else 0
        if w_dims != [cout, cin, k, k] or b_dims != [cout]:
            raise SystemExit(f"{name}: weight {w_dims} bias {b_dims}, expected [{cout}, {cin}, {k}, {k}]")
        if (a.get("dilations") != [dil, dil] or a.get("pads") != [pad] * 4
                or a.get("strides") != [1, 1] or a.get("group", 1) != 1):
            raise SystemExit(f"{name}: attributes {a} do not match dilation {dil}")
        tensors[f"{name}.weight"] = (w_dims, w)
        tensors[f"{name}.bias"] = (b_dims, b)
    header, offset = {}, 0
    for name in sorted(tensors):
        dims, data = tensors[name]
        header[name] = {"dtype": "F32", "shape": dims, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    with open(sys.argv[2], "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for name in sorted(tensors):
            out.write(tensors[name][1])
    params = sum(len(d) // 4 for _, d in tensors.values())
    print(f"wrote {len(tensors)} tensors ({params} parameters) to {sys.argv[2]}")


if __name__ == "__main__":
    main()
