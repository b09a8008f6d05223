//! Roaring bitmap containers and the 32-bit portable serialization, reproducing the bytes Java
//! Paimon writes (`RoaringBitmap32`: `org.roaringbitmap.RoaringBitmap` 1.2.1, `or` then
//! `runOptimize` then `serialize`).
//!
//! Byte-exactness needs more than the set of values: Java keeps a container in its current
//! representation (array, bitmap or run) when another one would be exactly as large, so the result
//! of an OR depends on the representations of the inputs. [`Container::ior`] and
//! [`Container::run_optimize`] follow Java's rules for which representation an operation returns.

use datafusion::common::{exec_datafusion_err, Result};

/// Largest cardinality of an array container (`ArrayContainer.DEFAULT_MAX_SIZE`).
const ARRAY_MAX: u32 = 4096;
/// Words of a bitmap container.
const WORDS: usize = 1024;
/// Serialized size of a bitmap container.
const BITMAP_BYTES: u32 = 8192;

pub(crate) type Bits = Box<[u64; WORDS]>;

/// The low 16 bits of the values sharing one high part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Container {
    /// Sorted values.
    Array(Vec<u16>),
    Bitmap(Bits),
    /// Runs `(start, length - 1)`, as stored.
    Run(Vec<(u16, u16)>),
}

/// Which library a container belongs to; they differ in what `runOptimize` does to run containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `RoaringBitmap`: a run container may become an array or bitmap.
    Bitmap32,
    /// `Roaring64Bitmap`: a run container stays a run container.
    Bitmap64,
}

fn empty_bits() -> Bits {
    vec![0u64; WORDS]
        .into_boxed_slice()
        .try_into()
        .expect("1024 words")
}

fn set_range(bits: &mut [u64; WORDS], start: u32, end_inclusive: u32) {
    for v in start..=end_inclusive {
        bits[(v >> 6) as usize] |= 1 << (v & 63);
    }
}

/// Maximal runs of set bits.
fn runs_of_bits(bits: &[u64; WORDS]) -> Vec<(u16, u16)> {
    let mut runs = Vec::new();
    let mut start: Option<u32> = None;
    for v in 0..=65536u32 {
        let set = v < 65536 && bits[(v >> 6) as usize] & (1 << (v & 63)) != 0;
        match (set, start) {
            (true, None) => start = Some(v),
            (false, Some(s)) => {
                runs.push((s as u16, (v - 1 - s) as u16));
                start = None;
            }
            _ => {}
        }
    }
    runs
}

fn count_runs_of_bits(bits: &[u64; WORDS]) -> u32 {
    // A run starts at every set bit whose predecessor is clear.
    let mut runs = 0u32;
    let mut carry = 0u64;
    for &w in bits.iter() {
        let starts = w & !((w << 1) | carry);
        runs += starts.count_ones();
        carry = w >> 63;
    }
    runs
}

fn runs_of_sorted(values: &[u16]) -> Vec<(u16, u16)> {
    let mut runs: Vec<(u16, u16)> = Vec::new();
    for &v in values {
        match runs.last_mut() {
            Some((s, l)) if u32::from(*s) + u32::from(*l) + 1 == u32::from(v) => *l += 1,
            _ => runs.push((v, 0)),
        }
    }
    runs
}

fn values_of_bits(bits: &[u64; WORDS]) -> Vec<u16> {
    let mut out = Vec::new();
    for (i, &w) in bits.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            out.push((i * 64 + w.trailing_zeros() as usize) as u16);
            w &= w - 1;
        }
    }
    out
}

/// `RunContainer.serializedSizeInBytes(runs)`.
fn run_bytes(runs: u32) -> u32 {
    2 + 4 * runs
}

impl Container {
    pub(crate) fn cardinality(&self) -> u32 {
        match self {
            Container::Array(v) => v.len() as u32,
            Container::Bitmap(b) => b.iter().map(|w| w.count_ones()).sum(),
            Container::Run(r) => r.iter().map(|&(_, l)| u32::from(l) + 1).sum(),
        }
    }

    /// Java `getArraySizeInBytes` (the size of the serialized body).
    pub(crate) fn body_bytes(&self) -> u32 {
        match self {
            Container::Array(v) => 2 * v.len() as u32,
            Container::Bitmap(_) => BITMAP_BYTES,
            Container::Run(r) => run_bytes(r.len() as u32),
        }
    }

