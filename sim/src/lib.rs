//! Simulators for spmdc's targets: the Nyuzi 16-lane vector machine and the `dac-gpu`
//! SIMT GPU with decoupled affine computation. This crate knows nothing of the
//! compiler; the ISA definitions it holds are shared with the back ends.
//!
//! Besides the machines (`nyuzi`, `gpu`, the memory hierarchy they share in `mem`,
//! and the plain recording data of `record`), the crate holds the launch geometry that
//! every target and the reference interpreter share.

pub mod energy;
pub mod fp16;
pub mod gpu;
pub mod mem;
pub mod nyuzi;
pub mod progress;
pub mod record;

/// A launch's extent in up to three dimensions (`--grid`, `--block`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const ONE: Dim3 = Dim3 { x: 1, y: 1, z: 1 };

    pub fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// The number of elements (threads or blocks); three `u32`s always fit in a `u64`.
    pub fn count(self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }

    /// Parses `X[,Y[,Z]]` with every extent at least 1.
    pub fn parse(text: &str) -> Result<Dim3, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(format!("expected X[,Y[,Z]], got `{text}`"));
        }
        let mut v = [1u32; 3];
        for (slot, p) in v.iter_mut().zip(&parts) {
            *slot = p
                .parse::<u32>()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("`{p}` is not a positive integer extent"))?;
        }
        Ok(Dim3::new(v[0], v[1], v[2]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dims() {
        assert_eq!(Dim3::parse("4").unwrap(), Dim3::new(4, 1, 1));
        assert_eq!(Dim3::parse("4, 2,3").unwrap(), Dim3::new(4, 2, 3));
        assert!(Dim3::parse("0").is_err());
        assert!(Dim3::parse("1,2,3,4").is_err());
        assert!(Dim3::parse("x").is_err());
        assert_eq!(Dim3::new(2, 3, 4).count(), 24);
    }
}
