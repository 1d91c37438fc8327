//! Frame layout and emission: an allocated [`MachFunction`] to Nyuzi instruction words
//! appended to an [`Object`], with branch offsets resolved, relocations for calls and
//! addresses, and line-table entries.
//!
//! # Frame (from the new `sp` upwards; `sp` and the frame size are 64-byte aligned)
//!
//! 0. outgoing stack arguments of the calls the function makes (incoming ones are
//!    above the frame, in the caller's area 0);
//! 1. saved callee-saved vector registers and vector spill slots (64 bytes each);
//! 2. the IR stack slots, each at its alignment, the area rounded to 64 bytes and
//!    zeroed by the prologue (the interpreter zeroes a frame's slots when it is pushed);
//! 3. the scratch word of per-lane narrow scatters (when used), scalar spill slots,
//!    saved callee-saved scalar registers, `ra` and `fp` (4 bytes each).
//!
//! The prologue subtracts the frame size from `sp` and saves; every `ret` is preceded
//! by the restoring epilogue. Offsets beyond an instruction's immediate go through
//! `fp` (`s29`) in the body, which the allocator never assigns: the emitter's scratch
//! register, saved by the prologue when used (it is callee-saved); the prologue and
//! epilogue themselves use `s9`.
//! The zeroing loop of the prologue uses `s8`–`s10` and `v8`, which hold nothing at
//! function entry (arguments are in `s0`–`s7`/`v0`–`v7`).
//!
//! # Dynamic frames (`alloca`)
//!
//! A function with a `stack_alloc` moves `sp` down in its body, by each allocation's
//! size rounded to 64 bytes, so the frame cannot be addressed from `sp`. Its prologue
//! saves `ra` and `fp` and copies the frame's `sp` into `fp`, which then addresses
//! everything of area 1 to 3 and the incoming arguments; the emitter's scratch register
//! becomes `ra` (saved, and a call overwrites it anyway). Area 0, the outgoing
//! arguments, stays at the current `sp`: an allocation takes the bytes above it, so
//! its address is the new `sp` plus area 0 (at least 64 bytes in such a frame). The
//! epilogue restores `sp` from `fp`, which frees every allocation at once. `barrier()`
//! clobbers `fp` like every register but `gp` and `sp`, so around it `fp` is kept in
//! the first word of area 0, which no call's argument occupies then.

use cranelift_entity::EntityRef;
use sim::nyuzi::{AluOp, BranchOp, IFmt, Inst, MemOp, RFmt};

use super::abi::{
    ctx, RuntimeFn, CALLEE_SAVED_SCALAR, CALLEE_SAVED_VECTOR, FP, GP, RA, SP, VECTOR,
};
use super::minst::{Callee, FrameObj, MInst};
use super::object::{LineEntry, Object, Reloc, RelocKind, RelocTarget, Symbol};
use crate::back::common::mach::{MBlock, MachFunction, PReg, Reg};
use crate::ir::{Function, TrapCode, STACK_ALLOC_ALIGN};
use crate::source::Span;

/// Where everything lives in one function's frame (byte offsets from `sp`, or from
/// `fp` in a dynamic frame).
#[derive(Clone, Debug, Default)]
pub struct Frame {
    pub size: u32,
    /// The function moves `sp` (`stack_alloc`): the frame is addressed from `fp`.
    pub dynamic: bool,
    /// Bytes of area 0, the outgoing arguments (a multiple of 64).
    pub out_area: u32,
    pub slots: Vec<u32>,
    pub scratch: u32,
    pub spills: Vec<u32>,
    /// Saved registers (callee-saved ones the function writes, and `ra`).
    pub saves: Vec<(PReg, u32)>,
    /// The IR stack slot area to zero: start and bytes (multiples of 64).
    pub zero: (u32, u32),
}

impl Frame {
    /// The register the body addresses the frame from.
    fn base(&self) -> u8 {
        if self.dynamic {
            FP.index
        } else {
            SP.index
        }
    }

    /// The body's scratch register for offsets beyond an immediate.
    fn tmp(&self) -> u8 {
        if self.dynamic {
            RA.index
        } else {
            FP.index
        }
    }
}

fn align_up(x: u32, a: u32) -> u32 {
    let a = a.max(1);
    x.div_ceil(a) * a
}

