//! Dominator trees, computed with the algorithm of Cooper, Harvey and Kennedy ("A
//! Simple, Fast Dominance Algorithm", 2001): iterate `idom(b) = ∩ idom(preds(b))` over
//! the reverse postorder until nothing changes, intersecting by walking up the tree
//! with reverse-postorder numbers. Only blocks reachable from the entry have dominators.
//!
//! The tree is built from the terminators as they are; targets that do not exist are
//! ignored, so a function that fails verification still gets a tree.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::entities::Block;
use super::function::Function;

pub struct DominatorTree {
    /// The reachable blocks in reverse postorder; the entry first.
    rpo: Vec<Block>,
    /// Each reachable block's index in `rpo`.
    rpo_number: FxHashMap<Block, usize>,
    /// Immediate dominators, by reverse-postorder number; the entry is its own.
    idom: Vec<usize>,
}

impl DominatorTree {
    pub fn compute(func: &Function) -> DominatorTree {
        let rpo = reverse_postorder(func);
        let rpo_number: FxHashMap<Block, usize> =
            rpo.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); rpo.len()];
        for (i, &b) in rpo.iter().enumerate() {
            for s in successors(func, b) {
                if let Some(&j) = rpo_number.get(&s) {
                    preds[j].push(i);
                }
            }
        }
        let idom = idoms(&preds);
        DominatorTree {
            rpo,
            rpo_number,
            idom,
        }
    }

    /// The reachable blocks in reverse postorder.
    pub fn rpo(&self) -> &[Block] {
        &self.rpo
    }

    pub fn is_reachable(&self, block: Block) -> bool {
        self.rpo_number.contains_key(&block)
    }

    /// The immediate dominator; `None` for the entry and for unreachable blocks.
    pub fn idom(&self, block: Block) -> Option<Block> {
        let n = *self.rpo_number.get(&block)?;
        (n != 0).then(|| self.rpo[self.idom[n]])
    }

    /// Whether `a` dominates `b` (every block dominates itself). False when either is
    /// unreachable.
    pub fn dominates(&self, a: Block, b: Block) -> bool {
        let (Some(&a), Some(&(mut b))) = (self.rpo_number.get(&a), self.rpo_number.get(&b)) else {
            return false;
        };
        // A dominator comes before what it dominates in reverse postorder.
        while b > a {
            b = self.idom[b];
        }
        a == b
    }
}

/// The targets of `block`'s terminator that exist (looked up, not indexed: the module
/// may be broken).
fn successors(func: &Function, block: Block) -> SmallVec<[Block; 2]> {
    let last = func.blocks[block].insts.last();
    let Some(data) = last.and_then(|&inst| func.insts.get(inst)) else {
        return SmallVec::new();
    };
    let targets = data.successors().into_iter().map(|call| call.block);
    targets.filter(|&b| func.blocks.get(b).is_some()).collect()
}

/// The blocks reachable from the entry, in reverse postorder (iterative DFS).
fn reverse_postorder(func: &Function) -> Vec<Block> {
    let Some(entry) = func.entry_block().filter(|&b| func.blocks.get(b).is_some()) else {
        return Vec::new();
    };
    let mut seen = FxHashMap::default();
    let mut postorder = Vec::new();
    let mut stack = vec![(entry, successors(func, entry), 0usize)];
    seen.insert(entry, ());
    while let Some((block, succs, next)) = stack.last_mut() {
        if let Some(&s) = succs.get(*next) {
            *next += 1;
            if seen.insert(s, ()).is_none() {
                stack.push((s, successors(func, s), 0));
            }
        } else {
            postorder.push(*block);
            stack.pop();
        }
    }
    postorder.reverse();
    postorder
}

/// Immediate dominators by reverse-postorder number, from predecessor lists.
fn idoms(preds: &[Vec<usize>]) -> Vec<usize> {
    const UNDEF: usize = usize::MAX;
    let mut idom = vec![UNDEF; preds.len()];
    if idom.is_empty() {
        return idom;
    }
    idom[0] = 0;
    let mut changed = true;
    while changed {
        changed = false;
        for b in 1..preds.len() {
            let mut processed = preds[b].iter().copied().filter(|&p| idom[p] != UNDEF);
            let Some(first) = processed.next() else {
                continue;
            };
            let new = processed.fold(first, |a, p| intersect(&idom, a, p));
            if idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

/// The nearest common dominator of `a` and `b`.
fn intersect(idom: &[usize], mut a: usize, mut b: usize) -> usize {
    while a != b {
        while a > b {
            a = idom[a];
        }
        while b > a {
            b = idom[b];
        }
    }
    a
}
