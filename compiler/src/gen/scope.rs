//! What the generator knows at a point of the program: the variables and arrays in
//! scope, and the context that decides which statements are legal and defined there
//! (inside a loop, under varying control flow, in a `foreach` body, ...).

use super::model::{Scalar, Ty};

/// A variable (or struct member, or `*out`) the generated code may read, and write
/// when `mutable`.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub ty: Ty,
    pub mutable: bool,
}

/// An array, buffer or pointer into an array, indexed with a mask of `len - 1`.
#[derive(Clone, Debug)]
pub struct Array {
    pub name: String,
    pub elem: Ty,
    pub len: u32,
    pub writable: bool,
}

/// The nested scopes of the function being generated.
#[derive(Clone, Debug, Default)]
pub struct Env {
    frames: Vec<Frame>,
}

#[derive(Clone, Debug, Default)]
struct Frame {
    vars: Vec<Var>,
    arrays: Vec<Array>,
}

impl Env {
    pub fn push(&mut self) {
        self.frames.push(Frame::default());
    }

    pub fn pop(&mut self) {
        self.frames.pop();
    }

    pub fn add_var(&mut self, name: impl Into<String>, ty: Ty, mutable: bool) {
        if let Some(f) = self.frames.last_mut() {
            f.vars.push(Var {
                name: name.into(),
                ty,
                mutable,
            });
        }
    }

    pub fn add_array(&mut self, array: Array) {
        if let Some(f) = self.frames.last_mut() {
            f.arrays.push(array);
        }
    }

    /// Every variable in scope, outermost first.
    pub fn vars(&self) -> impl Iterator<Item = &Var> {
        self.frames.iter().flat_map(|f| f.vars.iter())
    }

    /// Every array in scope.
    pub fn arrays(&self) -> impl Iterator<Item = &Array> {
        self.frames.iter().flat_map(|f| f.arrays.iter())
    }

    /// The variables of the outermost scope (the entry's top level).
    pub fn outermost_vars(&self) -> Vec<Var> {
        self.frames
            .first()
            .map(|f| f.vars.clone())
            .unwrap_or_default()
    }

    /// Variables whose values fit `want`.
    pub fn readable(&self, want: Ty) -> Vec<&Var> {
        self.vars().filter(|v| v.ty.fits(want)).collect()
    }

    /// Variables of basic type `scalar`, any variability that fits `uniform`.
    pub fn of_scalar(&self, scalar: Scalar, uniform: bool) -> Vec<&Var> {
        self.readable(Ty { scalar, uniform })
    }
}

/// Where a statement is being generated.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// Some enclosing condition is varying: lanes may be off.
    pub varying_cf: bool,
    /// `break` leaves a loop or `switch` (not a `foreach` body).
    pub can_break: bool,
    /// `continue` goes to a loop's or `foreach`'s next iteration.
    pub can_continue: bool,
    /// `return` is allowed (not inside any `foreach` form).
    pub can_return: bool,
    /// Inside a `foreach` form: no other may nest.
    pub in_foreach: bool,
    /// A `foreach_active` or `foreach_unique` body, whose iterations come in an
    /// unspecified order: uniform state may only be changed commutatively.
    pub order_free: bool,
    /// Every lane of every gang exists and is on (the entry's top level, launched
    /// with whole gangs): cross-lane moves (`rotate`, `broadcast`, `shift`) read only
    /// values the program wrote.
    pub full_gang: bool,
    /// The generated function's return type (`None` in the entry or a `void`
    /// function).
    pub ret: Option<Ty>,
    /// The variable of an enclosing `foreach_active`: `extract(x, lane)` is defined.
    pub active_lane: Option<&'static str>,
    /// Statement nesting depth.
    pub depth: u32,
}

impl Ctx {
    /// The context at the top of a function body.
    pub fn function(ret: Option<Ty>, full_gang: bool) -> Ctx {
        Ctx {
            varying_cf: false,
            can_break: false,
            can_continue: false,
            can_return: true,
            in_foreach: false,
            order_free: false,
            full_gang,
            ret,
            active_lane: None,
            depth: 0,
        }
    }

    /// The context of a nested block; `varying` says whether its entry is decided by
    /// a varying condition.
    pub fn nested(self, varying: bool) -> Ctx {
        Ctx {
            varying_cf: self.varying_cf || varying,
            full_gang: false,
            depth: self.depth + 1,
            ..self
        }
    }
}