/// What a function's frame must hold besides its spill slots.
#[derive(Clone, Copy, Debug)]
pub struct FrameNeeds<'a> {
    /// Registers the allocated code writes or clobbers.
    pub used: &'a [PReg],
    /// Whether the function calls (saves `ra`).
    pub has_calls: bool,
    /// Bytes of outgoing stack arguments.
    pub out_args: u32,
    /// Whether per-lane narrow scatters need the scratch word.
    pub needs_scratch: bool,
    /// Whether the body uses `fp` as its scratch register.
    pub save_fp: bool,
    /// Whether the body moves `sp` (`stack_alloc`).
    pub dynamic_stack: bool,
    /// The IR stack slots that get space.
    pub used_slots: &'a [bool],
}

/// Lays out the frame of `f` after allocation.
pub fn frame_layout(f: &Function, mf: &MachFunction<MInst>, needs: &FrameNeeds<'_>) -> Frame {
    let FrameNeeds {
        used,
        has_calls,
        out_args,
        needs_scratch,
        save_fp,
        dynamic_stack,
        used_slots,
    } = *needs;
    let mut fr = Frame {
        dynamic: dynamic_stack,
        ..Frame::default()
    };
    // A dynamic frame keeps `fp` in area 0 across a barrier: at least one line.
    let min_out = if dynamic_stack { 1 } else { 0 };
    fr.out_area = out_args.div_ceil(64).max(min_out) * 64;
    let mut off = fr.out_area;
    let mut spills = vec![0u32; mf.spill_slots.len()];
    for &p in CALLEE_SAVED_VECTOR.iter().filter(|p| used.contains(p)) {
        fr.saves.push((p, off));
        off += 64;
    }
    for (slot, class) in mf.spill_slots.iter() {
        if *class == VECTOR {
            spills[slot.index()] = off;
            off += 64;
        }
    }
    let start = off;
    for (slot, ss) in f.stack_slots.iter() {
        if !used_slots.get(slot.index()).copied().unwrap_or(true) {
            fr.slots.push(0);
            continue;
        }
        off = align_up(off, ss.align.min(64));
        fr.slots.push(off);
        off += ss.size;
    }
    off = align_up(off, 64);
    fr.zero = (start, off - start);
    fr.scratch = off;
    if needs_scratch {
        off += 4;
    }
    for (slot, class) in mf.spill_slots.iter() {
        if *class != VECTOR {
            spills[slot.index()] = off;
            off += 4;
        }
    }
    for &p in CALLEE_SAVED_SCALAR.iter().filter(|p| used.contains(p)) {
        fr.saves.push((p, off));
        off += 4;
    }
    if has_calls || dynamic_stack {
        fr.saves.push((RA, off));
        off += 4;
    }
    if save_fp || dynamic_stack {
        fr.saves.push((FP, off));
        off += 4;
    }
    fr.spills = spills;
    fr.size = align_up(off, 64);
    fr
}

/// The prologue's and epilogue's scratch register for large frame offsets: caller-saved
/// and neither an argument nor a result register, so free at entry and at return.
const EDGE_TMP: u8 = 9;

fn fits(x: i64, bits: u32) -> bool {
    let lim = 1i64 << (bits - 1);
    (-lim..lim).contains(&x)
}

fn li(out: &mut Vec<Inst>, dest: u8, x: u32) {
    let sx = x as i32;
    if fits(i64::from(sx), 14) {
        out.push(Inst::Imm {
            fmt: IFmt::S,
            op: AluOp::Move,
            dest,
            src1: 0,
            imm: sx,
        });
        return;
    }
    out.push(Inst::MoveHi { dest, imm: x >> 13 });
    if x & 0x1fff != 0 {
        out.push(Inst::Imm {
            fmt: IFmt::S,
            op: AluOp::Or,
            dest,
            src1: dest,
            imm: (x & 0x1fff) as i32,
        });
    }
}

/// `dest = base + off` (through `dest` itself for large offsets, or `tmp` when
/// `dest` is `base`).
fn add_const(out: &mut Vec<Inst>, dest: u8, base: u8, off: i64, tmp: u8) {
    if fits(off, 14) {
        out.push(Inst::Imm {
            fmt: IFmt::S,
            op: AluOp::AddI,
            dest,
            src1: base,
            imm: off as i32,
        });
    } else {
        let tmp = if dest == base { tmp } else { dest };
        li(out, tmp, off as u32);
        out.push(Inst::Reg {
            fmt: RFmt::Sss,
            op: AluOp::AddI,
            dest,
            src1: base,
            src2: tmp,
            mask: 0,
        });
    }
}

