//! Reading the textual IR back: the inverse of [`super::write`].
//!
//! Parsing runs in two phases. The first reads each line on its own into syntax that
//! still names values, blocks and callees by their text (`v7`, `block2`, `@f`); a
//! malformed line is reported and the next line is read, so one run finds every syntax
//! error. The second phase, once every function is declared, numbers blocks and values
//! in text order (as [`super::write::Names`] does, so print → parse → print is the
//! identity), resolves the references, and infers the result types with
//! [`result_type`] in dependency order: a value may be used above its definition (a
//! parameter of a later block, a loop-carried value), so types cannot be assigned in
//! one sweep. Comments run from `;` to the end of the line.
//!
//! The parser checks what it needs to build a module (names resolve, results can be
//! typed); everything else, such as dominance or operand types the inference does not
//! look at, is the verifier's job, so a module that parses may still fail to verify.

use std::fmt;

use cranelift_entity::EntityRef;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::entities::{Block, FuncRef, GlobalVar, Inst, SharedVar, StackSlot, StrConst, Value};
use super::function::{
    result_type, DataReloc, Function, GlobalData, Linkage, Module, SharedData, Signature,
    StackSlotData,
};
use super::instructions::{
    AtomicOp, BinaryOp, BlockCall, ConvOp, FloatCC, InstData, IntCC, LaneOp, SpecialReg, TrapCode,
    UnaryOp,
};
use super::types::{Scalar, Space, Type};
use crate::source::Span;

/// A parse error at a 1-based line and column (columns count characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl fmt::Display for IrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for IrError {}

/// Parses a module printed by [`super::write::write_module`] (or written by hand in the
/// same form). Returns every error found, sorted by position.
pub fn parse_module(text: &str) -> Result<Module, Vec<IrError>> {
    let mut errors = Vec::new();
    let syntax = read_module(text, &mut errors);
    if !errors.is_empty() {
        return Err(sorted(errors));
    }
    let module = build_module(syntax, &mut errors);
    if errors.is_empty() {
        Ok(module)
    } else {
        Err(sorted(errors))
    }
}

/// The name and signature of a function from its header line alone
/// (`function internal @name(i32, ptr) -> f32 masked {`): for a reader that parses a
/// module's functions only when it needs them.
pub fn parse_function_header(line: &str) -> Result<(String, Signature), IrError> {
    let mut cur = Cursor::new(line, 1);
    let pos = cur.pos();
    cur.keyword("function")?;
    let header = read_function_header(&mut cur, pos)?;
    cur.end()?;
    Ok((header.name, header.sig))
}

fn sorted(mut errors: Vec<IrError>) -> Vec<IrError> {
    errors.sort_by_key(|e| (e.line, e.column));
    errors
}

// ---------------------------------------------------------------------------------------
// Phase 1: lines to syntax.

/// A position in the text.
#[derive(Clone, Copy, Debug, Default)]
struct Pos {
    line: u32,
    column: u32,
}

impl Pos {
    fn error(self, message: impl Into<String>) -> IrError {
        IrError {
            line: self.line,
            column: self.column,
            message: message.into(),
        }
    }
}

/// A module as read, references still by text number or name.
#[derive(Default)]
struct ModuleSyntax {
    header: Option<(u32, u32)>,
    globals: Vec<GlobalData>,
    shared: Vec<SharedData>,
    strings: Vec<String>,
    functions: Vec<FuncSyntax>,
}

struct FuncSyntax {
    pos: Pos,
    name: String,
    linkage: Linkage,
    sig: Signature,
    slots: Vec<StackSlotData>,
    blocks: Vec<BlockSyntax>,
}

struct BlockSyntax {
    pos: Pos,
    number: u32,
    params: Vec<(Ref, Type)>,
    insts: Vec<InstSyntax>,
}

/// A value or block number as written, with where it was written.
#[derive(Clone, Copy)]
struct Ref {
    number: u32,
    pos: Pos,
}

/// An instruction as read. `data` holds `Value::from_u32(n)` for the text's `vn` and
/// `Block::from_u32(n)` for `blockn`; a call's callee is a placeholder until `callee`
/// is resolved.
struct InstSyntax {
    pos: Pos,
    result: Option<Ref>,
    data: InstData,
    callee: Option<(String, Pos)>,
    /// Every value and block reference, in text order, for error positions.
    value_refs: Vec<Ref>,
    block_refs: Vec<Ref>,
}

