//! Statement generation: declarations, assignments and stores, nested divergent
//! control flow (`if`/`cif`, bounded `for`/`while`/`do`, `switch`, `break`,
//! `continue`, `return`), the SPMD loops (`foreach`, `foreach_active`,
//! `foreach_unique`), local arrays, structs and pointers, atomics and calls of
//! generated `void` functions.
//!
//! Every loop is bounded by a uniform counter the body cannot change, incremented
//! before anything in the body can `continue`, so every program terminates. Stores
//! go only to the storing lane's own elements or to uniform locations with uniform
//! values, so no store races with another.

use super::model::*;
use super::scope::{Array, Ctx};
use super::Gen;

impl Gen {
    /// A block of about `n` statements in a new scope. It stops after a `break`,
    /// `continue` or `return`: what follows would be dead.
    pub fn block(&mut self, ctx: Ctx, n: u32) -> Vec<Stmt> {
        self.env.push();
        let stmts = self.statements(ctx, n);
        self.env.pop();
        stmts
    }

    /// [`Gen::block`] in the current scope.
    pub fn statements(&mut self, ctx: Ctx, n: u32) -> Vec<Stmt> {
        let mut stmts = Vec::new();
        for _ in 0..n {
            let s = self.stmt(ctx);
            let ends = matches!(s, Stmt::Break | Stmt::Continue | Stmt::Return(_));
            stmts.push(s);
            stmts.append(&mut self.pending);
            if ends {
                break;
            }
        }
        stmts
    }

    fn expr_in(&mut self, ctx: Ctx, want: Ty) -> Expr {
        self.ctx_full_gang = ctx.full_gang;
        self.active_lane = ctx.active_lane;
        let depth = self.expr_depth;
        self.expr(want, depth)
    }

    /// A random basic type, `int32` and `float` the most often.
    pub fn scalar(&mut self) -> Scalar {
        let weights = [6, 3, 3, 3, 3, 12, 4, 4, 4, 8, 5];
        Scalar::ALL[self.rng.weighted(&weights)]
    }

    fn stmt(&mut self, ctx: Ctx) -> Stmt {
        let deep = ctx.depth >= self.max_depth;
        let nest = if deep { 0 } else { 1 };
        let w = |on: bool, weight: u32| if on { weight } else { 0 };
        let weights = [
            22,                                     // 0 decl
            28,                                     // 1 assign
            8,                                      // 2 store
            14 * nest,                              // 3 if
            5 * nest,                               // 4 for
            4 * nest,                               // 5 while / do
            w(self.may_foreach(ctx), 4 * nest),     // 6 foreach
            4 * nest,                               // 7 switch
            w(ctx.can_break, 3),                    // 8 break
            w(ctx.can_continue, 3),                 // 9 continue
            w(ctx.can_return && ctx.varying_cf, 2), // 10 return
            w(self.in_entry, 3),                    // 11 atomic
            w(!self.void_signatures.is_empty(), 3), // 12 call
            4,                                      // 13 array
            3,                                      // 14 struct
            w(!ctx.in_foreach, 2 * nest),           // 15 foreach_active
            w(!ctx.in_foreach, 2 * nest),           // 16 foreach_unique
        ];
        match self.rng.weighted(&weights) {
            0 => self.decl(ctx),
            1 => self.assign(ctx).unwrap_or_else(|| self.decl(ctx)),
            2 => self.store(ctx).unwrap_or_else(|| self.decl(ctx)),
            3 => self.if_stmt(ctx),
            4 => self.for_stmt(ctx),
            5 => self.while_stmt(ctx),
            6 => self.foreach(ctx),
            7 => self.switch(ctx),
            8 => self.exit(ctx, Stmt::Break),
            9 => self.exit(ctx, Stmt::Continue),
            10 => self.return_stmt(ctx),
            11 => self.atomic(ctx),
            12 => self.call_void(ctx).unwrap_or_else(|| self.decl(ctx)),
            13 => self.array_decl(ctx),
            14 => self.struct_decl(ctx),
            15 => self.foreach_active(ctx),
            _ => self.foreach_unique(ctx),
        }
    }

