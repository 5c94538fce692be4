//! The syntax pass: tokens to a [`RawKernel`], one kernel at a time.
//!
//! This pass checks the grammar and the literals, and records every definition and use
//! with its position, but does not create values or blocks: a use may come before its
//! definition (a loop-carried block parameter, a block jumped to before it is written),
//! and the result type of `iadd` is the type of an operand that may be defined further
//! down. The build pass ([`super::build`]) resolves names once the whole kernel is read.
//!
//! Until then, every [`Value`] and [`Block`] inside a raw instruction holds the *number
//! written in the text* (`v7` is `Value::from_u32(7)`), which the build pass maps to the
//! entities it creates. Memory variables are declared before the first block, so
//! `shared_addr` and `local_addr` resolve them here directly.
//!
//! The grammar is flat (a kernel is a list of blocks, a block a list of instructions, an
//! instruction a fixed sequence of tokens), and the parser follows it with loops only: no
//! input can make it recurse.

use super::lexer::{quote, shorten, Lexer, Token, TokenKind};
use super::literals::{parse_float, parse_int, IntLit, Sign};
use super::ParseError;
use crate::condcodes::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC};
use crate::entities::{Block, LocalVar, SharedVar, Value};
use crate::function::{MemVarData, Param, Signature};
use crate::instructions::{BlockCall, InstructionData, InstructionFormat, Opcode};
use crate::srcloc::SourceLoc;
use crate::types::Type;
use core::ops::Range;
use cranelift_entity::PrimaryMap;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::sync::OnceLock;

/// A kernel as written: checked for syntax, with names not yet resolved.
#[derive(Debug)]
pub(crate) struct RawKernel<'a> {
    /// Where the `kernel` keyword stands.
    pub loc: SourceLoc,
    /// The name, without `%`.
    pub name: &'a str,
    /// Where the name stands.
    pub name_loc: SourceLoc,
    /// The parameters.
    pub signature: Signature,
    /// Shared-memory declarations, in order.
    pub shared_vars: PrimaryMap<SharedVar, MemVarData>,
    /// Local-memory declarations, in order.
    pub local_vars: PrimaryMap<LocalVar, MemVarData>,
    /// The blocks, in order.
    pub blocks: Vec<RawBlock>,
    /// The instructions of all blocks, in order.
    pub insts: Vec<RawInst>,
    /// The parameters of all blocks, in order: number in `vN`, position, type. One list
    /// for the kernel rather than one per block, which cost an allocation per block.
    pub block_params: Vec<(u32, SourceLoc, Type)>,
    /// Where each value use stands, instruction by instruction, in the order of
    /// [`InstructionData::all_values`] (which is also text order).
    pub value_uses: Vec<SourceLoc>,
    /// Where each block use stands, in the order of
    /// [`InstructionData::branch_destinations`].
    pub block_uses: Vec<SourceLoc>,
}

/// A block as written.
#[derive(Debug)]
pub(crate) struct RawBlock {
    /// The number in `blockN`.
    pub name: u32,
    /// Where the header stands.
    pub loc: SourceLoc,
    /// The parameters, as indices into [`RawKernel::block_params`].
    pub params: Range<usize>,
    /// The block's instructions, as indices into [`RawKernel::insts`].
    pub insts: Range<usize>,
}

/// An instruction as written.
#[derive(Debug)]
pub(crate) struct RawInst {
    /// Where the instruction starts (its result, or its opcode when it has none).
    pub loc: SourceLoc,
    /// The number in the result's `vN`, and where it stands.
    pub result: Option<(u32, SourceLoc)>,
    /// The type written after the opcode (`load.f32`), if the opcode takes one.
    pub explicit_type: Option<Type>,
    /// The instruction, with text numbers in place of values and blocks.
    pub data: InstructionData,
    /// This instruction's entries in [`RawKernel::value_uses`].
    pub value_uses: Range<usize>,
    /// This instruction's entries in [`RawKernel::block_uses`].
    pub block_uses: Range<usize>,
}

