//! The reference interpreter on kernels built with `FuncBuilder`: launch geometry,
//! masks, memory faults, barriers, calls, limits, float semantics and `print`.

use sim::Dim3;
use smallvec::smallvec;
use spmdc::interp::{self, f32_arg, i32_arg, Launch, Limits, Memory, RuntimeError};
use spmdc::ir::builder::FuncBuilder;
use spmdc::ir::{
    BinaryOp, ConvOp, FuncRef, Function, GlobalData, InstData, IntCC, LaneOp, Linkage, Module,
    Scalar, SharedData, Signature, Space, SpecialReg, StackSlotData, TrapCode, Type, Value,
};
use spmdc::source::{FileId, Span};

const VI32: Type = Type::varying(Scalar::I32);
const VF32: Type = Type::varying(Scalar::F32);
const VPTR: Type = Type::varying(Scalar::Ptr);

/// Builds `module`'s function `name` with uniform `params`: `body` gets the builder
/// (positioned in the entry block) and the parameter values, and must terminate.
fn add_func(
    module: &mut Module,
    name: &str,
    sig: Signature,
    body: impl FnOnce(&mut FuncBuilder, &[Value]),
) -> FuncRef {
    let mut f = Function::new(name, Linkage::Export, sig.clone());
    let entry = f.create_block();
    let mut params: Vec<Value> = sig
        .params
        .iter()
        .map(|&t| f.append_block_param(entry, t))
        .collect();
    if sig.takes_mask {
        params.push(f.append_block_param(entry, Type::MASK));
    }
    let mut b = FuncBuilder::new(&mut f);
    b.switch_to(entry);
    body(&mut b, &params);
    module.functions.push(f)
}

fn sig(params: &[Type]) -> Signature {
    Signature {
        params: params.to_vec(),
        ret: None,
        takes_mask: false,
    }
}

fn special(b: &mut FuncBuilder, reg: SpecialReg) -> Value {
    b.value(InstData::Special { reg })
}

fn splat(b: &mut FuncBuilder, v: Value) -> Value {
    b.value(InstData::Splat { arg: v })
}

fn icmp(b: &mut FuncBuilder, cond: IntCC, x: Value, y: Value) -> Value {
    b.value(InstData::Icmp { cond, args: [x, y] })
}

fn conv(b: &mut FuncBuilder, op: ConvOp, v: Value, to: Scalar) -> Value {
    let varying = b.func.value_type(v).varying;
    b.value(InstData::Convert {
        op,
        arg: v,
        to: Type {
            scalar: to,
            varying,
        },
    })
}

fn lane_op(b: &mut FuncBuilder, op: LaneOp, args: &[Value]) -> Value {
    b.value(InstData::Lane {
        op,
        args: args.into(),
    })
}

/// `base + index * size` for a uniform pointer and an i32 index of either variability.
fn elem(b: &mut FuncBuilder, base: Value, index: Value, size: i64) -> Value {
    let varying = b.func.value_type(index).varying;
    let idx = conv(b, ConvOp::Sext, index, Scalar::Ptr);
    let sz = b.iconst(
        Type {
            scalar: Scalar::Ptr,
            varying,
        },
        size,
    );
    let off = b.binary(BinaryOp::Imul, idx, sz);
    let base = if varying { splat(b, base) } else { base };
    b.binary(BinaryOp::Iadd, base, off)
}

fn load(b: &mut FuncBuilder, ty: Type, space: Space, addr: Value, mask: Option<Value>) -> Value {
    b.value(InstData::Load {
        ty,
        space,
        addr,
        mask,
    })
}

fn store(b: &mut FuncBuilder, space: Space, addr: Value, value: Value, mask: Option<Value>) {
    b.ins(InstData::Store {
        space,
        addr,
        value,
        mask,
    });
}

/// The global linear thread index `block_idx.x * block_dim.x + thread_idx.x`.
fn global_index(b: &mut FuncBuilder) -> Value {
    let bi = special(b, SpecialReg::BlockIdxX);
    let bd = special(b, SpecialReg::BlockDimX);
    let t = special(b, SpecialReg::ThreadIdxX);
    let base = b.binary(BinaryOp::Imul, bi, bd);
    let base = splat(b, base);
    b.binary(BinaryOp::Iadd, base, t)
}

fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32s(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn run(
    module: &Module,
    f: FuncRef,
    launch: &Launch,
    mem: &mut Memory,
) -> Result<interp::Outcome, RuntimeError> {
    interp::run(module, f, launch, mem, Limits::default())
}

fn span(n: u32) -> Span {
    Span::new(FileId(0), n, n + 1)
}

/// `out[i] = a * x[i] + y[i]` for `i < n`, GPU style over a grid of partial blocks.
#[test]
fn saxpy_over_a_grid_with_a_partial_last_gang() {
    let mut m = Module::new(8, 8);
    let f = add_func(
        &mut m,
        "saxpy",
        sig(&[Type::I32, Type::uniform(Scalar::F32), Type::PTR, Type::PTR]),
        |b, p| {
            let i = global_index(b);
            let n = splat(b, p[0]);
            let inb = icmp(b, IntCC::Slt, i, n);
            let xa = elem(b, p[2], i, 4);
            let ya = elem(b, p[3], i, 4);
            let x = load(b, VF32, Space::Global, xa, Some(inb));
            let y = load(b, VF32, Space::Global, ya, Some(inb));
            let a = splat(b, p[1]);
            let ax = b.binary(BinaryOp::Fmul, a, x);
            let r = b.binary(BinaryOp::Fadd, ax, y);
            store(b, Space::Global, ya, r, Some(inb));
            b.ret(None);
        },
    );
    let n = 50;
    let mut mem = Memory::new();
    let xs: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let x = mem.add_buffer(xs, "x");
    let y = mem.add_buffer([0x00, 0x00, 0x80, 0x3f].repeat(n), "y");
    // 4 blocks of 20 threads: gangs of 8, 8 and 4 lanes; 80 threads for 50 elements.
    let launch = Launch::new(
        Dim3::new(4, 1, 1),
        Dim3::new(20, 1, 1),
        vec![i32_arg(n as i32), f32_arg(2.0), x, y],
    );
    let out = run(&m, f, &launch, &mut mem).unwrap();
    let ys = f32s(mem.buffer(y).unwrap());
    assert_eq!(ys, (0..n).map(|i| 2.0 * i as f32 + 1.0).collect::<Vec<_>>());
    assert_eq!(out.stats.blocks, 4);
    assert_eq!(out.stats.gangs, 12);
    assert_eq!(out.stats.loads, 100);
    assert_eq!(out.stats.stores, 50);
    // 25 instructions per gang; each of the 12 gangs once.
    assert_eq!(out.stats.dynamic_instructions, 12 * 25);
}

/// The unmasked store of a varying address: lanes past the block (which would write
/// out of bounds) do not exist and do nothing.
#[test]
fn lanes_past_the_block_never_access_memory() {
    let mut m = Module::new(16, 8);
    let f = add_func(&mut m, "iota", sig(&[Type::PTR]), |b, p| {
        let t = special(b, SpecialReg::ThreadIdxX);
        let a = elem(b, p[0], t, 4);
        store(b, Space::Global, a, t, None);
        b.ret(None);
    });
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0; 4 * 5], "buf");
    let launch = Launch::new(Dim3::ONE, Dim3::new(5, 1, 1), vec![buf]);
    let out = run(&m, f, &launch, &mut mem).unwrap();
    assert_eq!(i32s(mem.buffer(buf).unwrap()), vec![0, 1, 2, 3, 4]);
    assert_eq!(out.stats.stores, 5);
    // The 7 varying instructions (the store included) count the 5 existing lanes.
    assert_eq!(out.stats.lane_operations, 5 * 7);
}

