//! Block scopes of local variables.
//!
//! One flat stack of bindings plus, for each name, the index of its innermost binding;
//! each binding remembers the one it shadows. Lookup is one hash probe, and leaving a
//! scope restores the shadowed bindings — no per-scope maps to allocate.

use super::LocalId;
use crate::front::intern::Symbol;
use rustc_hash::FxHashMap;

const NONE: u32 = u32::MAX;

struct Entry {
    name: Symbol,
    local: LocalId,
    /// Index of the binding this one shadows, or NONE.
    prev: u32,
}

#[derive(Default)]
pub(super) struct Scopes {
    entries: Vec<Entry>,
    heads: FxHashMap<Symbol, u32>,
    /// Start index in `entries` of each open scope.
    marks: Vec<u32>,
}

impl Scopes {
    pub fn push(&mut self) {
        self.marks.push(self.entries.len() as u32);
    }

    pub fn pop(&mut self) {
        let mark = self.marks.pop().unwrap_or(0) as usize;
        while self.entries.len() > mark {
            let Some(e) = self.entries.pop() else { break };
            if e.prev == NONE {
                self.heads.remove(&e.name);
            } else {
                self.heads.insert(e.name, e.prev);
            }
        }
    }

    /// Drops every scope (between functions).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.heads.clear();
        self.marks.clear();
    }

    pub fn lookup(&self, name: Symbol) -> Option<LocalId> {
        self.heads
            .get(&name)
            .map(|&i| self.entries[i as usize].local)
    }

    /// Binds `name` in the innermost scope. If the scope already binds it, returns the
    /// existing local instead (a redefinition).
    pub fn declare(&mut self, name: Symbol, local: LocalId) -> Result<(), LocalId> {
        let mark = self.marks.last().copied().unwrap_or(0);
        let prev = self.heads.get(&name).copied().unwrap_or(NONE);
        if prev != NONE && prev >= mark {
            return Err(self.entries[prev as usize].local);
        }
        let idx = self.entries.len() as u32;
        self.entries.push(Entry { name, local, prev });
        self.heads.insert(name, idx);
        Ok(())
    }

    /// Every visible local name, innermost first (for "did you mean").
    pub fn visible(&self) -> impl Iterator<Item = Symbol> + '_ {
        self.entries
            .iter()
            .enumerate()
            .rev()
            .filter(|(i, e)| self.heads.get(&e.name) == Some(&(*i as u32)))
            .map(|(_, e)| e.name)
    }
}