/// Reads every line into syntax, one line at a time: outside functions module items,
/// inside one (`in_function`) stack slots, block headers and instructions.
fn read_module(text: &str, errors: &mut Vec<IrError>) -> ModuleSyntax {
    let mut module = ModuleSyntax::default();
    let mut in_function = false;
    let mut last_line = 0;
    for (index, line) in text.lines().enumerate() {
        let line_no = u32::try_from(index + 1).unwrap_or(u32::MAX);
        last_line = line_no;
        let mut cur = Cursor::new(line, line_no);
        if cur.at_end() {
            continue;
        }
        let result = if in_function {
            read_function_line(&mut cur, &mut module, &mut in_function)
        } else {
            read_top_line(&mut cur, &mut module, &mut in_function)
        };
        if let Err(e) = result.and_then(|()| cur.end()) {
            errors.push(e);
        }
    }
    if module.header.is_none() && errors.is_empty() {
        errors.push(Pos { line: 1, column: 1 }.error("expected `module lanes N ptr N`"));
    }
    if in_function {
        let pos = Pos {
            line: last_line.max(1),
            column: 1,
        };
        errors.push(pos.error("expected `}` to close the function"));
    }
    module
}

/// A line outside functions: the header, a global, a shared variable, a string or a
/// function header.
fn read_top_line(
    cur: &mut Cursor,
    module: &mut ModuleSyntax,
    in_function: &mut bool,
) -> Result<(), IrError> {
    let pos = cur.pos();
    let word = cur.ident()?;
    if module.header.is_none() && word != "module" {
        return Err(pos.error("expected `module lanes N ptr N` first"));
    }
    match word {
        "module" if module.header.is_none() => {
            cur.keyword("lanes")?;
            let lanes = cur.u32()?;
            cur.keyword("ptr")?;
            module.header = Some((lanes, cur.u32()?));
        }
        "global" | "constant" => {
            let global = read_global(cur, word == "constant", module.globals.len())?;
            module.globals.push(global);
        }
        "shared" => {
            cur.numbered("sh", module.shared.len())?;
            let name = cur.string()?;
            let dynamic = cur.eat_keyword("dynamic");
            let (size, align) = if dynamic {
                cur.keyword("align")?;
                (0, cur.u32()?)
            } else {
                read_size_align(cur)?
            };
            module.shared.push(SharedData {
                name,
                size,
                align,
                dynamic,
            });
        }
        "string" => {
            cur.numbered("str", module.strings.len())?;
            module.strings.push(cur.string()?);
        }
        "function" => {
            module.functions.push(read_function_header(cur, pos)?);
            *in_function = true;
        }
        _ => return Err(pos.error(format!("expected a module item, found `{word}`"))),
    }
    Ok(())
}

/// `global gv0 "name" size 8 align 4 = 01 02 reloc 8 gv1 +4`, after the keyword.
fn read_global(cur: &mut Cursor, constant: bool, index: usize) -> Result<GlobalData, IrError> {
    cur.numbered("gv", index)?;
    let name = cur.string()?;
    let (size, align) = read_size_align(cur)?;
    let mut init = Vec::new();
    if cur.eat('=') {
        while !cur.at_end() && !cur.looking_at_keyword("reloc") {
            init.push(cur.hex_byte()?);
        }
    }
    let mut relocs = Vec::new();
    while cur.eat_keyword("reloc") {
        let offset = cur.u32()?;
        let target = GlobalVar::from_u32(cur.entity("gv")?);
        let addend = cur.i64()?;
        relocs.push(DataReloc {
            offset,
            target,
            addend,
        });
    }
    Ok(GlobalData {
        name,
        size,
        align,
        init,
        relocs,
        constant,
    })
}

fn read_size_align(cur: &mut Cursor) -> Result<(u32, u32), IrError> {
    cur.keyword("size")?;
    let size = cur.u32()?;
    cur.keyword("align")?;
    Ok((size, cur.u32()?))
}

/// `function export @name(i32, ptr) -> f32 masked {`, after the keyword.
fn read_function_header(cur: &mut Cursor, pos: Pos) -> Result<FuncSyntax, IrError> {
    let linkage_pos = cur.pos();
    let linkage = Linkage::from_name(cur.ident()?)
        .ok_or_else(|| linkage_pos.error("expected `internal`, `export` or `task`"))?;
    let name = cur.func_name()?;
    cur.expect('(')?;
    let mut params = Vec::new();
    if !cur.eat(')') {
        loop {
            params.push(cur.ty()?);
            if cur.eat(')') {
                break;
            }
            cur.expect(',')?;
        }
    }
    let ret = if cur.eat_str("->") {
        Some(cur.ty()?)
    } else {
        None
    };
    let takes_mask = cur.eat_keyword("masked");
    cur.expect('{')?;
    Ok(FuncSyntax {
        pos,
        name,
        linkage,
        sig: Signature {
            params,
            ret,
            takes_mask,
        },
        slots: Vec::new(),
        blocks: Vec::new(),
    })
}

