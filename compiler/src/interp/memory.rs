//! The interpreter's memory: one byte-addressed space split into regions, each a set
//! of allocations with unmapped gaps between them so that running off the end of one
//! object faults instead of reaching the next.
//!
//! | addresses | region | what lives there |
//! |-----------|--------|------------------|
//! | `0 .. 0x1_0000` | null page | nothing: every access faults |
//! | `GLOBAL_BASE .. SHARED_BASE` | global | host buffers ([`Memory::try_add_buffer`]) and module globals |
//! | `SHARED_BASE .. PRIVATE_BASE` | shared | the current block's `shared` variables, fresh and zeroed per block |
//! | `PRIVATE_BASE + g * PRIVATE_STRIDE ..` | private | gang `g`'s stack: the stack slots of its live frames |
//!
//! Every address fits in 32 bits, so pointers survive a 4-byte `ptr` store. An access
//! must lie entirely inside one live allocation and be aligned to its size; a store
//! may not go to a `constant` global; an access through a `space` other than
//! `generic` must reach that space's region (`global` and `param` both mean the
//! global region); a gang reaches only its own private stack.

use std::fmt;

use crate::ir::{GlobalVar, Module, SharedVar, Space, StackSlotData};
use cranelift_entity::EntityRef;

/// Addresses below this are the null page.
pub const GLOBAL_BASE: u64 = 0x1_0000;
/// Bytes in the global region: host buffers and module globals together.
pub const GLOBAL_CAPACITY: u64 = SHARED_BASE - GLOBAL_BASE;
/// Start of the block-shared region.
pub const SHARED_BASE: u64 = 0x8000_0000;
/// Start of the private region: gang `g`'s stack starts at
/// `PRIVATE_BASE + g * PRIVATE_STRIDE`.
pub const PRIVATE_BASE: u64 = 0xC000_0000;
/// Address range reserved for each gang's stack.
pub const PRIVATE_STRIDE: u64 = 0x10_0000;
/// The most gangs a block may have (their stacks fill the private region).
pub const MAX_GANGS: u64 = (0x1_0000_0000 - PRIVATE_BASE) / PRIVATE_STRIDE;
/// The usable size of one gang's stack; the rest of its stride is a guard gap.
pub const STACK_CAPACITY: u64 = PRIVATE_STRIDE - 0x1000;

/// Allocations start at multiples of this, so every natural alignment holds.
const ALLOC_ALIGN: u64 = 256;
/// At least this many unmapped bytes follow every allocation.
const GUARD: u64 = 256;

/// Why a memory access failed. The interpreter adds the instruction, lane and address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    Null,
    /// No live allocation holds the access (`near` names the closest one, if any).
    Unmapped {
        near: Option<String>,
    },
    Misaligned {
        size: u32,
    },
    ReadOnly {
        name: String,
    },
    /// The access's `space` does not match the region the address lies in.
    WrongSpace {
        space: Space,
        region: &'static str,
    },
    /// A private address of another gang.
    OtherGang {
        owner: u64,
    },
    StackOverflow,
    /// The global region is full.
    OutOfMemory,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Null => f.write_str("null pointer access"),
            Fault::Unmapped { near: Some(n) } => {
                write!(f, "access outside any live allocation (nearest: {n})")
            }
            Fault::Unmapped { near: None } => f.write_str("access outside any live allocation"),
            Fault::Misaligned { size } => write!(f, "misaligned {size}-byte access"),
            Fault::ReadOnly { name } => write!(f, "store to constant `{name}`"),
            Fault::WrongSpace { space, region } => write!(
                f,
                "`{}` access to an address in {region} memory",
                space.name()
            ),
            Fault::OtherGang { owner } => {
                write!(f, "access to the private memory of gang {owner}")
            }
            Fault::StackOverflow => f.write_str("private stack overflow"),
            Fault::OutOfMemory => f.write_str("global memory exhausted"),
        }
    }
}

/// One object: a host buffer, a global, a shared variable or a stack slot.
#[derive(Clone, Debug)]
struct Alloc {
    base: u64,
    data: Vec<u8>,
    name: String,
    read_only: bool,
}

impl Alloc {
    fn end(&self) -> u64 {
        self.base + self.data.len() as u64
    }