    fn decl(&mut self, ctx: Ctx) -> Stmt {
        let scalar = self.scalar();
        let ty = Ty {
            scalar,
            uniform: self.rng.chance(35),
        };
        let init = self.expr_in(ctx, ty);
        let name = self.fresh("v");
        self.env.add_var(name.clone(), ty, true);
        Stmt::Decl { name, ty, init }
    }

    /// Whether a uniform location may be written here: not from an unordered
    /// iteration (unless commutatively), and under varying control flow only now
    /// and then (it is defined, W0004, but makes the program depend on which paths
    /// any lane took, so it should not dominate).
    fn may_write_uniform(&mut self, ctx: Ctx) -> bool {
        !ctx.order_free && (!ctx.varying_cf || self.rng.chance(30))
    }

    fn assign(&mut self, ctx: Ctx) -> Option<Stmt> {
        let may_uniform = self.may_write_uniform(ctx);
        let places: Vec<(String, Ty)> = self
            .env
            .vars()
            .filter(|v| v.mutable)
            .filter(|v| !v.ty.uniform || may_uniform || (ctx.order_free && v.ty.scalar.is_int()))
            .map(|v| (v.name.clone(), v.ty))
            .collect();
        if places.is_empty() {
            return None;
        }
        let (place, ty) = self.rng.pick(&places).clone();
        let op = if ty.uniform && ctx.order_free {
            AssignOp::Add
        } else if ty.scalar.is_int() {
            *self.rng.pick(&[
                AssignOp::Set,
                AssignOp::Set,
                AssignOp::Add,
                AssignOp::Sub,
                AssignOp::Mul,
                AssignOp::And,
                AssignOp::Or,
                AssignOp::Xor,
            ])
        } else if ty.scalar.is_float() {
            *self
                .rng
                .pick(&[AssignOp::Set, AssignOp::Add, AssignOp::Sub, AssignOp::Mul])
        } else {
            AssignOp::Set
        };
        let value = self.expr_in(ctx, ty);
        Some(Stmt::Assign { place, op, value })
    }

    fn store(&mut self, ctx: Ctx) -> Option<Stmt> {
        let may_uniform = self.may_write_uniform(ctx);
        let arrays: Vec<Array> = self
            .env
            .arrays()
            .filter(|a| a.writable && (!a.elem.uniform || may_uniform))
            .cloned()
            .collect();
        if arrays.is_empty() {
            return None;
        }
        let a = self.rng.pick(&arrays).clone();
        // A uniform array takes a uniform index and value: one location, one value.
        let index_ty = Ty {
            scalar: Scalar::I32,
            uniform: a.elem.uniform || self.rng.chance(30),
        };
        let index = self.expr_in(ctx, index_ty);
        let value = self.expr_in(ctx, a.elem);
        Some(Stmt::Store {
            base: a.name,
            len: a.len,
            index,
            value,
        })
    }

    /// A condition: varying most of the time, so that control flow diverges.
    fn condition(&mut self, ctx: Ctx) -> Expr {
        let ty = Ty {
            scalar: Scalar::Bool,
            uniform: self.rng.chance(30),
        };
        self.expr_in(ctx, ty)
    }

    fn body_len(&mut self) -> u32 {
        self.rng.range(1, 4) as u32
    }

    fn if_stmt(&mut self, ctx: Ctx) -> Stmt {
        let cond = self.condition(ctx);
        let inner = ctx.nested(!cond.ty.uniform);
        let n = self.body_len();
        let then = self.block(inner, n);
        let els = if self.rng.chance(45) {
            let n = self.body_len();
            Some(self.block(inner, n))
        } else {
            None
        };
        Stmt::If {
            cond,
            then,
            els,
            coherent: self.rng.chance(15),
        }
    }

    /// The context of a loop body: `break` and `continue` are its own.
    fn loop_ctx(ctx: Ctx, varying: bool) -> Ctx {
        Ctx {
            can_break: true,
            can_continue: true,
            ..ctx.nested(varying)
        }
    }

    fn for_stmt(&mut self, ctx: Ctx) -> Stmt {
        let var = self.fresh("i");
        let count = self.rng.range(0, 5) as u32;
        let extra = self.rng.chance(35).then(|| self.condition(ctx));
        let varying = extra.as_ref().is_some_and(|e| !e.ty.uniform);
        self.env.push();
        self.env
            .add_var(var.clone(), Ty::uniform(Scalar::I32), false);
        let n = self.body_len();
        let body = self.statements(Self::loop_ctx(ctx, varying), n);
        self.env.pop();
        Stmt::For {
            var,
            count,
            extra,
            body,
        }
    }

