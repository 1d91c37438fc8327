//! Tests of the DAC affine stream: hand-written decoupled kernels (saxpy, a 2-D
//! stencil, the paper's Figure 7 loop) against their baseline versions, bit for bit;
//! queue faults; the assembler round trip of `.affine`.

use super::*;

fn asm(text: &str) -> Program {
    match parse(text) {
        Ok(p) => p,
        Err(e) => panic!("assembly failed: {e:?}\n{text}"),
    }
}

fn f32_bytes(v: impl Iterator<Item = f32>) -> Vec<u8> {
    v.flat_map(|x| x.to_le_bytes()).collect()
}

/// Runs `name` of `p` on fresh buffers from `bufs`; `params(addrs)` gives the
/// parameter values. Returns the buffers' final contents and the report.
fn run_with(
    p: &Program,
    name: &str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    bufs: &[Vec<u8>],
    params: impl Fn(&[u64]) -> Vec<u64>,
) -> Result<(Vec<Vec<u8>>, FunctionalReport), GpuFault> {
    let mut mem = GlobalMemory::new();
    let addrs: Vec<u64> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| mem.add_buffer(b.clone(), &format!("b{i}")))
        .collect();
    let k = p.kernel(name).expect("kernel");
    let l = Launch {
        kernel: name.into(),
        grid,
        block,
        params: pack_params(k, &params(&addrs)),
    };
    let r = run_functional(p, &l, &mut mem, Limits::default())?;
    let out = addrs
        .iter()
        .map(|&a| mem.buffer(a).expect("buffer").to_vec())
        .collect();
    Ok((out, r))
}

/// The baseline saxpy of the functional tests.
pub(super) use super::sim_tests::SAXPY as SAXPY_BASE;

/// Saxpy decoupled: the index, the bound check and all three addresses move to the
/// affine stream; the loads are requested early (`enq.data`).
pub(super) const SAXPY_DAC: &str = r#"
.entry saxpy(.param .u32 n, .param .f32 a, .param .u64 x, .param .u64 y)
{
    .reg 3;
    .pred 1;
    deq.pred %p0;
    @%p0 ld.global.f32 %r0, [deq.data];
    @%p0 ld.global.f32 %r1, [deq.data];
    ld.param.f32 %r2, [a];
    mad.f32 %r1, %r2, %r0, %r1;
    @%p0 st.global.f32 [deq.addr], %r1;
    exit;
}
.affine saxpy
{
    .ureg 4;
    .areg 6;
    mov.u32 %a0, %ctaid.x;
    mov.u32 %a1, %ntid.x;
    mad.u32 %a0, %a0, %a1, %tid.x;
    ld.param.u32 %ur0, [n];
    enq.pred.lt.u32 %a0, %ur0;
    cvt.u64.u32 %ad2, %a0;
    shl.b64 %ad2, %ad2, 2;
    ld.param.u64 %urd2, [x];
    add.u64 %ad4, %urd2, %ad2;
    enq.data.global.f32 %ad4;
    ld.param.u64 %urd2, [y];
    add.u64 %ad4, %urd2, %ad2;
    enq.data.global.f32 %ad4;
    enq.addr.global.f32 %ad4;
    exit;
}
"#;

fn saxpy(text: &str, n: u32, block: u32) -> (Vec<Vec<u8>>, FunctionalReport) {
    let p = asm(text);
    let x = f32_bytes((0..n).map(|i| i as f32 * 0.37 - 5.0));
    let y = f32_bytes((0..n).map(|i| 1.0 + (i % 13) as f32 * 1.5));
    let a = 2.75f32.to_bits();
    run_with(
        &p,
        "saxpy",
        (n.div_ceil(block), 1, 1),
        (block, 1, 1),
        &[x, y],
        |b| vec![u64::from(n), u64::from(a), b[0], b[1]],
    )
    .unwrap_or_else(|f| panic!("{f}"))
}

#[test]
fn saxpy_decoupled_equals_baseline() {
    // 1000 is not a multiple of the block: the last block's tail is predicated off.
    for (n, block) in [(1000, 128), (4096, 256), (37, 64)] {
        let (base, rb) = saxpy(SAXPY_BASE, n, block);
        let (dac, rd) = saxpy(SAXPY_DAC, n, block);
        assert_eq!(base, dac, "n {n} block {block}");
        assert!(
            rd.warp_insts < rb.warp_insts,
            "non-affine {} vs baseline {}",
            rd.warp_insts,
            rb.warp_insts
        );
    }
}

