//! Tests of the dac-gpu ISA: assembler, printer, round trips, errors, configuration and
//! occupancy.

use super::*;

const SAXPY: &str = "
// y[i] = a * x[i] + y[i]
.entry saxpy(.param .u32 n, .param .f32 a, .param .u32 x, .param .u32 y)
{
    .reg 8;
    .pred 1;
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.u32 %r0, %r0, %r1, %tid.x;   // global index
    ld.param.u32 %r2, [n];
    setp.ge.u32 %p0, %r0, %r2;
    @%p0 bra.uni DONE;
    shl.b32 %r3, %r0, 2;
    ld.param.u32 %r4, [x];
    add.u32 %r4, %r4, %r3;
    ld.global.f32 %r5, [%r4];
    ld.param.u32 %r4, [y];
    add.u32 %r4, %r4, %r3;
    ld.global.f32 %r6, [%r4+0];
    ld.param.f32 %r7, [a];
    mad.f32 %r6, %r7, %r5, %r6;
    st.global.f32 [%r4], %r6;
DONE:
    exit;
}
";

fn must_parse(text: &str) -> Program {
    match parse(text) {
        Ok(p) => p,
        Err(es) => panic!(
            "{}",
            es.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

fn assert_round_trip(p: &Program) {
    let text = print(p);
    let back = must_parse(&text);
    assert_eq!(&back, p, "parse(print(p)) != p for:\n{text}");
    assert_eq!(print(&back), text);
}

#[test]
fn saxpy_assembles_and_round_trips() {
    let p = must_parse(SAXPY);
    let k = p.kernel("saxpy").unwrap();
    assert_eq!(k.num_regs, 8);
    assert_eq!(k.insts.len(), 17);
    assert_eq!(
        k.params.iter().map(|p| p.offset).collect::<Vec<_>>(),
        vec![0, 4, 8, 12]
    );
    assert_eq!(
        k.insts[5].op,
        Op::Bra {
            uni: true,
            target: 16
        }
    );
    assert_eq!(
        k.insts[5].guard,
        Some(Guard {
            pred: 0,
            negate: false
        })
    );
    assert_round_trip(&p);
}

// ---------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------

#[test]
fn presets_load_with_the_issue_parameters() {
    let g = GpuConfig::preset("gtx480").expect("gtx480 preset parses");
    assert_eq!(
        (
            g.num_sms,
            g.warp_size,
            g.max_warps_per_sm,
            g.max_blocks_per_sm
        ),
        (15, 32, 48, 8)
    );
    assert_eq!(
        (g.registers_per_sm, g.shared_mem_per_sm),
        (32768, 48 * 1024)
    );
    assert_eq!(
        (g.l1_size, g.l2_size, g.line_size),
        (16 * 1024, 768 * 1024, 128)
    );
    let m = GpuConfig::preset("maxwell").expect("maxwell preset parses");
    assert_eq!(
        (
            m.registers_per_sm,
            m.max_threads_per_sm,
            m.shared_mem_per_sm
        ),
        (65536, 2048, 96 * 1024)
    );
    assert_eq!(GpuConfig::load("maxwell"), Ok(m));
}

#[test]
fn config_text_round_trips_and_base_overrides() {
    let g = GpuConfig::gtx480();
    assert_eq!(GpuConfig::from_text(&g.to_text()), Ok(g.clone()));
    let c =
        GpuConfig::from_text("base = \"gtx480\"\nnum_sms = 4 # small\nname = \"tiny\"\n").unwrap();
    assert_eq!((c.num_sms, c.name.as_str(), c.warp_size), (4, "tiny", 32));
}

#[test]
fn config_errors_name_the_line() {
    let e = GpuConfig::from_text("base = \"gtx480\"\nnum_smz = 4\n").unwrap_err();
    assert_eq!(
        (e.line, e.msg.as_str()),
        (2, "unknown key `num_smz`; did you mean `num_sms`?")
    );
    let e = GpuConfig::from_text("base = \"gtx480\"\nalu_latncy = 4\n").unwrap_err();
    assert!(e.msg.ends_with("did you mean `alu_latency`?"), "{e}");
    let e = GpuConfig::from_text("base = \"gtx480\"\ncolour = 4\n").unwrap_err();
    assert_eq!(
        e.msg, "unknown key `colour`",
        "nothing near enough to suggest"
    );
    let e = GpuConfig::from_text("base = \"gtx480\"\nnum_sms = four\n").unwrap_err();
    assert_eq!(e.line, 2);
    let e = GpuConfig::from_text("base = \"gtx480\"\nnum_sms = 1\nnum_sms = 2\n").unwrap_err();
    assert_eq!((e.line, e.msg.as_str()), (3, "`num_sms` is given twice"));
    let e = GpuConfig::from_text("num_sms = 1\n").unwrap_err();
    assert!(e.msg.starts_with("missing keys: name, warp_size"), "{e}");
    let e = GpuConfig::from_text("base = \"gtx480\"\nwarp_size = 0\n").unwrap_err();
    assert_eq!(e.msg, "`warp_size` must be positive");
    assert!(GpuConfig::load("/nonexistent/x.toml")
        .unwrap_err()
        .contains("neither a preset"));
    // Named values: every key's names are listed when one is wrong.
    for (key, names) in [
        ("scheduler", "\"gto\" or \"lrr\""),
        ("barrier_gate", "\"requests\" or \"all\""),
        ("early_unlockable", "\"drop\" or \"unlocked\""),
        ("atq_cursor", "\"head\" or \"cta\""),
        ("register_alloc_granularity", "\"warp\" or \"block\""),
    ] {
        let e = GpuConfig::from_text(&format!("base = \"gtx480\"\n{key} = \"x\"\n")).unwrap_err();
        assert_eq!(
            (e.line, e.msg.clone()),
            (2, format!("`{key}`: `x` is not {names}")),
            "{key}"
        );
    }
}

// ---------------------------------------------------------------------------------
// Occupancy: hand-computed cases, one per limiting resource and preset
// ---------------------------------------------------------------------------------

fn occ(cfg: &GpuConfig, threads: u32, regs: u32, shared: u32) -> Occupancy {
    occupancy(
        cfg,
        BlockResources {
            threads_per_block: threads,
            regs_per_thread: regs,
            shared_per_block: shared,
        },
    )
    .expect("kernel fits")
}

fn assert_occ(o: &Occupancy, blocks: u32, warps: u32, limiter: Limiter) {
    assert_eq!(
        (o.blocks_per_sm, o.active_warps, o.limiters.as_slice()),
        (blocks, warps, &[limiter][..]),
        "{o:?}"
    );
}

#[test]
fn gtx480_limited_by_registers() {
    // 256 threads = 8 warps, 21 regs: 21*32 = 672 -> round up to 64 = 704 per warp;
    // floor(32768/704) = 46 warps, round down to 2 -> 46; floor(46/8) = 5 blocks, one
    // pool (32768/32768). Warps allow min(8, 48/8) = 6, shared memory 8: 5 blocks,
    // 40 warps, 40/48 = 83.3%. (Without the allocation unit, 672: 48 warps, 6 blocks.)
    let o = occ(&GpuConfig::gtx480(), 256, 21, 0);
    assert_occ(&o, 5, 40, Limiter::Registers);
    let mut k = Kernel::new("k", KernelKind::Entry);
    k.num_regs = 21;
    assert_eq!(
        occupancy(&GpuConfig::gtx480(), BlockResources::of(&k, 256)),
        Ok(o.clone())
    );
    assert!((o.occupancy - 40.0 / 48.0).abs() < 1e-12);
}

#[test]
fn gtx480_limited_by_shared_memory() {
    // 128 threads = 4 warps, 16 regs (512 per warp: 64 warps -> 16 blocks), 9800 bytes
    // shared -> rounded to 128: 9856; floor(49152/9856) = 4 blocks (9800 unrounded
    // would allow 5). Warps: min(8, 48/4 = 12) = 8. 4 blocks, 16 warps, 33.3%.
    let o = occ(&GpuConfig::gtx480(), 128, 16, 9800);
    assert_occ(&o, 4, 16, Limiter::SharedMemory);
}

#[test]
fn gtx480_limited_by_blocks_per_sm() {
    // 64 threads = 2 warps, 16 regs: regs allow floor(64/2) = 32 blocks, warps 48/2 =
    // 24, shared 8; the SM holds at most 8 blocks: 8 blocks, 16 warps, 33.3%.
    let o = occ(&GpuConfig::gtx480(), 64, 16, 0);
    assert_occ(&o, 8, 16, Limiter::Blocks);
}

#[test]
fn gtx480_limited_by_warps_per_sm() {
    // 512 threads = 16 warps, 16 regs: regs allow floor(64/16) = 4 blocks; warps
    // floor(48/16) = 3 (< 8 blocks): 3 blocks, 48 warps, 100%.
    let o = occ(&GpuConfig::gtx480(), 512, 16, 0);
    assert_occ(&o, 3, 48, Limiter::Warps);
    assert_eq!(o.occupancy, 1.0);
}

#[test]
fn maxwell_limited_by_registers() {
    // 192 threads = 6 warps, 50 regs: 50*32 = 1600 -> round up to 256 = 1792 per warp;
    // a 32768-register block pool holds floor(32768/1792) = 18 warps, round down to 4
    // -> 16; floor(16/6) = 2 blocks per pool, 65536/32768 = 2 pools: 4 blocks. Warps
    // allow min(32, floor(64/6) = 10) = 10. 4 blocks, 24 warps, 37.5%.
    let o = occ(&GpuConfig::maxwell(), 192, 50, 0);
    assert_occ(&o, 4, 24, Limiter::Registers);
    assert!((o.occupancy - 0.375).abs() < 1e-12);
}

#[test]
fn maxwell_limited_by_shared_memory() {
    // 128 threads = 4 warps, 32 regs (1024 per warp: 32 warps per pool -> 8 blocks,
    // x2 pools = 16), 19600 bytes -> rounded to 256: 19712; floor(98304/19712) = 4
    // (5 unrounded). Warps: min(32, 16) = 16. 4 blocks, 16 warps, 25%.
    let o = occ(&GpuConfig::maxwell(), 128, 32, 19600);
    assert_occ(&o, 4, 16, Limiter::SharedMemory);
}

#[test]
fn maxwell_limited_by_blocks_per_sm() {
    // 32 threads = 1 warp, 32 regs: regs allow 32 warps per pool x 2 = 64 blocks, warps
    // 64; at most 32 blocks per SM: 32 blocks, 32 warps, 50%.
    let o = occ(&GpuConfig::maxwell(), 32, 32, 0);
    assert_occ(&o, 32, 32, Limiter::Blocks);
}

#[test]
fn maxwell_limited_by_warps_per_sm() {
    // 1024 threads = 32 warps, 16 regs (512 per warp: 64 warps per pool -> 2 blocks x 2
    // pools = 4); warps floor(64/32) = 2: 2 blocks, 64 warps, 100%.
    let o = occ(&GpuConfig::maxwell(), 1024, 16, 0);
    assert_occ(&o, 2, 64, Limiter::Warps);
}

#[test]
fn occupancy_rejects_blocks_that_cannot_run() {
    let g = GpuConfig::gtx480();
    let run = |t, r, s| {
        occupancy(
            &g,
            BlockResources {
                threads_per_block: t,
                regs_per_thread: r,
                shared_per_block: s,
            },
        )
    };
    assert_eq!(run(0, 8, 0), Err(OccupancyError::NoThreads));
    assert_eq!(
        run(1025, 8, 0),
        Err(OccupancyError::TooManyThreads {
            threads: 1025,
            max: 1024
        })
    );
    assert_eq!(
        run(64, 64, 0),
        Err(OccupancyError::TooManyRegisters { regs: 64, max: 63 })
    );
    assert_eq!(
        run(64, 8, 49153),
        Err(OccupancyError::TooMuchShared {
            bytes: 49153,
            max: 49152
        })
    );
    // 1024 threads x 63 regs: 2048 regs per warp, 16 warps per pool < 32 warps.
    assert_eq!(
        run(1024, 63, 0),
        Err(OccupancyError::BlockRegistersExceeded)
    );
    // Ties report every limiter: 192 threads = 6 warps -> 8 blocks by warps and blocks.
    assert_eq!(
        run(192, 8, 0).unwrap().limiters,
        vec![Limiter::Warps, Limiter::Blocks]
    );
}

// ---------------------------------------------------------------------------------
// Assembler: every instruction form, errors, builder, random round trips
// ---------------------------------------------------------------------------------

/// One of every instruction form (not a meaningful kernel).
const EVERY_FORM: &str = "
.func helper
{
    .reg 4;
    add.s32 %r0, %r0, 1;
    ret;
}

.entry all(.param .u32 out, .param .f64 scale, .param .u8 flag)
{
    .reg 32;
    .pred 4;
    .ureg 4;
    .areg 4;
    .shared 1024;
    .local 16;
top:
    add.s32 %r1, %r2, -7;
    sub.u32 %r1, %r2, 0xff;
    mul.f32 %r1, %r2, 1.5;
    mulhi.u32 %r1, %r2, %r3;
    div.s64 %rd4, %rd6, %rd8;
    rem.u64 %rd4, %rd6, 3;
    min.f64 %rd4, %rd6, 0d3FF0000000000000;
    max.s32 %r1, %r2, %tid.x;
    and.b32 %r1, %r2, 0x0f;
    or.pred %p1, %p2, %p3;
    xor.b64 %rd4, %rd6, %rd8;
    shl.b64 %rd4, %rd6, 3;
    shr.s32 %r1, %r2, %r3;
    mov.u32 %r1, %laneid;
    mov.b64 %rd4, %clock64;
    mov.u32 %ur1, %ctaid.y;
    neg.f32 %r1, %r2;
    not.pred %p1, %p2;
    abs.s32 %r1, %r2;
    sqrt.f64 %rd4, %rd6;
    popc.b32 %r1, %r2;
    clz.b64 %rd4, %rd6;
    mad.s32 %r1, %r2, %r3, %r4;
    mad.f64 %rd4, %rd6, %rd8, %rd10;
    cvt.f32.s32 %r1, %r2;
    cvt.rzi.s32.f32 %r1, %r2;
    cvt.rn.f32.f64 %r1, %rd4;
    cvt.u64.u32 %rd4, %r1;
    setp.lt.s32 %p0, %r1, %r2;
    setp.neu.f32 %p0, %r1, 0f7FC00000;
    selp.f32 %r1, %r2, %r3, %p0;
    @!%p1 ld.global.s8 %r1, [%r2+4];
    ld.shared.u16 %r1, [%r2-2];
    ld.local.f64 %rd4, [%r2];
    ld.param.u32 %r1, [out];
    ld.param.f64 %rd4, [scale];
    ld.param.u8 %r1, [flag];
    ld.global.u32 %r1, [%ur1+128];
    ld.global.u32 %r1, [%rd6-8];
    st.global.b64 [%urd2+16], %rd4;
    ld.shared.b32 %r1, [64];
    st.global.f32 [%r2], %r3;
    st.shared.u8 [%r2+1], 255;
    st.local.b64 [%r2+8], %rd4;
    atom.global.add.u32 %r1, [%r2], 1;
    atom.shared.cas.b32 %r1, [%r2], %r3, %r4;
    atom.global.exch.b64 %rd4, [%r2], %rd6;
    atom.global.max.f32 %r1, [%r2], %r3;
    @%p0 bra.uni top;
    @%p1 bra out;
    call helper;
    bar.sync 0;
    membar.cta;
    membar.gl;
    vote.any.pred %p1, %p2;
    vote.all.pred %p1, %p2;
    vote.ballot.b32 %r1, %p2;
    shfl.up.b32 %r1, %r2, 1, 0;
    shfl.down.b32 %r1|%p1, %r2, %r3, 31;
    shfl.idx.b32 %r1, %r2, %laneid, 31;
    shfl.bfly.b32 %r1, %r2, 16, 31;
    nop;
    enq.data.global.f32 %a0;
    enq.addr.local.u32 %a1;
    enq.data.global.u32 %ad2;
    enq.addr.global.b64 %urd2;
    enq.pred.lt.s32 %a2, %ur1;
    deq.pred %p3;
    ld.global.f32 %r1, [deq.data];
    st.global.f32 [deq.addr], %r1;
    atom.global.add.u32 %r1, [deq.addr], 1;
out:
    exit;
}
";

#[test]
fn every_form_assembles_and_round_trips() {
    let p = must_parse(EVERY_FORM);
    assert_eq!(p.kernels.len(), 2);
    let k = &p.kernels[1];
    assert_eq!(
        (k.num_regs, k.num_preds, k.num_uregs, k.num_aregs),
        (32, 4, 4, 4)
    );
    assert_eq!((k.shared_bytes, k.local_bytes), (1024, 16));
    // .u32 at 0, .f64 aligned to 8, .u8 at 16.
    assert_eq!(
        k.params.iter().map(|p| p.offset).collect::<Vec<_>>(),
        vec![0, 8, 16]
    );
    assert!(k.insts.iter().any(|i| i.op == Op::Call { func: 0 }));
    let imm = |i: usize| match k.insts[i].op {
        Op::Bin { b, .. } => b,
        _ => panic!("not a binary op"),
    };
    assert_eq!(imm(0), Src::Imm(0xffff_fff9)); // -7 as .s32
    assert_eq!(imm(2), Src::Imm(u64::from(1.5f32.to_bits())));
    assert_eq!(check(&p), Ok(()));
    assert_round_trip(&p);
}

fn errors_of(text: &str) -> Vec<(u32, u32, String)> {
    match parse(text) {
        Ok(_) => panic!("expected errors in:\n{text}"),
        Err(es) => es.into_iter().map(|e| (e.line, e.col, e.msg)).collect(),
    }
}

fn kernel_with(body: &str) -> String {
    format!(".entry k(.param .u32 n)\n{{\n    .reg 8;\n    .pred 2;\n{body}\n}}\n")
}

#[test]
fn assembler_errors_carry_line_and_column() {
    // Body lines start at line 5 of kernel_with.
    let cases: &[(&str, u32, u32, &str)] = &[
        (
            "    add.s32 %r1, %r2",
            5,
            21,
            "expected `,`, found the end of the statement",
        ),
        (
            "    frob.u32 %r1, %r2, %r3;",
            5,
            5,
            "unknown instruction `frob.u32`",
        ),
        (
            "    add.s32 %r1, %r9, 1;",
            5,
            18,
            "register `%r9` is beyond the 8 declared",
        ),
        (
            "    add.s64 %rd1, %rd2, 1;",
            5,
            13,
            "register pair `%rd1` must start at an even register",
        ),
        (
            "    add.s64 %r2, %rd2, 1;",
            5,
            13,
            "a .s64 operand needs a register pair (%rd, %urd, %ad), not `%r2`",
        ),
        (
            "    add.s8 %r1, %r2, 1;",
            5,
            5,
            "`add` is not defined on .s8",
        ),
        (
            "    and.s32 %r1, %r2, 1;",
            5,
            5,
            "`and` is not defined on .s32",
        ),
        (
            "    add.s32 %r1, %r2, 99999999999;",
            5,
            23,
            "99999999999 does not fit in .s32",
        ),
        (
            "    mul.f32 %r1, %r2, 1.5x;",
            5,
            23,
            "`1.5x` is not an .f32 literal",
        ),
        ("    bra nowhere;", 5, 9, "no label `nowhere` in `k`"),
        (
            "    ld.global.u32 %r1, [n];",
            5,
            25,
            "parameter name `n` used outside a .param access",
        ),
        (
            "    ld.param.u32 %r1, [m];",
            5,
            24,
            "no parameter named `m`",
        ),
        (
            "    st.param.u32 [n], %r1;",
            5,
            5,
            "the .param space is read-only",
        ),
        (
            "    setp.ltu.s32 %p0, %r1, %r2;",
            5,
            5,
            "`.ltu` does not compare .s32",
        ),
        (
            "    mov.f32 %r1, %tid.x;",
            5,
            18,
            "special register `%tid.x` is .u32; it cannot be a .f32 operand",
        ),
        (
            "    st.global.u32 [deq.data], %r1;",
            5,
            19,
            "[deq.data] is only a load address",
        ),
        (
            "    vote.ballot.pred %p0, %p1;",
            5,
            5,
            "`vote.ballot` is typed .b32",
        ),
        (
            "    add.s32 %r1, %r2, 1 %r3;",
            5,
            25,
            "unexpected `%r3` after the operands",
        ),
        (
            "    add.s32 %r1, %r2, 1 # x;",
            5,
            25,
            "unexpected character `#`",
        ),
        ("L:\nL:\n    exit;", 6, 1, "label `L` is defined twice"),
        ("    call missing;", 5, 10, "no function named `missing`"),
    ];
    let mut wrong = Vec::new();
    for &(body, line, col, msg) in cases {
        let errs = errors_of(&kernel_with(body));
        if !errs.contains(&(line, col, msg.to_string())) {
            wrong.push(format!(
                "for `{body}` expected {line}:{col}: {msg}, got {errs:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn structural_errors_are_reported() {
    assert_eq!(
        errors_of("exit;"),
        vec![(1, 1, "expected `.entry` or `.func`, found `exit`".into())]
    );
    assert_eq!(
        errors_of(".entry k()\n{\n    exit;\n"),
        vec![(1, 1, "kernel `k` is never closed with `}`".into())]
    );
    assert_eq!(
        errors_of(".entry k(.param .u32 a, .param .u32 a)\n{\n}\n"),
        vec![(1, 37, "parameter `a` is declared twice".into())]
    );
    assert_eq!(
        errors_of(".entry k()\n{\n}\n.func k\n{\n}\n"),
        vec![(4, 7, "`k` is defined twice".into())]
    );
    assert_eq!(
        errors_of(".entry a()\n{\n    exit;\n.entry b()\n{\n    bra X;\n}\n"),
        vec![
            (4, 1, "`a` is not closed before this `.entry`".into()),
            (6, 9, "no label `X` in `b`".into())
        ]
    );
    // Several errors are all reported, in order.
    let errs = errors_of(&kernel_with("    add.s32 %r1;\n    bogus;\n    exit;"));
    assert_eq!(errs.iter().map(|e| e.0).collect::<Vec<_>>(), vec![5, 6]);
}

#[test]
fn builder_builds_what_the_assembler_reads() {
    let mut b = KernelBuilder::new("saxpy", KernelKind::Entry);
    let n = b.param("n", Type::U32);
    let a = b.param("a", Type::F32);
    let x = b.param("x", Type::U32);
    let y = b.param("y", Type::U32);
    let (i, t, lim, off, xp, yp, xv, yv, av) = (
        b.reg(),
        b.reg(),
        b.reg(),
        b.reg(),
        b.reg(),
        b.reg(),
        b.reg(),
        b.reg(),
        b.reg(),
    );
    let p = b.pred();
    let done = b.label("DONE");
    let param = |i: u16| Address {
        base: AddrBase::Param(i),
        offset: 0,
    };
    let at = |r: Reg| Address {
        base: AddrBase::Reg(r),
        offset: 0,
    };
    b.push(Inst::new(Op::Un {
        op: UnOp::Mov,
        ty: Type::U32,
        dst: i,
        a: Src::Special(Special::Ctaid(Dim::X)),
    }));
    b.push(Inst::new(Op::Un {
        op: UnOp::Mov,
        ty: Type::U32,
        dst: t,
        a: Src::Special(Special::Ntid(Dim::X)),
    }));
    b.push(Inst::new(Op::Mad {
        ty: Type::U32,
        dst: i,
        a: Src::Reg(i),
        b: Src::Reg(t),
        c: Src::Special(Special::Tid(Dim::X)),
    }));
    b.push(Inst::new(Op::Ld {
        space: Space::Param,
        ty: Type::U32,
        dst: lim,
        addr: param(n),
    }));
    b.push(Inst::new(Op::Setp {
        cmp: Cmp::Ge,
        ty: Type::U32,
        dst: p,
        a: Src::Reg(i),
        b: Src::Reg(lim),
    }));
    b.bra(
        Some(Guard {
            pred: p.idx,
            negate: false,
        }),
        true,
        done,
    );
    b.push(Inst::new(Op::Bin {
        op: BinOp::Shl,
        ty: Type::B32,
        dst: off,
        a: Src::Reg(i),
        b: Src::Imm(2),
    }));
    b.push(Inst::new(Op::Ld {
        space: Space::Param,
        ty: Type::U32,
        dst: xp,
        addr: param(x),
    }));
    b.push(Inst::new(Op::Bin {
        op: BinOp::Add,
        ty: Type::U32,
        dst: xp,
        a: Src::Reg(xp),
        b: Src::Reg(off),
    }));
    b.push(Inst::new(Op::Ld {
        space: Space::Global,
        ty: Type::F32,
        dst: xv,
        addr: at(xp),
    }));
    b.push(Inst::new(Op::Ld {
        space: Space::Param,
        ty: Type::U32,
        dst: yp,
        addr: param(y),
    }));
    b.push(Inst::new(Op::Bin {
        op: BinOp::Add,
        ty: Type::U32,
        dst: yp,
        a: Src::Reg(yp),
        b: Src::Reg(off),
    }));
    b.push(Inst::new(Op::Ld {
        space: Space::Global,
        ty: Type::F32,
        dst: yv,
        addr: at(yp),
    }));
    b.push(Inst::new(Op::Ld {
        space: Space::Param,
        ty: Type::F32,
        dst: av,
        addr: param(a),
    }));
    b.push(Inst::new(Op::Mad {
        ty: Type::F32,
        dst: yv,
        a: Src::Reg(av),
        b: Src::Reg(xv),
        c: Src::Reg(yv),
    }));
    b.push(Inst::new(Op::St {
        space: Space::Global,
        ty: Type::F32,
        addr: at(yp),
        a: Src::Reg(yv),
    }));
    b.bind(done);
    b.push(Inst::new(Op::Exit));
    let k = b.finish().expect("all labels bound");
    assert_eq!(
        k.insts[5].op,
        Op::Bra {
            uni: true,
            target: 16
        }
    );
    let prog = Program { kernels: vec![k] };
    assert_eq!(check(&prog), Ok(()));
    assert_round_trip(&prog);
    // A 64-bit register pair is even-aligned.
    let mut b = KernelBuilder::new("f", KernelKind::Func);
    assert_eq!(b.reg(), Reg::r(0));
    assert_eq!(b.reg64(), Reg::r(2));
    assert_eq!(b.reg(), Reg::r(4));
    let l = b.label("never");
    b.bra(None, false, l);
    assert_eq!(b.finish().unwrap_err(), "label `never` is never bound");
}

/// A small deterministic generator (xorshift64*) for random programs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn flip(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

const NREGS: u16 = 16;

/// A random valid register for a value of type `ty`.
fn rand_reg(r: &mut Rng, ty: Type) -> Reg {
    if ty == Type::Pred {
        return Reg::p(r.below(4) as u32);
    }
    let file = if ty.is_wide() {
        r.pick(&[RegFile::R, RegFile::R, RegFile::Ur])
    } else {
        r.pick(&[RegFile::R, RegFile::R, RegFile::Ur, RegFile::A])
    };
    let idx = r.below(u64::from(NREGS)) as u32;
    Reg {
        file,
        idx: if ty.is_wide() { idx & !1 } else { idx },
    }
}

fn rand_src(r: &mut Rng, ty: Type) -> Src {
    match r.below(3) {
        0 if ty != Type::Pred => {
            let bits = r.next()
                & if ty.bits() >= 64 {
                    u64::MAX
                } else {
                    (1u64 << ty.bits()) - 1
                };
            Src::Imm(bits)
        }
        1 if matches!(ty, Type::U32 | Type::S32 | Type::B32) => {
            // Only the 32-bit specials fit a 32-bit slot (`%clock64` is wide).
            let all: Vec<Special> = Special::all()
                .into_iter()
                .filter(|sp| !sp.is_wide())
                .collect();
            Src::Special(all[r.below(all.len() as u64) as usize])
        }
        _ => Src::Reg(rand_reg(r, ty)),
    }
}

fn rand_ty(r: &mut Rng, ok: impl Fn(Type) -> bool) -> Type {
    let tys: Vec<Type> = Type::ALL.iter().copied().filter(|&t| ok(t)).collect();
    r.pick(&tys)
}

fn rand_addr(r: &mut Rng, space: Space, nparams: u16, load: bool) -> Address {
    let offset = (r.next() as i32) >> r.below(32);
    let base = match r.below(6) {
        0 => AddrBase::None,
        1 if space == Space::Param && nparams > 0 => {
            AddrBase::Param(r.below(u64::from(nparams)) as u16)
        }
        2 if space != Space::Param => {
            let d = if load && r.flip() {
                AddrBase::DeqData
            } else {
                AddrBase::DeqAddr
            };
            return Address { base: d, offset: 0 };
        }
        3 => AddrBase::RegPair(Reg {
            file: r.pick(&[RegFile::R, RegFile::Ur]),
            idx: r.below(u64::from(NREGS)) as u32 & !1,
        }),
        _ => AddrBase::Reg(Reg {
            file: r.pick(&[RegFile::R, RegFile::Ur]),
            idx: r.below(u64::from(NREGS)) as u32,
        }),
    };
    Address { base, offset }
}

fn rand_op(r: &mut Rng, len: u32, nparams: u16, nkernels: u32) -> Op {
    let data = |t: Type| t != Type::Pred;
    match r.below(20) {
        0 | 1 => {
            let op = r.pick(&BinOp::ALL);
            let ty = rand_ty(r, |t| op.accepts(t));
            let bty = if op.is_shift() { Type::U32 } else { ty };
            Op::Bin {
                op,
                ty,
                dst: rand_reg(r, ty),
                a: rand_src(r, ty),
                b: rand_src(r, bty),
            }
        }
        2 => {
            let op = r.pick(&UnOp::ALL);
            let ty = rand_ty(r, |t| op.accepts(t));
            Op::Un {
                op,
                ty,
                dst: rand_reg(r, ty),
                a: rand_src(r, ty),
            }
        }
        3 => {
            let ty = rand_ty(r, |t| {
                t.is_reg_sized() && !matches!(t, Type::B32 | Type::B64)
            });
            Op::Mad {
                ty,
                dst: rand_reg(r, ty),
                a: rand_src(r, ty),
                b: rand_src(r, ty),
                c: rand_src(r, ty),
            }
        }
        4 => {
            let (dty, sty) = (rand_ty(r, data), rand_ty(r, data));
            let rnd = if r.flip() {
                None
            } else {
                Some(r.pick(&Round::ALL))
            };
            Op::Cvt {
                rnd,
                dty,
                sty,
                dst: rand_reg(r, dty),
                a: rand_src(r, sty),
            }
        }
        5 => {
            let cmp = r.pick(&Cmp::ALL);
            let ty = rand_ty(r, |t| cmp.accepts(t));
            Op::Setp {
                cmp,
                ty,
                dst: rand_reg(r, Type::Pred),
                a: rand_src(r, ty),
                b: rand_src(r, ty),
            }
        }
        6 => {
            let ty = rand_ty(r, Type::is_reg_sized);
            Op::Selp {
                ty,
                dst: rand_reg(r, ty),
                a: rand_src(r, ty),
                b: rand_src(r, ty),
                p: rand_reg(r, Type::Pred),
            }
        }
        7 => {
            let space = r.pick(&Space::ALL);
            let ty = rand_ty(r, data);
            Op::Ld {
                space,
                ty,
                dst: rand_reg(r, super::asm::widen(ty)),
                addr: rand_addr(r, space, nparams, true),
            }
        }
        8 => {
            let space = r.pick(&[Space::Global, Space::Shared, Space::Local]);
            let ty = rand_ty(r, data);
            Op::St {
                space,
                ty,
                addr: rand_addr(r, space, nparams, false),
                a: rand_src(r, super::asm::widen(ty)),
            }
        }
        9 => {
            let space = r.pick(&[Space::Global, Space::Shared]);
            let op = r.pick(&AtomOp::ALL);
            let ty = rand_ty(r, |t| op.accepts(t));
            let b = (op == AtomOp::Cas).then(|| rand_src(r, ty));
            Op::Atom {
                space,
                op,
                ty,
                dst: rand_reg(r, ty),
                addr: rand_addr(r, space, nparams, false),
                a: rand_src(r, ty),
                b,
            }
        }
        10 | 11 => Op::Bra {
            uni: r.flip(),
            target: r.below(u64::from(len) + 1) as u32,
        },
        12 => r.pick(&[
            Op::Ret,
            Op::Exit,
            Op::Nop,
            Op::Fence {
                scope: FenceScope::Cta,
            },
            Op::Fence {
                scope: FenceScope::Gl,
            },
        ]),
        13 => Op::Bar {
            id: r.below(16) as u32,
        },
        14 => Op::Call {
            func: r.below(u64::from(nkernels)) as u32,
        },
        15 => {
            let mode = r.pick(&VoteMode::ALL);
            let dt = if mode == VoteMode::Ballot {
                Type::B32
            } else {
                Type::Pred
            };
            Op::Vote {
                mode,
                dst: rand_reg(r, dt),
                p: rand_reg(r, Type::Pred),
            }
        }
        16 => Op::Shfl {
            mode: r.pick(&ShflMode::ALL),
            dst: rand_reg(r, Type::B32),
            dst_pred: r.flip().then(|| rand_reg(r, Type::Pred)),
            a: rand_src(r, Type::B32),
            lane: rand_src(r, Type::U32),
            clamp: rand_src(r, Type::U32),
        },
        17 => {
            let ty = rand_ty(r, data);
            let wide = r.flip();
            let idx = r.below(u64::from(NREGS)) as u32;
            let addr = Reg {
                file: r.pick(&[RegFile::A, RegFile::Ur]),
                idx: if wide { idx & !1 } else { idx },
            };
            if r.flip() {
                Op::EnqData {
                    space: r.pick(&[Space::Global, Space::Local]),
                    ty,
                    addr,
                    wide,
                }
            } else {
                Op::EnqAddr {
                    space: r.pick(&[Space::Global, Space::Shared, Space::Local]),
                    ty,
                    addr,
                    wide,
                }
            }
        }
        18 => {
            let cmp = r.pick(&Cmp::ALL);
            let ty = rand_ty(r, |t| cmp.accepts(t));
            Op::EnqPred {
                cmp,
                ty,
                a: rand_src(r, ty),
                b: rand_src(r, ty),
            }
        }
        _ => Op::DeqPred {
            dst: rand_reg(r, Type::Pred),
        },
    }
}

fn rand_kernel(r: &mut Rng, n: usize, nkernels: u32) -> Kernel {
    let kind = if r.flip() {
        KernelKind::Entry
    } else {
        KernelKind::Func
    };
    let mut k = Kernel::new(&format!("k{n}"), kind);
    if kind == KernelKind::Entry {
        for i in 0..r.below(4) {
            let ty = rand_ty(r, |t| t != Type::Pred);
            k.add_param(&format!("p{i}"), ty);
        }
    }
    (k.num_regs, k.num_preds, k.num_uregs, k.num_aregs) =
        (u32::from(NREGS), 4, u32::from(NREGS), u32::from(NREGS));
    k.shared_bytes = r.below(4) as u32 * 256;
    k.local_bytes = r.below(3) as u32 * 16;
    let len = r.below(40) as u32;
    for _ in 0..len {
        let op = rand_op(r, len, k.params.len() as u16, nkernels);
        let guard = r.flip().then(|| Guard {
            pred: r.below(4) as u32,
            negate: r.flip(),
        });
        let uni = op.uni_allowed() && r.flip();
        k.insts.push(Inst { guard, op, uni });
    }
    // Every branch target gets a label, plus a few spare labels.
    let mut ats: Vec<u32> = k
        .insts
        .iter()
        .filter_map(|i| {
            if let Op::Bra { target, .. } = i.op {
                Some(target)
            } else {
                None
            }
        })
        .collect();
    for _ in 0..r.below(3) {
        ats.push(r.below(u64::from(len) + 1) as u32);
    }
    ats.sort();
    ats.dedup();
    k.labels = ats
        .iter()
        .enumerate()
        .map(|(i, &at)| Label {
            name: format!("L{i}"),
            at,
        })
        .collect();
    k
}

fn rand_program(seed: u64) -> Program {
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let n = 1 + r.below(3) as u32;
    Program {
        kernels: (0..n).map(|i| rand_kernel(&mut r, i as usize, n)).collect(),
    }
}

#[test]
fn random_programs_round_trip() {
    for seed in 0..400 {
        let p = rand_program(seed);
        let text = print(&p);
        match parse(&text) {
            Ok(q) => {
                assert_eq!(q, p, "seed {seed}:\n{text}");
                assert_eq!(print(&q), text);
            }
            Err(es) => panic!("seed {seed}: {:?}\n{text}", es),
        }
    }
}

#[test]
fn mangled_text_never_panics() {
    // Replace, delete or duplicate characters of valid programs: the assembler must
    // answer with errors (or a program), never panic.
    let alphabet: Vec<char> = "%.,;:[]+-@!{}()|0123456789abcdefxrpud \n$"
        .chars()
        .collect();
    for seed in 0..300u64 {
        let text: Vec<char> = print(&rand_program(seed)).chars().collect();
        let mut r = Rng(seed + 7);
        for _ in 0..8 {
            let mut t = text.clone();
            for _ in 0..1 + r.below(4) {
                if t.is_empty() {
                    break;
                }
                let i = r.below(t.len() as u64) as usize;
                match r.below(3) {
                    0 => t[i] = r.pick(&alphabet),
                    1 => {
                        t.remove(i);
                    }
                    _ => t.insert(i, t[i]),
                }
            }
            let s: String = t.into_iter().collect();
            if let Err(es) = parse(&s) {
                assert!(!es.is_empty());
                assert!(es.iter().all(|e| e.line >= 1 && e.col >= 1), "{es:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// The reference page
// ---------------------------------------------------------------------------------

const ISA_PAGE: &str = include_str!("../../../lang-spec/dac-gpu-isa.md");

/// The code blocks fenced as ```dacasm, with the page line each starts on.
fn dacasm_blocks(page: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in page.lines().enumerate() {
        match &mut current {
            None if line.trim_start() == "```dacasm" => current = Some((n + 1, String::new())),
            Some(_) if line.trim_start().starts_with("```") => blocks.extend(current.take()),
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn doc_samples_assemble() {
    let blocks = dacasm_blocks(ISA_PAGE);
    assert!(
        blocks.len() >= 5,
        "expected the page's samples, found {}",
        blocks.len()
    );
    for (line, text) in &blocks {
        let p = parse(text).unwrap_or_else(|es| {
            let msgs: Vec<String> = es.iter().map(|e| e.to_string()).collect();
            panic!("dacasm block at page line {line}:\n{}", msgs.join("\n"))
        });
        assert_round_trip(&p);
    }
    // The worked example is the saxpy kernel with 9 registers.
    let (_, first) = &blocks[0];
    let saxpy = parse(first).unwrap();
    assert_eq!(saxpy.kernel("saxpy").map(|k| k.num_regs), Some(9));
}

// ---------------------------------------------------------------------------------
// Instruction metadata
// ---------------------------------------------------------------------------------

/// Register counts per file (r, p, ur, a) needed by the accesses `for_each_reg` reports.
fn counts_from_accesses(k: &Kernel) -> [u32; 4] {
    let mut n = [0u32; 4];
    for inst in &k.insts {
        inst.for_each_reg(|a| {
            let i = match a.reg.file {
                RegFile::R => 0,
                RegFile::P => 1,
                RegFile::Ur => 2,
                RegFile::A => 3,
            };
            n[i] = n[i].max(a.reg.idx + if a.wide { 2 } else { 1 });
        });
    }
    n
}

#[test]
fn register_accesses_agree_with_the_assembler() {
    // Without declarations the assembler sizes each file from the registers it saw;
    // for_each_reg must report exactly those registers with the same widths.
    let undeclared: String = EVERY_FORM
        .lines()
        .filter(|l| {
            !matches!(
                l.trim().split(' ').next(),
                Some(".reg" | ".pred" | ".ureg" | ".areg")
            )
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let p = must_parse(&undeclared);
    for k in &p.kernels {
        assert_eq!(
            counts_from_accesses(k),
            [k.num_regs, k.num_preds, k.num_uregs, k.num_aregs],
            "{}",
            k.name
        );
    }
    for seed in 0..100 {
        for k in &rand_program(seed).kernels {
            let n = counts_from_accesses(k);
            assert!(
                n[0] <= k.num_regs
                    && n[1] <= k.num_preds
                    && n[2] <= k.num_uregs
                    && n[3] <= k.num_aregs
            );
        }
    }
}

#[test]
fn instructions_know_their_unit_and_accesses() {
    let p = must_parse(&kernel_with(
        "    div.f32 %r1, %r2, %r3;\n    mad.s32 %r1, %r2, %r3, %r4;\n    add.f64 %rd2, %rd4, %rd6;\n    @%p1 st.shared.u8 [%r1+1], %r2;\n    add.u32 %ur1, %ur2, %ctaid.x;\n    vote.any.pred %p0, %p1;",
    ));
    let k = &p.kernels[0];
    let units: Vec<Unit> = k.insts.iter().map(Inst::unit).collect();
    assert_eq!(
        units,
        vec![
            Unit::Div,
            Unit::Mul,
            Unit::F64,
            Unit::Mem(Space::Shared),
            Unit::Alu,
            Unit::Warp
        ]
    );
    let mut acc = Vec::new();
    k.insts[3].for_each_reg(|a| acc.push(a));
    assert_eq!(
        acc,
        vec![
            RegAccess {
                reg: Reg::p(1),
                wide: false,
                def: false
            },
            RegAccess {
                reg: Reg::r(1),
                wide: false,
                def: false
            },
            RegAccess {
                reg: Reg::r(2),
                wide: false,
                def: false
            },
        ]
    );
    let mut acc = Vec::new();
    k.insts[2].for_each_reg(|a| acc.push((a.reg.idx, a.wide, a.def)));
    assert_eq!(
        acc,
        vec![(4, true, false), (6, true, false), (2, true, true)]
    );
    assert_eq!(
        k.insts.iter().map(Inst::is_uniform).collect::<Vec<_>>(),
        vec![false, false, false, false, true, false]
    );
}

#[test]
fn occupancy_is_monotone_and_within_the_sm() {
    for cfg in [GpuConfig::gtx480(), GpuConfig::maxwell()] {
        for threads in (32..=1024).step_by(32) {
            let mut prev = u32::MAX;
            for regs in 1..=cfg.max_registers_per_thread {
                let res = BlockResources {
                    threads_per_block: threads,
                    regs_per_thread: regs,
                    shared_per_block: 0,
                };
                let Ok(o) = occupancy(&cfg, res) else {
                    // Once a block no longer fits, more registers never fit either.
                    prev = 0;
                    continue;
                };
                assert!(
                    o.blocks_per_sm <= prev,
                    "{} {threads} threads: more registers, more blocks",
                    cfg.name
                );
                assert!(
                    o.active_warps <= cfg.max_warps_per_sm
                        && o.blocks_per_sm <= cfg.max_blocks_per_sm
                );
                assert!(o.blocks_per_sm >= 1 && !o.limiters.is_empty());
                prev = o.blocks_per_sm;
            }
            let mut prev = u32::MAX;
            for shared in (0..=cfg.max_shared_mem_per_block).step_by(1000) {
                let res = BlockResources {
                    threads_per_block: threads,
                    regs_per_thread: 16,
                    shared_per_block: shared,
                };
                let o = occupancy(&cfg, res).expect("16 registers always fit");
                assert!(o.blocks_per_sm <= prev && o.blocks_per_sm >= 1);
                prev = o.blocks_per_sm;
            }
        }
    }
}

#[test]
fn register_indices_past_16_bits_stay_apart_through_the_assembler() {
    // Virtual numbering before allocation names more than 65,536 registers: the
    // builder, printer and assembler keep them distinct (no wrap onto %r0..).
    let mut b = KernelBuilder::new("huge", KernelKind::Entry);
    let first = b.reg();
    let (mut last, mut pred) = (first, b.pred());
    for _ in 0..70_000 {
        last = b.reg();
        pred = b.pred();
    }
    let pair = b.reg64();
    assert_eq!((last.idx, pair.idx, pred.idx), (70_000, 70_002, 70_000));
    let mov = |dst: Reg, a: Reg| {
        Inst::new(Op::Un {
            op: UnOp::Mov,
            ty: Type::U32,
            dst,
            a: Src::Reg(a),
        })
    };
    b.push(mov(last, first));
    b.push(Inst::guarded(pred.idx, true, Op::Exit));
    let k = b.finish().expect("no limit on register names");
    assert_eq!((k.num_regs, k.num_preds), (70_004, 70_001));
    let text = print(&Program {
        kernels: vec![k.clone()],
    });
    assert!(text.contains("mov.u32 %r70000, %r0;"), "{text}");
    assert!(text.contains("@!%p70000 exit;"), "{text}");
    let back = must_parse(&text);
    assert_eq!(back.kernels[0].insts, k.insts);
    // The largest index is a register; one past it is not.
    let top = kernel_with("    mov.u32 %r4294967294, 1;");
    let top = top.replace(".reg 8", ".reg 4294967295");
    assert_eq!(must_parse(&top).kernels[0].num_regs, u32::MAX);
    let errs = errors_of(&kernel_with("    mov.u64 %rd4294967294, 1;"));
    assert!(errs[0].2.contains("past the last register"), "{errs:?}");
    assert!(errors_of(&kernel_with("    mov.u32 %r4294967296, 1;"))[0]
        .2
        .contains("is not a register"));
}

#[test]
fn instructions_stay_compact_with_32_bit_register_indices() {
    // What the simulator steps through: the packed register keeps `Inst` as small as
    // with 16-bit indices.
    assert_eq!(std::mem::size_of::<Reg>(), 6);
    assert_eq!(std::mem::size_of::<Inst>(), 72);
}

#[test]
fn register_files_are_checked_against_the_machine() {
    let mut k = Kernel::new("k", KernelKind::Entry);
    k.num_regs = 255;
    k.num_preds = 1 << 16;
    assert_eq!(k.check_register_files(), Ok(()));
    k.num_regs = 256;
    let err = k.check_register_files().unwrap_err();
    assert!(
        err.contains("uses 256 %r registers; the machine has 255"),
        "{err}"
    );
    k.num_regs = 8;
    let mut stream = Kernel::new("k", KernelKind::Affine);
    stream.num_aregs = (1 << 20) + 1;
    k.set_affine(stream);
    let err = k.check_register_files().unwrap_err();
    assert!(err.contains("%a registers"), "{err}");
}

#[test]
fn register_cliffs_are_the_last_count_of_each_level() {
    for cfg in [GpuConfig::gtx480(), GpuConfig::maxwell()] {
        for (threads, shared) in [(32, 0), (128, 0), (256, 4096), (1024, 0), (96, 20000)] {
            let cliffs = register_cliffs(&cfg, threads, shared);
            assert!(!cliffs.is_empty(), "{} {threads}", cfg.name);
            for pair in cliffs.windows(2) {
                assert!(pair[0].regs < pair[1].regs);
                assert!(pair[0].blocks_per_sm > pair[1].blocks_per_sm);
            }
            let blocks_at = |regs| {
                let res = BlockResources {
                    threads_per_block: threads,
                    regs_per_thread: regs,
                    shared_per_block: shared,
                };
                occupancy(&cfg, res).map_or(0, |o| o.blocks_per_sm)
            };
            for c in &cliffs {
                assert_eq!(blocks_at(c.regs), c.blocks_per_sm);
                assert!(
                    blocks_at(c.regs + 1) < c.blocks_per_sm,
                    "one more register loses a block"
                );
            }
            // Every register count runs at the level of the first cliff at or above it.
            for regs in 1..=cliffs.last().unwrap().regs {
                let cliff = cliffs.iter().find(|c| c.regs >= regs).unwrap();
                assert_eq!(blocks_at(regs), cliff.blocks_per_sm, "{regs} registers");
            }
        }
    }
    // Maxwell, 256 threads: 32 registers keep all 64 warps (8 blocks) resident; 33
    // round a warp's 1,056 registers up to 1,280, and 51 warps fit, 48 at the warp
    // granularity of 4: 6 blocks.
    let maxwell = GpuConfig::maxwell();
    let cliffs = register_cliffs(&maxwell, 256, 0);
    assert_eq!((cliffs[0].regs, cliffs[0].blocks_per_sm), (32, 8));
    assert_eq!(cliffs[0].occupancy, 1.0);
    assert_eq!((cliffs[1].regs, cliffs[1].blocks_per_sm), (40, 6));
    assert!(register_cliffs(&maxwell, 4096, 0).is_empty());
}