    fn while_stmt(&mut self, ctx: Ctx) -> Stmt {
        let var = self.fresh("w");
        let count = self.rng.range(1, 5) as u32;
        let cond = self.condition(ctx);
        self.env.push();
        self.env
            .add_var(var.clone(), Ty::uniform(Scalar::I32), false);
        let n = self.body_len();
        let body = self.statements(Self::loop_ctx(ctx, !cond.ty.uniform), n);
        self.env.pop();
        Stmt::While {
            var,
            count,
            cond,
            body,
            do_while: self.rng.chance(40),
        }
    }

    /// The context of a `foreach`-family body.
    fn foreach_ctx(ctx: Ctx, order_free: bool) -> Ctx {
        Ctx {
            can_break: false,
            can_continue: true,
            can_return: false,
            in_foreach: true,
            order_free,
            ..ctx.nested(true)
        }
    }

    fn foreach(&mut self, ctx: Ctx) -> Stmt {
        let var = self.fresh("f");
        let start = self.rng.range(-3, 4) as i32;
        let end = start + self.rng.range(0, 40) as i32;
        self.env.push();
        self.env
            .add_var(var.clone(), Ty::varying(Scalar::I32), false);
        let n = self.body_len();
        let body = self.statements(Self::foreach_ctx(ctx, false), n);
        self.env.pop();
        Stmt::Foreach {
            var,
            start,
            end,
            body,
        }
    }

    fn foreach_active(&mut self, ctx: Ctx) -> Stmt {
        let var = "lane";
        self.env.push();
        self.env.add_var(var, Ty::uniform(Scalar::I32), false);
        let n = self.body_len();
        let inner = Ctx {
            active_lane: Some(var),
            ..Self::foreach_ctx(ctx, true)
        };
        let body = self.statements(inner, n);
        self.env.pop();
        Stmt::ForeachActive {
            var: var.to_string(),
            body,
        }
    }

    fn foreach_unique(&mut self, ctx: Ctx) -> Stmt {
        let var = self.fresh("u");
        let x = self.expr_in(ctx, Ty::varying(Scalar::I32));
        let three = Expr::lit(Literal::Int(3), Ty::uniform(Scalar::I32));
        let ty = x.ty;
        let value = Expr::new(
            ExprKind::Binary(BinOp::And, Box::new(x), Box::new(three)),
            ty,
        );
        self.env.push();
        self.env
            .add_var(var.clone(), Ty::uniform(Scalar::I32), false);
        let n = self.body_len();
        let body = self.statements(Self::foreach_ctx(ctx, true), n);
        self.env.pop();
        Stmt::ForeachUnique { var, value, body }
    }

    fn switch(&mut self, ctx: Ctx) -> Stmt {
        let scalar = *self.rng.pick(&INTS);
        let ty = Ty {
            scalar,
            uniform: self.rng.chance(30),
        };
        let value = self.expr_in(ctx, ty);
        let inner = Ctx {
            can_break: true,
            ..ctx.nested(!value.ty.uniform)
        };
        let mut labels: Vec<i32> = (0..8).collect();
        let mut arms = Vec::new();
        for _ in 0..self.rng.range(1, 4) {
            let i = self.rng.below(labels.len() as u64) as usize;
            let label = labels.remove(i);
            let n = self.body_len();
            let body = self.block(inner, n);
            arms.push(SwitchArm {
                label: Some(label),
                body,
                ends_with_break: self.rng.chance(70),
            });
        }
        if self.rng.chance(50) {
            let n = self.body_len();
            let body = self.block(inner, n);
            arms.push(SwitchArm {
                label: None,
                body,
                ends_with_break: false,
            });
        }
        Stmt::Switch { value, arms }
    }

    fn return_stmt(&mut self, ctx: Ctx) -> Stmt {
        let value = ctx.ret.map(|ty| self.expr_in(ctx, ty));
        self.exit(ctx, Stmt::Return(value))
    }

