//! The generator's random numbers: SplitMix64, the same generator `random(N,SEED)`
//! buffers use (lang-spec/run.md, [`crate::launch::random`]), so a seed means the
//! same program on every machine and in every build. Nothing here depends on the
//! platform or on hashing order.

use crate::launch::random::SplitMix64;

/// A SplitMix64 stream with the draws the generator needs.
#[derive(Clone, Debug)]
pub struct Rng {
    bits: SplitMix64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng {
            bits: SplitMix64::new(seed),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.bits.next_u64()
    }

    /// A number in `0..n` (`n > 0`), without modulo bias worth speaking of for the
    /// small ranges the generator uses.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// An index into `weights`, each chosen in proportion to its weight (at least one
    /// weight must be positive).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut r = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if r < u64::from(w) {
                return i;
            }
            r -= u64::from(w);
        }
        weights.len() - 1
    }

    /// A new stream for a sub-task, so that adding draws to one part of the generator
    /// does not shift every later part.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_documented_splitmix64_sequence() {
        // lang-spec/run.md: with seed 1, `random(8)` into an int buffer starts 56, 74.
        let mut r = Rng::new(1);
        assert_eq!(((u128::from(r.next_u64()) * 100) >> 64) as u64, 56);
        assert_eq!(((u128::from(r.next_u64()) * 100) >> 64) as u64, 74);
    }

    #[test]
    fn weighted_never_picks_a_zero_weight() {
        let mut r = Rng::new(7);
        for _ in 0..1000 {
            assert_ne!(r.weighted(&[3, 0, 5]), 1);
        }
    }
}
