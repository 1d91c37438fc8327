//! The IR's textual form and verifier: the corpus in `tests/ir/` round-trips and
//! verifies, every file of `tests/ir/invalid/` gives its expected error, random
//! well-formed functions verify and round-trip, and mutated text never panics.

use std::path::PathBuf;

use spmdc::ir::{parse_module, verify_module, write};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/ir")
}

/// The `.ir` files directly in `dir`, sorted.
fn ir_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    files
}

fn print(m: &spmdc::ir::Module) -> String {
    write::module_to_string(m)
}

#[test]
fn corpus_round_trips() {
    for path in ir_files(&corpus_dir()) {
        let text = std::fs::read_to_string(&path).unwrap();
        let module = parse_module(&text).unwrap_or_else(|e| {
            let list: Vec<String> = e.iter().map(|e| e.to_string()).collect();
            panic!("{}: {}", path.display(), list.join("\n"))
        });
        if let Err(errors) = verify_module(&module) {
            let list: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            panic!("{} does not verify:\n{}", path.display(), list.join("\n"));
        }
        // The corpus is written as the printer prints, comments aside.
        let printed = print(&module);
        assert_eq!(printed, without_comment_lines(&text), "{}", path.display());
        let again = parse_module(&printed).expect("printed text parses");
        assert_eq!(print(&again), printed, "{}", path.display());
    }
}

fn without_comment_lines(text: &str) -> String {
    let lines = text.lines().filter(|l| !l.trim_start().starts_with(';'));
    lines.map(|l| format!("{l}\n")).collect()
}

/// Every message for `text`: its parse errors, or else its verifier errors.
fn error_messages(text: &str) -> Vec<String> {
    match parse_module(text) {
        Err(errors) => errors.iter().map(|e| e.to_string()).collect(),
        Ok(module) => match verify_module(&module) {
            Err(errors) => errors.iter().map(|e| e.to_string()).collect(),
            Ok(()) => Vec::new(),
        },
    }
}

