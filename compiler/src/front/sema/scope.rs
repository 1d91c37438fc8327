//! Block scopes of local variables and local typedefs.
//!
//! One flat stack of bindings per kind plus, for each name, the index of its innermost
//! binding; each binding remembers the one it shadows. Lookup is one hash probe, and
//! leaving a scope restores the shadowed bindings — no per-scope maps to allocate.

use super::types::TypeId;
use super::LocalId;
use crate::front::intern::Symbol;
use rustc_hash::FxHashMap;

const NONE: u32 = u32::MAX;

struct Entry<T> {
    name: Symbol,
    value: T,
    /// Index of the binding this one shadows, or NONE.
    prev: u32,
}

/// The bindings of one kind (locals, or typedef names).
struct Layer<T> {
    entries: Vec<Entry<T>>,
    heads: FxHashMap<Symbol, u32>,
}

impl<T> Default for Layer<T> {
    fn default() -> Self {
        Layer {
            entries: Vec::new(),
            heads: FxHashMap::default(),
        }
    }
}

impl<T: Copy> Layer<T> {
    fn truncate(&mut self, mark: usize) {
        while self.entries.len() > mark {
            let Some(e) = self.entries.pop() else { break };
            if e.prev == NONE {
                self.heads.remove(&e.name);
            } else {
                self.heads.insert(e.name, e.prev);
            }
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.heads.clear();
    }

    fn lookup(&self, name: Symbol) -> Option<T> {
        self.heads
            .get(&name)
            .map(|&i| self.entries[i as usize].value)
    }

    /// Binds `name` unless a binding at index `mark` or later (the innermost scope)
    /// already has it, which is returned instead.
    fn declare(&mut self, name: Symbol, value: T, mark: u32) -> Result<(), T> {
        let prev = self.heads.get(&name).copied().unwrap_or(NONE);
        if prev != NONE && prev >= mark {
            return Err(self.entries[prev as usize].value);
        }
        let idx = self.entries.len() as u32;
        self.entries.push(Entry { name, value, prev });
        self.heads.insert(name, idx);
        Ok(())
    }
}

#[derive(Default)]
pub(super) struct Scopes {
    locals: Layer<LocalId>,
    types: Layer<TypeId>,
    /// Start indices in `locals` and `types` of each open scope.
    marks: Vec<(u32, u32)>,
}

impl Scopes {
    pub fn push(&mut self) {
        let mark = (
            self.locals.entries.len() as u32,
            self.types.entries.len() as u32,
        );
        self.marks.push(mark);
    }

    pub fn pop(&mut self) {
        let (locals, types) = self.marks.pop().unwrap_or((0, 0));
        self.locals.truncate(locals as usize);
        self.types.truncate(types as usize);
    }

    /// Drops every scope (between functions).
    pub fn clear(&mut self) {
        self.locals.clear();
        self.types.clear();
        self.marks.clear();
    }

    pub fn lookup(&self, name: Symbol) -> Option<LocalId> {
        self.locals.lookup(name)
    }

    /// The type a local typedef binds `name` to, innermost first.
    pub fn lookup_type(&self, name: Symbol) -> Option<TypeId> {
        self.types.lookup(name)
    }

    /// Binds `name` in the innermost scope. If the scope already binds it, returns the
    /// existing local instead (a redefinition).
    pub fn declare(&mut self, name: Symbol, local: LocalId) -> Result<(), LocalId> {
        let mark = self.marks.last().map_or(0, |m| m.0);
        self.locals.declare(name, local, mark)
    }

    /// Binds the typedef name `name` in the innermost scope; a typedef the scope
    /// already has under that name is returned instead.
    pub fn declare_type(&mut self, name: Symbol, ty: TypeId) -> Result<(), TypeId> {
        let mark = self.marks.last().map_or(0, |m| m.1);
        self.types.declare(name, ty, mark)
    }

    /// Every visible local name, innermost first (for "did you mean").
    pub fn visible(&self) -> impl Iterator<Item = Symbol> + '_ {
        let l = &self.locals;
        l.entries
            .iter()
            .enumerate()
            .rev()
            .filter(|(i, e)| l.heads.get(&e.name) == Some(&(*i as u32)))
            .map(|(_, e)| e.name)
    }
}