    fn describe(&self) -> String {
        format!("`{}` at {:#x}..{:#x}", self.name, self.base, self.end())
    }
}

/// A region's allocations in address order, allocated upward from `next`.
#[derive(Clone, Debug)]
struct Arena {
    allocs: Vec<Alloc>,
    start: u64,
    next: u64,
    limit: u64,
    /// The allocation the last access hit (accesses cluster).
    last: usize,
}

impl Arena {
    fn new(start: u64, limit: u64) -> Self {
        Arena {
            allocs: Vec::new(),
            start,
            next: start,
            limit,
            last: 0,
        }
    }

    fn clear(&mut self) {
        self.allocs.clear();
        self.next = self.start;
        self.last = 0;
    }

    /// Where the allocation after one of `len` bytes made now would start.
    fn next_after(&self, len: u64) -> u64 {
        (self.next.saturating_add(len).saturating_add(GUARD)).next_multiple_of(ALLOC_ALIGN)
    }

    /// Whether an allocation of `len` bytes fits in what is left.
    fn fits(&self, len: u64) -> bool {
        self.next_after(len) <= self.limit
    }

    fn alloc(&mut self, data: Vec<u8>, name: &str, read_only: bool) -> Result<u64, Fault> {
        let base = self.next;
        let next = self.next_after(data.len() as u64);
        if next > self.limit {
            return Err(Fault::OutOfMemory);
        }
        self.next = next;
        self.allocs.push(Alloc {
            base,
            data,
            name: name.to_string(),
            read_only,
        });
        Ok(base)
    }

    /// The index of the allocation holding `[addr, addr + size)`.
    #[inline]
    fn find(&mut self, addr: u64, size: u64) -> Result<usize, Fault> {
        if let Some(a) = self.allocs.get(self.last) {
            if addr >= a.base && addr + size <= a.end() {
                return Ok(self.last);
            }
        }
        let i = self.allocs.partition_point(|a| a.base <= addr);
        if i > 0 && addr + size <= self.allocs[i - 1].end() {
            self.last = i - 1;
            return Ok(i - 1);
        }
        let near = self
            .allocs
            .get(i.wrapping_sub(1))
            .or(self.allocs.get(i))
            .map(Alloc::describe);
        Err(Fault::Unmapped { near })
    }
}

/// One gang's private stack: a byte array plus the live slots (ascending offsets).
#[derive(Clone, Debug, Default)]
struct Stack {
    data: Vec<u8>,
    /// `(offset, size)` of each live slot.
    slots: Vec<(u64, u64)>,
    top: u64,
}

/// Where a gang's stack stood before a frame was pushed; popping returns to it.
#[derive(Clone, Copy, Debug)]
pub struct StackMark {
    slots: usize,
    top: u64,
}

/// The whole memory of a launch (and, for the global region, of the host between
/// launches).
#[derive(Clone, Debug)]
pub struct Memory {
    global: Arena,
    shared: Arena,
    stacks: Vec<Stack>,
    /// Addresses of the module's globals, once bound.
    globals: Option<Vec<u64>>,
    /// Addresses of the module's shared variables in the current block.
    shared_addrs: Vec<u64>,
}

impl Default for Memory {
    fn default() -> Self {
        Self::new()
    }
}

impl Memory {
    pub fn new() -> Self {
        Memory {
            global: Arena::new(GLOBAL_BASE, SHARED_BASE),
            shared: Arena::new(SHARED_BASE, PRIVATE_BASE),
            stacks: Vec::new(),
            globals: None,
            shared_addrs: Vec::new(),
        }
    }

    /// Registers a host buffer in global memory and returns its address (aligned to 256
    /// bytes, followed by an unmapped gap). `name` appears in fault messages. `Err`
    /// says why the buffer does not fit: the global region is under 2 GiB, so that
    /// every address fits in 32 bits.
    pub fn try_add_buffer(&mut self, bytes: &[u8], name: &str) -> Result<u64, String> {
        let len = bytes.len() as u64;
        if !self.global.fits(len) {
            let free = self.global.limit.saturating_sub(self.global.next);
            return Err(format!(
                "buffer `{name}` ({len} bytes) does not fit in the interpreter's global memory: \
                 {free} of its {GLOBAL_CAPACITY} bytes are free"
            ));
        }
        Ok(self
            .global
            .alloc(bytes.to_vec(), name, false)
            .expect("checked to fit"))
    }

