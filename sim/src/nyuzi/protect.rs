//! Memory protection for checked runs: which bytes the program may read and write.
//!
//! The real Nyuzi has no such check (its MMU is page-grained, and the images run
//! with it off), so an access past the end of a buffer silently reads or writes
//! whatever lies next to it. A host that knows what each part of memory is for (the
//! launch image's buffers, stacks and shared memory) can give the machine a
//! [`Protection`]: every byte of a data access of code outside the trusted range must
//! then lie within a region (an access may span adjacent regions), and every byte of
//! a store within a writable one, or the access faults with
//! [`super::FaultKind::Protection`] before touching memory. Code in the trusted
//! range (a run-time system managing its own records) is not checked. Without a
//! protection (the default) the machine behaves exactly as the hardware does.

/// One range `[start, end)` of bytes the checked code may access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u32,
    pub end: u32,
    /// Stores are allowed too (else only loads).
    pub writable: bool,
}

/// The regions checked code may access, and the code that is not checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Protection {
    /// Sorted by start, non-overlapping, none empty.
    regions: Vec<Region>,
    /// Instructions at pcs in `[trusted.0, trusted.1)` are not checked.
    trusted: (u32, u32),
}

impl Protection {
    /// A protection allowing `regions` (empty ones are dropped; where two overlap,
    /// the overlap takes the first one's permission) to code outside `trusted`.
    pub fn new(regions: impl IntoIterator<Item = Region>, trusted: (u32, u32)) -> Protection {
        let mut sorted: Vec<Region> = Vec::new();
        for r in regions.into_iter().filter(|r| r.start < r.end) {
            insert_clipped(&mut sorted, r);
        }
        sorted.sort_by_key(|r| r.start);
        Protection {
            regions: sorted,
            trusted,
        }
    }

    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Whether code at `pc` may access `len` bytes from `addr` (`store`: to write).
    #[inline]
    pub fn allows(&self, pc: u32, addr: u32, len: u32, store: bool) -> bool {
        if (self.trusted.0..self.trusted.1).contains(&pc) {
            return true;
        }
        let i = self.regions.partition_point(|r| r.start <= addr);
        let Some(mut i) = i.checked_sub(1) else {
            return false;
        };
        let end = u64::from(addr) + u64::from(len);
        let mut at = u64::from(addr);
        loop {
            let r = &self.regions[i];
            if at >= u64::from(r.end) || (store && !r.writable) {
                return false;
            }
            if end <= u64::from(r.end) {
                return true;
            }
            // The rest must continue in the next region, with no gap.
            at = u64::from(r.end);
            i += 1;
            if self.regions.get(i).is_none_or(|n| u64::from(n.start) != at) {
                return false;
            }
        }
    }
}

/// Adds the parts of `r` that no region of `into` covers yet.
fn insert_clipped(into: &mut Vec<Region>, r: Region) {
    let mut pieces = vec![r];
    for existing in into.iter() {
        pieces = pieces
            .into_iter()
            .flat_map(|p| {
                let below = Region {
                    end: p.end.min(existing.start),
                    ..p
                };
                let above = Region {
                    start: p.start.max(existing.end),
                    ..p
                };
                [below, above]
            })
            .filter(|p| p.start < p.end)
            .collect();
    }
    into.extend(pieces);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(start: u32, end: u32, writable: bool) -> Region {
        Region {
            start,
            end,
            writable,
        }
    }

    #[test]
    fn accesses_must_lie_within_one_region() {
        let p = Protection::new([region(64, 128, true), region(256, 320, false)], (0, 16));
        assert!(p.allows(100, 64, 64, true));
        assert!(p.allows(100, 124, 4, true));
        assert!(!p.allows(100, 126, 4, false), "straddles the end");
        assert!(!p.allows(100, 60, 4, false), "below the first region");
        assert!(!p.allows(100, 128, 4, false), "in the gap");
        assert!(p.allows(100, 256, 4, false));
        assert!(!p.allows(100, 256, 4, true), "read-only");
        assert!(!p.allows(100, 320, 1, false), "past the last region");
        assert!(!p.allows(100, u32::MAX, 4, false));
    }

    #[test]
    fn an_access_may_span_adjacent_regions_with_their_permissions() {
        let p = Protection::new(
            [
                region(64, 86, true),
                region(86, 88, false),
                region(96, 128, true),
            ],
            (0, 0),
        );
        assert!(p.allows(0, 84, 4, false), "a word over both regions");
        assert!(!p.allows(0, 84, 4, true), "its last bytes are read-only");
        assert!(p.allows(0, 84, 2, true));
        assert!(!p.allows(0, 86, 12, false), "a gap between regions");
    }

    #[test]
    fn trusted_code_is_not_checked() {
        let p = Protection::new([region(64, 128, true)], (0, 16));
        assert!(p.allows(12, 0, 4, true));
        assert!(!p.allows(16, 0, 4, true));
    }

    #[test]
    fn overlaps_keep_the_first_permission_and_empty_regions_vanish() {
        let p = Protection::new(
            [
                region(100, 200, false),
                region(50, 300, true),
                region(7, 7, true),
            ],
            (0, 0),
        );
        assert_eq!(
            p.regions(),
            &[
                region(50, 100, true),
                region(100, 200, false),
                region(200, 300, true)
            ]
        );
        assert!(!p.allows(0, 150, 4, true));
        assert!(p.allows(0, 250, 4, true));
    }
}
