//! Comparing an output of spmdc with ISPC's, element by element.

use crate::launch::{ElemType, Value};

use super::manifest::Rule;

/// The outcome of comparing one buffer (or returned value).
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Elements compared (of ISPC's output).
    pub elements: usize,
    /// Elements whose bits differ (NaN matches NaN).
    pub differing: usize,
    /// The largest relative difference among floating-point elements.
    pub max_rel: f64,
    /// The largest difference among integer elements, in units.
    pub max_units: u64,
    /// The first element that breaks the rule: index, spmdc's value, ISPC's value.
    pub first_bad: Option<(usize, String, String)>,
    /// spmdc's and ISPC's lengths in bytes, when they differ.
    pub length_mismatch: Option<(usize, usize)>,
    pub verdict: Verdict,
}

/// Whether an output meets its rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Bit for bit.
    Exact,
    /// Some elements differ, all within the rule's tolerance.
    WithinTolerance,
    /// An element breaks the rule (or the lengths differ).
    Differs,
}

/// Whether `a` and `b` are the same value: the same bits, or both NaN.
fn same(a: Value, b: Value) -> bool {
    a.to_bits() == b.to_bits() || (is_nan(a) && is_nan(b))
}

fn is_nan(v: Value) -> bool {
    matches!(v, Value::F32(x) if x.is_nan()) || matches!(v, Value::F64(x) if x.is_nan())
}

/// `|a - b| / max(|a|, |b|)`: 0 for equal values, infinite when only one is NaN or
/// the values are infinities of different signs.
pub fn relative_difference(a: f64, b: f64) -> f64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0.0;
    }
    let d = (a - b).abs();
    if !d.is_finite() {
        return f64::INFINITY;
    }
    d / a.abs().max(b.abs())
}

/// Compares spmdc's bytes `ours` with ISPC's `theirs`, both holding elements of
/// `elem`, under `rule`.
pub fn compare(elem: ElemType, ours: &[u8], theirs: &[u8], rule: Rule) -> Comparison {
    let size = elem.size();
    let elements = theirs.len() / size;
    let mut c = Comparison {
        elements,
        differing: 0,
        max_rel: 0.0,
        max_units: 0,
        first_bad: None,
        length_mismatch: (ours.len() != theirs.len()).then_some((ours.len(), theirs.len())),
        verdict: Verdict::Exact,
    };
    let mut first_differing = None;
    let n = elements.min(ours.len() / size);
    for i in 0..n {
        let at = i * size..(i + 1) * size;
        let (Some(a), Some(b)) = (
            Value::from_le_bytes(elem, &ours[at.clone()]),
            Value::from_le_bytes(elem, &theirs[at]),
        ) else {
            continue;
        };
        if same(a, b) {
            continue;
        }
        c.differing += 1;
        first_differing.get_or_insert(i);
        let within = if elem.is_float() {
            let rel = relative_difference(a.as_f64(), b.as_f64());
            c.max_rel = c.max_rel.max(rel);
            matches!(rule, Rule::Relative(tol) if rel <= tol)
        } else {
            let units = (a.as_f64() - b.as_f64()).abs();
            c.max_units = c.max_units.max(units as u64);
            matches!(rule, Rule::Units(n) if units <= f64::from(n))
        };
        if !within && c.first_bad.is_none() {
            c.first_bad = Some((i, a.to_string(), b.to_string()));
        }
    }
    c.verdict = if c.length_mismatch.is_some() || c.first_bad.is_some() {
        Verdict::Differs
    } else if c.differing > 0 {
        Verdict::WithinTolerance
    } else {
        Verdict::Exact
    };
    if c.first_bad.is_none() && c.length_mismatch.is_some() {
        let i = first_differing.unwrap_or(n);
        c.first_bad = Some((i, "(end)".into(), "(more)".into()));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn equal_bits_are_exact_and_nan_matches_nan() {
        let a = f32s(&[1.0, f32::NAN, -0.0]);
        let b = f32s(&[1.0, f32::from_bits(0x7fc0_0001), -0.0]);
        let c = compare(ElemType::F32, &a, &b, Rule::Exact);
        assert_eq!(c.verdict, Verdict::Exact);
        assert_eq!((c.elements, c.differing), (3, 0));
    }

    #[test]
    fn integers_may_differ_by_the_units_rule_and_floats_not() {
        let c = compare(ElemType::U8, &[7, 9, 200], &[6, 9, 201], Rule::Units(1));
        assert_eq!(c.verdict, Verdict::WithinTolerance);
        assert_eq!((c.differing, c.max_units), (2, 1));
        let c = compare(ElemType::U8, &[8, 9], &[6, 9], Rule::Units(1));
        assert_eq!(c.verdict, Verdict::Differs);
        assert_eq!(c.first_bad, Some((0, "8".into(), "6".into())));
        let c = compare(ElemType::F32, &f32s(&[1.0]), &f32s(&[1.5]), Rule::Units(1));
        assert_eq!(c.verdict, Verdict::Differs);
    }

    #[test]
    fn zero_signs_differ_under_the_exact_rule() {
        let c = compare(ElemType::F32, &f32s(&[0.0]), &f32s(&[-0.0]), Rule::Exact);
        assert_eq!(c.verdict, Verdict::Differs);
        assert_eq!(c.first_bad, Some((0, "0".into(), "-0.0".into())));
    }

    #[test]
    fn a_tolerance_admits_small_relative_differences_only() {
        let ours = f32s(&[1.0, 100.0, 3.0, 2.0]);
        let theirs = f32s(&[1.0, 100.0005, 3.0, 2.5]);
        let c = compare(ElemType::F32, &ours, &theirs, Rule::Relative(1e-5));
        assert_eq!(c.verdict, Verdict::Differs);
        assert_eq!(c.differing, 2);
        assert_eq!(c.first_bad.as_ref().map(|f| f.0), Some(3));
        assert!((c.max_rel - 0.2).abs() < 1e-9, "{}", c.max_rel);
        let c = compare(
            ElemType::F32,
            &ours[..12],
            &theirs[..12],
            Rule::Relative(1e-5),
        );
        assert_eq!(c.verdict, Verdict::WithinTolerance);
        assert_eq!(c.differing, 1);
        assert!(c.max_rel > 4e-6 && c.max_rel < 6e-6, "{}", c.max_rel);
    }

    #[test]
    fn nan_against_a_number_breaks_any_tolerance() {
        let c = compare(
            ElemType::F64,
            &f64::NAN.to_le_bytes(),
            &1.0f64.to_le_bytes(),
            Rule::Relative(0.5),
        );
        assert_eq!(c.verdict, Verdict::Differs);
        assert_eq!(c.max_rel, f64::INFINITY);
    }

    #[test]
    fn integers_are_always_exact_and_lengths_must_agree() {
        let a: Vec<u8> = [1i32, 2, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b: Vec<u8> = [1i32, 2, 4].iter().flat_map(|x| x.to_le_bytes()).collect();
        let c = compare(ElemType::I32, &a, &b, Rule::Relative(0.9));
        assert_eq!(c.verdict, Verdict::Differs);
        assert_eq!(c.first_bad, Some((2, "3".into(), "4".into())));
        let c = compare(ElemType::I32, &a[..8], &a, Rule::Exact);
        assert_eq!(c.verdict, Verdict::Differs);
        assert_eq!(c.length_mismatch, Some((8, 12)));
    }
}
