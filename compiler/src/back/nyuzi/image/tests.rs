//! The image builder and runtime on hand-built objects (a few instructions each), run
//! on the functional simulator: block scheduling over hardware threads, thread
//! indices and existing lanes, barriers between more gangs than hardware threads,
//! deadlock reports, results, stack arguments, and faults.

use sim::nyuzi::{AluOp, BranchOp, Config, FaultKind, IFmt, Inst, Machine, MemOp, RFmt, Reg};
use sim::Dim3;

use super::*;
use crate::back::nyuzi::object::{Reloc, Symbol};

// ---- a tiny instruction helper for test kernels

fn rr(fmt: RFmt, op: AluOp, d: Reg, a: Reg, b: Reg) -> Inst {
    Inst::Reg {
        fmt,
        op,
        dest: d,
        src1: a,
        src2: b,
        mask: 0,
    }
}

fn ri(fmt: IFmt, op: AluOp, d: Reg, a: Reg, imm: i32) -> Inst {
    Inst::Imm {
        fmt,
        op,
        dest: d,
        src1: a,
        imm,
    }
}

fn mem(op: MemOp, load: bool, r: Reg, ptr: Reg, offset: i32) -> Inst {
    Inst::Mem {
        op,
        load,
        srcdest: r,
        ptr,
        mask: 0,
        offset,
    }
}

fn scatter_masked(v: Reg, mask: Reg, ptr: Reg) -> Inst {
    Inst::Mem {
        op: MemOp::GatherMask,
        load: false,
        srcdest: v,
        ptr,
        mask,
        offset: 0,
    }
}

fn gather_masked(v: Reg, mask: Reg, ptr: Reg) -> Inst {
    Inst::Mem {
        op: MemOp::GatherMask,
        load: true,
        srcdest: v,
        ptr,
        mask,
        offset: 0,
    }
}

const RET: Inst = Inst::Branch {
    op: BranchOp::Reg,
    reg: 31,
    offset: 0,
};

const GP: Reg = 28;
const SP: Reg = 30;
const RA: Reg = 31;

fn object(name: &str, code: Vec<Inst>, relocs: Vec<Reloc>, shared_size: u32) -> Object {
    Object {
        symbols: vec![Symbol {
            name: name.into(),
            offset: 0,
            len: code.len() as u32,
        }],
        code,
        relocs,
        shared_size,
        ..Object::default()
    }
}

/// `v1 = blockIdx.x * blockDim.x + threadIdx.x` (the global x index), using s2, s3.
fn global_x() -> Vec<Inst> {
    vec![
        mem(MemOp::Block, true, 0, GP, ctx::THREAD_IDX_X),
        mem(MemOp::W32, true, 2, GP, ctx::BLOCK_IDX_X),
        mem(MemOp::W32, true, 3, GP, ctx::BLOCK_DIM_X),
        rr(RFmt::Sss, AluOp::MullI, 2, 2, 3),
        rr(RFmt::Vvs, AluOp::AddI, 1, 0, 2),
    ]
}

/// `v2 = base(s) + 4 * v(idx)`.
fn addresses(base: Reg, idx: Reg) -> Vec<Inst> {
    vec![
        ri(IFmt::V, AluOp::Shl, 2, idx, 2),
        rr(RFmt::Vvs, AluOp::AddI, 2, 2, base),
    ]
}

fn int_buffer(name: &str, n: usize) -> ImageArg {
    ImageArg::Buffer {
        name: name.into(),
        elem: ElemType::I32,
        bytes: vec![0xee; 4 * n],
        read_only: false,
    }
}

fn launch_of(grid: u32, block: u32, args: Vec<ImageArg>, takes_mask: bool) -> ImageLaunch {
    ImageLaunch {
        grid: Dim3::new(grid, 1, 1),
        block: Dim3::new(block, 1, 1),
        args,
        takes_mask,
        dynamic_shared: 0,
    }
}

fn shape(cores: u32, threads_per_core: u32) -> MachineShape {
    MachineShape {
        cores,
        threads_per_core,
    }
}

