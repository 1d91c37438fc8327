//! The deterministic generator behind `random(N[,SEED[,LO,HI]])`.
//!
//! It is SplitMix64 (Steele, Lea and Flood, 2014), chosen because it is tiny, has no
//! bad seeds (seed 0 is fine), and is easy to reproduce in any language, so a test
//! harness outside spmdc can regenerate the same inputs:
//!
//! ```text
//! state = SEED                       (default 1)
//! next():  state += 0x9E3779B97F4A7C15
//!          z = state
//!          z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//!          z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//!          return z ^ (z >> 31)      (all arithmetic wrapping, mod 2^64)
//! ```
//!
//! Each element takes exactly one `next()`, in index order:
//! - floats: `u = (next() >> 11) * 2^-53` is uniform in `[0, 1)`; the element is
//!   `LO + (HI - LO) * u` computed in `double`, then rounded to the element type; a value
//!   that rounds up to `HI` is replaced by the largest value below `HI`, so the range is
//!   always half-open (default `[0, 1)`);
//! - integers: `LO + ((next() as u128 * (HI - LO)) >> 64)`, Lemire's multiply-shift
//!   reduction, uniform in `[LO, HI)` (default `[0, 100)`);
//! - `bool`: `next() >> 63 == 1` (no LO/HI).

/// The SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The seed used when `random(N)` gives none.
    pub const DEFAULT_SEED: u64 = 1;

    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn next_unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, lo + span)`; `span` must be at least 1 and at most 2^64.
    pub fn next_in(&mut self, lo: i128, span: u128) -> i128 {
        let r = (u128::from(self.next_u64()) * span) >> 64;
        lo + r as i128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence() {
        // The reference outputs of SplitMix64 for seed 0 and seed 1.
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut g = SplitMix64::new(1);
        assert_eq!(g.next_u64(), 0x910A_2DEC_8902_5CC1);
    }

    #[test]
    fn ranges() {
        let mut g = SplitMix64::new(42);
        for _ in 0..10_000 {
            let u = g.next_unit_f64();
            assert!((0.0..1.0).contains(&u));
            let v = g.next_in(-3, 7);
            assert!((-3..4).contains(&v));
        }
        // The full u64 span cannot overflow.
        let v = g.next_in(0, 1u128 << 64);
        assert!((0..(1i128 << 64)).contains(&v));
    }
}