pub(super) const STENCIL_BASE: &str = r#"
.entry stencil(.param .u32 w, .param .u32 h, .param .u64 src, .param .u64 dst)
{
    .reg 16;
    .pred 2;
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.u32 %r0, %r0, %r1, %tid.x;
    add.u32 %r0, %r0, 1;
    mov.u32 %r1, %ctaid.y;
    mov.u32 %r2, %ntid.y;
    mad.u32 %r1, %r1, %r2, %tid.y;
    add.u32 %r1, %r1, 1;
    ld.param.u32 %r2, [w];
    ld.param.u32 %r3, [h];
    sub.u32 %r4, %r2, 1;
    setp.lt.u32 %p0, %r0, %r4;
    sub.u32 %r4, %r3, 1;
    setp.lt.u32 %p1, %r1, %r4;
    and.pred %p0, %p0, %p1;
    @!%p0 bra DONE;
    mad.u32 %r4, %r1, %r2, %r0;
    cvt.u64.u32 %rd6, %r4;
    shl.b64 %rd6, %rd6, 2;
    ld.param.u64 %rd8, [src];
    add.u64 %rd8, %rd8, %rd6;
    sub.u64 %rd14, %rd8, 4;
    ld.global.f32 %r10, [%rd14];
    add.u64 %rd14, %rd8, 4;
    ld.global.f32 %r11, [%rd14];
    add.f32 %r10, %r10, %r11;
    shl.b32 %r5, %r2, 2;
    cvt.u64.u32 %rd12, %r5;
    sub.u64 %rd14, %rd8, %rd12;
    ld.global.f32 %r11, [%rd14];
    add.f32 %r10, %r10, %r11;
    add.u64 %rd14, %rd8, %rd12;
    ld.global.f32 %r11, [%rd14];
    add.f32 %r10, %r10, %r11;
    mul.f32 %r10, %r10, 0f3E800000;
    ld.param.u64 %rd8, [dst];
    add.u64 %rd8, %rd8, %rd6;
    st.global.f32 [%rd8], %r10;
DONE:
    exit;
}
"#;

/// The 5-point stencil decoupled: two affine predicates (the 2-D bounds), four early
/// loads and the store address from the affine stream.
pub(super) const STENCIL_DAC: &str = r#"
.entry stencil(.param .u32 w, .param .u32 h, .param .u64 src, .param .u64 dst)
{
    .reg 2;
    .pred 2;
    deq.pred %p0;
    deq.pred %p1;
    and.pred %p0, %p0, %p1;
    @%p0 ld.global.f32 %r0, [deq.data];
    @%p0 ld.global.f32 %r1, [deq.data];
    add.f32 %r0, %r0, %r1;
    @%p0 ld.global.f32 %r1, [deq.data];
    add.f32 %r0, %r0, %r1;
    @%p0 ld.global.f32 %r1, [deq.data];
    add.f32 %r0, %r0, %r1;
    mul.f32 %r0, %r0, 0f3E800000;
    @%p0 st.global.f32 [deq.addr], %r0;
    exit;
}
.affine stencil
{
    .ureg 8;
    .areg 10;
    mov.u32 %a0, %ctaid.x;
    mov.u32 %a1, %ntid.x;
    mad.u32 %a0, %a0, %a1, %tid.x;
    add.u32 %a0, %a0, 1;
    mov.u32 %a1, %ctaid.y;
    mov.u32 %a2, %ntid.y;
    mad.u32 %a1, %a1, %a2, %tid.y;
    add.u32 %a1, %a1, 1;
    ld.param.u32 %ur0, [w];
    ld.param.u32 %ur1, [h];
    sub.u32 %ur2, %ur0, 1;
    enq.pred.lt.u32 %a0, %ur2;
    sub.u32 %ur2, %ur1, 1;
    enq.pred.lt.u32 %a1, %ur2;
    mad.u32 %a2, %a1, %ur0, %a0;
    cvt.u64.u32 %ad4, %a2;
    shl.b64 %ad4, %ad4, 2;
    ld.param.u64 %urd4, [src];
    add.u64 %ad6, %urd4, %ad4;
    sub.u64 %ad8, %ad6, 4;
    enq.data.global.f32 %ad8;
    add.u64 %ad8, %ad6, 4;
    enq.data.global.f32 %ad8;
    shl.b32 %ur2, %ur0, 2;
    cvt.u64.u32 %urd6, %ur2;
    sub.u64 %ad8, %ad6, %urd6;
    enq.data.global.f32 %ad8;
    add.u64 %ad8, %ad6, %urd6;
    enq.data.global.f32 %ad8;
    ld.param.u64 %urd4, [dst];
    add.u64 %ad8, %urd4, %ad4;
    enq.addr.global.f32 %ad8;
    exit;
}
"#;

