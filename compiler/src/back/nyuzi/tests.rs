//! Tests of the code generator: listings of small functions (insta snapshots in
//! `src/back/nyuzi/snapshots`) and execution on the functional simulator
//! ([`sim::nyuzi::Machine`]) compared with the interpreter on the same module.
//!
//! The execution harness is minimal and test-only: code at 0 behind a stub
//! (`call entry ; move s29, -1 ; setcr s29, 20 ; b .`), data objects and buffers at
//! fixed addresses, one context record at `gp` (lanes 0..15 exist), `sp` at the top of
//! a stack area, arguments in registers per the ABI. The image builder's real launcher
//! is helper IMG's.

use sim::nyuzi::{decode, encode, BranchOp, Config, Inst, Machine};

use super::abi::{ctx, GP, SP};
use super::codegen::compile_module_with;
use super::isel::{assign_args, layout, ArgLoc, ScalarUse};
use super::object::{Object, RelocKind, RelocTarget};
use super::{compile_module, listing};
use crate::driver::{self, FrontOptions, Stage};
use crate::front::sema::Target;
use crate::interp::{self, Launch, Limits, Memory};
use crate::ir::{Module, Scalar, Type};
use crate::passes::legalize::LegalTarget;

const CODE_BASE: u32 = 32;
const DATA_BASE: u32 = 0x8000;
const CTX: u32 = 0x10000;
const SHARED: u32 = 0x20000;
const BUF_BASE: u32 = 0x40000;
const BUF_STRIDE: u32 = 0x10000;
const STACK_TOP: u32 = 0x100000;

fn module_of(src: &str) -> Module {
    let opts = FrontOptions {
        target: Target {
            program_count: 16,
            pointer_size: 4,
        },
        ..FrontOptions::default()
    };
    let front = driver::run_front("t.spmd", None, src.to_string(), &opts, Stage::Check);
    match driver::lower_for_target(&front, true, LegalTarget::Nyuzi) {
        Ok(m) => m,
        Err(d) => panic!("lowering failed: {d:?}"),
    }
}

thread_local! {
    /// What [`compile`] computes in scalar registers (the `--no-scalar-datapath`
    /// tests rerun other tests with [`ScalarUse::Minimal`]).
    static SCALARS: std::cell::Cell<ScalarUse> = const { std::cell::Cell::new(ScalarUse::Analysis) };
}

fn compile(m: &Module) -> Object {
    match compile_module_with(m, SCALARS.get()) {
        Ok(o) => o,
        Err(d) => panic!(
            "nyuzi codegen failed: {:?}",
            d.iter().map(|x| x.message.clone()).collect::<Vec<_>>()
        ),
    }
}

/// Code words with every relocation resolved, and data addresses.
fn link(obj: &Object, entry: &str) -> (Vec<u32>, Vec<u32>) {
    let mut addrs = Vec::new();
    let mut next = DATA_BASE;
    for d in &obj.data {
        let a = d.align.max(4);
        next = next.div_ceil(a) * a;
        addrs.push(next);
        next += d.size.max(1);
    }
    let mut code: Vec<Inst> = obj.code.clone();
    for r in &obj.relocs {
        let at = r.at as usize;
        let target = match &r.target {
            RelocTarget::Function(n) => {
                CODE_BASE + 4 * obj.symbol(n).expect("callee is in the module").offset
            }
            RelocTarget::Data(i) => addrs[*i],
            RelocTarget::Runtime(_) => panic!("runtime routines are not linked in tests"),
        };
        let target = (target as i64 + i64::from(r.addend)) as u32;
        match r.kind {
            RelocKind::Branch => {
                let here = CODE_BASE + 4 * r.at;
                if let Inst::Branch { offset, .. } = &mut code[at] {
                    *offset = ((target as i64 - here as i64) / 4) as i32;
                }
            }
            RelocKind::AbsHiLo => {
                if let Inst::MoveHi { imm, .. } = &mut code[at] {
                    *imm = target >> 13;
                }
                if let Inst::Imm { imm, .. } = &mut code[at + 1] {
                    *imm = (target & 0x1fff) as i32;
                }
            }
        }
    }
    let entry_at = CODE_BASE / 4 + obj.symbol(entry).expect("entry").offset;
    let mut words = vec![
        encode(&Inst::Branch {
            op: BranchOp::Call,
            reg: 0,
            offset: entry_at as i32,
        }),
        0x0f00_0000 | (0x3fff << 10) | (29 << 5), // move s29, -1
        encode(&Inst::Mem {
            op: sim::nyuzi::MemOp::ControlReg,
            load: false,
            srcdest: 29,
            ptr: 20,
            mask: 0,
            offset: 0,
        }),
        encode(&Inst::Branch {
            op: BranchOp::Jump,
            reg: 0,
            offset: 0,
        }),
    ];
    assert_eq!(
        decode(words[1]).map(|i| i.to_string()),
        Ok("move s29, -1".to_string())
    );
    words.resize((CODE_BASE / 4) as usize, 0);
    words.extend(code.iter().map(encode));
    (words, addrs)
}

#[derive(Clone, Debug)]
enum Arg {
    Val(u64),
    Buf(Vec<u8>),
}

#[derive(Debug, PartialEq)]
struct Result {
    ret: Option<u64>,
    bufs: Vec<Vec<u8>>,
}

fn canonical_ret(ty: Type, words: &[u32]) -> u64 {
    let lo = u64::from(words[0]);
    match ty.scalar {
        Scalar::Bool => u64::from(lo != 0),
        Scalar::I64 | Scalar::F64 => lo | u64::from(words[1]) << 32,
        _ => lo,
    }
}

/// Puts one argument where [`assign_args`] says (stack words at the initial `sp`).
fn put_arg(mach: &mut Machine, loc: &ArgLoc, x: u64) {
    match loc {
        ArgLoc::Regs(phys) => {
            for (k, p) in phys.iter().enumerate() {
                mach.set_scalar_reg(0, p.index, (x >> (32 * k)) as u32);
            }
        }
        ArgLoc::Stack(off) => {
            let sp = STACK_TOP - 256;
            mach.write_bytes(sp + off, &x.to_le_bytes()).unwrap();
        }
    }
}

