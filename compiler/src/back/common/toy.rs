//! A toy target and its interpreter, for testing the register allocator.
//!
//! Constants can be rematerialized; `Input` values, written the same way, cannot.
//! Two register classes: `A` with registers `a0`–`a3` (`a3` reserved, so three are
//! allocatable) and `B` with `b0`–`b1`; a third, `P`, of pairs of `A` registers
//! sharing their storage, is allocatable only where a test says so. A call reads its argument in `a0`, writes its
//! result there and destroys `a1` and `b0`; a barrier destroys every allocatable
//! register. The interpreter runs a function before
//! allocation (on virtual registers) and after (on physical ones); reading a
//! register that holds no value (never written, or destroyed by a call) is an error,
//! so a value the allocator lets a call or another value overwrite is caught.

use std::collections::HashMap;

use cranelift_entity::EntityRef;
use smallvec::{smallvec, SmallVec};

use super::mach::{
    MBlock, MachFunction, MachInst, MachLine, Operand, OperandKind, PReg, Reg, RegClass, RegTarget,
    SpillSlot, VReg,
};

pub const A: RegClass = RegClass(0);
pub const B: RegClass = RegClass(1);
/// Pairs of `A` registers: `pN` is `aN` and `aN+1`.
pub const P: RegClass = RegClass(2);

pub const fn a(index: u8) -> PReg {
    PReg { class: A, index }
}

pub const fn b(index: u8) -> PReg {
    PReg { class: B, index }
}

pub const fn p(index: u8) -> PReg {
    PReg { class: P, index }
}

/// The registers sharing storage with `reg` (not itself), in both directions.
pub fn overlapping(reg: PReg) -> SmallVec<[PReg; 4]> {
    match reg.class {
        P => smallvec![a(reg.index), a(reg.index + 1)],
        A => smallvec![p(reg.index), p(reg.index.wrapping_sub(1))],
        _ => smallvec![],
    }
}

/// Registers a call destroys besides its result register `a0`.
pub const CALL_CLOBBERS: [PReg; 3] = [a(0), a(1), b(0)];
/// A barrier destroys every register but the reserved `a3`.
pub const BARRIER_CLOBBERS: [PReg; 5] = [a(0), a(1), a(2), b(0), b(1)];

#[derive(Clone, Debug, PartialEq)]
pub enum Toy {
    Const {
        dst: Reg,
        value: i64,
    },
    /// Writes `value` like `Const`, but stands for a load from memory that may
    /// change: never rematerialized, so a test can make values that spill to slots.
    Input {
        dst: Reg,
        value: i64,
    },
    Add {
        dst: Reg,
        x: Reg,
        y: Reg,
    },
    AddImm {
        dst: Reg,
        src: Reg,
        imm: i64,
    },
    /// Sum of all sources: an instruction needing many registers at once.
    Sum {
        dst: Reg,
        srcs: Vec<Reg>,
    },
    Copy {
        dst: Reg,
        src: Reg,
    },
    /// `dst += x` where `mask` is nonzero; `dst` is read and written (tied).
    MaskedAdd {
        dst: Reg,
        x: Reg,
        mask: Reg,
    },
    /// `a0 = a0 * 3 + 1`, destroying [`CALL_CLOBBERS`].
    Call,
    /// Destroys [`BARRIER_CLOBBERS`].
    Barrier,
    /// Appends a value to the output.
    Out {
        src: Reg,
    },
    /// To the first successor if `cond` is nonzero, else the second.
    BrNz {
        cond: Reg,
    },
    Jump,
    Ret,
    Spill {
        slot: SpillSlot,
        src: PReg,
    },
    Reload {
        slot: SpillSlot,
        dst: PReg,
    },
}

fn op(reg: Reg, kind: OperandKind) -> Operand {
    Operand { reg, kind }
}

impl MachInst for Toy {
    fn operands(&self, out: &mut SmallVec<[Operand; 8]>) {
        use OperandKind::*;
        match self {
            Toy::Const { dst, .. } | Toy::Input { dst, .. } => out.push(op(*dst, Def)),
            Toy::Add { dst, x, y } => out.extend([op(*x, Use), op(*y, Use), op(*dst, Def)]),
            Toy::AddImm { dst, src, .. } | Toy::Copy { dst, src } => {
                out.extend([op(*src, Use), op(*dst, Def)])
            }
            Toy::Sum { dst, srcs } => {
                out.extend(srcs.iter().map(|s| op(*s, Use)));
                out.push(op(*dst, Def));
            }
            Toy::MaskedAdd { dst, x, mask } => {
                out.extend([op(*x, Use), op(*mask, Use), op(*dst, UseDef)])
            }
            Toy::Call => out.extend([op(Reg::Phys(a(0)), Use), op(Reg::Phys(a(0)), Def)]),
            Toy::Out { src } => out.push(op(*src, Use)),
            Toy::BrNz { cond } => out.push(op(*cond, Use)),
            Toy::Jump | Toy::Ret | Toy::Barrier => {}
            Toy::Spill { src, .. } => out.push(op(Reg::Phys(*src), Use)),
            Toy::Reload { dst, .. } => out.push(op(Reg::Phys(*dst), Def)),
        }
    }