    fn to_bits(&self) -> Bits {
        match self {
            Container::Bitmap(b) => b.clone(),
            Container::Array(v) => {
                let mut bits = empty_bits();
                for &x in v {
                    bits[usize::from(x >> 6)] |= 1 << (x & 63);
                }
                bits
            }
            Container::Run(r) => {
                let mut bits = empty_bits();
                for &(s, l) in r {
                    set_range(&mut bits, u32::from(s), u32::from(s) + u32::from(l));
                }
                bits
            }
        }
    }

    /// Java `RunContainer.toEfficientContainer` applied to the content of `bits`, held as runs.
    fn efficient(bits: Bits) -> Container {
        Self::efficient_runs(runs_of_bits(&bits))
    }

    /// Java `RunContainer.toEfficientContainer` for a run container with exactly these runs.
    fn efficient_runs(runs: Vec<(u16, u16)>) -> Container {
        let card: u32 = runs.iter().map(|&(_, l)| u32::from(l) + 1).sum();
        if run_bytes(runs.len() as u32) <= BITMAP_BYTES.min(2 * card + 2) {
            return Container::Run(runs);
        }
        let mut bits = empty_bits();
        for &(s, l) in &runs {
            set_range(&mut bits, u32::from(s), u32::from(s) + u32::from(l));
        }
        if card <= ARRAY_MAX {
            Container::Array(values_of_bits(&bits))
        } else {
            Container::Bitmap(bits)
        }
    }

    /// Java `this.ior(other)`: the union, in the representation Java's in-place OR returns.
    pub(crate) fn ior(self, other: &Container) -> Container {
        use Container::*;
        let mut bits = self.to_bits();
        for (w, o) in bits.iter_mut().zip(other.to_bits().iter()) {
            *w |= o;
        }
        let card: u32 = bits.iter().map(|w| w.count_ones()).sum();
        let full = card == 65536;
        let full_run = || Run(vec![(0, u16::MAX)]);
        match (&self, other) {
            // ArrayContainer.ior(ArrayContainer), repaired through a bitmap when large.
            (Array(_), Array(_)) if card <= ARRAY_MAX => Array(values_of_bits(&bits)),
            (Array(_), Array(_)) if full => full_run(),
            (Array(_), Array(_)) => Bitmap(bits),
            // BitmapContainer.ior(ArrayContainer) never changes the representation.
            (Bitmap(_), Array(_)) => Bitmap(bits),
            // Unions producing a bitmap, or the full run container.
            (Array(_), Bitmap(_)) | (Bitmap(_), Bitmap(_)) | (Bitmap(_), Run(_)) | (Run(_), Bitmap(_)) => {
                if full {
                    full_run()
                } else {
                    Bitmap(bits)
                }
            }
            // Run-based unions end in toEfficientContainer.
            (Array(_), Run(_)) | (Run(_), Array(_)) | (Run(_), Run(_)) => Self::efficient(bits),
        }
    }

    /// Java `runOptimize` as applied by the bitmap's own `runOptimize`.
    pub(crate) fn run_optimize(self, flavor: Flavor) -> Container {
        match self {
            Container::Array(values) => {
                let runs = runs_of_sorted(&values);
                if 2 * values.len() as u32 > run_bytes(runs.len() as u32) {
                    Container::Run(runs)
                } else {
                    Container::Array(values)
                }
            }
            Container::Bitmap(bits) => {
                if BITMAP_BYTES > run_bytes(count_runs_of_bits(&bits)) {
                    Container::Run(runs_of_bits(&bits))
                } else {
                    Container::Bitmap(bits)
                }
            }
            Container::Run(runs) => match flavor {
                Flavor::Bitmap32 => Self::efficient_runs(runs),
                // Roaring64Bitmap.runOptimize only replaces a container by a run container.
                Flavor::Bitmap64 => Container::Run(runs),
            },
        }
    }

