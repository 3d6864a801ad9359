// adforge GPU backend: one shader draws every display-list op as a quad.
//
// Coverage comes from an R8 mask atlas rasterised on the CPU (tiny-skia, the reference
// rasteriser) or, for pixel-aligned rectangles, is 1 inside the quad. Paint is computed here:
// solid, linear and radial gradients, and images (also finished layers, which are composited
// as images). Two pipelines share this module: `fs_over` is blended by the fixed-function
// premultiplied source-over; `fs_blend` reads a copy of the destination and returns the
// finished pixel for the 15 other blend modes (separable and non-separable, W3C
// compositing-1 formulas, as tiny-skia implements them).

struct Draw {
    // Quad in target pixels: x0, y0, x1, y1.
    rect: vec4<f32>,
    // Target width, height; paint opacity; unused.
    misc: vec4<f32>,
    // Mask atlas texel of the quad's top-left corner (x, y); unused.
    mask: vec4<f32>,
    // paint kind (0 solid, 1 linear, 2 radial, 3 image), first stop, stop count, filter
    // (0 nearest, 1 bilinear, 2 bicubic).
    kind: vec4<u32>,
    // spread (0 pad, 1 repeat), blend mode (0..15), mask mode (0 none, 1 atlas), unused.
    mode: vec4<u32>,
    // Solid colour, straight alpha.
    color: vec4<f32>,
    // Target pixel -> paint space: x' = a x + c y + e, y' = b x + d y + f.
    m0: vec4<f32>, // a, b, c, d
    m1: vec4<f32>, // e, f, image width, image height
};

struct Stop {
    // Position in x.
    pos: vec4<f32>,
    // Straight-alpha colour.
    color: vec4<f32>,
};

@group(0) @binding(0) var<storage, read> draws: array<Draw>;
@group(0) @binding(1) var<storage, read> stops: array<Stop>;
@group(0) @binding(2) var mask_atlas: texture_2d<f32>;
@group(0) @binding(3) var image: texture_2d<f32>;
@group(0) @binding(4) var backdrop: texture_2d<f32>;

// The draw record travels to the fragment stage as flat varyings: one storage read per
// vertex instead of one per fragment.
struct VOut {
    @builtin(position) pos: vec4<f32>,
    @location(0) @interpolate(flat) rect: vec4<f32>,
    @location(1) @interpolate(flat) misc: vec4<f32>,
    @location(2) @interpolate(flat) mask: vec4<f32>,
    @location(3) @interpolate(flat) kind: vec4<u32>,
    @location(4) @interpolate(flat) mode: vec4<u32>,
    @location(5) @interpolate(flat) color: vec4<f32>,
    @location(6) @interpolate(flat) m0: vec4<f32>,
    @location(7) @interpolate(flat) m1: vec4<f32>,
};

fn record(v: VOut) -> Draw {
    return Draw(v.rect, v.misc, v.mask, v.kind, v.mode, v.color, v.m0, v.m1);
}

@vertex
fn vs(@builtin(vertex_index) vi: u32, @builtin(instance_index) ii: u32) -> VOut {
    let d = draws[ii];
    let corner = vec2<f32>(f32(vi & 1u), f32((vi >> 1u) & 1u));
    let p = mix(d.rect.xy, d.rect.zw, corner);
    let ndc = vec2<f32>(p.x / d.misc.x * 2.0 - 1.0, 1.0 - p.y / d.misc.y * 2.0);
    var out: VOut;
    out.pos = vec4<f32>(ndc, 0.0, 1.0);
    out.rect = d.rect;
    out.misc = d.misc;
    out.mask = d.mask;
    out.kind = d.kind;
    out.mode = d.mode;
    out.color = d.color;
    out.m0 = d.m0;
    out.m1 = d.m1;
    return out;
}

fn premul(c: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(c.rgb * c.a, c.a);
}

fn gradient(d: Draw, t_in: f32) -> vec4<f32> {
    let t = clamp(t_in, 0.0, 1.0);
    let first = d.kind.y;
    let count = d.kind.z;
    var c = stops[first].color;
    if t <= stops[first].pos.x {
        return premul(c);
    }
    for (var i = 1u; i < count; i = i + 1u) {
        let a = stops[first + i - 1u];
        let b = stops[first + i];
        if t <= b.pos.x {
            let span = b.pos.x - a.pos.x;
            var k = 0.0;
            if span > 0.0 {
                k = (t - a.pos.x) / span;
            }
            return premul(mix(a.color, b.color, k));
        }
        c = b.color;
    }
    return premul(c);
}

