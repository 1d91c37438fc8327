//! Expression generation: a random expression of a wanted type, built only from
//! operations that are defined for every operand value (see [`super::model`]).
//!
//! A uniform type asks for uniform operands throughout; a varying one takes either.
//! Cross-lane operations are chosen only where they are defined: reductions and scans
//! over the active lanes anywhere, moves between lanes (`rotate`, `broadcast`,
//! `shift`) only where every lane of the gang exists and is on.

use super::model::*;
use super::Gen;

/// Standard-library functions of one argument on floats, computed the same on every
/// target (lang-spec/stdlib.md: defined with IEEE operations only).
const FLOAT_UNARY: [&str; 9] = [
    "abs", "floor", "ceil", "trunc", "round", "sin", "cos", "atan", "exp",
];

impl Gen {
    /// An expression of type `want` at most `depth` operators deep.
    pub fn expr(&mut self, want: Ty, depth: u32) -> Expr {
        if depth == 0 || self.rng.chance(20) {
            return self.leaf(want);
        }
        let s = want.scalar;
        let e = match s {
            Scalar::Bool => self.bool_expr(want, depth),
            s if s.is_float() => self.float_expr(want, depth),
            _ => self.int_expr(want, depth),
        };
        debug_assert!(e.ty.fits(want), "{e:?} does not fit {want:?}");
        e
    }

    /// The variability of an operand of an expression of type `want`.
    fn operand_ty(&mut self, want: Ty, scalar: Scalar) -> Ty {
        Ty {
            scalar,
            uniform: want.uniform || self.rng.chance(35),
        }
    }

    /// The type of an operation's result from its operands' types: uniform when all are.
    fn combined(scalar: Scalar, parts: &[&Expr]) -> Ty {
        Ty {
            scalar,
            uniform: parts.iter().all(|p| p.ty.uniform),
        }
    }

    /// A variable, a built-in value or a literal.
    pub fn leaf(&mut self, want: Ty) -> Expr {
        let vars: Vec<(String, Ty)> = self
            .env
            .readable(want)
            .into_iter()
            .map(|v| (v.name.clone(), v.ty))
            .collect();
        if !vars.is_empty() && self.rng.chance(70) {
            let (name, ty) = self.rng.pick(&vars).clone();
            return Expr::name(name, ty);
        }
        if want.scalar == Scalar::I32 && self.rng.chance(30) {
            let builtins: &[(&str, bool)] = &[
                ("programIndex", false),
                ("programCount", true),
                ("threadIdx.x", false),
                ("blockIdx.x", true),
                // `taskIndex` is a `uniform uint32`, as in ISPC: the cast keeps the
                // expression's `int32` arithmetic (and its overloads: `max`, `abs`).
                ("(int32)taskIndex", true),
            ];
            let usable: Vec<_> = builtins
                .iter()
                .filter(|(_, u)| *u || !want.uniform)
                .collect();
            let &&(name, uniform) = self.rng.pick(&usable);
            return Expr::name(
                name,
                Ty {
                    scalar: Scalar::I32,
                    uniform,
                },
            );
        }
        self.literal(want.scalar)
    }

    /// A uniform literal of `scalar`: mostly small values, sometimes the extremes.
    pub fn literal(&mut self, scalar: Scalar) -> Expr {
        let lit = match scalar {
            Scalar::Bool => Literal::Bool(self.rng.chance(50)),
            s if s.is_float() => Literal::Float(self.rng.range(-64, 64) as f64 / 8.0),
            s => Literal::Int(self.int_literal(s)),
        };
        Expr::lit(lit, Ty::uniform(scalar))
    }

    fn int_literal(&mut self, s: Scalar) -> i128 {
        let max = if s.is_signed() {
            (1i128 << (s.bits() - 1)) - 1
        } else {
            (1i128 << s.bits()) - 1
        };
        match self.rng.below(10) {
            0 => max,
            1 if s.is_signed() => -max,
            _ if s.is_signed() => i128::from(self.rng.range(-20, 20)),
            _ => i128::from(self.rng.range(0, 40)),
        }
    }