fn stencil(text: &str, w: u32, h: u32, block: (u32, u32)) -> (Vec<Vec<u8>>, FunctionalReport) {
    let p = asm(text);
    let src = f32_bytes((0..w * h).map(|i| ((i * 7919) % 101) as f32 * 0.25 - 3.0));
    let dst = f32_bytes((0..w * h).map(|_| -1.0));
    let grid = ((w - 2).div_ceil(block.0), (h - 2).div_ceil(block.1), 1);
    run_with(
        &p,
        "stencil",
        grid,
        (block.0, block.1, 1),
        &[src, dst],
        |b| vec![u64::from(w), u64::from(h), b[0], b[1]],
    )
    .unwrap_or_else(|f| panic!("{f}"))
}

#[test]
fn stencil_2d_decoupled_equals_baseline() {
    for (w, h, block) in [(70, 37, (16, 8)), (34, 34, (32, 4)), (20, 9, (8, 8))] {
        let (base, rb) = stencil(STENCIL_BASE, w, h, block);
        let (dac, rd) = stencil(STENCIL_DAC, w, h, block);
        assert_eq!(base, dac, "{w}x{h}");
        // The interior was written.
        assert_ne!(base[1], f32_bytes((0..w * h).map(|_| -1.0)));
        assert!(rd.warp_insts < rb.warp_insts);
    }
}

/// The paper's Figure 4 kernel: `B[i*num + tid] = A[i*num + tid] + 1` for `i < dim`.
pub(super) const LOOP_BASE: &str = r#"
.entry example(.param .u64 A, .param .u64 B, .param .u32 dim, .param .u32 num)
{
    .reg 12;
    .pred 1;
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.u32 %r0, %r0, %r1, %tid.x;
    cvt.u64.u32 %rd2, %r0;
    shl.b64 %rd2, %rd2, 2;
    ld.param.u64 %rd4, [A];
    add.u64 %rd4, %rd4, %rd2;
    ld.param.u64 %rd6, [B];
    add.u64 %rd6, %rd6, %rd2;
    ld.param.u32 %r1, [num];
    mul.u32 %r1, %r1, 4;
    cvt.u64.u32 %rd8, %r1;
    ld.param.u32 %r1, [dim];
    mov.u32 %r10, 0;
LOOP:
    ld.global.u32 %r11, [%rd4];
    add.u32 %r11, %r11, 1;
    st.global.u32 [%rd6], %r11;
    add.u32 %r10, %r10, 1;
    add.u64 %rd4, %rd4, %rd8;
    add.u64 %rd6, %rd6, %rd8;
    setp.ne.u32 %p0, %r1, %r10;
    @%p0 bra LOOP;
    exit;
}
"#;

/// Figure 7: the same loop decoupled (the page's sample in lang-spec/dac-gpu-isa.md).
pub(super) const LOOP_DAC: &str = r#"
.entry example(.param .u64 A, .param .u64 B, .param .u32 dim, .param .u32 num)
{
    .reg 2;
    .pred 1;
LOOP:
    ld.global.u32 %r0, [deq.data];
    add.u32 %r1, %r0, 1;
    st.global.u32 [deq.addr], %r1;
    deq.pred %p0;
    @%p0 bra LOOP;
    exit;
}
.affine example
{
    .pred 1;
    .ureg 8;
    .areg 8;
    mov.u32 %a0, %ctaid.x;
    mov.u32 %a1, %ntid.x;
    mad.u32 %a0, %a0, %a1, %tid.x;
    cvt.u64.u32 %ad2, %a0;
    shl.b64 %ad2, %ad2, 2;
    ld.param.u64 %urd0, [A];
    add.u64 %ad4, %urd0, %ad2;
    ld.param.u64 %urd0, [B];
    add.u64 %ad6, %urd0, %ad2;
    ld.param.u32 %ur2, [num];
    mul.u32 %ur2, %ur2, 4;
    cvt.u64.u32 %urd4, %ur2;
    ld.param.u32 %ur3, [dim];
    mov.u32 %ur6, 0;
LOOP:
    enq.data.global.u32 %ad4;
    enq.addr.global.u32 %ad6;
    add.u32 %ur6, %ur6, 1;
    add.u64 %ad4, %ad4, %urd4;
    add.u64 %ad6, %ad6, %urd4;
    enq.pred.ne.u32 %ur3, %ur6;
    setp.ne.u32 %p0, %ur3, %ur6;
    @%p0 bra.uni LOOP;
    exit;
}
"#;