    /// Java `writeArray`: the little-endian body.
    pub(crate) fn write_body(&self, out: &mut Vec<u8>) {
        match self {
            Container::Array(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Container::Bitmap(b) => b.iter().for_each(|w| out.extend_from_slice(&w.to_le_bytes())),
            Container::Run(r) => {
                out.extend_from_slice(&(r.len() as u16).to_le_bytes());
                for &(s, l) in r {
                    out.extend_from_slice(&s.to_le_bytes());
                    out.extend_from_slice(&l.to_le_bytes());
                }
            }
        }
    }

    /// Reads a run container body.
    pub(crate) fn read_run(r: &mut Reader<'_>) -> Result<Container> {
        let n = r.u16()?;
        let runs = (0..n).map(|_| Ok((r.u16()?, r.u16()?))).collect::<Result<_>>()?;
        Ok(Container::Run(runs))
    }

    pub(crate) fn read_bitmap(r: &mut Reader<'_>) -> Result<Container> {
        let mut bits = empty_bits();
        for w in bits.iter_mut() {
            *w = r.u64()?;
        }
        Ok(Container::Bitmap(bits))
    }

    pub(crate) fn read_array(r: &mut Reader<'_>, cardinality: usize) -> Result<Container> {
        let values = (0..cardinality).map(|_| r.u16()).collect::<Result<_>>()?;
        Ok(Container::Array(values))
    }
}

#[cfg(test)]
impl Container {
    /// The values, ascending.
    pub(crate) fn values(&self) -> Vec<u16> {
        values_of_bits(&self.to_bits())
    }

    /// Java `Container.add` for array and bitmap containers.
    pub(crate) fn add(self, v: u16) -> Container {
        match self {
            Container::Array(mut a) => match a.binary_search(&v) {
                Ok(_) => Container::Array(a),
                Err(_) if a.len() >= ARRAY_MAX as usize => {
                    let mut bits = Container::Array(a).to_bits();
                    bits[usize::from(v >> 6)] |= 1 << (v & 63);
                    Container::Bitmap(bits)
                }
                Err(pos) => {
                    a.insert(pos, v);
                    Container::Array(a)
                }
            },
            Container::Bitmap(mut bits) => {
                bits[usize::from(v >> 6)] |= 1 << (v & 63);
                Container::Bitmap(bits)
            }
            Container::Run(_) => unimplemented!("not needed by tests"),
        }
    }
}

/// Little-endian reader over serialized bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, pos: 0, what }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end =
            end.ok_or_else(|| exec_datafusion_err!("Truncated {} ({} bytes)", self.what, self.bytes.len()))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    pub(crate) fn invalid(&self, detail: impl std::fmt::Display) -> datafusion::common::DataFusionError {
        exec_datafusion_err!("Invalid {}: {detail}", self.what)
    }
}

const SERIAL_COOKIE_NO_RUNCONTAINER: u32 = 12346;
const SERIAL_COOKIE: u32 = 12347;
const NO_OFFSET_THRESHOLD: usize = 4;

/// A 32-bit roaring bitmap: containers by high 16 bits, ascending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bitmap32 {
    containers: Vec<(u16, Container)>,
}

impl Bitmap32 {
    /// Java `RoaringBitmap.deserialize(ByteBuffer)` (the portable format).
    pub(crate) fn deserialize(bytes: &[u8]) -> Result<Self> {
        Self::deserialize_prefix(bytes, "roaring bitmap (rbm32)").map(|(bitmap, _)| bitmap)
    }

    /// Deserializes the bitmap at the start of `bytes`; returns it and the bytes it used (the
    /// 64-bit deletion-vector layout concatenates 32-bit bitmaps).
    pub(crate) fn deserialize_prefix(bytes: &[u8], what: &'static str) -> Result<(Self, usize)> {
        let mut r = Reader::new(bytes, what);
        let cookie = r.u32()?;
        let has_run = cookie & 0xFFFF == SERIAL_COOKIE;
        let size = if has_run {
            (cookie >> 16) as usize + 1
        } else if cookie == SERIAL_COOKIE_NO_RUNCONTAINER {
            r.u32()? as usize
        } else {
            return Err(r.invalid(format!("unknown cookie {cookie}")));
        };
        if size > 1 << 16 {
            return Err(r.invalid("too many containers"));
        }
        let run_flags = if has_run { r.take(size.div_ceil(8))? } else { &[] };
        let is_run = |k: usize| has_run && run_flags[k / 8] & (1 << (k % 8)) != 0;
        let mut headers = Vec::with_capacity(size);
        for _ in 0..size {
            headers.push((r.u16()?, r.u16()? as usize + 1));
        }
        if !has_run || size >= NO_OFFSET_THRESHOLD {
            r.take(4 * size)?;
        }
        let mut containers = Vec::with_capacity(size);
        for (k, (key, card)) in headers.into_iter().enumerate() {
            let c = if is_run(k) {
                Container::read_run(&mut r)?
            } else if card > ARRAY_MAX as usize {
                Container::read_bitmap(&mut r)?
            } else {
                Container::read_array(&mut r, card)?
            };
            containers.push((key, c));
        }
        Ok((Self { containers }, r.position()))
    }