/// The number in an entity name such as `v12` or `block0`, if `word` is `prefix`
/// followed by a decimal number of 32 bits written without leading zeros.
///
/// The parser asks this of nearly every word, often for a prefix that does not match, so
/// it compares and converts bytes in one pass instead of going through `str::parse`.
#[inline]
pub(crate) fn entity_number(word: &str, prefix: &str) -> Option<u32> {
    let (word, prefix) = (word.as_bytes(), prefix.as_bytes());
    if word.len() <= prefix.len() || !word.iter().zip(prefix).all(|(a, b)| a == b) {
        return None;
    }
    let digits = &word[prefix.len()..];
    if digits.len() > 1 && digits[0] == b'0' {
        return None;
    }
    let mut n: u32 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u32::from(d))?;
    }
    Some(n)
}

/// Does `word` look like an entity name (prefix and digits) that is not a valid one, such
/// as `v01` or `v99999999999`? Used to explain errors better than "unknown opcode".
fn is_malformed_entity(word: &str) -> bool {
    ["v", "block", "smem", "lmem"].iter().any(|p| {
        word.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            && entity_number(word, p).is_none()
    })
}

/// Looks an opcode up by name in a table built once.
fn opcode_by_name(name: &str) -> Option<Opcode> {
    static TABLE: OnceLock<FxHashMap<&'static str, Opcode>> = OnceLock::new();
    TABLE
        .get_or_init(|| Opcode::ALL.iter().map(|&op| (op.name(), op)).collect())
        .get(name)
        .copied()
}

/// "first", "second", "third".
fn ordinal(i: usize) -> &'static str {
    ["first", "second", "third"]
        .get(i)
        .copied()
        .unwrap_or("next")
}

