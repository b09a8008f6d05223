//! Our own ORC file writer, for the schemas orc-rust's writer cannot encode: DECIMAL, TIME,
//! TIMESTAMP WITH LOCAL TIME ZONE and the nested types (ARRAY, MAP, MULTISET, ROW), at any
//! depth. It writes every column type a Paimon table has, following the ORC v1 specification.
//!
//! The file is one stripe, without row indexes or statistics (as orc-rust writes its files;
//! Paimon keeps its own statistics in the manifests). Every column uses the version-1 `DIRECT`
//! encoding ([`rle`]); each stream is cut into blocks of `BLOCK_SIZE` bytes, each
//! compressed on its own behind a 3-byte header, as the format asks.
//!
//! Nested values are stored as ORC stores them: a child column holds values only for the rows
//! where its parent is present; an ARRAY or MAP stores a length per present row, its elements
//! (keys and values) follow in the child columns.

mod rle;
#[cfg(test)]
mod tests;

use std::io::Write;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, GenericByteArray, OffsetSizeTrait, RecordBatch, UInt64Array,
};
use arrow::compute::{filter, take};
use arrow::datatypes::{
    ByteArrayType, DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, SchemaRef, Time32MillisecondType, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::{exec_datafusion_err, Result};
use orc_rust::compression::CompressionType;
use orc_rust::proto;
use prost::Message;

use rle::{boolean_rle, byte_rle, int_rle_v1, put_varint, zigzag_i128};

/// Bytes per compressed block (ORC's usual 256 KiB).
const BLOCK_SIZE: usize = 256 * 1024;
/// ORC timestamps count seconds from 2015-01-01 00:00:00 UTC.
const ORC_EPOCH_SECONDS: i64 = 1_420_070_400;

/// Whether this writer can encode `data_type`.
pub(super) fn supported(data_type: &DataType) -> bool {
    match data_type {
        DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::Date32
        | DataType::Time32(TimeUnit::Millisecond)
        | DataType::Timestamp(_, _) => true,
        DataType::Decimal128(_, scale) => *scale >= 0,
        DataType::List(item) => supported(item.data_type()),
        DataType::Struct(fields) => fields.iter().all(|f| supported(f.data_type())),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => kv.iter().all(|f| supported(f.data_type())),
            _ => false,
        },
        _ => false,
    }
}

/// Encodes `batches` (all of `schema`) as one ORC file.
pub(super) fn write_file(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    compression: Option<CompressionType>,
) -> Result<Vec<u8>> {
    let mut types = vec![proto::Type::default()];
    let mut root = Column::new(0, Kind::Struct);
    for field in schema.fields() {
        root.children.push(Column::plan(field.data_type(), &mut types)?);
    }
    types[0] = proto::Type {
        kind: Some(proto::r#type::Kind::Struct.into()),
        subtypes: root.children.iter().map(|c| c.id).collect(),
        field_names: schema.fields().iter().map(|f| f.name().clone()).collect(),
        ..Default::default()
    };
    let mut rows = 0u64;
    for batch in batches {
        for (column, array) in root.children.iter_mut().zip(batch.columns()) {
            column.append(array)?;
        }
        rows += batch.num_rows() as u64;
    }

    let codec = Codec(compression);
    let mut file = b"ORC".to_vec();
    let mut stripes = Vec::new();
    if rows > 0 {
        let offset = file.len() as u64;
        let mut streams = Vec::new();
        root.finish(&codec, &mut file, &mut streams)?;
        let data_length = file.len() as u64 - offset;
        let direct = proto::ColumnEncoding {
            kind: Some(proto::column_encoding::Kind::Direct.into()),
            ..Default::default()
        };
        let stripe_footer = proto::StripeFooter {
            streams,
            columns: vec![direct; types.len()],
            writer_timezone: has_local_timestamp(schema).then(|| "UTC".to_string()),
            encryption: vec![],
        };
        let footer_bytes = codec.compress(&stripe_footer.encode_to_vec())?;
        file.extend_from_slice(&footer_bytes);
        stripes.push(proto::StripeInformation {
            offset: Some(offset),
            index_length: Some(0),
            data_length: Some(data_length),
            footer_length: Some(footer_bytes.len() as u64),
            number_of_rows: Some(rows),
            ..Default::default()
        });
    }
    let footer = proto::Footer {
        header_length: Some(3),
        content_length: Some(file.len() as u64),
        stripes,
        types,
        number_of_rows: Some(rows),
        ..Default::default()
    };
    let footer_bytes = codec.compress(&footer.encode_to_vec())?;
    file.extend_from_slice(&footer_bytes);
    let postscript = proto::PostScript {
        footer_length: Some(footer_bytes.len() as u64),
        compression: Some(codec.kind().into()),
        compression_block_size: compression.map(|_| BLOCK_SIZE as u64),
        version: vec![0, 12],
        metadata_length: Some(0),
        magic: Some("ORC".to_string()),
        ..Default::default()
    };
    let postscript = postscript.encode_to_vec();
    file.extend_from_slice(&postscript);
    file.push(postscript.len() as u8);
    Ok(file)
}

/// Timestamps without a time zone are stored in the writer's zone, which is then named: UTC.
fn has_local_timestamp(schema: &SchemaRef) -> bool {
    fn walk(t: &DataType) -> bool {
        match t {
            DataType::Timestamp(_, None) => true,
            DataType::List(f) => walk(f.data_type()),
            DataType::Map(f, _) => walk(f.data_type()),
            DataType::Struct(fs) => fs.iter().any(|f| walk(f.data_type())),
            _ => false,
        }
    }
    schema.fields().iter().any(|f| walk(f.data_type()))
}

/// How a column's values are stored.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Boolean,
    Byte,
    /// SHORT, INT, LONG, DATE and TIME (as INT): signed integer RLE.
    Integer,
    Float,
    Double,
    /// STRING and BINARY: the bytes, and a length per value.
    Bytes,
    Decimal,
    Timestamp,
    List,
    Map,
    Struct,
}

