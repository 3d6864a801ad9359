// adforge GPU backend: layer effects (drop and inner shadows, layer blur) and
// BACKGROUND_BLUR as full-target passes over offscreen textures.
//
// Every pass draws one quad over its whole target and reads its input with textureLoad at
// integer texels. The arithmetic is the CPU backend's, in integers on 0..255 values
// (`backend::cpu::blur` and `effects`): the Gaussian is three box blurs (each a horizontal
// then a vertical pass, zero beyond the edges), large sigmas run on a plane box-averaged
// down by a power of two and scaled back with 8-bit bilinear weights, and shadow spread is
// a separable max / min filter. So a blurred plane is the same on both backends, level for
// level. Two pipelines share this module: `replace` writes the result, `over` blends it
// with the fixed-function premultiplied source-over (tinted shadows, content over shadows).

struct Effect {
    // op, parameter a, parameter b, flags.
    op: vec4<u32>,
    // Source texel = target texel + xy; aux texel = target texel + zw.
    offset: vec4<i32>,
    // Premultiplied shadow colour, 0..255.
    color: vec4<u32>,
    // Width and height of the full-size plane (OP_DOWN, OP_TINT with TINT_UP); unused.
    size: vec4<u32>,
};

const OP_COPY: u32 = 0u;
const OP_BOX_H: u32 = 1u;
const OP_BOX_V: u32 = 2u;
const OP_DOWN: u32 = 3u;
const OP_UP: u32 = 4u;
const OP_SPREAD_H: u32 = 5u;
const OP_SPREAD_V: u32 = 6u;
const OP_TINT: u32 = 7u;
const OP_MASK: u32 = 8u;

// OP_COPY flags.
const COPY_ALPHA: u32 = 1u;
const COPY_INVERT: u32 = 2u;
// OP_TINT flags.
const TINT_INNER: u32 = 1u;
// The plane is the downsampled one: upsample it on the fly (OP_UP fused into the tint).
const TINT_UP: u32 = 2u;

@group(0) @binding(0) var<storage, read> effects: array<Effect>;
@group(0) @binding(1) var src: texture_2d<f32>;
@group(0) @binding(2) var aux: texture_2d<f32>;

struct VOut {
    @builtin(position) pos: vec4<f32>,
    @location(0) @interpolate(flat) index: u32,
};

@vertex
fn vs(@builtin(vertex_index) vi: u32, @builtin(instance_index) ii: u32) -> VOut {
    let corner = vec2<f32>(f32(vi & 1u), f32((vi >> 1u) & 1u));
    var out: VOut;
    out.pos = vec4<f32>(corner.x * 2.0 - 1.0, 1.0 - corner.y * 2.0, 0.0, 1.0);
    out.index = ii;
    return out;
}

// The 0..255 levels of the source texel `p`; zero outside the texture.
fn load(p: vec2<i32>) -> vec4<u32> {
    let size = vec2<i32>(textureDimensions(src));
    if p.x < 0 || p.y < 0 || p.x >= size.x || p.y >= size.y {
        return vec4<u32>(0u);
    }
    return vec4<u32>(round(textureLoad(src, p, 0) * 255.0));
}

fn aux_load(p: vec2<i32>) -> vec4<u32> {
    let size = vec2<i32>(textureDimensions(aux));
    if p.x < 0 || p.y < 0 || p.x >= size.x || p.y >= size.y {
        return vec4<u32>(0u);
    }
    return vec4<u32>(round(textureLoad(aux, p, 0) * 255.0));
}

fn out(v: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(min(v, vec4<u32>(255u))) / 255.0;
}

// round(v / 255) for v up to 255 * 255, as the CPU backend's `div255`.
fn div255(v: vec4<u32>) -> vec4<u32> {
    return (v + 128u + ((v + 128u) >> vec4<u32>(8u))) >> vec4<u32>(8u);
}

// One box pass of radius `r` along `step`: the mean of 2r + 1 texels, zero beyond the edges.
fn box_pass(p: vec2<i32>, r: i32, step: vec2<i32>) -> vec4<u32> {
    var acc = vec4<u32>(0u);
    for (var k = -r; k <= r; k = k + 1) {
        acc = acc + load(p + step * k);
    }
    let div = u32(2 * r + 1);
    return (acc + div / 2u) / div;
}

// Texel `q` of the plane a pass reads: the source at `q` + offset, optionally only its
// alpha (in every channel) and inverted (so beyond the source counts as 255).
fn plane(e: Effect, q: vec2<i32>) -> vec4<u32> {
    var c = load(q + e.offset.xy);
    if (e.op.w & COPY_ALPHA) != 0u {
        c = vec4<u32>(c.a);
    }
    if (e.op.w & COPY_INVERT) != 0u {
        c = vec4<u32>(255u) - c;
    }
    return c;
}