#[test]
fn invalid_corpus_gives_expected_errors() {
    let files = ir_files(&corpus_dir().join("invalid"));
    assert!(files.len() >= 25, "only {} invalid files", files.len());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let expected = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("; error: "))
            .unwrap_or_else(|| panic!("{}: first line must be `; error: ...`", path.display()));
        let messages = error_messages(&text);
        assert!(
            messages.iter().any(|m| m.contains(expected)),
            "{}: expected an error containing {expected:?}, got:\n{}",
            path.display(),
            messages.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------------------
// Random well-formed functions.

mod gen {
    //! Builds random well-formed modules from a stream of choices (proptest shrinks the
    //! stream toward zeros, which means fewer blocks and fewer instructions).

    use smallvec::SmallVec;
    use spmdc::ir::builder::FuncBuilder;
    use spmdc::ir::*;

    /// A stream of choices; zeros once it runs out.
    pub struct Choices {
        data: Vec<u32>,
        pos: usize,
    }

    impl Choices {
        pub fn new(data: Vec<u32>) -> Self {
            Choices { data, pos: 0 }
        }

        pub fn below(&mut self, n: usize) -> usize {
            let c = self.data.get(self.pos).copied().unwrap_or(0);
            self.pos += 1;
            c as usize % n.max(1)
        }

        fn flip(&mut self) -> bool {
            self.below(2) == 1
        }

        fn pick<T: Copy>(&mut self, items: &[T]) -> T {
            items[self.below(items.len())]
        }
    }

    const INTS: [Scalar; 4] = [Scalar::I8, Scalar::I16, Scalar::I32, Scalar::I64];
    const FLOATS: [Scalar; 2] = [Scalar::F32, Scalar::F64];

    /// The functions every generated module has besides the random one.
    const CALLEE: u32 = 0;
    const LEAF: u32 = 1;
    const MAIN: u32 = 2;

    /// A module with two fixed callees and one random function `@main`.
    pub fn module(c: &mut Choices) -> Module {
        let mut m = Module::new(8, 8);
        m.globals.push(GlobalData {
            name: "g".into(),
            size: 16,
            align: 8,
            init: vec![1, 2, 3],
            relocs: vec![],
            constant: false,
        });
        m.shared.push(SharedData {
            name: "tile".into(),
            size: 64,
            align: 16,
            dynamic: false,
        });
        m.strings.push("v = %\n".into());
        m.functions.push(callee());
        m.functions.push(leaf());
        let main = Main::new(c, &m).build(c);
        m.functions.push(main);
        m
    }

    /// `@callee([i32], f32) -> [i32] masked`
    fn callee() -> Function {
        let sig = Signature {
            params: vec![Type::varying(Scalar::I32), Type::uniform(Scalar::F32)],
            ret: Some(Type::varying(Scalar::I32)),
            takes_mask: true,
        };
        let mut f = Function::new("callee", Linkage::Internal, sig);
        let b = f.create_block();
        let x = f.append_block_param(b, Type::varying(Scalar::I32));
        f.append_block_param(b, Type::uniform(Scalar::F32));
        f.append_block_param(b, Type::MASK);
        let mut fb = FuncBuilder::new(&mut f);
        fb.switch_to(b);
        fb.ret(Some(x));
        f
    }

    /// `@leaf(i32)`
    fn leaf() -> Function {
        let sig = Signature {
            params: vec![Type::I32],
            ret: None,
            takes_mask: false,
        };
        let mut f = Function::new("leaf", Linkage::Task, sig);
        let b = f.create_block();
        f.append_block_param(b, Type::I32);
        let mut fb = FuncBuilder::new(&mut f);
        fb.switch_to(b);
        fb.ret(None);
        f
    }

    fn random_type(c: &mut Choices) -> Type {
        let scalar = c.pick(&Scalar::ALL);
        Type {
            scalar,
            varying: c.flip(),
        }
    }

    /// The random function: its CFG is chosen first, then its blocks are filled in
    /// reverse postorder so each block can use what its dominators defined.
    struct Main {
        func: Function,
        blocks: Vec<Block>,
        /// Successors of each block, by index.
        succs: Vec<Vec<usize>>,
        /// Values each block defines (parameters included), by index.
        defined: Vec<Vec<(Value, Type)>>,
        /// `dom[b]`: bit d is set when block d dominates block b (reachable blocks).
        dom: Vec<u32>,
        has_print: bool,
    }

    impl Main {
        fn new(c: &mut Choices, m: &Module) -> Self {
            let n_params = c.below(4);
            let params: Vec<Type> = (0..n_params).map(|_| random_type(c)).collect();
            let ret = c.flip().then(|| random_type(c));
            let sig = Signature {
                params: params.clone(),
                ret,
                takes_mask: c.flip(),
            };
            let linkage = c.pick(&[Linkage::Internal, Linkage::Export, Linkage::Task]);
            let mut func = Function::new("main", linkage, sig.clone());
            func.stack_slots.push(StackSlotData { size: 32, align: 8 });
            let n_blocks = 1 + c.below(7);
            let blocks: Vec<Block> = (0..n_blocks).map(|_| func.create_block()).collect();
            let mut defined = vec![Vec::new(); n_blocks];
            let mut entry_params = params;
            if sig.takes_mask {
                entry_params.push(Type::MASK);
            }
            for ty in entry_params {
                defined[0].push((func.append_block_param(blocks[0], ty), ty));
            }
            for (i, &b) in blocks.iter().enumerate().skip(1) {
                for _ in 0..c.below(3) {
                    let ty = random_type(c);
                    defined[i].push((func.append_block_param(b, ty), ty));
                }
            }
            let succs = (0..n_blocks)
                .map(|_| match c.below(4) {
                    0 => vec![],
                    1 => vec![1 + c.below(n_blocks - 1)],
                    _ => vec![1 + c.below(n_blocks - 1), 1 + c.below(n_blocks - 1)],
                })
                .map(|s| if n_blocks == 1 { vec![] } else { s })
                .collect::<Vec<_>>();
            let dom = dominators(&succs);
            Main {
                func,
                blocks,
                succs,
                defined,
                dom,
                has_print: !m.strings.is_empty(),
            }
        }

        fn build(mut self, c: &mut Choices) -> Function {
            for i in fill_order(&self.succs, self.blocks.len()) {
                let mut body = Body {
                    main: &mut self,
                    block: i,
                };
                body.fill(c);
            }
            self.func
        }

        /// Values usable in block `i`: its own and its strict dominators'.
        fn available(&self, i: usize) -> Vec<(Value, Type)> {
            (0..self.blocks.len())
                .filter(|&d| d == i || self.dom[i] & (1 << d) != 0)
                .flat_map(|d| self.defined[d].iter().copied())
                .collect()
        }
    }

    /// Dominator sets by the textbook dataflow (an independent check of the verifier's
    /// Cooper-Harvey-Kennedy trees). Unreachable blocks get the empty set.
    pub fn dominators(succs: &[Vec<usize>]) -> Vec<u32> {
        let n = succs.len();
        let reach = reachable(succs);
        let all: u32 = (0..n).filter(|&b| reach[b]).map(|b| 1 << b).sum();
        let mut dom: Vec<u32> = (0..n).map(|b| if reach[b] { all } else { 0 }).collect();
        dom[0] = 1;
        let mut changed = true;
        while changed {
            changed = false;
            for b in 1..n {
                if !reach[b] {
                    continue;
                }
                let preds = (0..n).filter(|&p| reach[p] && succs[p].contains(&b));
                let meet = preds.fold(all, |acc, p| acc & dom[p]);
                let new = meet | (1 << b);
                if new != dom[b] {
                    dom[b] = new;
                    changed = true;
                }
            }
        }
        dom
    }

    pub fn reachable(succs: &[Vec<usize>]) -> Vec<bool> {
        let mut seen = vec![false; succs.len()];
        let mut stack = vec![0];
        while let Some(b) = stack.pop() {
            if !std::mem::replace(&mut seen[b], true) {
                stack.extend(succs[b].iter().copied());
            }
        }
        seen
    }

    /// Reachable blocks in breadth-first order (dominators come first), then the rest.
    fn fill_order(succs: &[Vec<usize>], n: usize) -> Vec<usize> {
        let mut order = vec![0];
        let mut i = 0;
        while i < order.len() {
            for &s in &succs[order[i]] {
                if !order.contains(&s) {
                    order.push(s);
                }
            }
            i += 1;
        }
        let unreachable: Vec<usize> = (0..n).filter(|b| !order.contains(b)).collect();
        order.extend(unreachable);
        order
    }

    /// Fills one block: random instructions, then its terminator.
    struct Body<'a> {
        main: &'a mut Main,
        block: usize,
    }

    impl Body<'_> {
        fn fill(&mut self, c: &mut Choices) {
            for _ in 0..c.below(12) {
                self.random_inst(c);
            }
            self.terminate(c);
        }

        fn builder(&mut self) -> FuncBuilder<'_> {
            let mut b = FuncBuilder::new(&mut self.main.func);
            b.switch_to(self.main.blocks[self.block]);
            b
        }

        /// Records a new value of this block.
        fn def(&mut self, v: Value) -> Value {
            let ty = self.main.func.value_type(v);
            self.main.defined[self.block].push((v, ty));
            v
        }

        fn ins(&mut self, data: InstData) -> Option<Value> {
            let r = self.builder().ins(data);
            r.map(|v| self.def(v))
        }

        /// A value of type `ty` that dominates here: an existing one or a new constant.
        fn get(&mut self, c: &mut Choices, ty: Type) -> Value {
            let avail: Vec<Value> = self
                .main
                .available(self.block)
                .into_iter()
                .filter(|&(_, t)| t == ty)
                .map(|(v, _)| v)
                .collect();
            if !avail.is_empty() && c.below(4) != 0 {
                return c.pick(&avail);
            }
            self.constant(c, ty)
        }

        fn constant(&mut self, c: &mut Choices, ty: Type) -> Value {
            let v = match ty.scalar {
                Scalar::F16 | Scalar::F32 | Scalar::F64 => {
                    let value = c.pick(&[0.0, -1.5, 0.25, 1e30, f64::INFINITY, f64::NAN]);
                    let value = if ty.scalar != Scalar::F64 && value == 1e30 {
                        3.0
                    } else {
                        value
                    };
                    self.builder().fconst(ty, value)
                }
                Scalar::Bool => self.builder().iconst(ty, c.below(2) as i64),
                _ => {
                    let value = c.pick(&[0, 1, -1, 7, 100]);
                    self.builder().iconst(ty, value)
                }
            };
            self.def(v)
        }

        fn get_scalar(&mut self, c: &mut Choices, scalar: Scalar) -> Value {
            let ty = Type {
                scalar,
                varying: c.flip(),
            };
            self.get(c, ty)
        }

        fn mask(&mut self, c: &mut Choices) -> Value {
            self.get(c, Type::MASK)
        }

        fn opt_mask(&mut self, c: &mut Choices) -> Option<Value> {
            c.flip().then(|| self.mask(c))
        }

        fn ptr(&mut self, c: &mut Choices, varying: bool) -> Value {
            self.get(
                c,
                Type {
                    scalar: Scalar::Ptr,
                    varying,
                },
            )
        }

        fn random_inst(&mut self, c: &mut Choices) {
            match c.below(9) {
                0 => self.random_arith(c),
                1 => self.random_arith(c),
                2 => self.random_compare(c),
                3 => self.random_convert(c),
                4 => self.random_lane(c),
                5 | 6 => self.random_memory(c),
                _ => self.random_misc(c),
            }
        }

        fn random_arith(&mut self, c: &mut Choices) {
            if c.flip() {
                let op = c.pick(UnaryOp::ALL);
                let scalar = match op {
                    UnaryOp::Ineg | UnaryOp::Popcnt | UnaryOp::Clz | UnaryOp::Ctz => c.pick(&INTS),
                    UnaryOp::Bnot => c.pick(&[Scalar::Bool, Scalar::I32, Scalar::I8]),
                    _ => c.pick(&FLOATS),
                };
                let arg = self.get_scalar(c, scalar);
                self.ins(InstData::Unary { op, arg });
                return;
            }
            let op = c.pick(BinaryOp::ALL);
            use BinaryOp::*;
            let scalar = match op {
                Iadd | Isub => c.pick(&[Scalar::I32, Scalar::I64, Scalar::Ptr, Scalar::I8]),
                Band | Bor | Bxor => c.pick(&[Scalar::Bool, Scalar::I16, Scalar::I32]),
                Fadd | Fsub | Fmul | Fdiv | Fmin | Fmax | Frem => c.pick(&FLOATS),
                _ => c.pick(&INTS),
            };
            let a = self.get_scalar(c, scalar);
            let count_scalar = if matches!(op, Ishl | Sshr | Ushr) {
                c.pick(&INTS)
            } else {
                scalar
            };
            let b = self.get_scalar(c, count_scalar);
            self.ins(InstData::Binary { op, args: [a, b] });
        }

        fn random_compare(&mut self, c: &mut Choices) {
            match c.below(3) {
                0 => {
                    let cond = c.pick(IntCC::ALL);
                    let scalar = c.pick(&[Scalar::I32, Scalar::I64, Scalar::Ptr, Scalar::I8]);
                    let args = [self.get_scalar(c, scalar), self.get_scalar(c, scalar)];
                    self.ins(InstData::Icmp { cond, args });
                }
                1 => {
                    let cond = c.pick(FloatCC::ALL);
                    let scalar = c.pick(&FLOATS);
                    let args = [self.get_scalar(c, scalar), self.get_scalar(c, scalar)];
                    self.ins(InstData::Fcmp { cond, args });
                }
                _ => {
                    let cond = self.get_scalar(c, Scalar::Bool);
                    let scalar = c.pick(&Scalar::ALL);
                    let args = [cond, self.get_scalar(c, scalar), self.get_scalar(c, scalar)];
                    self.ins(InstData::Select { args });
                }
            }
        }

        fn random_convert(&mut self, c: &mut Choices) {
            use ConvOp::*;
            use Scalar::*;
            const LEGAL: &[(ConvOp, Scalar, Scalar)] = &[
                (Sext, I8, I32),
                (Sext, I32, I64),
                (Sext, I32, Ptr),
                (Zext, Bool, I32),
                (Zext, I16, I64),
                (Ireduce, I64, I32),
                (Ireduce, Ptr, I32),
                (Ireduce, I32, I8),
                (FcvtToSint, F32, I32),
                (FcvtToUint, F64, I64),
                (FcvtFromSint, I32, F32),
                (FcvtFromUint, I64, F64),
                (Fpromote, F32, F64),
                (Fdemote, F64, F32),
                (Bitcast, F32, I32),
                (Bitcast, I64, F64),
                (Bitcast, Ptr, I64),
                (Bitcast, I64, Ptr),
                (ToBool, I32, Bool),
            ];
            let (op, from, to) = c.pick(LEGAL);
            let arg = self.get_scalar(c, from);
            self.ins(InstData::Convert {
                op,
                arg,
                to: Type::uniform(to),
            });
            if c.flip() {
                let scalar = c_scalar(c);
                let arg = self.get_scalar(c, scalar);
                if !self.main.func.value_type(arg).varying {
                    self.ins(InstData::Splat { arg });
                }
            }
        }

        fn random_lane(&mut self, c: &mut Choices) {
            use LaneOp::*;
            let op = c.pick(LaneOp::ALL);
            let num = c.pick(&[Scalar::I32, Scalar::F32, Scalar::I64, Scalar::F64]);
            let logic = c.pick(&[Scalar::Bool, Scalar::I32]);
            let i32u = Type::I32;
            let args: SmallVec<[Value; 3]> = match op {
                Extract | Rotate | Shift => {
                    let v = self.get(c, Type::varying(num));
                    smallvec::smallvec![v, self.get(c, i32u)]
                }
                Insert => {
                    let v = self.get(c, Type::varying(num));
                    let lane = self.get(c, i32u);
                    smallvec::smallvec![v, lane, self.get(c, Type::uniform(num))]
                }
                Shuffle => {
                    let v = self.get_scalar(c, num);
                    smallvec::smallvec![v, self.get_scalar(c, Scalar::I32)]
                }
                Shuffle2 => {
                    let a = self.get_scalar(c, num);
                    let b = self.get_scalar(c, num);
                    smallvec::smallvec![a, b, self.get_scalar(c, Scalar::I32)]
                }
                ReduceAdd | ReduceMin | ReduceMax | ScanAdd | ReduceEqual => {
                    let v = self.get_scalar(c, num);
                    smallvec::smallvec![v, self.mask(c)]
                }
                ReduceAnd | ReduceOr | ScanAnd | ScanOr => {
                    let v = self.get_scalar(c, logic);
                    smallvec::smallvec![v, self.mask(c)]
                }
                Any | All | Ballot | FirstLane => smallvec::smallvec![self.mask(c)],
            };
            self.ins(InstData::Lane { op, args });
        }

        fn random_memory(&mut self, c: &mut Choices) {
            let space = c.pick(&Space::ALL);
            match c.below(7) {
                0 => {
                    let slot = StackSlot::from_u32(0);
                    self.ins(InstData::StackAddr { slot });
                    let global = GlobalVar::from_u32(0);
                    self.ins(InstData::GlobalAddr { global });
                    let shared = SharedVar::from_u32(0);
                    self.ins(InstData::SharedAddr { shared });
                    let size = self.get(c, Type::I32);
                    self.ins(InstData::StackAlloc { size });
                }
                1 | 2 => {
                    let varying = c.flip();
                    // A varying load needs a varying address.
                    let ty = Type {
                        varying: varying && c.flip(),
                        ..random_type(c)
                    };
                    let addr = self.ptr(c, varying);
                    let mask = self.opt_mask(c);
                    self.ins(InstData::Load {
                        ty,
                        space,
                        addr,
                        mask,
                    });
                }
                3 | 4 => {
                    let addr_varying = c.flip();
                    let addr = self.ptr(c, addr_varying);
                    // A uniform address takes a uniform value only.
                    let ty = Type {
                        scalar: c.pick(&Scalar::ALL),
                        varying: addr_varying && c.flip(),
                    };
                    let value = self.get(c, ty);
                    let mask = self.opt_mask(c);
                    self.ins(InstData::Store {
                        space,
                        addr,
                        value,
                        mask,
                    });
                }
                5 => {
                    let op = c.pick(AtomicOp::ALL);
                    let varying = c.flip();
                    let addr = self.ptr(c, varying);
                    let scalar = c.pick(&INTS);
                    let value = self.get_scalar(c, scalar);
                    let mask = self.opt_mask(c);
                    self.ins(InstData::AtomicRmw {
                        op,
                        space,
                        addr,
                        value,
                        mask,
                    });
                }
                _ => {
                    let varying = c.flip();
                    let addr = self.ptr(c, varying);
                    let scalar = c.pick(&[Scalar::I32, Scalar::I64, Scalar::Ptr]);
                    let expected = self.get_scalar(c, scalar);
                    let replacement = self.get_scalar(c, scalar);
                    let mask = self.opt_mask(c);
                    let data = InstData::AtomicCas {
                        space,
                        addr,
                        expected,
                        replacement,
                        mask,
                    };
                    self.ins(data);
                }
            }
        }

        fn random_misc(&mut self, c: &mut Choices) {
            match c.below(6) {
                0 => {
                    let reg = c.pick(SpecialReg::ALL);
                    self.ins(InstData::Special { reg });
                }
                1 => {
                    self.ins(InstData::Barrier);
                }
                2 => {
                    let x = self.get(c, Type::varying(Scalar::I32));
                    let y = self.get(c, Type::uniform(Scalar::F32));
                    let mask = self.mask(c);
                    let ret = Some(Type::varying(Scalar::I32));
                    let r = self.builder().call(
                        FuncRef::from_u32(CALLEE),
                        ret,
                        smallvec::smallvec![x, y],
                        Some(mask),
                    );
                    self.def(r.unwrap());
                }
                3 => {
                    let x = self.get(c, Type::I32);
                    self.builder().call(
                        FuncRef::from_u32(LEAF),
                        None,
                        smallvec::smallvec![x],
                        None,
                    );
                }
                4 => self.call_main(c),
                _ if self.main.has_print => {
                    let args: SmallVec<[Value; 4]> = (0..c.below(3))
                        .map(|_| {
                            let ty = random_type(c);
                            self.get(c, ty)
                        })
                        .collect();
                    let mask = self.opt_mask(c);
                    let format = StrConst::from_u32(0);
                    self.ins(InstData::Print { format, args, mask });
                }
                _ => {}
            }
        }

        /// A recursive call of the function being built.
        fn call_main(&mut self, c: &mut Choices) {
            let sig = self.main.func.sig.clone();
            let args: SmallVec<[Value; 6]> = sig.params.iter().map(|&t| self.get(c, t)).collect();
            let mask = sig.takes_mask.then(|| self.mask(c));
            let r = self
                .builder()
                .call(FuncRef::from_u32(MAIN), sig.ret, args, mask);
            if let Some(r) = r {
                self.def(r);
            }
        }

        /// Branches to the chosen successors with well-typed arguments, or returns.
        fn terminate(&mut self, c: &mut Choices) {
            let succs = self.main.succs[self.block].clone();
            let targets: Vec<(Block, Vec<Value>)> = succs
                .iter()
                .map(|&s| {
                    let block = self.main.blocks[s];
                    let params = self.main.func.blocks[block].params.clone();
                    let types: Vec<Type> = params
                        .iter()
                        .map(|&p| self.main.func.value_type(p))
                        .collect();
                    let args = types.into_iter().map(|t| self.get(c, t)).collect();
                    (block, args)
                })
                .collect();
            match targets.as_slice() {
                [] if c.below(5) == 0 => {
                    self.ins(InstData::Trap {
                        code: TrapCode::Unreachable,
                    });
                }
                [] => {
                    let ret = self.main.func.sig.ret;
                    let value = ret.map(|t| self.get(c, t));
                    self.builder().ret(value);
                }
                [(b, args)] => self.builder().jump(*b, args),
                [(t, targs), (e, eargs), ..] => {
                    let cond = if c.flip() {
                        let m = self.mask(c);
                        self.ins(InstData::Lane {
                            op: LaneOp::Any,
                            args: smallvec::smallvec![m],
                        })
                        .unwrap()
                    } else {
                        self.get(c, Type::BOOL)
                    };
                    self.builder().brif(cond, *t, targs, *e, eargs);
                }
            }
        }
    }

    fn c_scalar(c: &mut Choices) -> Scalar {
        c.pick(&Scalar::ALL)
    }
}

