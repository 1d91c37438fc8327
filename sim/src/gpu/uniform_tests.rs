//! Tests of the uniform datapath: the `.uni` syntax and its round trip, the
//! functional broadcast, the non-uniform-operand fault, and the timing model's
//! issue cost, scalar unit and statistics.

use super::*;

fn asm(text: &str) -> Program {
    match parse(text) {
        Ok(p) => p,
        Err(e) => panic!("assembly failed: {e:?}\n{text}"),
    }
}

fn launch(p: &Program, name: &str, block: u32, params: &[u64]) -> Launch {
    Launch {
        kernel: name.into(),
        grid: (1, 1, 1),
        block: (block, 1, 1),
        params: pack_params(p.kernel(name).expect("kernel"), params),
    }
}

fn u32s(mem: &GlobalMemory, addr: u64) -> Vec<u32> {
    mem.buffer(addr)
        .expect("buffer")
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// `out[tid] = (n * 3 + 5) + tid`, with the uniform part on the uniform datapath.
const BROADCAST: &str = r#"
.entry bcast(.param .u32 n, .param .u64 out)
{
    .reg 8;
    .pred 1;
    ld.uni.param.u32 %r0, [n];
    mad.uni.u32 %r1, %r0, 3, 5;
    setp.uni.gt.u32 %p0, %r1, 100;
    selp.uni.b32 %r2, 1, 0, %p0;
    add.u32 %r3, %r1, %tid.x;
    add.u32 %r3, %r3, %r2;
    ld.uni.param.u64 %rd4, [out];
    cvt.u64.u32 %rd6, %tid.x;
    shl.b64 %rd6, %rd6, 2;
    add.u64 %rd4, %rd4, %rd6;
    st.global.u32 [%rd4], %r3;
    exit;
}
"#;

#[test]
fn uni_round_trips_through_the_assembler() {
    let p = asm(BROADCAST);
    let k = &p.kernels[0];
    let uni: Vec<bool> = k.insts.iter().map(|i| i.uni).collect();
    assert_eq!(
        uni,
        [true, true, true, true, false, false, true, false, false, false, false, false]
    );
    assert!(k.insts.iter().all(|i| i.is_uniform() == i.uni));
    let text = print(&p);
    for m in [
        "ld.uni.param.u32",
        "mad.uni.u32",
        "setp.uni.gt.u32",
        "selp.uni.b32",
    ] {
        assert!(text.contains(m), "{m} missing from\n{text}");
    }
    assert_eq!(parse(&text).unwrap(), p);
    assert!(check(&p).is_ok());
    // `bra.uni` stays a non-divergent branch, not a uniform-datapath instruction.
    let b = asm(".entry k() { .reg 1; L: bra.uni L; }");
    assert!(!b.kernels[0].insts[0].uni);
}

#[test]
fn uni_is_refused_on_effects_control_and_warp_operations() {
    for bad in [
        "st.uni.global.u32 [%rd0], %r2;",
        "atom.uni.global.add.u32 %r2, [%rd0], 1;",
        "ld.uni.local.u32 %r2, [%r3];",
        "vote.uni.any.pred %p0, %p0;",
        "shfl.uni.idx.b32 %r2, %r3, 0, 31;",
        "exit.uni.x;",
    ] {
        let text = format!(".entry k() {{ .reg 4; .pred 1; {bad} }}");
        let e = parse(&text).expect_err(bad);
        assert!(!e.is_empty(), "{bad}");
    }
}

#[test]
fn uni_results_are_broadcast_to_every_lane() {
    let p = asm(BROADCAST);
    for n in [7u32, 40] {
        let mut mem = GlobalMemory::new();
        let out = mem.add_zeroed(64 * 4, "out");
        let l = launch(&p, "bcast", 64, &[u64::from(n), out]);
        let r = run_functional(&p, &l, &mut mem, Limits::default()).unwrap();
        let u = n * 3 + 5;
        let want: Vec<u32> = (0..64).map(|t| u + t + u32::from(u > 100)).collect();
        assert_eq!(u32s(&mem, out), want);
        assert_eq!(r.warp_insts, 2 * 12);
    }
}

fn fault_of(body: &str, block: u32) -> Result<(), GpuFault> {
    let text = format!(".entry k(.param .u64 out) {{ .reg 6; .pred 2; {body} exit; }}");
    let p = asm(&text);
    let mut mem = GlobalMemory::new();
    let out = mem.add_zeroed(256, "out");
    let l = launch(&p, "k", block, &[out]);
    run_functional(&p, &l, &mut mem, Limits::default()).map(|_| ())
}

#[test]
fn non_uniform_operands_fault() {
    for (body, lane) in [
        // A special register that differs per lane.
        ("add.uni.u32 %r1, %tid.x, 1;", 1),
        ("mov.uni.u32 %r1, %laneid;", 1),
        // A register that differs from lane 5 on.
        (
            "setp.ge.u32 %p0, %tid.x, 5; selp.b32 %r0, 1, 0, %p0; add.uni.u32 %r1, %r0, %r0;",
            5,
        ),
        // A predicate operand that differs.
        (
            "setp.lt.u32 %p1, %tid.x, 3; selp.uni.b32 %r1, 1, 0, %p1;",
            3,
        ),
        // A load address that differs.
        (
            "ld.param.u64 %rd2, [out]; cvt.u64.u32 %rd4, %tid.x; shl.b64 %rd4, %rd4, 2; \
             add.u64 %rd2, %rd2, %rd4; ld.uni.global.u32 %r1, [%rd2];",
            1,
        ),
    ] {
        let f = fault_of(body, 32).expect_err(body);
        assert_eq!(f.kind, FaultKind::NonUniformOperand, "{body}: {f}");
        assert_eq!(f.lane, Some(lane), "{body}");
    }
}

#[test]
fn uniform_operands_do_not_fault() {
    for body in [
        // Uniform special registers and immediates.
        "add.uni.u32 %r1, %ctaid.x, %ntid.x; mul.uni.u32 %r2, %r1, 3;",
        // A varying register, but the guard leaves one executing lane.
        "setp.eq.u32 %p0, %tid.x, 4; mov.u32 %r0, %tid.x; @%p0 add.uni.u32 %r1, %r0, 1;",
        // Lanes where the guard is false do not take part.
        "setp.lt.u32 %p0, %tid.x, 8; selp.b32 %r0, 9, %tid.x, %p0; @%p0 add.uni.u32 %r1, %r0, 1;",
        // A uniform load address.
        "ld.uni.param.u64 %rd2, [out]; ld.uni.global.u32 %r1, [%rd2+4];",
    ] {
        fault_of(body, 32).unwrap_or_else(|f| panic!("{body}: {f}"));
    }
}

/// 64 independent additions, vector or uniform, then a store.
fn adds(uni: bool) -> Program {
    let m = if uni { ".uni" } else { "" };
    let mut body = String::new();
    for i in 0..64 {
        body.push_str(&format!("add{m}.u32 %r{}, %r0, {i};\n", 1 + i % 8));
    }
    asm(&format!(
        ".entry k(.param .u64 out) {{ .reg 10; mov.u32 %r0, %ctaid.x; {body} exit; }}"
    ))
}

fn timing(p: &Program, cfg: &GpuConfig, warps: u32) -> TimingReport {
    let mut mem = GlobalMemory::new();
    let out = mem.add_zeroed(64, "out");
    let l = launch(p, "k", 32 * warps, &[out]);
    run_timing(p, &l, &mut mem, cfg, Limits::default(), SchedulerKind::Gto).unwrap()
}

#[test]
fn uniform_instructions_issue_in_one_cycle_and_are_counted_apart() {
    let cfg = GpuConfig::gtx480();
    let v = timing(&adds(false), &cfg, 1);
    let u = timing(&adds(true), &cfg, 1);
    assert_eq!(v.warp_insts, 66);
    assert_eq!(u.warp_insts, 66);
    assert_eq!((v.stats.uniform_insts, u.stats.uniform_insts), (0, 64));
    assert_eq!((v.stats.vector_insts(), u.stats.vector_insts()), (66, 2));
    // thread_insts counts both datapaths, vector_thread_insts only the vector one.
    assert_eq!(v.thread_insts, u.thread_insts);
    assert_eq!(u.stats.vector_thread_insts, 2 * 32);
    assert_eq!(u.stats.lane_utilization(32), 1.0);
    // gtx480: a vector instruction holds its scheduler 2 cycles, a uniform one 1.
    assert_eq!(v.stats.issue_cycles, 66 * 2);
    assert_eq!(u.stats.issue_cycles, 2 * 2 + 64);
    assert!(u.cycles < v.cycles, "{} vs {}", u.cycles, v.cycles);
}

#[test]
fn the_scalar_unit_is_shared_and_its_issue_interval_is_configurable() {
    let fast = GpuConfig::gtx480();
    let slow = GpuConfig {
        uniform_issue_cycles: 4,
        ..GpuConfig::gtx480()
    };
    // Two warps on the two schedulers share the SM's one scalar unit.
    let f = timing(&adds(true), &fast, 2);
    let s = timing(&adds(true), &slow, 2);
    assert!(
        f.cycles >= 128,
        "one uniform instruction per cycle per SM: {}",
        f.cycles
    );
    assert!(s.cycles >= 4 * 128, "{}", s.cycles);
    let names: Vec<&str> = f.pairs.iter().map(|(n, _)| n.as_str()).collect();
    for n in [
        "uniform_instructions",
        "vector_instructions",
        "lane_utilization",
    ] {
        assert!(names.contains(&n), "{n}");
    }
}
