//! The process's heap: small blocks from one allocator, larger ones from another.
//!
//! A compile allocates tens of thousands of small nodes, and tables (instruction
//! arenas, per-value side tables, liveness sets, block lists) that grow by doubling
//! and are freed when their pass ends. mimalloc serves small blocks fastest, but keeps
//! each size class in pages of its own, so the memory a freed table leaves is reused
//! only by a block of the same class, and each new size touches fresh pages. On the
//! 2-core VM a first touch of a page costs about 2 us (a page fault, then zeroing),
//! more than a compile's allocator calls. glibc's allocator carves blocks of every
//! size from one heap and coalesces them when freed, so the pages one table leaves
//! are the next one's, but it takes more instructions per call than mimalloc.
//!
//! [`SizeSplit`] sends each block to one of two allocators by its size, which Rust
//! gives again on every free and reallocation, so each block returns to the
//! allocator that made it; a reallocation across the threshold moves the block.
//! The binary puts blocks under 1 KiB in mimalloc (its version 2: version 3 reserves
//! and initializes a 1 GiB arena's bitmaps at start, about 70 more page faults a
//! process) and the rest in glibc's allocator. Over the 56 example compiles
//! (`--emit asm`, both targets; faults summed with `perf stat`, instructions with
//! callgrind), on 2026-11-30:
//!
//! | heap | page faults | instructions |
//! |---|---:|---:|
//! | mimalloc 3 alone (before) | 43,379 | 946.4 M |
//! | mimalloc 3 under 256 B, glibc above | 33,071 | 944.9 M |
//! | mimalloc 2 under 256 B, glibc above | 31,266 | 940.9 M |
//! | mimalloc 2 under 1 KiB, glibc above (this) | 31,174 | 927.6 M |
//! | mimalloc 2 under 4 KiB, glibc above | 33,716 | 922.7 M |
//! | mimalloc 2 alone | 41,547 | |
//! | glibc alone | 27,376 | 1,061.9 M |
//!
//! The rows come from three sittings, and fault counts move by up to 10% between
//! sittings (the two threads split the work differently, and the machine was shared);
//! in the last one, mimalloc 3 alone had 43,233, this heap 34,878 and glibc alone
//! 29,742.

use std::alloc::{GlobalAlloc, Layout};

/// Sets glibc's allocator up for a short process that grows its heap a few MB at a
/// time: it asks the kernel for 16 MiB beyond each request (`M_TOP_PAD`), so that the
/// heap of a thread other than the main one, which glibc grows by `mprotect`, does not
/// take a system call for every 128 KiB (tricubic's compile made 147 `mprotect` calls,
/// now 14). The pages are touched only when used, so the resident set does not grow.
/// Call it before the first allocation of 1 KiB or more; elsewhere than glibc it does
/// nothing.
pub fn tune_system_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a parameter of the allocator; glibc takes its lock.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 16 << 20);
    }
}

/// Blocks of at least `LARGE` bytes come from `L`, smaller ones from `S`.
pub struct SizeSplit<S, L, const LARGE: usize>(pub S, pub L);

impl<S: GlobalAlloc, L: GlobalAlloc, const LARGE: usize> SizeSplit<S, L, LARGE> {
    fn is_large(size: usize) -> bool {
        size >= LARGE
    }
}