/// Runs `entry` on the simulator; `misalign` shifts every buffer by 4 bytes (so
/// block accesses take their gather/scatter fallback).
fn run_nyuzi(m: &Module, entry: &str, args: &[Arg], misalign: bool) -> Result {
    run_nyuzi_lanes(m, entry, args, misalign, 16)
}

/// [`run_nyuzi`] for a block of `threads` (1..=16) threads: lanes past it do not
/// exist.
fn run_nyuzi_lanes(m: &Module, entry: &str, args: &[Arg], misalign: bool, threads: u32) -> Result {
    match try_run_nyuzi(m, entry, args, misalign, threads) {
        Ok(r) => r,
        Err(e) => panic!("simulator fault: {e}\n{}", listing(&compile(m), None)),
    }
}

/// [`run_nyuzi_lanes`], returning the simulator's fault instead of panicking.
fn try_run_nyuzi(
    m: &Module,
    entry: &str,
    args: &[Arg],
    misalign: bool,
    threads: u32,
) -> std::result::Result<Result, sim::nyuzi::Fault> {
    let exists = (1u32 << threads) - 1;
    let obj = compile(m);
    let (words, addrs) = link(&obj, entry);
    let mut mach = Machine::new(Config {
        cores: 1,
        threads_per_core: 1,
        memory_size: 0x20_0000,
        max_instructions: 20_000_000,
    });
    mach.load_words(0, &words).unwrap();
    for (d, &a) in obj.data.iter().zip(&addrs) {
        let mut bytes = d.init.clone();
        bytes.resize(d.size as usize, 0);
        mach.write_bytes(a, &bytes).unwrap();
    }
    // Context record.
    let mut rec = vec![0u8; ctx::SIZE as usize];
    let mut put = |off: i32, x: u32| {
        rec[off as usize..off as usize + 4].copy_from_slice(&x.to_le_bytes());
    };
    for i in 0..16 {
        put(ctx::THREAD_IDX_X + 4 * i, i as u32);
        put(ctx::LANE_INDEX + 4 * i, i as u32);
    }
    put(ctx::EXISTS, exists);
    for off in [
        ctx::BLOCK_DIM_Y,
        ctx::BLOCK_DIM_Z,
        ctx::GRID_DIM_X,
        ctx::GRID_DIM_Y,
        ctx::GRID_DIM_Z,
    ] {
        put(off, 1);
    }
    put(ctx::BLOCK_DIM_X, threads);
    put(ctx::SHARED_BASE, SHARED);
    mach.write_bytes(CTX, &rec).unwrap();
    mach.set_scalar_reg(0, GP.index, CTX);
    mach.set_scalar_reg(0, SP.index, STACK_TOP - 256);
    let fref = m.function_by_name(entry).unwrap();
    let f = &m.functions[fref];
    let regs = assign_args(&f.sig.params, f.sig.takes_mask).unwrap();
    let mut buf_addrs = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let x = match arg {
            Arg::Val(x) => *x,
            Arg::Buf(b) => {
                let a = BUF_BASE + BUF_STRIDE * i as u32 + if misalign { 4 } else { 0 };
                mach.write_bytes(a, b).unwrap();
                buf_addrs.push((a, b.len() as u32));
                u64::from(a)
            }
        };
        let x = if f.sig.params[i].scalar == Scalar::Bool && x != 0 {
            0xffff
        } else {
            x
        };
        put_arg(&mut mach, &regs[i], x);
    }
    if f.sig.takes_mask {
        put_arg(&mut mach, regs.last().unwrap(), u64::from(exists));
    }
    mach.run()?;
    let ret = f.sig.ret.map(|t| {
        let (class, n) = layout(t);
        assert!(class == super::abi::SCALAR, "uniform results only");
        let w: Vec<u32> = (0..n).map(|k| mach.scalar_reg(0, k as u8)).collect();
        canonical_ret(t, &w)
    });
    let bufs = buf_addrs
        .iter()
        .map(|&(a, n)| mach.read_bytes(a, n).unwrap().to_vec())
        .collect();
    Ok(Result { ret, bufs })
}

fn run_interp(m: &Module, entry: &str, args: &[Arg]) -> Result {
    run_interp_lanes(m, entry, args, 16)
}

fn run_interp_lanes(m: &Module, entry: &str, args: &[Arg], threads: u32) -> Result {
    let mut mem = Memory::new();
    let mut bufs = Vec::new();
    let vals: Vec<u64> = args
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            Arg::Val(x) => *x,
            Arg::Buf(b) => {
                let addr = mem.add_buffer(b.clone(), &format!("b{i}"));
                bufs.push(addr);
                addr
            }
        })
        .collect();
    let fref = m.function_by_name(entry).unwrap();
    let out = interp::run(
        m,
        fref,
        &Launch::new(sim::Dim3::ONE, sim::Dim3::new(threads, 1, 1), vals),
        &mut mem,
        Limits::default(),
    )
    .expect("interpreter run");
    Result {
        ret: out.ret,
        bufs: bufs
            .iter()
            .map(|&a| mem.buffer(a).unwrap().to_vec())
            .collect(),
    }
}

/// Runs `entry` of `src` on the interpreter and on the simulator (buffers aligned and
/// misaligned) and requires identical results.
fn diff(src: &str, entry: &str, args: &[Arg]) {
    diff_module(&module_of(src), entry, args);
}

/// [`diff`] for a module (e.g. parsed IR).
fn diff_module(m: &Module, entry: &str, args: &[Arg]) {
    let m = m.clone();
    let want = run_interp(&m, entry, args);
    for misalign in [false, true] {
        let got = run_nyuzi(&m, entry, args, misalign);
        assert_eq!(got, want, "misalign={misalign}");
    }
}

