//! The Address Expansion Unit (paper §4.2, Figure 11): turns an address tuple into
//! each non-affine warp's record of cache-line addresses and word masks, without
//! computing thread addresses one by one in a SIMT lane.
//!
//! The hardware keeps one accumulated address per concurrent CTA (⑥), starts it at
//! `base + block offset × block index` once per CTA (①), and steps it a line at a
//! time through the CTA's threads and warps (②③), emitting a line address and the
//! mask of the words (or half words, bytes: the granularity) the warp touches in
//! that line (④). Where `tid.x` wraps in a 2-D or 3-D block the accumulator takes a
//! precomputed adjustment instead of the plain offset (⑦). [`expand`] produces
//! exactly that record for one warp (the lanes' addresses are obtained by the same
//! accumulation, see [`super::tuple::accumulate`]); [`WarpAddrRecord::steps`] counts
//! the line steps the single-ALU unit takes, the basis of its cost model
//! ([`super::DacConfig::aeu_cycles`]).

use super::peu::{self, PredOutcome};
use super::tuple::{accumulate, AffineTuple, GeomError, PredTuple, WarpGeom};
use std::fmt;

/// The largest line/access-size ratio: unit masks are `u128`.
pub const MAX_UNITS_PER_LINE: u32 = 128;

/// One `enq.data` / `enq.addr` operand: the address tuple and the access it makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddrTuple {
    pub tuple: AffineTuple,
    /// Bytes per thread access (1, 2, 4, 8 or 16): the mask granularity.
    pub access_bytes: u32,
    /// 64-bit addresses (`%ad` tuples) when true, else 32-bit (wrapping mod 2^32).
    pub wide: bool,
}

/// One `enq.data.sel` / `enq.addr.sel` operand: a *select tuple*, the address
/// `then` in the threads where `pred` holds and `els` in the others (hotspot's
/// clamped neighbours `r > 0 ? i - cols : i`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SelAddrTuple {
    pub pred: PredTuple,
    /// The `then` address with the access size and width of both arms.
    pub then: AddrTuple,
    pub els: AffineTuple,
}

impl SelAddrTuple {
    /// The `else` arm as an address tuple.
    pub fn els_addr(&self) -> AddrTuple {
        AddrTuple {
            tuple: self.els,
            ..self.then
        }
    }
}

/// One cache line a warp accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LineAccess {
    /// The line's address (a multiple of the line size).
    pub line: u64,
    /// Bit `i`: the access-size unit at `line + i·access_bytes` is accessed (§4.2's
    /// word mask: `111…` for offset 4, `1010…` for offset 8, with 4-byte accesses).
    pub units: u128,
    /// The warp's lanes whose access falls in this line.
    pub lanes: u32,
}

/// A warp's expanded addresses: the PWAQ entry (§4.2 ⑤).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WarpAddrRecord {
    /// Distinct lines in the order the accumulator first reaches them.
    pub lines: Vec<LineAccess>,
    pub access_bytes: u32,
    /// The lanes holding a thread (a partial last warp has fewer).
    pub lane_mask: u32,
    /// Line steps of the accumulator: 1 + the lane boundaries where the line changes
    /// (a line reached again after a row adjustment is a new step, merged into its
    /// earlier entry).
    pub steps: u32,
    /// Within every line, the lanes' addresses strictly ascend with the lane: the
    /// units and lanes then pair up in order (§4.2: the addresses are "mapped to
    /// threads by the bit masks and the line addresses"), and the record determines
    /// every lane's address ([`WarpAddrRecord::lane_address`]). False when lanes
    /// share a unit (stride 0) or descend (negative strides, some 2-D layouts).
    pub ranked: bool,
}

impl WarpAddrRecord {
    /// The address lane `lane` accesses, recovered from the record when it is
    /// [`ranked`](WarpAddrRecord::ranked): the lane's line, and the unit of its rank
    /// among that line's lanes. `None` for a lane without a thread or an unranked
    /// record.
    pub fn lane_address(&self, lane: u32) -> Option<u64> {
        if lane >= 32 {
            return None;
        }
        if !self.ranked {
            return None;
        }
        let la = self.lines.iter().find(|l| l.lanes >> lane & 1 == 1)?;
        let rank = (la.lanes & ((1u32 << lane) - 1)).count_ones();
        let mut units = la.units;
        for _ in 0..rank {
            units &= units - 1;
        }
        Some(la.line + u64::from(units.trailing_zeros()) * u64::from(self.access_bytes))
    }