/// One column of the file (pre-order id) with the values it has been given so far.
struct Column {
    id: u32,
    kind: Kind,
    /// One entry per row handed to this column.
    present: Vec<bool>,
    has_null: bool,
    /// DATA stream values of integer and timestamp (seconds) columns.
    ints: Vec<i64>,
    /// DATA stream bytes of the other kinds (booleans are packed at the end).
    data: Vec<u8>,
    bools: Vec<bool>,
    /// LENGTH stream (strings, binaries, arrays, maps).
    lengths: Vec<i64>,
    /// SECONDARY stream (decimal scales, timestamp nanoseconds).
    secondary: Vec<i64>,
    children: Vec<Column>,
}

impl Column {
    fn new(id: u32, kind: Kind) -> Self {
        Column {
            id,
            kind,
            present: vec![],
            has_null: false,
            ints: vec![],
            data: vec![],
            bools: vec![],
            lengths: vec![],
            secondary: vec![],
            children: vec![],
        }
    }

    /// The column (and its children) for `data_type`, its ORC types appended to `types`.
    fn plan(data_type: &DataType, types: &mut Vec<proto::Type>) -> Result<Column> {
        use proto::r#type::Kind as T;
        let id = types.len() as u32;
        types.push(proto::Type::default());
        let (orc, kind) = match data_type {
            DataType::Boolean => (T::Boolean, Kind::Boolean),
            DataType::Int8 => (T::Byte, Kind::Byte),
            DataType::Int16 => (T::Short, Kind::Integer),
            DataType::Int32 | DataType::Time32(TimeUnit::Millisecond) => (T::Int, Kind::Integer),
            DataType::Int64 => (T::Long, Kind::Integer),
            DataType::Float32 => (T::Float, Kind::Float),
            DataType::Float64 => (T::Double, Kind::Double),
            DataType::Utf8 | DataType::LargeUtf8 => (T::String, Kind::Bytes),
            DataType::Binary | DataType::LargeBinary => (T::Binary, Kind::Bytes),
            DataType::Date32 => (T::Date, Kind::Integer),
            DataType::Timestamp(_, None) => (T::Timestamp, Kind::Timestamp),
            DataType::Timestamp(_, Some(_)) => (T::TimestampInstant, Kind::Timestamp),
            DataType::Decimal128(..) => (T::Decimal, Kind::Decimal),
            DataType::List(_) => (T::List, Kind::List),
            DataType::Map(..) => (T::Map, Kind::Map),
            DataType::Struct(_) => (T::Struct, Kind::Struct),
            other => {
                return Err(exec_datafusion_err!(
                    "Writing ORC files does not support type {other}"
                ))
            }
        };
        let mut column = Column::new(id, kind);
        let mut orc_type = proto::Type {
            kind: Some(orc.into()),
            ..Default::default()
        };
        match data_type {
            DataType::Decimal128(precision, scale) => {
                orc_type.precision = Some(*precision as u32);
                orc_type.scale = Some(*scale as u32);
            }
            DataType::List(item) => {
                column.children.push(Column::plan(item.data_type(), types)?);
            }
            DataType::Map(entries, _) => {
                let DataType::Struct(kv) = entries.data_type() else {
                    return Err(exec_datafusion_err!("A map's entries must be a struct"));
                };
                for f in kv.iter() {
                    column.children.push(Column::plan(f.data_type(), types)?);
                }
            }
            DataType::Struct(fields) => {
                for f in fields.iter() {
                    column.children.push(Column::plan(f.data_type(), types)?);
                }
                orc_type.field_names = fields.iter().map(|f| f.name().clone()).collect();
            }
            _ => {}
        }
        orc_type.subtypes = column.children.iter().map(|c| c.id).collect();
        types[id as usize] = orc_type;
        Ok(column)
    }