/// thread_idx decomposes the linear index x-fastest; gang_index and lane_index follow.
#[test]
fn special_registers_in_a_3d_block() {
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "ids", sig(&[Type::PTR]), |b, p| {
        let x = special(b, SpecialReg::ThreadIdxX);
        let y = special(b, SpecialReg::ThreadIdxY);
        let z = special(b, SpecialReg::ThreadIdxZ);
        let g = special(b, SpecialReg::GangIndex);
        let l = special(b, SpecialReg::LaneIndex);
        let lc = special(b, SpecialReg::LaneCount);
        let gl = b.binary(BinaryOp::Imul, g, lc);
        let gl = splat(b, gl);
        let t = b.binary(BinaryOp::Iadd, gl, l);
        // code = x + 10*y + 100*z + 1000*block_idx.y
        let ten = b.iconst(VI32, 10);
        let hundred = b.iconst(VI32, 100);
        let y10 = b.binary(BinaryOp::Imul, y, ten);
        let z100 = b.binary(BinaryOp::Imul, z, hundred);
        let code = b.binary(BinaryOp::Iadd, x, y10);
        let code = b.binary(BinaryOp::Iadd, code, z100);
        let by = special(b, SpecialReg::BlockIdxY);
        let k = b.iconst(Type::I32, 1000);
        let by = b.binary(BinaryOp::Imul, by, k);
        let by = splat(b, by);
        let code = b.binary(BinaryOp::Iadd, code, by);
        // out[block_idx.y * 12 + t]
        let by = special(b, SpecialReg::BlockIdxY);
        let twelve = b.iconst(Type::I32, 12);
        let row = b.binary(BinaryOp::Imul, by, twelve);
        let row = splat(b, row);
        let idx = b.binary(BinaryOp::Iadd, row, t);
        let a = elem(b, p[0], idx, 4);
        store(b, Space::Global, a, code, None);
        b.ret(None);
    });
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0; 4 * 24], "buf");
    let launch = Launch::new(Dim3::new(1, 2, 1), Dim3::new(3, 2, 2), vec![buf]);
    run(&m, f, &launch, &mut mem).unwrap();
    let got = i32s(mem.buffer(buf).unwrap());
    let mut want = Vec::new();
    for by in 0..2 {
        for z in 0..2 {
            for y in 0..2 {
                for x in 0..3 {
                    want.push(x + 10 * y + 100 * z + 1000 * by);
                }
            }
        }
    }
    assert_eq!(got, want);
}

/// Masked-off lanes with wild addresses neither store nor fault; masked-off loads
/// yield 0.
#[test]
fn masked_off_lanes_do_not_store_or_trap() {
    let mut m = Module::new(8, 8);
    let f = add_func(&mut m, "masked", sig(&[Type::PTR]), |b, p| {
        let l = special(b, SpecialReg::LaneIndex);
        let three = b.iconst(VI32, 3);
        let on = icmp(b, IntCC::Slt, l, three);
        // Lanes >= 3 compute an index of 1000 + lane: far outside the buffer.
        let k = b.iconst(VI32, 1000);
        let far = b.binary(BinaryOp::Iadd, l, k);
        let idx = b.ins(InstData::Select { args: [on, l, far] }).unwrap();
        let a = elem(b, p[0], idx, 4);
        let v = load(b, VI32, Space::Global, a, Some(on));
        let hundred = b.iconst(VI32, 100);
        let v = b.binary(BinaryOp::Iadd, v, hundred);
        store(b, Space::Global, a, v, Some(on));
        b.ret(None);
    });
    let mut mem = Memory::new();
    let buf = mem.add_buffer(i32_bytes(&[1, 2, 3, 4]), "buf");
    run(&m, f, &Launch::single_gang(8, vec![buf]), &mut mem).unwrap();
    assert_eq!(i32s(mem.buffer(buf).unwrap()), vec![101, 102, 103, 4]);
}

/// Store to `buf[lane * stride]`: lane 2 is the first to leave a 2-element buffer.
fn out_of_bounds_kernel(stride: i64, size: i64) -> (Module, FuncRef) {
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "oob", sig(&[Type::PTR]), |b, p| {
        let l = special(b, SpecialReg::LaneIndex);
        let s = b.iconst(VI32, stride);
        let idx = b.binary(BinaryOp::Imul, l, s);
        let a = elem(b, p[0], idx, size);
        b.set_span(span(42));
        store(b, Space::Global, a, l, None);
        b.set_span(Span::default());
        b.ret(None);
    });
    (m, f)
}

