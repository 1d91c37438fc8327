//! A random program generator for differential testing, in the spirit of Csmith and
//! YARPGen: `spmdc gen --seed N` prints a program that is valid, terminates and is
//! free of undefined behaviour by construction, together with the launch it is
//! meant for. [`crate::difftest`] runs such programs on every target and pass
//! switch and compares the results.
//!
//! The parts, one concern each:
//! - [`rng`]: the deterministic random numbers (SplitMix64);
//! - [`model`]: the program as a tree, with safety built into its nodes;
//! - [`scope`]: what is in scope and what the context allows;
//! - [`expr`] and [`stmt`]: expression and statement generation;
//! - [`launch`]: the launch shape and inputs;
//! - [`emit`]: the source text;
//! - [`coverage`]: which features a range of seeds uses.
//!
//! What keeps programs defined (lang-spec/types.md, expressions.md, stdlib.md):
//! integer arithmetic wraps in spmdc, so `+ - *` and negation are used freely;
//! division and remainder divide by `(d & 7) + 1`; shift counts are masked below the
//! width; indices are masked to power-of-two array lengths, except neighbouring
//! lanes' loads `a[programIndex + (o & 15) + k]` (`k <= 16`) of arrays of 64 elements
//! or more, in bounds for the gangs of at most 32 lanes every target and reference
//! runs (or `threadIdx.x + ...` in blocks at most 32 threads wide); floats convert to integers only inside `(-1e6, 1e6)`; loops are bounded by
//! uniform counters; each
//! thread stores only to its own output slots and its own varying elements, uniform
//! locations get uniform values, atomics are commutative and their results unused;
//! cross-lane moves read only lanes that exist and are on; floating-point reductions,
//! whose order the spec leaves open, are not used.

pub mod coverage;
pub mod emit;
pub mod expr;
pub mod launch;
pub mod model;
pub mod rng;
pub mod scope;
pub mod stmt;

use model::*;
use rng::Rng;
use scope::{Array, Ctx, Env};

/// The default of `spmdc gen --size`.
pub const DEFAULT_SIZE: u32 = 3;
/// The largest `--size`.
pub const MAX_SIZE: u32 = 10;

/// The generator's state while it builds one program.
pub struct Gen {
    pub rng: Rng,
    pub env: Env,
    /// The generated functions that return a value: name, parameter types, return
    /// type.
    pub signatures: Vec<(String, Vec<Ty>, Option<Ty>)>,
    /// The generated `void` functions: name, output type, parameter types.
    pub void_signatures: Vec<(String, Scalar, Vec<Ty>)>,
    pub structs: Vec<StructDef>,
    /// Statements to add after the one being generated (a pointer into a new array).
    pub pending: Vec<Stmt>,
    /// How deep statements nest.
    pub max_depth: u32,
    /// How deep expressions nest.
    pub expr_depth: u32,
    /// Set from the statement context for the expression being generated.
    pub ctx_full_gang: bool,
    pub active_lane: Option<&'static str>,
    /// Generating the entry (whose parameters, such as `acc`, are in scope).
    pub in_entry: bool,
    /// A `break`, `continue` or `return` under varying control flow was generated
    /// in the entry: some lanes may be off from there on.
    pub lanes_may_have_left: bool,
    /// The launch's blocks are at most 32 threads wide, so `threadIdx.x < 32` and
    /// neighbouring lanes' loads may index by it (rows narrower than a warp, in 2-D
    /// and 3-D blocks, are where shuffles need their row check).
    pub thread_x_below_32: bool,
    next_name: u32,
}

impl Gen {
    fn new(seed: u64, size: u32) -> Gen {
        let size = size.clamp(1, MAX_SIZE);
        Gen {
            rng: Rng::new(seed),
            env: Env::default(),
            signatures: Vec::new(),
            void_signatures: Vec::new(),
            structs: Vec::new(),
            pending: Vec::new(),
            max_depth: 2 + size / 3,
            expr_depth: 2 + size / 4,
            ctx_full_gang: false,
            active_lane: None,
            in_entry: false,
            lanes_may_have_left: false,
            thread_x_below_32: false,
            next_name: 0,
        }
    }

    /// A new name with `prefix`.
    pub fn fresh(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}{}", self.next_name)
    }
}

