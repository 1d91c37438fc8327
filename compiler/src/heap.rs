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
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// The alignment, and largest size, of the heaps glibc makes for threads other than
/// the main one (64-bit: twice the largest mmap threshold).
const THREAD_HEAP: usize = 64 << 20;

/// Makes the calling thread's blocks from glibc start in the second 2 MiB region of its
/// heap. glibc gives each thread but the main one a heap of its own and writes the
/// heap's header at its start, before [`HugePages`] sees any block, so the first region
/// is mapped in 4 KiB pages, and filling it costs a fault per page (512 of the 858 of
/// tricubic's nyuzi compile, on the compiler thread). So this advises the regions
/// after it and takes the rest of the first one ([`fill_region`]) in blocks that are
/// never used nor freed: their pages are never touched (but for one header each), and
/// the thread's blocks come from regions advised before their first touch. It does
/// nothing when the thread's first block is not in its heap's first region (the main
/// thread's heap, or one another thread used before), and elsewhere than glibc;
/// returns whether it filled the region.
pub fn skip_first_heap_region() -> bool {
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    return false;
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: blocks from glibc's allocator, never freed and never accessed.
    unsafe {
        const PROBE: usize = 1 << 10;
        // Kept from the optimizer, which deletes an allocation nothing reads.
        let probe = std::hint::black_box(libc::malloc(PROBE)) as usize;
        let heap_start = probe & !(THREAD_HEAP - 1);
        if probe == 0 || probe / HUGE_PAGE != heap_start / HUGE_PAGE {
            return false;
        }
        // The regions the thread's blocks will fill, before glibc writes its next
        // chunk header in the first of them.
        advise_huge((probe / HUGE_PAGE + 1) * HUGE_PAGE, ADVISE_AHEAD);
        fill_region(probe + PROBE, |size| {
            std::hint::black_box(libc::malloc(size)) as usize
        })
    }
}

/// The largest block [`fill_region`] asks for: under glibc's smallest mmap threshold
/// (128 KiB), so that blocks come from the heap.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
const PIECE: usize = 120 << 10;

/// Takes the rest of the 2 MiB region `end` is in, up to a few bytes before its end (a
/// chunk header's worth), in blocks of at most [`PIECE`] bytes from `alloc` (which
/// returns a block's address, 0 if it has none). Stops when a block is not in the
/// region; returns whether the region was filled.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
fn fill_region(mut end: usize, mut alloc: impl FnMut(usize) -> usize) -> bool {
    let region = end / HUGE_PAGE;
    let next_region = (region + 1) * HUGE_PAGE;
    while end + 256 < next_region {
        let size = (next_region - end - 64).min(PIECE);
        let block = alloc(size);
        if block == 0 || block / HUGE_PAGE != region || block + size > next_region {
            return false;
        }
        end = block + size;
    }
    true
}

/// Size of a transparent huge page (x86-64's and AArch64's with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Regions advised beyond a newly seen one: the 16 MiB glibc grows a heap by.
const ADVISE_AHEAD: usize = 8;

/// Slots of [`HugePages`]'s set of advised regions: a compile's large blocks lie in a
/// few tens of 2 MiB regions (tricubic's nyuzi compile: 9).
const ADVISED_SLOTS: usize = 256;

/// An allocator `A` whose blocks' 2 MiB regions are marked for transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`), as glibc's own `glibc.malloc.hugetlb=1` tunable does
/// for its heap (which a process cannot set for itself once it runs).
///
/// A compile first touches each page of its heap once, and on the 2-core VM each such
/// page fault costs about 2 us: tricubic's nyuzi compile took 1,615 faults. Where the
/// system runs transparent huge pages in `madvise` mode, one fault then maps a whole
/// 2 MiB page. Only the large side's blocks are advised: glibc grows its heaps by 16
/// MiB at a time (`tune_system_heap`), so they fill whole huge pages. mimalloc
/// advises its own segments (its default; the `no_thp` feature would turn that off
/// for the whole process). Each region is
/// advised once per process, recorded in a small lock-free set; when the set is full,
/// further regions go unadvised, which costs only their page faults. Where the kernel
/// has no transparent huge pages, or runs them always or never, the advice changes
/// nothing.
///
/// tricubic's nyuzi compile: 1,615 page faults before, 1,265 with the advice (the
/// first region of each glibc thread heap holds the heap's header, written before
/// any block is seen, so it stays in small pages), peak resident set 16.1 to 16.4
/// MB, median wall time 10.9 to 10.2 ms (`python3 tests/compile_speed/medians.py
/// --runs 11`, 2026-11-30; the other 55 example compiles 0.1-0.7 ms faster). With
/// mimalloc's huge pages on as well: 796 faults, 20.3 MB, and 0.4 ms less again
/// (9.14 to 8.77 ms, medians of 40 alternating runs); the largest peak resident set
/// of the 56 example compiles is 22 MB (`spmdc check` of mandelbrot: 9.7 to 14.0
/// MB). When they were turned off (46a9830), mimalloc served every block and huge
/// pages doubled the resident set; with only blocks under 1 KiB in mimalloc, they no
/// longer do.
pub struct HugePages<A> {
    pub inner: A,
    advised: [AtomicUsize; ADVISED_SLOTS],
}