// SAFETY: each block is allocated, reallocated and freed by the allocator its size
// selects; a reallocation that changes side allocates on the new side, copies the
// bytes both sizes hold and frees the old block on the old side.
unsafe impl<S: GlobalAlloc, L: GlobalAlloc, const LARGE: usize> GlobalAlloc
    for SizeSplit<S, L, LARGE>
{
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe {
            if Self::is_large(layout.size()) {
                self.1.alloc(layout)
            } else {
                self.0.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe {
            if Self::is_large(layout.size()) {
                self.1.alloc_zeroed(layout)
            } else {
                self.0.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from the side its size selects (see `alloc`).
        unsafe {
            if Self::is_large(layout.size()) {
                self.1.dealloc(ptr, layout)
            } else {
                self.0.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (was_large, is_large) = (Self::is_large(layout.size()), Self::is_large(new_size));
        // SAFETY: forwarded with the caller's guarantees; across sides, the new
        // block holds `min(old, new)` bytes copied before the old one is freed.
        unsafe {
            match (was_large, is_large) {
                (false, false) => self.0.realloc(ptr, layout, new_size),
                (true, true) => self.1.realloc(ptr, layout, new_size),
                _ => {
                    let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                    let new = self.alloc(new_layout);
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    new
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;
    use std::sync::atomic::{AtomicIsize, Ordering};

    /// The system allocator, counting the blocks it holds.
    struct Side(AtomicIsize);

    // SAFETY: forwarded to `System` unchanged; the counter is bookkeeping only.
    unsafe impl GlobalAlloc for Side {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            self.0.fetch_add(1, Ordering::Relaxed);
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            self.0.fetch_sub(1, Ordering::Relaxed);
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    type Split = SizeSplit<Side, Side, 64>;

    fn split() -> Split {
        SizeSplit(Side(AtomicIsize::new(0)), Side(AtomicIsize::new(0)))
    }

    fn held(heap: &Split) -> (isize, isize) {
        (
            heap.0 .0.load(Ordering::Relaxed),
            heap.1 .0.load(Ordering::Relaxed),
        )
    }

    #[test]
    fn each_block_is_freed_by_the_allocator_its_size_chose() {
        let heap = split();
        let small = Layout::from_size_align(63, 8).unwrap();
        let large = Layout::from_size_align(64, 8).unwrap();
        unsafe {
            let a = heap.alloc(small);
            let b = heap.alloc_zeroed(large);
            assert_eq!(held(&heap), (1, 1));
            assert!(std::slice::from_raw_parts(b, 64).iter().all(|&x| x == 0));
            heap.dealloc(a, small);
            heap.dealloc(b, large);
        }
        assert_eq!(held(&heap), (0, 0));
    }

    #[test]
    fn a_reallocation_across_the_threshold_moves_the_bytes_both_ways() {
        let heap = split();
        let small = Layout::from_size_align(40, 16).unwrap();
        unsafe {
            let p = heap.alloc(small);
            for i in 0..40 {
                *p.add(i) = i as u8;
            }
            let grown = heap.realloc(p, small, 200);
            assert_eq!(
                held(&heap),
                (0, 1),
                "the grown block lives on the large side"
            );
            assert_eq!(grown as usize % 16, 0, "alignment is kept");
            let bytes: Vec<u8> = std::slice::from_raw_parts(grown, 40).to_vec();
            assert_eq!(bytes, (0..40).collect::<Vec<u8>>());
            let large = Layout::from_size_align(200, 16).unwrap();
            let shrunk = heap.realloc(grown, large, 10);
            assert_eq!(
                held(&heap),
                (1, 0),
                "the shrunk block is back on the small side"
            );
            let bytes: Vec<u8> = std::slice::from_raw_parts(shrunk, 10).to_vec();
            assert_eq!(bytes, (0..10).collect::<Vec<u8>>());
            heap.dealloc(shrunk, Layout::from_size_align(10, 16).unwrap());
        }
        assert_eq!(held(&heap), (0, 0));
    }

    #[test]
    fn a_reallocation_on_one_side_stays_there() {
        let heap = split();
        let large = Layout::from_size_align(100, 8).unwrap();
        unsafe {
            let p = heap.alloc(large);
            *p = 7;
            let q = heap.realloc(p, large, 5000);
            assert_eq!(held(&heap), (0, 1));
            assert_eq!(*q, 7);
            heap.dealloc(q, Layout::from_size_align(5000, 8).unwrap());
        }
        assert_eq!(held(&heap), (0, 0));
    }
}