/// A line inside a function: `}`, a stack slot, a block header or an instruction.
fn read_function_line(
    cur: &mut Cursor,
    module: &mut ModuleSyntax,
    in_function: &mut bool,
) -> Result<(), IrError> {
    let Some(func) = module.functions.last_mut() else {
        return Err(cur.pos().error("instruction outside a function"));
    };
    if cur.eat('}') {
        *in_function = false;
        return Ok(());
    }
    let pos = cur.pos();
    if cur.looking_at_entity("ss") {
        if !func.blocks.is_empty() {
            return Err(pos.error("stack slots come before the first block"));
        }
        cur.numbered("ss", func.slots.len())?;
        cur.expect('=')?;
        cur.keyword("stack")?;
        let size = cur.u32()?;
        cur.keyword("align")?;
        let align = cur.u32()?;
        func.slots.push(StackSlotData { size, align });
        return Ok(());
    }
    if cur.looking_at_entity("block") {
        let block = read_block_header(cur)?;
        func.blocks.push(block);
        return Ok(());
    }
    let Some(block) = func.blocks.last_mut() else {
        return Err(pos.error("expected a block header such as `block0:`"));
    };
    let inst = read_inst(cur)?;
    block.insts.push(inst);
    Ok(())
}

/// `block3(v4: i32, v5: [f32]):`
fn read_block_header(cur: &mut Cursor) -> Result<BlockSyntax, IrError> {
    let pos = cur.pos();
    let number = cur.entity("block")?;
    let mut params = Vec::new();
    if cur.eat('(') {
        loop {
            let value = cur.value_ref()?;
            cur.expect(':')?;
            params.push((value, cur.ty()?));
            if cur.eat(')') {
                break;
            }
            cur.expect(',')?;
        }
    }
    cur.expect(':')?;
    Ok(BlockSyntax {
        pos,
        number,
        params,
        insts: Vec::new(),
    })
}

/// One instruction line: `[vN =] opcode operands`.
fn read_inst(cur: &mut Cursor) -> Result<InstSyntax, IrError> {
    let result = read_result(cur)?;
    let pos = cur.pos();
    let opcode = cur.ident()?;
    let mut inst = InstSyntax {
        pos,
        result,
        data: InstData::Barrier,
        callee: None,
        value_refs: Vec::new(),
        block_refs: Vec::new(),
    };
    let mut ops = Operands {
        cur,
        inst: &mut inst,
    };
    let data = ops.read(opcode, pos)?;
    inst.data = data;
    Ok(inst)
}

/// `vN =` at the start of an instruction, if there.
fn read_result(cur: &mut Cursor) -> Result<Option<Ref>, IrError> {
    let start = cur.offset;
    if cur.looking_at_entity("v") {
        let value = cur.value_ref()?;
        if cur.eat('=') {
            return Ok(Some(value));
        }
    }
    cur.offset = start;
    Ok(None)
}

/// Reads an instruction's operands, recording every reference it makes.
struct Operands<'c, 'l, 'i> {
    cur: &'c mut Cursor<'l>,
    inst: &'i mut InstSyntax,
}