/// The syntax pass over one text.
pub(crate) struct Parser<'a> {
    lex: Lexer<'a>,
    /// The current token, not yet consumed.
    tok: Token<'a>,
    /// Shared variables of the current kernel by text number.
    smem: HashMap<u32, (SharedVar, SourceLoc)>,
    /// Local variables of the current kernel by text number.
    lmem: HashMap<u32, (LocalVar, SourceLoc)>,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `text`.
    pub fn new(text: &'a str) -> Result<Self, ParseError> {
        let mut lex = Lexer::new(text);
        let tok = lex.next_token()?;
        Ok(Parser {
            lex,
            tok,
            smem: HashMap::new(),
            lmem: HashMap::new(),
        })
    }

    /// Consumes the current token and returns it.
    fn advance(&mut self) -> Result<Token<'a>, ParseError> {
        let tok = self.tok;
        self.bump()?;
        Ok(tok)
    }

    /// Consumes the current token, for callers that have read all they need of it (the
    /// punctuation and the operands, most of the tokens). This is the one place the
    /// parser reads tokens: the lexer is inlined here, once, and writes the next token
    /// straight into `self.tok` instead of returning it through a call.
    #[inline(never)]
    fn bump(&mut self) -> Result<(), ParseError> {
        self.tok = self.lex.next_token()?;
        Ok(())
    }

    /// An error at the current token saying what was expected instead of it. Built out
    /// of line, like every error: the parser's fast paths stay smaller without them.
    #[cold]
    #[inline(never)]
    pub fn expected(&self, what: &str) -> ParseError {
        if self.tok.kind == TokenKind::Eof {
            ParseError::new(
                self.tok.loc,
                format!("unexpected end of input: expected {what}"),
            )
        } else {
            ParseError::new(self.tok.loc, format!("expected {what}, found {}", self.tok))
        }
    }

    /// Consumes a token of `kind`, or fails saying `what()` was expected.
    fn expect(
        &mut self,
        kind: TokenKind,
        what: impl FnOnce() -> String,
    ) -> Result<Token<'a>, ParseError> {
        if self.tok.kind == kind {
            self.advance()
        } else {
            Err(self.expected(&what()))
        }
    }

    /// Consumes the current token if it is of `kind`.
    fn eat(&mut self, kind: TokenKind) -> Result<bool, ParseError> {
        if self.tok.kind == kind {
            self.bump()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Consumes a word, or fails saying `what()` was expected.
    fn word(&mut self, what: impl FnOnce() -> String) -> Result<Token<'a>, ParseError> {
        self.expect(TokenKind::Word, what)
    }

    /// Parses a type name.
    fn ty(&mut self, what: impl FnOnce() -> String) -> Result<(Type, SourceLoc), ParseError> {
        if self.tok.kind == TokenKind::Word {
            let t = self.advance()?;
            return match t.text.parse::<Type>() {
                Ok(ty) => Ok((ty, t.loc)),
                Err(()) => Err(ParseError::new(
                    t.loc,
                    format!(
                        "unknown type {}: expected i1, i8, i16, i32, i64, f32 or f64",
                        quote(t.text)
                    ),
                )),
            };
        }
        Err(self.expected(&what()))
    }

    /// Parses a word naming one of a closed set (condition codes, address spaces, ...)
    /// after opcode `op`. Messages are only formatted when there is an error to report.
    fn named<T: core::str::FromStr + core::fmt::Display>(
        &mut self,
        all: &[T],
        kind: &str,
        op: Opcode,
    ) -> Result<T, ParseError> {
        let context = format_args!("after `{op}`");
        let names = || {
            all.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.tok.kind == TokenKind::Word {
            if let Ok(x) = self.tok.text.parse::<T>() {
                self.advance()?;
                return Ok(x);
            }
            return Err(ParseError::new(
                self.tok.loc,
                format!(
                    "unknown {kind} {} {context}: expected one of {}",
                    quote(self.tok.text),
                    names()
                ),
            ));
        }
        Err(self.expected(&format!("{kind} {context} (one of {})", names())))
    }

    /// Parses an optionally signed integer literal; `what` describes it for errors.
    fn int_lit(
        &mut self,
        allow_sign: bool,
        what: &dyn Fn() -> String,
    ) -> Result<(IntLit, String, SourceLoc), ParseError> {
        let loc = self.tok.loc;
        let mut negative = false;
        let mut sign = "";
        if allow_sign {
            if self.eat(TokenKind::Minus)? {
                negative = true;
                sign = "-";
            } else if self.eat(TokenKind::Plus)? {
                sign = "+";
            }
        }
        let t = self.expect(TokenKind::Number, what)?;
        let shown = format!("{sign}{}", shorten(t.text));
        match parse_int(t.text, negative) {
            Some(lit) => Ok((lit, shown, loc)),
            None => Err(ParseError::new(
                t.loc,
                format!(
                    "invalid integer literal {}: expected decimal digits, or hex digits \
                     after `0x`",
                    quote(t.text)
                ),
            )),
        }
    }

    /// Is the whole text consumed?
    pub fn at_eof(&self) -> bool {
        self.tok.kind == TokenKind::Eof
    }

    /// Parses one kernel: `kernel %name(params) { decls blocks }`.
    pub fn kernel(&mut self) -> Result<RawKernel<'a>, ParseError> {
        let kw = self.word(|| "`kernel`".to_string())?;
        if kw.text != "kernel" {
            return Err(ParseError::new(
                kw.loc,
                format!("expected `kernel`, found {kw}"),
            ));
        }
        let name_tok = self.expect(TokenKind::KernelName, || {
            "a kernel name such as `%main` after `kernel`".to_string()
        })?;
        let name = &name_tok.text[1..];
        // How messages name the kernel: shortened, as names can be arbitrarily long.
        let kname = format!("%{}", shorten(name));
        // Room for as much as the rest of the text can hold (an instruction takes some 30
        // bytes, a value use 4 or more), so the lists are not copied as they grow.
        let rest = self.lex.remaining();
        let mut k = RawKernel {
            loc: kw.loc,
            name,
            name_loc: name_tok.loc,
            signature: Signature::default(),
            shared_vars: PrimaryMap::new(),
            local_vars: PrimaryMap::new(),
            blocks: Vec::with_capacity(rest / 128),
            insts: Vec::with_capacity(rest / 32),
            block_params: Vec::with_capacity(rest / 128),
            value_uses: Vec::with_capacity(rest / 16),
            block_uses: Vec::with_capacity(rest / 96),
        };
        self.smem.clear();
        self.lmem.clear();

        self.expect(TokenKind::LParen, || {
            format!("`(` to open the parameter list of kernel {kname}")
        })?;
        let mut param_locs: HashMap<&str, SourceLoc> = HashMap::new();
        if !self.eat(TokenKind::RParen)? {
            loop {
                let p = self.word(|| format!("a parameter name in kernel {kname}"))?;
                if let Some(first) = param_locs.insert(p.text, p.loc) {
                    return Err(ParseError::new(
                        p.loc,
                        format!(
                            "parameter {} of kernel {kname} is declared twice (first at {first})",
                            quote(p.text)
                        ),
                    ));
                }
                self.expect(TokenKind::Colon, || {
                    format!("`:` after parameter {}", quote(p.text))
                })?;
                let (ty, _) = self.ty(|| format!("the type of parameter {}", quote(p.text)))?;
                k.signature.params.push(Param::new(p.text, ty));
                if self.eat(TokenKind::RParen)? {
                    break;
                }
                self.expect(TokenKind::Comma, || {
                    format!("`,` or `)` after parameter {}", quote(p.text))
                })?;
            }
        }
        self.expect(TokenKind::LBrace, || {
            format!("`{{` to open the body of kernel {kname}")
        })?;

        // Memory declarations come first.
        while self.tok.kind == TokenKind::Word {
            if let Some(n) = entity_number(self.tok.text, "smem") {
                self.decl(&mut k, n, AddrSpace::Shared)?;
            } else if let Some(n) = entity_number(self.tok.text, "lmem") {
                self.decl(&mut k, n, AddrSpace::Local)?;
            } else {
                break;
            }
        }

        // Then the blocks.
        loop {
            match self.tok.kind {
                TokenKind::RBrace => {
                    self.advance()?;
                    break;
                }
                TokenKind::Eof => {
                    return Err(self.expected(&format!("`}}` to close kernel {kname}")));
                }
                TokenKind::Word => {
                    let text = self.tok.text;
                    if let Some(n) = entity_number(text, "block") {
                        self.block_header(&mut k, n)?;
                    } else if entity_number(text, "smem").is_some()
                        || entity_number(text, "lmem").is_some()
                    {
                        return Err(ParseError::new(
                            self.tok.loc,
                            "memory declarations must come before the first block",
                        ));
                    } else if k.blocks.is_empty() {
                        return Err(self.expected("a block header such as `block0:`"));
                    } else {
                        self.inst(&mut k)?;
                    }
                }
                _ => {
                    let what = if k.blocks.is_empty() {
                        "a block header such as `block0:`".to_string()
                    } else {
                        format!("an instruction, a block header or `}}` to close kernel {kname}")
                    };
                    return Err(self.expected(&what));
                }
            }
        }
        if k.blocks.is_empty() {
            return Err(ParseError::new(
                k.loc,
                format!("kernel {kname} has no blocks"),
            ));
        }
        Ok(k)
    }

    /// Parses `smemN = shared SIZE[, align ALIGN]` (or `lmemN = local ...`).
    fn decl(&mut self, k: &mut RawKernel<'a>, n: u32, space: AddrSpace) -> Result<(), ParseError> {
        let var = self.advance()?;
        let var_name = var.text;
        self.expect(TokenKind::Equal, || format!("`=` after {var_name}"))?;
        let kw = self.word(|| format!("`{space}` after `{var_name} =`"))?;
        if kw.text != space.name() {
            return Err(ParseError::new(
                kw.loc,
                format!("expected `{space}` after `{var_name} =`, found {kw}"),
            ));
        }
        let (size, shown, loc) =
            self.int_lit(false, &|| format!("the size in bytes of {var_name}"))?;
        let size = size.to_u32().ok_or_else(|| {
            ParseError::new(
                loc,
                format!("size {shown} of {var_name} does not fit in 32 bits"),
            )
        })?;
        let mut align = 1;
        if self.eat(TokenKind::Comma)? {
            let kw = self.word(|| format!("`align` after the size of {var_name}"))?;
            if kw.text != "align" {
                return Err(ParseError::new(
                    kw.loc,
                    format!("expected `align` after the size of {var_name}, found {kw}"),
                ));
            }
            let (a, shown, loc) =
                self.int_lit(false, &|| format!("the alignment of {var_name}"))?;
            align = match a.to_u32() {
                Some(a) if a.is_power_of_two() => a,
                _ => {
                    return Err(ParseError::new(
                        loc,
                        format!("alignment {shown} of {var_name} is not a power of two"),
                    ))
                }
            };
        }
        let data = MemVarData { size, align };
        let first = match space {
            AddrSpace::Local => {
                let v = k.local_vars.push(data);
                self.lmem.insert(n, (v, var.loc)).map(|f| f.1)
            }
            _ => {
                let v = k.shared_vars.push(data);
                self.smem.insert(n, (v, var.loc)).map(|f| f.1)
            }
        };
        if let Some(first) = first {
            return Err(ParseError::new(
                var.loc,
                format!("{var_name} is defined twice (first at {first})"),
            ));
        }
        Ok(())
    }

    /// Parses `blockN:` or `blockN(vA: ty, ...):` and opens the block.
    fn block_header(&mut self, k: &mut RawKernel<'a>, n: u32) -> Result<(), ParseError> {
        let header = self.advance()?;
        let first_param = k.block_params.len();
        if self.eat(TokenKind::LParen)? && !self.eat(TokenKind::RParen)? {
            loop {
                let (v, loc) = self.value_name(&|| format!("a parameter of block{n}"))?;
                self.expect(TokenKind::Colon, || format!("`:` after parameter v{v}"))?;
                let (ty, _) = self.ty(|| format!("the type of parameter v{v}"))?;
                k.block_params.push((v, loc, ty));
                if self.eat(TokenKind::RParen)? {
                    break;
                }
                self.expect(TokenKind::Comma, || {
                    format!("`,` or `)` after parameter v{v} of block{n}")
                })?;
            }
        }
        self.expect(TokenKind::Colon, || {
            format!("`:` after the header of block{n}")
        })?;
        if let Some(last) = k.blocks.last_mut() {
            last.insts.end = k.insts.len();
        }
        k.blocks.push(RawBlock {
            name: n,
            loc: header.loc,
            params: first_param..k.block_params.len(),
            insts: k.insts.len()..k.insts.len(),
        });
        Ok(())
    }

    /// Parses a value name `vN`, giving its number.
    fn value_name(&mut self, what: &dyn Fn() -> String) -> Result<(u32, SourceLoc), ParseError> {
        if self.tok.kind == TokenKind::Word {
            if let Some(n) = entity_number(self.tok.text, "v") {
                let loc = self.tok.loc;
                self.bump()?;
                return Ok((n, loc));
            }
        }
        Err(self.value_expected(what))
    }

    /// The error for a missing value name, built out of line.
    #[cold]
    #[inline(never)]
    fn value_expected(&self, what: &dyn Fn() -> String) -> ParseError {
        self.expected(&format!("a value such as `v1` as {}", what()))
    }

    /// Parses a value operand and records the use. Operands are most of the text, so
    /// this is written out rather than through [`Self::value_name`]: the number is
    /// read, its position recorded and the token consumed with nothing returned in
    /// between.
    #[inline]
    fn use_value(
        &mut self,
        k: &mut RawKernel<'a>,
        what: &dyn Fn() -> String,
    ) -> Result<Value, ParseError> {
        if self.tok.kind == TokenKind::Word {
            if let Some(n) = entity_number(self.tok.text, "v") {
                k.value_uses.push(self.tok.loc);
                self.bump()?;
                return Ok(Value::from_u32(n));
            }
        }
        Err(self.value_expected(what))
    }

    /// Parses `,` after something described by `what`.
    fn comma_after(&mut self, what: &dyn Fn() -> String) -> Result<(), ParseError> {
        if self.tok.kind == TokenKind::Comma {
            return self.bump();
        }
        Err(self.expected(&format!("`,` after {}", what())))
    }

    /// Parses `ADDR`, `ADDR+OFF` or `ADDR-OFF`, recording the use of `ADDR`.
    fn address(&mut self, k: &mut RawKernel<'a>, op: Opcode) -> Result<(Value, i32), ParseError> {
        let v = self.use_value(k, &|| format!("the address of `{op}`"))?;
        if !matches!(self.tok.kind, TokenKind::Plus | TokenKind::Minus) {
            return Ok((v, 0));
        }
        let (lit, shown, loc) = self.int_lit(true, &|| {
            format!("an offset after the sign in the address of `{op}`")
        })?;
        let off = lit.to_i32().ok_or_else(|| {
            ParseError::new(loc, format!("offset {shown} of `{op}` does not fit in i32"))
        })?;
        Ok((v, off))
    }

    /// Parses `blockN` or `blockN(args)`, recording the uses.
    fn block_call(
        &mut self,
        k: &mut RawKernel<'a>,
        what: &dyn Fn() -> String,
    ) -> Result<BlockCall, ParseError> {
        let n = match self.tok.kind {
            TokenKind::Word => entity_number(self.tok.text, "block"),
            _ => None,
        };
        let Some(n) = n else {
            return Err(self.expected(&format!("a block such as `block1` as {}", what())));
        };
        k.block_uses.push(self.tok.loc);
        self.bump()?;
        let mut args = Vec::new();
        if self.eat(TokenKind::LParen)? && !self.eat(TokenKind::RParen)? {
            loop {
                args.push(self.use_value(k, &|| format!("an argument of block{n}"))?);
                if self.eat(TokenKind::RParen)? {
                    break;
                }
                self.expect(TokenKind::Comma, || {
                    format!("`,` or `)` after an argument of block{n}")
                })?;
            }
        }
        Ok(BlockCall::new(Block::from_u32(n), args))
    }

    /// Parses one instruction into the current block.
    fn inst(&mut self, k: &mut RawKernel<'a>) -> Result<(), ParseError> {
        let loc = self.tok.loc;
        let value_start = k.value_uses.len();
        let block_start = k.block_uses.len();
        let result = match entity_number(self.tok.text, "v") {
            Some(n) => {
                self.bump()?;
                if self.tok.kind != TokenKind::Equal {
                    return Err(self.expected(&format!("`=` after v{n}")));
                }
                self.bump()?;
                Some((n, loc))
            }
            None => None,
        };
        let op_tok = self.word(|| "an opcode".to_string())?;
        let Some(op) = opcode_by_name(op_tok.text) else {
            let msg = if is_malformed_entity(op_tok.text) {
                format!(
                    "invalid name {}: entity numbers have no leading zeros and fit in 32 bits",
                    quote(op_tok.text)
                )
            } else {
                format!("unknown opcode {}", quote(op_tok.text))
            };
            return Err(ParseError::new(op_tok.loc, msg));
        };
        match (op.has_result(), result) {
            (true, None) => {
                return Err(ParseError::new(
                    op_tok.loc,
                    format!("`{op}` defines a value: write it as `vN = {op} ...`"),
                ))
            }
            (false, Some((n, _))) => {
                return Err(ParseError::new(
                    op_tok.loc,
                    format!("`{op}` has no result to assign to v{n}"),
                ))
            }
            _ => {}
        }
        let explicit_type = if op.has_explicit_type() {
            self.expect(TokenKind::Dot, || {
                format!("`.` and the result type after `{op}`, as in `{op}.i32`")
            })?;
            Some(self.ty(|| format!("the result type of `{op}`"))?)
        } else {
            if self.tok.kind == TokenKind::Dot {
                return Err(ParseError::new(
                    self.tok.loc,
                    format!("`{op}` takes no type suffix: its result type is implied"),
                ));
            }
            None
        };

        use InstructionData as D;
        use InstructionFormat as F;
        let nth = |i: usize| move || format!("the {} operand of `{op}`", ordinal(i));
        let data = match op.format() {
            F::Nullary => D::Nullary { opcode: op },
            F::UnaryImm => {
                // Only opcodes with an explicit type use this format.
                let (ty, ty_loc) = explicit_type.unwrap_or((Type::I64, loc));
                if !ty.is_int() {
                    return Err(ParseError::new(
                        ty_loc,
                        format!("`{op}` needs an integer type, found `{ty}`"),
                    ));
                }
                let (lit, shown, lit_loc) =
                    self.int_lit(true, &|| format!("an integer literal after `{op}.{ty}`"))?;
                let imm = lit.to_bits(ty).ok_or_else(|| {
                    ParseError::new(
                        lit_loc,
                        format!("integer literal {shown} does not fit in {ty}"),
                    )
                })?;
                D::UnaryImm { opcode: op, imm }
            }
            F::FloatConst => {
                let ty = if op == Opcode::F32const {
                    Type::F32
                } else {
                    Type::F64
                };
                let lit_loc = self.tok.loc;
                let sign = if self.eat(TokenKind::Minus)? {
                    Sign::Minus
                } else if self.eat(TokenKind::Plus)? {
                    Sign::Plus
                } else {
                    Sign::None
                };
                let t = self.tok;
                let is_literal = t.kind == TokenKind::Number
                    || (t.kind == TokenKind::Word && matches!(t.text, "inf" | "nan"));
                if !is_literal {
                    return Err(self.expected(&format!("a {ty} literal after `{op}`")));
                }
                self.advance()?;
                let bits =
                    parse_float(t.text, sign, ty).map_err(|m| ParseError::new(lit_loc, m))?;
                D::FloatConst { opcode: op, bits }
            }
            F::Unary => D::Unary {
                opcode: op,
                arg: self.use_value(k, &|| format!("the operand of `{op}`"))?,
            },
            F::Binary => {
                let a = self.use_value(k, &nth(0))?;
                self.comma_after(&nth(0))?;
                let b = self.use_value(k, &nth(1))?;
                D::Binary {
                    opcode: op,
                    args: [a, b],
                }
            }
            F::Ternary => {
                let a = self.use_value(k, &nth(0))?;
                self.comma_after(&nth(0))?;
                let b = self.use_value(k, &nth(1))?;
                self.comma_after(&nth(1))?;
                let c = self.use_value(k, &nth(2))?;
                D::Ternary {
                    opcode: op,
                    args: [a, b, c],
                }
            }
            F::IntCompare => {
                let cond = self.named::<IntCC>(IntCC::ALL, "integer condition code", op)?;
                let a = self.use_value(k, &nth(0))?;
                self.comma_after(&nth(0))?;
                let b = self.use_value(k, &nth(1))?;
                D::IntCompare {
                    opcode: op,
                    cond,
                    args: [a, b],
                }
            }
            F::FloatCompare => {
                let cond = self.named::<FloatCC>(FloatCC::ALL, "float condition code", op)?;
                let a = self.use_value(k, &nth(0))?;
                self.comma_after(&nth(0))?;
                let b = self.use_value(k, &nth(1))?;
                D::FloatCompare {
                    opcode: op,
                    cond,
                    args: [a, b],
                }
            }
            F::Geometry => D::Geometry {
                opcode: op,
                dim: self.named::<Dim>(Dim::ALL, "dimension", op)?,
            },
            F::Load => {
                let space = self.space(op)?;
                let (arg, offset) = self.address(k, op)?;
                D::Load {
                    opcode: op,
                    space,
                    arg,
                    offset,
                }
            }
            F::Store => {
                let space = self.space(op)?;
                let what = || format!("the value of `{op}`");
                let value = self.use_value(k, &what)?;
                self.comma_after(&what)?;
                let (addr, offset) = self.address(k, op)?;
                D::Store {
                    opcode: op,
                    space,
                    args: [value, addr],
                    offset,
                }
            }
            F::AtomicRmw => {
                let rmw = self.named::<AtomicRmwOp>(AtomicRmwOp::ALL, "atomic operation", op)?;
                let space = self.space(op)?;
                let (addr, offset) = self.address(k, op)?;
                self.comma_after(&|| format!("the address of `{op}`"))?;
                let operand = self.use_value(k, &|| format!("the operand of `{op}`"))?;
                D::AtomicRmw {
                    opcode: op,
                    op: rmw,
                    space,
                    args: [addr, operand],
                    offset,
                }
            }
            F::AtomicCas => {
                let space = self.space(op)?;
                let (addr, offset) = self.address(k, op)?;
                self.comma_after(&|| format!("the address of `{op}`"))?;
                let expected_what = || format!("the expected value of `{op}`");
                let expected = self.use_value(k, &expected_what)?;
                self.comma_after(&expected_what)?;
                let replacement =
                    self.use_value(k, &|| format!("the replacement value of `{op}`"))?;
                D::AtomicCas {
                    opcode: op,
                    space,
                    args: [addr, expected, replacement],
                    offset,
                }
            }
            F::SharedAddr => {
                let (var, _) =
                    self.mem_var("smem", "shared", op, |p, n| p.smem.get(&n).map(|e| e.0))?;
                D::SharedAddr { opcode: op, var }
            }
            F::LocalAddr => {
                let (var, _) =
                    self.mem_var("lmem", "local", op, |p, n| p.lmem.get(&n).map(|e| e.0))?;
                D::LocalAddr { opcode: op, var }
            }
            F::Jump => D::Jump {
                opcode: op,
                dest: self.block_call(k, &|| format!("the destination of `{op}`"))?,
            },
            F::Brif => {
                let cond_what = || format!("the condition of `{op}`");
                let arg = self.use_value(k, &cond_what)?;
                self.comma_after(&cond_what)?;
                let then_what = || format!("the first destination of `{op}`");
                let then_dest = self.block_call(k, &then_what)?;
                self.comma_after(&then_what)?;
                let else_dest =
                    self.block_call(k, &|| format!("the second destination of `{op}`"))?;
                D::Brif {
                    opcode: op,
                    arg,
                    dests: [then_dest, else_dest],
                }
            }
            F::BrTable => {
                let index_what = || format!("the index of `{op}`");
                let arg = self.use_value(k, &index_what)?;
                self.comma_after(&index_what)?;
                let default_what = || format!("the default destination of `{op}`");
                let mut dests = vec![self.block_call(k, &default_what)?];
                self.comma_after(&default_what)?;
                self.expect(TokenKind::LBracket, || {
                    format!("`[` to open the table of `{op}`")
                })?;
                if !self.eat(TokenKind::RBracket)? {
                    loop {
                        let i = dests.len() - 1;
                        dests.push(
                            self.block_call(k, &|| format!("entry {i} of the table of `{op}`"))?,
                        );
                        if self.eat(TokenKind::RBracket)? {
                            break;
                        }
                        self.expect(TokenKind::Comma, || {
                            format!("`,` or `]` after entry {i} of the table of `{op}`")
                        })?;
                    }
                }
                D::BrTable {
                    opcode: op,
                    arg,
                    dests,
                }
            }
        };
        if self.tok.kind == TokenKind::Comma {
            return Err(ParseError::new(
                self.tok.loc,
                format!("unexpected `,`: `{op}` takes no more operands"),
            ));
        }
        k.insts.push(RawInst {
            loc,
            result,
            explicit_type: explicit_type.map(|(ty, _)| ty),
            data,
            value_uses: value_start..k.value_uses.len(),
            block_uses: block_start..k.block_uses.len(),
        });
        if let Some(b) = k.blocks.last_mut() {
            b.insts.end = k.insts.len();
        }
        Ok(())
    }

    /// Parses the address space of a memory instruction.
    fn space(&mut self, op: Opcode) -> Result<AddrSpace, ParseError> {
        self.named::<AddrSpace>(AddrSpace::ALL, "address space", op)
    }

    /// Parses a memory variable name `{prefix}N` and resolves it with `lookup`.
    fn mem_var<T>(
        &mut self,
        prefix: &str,
        kind: &str,
        op: Opcode,
        lookup: impl Fn(&Self, u32) -> Option<T>,
    ) -> Result<(T, SourceLoc), ParseError> {
        let n = match self.tok.kind {
            TokenKind::Word => entity_number(self.tok.text, prefix),
            _ => None,
        };
        let Some(n) = n else {
            return Err(self.expected(&format!(
                "a {kind} variable such as `{prefix}0` after `{op}`"
            )));
        };
        let t = self.advance()?;
        match lookup(self, n) {
            Some(v) => Ok((v, t.loc)),
            None => Err(ParseError::new(
                t.loc,
                format!("unknown {kind} variable {prefix}{n}"),
            )),
        }
    }
}