#[test]
fn out_of_bounds_store_names_lane_span_function_and_address() {
    let (m, f) = out_of_bounds_kernel(1, 4);
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0; 8], "buf");
    let err = run(&m, f, &Launch::single_gang(4, vec![buf]), &mut mem).unwrap_err();
    assert_eq!(err.lane, Some(2));
    assert_eq!(err.span, Some(span(42)));
    assert_eq!(err.function.as_deref(), Some("oob"));
    assert_eq!(err.address, Some(buf + 8));
    assert_eq!(err.gang.map(|g| g.1), Some(0));
    assert!(err.message.contains("outside any live allocation"), "{err}");
    assert!(err.message.contains("`buf`"), "{err}");
    // Lanes 0 and 1 stored before lane 2 faulted.
    assert_eq!(i32s(mem.buffer(buf).unwrap()), vec![0, 1]);
    assert!(err.to_string().contains("lane 2"), "{err}");
}

#[test]
fn misaligned_access_is_an_error() {
    // i32 stores at byte offsets 0, 2, 4, ...: lane 1 is misaligned.
    let (m, f) = out_of_bounds_kernel(1, 2);
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0; 64], "buf");
    let err = run(&m, f, &Launch::single_gang(4, vec![buf]), &mut mem).unwrap_err();
    assert_eq!(err.lane, Some(1));
    assert_eq!(err.address, Some(buf + 2));
    assert!(err.message.contains("misaligned 4-byte access"), "{err}");
}

#[test]
fn null_and_wrong_space_accesses_are_errors() {
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "null", sig(&[Type::PTR]), |b, p| {
        let v = load(b, Type::I32, Space::Shared, p[0], None);
        let _ = v;
        b.ret(None);
    });
    let mut mem = Memory::new();
    let err = run(&m, f, &Launch::single_gang(4, vec![0]), &mut mem).unwrap_err();
    assert!(err.message.contains("null pointer"), "{err}");
    let buf = mem.add_buffer(vec![0; 4], "buf");
    let err = run(&m, f, &Launch::single_gang(4, vec![buf]), &mut mem).unwrap_err();
    assert!(
        err.message
            .contains("`shared` access to an address in global memory"),
        "{err}"
    );
}

/// A block of 64 threads with 16 lanes (4 gangs) reverses a buffer through shared
/// memory; without the barrier, gang 0 would read what no gang has written yet.
fn reversal(with_barrier: bool) -> (Module, FuncRef) {
    let mut m = Module::new(16, 8);
    let tile = m.shared.push(SharedData {
        name: "tile".into(),
        size: 64 * 4,
        align: 4,
        dynamic: false,
    });
    let f = add_func(&mut m, "reverse", sig(&[Type::PTR, Type::PTR]), |b, p| {
        let t = special(b, SpecialReg::ThreadIdxX);
        let src = elem(b, p[0], t, 4);
        let v = load(b, VI32, Space::Global, src, None);
        let sh = b.value(InstData::SharedAddr { shared: tile });
        let mine = elem(b, sh, t, 4);
        store(b, Space::Shared, mine, v, None);
        if with_barrier {
            b.ins(InstData::Barrier);
        }
        let last = b.iconst(VI32, 63);
        let r = b.binary(BinaryOp::Isub, last, t);
        let theirs = elem(b, sh, r, 4);
        let w = load(b, VI32, Space::Shared, theirs, None);
        let dst = elem(b, p[1], t, 4);
        store(b, Space::Global, dst, w, None);
        b.ret(None);
    });
    (m, f)
}

#[test]
fn barrier_synchronizes_the_gangs_of_a_block() {
    let input: Vec<i32> = (0..128).map(|i| i * 3 + 1).collect();
    for with_barrier in [true, false] {
        let (m, f) = reversal(with_barrier);
        let mut mem = Memory::new();
        let src = mem.add_buffer(i32_bytes(&input), "src");
        let dst = mem.add_buffer(vec![0; 128 * 4], "dst");
        let launch = Launch::new(Dim3::new(2, 1, 1), Dim3::new(64, 1, 1), vec![src, dst]);
        let out = run(&m, f, &launch, &mut mem).unwrap();
        let got = i32s(mem.buffer(dst).unwrap());
        // Block b reads src[t] (its own 64 elements start at 0: the kernel ignores
        // block_idx), so both blocks write the reversal of src[0..64] to dst[0..64].
        let want: Vec<i32> = (0..64).map(|t| input[63 - t]).collect();
        if with_barrier {
            assert_eq!(&got[..64], &want[..]);
            assert_eq!(out.stats.barriers, 2, "one release per block");
        } else {
            assert_ne!(&got[..64], &want[..]);
            // Gang 0 ran to completion before gangs 1-3 stored: it read zeros.
            assert_eq!(&got[..16], &[0; 16]);
            assert_eq!(out.stats.barriers, 0);
        }
    }
}

#[test]
fn gangs_waiting_at_different_barriers_deadlock() {
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "split", sig(&[]), |b, _| {
        let g = special(b, SpecialReg::GangIndex);
        let zero = b.iconst(Type::I32, 0);
        let is0 = icmp(b, IntCC::Eq, g, zero);
        let (b1, b2) = (b.create_block(), b.create_block());
        b.brif(is0, b1, &[], b2, &[]);
        for blk in [b1, b2] {
            b.switch_to(blk);
            b.set_span(span(if blk == b1 { 10 } else { 20 }));
            b.ins(InstData::Barrier);
            b.ret(None);
        }
    });
    let mut mem = Memory::new();
    let launch = Launch::new(Dim3::ONE, Dim3::new(8, 1, 1), vec![]);
    let err = run(&m, f, &launch, &mut mem).unwrap_err();
    assert!(err.message.starts_with("barrier deadlock"), "{err}");
    assert_eq!(err.span, Some(span(10)));
    assert_eq!(err.gang.map(|g| g.1), Some(0));
}

