//! Full-warp specialization: the entry's body selected twice, once for warps whose 32
//! lanes all exist.
//!
//! The launch is a one-dimensional block rounded up to whole warps, so the last warp
//! of a block may have lanes past the block's thread count; they run under `exists`
//! (linear id < threads), which is the entry's mask. The IR's uniformity analysis
//! treats the entry mask as uniform, but in machine code every mask derived from
//! `exists` differs between lanes of a partial warp, so a value the analysis proves
//! uniform but that is updated under such a mask (a `for` loop's varying-typed counter
//! selected under the loop mask, a loop mask itself) fails the back end's `.uni`
//! confirmation ([`super::super::uniform`]) and stays on the vector datapath.
//!
//! The cure is a runtime uniformity check in the style of paper 002's runtime skips and
//! of ISPC's all-on mask specialization: after the prologue, `vote.all` on `exists`
//! (in a decoupled kernel whose body reads other lanes' registers, which may launch in
//! the block's real shape with the lanes of a partial warp past the block not running,
//! and so not voting: a `vote.ballot` of `exists` that has all 32 bits) decides between
//! two copies of the entry's body:
//!
//! * the **full-warp version** (every lane exists: the common case), selected with
//!   `exists` a uniform constant true: the entry mask is a uniform constant, masks are
//!   no longer intersected with `exists`, and values updated under masks derived from
//!   the entry mask are confirmed uniform;
//! * the **general version**, selected as before, for partial warps.
//!
//! In the full-warp version the selector also knows which bool values are true in
//! every lane ([`all_on`]: the entry mask, constants, `&`/`|`/`select`/`any` of such
//! values, block parameters that only receive them, an inlined callee's mask when the
//! caller's is), the analogue of ISPC's all-on mask: loads and stores under such a
//! mask are unguarded (no zeroing move), a `select` on it is a copy and `any`/`all`
//! of it a uniform constant.
//!
//! Only one copy runs in a warp, so the full version's assumption holds wherever it
//! runs: lanes past the block do not exist in a full warp, and cross-lane reads see
//! lanes that all exist and run. Out-of-line bodies (recursive functions, the print runtime)
//! stay shared and general. With DAC decoupling both versions select the plan's
//! decoupled accesses and drains on the same IR edges, so a warp dequeues what the
//! affine stream (built from the IR, not from this code) enqueues whichever version
//! it runs. The specialization is a uniformity-driven transform: only with
//! [`crate::back::dac_gpu::Options::uniformity`], and kept only when it pays ([`Split::pays`]):
//! the full version issues fewer vector instructions than the general one, and the
//! general one is at most [`MAX_SPECIALIZED`] instructions (bounded code growth).

use std::ops::Range;

use rustc_hash::{FxHashMap, FxHashSet};
use sim::gpu::{Guard, Kernel, Op, VoteMode};

use super::{Isel, Loc};
use crate::ir::{BinaryOp, Block, ConvOp, Function, InstData, LaneOp, Scalar, Value, ValueDef};

/// The largest entry body (machine instructions of its general version, inlined
/// callees included) that is specialized.
pub const MAX_SPECIALIZED: usize = 8192;

/// Where the two versions of a split entry body are in the selected kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// Instructions of the full-warp version.
    pub full: Range<usize>,
    /// Instructions of the general version.
    pub general: Range<usize>,
}

impl Split {
    /// Whether the split is worth its code (judged on the marked kernel `k`): the
    /// general version is small enough and the full version has fewer instructions
    /// on the vector datapath.
    pub fn pays(&self, k: &Kernel) -> bool {
        let vector = |r: &Range<usize>| {
            k.insts
                .get(r.clone())
                .map_or(0, |s| s.iter().filter(|i| !i.is_uniform()).count())
        };
        self.general.len() <= MAX_SPECIALIZED && vector(&self.full) < vector(&self.general)
    }
}