fn texel(d: Draw, p_in: vec2<i32>) -> vec4<f32> {
    let size = vec2<i32>(i32(d.m1.z), i32(d.m1.w));
    var p = p_in;
    if d.mode.x == 1u {
        p = ((p % size) + size) % size;
    } else {
        p = clamp(p, vec2<i32>(0), size - vec2<i32>(1));
    }
    return textureLoad(image, p, 0);
}

fn cubic_near(t: f32) -> f32 {
    return ((-21.0 / 18.0 * t + 27.0 / 18.0) * t + 9.0 / 18.0) * t + 1.0 / 18.0;
}

fn cubic_far(t: f32) -> f32 {
    return (7.0 / 18.0 * t - 6.0 / 18.0) * t * t;
}

fn sample_image(d: Draw, q: vec2<f32>) -> vec4<f32> {
    if d.kind.w == 0u {
        return texel(d, vec2<i32>(floor(q)));
    }
    let base = floor(q - 0.5);
    let f = q - 0.5 - base;
    let b = vec2<i32>(base);
    if d.kind.w == 1u {
        let top = mix(texel(d, b), texel(d, b + vec2<i32>(1, 0)), f.x);
        let bottom = mix(texel(d, b + vec2<i32>(0, 1)), texel(d, b + vec2<i32>(1, 1)), f.x);
        return mix(top, bottom, f.y);
    }
    // Mitchell-Netravali (B = C = 1/3), as tiny-skia's bicubic filter.
    let wx = array<f32, 4>(cubic_far(1.0 - f.x), cubic_near(1.0 - f.x), cubic_near(f.x), cubic_far(f.x));
    let wy = array<f32, 4>(cubic_far(1.0 - f.y), cubic_near(1.0 - f.y), cubic_near(f.y), cubic_far(f.y));
    var sum = vec4<f32>(0.0);
    for (var j = 0; j < 4; j = j + 1) {
        var row = vec4<f32>(0.0);
        for (var i = 0; i < 4; i = i + 1) {
            row = row + wx[i] * texel(d, b + vec2<i32>(i - 1, j - 1));
        }
        sum = sum + wy[j] * row;
    }
    let a = clamp(sum.a, 0.0, 1.0);
    return vec4<f32>(clamp(sum.rgb, vec3<f32>(0.0), vec3<f32>(a)), a);
}

// The premultiplied source colour of draw `d` at target pixel centre `p`, coverage applied.
fn source(d: Draw, p: vec2<f32>) -> vec4<f32> {
    var coverage = 1.0;
    if d.mode.z == 1u {
        let m = vec2<i32>(floor(p - d.rect.xy + d.mask.xy));
        coverage = textureLoad(mask_atlas, m, 0).r;
    }
    let q = vec2<f32>(
        d.m0.x * p.x + d.m0.z * p.y + d.m1.x,
        d.m0.y * p.x + d.m0.w * p.y + d.m1.y,
    );
    var c: vec4<f32>;
    switch d.kind.x {
        case 1u: {
            c = gradient(d, q.x);
        }
        case 2u: {
            c = gradient(d, length(q));
        }
        case 3u: {
            c = sample_image(d, q);
        }
        default: {
            c = premul(d.color);
        }
    }
    return c * (coverage * d.misc.z);
}

@fragment
fn fs_over(v: VOut) -> @location(0) vec4<f32> {
    return source(record(v), v.pos.xy);
}

fn lum(c: vec3<f32>) -> f32 {
    return dot(c, vec3<f32>(0.3, 0.59, 0.11));
}

fn clip_color(c: vec3<f32>) -> vec3<f32> {
    let l = lum(c);
    let n = min(min(c.r, c.g), c.b);
    let x = max(max(c.r, c.g), c.b);
    var o = c;
    if n < 0.0 {
        o = l + (o - l) * l / (l - n);
    }
    if x > 1.0 {
        o = l + (o - l) * (1.0 - l) / (x - l);
    }
    return o;
}

fn set_lum(c: vec3<f32>, l: f32) -> vec3<f32> {
    return clip_color(c + (l - lum(c)));
}