// The mean of the `f`×`f` block of the plane (`e.size` texels) under target texel `p`,
// clipped at the plane's edges.
fn down(e: Effect, p: vec2<i32>, f: i32) -> vec4<u32> {
    let size = vec2<i32>(e.size.xy);
    let lo = p * f;
    let hi = min(lo + vec2<i32>(f), size);
    var acc = vec4<u32>(0u);
    for (var y = lo.y; y < hi.y; y = y + 1) {
        for (var x = lo.x; x < hi.x; x = x + 1) {
            acc = acc + plane(e, vec2<i32>(x, y));
        }
    }
    let n = u32((hi.x - lo.x) * (hi.y - lo.y));
    return (acc + n / 2u) / max(n, 1u);
}

// Sample positions of target texel `i` in a plane `f` times smaller of `n` texels: the two
// neighbours and the 8-bit weight of the second.
fn tap(i: i32, f: i32, n: i32) -> vec3<i32> {
    let p = clamp((f32(i) + 0.5) / f32(f) - 0.5, 0.0, f32(n - 1));
    let i0 = i32(floor(p));
    let i1 = min(i0 + 1, n - 1);
    return vec3<i32>(i0, i1, i32((p - f32(i0)) * 256.0));
}

// Bilinear upsampling by `f`, rows first, with the CPU backend's fixed-point weights.
fn up(p: vec2<i32>, f: i32) -> vec4<u32> {
    let size = vec2<i32>(textureDimensions(src));
    let tx = tap(p.x, f, size.x);
    let ty = tap(p.y, f, size.y);
    let wy = u32(ty.z);
    let wx = u32(tx.z);
    let a = load(vec2<i32>(tx.x, ty.x)) * (256u - wy) + load(vec2<i32>(tx.x, ty.y)) * wy;
    let b = load(vec2<i32>(tx.y, ty.x)) * (256u - wy) + load(vec2<i32>(tx.y, ty.y)) * wy;
    return (a * (256u - wx) + b * wx + 32768u) >> vec4<u32>(16u);
}

// Max (grow) or min (shrink) over 2r + 1 texels along `step`; a shrinking window that
// reaches past an edge gives 0 (beyond the plane is empty).
fn spread(p: vec2<i32>, r: i32, grow: bool, step: vec2<i32>) -> vec4<u32> {
    let size = vec2<i32>(textureDimensions(src));
    let along = dot(p, step);
    let len = dot(size, step);
    if !grow && (along < r || along + r >= len) {
        return vec4<u32>(0u);
    }
    var v = load(p);
    for (var k = -r; k <= r; k = k + 1) {
        let q = along + k;
        if q < 0 || q >= len {
            continue;
        }
        let s = load(p + step * k);
        if grow {
            v = max(v, s);
        } else {
            v = min(v, s);
        }
    }
    return v;
}

@fragment
fn fs(v: VOut) -> @location(0) vec4<f32> {
    let e = effects[v.index];
    let p = vec2<i32>(floor(v.pos.xy));
    let a = i32(e.op.y);
    switch e.op.x {
        case OP_BOX_H: {
            return out(box_pass(p, a, vec2<i32>(1, 0)));
        }
        case OP_BOX_V: {
            return out(box_pass(p, a, vec2<i32>(0, 1)));
        }
        case OP_DOWN: {
            return out(down(e, p, a));
        }
        case OP_UP: {
            return out(up(p, a));
        }
        case OP_SPREAD_H: {
            return out(spread(p, a, e.op.z == 1u, vec2<i32>(1, 0)));
        }
        case OP_SPREAD_V: {
            return out(spread(p, a, e.op.z == 1u, vec2<i32>(0, 1)));
        }
        case OP_TINT: {
            // A shadow: the colour through the plane's level, moved by the offset.
            var level = 0u;
            if (e.op.w & TINT_UP) != 0u {
                let q = p + e.offset.xy;
                let size = vec2<i32>(e.size.xy);
                if q.x >= 0 && q.y >= 0 && q.x < size.x && q.y < size.y {
                    level = up(q, a).a;
                }
            } else {
                level = load(p + e.offset.xy).a;
            }
            if (e.op.w & TINT_INNER) != 0u {
                // Inner shadows stay inside the content's alpha, rounded as the CPU does.
                let inside = aux_load(p).a;
                level = (level * inside + 127u) / 255u;
                return out((e.color * level + vec4<u32>(127u)) / 255u);
            }
            return out(div255(e.color * level));
        }
        case OP_MASK: {
            let m = aux_load(p + e.offset.zw).r;
            return out(div255(load(p + e.offset.xy) * m));
        }
        default: {
            return out(plane(e, p));
        }
    }
}