    fn map_regs(&mut self, f: &mut dyn FnMut(Reg) -> Reg) {
        let mut map = |r: &mut Reg| *r = f(*r);
        match self {
            Toy::Const { dst, .. } | Toy::Input { dst, .. } => map(dst),
            Toy::Add { dst, x, y } => {
                map(x);
                map(y);
                map(dst);
            }
            Toy::AddImm { dst, src, .. } | Toy::Copy { dst, src } => {
                map(src);
                map(dst);
            }
            Toy::Sum { dst, srcs } => {
                srcs.iter_mut().for_each(&mut map);
                map(dst);
            }
            Toy::MaskedAdd { dst, x, mask } => {
                map(x);
                map(mask);
                map(dst);
            }
            Toy::Out { src } => map(src),
            Toy::BrNz { cond } => map(cond),
            // Physical operands only; mapping them is the identity.
            Toy::Call
            | Toy::Barrier
            | Toy::Jump
            | Toy::Ret
            | Toy::Spill { .. }
            | Toy::Reload { .. } => {}
        }
    }

    fn as_move(&self) -> Option<(Reg, Reg)> {
        match self {
            Toy::Copy { dst, src } => Some((*dst, *src)),
            _ => None,
        }
    }

    fn clobbers(&self) -> &'static [PReg] {
        match self {
            Toy::Call => &CALL_CLOBBERS,
            Toy::Barrier => &BARRIER_CLOBBERS,
            _ => &[],
        }
    }

    fn is_pure(&self) -> bool {
        matches!(
            self,
            Toy::Const { .. }
                | Toy::Add { .. }
                | Toy::AddImm { .. }
                | Toy::Sum { .. }
                | Toy::Copy { .. }
                | Toy::MaskedAdd { .. }
        )
    }

    /// Constants only: every other instruction reads a register.
    fn rematerialize(&self) -> Option<Toy> {
        matches!(self, Toy::Const { .. }).then(|| self.clone())
    }
}

/// The toy target with its allocatable registers configurable per test.
pub struct ToyTarget {
    pub a: Vec<PReg>,
    pub b: Vec<PReg>,
    pub pairs: Vec<PReg>,
    /// Classes the target cannot spill.
    pub unspillable: Vec<RegClass>,
    /// Operand register banks of class `A` (register index mod `banks`); 0: none.
    pub banks: u32,
}

impl Default for ToyTarget {
    fn default() -> Self {
        ToyTarget {
            a: vec![a(0), a(1), a(2)],
            b: vec![b(0), b(1)],
            pairs: vec![],
            unspillable: vec![],
            banks: 0,
        }
    }
}

impl RegTarget for ToyTarget {
    type Inst = Toy;

    fn allocatable(&self, class: RegClass) -> &[PReg] {
        match class {
            A => &self.a,
            B => &self.b,
            P => &self.pairs,
            _ => &[],
        }
    }

    fn spill_size(&self, _class: RegClass) -> u32 {
        8
    }

    fn spillable(&self, class: RegClass) -> bool {
        !self.unspillable.contains(&class)
    }

    fn spill(&self, slot: SpillSlot, reg: PReg) -> SmallVec<[Toy; 2]> {
        smallvec![Toy::Spill { slot, src: reg }]
    }

    fn reload(&self, slot: SpillSlot, reg: PReg) -> SmallVec<[Toy; 2]> {
        smallvec![Toy::Reload { slot, dst: reg }]
    }

    fn copy(&self, dest: PReg, src: PReg) -> Toy {
        Toy::Copy {
            dst: Reg::Phys(dest),
            src: Reg::Phys(src),
        }
    }

    /// Given one way only (pairs to halves), as the allocator allows.
    fn aliases(&self, reg: PReg) -> SmallVec<[PReg; 4]> {
        match reg.class {
            P => overlapping(reg),
            _ => smallvec![],
        }
    }