impl Operands<'_, '_, '_> {
    fn value(&mut self) -> Result<Value, IrError> {
        let r = self.cur.value_ref()?;
        self.inst.value_refs.push(r);
        Ok(Value::from_u32(r.number))
    }

    /// `v1, v2`: the `N` values of a fixed-arity instruction.
    fn values<const N: usize>(&mut self) -> Result<[Value; N], IrError> {
        let mut out = [Value::from_u32(0); N];
        for (i, slot) in out.iter_mut().enumerate() {
            if i > 0 {
                self.cur.expect(',')?;
            }
            *slot = self.value()?;
        }
        Ok(out)
    }

    /// A comma-separated list of values ending at `close` (or at the end of the line
    /// when `close` is `None`); the opening bracket is already read.
    fn list<A: smallvec::Array<Item = Value>>(
        &mut self,
        close: Option<char>,
    ) -> Result<SmallVec<A>, IrError> {
        let mut out = SmallVec::new();
        let done = |cur: &mut Cursor| match close {
            Some(c) => cur.eat(c),
            None => cur.at_end(),
        };
        if done(self.cur) {
            return Ok(out);
        }
        loop {
            out.push(self.value()?);
            if done(self.cur) {
                return Ok(out);
            }
            self.cur.expect(',')?;
        }
    }

    /// ` mask vN`, if there.
    fn mask(&mut self) -> Result<Option<Value>, IrError> {
        if self.cur.eat_keyword("mask") {
            Ok(Some(self.value()?))
        } else {
            Ok(None)
        }
    }

    fn space(&mut self) -> Result<Space, IrError> {
        let pos = self.cur.pos();
        Space::from_name(self.cur.ident()?).ok_or_else(|| {
            pos.error("expected a memory space (generic, global, shared, private, param)")
        })
    }

    /// `block2(v1, v3)` or `block2`.
    fn block_call(&mut self) -> Result<BlockCall, IrError> {
        let r = self.cur.entity_ref("block")?;
        self.inst.block_refs.push(r);
        let args = if self.cur.eat('(') {
            self.list(Some(')'))?
        } else {
            SmallVec::new()
        };
        Ok(BlockCall {
            block: Block::from_u32(r.number),
            args,
        })
    }

    /// `.type` after an opcode that needs one.
    fn type_suffix(&mut self, opcode: &str) -> Result<Type, IrError> {
        if !self.cur.eat_here('.') {
            return Err(self
                .cur
                .pos()
                .error(format!("`{opcode}` needs a type: `{opcode}.i32`")));
        }
        self.cur.ty_here()
    }

    /// The operands of `opcode`, which has been read.
    fn read(&mut self, opcode: &str, pos: Pos) -> Result<InstData, IrError> {
        if let Some(data) = self.read_typed(opcode)? {
            return Ok(data);
        }
        if self.cur.peek() == Some('.') {
            return Err(self
                .cur
                .pos()
                .error(format!("`{opcode}` takes no type suffix")));
        }
        if let Some(data) = self.read_arith(opcode)? {
            return Ok(data);
        }
        if let Some(data) = self.read_memory(opcode)? {
            return Ok(data);
        }
        if let Some(data) = self.read_control(opcode)? {
            return Ok(data);
        }
        Err(pos.error(format!("unknown instruction `{opcode}`")))
    }

    /// Opcodes with a type suffix: constants, loads and conversions.
    fn read_typed(&mut self, opcode: &str) -> Result<Option<InstData>, IrError> {
        Ok(Some(match opcode {
            "iconst" => {
                let ty = self.type_suffix(opcode)?;
                InstData::Iconst {
                    ty,
                    bits: self.cur.i64()? as u64,
                }
            }
            "fconst" => {
                let ty = self.type_suffix(opcode)?;
                InstData::Fconst {
                    ty,
                    bits: self.cur.float_bits()?,
                }
            }
            "load" => {
                let ty = self.type_suffix(opcode)?;
                let space = self.space()?;
                let addr = self.value()?;
                let mask = self.mask()?;
                InstData::Load {
                    ty,
                    space,
                    addr,
                    mask,
                }
            }
            _ => match ConvOp::from_name(opcode) {
                Some(op) => {
                    let to = self.type_suffix(opcode)?;
                    if to.varying {
                        return Err(self.cur.pos().error(
                            "a conversion names the element type only (`sext.i64`); \
                             variability comes from the operand",
                        ));
                    }
                    InstData::Convert {
                        op,
                        to,
                        arg: self.value()?,
                    }
                }
                None => return Ok(None),
            },
        }))
    }

    /// Arithmetic, comparisons, lane operations and special registers.
    fn read_arith(&mut self, opcode: &str) -> Result<Option<InstData>, IrError> {
        if let Some(op) = UnaryOp::from_name(opcode) {
            return Ok(Some(InstData::Unary {
                op,
                arg: self.value()?,
            }));
        }
        if let Some(op) = BinaryOp::from_name(opcode) {
            return Ok(Some(InstData::Binary {
                op,
                args: self.values()?,
            }));
        }
        if let Some(op) = LaneOp::from_name(opcode) {
            return Ok(Some(InstData::Lane {
                op,
                args: self.list(None)?,
            }));
        }
        Ok(Some(match opcode {
            "icmp" => {
                let pos = self.cur.pos();
                let cond = IntCC::from_name(self.cur.ident()?)
                    .ok_or_else(|| pos.error("expected an integer condition such as `slt`"))?;
                InstData::Icmp {
                    cond,
                    args: self.values()?,
                }
            }
            "fcmp" => {
                let pos = self.cur.pos();
                let cond = FloatCC::from_name(self.cur.ident()?)
                    .ok_or_else(|| pos.error("expected a float condition such as `lt`"))?;
                InstData::Fcmp {
                    cond,
                    args: self.values()?,
                }
            }
            "select" => InstData::Select {
                args: self.values()?,
            },
            "splat" => InstData::Splat { arg: self.value()? },
            "special" => {
                let pos = self.cur.pos();
                let reg = SpecialReg::from_name(self.cur.dotted_ident()?)
                    .ok_or_else(|| pos.error("unknown special register"))?;
                InstData::Special { reg }
            }
            _ => return Ok(None),
        }))
    }

    /// Addresses, stores, atomics, calls and prints.
    fn read_memory(&mut self, opcode: &str) -> Result<Option<InstData>, IrError> {
        Ok(Some(match opcode {
            "stack_addr" => InstData::StackAddr {
                slot: StackSlot::from_u32(self.cur.entity("ss")?),
            },
            "global_addr" => InstData::GlobalAddr {
                global: GlobalVar::from_u32(self.cur.entity("gv")?),
            },
            "shared_addr" => InstData::SharedAddr {
                shared: SharedVar::from_u32(self.cur.entity("sh")?),
            },
            "stack_alloc" => InstData::StackAlloc {
                size: self.value()?,
            },
            "store" => {
                let space = self.space()?;
                let [addr, value] = self.values()?;
                InstData::Store {
                    space,
                    addr,
                    value,
                    mask: self.mask()?,
                }
            }
            "atomic_rmw" => {
                let pos = self.cur.pos();
                let op = AtomicOp::from_name(self.cur.ident()?)
                    .ok_or_else(|| pos.error("expected an atomic operation such as `add`"))?;
                let space = self.space()?;
                let [addr, value] = self.values()?;
                InstData::AtomicRmw {
                    op,
                    space,
                    addr,
                    value,
                    mask: self.mask()?,
                }
            }
            "atomic_cas" => {
                let space = self.space()?;
                let [addr, expected, replacement] = self.values()?;
                InstData::AtomicCas {
                    space,
                    addr,
                    expected,
                    replacement,
                    mask: self.mask()?,
                }
            }
            "call" => {
                let pos = self.cur.pos();
                let name = self.cur.func_name()?;
                self.inst.callee = Some((name, pos));
                self.cur.expect('(')?;
                let args = self.list(Some(')'))?;
                InstData::Call {
                    func: FuncRef::from_u32(0),
                    args,
                    mask: self.mask()?,
                }
            }
            "print" => {
                let format = StrConst::from_u32(self.cur.entity("str")?);
                self.cur.expect('(')?;
                let args = self.list(Some(')'))?;
                InstData::Print {
                    format,
                    args,
                    mask: self.mask()?,
                }
            }
            _ => return Ok(None),
        }))
    }

    /// Barriers, traps and terminators.
    fn read_control(&mut self, opcode: &str) -> Result<Option<InstData>, IrError> {
        Ok(Some(match opcode {
            "barrier" => InstData::Barrier,
            "trap" => {
                let pos = self.cur.pos();
                let code =
                    match self.cur.ident()? {
                        "unreachable" => TrapCode::Unreachable,
                        "assert" => TrapCode::AssertFailed,
                        "shared_bounds" => TrapCode::SharedOutOfBounds,
                        "null_fn_ptr" => TrapCode::NullFnPtr,
                        "heap_exhausted" => TrapCode::HeapExhausted,
                        "bad_delete" => TrapCode::BadDelete,
                        "stack_exhausted" => TrapCode::StackExhausted,
                        _ => return Err(pos.error(
                            "expected `unreachable`, `assert`, `shared_bounds`, `null_fn_ptr`, \
                             `heap_exhausted`, `bad_delete` or `stack_exhausted`",
                        )),
                    };
                InstData::Trap { code }
            }
            "jump" => InstData::Jump {
                dest: self.block_call()?,
            },
            "brif" => {
                let cond = self.value()?;
                self.cur.expect(',')?;
                let then_dest = self.block_call()?;
                self.cur.expect(',')?;
                InstData::Brif {
                    cond,
                    then_dest,
                    else_dest: self.block_call()?,
                }
            }
            "return" => InstData::Return {
                value: if self.cur.at_end() {
                    None
                } else {
                    Some(self.value()?)
                },
            },
            _ => return Ok(None),
        }))
    }
}