fn looped(text: &str, dim: u32, blocks: u32, block: u32) -> (Vec<Vec<u8>>, FunctionalReport) {
    let p = asm(text);
    let num = blocks * block;
    let a: Vec<u8> = (0..dim * num)
        .flat_map(|i| (i.wrapping_mul(2654435761)).to_le_bytes())
        .collect();
    let b = vec![0u8; a.len()];
    run_with(&p, "example", (blocks, 1, 1), (block, 1, 1), &[a, b], |x| {
        vec![x[0], x[1], u64::from(dim), u64::from(num)]
    })
    .unwrap_or_else(|f| panic!("{f}"))
}

#[test]
fn figure7_loop_decoupled_equals_baseline() {
    for (dim, blocks, block) in [(5, 3, 64), (1, 2, 96), (12, 4, 32)] {
        let (base, rb) = looped(LOOP_BASE, dim, blocks, block);
        let (dac, rd) = looped(LOOP_DAC, dim, blocks, block);
        assert_eq!(base, dac, "dim {dim}");
        let a = &base[0];
        let want: Vec<u8> = a
            .chunks(4)
            .flat_map(|c| (u32::from_le_bytes(c.try_into().unwrap()) + 1).to_le_bytes())
            .collect();
        assert_eq!(base[1], want);
        // Per warp and iteration 5 instructions instead of 8, and no prologue.
        let warps = u64::from(blocks * block.div_ceil(32));
        assert_eq!(rd.warp_insts, warps * (u64::from(dim) * 5 + 1));
        assert_eq!(rb.warp_insts, warps * (u64::from(dim) * 8 + 15));
    }
}

#[test]
fn affine_stream_trace_and_tuples() {
    let p = asm(LOOP_DAC);
    let k = p.kernel("example").unwrap();
    let params = pack_params(k, &[0x1000, 0x9000, 3, 256]);
    let l = affine::StreamLaunch {
        params: &params,
        grid: [4, 1, 1],
        block: [64, 1, 1],
        max_insts: 1_000,
        record_pcs: true,
    };
    let t = affine::run_stream(k.affine.as_deref().unwrap(), l).unwrap();
    assert_eq!((t.addr_events.len(), t.pred_events.len()), (6, 3));
    // 14 before the loop, 8 per iteration, exit.
    assert_eq!(t.insts, 14 + 3 * 8 + 1);
    assert_eq!(t.pcs.len() as u64, t.insts);
    // The second iteration's load address: A + 4*(ctaid*64 + tid) + 1024.
    let affine::AffineEvent::Addr {
        data, value, wide, ..
    } = &t.events[t.addr_events[2] as usize]
    else {
        panic!("not an address")
    };
    assert!(*data && *wide);
    assert_eq!(value.tuple.base, 0x1000 + 1024);
    assert_eq!(value.tuple.strides, [4, 0, 0]);
    assert_eq!(value.tuple.cta_strides, [256, 0, 0]);
    assert_eq!(
        value.lane([2, 0, 0], [5, 0, 0], 64),
        Ok(0x1000 + 1024 + 4 * 133)
    );
}

fn fault(p: &Program, name: &str, bufs: &[Vec<u8>], params: &[u64]) -> GpuFault {
    let params = params.to_vec();
    match run_with(p, name, (2, 1, 1), (64, 1, 1), bufs, move |b| {
        params
            .iter()
            .map(|&v| if v >= 1000 { b[(v - 1000) as usize] } else { v })
            .collect()
    }) {
        Ok(_) => panic!("no fault"),
        Err(f) => f,
    }
}