/// Runs an image on a machine of `on` (which may be larger than the image's plan).
fn run(
    image: &Image,
    on: MachineShape,
) -> (Machine, Result<sim::nyuzi::Summary, sim::nyuzi::Fault>) {
    let mut m = Machine::new(Config {
        cores: on.cores,
        threads_per_core: on.threads_per_core,
        memory_size: image.layout.memory_size,
        max_instructions: 50_000_000,
    });
    m.load_words(0, &image.words).expect("image loads");
    let r = m.run();
    (m, r)
}

fn words_at(m: &Machine, addr: u32, n: u32) -> Vec<u32> {
    m.read_bytes(addr, 4 * n)
        .expect("readable")
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn buffer_words(m: &Machine, image: &Image, name: &str) -> Vec<u32> {
    let b = image.layout.buffer(name).expect("buffer in layout");
    words_at(m, b.address, b.length)
}

/// `out[global x] = global x` for existing lanes; s0 = out, s1 = the hidden mask.
fn index_kernel() -> Object {
    let mut code = global_x();
    code.extend(addresses(0, 1));
    code.push(scatter_masked(1, 1, 2));
    code.push(RET);
    object("k", code, vec![], 0)
}

#[test]
fn every_instance_runs_once_on_every_machine_shape() {
    let obj = index_kernel();
    // 5 blocks of 40 threads: 3 gangs per block, the last with 8 lanes.
    let n = 200;
    for plan in [shape(1, 1), shape(1, 4), shape(2, 4), shape(4, 8)] {
        let launch = launch_of(5, 40, vec![int_buffer("out", n + 16)], true);
        let image = build_image(&obj, "k", &launch, plan, &ImageOptions::default()).unwrap();
        assert_eq!(image.layout.threads_used, plan.threads().min(5));
        assert_eq!(image.layout.gangs_per_block, 3);
        let spread = worker_threads(plan, image.layout.threads_used);
        assert_eq!(image.layout.worker_threads, spread);
        if plan == shape(2, 4) {
            assert_eq!(
                spread,
                [0, 4, 1, 5, 2],
                "workers alternate between the cores"
            );
        }
        for on in [plan, shape(plan.cores * 2, plan.threads_per_core)] {
            let (m, r) = run(&image, on);
            r.unwrap_or_else(|f| panic!("{f} on {on:?}"));
            assert!(m.all_halted());
            let out = buffer_words(&m, &image, "out");
            let expected: Vec<u32> = (0..n as u32).chain([0xeeee_eeee; 16]).collect();
            assert_eq!(out, expected, "plan {plan:?} on {on:?}");
            for t in 0..image.layout.threads_used {
                let s = image.layout.scheduler(t);
                assert_eq!(
                    words_at(&m, s + sched::STATUS as u32, 1),
                    [sched::STATUS_DONE]
                );
            }
        }
    }
}

#[test]
fn thread_indices_in_three_dimensions() {
    // out[t] = x + 10*y + 100*z for the 3x2x3 block (18 threads, 2 gangs).
    let mut code = vec![
        mem(MemOp::Block, true, 0, GP, ctx::THREAD_IDX_X),
        mem(MemOp::Block, true, 1, GP, ctx::THREAD_IDX_Y),
        mem(MemOp::Block, true, 2, GP, ctx::THREAD_IDX_Z),
        ri(IFmt::V, AluOp::MullI, 1, 1, 10),
        ri(IFmt::V, AluOp::MullI, 2, 2, 100),
        rr(RFmt::Vvv, AluOp::AddI, 3, 0, 1),
        rr(RFmt::Vvv, AluOp::AddI, 3, 3, 2),
        // linear index = gang * 16 + lane
        mem(MemOp::Block, true, 4, GP, ctx::LANE_INDEX),
        mem(MemOp::W32, true, 5, GP, ctx::GANG_INDEX),
        ri(IFmt::S, AluOp::Shl, 5, 5, 4),
        rr(RFmt::Vvs, AluOp::AddI, 4, 4, 5),
    ];
    code.extend(addresses(0, 4));
    code.push(scatter_masked(3, 1, 2));
    code.push(RET);
    let obj = object("k", code, vec![], 0);
    let launch = ImageLaunch {
        grid: Dim3::ONE,
        block: Dim3::new(3, 2, 3),
        args: vec![int_buffer("out", 32)],
        takes_mask: true,
        dynamic_shared: 0,
    };
    let image = build_image(&obj, "k", &launch, shape(1, 4), &ImageOptions::default()).unwrap();
    let (m, r) = run(&image, shape(1, 4));
    r.unwrap();
    let out = buffer_words(&m, &image, "out");
    for t in 0..32u32 {
        let want = if t < 18 {
            t % 3 + 10 * (t / 3 % 2) + 100 * (t / 6)
        } else {
            0xeeee_eeee
        };
        assert_eq!(out[t as usize], want, "thread {t}");
    }
}

/// Reverses each block's global indices through shared memory across a barrier:
/// `shared[t] = global; barrier(); out[global] = shared[size - 1 - t]`.
fn reverse_kernel(block: u32) -> Object {
    let mut code = vec![
        // Save s0 (out), s1 (mask) and ra on the stack across the barrier.
        ri(IFmt::S, AluOp::SubI, SP, SP, 64),
        mem(MemOp::W32, false, 0, SP, 0),
        mem(MemOp::W32, false, 1, SP, 4),
        mem(MemOp::W32, false, RA, SP, 8),
    ];
    code.extend(global_x());
    // v4 = linear thread index in the block
    code.push(mem(MemOp::Block, true, 4, GP, ctx::THREAD_IDX_X));
    code.push(mem(MemOp::W32, true, 6, GP, ctx::SHARED_BASE));
    code.extend([
        ri(IFmt::V, AluOp::Shl, 5, 4, 2),
        rr(RFmt::Vvs, AluOp::AddI, 5, 5, 6),
        scatter_masked(1, 1, 5),
        ri(IFmt::S, AluOp::Move, 0, 0, 7), // barrier id
    ]);
    let call_at = code.len() as u32;
    code.push(Inst::Branch {
        op: BranchOp::Call,
        reg: 0,
        offset: 0,
    });
    code.extend([
        mem(MemOp::W32, true, 0, SP, 0),
        mem(MemOp::W32, true, 1, SP, 4),
        mem(MemOp::W32, true, RA, SP, 8),
        ri(IFmt::S, AluOp::AddI, SP, SP, 64),
        // v4 = size - 1 - t, v5 = shared + 4*v4, v6 = shared[v4]
        mem(MemOp::Block, true, 4, GP, ctx::THREAD_IDX_X),
        ri(IFmt::S, AluOp::Move, 7, 0, block as i32 - 1),
        rr(RFmt::Vvv, AluOp::SubI, 3, 3, 3), // v3 = 0
        rr(RFmt::Vvs, AluOp::AddI, 3, 3, 7), // v3 = size - 1
        rr(RFmt::Vvv, AluOp::SubI, 4, 3, 4),
        mem(MemOp::W32, true, 6, GP, ctx::SHARED_BASE),
        ri(IFmt::V, AluOp::Shl, 5, 4, 2),
        rr(RFmt::Vvs, AluOp::AddI, 5, 5, 6),
        gather_masked(6, 1, 5),
    ]);
    code.extend(global_x());
    code.extend(addresses(0, 1));
    code.push(scatter_masked(6, 1, 2));
    code.push(RET);
    let relocs = vec![Reloc {
        at: call_at,
        kind: RelocKind::Branch,
        target: RelocTarget::Runtime(abi::RuntimeFn::Barrier),
        addend: 0,
    }];
    object("rev", code, relocs, 4 * block)
}

#[test]
fn barrier_with_more_gangs_than_hardware_threads() {
    // Blocks of 256 instances: 16 gangs per block on 1 core x 4 threads (and 1x1).
    let block = 256;
    let obj = reverse_kernel(block);
    for plan in [shape(1, 1), shape(1, 4), shape(2, 4)] {
        let launch = launch_of(6, block, vec![int_buffer("out", 6 * block as usize)], true);
        let image = build_image(&obj, "rev", &launch, plan, &ImageOptions::default()).unwrap();
        assert_eq!(image.layout.gangs_per_block, 16);
        let (m, r) = run(&image, plan);
        r.unwrap_or_else(|f| panic!("{f}"));
        let out = buffer_words(&m, &image, "out");
        for (i, &v) in out.iter().enumerate() {
            let (b, t) = (i as u32 / block, i as u32 % block);
            assert_eq!(v, b * block + block - 1 - t, "element {i} on {plan:?}");
        }
        let releases: u32 = (0..image.layout.threads_used)
            .map(|t| words_at(&m, image.layout.scheduler(t) + sched::BARRIERS as u32, 1)[0])
            .sum();
        assert_eq!(releases, 6, "one release per block");
    }
}

#[test]
fn a_partial_block_with_barriers() {
    // 20 instances: the second gang has 4 lanes; shared memory is zeroed per block.
    let obj = reverse_kernel(20);
    let launch = launch_of(3, 20, vec![int_buffer("out", 64)], true);
    let image = build_image(&obj, "rev", &launch, shape(1, 2), &ImageOptions::default()).unwrap();
    let (m, r) = run(&image, shape(1, 2));
    r.unwrap();
    let out = buffer_words(&m, &image, "out");
    for i in 0..60u32 {
        assert_eq!(out[i as usize], i / 20 * 20 + 19 - i % 20);
    }
    assert_eq!(&out[60..], &[0xeeee_eeee; 4]);
}

#[test]
fn gangs_at_different_barriers_deadlock() {
    // Gang 0 waits at barrier 1, the others at barrier 2.
    let code = vec![
        mem(MemOp::W32, true, 0, GP, ctx::GANG_INDEX),
        ri(IFmt::S, AluOp::CmpEqI, 1, 0, 0),
        ri(IFmt::S, AluOp::Move, 0, 0, 2),
        Inst::Branch {
            op: BranchOp::Bz,
            reg: 1,
            offset: 2,
        },
        ri(IFmt::S, AluOp::Move, 0, 0, 1),
        Inst::Branch {
            op: BranchOp::Call,
            reg: 0,
            offset: 0,
        },
        RET,
    ];
    let relocs = vec![Reloc {
        at: 5,
        kind: RelocKind::Branch,
        target: RelocTarget::Runtime(abi::RuntimeFn::Barrier),
        addend: 0,
    }];
    let obj = object("dl", code, relocs, 0);
    let launch = launch_of(1, 48, vec![], false);
    let image = build_image(&obj, "dl", &launch, shape(1, 4), &ImageOptions::default()).unwrap();
    let (m, r) = run(&image, shape(1, 4));
    let fault = r.unwrap_err();
    assert_eq!(fault.kind, FaultKind::Breakpoint);
    let s = image.layout.scheduler(0);
    let rec = words_at(&m, s, sched::SIZE / 4);
    let at = |off: i32| rec[off as usize / 4];
    assert_eq!(at(sched::STATUS), sched::STATUS_DEADLOCK);
    assert_eq!(
        [
            at(sched::DEADLOCK_GANG_A),
            at(sched::DEADLOCK_ID_A),
            at(sched::DEADLOCK_GANG_B),
            at(sched::DEADLOCK_ID_B)
        ],
        [0, 1, 1, 2]
    );
}

#[test]
fn scalar_arguments_in_registers_and_on_the_stack_and_the_result() {
    // Twelve int arguments a0..a11 and an i64: returns the sum of the ints plus both
    // words of the i64, stores nothing. a0..a7 in s0..s7; the i64 does not fit and
    // goes on the stack, as do a9..a11; the mask is the last stack word.
    let mut code = vec![];
    for r in 1..8 {
        code.push(rr(RFmt::Sss, AluOp::AddI, 0, 0, r));
    }
    for k in 0..5 {
        code.push(mem(MemOp::W32, true, 9, SP, 4 * k));
        code.push(rr(RFmt::Sss, AluOp::AddI, 0, 0, 9));
    }
    // The mask word (6th stack word): gangs of 16 existing lanes give 0xffff.
    code.push(mem(MemOp::W32, true, 9, SP, 20));
    code.push(rr(RFmt::Sss, AluOp::AddI, 0, 0, 9));
    code.push(ri(IFmt::S, AluOp::Move, 1, 0, 77));
    code.push(RET);
    let obj = object("sum", code, vec![], 0);
    let mut args: Vec<ImageArg> = (0..8)
        .map(|i| ImageArg::Scalar {
            name: format!("a{i}"),
            ty: ElemType::I32,
            bits: 1 << i,
        })
        .collect();
    args.push(ImageArg::Scalar {
        name: "w".into(),
        ty: ElemType::I64,
        bits: 0x0000_1000_0000_0100,
    });
    for i in 9..12 {
        args.push(ImageArg::Scalar {
            name: format!("a{i}"),
            ty: ElemType::I32,
            bits: 1 << i,
        });
    }
    let launch = launch_of(2, 16, args, true);
    let image = build_image(&obj, "sum", &launch, shape(1, 4), &ImageOptions::default()).unwrap();
    let (m, r) = run(&image, shape(1, 4));
    r.unwrap();
    let result = words_at(&m, image.layout.result_address, 2);
    let want = 0xff + 0x100 + 0x1000 + (0x200 + 0x400 + 0x800) + 0xffff;
    assert_eq!(result, [want, 77]);
    assert_eq!(image.layout.scalars.len(), 12);
    assert_eq!(image.layout.scalars[8].words, [0x100, 0x1000]);
}

#[test]
fn data_relocations_and_calls_between_functions() {
    // k: s2 = &data[1] (AbsHiLo), call g; g: out[0] = *s2 + 1.
    let mut code = vec![
        Inst::MoveHi { dest: 2, imm: 0 },
        ri(IFmt::S, AluOp::Or, 2, 2, 0),
        ri(IFmt::S, AluOp::SubI, SP, SP, 64),
        mem(MemOp::W32, false, RA, SP, 0),
        Inst::Branch {
            op: BranchOp::Call,
            reg: 0,
            offset: 0,
        },
        mem(MemOp::W32, true, RA, SP, 0),
        ri(IFmt::S, AluOp::AddI, SP, SP, 64),
        RET,
    ];
    let g = code.len() as u32;
    code.extend([
        mem(MemOp::W32, true, 3, 2, 0),
        ri(IFmt::S, AluOp::AddI, 3, 3, 1),
        mem(MemOp::W32, false, 3, 0, 0),
        RET,
    ]);
    let mut obj = object("k", code, vec![], 0);
    obj.symbols[0].len = g;
    obj.symbols.push(Symbol {
        name: "g".into(),
        offset: g,
        len: 4,
    });
    obj.relocs = vec![
        Reloc {
            at: 0,
            kind: RelocKind::AbsHiLo,
            target: RelocTarget::Data(1),
            addend: 4,
        },
        Reloc {
            at: 4,
            kind: RelocKind::Branch,
            target: RelocTarget::Function("g".into()),
            addend: 0,
        },
    ];
    obj.data = vec![
        super::super::object::DataObject {
            name: "a".into(),
            size: 3,
            align: 1,
            init: vec![1, 2, 3],
            relocs: Vec::new(),
            constant: true,
        },
        super::super::object::DataObject {
            name: "b".into(),
            size: 8,
            align: 8,
            init: vec![0, 0, 0, 0, 41, 0, 0, 0],
            relocs: Vec::new(),
            constant: false,
        },
    ];
    let launch = launch_of(1, 16, vec![int_buffer("out", 1)], false);
    let image = build_image(&obj, "k", &launch, shape(1, 4), &ImageOptions::default()).unwrap();
    let (m, r) = run(&image, shape(1, 4));
    r.unwrap();
    assert_eq!(buffer_words(&m, &image, "out"), [42]);
}

#[test]
fn faults_report_the_kernel_pc() {
    // A misaligned load in the kernel's third instruction.
    let code = vec![
        ri(IFmt::S, AluOp::Move, 2, 0, 0),
        ri(IFmt::S, AluOp::AddI, 2, 0, 2),
        mem(MemOp::W32, true, 3, 2, 0),
        RET,
    ];
    let obj = object("bad", code, vec![], 0);
    let launch = launch_of(1, 16, vec![int_buffer("out", 4)], false);
    let image = build_image(&obj, "bad", &launch, shape(1, 4), &ImageOptions::default()).unwrap();
    let (_, r) = run(&image, shape(1, 4));
    let f = r.unwrap_err();
    assert_eq!(f.kind, FaultKind::Misaligned);
    assert_eq!(f.pc, image.layout.code.start + 8);
    assert_eq!(f.thread, 0);
}

#[test]
fn too_large_launches_are_errors_naming_what_to_shrink() {
    let obj = index_kernel();
    let launch = launch_of(1, 16, vec![int_buffer("out", 5 << 20)], true);
    match build_image(&obj, "k", &launch, shape(1, 4), &ImageOptions::default()) {
        Err(ImageError::Launch(e)) => {
            assert_eq!(e.kind, ErrorKind::TooLarge);
            assert_eq!(e.help.as_deref(), Some("use smaller buffers"));
        }
        other => panic!("{other:?}"),
    }
    // 4096-instance blocks: 256 gangs x 16 KiB on 32 threads.
    let launch = launch_of(64, 4096, vec![int_buffer("out", 16)], true);
    match build_image(&obj, "k", &launch, shape(4, 8), &ImageOptions::default()) {
        Err(ImageError::Launch(e)) => assert!(e.help.unwrap().contains("smaller blocks")),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        build_image(&obj, "nope", &launch, shape(1, 4), &ImageOptions::default()),
        Err(ImageError::Link(_))
    ));
}

