//! Our DEFLATE writer for filtered PNG rows: one dynamic-Huffman block per strip, its code
//! fitted to the strip's own byte counts, zero runs as distance-1 matches, literals written
//! through a 64-bit bit buffer stored eight bytes at a time into a reused scratch buffer.
//!
//! It does what fdeflate's `Compressor` does (literals, and runs of zeros as matches of
//! distance 1) with two differences that make it faster and its output smaller on ads:
//! the Huffman code is built from the strip's counts (fdeflate's is one fixed code for all
//! images), and the bit buffer is written with one unaligned 8-byte store per flush into a
//! buffer sized for the worst case (fdeflate appends through `Write::write_all` every 64
//! bits). No string matching: a filtered ad is mostly small residuals (photos, gradients)
//! and runs of zeros (flat colour), which is what fpnge encodes too.
//!
//! Format of a strip (RFC 1951): `BFINAL`, `BTYPE = 10`, `HLIT = 29` (286 literal / length
//! codes), `HDIST = 1` (two distance codes of one bit each: code 0, distance 1, is `0`),
//! `HCLEN = 15` (all 19 code-length codes; lengths 0–15 get four bits each, a complete
//! code, 16–18 none), the 288 code lengths as those 4-bit codes, the data, the end-of-block
//! code. A strip that is not the last then writes an empty stored block (three zero bits,
//! padding to the byte, `00 00 FF FF`, as zlib's sync flush does) so the next strip starts
//! on a byte boundary: strips compressed apart concatenate into one stream.

/// Longest code. With at most 12 bits a literal, four literals (48 bits) fit between two
/// flushes of the bit buffer; 12 bits leave 2^12 leaves for 286 symbols, so the limit costs
/// nothing measurable in size.
const MAX_BITS: u32 = 12;

/// Literal / length symbols written (0–255 literals, 256 end of block, 257–285 lengths).
const SYMBOLS: usize = 286;

/// Base length of each length symbol 257–285, and its extra bits (RFC 1951, 3.2.5).
const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];

/// Order in which the code-length code lengths are sent (RFC 1951, 3.2.7).
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