#[test]
fn queue_faults_are_reported() {
    let data = vec![vec![0u8; 4096], vec![0u8; 4096]];
    // One deq too many: saxpy's non-affine stream with the affine stream's last enq
    // (the store address) removed.
    let short = SAXPY_DAC.replace("    enq.addr.global.f32 %ad4;\n", "");
    let f = fault(&asm(&short), "saxpy", &data, &[128, 0, 1000, 1001]);
    assert_eq!(f.kind, FaultKind::DacQueue);
    assert!(f.message.contains("empty address queue"), "{f}");
    // One enq too many: entries left when the block ends.
    let long = SAXPY_DAC.replace(
        "    enq.addr.global.f32 %ad4;\n",
        "    enq.addr.global.f32 %ad4;\n    enq.pred.lt.u32 %a0, %ur0;\n",
    );
    let f = fault(&asm(&long), "saxpy", &data, &[128, 0, 1000, 1001]);
    assert_eq!(f.kind, FaultKind::DacQueue);
    assert!(f.message.contains("not dequeued"), "{f}");
    // The wrong kind of entry: deq.data where the stream queued an address.
    let swapped = SAXPY_DAC.replace(
        "    enq.data.global.f32 %ad4;\n    enq.addr.global.f32 %ad4;\n",
        "    enq.addr.global.f32 %ad4;\n    enq.data.global.f32 %ad4;\n",
    );
    let f = fault(&asm(&swapped), "saxpy", &data, &[128, 0, 1000, 1001]);
    assert!(f.message.contains("does not match"), "{f}");
    // No affine stream at all.
    let alone = SAXPY_DAC.split(".affine").next().unwrap().to_string();
    let f = fault(&asm(&alone), "saxpy", &data, &[128, 0, 1000, 1001]);
    assert_eq!(f.kind, FaultKind::DacQueue);
    // A product of two thread-dependent values is not affine.
    let bad = SAXPY_DAC.replace(
        "    mad.u32 %a0, %a0, %a1, %tid.x;\n",
        "    mad.u32 %a0, %a0, %a1, %tid.x;\n    mul.u32 %a0, %a0, %a0;\n",
    );
    let f = fault(&asm(&bad), "saxpy", &data, &[128, 0, 1000, 1001]);
    assert_eq!(f.kind, FaultKind::DacQueue);
    assert!(f.message.contains("not affine"), "{f}");
    assert!(f.kernel.ends_with(".affine"));
}

#[test]
fn widening_that_wraps_is_a_fault() {
    // tid.x - 1 wraps in thread 0: its zero-extension is not the tuple's value.
    let p = SAXPY_DAC.replace(
        "    cvt.u64.u32 %ad2, %a0;\n",
        "    sub.u32 %a0, %a0, 1;\n    cvt.u64.u32 %ad2, %a0;\n",
    );
    let data = vec![vec![0u8; 4096], vec![0u8; 4096]];
    let f = fault(&asm(&p), "saxpy", &data, &[128, 0, 1000, 1001]);
    assert_eq!(f.kind, FaultKind::DacQueue);
    assert!(f.message.contains("widened"), "{f}");
}

#[test]
fn affine_streams_round_trip() {
    for text in [SAXPY_DAC, STENCIL_DAC, LOOP_DAC] {
        let p = asm(text);
        assert!(p.kernels[0].affine.is_some());
        assert_eq!(p.kernels.len(), 1);
        let printed = print(&p);
        assert!(printed.contains(".affine"), "{printed}");
        assert_eq!(asm(&printed), p);
        assert_eq!(check(&p), Ok(()));
    }
    // An affine stream needs its entry first.
    let e = parse(".affine k\n{\n    exit;\n}\n").unwrap_err();
    assert!(e[0].msg.contains("must follow"), "{e:?}");
    let two = format!("{LOOP_DAC}\n.affine example\n{{\n    exit;\n}}\n");
    assert!(parse(&two).is_err());
}

/// The builder route a compiler takes: build both streams, attach the affine one.
#[test]
fn builder_attaches_an_affine_stream() {
    let mut e = KernelBuilder::new("k", KernelKind::Entry);
    e.param("out", Type::U64);
    let r = e.reg();
    e.push(Inst::new(Op::Un {
        op: UnOp::Mov,
        ty: Type::U32,
        dst: r,
        a: Src::Special(Special::Tid(Dim::X)),
    }));
    e.push(Inst::new(Op::St {
        space: Space::Global,
        ty: Type::U32,
        addr: Address {
            base: AddrBase::DeqAddr,
            offset: 0,
        },
        a: Src::Reg(r),
    }));
    e.push(Inst::new(Op::Exit));
    let mut entry = e.finish().unwrap();
    let mut a = KernelBuilder::new("k", KernelKind::Affine);
    let t = a.areg();
    let ad = a.areg64();
    assert_eq!(ad, Reg::a(2));
    a.push(Inst::new(Op::Un {
        op: UnOp::Mov,
        ty: Type::U32,
        dst: t,
        a: Src::Special(Special::Tid(Dim::X)),
    }));
    a.push(Inst::new(Op::Cvt {
        rnd: None,
        dty: Type::U64,
        sty: Type::U32,
        dst: ad,
        a: Src::Reg(t),
    }));
    a.push(Inst::new(Op::Bin {
        op: BinOp::Shl,
        ty: Type::B64,
        dst: ad,
        a: Src::Reg(ad),
        b: Src::Imm(2),
    }));
    a.ureg();
    let urd = a.ureg64();
    assert_eq!(urd, Reg::ur(2));
    a.push(Inst::new(Op::Ld {
        space: Space::Param,
        ty: Type::U64,
        dst: urd,
        addr: Address {
            base: AddrBase::Param(0),
            offset: 0,
        },
    }));
    a.push(Inst::new(Op::Bin {
        op: BinOp::Add,
        ty: Type::U64,
        dst: ad,
        a: Src::Reg(urd),
        b: Src::Reg(ad),
    }));
    a.push(Inst::new(Op::EnqAddr {
        space: Space::Global,
        ty: Type::U32,
        addr: ad,
        wide: true,
    }));
    a.push(Inst::new(Op::Exit));
    entry.set_affine(a.finish().unwrap());
    let p = Program {
        kernels: vec![entry],
    };
    assert_eq!(check(&p), Ok(()));
    let (out, _) = run_with(&p, "k", (1, 1, 1), (40, 1, 1), &[vec![0u8; 160]], |b| {
        vec![b[0]]
    })
    .unwrap();
    let got: Vec<u32> = out[0]
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, (0..40).collect::<Vec<u32>>());
}