fn words_i32(xs: impl IntoIterator<Item = i32>) -> Vec<u8> {
    xs.into_iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn words_f32(xs: impl IntoIterator<Item = f32>) -> Vec<u8> {
    xs.into_iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn saxpy_matches_interpreter() {
    let src =
        "export void saxpy(uniform int n, uniform float a, uniform float x[], uniform float y[]) {
        foreach (i = 0 ... n) { y[i] = a * x[i] + y[i]; }
    }";
    for n in [0, 5, 16, 37] {
        diff(
            src,
            "saxpy",
            &[
                Arg::Val(n as u64),
                Arg::Val(u64::from(2.5f32.to_bits())),
                Arg::Buf(words_f32((0..40).map(|i| i as f32 * 0.75))),
                Arg::Buf(words_f32((0..40).map(|i| 1.0 - i as f32))),
            ],
        );
    }
}

/// `((packmask(c) >> programIndex) & 1) != 0` is `c` on the lanes that exist: the
/// packmask's register is the mask (no vector shift, and, compare), in full and
/// partial gangs.
#[test]
fn a_packmask_read_back_by_lane_is_the_mask() {
    let src = "export void k(uniform int a[], uniform int out[]) {
        int v = a[programIndex];
        uniform int bits = packmask(v > 3);
        bool on = ((bits >> programIndex) & 1) != 0;
        out[programIndex] = select(on, v, -1);
    }";
    let m = module_of(src);
    let text = listing(&compile(&m), None);
    for op in ["ashr v", "shr v", "cmpne_i"] {
        assert!(!text.contains(op), "`{op}` in\n{text}");
    }
    let args = [
        Arg::Buf(words_i32((0..16).map(|i| (i * 7) % 9))),
        Arg::Buf(words_i32([0; 16])),
    ];
    for threads in [16, 11] {
        let want = run_interp_lanes(&m, "k", &args, threads);
        assert_eq!(run_nyuzi_lanes(&m, "k", &args, false, threads), want);
    }
}

#[test]
fn print_listing_for_inspection() {
    let src = std::env::var("NYUZI_LISTING_SRC").unwrap_or_default();
    if src.is_empty() {
        return;
    }
    let text = std::fs::read_to_string(&src).unwrap();
    let m = module_of(&text);
    println!("{}", crate::ir::write::module_to_string(&m));
    println!("{}", listing(&compile(&m), None));
}

#[test]
fn stack_arguments_and_calls() {
    let src = "
    static int sum10(uniform int a, int b, uniform int c, uniform int d, uniform int e,
                     uniform int f, uniform int g, uniform int h, uniform int i, int j) {
        return a + b * 2 + c * 3 + d * 4 + e * 5 + f * 6 + g * 7 + h * 8 + i * 9 + j * 10;
    }
    export void k(uniform int a, uniform int b, uniform int c, uniform int d, uniform int e,
                  uniform int f, uniform int g, uniform int h, uniform int i, uniform int out[]) {
        int x = sum10(a, programIndex, c, d, e, f, g, h, i, programIndex * b);
        out[programIndex] = x;
    }";
    let mut args: Vec<Arg> = (1..10).map(|x| Arg::Val(x as u64 * 3)).collect();
    args.push(Arg::Buf(words_i32(0..16)));
    diff(src, "k", &args);
}

fn bytes_of(xs: impl IntoIterator<Item = u8>) -> Vec<u8> {
    xs.into_iter().collect()
}

#[test]
fn narrow_integers_wrap_like_the_interpreter() {
    let src = "
    export void k(uniform int8 a[], uniform int16 b[], uniform unsigned int8 c[], uniform int out[]) {
        int8 x = a[programIndex];
        int16 y = b[programIndex];
        unsigned int8 z = c[programIndex];
        int8 s = x * 3 + 100;
        int16 t = y << 3;
        unsigned int8 u = z + 200;
        int r = s + (t >> 2) + u + (x < -5 ? 1000 : -1000) + (z > 100 ? 7 : 3);
        r += min(x, (int8)4) * 10 + max(y, (int16)-7) + (int)(x >> 1) + (int)(z >> 3);
        a[programIndex] = s;
        b[(programIndex * 5) % 16] = t;
        c[15 - programIndex] = u;
        out[programIndex] = r;
    }";
    diff(
        src,
        "k",
        &[
            Arg::Buf(bytes_of((0..16).map(|i| (i * 37 + 200) as u8))),
            Arg::Buf(
                (0..16)
                    .flat_map(|i: i32| ((i * 4999 - 30000) as i16).to_le_bytes())
                    .collect(),
            ),
            Arg::Buf(bytes_of((0..16).map(|i| (i * 29 + 3) as u8))),
            Arg::Buf(words_i32(0..16)),
        ],
    );
}

#[test]
fn int64_pairs_match_the_interpreter() {
    let src = "
    export void k(uniform int64 a, uniform int64 v[], uniform int64 out[], uniform int flags[]) {
        int64 x = v[programIndex];
        int64 s = x + a;
        int64 d = x - a * 3;
        int64 l = x << 13;
        int64 r = x >> 7;
        unsigned int64 ur = (unsigned int64)x >> 40;
        out[programIndex] = s ^ d ^ l ^ r ^ (int64)ur ^ (x & 0xff00ff00ff) ^ -x;
        uniform int64 u = a + 0x100000000;
        flags[programIndex] = (x < a ? 1 : 0) + (x == s - a ? 2 : 0) + ((unsigned int64)x > (unsigned int64)a ? 4 : 0)
            + (u >= a ? 8 : 0);
    }";
    diff(
        src,
        "k",
        &[
            Arg::Val(0xffff_fff0_1234_5678),
            Arg::Buf(
                (0..16)
                    .flat_map(|i: i64| (i * 0x3_1234_5678_9abc - 0x7000_0000_0000).to_le_bytes())
                    .collect(),
            ),
            Arg::Buf(vec![0; 128]),
            Arg::Buf(words_i32(0..16)),
        ],
    );
}

