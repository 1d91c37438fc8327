//! Liveness of registers in a machine function, for the register allocator.
//!
//! The allocator describes each instruction by the variables (virtual registers and
//! allocatable physical registers, numbered densely) it reads, writes and clobbers,
//! in blocks with successor edges. [`solve`] computes which variables are live into
//! and out of each block by backward dataflow over the CFG; the code is not SSA (a
//! variable may be written in several places), so a write only kills what it
//! overwrites. [`live_ranges`] turns that into the positions where each variable
//! holds a value, as sorted disjoint ranges over a linear numbering of the
//! instructions ([`Layout`]): a value live around a loop covers the whole loop.
//!
//! Each instruction occupies [`SLOT`] positions: its reads happen at [`USE`], the
//! registers it clobbers are destroyed at [`CLOBBER`] and its results are written at
//! [`DEF`]. A value read for the last time by an instruction therefore does not
//! overlap that instruction's results (they may share a register), while a value
//! live across a call overlaps the call's clobbers. Each block also starts with one
//! empty slot, so that values live through an empty block still have a range.

use smallvec::SmallVec;

/// A position in the linear numbering of a function's instructions.
pub type Pos = u32;

/// Positions per instruction (and per block header).
pub const SLOT: Pos = 4;
/// Offset of an instruction's reads within its slot.
pub const USE: Pos = 0;
/// Offset at which an instruction destroys its clobbered registers.
pub const CLOBBER: Pos = 1;
/// Offset of an instruction's writes within its slot.
pub const DEF: Pos = 2;

/// The variables one instruction reads, writes and clobbers.
#[derive(Clone, Debug, Default)]
pub struct InstAccess {
    pub uses: SmallVec<[u32; 4]>,
    pub defs: SmallVec<[u32; 4]>,
    pub clobbers: SmallVec<[u32; 4]>,
}

/// One block's instructions and the indices of its successor blocks.
#[derive(Clone, Debug, Default)]
pub struct BlockAccess {
    pub insts: Vec<InstAccess>,
    pub succs: SmallVec<[usize; 2]>,
}

/// A fixed-size set of variable numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    pub fn new(len: usize) -> Self {
        BitSet {
            words: vec![0; len.div_ceil(64)],
        }
    }

    pub fn insert(&mut self, i: u32) {
        self.words[i as usize / 64] |= 1 << (i % 64);
    }

    pub fn remove(&mut self, i: u32) {
        self.words[i as usize / 64] &= !(1 << (i % 64));
    }

    pub fn contains(&self, i: u32) -> bool {
        self.words[i as usize / 64] & (1 << (i % 64)) != 0
    }

    /// Adds every element of `other`; returns whether `self` grew.
    pub fn union_with(&mut self, other: &BitSet) -> bool {
        let mut changed = false;
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            let new = *w | o;
            changed |= new != *w;
            *w = new;
        }
        changed
    }

    /// The elements in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    (wi * 64) as u32 + bit
                })
            })
        })
    }

    fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Makes room for `len` variables; the new ones are absent.
    fn grow_to(&mut self, len: usize) {
        self.words.resize(len.div_ceil(64).max(self.words.len()), 0);
    }
}

/// Variables live on entry to and exit from each block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Liveness {
    pub live_in: Vec<BitSet>,
    pub live_out: Vec<BitSet>,
}

impl Liveness {
    /// This liveness once the variables `gone` occur nowhere and variables up to
    /// `nvars` exist, none of which is live into or out of any block: what [`solve`]
    /// finds for code rewritten that way (the register allocator's spill code, whose
    /// new registers live within one block), without solving again.
    pub fn without(mut self, gone: impl IntoIterator<Item = u32> + Clone, nvars: usize) -> Self {
        for set in self.live_in.iter_mut().chain(&mut self.live_out) {
            set.grow_to(nvars);
            for v in gone.clone() {
                set.remove(v);
            }
        }
        self
    }
}

/// Variables a block reads before writing them (`gen`) and writes (`kill`).
fn gen_kill(block: &BlockAccess, nvars: usize) -> (BitSet, BitSet) {
    let mut gen = BitSet::new(nvars);
    let mut kill = BitSet::new(nvars);
    for inst in &block.insts {
        for &u in &inst.uses {
            if !kill.contains(u) {
                gen.insert(u);
            }
        }
        for &d in inst.defs.iter().chain(&inst.clobbers) {
            kill.insert(d);
        }
    }
    (gen, kill)
}

