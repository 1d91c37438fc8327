//! IEEE 754 binary16 (`float16`) conversions, bit for bit: the definition the reference
//! interpreter, the constant folder and the `dac-gpu` `cvt` instructions all share.
//!
//! binary16 has 1 sign bit, 5 exponent bits (bias 15) and 10 fraction bits. Widening to
//! `f32` or `f64` is exact. Narrowing rounds to nearest, ties to even, in one step from
//! the wider value (no intermediate rounding), overflows to infinity and keeps
//! subnormals. A NaN stays a NaN with its sign and the top 10 bits of its payload; a
//! payload that would become zero becomes the quiet NaN, so every binary16 NaN survives
//! the trip through `f32` unchanged.

/// The binary16 bits nearest to `x` (ties to even).
pub fn f16_from_f64(x: f64) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let man = bits & ((1u64 << 52) - 1);
    if exp == 0x7ff {
        return sign | nan_or_inf(man >> 42, man != 0);
    }
    if exp == 0 && man == 0 {
        return sign;
    }
    // x = sig * 2^e exactly, sig with its implicit leading one.
    let (sig, e) = if exp == 0 {
        (man, -1074)
    } else {
        (man | (1u64 << 52), exp - 1075)
    };
    let log2 = 63 - sig.leading_zeros() as i32 + e;
    // The result is m * 2^q: q is the exponent of the last kept bit, never below
    // binary16's subnormal step 2^-24.
    let q = (log2 - 10).max(-24);
    let m = round_shift(sig, q - e);
    // One formula for subnormals (q = -24, m < 2^10) and normals (the leading one of m
    // carries into the exponent field); a rounding carry to 2^11 bumps the exponent.
    let magnitude = (((q + 24) as u64) << 10) + m;
    if magnitude >= 0x7c00 {
        sign | 0x7c00
    } else {
        sign | magnitude as u16
    }
}

/// The binary16 bits nearest to `x` (ties to even): `x` widens to `f64` exactly, so this
/// rounds once. NaNs are read from the bits, since the hardware's widening may quiet them.
pub fn f16_from_f32(x: f32) -> u16 {
    if x.is_nan() {
        let bits = x.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        return sign | nan_or_inf(u64::from((bits >> 13) & 0x3ff), true);
    }
    f16_from_f64(f64::from(x))
}