thread_local! {
    /// The table of two literals ([`pairs`]), reused per thread (256 KiB).
    static PAIRS: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most bytes [`compress`] writes for `n` bytes of data: every literal at most
/// [`MAX_BITS`] (a run costs fewer bits a byte than its bytes as literals), the header,
/// and eight bytes of slack for the last 8-byte store.
pub fn bound(n: usize) -> usize {
    n * MAX_BITS as usize / 8 + 256
}

/// A Huffman code for one strip: per literal, and per match length 3–258 with its extra
/// bits and the distance code appended, `code | bits << 32` (the code bit-reversed, ready
/// for an LSB-first writer).
struct Code {
    lit: [u64; 256],
    /// The literals' codes and lengths apart, for the main loop of [`body`].
    eob: u64,
    run: [u64; 259],
    lens: [u8; SYMBOLS],
}

/// Counts the bytes of `data` for its code, on a sample: one 4 KiB piece in four (all of
/// data under 16 KiB). A code fitted to a quarter of the bytes is within a fraction of a
/// percent of one fitted to all of them, for a quarter of the counting. Whole zero words
/// are left out (they become runs); each run of them counts one literal zero (the run's
/// first byte) and one match. Returns the counts, the zero words and the runs.
fn count(data: &[u8]) -> ([u32; SYMBOLS], u32, u32) {
    let mut h = [[0u32; 256]; 4];
    let (mut runs, mut zero_words) = (0u32, 0u32);
    let step = if data.len() < 4 * SAMPLE { 1 } else { 4 };
    for piece in data.chunks(SAMPLE).step_by(step) {
        let mut in_run = false;
        let mut words = piece.chunks_exact(8);
        for c in &mut words {
            let x = word(c);
            if x == 0 {
                zero_words += 1;
                runs += u32::from(!in_run);
                in_run = true;
                continue;
            }
            in_run = false;
            for k in 0..2 {
                for j in 0..4 {
                    h[j][c[k * 4 + j] as usize] += 1;
                }
            }
        }
        for &b in words.remainder() {
            h[0][b as usize] += 1;
        }
    }
    let mut f = [0u32; SYMBOLS];
    for (i, v) in f.iter_mut().take(256).enumerate() {
        *v = h[0][i] + h[1][i] + h[2][i] + h[3][i];
    }
    f[0] += runs;
    (f, zero_words, runs)
}

/// Bytes of one piece of the sample [`count`] takes.
const SAMPLE: usize = 4096;

fn word(c: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(c);
    u64::from_le_bytes(b)
}

impl Code {
    /// The code for data with these counts. Every symbol gets a code (a count of at least
    /// one), so any byte can be written and the code is complete, as zlib requires.
    fn fit(mut freq: [u32; SYMBOLS], zero_words: u32, runs: u32) -> Code {
        freq[256] = 1;
        for (i, f) in freq.iter_mut().enumerate().skip(257) {
            // Runs are mostly long (flat colour): the 258 match the most common.
            *f = if i == 285 { zero_words / 32 } else { runs / 16 };
        }
        for f in &mut freq {
            *f = (*f).max(1);
        }
        let lens = limited_lengths(&freq);
        let codes = canonical(&lens);
        let entry = |s: usize| codes[s] | (u64::from(lens[s]) << 32);
        let mut lit = [0u64; 256];
        for (s, e) in lit.iter_mut().enumerate() {
            *e = entry(s);
        }
        let mut run = [0u64; 259];
        for (len, e) in run.iter_mut().enumerate().skip(3) {
            let s = match LEN_BASE.iter().rposition(|&b| usize::from(b) <= len) {
                Some(s) => s,
                None => continue,
            };
            let (c, n) = (codes[257 + s], u64::from(lens[257 + s]));
            let extra = u64::from(LEN_EXTRA[s]);
            let v = (len - usize::from(LEN_BASE[s])) as u64;
            // The code, its extra bits, then distance code 0 (one `0` bit).
            *e = (c | (v << n)) | ((n + extra + 1) << 32);
        }
        Code {
            lit,
            eob: entry(256),
            run,
            lens,
        }
    }
}

/// Fills `t` with the table of two literals `a`, `b` at `a | b << 8`: their codes joined,
/// `| length << 24` (at most 24 bits of code: two of [`MAX_BITS`]).
fn pairs(lit: &[u64; 256], t: &mut Vec<u32>) {
    t.resize(1 << 16, 0);
    for (b, row) in t.chunks_exact_mut(256).enumerate() {
        let (cb, lb) = (lit[b] as u32, (lit[b] >> 32) as u32);
        for (e, &la) in row.iter_mut().zip(lit) {
            let (ca, na) = (la as u32, (la >> 32) as u32);
            *e = ca | (cb << na) | ((na + lb) << 24);
        }
    }
}

/// Huffman code lengths for `freq`, none longer than [`MAX_BITS`]: while the tree is too
/// deep the counts are halved (kept at least one) and the tree built again, which flattens
/// it; equal counts give at most nine bits for 286 symbols.
fn limited_lengths(freq: &[u32; SYMBOLS]) -> [u8; SYMBOLS] {
    let mut f = *freq;
    loop {
        let lens = lengths(&f);
        if lens.iter().all(|&l| u32::from(l) <= MAX_BITS) {
            return lens;
        }
        for v in &mut f {
            *v = (*v / 2).max(1);
        }
    }
}

/// Huffman code lengths (every count at least one, so every symbol is a leaf) by the
/// two-queue method over the leaves sorted by count.
fn lengths(freq: &[u32; SYMBOLS]) -> [u8; SYMBOLS] {
    let mut order: Vec<usize> = (0..SYMBOLS).collect();
    order.sort_by_key(|&s| (freq[s], s));
    // Nodes: the leaves (in sorted order), then the internal nodes as they are made.
    let n = SYMBOLS;
    let mut weight: Vec<u64> = order.iter().map(|&s| u64::from(freq[s])).collect();
    let mut parent = vec![0usize; 2 * n - 1];
    weight.reserve(n - 1);
    let (mut leaf, mut inner) = (0usize, n);
    for made in n..2 * n - 1 {
        let mut pick = || {
            if leaf < n && (inner >= made || weight[leaf] <= weight[inner]) {
                leaf += 1;
                leaf - 1
            } else {
                inner += 1;
                inner - 1
            }
        };
        let (a, b) = (pick(), pick());
        weight.push(weight[a] + weight[b]);
        parent[a] = made;
        parent[b] = made;
    }
    // Depths from the root (the last node) down: each node's parent was made after it.
    let mut depth = vec![0u8; 2 * n - 1];
    for i in (0..2 * n - 2).rev() {
        depth[i] = depth[parent[i]].saturating_add(1);
    }
    let mut lens = [0u8; SYMBOLS];
    for (i, &s) in order.iter().enumerate() {
        lens[s] = depth[i];
    }
    lens
}

/// Canonical codes for `lens` (RFC 1951, 3.2.2), bit-reversed for an LSB-first writer.
fn canonical(lens: &[u8; SYMBOLS]) -> [u64; SYMBOLS] {
    let mut count = [0u32; 16];
    for &l in lens {
        count[usize::from(l)] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; 16];
    let mut code = 0u32;
    for bits in 1..16 {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    let mut out = [0u64; SYMBOLS];
    for (s, &l) in lens.iter().enumerate() {
        if l > 0 {
            let c = next[usize::from(l)];
            next[usize::from(l)] += 1;
            out[s] = u64::from(c.reverse_bits() >> (32 - u32::from(l)));
        }
    }
    out
}

/// An LSB-first bit writer over a buffer with room for the worst case: between two
/// [`Bits::flush`]es at most 56 bits may be put.
struct Bits<'a> {
    out: &'a mut [u8],
    pos: usize,
    acc: u64,
    n: u32,
}

impl Bits<'_> {
    #[inline(always)]
    fn put(&mut self, e: u64) {
        self.acc |= (e & 0xffff_ffff) << self.n;
        self.n += (e >> 32) as u32;
    }

    #[inline(always)]
    fn flush(&mut self) {
        self.out[self.pos..self.pos + 8].copy_from_slice(&self.acc.to_le_bytes());
        let bytes = self.n / 8;
        self.pos += bytes as usize;
        self.acc = self.acc.checked_shr(bytes * 8).unwrap_or(0);
        self.n -= bytes * 8;
    }

    /// Writes the partial byte left in the buffer (zero bits above the data).
    fn finish(mut self) -> usize {
        self.flush();
        self.pos + self.n.div_ceil(8) as usize
    }
}

