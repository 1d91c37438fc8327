//! A DRAM model: fixed access latency plus bandwidth-limited transfers on one or more
//! independent channels (lines interleaved across channels).
//!
//! Each channel keeps the transfers booked on its data bus, in fixed point (1/1024
//! cycle), so fractional bandwidths such as 2.4 bytes/cycle are respected over long
//! streams (a transfer's length is rounded down to 1/1024 cycle). A read that arrives at cycle `t` starts its transfer
//! at `t + latency` or later and its data is ready when the transfer ends; a write
//! starts at `t` (nobody waits for it, but it uses bandwidth), each at the earliest
//! time from then on when the bus is free for the whole transfer. The bus keeps its
//! booked transfers ([`super::calendar`]), so an idle gap before an already booked
//! transfer is filled by a later request that fits in it: a read books its transfer
//! `latency` cycles ahead, and a write or another SM's read made meanwhile for an
//! earlier time goes first, as it would on the bus.

use super::ConfigError;

/// Fixed-point fraction bits of channel time.
const FRAC: u32 = 10;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DramConfig {
    /// Cycles from a read request to the start of its data transfer.
    pub latency: u32,
    /// Total bandwidth in bytes per cycle, split evenly over the channels.
    pub bytes_per_cycle: f64,
    /// Independent channels; consecutive lines go to consecutive channels.
    pub channels: u32,
}

impl DramConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        if !(self.bytes_per_cycle.is_finite() && self.bytes_per_cycle > 0.0) {
            return Err(ConfigError("DRAM bandwidth must be a positive number"));
        }
        if self.channels == 0 {
            return Err(ConfigError("DRAM needs at least one channel"));
        }
        Ok(())
    }
}

/// Bytes of one DRAM burst: GPGPU-Sim's GTX 480 DRAM atom (burst length 8 × a
/// 4-byte bus × 2 chips per partition).
pub const BURST_BYTES: u32 = 64;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DramStats {
    pub reads: u64,
    pub writes: u64,
    pub bytes: u64,
    /// Bursts of [`BURST_BYTES`] read and written (an access takes whole bursts):
    /// the unit an energy model prices DRAM traffic in.
    pub read_bursts: u64,
    pub write_bursts: u64,
    /// Cycles the data buses were transferring (summed over channels, rounded up).
    pub busy_cycles: u64,
    /// Cycles requests waited for a busy bus beyond their latency (summed).
    pub queue_cycles: u64,
}

#[derive(Clone, Debug)]
pub struct Dram {
    cfg: DramConfig,
    /// Per channel: when its bus is busy, in fixed-point cycles.
    busy: Vec<super::calendar::Calendar>,
    /// Fixed-point cycles per byte on one channel.
    fp_per_byte: f64,
    busy_fp: u64,
    stats: DramStats,
}

fn to_fp(cycle: u64) -> u64 {
    cycle << FRAC
}

/// The first whole cycle at or after a fixed-point time.
fn ceil_cycle(fp: u64) -> u64 {
    fp.div_ceil(1 << FRAC)
}

impl Dram {
    pub fn new(cfg: DramConfig) -> Result<Dram, ConfigError> {
        cfg.check()?;
        let per_channel = cfg.bytes_per_cycle / f64::from(cfg.channels);
        Ok(Dram {
            cfg,
            busy: vec![
                super::calendar::Calendar::new(to_fp(super::CALENDAR_CYCLES));
                cfg.channels as usize
            ],
            fp_per_byte: f64::from(1u32 << FRAC) / per_channel,
            busy_fp: 0,
            stats: DramStats::default(),
        })
    }

    pub fn config(&self) -> &DramConfig {
        &self.cfg
    }

    pub fn stats(&self) -> DramStats {
        DramStats {
            busy_cycles: ceil_cycle(self.busy_fp),
            ..self.stats
        }
    }

    /// Transfers `bytes` of line `line` (a line address, for channel interleaving)
    /// requested at cycle `now`. Returns the cycle the transfer ends: for a read, when
    /// the data is at the requester's side of the channel.
    pub fn access(&mut self, line: u64, bytes: u32, write: bool, now: u64) -> u64 {
        let ch = (line % u64::from(self.cfg.channels)) as usize;
        let earliest = if write {
            to_fp(now)
        } else {
            to_fp(now + u64::from(self.cfg.latency))
        };
        // Rounded down to 1/1024 cycle: a stream runs at most that fast per line.
        // The cast truncates, which is the floor of this non-negative product (and
        // avoids a libm call).
        let len = ((f64::from(bytes) * self.fp_per_byte) as u64).max(1);
        let start = self.busy[ch].reserve(earliest, len);
        self.busy_fp += len;
        self.stats.queue_cycles += ceil_cycle(start - earliest);
        self.stats.bytes += u64::from(bytes);
        let bursts = u64::from(bytes.div_ceil(BURST_BYTES).max(1));
        if write {
            self.stats.writes += 1;
            self.stats.write_bursts += bursts;
        } else {
            self.stats.reads += 1;
            self.stats.read_bursts += bursts;
        }
        ceil_cycle(start + len)
    }
}
