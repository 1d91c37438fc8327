//! Statements and control flow under masks.
//!
//! Uniform conditions branch (`brif`) with the mask unchanged. Varying conditions split
//! the mask; each region is guarded by `brif any(region mask)` so a region no lane takes
//! is skipped (paper 002's runtime uniformity check), and the mask after the construct
//! is recomputed from the mask before it and the mask slots ([`super::mask`]).

use super::func::{FnLower, Val};
use super::mask::{has_break, has_continue, has_nested_return, Flow, FlowKind};
use super::place::Place;
use super::types::num_of;
use crate::front::ast::{self, CaseLabel, Expr, ForInit, ForeachDim, Initializer, Stmt, StmtKind};
use crate::front::sema::{ConstValue, DeclRef, LocalKind, TypeKind, Variability};
use crate::ir::{
    BinaryOp, Block, FloatCC, InstData, IntCC, LaneOp, SpecialReg, TrapCode, Type, Value,
};

impl FnLower<'_, '_> {
    pub fn lower_block(&mut self, b: &ast::Block) {
        self.lower_stmts(&b.stmts);
    }

    /// Lowers a statement list, skipping what no lane reaches: after a jump, only a
    /// labelled statement (a `goto` target) is reached again.
    fn lower_stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            let dead = self.mask.is_none() || self.is_terminated();
            if dead && !matches!(s.kind, StmtKind::Labeled { .. }) {
                continue;
            }
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        self.span = s.span;
        match &s.kind {
            StmtKind::Block(b) => self.lower_block(b),
            StmtKind::Decl(d) => self.decl(d),
            StmtKind::Expr(e) => {
                self.expr(e);
            }
            // Sema has resolved every use of a local typedef.
            StmtKind::Empty | StmtKind::Typedef(_) | StmtKind::Error => {}
            StmtKind::If {
                cond, then, else_, ..
            } => self.lower_if(cond, then, else_.as_deref()),
            StmtKind::For {
                init,
                cond,
                step,
                body,
                ..
            } => {
                match init.as_deref() {
                    Some(ForInit::Decl(d)) => self.decl(d),
                    Some(ForInit::Expr(e)) => {
                        self.expr(e);
                    }
                    None => {}
                }
                self.lower_loop(cond.as_deref(), step.as_deref(), body, false);
            }
            StmtKind::While { cond, body, .. } => self.lower_loop(Some(cond), None, body, false),
            StmtKind::DoWhile { body, cond, .. } => self.lower_loop(Some(cond), None, body, true),
            StmtKind::Break => self.lower_break(),
            StmtKind::Continue => self.lower_continue(),
            StmtKind::Goto(label) => self.lower_goto(label.name),
            StmtKind::Labeled { label, body } => {
                self.lower_label(label.name);
                self.stmt(body);
            }
            StmtKind::Return(e) => self.lower_return(e.as_ref()),
            StmtKind::Switch { cond, arms } => self.lower_switch(cond, arms),
            StmtKind::Foreach { dims, body, tiled } => self.lower_foreach(dims, body, *tiled),
            StmtKind::ForeachActive { body, .. } => self.lower_foreach_active(s, body),
            StmtKind::ForeachUnique { expr, body, .. } => self.lower_foreach_unique(s, expr, body),
            StmtKind::Unmasked(b) => self.lower_unmasked(b),
            StmtKind::Launch(l) => self.lower_launch(l),
            // Every launch ran to completion at its `launch` statement (see launch.rs).
            StmtKind::Sync => {}
            StmtKind::Delete { ptr, .. } => self.lower_delete(ptr),
        }
    }

    /// Ends a region: falls through to `target` unless it already jumped away.
    /// Whether `target` was reached from here.
    fn end_region(&mut self, target: Block) -> bool {
        if self.is_terminated() {
            return false;
        }
        self.jump(target);
        true
    }

    /// Continues at a join block with the mask recomputed from `base`; a join nothing
    /// reaches gets a `trap unreachable` and no mask.
    fn enter_join(&mut self, join: Block, reached: bool, base: Value, epoch: u32) {
        self.switch_to(join);
        if reached {
            let m = self.recompute(base, epoch);
            self.mask = Some(m);
            let top = self.flows.is_empty() && self.varying_depth == 0;
            if epoch != self.epoch && top && self.func_live.is_some() {
                // Every lane may have returned: leave now (a recursive call with an
                // empty mask would never end).
                let go = self.new_block();
                let any = self.any(m);
                let exit = self.exit_block;
                self.brif(any, go, exit);
                self.switch_to(go);
            }
        } else {
            self.ins(InstData::Trap {
                code: TrapCode::Unreachable,
            });
            self.mask = None;
        }
    }

    /// Lowers `s` as a region running under mask `m`.
    fn region(&mut self, m: Value, s: &Stmt, varying: bool) {
        self.mask = Some(m);
        self.varying_depth += varying as u32;
        self.stmt(s);
        self.varying_depth -= varying as u32;
    }

    // ------------------------------------------------------------ if

    fn lower_if(&mut self, cond: &Expr, then: &Stmt, else_: Option<&Stmt>) {
        let c = self.scalar(cond);
        let base = self.cur_mask();
        let epoch = self.epoch;
        let then_b = self.new_block();
        let join = self.new_block();
        if !self.ty(c).varying {
            let else_b = else_.map(|_| self.new_block());
            self.brif(c, then_b, else_b.unwrap_or(join));
            self.switch_to(then_b);
            self.region(base, then, false);
            let mut reached = self.end_region(join);
            if let (Some(eb), Some(es)) = (else_b, else_) {
                self.switch_to(eb);
                self.region(base, es, false);
                reached |= self.end_region(join);
            } else {
                reached = true;
            }
            self.enter_join(join, reached, base, epoch);
            return;
        }
        // Varying: each side under its own mask, skipped when that mask is empty.
        let tm = self.and(base, c);
        let nc = self.not(c);
        let em = self.and(base, nc);
        let check_else = self.new_block();
        let any_t = self.any(tm);
        self.brif(any_t, then_b, check_else);
        self.switch_to(then_b);
        self.region(tm, then, true);
        self.end_region(check_else);
        self.switch_to(check_else);
        if let Some(es) = else_ {
            let else_b = self.new_block();
            let any_e = self.any(em);
            self.brif(any_e, else_b, join);
            self.switch_to(else_b);
            self.region(em, es, true);
            self.end_region(join);
        } else {
            self.jump(join);
        }
        self.enter_join(join, true, base, epoch);
    }

    // ------------------------------------------------------------ loops

    /// `for`/`while` (`do_while` false: test first) and `do ... while`.
    fn lower_loop(
        &mut self,
        cond: Option<&Expr>,
        step: Option<&Expr>,
        body: &Stmt,
        do_while: bool,
    ) {
        let entry = self.cur_mask();
        let epoch0 = self.epoch;
        let cond_varying = cond.is_some_and(|c| {
            self.cx
                .types
                .is_varying(self.cx.checked.converted_type(c.id))
        });
        let need_live = cond_varying || has_break(body) || has_nested_return(body, false);
        let live = need_live.then(|| {
            let s = self.mask_slot();
            self.store_mask(s, entry);
            s
        });
        let continued = has_continue(body).then(|| self.mask_slot());
        // Whether the mask can be empty at the test, so that the loop must stop when no
        // lane is left: its own `live` lanes may all break, lanes may return, and inside
        // another loop, a switch or a varying region every lane may already have left
        // by `continue`/`break`/`return` (a uniform loop run with no lane on would never
        // end, its uniform updates being skipped).
        let may_shrink = live.is_some()
            || self.func_live.is_some()
            || !self.flows.is_empty()
            || self.varying_depth > 0;
        let body_b = self.new_block();
        let cont = self.new_block();
        let header = if do_while { cont } else { self.new_block() };
        let exit = self.new_block();
        let mut flow = Flow::new(FlowKind::Loop, self.varying_depth + cond_varying as u32);
        flow.live = live;
        flow.continued = continued;
        flow.break_block = Some(exit);
        flow.cont_block = Some(cont);
        self.flows.push(flow);
        self.jump(if do_while { body_b } else { header });

        // The test: at the top (for/while) or in the continue block (do).
        self.switch_to(header);
        if do_while {
            self.span = cond.map_or(body.span, |c| c.span);
        }
        let m = self.loop_mask(entry, live);
        self.mask = Some(m);
        let active = self.loop_test(cond, m, live, may_shrink, body_b, exit);

        // The body.
        self.switch_to(body_b);
        let bm = if do_while {
            self.loop_mask(entry, live)
        } else {
            active
        };
        if let Some(s) = continued {
            let off = self.all_off();
            self.store_mask(s, off);
        }
        let depth = self.varying_depth;
        self.varying_depth = depth + cond_varying as u32;
        self.mask = Some(bm);
        self.stmt(body);
        self.varying_depth = depth;
        self.end_region(cont);

        if !do_while {
            // The step, with the lanes that continued back on.
            self.switch_to(cont);
            let m = self.loop_mask(entry, live);
            self.mask = Some(m);
            if let Some(st) = step {
                self.span = st.span;
                self.expr(st);
            }
            self.jump(header);
        }
        self.flows.pop();
        let reached = cond.is_some() || may_shrink || has_break(body);
        self.enter_join(exit, reached, entry, epoch0);
    }

    /// The lanes of a loop still iterating: `entry & live & func_live`.
    fn loop_mask(&mut self, entry: Value, live: Option<crate::ir::StackSlot>) -> Value {
        let mut m = entry;
        if let Some(s) = live {
            let l = self.load_mask(s);
            m = self.and(m, l);
        }
        if let Some(s) = self.func_live {
            let l = self.load_mask(s);
            m = self.and(m, l);
        }
        m
    }

    /// Evaluates the loop condition under `m` and branches to `body` or `exit`; the mask
    /// of the lanes that go on.
    fn loop_test(
        &mut self,
        cond: Option<&Expr>,
        m: Value,
        live: Option<crate::ir::StackSlot>,
        may_shrink: bool,
        body: Block,
        exit: Block,
    ) -> Value {
        if may_shrink {
            let test = self.new_block();
            let any = self.any(m);
            self.brif(any, test, exit);
            self.switch_to(test);
        }
        let Some(cond) = cond else {
            self.jump(body);
            return m;
        };
        let c = self.scalar(cond);
        if !self.ty(c).varying {
            self.brif(c, body, exit);
            return m;
        }
        let active = self.and(m, c);
        if let Some(s) = live {
            self.store_mask(s, active);
        }
        let any = self.any(active);
        self.brif(any, body, exit);
        active
    }

    // ------------------------------------------------------------ return

    fn lower_return(&mut self, e: Option<&Expr>) {
        if let Some(e) = e {
            let v = match self.ret_ref {
                true => Val::S(self.reference_addr(e)),
                false => self.rvalue(e),
            };
            match (self.sret, v) {
                (Some(p), Val::Mem(src)) => {
                    let dst = Place {
                        addr: p,
                        ty: self.ret_ty,
                        space: crate::ir::Space::Generic,
                        soa: None,
                    };
                    let m = self.cur_mask();
                    self.copy(dst, src, m);
                }
                (None, Val::S(v)) => self.store_return(v),
                _ => {}
            }
        }
        self.lower_return_jump();
    }

    // ------------------------------------------------------------ switch

    fn lower_switch(&mut self, cond: &Expr, arms: &[ast::SwitchArm]) {
        let v = self.scalar(cond);
        let entry = self.cur_mask();
        let epoch0 = self.epoch;
        let varying = self.ty(v).varying;
        let any_break = arms.iter().flat_map(|a| a.body.iter()).any(has_break);
        let live = (varying || any_break).then(|| {
            let s = self.mask_slot();
            self.store_mask(s, entry);
            s
        });
        let exit = self.new_block();
        let mut flow = Flow::new(
            FlowKind::Switch,
            if varying {
                u32::MAX
            } else {
                self.varying_depth
            },
        );
        flow.live = live;
        flow.break_block = Some(exit);
        self.flows.push(flow);
        let vt = self.ty(v).to_uniform();
        let labels: Vec<Vec<Option<i64>>> = arms
            .iter()
            .map(|a| {
                a.labels
                    .iter()
                    .map(|l| match l {
                        CaseLabel::Case(e) => Some(
                            self.cx
                                .checked
                                .const_value(e.id)
                                .and_then(ConstValue::as_int)
                                .unwrap_or(0) as i64,
                        ),
                        CaseLabel::Default(_) => None,
                    })
                    .collect()
            })
            .collect();
        if varying {
            self.varying_switch(v, vt, entry, epoch0, arms, &labels, exit);
        } else {
            self.uniform_switch(v, vt, entry, epoch0, arms, &labels, exit);
        }
        self.flows.pop();
        self.enter_join(exit, true, entry, epoch0);
    }

    #[allow(clippy::too_many_arguments)]
    fn uniform_switch(
        &mut self,
        v: Value,
        vt: Type,
        entry: Value,
        epoch0: u32,
        arms: &[ast::SwitchArm],
        labels: &[Vec<Option<i64>>],
        exit: Block,
    ) {
        let blocks: Vec<Block> = arms.iter().map(|_| self.new_block()).collect();
        let mut default = exit;
        for (k, ls) in labels.iter().enumerate() {
            for l in ls {
                match l {
                    Some(c) => {
                        let cv = self.iconst(vt, *c);
                        let eq = self.icmp(IntCC::Eq, v, cv);
                        let next = self.new_block();
                        self.brif(eq, blocks[k], next);
                        self.switch_to(next);
                    }
                    None => default = blocks[k],
                }
            }
        }
        self.jump(default);
        for (k, arm) in arms.iter().enumerate() {
            self.switch_to(blocks[k]);
            self.mask = Some(self.recompute(entry, epoch0));
            self.lower_stmts(&arm.body);
            let next = blocks.get(k + 1).copied().unwrap_or(exit);
            self.end_region(next);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn varying_switch(
        &mut self,
        v: Value,
        vt: Type,
        entry: Value,
        epoch0: u32,
        arms: &[ast::SwitchArm],
        labels: &[Vec<Option<i64>>],
        exit: Block,
    ) {
        // The lanes each arm's labels select.
        let mut any_case = self.all_off();
        let mut matches: Vec<Option<Value>> = Vec::new();
        for ls in labels {
            let mut m: Option<Value> = None;
            for c in ls.iter().flatten() {
                let cv = self.iconst(vt, *c);
                let eq = self.icmp(IntCC::Eq, v, cv);
                any_case = self.bin(BinaryOp::Bor, any_case, eq);
                m = Some(match m {
                    Some(m) => self.bin(BinaryOp::Bor, m, eq),
                    None => eq,
                });
            }
            matches.push(m);
        }
        let not_any = self.not(any_case);
        let default = self.and(entry, not_any);
        // Arm k runs for the lanes selected by arms 0..=k that have not left by `break`.
        let mut union = self.all_off();
        for (k, arm) in arms.iter().enumerate() {
            let mut mk = matches[k].map(|m| self.and(entry, m));
            if labels[k].iter().any(Option::is_none) {
                mk = Some(match mk {
                    Some(m) => self.bin(BinaryOp::Bor, m, default),
                    None => default,
                });
            }
            if let Some(mk) = mk {
                union = self.bin(BinaryOp::Bor, union, mk);
            }
            let enter = self.recompute(union, epoch0);
            let arm_b = self.new_block();
            let next = self.new_block();
            let any = self.any(enter);
            self.brif(any, arm_b, next);
            self.switch_to(arm_b);
            self.mask = Some(enter);
            self.varying_depth += 1;
            self.lower_stmts(&arm.body);
            self.varying_depth -= 1;
            self.end_region(next);
            self.switch_to(next);
            self.mask = Some(entry);
        }
        self.jump(exit);
    }

    // ------------------------------------------------------------ foreach

    /// `foreach`: outer dimensions are uniform loops; the innermost runs full-gang
    /// passes over `[a, a + k*programCount)` with `i = base + programIndex`, then one
    /// masked remainder pass. `foreach_tiled` with two or more dimensions runs a pass
    /// per tile instead ([`tile_spans`]). Each pass starts with every lane that has a
    /// point (whatever the mask before the `foreach`).
    fn lower_foreach(&mut self, dims: &[ForeachDim], body: &Stmt, tiled: bool) {
        let entry = self.cur_mask();
        let epoch0 = self.epoch;
        let mut bounds = Vec::new();
        for d in dims {
            let a = self.scalar(&d.start);
            let b = self.scalar(&d.end);
            let local = self.cx.checked.foreach_dim_local(d);
            bounds.push((a, b, local));
        }
        if tiled && dims.len() > 1 {
            let spans = tile_spans(dims.len(), self.lanes() as i64);
            self.foreach_tiles(&bounds, &spans, &mut Vec::new(), body);
        } else {
            self.foreach_dim(&bounds, body);
        }
        self.enter_join_after(entry, epoch0);
    }

    /// The tiles of `foreach_tiled`: a uniform loop per dimension over the corners of
    /// the tiles (dimension `j` steps by `spans[j]`, outermost first; `corners` holds
    /// the enclosing loops' counters), and at the innermost one pass over a tile. Lane
    /// `L` takes the point at offset `L` of the tile, the last dimension fastest; lanes
    /// whose point is outside the domain (or that the tile does not cover) are off.
    fn foreach_tiles(
        &mut self,
        dims: &[(Value, Value, Option<crate::front::sema::LocalId>)],
        spans: &[i64],
        corners: &mut Vec<Value>,
        body: &Stmt,
    ) {
        let k = corners.len();
        let ctr = self.new_slot(4, 4);
        self.store_counter(ctr, dims[k].0);
        let header = self.new_block();
        let body_b = self.new_block();
        let step_b = self.new_block();
        let exit = self.new_block();
        self.jump(header);
        self.switch_to(header);
        let t = self.load_counter(ctr);
        let go = self.icmp(IntCC::Slt, t, dims[k].1);
        self.brif(go, body_b, exit);
        self.switch_to(body_b);
        corners.push(t);
        if k + 1 < dims.len() {
            self.foreach_tiles(dims, spans, corners, body);
            if !self.is_terminated() {
                self.jump(step_b);
            }
        } else {
            let lane = self.special(SpecialReg::LaneIndex);
            let covered: i64 = spans.iter().product();
            let mut mask = None;
            if covered < self.lanes() as i64 {
                let c = self.iconst(Type::I32, covered);
                mask = Some(self.icmp(IntCC::Slt, lane, c));
            }
            let mut stride = 1;
            let mut idxs = vec![lane; dims.len()];
            for j in (0..dims.len()).rev() {
                let st = self.iconst(Type::I32, stride);
                let sp = self.iconst(Type::I32, spans[j]);
                let q = self.bin(BinaryOp::Udiv, lane, st);
                let off = self.bin(BinaryOp::Urem, q, sp);
                let idx = self.bin(BinaryOp::Iadd, corners[j], off);
                let inside = self.icmp(IntCC::Slt, idx, dims[j].1);
                mask = Some(match mask {
                    Some(m) => self.and(m, inside),
                    None => inside,
                });
                idxs[j] = idx;
                stride *= spans[j];
            }
            for (j, &idx) in idxs.iter().enumerate() {
                self.set_index_var(dims[j].2, idx);
            }
            let mask = mask.expect("a tile has dimensions");
            self.foreach_body(mask, body, step_b);
        }
        corners.pop();
        self.switch_to(step_b);
        let t = self.load_counter(ctr);
        let sp = self.iconst(Type::I32, spans[k]);
        let n = self.bin(BinaryOp::Iadd, t, sp);
        self.store_counter(ctr, n);
        self.jump(header);
        self.switch_to(exit);
    }

    fn enter_join_after(&mut self, entry: Value, epoch0: u32) {
        let join = self.new_block();
        let reached = self.end_region(join);
        self.enter_join(join, reached, entry, epoch0);
    }

    /// Stores an `i32` index (uniform or varying) into a foreach variable (splatting it
    /// if the variable is varying).
    fn set_index_var(&mut self, local: Option<crate::front::sema::LocalId>, v: Value) {
        let Some(l) = local else { return };
        let ty = self.cx.checked.locals[l].ty;
        let from = num_of(
            &self.cx.types,
            self.cx.types.prim(
                crate::front::sema::Prim::Int32,
                crate::front::sema::Variability::Uniform,
            ),
        );
        let to = num_of(&self.cx.types, ty);
        let v = match (from, to) {
            (Some(f), Some(t)) => self.convert_num(v, f, t),
            _ => v,
        };
        let p = self.local_place(l);
        let all = self.all_on();
        self.store_masked(p, Val::S(v), all);
    }

    fn foreach_dim(
        &mut self,
        dims: &[(Value, Value, Option<crate::front::sema::LocalId>)],
        body: &Stmt,
    ) {
        let (a, b, local) = dims[0];
        if dims.len() > 1 {
            // An outer dimension: a uniform counting loop.
            let ctr = self.new_slot(4, 4);
            self.store_counter(ctr, a);
            let header = self.new_block();
            let body_b = self.new_block();
            let exit = self.new_block();
            self.jump(header);
            self.switch_to(header);
            let i = self.load_counter(ctr);
            let go = self.icmp(IntCC::Slt, i, b);
            self.brif(go, body_b, exit);
            self.switch_to(body_b);
            self.set_index_var(local, i);
            self.foreach_dim(&dims[1..], body);
            if !self.is_terminated() {
                let one = self.iconst(Type::I32, 1);
                let n = self.bin(BinaryOp::Iadd, i, one);
                self.store_counter(ctr, n);
                self.jump(header);
            }
            self.switch_to(exit);
            return;
        }
        // The innermost dimension: full passes, then the remainder.
        let lanes = self.lanes() as i64;
        let n = self.bin(BinaryOp::Isub, b, a);
        let nl = self.iconst(Type::I32, lanes);
        let k = self.bin(BinaryOp::Sdiv, n, nl);
        let full = self.bin(BinaryOp::Imul, k, nl);
        let full_end = self.bin(BinaryOp::Iadd, a, full);
        let ctr = self.new_slot(4, 4);
        self.store_counter(ctr, a);
        let header = self.new_block();
        let full_b = self.new_block();
        let full_cont = self.new_block();
        let rem_check = self.new_block();
        let rem_b = self.new_block();
        let done = self.new_block();
        self.jump(header);
        self.switch_to(header);
        let i0 = self.load_counter(ctr);
        let go = self.icmp(IntCC::Slt, i0, full_end);
        self.brif(go, full_b, rem_check);

        self.switch_to(full_b);
        let all = self.all_on();
        self.foreach_pass(i0, all, local, body, full_cont);
        self.switch_to(full_cont);
        let i0 = self.load_counter(ctr);
        let next = self.bin(BinaryOp::Iadd, i0, nl);
        self.store_counter(ctr, next);
        self.jump(header);

        self.switch_to(rem_check);
        let rem = self.icmp(IntCC::Slt, full_end, b);
        self.brif(rem, rem_b, done);
        self.switch_to(rem_b);
        let lane = self.special(SpecialReg::LaneIndex);
        let idx = self.bin(BinaryOp::Iadd, full_end, lane);
        let m = self.icmp(IntCC::Slt, idx, b);
        self.foreach_pass(full_end, m, local, body, done);
        self.switch_to(done);
    }

    /// A uniform `i32` loop counter in a private slot.
    fn store_counter(&mut self, slot: crate::ir::StackSlot, v: Value) {
        let addr = self.stack_addr(slot);
        self.ins(InstData::Store {
            space: crate::ir::Space::Private,
            addr,
            value: v,
            mask: None,
        });
    }

    fn load_counter(&mut self, slot: crate::ir::StackSlot) -> Value {
        let addr = self.stack_addr(slot);
        self.load_raw(Type::I32, crate::ir::Space::Private, addr, None)
    }

    /// One pass of the innermost `foreach` dimension starting at `i0` under `mask`;
    /// continues at `next`.
    fn foreach_pass(
        &mut self,
        i0: Value,
        mask: Value,
        local: Option<crate::front::sema::LocalId>,
        body: &Stmt,
        next: Block,
    ) {
        let lane = self.special(SpecialReg::LaneIndex);
        let idx = self.bin(BinaryOp::Iadd, i0, lane);
        self.set_index_var(local, idx);
        self.foreach_body(mask, body, next);
    }

    /// The body of one `foreach` pass under `mask` (the iteration variables set);
    /// continues at `next`.
    fn foreach_body(&mut self, mask: Value, body: &Stmt, next: Block) {
        let continued = has_continue(body).then(|| {
            let s = self.mask_slot();
            let off = self.all_off();
            self.store_mask(s, off);
            s
        });
        let mut flow = Flow::new(FlowKind::Loop, self.varying_depth);
        flow.continued = continued;
        flow.cont_block = Some(next);
        self.flows.push(flow);
        self.mask = Some(mask);
        self.stmt(body);
        self.flows.pop();
        self.end_region(next);
    }

    /// `foreach_active (i)`: one iteration per active lane, with only that lane on.
    fn lower_foreach_active(&mut self, s: &Stmt, body: &Stmt) {
        let local = self.cx.checked.stmt_local(s);
        self.lane_loop(body, |fl, r| {
            let l = fl.lane(LaneOp::FirstLane, &[r]);
            let lane = fl.special(SpecialReg::LaneIndex);
            let ls = fl.splat(l);
            let m = fl.icmp(IntCC::Eq, lane, ls);
            if let Some(local) = local {
                let p = fl.local_place(local);
                let ty = fl.cx.checked.locals[local].ty;
                let to = num_of(&fl.cx.types, ty).unwrap_or(super::types::Num::Int {
                    bits: 32,
                    signed: true,
                });
                let v = fl.convert_num(
                    l,
                    super::types::Num::Int {
                        bits: 32,
                        signed: true,
                    },
                    to,
                );
                fl.store_masked(p, Val::S(v), m);
            }
            m
        });
    }

    /// `foreach_unique (v in e)`: one iteration per distinct value of `e` among the
    /// active lanes, with the lanes holding it on.
    fn lower_foreach_unique(&mut self, s: &Stmt, e: &Expr, body: &Stmt) {
        let local = self.cx.checked.stmt_local(s);
        let v = self.scalar(e);
        let v = self.splat(v);
        let is_float = self.ty(v).scalar.is_ieee();
        self.lane_loop(body, |fl, r| {
            let l = fl.lane(LaneOp::FirstLane, &[r]);
            let x = fl.lane(LaneOp::Extract, &[v, l]);
            let xs = fl.splat(x);
            let eq = if is_float {
                fl.fcmp(FloatCC::Eq, v, xs)
            } else {
                fl.icmp(IntCC::Eq, v, xs)
            };
            // The first lane itself always belongs (a NaN is not equal to itself).
            let lane = fl.special(SpecialReg::LaneIndex);
            let ls = fl.splat(l);
            let me = fl.icmp(IntCC::Eq, lane, ls);
            let sel = fl.bin(BinaryOp::Bor, eq, me);
            let m = fl.and(r, sel);
            if let Some(local) = local {
                let p = fl.local_place(local);
                fl.store_masked(p, Val::S(x), m);
            }
            m
        });
    }

    /// A loop over subsets of the current mask: `pick(remaining)` returns the lanes of
    /// one iteration (and sets the iteration variable); they are removed from the
    /// remaining lanes before the body runs, so `continue` just goes to the next one.
    fn lane_loop(&mut self, body: &Stmt, pick: impl FnOnce(&mut Self, Value) -> Value) {
        let entry = self.cur_mask();
        let epoch0 = self.epoch;
        let rem = self.mask_slot();
        self.store_mask(rem, entry);
        let header = self.new_block();
        let body_b = self.new_block();
        let exit = self.new_block();
        self.jump(header);
        self.switch_to(header);
        let r = self.load_mask(rem);
        let any = self.any(r);
        self.brif(any, body_b, exit);
        self.switch_to(body_b);
        let m = pick(self, r);
        let nm = self.not(m);
        let left = self.and(r, nm);
        self.store_mask(rem, left);
        let continued = has_continue(body).then(|| {
            let s = self.mask_slot();
            let off = self.all_off();
            self.store_mask(s, off);
            s
        });
        let mut flow = Flow::new(FlowKind::Loop, self.varying_depth + 1);
        flow.continued = continued;
        flow.cont_block = Some(header);
        self.flows.push(flow);
        self.region(m, body, true);
        self.flows.pop();
        self.end_region(header);
        self.enter_join(exit, true, entry, epoch0);
    }

    /// `unmasked { }`: every lane on inside; the mask before it afterwards.
    fn lower_unmasked(&mut self, b: &ast::Block) {
        let entry = self.cur_mask();
        let epoch0 = self.epoch;
        self.flows
            .push(Flow::new(FlowKind::Unmasked, self.varying_depth));
        let all = self.all_on();
        self.mask = Some(all);
        self.lower_block(b);
        self.flows.pop();
        self.enter_join_after(entry, epoch0);
    }

    // ------------------------------------------------------------ declarations

    fn decl(&mut self, d: &ast::Decl) {
        for dd in &d.declarators {
            self.span = dd.span;
            let Some(DeclRef::Local(l)) = self.cx.checked.decl(dd) else {
                continue;
            };
            let info = &self.cx.checked.locals[l];
            match info.kind {
                LocalKind::Static | LocalKind::Shared => {
                    super::globals::static_local(self.cx, l, dd.init.as_deref());
                }
                _ if info.by_ref => {
                    if let Some(Initializer::Expr(e)) = dd.init.as_deref() {
                        let addr = self.reference_addr(e);
                        self.bind_reference(l, addr);
                    }
                }
                _ => {
                    let p = self.local_place(l);
                    if let Some(init) = dd.init.as_deref() {
                        // A fresh variable: its initializer fills every lane (as in ISPC),
                        // so lanes turned on later by `unmasked` see it too.
                        let ty = self.cx.checked.locals[l].ty;
                        let all = self.all_on();
                        self.init_place(p, ty, init, false, all);
                    }
                }
            }
        }
    }

    /// Stores an initializer into a place; a brace list zero-fills the object first.
    pub(super) fn init_place(
        &mut self,
        p: Place,
        ty: crate::front::sema::TypeId,
        init: &Initializer,
        zeroed: bool,
        mask: Value,
    ) {
        match init {
            Initializer::Expr(e) => {
                let v = self.rvalue(e);
                self.store_masked(Place { ty, ..p }, v, mask);
            }
            Initializer::List(items, _) => {
                let p = Place { ty, ..p };
                if !zeroed {
                    self.zero_fill(p, mask);
                }
                match self.cx.types.kind(ty) {
                    TypeKind::Struct(sid) => {
                        let var = self.cx.types.var(ty);
                        let offs = self.cx.types.structs[sid].layout(var).offsets.clone();
                        for (i, item) in items.iter().enumerate() {
                            let Some(&off) = offs.get(i) else { break };
                            let fty = self.cx.types.member_type(ty, i);
                            let fp = self.offset(p, off, fty);
                            self.init_place(fp, fty, item, true, mask);
                        }
                    }
                    TypeKind::Array(elem, _) => {
                        let size = self.cx.types.layout(elem, self.cx.checked.target).size;
                        for (i, item) in items.iter().enumerate() {
                            let ep = self.offset(p, i as u32 * size, elem);
                            self.init_place(ep, elem, item, true, mask);
                        }
                    }
                    TypeKind::Soa(sid, width) => {
                        let target = self.cx.checked.target;
                        let offs = self.cx.types.soa_layout(sid, width, target).offsets;
                        for (i, item) in items.iter().enumerate() {
                            let Some(&off) = offs.get(i) else { break };
                            let fty = self.types().soa_member_type(ty, i, target);
                            let fp = self.offset(p, off, fty);
                            self.init_place(fp, fty, item, true, mask);
                        }
                    }
                    TypeKind::Vector(_, n) => {
                        for (i, item) in items.iter().take(n as usize).enumerate() {
                            let ep = self.vec_elem_place(p, i as u32);
                            let ety = ep.ty;
                            self.init_place(ep, ety, item, true, mask);
                        }
                    }
                    // A varying scalar from one value per program instance: lane `i`
                    // of the object is the uniform element at `i * sizeof(element)`.
                    _ if items.len() > 1 && self.cx.types.is_varying(ty) => {
                        let lane_ty = self.types().with_var(ty, Variability::Uniform);
                        let size = self.cx.types.layout(lane_ty, self.cx.checked.target).size;
                        for (i, item) in items.iter().enumerate() {
                            let lp = self.offset(p, i as u32 * size, lane_ty);
                            self.init_place(lp, lane_ty, item, true, mask);
                        }
                    }
                    _ => {
                        if let Some(first) = items.first() {
                            self.init_place(p, ty, first, true, mask);
                        }
                    }
                }
            }
        }
    }
}

/// The extent of a `foreach_tiled` tile in each of `dims` dimensions (outermost first)
/// for a gang of `lanes`, as ISPC chooses them: walking from the outermost dimension,
/// one gets 1 when the dimensions after it are at least log2 of the lanes still to
/// share out, 4 when it is the second-to-last and 16 or more lanes remain (4 x 4 tiles
/// in two dimensions at 16 lanes), else 2; the last gets what remains. The number of
/// passes, which a program can count, depends on it.
fn tile_spans(dims: usize, lanes: i64) -> Vec<i64> {
    let mut spans = Vec::with_capacity(dims);
    let mut left = lanes.max(1);
    for d in 0..dims {
        let after = (dims - 1 - d) as i64;
        let span = if after == 0 {
            left
        } else if after >= i64::from(left.ilog2()) {
            1
        } else if after == 1 && left >= 16 {
            4
        } else {
            2
        };
        spans.push(span);
        left /= span;
    }
    spans
}

#[cfg(test)]
mod tile_tests {
    use super::tile_spans;

    #[test]
    fn tiles_cover_the_gang_and_match_ispc_passes() {
        assert_eq!(tile_spans(2, 16), [4, 4]);
        assert_eq!(tile_spans(2, 4), [2, 2]);
        assert_eq!(tile_spans(2, 8), [2, 4]);
        assert_eq!(tile_spans(2, 32), [4, 8]);
        assert_eq!(tile_spans(3, 4), [1, 2, 2]);
        assert_eq!(tile_spans(3, 8), [2, 2, 2]);
        assert_eq!(tile_spans(3, 16), [2, 2, 4]);
        assert_eq!(tile_spans(3, 32), [2, 4, 4]);
        assert_eq!(tile_spans(3, 64), [2, 4, 8]);
        assert_eq!(tile_spans(1, 16), [16]);
        // A gang that is not a power of two: the tile may leave lanes out.
        assert_eq!(tile_spans(2, 7), [2, 3]);
        for lanes in 1..=64 {
            for dims in 1..=4 {
                let covered: i64 = tile_spans(dims, lanes).iter().product();
                assert!(covered <= lanes && covered * 2 > lanes, "{dims} {lanes}");
            }
        }
    }
}