/// The program of `seed` at `size` (1 to [`MAX_SIZE`]; larger programs have more
/// functions and statements and deeper nesting).
pub fn generate(seed: u64, size: u32) -> Program {
    let size = size.clamp(1, MAX_SIZE);
    let mut g = Gen::new(seed, size);
    let launch = launch::random_launch(&mut g.rng.fork());
    g.thread_x_below_32 = launch.block[0] <= 32;
    g.structs = (0..g.rng.range(1, 2))
        .map(|_| StructDef {
            members: (0..g.rng.range(1, 3)).map(|_| g.scalar()).collect(),
        })
        .collect();
    let functions = (0..g.rng.range(0, i64::from(size / 2 + 1)))
        .map(|_| function(&mut g, size))
        .collect();
    let shared_prologue = g.rng.chance(50);
    let (body, sinks) = entry(&mut g, size, &launch, shared_prologue);
    Program {
        seed,
        size,
        structs: g.structs,
        functions,
        body,
        shared_prologue,
        sinks,
        launch,
    }
}

/// One function, and its signature for later calls: it may call the functions
/// before it (so there is no recursion).
fn function(g: &mut Gen, size: u32) -> Function {
    let is_void = g.rng.chance(30);
    let name = g.fresh(if is_void { "g" } else { "fn" });
    let params: Vec<(String, Ty)> = (0..g.rng.range(1, 3))
        .map(|i| {
            let ty = Ty {
                scalar: g.scalar(),
                uniform: g.rng.chance(40),
            };
            (format!("q{i}"), ty)
        })
        .collect();
    g.env = Env::default();
    g.env.push();
    for (n, t) in &params {
        g.env.add_var(n.clone(), *t, true);
    }
    let out = is_void.then(|| g.scalar());
    if let Some(o) = out {
        g.env.add_var("*out", Ty::varying(o), true);
    }
    let ret = (!is_void).then(|| Ty::varying(g.scalar()));
    let n = g.rng.range(2, 2 + i64::from(size)) as u32;
    let mut body = g.statements(Ctx::function(ret, false), n);
    if let Some(r) = ret {
        if !matches!(body.last(), Some(Stmt::Return(_))) {
            // At the function's top level: no `foreach_active` lane to extract from
            // (the last statement generated may have left one set).
            g.active_lane = None;
            g.ctx_full_gang = false;
            let depth = g.expr_depth;
            body.push(Stmt::Return(Some(g.expr(r, depth))));
        }
    }
    g.env = Env::default();
    let types = params.iter().map(|(_, t)| *t).collect();
    match out {
        Some(o) => g.void_signatures.push((name.clone(), o, types)),
        None => g.signatures.push((name.clone(), types, ret)),
    }
    Function {
        name,
        ret,
        out,
        params,
        body,
    }
}

/// The entry's statements and the values each thread stores at the end.
fn entry(g: &mut Gen, size: u32, launch: &Launch, shared: bool) -> (Vec<Stmt>, Vec<Expr>) {
    g.env = Env::default();
    g.env.push();
    let fixed = [
        ("nthreads", Ty::uniform(Scalar::I32)),
        ("t", Ty::varying(Scalar::I32)),
        ("gid", Ty::varying(Scalar::I32)),
        ("k0", Ty::uniform(Scalar::I32)),
    ];
    for (n, t) in fixed {
        g.env.add_var(n, t, false);
    }
    if shared {
        g.env.add_var("shv", Ty::varying(Scalar::I32), false);
        g.env.add_var("shc", Ty::varying(Scalar::I32), false);
    }
    let inputs = [("in_i", Scalar::I32), ("in_f", Scalar::F32)];
    for (name, s) in inputs {
        g.env.add_array(Array {
            name: name.into(),
            elem: Ty::uniform(s),
            len: emit::INPUT_LEN,
            writable: false,
        });
    }
    let n = 4 + 3 * size;
    g.in_entry = true;
    g.lanes_may_have_left = false;
    let ctx = Ctx::function(None, launch.whole_gangs());
    let body = g.statements(ctx, n);
    let mut sinks: Vec<Expr> = g
        .env
        .outermost_vars()
        .into_iter()
        .filter(|v| v.mutable || v.name.starts_with("sh"))
        .map(|v| Expr::name(v.name, v.ty))
        .collect();
    let arrays: Vec<Array> = g.env.arrays().filter(|a| a.writable).cloned().collect();
    for a in arrays {
        for i in 0..a.len {
            let index = Expr::lit(Literal::Int(i128::from(i)), Ty::uniform(Scalar::I32));
            let kind = ExprKind::Index {
                base: a.name.clone(),
                len: a.len,
                index: Box::new(index),
            };
            sinks.push(Expr::new(kind, a.elem));
        }
    }
    g.env = Env::default();
    (body, sinks)
}
