//! The mask stack, kept in memory.
//!
//! The current execution mask at any point is
//! `region base & func_live & loop_live & !continued`, where
//! - the *region base* is the mask a region was entered with (an SSA value computed
//!   before the region, so it dominates the whole region and its join);
//! - `func_live` (one slot per function, only when it has a nested `return`) holds the
//!   lanes that have not returned;
//! - per breakable construct (loop or `switch`), a `live` slot holds the lanes that have
//!   not left it by `break` (or, for a loop, by its condition);
//! - per loop, a `continued` slot holds the lanes that executed `continue` in this
//!   iteration (reset at the start of each iteration).
//!
//! A lane that returned or broke out is cleared in a slot that is only ever narrowed
//! while the construct runs, so it can never come back (the bug of paper 003's mask
//! stack). At a join the mask is recomputed as `base & slots` — no phis needed.
//!
//! `break`/`continue`/`return` in *uniform* control flow relative to their target (every
//! lane that entered the construct's body executes them, and no lane waits on a
//! `continue`) are plain jumps.

use super::func::FnLower;
use crate::front::ast::{Stmt, StmtKind};
use crate::front::intern::Symbol;
use crate::ir::{StackSlot, Value};

/// What kind of construct a [`Flow`] entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FlowKind {
    /// A loop (`for`, `while`, `do`, `foreach*`): the target of `continue`.
    Loop,
    /// A `switch`: the target of `break` only.
    Switch,
    /// `unmasked { }`: the mask state outside does not apply inside.
    Unmasked,
}

/// One enclosing construct.
#[derive(Clone, Debug)]
pub(super) struct Flow {
    pub kind: FlowKind,
    /// Lanes still in the construct (not broken out).
    pub live: Option<StackSlot>,
    /// Lanes that executed `continue` this iteration.
    pub continued: Option<StackSlot>,
    /// Where `break` goes (None: `break` not allowed, as in `foreach`).
    pub break_block: Option<crate::ir::Block>,
    /// Where `continue` goes.
    pub cont_block: Option<crate::ir::Block>,
    /// `varying_depth` of the construct's body: a jump at this depth is taken by every
    /// lane in the body (u32::MAX: never, e.g. the arms of a varying `switch`).
    pub body_depth: u32,
    /// A masked `continue` or `break` was lowered: some lanes may be waiting for the
    /// next iteration or at the end of the construct, so a `return` (and, after a
    /// `continue`, a `break`) can no longer be a plain jump.
    pub diverged: bool,
}

impl Flow {
    pub fn new(kind: FlowKind, body_depth: u32) -> Flow {
        Flow {
            kind,
            live: None,
            continued: None,
            break_block: None,
            cont_block: None,
            body_depth,
            diverged: false,
        }
    }
}

/// Does `s` contain a `return` that is not a direct statement of the function body?
pub(super) fn has_nested_return(s: &Stmt, top: bool) -> bool {
    match &s.kind {
        StmtKind::Return(_) => !top,
        StmtKind::Labeled { body, .. } => has_nested_return(body, top),
        StmtKind::Block(b) | StmtKind::Unmasked(b) => {
            b.stmts.iter().any(|s| has_nested_return(s, top))
        }
        _ => children(s).any(|c| has_nested_return(c, false)),
    }
}

/// Does `s` contain a `break` that leaves the construct whose body it is?
pub(super) fn has_break(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Break => true,
        StmtKind::For { .. }
        | StmtKind::While { .. }
        | StmtKind::DoWhile { .. }
        | StmtKind::Switch { .. }
        | StmtKind::Foreach { .. }
        | StmtKind::ForeachActive { .. }
        | StmtKind::ForeachUnique { .. } => false,
        _ => children(s).any(has_break),
    }
}

/// Does `s` contain a `continue` of the loop whose body it is?
pub(super) fn has_continue(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Continue => true,
        StmtKind::For { .. }
        | StmtKind::While { .. }
        | StmtKind::DoWhile { .. }
        | StmtKind::Foreach { .. }
        | StmtKind::ForeachActive { .. }
        | StmtKind::ForeachUnique { .. } => false,
        _ => children(s).any(has_continue),
    }
}

/// The statements directly inside `s`.
fn children(s: &Stmt) -> Box<dyn Iterator<Item = &Stmt> + '_> {
    match &s.kind {
        StmtKind::Block(b) | StmtKind::Unmasked(b) => Box::new(b.stmts.iter()),
        StmtKind::If { then, else_, .. } => {
            Box::new(std::iter::once(&**then).chain(else_.as_deref()))
        }
        StmtKind::For { body, .. }
        | StmtKind::While { body, .. }
        | StmtKind::DoWhile { body, .. }
        | StmtKind::Foreach { body, .. }
        | StmtKind::ForeachActive { body, .. }
        | StmtKind::ForeachUnique { body, .. }
        | StmtKind::Labeled { body, .. } => Box::new(std::iter::once(&**body)),
        StmtKind::Switch { arms, .. } => Box::new(arms.iter().flat_map(|a| a.body.iter())),
        _ => Box::new(std::iter::empty()),
    }
}

