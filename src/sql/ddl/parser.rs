//! Token-level helpers shared by the targeted DDL parsers (`CREATE TABLE`, `ALTER TABLE`).
//!
//! Flink's DDL uses type syntax no sqlparser dialect accepts (`MAP<K, V>`, `ROW<a INT>`,
//! `ARRAY<INT NOT NULL>`, `TIMESTAMP_LTZ(3)`) and statements none of them know
//! (`ALTER TABLE t RESET ('k')`). Those two statements are parsed here, on sqlparser's own
//! tokenizer and `Parser` primitives, so identifiers, quoting, string literals and error
//! messages behave exactly as in every other statement.

use datafusion::common::{plan_datafusion_err, plan_err, DataFusionError, Result};
use datafusion::sql::planner::IdentNormalizer;
use datafusion::sql::sqlparser::ast::ObjectName;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::spec::{DataField, DataType, TypeKind};

/// The dialect DDL is tokenized with: `"…"` and `` `…` `` quote identifiers, `'…'` strings.
static DIALECT: GenericDialect = GenericDialect {};

/// Largest length of CHAR/VARCHAR/BINARY/VARBINARY (`STRING` = `VARCHAR(2147483647)`).
const MAX_LENGTH: u64 = i32::MAX as u64;

/// A `[catalog.][database.]name` reference, identifiers already normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectRef {
    /// The name parts as written (1 to 3 of them).
    pub(crate) parts: Vec<String>,
}

/// A column definition (`name TYPE [NOT NULL] [PRIMARY KEY NOT ENFORCED] [COMMENT '…']`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnSpec {
    /// The column as a field; its id (and nested ids) are assigned later.
    pub(crate) field: DataField,
    /// Declared inline as `PRIMARY KEY`.
    pub(crate) primary_key: bool,
}

/// sqlparser's `Parser` over one statement, plus identifier normalization and the `>>` split
/// needed by nested type arguments.
pub(crate) struct DdlParser<'a> {
    parser: Parser<'a>,
    normalizer: IdentNormalizer,
    /// A `>` left over from a `>>` token (`ARRAY<ARRAY<INT>>`).
    pending_gt: bool,
}

impl<'a> DdlParser<'a> {
    /// Tokenizes `sql`. `normalize` lower-cases unquoted identifiers as DataFusion does
    /// (`datafusion.sql_parser.enable_ident_normalization`).
    pub(crate) fn new(sql: &str, normalize: bool) -> Result<Self> {
        let parser = Parser::new(&DIALECT).try_with_sql(sql)?;
        Ok(DdlParser {
            parser,
            normalizer: IdentNormalizer::new(normalize),
            pending_gt: false,
        })
    }