// ---------------------------------------------------------------------------------------
// The line cursor.

/// Reads tokens from one line. Whitespace between tokens is skipped; `;` starts a
/// comment.
struct Cursor<'a> {
    text: &'a str,
    offset: usize,
    line: u32,
    /// Whether the line is ASCII, so that a column is its byte offset plus one.
    ascii: bool,
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str, line: u32) -> Self {
        Cursor {
            text,
            offset: 0,
            line,
            ascii: text.is_ascii(),
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.offset..]
    }

    fn pos(&mut self) -> Pos {
        self.skip_ws();
        self.pos_here()
    }

    fn pos_here(&self) -> Pos {
        let column = if self.ascii {
            self.offset + 1
        } else {
            self.text[..self.offset].chars().count() + 1
        };
        Pos {
            line: self.line,
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.offset += rest.len() - rest.trim_start().len();
    }

    /// The next character, without skipping whitespace.
    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// Whether only whitespace or a comment is left.
    fn at_end(&mut self) -> bool {
        self.skip_ws();
        matches!(self.peek(), None | Some(';'))
    }

    /// Checks that nothing but a comment is left.
    fn end(&mut self) -> Result<(), IrError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.unexpected("the end of the line"))
        }
    }

    /// An error naming what was expected and the token found instead.
    fn unexpected(&mut self, expected: &str) -> IrError {
        let pos = self.pos();
        let rest = self.rest();
        let found = match rest.chars().next() {
            None | Some(';') => "the end of the line".to_string(),
            Some(c) if is_ident_char(c) => {
                let word: String = rest.chars().take_while(|&c| is_ident_char(c)).collect();
                format!("`{word}`")
            }
            Some(c) => format!("`{c}`"),
        };
        pos.error(format!("expected {expected}, found {found}"))
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        self.eat_here(c)
    }

    fn eat_here(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.offset += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.offset += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), IrError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{c}`")))
        }
    }

    /// A word of letters, digits and `_`.
    fn ident(&mut self) -> Result<&'a str, IrError> {
        self.skip_ws();
        let rest = self.rest();
        let len = rest.find(|c| !is_ident_char(c)).unwrap_or(rest.len());
        if len == 0 {
            return Err(self.unexpected("a word"));
        }
        self.offset += len;
        Ok(&rest[..len])
    }

    /// A word that may contain dots (`thread_idx.x`).
    fn dotted_ident(&mut self) -> Result<&'a str, IrError> {
        self.skip_ws();
        let rest = self.rest();
        let len = rest
            .find(|c| !is_ident_char(c) && c != '.')
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(self.unexpected("a word"));
        }
        self.offset += len;
        Ok(&rest[..len])
    }

    fn keyword(&mut self, kw: &str) -> Result<(), IrError> {
        if self.eat_keyword(kw) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{kw}`")))
        }
    }

    /// Reads `kw` if it is the next whole word.
    fn eat_keyword(&mut self, kw: &str) -> bool {
        let whole = self.looking_at_keyword(kw);
        if whole {
            self.offset += kw.len();
        }
        whole
    }

    /// Whether `kw` is the next whole word (not read).
    fn looking_at_keyword(&mut self, kw: &str) -> bool {
        self.skip_ws();
        let rest = self.rest();
        rest.starts_with(kw) && !rest[kw.len()..].starts_with(is_ident_char)
    }

    /// Whether the next word is `prefix` followed by digits.
    fn looking_at_entity(&mut self, prefix: &str) -> bool {
        self.skip_ws();
        let rest = self.rest();
        let word = &rest[..rest.find(|c| !is_ident_char(c)).unwrap_or(rest.len())];
        word.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }

    /// `prefix` followed by a number (`v12`, `block3`, `gv0`).
    fn entity(&mut self, prefix: &str) -> Result<u32, IrError> {
        Ok(self.entity_ref(prefix)?.number)
    }

    fn entity_ref(&mut self, prefix: &str) -> Result<Ref, IrError> {
        if !self.looking_at_entity(prefix) {
            return Err(self.unexpected(&format!("`{prefix}N`")));
        }
        let pos = self.pos_here();
        let word = self.ident()?;
        // Entity handles reserve u32::MAX as their "none" value.
        match word[prefix.len()..].parse::<u32>() {
            Ok(number) if number < u32::MAX => Ok(Ref { number, pos }),
            _ => Err(pos.error(format!("`{word}`: number too large"))),
        }
    }

    fn value_ref(&mut self) -> Result<Ref, IrError> {
        self.entity_ref("v")
    }

    /// `prefix` followed by the number `index`: module items and stack slots are
    /// numbered densely in order, as their arenas are.
    fn numbered(&mut self, prefix: &str, index: usize) -> Result<(), IrError> {
        let pos = self.pos();
        let number = self.entity(prefix)?;
        if number as usize != index {
            return Err(pos.error(format!(
                "expected {prefix}{index}: these are numbered in order from 0"
            )));
        }
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, IrError> {
        let pos = self.pos();
        let digits = self.number_token();
        digits
            .parse()
            .map_err(|_| pos.error("expected an unsigned 32-bit number"))
    }

    fn i64(&mut self) -> Result<i64, IrError> {
        let pos = self.pos();
        let digits = self.number_token();
        digits
            .parse()
            .map_err(|_| pos.error("expected a signed 64-bit integer"))
    }

    /// A run of characters that may make up a number (`-12`, `1.5e-7`, `inf`, `0x7f`).
    fn number_token(&mut self) -> &'a str {
        self.skip_ws();
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_')))
            .unwrap_or(rest.len());
        self.offset += len;
        &rest[..len]
    }

    /// A float constant as [`super::write::float_text`] prints it: a decimal, or
    /// `0x` and the 16 hex digits of the bits.
    fn float_bits(&mut self) -> Result<u64, IrError> {
        let pos = self.pos();
        let token = self.number_token();
        let bits = match token.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => token.parse::<f64>().ok().map(f64::to_bits),
        };
        bits.ok_or_else(|| pos.error("expected a float constant"))
    }

    fn hex_byte(&mut self) -> Result<u8, IrError> {
        let pos = self.pos();
        let token = self.number_token();
        if token.len() <= 2 {
            if let Ok(b) = u8::from_str_radix(token, 16) {
                return Ok(b);
            }
        }
        Err(pos.error("expected a byte in hex (`0f`)"))
    }

    /// `i32` or `[i32]`.
    fn ty(&mut self) -> Result<Type, IrError> {
        self.skip_ws();
        self.ty_here()
    }

    fn ty_here(&mut self) -> Result<Type, IrError> {
        let pos = self.pos_here();
        let varying = self.eat_here('[');
        let rest = self.rest();
        let len = rest.find(|c| !is_ident_char(c)).unwrap_or(rest.len());
        let scalar = Scalar::from_name(&rest[..len]);
        self.offset += len;
        let closed = !varying || self.eat_here(']');
        match scalar {
            Some(scalar) if closed => Ok(Type { scalar, varying }),
            _ => Err(pos.error("expected a type such as `i32` or `[f32]`")),
        }
    }

    /// `@name`: any characters up to `(` or whitespace (names are printed raw).
    fn func_name(&mut self) -> Result<String, IrError> {
        if !self.eat('@') {
            return Err(self.unexpected("`@name`"));
        }
        let rest = self.rest();
        let len = rest
            .find(|c: char| c == '(' || c.is_whitespace())
            .unwrap_or(rest.len());
        self.offset += len;
        Ok(rest[..len].to_string())
    }

    /// A string literal as Rust's `{:?}` prints it.
    fn string(&mut self) -> Result<String, IrError> {
        let pos = self.pos();
        if !self.eat_here('"') {
            return Err(self.unexpected("a string literal"));
        }
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(pos.error("unterminated string literal"));
            };
            self.offset += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => out.push(self.escape()?),
                c => out.push(c),
            }
        }
    }

    /// The character of an escape, after its `\`.
    fn escape(&mut self) -> Result<char, IrError> {
        let pos = self.pos_here();
        let bad = || pos.error("unknown escape in string literal");
        let c = self.peek().ok_or_else(bad)?;
        self.offset += c.len_utf8();
        Ok(match c {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            '0' => '\0',
            '\\' | '"' | '\'' => c,
            'u' => {
                let rest = self.rest();
                let body = rest.strip_prefix('{').ok_or_else(bad)?;
                let close = body.find('}').ok_or_else(bad)?;
                let code = u32::from_str_radix(&body[..close], 16).map_err(|_| bad())?;
                self.offset += close + 2;
                char::from_u32(code).ok_or_else(bad)?
            }
            _ => return Err(bad()),
        })
    }
}