#[test]
fn masks_selects_and_lane_ops_match_the_interpreter() {
    let src = "
    export uniform int k(uniform float x[], uniform int out[], uniform bool flags[]) {
        float v = x[programIndex];
        int r = 0;
        if (v > 2.5) {
            r = 1;
            if (v < 6) r = 2; else r = 3;
        } else if (v != v) {
            r = 9;
        }
        uniform int lanes = extract(r, 3) * 100 + (any(v > 100) ? 1 : 0) + (all(v > -1000) ? 10 : 0);
        int s = shuffle(r, 15 - programIndex);
        s = insert(s, 2, 77);
        out[programIndex] = r * 1000 + s + (int)v;
        flags[programIndex] = v > 4;
        uniform int64 b = lanemask();
        return lanes + (int)b;
    }";
    let xs = [
        0.5f32,
        3.0,
        7.0,
        -1.0,
        f32::NAN,
        5.5,
        2.5,
        100.5,
        1.0,
        9.0,
        4.0,
        4.5,
        -3.0,
        6.0,
        0.0,
        2.0,
    ];
    diff(
        src,
        "k",
        &[
            Arg::Buf(words_f32(xs)),
            Arg::Buf(words_i32(0..16)),
            Arg::Buf(vec![9; 16]),
        ],
    );
}

#[test]
fn uniform_atomics_match_the_interpreter() {
    let src = "
    export uniform int k(uniform int c[]) {
        uniform int a = atomic_add_global(&c[0], 5);
        uniform int b = atomic_max_global(&c[1], 17);
        uniform int d = atomic_compare_exchange_global(&c[2], 3, 11);
        uniform int e = atomic_compare_exchange_global(&c[3], 3, 11);
        uniform int f = atomic_xor_global(&c[4], 0xff);
        return a * 1000000 + b * 10000 + d * 100 + e + f;
    }";
    diff(src, "k", &[Arg::Buf(words_i32([1, 20, 3, 4, 0x0f]))]);
}

/// The listing of a module given as IR text (snapshots of selected code).
fn ir_listing(text: &str) -> String {
    let m = crate::ir::parse_module(text).expect("IR parses");
    listing(&compile(&m), None)
}

#[test]
fn snapshot_uniform_arith() {
    insta::assert_snapshot!(ir_listing(
        "module lanes 16 ptr 4
function export @f(i32, i32) -> i32 {
block0(v0: i32, v1: i32):
    v2 = iadd v0, v1
    v3 = imul v2, v1
    v4 = iconst.i32 100000
    v5 = sshr v3, v4
    return v5
}
"
    ));
}

#[test]
fn snapshot_varying_select_and_masked_scatter() {
    insta::assert_snapshot!(ir_listing(
        "module lanes 16 ptr 4
function export @f(ptr, f32) masked {
block0(v0: ptr, v1: f32, v2: [bool]):
    v3 = special lane_index
    v4 = iconst.i32 8
    v5 = splat v4
    v6 = imul v3, v5
    v7 = bitcast.ptr v6
    v8 = splat v0
    v9 = iadd v8, v7
    v10 = fcvt_from_sint.f32 v3
    v11 = splat v1
    v12 = fcmp lt v10, v11
    v13 = select v12, v10, v11
    store global v9, v13 mask v2
    return
}
"
    ));
}

#[test]
fn snapshot_block_load_store() {
    insta::assert_snapshot!(ir_listing(
        "module lanes 16 ptr 4
function export @f(ptr) masked {
block0(v0: ptr, v1: [bool]):
    v2 = special lane_index
    v3 = iconst.i32 4
    v4 = splat v3
    v5 = imul v2, v4
    v6 = bitcast.ptr v5
    v7 = splat v0
    v8 = iadd v7, v6
    v9 = load.i32 global v8 mask v1
    v10 = iadd v9, v2
    store global v8, v10 mask v1
    return
}
"
    ));
}

#[test]
fn snapshot_i64_and_lane_ops() {
    insta::assert_snapshot!(ir_listing(
        "module lanes 16 ptr 4
function export @f(i64, i64, [bool]) -> i64 {
block0(v0: i64, v1: i64, v2: [bool]):
    v3 = iadd v0, v1
    v4 = ballot v2
    v5 = bxor v3, v4
    v6 = any v2
    brif v6, block1, block2
block1:
    return v5
block2:
    return v0
}
"
    ));
}

#[test]
fn snapshot_loop_and_call() {
    insta::assert_snapshot!(ir_listing(
        "module lanes 16 ptr 4
function internal @g(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 3
    v2 = ishl v0, v1
    return v2
}

function export @f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 0
    jump block1(v1, v1)
block1(v2: i32, v3: i32):
    v4 = icmp slt v2, v0
    brif v4, block2, block3
block2:
    v5 = call @g(v2)
    v6 = iadd v3, v5
    v7 = iconst.i32 1
    v8 = iadd v2, v7
    jump block1(v8, v6)
block3:
    return v3
}
"
    ));
}

#[test]
fn foreach_and_reductions_match_the_interpreter() {
    let src = "
    export void f_f(uniform float RET[], uniform float aFOO[]) {
        float sum = 0;
        foreach (i = 0 ... programCount) {
            sum += aFOO[i];
        }
        uniform int bits = packmask(aFOO[programIndex] > 3);
        RET[programIndex] = reduce_add(sum) + bits;
    }";
    diff(
        src,
        "f_f",
        &[
            Arg::Buf(words_f32((0..64).map(|_| 0.0))),
            Arg::Buf(words_f32((1..65).map(|i| i as f32))),
        ],
    );
}