// ---------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------

/// Runs `name` in timing mode on fresh buffers; returns the buffers and the report.
fn timed_with(
    p: &Program,
    name: &str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    bufs: &[Vec<u8>],
    params: &[u64],
    cfg: &GpuConfig,
) -> (Vec<Vec<u8>>, TimingReport) {
    let mut mem = GlobalMemory::new();
    let addrs: Vec<u64> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| mem.add_buffer(b.clone(), &format!("b{i}")))
        .collect();
    let vals: Vec<u64> = params
        .iter()
        .map(|&v| {
            if v >= B1 {
                addrs[(u64::MAX - v) as usize]
            } else {
                v
            }
        })
        .collect();
    let k = p.kernel(name).expect("kernel");
    let l = Launch {
        kernel: name.into(),
        grid,
        block,
        params: pack_params(k, &vals),
    };
    let r = run_timing(p, &l, &mut mem, cfg, Limits::default(), SchedulerKind::Gto)
        .unwrap_or_else(|f| panic!("{f}"));
    let out = addrs
        .iter()
        .map(|&a| mem.buffer(a).expect("buffer").to_vec())
        .collect();
    (out, r)
}

/// Parameter placeholders for the first and second buffer's address.
const B0: u64 = u64::MAX;
const B1: u64 = u64::MAX - 1;

fn small_gpu() -> GpuConfig {
    let mut c = GpuConfig::gtx480();
    c.num_sms = 2;
    c
}

/// The scheduler-cycle identity: every scheduler cycle issues or stalls for a reason.
fn check_cycle_accounting(r: &TimingReport, cfg: &GpuConfig) {
    let s = &r.stats;
    assert_eq!(
        s.issue_cycles
            + s.stall_memory
            + s.stall_dependency
            + s.stall_barrier
            + s.stall_idle
            + s.stall_queue,
        r.cycles * u64::from(cfg.num_sms * cfg.schedulers_per_sm),
        "{s:?}"
    );
}

