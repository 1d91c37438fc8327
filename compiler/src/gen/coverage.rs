//! What the generator exercises: counts of statement kinds, expression kinds,
//! library calls and types over a range of seeds, for the coverage table of
//! lang-spec/difftest.md (`spmdc gen --coverage SEEDS`). It reads the programs' trees,
//! so it costs no compilation.

use std::collections::BTreeMap;

use super::model::*;

/// Programs containing each feature, by feature name.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    pub programs: u64,
    pub features: BTreeMap<String, u64>,
}

impl Coverage {
    /// Adds one program: each feature it uses counts once.
    pub fn add(&mut self, p: &Program) {
        let mut seen = std::collections::BTreeSet::new();
        let mut note = |f: String| {
            seen.insert(f);
        };
        if p.shared_prologue {
            note("stmt: shared + barrier + atomic_add_local".into());
        }
        if !p.launch.whole_gangs() {
            note("launch: partial gang or warp".into());
        }
        if p.launch.block[1] > 1 || p.launch.block[2] > 1 {
            note("launch: 2-D or 3-D block".into());
        }
        if p.launch.grid.iter().product::<u32>() > 1 {
            note("launch: several blocks".into());
        }
        for f in &p.functions {
            note(
                if f.ret.is_some() {
                    "function: returning a value"
                } else {
                    "function: void, writing through a pointer"
                }
                .into(),
            );
            stmts(&f.body, &mut note);
        }
        stmts(&p.body, &mut note);
        for e in &p.sinks {
            expr(e, &mut note);
        }
        self.programs += 1;
        for f in seen {
            *self.features.entry(f).or_default() += 1;
        }
    }

    /// A Markdown table: feature, programs using it, and their share.
    pub fn to_table(&self) -> String {
        let mut out = String::from("| feature | programs | share |\n|---|---:|---:|\n");
        for (f, n) in &self.features {
            let share = 100.0 * *n as f64 / self.programs.max(1) as f64;
            out.push_str(&format!("| {f} | {n} | {share:.1}% |\n"));
        }
        out
    }
}

/// The coverage of `seeds` at the sizes `size_of` gives.
pub fn of_seeds(seeds: impl IntoIterator<Item = u64>, size_of: impl Fn(u64) -> u32) -> Coverage {
    let mut c = Coverage::default();
    for seed in seeds {
        c.add(&super::generate(seed, size_of(seed)));
    }
    c
}

fn stmts(list: &[Stmt], note: &mut impl FnMut(String)) {
    for s in list {
        stmt(s, note);
    }
}

fn stmt(s: &Stmt, note: &mut impl FnMut(String)) {
    let name = match s {
        Stmt::Decl { ty, .. } => {
            let q = if ty.uniform { "uniform" } else { "varying" };
            note(format!("type: {q} {}", ty.scalar.name()));
            "declaration"
        }
        Stmt::ArrayDecl { .. } => "local array",
        Stmt::StructDecl { alias, uniform, .. } => {
            if alias.is_some() {
                note("stmt: pointer to struct (->)".into());
            }
            if *uniform {
                "uniform struct"
            } else {
                "varying struct"
            }
        }
        Stmt::PtrDecl { .. } => "pointer into an array",
        Stmt::Assign { op, .. } => {
            note(format!("assign: {}", op.symbol()));
            "assignment"
        }
        Stmt::Store { .. } => "array store",
        Stmt::If { coherent, cond, .. } => {
            let v = if cond.ty.uniform {
                "uniform"
            } else {
                "varying"
            };
            if *coherent {
                note("stmt: cif".into());
            }
            note(format!("stmt: if on a {v} condition"));
            "if"
        }
        Stmt::For { extra, .. } => {
            if extra.as_ref().is_some_and(|e| !e.ty.uniform) {
                note("stmt: for with a varying exit".into());
            }
            "for"
        }
        Stmt::While { do_while, .. } => {
            if *do_while {
                "do-while"
            } else {
                "while"
            }
        }
        Stmt::Foreach { .. } => "foreach",
        Stmt::ForeachActive { .. } => "foreach_active",
        Stmt::ForeachUnique { .. } => "foreach_unique",
        Stmt::Switch { arms, .. } => {
            if arms.iter().any(|a| !a.ends_with_break) {
                note("stmt: switch fall-through".into());
            }
            "switch"
        }
        Stmt::Break => "break",
        Stmt::Continue => "continue",
        Stmt::Return(_) => "return",
        Stmt::Atomic { op, .. } => {
            note(format!("call: atomic_{}_global", op.name()));
            "atomic"
        }
        Stmt::CallVoid { .. } => "call of a void function",
        Stmt::Block(_) => "block",
    };
    note(format!("stmt: {name}"));
    let mut s = s.clone();
    for e in s.exprs_mut() {
        expr(e, note);
    }
    for b in s.blocks_mut() {
        stmts(b, note);
    }
}