/// Solves `live_out(b) = ∪ live_in(s)` over successors `s`, and
/// `live_in(b) = gen(b) ∪ (live_out(b) − kill(b))`, to the least fixed point.
/// Successor indices must be below `blocks.len()`.
///
/// A worklist of blocks: each block is visited once, and again only when the live-in
/// set of one of its successors grew, so a loop costs its blocks' visits until its
/// sets settle rather than further sweeps over the whole function to confirm that
/// nothing changes (the fixed point is unique, so the result is the same).
pub fn solve(blocks: &[BlockAccess], nvars: usize) -> Liveness {
    let (gens, kills): (Vec<_>, Vec<_>) = blocks.iter().map(|b| gen_kill(b, nvars)).unzip();
    let mut preds: Vec<SmallVec<[usize; 2]>> = vec![SmallVec::new(); blocks.len()];
    for (b, block) in blocks.iter().enumerate() {
        for &s in &block.succs {
            preds[s].push(b);
        }
    }
    let mut live_in = gens;
    let mut live_out = vec![BitSet::new(nvars); blocks.len()];
    // Backward problem: popping the last block first converges fastest for code laid
    // out mostly forward. Sets only grow, so `live_in` is updated in place.
    let mut work: Vec<usize> = (0..blocks.len()).collect();
    let mut queued = vec![true; blocks.len()];
    while let Some(b) = work.pop() {
        queued[b] = false;
        let out = &mut live_out[b];
        out.clear();
        for &s in &blocks[b].succs {
            out.union_with(&live_in[s]);
        }
        let mut changed = false;
        let inn = &mut live_in[b];
        for ((i, o), k) in inn.words.iter_mut().zip(&out.words).zip(&kills[b].words) {
            let new = *i | (o & !k);
            changed |= new != *i;
            *i = new;
        }
        if changed {
            for &p in &preds[b] {
                if !queued[p] {
                    queued[p] = true;
                    work.push(p);
                }
            }
        }
    }
    Liveness { live_in, live_out }
}

/// Where variables are read, or live, with no write before them on any path from
/// the function's entry (see [`unwritten_reads`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnwrittenReads {
    /// (block, instruction, variable): the instruction reads the variable and no
    /// write of it reaches there.
    pub before: Vec<(usize, usize, u32)>,
    /// (block, variable): the variable is live into a successor of the block that
    /// another predecessor may have written it for, but no write of it reaches the
    /// block's end.
    pub at_end: Vec<(usize, u32)>,
}

/// Finds where a variable is read, or live, while no write of it can have happened
/// on any path from the entry: it holds whatever the register held at the start.
/// A target that gives such values a defined initial value (registers zeroed at
/// launch) writes it explicitly at the returned points, so that the value is live
/// only from there instead of from the entry: every such variable would otherwise
/// occupy a register over everything before its first write, as with a value only
/// ever written under a guard (a masked write keeps the old value in the other lanes).
///
/// After the target writes each variable at those points, no variable is live where
/// no write reaches. Only variables below `nvars` that `is_candidate` accepts are
/// reported (physical argument registers are live from the entry on purpose).
pub fn unwritten_reads(
    blocks: &[BlockAccess],
    nvars: usize,
    live: &Liveness,
    is_candidate: impl Fn(u32) -> bool,
) -> UnwrittenReads {
    // Forward "may be written": a read counts as a write, since the target writes
    // the variable before each reported read.
    let gens: Vec<BitSet> = blocks
        .iter()
        .map(|b| {
            let mut g = BitSet::new(nvars);
            for inst in &b.insts {
                for &v in inst.uses.iter().chain(&inst.defs) {
                    g.insert(v);
                }
            }
            g
        })
        .collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); blocks.len()];
    for (b, block) in blocks.iter().enumerate() {
        for &s in &block.succs {
            preds[s].push(b);
        }
    }
    let mut written_in = vec![BitSet::new(nvars); blocks.len()];
    let mut written_out = gens.clone();
    let mut changed = true;
    while changed {
        changed = false;
        for b in 0..blocks.len() {
            let mut inn = BitSet::new(nvars);
            for &p in &preds[b] {
                inn.union_with(&written_out[p]);
            }
            changed |= written_out[b].union_with(&inn);
            written_in[b] = inn;
        }
    }
    let mut out = UnwrittenReads::default();
    for (b, block) in blocks.iter().enumerate() {
        let mut written = written_in[b].clone();
        for (i, inst) in block.insts.iter().enumerate() {
            for &u in &inst.uses {
                if !written.contains(u) && is_candidate(u) {
                    out.before.push((b, i, u));
                }
                written.insert(u);
            }
            for &d in &inst.defs {
                written.insert(d);
            }
        }
        // Only where a successor may see a write through another predecessor: if
        // none can, the variable is still unwritten there and the write goes later.
        let mut needed = BitSet::new(nvars);
        for &s in &block.succs {
            for v in live.live_in[s].iter() {
                if written_in[s].contains(v) && !written_out[b].contains(v) {
                    needed.insert(v);
                }
            }
        }
        out.at_end
            .extend(needed.iter().filter(|&v| is_candidate(v)).map(|v| (b, v)));
    }
    out
}