use proptest::prelude::*;
use spmdc::ir::dominance::DominatorTree;
use spmdc::ir::{Block, Module};

fn messages<E: std::fmt::Display>(errors: &[E]) -> String {
    errors.iter().map(|e| format!("{e}\n")).collect()
}

/// The verifier accepts `m`, and print → parse → print is the identity.
fn assert_verifies_and_round_trips(m: &Module) -> String {
    let text = print(m);
    if let Err(e) = verify_module(m) {
        panic!(
            "verifier rejects a generated module:\n{}\n{text}",
            messages(&e)
        );
    }
    let parsed = parse_module(&text)
        .unwrap_or_else(|e| panic!("printed text does not parse:\n{}\n{text}", messages(&e)));
    assert_eq!(print(&parsed), text);
    if let Err(e) = verify_module(&parsed) {
        panic!(
            "verifier rejects the parsed module:\n{}\n{text}",
            messages(&e)
        );
    }
    text
}

/// The verifier's dominator trees agree with the textbook dataflow on `@main`.
fn assert_dominators_agree(m: &Module) {
    let func = m.functions.values().last().unwrap();
    let n = func.layout.len();
    let succs: Vec<Vec<usize>> = func
        .layout
        .iter()
        .map(|&b| func.successors(b).iter().map(|s| s.index()).collect())
        .collect();
    let expected = gen::dominators(&succs);
    let tree = DominatorTree::compute(func);
    for (b, &dom) in expected.iter().enumerate() {
        for d in 0..n {
            let dominates = tree.dominates(Block::from_u32(d as u32), Block::from_u32(b as u32));
            assert_eq!(
                dominates,
                dom & (1 << d) != 0,
                "does block{d} dominate block{b}?"
            );
        }
    }
}