fn expr(e: &Expr, note: &mut impl FnMut(String)) {
    let name = match &e.kind {
        ExprKind::Lit(_) => "literal",
        ExprKind::Name(n)
            if n.contains('.') && !n.starts_with("threadIdx") && !n.starts_with("blockIdx") =>
        {
            "struct member"
        }
        ExprKind::Name(n) if n.contains("->") => "member through a pointer",
        ExprKind::Name(n)
            if [
                "programIndex",
                "programCount",
                "threadIdx.x",
                "blockIdx.x",
                "(int32)taskIndex",
            ]
            .contains(&n.as_str()) =>
        {
            note(format!("builtin: {}", n.trim_start_matches("(int32)")));
            "built-in value"
        }
        ExprKind::Name(_) => "variable",
        ExprKind::Unary(op, _) => match op {
            UnOp::Neg => "unary -",
            UnOp::BitNot => "~",
            UnOp::Not => "!",
        },
        ExprKind::Binary(op, ..) => {
            note(format!("expr: {} on {}", op.symbol(), e.ty.scalar.name()));
            "binary operator"
        }
        ExprKind::SafeDiv { rem, .. } => {
            if *rem {
                "%"
            } else {
                "integer /"
            }
        }
        ExprKind::Shift { left, .. } => {
            if *left {
                "<<"
            } else {
                ">>"
            }
        }
        ExprKind::Compare(op, a, _) => {
            note(format!("expr: {} on {}", op.symbol(), a.ty.scalar.name()));
            "comparison"
        }
        ExprKind::Logic { and, .. } => {
            if *and {
                "&&"
            } else {
                "||"
            }
        }
        ExprKind::Cond(..) => "?:",
        ExprKind::Cast(a) => {
            note(format!(
                "cast: {} to {}",
                a.ty.scalar.name(),
                e.ty.scalar.name()
            ));
            "cast"
        }
        ExprKind::Varying(_) => "cast to varying",
        ExprKind::FloatToInt(_) => "float to integer (guarded)",
        ExprKind::Index { .. } => "indexing",
        ExprKind::LaneIndex { lane, .. } => {
            note(format!("neighbouring lanes' loads: by {lane}"));
            "neighbouring lanes' loads"
        }
        ExprKind::Call { name, .. } if name.starts_with("fn") => "call of a generated function",
        ExprKind::Call { name, .. } => {
            note(format!("call: {name}"));
            "library call"
        }
    };
    note(format!("expr: {name}"));
    for c in e.children() {
        expr(c, note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(seed: u64) -> u32 {
        1 + (seed % 4) as u32
    }

    #[test]
    fn coverage_of_split_seed_ranges_adds_up() {
        let whole = of_seeds(0..40, size);
        let parts = [of_seeds(0..15, size), of_seeds(15..40, size)];
        assert_eq!(whole.programs, 40);
        assert_eq!(parts[0].programs + parts[1].programs, 40);
        assert!(whole.features.contains_key("stmt: declaration"));
        for (f, &n) in &whole.features {
            let sum: u64 = parts
                .iter()
                .map(|p| p.features.get(f).copied().unwrap_or(0))
                .sum();
            assert_eq!(sum, n, "feature {f}");
            assert!(
                n <= whole.programs,
                "feature {f} counted more than once per program"
            );
        }
    }
}