/// Compresses `data` as one block into `out` (at least [`bound`] bytes long; its start is
/// overwritten) and returns the length written. `last`: the stream's final block
/// (`BFINAL`), else an empty stored block follows so the next strip starts on a byte
/// boundary. No zlib header or checksum.
pub fn compress(data: &[u8], last: bool, out: &mut [u8]) -> usize {
    let (freq, zero_words, runs) = count(data);
    let sampled = if data.len() < 4 * SAMPLE {
        data.len()
    } else {
        data.len() / 4
    };
    let code = Code::fit(freq, zero_words, runs);
    let mut w = Bits {
        out,
        pos: 0,
        acc: 0,
        n: 0,
    };
    header(&mut w, &code, last);
    if zero_words as usize * 8 * 8 > sampled * 7 {
        // Mostly runs (flat colour): the pair table would cost more than it saves.
        body(&mut w, &code, None, data);
    } else {
        PAIRS.with_borrow_mut(|pair| {
            pairs(&code.lit, pair);
            body(&mut w, &code, Some(pair), data);
        });
    }
    w.put(code.eob);
    if !last {
        w.put(3 << 32); // BFINAL 0, BTYPE 00: a stored block
        w.flush();
        w.n = w.n.div_ceil(8) * 8; // padding to the byte
        w.flush();
        w.put(0xffff_0000 | (32 << 32)); // LEN 0, NLEN 0xFFFF
    }
    w.finish()
}

