//! Register allocation on finished kernels: instruction selection gives every value
//! its own `%r` register (or even-aligned pair); this pass computes liveness on the
//! instruction-level control-flow graph and colours the interference graph greedily,
//! pairs on even registers, so `num_regs` is what occupancy should see.
//!
//! A guarded definition, or a write of one half of a pair, does not kill the old
//! value (lanes where the guard is false keep it), so it counts as a use too. No
//! spilling yet: a kernel that needs more than `--max-regs` is rejected by the caller.

use std::collections::HashSet;

use sim::gpu::{AddrBase, Address, Kernel, Op, Reg, RegFile, Src};

/// Dense bit set.
#[derive(Clone, PartialEq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
    fn union(&mut self, o: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a |= *b;
        }
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &x)| {
            (0..64)
                .filter(move |b| x >> b & 1 != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

/// Calls `f` on every register operand of `op` (any file), allowing a rewrite.
pub fn map_regs(op: &mut Op, mut f: impl FnMut(Reg) -> Reg) {
    let src = |s: &mut Src, f: &mut dyn FnMut(Reg) -> Reg| {
        if let Src::Reg(r) = s {
            *r = f(*r);
        }
    };
    let addr = |a: &mut Address, f: &mut dyn FnMut(Reg) -> Reg| match &mut a.base {
        AddrBase::Reg(r) | AddrBase::RegPair(r) => *r = f(*r),
        _ => {}
    };
    match op {
        Op::Bin { dst, a, b, .. } | Op::Setp { dst, a, b, .. } => {
            src(a, &mut f);
            src(b, &mut f);
            *dst = f(*dst);
        }
        Op::Un { dst, a, .. } | Op::Cvt { dst, a, .. } => {
            src(a, &mut f);
            *dst = f(*dst);
        }
        Op::Mad { dst, a, b, c, .. } => {
            src(a, &mut f);
            src(b, &mut f);
            src(c, &mut f);
            *dst = f(*dst);
        }
        Op::Selp { dst, a, b, p, .. } => {
            src(a, &mut f);
            src(b, &mut f);
            *p = f(*p);
            *dst = f(*dst);
        }
        Op::Ld { dst, addr: ad, .. } => {
            addr(ad, &mut f);
            *dst = f(*dst);
        }
        Op::St { addr: ad, a, .. } => {
            addr(ad, &mut f);
            src(a, &mut f);
        }
        Op::Atom {
            dst,
            addr: ad,
            a,
            b,
            ..
        } => {
            addr(ad, &mut f);
            src(a, &mut f);
            if let Some(b) = b {
                src(b, &mut f);
            }
            *dst = f(*dst);
        }
        Op::Vote { dst, p, .. } => {
            *p = f(*p);
            *dst = f(*dst);
        }
        Op::Shfl {
            dst,
            dst_pred,
            a,
            lane,
            clamp,
            ..
        } => {
            src(a, &mut f);
            src(lane, &mut f);
            src(clamp, &mut f);
            *dst = f(*dst);
            if let Some(p) = dst_pred {
                *p = f(*p);
            }
        }
        Op::EnqData { addr: r, .. } | Op::EnqAddr { addr: r, .. } => *r = f(*r),
        Op::EnqPred { a, b, .. } => {
            src(a, &mut f);
            src(b, &mut f);
        }
        Op::DeqPred { dst } => *dst = f(*dst),
        Op::Bra { .. } | Op::Call { .. } | Op::Ret | Op::Exit | Op::Bar { .. } => {}
        Op::Fence { .. } | Op::Nop => {}
    }
}

/// Register groups: a single register or an even-aligned pair.
struct Groups {
    /// Group of each virtual register index.
    of: Vec<usize>,
    /// Whether each group is a pair.
    pair: Vec<bool>,
}

fn groups(num_regs: u32, pairs: &HashSet<u16>) -> Groups {
    let mut of = vec![usize::MAX; num_regs as usize];
    let mut pair = Vec::new();
    let mut i = 0usize;
    while i < num_regs as usize {
        let g = pair.len();
        if pairs.contains(&(i as u16)) {
            of[i] = g;
            if i + 1 < of.len() {
                of[i + 1] = g;
            }
            pair.push(true);
            i += 2;
        } else {
            of[i] = g;
            pair.push(false);
            i += 1;
        }
    }
    Groups { of, pair }
}

/// (uses, full defs) of instruction `inst`, as groups.
fn uses_defs(k: &Kernel, i: usize, g: &Groups) -> (Vec<usize>, Vec<usize>) {
    let inst = k.insts[i];
    let (mut uses, mut defs) = (Vec::new(), Vec::new());
    inst.for_each_reg(|a| {
        if a.reg.file != RegFile::R {
            return;
        }
        let grp = g.of[a.reg.idx as usize];
        let full = a.wide == g.pair[grp];
        if a.def && full && inst.guard.is_none() {
            defs.push(grp);
        } else {
            uses.push(grp);
            if a.def {
                // A partial or guarded write keeps the rest: the group must have a
                // register here even if never read before (it is written).
                defs.push(grp);
                uses.push(grp);
            }
        }
    });
    (uses, defs)
}

fn successors(k: &Kernel, i: usize) -> Vec<usize> {
    let inst = k.insts[i];
    let n = k.insts.len();
    match inst.op {
        Op::Exit | Op::Ret if inst.guard.is_none() => vec![],
        Op::Bra { target, .. } => {
            let mut v = vec![target as usize];
            if inst.guard.is_some() && i + 1 < n {
                v.push(i + 1);
            }
            v
        }
        _ if i + 1 < n => vec![i + 1],
        _ => vec![],
    }
}

/// Allocates the `%r` registers of `k` in place; returns the number used.
pub fn allocate(k: &mut Kernel, pairs: &HashSet<u16>) -> u32 {
    let g = groups(k.num_regs, pairs);
    let ng = g.pair.len();
    let n = k.insts.len();
    let ud: Vec<(Vec<usize>, Vec<usize>)> = (0..n).map(|i| uses_defs(k, i, &g)).collect();
    let succ: Vec<Vec<usize>> = (0..n).map(|i| successors(k, i)).collect();
    let mut live_out = vec![Bits::new(ng); n];
    let mut live_in = vec![Bits::new(ng); n];
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..n).rev() {
            let mut out = Bits::new(ng);
            for &s in &succ[i] {
                out.union(&live_in[s]);
            }
            let mut inn = out.clone();
            for &d in &ud[i].1 {
                inn.clear(d);
            }
            for &u in &ud[i].0 {
                inn.set(u);
            }
            if inn != live_in[i] {
                live_in[i] = inn;
                changed = true;
            }
            live_out[i] = out;
        }
    }
    let mut adj: Vec<HashSet<usize>> = vec![HashSet::new(); ng];
    for i in 0..n {
        for &d in &ud[i].1 {
            for l in live_out[i].iter() {
                if l != d {
                    adj[d].insert(l);
                    adj[l].insert(d);
                }
            }
        }
    }
    // Live on entry (the parameters are loaded first, so only what is never
    // defined): they all interfere with each other.
    let entry: Vec<usize> = if n > 0 {
        live_in[0].iter().collect()
    } else {
        vec![]
    };
    for &a in &entry {
        for &b in &entry {
            if a != b {
                adj[a].insert(b);
            }
        }
    }
    let mut color = vec![u32::MAX; ng];
    let mut used = 0u32;
    for grp in 0..ng {
        let taken: HashSet<u32> = adj[grp]
            .iter()
            .filter(|&&o| color[o] != u32::MAX)
            .flat_map(|&o| {
                if g.pair[o] {
                    vec![color[o], color[o] + 1]
                } else {
                    vec![color[o]]
                }
            })
            .collect();
        let step = if g.pair[grp] { 2 } else { 1 };
        let mut c = 0u32;
        while taken.contains(&c) || (g.pair[grp] && taken.contains(&(c + 1))) {
            c += step;
        }
        color[grp] = c;
        used = used.max(c + step);
    }
    let starts: Vec<usize> = {
        let mut s = vec![0usize; ng];
        for (idx, &grp) in g.of.iter().enumerate().rev() {
            if grp != usize::MAX {
                s[grp] = idx;
            }
        }
        s
    };
    for inst in &mut k.insts {
        map_regs(&mut inst.op, |r| {
            if r.file != RegFile::R {
                return r;
            }
            let grp = g.of[r.idx as usize];
            let off = r.idx as usize - starts[grp];
            Reg::r((color[grp] as usize + off) as u16)
        });
    }
    k.num_regs = used;
    used
}