impl Isel<'_> {
    /// Whether the entry, or a function it inlines, reads registers of other lanes: a
    /// cross-lane operation other than a vote (`any`, `all`, `ballot`, `first_lane`
    /// see only the lanes that run), or a load served by a shuffle.
    fn reads_other_lanes(&self) -> bool {
        if self
            .ctx
            .shuffles
            .as_ref()
            .is_some_and(|(_, s)| s.shuffles() > 0)
        {
            return true;
        }
        let module = self.ctx.module;
        let mut seen = FxHashSet::default();
        let mut todo = vec![self.f];
        while let Some(f) = todo.pop() {
            for (_, data) in crate::back::dac_gpu::spaces::live_insts(f) {
                match data {
                    InstData::Lane { op, .. }
                        if !matches!(
                            op,
                            LaneOp::Any | LaneOp::All | LaneOp::Ballot | LaneOp::FirstLane
                        ) =>
                    {
                        return true;
                    }
                    InstData::Call { func, .. }
                        if !self.ctx.out_of_line.contains(func) && seen.insert(*func) =>
                    {
                        todo.push(&module.functions[*func]);
                    }
                    _ => {}
                }
            }
        }
        false
    }

    /// Selects the entry's body twice behind a `vote.all` on `exists`: first the
    /// full-warp version (a new instance whose `exists` is a uniform constant true),
    /// then the general version (instance 0, as without the split).
    pub(super) fn split_body(&mut self, entry: Block) -> Split {
        let f = self.f;
        self.uni.set(false);
        let all = self.ptmp();
        if self.ctx.dac.is_some() && self.reads_other_lanes() {
            // A decoupled kernel may launch in its block's real shape, where the lanes
            // of a partial warp past the block do not run, so they do not vote: the
            // warp is whole when all 32 lanes are in the ballot. Only a body that
            // reads other lanes' registers can tell; any other runs the same with
            // those lanes absent.
            let b = self.ballot(self.exists);
            self.setp(
                sim::gpu::Cmp::Eq,
                sim::gpu::Type::U32,
                all,
                super::rs(b),
                super::imm(0xffff_ffff),
            );
        } else {
            self.op(Op::Vote {
                mode: VoteMode::All,
                dst: all,
                p: self.exists,
            });
        }
        let general = self.new_label();
        self.bra(
            Some(Guard {
                pred: all.idx,
                negate: true,
            }),
            general,
        );
        let real_exists = self.exists;
        let entry_frame = self.frame_end;
        let full_start = self.lines.len();
        self.instances += 1;
        self.instance = self.instances;
        self.full_instance = Some(self.instance);
        self.full_warp = true;
        // Computed once per warp: every lane exists.
        self.uni.set(true);
        self.exists = self.ptmp();
        self.const_pred(self.exists, true);
        // The entry's parameters: the general version's registers (loaded by the
        // prologue), and the mask is every lane.
        let params: Vec<_> = f.blocks[entry].params.to_vec();
        for (i, &p) in params.iter().enumerate() {
            let is_mask = f.sig.takes_mask && i + 1 == params.len();
            let l = if is_mask {
                let m = self.ptmp();
                self.const_pred(m, true);
                Loc::P(m)
            } else {
                match self.locs.get(&(0, p)) {
                    Some(&l) => l,
                    None => continue,
                }
            };
            self.locs.insert((self.instance, p), l);
        }
        let entry_on: Vec<bool> = (0..params.len())
            .map(|i| f.sig.takes_mask && i + 1 == params.len())
            .collect();
        self.all_on = all_on(f, &entry_on);
        self.uni.set(false);
        self.body();
        self.all_on.clear();
        let full = full_start..self.lines.len();
        let full_frame = self.frame_end;
        self.frame_end = entry_frame;
        self.full_warp = false;
        self.exists = real_exists;
        self.instance = 0;
        self.b.bind(general);
        let general_start = self.lines.len();
        self.body();
        // Only one version runs in a warp: their inlined frames may overlap.
        self.frame_end = self.frame_end.max(full_frame);
        Split {
            full,
            general: general_start..self.lines.len(),
        }
    }
}

/// The bool values of `f` that are true in every lane, given which of the entry
/// block's parameters are (`entry_on[i]` for parameter `i`). An optimistic fixed
/// point, so that a loop's mask parameter that only ever receives all-on masks is
/// all-on.
pub fn all_on(f: &Function, entry_on: &[bool]) -> FxHashSet<Value> {
    let Some(entry) = f.entry_block() else {
        return FxHashSet::default();
    };
    let is_bool = |v: Value| f.value_type(v).scalar == Scalar::Bool;
    // Each block parameter's incoming arguments.
    let mut incoming: FxHashMap<Value, Vec<Value>> = FxHashMap::default();
    let mut set = FxHashSet::default();
    for &b in &f.layout {
        set.extend(f.blocks[b].params.iter().copied().filter(|&p| is_bool(p)));
        for &i in &f.blocks[b].insts {
            set.extend(f.inst_result(i).filter(|&v| is_bool(v)));
            for call in f.insts[i].successors() {
                let params = &f.blocks[call.block].params;
                for (&p, &a) in params.iter().zip(&call.args) {
                    incoming.entry(p).or_default().push(a);
                }
            }
        }
    }
    loop {
        let before = set.len();
        let holds = |v: Value, set: &FxHashSet<Value>| match f.values[v].def {
            ValueDef::Param(b, i) if b == entry => {
                entry_on.get(i as usize).copied().unwrap_or(false)
            }
            ValueDef::Param(..) => incoming
                .get(&v)
                .is_some_and(|args| args.iter().all(|a| set.contains(a))),
            ValueDef::Result(inst) => defined_on(&f.insts[inst], set),
        };
        let kept: FxHashSet<Value> = set.iter().copied().filter(|&v| holds(v, &set)).collect();
        set = kept;
        if set.len() == before {
            return set;
        }
    }
}