    /// Takes in the rows of `array`: their presence, and the values of the present ones.
    fn append(&mut self, array: &ArrayRef) -> Result<()> {
        match array.nulls() {
            Some(nulls) if nulls.null_count() > 0 => {
                self.has_null = true;
                self.present.extend(nulls.iter());
            }
            _ => self.present.extend(std::iter::repeat_n(true, array.len())),
        }
        match self.kind {
            Kind::Boolean => self.bools.extend(array.as_boolean().iter().flatten()),
            Kind::Byte => self
                .data
                .extend(array.as_primitive::<Int8Type>().iter().flatten().map(|v| v as u8)),
            Kind::Integer => self.append_integers(array)?,
            Kind::Float => {
                for v in array.as_primitive::<Float32Type>().iter().flatten() {
                    self.data.extend_from_slice(&v.to_le_bytes());
                }
            }
            Kind::Double => {
                for v in array.as_primitive::<Float64Type>().iter().flatten() {
                    self.data.extend_from_slice(&v.to_le_bytes());
                }
            }
            Kind::Bytes => match array.data_type() {
                DataType::Utf8 => self.append_bytes(array.as_string::<i32>()),
                DataType::LargeUtf8 => self.append_bytes(array.as_string::<i64>()),
                DataType::Binary => self.append_bytes(array.as_binary::<i32>()),
                _ => self.append_bytes(array.as_binary::<i64>()),
            },
            Kind::Decimal => {
                let DataType::Decimal128(_, scale) = array.data_type() else {
                    unreachable!("planned from the schema");
                };
                for v in array.as_primitive::<Decimal128Type>().iter().flatten() {
                    put_varint(&mut self.data, zigzag_i128(v));
                    self.secondary.push(*scale as i64);
                }
            }
            Kind::Timestamp => self.append_timestamps(array)?,
            Kind::Struct => {
                let array = array.as_struct();
                for (child, values) in self.children.iter_mut().zip(array.columns()) {
                    child.append(&present_only(values, array.nulls())?)?;
                }
            }
            Kind::List => {
                let list = array.as_list::<i32>();
                let values = self.append_lengths(list.offsets(), list.nulls(), list.values())?;
                self.children[0].append(&values)?;
            }
            Kind::Map => {
                let map = array.as_map();
                let entries: ArrayRef = std::sync::Arc::new(map.entries().clone());
                let entries = self.append_lengths(map.offsets(), map.nulls(), &entries)?;
                let entries = entries.as_struct();
                self.children[0].append(entries.column(0))?;
                self.children[1].append(entries.column(1))?;
            }
        }
        Ok(())
    }

    fn append_integers(&mut self, array: &ArrayRef) -> Result<()> {
        match array.data_type() {
            DataType::Int16 => self
                .ints
                .extend(array.as_primitive::<Int16Type>().iter().flatten().map(i64::from)),
            DataType::Int32 => self
                .ints
                .extend(array.as_primitive::<Int32Type>().iter().flatten().map(i64::from)),
            DataType::Int64 => self
                .ints
                .extend(array.as_primitive::<Int64Type>().iter().flatten()),
            DataType::Date32 => self
                .ints
                .extend(array.as_primitive::<Date32Type>().iter().flatten().map(i64::from)),
            DataType::Time32(TimeUnit::Millisecond) => self.ints.extend(
                array
                    .as_primitive::<Time32MillisecondType>()
                    .iter()
                    .flatten()
                    .map(i64::from),
            ),
            other => return Err(exec_datafusion_err!("Writing ORC: unexpected type {other}")),
        }
        Ok(())
    }