/// The linear numbering of a function's blocks and instructions.
#[derive(Clone, Debug)]
pub struct Layout {
    /// First position of each block (its header slot).
    pub block_from: Vec<Pos>,
    /// Last position of each block.
    pub block_to: Vec<Pos>,
    /// First position of each instruction's slot, per block.
    pub inst_base: Vec<Vec<Pos>>,
}

/// Numbers blocks in order, each a header slot followed by its instructions' slots.
pub fn layout(blocks: &[BlockAccess]) -> Layout {
    let mut next: Pos = 0;
    let mut out = Layout {
        block_from: Vec::with_capacity(blocks.len()),
        block_to: Vec::with_capacity(blocks.len()),
        inst_base: Vec::with_capacity(blocks.len()),
    };
    for block in blocks {
        out.block_from.push(next);
        next += SLOT;
        let bases = (0..block.insts.len())
            .map(|_| {
                let base = next;
                next += SLOT;
                base
            })
            .collect();
        out.inst_base.push(bases);
        out.block_to.push(next - 1);
    }
    out
}

/// An inclusive range of positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Range {
    pub start: Pos,
    pub end: Pos,
}

/// Whether two sorted lists of disjoint ranges share a position.
pub fn intersects(a: &[Range], b: &[Range]) -> bool {
    // Skip the ranges of the longer list (fixed registers) that end before `b` starts.
    let (mut i, mut j) = (0, 0);
    if let Some(first) = b.first() {
        i = a.partition_point(|r| r.end < first.start);
    }
    if let Some(first) = a.get(i) {
        j = b.partition_point(|r| r.end < first.start);
    }
    while i < a.len() && j < b.len() {
        if a[i].end < b[j].start {
            i += 1;
        } else if b[j].end < a[i].start {
            j += 1;
        } else {
            return true;
        }
    }
    false
}

/// Sorts ranges and merges overlapping or adjacent ones, in place.
pub fn normalize(ranges: &mut Vec<Range>) {
    ranges.sort_unstable();
    ranges.dedup_by(|r, last| {
        let merge = r.start <= last.end.saturating_add(1);
        if merge {
            last.end = last.end.max(r.end);
        }
        merge
    });
}