impl FnLower<'_, '_> {
    /// The mask at a join: `base` narrowed by the slots that may have changed since
    /// `base` was computed (those of the innermost loop and the switches inside it, and
    /// `func_live`). `epoch` is the value of [`FnLower::epoch`] when `base` was taken:
    /// if no masked jump happened since, `base` is still exact.
    pub fn recompute(&mut self, base: Value, epoch: u32) -> Value {
        if epoch == self.epoch {
            return base;
        }
        let mut m = base;
        let mut in_unmasked = false;
        let slots: Vec<(Option<StackSlot>, Option<StackSlot>)> = {
            let mut v = Vec::new();
            for f in self.flows.iter().rev() {
                if f.kind == FlowKind::Unmasked {
                    in_unmasked = true;
                    break;
                }
                v.push((f.live, f.continued));
                if f.kind == FlowKind::Loop {
                    break;
                }
            }
            v
        };
        for (live, cont) in slots {
            if let Some(s) = live {
                let l = self.load_mask(s);
                m = self.and(m, l);
            }
            if let Some(s) = cont {
                let c = self.load_mask(s);
                let nc = self.not(c);
                m = self.and(m, nc);
            }
        }
        if !in_unmasked {
            if let Some(s) = self.func_live {
                let l = self.load_mask(s);
                m = self.and(m, l);
            }
        }
        m
    }

    /// Clears the current lanes in a mask slot: `slot &= !mask`.
    fn clear_lanes(&mut self, slot: StackSlot, mask: Value) {
        let cur = self.load_mask(slot);
        let nm = self.not(mask);
        let new = self.and(cur, nm);
        self.store_mask(slot, new);
    }

    /// Sets the current lanes in a mask slot: `slot |= mask`.
    fn set_lanes(&mut self, slot: StackSlot, mask: Value) {
        let cur = self.load_mask(slot);
        let new = self.bin(crate::ir::BinaryOp::Bor, cur, mask);
        self.store_mask(slot, new);
    }

    /// Ends the current region: no lane continues past here.
    fn region_dead(&mut self) {
        self.mask = None;
        self.epoch += 1;
    }

    /// `break`: leaves the innermost loop or `switch`.
    pub fn lower_break(&mut self) {
        let Some(idx) = self
            .flows
            .iter()
            .rposition(|f| matches!(f.kind, FlowKind::Loop | FlowKind::Switch))
        else {
            return;
        };
        let f = self.flows[idx].clone();
        let Some(target) = f.break_block else {
            return;
        };
        if self.varying_depth == f.body_depth && !f.diverged {
            self.jump(target);
            self.mask = None;
            return;
        }
        let m = self.cur_mask();
        match f.live {
            Some(slot) => self.clear_lanes(slot, m),
            None => self.unsupported("this `break`"),
        }
        // The lanes that left wait at the end of the construct, so a `return` inside it
        // can no longer be a plain jump to the function's exit.
        self.flows[idx].diverged = true;
        self.region_dead();
    }

    /// `continue`: on to the next iteration of the innermost loop.
    pub fn lower_continue(&mut self) {
        let Some(idx) = self.flows.iter().rposition(|f| f.kind == FlowKind::Loop) else {
            return;
        };
        let f = self.flows[idx].clone();
        let Some(target) = f.cont_block else {
            return;
        };
        if self.varying_depth == f.body_depth && idx == self.flows.len() - 1 {
            self.jump(target);
            self.mask = None;
            return;
        }
        let m = self.cur_mask();
        match f.continued {
            Some(slot) => self.set_lanes(slot, m),
            None => self.unsupported("this `continue`"),
        }
        self.flows[idx].diverged = true;
        self.region_dead();
    }

    /// The block of a label of the function body.
    fn label_block(&mut self, label: Symbol) -> crate::ir::Block {
        if let Some(&b) = self.labels.get(&label) {
            return b;
        }
        let b = self.new_block();
        self.labels.insert(label, b);
        b
    }

    /// `goto`: sema allows it only where every live lane runs it (no varying construct
    /// around it, no lane waiting for a loop's end), so it is a plain jump.
    pub fn lower_goto(&mut self, label: Symbol) {
        let waiting = self
            .flows
            .iter()
            .any(|f| f.diverged || f.kind == FlowKind::Unmasked);
        if self.varying_depth != 0 || waiting {
            self.unsupported("this `goto`");
            return;
        }
        let target = self.label_block(label);
        self.jump(target);
        self.mask = None;
    }

    /// A label (a statement of the function body, outside every construct): the mask
    /// there is the entry mask less the lanes that returned, whichever way it was
    /// reached.
    pub fn lower_label(&mut self, label: Symbol) {
        let block = self.label_block(label);
        if !self.is_terminated() {
            self.jump(block);
        }
        self.switch_to(block);
        // An epoch unlike the current one: reload `func_live` whatever happened.
        let m = self.recompute(self.entry_mask, self.epoch.wrapping_add(1));
        self.mask = Some(m);
        self.epoch += 1;
    }

    /// `return` (after the value, if any, was stored in the return slot).
    pub fn lower_return_jump(&mut self) {
        let direct = self.varying_depth == 0
            && !self
                .flows
                .iter()
                .any(|f| f.diverged || f.kind == FlowKind::Unmasked);
        if direct {
            let exit = self.exit_block;
            self.jump(exit);
            self.mask = None;
            return;
        }
        let m = self.cur_mask();
        match self.func_live {
            Some(slot) => self.clear_lanes(slot, m),
            None => self.unsupported("this `return`"),
        }
        // The lanes also leave every enclosing construct, so loops whose lanes have all
        // returned stop iterating.
        let slots: Vec<StackSlot> = self.flows.iter().filter_map(|f| f.live).collect();
        for s in slots {
            self.clear_lanes(s, m);
        }
        self.region_dead();
    }

    /// A masked store of `v` to the return slot.
    pub fn store_return(&mut self, v: Value) {
        let Some(slot) = self.ret_slot else { return };
        let p = self.ret_place(slot);
        self.store(p, super::func::Val::S(v));
    }
}