impl<A> HugePages<A> {
    pub const fn new(inner: A) -> Self {
        HugePages {
            inner,
            advised: [const { AtomicUsize::new(0) }; ADVISED_SLOTS],
        }
    }

    /// Advises the regions of the block at `ptr` of `size` bytes not advised before.
    fn advise(&self, ptr: *mut u8, size: usize) {
        if ptr.is_null() || size == 0 {
            return;
        }
        let first = ptr as usize / HUGE_PAGE;
        let last = (ptr as usize + size - 1) / HUGE_PAGE;
        for region in first..=last {
            if self.first_sighting(region) {
                // The heap grows upward into the regions after this one: advise them
                // now, before glibc writes a chunk header there (a region with one
                // page mapped no longer takes a huge page at its first fault).
                for ahead in region + 1..=region + ADVISE_AHEAD {
                    self.first_sighting(ahead);
                }
                advise_huge(region * HUGE_PAGE, ADVISE_AHEAD + 1);
            }
        }
    }

    /// Records `region` (a region number, so never 0 for a heap address) in the set;
    /// whether it was new. Linear probing from its hash, claiming a free slot by
    /// compare-and-swap.
    fn first_sighting(&self, region: usize) -> bool {
        let start = region.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
        for i in 0..ADVISED_SLOTS {
            let slot = &self.advised[(start + i) % ADVISED_SLOTS];
            match slot.compare_exchange(0, region, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(seen) if seen == region => return false,
                Err(_) => {}
            }
        }
        false
    }
}

/// Marks the `regions` 2 MiB regions from `base` for transparent huge pages. Parts
/// that are not mapped are skipped by the kernel (which then reports `ENOMEM`,
/// ignored: the advice is only a hint).
fn advise_huge(base: usize, regions: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: `madvise` with MADV_HUGEPAGE changes no contents and no protection,
    // only how later faults in the range are served; `base` is page-aligned.
    unsafe {
        libc::madvise(
            base as *mut libc::c_void,
            regions * HUGE_PAGE,
            libc::MADV_HUGEPAGE,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (base, regions);
}

// SAFETY: every call is forwarded to `inner` unchanged; the advice changes no bytes.
unsafe impl<A: GlobalAlloc> GlobalAlloc for HugePages<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.inner.alloc(layout) };
        self.advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        self.advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        self.advise(p, new_size);
        p
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

    /// A bump allocator as glibc's heap is one for a new thread: each block after a
    /// 16-byte header, sizes rounded up to 16. Returns the blocks it gave.
    fn bump(at: &mut usize, size: usize) -> usize {
        let block = *at + 16;
        *at = block + size.div_ceil(16) * 16;
        block
    }

    #[test]
    fn the_rest_of_the_region_is_taken_in_blocks_under_the_mmap_threshold() {
        let start = 7 * HUGE_PAGE + 0x10a0;
        let mut top = start;
        let mut sizes = Vec::new();
        let filled = fill_region(start, |size| {
            sizes.push(size);
            bump(&mut top, size)
        });
        assert!(filled);
        assert!(sizes.iter().all(|&s| s <= PIECE), "{sizes:?}");
        // The heap's next block starts within a few bytes of the next region.
        assert!(
            top <= 8 * HUGE_PAGE && top + 256 >= 8 * HUGE_PAGE,
            "top {top:#x}"
        );
    }

    #[test]
    fn a_block_from_outside_the_region_stops_the_filling() {
        let start = 7 * HUGE_PAGE + 0x10a0;
        let mut calls = 0;
        let filled = fill_region(start, |_| {
            calls += 1;
            3 * HUGE_PAGE
        });
        assert!(!filled);
        assert_eq!(calls, 1);
        assert!(!fill_region(start, |_| 0));
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

    #[test]
    fn huge_page_advice_records_each_region_once_and_keeps_the_bytes() {
        let heap = HugePages::new(System);
        assert!(heap.first_sighting(7));
        assert!(!heap.first_sighting(7), "a region is advised once");
        let layout = Layout::from_size_align(3 << 20, 64).unwrap();
        unsafe {
            let p = heap.alloc_zeroed(layout);
            assert!(!p.is_null());
            let region = p as usize / HUGE_PAGE;
            assert!(
                !heap.first_sighting(region + ADVISE_AHEAD),
                "the regions the heap grows into were advised with the block's"
            );
            *p.add(5) = 9;
            let q = heap.realloc(p, layout, 5 << 20);
            assert_eq!(*q.add(5), 9);
            assert_eq!(*q.add(6), 0);
            heap.dealloc(q, Layout::from_size_align(5 << 20, 64).unwrap());
        }
    }

    #[test]
    fn a_full_set_of_regions_declines_new_ones() {
        let heap = HugePages::new(System);
        for region in 1..=ADVISED_SLOTS {
            assert!(heap.first_sighting(region));
        }
        assert!(!heap.first_sighting(ADVISED_SLOTS + 1));
        assert!(!heap.first_sighting(1));
    }
}
