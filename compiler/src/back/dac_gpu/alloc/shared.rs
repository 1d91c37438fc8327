//! Spill slots in shared memory: RegDem's register demotion (paper 001, §3).
//!
//! A value the register budget cannot hold goes to a slot. Local memory is off chip
//! (through L1/L2); shared memory is on chip, and a block usually leaves some of it
//! unused. A *demoted* slot lives there, with the paper's layout: unit `u` of thread
//! `t` (the thread's linear index in its block) is the 32-bit word at
//!
//! ```text
//!     S + 4·t + 4·u·n
//! ```
//!
//! where `S` is the kernel's own shared bytes (rounded up to a word: its static
//! `shared` variables, then the launch's dynamic shared memory) and `n` the
//! threads per block the layout strides by. The 32 lanes of a warp have consecutive
//! `t`, so one unit's words sit in 32 consecutive words: 32 different banks, never a
//! conflict, whatever `n` and `S`. A 64-bit slot takes two units (its halves are
//! accessed as two 32-bit words, for the same reason).
//!
//! `n` is fixed when the kernel is compiled (the launch's block rounded up to whole
//! warps, or the largest legal block when the launch is unknown, as CUDA's launch
//! bounds assume); a launch with more threads per block would overlap its threads'
//! slots, so [`super::RegReport::shared_threads`] records it for the launch to check.
//!
//! Every demoted access addresses `[%rB + 4·u·n]` off one base register `%rB =
//! S + 4·t`, written once at the kernel's entry (the paper's RDA). The base costs one
//! register of the budget, so a kernel is allocated under `budget - 1` before it
//! demotes, and `%rB` is the register just above the highest one the allocation
//! used: the register count stays compact. The values themselves are reloaded into,
//! and stored from, whatever register the allocator chose for them (the paper's
//! "substituting value register"): no register is set aside for them.
//!
//! Which slots are demoted, when not all fit ([`Placement::Mixed`]): those with the
//! most loop-weighted accesses (ten times more per enclosing loop, as the allocator
//! weighs its spill candidates), until the shared bytes allowed are used up.

use cranelift_entity::EntityRef;
use smallvec::SmallVec;

use sim::gpu::{AddrBase, Address, Dim, Inst, Op, Reg, Space, Special, Src, Type};

use super::{GpuInst, D};
use crate::back::common::mach::{MBlock, MachFunction, MachLine, RegClass, SpillSlot};
use crate::back::common::regalloc;

/// Where the values that do not fit the register budget go (`--regalloc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Per-thread local memory (off chip), as nvcc does.
    #[default]
    Local,
    /// Shared memory, every slot, when they all fit the block's shared memory;
    /// otherwise local memory, as if not asked (RegDem declines).
    Shared,
    /// Shared memory for the most-accessed slots that fit the bytes allowed, local
    /// memory for the rest.
    Mixed,
}

/// The shared memory demoted slots may use in one kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SharedRoom {
    /// Threads per block the layout strides by (`n`): a multiple of the warp size.
    pub threads: u32,
    /// Shared bytes per block the demoted slots may take.
    pub bytes: u32,
}

impl SharedRoom {
    /// Whole 32-bit units (one per thread) that fit.
    pub fn units(&self) -> u32 {
        match self.threads {
            0 => 0,
            n => self.bytes / (4 * n),
        }
    }
}

/// The byte offset of unit `unit` of thread `thread` from the start of the demoted
/// area, for blocks of `threads` threads: `4·thread + 4·unit·threads`.
pub fn unit_offset(thread: u32, unit: u32, threads: u32) -> u32 {
    4 * thread + 4 * unit * threads
}

/// 32-bit units a slot of `class` takes.
fn units_of(class: RegClass) -> u32 {
    if class == D {
        2
    } else {
        1
    }
}

