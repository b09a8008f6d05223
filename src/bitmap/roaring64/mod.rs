//! The serialization of Java's `org.roaringbitmap.longlong.Roaring64Bitmap` (RoaringBitmap
//! 1.2.1), which Paimon's `RoaringBitmap64` stores (`runOptimize` then `serialize(DataOutput)`).
//!
//! This is not the portable 64-bit format but a dump of Java's in-memory structure: an adaptive
//! radix tree (ART) over the high 48 bits whose leaves point into a two-level array of containers.
//! All integers are little-endian. Layout:
//!
//! ```text
//! u8 tag (0 = empty: nothing follows, 1 = not empty)
//! i64 keySize, then the ART nodes depth-first (a node, then its children by ascending key byte):
//!   u8 type (0 Node4, 1 Node16, 2 Node48, 3 Node256, 4 Leaf), i16 count, i8 prefixLength,
//!   prefix bytes, body: Node4 u32 keys | Node16 u64 u64 keys | Node48 32 x u64 child index |
//!   Node256 4 x u64 child mask | Leaf 6 key bytes + i64 container index (first << 32 | second)
//! i32 number of container arrays, per array: u8 0xFE, i32 capacity, per slot: u8 0 (empty) or
//!   u8 1, u8 kind (0 run, 1 bitmap, 2 array), i32 cardinality, body
//! i64 container count, i32 first-level index, i32 second-level index
//! ```
//!
//! Since the bytes depend on insertion history (node growth, capacity growth, container slots),
//! the union replays exactly what Java's `or` does on the deserialized structure.

use datafusion::common::Result;

use super::roaring::{Container, Flavor, Reader};

const NODE4: u8 = 0;
const NODE16: u8 = 1;
const NODE48: u8 = 2;
const NODE256: u8 = 3;
const LEAF: u8 = 4;
const EMPTY48: u8 = 0xFF;

/// Common node header.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    count: i16,
    prefix: Vec<u8>,
}

