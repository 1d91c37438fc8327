//! The uniform datapath's operand check. A `.uni` instruction is computed once per
//! warp by the scalar unit (from the first executing lane's operands) and its result
//! broadcast to the executing lanes; that equals the vector instruction exactly when
//! every operand it reads is the same in all executing lanes. The simulator checks
//! this before executing the instruction and reports a violation as a
//! [`super::FaultKind::NonUniformOperand`] fault, which checks a compiler's uniformity
//! analysis. The guard is not an operand: it selects the executing lanes.

use super::exec::{WarpState, WARP};
use super::isa::{Inst, Op, RegFile, Special, Src};

/// A non-uniform operand: the first executing lane whose value differs from the first
/// executing lane's, and a message naming the operand.
pub type Violation = (u32, String);

/// Checks that every operand of `inst` is equal across the lanes of `exec`.
pub fn check_operands(warp: &WarpState, inst: &Inst, exec: u32) -> Result<(), Violation> {
    if exec == 0 || exec.count_ones() == 1 {
        return Ok(());
    }
    for s in special_sources(&inst.op) {
        special_uniform(warp, s, exec)?;
    }
    let mut result = Ok(());
    let unguarded = Inst {
        guard: None,
        ..*inst
    };
    unguarded.for_each_reg(|a| {
        if a.def || result.is_err() {
            return;
        }
        result = reg_uniform(warp, a.reg.file, a.reg.idx, a.wide, exec);
    });
    result
}

/// The special registers among the source operands of `op`.
fn special_sources(op: &Op) -> impl Iterator<Item = Special> {
    let srcs: [Option<Src>; 3] = match *op {
        Op::Bin { a, b, .. } | Op::Setp { a, b, .. } | Op::Selp { a, b, .. } => {
            [Some(a), Some(b), None]
        }
        Op::Un { a, .. } | Op::Cvt { a, .. } => [Some(a), None, None],
        Op::Mad { a, b, c, .. } => [Some(a), Some(b), Some(c)],
        _ => [None; 3],
    };
    srcs.into_iter().flatten().filter_map(|s| match s {
        Src::Special(sp) => Some(sp),
        _ => None,
    })
}

fn special_uniform(warp: &WarpState, s: Special, exec: u32) -> Result<(), Violation> {
    let first = exec.trailing_zeros() as usize;
    let lane_value = |l: usize| match s {
        Special::Tid(d) => warp.tid[d as usize][l],
        Special::LaneId => l as u32,
        _ => 0,
    };
    first_difference(exec, |l| lane_value(l) != lane_value(first)).map_or(Ok(()), |l| {
        Err((
            l,
            format!("`.uni` operand {} differs across the warp", s.name()),
        ))
    })
}

fn reg_uniform(
    warp: &WarpState,
    file: RegFile,
    idx: u32,
    wide: bool,
    exec: u32,
) -> Result<(), Violation> {
    let first = exec.trailing_zeros() as usize;
    match file {
        RegFile::R => {
            let n = if wide { 2 } else { 1 };
            for r in idx as usize..idx as usize + n {
                let Some(lanes) = warp.regs.get(r * WARP..(r + 1) * WARP) else {
                    // An undeclared register: the executing path reports it.
                    return Ok(());
                };
                if let Some(l) = first_difference(exec, |l| lanes[l] != lanes[first]) {
                    return Err((l, format!("`.uni` operand %r{r} differs across the warp")));
                }
            }
            Ok(())
        }
        RegFile::P => {
            let bits = warp.preds.get(idx as usize).copied().unwrap_or(0);
            let want = bits >> first & 1;
            match first_difference(exec, |l| bits >> l & 1 != want) {
                None => Ok(()),
                Some(l) => Err((l, format!("`.uni` operand %p{idx} differs across the warp"))),
            }
        }
        // One value per warp by construction; affine registers fault when executed.
        RegFile::Ur | RegFile::A => Ok(()),
    }
}

/// The first lane of `exec` for which `differs` holds.
fn first_difference(exec: u32, differs: impl Fn(usize) -> bool) -> Option<u32> {
    (0..WARP as u32).find(|&l| exec >> l & 1 == 1 && differs(l as usize))
}