/// A memory access at `sp + off`, through `tmp` when `off` does not fit.
fn sp_access(out: &mut Vec<Inst>, op: MemOp, load: bool, reg: u8, off: u32, tmp: u8) {
    base_access(out, op, load, reg, SP.index, off, tmp);
}

/// A memory access at `base + off`, through `tmp` when `off` does not fit.
fn base_access(out: &mut Vec<Inst>, op: MemOp, load: bool, reg: u8, base: u8, off: u32, tmp: u8) {
    let (ptr, offset) = if fits(i64::from(off), 15) {
        (base, off as i32)
    } else {
        add_const(out, tmp, base, i64::from(off), tmp);
        (tmp, 0)
    };
    out.push(Inst::Mem {
        op,
        load,
        srcdest: reg,
        ptr,
        mask: 0,
        offset,
    });
}

fn prologue(out: &mut Vec<Inst>, fr: &Frame) {
    if fr.size > 0 {
        add_const(out, SP.index, SP.index, -i64::from(fr.size), EDGE_TMP);
    }
    for &(p, off) in &fr.saves {
        let op = if p.class == VECTOR {
            MemOp::Block
        } else {
            MemOp::W32
        };
        sp_access(out, op, false, p.index, off, EDGE_TMP);
    }
    if fr.dynamic {
        add_const(out, FP.index, SP.index, 0, EDGE_TMP);
    }
    let (start, len) = fr.zero;
    if len == 0 {
        return;
    }
    out.push(Inst::Imm {
        fmt: IFmt::V,
        op: AluOp::Move,
        dest: 8,
        src1: 0,
        imm: 0,
    });
    if len <= 4 * 64 {
        for k in 0..len / 64 {
            sp_access(out, MemOp::Block, false, 8, start + 64 * k, EDGE_TMP);
        }
        return;
    }
    add_const(out, 8, SP.index, i64::from(start), 8);
    add_const(out, 9, SP.index, i64::from(start + len), 9);
    // loop: store_v v8, (s8); s8 += 64; s10 = s8 < s9; bnz s10, loop
    out.push(Inst::Mem {
        op: MemOp::Block,
        load: false,
        srcdest: 8,
        ptr: 8,
        mask: 0,
        offset: 0,
    });
    out.push(Inst::Imm {
        fmt: IFmt::S,
        op: AluOp::AddI,
        dest: 8,
        src1: 8,
        imm: 64,
    });
    out.push(Inst::Reg {
        fmt: RFmt::Sss,
        op: AluOp::CmpLtU,
        dest: 10,
        src1: 8,
        src2: 9,
        mask: 0,
    });
    out.push(Inst::Branch {
        op: BranchOp::Bnz,
        reg: 10,
        offset: -3,
    });
}

fn epilogue(out: &mut Vec<Inst>, fr: &Frame) {
    if fr.dynamic {
        // Frees every `stack_alloc` of the call.
        add_const(out, SP.index, FP.index, 0, EDGE_TMP);
    }
    for &(p, off) in &fr.saves {
        let op = if p.class == VECTOR {
            MemOp::Block
        } else {
            MemOp::W32
        };
        sp_access(out, op, true, p.index, off, EDGE_TMP);
    }
    if fr.size > 0 {
        add_const(out, SP.index, SP.index, i64::from(fr.size), EDGE_TMP);
    }
    out.push(Inst::Branch {
        op: BranchOp::Reg,
        reg: RA.index,
        offset: 0,
    });
}

fn phys(r: Reg) -> Result<u8, String> {
    match r {
        Reg::Phys(p) => Ok(p.index),
        Reg::Virt(v) => Err(format!("virtual register {v:?} left after allocation")),
    }
}

/// Whether the body of `mf` needs `fp` as a scratch register with frame `fr` (then
/// the frame must save it: `fp` is callee-saved).
pub fn uses_fp(f: &Function, mf: &MachFunction<MInst>, fr: &Frame) -> bool {
    let mut scratch = Object::default();
    if emit_function(&mut scratch, f, mf, fr).is_err() {
        return false;
    }
    scratch.code.iter().any(|i| match *i {
        Inst::Reg { fmt, dest, .. } => fmt == RFmt::Sss && dest == FP.index,
        Inst::Imm { fmt, dest, .. } => fmt == IFmt::S && dest == FP.index,
        Inst::MoveHi { dest, .. } => dest == FP.index,
        _ => false,
    })
}