impl Header {
    fn new(prefix: Vec<u8>) -> Self {
        Header { count: 0, prefix }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Body {
    Leaf {
        key: [u8; 6],
        container: u64,
    },
    /// Key bytes big-endian in a u32, position `i` at bits `(3 - i) * 8`.
    Node4 {
        keys: u32,
    },
    /// Key bytes big-endian in two u64.
    Node16 {
        first: u64,
        second: u64,
    },
    /// Child slot per key byte, big-endian in 32 u64; 0xFF = none.
    Node48 {
        index: Box<[u64; 32]>,
    },
    /// Bit per present key byte.
    Node256 {
        mask: [u64; 4],
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    header: Header,
    body: Body,
    children: Vec<Option<Node>>,
}

fn node48_get(index: &[u64; 32], pos: usize) -> u8 {
    (index[pos >> 3] >> ((7 - (pos & 7)) << 3)) as u8
}

fn node48_set(index: &mut [u64; 32], pos: usize, v: u8) {
    let shift = (7 - (pos & 7)) << 3;
    index[pos >> 3] = (index[pos >> 3] & !(0xFFu64 << shift)) | (u64::from(v) << shift);
}

/// Java's insertion sort of key bytes `0..=last` with their children (keys are distinct, so
/// this is a stable sort by unsigned byte).
fn sort_keys(keys: &mut [u8], children: &mut [Option<Node>], last: usize) {
    let mut pairs: Vec<(u8, Option<Node>)> = (0..=last).map(|i| (keys[i], children[i].take())).collect();
    pairs.sort_by_key(|p| p.0);
    for (i, (k, c)) in pairs.into_iter().enumerate() {
        keys[i] = k;
        children[i] = c;
    }
}

impl Node {
    fn leaf(key: [u8; 6], container: u64) -> Node {
        Node {
            header: Header::new(Vec::new()),
            body: Body::Leaf { key, container },
            children: Vec::new(),
        }
    }

    fn node4(prefix: Vec<u8>) -> Node {
        Node {
            header: Header::new(prefix),
            body: Body::Node4 { keys: 0 },
            children: vec![None; 4],
        }
    }

    fn count(&self) -> usize {
        self.header.count.max(0) as usize
    }

    /// Child slots in ascending key order (Java `getNextLargerPos` iteration).
    fn ordered_slots(&self) -> Vec<usize> {
        match &self.body {
            Body::Leaf { .. } => Vec::new(),
            Body::Node4 { .. } | Body::Node16 { .. } => (0..self.count()).collect(),
            Body::Node48 { index } => (0..256)
                .map(|p| node48_get(index, p))
                .filter(|&i| i != EMPTY48)
                .map(usize::from)
                .collect(),
            Body::Node256 { mask } => (0..256)
                .filter(|&p| mask[p >> 6] & (1 << (p & 63)) != 0)
                .collect(),
        }
    }

    /// Java `getChildPos` followed by `getChild`: the child slot for key byte `b`.
    fn child_slot(&self, b: u8) -> Option<usize> {
        match &self.body {
            Body::Leaf { .. } => None,
            Body::Node4 { keys } => (0..self.count()).find(|&i| (keys >> ((3 - i) * 8)) as u8 == b),
            Body::Node16 { first, second } => (0..self.count()).find(|&i| {
                let v = if i < 8 { first } else { second };
                (v >> ((7 - (i & 7)) * 8)) as u8 == b
            }),
            Body::Node48 { index } => {
                let i = node48_get(index, usize::from(b));
                (i != EMPTY48).then_some(usize::from(i))
            }
            Body::Node256 { .. } => {
                let p = usize::from(b);
                self.children.get(p).and_then(|c| c.as_ref()).map(|_| p)
            }
        }
    }

    /// Java `Node.insertLeaf`/`NodeX.insert`: adds `child` under key byte `b`, growing the node.
    fn insert_child(mut self, child: Node, b: u8) -> Node {
        let count = self.count();
        match &mut self.body {
            Body::Leaf { .. } => unreachable!("leaves have no children"),
            Body::Node4 { keys } if count < 4 => {
                let mut bytes = keys.to_be_bytes();
                bytes[count] = b;
                self.children[count] = Some(child);
                sort_keys(&mut bytes, &mut self.children, count);
                *keys = u32::from_be_bytes(bytes);
                self.header.count += 1;
                self
            }
            Body::Node4 { keys } => {
                let mut children = std::mem::take(&mut self.children);
                children.resize(16, None);
                let grown = Node {
                    header: Header {
                        count: 4,
                        prefix: self.header.prefix,
                    },
                    body: Body::Node16 {
                        first: u64::from(*keys) << 32,
                        second: 0,
                    },
                    children,
                };
                grown.insert_child(child, b)
            }
            Body::Node16 { first, second } if count < 16 => {
                let mut bytes = [0u8; 16];
                bytes[..8].copy_from_slice(&first.to_be_bytes());
                bytes[8..].copy_from_slice(&second.to_be_bytes());
                bytes[count] = b;
                self.children[count] = Some(child);
                sort_keys(&mut bytes, &mut self.children, count);
                *first = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
                *second = u64::from_be_bytes(bytes[8..].try_into().expect("8 bytes"));
                self.header.count += 1;
                self
            }
            Body::Node16 { first, second } => {
                let mut index = [u64::MAX; 32];
                let bytes: Vec<u8> = first
                    .to_be_bytes()
                    .into_iter()
                    .chain(second.to_be_bytes())
                    .collect();
                let mut children = std::mem::take(&mut self.children);
                for (i, &k) in bytes.iter().enumerate().take(count) {
                    node48_set(&mut index, usize::from(k), i as u8);
                }
                children.resize(48, None);
                let grown = Node {
                    header: Header {
                        count: self.header.count,
                        prefix: self.header.prefix,
                    },
                    body: Body::Node48 {
                        index: Box::new(index),
                    },
                    children,
                };
                grown.insert_child(child, b)
            }
            Body::Node48 { index } if count < 48 => {
                let mut pos = count;
                if self.children[pos].is_some() {
                    pos = self.children.iter().position(Option::is_none).expect("free slot");
                }
                self.children[pos] = Some(child);
                node48_set(index, usize::from(b), pos as u8);
                self.header.count += 1;
                self
            }
            Body::Node48 { index } => {
                let mut mask = [0u64; 4];
                let mut children = vec![None; 256];
                for p in 0..256 {
                    let i = node48_get(index, p);
                    if i != EMPTY48 {
                        children[p] = self.children[usize::from(i)].take();
                        mask[p >> 6] |= 1 << (p & 63);
                    }
                }
                let grown = Node {
                    header: Header {
                        count: self.header.count,
                        prefix: self.header.prefix,
                    },
                    body: Body::Node256 { mask },
                    children,
                };
                grown.insert_child(child, b)
            }
            Body::Node256 { mask } => {
                let p = usize::from(b);
                self.header.count += 1;
                self.children[p] = Some(child);
                mask[p >> 6] |= 1 << (p & 63);
                self
            }
        }
    }

    fn serialize(&self, out: &mut Vec<u8>) {
        let kind = match self.body {
            Body::Node4 { .. } => NODE4,
            Body::Node16 { .. } => NODE16,
            Body::Node48 { .. } => NODE48,
            Body::Node256 { .. } => NODE256,
            Body::Leaf { .. } => LEAF,
        };
        out.push(kind);
        out.extend_from_slice(&self.header.count.to_le_bytes());
        out.push(self.header.prefix.len() as u8);
        out.extend_from_slice(&self.header.prefix);
        match &self.body {
            Body::Leaf { key, container } => {
                out.extend_from_slice(key);
                out.extend_from_slice(&container.to_le_bytes());
            }
            Body::Node4 { keys } => out.extend_from_slice(&keys.to_le_bytes()),
            Body::Node16 { first, second } => {
                out.extend_from_slice(&first.to_le_bytes());
                out.extend_from_slice(&second.to_le_bytes());
            }
            Body::Node48 { index } => index.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
            Body::Node256 { mask } => mask.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        }
        for slot in self.ordered_slots() {
            if let Some(child) = &self.children[slot] {
                child.serialize(out);
            }
        }
    }

    /// Reads a node whose path so far consumed `depth` key bytes.
    fn deserialize(r: &mut Reader<'_>, depth: usize) -> Result<Node> {
        let kind = r.u8()?;
        let count = r.u16()? as i16;
        let prefix_len = r.u8()? as i8;
        let prefix = if prefix_len > 0 {
            r.take(prefix_len as usize)?.to_vec()
        } else {
            Vec::new()
        };
        let header = Header { count, prefix };
        let (body, capacity) = match kind {
            LEAF => {
                let key: [u8; 6] = r.take(6)?.try_into().expect("6 bytes");
                let container = r.u64()?;
                return Ok(Node {
                    header,
                    body: Body::Leaf { key, container },
                    children: Vec::new(),
                });
            }
            NODE4 => (Body::Node4 { keys: r.u32()? }, 4),
            NODE16 => (
                Body::Node16 {
                    first: r.u64()?,
                    second: r.u64()?,
                },
                16,
            ),
            NODE48 => {
                let mut index = [0u64; 32];
                for v in index.iter_mut() {
                    *v = r.u64()?;
                }
                (
                    Body::Node48 {
                        index: Box::new(index),
                    },
                    48,
                )
            }
            NODE256 => {
                let mut mask = [0u64; 4];
                for v in mask.iter_mut() {
                    *v = r.u64()?;
                }
                (Body::Node256 { mask }, 256)
            }
            other => return Err(r.invalid(format!("unknown node type {other}"))),
        };
        if count < 0 || count as usize > capacity {
            return Err(r.invalid(format!("node count {count}")));
        }
        // An inner node consumes its prefix and one key byte of the 6-byte high part.
        let consumed = depth + header.prefix.len() + 1;
        if consumed > 6 {
            return Err(r.invalid("tree deeper than the 48-bit key"));
        }
        let mut node = Node {
            header,
            body,
            children: vec![None; capacity],
        };
        let slots = node.ordered_slots();
        if slots.len() != node.count() || slots.iter().any(|&s| s >= capacity) {
            return Err(r.invalid("node keys do not match its count"));
        }
        for slot in slots {
            node.children[slot] = Some(Node::deserialize(r, consumed)?);
        }
        Ok(node)
    }

    /// Leaves `(key, container index)` in ascending key order.
    fn leaves(&self, out: &mut Vec<([u8; 6], u64)>) {
        if let Body::Leaf { key, container } = self.body {
            out.push((key, container));
            return;
        }
        for slot in self.ordered_slots() {
            if let Some(child) = &self.children[slot] {
                child.leaves(out);
            }
        }
    }
}

/// Length of the common prefix of `a` and `b` (Java `Arrays.mismatch`, which returns the shorter
/// length when one is a prefix of the other).
fn mismatch(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Java `Art.findByKey`.
fn find(mut node: Option<&Node>, key: &[u8; 6]) -> Option<u64> {
    let mut depth = 0;
    while let Some(n) = node {
        if let Body::Leaf {
            key: leaf_key,
            container,
        } = &n.body
        {
            return (depth >= 6 || leaf_key[depth..] == key[depth..]).then_some(*container);
        }
        let plen = n.header.prefix.len();
        if plen > 0 {
            if depth + plen > 6 || n.header.prefix[..] != key[depth..depth + plen] {
                return None;
            }
            depth += plen;
        }
        if depth >= 6 {
            return None;
        }
        node = n.child_slot(key[depth]).and_then(|s| n.children[s].as_ref());
        depth += 1;
    }
    None
}

/// Java `Art.insert` (for a key that is not present).
fn insert(node: Option<Node>, key: &[u8; 6], depth: usize, container: u64) -> Node {
    let Some(mut node) = node else {
        return Node::leaf(*key, container);
    };
    if let Body::Leaf { key: leaf_key, .. } = node.body {
        let common = mismatch(&leaf_key[depth..], &key[depth..]);
        node.header.prefix.clear();
        let n4 = Node::node4(key[depth..depth + common].to_vec());
        let n4 = n4.insert_child(node, leaf_key[depth + common]);
        return n4.insert_child(Node::leaf(*key, container), key[depth + common]);
    }
    let mut depth = depth;
    let plen = node.header.prefix.len();
    if plen > 0 {
        let m = mismatch(&node.header.prefix, &key[depth..]);
        if m != plen {
            let n4 = Node::node4(node.header.prefix[..m].to_vec());
            let split = node.header.prefix[m];
            node.header.prefix = node.header.prefix[m + 1..].to_vec();
            let n4 = n4.insert_child(node, split);
            return n4.insert_child(Node::leaf(*key, container), key[m + depth]);
        }
        depth += plen;
    }
    match node.child_slot(key[depth]) {
        Some(slot) => {
            let child = node.children[slot].take();
            node.children[slot] = Some(insert(child, key, depth + 1, container));
            node
        }
        None => node.insert_child(Node::leaf(*key, container), key[depth]),
    }
}

/// Java `art.Containers`: two-level array of containers, indexed `first << 32 | second`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Containers {
    arrays: Vec<Vec<Option<Container>>>,
    size: i64,
    first: i32,
    second: i32,
}

const MAX_JVM_ARRAY_LENGTH: i64 = i32::MAX as i64 - 8;

impl Containers {
    fn new() -> Self {
        Containers {
            arrays: Vec::new(),
            size: 0,
            first: -1,
            second: 0,
        }
    }

    fn slot(&self, idx: u64) -> (usize, usize) {
        ((idx >> 32) as usize, idx as u32 as usize)
    }

    fn get(&self, idx: u64) -> Option<&Container> {
        let (a, b) = self.slot(idx);
        self.arrays.get(a)?.get(b)?.as_ref()
    }

    fn get_mut(&mut self, idx: u64) -> Option<&mut Option<Container>> {
        let (a, b) = self.slot(idx);
        self.arrays.get_mut(a)?.get_mut(b)
    }

    /// Java `addContainer`, with its array growth (`old + old / 2`).
    fn add(&mut self, container: Container) -> u64 {
        if i64::from(self.second) + 1 == MAX_JVM_ARRAY_LENGTH - 1 || self.first == -1 {
            self.arrays.push(vec![None]);
            self.first += 1;
            self.second = 0;
        } else {
            self.second += 1;
        }
        let array = &mut self.arrays[self.first as usize];
        let min = self.second as usize + 1;
        if min > array.len() {
            let old = array.len();
            array.resize((old + (old >> 1)).max(min), None);
        }
        array[self.second as usize] = Some(container);
        self.size += 1;
        ((self.first as u64) << 32) | self.second as u32 as u64
    }

    fn serialize(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.arrays.len() as i32).to_le_bytes());
        for array in &self.arrays {
            out.push(0xFE);
            out.extend_from_slice(&(array.len() as i32).to_le_bytes());
            for slot in array {
                match slot {
                    None => out.push(0),
                    Some(c) => {
                        out.push(1);
                        out.push(match c {
                            Container::Run(_) => 0,
                            Container::Bitmap(_) => 1,
                            Container::Array(_) => 2,
                        });
                        out.extend_from_slice(&(c.cardinality() as i32).to_le_bytes());
                        c.write_body(out);
                    }
                }
            }
        }
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.first.to_le_bytes());
        out.extend_from_slice(&self.second.to_le_bytes());
    }