/// Gang 0 returns early; the others synchronize without it.
#[test]
fn returned_gangs_no_longer_count_at_a_barrier() {
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "early", sig(&[Type::PTR]), |b, p| {
        let g = special(b, SpecialReg::GangIndex);
        let zero = b.iconst(Type::I32, 0);
        let is0 = icmp(b, IntCC::Eq, g, zero);
        let (done, rest) = (b.create_block(), b.create_block());
        b.brif(is0, done, &[], rest, &[]);
        b.switch_to(done);
        b.ret(None);
        b.switch_to(rest);
        b.ins(InstData::Barrier);
        let t = special(b, SpecialReg::ThreadIdxX);
        let a = elem(b, p[0], t, 4);
        store(b, Space::Global, a, t, None);
        b.ins(InstData::Barrier);
        b.ret(None);
    });
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0xff; 12 * 4], "buf");
    let launch = Launch::new(Dim3::ONE, Dim3::new(12, 1, 1), vec![buf]);
    let out = run(&m, f, &launch, &mut mem).unwrap();
    let got = i32s(mem.buffer(buf).unwrap());
    assert_eq!(&got[..4], &[-1; 4]);
    assert_eq!(&got[4..], &[4, 5, 6, 7, 8, 9, 10, 11]);
    assert_eq!(out.stats.barriers, 2);
}

#[test]
fn step_limit_stops_an_infinite_loop() {
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "spin", sig(&[]), |b, _| {
        let lp = b.create_block();
        b.jump(lp, &[]);
        b.switch_to(lp);
        b.set_span(span(7));
        b.jump(lp, &[]);
    });
    let limits = Limits {
        max_steps: 1000,
        ..Limits::default()
    };
    let err = interp::run(
        &m,
        f,
        &Launch::single_gang(4, vec![]),
        &mut Memory::new(),
        limits,
    )
    .unwrap_err();
    assert_eq!(err.message, "step limit of 1000 instructions exceeded");
    assert_eq!(err.span, Some(span(7)));
}

/// `fact(n) = n <= 1 ? 1 : n * fact(n - 1)`, uniform and recursive.
fn factorial_module() -> (Module, FuncRef, FuncRef) {
    let mut m = Module::new(4, 8);
    let fact_sig = Signature {
        params: vec![Type::I32],
        ret: Some(Type::I32),
        takes_mask: false,
    };
    let fact = FuncRef::from_u32(0);
    add_func(&mut m, "fact", fact_sig, |b, p| {
        let one = b.iconst(Type::I32, 1);
        let small = icmp(b, IntCC::Sle, p[0], one);
        let (base, rec) = (b.create_block(), b.create_block());
        b.brif(small, base, &[], rec, &[]);
        b.switch_to(base);
        b.ret(Some(one));
        b.switch_to(rec);
        let n1 = b.binary(BinaryOp::Isub, p[0], one);
        let r = b.call(fact, Some(Type::I32), smallvec![n1], None).unwrap();
        let prod = b.binary(BinaryOp::Imul, p[0], r);
        b.ret(Some(prod));
    });
    let main = add_func(&mut m, "main", sig(&[Type::I32, Type::PTR]), |b, p| {
        let r = b
            .call(fact, Some(Type::I32), smallvec![p[0]], None)
            .unwrap();
        store(b, Space::Global, p[1], r, None);
        b.ret(None);
    });
    (m, fact, main)
}

#[test]
fn recursion_and_the_call_depth_limit() {
    let (m, _, main) = factorial_module();
    let mut mem = Memory::new();
    let out = mem.add_buffer(vec![0; 4], "out");
    let stats = run(&m, main, &Launch::single_gang(4, vec![10, out]), &mut mem)
        .unwrap()
        .stats;
    assert_eq!(i32s(mem.buffer(out).unwrap()), vec![3628800]);
    assert_eq!(stats.calls, 10);
    let limits = Limits {
        max_call_depth: 50,
        ..Limits::default()
    };
    let err = interp::run(
        &m,
        main,
        &Launch::single_gang(4, vec![100, out]),
        &mut mem,
        limits,
    )
    .unwrap_err();
    assert!(err.message.contains("call depth limit of 50"), "{err}");
    assert_eq!(err.function.as_deref(), Some("fact"));
}

/// A masked callee stores only under the mask it receives.
#[test]
fn masked_callee_gets_the_callers_mask() {
    let mut m = Module::new(8, 8);
    let callee_sig = Signature {
        params: vec![Type::PTR],
        ret: None,
        takes_mask: true,
    };
    let callee = add_func(&mut m, "fill", callee_sig, |b, p| {
        let l = special(b, SpecialReg::LaneIndex);
        let a = elem(b, p[0], l, 4);
        let seven = b.iconst(VI32, 7);
        store(b, Space::Global, a, seven, Some(p[1]));
        b.ret(None);
    });
    let f = add_func(&mut m, "main", sig(&[Type::PTR]), |b, p| {
        let l = special(b, SpecialReg::LaneIndex);
        let two = b.iconst(VI32, 2);
        let one = b.iconst(VI32, 1);
        let bit = b.binary(BinaryOp::Band, l, one);
        let zero = b.iconst(VI32, 0);
        let even = icmp(b, IntCC::Eq, bit, zero);
        let ge2 = icmp(b, IntCC::Sge, l, two);
        let mask = b.binary(BinaryOp::Band, even, ge2);
        b.call(callee, None, smallvec![p[0]], Some(mask));
        b.ret(None);
    });
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0; 8 * 4], "buf");
    run(&m, f, &Launch::single_gang(8, vec![buf]), &mut mem).unwrap();
    assert_eq!(i32s(mem.buffer(buf).unwrap()), vec![0, 0, 7, 0, 7, 0, 7, 0]);
}