    /// Number of values.
    pub(crate) fn cardinality(&self) -> u64 {
        self.containers
            .iter()
            .map(|(_, c)| u64::from(c.cardinality()))
            .sum()
    }

    /// Appends the values, ascending, to `out`, each plus `high` (the upper bits of a 64-bit
    /// bitmap's part).
    pub(crate) fn extend_values(&self, high: u64, out: &mut Vec<u64>) {
        for (key, c) in &self.containers {
            let base = high | (u64::from(*key) << 16);
            match c {
                Container::Array(values) => out.extend(values.iter().map(|v| base | u64::from(*v))),
                Container::Bitmap(bits) => {
                    for (w, word) in bits.iter().enumerate() {
                        let mut word = *word;
                        while word != 0 {
                            let bit = word.trailing_zeros() as u64;
                            out.push(base | ((w as u64) << 6) | bit);
                            word &= word - 1;
                        }
                    }
                }
                Container::Run(runs) => {
                    for (start, len_minus_one) in runs {
                        let start = u64::from(*start);
                        out.extend((start..=start + u64::from(*len_minus_one)).map(|v| base | v));
                    }
                }
            }
        }
    }

    /// Java `RoaringBitmap.or` (in place).
    pub(crate) fn or(&mut self, other: &Bitmap32) {
        let mine = std::mem::take(&mut self.containers);
        let mut out = Vec::with_capacity(mine.len() + other.containers.len());
        let mut theirs = other.containers.iter().peekable();
        for (key, c) in mine {
            while let Some((k2, c2)) = theirs.next_if(|(k2, _)| *k2 < key) {
                out.push((*k2, c2.clone()));
            }
            match theirs.next_if(|(k2, _)| *k2 == key) {
                Some((_, c2)) => out.push((key, c.ior(c2))),
                None => out.push((key, c)),
            }
        }
        out.extend(theirs.cloned());
        self.containers = out;
    }

    /// Java `runOptimize`.
    pub(crate) fn run_optimize(&mut self) {
        for (_, c) in self.containers.iter_mut() {
            let taken = std::mem::replace(c, Container::Array(Vec::new()));
            *c = taken.run_optimize(Flavor::Bitmap32);
        }
    }

    /// Java `RoaringBitmap.serialize` (the portable format).
    pub(crate) fn serialize(&self) -> Vec<u8> {
        let size = self.containers.len();
        let has_run = self
            .containers
            .iter()
            .any(|(_, c)| matches!(c, Container::Run(_)));
        let mut out = Vec::new();
        let mut offset;
        if has_run {
            out.extend_from_slice(&(SERIAL_COOKIE | (((size - 1) as u32) << 16)).to_le_bytes());
            let mut flags = vec![0u8; size.div_ceil(8)];
            for (i, (_, c)) in self.containers.iter().enumerate() {
                if matches!(c, Container::Run(_)) {
                    flags[i / 8] |= 1 << (i % 8);
                }
            }
            offset = if size < NO_OFFSET_THRESHOLD {
                4 + 4 * size + flags.len()
            } else {
                4 + 8 * size + flags.len()
            };
            out.extend_from_slice(&flags);
        } else {
            out.extend_from_slice(&SERIAL_COOKIE_NO_RUNCONTAINER.to_le_bytes());
            out.extend_from_slice(&(size as u32).to_le_bytes());
            offset = 4 + 4 + 8 * size;
        }
        for (key, c) in &self.containers {
            out.extend_from_slice(&key.to_le_bytes());
            out.extend_from_slice(&((c.cardinality() - 1) as u16).to_le_bytes());
        }
        if !has_run || size >= NO_OFFSET_THRESHOLD {
            for (_, c) in &self.containers {
                out.extend_from_slice(&(offset as u32).to_le_bytes());
                offset += c.body_bytes() as usize;
            }
        }
        for (_, c) in &self.containers {
            c.write_body(&mut out);
        }
        out
    }