#[test]
fn timing_saxpy_decoupled() {
    let n = 4096u32;
    let x = f32_bytes((0..n).map(|i| i as f32 * 0.37 - 5.0));
    let y = f32_bytes((0..n).map(|i| 1.0 + (i % 13) as f32 * 1.5));
    let params = [u64::from(n), u64::from(2.75f32.to_bits()), B0, B1];
    let cfg = small_gpu();
    let run = |text: &str| {
        timed_with(
            &asm(text),
            "saxpy",
            (n / 128, 1, 1),
            (128, 1, 1),
            &[x.clone(), y.clone()],
            &params,
            &cfg,
        )
    };
    let (base, rb) = run(SAXPY_BASE);
    let (dac, rd) = run(SAXPY_DAC);
    assert_eq!(base, dac);
    let (f, _) = saxpy(SAXPY_DAC, n, 128);
    assert_eq!(f, dac, "timing and functional agree");
    let s = &rd.stats;
    assert!(rd.warp_insts < rb.warp_insts);
    // 128 warps: two deq.data, one deq.addr and one deq.pred each.
    assert_eq!(
        (s.deq_data_insts, s.deq_addr_insts, s.deq_pred_insts),
        (256, 128, 128)
    );
    assert_eq!(s.global_load_insts, 256);
    // The affine warp ran its 15 instructions once per batch and queued 4 entries
    // each time. A batch is the blocks resident and unserved when a run starts:
    // blocks join as slots free, so there are at least 2 batches per SM (32 blocks,
    // 8 resident per SM), and more as blocks arrive during runs.
    assert!(s.dac_batches >= 4, "{s:?}");
    assert_eq!(s.affine_warp_insts, 15 * s.dac_batches, "{s:?}");
    assert_eq!(s.enq_entries, 4 * s.dac_batches);
    assert!(s.affine_warp_insts + rd.warp_insts < rb.warp_insts);
    // Every x and y line was requested early (32 lines each) and used.
    assert!(s.early_requests >= 64, "{s:?}");
    assert!(s.prefetched_lines_used >= 64, "{s:?}");
    assert!(s.pwaq_max_occupancy >= 1);
    let pairs: Vec<&str> = rd.pairs.iter().map(|(n, _)| n.as_str()).collect();
    for k in [
        "affine_warp_instructions",
        "loads_decoupled",
        "prefetch_mean_lead",
        "stall_queue",
    ] {
        assert!(pairs.contains(&k), "{k}");
    }
    assert!(rb.pairs.iter().all(|(n, _)| n != "loads_decoupled"));
    check_cycle_accounting(&rd, &cfg);
    check_cycle_accounting(&rb, &cfg);
    assert!(rd.cycles > 0 && rd.cycles < 100_000);
}

#[test]
fn timing_stencil_and_loop_decoupled() {
    let cfg = small_gpu();
    let (w, h) = (70u32, 37u32);
    let src = f32_bytes((0..w * h).map(|i| ((i * 7919) % 101) as f32 * 0.25 - 3.0));
    let dst = f32_bytes((0..w * h).map(|_| -1.0));
    let grid = ((w - 2).div_ceil(16), (h - 2).div_ceil(8), 1);
    let run = |text: &str| {
        timed_with(
            &asm(text),
            "stencil",
            grid,
            (16, 8, 1),
            &[src.clone(), dst.clone()],
            &[u64::from(w), u64::from(h), B0, B1],
            &cfg,
        )
    };
    let (base, rb) = run(STENCIL_BASE);
    let (dac, rd) = run(STENCIL_DAC);
    assert_eq!(base, dac);
    assert!(rd.warp_insts < rb.warp_insts);
    assert_eq!(rd.stats.deq_data_insts, 4 * rd.stats.deq_addr_insts);
    check_cycle_accounting(&rd, &cfg);

    let (dim, blocks, block) = (6u32, 8u32, 64u32);
    let num = blocks * block;
    let a: Vec<u8> = (0..dim * num)
        .flat_map(|i| i.wrapping_mul(2654435761).to_le_bytes())
        .collect();
    let b = vec![0u8; a.len()];
    let run = |text: &str, cfg: &GpuConfig| {
        timed_with(
            &asm(text),
            "example",
            (blocks, 1, 1),
            (block, 1, 1),
            &[a.clone(), b.clone()],
            &[B0, B1, u64::from(dim), u64::from(num)],
            cfg,
        )
    };
    let (base, rb) = run(LOOP_BASE, &cfg);
    let (dac, rd) = run(LOOP_DAC, &cfg);
    assert_eq!(base, dac);
    assert!(rd.warp_insts < rb.warp_insts);
    assert_eq!(rd.stats.deq_pred_insts, u64::from(dim * blocks * 2));
    check_cycle_accounting(&rd, &cfg);
    // Queues of one entry: back-pressure holds the affine warp or the expansion
    // units up, and the results stay the same.
    let mut tight = cfg.clone();
    (tight.atq_entries, tight.pwaq_entries, tight.pwpq_entries) = (1, 1, 1);
    let (dac1, r1) = run(LOOP_DAC, &tight);
    assert_eq!(dac1, base);
    let s = &r1.stats;
    assert!(s.enq_stall_cycles + s.expand_stall_queue_full > 0, "{s:?}");
    assert!(s.pwaq_max_occupancy <= 1);
    check_cycle_accounting(&r1, &tight);
}