/// The exact `f32` value of binary16 bits `h`.
pub fn f32_from_f16(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let magnitude = match exp {
        0x1f => 0x7f80_0000 | (man << 13),
        // A subnormal (or zero) is man * 2^-24, exact in f32.
        0 => (man as f32 * f32::from_bits(0x3380_0000)).to_bits(),
        _ => ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(sign | magnitude)
}

/// The exact `f64` value of binary16 bits `h`.
pub fn f64_from_f16(h: u16) -> f64 {
    if h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 {
        let sign = u64::from(h & 0x8000) << 48;
        return f64::from_bits(sign | 0x7ff0_0000_0000_0000 | (u64::from(h & 0x3ff) << 42));
    }
    f64::from(f32_from_f16(h))
}

/// The exponent-and-fraction field of an infinity (`is_nan` false) or of a NaN whose
/// payload's top 10 bits are `top`.
fn nan_or_inf(top: u64, is_nan: bool) -> u16 {
    match (is_nan, top) {
        (false, _) => 0x7c00,
        (true, 0) => 0x7e00,
        (true, t) => 0x7c00 | t as u16,
    }
}

/// `sig / 2^shift` rounded to nearest, ties to even (`shift` may exceed 63).
fn round_shift(sig: u64, shift: i32) -> u64 {
    if shift <= 0 {
        return sig << -shift;
    }
    if shift > 64 {
        return 0;
    }
    let kept = if shift == 64 { 0 } else { sig >> shift };
    let dropped = if shift == 64 {
        sig
    } else {
        sig & ((1u64 << shift) - 1)
    };
    let half = 1u64 << (shift - 1);
    if dropped > half || (dropped == half && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every finite binary16 value in increasing order with its bits (`-0` omitted).
    fn finite_sorted() -> Vec<(f64, u16)> {
        let mut v: Vec<(f64, u16)> = (0..=0xffffu16)
            .filter(|h| h & 0x7c00 != 0x7c00 && *h != 0x8000)
            .map(|h| (f64_from_f16(h), h))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    }

    /// The nearest binary16 by search, ties to the even fraction; the oracle for
    /// the rounding tests.
    fn nearest(table: &[(f64, u16)], x: f64) -> u16 {
        // From 65520, halfway between the largest finite value 65504 and the next
        // step 65536, values round to infinity.
        if x.abs() >= 65520.0 {
            return if x < 0.0 { 0xfc00 } else { 0x7c00 };
        }
        let i = table.partition_point(|(v, _)| *v < x);
        let hi = table[i.min(table.len() - 1)];
        let lo = table[i.saturating_sub(1)];
        let pick = if hi.0 == x {
            hi.1
        } else if (x - lo.0) < (hi.0 - x) {
            lo.1
        } else if (x - lo.0) > (hi.0 - x) {
            hi.1
        } else if lo.1 & 1 == 0 {
            lo.1
        } else {
            hi.1
        };
        // Zero keeps the sign of x.
        if pick & 0x7fff == 0 && x.is_sign_negative() {
            0x8000
        } else {
            pick
        }
    }

    #[test]
    fn every_binary16_round_trips_through_f32_and_f64() {
        for h in 0..=0xffffu16 {
            assert_eq!(f16_from_f32(f32_from_f16(h)), h, "{h:#06x}");
            assert_eq!(f16_from_f64(f64_from_f16(h)), h, "{h:#06x}");
        }
    }

    #[test]
    fn widening_gives_the_known_values() {
        assert_eq!(f32_from_f16(0x3c00), 1.0);
        assert_eq!(f32_from_f16(0xc000), -2.0);
        assert_eq!(f32_from_f16(0x7bff), 65504.0);
        assert_eq!(f32_from_f16(0x0001), 2f32.powi(-24));
        assert_eq!(f32_from_f16(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f32_from_f16(0x0400), 2f32.powi(-14));
        assert_eq!(f32_from_f16(0x7c00), f32::INFINITY);
        assert!(f32_from_f16(0x7e00).is_nan());
        assert_eq!(f32_from_f16(0x8000).to_bits(), 0x8000_0000);
    }

    #[test]
    fn halfway_points_round_to_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to the even one, 1.
        assert_eq!(f16_from_f32(1.0 + 2f32.powi(-11)), 0x3c00);
        // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9: up.
        assert_eq!(f16_from_f32(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        // Just above a halfway point rounds up, even when the excess is tiny.
        assert_eq!(f16_from_f32(1.0 + 2f32.powi(-11) + 2f32.powi(-23)), 0x3c01);
        assert_eq!(f16_from_f64(1.0 + 2f64.powi(-11) + 2f64.powi(-52)), 0x3c01);
        // Halfway between the two smallest subnormals.
        assert_eq!(f16_from_f32(1.5 * 2f32.powi(-24)), 0x0002);
        assert_eq!(f16_from_f32(0.5 * 2f32.powi(-24)), 0x0000);
        assert_eq!(f16_from_f32(-0.5 * 2f32.powi(-24)), 0x8000);
        assert_eq!(f16_from_f32(0.5000001 * 2f32.powi(-24)), 0x0001);
    }

    #[test]
    fn overflow_goes_to_infinity_and_nan_stays_nan() {
        assert_eq!(f16_from_f32(65504.0), 0x7bff);
        assert_eq!(f16_from_f32(65519.99), 0x7bff);
        assert_eq!(f16_from_f32(65520.0), 0x7c00);
        assert_eq!(f16_from_f32(-1e10), 0xfc00);
        assert_eq!(f16_from_f64(1e300), 0x7c00);
        assert_eq!(f16_from_f32(f32::INFINITY), 0x7c00);
        assert_eq!(f16_from_f32(f32::NAN) & 0x7e00, 0x7e00);
        // A payload only in the low bits still gives a NaN.
        assert_eq!(f16_from_f32(f32::from_bits(0x7f80_0001)), 0x7e00);
        assert_eq!(f16_from_f64(f64::from_bits(0xfff0_0000_0000_0001)), 0xfe00);
        assert_eq!(f16_from_f64(f64::MIN_POSITIVE), 0);
        assert_eq!(f16_from_f64(-5e-324), 0x8000);
    }

    #[test]
    fn narrowing_matches_a_search_over_all_values() {
        let table = finite_sorted();
        // Every f32 whose exponent is in or near binary16's range, at a stride that
        // visits every low-bit pattern class, plus all halfway points exactly.
        let mut x: u32 = 0x3000_0000;
        while x < 0x4780_0000 {
            for bits in [x, x | 0x8000_0000] {
                let f = f32::from_bits(bits);
                assert_eq!(f16_from_f32(f), nearest(&table, f64::from(f)), "{f:e}");
            }
            x += 0x1fff;
        }
        for w in table.windows(2) {
            let mid = (w[0].0 + w[1].0) / 2.0;
            assert_eq!(f16_from_f64(mid), nearest(&table, mid), "{mid:e}");
        }
    }
}