    /// The values, ascending (tests).
    #[cfg(test)]
    pub(crate) fn values(&self) -> Vec<u32> {
        self.containers
            .iter()
            .flat_map(|(k, c)| {
                values_of_bits(&c.to_bits())
                    .into_iter()
                    .map(move |v| (u32::from(*k) << 16) | u32::from(v))
            })
            .collect()
    }

    /// Java `RoaringBitmap.bitmapOf`: an array container per high part, a bitmap container
    /// above 4096 values (what adding the values one by one gives).
    pub(crate) fn of(values: &[u32]) -> Self {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut containers: Vec<(u16, Vec<u16>)> = Vec::new();
        for v in sorted {
            let key = (v >> 16) as u16;
            match containers.last_mut() {
                Some((k, low)) if *k == key => low.push(v as u16),
                _ => containers.push((key, vec![v as u16])),
            }
        }
        let containers = containers
            .into_iter()
            .map(|(k, low)| {
                let c = Container::Array(low);
                if c.cardinality() > ARRAY_MAX {
                    (k, Container::Bitmap(c.to_bits()))
                } else {
                    (k, c)
                }
            })
            .collect();
        Bitmap32 { containers }
    }
}

/// Java `RoaringBitmap32`'s `or` of two serialized bitmaps: deserialize both, OR the second into
/// the first, `runOptimize`, serialize.
pub(crate) fn union32(acc: &[u8], input: &[u8]) -> Result<Vec<u8>> {
    let mut a = Bitmap32::deserialize(acc)?;
    a.or(&Bitmap32::deserialize(input)?);
    a.run_optimize();
    Ok(a.serialize())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::hex_bytes as hex;

    fn serialized(values: &[u32]) -> Vec<u8> {
        let mut b = Bitmap32::of(values);
        b.run_optimize();
        b.serialize()
    }

    #[test]
    fn portable_format_vectors() {
        // {1,2,3}: an array container (a run would be as large, so it stays an array).
        let one_two_three = hex("3A300000 01000000 0000 0200 10000000 0100 0200 0300");
        assert_eq!(serialized(&[1, 2, 3]), one_two_three);
        assert_eq!(
            Bitmap32::deserialize(&one_two_three).unwrap().values(),
            vec![1, 2, 3]
        );
        // {1,2,3,4}: a run container, no offsets below 4 containers.
        assert_eq!(
            serialized(&[1, 2, 3, 4]),
            hex("3B300000 01 0000 0300 0100 0100 0300")
        );
        // Empty bitmap.
        assert_eq!(serialized(&[]), hex("3A300000 00000000"));
        // Two containers, one of them a run: cookie carries size-1, one flag byte.
        assert_eq!(
            serialized(&[5, 65536, 65537, 65538, 65539]),
            hex("3B300100 02 0000 0000 0100 0300 0500 0100 0000 0300")
        );
        // Four containers with runs: offsets are written.
        let four = serialized(&[0, 1, 2, 3, 65536, 131072, 196608]);
        assert_eq!(
            four,
            hex("3B300300 01 0000 0300 0100 0000 0200 0000 0300 0000 \
                 25000000 2B000000 2D000000 2F000000 0100 0000 0300 0000 0000 0000")
        );
        assert_eq!(
            Bitmap32::deserialize(&four).unwrap().values(),
            vec![0, 1, 2, 3, 65536, 131072, 196608]
        );
    }

    #[test]
    fn bitmap_container_round_trip() {
        let values: Vec<u32> = (0..10000).map(|i| i * 2).collect();
        let bytes = serialized(&values);
        // cookie, size, 1 header, 1 offset, 8192 bytes of bitmap
        assert_eq!(bytes.len(), 8 + 4 + 4 + 8192);
        assert_eq!(&bytes[..16], &hex("3A300000 01000000 0000 0F27 10000000")[..]);
        assert_eq!(Bitmap32::deserialize(&bytes).unwrap().values(), values);
        assert_eq!(union32(&bytes, &serialized(&[])).unwrap(), bytes);
    }

    #[test]
    fn union_follows_java_representations() {
        // array ∪ array = {1..6}: 6 values, 1 run → run container.
        let u = union32(&serialized(&[1, 2, 3]), &serialized(&[4, 5, 6])).unwrap();
        assert_eq!(u, serialized(&[1, 2, 3, 4, 5, 6]));
        assert_eq!(u, hex("3B300000 01 0000 0500 0100 0100 0500"));
        // A tie stays in its representation: {1,2,3} as array or as run serialize differently.
        let as_run = hex("3B300000 01 0000 0200 0100 0100 0200");
        let as_array = serialized(&[1, 2, 3]);
        assert_eq!(union32(&as_run, &serialized(&[])).unwrap(), as_run);
        assert_eq!(union32(&as_array, &serialized(&[])).unwrap(), as_array);
        // run ∪ array: toEfficientContainer keeps a run of {1,2,3} ∪ {10}? 2 runs, 4 values:
        // run size 10 > array size 10? (2+4*2=10 <= 2*4+2=10) → run.
        let u = union32(&as_run, &serialized(&[10])).unwrap();
        assert_eq!(u, hex("3B300000 01 0000 0300 0200 0100 0200 0A00 0000"));
        // while array ∪ array of the same values stays an array (8 > 10 is false).
        let u = union32(&as_array, &serialized(&[10])).unwrap();
        assert_eq!(u, hex("3A300000 01000000 0000 0300 10000000 0100 0200 0300 0A00"));
        // Different keys interleave.
        let u = union32(&serialized(&[70000]), &serialized(&[1, 200000])).unwrap();
        assert_eq!(
            Bitmap32::deserialize(&u).unwrap().values(),
            vec![1, 70000, 200000]
        );
        assert_eq!(u, serialized(&[1, 70000, 200000]));
    }

    /// Unions computed by Java RoaringBitmap 1.2.1 exactly as Paimon's `FieldRoaringBitmap32Agg`
    /// does (deserialize, `or`, `runOptimize`, serialize): `(acc, input, result)`.
    #[test]
    fn java_generated_unions() {
        let cases = [
            (
                "3b300000010700ffff01000000ffff",
                "3b30000001ffffffff01000000ffff",
                "3b300100030700ffffffffffff01000000ffff01000000ffff",
            ),
            (
                "3b30000001ffff7f010200b00f0800b4447601",
                "3a30000001000000ffff00001000000099cf",
                "3b30000001ffff80010300b00f0800b444760199cf0000",
            ),
            (
                "3a3000000100000001000200100000004a004c004e00",
                "3b300000010300ffff01000000ffff",
                "3b30010002010002000300ffff4a004c004e0001000000ffff",
            ),
        ];
        for (acc, input, result) in cases {
            assert_eq!(union32(&hex(acc), &hex(input)).unwrap(), hex(result));
        }
    }

    #[test]
    fn large_unions() {
        let evens: Vec<u32> = (0..3000).map(|i| i * 2).collect();
        let odds: Vec<u32> = (0..3000).map(|i| i * 2 + 1).collect();
        // array ∪ array above 4096 values: a bitmap, then one run [0, 5999].
        let u = union32(&serialized(&evens), &serialized(&odds)).unwrap();
        assert_eq!(u, hex("3B300000 01 0000 6F17 0100 0000 6F17"));
        // Full container.
        let lo: Vec<u32> = (0..32768).collect();
        let hi: Vec<u32> = (32768..65536).collect();
        let u = union32(&serialized(&lo), &serialized(&hi)).unwrap();
        assert_eq!(u, hex("3B300000 01 0000 FFFF 0100 0000 FFFF"));
        let b = Bitmap32::deserialize(&u).unwrap();
        assert_eq!(b.values().len(), 65536);
    }

    #[test]
    fn invalid_input() {
        assert!(Bitmap32::deserialize(&[1, 2, 3, 4]).is_err());
        assert!(Bitmap32::deserialize(&hex("3A300000 01000000 0000")).is_err());
    }
}