use cranelift_entity::EntityRef;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Random well-formed functions (random CFGs with block parameters, every kind of
    /// instruction, operands that dominate their uses) verify and round-trip.
    #[test]
    fn random_functions_verify_and_round_trip(data in prop::collection::vec(any::<u32>(), 0..800)) {
        let m = gen::module(&mut gen::Choices::new(data));
        assert_verifies_and_round_trips(&m);
        assert_dominators_agree(&m);
    }
}

/// Pseudo-random choice streams (SplitMix64), for deterministic generator checks.
fn choice_stream(seed: u64, len: usize) -> Vec<u32> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u32
        })
        .collect()
}

/// The generator reaches every instruction form, and arena numbers that differ from
/// the text's (so the printer's renumbering is exercised).
#[test]
fn generator_covers_every_instruction_form() {
    let mut forms = std::collections::HashSet::new();
    let mut renumbered = false;
    for seed in 0..300 {
        let m = gen::module(&mut gen::Choices::new(choice_stream(seed, 800)));
        let main = m.functions.values().last().unwrap();
        forms.extend(main.insts.values().map(std::mem::discriminant));
        let names = write::Names::new(main);
        renumbered |= main.values.keys().any(|v| names.value(v) != v);
    }
    assert_eq!(forms.len(), 26, "instruction forms reached");
    assert!(renumbered);
}