    /// The underlying sqlparser `Parser` (for statements sqlparser parses itself).
    pub(crate) fn inner(&mut self) -> &mut Parser<'a> {
        &mut self.parser
    }

    /// Whether the `n`-th token from here is the keyword `kw`.
    pub(crate) fn peek_keyword_at(&self, n: usize, kw: Keyword) -> bool {
        matches!(&self.parser.peek_nth_token_ref(n).token, Token::Word(w) if w.keyword == kw)
    }

    /// Consumes `kw` if it is next.
    pub(crate) fn keyword(&mut self, kw: Keyword) -> bool {
        !self.pending_gt && self.parser.parse_keyword(kw)
    }

    /// Consumes the keyword sequence `kws` if it is next (all or nothing).
    pub(crate) fn keywords(&mut self, kws: &[Keyword]) -> bool {
        !self.pending_gt && self.parser.parse_keywords(kws)
    }

    /// Consumes `word` (compared case-insensitively, for words sqlparser has no keyword for).
    pub(crate) fn word(&mut self, word: &str) -> bool {
        if self.pending_gt {
            return false;
        }
        let matched = matches!(&self.parser.peek_token_ref().token,
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
        if matched {
            self.parser.next_token();
        }
        matched
    }

    /// Consumes `kw` or fails naming what was found.
    pub(crate) fn expect_keyword(&mut self, kw: Keyword) -> Result<()> {
        self.parser.expect_keyword(kw)?;
        Ok(())
    }

    /// Consumes `token` if it is next.
    pub(crate) fn consume(&mut self, token: &Token) -> bool {
        !self.pending_gt && self.parser.consume_token(token)
    }

    /// Consumes `token` or fails naming what was found.
    pub(crate) fn expect_token(&mut self, token: &Token) -> Result<()> {
        self.parser.expect_token(token)?;
        Ok(())
    }

    /// Consumes the next token.
    pub(crate) fn next_token(&mut self) {
        self.parser.next_token();
    }

    /// The next token, not consumed.
    pub(crate) fn peek(&self) -> &TokenWithSpan {
        self.parser.peek_token_ref()
    }

    /// An error "Expected: `expected`, found: <next token>".
    pub(crate) fn expected<T>(&self, expected: &str) -> Result<T> {
        Ok(self.parser.expected_ref(expected, self.parser.peek_token_ref())?)
    }

    /// Ends the statement: an optional `;`, then nothing.
    pub(crate) fn expect_end(&mut self) -> Result<()> {
        while self.parser.consume_token(&Token::SemiColon) {}
        match self.parser.peek_token_ref().token {
            Token::EOF => Ok(()),
            _ => self.expected("end of statement"),
        }
    }

    /// One identifier, normalized.
    pub(crate) fn ident(&mut self) -> Result<String> {
        let ident = self.parser.parse_identifier()?;
        Ok(self.normalizer.normalize(ident))
    }

    /// A dotted object name, each part normalized.
    pub(crate) fn object_ref(&mut self) -> Result<ObjectRef> {
        let name = self.parser.parse_object_name(false)?;
        self.normalize_name(name)
    }

    /// An object name parsed by sqlparser itself, each part normalized.
    pub(crate) fn normalize_name(&self, name: ObjectName) -> Result<ObjectRef> {
        let parts = name
            .0
            .into_iter()
            .map(|p| p.as_ident().cloned().map(|i| self.normalizer.normalize(i)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| plan_datafusion_err!("Invalid object name"))?;
        if parts.is_empty() || parts.len() > 3 {
            return plan_err!("Invalid object name '{}'", parts.join("."));
        }
        Ok(ObjectRef { parts })
    }

    /// A `'…'` string literal.
    pub(crate) fn string(&mut self) -> Result<String> {
        Ok(self.parser.parse_literal_string()?)
    }

    /// `( ident, … )`.
    pub(crate) fn ident_list(&mut self) -> Result<Vec<String>> {
        self.expect_token(&Token::LParen)?;
        let mut out = vec![self.ident()?];
        while self.consume(&Token::Comma) {
            out.push(self.ident()?);
        }
        self.expect_token(&Token::RParen)?;
        Ok(out)
    }

    /// `( 'key', … )`.
    pub(crate) fn string_list(&mut self) -> Result<Vec<String>> {
        self.expect_token(&Token::LParen)?;
        let mut out = vec![self.string()?];
        while self.consume(&Token::Comma) {
            out.push(self.string()?);
        }
        self.expect_token(&Token::RParen)?;
        Ok(out)
    }

    /// `( 'key' = 'value', … )`, Flink's option list. Values may also be bare numbers.
    pub(crate) fn option_list(&mut self) -> Result<Vec<(String, String)>> {
        self.expect_token(&Token::LParen)?;
        let mut out = Vec::new();
        loop {
            let key = self.string()?;
            self.expect_token(&Token::Eq)?;
            let value = match self.parser.next_token().token {
                Token::SingleQuotedString(s) => s,
                Token::Number(n, _) => n,
                _ => {
                    self.parser.prev_token();
                    return self.expected(&format!("a string value for option '{key}'"));
                }
            };
            out.push((key, value));
            if !self.consume(&Token::Comma) {
                break;
            }
        }
        self.expect_token(&Token::RParen)?;
        Ok(out)
    }

    /// `PRIMARY KEY [NOT ENFORCED]` after `PRIMARY KEY` has been recognised: the enforcement
    /// clause. Flink only accepts `NOT ENFORCED`; omitting it is accepted too.
    pub(crate) fn not_enforced(&mut self) -> Result<()> {
        if self.keywords(&[Keyword::NOT, Keyword::ENFORCED]) {
            return Ok(());
        }
        if self.keyword(Keyword::ENFORCED) {
            return plan_err!("PRIMARY KEY must be NOT ENFORCED: Paimon does not check constraints on write");
        }
        Ok(())
    }

    /// A column definition: `name TYPE [NOT NULL | NULL] [[CONSTRAINT c] PRIMARY KEY [NOT
    /// ENFORCED]] [COMMENT '…']`, clauses in any order.
    pub(crate) fn column(&mut self) -> Result<ColumnSpec> {
        let name = self.ident()?;
        if self.peek_keyword_at(0, Keyword::AS) {
            return not_supported(&format!("computed column '{name}'"));
        }
        let mut data_type = self.data_type()?;
        let mut primary_key = false;
        let mut description = None;
        loop {
            if self.keywords(&[Keyword::NOT, Keyword::NULL]) {
                data_type.nullable = false;
            } else if self.keyword(Keyword::NULL) {
                data_type.nullable = true;
            } else if self.keyword(Keyword::CONSTRAINT) {
                self.ident()?;
                self.expect_keyword(Keyword::PRIMARY)?;
                self.expect_keyword(Keyword::KEY)?;
                self.not_enforced()?;
                primary_key = true;
            } else if self.keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
                self.not_enforced()?;
                primary_key = true;
            } else if self.keyword(Keyword::COMMENT) {
                description = Some(self.string()?);
            } else if self.keyword(Keyword::METADATA) {
                return not_supported(&format!("metadata column '{name}'"));
            } else {
                break;
            }
        }
        Ok(ColumnSpec {
            field: DataField {
                id: 0,
                name,
                data_type,
                description,
            },
            primary_key,
        })
    }

    /// A Flink SQL data type with its `NOT NULL` / `NULL` suffix, mapped to a Paimon type.
    /// Nested ROW field ids are left at 0 (see `types::assign_field_ids`).
    pub(crate) fn data_type(&mut self) -> Result<DataType> {
        let mut data_type = self.base_type()?;
        loop {
            // `INT ARRAY` / `INT MULTISET`: Flink's suffix forms.
            if self.keyword(Keyword::ARRAY) {
                data_type = nullable(TypeKind::Array(Box::new(data_type)));
            } else if self.keyword(Keyword::MULTISET) {
                data_type = nullable(TypeKind::Multiset(Box::new(data_type)));
            } else if self.keywords(&[Keyword::NOT, Keyword::NULL]) {
                data_type.nullable = false;
            } else if self.peek_keyword_at(0, Keyword::NULL) && !self.pending_gt {
                self.parser.next_token();
                data_type.nullable = true;
            } else {
                return Ok(data_type);
            }
        }
    }

    fn base_type(&mut self) -> Result<DataType> {
        let token = self.parser.next_token();
        let name = match &token.token {
            Token::Word(w) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
            _ => return Ok(self.parser.expected("a data type", token)?),
        };
        let kind = match name.as_str() {
            "BOOLEAN" | "BOOL" => TypeKind::Boolean,
            "TINYINT" => TypeKind::TinyInt,
            "SMALLINT" => TypeKind::SmallInt,
            "INT" | "INTEGER" => TypeKind::Int,
            "BIGINT" => TypeKind::BigInt,
            "FLOAT" | "REAL" => TypeKind::Float,
            "DOUBLE" => {
                self.word("PRECISION");
                TypeKind::Double
            }
            "DECIMAL" | "DEC" | "NUMERIC" => self.decimal()?,
            "CHAR" | "CHARACTER" if self.word("VARYING") => TypeKind::VarChar(self.length(&name, 1)?),
            "CHAR" | "CHARACTER" => TypeKind::Char(self.length(&name, 1)?),
            "VARCHAR" => TypeKind::VarChar(self.length(&name, 1)?),
            "STRING" | "TEXT" => TypeKind::VarChar(MAX_LENGTH as u32),
            "BINARY" if self.word("VARYING") => TypeKind::VarBinary(self.length(&name, 1)?),
            "BINARY" => TypeKind::Binary(self.length(&name, 1)?),
            "VARBINARY" => TypeKind::VarBinary(self.length(&name, 1)?),
            "BYTES" => TypeKind::VarBinary(MAX_LENGTH as u32),
            "DATE" => TypeKind::Date,
            "TIME" => self.time()?,
            "TIMESTAMP" => self.timestamp()?,
            "TIMESTAMP_LTZ" => TypeKind::LocalZonedTimestamp(self.precision(&name, 6)?),
            "ARRAY" => TypeKind::Array(Box::new(self.angle_type()?)),
            "MULTISET" => TypeKind::Multiset(Box::new(self.angle_type()?)),
            "MAP" => self.map()?,
            "ROW" => TypeKind::Row(self.row_fields()?),
            "VARIANT" => TypeKind::Variant,
            "BLOB" => TypeKind::Blob,
            _ => return not_supported(&format!("data type {name}")),
        };
        Ok(nullable(kind))
    }

    /// `( n )` or nothing (`default`); 1 ≤ n ≤ 2147483647.
    fn length(&mut self, name: &str, default: u64) -> Result<u32> {
        let n = self.optional_args(name, 1)?.first().copied().unwrap_or(default);
        if !(1..=MAX_LENGTH).contains(&n) {
            return plan_err!("Length of {name} must be between 1 and {MAX_LENGTH}, got {n}");
        }
        Ok(n as u32)
    }

    /// `( p )` or nothing (`default`); 0 ≤ p ≤ 9.
    fn precision(&mut self, name: &str, default: u64) -> Result<u8> {
        let p = self.optional_args(name, 1)?.first().copied().unwrap_or(default);
        if p > 9 {
            return plan_err!("Precision of {name} must be between 0 and 9, got {p}");
        }
        Ok(p as u8)
    }

    fn decimal(&mut self) -> Result<TypeKind> {
        let args = self.optional_args("DECIMAL", 2)?;
        let precision = args.first().copied().unwrap_or(10);
        let scale = args.get(1).copied().unwrap_or(0);
        if !(1..=38).contains(&precision) {
            return plan_err!("Precision of DECIMAL must be between 1 and 38, got {precision}");
        }
        if scale > precision {
            return plan_err!(
                "Scale of DECIMAL must be between 0 and the precision {precision}, got {scale}"
            );
        }
        Ok(TypeKind::Decimal {
            precision: precision as u8,
            scale: scale as i8,
        })
    }

    fn time(&mut self) -> Result<TypeKind> {
        let p = self.precision("TIME", 0)?;
        self.keywords(&[Keyword::WITHOUT, Keyword::TIME, Keyword::ZONE]);
        Ok(TypeKind::Time(p))
    }

    fn timestamp(&mut self) -> Result<TypeKind> {
        let p = self.precision("TIMESTAMP", 6)?;
        if self.keywords(&[Keyword::WITH, Keyword::LOCAL, Keyword::TIME, Keyword::ZONE]) {
            return Ok(TypeKind::LocalZonedTimestamp(p));
        }
        if self.keywords(&[Keyword::WITH, Keyword::TIME, Keyword::ZONE]) {
            return not_supported("data type TIMESTAMP WITH TIME ZONE (use TIMESTAMP_LTZ)");
        }
        self.keywords(&[Keyword::WITHOUT, Keyword::TIME, Keyword::ZONE]);
        Ok(TypeKind::Timestamp(p))
    }

    fn map(&mut self) -> Result<TypeKind> {
        self.expect_token(&Token::Lt)?;
        let key = self.data_type()?;
        self.expect_token(&Token::Comma)?;
        let value = self.data_type()?;
        self.expect_gt()?;
        Ok(TypeKind::Map(Box::new(key), Box::new(value)))
    }

    /// `ROW<name TYPE ['desc' | COMMENT 'desc'], …>` or `ROW(…)`.
    fn row_fields(&mut self) -> Result<Vec<DataField>> {
        let angle = if self.consume(&Token::Lt) {
            true
        } else {
            self.expect_token(&Token::LParen)?;
            false
        };
        let mut fields = Vec::new();
        loop {
            let name = self.ident()?;
            let data_type = self.data_type()?;
            // Flink writes a field description as a bare string (`a INT 'desc'`); COMMENT too.
            let described = self.keyword(Keyword::COMMENT)
                || (!self.pending_gt && matches!(self.peek().token, Token::SingleQuotedString(_)));
            let description = if described { Some(self.string()?) } else { None };
            fields.push(DataField {
                id: 0,
                name,
                data_type,
                description,
            });
            if !self.consume(&Token::Comma) {
                break;
            }
        }
        if angle {
            self.expect_gt()?;
        } else {
            self.expect_token(&Token::RParen)?;
        }
        Ok(fields)
    }

    /// `< TYPE >`.
    fn angle_type(&mut self) -> Result<DataType> {
        self.expect_token(&Token::Lt)?;
        let t = self.data_type()?;
        self.expect_gt()?;
        Ok(t)
    }

    /// A closing `>`, splitting `>>` into two.
    fn expect_gt(&mut self) -> Result<()> {
        if std::mem::take(&mut self.pending_gt) {
            return Ok(());
        }
        let token = self.parser.next_token();
        match token.token {
            Token::Gt => Ok(()),
            Token::ShiftRight => {
                self.pending_gt = true;
                Ok(())
            }
            _ => Ok(self.parser.expected(">", token)?),
        }
    }

    /// `( n [, m …] )` with at most `max` unsigned integers, or nothing.
    fn optional_args(&mut self, name: &str, max: usize) -> Result<Vec<u64>> {
        if !self.consume(&Token::LParen) {
            return Ok(vec![]);
        }
        let mut args = vec![self.parser.parse_literal_uint()?];
        while self.consume(&Token::Comma) {
            args.push(self.parser.parse_literal_uint()?);
        }
        self.expect_token(&Token::RParen)?;
        if args.len() > max {
            return plan_err!("Too many arguments for data type {name}: {}", args.len());
        }
        Ok(args)
    }
}

fn nullable(kind: TypeKind) -> DataType {
    DataType { kind, nullable: true }
}

/// `not_impl_err!` for SQL we recognise but do not support.
pub(crate) fn not_supported<T>(what: &str) -> Result<T> {
    Err(DataFusionError::NotImplemented(format!(
        "Unsupported in Paimon DDL: {what}"
    )))
}