    fn int_expr(&mut self, want: Ty, depth: u32) -> Expr {
        let s = want.scalar;
        //            bin div shift unary cast f2i cond index call lib cross
        let weights = [30, 6, 6, 5, 8, 4, 5, 8, 5, 8, 5];
        match self.rng.weighted(&weights) {
            0 => {
                let op = *self.rng.pick(&[
                    BinOp::Add,
                    BinOp::Sub,
                    BinOp::Mul,
                    BinOp::And,
                    BinOp::Or,
                    BinOp::Xor,
                ]);
                self.binary(op, want, depth)
            }
            1 => {
                let lt = self.operand_ty(want, s);
                let rt = self.operand_ty(want, s);
                let lhs = self.expr(lt, depth - 1);
                let rhs = self.expr(rt, depth - 1);
                let ty = Self::combined(s, &[&lhs, &rhs]);
                let rem = self.rng.chance(50);
                Expr::new(
                    ExprKind::SafeDiv {
                        rem,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    },
                    ty,
                )
            }
            2 => {
                let lt = self.operand_ty(want, s);
                let ct = self.operand_ty(want, s);
                let lhs = self.expr(lt, depth - 1);
                let count = self.expr(ct, depth - 1);
                let ty = Self::combined(s, &[&lhs, &count]);
                let left = self.rng.chance(50);
                Expr::new(
                    ExprKind::Shift {
                        left,
                        lhs: Box::new(lhs),
                        count: Box::new(count),
                    },
                    ty,
                )
            }
            3 => {
                let op = if self.rng.chance(50) {
                    UnOp::Neg
                } else {
                    UnOp::BitNot
                };
                let a = self.expr(want, depth - 1);
                let ty = a.ty;
                Expr::new(ExprKind::Unary(op, Box::new(a)), ty)
            }
            4 => self.cast(want, depth),
            5 => {
                let from = *self.rng.pick(&[Scalar::F32, Scalar::F64]);
                let ft = self.operand_ty(want, from);
                let a = self.expr(ft, depth - 1);
                let ty = Ty {
                    scalar: s,
                    uniform: a.ty.uniform,
                };
                Expr::new(ExprKind::FloatToInt(Box::new(a)), ty)
            }
            6 => self.cond(want, depth),
            7 => self.index(want, depth),
            8 => self.call(want, depth),
            9 => self.int_library(want, depth),
            _ => self.cross_lane(want, depth),
        }
    }