/// Appends one allocated function to `obj`. `f` is its IR (stack slots).
pub fn emit_function(
    obj: &mut Object,
    f: &Function,
    mf: &MachFunction<MInst>,
    fr: &Frame,
) -> Result<(), String> {
    let base = obj.code.len() as u32;
    let mut out: Vec<Inst> = Vec::new();
    prologue(&mut out, fr);
    let mut block_pos: Vec<u32> = vec![0; mf.blocks.len()];
    let mut fixups: Vec<(usize, MBlock)> = Vec::new();
    let order: Vec<MBlock> = mf.blocks.keys().collect();
    let mut last_span = None;
    for (i, &b) in order.iter().enumerate() {
        block_pos[b.index()] = out.len() as u32;
        let next = order.get(i + 1).copied();
        let insts = &mf.blocks[b].insts;
        let mut k = 0;
        while k < insts.len() {
            let line = &insts[k];
            let at = out.len();
            // `bnz c, next ; b other` becomes `bz c, other`.
            let inverted = match (&line.inst, insts.get(k + 1).map(|l| &l.inst)) {
                (MInst::CondBr { nz, cond, target }, Some(MInst::Jump { target: other }))
                    if Some(*target) == next =>
                {
                    Some(MInst::CondBr {
                        nz: !nz,
                        cond: *cond,
                        target: *other,
                    })
                }
                _ => None,
            };
            if let Some(inv) = &inverted {
                emit_inst(&mut out, obj, base, inv, fr, next, &mut fixups)?;
                k += 1;
            } else {
                emit_inst(&mut out, obj, base, &line.inst, fr, next, &mut fixups)?;
            }
            k += 1;
            // The default span marks code without a source position.
            if let Some(span) = line.span.filter(|s| *s != Span::default()) {
                if out.len() > at && last_span != Some(span) {
                    obj.lines.push(LineEntry {
                        offset: base + at as u32,
                        span,
                    });
                    last_span = Some(span);
                }
            }
        }
    }
    for (at, target) in fixups {
        let dist = block_pos[target.index()] as i64 - at as i64;
        if let Inst::Branch { op, offset, .. } = &mut out[at] {
            let bits = if op.long_offset() { 25 } else { 20 };
            if !fits(dist, bits) {
                return Err(format!("branch distance {dist} out of range"));
            }
            *offset = dist as i32;
        }
    }
    let _ = f;
    obj.symbols.push(Symbol {
        name: mf.name.clone(),
        offset: base,
        len: out.len() as u32,
    });
    obj.code.extend(out);
    Ok(())
}

