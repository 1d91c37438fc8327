//! The launch shape: `--grid X[,Y[,Z]]` blocks of `--block X[,Y[,Z]]` program
//! instances (see [execution-model.md](../../../lang-spec/execution-model.md)).
//!
//! Defaults: grid 1 and a block of `programCount` instances, which is exactly one gang:
//! an ISPC-style launch. Any positive block size is allowed, not only multiples of
//! `programCount`: a block is split into `ceil(blockSize / programCount)` gangs, and
//! when the size is not a multiple the lanes of the last gang past the end of the
//! block do not exist (they start inactive and stay inactive, even in `unmasked`
//! code). The one hard limit is that the total number of instances,
//! `grid.count() * block.count()`, fits in a `u32`, so every instance has a 32-bit
//! global index.

use sim::Dim3;

use crate::launch::error::{ErrorKind, LaunchError};

/// Grid and block extents of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block: the unsized `shared` array's size.
    pub dynamic_shared: u32,
}

/// The most dynamic shared memory a launch may ask for (16 MiB per block; a machine
/// may allow less, and its target says so).
pub const MAX_DYNAMIC_SHARED: u32 = 1 << 24;

impl LaunchConfig {
    /// The default shape for a target: one block of one gang.
    pub fn single_gang(program_count: u32) -> LaunchConfig {
        LaunchConfig {
            grid: Dim3::ONE,
            block: Dim3::new(program_count.max(1), 1, 1),
            dynamic_shared: 0,
        }
    }

    /// Validates a shape: every extent at least 1, and the total instance count fits
    /// in a `u32`.
    pub fn new(grid: Dim3, block: Dim3) -> Result<LaunchConfig, LaunchError> {
        for (what, d) in [("grid", grid), ("block", block)] {
            if d.x == 0 || d.y == 0 || d.z == 0 {
                return Err(LaunchError::new(
                    ErrorKind::BadConfig,
                    format!(
                        "every {what} extent must be at least 1, got {},{},{}",
                        d.x, d.y, d.z
                    ),
                ));
            }
        }
        let total = u128::from(grid.count()) * u128::from(block.count());
        if total > u128::from(u32::MAX) {
            return Err(LaunchError::new(
                ErrorKind::BadConfig,
                format!(
                    "the launch has {total} program instances ({} blocks of {}); at most {} are allowed",
                    grid.count(),
                    block.count(),
                    u32::MAX
                ),
            )
            .with_help("use fewer or smaller blocks and loop inside the kernel"));
        }
        Ok(LaunchConfig {
            grid,
            block,
            dynamic_shared: 0,
        })
    }

    /// From the `--grid` and `--block` texts (`X[,Y[,Z]]`), each defaulting as in
    /// [`LaunchConfig::single_gang`].
    pub fn from_args(
        grid: Option<&str>,
        block: Option<&str>,
        program_count: u32,
    ) -> Result<LaunchConfig, LaunchError> {
        let default = Self::single_gang(program_count);
        let parse = |flag: &str, text: Option<&str>, dflt: Dim3| {
            match text {
            None => Ok(dflt),
            Some(t) => Dim3::parse(t).map_err(|m| {
                LaunchError::new(ErrorKind::BadConfig, format!("invalid `--{flag} {t}`: {m}"))
                    .with_snippet(t, 0, t.len())
                    .with_help(format!("write `--{flag} X`, `--{flag} X,Y` or `--{flag} X,Y,Z` with positive integers"))
            }),
        }
        };
        let grid = parse("grid", grid, default.grid)?;
        let block = parse("block", block, default.block)?;
        Self::new(grid, block)
    }

    /// This shape with the dynamic shared bytes of `--dynamic-shared BYTES` (none: 0).
    pub fn with_dynamic_shared(self, text: Option<&str>) -> Result<LaunchConfig, LaunchError> {
        let Some(t) = text else {
            return Ok(self);
        };
        let bytes = t
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|&b| b <= MAX_DYNAMIC_SHARED)
            .ok_or_else(|| {
                LaunchError::new(
                    ErrorKind::BadConfig,
                    format!("invalid `--dynamic-shared {t}`: not a byte count up to {MAX_DYNAMIC_SHARED}"),
                )
                .with_snippet(t, 0, t.len())
                .with_help("write the bytes of dynamic shared memory per block, e.g. `--dynamic-shared 1024`")
            })?;
        Ok(LaunchConfig {
            dynamic_shared: bytes,
            ..self
        })
    }

    /// Instances per block.
    pub fn block_size(&self) -> u32 {
        // Validated: the total fits in a u32, so one block does too.
        u32::try_from(self.block.count()).unwrap_or(u32::MAX)
    }

    /// Blocks in the grid.
    pub fn block_count(&self) -> u32 {
        u32::try_from(self.grid.count()).unwrap_or(u32::MAX)
    }

    /// Program instances in the launch.
    pub fn total_threads(&self) -> u32 {
        u32::try_from(self.grid.count() * self.block.count()).unwrap_or(u32::MAX)
    }

    /// Gangs per block: `ceil(blockSize / programCount)`.
    pub fn gangs_per_block(&self, program_count: u32) -> u32 {
        self.block_size().div_ceil(program_count.max(1))
    }

    /// Lanes that exist in the last gang of each block (`programCount` when the block
    /// size is a multiple of it).
    pub fn last_gang_lanes(&self, program_count: u32) -> u32 {
        let pc = program_count.max(1);
        match self.block_size() % pc {
            0 => pc,
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_one_gang() {
        let c = LaunchConfig::from_args(None, None, 16).unwrap();
        assert_eq!(c, LaunchConfig::single_gang(16));
        assert_eq!((c.grid, c.block), (Dim3::ONE, Dim3::new(16, 1, 1)));
        assert_eq!(c.gangs_per_block(16), 1);
        assert_eq!(c.last_gang_lanes(16), 16);
    }

    #[test]
    fn partial_last_gang() {
        let c = LaunchConfig::from_args(Some("4,2"), Some("20"), 16).unwrap();
        assert_eq!(c.grid, Dim3::new(4, 2, 1));
        assert_eq!(c.block_count(), 8);
        assert_eq!(c.total_threads(), 160);
        assert_eq!(c.gangs_per_block(16), 2);
        assert_eq!(c.last_gang_lanes(16), 4);
        let c = LaunchConfig::from_args(None, Some("3"), 16).unwrap();
        assert_eq!(c.gangs_per_block(16), 1);
        assert_eq!(c.last_gang_lanes(16), 3);
    }

    #[test]
    fn rejects_bad_shapes() {
        for (g, b) in [
            (Some("0"), None),
            (None, Some("x")),
            (Some("1,2,3,4"), None),
            (None, Some("-1")),
        ] {
            let e = LaunchConfig::from_args(g, b, 16).unwrap_err();
            assert_eq!(e.kind, ErrorKind::BadConfig);
        }
        let e = LaunchConfig::from_args(Some("65536,65536"), Some("2"), 16).unwrap_err();
        assert!(e.message.contains("program instances"), "{e}");
        assert!(LaunchConfig::new(Dim3::new(0, 1, 1), Dim3::ONE).is_err());
        // Exactly u32::MAX instances is allowed.
        let c = LaunchConfig::new(Dim3::new(65535, 1, 1), Dim3::new(65537, 1, 1)).unwrap();
        assert_eq!(c.total_threads(), u32::MAX);
    }
}