    /// Memory transactions the record causes (one per line).
    pub fn transactions(&self) -> u32 {
        self.lines.len() as u32
    }
}

/// Why a tuple cannot be expanded into line records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AeuError {
    Geom(GeomError),
    /// The line size is not a power of two.
    LineSize(u32),
    /// The access size is not a power of two dividing the line into at most
    /// [`MAX_UNITS_PER_LINE`] units.
    AccessSize {
        access_bytes: u32,
        line_size: u32,
    },
    /// A lane's address is not a multiple of the access size (the load or store
    /// itself would fault; the timing model leaves it to the non-affine path).
    Misaligned {
        lane: u32,
        addr: u64,
    },
}

impl fmt::Display for AeuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AeuError::Geom(e) => e.fmt(f),
            AeuError::LineSize(l) => write!(f, "line size {l} is not a power of two"),
            AeuError::AccessSize {
                access_bytes,
                line_size,
            } => write!(
                f,
                "access size {access_bytes} does not divide a {line_size}-byte line into at \
                 most {MAX_UNITS_PER_LINE} units"
            ),
            AeuError::Misaligned { lane, addr } => {
                write!(f, "lane {lane} address {addr:#x} is misaligned")
            }
        }
    }
}

impl std::error::Error for AeuError {}

impl From<GeomError> for AeuError {
    fn from(e: GeomError) -> AeuError {
        AeuError::Geom(e)
    }
}

/// Checks the line and access sizes.
pub fn check_sizes(access_bytes: u32, line_size: u32) -> Result<(), AeuError> {
    if !line_size.is_power_of_two() {
        return Err(AeuError::LineSize(line_size));
    }
    let ok = access_bytes.is_power_of_two()
        && access_bytes <= line_size
        && line_size / access_bytes <= MAX_UNITS_PER_LINE;
    if ok {
        Ok(())
    } else {
        Err(AeuError::AccessSize {
            access_bytes,
            line_size,
        })
    }
}

/// Expands `a` for warp `g` into its line record (§4.2): accumulates the lanes'
/// addresses, starts a new line step whenever the line changes, and merges steps
/// that return to a line already in the record.
pub fn expand(a: &AddrTuple, g: &WarpGeom, line_size: u32) -> Result<WarpAddrRecord, AeuError> {
    g.validate()?;
    check_sizes(a.access_bytes, line_size)?;
    let lanes = accumulate(&a.tuple, g).map(|acc| (acc.lane, acc.value));
    record(lanes, a, g, line_size)
}

/// Expands the select tuple `s` for warp `g` (§4.2 with §4.3): the PEU evaluates
/// the predicate for the warp (its 2-compare fast path when the warp's ends agree,
/// one compare per lane otherwise); a warp wholly on one side expands that arm as a
/// plain tuple, a warp straddling the predicate's boundary accumulates both arms
/// lane by lane and takes each lane's address from the arm its predicate bit picks.
/// Returns the record and the PEU's outcome (the cost of both units).
pub fn expand_select(
    s: &SelAddrTuple,
    g: &WarpGeom,
    line_size: u32,
) -> Result<(WarpAddrRecord, PredOutcome), AeuError> {
    g.validate()?;
    check_sizes(s.then.access_bytes, line_size)?;
    let p = peu::expand(&s.pred, g)?;
    let all = g.lane_mask();
    let rec = if p.mask & all == all {
        expand(&s.then, g, line_size)?
    } else if p.mask & all == 0 {
        expand(&s.els_addr(), g, line_size)?
    } else {
        let lanes = accumulate(&s.then.tuple, g)
            .zip(accumulate(&s.els, g))
            .map(|(t, e)| {
                let pick = if p.mask >> t.lane & 1 == 1 { t } else { e };
                (pick.lane, pick.value)
            });
        record(lanes, &s.then, g, line_size)?
    };
    Ok((rec, p))
}