// ---------------------------------------------------------------------------------------
// Phase 2: syntax to a module.

/// What calls need to know about every function: its handle and return type.
type Callees = FxHashMap<String, (FuncRef, Option<Type>)>;

fn build_module(syntax: ModuleSyntax, errors: &mut Vec<IrError>) -> Module {
    let (lanes, ptr) = syntax.header.unwrap_or_default();
    let mut module = Module::new(lanes, ptr);
    syntax.globals.into_iter().for_each(|g| {
        module.globals.push(g);
    });
    syntax.shared.into_iter().for_each(|s| {
        module.shared.push(s);
    });
    syntax.strings.into_iter().for_each(|s| {
        module.strings.push(s);
    });
    let mut callees = Callees::default();
    for (index, f) in syntax.functions.iter().enumerate() {
        let entry = (FuncRef::from_u32(index as u32), f.sig.ret);
        if callees.insert(f.name.clone(), entry).is_some() {
            errors.push(
                f.pos
                    .error(format!("function @{} is defined twice", f.name)),
            );
        }
    }
    for f in syntax.functions {
        let func = FunctionBuilder::new(&f, &callees, errors).build();
        module.functions.push(func);
    }
    module
}

/// Builds one function from its syntax.
struct FunctionBuilder<'s> {
    syntax: &'s FuncSyntax,
    callees: &'s Callees,
    errors: &'s mut Vec<IrError>,
    blocks: FxHashMap<u32, Block>,
    values: FxHashMap<u32, Value>,
    func: Function,
}