// ---------------------------------------------------------------------------------------
// Robustness: mutated text never panics the parser, the verifier or the printer.

/// Every corpus text, valid and invalid, plus a few generated modules.
fn fuzz_seeds() -> &'static [String] {
    static SEEDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(read_fuzz_seeds)
}

fn read_fuzz_seeds() -> Vec<String> {
    let dirs = [corpus_dir(), corpus_dir().join("invalid")];
    let mut texts: Vec<String> = dirs
        .iter()
        .flat_map(|d| ir_files(d))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for seed in 0..8 {
        let m = gen::module(&mut gen::Choices::new(choice_stream(seed, 800)));
        texts.push(print(&m));
    }
    texts
}

/// Tokens worth inserting: pieces of the syntax and edge cases of numbers and text.
const TOKENS: &[&str] = &[
    "v0",
    "v4294967295",
    "v99",
    "block0",
    "block9",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "=",
    ";",
    "\"",
    "\\",
    "\\u{",
    ".",
    "-",
    "@",
    "{",
    "}",
    "\n",
    " ",
    "i32",
    "[bool]",
    "ptr",
    "mask",
    "iadd",
    "call @f(",
    "jump block1",
    "brif",
    "return",
    "0x",
    "1e999",
    "-0",
    "é",
    "\u{0}",
    "ss0",
    "gv7",
    "sh0",
    "str3",
    "masked",
    "function internal @g() {\nblock0:\n",
];