fn emit_inst(
    out: &mut Vec<Inst>,
    obj: &mut Object,
    base: u32,
    inst: &MInst,
    fr: &Frame,
    next: Option<MBlock>,
    fixups: &mut Vec<(usize, MBlock)>,
) -> Result<(), String> {
    match inst {
        MInst::R {
            op,
            fmt,
            dest,
            src1,
            src2,
            mask,
        } => {
            let fmt = match (*fmt, mask.is_some()) {
                (RFmt::Vvs, true) => RFmt::VvsMask,
                (RFmt::Vvv, true) => RFmt::VvvMask,
                (f, _) => f,
            };
            out.push(Inst::Reg {
                fmt,
                op: *op,
                dest: phys(*dest)?,
                src1: src1.map(phys).transpose()?.unwrap_or(0),
                src2: phys(*src2)?,
                mask: mask.map(phys).transpose()?.unwrap_or(0),
            });
        }
        MInst::I {
            op,
            vector,
            dest,
            src1,
            imm,
        } => out.push(Inst::Imm {
            fmt: if *vector { IFmt::V } else { IFmt::S },
            op: *op,
            dest: phys(*dest)?,
            src1: src1.map(phys).transpose()?.unwrap_or(0),
            imm: *imm,
        }),
        MInst::IMasked {
            op,
            dest,
            src1,
            mask,
            imm,
        } => out.push(Inst::ImmMasked {
            op: *op,
            dest: phys(*dest)?,
            src1: src1.map(phys).transpose()?.unwrap_or(0),
            mask: phys(*mask)?,
            imm: *imm,
        }),
        MInst::MoveHi { dest, imm } => out.push(Inst::MoveHi {
            dest: phys(*dest)?,
            imm: *imm,
        }),
        MInst::Load {
            op,
            dest,
            ptr,
            offset,
            mask,
        } => mem(
            out,
            *op,
            true,
            phys(*dest)?,
            phys(*ptr)?,
            *offset,
            *mask,
            fr.tmp(),
        )?,
        MInst::Store {
            op,
            src,
            ptr,
            offset,
            mask,
        } => mem(
            out,
            *op,
            false,
            phys(*src)?,
            phys(*ptr)?,
            *offset,
            *mask,
            fr.tmp(),
        )?,
        MInst::StoreSync { flag, ptr } => out.push(Inst::Mem {
            op: MemOp::Sync,
            load: false,
            srcdest: phys(*flag)?,
            ptr: phys(*ptr)?,
            mask: 0,
            offset: 0,
        }),
        MInst::GetCr { dest, cr } => out.push(Inst::Mem {
            op: MemOp::ControlReg,
            load: true,
            srcdest: phys(*dest)?,
            ptr: *cr,
            mask: 0,
            offset: 0,
        }),
        MInst::Copy { dest, src, vector } => {
            let (d, s) = (phys(*dest)?, phys(*src)?);
            if d != s {
                out.push(Inst::Reg {
                    fmt: if *vector { RFmt::Vvv } else { RFmt::Sss },
                    op: AluOp::Move,
                    dest: d,
                    src1: 0,
                    src2: s,
                    mask: 0,
                });
            }
        }
        MInst::FrameAddr {
            dest,
            obj: o,
            offset,
        } => {
            let at = match o {
                FrameObj::Slot(s) => fr.slots.get(s.index()).copied().unwrap_or(0),
                FrameObj::Scratch => fr.scratch,
            };
            add_const(
                out,
                phys(*dest)?,
                fr.base(),
                i64::from(at) + i64::from(*offset),
                fr.tmp(),
            );
        }
        MInst::LoadArg { dest, offset } => base_access(
            out,
            MemOp::W32,
            true,
            phys(*dest)?,
            fr.base(),
            fr.size + offset,
            fr.tmp(),
        ),
        MInst::StoreArg { src, offset } => {
            sp_access(out, MemOp::W32, false, phys(*src)?, *offset, fr.tmp())
        }
        MInst::Spill { slot, src } => {
            let r = *src;
            let op = if matches!(r, Reg::Phys(p) if p.class == VECTOR) {
                MemOp::Block
            } else {
                MemOp::W32
            };
            let off = fr.spills[slot.index()];
            base_access(out, op, false, phys(r)?, fr.base(), off, fr.tmp());
        }
        MInst::Reload { slot, dest } => {
            let r = *dest;
            let op = if matches!(r, Reg::Phys(p) if p.class == VECTOR) {
                MemOp::Block
            } else {
                MemOp::W32
            };
            let off = fr.spills[slot.index()];
            base_access(out, op, true, phys(r)?, fr.base(), off, fr.tmp());
        }
        MInst::AddrOf {
            dest,
            target,
            addend,
        } => {
            let d = phys(*dest)?;
            obj.relocs.push(Reloc {
                at: base + out.len() as u32,
                kind: RelocKind::AbsHiLo,
                target: target.clone(),
                addend: *addend,
            });
            out.push(Inst::MoveHi { dest: d, imm: 0 });
            out.push(Inst::Imm {
                fmt: IFmt::S,
                op: AluOp::Or,
                dest: d,
                src1: d,
                imm: 0,
            });
        }
        MInst::Jump { target } => {
            if Some(*target) != next {
                fixups.push((out.len(), *target));
                out.push(Inst::Branch {
                    op: BranchOp::Jump,
                    reg: 0,
                    offset: 0,
                });
            }
        }
        MInst::CondBr { nz, cond, target } => {
            fixups.push((out.len(), *target));
            out.push(Inst::Branch {
                op: if *nz { BranchOp::Bnz } else { BranchOp::Bz },
                reg: phys(*cond)?,
                offset: 0,
            });
        }
        MInst::Call { callee, .. } => {
            let keep_fp = fr.dynamic && *callee == Callee::Runtime(RuntimeFn::Barrier);
            if keep_fp {
                sp_access(out, MemOp::W32, false, FP.index, 0, EDGE_TMP);
            }
            obj.relocs.push(Reloc {
                at: base + out.len() as u32,
                kind: RelocKind::Branch,
                target: callee.reloc(),
                addend: 0,
            });
            out.push(Inst::Branch {
                op: BranchOp::Call,
                reg: 0,
                offset: 0,
            });
            if keep_fp {
                sp_access(out, MemOp::W32, true, FP.index, 0, EDGE_TMP);
            }
        }
        MInst::StackAlloc { bytes, tmp } => {
            let trap = stack_alloc(out, fr, phys(*bytes)?, phys(*tmp)?);
            obj.traps.push((base + trap, TrapCode::StackExhausted));
        }
        MInst::Ret { .. } => epilogue(out, fr),
        MInst::Break { why } => {
            if let Some(code) = why {
                obj.traps.push((base + out.len() as u32, *code));
            }
            out.push(Inst::Reg {
                fmt: RFmt::Sss,
                op: AluOp::Break,
                dest: 0,
                src1: 0,
                src2: 0,
                mask: 0,
            });
        }
    }
    Ok(())
}