#[test]
fn misc_conversions_64bit_lanes_and_pressure_match_the_interpreter() {
    let src = "
    static double twice(double d, int k) { return d * 2.0d + (double)k; }
    static float many(float a, float b) {
        float t0 = a * 1.5, t1 = b * 2.5, t2 = a + b, t3 = a - b, t4 = a * b, t5 = t0 * t1;
        float t6 = t2 * t3, t7 = t4 - t5, t8 = t6 + t7, t9 = t0 - t9;
        return t0 + t1 + t2 + t3 + t4 + t5 + t6 + t7 + t8 + t9;
    }
    export void k(uniform int x[], uniform double d[], uniform int out[], uniform double dout[]) {
        int v = x[programIndex];
        int8 c = (int8)v;
        int16 h = (int16)(v * 300);
        bool b = v > 5;
        int r = count_leading_zeros(v) + count_trailing_zeros(v) * 3
              + (int)count_leading_zeros((unsigned int)c) * 5 + (int)count_trailing_zeros((unsigned int)h) * 7;
        r += (int)(float)c + (int)(float)h + (b ? 100 : 0) + (int)b * 1000;
        double dd = d[programIndex];
        double e = -dd;
        double f = abs(e);
        int64 i = (int64)v * 0x100000001;
        int64 j = -i;
        int64 s = shuffle(j, (programIndex + 3) & 15);
        uniform int64 ex = extract(s, 5);
        int64 ins = insert(i, 7, ex);
        double sel = b ? e : f;
        if (v % 3 == 0) {
            uniform double u = d[2];
            sel = u;
        }
        dout[programIndex] = sel + 0.0d;
        out[programIndex] = r + (int)(ins >> 32) + (int)many((float)v, (float)r);
        dout[16 + programIndex] = doublebits(intbits(dd) ^ (uint64)(ins ^ s));
    }";
    let ds: Vec<u8> = (0..32)
        .flat_map(|i| (i as f64 * 1.25 - 7.0).to_bits().to_le_bytes())
        .collect();
    diff(
        src,
        "k",
        &[
            Arg::Buf(words_i32((0..16).map(|i| i * 7919 - 40000))),
            Arg::Buf(ds.clone()),
            Arg::Buf(words_i32(0..16)),
            Arg::Buf(vec![0; 256]),
        ],
    );
}

#[test]
fn narrow_bit_counts_and_bool_orders_match_the_interpreter() {
    // clz/ctz on i8/i16 and ordered compares of bools exist only in the IR.
    let m = crate::ir::parse_module(
        "module lanes 16 ptr 4
function export @k(ptr) {
block0(v0: ptr):
    v1 = special lane_index
    v2 = iconst.i32 37
    v3 = splat v2
    v4 = imul v1, v3
    v5 = ireduce.i8 v4
    v6 = clz v5
    v7 = ctz v5
    v8 = ishl v4, v2
    v9 = ireduce.i16 v8
    v10 = clz v9
    v11 = ctz v9
    v12 = zext.i32 v6
    v13 = zext.i32 v7
    v14 = zext.i32 v10
    v15 = zext.i32 v11
    v16 = iconst.i32 5
    v17 = splat v16
    v18 = icmp slt v1, v17
    v19 = iconst.i32 1
    v20 = splat v19
    v21 = band v1, v20
    v22 = icmp eq v21, v20
    v23 = icmp slt v18, v22
    v24 = icmp ule v18, v22
    v25 = icmp sge v18, v22
    v26 = zext.i32 v23
    v27 = zext.i32 v24
    v28 = sext.i32 v25
    v29 = iconst.i32 8
    v30 = splat v29
    v31 = ishl v13, v30
    v32 = iadd v12, v31
    v33 = iconst.i32 16
    v34 = splat v33
    v35 = ishl v14, v34
    v36 = iadd v32, v35
    v37 = iconst.i32 24
    v38 = splat v37
    v39 = ishl v15, v38
    v40 = iadd v36, v39
    v41 = iadd v40, v26
    v42 = ishl v27, v20
    v43 = iadd v41, v42
    v44 = bxor v43, v28
    v45 = iconst.i32 4
    v46 = splat v45
    v47 = imul v1, v46
    v48 = bitcast.ptr v47
    v49 = splat v0
    v50 = iadd v49, v48
    store global v50, v44
    return
}
",
    )
    .expect("IR parses");
    diff_module(&m, "k", &[Arg::Buf(words_i32(0..16))]);
}

#[test]
fn offset_consecutive_accesses_match_the_interpreter() {
    // `a[k + programIndex]` takes the block path when `a + 4k` is 64-byte aligned
    // (k = 0, 16) and the gather/scatter path otherwise (k = 3), for both buffer
    // placements.
    let src = "
    export void k(uniform int a[], uniform int b[], uniform int n) {
        for (uniform int k = 0; k < n; k += 1) {
            int x = a[k * 3 + programIndex];
            if (x % 2 == 0) b[k * 16 + programIndex] = x * 10 + k;
        }
    }";
    diff(
        src,
        "k",
        &[
            Arg::Buf(words_i32((0..64).map(|i| i * 7 + 1))),
            Arg::Buf(words_i32(vec![-1; 96])),
            Arg::Val(5),
        ],
    );
}

/// An IR kernel applying `op` (a binary op or `icmp cond`/`fcmp cond`) to elements
/// of `a` and `b`, lane by lane (`varying`) or as 16 uniform operations, writing the
/// results (compares as i32 0/1) to `out`.
fn op_kernel(op: &str, ty: &str, bytes: u32, varying: bool, cmp: bool, bcast: u8) -> String {
    let out_bytes = if cmp { 4 } else { bytes };
    let expr = |a: &str, b: &str| format!("{op} {a}, {b}");
    expr_kernel(&expr, ty, bytes, out_bytes, varying, cmp, bcast)
}