/// Applies one edit chosen by `(kind, a, b)`, keeping to character boundaries.
fn mutate(text: &str, kind: u8, a: u32, b: u32) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = |x: u32| {
        if chars.is_empty() {
            0
        } else {
            x as usize % (chars.len() + 1)
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    let line = |x: u32| x as usize % lines.len().max(1);
    let join = |ls: Vec<&str>| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    match kind % 7 {
        0 => {
            let i = at(a);
            let mut c = chars.clone();
            c.drain(i..(i + 1 + b as usize % 4).min(c.len()));
            c.into_iter().collect()
        }
        1 => {
            let i = at(a);
            let token = TOKENS[b as usize % TOKENS.len()];
            let mut s: String = chars[..i].iter().collect();
            s.push_str(token);
            s.extend(&chars[i..]);
            s
        }
        2 if !lines.is_empty() => {
            let mut ls = lines.clone();
            ls.remove(line(a));
            join(ls)
        }
        3 if !lines.is_empty() => {
            let mut ls = lines.clone();
            ls.insert(line(a), lines[line(b)]);
            join(ls)
        }
        4 if !lines.is_empty() => {
            let mut ls = lines.clone();
            ls.swap(line(a), line(b));
            join(ls)
        }
        5 => chars[..at(a)].iter().collect(),
        _ => {
            // Replace one digit run with another number.
            let text: String = chars.iter().collect();
            let digits: Vec<usize> = text
                .match_indices(|c: char| c.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            match digits.get(a as usize % digits.len().max(1)) {
                Some(&i) => format!("{}{}{}", &text[..i], b % 300, &text[i + 1..]),
                None => text,
            }
        }
    }
}

/// Parses, verifies and prints `text`; whatever parses must print to a fixpoint.
fn survive(text: &str) {
    let Ok(m) = parse_module(text) else {
        return;
    };
    let _ = verify_module(&m);
    let printed = print(&m);
    let again = parse_module(&printed)
        .unwrap_or_else(|e| panic!("printed text does not parse:\n{}\n{printed}", messages(&e)));
    assert_eq!(print(&again), printed, "from:\n{text}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn mutated_text_never_panics(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u32>()), 1..6),
    ) {
        let seeds = fuzz_seeds();
        let mut text = seed.get(seeds).clone();
        for (kind, a, b) in edits {
            text = mutate(&text, kind, a, b);
        }
        survive(&text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        survive(&text);
        survive(&format!("module lanes 4 ptr 8\nfunction internal @f() {{\nblock0:\n{text}\n}}\n"));
    }
}

// ---------------------------------------------------------------------------------------
// What only a builder can produce: holes in the arenas, broken structure.

use spmdc::ir::builder::FuncBuilder;
use spmdc::ir::{
    BinaryOp, BlockData, FuncRef, Function, InstData, Linkage, Signature, Type, Value,
};

/// `@f(i32) -> i32` returning `(a + a) * a`, in a module; also the handles.
fn small_module() -> (Module, [Value; 3]) {
    let sig = Signature {
        params: vec![Type::I32],
        ret: Some(Type::I32),
        takes_mask: false,
    };
    let mut f = Function::new("f", Linkage::Export, sig);
    let entry = f.create_block();
    let a = f.append_block_param(entry, Type::I32);
    let mut b = FuncBuilder::new(&mut f);
    b.switch_to(entry);
    let sum = b.binary(BinaryOp::Iadd, a, a);
    let product = b.binary(BinaryOp::Imul, sum, a);
    b.ret(Some(product));
    let mut m = Module::new(8, 8);
    m.functions.push(f);
    (m, [a, sum, product])
}

fn func_mut(m: &mut Module) -> &mut Function {
    m.functions.values_mut().next().unwrap()
}

fn verifier_messages(m: &Module) -> String {
    match verify_module(m) {
        Ok(()) => String::new(),
        Err(e) => messages(&e),
    }
}

/// A pass that removes an instruction leaves holes in the arenas; the text stays
/// dense and round-trips.
#[test]
fn holes_print_densely() {
    let (mut m, [a, _, _]) = small_module();
    let f = func_mut(&mut m);
    let entry = f.layout[0];
    // Drop the add: the multiply now squares the parameter.
    f.blocks[entry].insts.remove(0);
    let mul = f.blocks[entry].insts[0];
    f.insts[mul] = InstData::Binary {
        op: BinaryOp::Imul,
        args: [a, a],
    };
    let text = assert_verifies_and_round_trips(&m);
    assert!(
        text.contains("    v1 = imul v0, v0\n    return v1\n"),
        "{text}"
    );
}

#[test]
fn structural_errors() {
    /// Breaks the function of [`small_module`], given its values.
    type Breakage = fn(&mut Function, [Value; 3]);
    let cases: [(&str, Breakage); 7] = [
        ("holds inst9, which does not exist", |f, _| {
            let b = f.layout[0];
            f.blocks[b].insts.push(spmdc::ir::Inst::from_u32(9));
        }),
        ("arena block1 is not in the layout", |f, _| {
            f.blocks.push(BlockData::default());
        }),
        ("appears twice in the layout", |f, _| {
            let b = f.layout[0];
            f.layout.push(b);
        }),
        ("whose definition is not in the layout", |f, _| {
            let b = f.layout[0];
            f.blocks[b].insts.remove(0);
        }),
        (
            "does not say this instruction defines it",
            |f, [a, sum, _]| {
                let add = f.blocks[f.layout[0]].insts[0];
                f.results[add] = Some(a);
                let _ = sum;
            },
        ),
        ("which does not exist", |f, _| {
            let b = f.layout[0];
            let mul = f.blocks[b].insts[1];
            f.insts[mul] = InstData::Binary {
                op: BinaryOp::Imul,
                args: [Value::from_u32(4000), Value::from_u32(4000)],
            };
        }),
        ("calls fn7, which does not exist", |f, [a, _, _]| {
            let b = f.layout[0];
            let mul = f.blocks[b].insts[1];
            f.insts[mul] = InstData::Call {
                func: FuncRef::from_u32(7),
                args: smallvec::smallvec![a],
                mask: None,
            };
        }),
    ];
    for (expected, break_it) in cases {
        let (mut m, values) = small_module();
        break_it(func_mut(&mut m), values);
        let found = verifier_messages(&m);
        assert!(
            found.contains(expected),
            "expected {expected:?}, got:\n{found}"
        );
        // Printing a broken module does not panic either.
        let _ = print(&m);
    }
}

#[test]
fn reports_every_error_with_its_entity() {
    let text = "module lanes 8 ptr 8

function internal @saxpy(i32, f32) -> i32 {
block0(v0: i32, v1: f32):
    v2 = iadd v0, v1
    v3 = fmul v0, v0
    v4 = special lane_index
    brif v4, block1, block1
block1:
    return v1
}
";
    let m = parse_module(text).unwrap();
    let found = verifier_messages(&m);
    let expected = [
        "@saxpy inst0 (v2 = iadd v0, v1): operand types differ: i32 vs f32\n",
        "@saxpy inst1 (v3 = fmul v0, v0): v0 must be a float, found i32\n",
        "@saxpy inst3 (brif v4, block1, block1): the condition v4 must be a uniform bool, found [i32]\n",
        "@saxpy inst4 (return v1): returns f32, but the function returns i32\n",
    ];
    assert_eq!(found, expected.concat());
}

#[test]
fn parse_errors_have_positions_and_all_are_reported() {
    let text = "module lanes 8 ptr 8
function internal @f() {
block0:
    v0 = iconst.i32 x
    v1 = iadd v0,
    v2 = load.[f33] global v0
    return
}
";
    let errors = parse_module(text).unwrap_err();
    let found: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        found,
        [
            "4:21: expected a signed 64-bit integer",
            "5:18: expected `vN`, found the end of the line",
            "6:15: expected a type such as `i32` or `[f32]`",
        ]
    );
}

#[test]
fn comments_and_escapes() {
    let text = "; leading comment
module lanes 4 ptr 4 ; trailing
string str0 \"semi ; colon \\\"q\\\" \\u{1f600} \\t\"
; between

function internal @f() { ; here too
block0: ;
    return ; done
}
";
    let m = parse_module(text).unwrap();
    assert_eq!(
        m.strings.values().next().unwrap(),
        "semi ; colon \"q\" \u{1f600} \t"
    );
    let printed = print(&m);
    assert_eq!(print(&parse_module(&printed).unwrap()), printed);
}