/// The positions where each variable holds a value: sorted, disjoint ranges per
/// variable (empty for variables that never occur). A write nobody reads still
/// occupies its register at the writing instruction.
pub fn live_ranges(
    blocks: &[BlockAccess],
    nvars: usize,
    live: &Liveness,
    layout: &Layout,
) -> Vec<Vec<Range>> {
    let mut ranges: Vec<Vec<Range>> = vec![Vec::new(); nvars];
    // End of the range each variable is open with, walking backward; NONE if not live.
    const NONE: Pos = Pos::MAX;
    let mut open = vec![NONE; nvars];
    let mut touched: Vec<u32> = Vec::new();
    for (b, block) in blocks.iter().enumerate() {
        for v in live.live_out[b].iter() {
            open[v as usize] = layout.block_to[b];
            touched.push(v);
        }
        for (inst, &base) in block.insts.iter().zip(&layout.inst_base[b]).rev() {
            let mut close = |v: u32, at: Pos, ranges: &mut Vec<Vec<Range>>| {
                let end = std::mem::replace(&mut open[v as usize], NONE);
                let end = if end == NONE { at } else { end };
                ranges[v as usize].push(Range { start: at, end });
            };
            for &d in &inst.defs {
                close(d, base + DEF, &mut ranges);
            }
            for &c in &inst.clobbers {
                close(c, base + CLOBBER, &mut ranges);
            }
            for &u in &inst.uses {
                if open[u as usize] == NONE {
                    // A value this instruction also writes must survive its clobbers:
                    // it is read and written in place (tied operands).
                    let rewritten = inst.defs.contains(&u);
                    open[u as usize] = base + if rewritten { DEF } else { USE };
                    touched.push(u);
                }
            }
        }
        for v in touched.drain(..) {
            let end = std::mem::replace(&mut open[v as usize], NONE);
            if end != NONE {
                ranges[v as usize].push(Range {
                    start: layout.block_from[b],
                    end,
                });
            }
        }
    }
    for r in &mut ranges {
        normalize(r);
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    fn inst(uses: &[u32], defs: &[u32]) -> InstAccess {
        InstAccess {
            uses: uses.iter().copied().collect(),
            defs: defs.iter().copied().collect(),
            clobbers: SmallVec::new(),
        }
    }

    fn r(start: Pos, end: Pos) -> Range {
        Range { start, end }
    }

    #[test]
    fn straight_line_ranges_end_at_last_use() {
        // v0 = ..; v1 = v0; use v1; v0 dead def
        let blocks = vec![BlockAccess {
            insts: vec![
                inst(&[], &[0]),
                inst(&[0], &[1]),
                inst(&[1], &[]),
                inst(&[], &[0]),
            ],
            succs: smallvec![],
        }];
        let live = solve(&blocks, 2);
        assert!(live.live_in[0].iter().next().is_none());
        let lay = layout(&blocks);
        assert_eq!(lay.inst_base[0], vec![4, 8, 12, 16]);
        let ranges = live_ranges(&blocks, 2, &live, &lay);
        assert_eq!(ranges[0], vec![r(4 + DEF, 8 + USE), r(16 + DEF, 16 + DEF)]);
        assert_eq!(ranges[1], vec![r(8 + DEF, 12 + USE)]);
    }

    #[test]
    fn loop_carried_value_covers_the_whole_loop() {
        // b0: v0 = ..  -> b1
        // b1: v1 = v0; v0 = v1  -> b1, b2   (v0 redefined: not SSA)
        // b2: use v0
        let blocks = vec![
            BlockAccess {
                insts: vec![inst(&[], &[0])],
                succs: smallvec![1],
            },
            BlockAccess {
                insts: vec![inst(&[0], &[1]), inst(&[1], &[0])],
                succs: smallvec![1, 2],
            },
            BlockAccess {
                insts: vec![inst(&[0], &[])],
                succs: smallvec![],
            },
        ];
        let live = solve(&blocks, 2);
        assert_eq!(live.live_in[1].iter().collect::<Vec<_>>(), vec![0]);
        assert_eq!(live.live_out[1].iter().collect::<Vec<_>>(), vec![0]);
        let lay = layout(&blocks);
        let ranges = live_ranges(&blocks, 2, &live, &lay);
        // v0 from its definition in b0 through b1's end (and into b2's use), with
        // the hole where b1 has read it and not yet rewritten it.
        let b1 = lay.block_from[1];
        assert_eq!(
            ranges[0],
            vec![
                r(4 + DEF, b1 + 4 + USE),
                r(b1 + 8 + DEF, lay.block_from[2] + 4 + USE)
            ]
        );
        assert!(intersects(&ranges[0], &[r(b1, b1)]));
    }

    #[test]
    fn clobbers_kill_and_uses_before_them_end() {
        // v0 live across a call clobbering v1; v1 used by the call.
        let call = InstAccess {
            uses: smallvec![1],
            defs: smallvec![],
            clobbers: smallvec![1],
        };
        let blocks = vec![BlockAccess {
            insts: vec![inst(&[], &[0, 1]), call, inst(&[0], &[])],
            succs: smallvec![],
        }];
        let live = solve(&blocks, 2);
        let lay = layout(&blocks);
        let ranges = live_ranges(&blocks, 2, &live, &lay);
        assert_eq!(ranges[1], vec![r(4 + DEF, 8 + CLOBBER)]);
        assert!(intersects(&ranges[0], &[r(8 + CLOBBER, 8 + CLOBBER)]));
    }

    #[test]
    fn unwritten_reads_at_reads_and_on_edges() {
        // b0: read v0 (never written)      -> b1, b2
        // b1: v1 = ..                       -> b3
        // b2: (nothing)                     -> b3
        // b3: read v1 (written on one path only); v2 read then written (tied)
        let blocks = vec![
            BlockAccess {
                insts: vec![inst(&[0], &[])],
                succs: smallvec![1, 2],
            },
            BlockAccess {
                insts: vec![inst(&[], &[1])],
                succs: smallvec![3],
            },
            BlockAccess {
                insts: vec![],
                succs: smallvec![3],
            },
            BlockAccess {
                insts: vec![inst(&[1], &[]), inst(&[2], &[2])],
                succs: smallvec![],
            },
        ];
        let live = solve(&blocks, 3);
        let found = unwritten_reads(&blocks, 3, &live, |_| true);
        assert_eq!(found.before, vec![(0, 0, 0), (3, 1, 2)]);
        // v1 reaches b3 unwritten through b2: written at b2's end, not earlier.
        assert_eq!(found.at_end, vec![(2, 1)]);
        let none = unwritten_reads(&blocks, 3, &live, |v| v == 2);
        assert_eq!(none.before, vec![(3, 1, 2)]);
        assert!(none.at_end.is_empty());
    }

    #[test]
    fn intersects_sorted_lists() {
        let a = [r(0, 3), r(10, 12), r(20, 30)];
        assert!(intersects(&a, &[r(12, 15)]));
        assert!(!intersects(&a, &[r(4, 9), r(13, 19)]));
        assert!(intersects(&[r(13, 19), r(25, 25)], &a));
        assert!(!intersects(&a, &[]));
    }
}