/// [`op_kernel`] for any expression of the operands `a` and `b` (`expr` gets their
/// value names); `widen` zero-extends a bool result to i32.
fn expr_kernel(
    expr: &dyn Fn(&str, &str) -> String,
    ty: &str,
    bytes: u32,
    out_bytes: u32,
    varying: bool,
    widen: bool,
    bcast: u8,
) -> String {
    let cmp = widen;
    let mut t = "module lanes 16 ptr 4\nfunction export @k(ptr, ptr, ptr) {\nblock0(v0: ptr, v1: ptr, v2: ptr):\n".to_string();
    if varying {
        t += "    v3 = special lane_index\n";
        let mut n = 4;
        let mut addr = |t: &mut String, base: u32, size: u32| -> u32 {
            *t += &format!(
                "    v{n} = iconst.i32 {size}\n    v{} = splat v{n}\n    v{} = imul v3, v{}\n    v{} = bitcast.ptr v{}\n    v{} = splat v{base}\n    v{} = iadd v{}, v{}\n",
                n + 1, n + 2, n + 1, n + 3, n + 2, n + 4, n + 5, n + 4, n + 3
            );
            n += 6;
            n - 1
        };
        let pa = addr(&mut t, 0, bytes);
        let pb = addr(&mut t, 1, bytes);
        let po = addr(&mut t, 2, out_bytes);
        // bcast 1/2: the second/first operand is a splat of the uniform b[0].
        t += &format!(
            "    v100 = load.{ty} global v{pa}\n    v101 = load.{ty} global v{pb}\n    v104 = load.{ty} global v1\n    v105 = splat v104\n"
        );
        let (ea, eb) = match bcast {
            1 => ("v100", "v105"),
            2 => ("v105", "v101"),
            _ => ("v100", "v101"),
        };
        t += &format!("    v102 = {}\n", expr(ea, eb));
        if cmp {
            t += "    v103 = zext.i32 v102\n";
            t += &format!("    store global v{po}, v103\n");
        } else {
            t += &format!("    store global v{po}, v102\n");
        }
    } else {
        for k in 0..16u32 {
            let b = 1000 + 10 * k;
            t += &format!(
                "    v{b} = iconst.ptr {}\n    v{} = iadd v0, v{b}\n    v{} = iadd v1, v{b}\n    v{} = load.{ty} global v{}\n    v{} = load.{ty} global v{}\n    v{} = {}\n    v{} = iconst.ptr {}\n    v{} = iadd v2, v{}\n",
                k * bytes,
                b + 1,
                b + 2,
                b + 3,
                b + 1,
                b + 4,
                b + 2,
                b + 5,
                expr(&format!("v{}", b + 3), &format!("v{}", b + 4)),
                b + 6,
                k * out_bytes,
                b + 7,
                b + 6
            );
            if cmp {
                t += &format!(
                    "    v{} = zext.i32 v{}\n    store global v{}, v{}\n",
                    b + 8,
                    b + 5,
                    b + 7,
                    b + 8
                );
            } else {
                t += &format!("    store global v{}, v{}\n", b + 7, b + 5);
            }
        }
    }
    t += "    return\n}\n";
    t
}

/// Interesting operand bits for a width: zero, ones, extremes, small counts.
fn edge_values(bits: u32, salt: u64) -> Vec<u64> {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let base = [
        0u64,
        1,
        2,
        3,
        7,
        mask,
        mask >> 1,
        (mask >> 1) + 1,
        mask - 1,
        0x5555_5555_5555_5555,
        0x8000_0001_8000_0001,
        31,
        33,
        15,
        0x1234_5678_9abc_def0,
        0xfedc_ba98_7654_3210,
    ];
    base.iter()
        .enumerate()
        .map(|(i, &x)| x.rotate_left((salt as u32 + i as u32) % 7) & mask)
        .collect()
}

fn elem_bytes(xs: &[u64], bytes: u32) -> Vec<u8> {
    xs.iter()
        .flat_map(|x| x.to_le_bytes()[..bytes as usize].to_vec())
        .collect()
}

#[test]
fn every_native_integer_and_f32_operation_matches_the_interpreter() {
    let int_ops = [
        "iadd", "isub", "imul", "band", "bor", "bxor", "ishl", "sshr", "ushr", "smin", "smax",
        "umin", "umax",
    ];
    let conds = [
        "eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge",
    ];
    let mut cases: Vec<(String, &str, u32, bool)> = Vec::new();
    for (ty, bytes) in [("i8", 1), ("i16", 2), ("i32", 4)] {
        for op in int_ops {
            cases.push((op.to_string(), ty, bytes, false));
        }
    }
    for op in ["iadd", "isub", "band", "bor", "bxor"] {
        cases.push((op.to_string(), "i64", 8, false));
    }
    for (ty, bytes) in [("i8", 1), ("i16", 2), ("i32", 4), ("i64", 8)] {
        for c in conds {
            cases.push((format!("icmp {c}"), ty, bytes, true));
        }
    }
    for op in ["fadd", "fsub", "fmul"] {
        cases.push((op.to_string(), "f32", 4, false));
    }
    for c in ["eq", "une", "lt", "le", "gt", "ge", "uno"] {
        cases.push((format!("fcmp {c}"), "f32", 4, true));
    }
    let floats: Vec<u64> = [
        0.0f32,
        -0.0,
        1.5,
        -2.25,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        3.0e38,
        -1.0e-40,
        7.0,
        1.5,
        -2.25,
        0.1,
        1e30,
        -1e30,
        2.0,
    ]
    .iter()
    .map(|x| u64::from(x.to_bits()))
    .collect();
    for (op, ty, bytes, cmp) in &cases {
        let (a, b) = if *ty == "f32" {
            // NaN results differ in their bits (the machine's canonical 0x7fffffff
            // against the host's): arithmetic gets no NaN operands or NaN-producing
            // pairs; compares get all of them.
            let a: Vec<u64> = if *cmp {
                floats.clone()
            } else {
                floats
                    .iter()
                    .map(|&x| {
                        if f32::from_bits(x as u32).is_nan() {
                            0x40a0_0000
                        } else {
                            x
                        }
                    })
                    .collect()
            };
            let mut b = a.clone();
            b.rotate_left(3);
            if !*cmp {
                let f = |x: u64| f32::from_bits(x as u32);
                for (x, y) in a.iter().zip(b.iter_mut()) {
                    let r = match op.as_str() {
                        "fadd" => f(*x) + f(*y),
                        "fsub" => f(*x) - f(*y),
                        _ => f(*x) * f(*y),
                    };
                    if r.is_nan() {
                        *y = u64::from(1.0f32.to_bits());
                    }
                }
            }
            (a, b)
        } else {
            let bits = bytes * 8;
            (edge_values(bits, 0), edge_values(bits, 3))
        };
        for (varying, bcast) in [(true, 0), (true, 1), (true, 2), (false, 0)] {
            let text = op_kernel(op, ty, *bytes, varying, *cmp, bcast);
            let m = crate::ir::parse_module(&text)
                .unwrap_or_else(|e| panic!("{op} {ty}: {e:?}\n{text}"));
            let out = vec![0u8; 16 * if *cmp { 4 } else { *bytes as usize }];
            let args = [
                Arg::Buf(elem_bytes(&a, *bytes)),
                Arg::Buf(elem_bytes(&b, *bytes)),
                Arg::Buf(out),
            ];
            let want = run_interp(&m, "k", &args);
            let got = run_nyuzi(&m, "k", &args, false);
            assert_eq!(
                got, want,
                "{op} on {ty}, varying={varying}, broadcast={bcast}"
            );
        }
    }
}

