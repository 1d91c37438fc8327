//! Cycles of a control-flow graph: which blocks lie on a cycle, and which share one.
//! The uniformity analysis's region-relative part and `--no-skip-empty`'s test of a
//! region's loops both ask.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::Block;

/// For each block on a cycle, its strongly connected component's number: two blocks
/// reach each other by one or more edges exactly when both have the same number (a
/// block reaches itself so when it has one). Tarjan's algorithm over the reachable
/// blocks `rpo`, iteratively, so deep control flow cannot overflow the stack.
pub fn cycles(rpo: &[Block], succ: &FxHashMap<Block, Vec<Block>>) -> FxHashMap<Block, u32> {
    let no_succ: &[Block] = &[];
    let succs = |b: Block| succ.get(&b).map_or(no_succ, Vec::as_slice);
    let mut index: FxHashMap<Block, (u32, u32)> = FxHashMap::default(); // (index, lowlink)
    let mut on_stack: FxHashSet<Block> = FxHashSet::default();
    let mut stack: Vec<Block> = Vec::new();
    let mut out = FxHashMap::default();
    let mut next_index = 0u32;
    let mut next_scc = 0u32;
    for &root in rpo {
        if index.contains_key(&root) {
            continue;
        }
        // (block, position in its successor list)
        let mut walk: Vec<(Block, usize)> = vec![(root, 0)];
        index.insert(root, (next_index, next_index));
        next_index += 1;
        stack.push(root);
        on_stack.insert(root);
        while let Some(&mut (b, ref mut at)) = walk.last_mut() {
            if let Some(&s) = succs(b).get(*at) {
                *at += 1;
                if let Some(&(si, _)) = index.get(&s) {
                    if on_stack.contains(&s) {
                        let low = &mut index.get_mut(&b).expect("visited").1;
                        *low = (*low).min(si);
                    }
                } else {
                    index.insert(s, (next_index, next_index));
                    next_index += 1;
                    stack.push(s);
                    on_stack.insert(s);
                    walk.push((s, 0));
                }
                continue;
            }
            walk.pop();
            let (bi, blow) = index[&b];
            if let Some(&(parent, _)) = walk.last() {
                let low = &mut index.get_mut(&parent).expect("visited").1;
                *low = (*low).min(blow);
            }
            if blow == bi {
                let mut members = Vec::new();
                while let Some(m) = stack.pop() {
                    on_stack.remove(&m);
                    members.push(m);
                    if m == b {
                        break;
                    }
                }
                let self_loop = succs(b).contains(&b);
                if members.len() > 1 || self_loop {
                    for m in members {
                        out.insert(m, next_scc);
                    }
                    next_scc += 1;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;

    /// Blocks reachable from `from` by one or more edges.
    fn reach(from: Block, next: &FxHashMap<Block, Vec<Block>>) -> FxHashSet<Block> {
        let mut seen = FxHashSet::default();
        let mut stack: Vec<Block> = next.get(&from).cloned().unwrap_or_default();
        while let Some(b) = stack.pop() {
            if seen.insert(b) {
                stack.extend(next.get(&b).into_iter().flatten().copied());
            }
        }
        seen
    }

    /// On random graphs, two blocks share a cycle number exactly when each reaches the
    /// other by one or more edges (a block alone: when it reaches itself).
    #[test]
    fn cycle_numbers_are_mutual_reachability() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut random = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..300 {
            let n = 1 + random(12) as usize;
            let blocks: Vec<Block> = (0..n).map(Block::new).collect();
            let mut succ: FxHashMap<Block, Vec<Block>> = FxHashMap::default();
            let mut pred: FxHashMap<Block, Vec<Block>> = FxHashMap::default();
            for &b in &blocks {
                for _ in 0..random(3) {
                    let s = blocks[random(n as u64) as usize];
                    succ.entry(b).or_default().push(s);
                    pred.entry(s).or_default().push(b);
                }
            }
            let numbers = cycles(&blocks, &succ);
            for &a in &blocks {
                let on_cycle_with_a: FxHashSet<Block> = reach(a, &succ)
                    .intersection(&reach(a, &pred))
                    .copied()
                    .collect();
                for &b in &blocks {
                    let same = numbers.contains_key(&a) && numbers.get(&a) == numbers.get(&b);
                    assert_eq!(same, on_cycle_with_a.contains(&b), "{a} {b} in {succ:?}");
                }
            }
        }
    }
}