    fn read_banks(&self, reg: PReg) -> SmallVec<[u32; 2]> {
        match reg.class {
            A if self.banks > 0 => smallvec![u32::from(reg.index) % self.banks],
            _ => smallvec![],
        }
    }
}

/// The class of a register of `func`.
fn class_of(func: &MachFunction<Toy>, r: Reg) -> Result<RegClass, String> {
    match r {
        Reg::Phys(p) => Ok(p.class),
        Reg::Virt(v) => func
            .vregs
            .get(v)
            .copied()
            .ok_or_else(|| format!("undeclared {v}")),
    }
}

/// Checks that the registers an instruction combines are of one class.
fn check_classes(func: &MachFunction<Toy>, inst: &Toy) -> Result<(), String> {
    let same: SmallVec<[Reg; 8]> = match inst {
        Toy::Add { dst, x, y } => smallvec![*dst, *x, *y],
        Toy::AddImm { dst, src, .. } | Toy::Copy { dst, src } => smallvec![*dst, *src],
        Toy::Sum { dst, srcs } => srcs.iter().copied().chain([*dst]).collect(),
        Toy::MaskedAdd { dst, x, .. } => smallvec![*dst, *x],
        _ => smallvec![],
    };
    let classes: Result<Vec<_>, _> = same.iter().map(|&r| class_of(func, r)).collect();
    let classes = classes?;
    if classes.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!("mixed register classes in {inst:?}"));
    }
    Ok(())
}

/// Registers, spill slots and output of a running toy function.
#[derive(Default)]
struct Machine {
    regs: HashMap<Reg, i64>,
    slots: HashMap<SpillSlot, i64>,
    out: Vec<i64>,
}

impl Machine {
    fn get(&self, r: Reg) -> Result<i64, String> {
        self.regs
            .get(&r)
            .copied()
            .ok_or_else(|| format!("read of {r:?}, which holds no value"))
    }

    /// Writes a register, destroying what overlaps it.
    fn set(&mut self, r: Reg, v: i64) {
        self.destroy(r);
        self.regs.insert(r, v);
    }

    fn destroy(&mut self, r: Reg) {
        if let Reg::Phys(p) = r {
            for o in overlapping(p) {
                self.regs.remove(&Reg::Phys(o));
            }
        }
        self.regs.remove(&r);
    }

    /// Executes one non-branch instruction.
    fn exec(&mut self, inst: &Toy) -> Result<(), String> {
        match inst {
            Toy::Const { dst, value } | Toy::Input { dst, value } => {
                self.set(*dst, *value);
            }
            Toy::Add { dst, x, y } => {
                let v = self.get(*x)?.wrapping_add(self.get(*y)?);
                self.set(*dst, v);
            }
            Toy::AddImm { dst, src, imm } => {
                let v = self.get(*src)?.wrapping_add(*imm);
                self.set(*dst, v);
            }
            Toy::Sum { dst, srcs } => {
                let mut v = 0i64;
                for s in srcs {
                    v = v.wrapping_add(self.get(*s)?);
                }
                self.set(*dst, v);
            }
            Toy::Copy { dst, src } => {
                let v = self.get(*src)?;
                self.set(*dst, v);
            }
            Toy::MaskedAdd { dst, x, mask } => {
                let (old, x, mask) = (self.get(*dst)?, self.get(*x)?, self.get(*mask)?);
                let v = if mask != 0 { old.wrapping_add(x) } else { old };
                self.set(*dst, v);
            }
            Toy::Call => {
                let arg = self.get(Reg::Phys(a(0)))?;
                for p in CALL_CLOBBERS {
                    self.destroy(Reg::Phys(p));
                }
                self.set(Reg::Phys(a(0)), arg.wrapping_mul(3).wrapping_add(1));
            }
            Toy::Barrier => {
                for p in BARRIER_CLOBBERS {
                    self.destroy(Reg::Phys(p));
                }
            }
            Toy::Out { src } => {
                let v = self.get(*src)?;
                self.out.push(v);
            }
            Toy::Spill { slot, src } => {
                let v = self.get(Reg::Phys(*src))?;
                self.slots.insert(*slot, v);
            }
            Toy::Reload { slot, dst } => {
                let v = *self.slots.get(slot).ok_or("reload of an empty slot")?;
                self.set(Reg::Phys(*dst), v);
            }
            Toy::BrNz { .. } | Toy::Jump | Toy::Ret => {}
        }
        Ok(())
    }
}