    fn deserialize(r: &mut Reader<'_>) -> Result<Self> {
        let n = r.u32()? as i32;
        if n < 0 {
            return Err(r.invalid("negative container array count"));
        }
        let mut arrays = Vec::new();
        for _ in 0..n {
            r.u8()?; // trim mark, ignored by Java
            let len = r.u32()? as i32;
            if len < 0 {
                return Err(r.invalid("negative container array length"));
            }
            let mut array = Vec::new();
            for _ in 0..len {
                array.push(match r.u8()? {
                    0 => None,
                    1 => {
                        let kind = r.u8()?;
                        let card = r.u32()? as i32;
                        Some(match kind {
                            0 => Container::read_run(r)?,
                            1 => Container::read_bitmap(r)?,
                            2 if card >= 0 => Container::read_array(r, card as usize)?,
                            _ => return Err(r.invalid(format!("container type {kind}, cardinality {card}"))),
                        })
                    }
                    tag => return Err(r.invalid(format!("container null tag {tag}"))),
                });
            }
            arrays.push(array);
        }
        Ok(Containers {
            arrays,
            size: r.u64()? as i64,
            first: r.u32()? as i32,
            second: r.u32()? as i32,
        })
    }
}

/// A deserialized `Roaring64Bitmap`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bitmap64 {
    root: Option<Node>,
    key_size: i64,
    containers: Containers,
}