/// The record of the lanes' exact addresses `lanes` (in lane order) for accesses
/// of `a`'s size and width: a new line step whenever the line changes, steps that
/// return to a line already in the record merged into its entry.
fn record(
    lanes: impl Iterator<Item = (u32, i128)>,
    a: &AddrTuple,
    g: &WarpGeom,
    line_size: u32,
) -> Result<WarpAddrRecord, AeuError> {
    let line_mask = !(u64::from(line_size) - 1);
    let mut rec = WarpAddrRecord {
        lines: Vec::with_capacity(4),
        access_bytes: a.access_bytes,
        lane_mask: g.lane_mask(),
        steps: 0,
        ranked: true,
    };
    let mut current: Option<usize> = None;
    for (lane, value) in lanes {
        let addr = address(value, a.wide);
        if !addr.is_multiple_of(u64::from(a.access_bytes)) {
            return Err(AeuError::Misaligned { lane, addr });
        }
        let line = addr & line_mask;
        let idx = match current {
            Some(i) if rec.lines[i].line == line => i,
            _ => {
                rec.steps += 1;
                find_or_add(&mut rec.lines, line)
            }
        };
        current = Some(idx);
        let unit = (addr - line) / u64::from(a.access_bytes);
        // Lanes come in order, so ascending means above every unit seen in the line.
        let units = rec.lines[idx].units;
        rec.ranked &= units == 0 || unit > u64::from(127 - units.leading_zeros());
        rec.lines[idx].units |= 1u128 << unit;
        rec.lines[idx].lanes |= 1u32 << lane;
    }
    Ok(rec)
}

/// An exact address value as the register holds it.
pub fn address(v: i128, wide: bool) -> u64 {
    if wide {
        v as u64
    } else {
        u64::from(v as u32)
    }
}