fn header(w: &mut Bits, code: &Code, last: bool) {
    // BFINAL, BTYPE 2 (dynamic), HLIT 286 - 257, HDIST 2 - 1, HCLEN 19 - 4.
    let bits = u64::from(last) | (2 << 1) | (29 << 3) | (1 << 8) | (15 << 13);
    w.put(bits | (17 << 32));
    w.flush();
    // Code-length code: lengths 0-15 four bits each (16-18 unused), in CL_ORDER, 3 bits each.
    for pair in CL_ORDER.chunks(2) {
        let mut e = 0u64;
        let mut n = 0;
        for &s in pair {
            e |= if s < 16 { 4 << n } else { 0 };
            n += 3;
        }
        w.put(e | (n << 32));
        w.flush();
    }
    // Literal / length code lengths, then the two distance codes (one bit each); the
    // canonical 4-bit code of length value v is v itself, sent most significant bit first.
    let rev4 = |v: u8| u64::from(v.reverse_bits() >> 4);
    for chunk in code.lens.chunks(8).chain(std::iter::once(&[1u8, 1][..])) {
        for &l in chunk {
            w.put(rev4(l) | (4 << 32));
        }
        w.flush();
    }
}

/// The data: literals, and each run of whole zero words (eight bytes at a time) as a
/// literal zero and matches of distance 1. A zero byte inside a word that is not all zeros
/// is a literal: finding runs by the byte would take a branch per byte in photos, whose
/// residuals are often zero, for a few bits a run.
fn body(w: &mut Bits, code: &Code, pair: Option<&[u32]>, data: &[u8]) {
    let lit = &code.lit;
    // As an array, so the lookups by a 16-bit index need no bounds check.
    let pair: Option<&[u32; 1 << 16]> = pair.and_then(|p| p.try_into().ok());
    // The writer's state in locals, so it stays in registers through the loop.
    let (out, mut pos, mut acc, mut n) = (&mut *w.out, w.pos, w.acc, w.n);
    macro_rules! put {
        ($e:expr) => {{
            let e: u64 = $e;
            acc |= (e & 0xffff_ffff) << n;
            n += (e >> 32) as u32;
        }};
    }
    macro_rules! flush {
        () => {{
            out[pos..pos + 8].copy_from_slice(&acc.to_le_bytes());
            let bytes = n / 8;
            pos += bytes as usize;
            acc = acc.checked_shr(bytes * 8).unwrap_or(0);
            n -= bytes * 8;
        }};
    }
    let mut run = 0usize;
    let mut words = data.chunks_exact(8);
    for c in &mut words {
        if word(c) == 0 {
            run += 8;
            continue;
        }
        if run > 0 {
            // A literal zero, then matches of 258 and the rest (a run is at least 8 bytes).
            put!(lit[0]);
            let mut rest = run - 1;
            while rest >= 258 {
                flush!();
                put!(code.run[258]);
                rest -= 258;
            }
            flush!();
            if rest >= 3 {
                put!(code.run[rest]);
            } else {
                for _ in 0..rest {
                    put!(lit[0]);
                }
            }
            flush!();
            run = 0;
        }
        let x = word(c);
        match pair {
            // Two literals a lookup, two lookups joined before they meet the bit buffer.
            Some(pair) => {
                for half in [x, x >> 32] {
                    let e0 = pair[(half & 0xffff) as usize];
                    let e1 = pair[((half >> 16) & 0xffff) as usize];
                    let (n0, n1) = (e0 >> 24, e1 >> 24);
                    let bits = u64::from(e0 & 0xff_ffff) | (u64::from(e1 & 0xff_ffff) << n0);
                    acc |= bits << n;
                    n += n0 + n1;
                    flush!();
                }
            }
            None => {
                for q in c.chunks_exact(4) {
                    for &b in q {
                        put!(lit[b as usize]);
                    }
                    flush!();
                }
            }
        }
    }
    (w.pos, w.acc, w.n) = (pos, acc, n);
    if run > 0 {
        zeros(w, code, run);
    }
    for &b in words.remainder() {
        w.put(lit[b as usize]);
        w.flush();
    }
}