/// Stores one f32 computed by `body` from a uniform parameter.
fn eval_f32(body: impl FnOnce(&mut FuncBuilder, Value) -> Value, x: f32) -> f32 {
    let mut m = Module::new(4, 8);
    let f = add_func(
        &mut m,
        "eval",
        sig(&[Type::uniform(Scalar::F32), Type::PTR]),
        |b, p| {
            let r = body(b, p[0]);
            store(b, Space::Global, p[1], r, None);
            b.ret(None);
        },
    );
    let mut mem = Memory::new();
    let out = mem.add_buffer(vec![0; 4], "out");
    run(
        &m,
        f,
        &Launch::single_gang(4, vec![f32_arg(x), out]),
        &mut mem,
    )
    .unwrap();
    f32s(mem.buffer(out).unwrap())[0]
}

#[test]
fn f32_operations_round_in_f32() {
    // (1e8f + 1f) - 1e8f is 0 in f32 (it would be 1 in f64).
    let r = eval_f32(
        |b, x| {
            let one = b.fconst(Type::uniform(Scalar::F32), 1.0);
            let s = b.binary(BinaryOp::Fadd, x, one);
            b.binary(BinaryOp::Fsub, s, x)
        },
        1e8,
    );
    assert_eq!(r, 0.0);
    // An f32 constant is rounded to f32 once: 0.1 stays the f32 nearest 0.1.
    let r = eval_f32(
        |b, x| {
            let c = b.fconst(Type::uniform(Scalar::F32), 0.1);
            b.binary(BinaryOp::Fmul, x, c)
        },
        3.0,
    );
    assert_eq!(r, 3.0f32 * 0.1f32);
    // Through f64 and back: promote, divide in f64, demote.
    let r = eval_f32(
        |b, x| {
            let d = conv(b, ConvOp::Fpromote, x, Scalar::F64);
            let three = b.fconst(Type::uniform(Scalar::F64), 3.0);
            let q = b.binary(BinaryOp::Fdiv, d, three);
            conv(b, ConvOp::Fdemote, q, Scalar::F32)
        },
        1.0,
    );
    assert_eq!(r, (1.0f64 / 3.0) as f32);
    let r = eval_f32(
        |b, x| {
            b.value(InstData::Unary {
                op: spmdc::ir::UnaryOp::Sqrt,
                arg: x,
            })
        },
        2.0,
    );
    assert_eq!(r, 2.0f32.sqrt());
}

/// Stores one i32 computed by `body` from two uniform i32 parameters.
fn eval_i32(
    body: impl FnOnce(&mut FuncBuilder, Value, Value) -> Value,
    x: i32,
    y: i32,
) -> Result<i32, RuntimeError> {
    let mut m = Module::new(4, 8);
    let f = add_func(
        &mut m,
        "eval",
        sig(&[Type::I32, Type::I32, Type::PTR]),
        |b, p| {
            let r = body(b, p[0], p[1]);
            store(b, Space::Global, p[2], r, None);
            b.ret(None);
        },
    );
    let mut mem = Memory::new();
    let out = mem.add_buffer(vec![0; 4], "out");
    let args = vec![i32_arg(x), i32_arg(y), out];
    run(&m, f, &Launch::single_gang(4, args), &mut mem)?;
    Ok(i32s(mem.buffer(out).unwrap())[0])
}

#[test]
fn every_binary_integer_opcode() {
    use BinaryOp::*;
    let cases: &[(BinaryOp, i32, i32, i32)] = &[
        (Iadd, i32::MAX, 1, i32::MIN),
        (Isub, i32::MIN, 1, i32::MAX),
        (Imul, 0x10000, 0x10000, 0),
        (Sdiv, -7, 2, -3),
        (Udiv, -1, 2, i32::MAX),
        (Srem, -7, 2, -1),
        (Urem, -1, 10, 5),
        (Band, 12, 10, 8),
        (Bor, 12, 10, 14),
        (Bxor, 12, 10, 6),
        (Ishl, 1, 33, 2),
        (Sshr, -8, 1, -4),
        (Ushr, -8, 28, 15),
        (Smin, -1, 1, -1),
        (Smax, -1, 1, 1),
        (Umin, -1, 1, 1),
        (Umax, -1, 1, -1),
    ];
    for &(op, x, y, want) in cases {
        let got = eval_i32(|b, x, y| b.binary(op, x, y), x, y).unwrap();
        assert_eq!(got, want, "{op:?} {x} {y}");
    }
    let icmps: &[(IntCC, i32, i32, i32)] = &[
        (IntCC::Eq, 3, 3, 1),
        (IntCC::Ne, 3, 3, 0),
        (IntCC::Slt, -1, 0, 1),
        (IntCC::Ult, -1, 0, 0),
        (IntCC::Sge, 0, -1, 1),
        (IntCC::Ugt, -1, 0, 1),
    ];
    for &(cc, x, y, want) in icmps {
        let got = eval_i32(
            |b, x, y| {
                let c = icmp(b, cc, x, y);
                conv(b, ConvOp::Zext, c, Scalar::I32)
            },
            x,
            y,
        )
        .unwrap();
        assert_eq!(got, want, "{cc:?} {x} {y}");
    }
}

#[test]
fn division_by_zero_traps_only_in_existing_lanes() {
    let err = eval_i32(|b, x, y| b.binary(BinaryOp::Sdiv, x, y), 1, 0).unwrap_err();
    assert!(
        err.message.contains("division or remainder by zero"),
        "{err}"
    );
    // A varying division whose zero divisor sits in a lane past the block's end.
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "div", sig(&[Type::PTR]), |b, p| {
        let l = special(b, SpecialReg::LaneIndex);
        let three = b.iconst(VI32, 3);
        let d = b.binary(BinaryOp::Isub, three, l); // 3, 2, 1, 0
        let twelve = b.iconst(VI32, 12);
        let q = b.binary(BinaryOp::Sdiv, twelve, d);
        let a = elem(b, p[0], l, 4);
        store(b, Space::Global, a, q, None);
        b.ret(None);
    });
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0; 12], "buf");
    let launch = Launch::new(Dim3::ONE, Dim3::new(3, 1, 1), vec![buf]);
    run(&m, f, &launch, &mut mem).unwrap();
    assert_eq!(i32s(mem.buffer(buf).unwrap()), vec![4, 6, 12]);
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0; 16], "buf");
    let err = run(&m, f, &Launch::single_gang(4, vec![buf]), &mut mem).unwrap_err();
    assert_eq!(err.lane, Some(3));
}