    fn float_expr(&mut self, want: Ty, depth: u32) -> Expr {
        //            bin neg cast cond index call lib cross
        let weights = [30, 4, 10, 5, 10, 5, 10, 3];
        match self.rng.weighted(&weights) {
            0 => {
                let op = *self
                    .rng
                    .pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div]);
                self.binary(op, want, depth)
            }
            1 => {
                let a = self.expr(want, depth - 1);
                let ty = a.ty;
                Expr::new(ExprKind::Unary(UnOp::Neg, Box::new(a)), ty)
            }
            2 => self.cast(want, depth),
            3 => self.cond(want, depth),
            4 => self.index(want, depth),
            5 => self.call(want, depth),
            6 => self.float_library(want, depth),
            _ => self.cross_lane(want, depth),
        }
    }

    fn bool_expr(&mut self, want: Ty, depth: u32) -> Expr {
        //            cmp logic not cast cross
        let weights = [40, 15, 5, 5, 6];
        match self.rng.weighted(&weights) {
            0 => {
                let s = *self.rng.pick(&Scalar::ALL[1..]);
                let lt = self.operand_ty(want, s);
                let rt = self.operand_ty(want, s);
                let a = self.expr(lt, depth - 1);
                let b = self.expr(rt, depth - 1);
                let ty = Self::combined(Scalar::Bool, &[&a, &b]);
                let op = *self.rng.pick(&CmpOp::ALL);
                Expr::new(ExprKind::Compare(op, Box::new(a), Box::new(b)), ty)
            }
            1 => {
                let lt = self.operand_ty(want, Scalar::Bool);
                let rt = self.operand_ty(want, Scalar::Bool);
                let lhs = self.expr(lt, depth - 1);
                let rhs = self.expr(rt, depth - 1);
                let ty = Self::combined(Scalar::Bool, &[&lhs, &rhs]);
                let and = self.rng.chance(50);
                Expr::new(
                    ExprKind::Logic {
                        and,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    },
                    ty,
                )
            }
            2 => {
                let a = self.expr(want, depth - 1);
                let ty = a.ty;
                Expr::new(ExprKind::Unary(UnOp::Not, Box::new(a)), ty)
            }
            3 => self.cast(want, depth),
            _ => self.cross_lane(want, depth),
        }
    }

    fn binary(&mut self, op: BinOp, want: Ty, depth: u32) -> Expr {
        let lt = self.operand_ty(want, want.scalar);
        let rt = self.operand_ty(want, want.scalar);
        let a = self.expr(lt, depth - 1);
        let b = self.expr(rt, depth - 1);
        let ty = Self::combined(want.scalar, &[&a, &b]);
        Expr::new(ExprKind::Binary(op, Box::new(a), Box::new(b)), ty)
    }

    /// A conversion to `want.scalar` from another type it is defined from.
    fn cast(&mut self, want: Ty, depth: u32) -> Expr {
        let from = match want.scalar {
            Scalar::Bool => *self.rng.pick(&Scalar::ALL[1..]),
            s if s.is_float() => *self.rng.pick(&Scalar::ALL),
            _ => *self.rng.pick(&Scalar::ALL[..9]),
        };
        if from == want.scalar {
            return self.expr(want, depth - 1);
        }
        let ft = self.operand_ty(want, from);
        let a = self.expr(ft, depth - 1);
        let ty = Ty {
            scalar: want.scalar,
            uniform: a.ty.uniform,
        };
        Expr::new(ExprKind::Cast(Box::new(a)), ty)
    }

    fn cond(&mut self, want: Ty, depth: u32) -> Expr {
        let ct = self.operand_ty(want, Scalar::Bool);
        let c = self.expr(ct, depth - 1);
        let at = self.operand_ty(want, want.scalar);
        let bt = self.operand_ty(want, want.scalar);
        let a = self.expr(at, depth - 1);
        let b = self.expr(bt, depth - 1);
        let ty = Self::combined(want.scalar, &[&c, &a, &b]);
        Expr::new(ExprKind::Cond(Box::new(c), Box::new(a), Box::new(b)), ty)
    }

    /// A load from an array in scope whose elements fit `want`, or a conversion of
    /// one from the input buffers.
    fn index(&mut self, want: Ty, depth: u32) -> Expr {
        let arrays: Vec<_> = self
            .env
            .arrays()
            .filter(|a| a.elem.scalar == want.scalar && (a.elem.uniform || !want.uniform))
            .cloned()
            .collect();
        if arrays.is_empty() {
            return self.leaf(want);
        }
        let a = self.rng.pick(&arrays).clone();
        if !want.uniform && a.len >= NEIGHBOUR_MIN_LEN && self.rng.chance(30) {
            return self.neighbours(&a.name, want);
        }
        let it = self.operand_ty(want, Scalar::I32);
        let index = self.expr(it, depth - 1);
        let ty = Ty {
            scalar: want.scalar,
            uniform: a.elem.uniform && index.ty.uniform,
        };
        Expr::new(
            ExprKind::Index {
                base: a.name,
                len: a.len,
                index: Box::new(index),
            },
            ty,
        )
    }

    /// The sum of two to four loads of `base` by neighbouring lanes,
    /// `base[programIndex + o + k1] + base[programIndex + o + k2] + ...` (or by
    /// `threadIdx.x`) with one uniform offset `o`: the pairs that shuffle synthesis serves with lane moves, and
    /// with three or more on one side, halo vectors (issue 20).
    fn neighbours(&mut self, base: &str, want: Ty) -> Expr {
        let offset = self.leaf(Ty::uniform(Scalar::I32));
        let lane = if self.thread_x_below_32 && self.rng.chance(50) {
            "threadIdx.x"
        } else {
            "programIndex"
        };
        let ty = Ty::varying(want.scalar);
        let load = |g: &mut Self| {
            let kind = ExprKind::LaneIndex {
                base: base.to_string(),
                lane,
                offset: Box::new(offset.clone()),
                k: g.rng.range(0, 16) as u32,
            };
            Expr::new(kind, ty)
        };
        let mut sum = load(self);
        for _ in 0..self.rng.range(1, 3) {
            let next = load(self);
            sum = Expr::new(
                ExprKind::Binary(BinOp::Add, Box::new(sum), Box::new(next)),
                ty,
            );
        }
        sum
    }

    /// A call of a generated function returning `want.scalar` (varying).
    fn call(&mut self, want: Ty, depth: u32) -> Expr {
        let callable: Vec<(String, Vec<Ty>, Ty)> = self
            .signatures
            .iter()
            .filter(|(_, _, ret)| ret.is_some_and(|r| r.fits(want)))
            .map(|(n, p, r)| (n.clone(), p.clone(), r.unwrap_or(want)))
            .collect();
        if callable.is_empty() {
            return self.leaf(want);
        }
        let (name, params, ret) = self.rng.pick(&callable).clone();
        let args = params.iter().map(|&p| self.expr(p, depth - 1)).collect();
        Expr::new(ExprKind::Call { name, args }, ret)
    }

    fn library_call(name: &str, args: Vec<Expr>, scalar: Scalar) -> Expr {
        let ty = Self::combined(scalar, &args.iter().collect::<Vec<_>>());
        Expr::new(
            ExprKind::Call {
                name: name.to_string(),
                args,
            },
            ty,
        )
    }

    fn int_library(&mut self, want: Ty, depth: u32) -> Expr {
        let s = want.scalar;
        let arg = |g: &mut Gen, scalar: Scalar| {
            let t = g.operand_ty(want, scalar);
            g.expr(t, depth - 1)
        };
        match self.rng.below(6) {
            0 | 1 => {
                let name = if self.rng.chance(50) { "min" } else { "max" };
                let a = arg(self, s);
                let b = arg(self, s);
                Self::library_call(name, vec![a, b], s)
            }
            2 if s.is_signed() => {
                let a = arg(self, s);
                Self::library_call("abs", vec![a], s)
            }
            3 => {
                let lo = self.int_literal(s);
                let hi = self.int_literal(s);
                let (lo, hi) = (lo.min(hi), lo.max(hi));
                let v = arg(self, s);
                let lit = |v| Expr::lit(Literal::Int(v), Ty::uniform(s));
                Self::library_call("clamp", vec![v, lit(lo), lit(hi)], s)
            }
            4 if matches!(s, Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::U64) => {
                let name = if self.rng.chance(50) {
                    "count_leading_zeros"
                } else {
                    "count_trailing_zeros"
                };
                let a = arg(self, s);
                Self::library_call(name, vec![a], s)
            }
            4 if s == Scalar::I32 => {
                let from = if self.rng.chance(50) {
                    Scalar::I32
                } else {
                    Scalar::I64
                };
                let a = arg(self, from);
                Self::library_call("popcnt", vec![a], s)
            }
            _ => {
                let name = if self.rng.chance(50) {
                    "saturating_add"
                } else {
                    "saturating_sub"
                };
                let a = arg(self, s);
                let b = arg(self, s);
                Self::library_call(name, vec![a, b], s)
            }
        }
    }

    fn float_library(&mut self, want: Ty, depth: u32) -> Expr {
        let s = want.scalar;
        let t = self.operand_ty(want, s);
        let a = self.expr(t, depth - 1);
        match self.rng.below(4) {
            0 => {
                let t = self.operand_ty(want, s);
                let b = self.expr(t, depth - 1);
                let name = if self.rng.chance(50) { "min" } else { "max" };
                Self::library_call(name, vec![a, b], s)
            }
            1 => {
                let abs = Self::library_call("abs", vec![a], s);
                Self::library_call("sqrt", vec![abs], s)
            }
            _ => {
                let name = *self.rng.pick(&FLOAT_UNARY);
                Self::library_call(name, vec![a], s)
            }
        }
    }

    /// A cross-lane operation giving `want.scalar`, where one is defined; otherwise a
    /// leaf.
    fn cross_lane(&mut self, want: Ty, depth: u32) -> Expr {
        let s = want.scalar;
        let varying = |g: &mut Gen, scalar| {
            let e = g.expr(Ty::varying(scalar), depth - 1);
            if e.ty.uniform {
                Expr::new(ExprKind::Varying(Box::new(e)), Ty::varying(scalar))
            } else {
                e
            }
        };
        let uniform_of = |kind: ExprKind, scalar| Expr::new(kind, Ty::uniform(scalar));
        let call = |name: &str, args: Vec<Expr>| ExprKind::Call {
            name: name.into(),
            args,
        };
        let moves = self.ctx_full_gang && !want.uniform;
        match s {
            Scalar::Bool => {
                let name = *self.rng.pick(&["any", "all"]);
                let b = varying(self, Scalar::Bool);
                uniform_of(call(name, vec![b]), s)
            }
            Scalar::I64 if self.rng.chance(50) => {
                let from = *self.rng.pick(&[Scalar::I32, Scalar::I64]);
                let v = varying(self, from);
                uniform_of(call("reduce_add", vec![v]), s)
            }
            Scalar::I32 if self.rng.chance(30) => {
                let b = varying(self, Scalar::Bool);
                uniform_of(call("popcnt", vec![b]), s)
            }
            Scalar::I32 if !want.uniform && self.rng.chance(40) => {
                let v = varying(self, s);
                Expr::new(call("exclusive_scan_add", vec![v]), Ty::varying(s))
            }
            _ if moves && self.rng.chance(60) => self.lane_move(s, depth),
            _ if s.is_int() => {
                let name = *self.rng.pick(&["reduce_min", "reduce_max"]);
                let v = varying(self, s);
                uniform_of(call(name, vec![v]), s)
            }
            _ => match self.active_lane {
                Some(lane) => {
                    let v = varying(self, s);
                    let l = Expr::name(lane, Ty::uniform(Scalar::I32));
                    uniform_of(call("extract", vec![v, l]), s)
                }
                None => self.leaf(want),
            },
        }
    }

    /// `rotate`, `broadcast` or `shift` of a varying value: lane offsets and indices
    /// below 16, the smallest gang the targets run.
    fn lane_move(&mut self, s: Scalar, depth: u32) -> Expr {
        let v = self.expr(Ty::varying(s), depth - 1);
        let (name, amount) = match self.rng.below(3) {
            0 => ("rotate", self.rng.range(-3, 3)),
            1 => ("broadcast", self.rng.range(0, 15)),
            _ => ("shift", self.rng.range(-3, 3)),
        };
        let n = Expr::lit(Literal::Int(i128::from(amount)), Ty::uniform(Scalar::I32));
        Expr::new(
            ExprKind::Call {
                name: name.into(),
                args: vec![v, n],
            },
            Ty::varying(s),
        )
    }
}
