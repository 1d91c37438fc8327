//! Dominator trees, computed with the algorithm of Cooper, Harvey and Kennedy ("A
//! Simple, Fast Dominance Algorithm", 2001): iterate `idom(b) = ∩ idom(preds(b))` over
//! the reverse postorder until nothing changes, intersecting by walking up the tree
//! with reverse-postorder numbers. Only blocks reachable from the entry have dominators.
//!
//! The tree is built from the terminators as they are; targets that do not exist are
//! ignored, so a function that fails verification still gets a tree.

use cranelift_entity::EntityRef;
use smallvec::SmallVec;

use super::entities::Block;
use super::function::Function;
use super::instructions::InstData;

pub struct DominatorTree {
    /// The reachable blocks in reverse postorder; the entry first.
    rpo: Vec<Block>,
    /// Each block's index in `rpo`, by block number ([`UNREACHED`] if it has none):
    /// a table, since every query looks blocks up.
    rpo_number: Vec<u32>,
    /// Immediate dominators, by reverse-postorder number; the entry is its own.
    idom: Vec<usize>,
}

/// The reverse-postorder number of a block not reachable from the entry.
const UNREACHED: u32 = u32::MAX;

impl DominatorTree {
    pub fn compute(func: &Function) -> DominatorTree {
        let rpo = reverse_postorder(func);
        let mut rpo_number = vec![UNREACHED; func.blocks.len()];
        for (i, &b) in rpo.iter().enumerate() {
            rpo_number[b.index()] = i as u32;
        }
        let mut tree = DominatorTree {
            rpo,
            rpo_number,
            idom: Vec::new(),
        };
        let preds = tree.predecessors(func);
        tree.idom = idoms(&preds);
        tree
    }

    /// Each reachable block's predecessors, by reverse-postorder number, in the order
    /// the predecessors come in reverse postorder.
    fn predecessors(&self, func: &Function) -> Preds {
        let edges: Vec<(usize, usize)> = self
            .rpo
            .iter()
            .enumerate()
            .flat_map(|(i, &b)| {
                successors(func, b)
                    .into_iter()
                    .filter_map(move |s| Some((self.number(s)?, i)))
            })
            .collect();
        Preds::new(self.rpo.len(), &edges)
    }

    /// `block`'s index in the reverse postorder, if it is reachable.
    fn number(&self, block: Block) -> Option<usize> {
        let n = *self.rpo_number.get(block.index())?;
        (n != UNREACHED).then_some(n as usize)
    }

    /// The reachable blocks in reverse postorder.
    pub fn rpo(&self) -> &[Block] {
        &self.rpo
    }

    pub fn is_reachable(&self, block: Block) -> bool {
        self.number(block).is_some()
    }

    /// The immediate dominator; `None` for the entry and for unreachable blocks.
    pub fn idom(&self, block: Block) -> Option<Block> {
        let n = self.number(block)?;
        (n != 0).then(|| self.rpo[self.idom[n]])
    }

    /// Whether `a` dominates `b` (every block dominates itself). False when either is
    /// unreachable.
    pub fn dominates(&self, a: Block, b: Block) -> bool {
        let (Some(a), Some(mut b)) = (self.number(a), self.number(b)) else {
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
    let mut targets = SmallVec::new();
    let mut add = |b: Block| {
        if func.blocks.get(b).is_some() {
            targets.push(b);
        }
    };
    match data {
        InstData::Jump { dest } => add(dest.block),
        InstData::Brif {
            then_dest,
            else_dest,
            ..
        } => {
            add(then_dest.block);
            add(else_dest.block);
        }
        _ => {}
    }
    targets
}

/// The blocks reachable from the entry, in reverse postorder (iterative DFS).
fn reverse_postorder(func: &Function) -> Vec<Block> {
    let Some(entry) = func.entry_block().filter(|&b| func.blocks.get(b).is_some()) else {
        return Vec::new();
    };
    let mut seen = vec![false; func.blocks.len()];
    let mut postorder = Vec::new();
    let mut stack = vec![(entry, successors(func, entry), 0usize)];
    seen[entry.index()] = true;
    while let Some((block, succs, next)) = stack.last_mut() {
        if let Some(&s) = succs.get(*next) {
            *next += 1;
            if !std::mem::replace(&mut seen[s.index()], true) {
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
/// Predecessor lists of blocks `0..n`, packed into one vector (one allocation, not
/// one per block): block `b`'s are `list[start[b]..start[b + 1]]`.
struct Preds {
    start: Vec<usize>,
    list: Vec<usize>,
}

impl Preds {
    /// From `(block, predecessor)` edges, keeping each block's in the edges' order.
    fn new(n: usize, edges: &[(usize, usize)]) -> Preds {
        let mut start = vec![0; n + 1];
        for &(b, _) in edges {
            start[b + 1] += 1;
        }
        for b in 0..n {
            start[b + 1] += start[b];
        }
        let mut next = start.clone();
        let mut list = vec![0; edges.len()];
        for &(b, p) in edges {
            list[next[b]] = p;
            next[b] += 1;
        }
        Preds { start, list }
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    fn of(&self, b: usize) -> &[usize] {
        &self.list[self.start[b]..self.start[b + 1]]
    }
}

fn idoms(preds: &Preds) -> Vec<usize> {
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
            let mut processed = preds.of(b).iter().copied().filter(|&p| idom[p] != UNDEF);
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