#[test]
fn image_round_trips_through_hex() {
    let obj = index_kernel();
    let launch = launch_of(3, 16, vec![int_buffer("out", 48)], true);
    let image = build_image(&obj, "k", &launch, shape(1, 4), &ImageOptions::default()).unwrap();
    let words = sim::nyuzi::hex::parse(&image.to_hex()).unwrap();
    assert_eq!(words.len() as u32, image.layout.image_end / 4);
    assert!(words.iter().all(|&(i, w)| image.words[i as usize] == w));
    let layout = Layout::from_json(&image.layout.to_json_string()).unwrap();
    assert_eq!(layout, image.layout);
    assert_eq!(layout.buffers[0].elem, "int");
    assert_eq!(layout.buffers[0].length, 48);
}

#[test]
fn stack_overflows_change_the_canary() {
    // Gang 1 of 2 writes 16 KiB below its stack top: its stack's lowest word.
    let code = vec![
        mem(MemOp::W32, true, 2, GP, ctx::GANG_INDEX),
        Inst::Branch {
            op: BranchOp::Bz,
            reg: 2,
            offset: 5,
        },
        Inst::MoveHi { dest: 3, imm: 2 },
        rr(RFmt::Sss, AluOp::SubI, 4, SP, 3),
        mem(MemOp::W32, false, 2, 4, 0),
        Inst::Branch {
            op: BranchOp::Jump,
            reg: 0,
            offset: 1,
        },
        RET,
    ];
    let obj = object("deep", code, vec![], 0);
    let launch = launch_of(1, 32, vec![], false);
    let image = build_image(&obj, "deep", &launch, shape(1, 4), &ImageOptions::default()).unwrap();
    let (m, r) = run(&image, shape(1, 4));
    r.unwrap();
    assert_eq!(
        crate::back::nyuzi::run::overflowed_stack(&image, &m),
        Some((0, 1))
    );
    let launch = launch_of(1, 16, vec![], false);
    let image = build_image(&obj, "deep", &launch, shape(1, 4), &ImageOptions::default()).unwrap();
    let (m, r) = run(&image, shape(1, 4));
    r.unwrap();
    assert_eq!(crate::back::nyuzi::run::overflowed_stack(&image, &m), None);
}