#[test]
fn unary_ops_and_conversions_match_the_interpreter() {
    // (expression over `a`, operand type and bytes, result bytes, bool result)
    let cases: Vec<(String, &str, u32, u32, bool)> = {
        let mut c = Vec::new();
        for (ty, bytes) in [("i8", 1), ("i16", 2), ("i32", 4), ("i64", 8)] {
            for op in ["ineg", "bnot"] {
                c.push((format!("{op} a"), ty, bytes, bytes, false));
            }
            c.push(("to_bool.bool a".into(), ty, bytes, 4, true));
            for (to, tb) in [("i8", 1), ("i16", 2), ("i32", 4), ("i64", 8)] {
                if tb > bytes {
                    c.push((format!("sext.{to} a"), ty, bytes, tb, false));
                    c.push((format!("zext.{to} a"), ty, bytes, tb, false));
                } else if tb < bytes {
                    c.push((format!("ireduce.{to} a"), ty, bytes, tb, false));
                }
            }
            if bytes < 8 {
                c.push(("clz a".into(), ty, bytes, bytes, false));
                c.push(("ctz a".into(), ty, bytes, bytes, false));
                c.push(("fcvt_from_sint.f32 a".into(), ty, bytes, 4, false));
            }
        }
        c.push(("ireduce.bool a".into(), "i32", 4, 4, true));
        c.push(("bitcast.f32 a".into(), "i32", 4, 4, false));
        c.push(("bitcast.f64 a".into(), "i64", 8, 8, false));
        for op in ["fneg", "fabs", "to_bool.bool"] {
            let widen = op.starts_with("to_bool");
            c.push((format!("{op} a"), "f32", 4, 4, widen));
            c.push((
                format!("{op} a"),
                "f64",
                8,
                4 + 4 * u32::from(!widen),
                widen,
            ));
        }
        c
    };
    for (e, ty, bytes, out_bytes, widen) in &cases {
        let a: Vec<u64> = if ty.starts_with('f') {
            let xs = [
                0.0f64,
                -0.0,
                1.5,
                -2.25,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                3.0e38,
                -1.0e-40,
                7.0,
                1e300,
                -2.25,
                0.1,
                1e30,
                -1e30,
                2.0,
            ];
            xs.iter()
                .map(|&x| {
                    if *ty == "f32" {
                        u64::from((x as f32).to_bits())
                    } else {
                        x.to_bits()
                    }
                })
                .collect()
        } else {
            edge_values(bytes * 8, 1)
        };
        let expr = |a: &str, _b: &str| e.replace(" a", &format!(" {a}"));
        for varying in [true, false] {
            let text = expr_kernel(&expr, ty, *bytes, *out_bytes, varying, *widen, 0);
            let m = crate::ir::parse_module(&text)
                .unwrap_or_else(|err| panic!("{e} {ty}: {err:?}\n{text}"));
            let args = [
                Arg::Buf(elem_bytes(&a, *bytes)),
                Arg::Buf(elem_bytes(&a, *bytes)),
                Arg::Buf(vec![0u8; 16 * *out_bytes as usize]),
            ];
            let want = run_interp(&m, "k", &args);
            let got = run_nyuzi(&m, "k", &args, false);
            assert_eq!(got, want, "{e} on {ty}, varying={varying}");
        }
    }
}

#[test]
fn print_compiles_when_legalized_and_is_reported_when_not() {
    let src = "export void k(uniform int n) {
            print(\"%\\n\", n);
        }";
    // Legalization turns print into runtime calls (passes::legalize::print).
    compile(&module_of(src));
    let opts = FrontOptions {
        target: Target {
            program_count: 16,
            pointer_size: 4,
        },
        ..FrontOptions::default()
    };
    let front = driver::run_front("t.spmd", None, src.to_string(), &opts, Stage::Check);
    let m = driver::lower_front_with(&front, true).expect("lowers");
    let Err(diags) = compile_module(&m) else {
        panic!("an unlegalized print compiled on nyuzi");
    };
    assert!(diags
        .iter()
        .any(|d| d.code == crate::diag::codes::NOT_SUPPORTED_YET && d.span().is_some()));
}

#[test]
fn snapshot_listing_with_source_lines() {
    let src = "export void k(uniform int a[], uniform int n) {
    int x = a[programIndex];
    a[programIndex] = x * n + 1;
}
";
    let opts = FrontOptions {
        target: Target {
            program_count: 16,
            pointer_size: 4,
        },
        ..FrontOptions::default()
    };
    let front = driver::run_front("k.spmd", None, src.to_string(), &opts, Stage::Check);
    let m = driver::lower_for_target(&front, true, LegalTarget::Nyuzi).expect("lowers");
    let obj = compile(&m);
    let text = listing(&obj, Some(&front.sources));
    // Only the entry's part: the runtime routines compiled with it are not this
    // test's subject.
    let k = text
        .split("\n")
        .skip_while(|l| *l != "k:")
        .take_while(|l| *l == "k:" || !l.ends_with(':'))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(k);
}

#[test]
fn unlegalized_modules_give_diagnostics_not_panics() {
    // Without legalization, divisions, f64 arithmetic and reductions reach the code
    // generator: it must report them (E0903), never panic.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "spmd"))
        .collect();
    files.sort();
    let opts = FrontOptions {
        target: Target {
            program_count: 16,
            pointer_size: 4,
        },
        include_dirs: vec![dir.join("include")],
        ..FrontOptions::default()
    };
    let mut reported = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let front = driver::run_front("x.spmd", Some(path.clone()), text, &opts, Stage::Check);
        let Ok(m) = driver::lower_front(&front) else {
            continue;
        };
        if let Err(d) = compile_module(&m) {
            assert!(d
                .iter()
                .all(|d| d.code == crate::diag::codes::NOT_SUPPORTED_YET));
            reported += 1;
        }
    }
    assert!(reported > 0, "some example needs legalization");
}