    /// [`Memory::try_add_buffer`] for hosts whose buffers are known to fit (tests,
    /// small fixed buffers); panics otherwise.
    pub fn add_buffer(&mut self, bytes: impl Into<Vec<u8>>, name: &str) -> u64 {
        let bytes = bytes.into();
        self.try_add_buffer(&bytes, name)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The bytes of the allocation that starts at `addr` (a buffer's current contents).
    pub fn buffer(&self, addr: u64) -> Option<&[u8]> {
        let arena = if addr >= SHARED_BASE {
            &self.shared
        } else {
            &self.global
        };
        let i = arena.allocs.binary_search_by_key(&addr, |a| a.base).ok()?;
        Some(&arena.allocs[i].data)
    }

    /// The address of a module global, once a launch has bound the module.
    pub fn global_address(&self, gv: GlobalVar) -> Option<u64> {
        self.globals.as_ref()?.get(gv.as_u32() as usize).copied()
    }

    /// Allocates and initializes the module's globals, unless an earlier launch did:
    /// a `Memory` serves one module, and globals keep their values across launches.
    pub(crate) fn bind_module(&mut self, module: &Module) -> Result<(), String> {
        if let Some(g) = &self.globals {
            if g.len() != module.globals.len() {
                return Err("this memory was bound to a module with other globals".into());
            }
            return Ok(());
        }
        let mut addrs = Vec::with_capacity(module.globals.len());
        for g in module.globals.values() {
            if u64::from(g.align) > ALLOC_ALIGN {
                return Err(format!("global `{}` wants alignment {}", g.name, g.align));
            }
            let mut data = g.init.clone();
            data.resize((g.size as usize).max(data.len()), 0);
            let addr = self
                .global
                .alloc(data, &g.name, g.constant)
                .map_err(|f| f.to_string())?;
            addrs.push(addr);
        }
        self.write_global_addresses(module, &addrs)?;
        self.globals = Some(addrs);
        Ok(())
    }

    /// Writes the addresses the globals' initial values hold (their relocations), now
    /// that every global has its place; constant globals too, before the program runs.
    fn write_global_addresses(&mut self, module: &Module, addrs: &[u64]) -> Result<(), String> {
        let ptr = module.ptr_size as usize;
        for (g, &at) in module.globals.values().zip(addrs) {
            for r in &g.relocs {
                let target = addrs
                    .get(r.target.index())
                    .ok_or_else(|| format!("global `{}` names a missing {}", g.name, r.target))?;
                let value = target.wrapping_add_signed(r.addend).to_le_bytes();
                let addr = at + u64::from(r.offset);
                let i = self
                    .global
                    .find(addr, ptr as u64)
                    .map_err(|f| format!("global `{}`: {f}", g.name))?;
                let a = &mut self.global.allocs[i];
                let start = (addr - a.base) as usize;
                a.data[start..start + ptr].copy_from_slice(&value[..ptr]);
            }
        }
        Ok(())
    }

    /// Starts a block: fresh zeroed shared variables (the dynamic one of
    /// `dynamic_shared` bytes) and `gangs` empty stacks.
    pub(crate) fn begin_block(
        &mut self,
        module: &Module,
        gangs: usize,
        dynamic_shared: u32,
    ) -> Result<(), String> {
        self.shared.clear();
        self.shared_addrs.clear();
        for s in module.shared.values() {
            if u64::from(s.align) > ALLOC_ALIGN {
                return Err(format!("shared `{}` wants alignment {}", s.name, s.align));
            }
            let addr = self
                .shared
                .alloc(vec![0; s.bytes(dynamic_shared) as usize], &s.name, false)
                .map_err(|_| "shared memory exhausted".to_string())?;
            self.shared_addrs.push(addr);
        }
        self.stacks.resize_with(gangs, Stack::default);
        for s in &mut self.stacks {
            s.slots.clear();
            s.top = 0;
        }
        Ok(())
    }

    pub(crate) fn shared_address(&self, sv: SharedVar) -> u64 {
        self.shared_addrs[sv.as_u32() as usize]
    }

    pub(crate) fn stack_mark(&self, gang: usize) -> StackMark {
        let s = &self.stacks[gang];
        StackMark {
            slots: s.slots.len(),
            top: s.top,
        }
    }

    /// Pushes a frame's stack slots (zeroed), appending their addresses to `addrs`.
    pub(crate) fn push_slots(
        &mut self,
        gang: usize,
        slots: impl Iterator<Item = StackSlotData>,
        addrs: &mut Vec<u64>,
    ) -> Result<(), Fault> {
        let base = PRIVATE_BASE + gang as u64 * PRIVATE_STRIDE;
        let s = &mut self.stacks[gang];
        for slot in slots {
            let off = s.top.next_multiple_of(u64::from(slot.align.max(1)));
            let end = off + u64::from(slot.size);
            if end > STACK_CAPACITY {
                return Err(Fault::StackOverflow);
            }
            if s.data.len() < end as usize {
                s.data.resize(end as usize, 0);
            }
            s.data[off as usize..end as usize].fill(0);
            s.slots.push((off, u64::from(slot.size)));
            s.top = end;
            addrs.push(base + off);
        }
        Ok(())
    }

    /// Pushes `size` zeroed bytes at the next multiple of `align` of `gang`'s stack
    /// (a `stack_alloc`), returning their address; the frame's pop frees them with its
    /// slots. Only the `size` bytes are mapped, so an access past them faults.
    pub(crate) fn push_dynamic(
        &mut self,
        gang: usize,
        size: u64,
        align: u32,
    ) -> Result<u64, Fault> {
        let base = PRIVATE_BASE + gang as u64 * PRIVATE_STRIDE;
        let s = &mut self.stacks[gang];
        let off = s.top.next_multiple_of(u64::from(align.max(1)));
        // Compared before adding, so a size near 2^64 cannot wrap past the check.
        if off > STACK_CAPACITY || size > STACK_CAPACITY - off {
            return Err(Fault::StackOverflow);
        }
        let end = off + size;
        if s.data.len() < end as usize {
            s.data.resize(end as usize, 0);
        }
        s.data[off as usize..end as usize].fill(0);
        s.slots.push((off, size));
        s.top = end;
        Ok(base + off)
    }

    pub(crate) fn pop_to(&mut self, gang: usize, mark: StackMark) {
        let s = &mut self.stacks[gang];
        s.slots.truncate(mark.slots);
        s.top = mark.top;
    }

    /// The bytes `[addr, addr + size)` for an access by `gang` through `space`.
    #[inline]
    fn locate(
        &mut self,
        addr: u64,
        size: u32,
        space: Space,
        gang: usize,
        write: bool,
    ) -> Result<&mut [u8], Fault> {
        if addr < GLOBAL_BASE {
            return Err(Fault::Null);
        }
        if !addr.is_multiple_of(u64::from(size)) {
            return Err(Fault::Misaligned { size });
        }
        let len = u64::from(size);
        let (region, ok) = if addr < SHARED_BASE {
            ("global", matches!(space, Space::Global | Space::Param))
        } else if addr < PRIVATE_BASE {
            ("shared", space == Space::Shared)
        } else {
            ("private", space == Space::Private)
        };
        if !ok && space != Space::Generic {
            return Err(Fault::WrongSpace { space, region });
        }
        if addr < PRIVATE_BASE {
            let arena = if addr < SHARED_BASE {
                &mut self.global
            } else {
                &mut self.shared
            };
            let i = arena.find(addr, len)?;
            let a = &mut arena.allocs[i];
            if write && (a.read_only || space == Space::Param) {
                return Err(Fault::ReadOnly {
                    name: a.name.clone(),
                });
            }
            let off = (addr - a.base) as usize;
            return Ok(&mut a.data[off..off + size as usize]);
        }
        let owner = (addr - PRIVATE_BASE) / PRIVATE_STRIDE;
        if owner != gang as u64 {
            return Err(Fault::OtherGang { owner });
        }
        let off = (addr - PRIVATE_BASE) % PRIVATE_STRIDE;
        let s = &mut self.stacks[gang];
        let i = s.slots.partition_point(|&(o, _)| o <= off);
        match i.checked_sub(1).map(|j| s.slots[j]) {
            Some((o, n)) if off + len <= o + n => {
                Ok(&mut s.data[off as usize..(off + len) as usize])
            }
            _ => Err(Fault::Unmapped { near: None }),
        }
    }

    /// Reads `size` bytes (little-endian, zero-extended).
    #[inline]
    pub(crate) fn read(
        &mut self,
        addr: u64,
        size: u32,
        space: Space,
        gang: usize,
    ) -> Result<u64, Fault> {
        let bytes = self.locate(addr, size, space, gang, false)?;
        let mut buf = [0u8; 8];
        buf[..bytes.len()].copy_from_slice(bytes);
        Ok(u64::from_le_bytes(buf))
    }

    /// Writes the low `size` bytes of `value` (little-endian).
    #[inline]
    pub(crate) fn write(
        &mut self,
        addr: u64,
        size: u32,
        value: u64,
        space: Space,
        gang: usize,
    ) -> Result<(), Fault> {
        let bytes = self.locate(addr, size, space, gang, true)?;
        bytes.copy_from_slice(&value.to_le_bytes()[..size as usize]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_separated_by_unmapped_gaps() {
        let mut m = Memory::new();
        let a = m.add_buffer(vec![1, 2, 3, 4, 5, 6, 7, 8], "a");
        let b = m.add_buffer(vec![0; 4], "b");
        assert!(a >= GLOBAL_BASE && b > a + 8 + GUARD - 1);
        assert_eq!(a % ALLOC_ALIGN, 0);
        assert_eq!(m.read(a + 4, 4, Space::Global, 0), Ok(0x0807_0605));
        assert!(matches!(
            m.read(a + 8, 4, Space::Global, 0),
            Err(Fault::Unmapped { near: Some(_) })
        ));
        assert_eq!(
            m.read(a + 2, 4, Space::Generic, 0),
            Err(Fault::Misaligned { size: 4 })
        );
        assert_eq!(m.read(8, 4, Space::Generic, 0), Err(Fault::Null));
        assert!(matches!(
            m.write(b, 4, 1, Space::Shared, 0),
            Err(Fault::WrongSpace { .. })
        ));
        m.write(b, 2, 0xbeef, Space::Global, 0).unwrap();
        assert_eq!(m.buffer(b), Some(&[0xef, 0xbe, 0, 0][..]));
    }

    #[test]
    fn stacks_are_per_gang_and_pop_with_their_frames() {
        let mut m = Memory::new();
        m.begin_block(&Module::new(4, 8), 2, 0).unwrap();
        let mark = m.stack_mark(1);
        let mut addrs = Vec::new();
        let slot = StackSlotData { size: 8, align: 8 };
        m.push_slots(1, [slot, slot].into_iter(), &mut addrs)
            .unwrap();
        assert_eq!(addrs[0], PRIVATE_BASE + PRIVATE_STRIDE);
        m.write(addrs[1], 8, 42, Space::Private, 1).unwrap();
        assert_eq!(m.read(addrs[1], 8, Space::Generic, 1), Ok(42));
        assert_eq!(
            m.read(addrs[1], 8, Space::Private, 0),
            Err(Fault::OtherGang { owner: 1 })
        );
        m.pop_to(1, mark);
        assert!(matches!(
            m.read(addrs[1], 8, Space::Private, 1),
            Err(Fault::Unmapped { .. })
        ));
    }

    #[test]
    fn dynamic_allocations_are_aligned_bounded_and_pop_with_their_frame() {
        let mut m = Memory::new();
        m.begin_block(&Module::new(4, 8), 1, 0).unwrap();
        let mark = m.stack_mark(0);
        let mut addrs = Vec::new();
        let slot = StackSlotData { size: 4, align: 4 };
        m.push_slots(0, [slot].into_iter(), &mut addrs).unwrap();
        let a = m.push_dynamic(0, 12, 64).unwrap();
        assert_eq!(a % 64, 0);
        m.write(a + 8, 4, 7, Space::Private, 0).unwrap();
        assert!(m.read(a + 12, 4, Space::Private, 0).is_err());
        assert_eq!(m.push_dynamic(0, u64::MAX, 64), Err(Fault::StackOverflow));
        assert_eq!(
            m.push_dynamic(0, STACK_CAPACITY, 64),
            Err(Fault::StackOverflow)
        );
        m.pop_to(0, mark);
        assert!(m.read(a + 8, 4, Space::Private, 0).is_err());
    }
}