/// Reverses each block's slice through shared memory: the load before the barrier
/// and the store after it are both decoupled, with `bar.sync` in both streams.
const REVERSE_BASE: &str = r#"
.entry rev(.param .u64 x, .param .u64 y)
{
    .reg 10;
    .shared 1024;
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.u32 %r0, %r0, %r1, %tid.x;
    cvt.u64.u32 %rd2, %r0;
    shl.b64 %rd2, %rd2, 2;
    ld.param.u64 %rd4, [x];
    add.u64 %rd4, %rd4, %rd2;
    ld.global.u32 %r6, [%rd4];
    mov.u32 %r7, %tid.x;
    shl.b32 %r7, %r7, 2;
    st.shared.u32 [%r7], %r6;
    bar.sync 0;
    sub.u32 %r8, %r1, 1;
    mov.u32 %r7, %tid.x;
    sub.u32 %r8, %r8, %r7;
    shl.b32 %r8, %r8, 2;
    ld.shared.u32 %r6, [%r8];
    ld.param.u64 %rd4, [y];
    add.u64 %rd4, %rd4, %rd2;
    st.global.u32 [%rd4], %r6;
    exit;
}
"#;

const REVERSE_DAC: &str = r#"
.entry rev(.param .u64 x, .param .u64 y)
{
    .reg 4;
    .shared 1024;
    ld.global.u32 %r0, [deq.data];
    st.shared.u32 [deq.addr], %r0;
    bar.sync 0;
    ld.shared.u32 %r0, [deq.addr];
    st.global.u32 [deq.addr], %r0;
    exit;
}
.affine rev
{
    .ureg 4;
    .areg 8;
    mov.u32 %a0, %ctaid.x;
    mov.u32 %a1, %ntid.x;
    mad.u32 %a0, %a0, %a1, %tid.x;
    cvt.u64.u32 %ad2, %a0;
    shl.b64 %ad2, %ad2, 2;
    ld.param.u64 %urd0, [x];
    add.u64 %ad4, %urd0, %ad2;
    enq.data.global.u32 %ad4;
    mov.u32 %a6, %tid.x;
    shl.b32 %a6, %a6, 2;
    enq.addr.shared.u32 %a6;
    bar.sync 0;
    mov.u32 %ur2, %ntid.x;
    sub.u32 %ur2, %ur2, 1;
    mov.u32 %a7, %tid.x;
    sub.u32 %a7, %ur2, %a7;
    shl.b32 %a7, %a7, 2;
    enq.addr.shared.u32 %a7;
    ld.param.u64 %urd0, [y];
    add.u64 %ad4, %urd0, %ad2;
    enq.addr.global.u32 %ad4;
    exit;
}
"#;

#[test]
fn barriers_in_both_streams() {
    let n = 2048u32;
    let x: Vec<u8> = (0..n).flat_map(|i| (i * 3 + 1).to_le_bytes()).collect();
    let y = vec![0u8; x.len()];
    let cfg = small_gpu();
    let run_on = |text: &str, cfg: &GpuConfig| {
        timed_with(
            &asm(text),
            "rev",
            (n / 256, 1, 1),
            (256, 1, 1),
            &[x.clone(), y.clone()],
            &[B0, B1],
            cfg,
        )
    };
    let run = |text: &str| run_on(text, &cfg);
    let (base, rb) = run(REVERSE_BASE);
    let (dac, rd) = run(REVERSE_DAC);
    assert_eq!(base, dac);
    let want: Vec<u8> = (0..n)
        .flat_map(|i| {
            let j = (i / 256) * 256 + 255 - i % 256;
            (j * 3 + 1).to_le_bytes()
        })
        .collect();
    assert_eq!(dac[1], want);
    // Functional semantics agree too.
    let p = asm(REVERSE_DAC);
    let (f, _) = run_with(
        &p,
        "rev",
        (n / 256, 1, 1),
        (256, 1, 1),
        &[x.clone(), y.clone()],
        |b| vec![b[0], b[1]],
    )
    .unwrap();
    assert_eq!(f[1], want);
    assert!(rd.warp_insts < rb.warp_insts);
    assert_eq!(rd.stats.deq_addr_insts, 3 * rd.stats.deq_data_insts);
    // Only the early requests of `enq.data` wait at the barrier gate: the entries
    // after this barrier (shared and store addresses) are expanded ahead.
    assert_eq!(rd.stats.expand_stall_barrier, 0, "{:?}", rd.stats);
    check_cycle_accounting(&rd, &cfg);
    // With the gate on every expansion (the paper's wording), the affine warp ran
    // past its barrier and expansion after it waited for blocks; same results.
    let all = GpuConfig {
        barrier_gate: BarrierGate::All,
        ..cfg.clone()
    };
    let (gated, rg) = run_on(REVERSE_DAC, &all);
    assert_eq!(gated, dac);
    assert!(rg.stats.expand_stall_barrier > 0, "{:?}", rg.stats);
    check_cycle_accounting(&rg, &all);
}