impl<'s> FunctionBuilder<'s> {
    fn new(syntax: &'s FuncSyntax, callees: &'s Callees, errors: &'s mut Vec<IrError>) -> Self {
        let func = Function::new(syntax.name.clone(), syntax.linkage, syntax.sig.clone());
        FunctionBuilder {
            syntax,
            callees,
            errors,
            blocks: FxHashMap::default(),
            values: FxHashMap::default(),
            func,
        }
    }

    fn build(mut self) -> Function {
        for &slot in &self.syntax.slots {
            self.func.stack_slots.push(slot);
        }
        self.number_entities();
        self.create_entities();
        self.infer_types();
        self.func
    }

    /// Maps text numbers to handles in text order: blocks in order, values as each
    /// block's parameters and then its results define them (the printer's order).
    fn number_entities(&mut self) {
        let mut next_value = 0u32;
        for (index, block) in self.syntax.blocks.iter().enumerate() {
            let handle = Block::from_u32(index as u32);
            if self.blocks.insert(block.number, handle).is_some() {
                let e = block
                    .pos
                    .error(format!("block{} is defined twice", block.number));
                self.errors.push(e);
            }
            let params = block.params.iter().map(|(r, _)| *r);
            let results = block.insts.iter().filter_map(|i| i.result);
            for r in params.chain(results) {
                if self
                    .values
                    .insert(r.number, Value::from_u32(next_value))
                    .is_some()
                {
                    self.errors
                        .push(r.pos.error(format!("v{} is defined twice", r.number)));
                }
                next_value += 1;
            }
        }
    }

    /// Creates blocks, parameters and instructions in text order, so that their handles
    /// are the numbers [`Self::number_entities`] gave. Result types are placeholders
    /// until [`Self::infer_types`].
    fn create_entities(&mut self) {
        let syntax = self.syntax;
        for block in &syntax.blocks {
            let handle = self.func.create_block();
            for &(_, ty) in &block.params {
                self.func.append_block_param(handle, ty);
            }
            for inst in &block.insts {
                let data = self.resolve(inst);
                let result = inst.result.map(|_| Type::BOOL);
                self.func.append_inst(handle, data, result, Span::default());
            }
        }
    }