/// Whether the result of `data` is true in every lane when the values in `on` are.
fn defined_on(data: &InstData, on: &FxHashSet<Value>) -> bool {
    let has = |v: &Value| on.contains(v);
    match data {
        InstData::Iconst { bits, .. } => bits & 1 == 1,
        InstData::Splat { arg } => has(arg),
        InstData::Convert {
            op: ConvOp::ToBool | ConvOp::Bitcast,
            arg,
            ..
        } => has(arg),
        InstData::Binary {
            op: BinaryOp::Band,
            args,
        } => args.iter().all(has),
        InstData::Binary {
            op: BinaryOp::Bor,
            args,
        } => args.iter().any(has),
        InstData::Select { args } => has(&args[1]) && (has(&args[0]) || has(&args[2])),
        // A full warp has a lane, so any of an all-on mask holds.
        InstData::Lane {
            op: LaneOp::Any | LaneOp::All,
            args,
        } => args.first().is_some_and(has),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::dac_gpu::run::{run_on_dac_gpu, DacRunOptions};
    use crate::back::dac_gpu::{compile_module, Options};
    use crate::driver::{self, FrontOptions, FrontResult, RunRequest, Stage};
    use crate::front::sema::Target;
    use crate::interp::Limits;
    use crate::launch::{RunResult, StatValue};

    fn front(src: &str) -> FrontResult {
        let opts = FrontOptions {
            target: Target {
                program_count: 32,
                pointer_size: 8,
            },
            ..FrontOptions::default()
        };
        driver::run_front("t.spmd", None, src.to_string(), &opts, Stage::Check)
    }

    /// A GPU-style kernel whose loop counter is typed varying but uniform (the
    /// analysis proves it), with loads under the loop mask, a divergent `if`/`else`
    /// (masks `&` the all-on entry mask) and cross-lane reads.
    const COUNTER: &str = "
task void k(uniform int n, uniform float src[], uniform float dst[]) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0;
    for (int i = 0; i < n; i++) {
        acc += src[i * 128 + t];
    }
    if (t % 3 == 0)
        acc *= 2;
    else
        acc -= 1;
    dst[t] = acc + rotate(acc, 3);
    // One slot per gang: gangs of a block run in an unspecified order.
    if (programIndex == 0)
        dst[200 + blockIdx.x * 2 + threadIdx.x / programCount] = reduce_add(acc);
}";

    fn request<'a>(args: &'a [String], block: &'a str) -> RunRequest<'a> {
        RunRequest {
            optimize: true,
            entry: "k",
            args,
            grid: Some("2"),
            block: Some(block),
            dynamic_shared: None,
            limits: Limits::default(),
        }
    }

    fn args() -> Vec<String> {
        ["n=5", "src=range(640)", "dst=zeros(204)"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn dac(f: &FrontResult, block: &str, uniformity: bool) -> RunResult {
        let args = args();
        let opts = DacRunOptions {
            timing: true,
            codegen: Options {
                uniformity,
                ..Options::default()
            },
            ..DacRunOptions::default()
        };
        run_on_dac_gpu(f, &request(&args, block), &opts).expect("dac-gpu runs")
    }

    fn count(r: &RunResult, key: &str) -> u64 {
        match r.stats.get(key) {
            Some(StatValue::Count(n)) => n,
            other => panic!("{key}: {other:?}"),
        }
    }

    #[test]
    fn all_on_follows_the_entry_mask_through_a_loop() {
        let m = crate::ir::parse_module(
            "module lanes 32 ptr 8
function task @k(i32) masked {
block0(v0: i32, v1: [bool]):
    v2 = iconst.i32 0
    v3 = splat v2
    jump block1(v3, v1)
block1(v4: [i32], v5: [bool]):
    v6 = splat v0
    v7 = icmp slt v4, v6
    v8 = band v5, v7
    v9 = any v8
    brif v9, block2, block3
block2:
    v10 = iconst.i32 1
    v11 = splat v10
    v12 = iadd v4, v11
    v13 = any v5
    v14 = select v5, v12, v4
    v15 = bor v8, v5
    jump block1(v14, v15)
block3:
    return
}",
        )
        .expect("IR parses");
        let f = m.functions.values().next().expect("one function");
        let v = |i: u32| Value::from_u32(i);
        let on = all_on(f, &[false, true]);
        // The mask, the loop's mask parameter (it only receives all-on masks), any and
        // or of them; not the loop test nor what it masks.
        for x in [1, 5, 13, 15] {
            assert!(on.contains(&v(x)), "v{x} all-on: {on:?}");
        }
        for x in [7, 8, 9] {
            assert!(!on.contains(&v(x)), "v{x} not all-on: {on:?}");
        }
        // Without an all-on entry mask nothing is.
        assert!(all_on(f, &[false, false]).is_empty());
    }

    #[test]
    fn the_varying_counter_is_uniform_only_in_the_full_warp_version() {
        let f = front(COUNTER);
        let m = driver::lower_for_target(&f, true, driver::LegalTarget::DacGpu).expect("lowers");
        let selps = |o: &Options| {
            let c = compile_module(&m, o).expect("compiles");
            let k = &c.program.kernels[0];
            // The split's test: `vote.all` on exists, or in a decoupled kernel a ballot
            // of exists compared with all 32 lanes.
            let votes_all = k
                .insts
                .iter()
                .filter(|i| match i.op {
                    Op::Vote {
                        mode: VoteMode::All,
                        ..
                    } => !o.dac,
                    Op::Setp {
                        b: sim::gpu::Src::Imm(0xffff_ffff),
                        ..
                    } => o.dac,
                    _ => false,
                })
                .count();
            let sel = |uni: bool| {
                k.insts
                    .iter()
                    .filter(|i| matches!(i.op, Op::Selp { .. }) && i.uni == uni)
                    .count()
            };
            (votes_all, sel(true), sel(false))
        };
        // The counter's select on the loop mask: `.uni` in the full-warp version (the
        // mask derives from a constant entry mask), vector in the general one.
        for dac in [true, false] {
            let (votes, uni, vector) = selps(&Options {
                dac,
                ..Options::default()
            });
            assert_eq!(votes, 1, "one test of exists (dac {dac})");
            assert!(uni >= 1 && vector >= 1, "uni {uni}, vector {vector}");
        }
        // --no-uniformity: no split, no uniform select.
        let (votes, uni, _) = selps(&Options {
            uniformity: false,
            ..Options::default()
        });
        assert_eq!((votes, uni), (0, 0));
    }

    /// A decoupled kernel tests a whole warp with a ballot only when its body reads
    /// other lanes; without cross-lane reads `vote.all` is enough.
    #[test]
    fn a_decoupled_kernel_ballots_only_when_it_reads_other_lanes() {
        let plain = COUNTER
            .replace("acc + rotate(acc, 3)", "acc")
            .replace("reduce_add(acc)", "acc");
        for (src, reads) in [(COUNTER, true), (plain.as_str(), false)] {
            let m = driver::lower_for_target(&front(src), true, driver::LegalTarget::DacGpu)
                .expect("lowers");
            let opts = Options {
                dac: true,
                ..Options::default()
            };
            let c = compile_module(&m, &opts).expect("compiles");
            let ops = &c.program.kernels[0].insts;
            let votes = ops
                .iter()
                .filter(|i| {
                    matches!(
                        i.op,
                        Op::Vote {
                            mode: VoteMode::All,
                            ..
                        }
                    )
                })
                .count();
            let ballots = ops
                .iter()
                .filter(|i| {
                    matches!(
                        i.op,
                        Op::Setp {
                            b: sim::gpu::Src::Imm(0xffff_ffff),
                            ..
                        }
                    )
                })
                .count();
            let want = if reads { (0, 1) } else { (1, 0) };
            assert_eq!((votes, ballots), want, "reads other lanes: {reads}");
        }
    }

    #[test]
    fn partial_and_full_warps_match_the_interpreter() {
        let f = front(COUNTER);
        let args = args();
        // 40 threads: a full warp and one of 8 lanes; 64: two full warps.
        for block in ["40", "64"] {
            let want = driver::run_on_interp(&f, &request(&args, block)).expect("interp runs");
            for uniformity in [true, false] {
                let got = dac(&f, block, uniformity);
                assert_eq!(
                    format!("{:?}", want.buffers),
                    format!("{:?}", got.buffers),
                    "block {block}, uniformity {uniformity}"
                );
            }
        }
    }

    #[test]
    fn full_warps_issue_fewer_vector_instructions() {
        let f = front(COUNTER);
        let on = dac(&f, "64", true);
        let off = dac(&f, "64", false);
        let (v_on, v_off) = (
            count(&on, "vector_instructions"),
            count(&off, "vector_instructions"),
        );
        // The loop's counter, mask and guards leave the vector datapath.
        assert!(v_on * 4 < v_off * 3, "vector {v_on} vs {v_off}");
    }
}