#[test]
fn partial_masks_on_narrow_scatters_and_uniform_accesses_match_the_interpreter() {
    let src = "
    export void k(uniform int8 c[], uniform int16 h[], uniform bool f[], uniform int u[]) {
        int v = programIndex;
        if (v % 3 != 1) {
            c[(v * 7) % 16] = (int8)(v * 9 - 70);
            h[15 - v] = (int16)(v * -1234);
            f[v] = v % 2 == 0;
            u[0] = u[1] + 5;
            atomic_add_global(&u[2], 3);
        }
        if (v > 100) {
            u[3] = 77;
            atomic_add_global(&u[4], 1);
        }
    }";
    diff(
        src,
        "k",
        &[
            Arg::Buf(vec![0xaa; 16]),
            Arg::Buf(vec![0x55; 32]),
            Arg::Buf(vec![7; 16]),
            Arg::Buf(words_i32([1, 2, 3, 4, 5])),
        ],
    );
}

#[test]
fn partial_gangs_match_the_interpreter() {
    // A block of 11 threads: lanes 11..15 do not exist and must have no effect.
    let src = "
    export uniform int k(uniform float x[], uniform int out[], uniform int8 b[], uniform int cnt[]) {
        float v = x[programIndex];
        int r = v > 3.0 ? 1 : 2;
        out[programIndex] = r + (int)v;
        b[programIndex] = (int8)r;
        atomic_add_global(&cnt[0], 1);
        uniform int n = reduce_add(r);
        return n * 1000 + (any(v > 11.5) ? 100 : 0) + (all(v < 11.5) ? 10 : 0) + popcnt((int64)lanemask());
    }";
    let m = module_of(src);
    let args = [
        Arg::Buf(words_f32((0..16).map(|i| i as f32 + 0.5))),
        Arg::Buf(words_i32(vec![-1; 16])),
        Arg::Buf(vec![0x77; 16]),
        Arg::Buf(words_i32([0])),
    ];
    let want = run_interp_lanes(&m, "k", &args, 11);
    for misalign in [false, true] {
        let got = run_nyuzi_lanes(&m, "k", &args, misalign, 11);
        assert_eq!(got, want, "misalign={misalign}");
    }
}

#[test]
fn extract_outside_the_gang_stops_at_a_break() {
    let m = crate::ir::parse_module(
        "module lanes 16 ptr 4
function export @k(ptr, i32) -> i32 {
block0(v0: ptr, v1: i32):
    v2 = special lane_index
    v3 = extract v2, v1
    return v3
}
",
    )
    .expect("IR parses");
    let ok = try_run_nyuzi(&m, "k", &[Arg::Buf(vec![0; 4]), Arg::Val(5)], false, 16);
    assert_eq!(ok.map(|r| r.ret), Ok(Some(5)));
    for bad in [16u64, 0xffff_ffff] {
        let err = try_run_nyuzi(&m, "k", &[Arg::Buf(vec![0; 4]), Arg::Val(bad)], false, 16);
        assert_eq!(
            err.map_err(|f| f.kind),
            Err(sim::nyuzi::FaultKind::Breakpoint)
        );
    }
}

/// The listing of `text` with the scalar datapath off.
fn minimal_listing(text: &str) -> String {
    let m = crate::ir::parse_module(text).expect("IR parses");
    SCALARS.set(ScalarUse::Minimal);
    let l = listing(&compile(&m), None);
    SCALARS.set(ScalarUse::Analysis);
    l
}

#[test]
fn without_the_scalar_datapath_uniform_loop_work_runs_on_vectors() {
    // The counter and the accumulator of a uniform loop: vector adds and a vector
    // compare (whose mask is the branch's uniform bool); the result is lane 0.
    let text = "module lanes 16 ptr 4
function export @f(i32) -> i32 {
block0(v0: i32):
    v1 = iconst.i32 0
    jump block1(v1, v1)
block1(v2: i32, v3: i32):
    v4 = icmp slt v2, v0
    brif v4, block2, block3
block2:
    v6 = iadd v3, v2
    v7 = iconst.i32 1
    v8 = iadd v2, v7
    jump block1(v8, v6)
block3:
    return v3
}
";
    let vector = minimal_listing(text);
    let scalar = ir_listing(text);
    let count = |l: &str, pat: &str| l.lines().filter(|x| x.contains(pat)).count();
    assert!(count(&vector, "add_i v") >= 2, "{vector}");
    assert_eq!(count(&vector, "add_i s"), 0, "{vector}");
    assert!(
        count(&vector, "cmplt_i s") + count(&vector, "cmpgt_i s") >= 1,
        "{vector}"
    );
    assert!(count(&vector, "getlane") >= 1, "{vector}");
    assert!(count(&scalar, "add_i s") >= 2, "{scalar}");
    assert_eq!(count(&scalar, "add_i v"), 0, "{scalar}");
    let m = crate::ir::parse_module(text).expect("IR parses");
    for n in [0u64, 1, 7, 40] {
        let want = run_interp(&m, "f", &[Arg::Val(n)]);
        SCALARS.set(ScalarUse::Minimal);
        let got = run_nyuzi(&m, "f", &[Arg::Val(n)], false);
        SCALARS.set(ScalarUse::Analysis);
        assert_eq!(got, want, "n={n}");
    }
}

#[test]
fn without_the_scalar_datapath_results_match_the_interpreter() {
    // The operation, conversion and gang tests again, with every uniform operation,
    // select and loop-carried value computed in vector registers.
    SCALARS.set(ScalarUse::Minimal);
    every_native_integer_and_f32_operation_matches_the_interpreter();
    unary_ops_and_conversions_match_the_interpreter();
    masks_selects_and_lane_ops_match_the_interpreter();
    foreach_and_reductions_match_the_interpreter();
    misc_conversions_64bit_lanes_and_pressure_match_the_interpreter();
    partial_gangs_match_the_interpreter();
    uniform_atomics_match_the_interpreter();
    SCALARS.set(ScalarUse::Analysis);
}