/// `n` zero bytes: a literal zero, then matches of distance 1 (258 bytes each, then the
/// rest), a rest shorter than a match written as literals.
fn zeros(w: &mut Bits, code: &Code, n: usize) {
    w.put(code.lit[0]);
    w.flush();
    let mut rest = n - 1;
    while rest >= 258 {
        w.put(code.run[258]);
        w.flush();
        rest -= 258;
    }
    if rest >= 3 {
        w.put(code.run[rest]);
    } else {
        for _ in 0..rest {
            w.put(code.lit[0]);
        }
    }
    w.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zlib(strips: &[&[u8]]) -> Vec<u8> {
        let mut out = vec![0x78, 0x01];
        let mut all = Vec::new();
        for (i, s) in strips.iter().enumerate() {
            let mut buf = vec![0u8; bound(s.len())];
            let n = compress(s, i + 1 == strips.len(), &mut buf);
            out.extend_from_slice(&buf[..n]);
            all.extend_from_slice(s);
        }
        let mut a = simd_adler32::Adler32::new();
        a.write(&all);
        out.extend_from_slice(&a.finish().to_be_bytes());
        out
    }

    /// Data of every kind (empty, one byte, all zeros, zero runs of every length around
    /// the match limits, noise, skewed counts that make deep trees), alone and as strips of
    /// one stream: each inflates to exactly what was written.
    #[test]
    fn inflates_to_the_data() {
        let mut cases: Vec<Vec<u8>> = vec![vec![], vec![7], vec![0], vec![0; 100_000]];
        for run in [
            1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 258, 259, 260, 261, 516, 1000,
        ] {
            let mut v = Vec::new();
            for k in 0..50usize {
                v.extend(std::iter::repeat_n(0u8, run + k % 9));
                v.extend_from_slice(&[(k as u8) | 1, 3, 250]);
            }
            cases.push(v);
        }
        cases.push(
            (0..300_000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
                .collect(),
        );
        // Fibonacci-like counts: an unlimited Huffman tree would be far deeper than 12.
        let mut skew = Vec::new();
        let (mut a, mut b) = (1usize, 1usize);
        for s in 1..=25u8 {
            skew.extend(std::iter::repeat_n(s, a));
            (a, b) = (b, a + b);
        }
        cases.push(skew);
        for c in &cases {
            let z = zlib(&[c]);
            assert!(
                fdeflate::decompress_to_vec(&z).ok().as_ref() == Some(c),
                "{} bytes",
                c.len()
            );
        }
        let parts: Vec<&[u8]> = cases.iter().map(Vec::as_slice).collect();
        let z = zlib(&parts);
        assert!(fdeflate::decompress_to_vec(&z).ok() == Some(cases.concat()));
    }

    #[test]
    fn lengths_are_limited_and_complete() {
        let mut f = [1u32; SYMBOLS];
        let mut x = 1u32;
        for v in f.iter_mut().take(40) {
            *v = x;
            x = x.saturating_mul(2);
        }
        let lens = limited_lengths(&f);
        assert!(lens.iter().all(|&l| (1..=MAX_BITS as u8).contains(&l)));
        let kraft: f64 = lens.iter().map(|&l| 0.5f64.powi(i32::from(l))).sum();
        assert!((kraft - 1.0).abs() < 1e-12, "complete: {kraft}");
    }
}