/// `stack_alloc` ([`MInst::StackAlloc`]): `bytes` holds the size. The size is
/// compared with the room left (`sp` minus the gang's stack limit, a multiple of 64,
/// so the unrounded size fits exactly when the rounded one does, and rounding cannot
/// wrap), a `break` stops a size that does not fit, and `sp` moves down. Returns the
/// `break`'s index in `out`.
fn stack_alloc(out: &mut Vec<Inst>, fr: &Frame, bytes: u8, tmp: u8) -> u32 {
    let alu = |op, dest, src1, src2| Inst::Reg {
        fmt: RFmt::Sss,
        op,
        dest,
        src1,
        src2,
        mask: 0,
    };
    let imm = |op, dest, src1, imm| Inst::Imm {
        fmt: IFmt::S,
        op,
        dest,
        src1,
        imm,
    };
    out.push(Inst::Mem {
        op: MemOp::W32,
        load: true,
        srcdest: tmp,
        ptr: GP.index,
        mask: 0,
        offset: ctx::STACK_LIMIT,
    });
    out.push(alu(AluOp::SubI, tmp, SP.index, tmp));
    out.push(alu(AluOp::CmpGtU, tmp, bytes, tmp));
    // Over the `break` when the size fits.
    out.push(Inst::Branch {
        op: BranchOp::Bz,
        reg: tmp,
        offset: 2,
    });
    let trap = out.len() as u32;
    out.push(alu(AluOp::Break, 0, 0, 0));
    let align = STACK_ALLOC_ALIGN as i32;
    out.push(imm(AluOp::AddI, bytes, bytes, align - 1));
    out.push(imm(AluOp::And, bytes, bytes, -align));
    out.push(alu(AluOp::SubI, SP.index, SP.index, bytes));
    add_const(out, bytes, SP.index, i64::from(fr.out_area), bytes);
    trap
}

/// A memory instruction; offsets beyond the field go through `tmp` (`fp`, or `ra` in a
/// dynamic frame).
#[allow(clippy::too_many_arguments)]
fn mem(
    out: &mut Vec<Inst>,
    op: MemOp,
    load: bool,
    reg: u8,
    ptr: u8,
    offset: i32,
    mask: Option<Reg>,
    tmp: u8,
) -> Result<(), String> {
    let bits = if op.masked() { 10 } else { 15 };
    let mask = mask.map(phys).transpose()?.unwrap_or(0);
    let (ptr, offset) = if fits(i64::from(offset), bits) || op.vector_ptr() {
        (ptr, offset)
    } else {
        add_const(out, tmp, ptr, i64::from(offset), tmp);
        (tmp, 0)
    };
    out.push(Inst::Mem {
        op,
        load,
        srcdest: reg,
        ptr,
        mask,
        offset,
    });
    Ok(())
}

/// The symbol a relocation names (for listings).
pub fn reloc_name(t: &RelocTarget) -> String {
    match t {
        RelocTarget::Function(n) => n.clone(),
        RelocTarget::Data(i) => format!("data{i}"),
        RelocTarget::Runtime(r) => r.symbol().to_string(),
    }
}