    /// `inst`'s data with text numbers replaced by handles. Unresolved references are
    /// reported and left as they are (the module is thrown away).
    fn resolve(&mut self, inst: &InstSyntax) -> InstData {
        for r in &inst.value_refs {
            if !self.values.contains_key(&r.number) {
                let e = r
                    .pos
                    .error(format!("v{} is used but never defined", r.number));
                self.errors.push(e);
            }
        }
        for r in &inst.block_refs {
            if !self.blocks.contains_key(&r.number) {
                self.errors
                    .push(r.pos.error(format!("block{} is not defined", r.number)));
            }
        }
        let mut data = inst.data.clone();
        let values = &self.values;
        data.map_operands(|v| values.get(&v.as_u32()).copied().unwrap_or(v));
        map_blocks(&mut data, |b| {
            self.blocks.get(&b.as_u32()).copied().unwrap_or(b)
        });
        if let (InstData::Call { func, .. }, Some((name, pos))) = (&mut data, &inst.callee) {
            match self.callees.get(name) {
                Some(&(callee, _)) => *func = callee,
                None => self
                    .errors
                    .push(pos.error(format!("unknown function @{name}"))),
            }
        }
        data
    }

    /// Gives every result its type with [`result_type`], operands first: a worklist of
    /// instructions whose operands are all typed (Kahn's algorithm). Results that
    /// depend on themselves are reported; results that depend on an ill-typed one are
    /// left alone, so one mistake gives one error.
    fn infer_types(&mut self) {
        if !self.errors.is_empty() {
            return;
        }
        let syntax_insts: Vec<&InstSyntax> =
            self.syntax.blocks.iter().flat_map(|b| &b.insts).collect();
        let typed_insts: Vec<Inst> = self
            .func
            .insts
            .keys()
            .filter(|&i| self.func.results[i].is_some())
            .collect();
        let mut waiting: FxHashMap<Inst, usize> = FxHashMap::default();
        let mut users: FxHashMap<Value, Vec<Inst>> = FxHashMap::default();
        let mut ready = Vec::new();
        for &inst in &typed_insts {
            let pending: Vec<Value> = self.func.insts[inst]
                .operands()
                .into_iter()
                .filter(|&v| matches!(self.func.values[v].def, super::ValueDef::Result(_)))
                .collect();
            for &v in &pending {
                users.entry(v).or_default().push(inst);
            }
            waiting.insert(inst, pending.len());
            if pending.is_empty() {
                ready.push(inst);
            }
        }
        let mut poisoned = vec![false; self.func.values.len()];
        while let Some(inst) = ready.pop() {
            waiting.remove(&inst);
            let result = self.func.results[inst].expect("typed instructions have results");
            let ok = self.type_result(inst, result, &poisoned, &syntax_insts);
            poisoned[result.index()] = !ok;
            for &user in users.get(&result).map(Vec::as_slice).unwrap_or(&[]) {
                let count = waiting.get_mut(&user).expect("users wait");
                *count -= 1;
                if *count == 0 {
                    ready.push(user);
                }
            }
        }
        let mut cyclic: Vec<Inst> = waiting.into_keys().collect();
        cyclic.sort();
        for inst in cyclic {
            let r = syntax_insts[inst.index()].result.expect("typed");
            let message = format!(
                "cannot infer the type of v{}: it depends on itself (through its operands)",
                r.number
            );
            self.errors.push(r.pos.error(message));
        }
    }

    /// Types `inst`'s result. Returns false if it could not (an error is reported unless
    /// an operand was already ill-typed).
    fn type_result(
        &mut self,
        inst: Inst,
        result: Value,
        poisoned: &[bool],
        syntax_insts: &[&InstSyntax],
    ) -> bool {
        let data = &self.func.insts[inst];
        if data.operands().iter().any(|v| poisoned[v.index()]) {
            return false;
        }
        let values = &self.func.values;
        let callees = self.callees;
        let syntax = syntax_insts[inst.index()];
        let callee_ret = |_: FuncRef| callees.get(&syntax.callee.as_ref()?.0)?.1;
        let message = match result_type(data, |v| values[v].ty, callee_ret) {
            Ok(Some(ty)) => {
                self.func.values[result].ty = ty;
                return true;
            }
            Ok(None) => "this instruction has no result".to_string(),
            Err(e) => e,
        };
        self.errors.push(syntax.pos.error(message));
        false
    }
}

/// Applies `f` to every branch target of `data`, in place.
fn map_blocks(data: &mut InstData, mut f: impl FnMut(Block) -> Block) {
    match data {
        InstData::Jump { dest } => dest.block = f(dest.block),
        InstData::Brif {
            then_dest,
            else_dest,
            ..
        } => {
            then_dest.block = f(then_dest.block);
            else_dest.block = f(else_dest.block);
        }
        _ => {}
    }
}
