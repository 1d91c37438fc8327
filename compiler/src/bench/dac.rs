//! `spmdc bench dac`: Decoupled Affine Computation against the baseline on the
//! dac-gpu timing model. The suite is `examples/suites/dac.toml` (`compare` layout:
//! each kernel compiled without and with the decoupling pass, both runs checked
//! against the interpreter, a row comparing them and geomean rows per class); this
//! module keeps what its geomean rows and chart compute with.

/// The geometric mean of `xs` (NaN when there are none).
pub(super) fn geomean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    if n == 0 {
        f64::NAN
    } else {
        (sum / n as f64).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_of_equal_values_is_that_value() {
        assert!((geomean([2.0, 2.0, 2.0].into_iter()) - 2.0).abs() < 1e-12);
        assert!((geomean([1.0, 4.0].into_iter()) - 2.0).abs() < 1e-12);
        assert!(geomean(std::iter::empty()).is_nan());
    }
}
