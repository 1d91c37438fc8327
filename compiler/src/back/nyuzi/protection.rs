//! The memory a launch's code may touch, for checked runs on the simulator
//! (`spmdc run --target nyuzi`; `--no-bounds-check` turns it off).
//!
//! The hardware has no bounds checks: `out[16]` on a 16-element buffer reads or
//! writes the padding or the next buffer, and a store through a null pointer
//! overwrites the start-up code. The interpreter and dac-gpu trap on those, so
//! without a check here a wrong program gives silently different results on Nyuzi.
//! The image layout ([`super::layout`]) knows every region, so the run hands the
//! simulator a [`Protection`] built from it:
//!
//! - the module's data (its globals), writable;
//! - the parameter block, read-only (arguments are passed in registers and on the
//!   stack; the runtime, which writes it, is not checked);
//! - each buffer exactly, from its first byte to its last (not the padding to the
//!   next 64-byte boundary), read-only when declared `const`; and, read-only, its
//!   padding up to the next 4-byte boundary: a varying load of 8- or 16-bit
//!   elements gathers the 32-bit word that holds each one, which for the last
//!   elements of a buffer whose size is not a multiple of 4 ends in that padding;
//! - per worker: its shared memory and its gangs' stacks, writable, and its context
//!   records, read-only (the kernel reads its gang's launch indices there).
//!
//! Everything else is off limits to kernel code: the runtime and the code itself, the
//! thread table, the scheduler records, the gaps between regions. The runtime (the
//! start-up stub and block scheduler, below [`Layout::runtime`]'s end) manages those
//! records and is trusted. An access outside the regions is a trap at its source line.

use sim::nyuzi::{Protection, Region};

use super::abi::ctx;
use super::layout::Layout;
use super::runtime::sched;

/// The protection of a launch laid out as `layout`.
pub fn of_layout(layout: &Layout) -> Protection {
    let mut regions = vec![
        region(layout.data.start, layout.data.end, true),
        region(layout.params.start, layout.params.end, false),
    ];
    regions.extend(
        layout
            .buffers
            .iter()
            .map(|b| region(b.address, b.address.saturating_add(b.bytes), !b.read_only)),
    );
    let stacks_offset = layout.stacks.start - layout.scheduler_base;
    for w in 0..layout.threads_used {
        let base = layout.scheduler(w);
        let shared = base + sched::SIZE;
        let contexts = shared + layout.shared_bytes;
        let stacks = base + stacks_offset;
        regions.push(region(shared, contexts, true));
        regions.push(region(
            contexts,
            contexts + layout.gangs_per_block * ctx::SIZE,
            false,
        ));
        regions.push(region(stacks, base + layout.thread_area_bytes, true));
    }
    // Last, so they take no byte another region has.
    regions.extend(layout.buffers.iter().map(|b| {
        let end = b.address.saturating_add(b.bytes);
        region(end, end.next_multiple_of(4), false)
    }));
    Protection::new(regions, (layout.runtime.start, layout.runtime.end))
}

fn region(start: u32, end: u32, writable: bool) -> Region {
    Region {
        start,
        end,
        writable,
    }
}

/// What lies at `addr`, an address outside every region a kernel may access: the
/// buffer it is nearest to (past its end or before its start), or the part of the
/// image it falls in.
pub fn describe_outside(layout: &Layout, addr: u32) -> String {
    // The runtime starts at address 0: a null pointer, or one plus a small offset.
    if addr < layout.runtime.end {
        return "through a null pointer".to_string();
    }
    if addr < layout.code.end {
        return "into the program's code (a wild pointer)".to_string();
    }
    if let Some(b) = layout
        .buffers
        .iter()
        .find(|b| (b.address..b.address.saturating_add(b.bytes)).contains(&addr))
    {
        return format!("a store into the `const` buffer `{}`", b.name);
    }
    let nearest = layout.buffers.iter().min_by_key(|b| {
        let end = b.address.saturating_add(b.bytes);
        if addr < b.address {
            b.address - addr
        } else {
            addr.saturating_sub(end)
        }
    });
    let near_buffer = nearest.and_then(|b| {
        let end = b.address.saturating_add(b.bytes);
        let range = format!("`{}` ({:#x}..{:#x})", b.name, b.address, end);
        // Within the 64-byte alignment padding or a few elements away: the buffer
        // indexed past its bounds.
        if addr >= end && addr - end < 4096 {
            Some(format!(
                "{} bytes past the end of buffer {range}",
                addr - end
            ))
        } else if addr < b.address && b.address - addr <= 4096 {
            Some(format!(
                "{} bytes before the start of buffer {range}",
                b.address - addr
            ))
        } else {
            None
        }
    });
    if let Some(d) = near_buffer {
        return d;
    }
    if (layout.threads.start..layout.threads.end).contains(&addr) {
        return "in the runtime's records of a hardware thread".to_string();
    }
    "outside every buffer, stack and shared memory of the launch".to_string()
}