impl Bitmap64 {
    fn empty() -> Self {
        Bitmap64 {
            root: None,
            key_size: 0,
            containers: Containers::new(),
        }
    }

    pub(crate) fn deserialize(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "roaring bitmap (rbm64)");
        match r.u8()? {
            0 => Ok(Self::empty()),
            1 => {
                let key_size = r.u64()? as i64;
                let root = Node::deserialize(&mut r, 0)?;
                let containers = Containers::deserialize(&mut r)?;
                Ok(Bitmap64 {
                    root: Some(root),
                    key_size,
                    containers,
                })
            }
            tag => Err(r.invalid(format!("tag {tag}"))),
        }
    }

    pub(crate) fn serialize(&self) -> Vec<u8> {
        let Some(root) = &self.root else {
            return vec![0];
        };
        let mut out = vec![1];
        out.extend_from_slice(&self.key_size.to_le_bytes());
        root.serialize(&mut out);
        self.containers.serialize(&mut out);
        out
    }

    /// Java `Roaring64Bitmap.or` (in place).
    pub(crate) fn or(&mut self, other: &Bitmap64) -> Result<()> {
        let mut leaves = Vec::new();
        if let Some(root) = &other.root {
            root.leaves(&mut leaves);
        }
        for (key, idx) in leaves {
            let theirs = other.containers.get(idx).ok_or_else(|| {
                Reader::new(&[], "roaring bitmap (rbm64)").invalid("dangling container index")
            })?;
            match find(self.root.as_ref(), &key) {
                None => {
                    let new_idx = self.containers.add(theirs.clone());
                    self.root = Some(insert(self.root.take(), &key, 0, new_idx));
                    self.key_size += 1;
                }
                Some(mine) => {
                    let slot = self
                        .containers
                        .get_mut(mine)
                        .filter(|s| s.is_some())
                        .ok_or_else(|| {
                            Reader::new(&[], "roaring bitmap (rbm64)").invalid("dangling container index")
                        })?;
                    let c = slot.take().expect("checked");
                    *slot = Some(c.ior(theirs));
                }
            }
        }
        Ok(())
    }

    /// Java `Roaring64Bitmap.runOptimize`.
    pub(crate) fn run_optimize(&mut self) {
        for slot in self.containers.arrays.iter_mut().flatten() {
            if let Some(c) = slot.take() {
                *slot = Some(c.run_optimize(Flavor::Bitmap64));
            }
        }
    }

    /// The values, ascending by unsigned value (tests).
    #[cfg(test)]
    pub(crate) fn values(&self) -> Vec<u64> {
        let mut leaves = Vec::new();
        if let Some(root) = &self.root {
            root.leaves(&mut leaves);
        }
        let mut out = Vec::new();
        for (key, idx) in leaves {
            let mut high = [0u8; 8];
            high[..6].copy_from_slice(&key);
            let high = u64::from_be_bytes(high);
            let bits = self.containers.get(idx).unwrap().values();
            out.extend(bits.into_iter().map(|low| high | u64::from(low)));
        }
        out
    }

    /// Java `Roaring64Bitmap.addLong` for each value (tests).
    #[cfg(test)]
    pub(crate) fn of(values: &[u64]) -> Self {
        let mut b = Self::empty();
        for &v in values {
            let bytes = v.to_be_bytes();
            let key: [u8; 6] = bytes[..6].try_into().unwrap();
            let low = v as u16;
            match find(b.root.as_ref(), &key) {
                Some(idx) => {
                    let slot = b.containers.get_mut(idx).unwrap();
                    let c = slot.take().unwrap();
                    *slot = Some(c.add(low));
                }
                None => {
                    let idx = b.containers.add(Container::Array(vec![low]));
                    b.root = Some(insert(b.root.take(), &key, 0, idx));
                    b.key_size += 1;
                }
            }
        }
        b
    }
}

/// Java Paimon `RoaringBitmap64` union of two serialized bitmaps: deserialize both, OR the second
/// into the first, `runOptimize`, serialize.
pub(crate) fn union64(acc: &[u8], input: &[u8]) -> Result<Vec<u8>> {
    let mut a = Bitmap64::deserialize(acc)?;
    a.or(&Bitmap64::deserialize(input)?)?;
    a.run_optimize();
    Ok(a.serialize())
}

#[cfg(test)]
mod tests;