    fn append_bytes<T: ByteArrayType>(&mut self, array: &GenericByteArray<T>) {
        for value in array.iter().flatten() {
            let bytes: &[u8] = value.as_ref();
            self.data.extend_from_slice(bytes);
            self.lengths.push(bytes.len() as i64);
        }
    }

    /// Seconds from the ORC epoch in DATA, nanoseconds in SECONDARY (trailing decimal zeros
    /// dropped, their count minus one in the low three bits).
    fn append_timestamps(&mut self, array: &ArrayRef) -> Result<()> {
        let (values, per_second): (Vec<i64>, i64) = match array.data_type() {
            DataType::Timestamp(TimeUnit::Second, _) => (
                array
                    .as_primitive::<TimestampSecondType>()
                    .iter()
                    .flatten()
                    .collect(),
                1,
            ),
            DataType::Timestamp(TimeUnit::Millisecond, _) => (
                array
                    .as_primitive::<TimestampMillisecondType>()
                    .iter()
                    .flatten()
                    .collect(),
                1_000,
            ),
            DataType::Timestamp(TimeUnit::Microsecond, _) => (
                array
                    .as_primitive::<TimestampMicrosecondType>()
                    .iter()
                    .flatten()
                    .collect(),
                1_000_000,
            ),
            _ => (
                array
                    .as_primitive::<TimestampNanosecondType>()
                    .iter()
                    .flatten()
                    .collect(),
                1_000_000_000,
            ),
        };
        let nanos_per_unit = 1_000_000_000 / per_second;
        for value in values {
            let mut seconds = value.div_euclid(per_second);
            let nanos = value.rem_euclid(per_second) * nanos_per_unit;
            // Readers subtract a second from a negative seconds value whose fraction is a
            // millisecond or more (the format keeps an old writer's habit), so such values are
            // stored a second up; in the second before 1970 that cannot be told apart.
            if seconds < 0 && nanos > 999_999 {
                if seconds == -1 {
                    return Err(exec_datafusion_err!(
                        "Writing ORC: timestamp {value} (in the second before 1970-01-01) cannot be stored in ORC"
                    ));
                }
                seconds += 1;
            }
            let seconds = seconds
                .checked_sub(ORC_EPOCH_SECONDS)
                .ok_or_else(|| exec_datafusion_err!("Writing ORC: timestamp {value} is out of range"))?;
            self.ints.push(seconds);
            self.secondary.push(encode_nanos(nanos));
        }
        Ok(())
    }

    /// Records the length of every present row of a list or map, and returns the child
    /// values of those rows, in order.
    fn append_lengths(
        &mut self,
        offsets: &[impl OffsetSizeTrait],
        nulls: Option<&arrow::buffer::NullBuffer>,
        values: &ArrayRef,
    ) -> Result<ArrayRef> {
        let rows = offsets.len() - 1;
        let is_present = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
        let mut contiguous = true;
        for i in 0..rows {
            let length = (offsets[i + 1].as_usize() - offsets[i].as_usize()) as i64;
            if is_present(i) {
                self.lengths.push(length);
            } else if length > 0 {
                contiguous = false;
            }
        }
        let (start, end) = (offsets[0].as_usize(), offsets[rows].as_usize());
        if contiguous {
            return Ok(values.slice(start, end - start));
        }
        let indices: UInt64Array = (0..rows)
            .filter(|i| is_present(*i))
            .flat_map(|i| (offsets[i].as_usize() as u64)..(offsets[i + 1].as_usize() as u64))
            .collect();
        Ok(take(values.as_ref(), &indices, None)?)
    }