/// Runs `func` from its entry until `Ret`, executing at most `fuel` instructions;
/// returns the values `Out` produced.
pub fn run(func: &MachFunction<Toy>, fuel: usize) -> Result<Vec<i64>, String> {
    run_counting(func, fuel).map(|(out, _)| out)
}

/// [`run`], also returning how many spills and reloads ran (the allocation's cost).
pub fn run_counting(func: &MachFunction<Toy>, fuel: usize) -> Result<(Vec<i64>, usize), String> {
    let mut m = Machine::default();
    let mut memory_ops = 0usize;
    let mut block = MBlock::new(0);
    let mut steps = 0usize;
    loop {
        let b = func.blocks.get(block).ok_or("no such block")?;
        let mut next = None;
        for line in &b.insts {
            steps += 1;
            if steps > fuel {
                return Err("out of fuel".into());
            }
            check_classes(func, &line.inst)?;
            match &line.inst {
                Toy::Ret => return Ok((m.out, memory_ops)),
                Toy::Spill { .. } | Toy::Reload { .. } => {
                    memory_ops += 1;
                    m.exec(&line.inst)?
                }
                Toy::Jump => next = Some(0),
                Toy::BrNz { cond } => next = Some(if m.get(*cond)? != 0 { 0 } else { 1 }),
                inst => m.exec(inst)?,
            }
            if next.is_some() {
                break;
            }
        }
        let succ = next.ok_or("block falls off its end")?;
        block = *b.succs.get(succ).ok_or("missing successor")?;
    }
}

/// Builds toy functions block by block.
pub struct Builder {
    pub func: MachFunction<Toy>,
    pub cur: MBlock,
}

impl Builder {
    pub fn new() -> Self {
        let mut func = MachFunction::new("toy");
        let cur = func.new_block();
        Builder { func, cur }
    }

    pub fn vreg(&mut self, class: RegClass) -> Reg {
        Reg::Virt(self.func.new_vreg(class))
    }

    pub fn push(&mut self, inst: Toy) {
        self.func.blocks[self.cur]
            .insts
            .push(MachLine { inst, span: None });
    }

    pub fn konst(&mut self, class: RegClass, value: i64) -> Reg {
        let dst = self.vreg(class);
        self.push(Toy::Const { dst, value });
        dst
    }

    /// A value that is never rematerialized ([`Toy::Input`]).
    pub fn input(&mut self, class: RegClass, value: i64) -> Reg {
        let dst = self.vreg(class);
        self.push(Toy::Input { dst, value });
        dst
    }

    pub fn add(&mut self, x: Reg, y: Reg) -> Reg {
        let class = class_of(&self.func, x).unwrap_or(A);
        let dst = self.vreg(class);
        self.push(Toy::Add { dst, x, y });
        dst
    }

    pub fn out(&mut self, src: Reg) {
        self.push(Toy::Out { src });
    }

    /// Ends the current block with `inst` going to `succs`.
    pub fn end(&mut self, inst: Toy, succs: &[MBlock]) {
        self.push(inst);
        self.func.blocks[self.cur].succs = succs.iter().copied().collect();
    }

    pub fn new_block(&mut self) -> MBlock {
        self.func.new_block()
    }

    /// Ends a loop's latch: decrements `counter`, branches back to `back` while it is
    /// nonzero and on to `exit` after, and continues building in `exit`.
    pub fn count_down(&mut self, counter: Reg, back: MBlock, exit: MBlock) {
        self.push(Toy::AddImm {
            dst: counter,
            src: counter,
            imm: -1,
        });
        self.end(Toy::BrNz { cond: counter }, &[back, exit]);
        self.cur = exit;
    }
}

/// Whether every operand of `func` is physical and every physical register is
/// either allocatable or one the input already named.
pub fn check_allocated(
    func: &MachFunction<Toy>,
    target: &ToyTarget,
    input_phys: &[PReg],
) -> Result<(), String> {
    let mut ops = SmallVec::new();
    for line in func.blocks.values().flat_map(|b| &b.insts) {
        ops.clear();
        line.inst.operands(&mut ops);
        for o in &ops {
            match o.reg {
                Reg::Virt(v) => return Err(format!("{v} left in {:?}", line.inst)),
                Reg::Phys(p) => {
                    let ok = target.allocatable(p.class).contains(&p) || input_phys.contains(&p);
                    if !ok {
                        return Err(format!("{p:?} is not allocatable, in {:?}", line.inst));
                    }
                }
            }
        }
    }
    Ok(())
}

/// A virtual register of `func` by number (for tests naming registers directly).
pub fn vreg(n: u32) -> VReg {
    VReg::from_u32(n)
}