/// Cross-lane operations through the whole interpreter, with a partial mask and a
/// partial gang: 6 threads of 8 lanes, mask = lanes 1, 2, 4, 5 (and 7, which does not
/// exist).
#[test]
fn cross_lane_ops_with_partial_masks() {
    let mut m = Module::new(8, 8);
    let f = add_func(&mut m, "lanes", sig(&[Type::PTR]), |b, p| {
        let l = special(b, SpecialReg::LaneIndex);
        let ten = b.iconst(VI32, 10);
        let v = b.binary(BinaryOp::Iadd, l, ten); // 10, 11, ..., 17
        let three = b.iconst(VI32, 3);
        let r = b.value(InstData::Binary {
            op: BinaryOp::Urem,
            args: [l, three],
        });
        let zero = b.iconst(VI32, 0);
        let mask = icmp(b, IntCC::Ne, r, zero); // lanes 1,2,4,5,7
        let ballot = lane_op(b, LaneOp::Ballot, &[mask]);
        let any = lane_op(b, LaneOp::Any, &[mask]);
        let all = lane_op(b, LaneOp::All, &[mask]);
        let eq = lane_op(b, LaneOp::ReduceEqual, &[r, mask]);
        let results = [
            lane_op(b, LaneOp::ReduceAdd, &[v, mask]),
            lane_op(b, LaneOp::ReduceMin, &[v, mask]),
            lane_op(b, LaneOp::ReduceMax, &[v, mask]),
            conv(b, ConvOp::Ireduce, ballot, Scalar::I32),
            lane_op(b, LaneOp::FirstLane, &[mask]),
            conv(b, ConvOp::Zext, any, Scalar::I32),
            conv(b, ConvOp::Zext, all, Scalar::I32),
            conv(b, ConvOp::Zext, eq, Scalar::I32),
        ];
        for (k, &x) in results.iter().enumerate() {
            let i = b.iconst(Type::I32, k as i64);
            let a = elem(b, p[0], i, 4);
            store(b, Space::Global, a, x, None);
        }
        let scan = lane_op(b, LaneOp::ScanAdd, &[v, mask]);
        let one = b.iconst(Type::I32, 1);
        let rot = lane_op(b, LaneOp::Rotate, &[v, one]);
        let sh = lane_op(b, LaneOp::Shift, &[v, one]);
        let two = b.iconst(Type::I32, 2);
        let ex = lane_op(b, LaneOp::Extract, &[v, two]);
        let x99 = b.iconst(Type::I32, 99);
        let ins = lane_op(b, LaneOp::Insert, &[v, two, x99]);
        let seven = b.iconst(VI32, 7);
        let rev = b.binary(BinaryOp::Isub, seven, l);
        let shuf = lane_op(b, LaneOp::Shuffle, &[v, rev]);
        let k2 = b.iconst(VI32, 2);
        let twice = b.binary(BinaryOp::Imul, l, k2);
        let hundred = b.iconst(VI32, 100);
        let w = b.binary(BinaryOp::Iadd, l, hundred);
        let shuf2 = lane_op(b, LaneOp::Shuffle2, &[v, w, twice]);
        for (row, &x) in [scan, rot, sh, ins, shuf, shuf2].iter().enumerate() {
            let lanes8 = b.iconst(VI32, 8 * (row as i64 + 1));
            let idx = b.binary(BinaryOp::Iadd, l, lanes8);
            let a = elem(b, p[0], idx, 4);
            store(b, Space::Global, a, x, None);
        }
        let i = b.iconst(Type::I32, 56);
        let a = elem(b, p[0], i, 4);
        store(b, Space::Global, a, ex, None);
        b.ret(None);
    });
    let mut mem = Memory::new();
    let buf = mem.add_buffer(vec![0; 8 * 8 * 4], "buf");
    let launch = Launch::new(Dim3::ONE, Dim3::new(6, 1, 1), vec![buf]);
    run(&m, f, &launch, &mut mem).unwrap();
    let got = i32s(mem.buffer(buf).unwrap());
    // Active: lanes 1, 2, 4, 5 holding 11, 12, 14, 15.
    // Lane 7 would be in the mask but does not exist.
    assert_eq!(&got[..8], &[52, 11, 15, 0b110110, 1, 1, 0, 0]);
    assert_eq!(got[56], 12, "extract lane 2");
    let row = |r: usize| &got[8 * r..8 * r + 6];
    assert_eq!(row(1), &[0, 0, 11, 23, 23, 37], "exclusive scan_add");
    assert_eq!(row(2), &[11, 12, 13, 14, 15, 16], "rotate by 1");
    assert_eq!(row(3), &[11, 12, 13, 14, 15, 16], "shift by 1");
    assert_eq!(row(4), &[10, 11, 99, 13, 14, 15], "insert");
    assert_eq!(row(5), &[17, 16, 15, 14, 13, 12], "shuffle");
    assert_eq!(row(6), &[10, 12, 14, 16, 100, 102], "shuffle2");
}

/// Every lane adds 1 to one counter: each gets the value before its own add, in lane
/// order; then a conflicting scatter leaves the highest lane's value.
#[test]
fn atomics_and_conflicting_scatters_go_in_lane_order() {
    let mut m = Module::new(8, 8);
    let f = add_func(&mut m, "count", sig(&[Type::PTR, Type::PTR]), |b, p| {
        let one = b.iconst(VI32, 1);
        let old = b.value(InstData::AtomicRmw {
            op: spmdc::ir::AtomicOp::Add,
            space: Space::Global,
            addr: p[0],
            value: one,
            mask: None,
        });
        let l = special(b, SpecialReg::LaneIndex);
        let a = elem(b, p[1], l, 4);
        store(b, Space::Global, a, old, None);
        let same = splat(b, p[0]);
        let four = b.iconst(VPTR, 4);
        let over = b.binary(BinaryOp::Iadd, same, four);
        store(b, Space::Global, over, l, None);
        b.ret(None);
    });
    let mut mem = Memory::new();
    let counter = mem.add_buffer(i32_bytes(&[5, 0]), "counter");
    let olds = mem.add_buffer(vec![0; 32], "olds");
    let out = run(
        &m,
        f,
        &Launch::single_gang(8, vec![counter, olds]),
        &mut mem,
    )
    .unwrap();
    assert_eq!(i32s(mem.buffer(counter).unwrap()), vec![13, 7]);
    assert_eq!(i32s(mem.buffer(olds).unwrap()), (5..13).collect::<Vec<_>>());
    assert_eq!(out.stats.atomics, 8);
}