    /// Writes this column's streams, then its children's (pre-order, as the ids), recording
    /// each stream in `streams`.
    fn finish(self, codec: &Codec, file: &mut Vec<u8>, streams: &mut Vec<proto::Stream>) -> Result<()> {
        use proto::stream::Kind as S;
        let mut put = |kind: S, bytes: Vec<u8>| -> Result<()> {
            let bytes = codec.compress(&bytes)?;
            file.extend_from_slice(&bytes);
            streams.push(proto::Stream {
                kind: Some(kind.into()),
                column: Some(self.id),
                length: Some(bytes.len() as u64),
            });
            Ok(())
        };
        let encode = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut out = Vec::new();
            f(&mut out);
            out
        };
        if self.has_null {
            put(
                S::Present,
                encode(&|out| boolean_rle(self.present.iter().copied(), out)),
            )?;
        }
        match self.kind {
            Kind::Boolean => put(
                S::Data,
                encode(&|out| boolean_rle(self.bools.iter().copied(), out)),
            )?,
            Kind::Byte => put(S::Data, encode(&|out| byte_rle(&self.data, out)))?,
            Kind::Integer => put(S::Data, encode(&|out| int_rle_v1(&self.ints, true, out)))?,
            Kind::Float | Kind::Double => put(S::Data, self.data.clone())?,
            Kind::Bytes => {
                put(S::Data, self.data.clone())?;
                put(S::Length, encode(&|out| int_rle_v1(&self.lengths, false, out)))?;
            }
            Kind::Decimal => {
                put(S::Data, self.data.clone())?;
                put(
                    S::Secondary,
                    encode(&|out| int_rle_v1(&self.secondary, true, out)),
                )?;
            }
            Kind::Timestamp => {
                put(S::Data, encode(&|out| int_rle_v1(&self.ints, true, out)))?;
                put(
                    S::Secondary,
                    encode(&|out| int_rle_v1(&self.secondary, false, out)),
                )?;
            }
            Kind::List | Kind::Map => put(S::Length, encode(&|out| int_rle_v1(&self.lengths, false, out)))?,
            Kind::Struct => {}
        }
        for child in self.children {
            child.finish(codec, file, streams)?;
        }
        Ok(())
    }
}

/// The rows of a struct's child where the struct itself is present.
fn present_only(values: &ArrayRef, nulls: Option<&arrow::buffer::NullBuffer>) -> Result<ArrayRef> {
    match nulls {
        Some(n) if n.null_count() > 0 => {
            let keep = BooleanArray::new(n.inner().clone(), None);
            Ok(filter(values.as_ref(), &keep)?)
        }
        _ => Ok(std::sync::Arc::clone(values)),
    }
}

fn encode_nanos(nanos: i64) -> i64 {
    if nanos == 0 || nanos % 100 != 0 {
        return nanos << 3;
    }
    let (mut n, mut zeros_minus_one) = (nanos / 100, 1);
    while n % 10 == 0 && zeros_minus_one < 7 {
        n /= 10;
        zeros_minus_one += 1;
    }
    (n << 3) | zeros_minus_one
}

/// The file's compression codec; `None` writes streams as they are (no block headers).
struct Codec(Option<CompressionType>);

impl Codec {
    fn kind(&self) -> proto::CompressionKind {
        match self.0 {
            None => proto::CompressionKind::None,
            Some(CompressionType::Zlib) => proto::CompressionKind::Zlib,
            Some(CompressionType::Snappy) => proto::CompressionKind::Snappy,
            Some(CompressionType::Lzo) => proto::CompressionKind::Lzo,
            Some(CompressionType::Lz4) => proto::CompressionKind::Lz4,
            Some(CompressionType::Zstd) => proto::CompressionKind::Zstd,
        }
    }

    /// Blocks of at most `BLOCK_SIZE` input bytes, each behind a 3-byte little-endian header
    /// `length << 1 | original`; a block that does not shrink is stored as it is.
    fn compress(&self, input: &[u8]) -> Result<Vec<u8>> {
        let Some(codec) = self.0 else {
            return Ok(input.to_vec());
        };
        let failed = |e: std::io::Error| exec_datafusion_err!("Writing ORC: {codec} compression failed: {e}");
        let mut out = Vec::with_capacity(input.len() / 2 + 16);
        for block in input.chunks(BLOCK_SIZE) {
            let compressed = match codec {
                CompressionType::Zstd => zstd::bulk::compress(block, 1).map_err(failed)?,
                CompressionType::Snappy => snap::raw::Encoder::new()
                    .compress_vec(block)
                    .map_err(|e| failed(std::io::Error::other(e)))?,
                CompressionType::Lz4 => lz4_flex::block::compress(block),
                CompressionType::Zlib => {
                    let mut encoder =
                        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                    encoder.write_all(block).map_err(failed)?;
                    encoder.finish().map_err(failed)?
                }
                CompressionType::Lzo => {
                    return Err(exec_datafusion_err!(
                        "Writing ORC files with LZO is not supported"
                    ))
                }
            };
            let (payload, original) = if compressed.len() < block.len() {
                (compressed.as_slice(), 0)
            } else {
                (block, 1)
            };
            let header = ((payload.len() as u32) << 1) | original;
            out.extend_from_slice(&header.to_le_bytes()[..3]);
            out.extend_from_slice(payload);
        }
        Ok(out)
    }
}