fn find_or_add(lines: &mut Vec<LineAccess>, line: u64) -> usize {
    if let Some(i) = lines.iter().rposition(|l| l.line == line) {
        return i;
    }
    lines.push(LineAccess {
        line,
        units: 0,
        lanes: 0,
    });
    lines.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::dac::testutil::Rng;
    use crate::gpu::dac::tuple::DIMS;

    const LINE: u32 = 128;

    fn geom(block_dim: [u32; DIMS], warp: u32) -> WarpGeom {
        WarpGeom {
            block_dim,
            ctaid: [0; DIMS],
            warp,
            warp_size: 32,
        }
    }

    fn words(t: AffineTuple) -> AddrTuple {
        AddrTuple {
            tuple: t,
            access_bytes: 4,
            wide: true,
        }
    }

    fn lines(r: &WarpAddrRecord) -> Vec<(u64, u128, u32)> {
        r.lines.iter().map(|l| (l.line, l.units, l.lanes)).collect()
    }

    /// Per-lane reference: every lane's address by multiplication, grouped by line
    /// in lane order.
    fn brute(a: &AddrTuple, g: &WarpGeom, line_size: u32) -> Result<WarpAddrRecord, AeuError> {
        let mut rec = WarpAddrRecord {
            lines: vec![],
            access_bytes: a.access_bytes,
            lane_mask: g.lane_mask(),
            steps: 0,
            ranked: true,
        };
        let mut prev = None;
        let mut addrs = vec![];
        for lane in 0..g.lanes() {
            let addr = address(a.tuple.eval(g.ctaid, g.tid(lane)), a.wide);
            if !addr.is_multiple_of(u64::from(a.access_bytes)) {
                return Err(AeuError::Misaligned { lane, addr });
            }
            let line = addr / u64::from(line_size) * u64::from(line_size);
            addrs.push(addr);
            if prev != Some(line) {
                rec.steps += 1;
            }
            prev = Some(line);
            let i = match rec.lines.iter().position(|l| l.line == line) {
                Some(i) => i,
                None => {
                    rec.lines.push(LineAccess {
                        line,
                        units: 0,
                        lanes: 0,
                    });
                    rec.lines.len() - 1
                }
            };
            rec.lines[i].units |= 1 << ((addr - line) / u64::from(a.access_bytes));
            rec.lines[i].lanes |= 1 << lane;
        }
        // Ranked: no two lanes k < l of one line with addrs[k] >= addrs[l].
        let line_of = |a: u64| a / u64::from(line_size);
        for (l, &al) in addrs.iter().enumerate() {
            for &ak in &addrs[..l] {
                if line_of(ak) == line_of(al) && ak >= al {
                    rec.ranked = false;
                }
            }
        }
        Ok(rec)
    }

    #[test]
    fn stride_4_is_one_full_line_per_warp() {
        let a = words(AffineTuple::linear(0x10000, 4));
        for w in 0..8 {
            let r = expand(&a, &geom([256, 1, 1], w), LINE).unwrap();
            assert_eq!(
                lines(&r),
                [(0x10000 + 128 * u64::from(w), 0xffff_ffff, u32::MAX)]
            );
            assert_eq!(r.steps, 1);
        }
    }

    #[test]
    fn stride_8_touches_every_other_word_of_two_lines() {
        let a = words(AffineTuple::linear(0x4000, 8));
        let r = expand(&a, &geom([64, 1, 1], 1), LINE).unwrap();
        assert_eq!(
            lines(&r),
            [
                (0x4100, 0x5555_5555, 0x0000_ffff),
                (0x4180, 0x5555_5555, 0xffff_0000)
            ]
        );
        assert_eq!(r.steps, 2);
    }

    #[test]
    fn stride_12_spreads_a_warp_over_three_lines() {
        let a = words(AffineTuple::linear(0x8000, 12));
        let r = expand(&a, &geom([32, 1, 1], 0), LINE).unwrap();
        // Lanes 0-10 at words 0,3,..,30; lanes 11-21 at 1,4,..,31; lanes 22-31 at 2,5,..,29.
        assert_eq!(
            lines(&r),
            [
                (0x8000, 0x4924_9249, 0x0000_07ff),
                (0x8080, 0x9249_2492, 0x003f_f800),
                (0x8100, 0x2492_4924, 0xffc0_0000)
            ]
        );
        assert!(r.ranked);
        assert_eq!(r.lane_address(11), Some(0x8000 + 132));
        assert_eq!(r.lane_address(31), Some(0x8000 + 372));
    }

    #[test]
    fn unaligned_base_splits_the_warp_across_two_lines() {
        let a = words(AffineTuple::linear(0x1010, 4));
        let r = expand(&a, &geom([32, 1, 1], 0), LINE).unwrap();
        assert_eq!(
            lines(&r),
            [
                (0x1000, 0xffff_fff0, 0x0fff_ffff),
                (0x1080, 0xf, 0xf000_0000)
            ]
        );
        // 8-byte accesses from a base 8 bytes into a line: 16 units per line.
        let d = AddrTuple {
            access_bytes: 8,
            ..words(AffineTuple::linear(0x2008, 8))
        };
        let r = expand(&d, &geom([32, 1, 1], 0), LINE).unwrap();
        assert_eq!(
            lines(&r),
            [
                (0x2000, 0xfffe, 0x0000_7fff),
                (0x2080, 0xffff, 0x7fff_8000),
                (0x2100, 0x1, 0x8000_0000)
            ]
        );
    }

    #[test]
    fn two_rows_of_a_16x16_block_share_a_line_when_rows_are_contiguous() {
        // A[y*16 + x], 4-byte elements: a warp holds rows 2w and 2w+1 = 128 bytes.
        let t = AffineTuple {
            base: 0x20000,
            strides: [4, 64, 0],
            cta_strides: [0; DIMS],
        };
        for w in 0..8 {
            let r = expand(&words(t), &geom([16, 16, 1], w), LINE).unwrap();
            assert_eq!(
                lines(&r),
                [(0x20000 + 128 * u64::from(w), u128::from(u32::MAX), u32::MAX)]
            );
            assert_eq!(r.steps, 1, "the row adjustment keeps the line");
        }
    }

    #[test]
    fn rows_of_a_16x16_tile_in_a_wide_array_use_the_adjustment() {
        // A[(by*16 + y)*1024 + bx*16 + x] with an unaligned base: the row adjustment
        // jumps 4096 - 60 bytes; each row covers 64 bytes over two lines.
        let t = AffineTuple {
            base: 0x100020,
            strides: [4, 4096, 0],
            cta_strides: [64, 16 * 4096, 0],
        };
        let g = WarpGeom {
            ctaid: [3, 1, 0],
            ..geom([16, 16, 1], 2)
        };
        let r = expand(&words(t), &g, LINE).unwrap();
        let row0 = 0x100020 + 3 * 64 + 16 * 4096 + 4 * 4096;
        assert_eq!(row0 % 128, 0x60);
        assert_eq!(
            lines(&r),
            [
                (row0 - 0x60, 0xff00_0000, 0x0000_00ff),
                (row0 + 0x20, 0x0000_00ff, 0x0000_ff00),
                (row0 + 4096 - 0x60, 0xff00_0000, 0x00ff_0000),
                (row0 + 4096 + 0x20, 0x0000_00ff, 0xff00_0000),
            ]
        );
        assert_eq!(r, brute(&words(t), &g, LINE).unwrap());
    }

    #[test]
    fn narrow_rows_revisit_a_line_and_merge() {
        // 8x8x4 block of half words, 32-bit addresses: rows of 16 bytes, a negative
        // y stride (rows descend in memory) and planes 512 bytes apart.
        let t = AffineTuple {
            base: 0x5000,
            strides: [2, -16, 512],
            cta_strides: [0; DIMS],
        };
        let a = AddrTuple {
            tuple: t,
            access_bytes: 2,
            wide: false,
        };
        for w in 0..8 {
            let g = geom([8, 8, 4], w);
            let r = expand(&a, &g, LINE).unwrap();
            assert_eq!(r, brute(&a, &g, LINE).unwrap(), "warp {w}");
        }
        let r = expand(&a, &geom([8, 8, 4], 0), LINE).unwrap();
        // Rows y=0..3 at 0x5000, 0x4ff0, 0x4fe0, 0x4fd0: two lines, two steps.
        assert_eq!(r.lines.len(), 2);
        assert_eq!(r.steps, 2);
    }

    #[test]
    fn uniform_and_negative_strides() {
        let s = expand(
            &words(AffineTuple::scalar(0x3004)),
            &geom([32, 1, 1], 0),
            LINE,
        )
        .unwrap();
        assert_eq!(lines(&s), [(0x3000, 0b10, u32::MAX)]);
        assert_eq!(s.lane_address(5), None, "32 lanes share one word");
        let n = expand(
            &words(AffineTuple::linear(0x307c, -4)),
            &geom([32, 1, 1], 0),
            LINE,
        )
        .unwrap();
        assert_eq!(lines(&n), [(0x3000, u128::from(u32::MAX), u32::MAX)]);
        assert!(!s.ranked && !n.ranked, "lanes share a word / descend");
        assert_eq!(n.lane_address(0), None);
    }

    #[test]
    fn partial_last_warp_and_errors() {
        let r = expand(
            &words(AffineTuple::linear(0, 4)),
            &geom([40, 1, 1], 1),
            LINE,
        )
        .unwrap();
        assert_eq!(r.lane_mask, 0xff);
        assert_eq!(lines(&r), [(128, 0xff, 0xff)]);
        assert_eq!(
            expand(
                &words(AffineTuple::linear(2, 4)),
                &geom([32, 1, 1], 0),
                LINE
            ),
            Err(AeuError::Misaligned { lane: 0, addr: 2 })
        );
        assert_eq!(
            expand(&words(AffineTuple::linear(0, 4)), &geom([32, 1, 1], 0), 96),
            Err(AeuError::LineSize(96))
        );
        let bytes = AddrTuple {
            access_bytes: 1,
            ..words(AffineTuple::linear(0, 1))
        };
        assert!(expand(&bytes, &geom([32, 1, 1], 0), 256).is_err());
        assert!(expand(&bytes, &geom([32, 1, 1], 1), LINE).is_err());
    }

    #[test]
    fn wraps_32_bit_addresses() {
        let a = AddrTuple {
            tuple: AffineTuple::linear(0xffff_fff0, 4),
            access_bytes: 4,
            wide: false,
        };
        let r = expand(&a, &geom([32, 1, 1], 0), LINE).unwrap();
        assert_eq!(
            lines(&r),
            [(0xffff_ff80, 0xf000_0000, 0xf), (0, 0x0fff_ffff, !0xf)]
        );
    }

    #[test]
    fn random_tuples_equal_the_per_lane_reference() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut ranked, mut unranked) = (0, 0);
        let dims = [
            [32, 1, 1],
            [256, 1, 1],
            [16, 16, 1],
            [8, 8, 4],
            [5, 7, 3],
            [48, 3, 1],
            [1, 64, 2],
        ];
        for _ in 0..400 {
            let w = rng.pick(&[1u32, 2, 4, 8, 16]);
            let base = 0x10_0000 + (rng.below(4096) as i64) * i64::from(rng.pick(&[1, w]));
            let mut stride = || (rng.below(9) as i64 - 4) * i64::from(w) * rng.pick(&[1, 1, 3, 64]);
            let t = AffineTuple {
                base,
                strides: [stride(), stride(), stride()],
                cta_strides: [stride(), stride(), 0],
            };
            let a = AddrTuple {
                tuple: t,
                access_bytes: w,
                wide: rng.below(2) == 0,
            };
            let block_dim = rng.pick(&dims);
            let line = rng.pick(&[64, 128]);
            let g0 = WarpGeom {
                block_dim,
                ctaid: [rng.below(5) as u32, rng.below(3) as u32, 0],
                warp: 0,
                warp_size: 32,
            };
            for warp in 0..g0.warps_per_block() {
                let g = g0.with_warp(warp);
                let r = expand(&a, &g, line);
                assert_eq!(r, brute(&a, &g, line), "{a:?} {g:?} line {line}");
                let Ok(r) = r else { continue };
                ranked += u32::from(r.ranked);
                unranked += u32::from(!r.ranked);
                for lane in 0..g.lanes() {
                    let want = address(a.tuple.eval(g.ctaid, g.tid(lane)), a.wide);
                    let got = r.lane_address(lane);
                    assert_eq!(got, r.ranked.then_some(want), "{a:?} {g:?} lane {lane}");
                }
            }
        }
        assert!(ranked > 100 && unranked > 100, "{ranked} {unranked}");
    }

    /// Per-lane reference of a select tuple: each lane's predicate by evaluation,
    /// its address from the arm it picks, grouped by line in lane order.
    fn brute_sel(s: &SelAddrTuple, g: &WarpGeom) -> Vec<(u64, u128, u32)> {
        let mut out: Vec<(u64, u128, u32)> = Vec::new();
        for lane in 0..g.lanes() {
            let tid = g.tid(lane);
            let t = if s.pred.eval(g.ctaid, tid) {
                s.then.tuple
            } else {
                s.els
            };
            let addr = address(t.eval(g.ctaid, tid), s.then.wide);
            let line = addr / u64::from(LINE) * u64::from(LINE);
            let unit = (addr - line) / u64::from(s.then.access_bytes);
            match out.iter_mut().find(|l| l.0 == line) {
                Some(l) => {
                    l.1 |= 1 << unit;
                    l.2 |= 1 << lane;
                }
                None => out.push((line, 1 << unit, 1 << lane)),
            }
        }
        out
    }

    /// `cond(x) ? then : els` with `cond` comparing `x` against scalar `k`.
    fn sel(x: AffineTuple, op: CmpOp, k: i64, then: AffineTuple, els: AffineTuple) -> SelAddrTuple {
        SelAddrTuple {
            pred: PredTuple {
                lhs: x,
                op,
                rhs: AffineTuple::scalar(k),
                ty: IntType::S32,
            },
            then: words(then),
            els,
        }
    }

    use crate::gpu::dac::tuple::{CmpOp, IntType};
    use crate::gpu::dac::PeuPath;

    #[test]
    fn select_straddling_a_warp_picks_each_lanes_arm() {
        // hotspot's west neighbour `c > 0 ? i - 1 : i`: lane 0 of warp 0 takes `i`.
        let i = AffineTuple::linear(0x1000, 4);
        let west = AffineTuple::linear(0x1000 - 4, 4);
        let s = sel(AffineTuple::linear(0, 1), CmpOp::Gt, 0, west, i);
        let g = geom([64, 1, 1], 0);
        let (r, p) = expand_select(&s, &g, LINE).unwrap();
        assert_eq!(p.mask, !1);
        assert_eq!(lines(&r), brute_sel(&s, &g));
        // Lanes 0 and 1 both read 0x1000: not ranked; one line.
        assert_eq!(lines(&r), vec![(0x1000, (1u128 << 31) - 1, u32::MAX)]);
        assert!(!r.ranked);
        // Warp 1 lies wholly on the `then` side: the plain expansion, fast path.
        let g1 = geom([64, 1, 1], 1);
        let (r1, p1) = expand_select(&s, &g1, LINE).unwrap();
        assert_eq!(p1.path, PeuPath::Fast);
        assert_eq!(r1, expand(&s.then, &g1, LINE).unwrap());
    }

    #[test]
    fn select_in_2d_blocks_and_partial_warps_matches_per_lane() {
        // 20 x 3 blocks: the east neighbour `c < 19 ? i + 1 : i` straddles every row
        // inside the warps; `tid.x` wraps inside them; the last warp is partial.
        let i = AffineTuple {
            base: 0x8000,
            strides: [4, 200, 0],
            cta_strides: [80, 600, 0],
        };
        let east = AffineTuple { base: 0x8004, ..i };
        let c = AffineTuple {
            base: 0,
            strides: [1, 0, 0],
            cta_strides: [20, 0, 0],
        };
        let s = sel(c, CmpOp::Lt, 19, east, i);
        for ctaid in [[0, 0, 0], [2, 1, 0]] {
            for warp in 0..2 {
                let g = WarpGeom {
                    block_dim: [20, 3, 1],
                    ctaid,
                    warp,
                    warp_size: 32,
                };
                let (r, p) = expand_select(&s, &g, LINE).unwrap();
                assert_eq!(lines(&r), brute_sel(&s, &g), "{ctaid:?} warp {warp}");
                assert_eq!(r.lane_mask, g.lane_mask());
                let want: u32 = (0..g.lanes())
                    .filter(|&l| s.pred.eval(g.ctaid, g.tid(l)))
                    .map(|l| 1u32 << l)
                    .sum();
                assert_eq!(p.mask, want);
            }
        }
        // Block 20 x 3 = 60 threads: warp 1 has 28 lanes.
        assert_eq!(geom([20, 3, 1], 1).lanes(), 28);
    }

    #[test]
    fn select_with_every_lane_on_one_side_is_that_arms_expansion() {
        let then = AffineTuple::linear(0x2000, 8);
        let els = AffineTuple::linear(0x9000, 4);
        // Uniform predicate false: the `else` arm for the whole warp.
        let s = sel(AffineTuple::scalar(3), CmpOp::Lt, 0, then, els);
        let g = geom([32, 1, 1], 0);
        let (r, p) = expand_select(&s, &g, LINE).unwrap();
        assert_eq!((p.mask, p.path), (0, PeuPath::Uniform));
        assert_eq!(r, expand(&s.els_addr(), &g, LINE).unwrap());
        // A random mix against the per-lane reference.
        let mut rng = Rng(7);
        for _ in 0..200 {
            let k = (rng.next() % 40) as i64 - 4;
            let x = AffineTuple::linear((rng.next() % 9) as i64 - 4, 1 + (rng.next() % 2) as i64);
            let s = sel(x, CmpOp::Ge, k, then, els);
            let bd = [8 + (rng.next() % 30) as u32, 2, 1];
            let g = geom(bd, 0);
            let (r, _) = expand_select(&s, &g, LINE).unwrap();
            assert_eq!(lines(&r), brute_sel(&s, &g));
        }
    }
}