/// Accesses of each spill slot in `mf`, ten times more per enclosing loop.
pub fn slot_weights(mf: &MachFunction<GpuInst>) -> Vec<f64> {
    let succs: Vec<SmallVec<[usize; 2]>> = mf
        .blocks
        .values()
        .map(|b| b.succs.iter().map(|s| s.index()).collect())
        .collect();
    let depth = regalloc::loop_depths(&succs);
    let mut weight = vec![0f64; mf.spill_slots.len()];
    for (block, &d) in mf.blocks.values().zip(&depth) {
        let per_access = 10f64.powi(d.min(4) as i32);
        for line in &block.insts {
            if let Some(s) = line.inst.slot {
                weight[s.index()] += per_access;
            }
        }
    }
    weight
}

/// The first unit of each demoted slot (`None`: the slot stays in local memory),
/// and the units taken. Slots are taken by weight, heaviest first (ties in slot
/// order), while they fit `room`; with [`Placement::Shared`], all or none.
pub fn choose_units(
    classes: &[RegClass],
    weights: &[f64],
    room: SharedRoom,
    placement: Placement,
) -> (Vec<Option<u32>>, u32) {
    let mut unit = vec![None; classes.len()];
    let needed: u32 = classes.iter().map(|&c| units_of(c)).sum();
    let capacity = room.units();
    if placement == Placement::Local || (placement == Placement::Shared && needed > capacity) {
        return (unit, 0);
    }
    let mut order: Vec<usize> = (0..classes.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    let mut used = 0;
    for s in order {
        let size = units_of(classes[s]);
        if used + size <= capacity {
            unit[s] = Some(used);
            used += size;
        }
    }
    (unit, used)
}

/// Where a demoted slot's units are: the base register and the layout's stride.
#[derive(Clone, Copy, Debug)]
pub struct Demoted {
    /// `%rB`, holding `S + 4·t`.
    pub base: Reg,
    /// Threads per block (`n`).
    pub threads: u32,
}

impl Demoted {
    /// The finished spill or reload `inst` (a `st.local`/`ld.local` of a slot whose
    /// first unit is `unit`) as shared-memory accesses: one per 32-bit half.
    pub fn rewrite(&self, inst: &Inst, unit: u32) -> SmallVec<[Inst; 2]> {
        let address = |half: u32| Address {
            base: AddrBase::Reg(self.base),
            offset: (unit_offset(0, unit + half, self.threads)) as i32,
        };
        let half_reg = |r: Reg, half: u32| Reg {
            file: r.file,
            idx: r.idx + half,
        };
        let wide = |ty: Type| ty == Type::B64;
        match inst.op {
            Op::St {
                ty, a: Src::Reg(r), ..
            } => (0..1 + u32::from(wide(ty)))
                .map(|h| {
                    Inst::new(Op::St {
                        space: Space::Shared,
                        ty: Type::B32,
                        addr: address(h),
                        a: Src::Reg(half_reg(r, h)),
                    })
                })
                .collect(),
            Op::Ld { ty, dst, .. } => (0..1 + u32::from(wide(ty)))
                .map(|h| {
                    Inst::new(Op::Ld {
                        space: Space::Shared,
                        ty: Type::B32,
                        dst: half_reg(dst, h),
                        addr: address(h),
                    })
                })
                .collect(),
            _ => SmallVec::from_elem(*inst, 1),
        }
    }

    /// The entry code writing `%rB = static_bytes + 4·t`, with `t` the thread's
    /// linear index in its block: `(tid.z·ntid.y + tid.y)·ntid.x + tid.x`.
    pub fn entry_code(&self, static_bytes: u32) -> [Inst; 3] {
        let b = self.base;
        let special = |s| Src::Special(s);
        let mad = |a, bb, c| {
            Inst::new(Op::Mad {
                ty: Type::U32,
                dst: b,
                a,
                b: bb,
                c,
            })
        };
        [
            mad(
                special(Special::Tid(Dim::Z)),
                special(Special::Ntid(Dim::Y)),
                special(Special::Tid(Dim::Y)),
            ),
            mad(
                Src::Reg(b),
                special(Special::Ntid(Dim::X)),
                special(Special::Tid(Dim::X)),
            ),
            mad(Src::Reg(b), Src::Imm(4), Src::Imm(u64::from(static_bytes))),
        ]
    }
}

/// Puts `code` at the start of `mf`'s entry block (as spill code: no operands the
/// allocator sees, no instruction of the selected kernel).
pub fn prepend_entry_code(mf: &mut MachFunction<GpuInst>, code: &[Inst]) {
    let Some(entry) = mf.blocks.get_mut(MBlock::new(0)) else {
        return;
    };
    let span = entry.insts.first().and_then(|l| l.span);
    let lines = code.iter().map(|&inst| MachLine {
        inst: GpuInst {
            inst,
            ops: SmallVec::new(),
            groups: SmallVec::new(),
            orig: None,
            slot: None,
        },
        span,
    });
    entry.insts.splice(0..0, lines);
}

/// The class of each slot of `mf`, in slot order.
pub fn slot_classes(mf: &MachFunction<GpuInst>) -> Vec<RegClass> {
    mf.spill_slots.values().copied().collect()
}

/// Whether `slot` is demoted under `units`.
pub fn unit_of(units: &[Option<u32>], slot: SpillSlot) -> Option<u32> {
    units.get(slot.index()).copied().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::dac_gpu::alloc::R;

    /// The layout's words are conflict free for every block size from 1 to 1024:
    /// in each warp, each unit's lanes reach 32 different banks (the simulator's
    /// bank function, on the real addresses), and no two threads' units overlap.
    #[test]
    fn layout_is_bank_conflict_free_for_every_block_size() {
        const WARP: usize = 32;
        for threads in 1..=1024u32 {
            let n = threads.div_ceil(32) * 32;
            for static_bytes in [0u32, 4, 100] {
                for unit in [0u32, 1, 7] {
                    for warp in 0..n / 32 {
                        let mut addrs = [0u64; WARP];
                        let mut mask = 0u32;
                        for lane in 0..32u32 {
                            let t = warp * 32 + lane;
                            addrs[lane as usize] =
                                u64::from(static_bytes + unit_offset(t, unit, n));
                            if t < threads {
                                mask |= 1 << lane;
                            }
                        }
                        let degree = sim::gpu::timing::bank_conflict_degree(&addrs, mask, 4);
                        assert!(
                            degree <= 1,
                            "threads {threads} unit {unit}: degree {degree}"
                        );
                    }
                }
            }
            // Disjoint words: unit u of thread t is word t + u·n.
            let last = unit_offset(n - 1, 0, n);
            assert!(last < unit_offset(0, 1, n));
        }
    }

    #[test]
    fn heaviest_slots_are_demoted_first_and_pairs_take_two_units() {
        let classes = [R, D, R, R];
        let weights = [1.0, 100.0, 10.0, 10.0];
        let room = SharedRoom {
            threads: 64,
            bytes: 3 * 4 * 64,
        };
        let (units, used) = choose_units(&classes, &weights, room, Placement::Mixed);
        assert_eq!(units, vec![None, Some(0), Some(2), None]);
        assert_eq!(used, 3);
        // All or none.
        let (units, used) = choose_units(&classes, &weights, room, Placement::Shared);
        assert_eq!((units, used), (vec![None; 4], 0));
        let big = SharedRoom {
            threads: 64,
            bytes: 5 * 4 * 64,
        };
        let (units, used) = choose_units(&classes, &weights, big, Placement::Shared);
        assert_eq!(used, 5);
        assert!(units.iter().all(Option::is_some));
    }

    #[test]
    fn a_pair_is_stored_and_loaded_as_two_words_a_stride_apart() {
        let d = Demoted {
            base: Reg::r(9),
            threads: 128,
        };
        let st = Inst::new(Op::St {
            space: Space::Local,
            ty: Type::B64,
            addr: Address {
                base: AddrBase::None,
                offset: 0,
            },
            a: Src::Reg(Reg::r(4)),
        });
        let out = d.rewrite(&st, 3);
        let text: Vec<String> = out
            .iter()
            .map(|i| sim::gpu::asm::inst_text(i, &[], &|_| String::new(), &|_| String::new()))
            .collect();
        assert_eq!(
            text,
            [
                "st.shared.b32 [%r9+1536], %r4;",
                "st.shared.b32 [%r9+2048], %r5;"
            ]
        );
    }
}