fn sat(c: vec3<f32>) -> f32 {
    return max(max(c.r, c.g), c.b) - min(min(c.r, c.g), c.b);
}

fn set_sat(c: vec3<f32>, s: f32) -> vec3<f32> {
    let mx = max(max(c.r, c.g), c.b);
    let mn = min(min(c.r, c.g), c.b);
    if mx <= mn {
        return vec3<f32>(0.0);
    }
    return (c - mn) * s / (mx - mn);
}

fn soft_light(cb: f32, cs: f32) -> f32 {
    if cs <= 0.5 {
        return cb - (1.0 - 2.0 * cs) * cb * (1.0 - cb);
    }
    var dd: f32;
    if cb <= 0.25 {
        dd = ((16.0 * cb - 12.0) * cb + 4.0) * cb;
    } else {
        dd = sqrt(cb);
    }
    return cb + (2.0 * cs - 1.0) * (dd - cb);
}

fn hard_light(cb: f32, cs: f32) -> f32 {
    if cs <= 0.5 {
        return cb * 2.0 * cs;
    }
    let s = 2.0 * cs - 1.0;
    return cb + s - cb * s;
}

fn dodge(cb: f32, cs: f32) -> f32 {
    if cb <= 0.0 {
        return 0.0;
    }
    if cs >= 1.0 {
        return 1.0;
    }
    return min(1.0, cb / (1.0 - cs));
}

fn burn(cb: f32, cs: f32) -> f32 {
    if cb >= 1.0 {
        return 1.0;
    }
    if cs <= 0.0 {
        return 0.0;
    }
    return 1.0 - min(1.0, (1.0 - cb) / cs);
}

// B(cb, cs) of the W3C compositing spec, on straight colours.
fn mix_colors(mode: u32, cb: vec3<f32>, cs: vec3<f32>) -> vec3<f32> {
    switch mode {
        case 1u: { return cs * cb; } // multiply
        case 2u: { return cb + cs - cb * cs; } // screen
        case 3u: { // overlay
            return vec3<f32>(hard_light(cs.r, cb.r), hard_light(cs.g, cb.g), hard_light(cs.b, cb.b));
        }
        case 4u: { return min(cb, cs); } // darken
        case 5u: { return max(cb, cs); } // lighten
        case 6u: { return vec3<f32>(dodge(cb.r, cs.r), dodge(cb.g, cs.g), dodge(cb.b, cs.b)); }
        case 7u: { return vec3<f32>(burn(cb.r, cs.r), burn(cb.g, cs.g), burn(cb.b, cs.b)); }
        case 8u: { // hard light
            return vec3<f32>(hard_light(cb.r, cs.r), hard_light(cb.g, cs.g), hard_light(cb.b, cs.b));
        }
        case 9u: {
            return vec3<f32>(soft_light(cb.r, cs.r), soft_light(cb.g, cs.g), soft_light(cb.b, cs.b));
        }
        case 10u: { return abs(cb - cs); } // difference
        case 11u: { return cb + cs - 2.0 * cb * cs; } // exclusion
        case 12u: { return set_lum(set_sat(cs, sat(cb)), lum(cb)); } // hue
        case 13u: { return set_lum(set_sat(cb, sat(cs)), lum(cb)); } // saturation
        case 14u: { return set_lum(cs, lum(cb)); } // color
        case 15u: { return set_lum(cb, lum(cs)); } // luminosity
        default: { return cs; } // normal
    }
}

@fragment
fn fs_blend(v: VOut) -> @location(0) vec4<f32> {
    let d = record(v);
    let s = source(d, v.pos.xy);
    let b = textureLoad(backdrop, vec2<i32>(floor(v.pos.xy)), 0);
    var cs = vec3<f32>(0.0);
    var cb = vec3<f32>(0.0);
    if s.a > 0.0 {
        cs = s.rgb / s.a;
    }
    if b.a > 0.0 {
        cb = b.rgb / b.a;
    }
    let mixed = clamp(mix_colors(d.mode.y, cb, cs), vec3<f32>(0.0), vec3<f32>(1.0));
    let rgb = s.rgb * (1.0 - b.a) + b.rgb * (1.0 - s.a) + s.a * b.a * mixed;
    return vec4<f32>(rgb, s.a + b.a * (1.0 - s.a));
}