    /// A `break`, `continue` or `return`; under varying control flow, lanes may
    /// have left when later statements run.
    fn exit(&mut self, ctx: Ctx, s: Stmt) -> Stmt {
        if ctx.varying_cf {
            self.lanes_may_have_left = true;
        }
        s
    }

    /// Whether a `foreach` is defined here. It starts its passes with every lane
    /// that has a point, whatever the mask (statements.md), so one reached with no
    /// lane active runs or not depending on whether the compiler skipped the empty
    /// region around it (it does after a `continue` of every lane, not in an `if` no
    /// lane takes; `--no-skip-empty` runs both): only where the mask is surely not
    /// empty, in the entry's uniform control flow before any lane may have left.
    fn may_foreach(&self, ctx: Ctx) -> bool {
        self.in_entry && !ctx.in_foreach && !ctx.varying_cf && !self.lanes_may_have_left
    }

    fn atomic(&mut self, ctx: Ctx) -> Stmt {
        let op = *self.rng.pick(&[
            AtomicOp::Add,
            AtomicOp::Add,
            AtomicOp::Min,
            AtomicOp::Max,
            AtomicOp::Or,
            AtomicOp::Xor,
        ]);
        let ty = Ty {
            scalar: Scalar::I32,
            uniform: self.rng.chance(25),
        };
        let value = self.expr_in(ctx, ty);
        // Each slot takes one operation: `(a ^ x) + y` is not `(a + y) ^ x`, so
        // operations mixed on one slot would make the result depend on their order.
        let slot = match op {
            AtomicOp::Add => self.rng.below(4) as u32,
            AtomicOp::Min => 4,
            AtomicOp::Max => 5,
            AtomicOp::Or => 6,
            AtomicOp::Xor => 7,
        };
        Stmt::Atomic { op, slot, value }
    }

    fn call_void(&mut self, ctx: Ctx) -> Option<Stmt> {
        let (name, out, params) = self.rng.pick(&self.void_signatures).clone();
        let places: Vec<String> = self
            .env
            .vars()
            .filter(|v| {
                v.mutable
                    && v.ty == Ty::varying(out)
                    && !v.name.contains('.')
                    && !v.name.contains("->")
            })
            .map(|v| v.name.clone())
            .collect();
        if places.is_empty() {
            return None;
        }
        let place = self.rng.pick(&places).clone();
        let args = params.iter().map(|&p| self.expr_in(ctx, p)).collect();
        Some(Stmt::CallVoid { name, place, args })
    }

    fn array_decl(&mut self, ctx: Ctx) -> Stmt {
        let elem = Ty {
            scalar: self.scalar(),
            uniform: self.rng.chance(40),
        };
        let len = 1u32 << self.rng.range(1, 3);
        let init = (0..len).map(|_| self.expr_in(ctx, elem)).collect();
        let name = self.fresh("a");
        self.env.add_array(Array {
            name: name.clone(),
            elem,
            len,
            writable: true,
        });
        if self.rng.chance(40) {
            // A pointer to its second half, indexed within that half.
            let ptr = self.fresh("p");
            self.env.add_array(Array {
                name: ptr.clone(),
                elem,
                len: len / 2,
                writable: true,
            });
            self.pending.push(Stmt::PtrDecl {
                name: ptr,
                elem,
                array: name.clone(),
                offset: len / 2,
            });
        }
        Stmt::ArrayDecl {
            name,
            elem,
            len,
            init,
        }
    }

    fn struct_decl(&mut self, ctx: Ctx) -> Stmt {
        let strukt = self.rng.below(self.structs.len() as u64) as usize;
        let uniform = self.rng.chance(40);
        let members = self.structs[strukt].members.clone();
        let init = members
            .iter()
            .map(|&m| self.expr_in(ctx, Ty { scalar: m, uniform }))
            .collect();
        let name = self.fresh("s");
        let alias = self.rng.chance(40).then(|| self.fresh("ps"));
        for (i, &m) in members.iter().enumerate() {
            let ty = Ty { scalar: m, uniform };
            self.env.add_var(format!("{name}.m{i}"), ty, true);
            if let Some(a) = &alias {
                self.env.add_var(format!("{a}->m{i}"), ty, true);
            }
        }
        Stmt::StructDecl {
            name,
            strukt,
            uniform,
            init,
            alias,
        }
    }
}
