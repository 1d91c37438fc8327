//! Rematerialization: which virtual registers the allocator writes again where they
//! are read, instead of giving them a spill slot (see the parent module's doc).
//!
//! A register qualifies when its only definition is an instruction the target can
//! execute again anywhere ([`MachInst::rematerialize`]), or a copy of a register
//! that qualifies: instruction selection often computes a value into one register
//! and copies it into another (Nyuzi defines every IR value by a copy), and the
//! allocator would otherwise see only the copy. The copy before each read is then
//! the first instruction of the chain, writing the register itself.

use cranelift_entity::EntityRef;
use smallvec::SmallVec;

use super::{liveness, Line, PhysTable, Work};
use crate::back::common::mach::{MachInst, Operand, OperandKind, Reg, VReg};

/// How to write a virtual register's value again where it is read.
#[derive(Clone, Debug)]
pub(super) struct RematDef<I> {
    /// The definition to execute again, writing the register itself.
    pub inst: I,
    /// When the register is defined by a copy (of a copy...) of one whose definition
    /// is `inst`: the registers of the chain, nearest first. They too must be written
    /// before every read ([`rematerializable`]), and those read only by the chain die
    /// with it ([`dead_sources`]).
    pub via: SmallVec<[VReg; 2]>,
}

impl<I: MachInst> RematDef<I> {
    /// The definition, writing `to` instead of `v`, the register it was made for.
    pub fn writing(&self, v: VReg, to: VReg) -> I {
        let mut inst = self.inst.clone();
        inst.map_regs(&mut |r| if r == Reg::Virt(v) { Reg::Virt(to) } else { r });
        inst
    }
}

/// Per virtual register of `work`'s input: how to rematerialize it, when its only
/// definition can be placed anywhere (an instruction whose only other operands are
/// reads of registers that are not allocatable, which clobbers nothing, and which the
/// target can rematerialize; or a copy of a register that qualifies); and how many
/// times each register is read.
pub(super) fn remat_defs<I: MachInst>(
    work: &Work<I>,
    phys: &PhysTable,
) -> (Vec<Option<RematDef<I>>>, Vec<u32>) {
    let n = work.vregs.len();
    let (mut defs, mut reads) = (vec![0u32; n], vec![0u32; n]);
    let mut found: Vec<Option<RematDef<I>>> = (0..n).map(|_| None).collect();
    // (copy's destination, source)
    let mut copies: Vec<(VReg, VReg)> = Vec::new();
    let mut ops: SmallVec<[Operand; 8]> = SmallVec::new();
    for line in work.blocks.iter().flatten() {
        let Line::Inst(ml) = line else { continue };
        ops.clear();
        ml.inst.operands(&mut ops);
        for op in &ops {
            let Reg::Virt(v) = op.reg else { continue };
            if op.kind != OperandKind::Use {
                defs[v.index()] += 1;
            }
            if op.kind != OperandKind::Def {
                reads[v.index()] += 1;
            }
        }
        if let Some((Reg::Virt(dest), Reg::Virt(src))) = ml.inst.as_move() {
            copies.push((dest, src));
        }
        let Some(v) = sole_def(&ops, phys) else {
            continue;
        };
        if found[v.index()].is_none() && ml.inst.clobbers().is_empty() {
            let inst = ml.inst.rematerialize();
            found[v.index()] = inst.map(|inst| RematDef {
                inst,
                via: SmallVec::new(),
            });
        }
    }
    for (def, &count) in found.iter_mut().zip(&defs) {
        if count != 1 {
            *def = None;
        }
    }
    through_copies(work, &mut found, &copies, &defs);
    (found, reads)
}

/// Extends `found` to the registers whose only definition is one of `copies` (a
/// destination and its source, of one class) of a register it has, until no more
/// do: each round adds one at least, or ends.
fn through_copies<I: MachInst>(
    work: &Work<I>,
    found: &mut [Option<RematDef<I>>],
    copies: &[(VReg, VReg)],
    defs: &[u32],
) {
    let mut grew = true;
    while grew {
        grew = false;
        for &(dest, src) in copies {
            let (d, s) = (dest.index(), src.index());
            if found[d].is_some() || defs[d] != 1 || work.vregs[dest] != work.vregs[src] {
                continue;
            }
            let Some(from) = &found[s] else { continue };
            let via = std::iter::once(src).chain(from.via.iter().copied());
            found[d] = Some(RematDef {
                inst: from.writing(src, dest),
                via: via.collect(),
            });
            grew = true;
        }
    }
}

/// The virtual register an instruction with operands `ops` writes, when that is its
/// only register operand besides reads of registers that are not allocatable.
fn sole_def(ops: &[Operand], phys: &PhysTable) -> Option<VReg> {
    let mut def = None;
    for op in ops {
        match (op.reg, op.kind) {
            (Reg::Virt(v), OperandKind::Def) if def.is_none() => def = Some(v),
            (Reg::Phys(p), OperandKind::Use) if phys.number(p).is_none() => {}
            _ => return None,
        }
    }
    def
}

/// Per virtual register: whether it is rematerialized rather than given a slot when
/// it is spilled. It needs a [`RematDef`] and a class the target can spill (the
/// others never leave their registers), and neither it nor the registers it is
/// copied from may be live into the function: then the one definition of each runs
/// before every read, and a copy of the definition placed before a read computes the
/// value the read would have seen. (A read before any write would see no value, or
/// the target's initial one.) Spilling other registers, or rematerializing it around
/// barriers, changes none of this, so the answer is the same in every round.
pub(super) fn rematerializable<I>(
    work: &Work<I>,
    phys: &PhysTable,
    live: &liveness::Liveness,
) -> Vec<bool> {
    let nphys = phys.phys.len() as u32;
    let live_in = |v: VReg| {
        let entry = live.live_in.first();
        entry.is_some_and(|l| l.contains(nphys + v.index() as u32))
    };
    let remat = |(v, def): (usize, &Option<RematDef<I>>)| match def {
        Some(def) => {
            !work.unspillable[v] && !live_in(VReg::new(v)) && !def.via.iter().any(|&u| live_in(u))
        }
        None => false,
    };
    let mut out: Vec<bool> = work.remat_def.iter().enumerate().map(remat).collect();
    out.resize(work.vregs.len(), false);
    out
}

/// The registers `v` is copied from ([`RematDef::via`]) that nothing else reads:
/// once `v` is rematerialized and its defining copy deleted, they are dead, and so
/// are their definitions. The chain stops at the first register read elsewhere.
pub(super) fn dead_sources<I>(work: &Work<I>, v: VReg) -> SmallVec<[VReg; 2]> {
    let Some(Some(def)) = work.remat_def.get(v.index()) else {
        return SmallVec::new();
    };
    let read_once = |u: &&VReg| work.reads.get(u.index()) == Some(&1) && !work.spilled[u.index()];
    def.via.iter().take_while(read_once).copied().collect()
}