/// A stack slot holds a varying value (lane i's element at base + 4i, stored through
/// per-lane addresses); its address is dead once the frame pops.
#[test]
fn stack_slots_live_as_long_as_their_frame() {
    let mut m = Module::new(4, 8);
    let leak_sig = Signature {
        params: vec![Type::PTR],
        ret: Some(Type::PTR),
        takes_mask: false,
    };
    let leak = add_func(&mut m, "leak", leak_sig, |b, p| {
        b.func
            .stack_slots
            .push(StackSlotData { size: 16, align: 4 });
        let ss = b.value(InstData::StackAddr {
            slot: spmdc::ir::StackSlot::from_u32(0),
        });
        let l = special(b, SpecialReg::LaneIndex);
        let k = b.iconst(VI32, 5);
        let v = b.binary(BinaryOp::Imul, l, k);
        let four = b.iconst(VI32, 4);
        let offset = b.binary(BinaryOp::Imul, l, four);
        let offset = b.value(InstData::Convert {
            op: spmdc::ir::ConvOp::Sext,
            arg: offset,
            to: Type::varying(spmdc::ir::Scalar::Ptr),
        });
        let base = b.value(InstData::Splat { arg: ss });
        let lanes = b.binary(BinaryOp::Iadd, base, offset);
        store(b, Space::Private, lanes, v, None);
        // Lane 3's element, read back as a uniform i32 at ss + 12.
        let twelve = b.iconst(Type::PTR, 12);
        let a3 = b.binary(BinaryOp::Iadd, ss, twelve);
        let x = load(b, Type::I32, Space::Private, a3, None);
        let y = load(b, VI32, Space::Private, lanes, None);
        let all = b.iconst(Type::MASK, 1);
        let s = lane_op(b, LaneOp::ReduceAdd, &[y, all]);
        let both = b.binary(BinaryOp::Iadd, x, s);
        store(b, Space::Global, p[0], both, None);
        b.ret(Some(ss));
    });
    let f = add_func(&mut m, "main", sig(&[Type::PTR]), |b, p| {
        let ss = b
            .call(leak, Some(Type::PTR), smallvec![p[0]], None)
            .unwrap();
        b.set_span(span(99));
        let _ = load(b, Type::I32, Space::Private, ss, None);
        b.ret(None);
    });
    let mut mem = Memory::new();
    let out = mem.add_buffer(vec![0; 4], "out");
    let err = run(&m, f, &Launch::single_gang(4, vec![out]), &mut mem).unwrap_err();
    assert!(err.message.contains("outside any live allocation"), "{err}");
    assert_eq!(err.span, Some(span(99)));
    assert_eq!(err.address, Some(interp::PRIVATE_BASE));
    // The callee ran before the fault: lane 3's 15 plus the sum 0 + 5 + 10 + 15.
    assert_eq!(i32s(mem.buffer(out).unwrap()), vec![45]);
}

#[test]
fn globals_are_initialized_and_constants_are_read_only() {
    let mut m = Module::new(4, 8);
    let table = m.globals.push(GlobalData {
        name: "table".into(),
        size: 16,
        align: 4,
        init: i32_bytes(&[3, 1, 4]),
        relocs: vec![],
        constant: true,
    });
    let counter = m.globals.push(GlobalData {
        name: "counter".into(),
        size: 4,
        align: 4,
        init: vec![],
        relocs: vec![],
        constant: false,
    });
    let f = add_func(&mut m, "sum", sig(&[Type::I32]), |b, p| {
        let t = b.value(InstData::GlobalAddr { global: table });
        let l = special(b, SpecialReg::LaneIndex);
        let a = elem(b, t, l, 4);
        let v = load(b, VI32, Space::Param, a, None);
        let all = b.iconst(Type::MASK, 1);
        let s = lane_op(b, LaneOp::ReduceAdd, &[v, all]);
        let c = b.value(InstData::GlobalAddr { global: counter });
        let old = load(b, Type::I32, Space::Global, c, None);
        let new = b.binary(BinaryOp::Iadd, old, s);
        store(b, Space::Global, c, new, None);
        // Store to the constant table when asked to.
        let zero = b.iconst(Type::I32, 0);
        let bad = icmp(b, IntCC::Ne, p[0], zero);
        let (yes, no) = (b.create_block(), b.create_block());
        b.brif(bad, yes, &[], no, &[]);
        b.switch_to(yes);
        store(b, Space::Global, t, zero, None);
        b.ret(None);
        b.switch_to(no);
        b.ret(None);
    });
    let mut mem = Memory::new();
    for _ in 0..2 {
        run(&m, f, &Launch::single_gang(4, vec![0]), &mut mem).unwrap();
    }
    let c = mem.global_address(counter).unwrap();
    assert_eq!(
        i32s(mem.buffer(c).unwrap()),
        vec![16],
        "kept across launches"
    );
    let err = run(&m, f, &Launch::single_gang(4, vec![1]), &mut mem).unwrap_err();
    assert!(err.message.contains("store to constant `table`"), "{err}");
}

#[test]
fn print_follows_ispc() {
    let mut m = Module::new(4, 8);
    m.strings.push("i = %, x = %\n".into());
    m.strings.push("small: %, flag %\n".into());
    m.strings.push("never %\n".into());
    let f = add_func(&mut m, "show", sig(&[Type::I32, Type::PTR]), |b, p| {
        let l = special(b, SpecialReg::LaneIndex);
        let fl = conv(b, ConvOp::FcvtFromSint, l, Scalar::F32);
        b.ins(InstData::Print {
            format: spmdc::ir::StrConst::from_u32(0),
            args: smallvec![p[0], fl],
            mask: None,
        });
        let two = b.fconst(VF32, 2.0);
        let small = b.value(InstData::Fcmp {
            cond: spmdc::ir::FloatCC::Lt,
            args: [fl, two],
        });
        b.ins(InstData::Print {
            format: spmdc::ir::StrConst::from_u32(1),
            args: smallvec![fl, small],
            mask: Some(small),
        });
        let none = b.iconst(Type::MASK, 0);
        b.ins(InstData::Print {
            format: spmdc::ir::StrConst::from_u32(2),
            args: smallvec![p[1]],
            mask: Some(none),
        });
        b.ret(None);
    });
    let out = run(
        &m,
        f,
        &Launch::single_gang(4, vec![i32_arg(-10), 0]),
        &mut Memory::new(),
    )
    .unwrap();
    assert_eq!(
        out.output,
        "i = -10, x = [0.000000,1.000000,2.000000,3.000000]\n\
         small: [0.000000,1.000000,((2.000000)),((3.000000))], \
         flag [true,true,_________,_________]\n"
    );
    // A partial gang: the missing lane prints as off.
    let launch = Launch::new(Dim3::ONE, Dim3::new(3, 1, 1), vec![i32_arg(1), 0]);
    let out = run(&m, f, &launch, &mut Memory::new()).unwrap();
    assert!(
        out.output
            .starts_with("i = 1, x = [0.000000,1.000000,2.000000,((3.000000))]\n"),
        "{}",
        out.output
    );
}

#[test]
fn traps_and_malformed_launches_are_errors() {
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "boom", sig(&[]), |b, _| {
        b.set_span(span(3));
        b.ins(InstData::Trap {
            code: TrapCode::AssertFailed,
        });
    });
    let err = run(&m, f, &Launch::single_gang(4, vec![]), &mut Memory::new()).unwrap_err();
    assert_eq!(err.message, "assertion failed");
    assert_eq!(err.span, Some(span(3)));
    let err = run(&m, f, &Launch::single_gang(4, vec![1]), &mut Memory::new()).unwrap_err();
    assert!(err.message.contains("takes 0 arguments"), "{err}");
    // A block without a terminator is reported before anything runs.
    let g = add_func(&mut m, "open", sig(&[]), |b, _| {
        b.iconst(Type::I32, 1);
    });
    let err = run(&m, g, &Launch::single_gang(4, vec![]), &mut Memory::new()).unwrap_err();
    assert!(err.message.starts_with("malformed IR"), "{err}");
    assert_eq!(err.function.as_deref(), Some("open"));
}

/// Loop-carried block parameters swap each iteration (a parallel copy).
#[test]
fn block_parameters_are_a_parallel_copy() {
    let r = eval_i32(
        |b, x, y| {
            let lp = b.create_block();
            let a = b.func.append_block_param(lp, Type::I32);
            let c = b.func.append_block_param(lp, Type::I32);
            let n = b.func.append_block_param(lp, Type::I32);
            let three = b.iconst(Type::I32, 3);
            b.jump(lp, &[x, y, three]);
            b.switch_to(lp);
            let one = b.iconst(Type::I32, 1);
            let n1 = b.binary(BinaryOp::Isub, n, one);
            let zero = b.iconst(Type::I32, 0);
            let more = icmp(b, IntCC::Sgt, n1, zero);
            let exit = b.create_block();
            let res = b.func.append_block_param(exit, Type::I32);
            b.brif(more, lp, &[c, a, n1], exit, &[a]);
            b.switch_to(exit);
            res
        },
        1,
        2,
    )
    .unwrap();
    // (1,2) -> (2,1) -> (1,2): the loop body runs 3 times, swapping twice.
    assert_eq!(r, 1);
}

/// `atomic_cas` lane by lane on one location: only the lane that finds the expected
/// value swaps; every lane gets what it found.
#[test]
fn compare_and_swap_in_lane_order() {
    let mut m = Module::new(4, 8);
    let f = add_func(&mut m, "cas", sig(&[Type::PTR, Type::PTR]), |b, p| {
        let l = special(b, SpecialReg::LaneIndex);
        let ten = b.iconst(VI32, 10);
        let expected = b.binary(BinaryOp::Iadd, l, ten); // 10, 11, 12, 13
        let one = b.iconst(VI32, 1);
        let replacement = b.binary(BinaryOp::Iadd, expected, one);
        let found = b.value(InstData::AtomicCas {
            space: Space::Global,
            addr: p[0],
            expected,
            replacement,
            mask: None,
        });
        let a = elem(b, p[1], l, 4);
        store(b, Space::Global, a, found, None);
        b.ret(None);
    });
    let mut mem = Memory::new();
    let cell = mem.add_buffer(i32_bytes(&[10]), "cell");
    let found = mem.add_buffer(vec![0; 16], "found");
    run(&m, f, &Launch::single_gang(4, vec![cell, found]), &mut mem).unwrap();
    // Each lane finds its predecessor's replacement: the chain 10 -> 11 -> 12 -> 13 -> 14.
    assert_eq!(i32s(mem.buffer(found).unwrap()), vec![10, 11, 12, 13]);
    assert_eq!(i32s(mem.buffer(cell).unwrap()), vec![14]);
}

/// Kernels can be written as IR text (`ir::parse`).
#[test]
fn runs_a_module_parsed_from_text() {
    let text = "module lanes 4 ptr 8
string str0 \"sum %, lanes %\\n\"

function export @k(i32) {
block0(v0: i32):
    v1 = special lane_index
    v2 = splat v0
    v3 = icmp slt v1, v2
    v4 = reduce_add v1, v3
    print str0(v4, v1) mask v3
    return
}
";
    let m = spmdc::ir::parse::parse_module(text).expect("valid IR text");
    let f = m.function_by_name("k").unwrap();
    let out = run(&m, f, &Launch::single_gang(4, vec![3]), &mut Memory::new()).unwrap();
    assert_eq!(out.output, "sum 3, lanes [0,1,2,((3))]\n");
}
