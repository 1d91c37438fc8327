//! Inlining of direct calls.
//!
//! ISPC, whose language core we follow, inlines aggressively, and for an SPMD program a
//! call costs more than the jump and return: the callee's parameters are fresh values
//! to every analysis (a varying `int n` that every lane of the caller holds equal is
//! divergent to the uniformity analysis inside the callee), and both back ends save and
//! restore the execution mask around it. This pass copies the callee's body into the
//! caller instead.
//!
//! **What is inlined.** A direct call to any function with a body that is not part of a
//! recursive cycle (a function that can reach itself through calls) and whose size, in
//! instructions, is at most [`Options::max_callee_insts`]; a caller stops receiving
//! bodies once it has grown to [`Options::max_caller_insts`]. Linkage does not matter:
//! an `export` or `task` function called from another function is inlined there and
//! stays in the module as the entry point it is (no function is ever deleted). Calls are
//! the only way into a function's body, so copying it is exact whatever its linkage.
//! Functions are processed bottom-up over the call graph (callees first), so a callee's
//! own calls are already inlined when it is copied, and the size limit sees its final
//! size. Recursive cycles are left alone: unrolling them would never end. A function
//! that stores to a constant address (memory-mapped I/O: the print runtime's serial
//! port) stays a call ([`stores_to_fixed_address`]), and so does one that calls
//! `alloca` ([`allocates_on_the_stack`]): its return frees the allocations.
//!
//! **Runtime routines.** Legalization runs after this pipeline and replaces the
//! operations Nyuzi lacks by calls to runtime routines; [`run_runtime`] (from
//! [`super::legalize::inline_routines`]) then inlines the short ones by the same rules,
//! with a smaller size limit ([`Options::runtime`], counted on optimized routines),
//! except the routines that can fail an `assert` (division by zero, reported under
//! the routine's name), and gives the copies the call's source span.
//!
//! **How a call is replaced.** The block holding the call is split after it: the
//! instructions that followed the call move to a new continuation block, whose only
//! parameter (for a callee that returns a value) *is* the call's former result value,
//! so no use needs rewriting. The callee's blocks are copied with fresh blocks, values,
//! instructions and stack slots; its entry block's parameters become the call's
//! arguments, and its hidden mask parameter (masked functions) the call's mask operand;
//! every `return v` becomes `jump cont(v)`. Globals, shared variables and strings are
//! module-level and referenced unchanged; calls inside the copy keep their callee.
//! Lowering implements `return` under a varying mask inside the callee (a return slot
//! written under the returning lanes' mask, a live-lanes slot, one final `return` of the
//! loaded slot), so every callee `return` is reached by the whole gang, exactly as a
//! jump to the continuation is: no mask bookkeeping is needed at the call site.
//!
//! **Exactness.** The interpreter passes a masked callee `mask AND existing lanes`;
//! the copy reads the mask value itself. Every mask consumer (masked memory operations,
//! lane operations, calls) limits masks to the existing lanes, so the two agree. A
//! callee's stack slots are zeroed when its frame is pushed; the copied slots belong to
//! the caller's frame, zeroed once, and a copy in a loop would see what the previous
//! iteration left (a uniform return slot whose masked store does not happen under an
//! empty mask, the lanes of a local a call does not write, which `print` shows). So the
//! copy starts by zeroing its slots. A slot that [`super::promote`] promotes is zeroed
//! by one store of the shape of its other accesses (uniform, or per lane through the
//! callee's lane offset), so it is still promoted and the zero becomes the constant
//! promotion starts from: free. The other slots (arrays, aggregates, escaping
//! addresses) are zeroed by uniform stores over their bytes, which do cost.
//!
//! **Cost.** Each callee is prepared once ([`Body`]): zeroed as above, promoted and
//! cleaned of dead code (one without slots is taken as it is), then copied at every
//! call. Copying the body as lowered and promoting each copy in the caller gives the
//! same code, but a body as lowered is two to three times the size (a store and a load
//! per local access), and a `foreach` lowers its body twice (full and partial gangs),
//! so that work was multiplied by the calls. The size limits still count each callee
//! as lowered, so what is inlined does not change.
//!
//! Bad input never panics: a call or callee that does not fit together (argument counts,
//! a missing mask, an operand with no definition in the callee, a branch to a block that
//! is not laid out, a slot that does not exist) is left as a call.

use cranelift_entity::{EntityRef, SecondaryMap};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use crate::ir::{
    Block, BlockCall, BlockData, FuncRef, Function, Inst, InstData, Module, Space, StackSlot, Type,
    Value, ValueData, ValueDef,
};

/// Limits of the inliner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The largest callee copied into a caller, in instructions (counted as lowered, so
    /// before promotion: lowering spends about ten instructions per source statement).
    pub max_callee_insts: usize,
    /// A caller that has reached this many instructions receives no more bodies.
    pub max_caller_insts: usize,
    /// Whether a copied instruction takes the call's source span instead of keeping
    /// its own: for the runtime routines, whose spans point into the standard
    /// library's runtime source, so that `--source-lines` and a trap's location show
    /// the user's line that needed the routine.
    pub call_site_spans: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_callee_insts: 1500,
            max_caller_insts: 40_000,
            call_site_spans: false,
        }
    }
}

impl Options {
    /// The limits of [`run_runtime`]. Its callees are optimized already, so they are
    /// counted after promotion: 100 instructions admit the IEEE min/max, the
    /// reductions, scans and lane movement and the 64-bit integer multiply and atomics
    /// (a few to a few dozen instructions, on the order of what a call costs around
    /// them: argument moves, the mask, registers saved across it), and keep out the
    /// binary64 soft-float arithmetic (hundreds of instructions, one shared copy).
    pub fn runtime() -> Options {
        Options {
            max_callee_insts: 100,
            call_site_spans: true,
            ..Options::default()
        }
    }
}

/// Inlines with the default [`Options`] (the pipeline's pass).
pub fn run_module(module: &mut Module) {
    run(module, &Options::default());
}

/// Inlines the eligible calls of every function, callees first; returns how many calls
/// were replaced by a copy of their callee.
pub fn run(module: &mut Module, options: &Options) -> usize {
    run_where(module, options, |_| true)
}

/// Inlines the calls to the runtime routines ([`super::legalize`] inserts them after
/// the pipeline's inliner has run) that pass the inliner's own tests and contain no
/// failing `assert` (`trap assert`): a trap inside a routine (a division by zero) is
/// reported under the routine's name, at its caller's line, which an inlined copy would
/// lose. (`trap unreachable` ends blocks lowering leaves behind that nothing reaches.)
/// Returns how many calls were replaced.
pub fn run_runtime(module: &mut Module, options: &Options) -> usize {
    run_where(module, options, |f| {
        super::legalize::is_runtime(&f.name) && !traps(f)
    })
}

/// [`run`] with only the callees `accept` takes (besides the inliner's own tests).
fn run_where(module: &mut Module, options: &Options, accept: impl Fn(&Function) -> bool) -> usize {
    let graph = CallGraph::of(module);
    let mut inlined = 0;
    let mut eligible: SecondaryMap<FuncRef, bool> = SecondaryMap::new();
    let mut sizes = AsLowered::default();
    let mut bodies: FxHashMap<FuncRef, Body> = FxHashMap::default();
    for func in graph.bottom_up() {
        sizes.own_slots[func] = module.functions[func].stack_slots.len();
        let copies = inline_into(module, func, &eligible, &sizes, &mut bodies, options);
        inlined += copies.len();
        let f = &mut module.functions[func];
        let seen = super::cfg::reachable(f);
        let reached = || copies.iter().filter(|c| seen[c.entry]);
        let unprepared: usize = reached().map(|c| c.unprepared).sum();
        sizes.copied_zeros[func] = reached().map(|c| c.zeros).sum();
        // The callee's unreachable blocks were copied with it: delete them, and the
        // function's own, before it is copied in turn.
        super::cfg::remove_unreachable_blocks(f);
        let f = &module.functions[func];
        sizes.insts[func] = size(f) + unprepared;
        eligible[func] = !graph.recursive[func]
            && sizes.insts[func] <= options.max_callee_insts
            && !stores_to_fixed_address(f)
            && !allocates_on_the_stack(f)
            && accept(f)
            && copyable(module, f);
    }
    inlined
}

/// The sizes the limits count: each function as it would be had every copy been made
/// of the callee as lowered, its slots zeroed in the copy, instead of the prepared
/// [`Body`], so that preparing bodies changes what is copied, not what is inlined.
#[derive(Default)]
struct AsLowered {
    /// Laid-out instructions.
    insts: SecondaryMap<FuncRef, usize>,
    /// The slots a function had before calls were inlined into it (its own come first).
    own_slots: SecondaryMap<FuncRef, usize>,
    /// The zeroing instructions for the slots of the copies in a function, which a copy
    /// of the function as lowered would zero again.
    copied_zeros: SecondaryMap<FuncRef, usize>,
}

impl AsLowered {
    /// How many instructions a copy of `callee` as lowered would insert.
    fn copy(&self, callee: FuncRef, body: &Body) -> usize {
        self.insts[callee] + self.zeros(callee, body)
    }

    /// How many of them would zero slots.
    fn zeros(&self, callee: FuncRef, body: &Body) -> usize {
        body.own_zeros + self.copied_zeros[callee]
    }
}

/// One call replaced by a copy: the copy's entry block, how many more instructions a
/// copy as lowered would have had than the prepared one, and how many of those zero
/// slots ([`AsLowered`]).
struct Inlined {
    entry: Block,
    unprepared: usize,
    zeros: usize,
}

/// Whether `f` has a `trap assert` in a laid-out block.
fn traps(f: &Function) -> bool {
    layout_insts(f).any(|i| {
        matches!(
            f.insts.get(i),
            Some(InstData::Trap {
                code: crate::ir::TrapCode::AssertFailed
            })
        )
    })
}

/// The direct calls between the module's functions.
struct CallGraph {
    callees: SecondaryMap<FuncRef, Vec<FuncRef>>,
    /// Whether the function can reach itself through calls.
    recursive: SecondaryMap<FuncRef, bool>,
    count: usize,
}

impl CallGraph {
    fn of(module: &Module) -> CallGraph {
        let mut callees: SecondaryMap<FuncRef, Vec<FuncRef>> = SecondaryMap::new();
        for (r, f) in module.functions.iter() {
            let mut seen = FxHashSet::default();
            for inst in layout_insts(f) {
                if let Some(InstData::Call { func, .. }) = f.insts.get(inst) {
                    if module.functions.get(*func).is_some() && seen.insert(*func) {
                        callees[r].push(*func);
                    }
                }
            }
        }
        let count = module.functions.len();
        let mut graph = CallGraph {
            callees,
            recursive: SecondaryMap::new(),
            count,
        };
        for r in module.functions.keys() {
            graph.recursive[r] = graph.reaches(r, r);
        }
        graph
    }

    /// Whether `to` is reachable from `from` through one call or more.
    fn reaches(&self, from: FuncRef, to: FuncRef) -> bool {
        let mut seen: SecondaryMap<FuncRef, bool> = SecondaryMap::new();
        let mut stack: Vec<FuncRef> = self.callees[from].clone();
        while let Some(f) = stack.pop() {
            if f == to {
                return true;
            }
            if !std::mem::replace(&mut seen[f], true) {
                stack.extend(self.callees[f].iter().copied());
            }
        }
        false
    }

    /// Every function, each after the functions it calls (except around cycles): the
    /// post-order of a depth-first walk from every function.
    fn bottom_up(&self) -> Vec<FuncRef> {
        let mut order = Vec::with_capacity(self.count);
        let mut visited: SecondaryMap<FuncRef, bool> = SecondaryMap::new();
        for root in (0..self.count).map(FuncRef::new) {
            if std::mem::replace(&mut visited[root], true) {
                continue;
            }
            // (function, index of the next callee to visit)
            let mut stack = vec![(root, 0usize)];
            while let Some((f, next)) = stack.last_mut() {
                let f = *f;
                match self.callees[f].get(*next) {
                    Some(&c) => {
                        *next += 1;
                        if !std::mem::replace(&mut visited[c], true) {
                            stack.push((c, 0));
                        }
                    }
                    None => {
                        order.push(f);
                        stack.pop();
                    }
                }
            }
        }
        order
    }
}

/// The instructions of the laid-out blocks, in order.
fn layout_insts(f: &Function) -> impl Iterator<Item = Inst> + '_ {
    f.layout
        .iter()
        .filter_map(|&b| f.blocks.get(b))
        .flat_map(|d| d.insts.iter().copied())
}

/// A function's size: its laid-out instructions.
fn size(f: &Function) -> usize {
    f.layout
        .iter()
        .filter_map(|&b| f.blocks.get(b))
        .map(|d| d.insts.len())
        .sum()
}

/// Whether `f` stores to a constant address (memory-mapped I/O: the print routines'
/// serial port). Such a function stays a call: the dac-gpu back end recognizes the
/// port by the store's constant address within the function, and in a copy, after the
/// CFG transforms, the address can arrive through a block parameter instead.
fn stores_to_fixed_address(f: &Function) -> bool {
    fn constant(f: &Function, v: Value, depth: u32) -> bool {
        let Some(ValueDef::Result(inst)) = f.values.get(v).map(|d| d.def) else {
            return false;
        };
        match f.insts.get(inst) {
            Some(InstData::Iconst { .. }) => true,
            Some(InstData::Convert { arg, .. }) => depth > 0 && constant(f, *arg, depth - 1),
            _ => false,
        }
    }
    layout_insts(f).any(|inst| match f.insts.get(inst) {
        Some(InstData::Store { addr, .. }) => constant(f, *addr, 4),
        _ => false,
    })
}

/// Whether `f` has a `stack_alloc` (`alloca`). Such a function stays a call: its
/// allocations are freed when it returns, and a copy in the caller would keep them
/// until the caller returns, so a call in a loop would grow the caller's stack on
/// every iteration instead of reusing the same bytes.
fn allocates_on_the_stack(f: &Function) -> bool {
    layout_insts(f).any(|inst| matches!(f.insts.get(inst), Some(InstData::StackAlloc { .. })))
}

/// Whether `f`'s body can be copied: it has one, its entry block's parameters are its
/// signature's (plus the mask), no branch targets the entry, and every operand, branch
/// target, slot and callee it names exists in it. The verifier guarantees all of this
/// for verified IR; checking keeps bad input from panicking here.
fn copyable(module: &Module, f: &Function) -> bool {
    let Some(entry) = f.entry_block() else {
        return false;
    };
    let Some(entry_data) = f.blocks.get(entry) else {
        return false;
    };
    if entry_data.params.len() != f.sig.params.len() + usize::from(f.sig.takes_mask) {
        return false;
    }
    let laid_out: FxHashSet<Block> = f.layout.iter().copied().collect();
    if laid_out.len() != f.layout.len() || f.layout.iter().any(|b| f.blocks.get(*b).is_none()) {
        return false;
    }
    let mut defined: FxHashSet<Value> = FxHashSet::default();
    for &b in &f.layout {
        defined.extend(f.blocks[b].params.iter().copied());
        for &inst in &f.blocks[b].insts {
            if f.insts.get(inst).is_none() {
                return false;
            }
            defined.extend(f.results[inst]);
        }
    }
    if defined.iter().any(|v| f.values.get(*v).is_none()) {
        return false;
    }
    layout_insts(f).all(|inst| {
        let data = &f.insts[inst];
        data.operands().iter().all(|v| defined.contains(v))
            && data
                .successors()
                .iter()
                .all(|c| c.block != entry && laid_out.contains(&c.block))
            && match data {
                InstData::StackAddr { slot } => f.stack_slots.get(*slot).is_some(),
                InstData::Call { func, .. } => module.functions.get(*func).is_some(),
                InstData::Return { value } => value.is_some() == f.sig.ret.is_some(),
                _ => true,
            }
    })
}

/// Inlines the calls of `func` to the `eligible` functions; returns the copies made.
fn inline_into(
    module: &mut Module,
    func: FuncRef,
    eligible: &SecondaryMap<FuncRef, bool>,
    sizes: &AsLowered,
    bodies: &mut FxHashMap<FuncRef, Body>,
    options: &Options,
) -> Vec<Inlined> {
    let (lanes, ptr) = (module.lane_count, module.ptr_size);
    let mut caller_size = size(&module.functions[func]);
    let mut copies = Vec::new();
    let mut i = 0;
    while i < module.functions[func].layout.len() {
        let block = module.functions[func].layout[i];
        i += 1;
        if caller_size >= options.max_caller_insts {
            break;
        }
        let Some((pos, callee)) =
            first_inlinable_call(&module.functions[func], block, eligible, module)
        else {
            continue;
        };
        let own_slots = sizes.own_slots[callee];
        let body = bodies
            .entry(callee)
            .or_insert_with(|| Body::of(&module.functions[callee], own_slots, lanes, ptr));
        caller_size += sizes.insts[callee];
        let entry = inline_call(
            &mut module.functions[func],
            block,
            pos,
            body,
            options.call_site_spans,
        );
        copies.extend(entry.map(|entry| Inlined {
            entry,
            unprepared: sizes.copy(callee, body).saturating_sub(size(&body.func)),
            zeros: sizes.zeros(callee, body),
        }));
    }
    copies
}

/// The first call in `block` (its position and callee) that may be inlined.
fn first_inlinable_call(
    f: &Function,
    block: Block,
    eligible: &SecondaryMap<FuncRef, bool>,
    module: &Module,
) -> Option<(usize, FuncRef)> {
    let insts = &f.blocks.get(block)?.insts;
    insts.iter().enumerate().find_map(|(pos, &inst)| {
        let InstData::Call { func, args, mask } = f.insts.get(inst)? else {
            return None;
        };
        let callee = module.functions.get(*func)?;
        let fits = eligible[*func]
            && args.len() == callee.sig.params.len()
            && args
                .iter()
                .zip(&callee.sig.params)
                .all(|(&a, &t)| f.values.get(a).is_some_and(|d| d.ty == t))
            && mask.is_some() == callee.sig.takes_mask
            && f.results[inst].is_some() == callee.sig.ret.is_some()
            && pos + 1 < insts.len();
        fits.then_some((pos, *func))
    })
}

/// Replaces the call at position `pos` of `block` by a copy of `callee`'s body (whose
/// instructions take the call's span when `call_site_spans`); returns the copy's entry
/// block (`None`, and nothing changed, if the instruction is not a call).
fn inline_call(
    f: &mut Function,
    block: Block,
    pos: usize,
    body: &Body,
    call_site_spans: bool,
) -> Option<Block> {
    let callee = &body.func;
    let call = f.blocks[block].insts[pos];
    let (args, mask) = match &f.insts[call] {
        InstData::Call { args, mask, .. } => (args.clone(), *mask),
        _ => return None,
    };
    let span = f.spans[call];
    let cont = split_after_call(f, block, pos);

    // The copy's entry takes the call's operands for its parameters.
    let callee_entry = callee.layout[0];
    // The callee's values and blocks to the copy's: dense tables over the callee's
    // (small) arenas, which every copied operand is looked up in.
    let mut values: SecondaryMap<Value, Option<Value>> =
        SecondaryMap::with_capacity(callee.values.len());
    let params = &callee.blocks[callee_entry].params;
    for (&p, &a) in params.iter().zip(args.iter().chain(mask.iter())) {
        values[p] = Some(a);
    }
    let slots: SecondaryMap<StackSlot, Option<StackSlot>> = {
        let mut m = SecondaryMap::new();
        for (s, data) in callee.stack_slots.iter() {
            m[s] = Some(f.stack_slots.push(*data));
        }
        m
    };
    let mut blocks: SecondaryMap<Block, Option<Block>> =
        SecondaryMap::with_capacity(callee.blocks.len());
    let mut new_layout = Vec::with_capacity(callee.layout.len());
    for &b in &callee.layout {
        let nb = f.blocks.push(BlockData::default());
        blocks[b] = Some(nb);
        new_layout.push(nb);
        if b != callee_entry {
            for &p in &callee.blocks[b].params {
                let index = f.blocks[nb].params.len() as u32;
                let v = f.values.push(ValueData {
                    ty: callee.values[p].ty,
                    def: ValueDef::Param(nb, index),
                });
                f.blocks[nb].params.push(v);
                values[p] = Some(v);
            }
        }
    }
    // First every instruction and result, then the operands: a use may come before its
    // definition in layout order.
    let mut copied: Vec<Inst> = Vec::new();
    for &b in &callee.layout {
        let Some(nb) = blocks[b] else { continue };
        for &inst in &callee.blocks[b].insts {
            let data = copy_inst(&callee.insts[inst], &blocks, &slots, cont);
            let ni = f.insts.push(data);
            f.blocks[nb].insts.push(ni);
            f.spans[ni] = if call_site_spans || body.call_site.contains(&inst) {
                span
            } else {
                callee.spans[inst]
            };
            if let Some(r) = callee.results[inst] {
                let v = f.values.push(ValueData {
                    ty: callee.values[r].ty,
                    def: ValueDef::Result(ni),
                });
                f.results[ni] = Some(v);
                values[r] = Some(v);
            }
            copied.push(ni);
        }
    }
    for ni in copied {
        f.insts[ni].map_operands(|v| values[v].unwrap_or(v));
    }
    let entry = blocks[callee_entry].expect("the callee's entry block was copied");
    // The call instruction itself becomes the jump into the copy: no instruction
    // naming the callee is left behind in the arena (some back-end scans read the
    // whole arena, and legalization renumbers only the calls it finds in blocks).
    f.insts[call] = InstData::Jump {
        dest: BlockCall {
            block: entry,
            args: SmallVec::new(),
        },
    };
    let at = f
        .layout
        .iter()
        .position(|&b| b == block)
        .map_or(f.layout.len(), |p| p + 1);
    new_layout.push(cont);
    f.layout.splice(at..at, new_layout);
    Some(entry)
}

/// Moves the instructions after the call at `pos` of `block` to a new block (not yet
/// laid out), leaving the call last in `block`; the call's result becomes the new
/// block's parameter.
fn split_after_call(f: &mut Function, block: Block, pos: usize) -> Block {
    let rest = f.blocks[block].insts.split_off(pos + 1);
    let call = f.blocks[block].insts[pos];
    let cont = f.blocks.push(BlockData {
        params: SmallVec::new(),
        insts: rest,
    });
    if let Some(r) = f.results[call].take() {
        f.values[r].def = ValueDef::Param(cont, 0);
        f.blocks[cont].params.push(r);
    }
    cont
}

/// A copy of a callee instruction with its blocks and slots renamed (values are renamed
/// afterwards) and `return` turned into a jump to `cont`.
fn copy_inst(
    data: &InstData,
    blocks: &SecondaryMap<Block, Option<Block>>,
    slots: &SecondaryMap<StackSlot, Option<StackSlot>>,
    cont: Block,
) -> InstData {
    match data {
        // `cont` is a caller block: it must not go through the callee's block map.
        InstData::Return { value } => InstData::Jump {
            dest: BlockCall {
                block: cont,
                args: value.iter().copied().collect(),
            },
        },
        InstData::StackAddr { slot } => InstData::StackAddr {
            slot: slots[*slot].unwrap_or(*slot),
        },
        other => {
            let mut copy = other.clone();
            super::cfg::retarget(&mut copy, |b| blocks[b].unwrap_or(b));
            copy
        }
    }
}

/// How a copied slot is zeroed so that it starts as a fresh frame's slot would.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Zero {
    /// [`super::promote`] will promote the slot as a uniform scalar of this type: one
    /// store of the same shape, which promotion turns into its initial constant.
    Uniform(Type),
    /// Promoted as a per-lane value of this (varying) type, through the lane offset
    /// the callee computes as this value: one varying store of the same shape.
    Lanes(Type, Value),
    /// Stays in memory: uniform integer stores over its bytes.
    Bytes,
}

/// The body copied at each call of a callee: the callee with its slots zeroed at entry,
/// as every copy starts, and then promoted and cleaned of dead code, once, instead of in
/// each copy. A promoted slot's accesses become values in the copy just as they would
/// in the caller after inlining (the copy is single-entry: its values dominate nothing
/// else), so the caller ends up with the same code, having copied and promoted far less
/// (tricubic's row function: 128 instructions as lowered, 49 prepared, 32 copies).
struct Body {
    func: Function,
    /// The zeroing instructions, which take the call's span in each copy.
    call_site: FxHashSet<Inst>,
    /// How many of them zero the callee's own slots (not those of copies in it).
    own_zeros: usize,
}

impl Body {
    /// `callee` prepared; its first `own_slots` slots are its own, the others those of
    /// the copies inlined into it.
    fn of(callee: &Function, own_slots: usize, lanes: u32, ptr: u32) -> Body {
        let zeros = zero_plan(callee, lanes, ptr);
        if zeros.is_empty() {
            // No slot to zero or promote (an optimized runtime routine, say): the
            // callee as it is, which the caller's own cleanup passes see anyway.
            return Body {
                func: callee.clone(),
                call_site: FxHashSet::default(),
                own_zeros: 0,
            };
        }
        let (own, copied): (Vec<_>, Vec<_>) = zeros
            .into_iter()
            .partition(|(slot, _)| slot.index() < own_slots);
        let mut func = callee.clone();
        let mut zeroing = zero_slots(&mut func, callee, &own);
        let own_zeros = zeroing.len();
        zeroing.extend(zero_slots(&mut func, callee, &copied));
        let call_site = zeroing.iter().copied().collect();
        let entry = func.layout[0];
        func.blocks[entry].insts.splice(0..0, zeroing);
        super::promote::promote_function(&mut func, lanes, ptr);
        super::dce::run(&mut func);
        Body {
            func,
            call_site,
            own_zeros,
        }
    }
}

/// How each slot of `callee` that it takes the address of is zeroed: the slots
/// [`super::promote`] promotes (found by promoting a copy) get a store of their own
/// shape, so that promotion still applies and the zero is a constant; the others are
/// zeroed byte for byte (arrays, aggregates, slots whose address escapes).
fn zero_plan(callee: &Function, lanes: u32, ptr: u32) -> Vec<(StackSlot, Zero)> {
    let addressed = |f: &Function| -> FxHashSet<StackSlot> {
        layout_insts(f)
            .filter_map(|i| match f.insts[i] {
                InstData::StackAddr { slot } => Some(slot),
                _ => None,
            })
            .collect()
    };
    let mut slots: Vec<StackSlot> = addressed(callee).into_iter().collect();
    if slots.is_empty() {
        return Vec::new();
    }
    slots.sort();
    let mut promoted = callee.clone();
    super::promote::promote_function(&mut promoted, lanes, ptr);
    let kept = addressed(&promoted);
    slots
        .into_iter()
        .map(|slot| {
            let zero = if kept.contains(&slot) {
                Zero::Bytes
            } else {
                promoted_shape(callee, slot).unwrap_or(Zero::Bytes)
            };
            (slot, zero)
        })
        .collect()
}

/// The shape of the first load or store of a slot that promotion accepts (all its
/// accesses share it): straight through `stack_addr` (uniform) or through
/// `iadd (splat (stack_addr)), offset` (per lane).
fn promoted_shape(callee: &Function, slot: StackSlot) -> Option<Zero> {
    let def = |v: Value| match callee.values.get(v)?.def {
        ValueDef::Result(i) => callee.insts.get(i),
        ValueDef::Param(..) => None,
    };
    let is_slot = |v: Value| matches!(def(v), Some(InstData::StackAddr { slot: s }) if *s == slot);
    layout_insts(callee).find_map(|inst| {
        let (addr, ty) = match &callee.insts[inst] {
            InstData::Load { ty, addr, .. } => (*addr, *ty),
            InstData::Store { addr, value, .. } => (*addr, callee.values[*value].ty),
            _ => return None,
        };
        if is_slot(addr) {
            return Some(Zero::Uniform(ty.to_uniform()));
        }
        match def(addr)? {
            InstData::Binary {
                op: crate::ir::BinaryOp::Iadd,
                args: [base, off],
            } => match def(*base)? {
                InstData::Splat { arg } if is_slot(*arg) => {
                    Some(Zero::Lanes(ty.to_varying(), *off))
                }
                _ => None,
            },
            _ => None,
        }
    })
}

/// Instructions, appended to `f` (a copy of `callee`), that zero the slots `zeros`
/// plans, to run before the body: what a fresh frame would hold. Their span is none:
/// each copy of the body gives them the call's.
fn zero_slots(f: &mut Function, callee: &Function, zeros: &[(StackSlot, Zero)]) -> Vec<Inst> {
    let mut out = Emit {
        f,
        insts: Vec::new(),
    };
    for &(slot, zero) in zeros {
        let addr = out.push(InstData::StackAddr { slot }, Type::PTR);
        match zero {
            Zero::Uniform(ty) => {
                let z = out.zero(ty);
                out.store(addr, z);
            }
            Zero::Lanes(ty, off) => {
                let mut memo = FxHashMap::default();
                let Some(off) = out.clone_expr(callee, off, &mut memo, 8) else {
                    out.zero_bytes(addr, out.f.stack_slots[slot]);
                    continue;
                };
                let base = out.push(InstData::Splat { arg: addr }, Type::PTR.to_varying());
                let at = out.push(
                    InstData::Binary {
                        op: crate::ir::BinaryOp::Iadd,
                        args: [base, off],
                    },
                    Type::PTR.to_varying(),
                );
                let z = out.zero(ty.to_uniform());
                let zs = out.push(InstData::Splat { arg: z }, ty);
                out.store(at, zs);
            }
            Zero::Bytes => {
                let data = out.f.stack_slots[slot];
                out.zero_bytes(addr, data);
            }
        }
    }
    out.insts
}

/// Appends new instructions (outside any block) to a list.
struct Emit<'a> {
    f: &'a mut Function,
    insts: Vec<Inst>,
}

impl Emit<'_> {
    fn push(&mut self, data: InstData, ty: Type) -> Value {
        let inst = self.push_void(data);
        let v = self.f.values.push(ValueData {
            ty,
            def: ValueDef::Result(inst),
        });
        self.f.results[inst] = Some(v);
        v
    }

    fn push_void(&mut self, data: InstData) -> Inst {
        let inst = self.f.insts.push(data);
        self.f.spans[inst] = crate::source::Span::default();
        self.insts.push(inst);
        inst
    }

    fn zero(&mut self, ty: Type) -> Value {
        let data = if ty.scalar.is_ieee() {
            InstData::Fconst { ty, bits: 0 }
        } else {
            InstData::Iconst { ty, bits: 0 }
        };
        self.push(data, ty)
    }

    fn store(&mut self, addr: Value, value: Value) {
        self.push_void(InstData::Store {
            space: Space::Private,
            addr,
            value,
            mask: None,
        });
    }

    /// Uniform integer stores of zero over the slot at `addr`, each as wide as the
    /// slot's alignment and the bytes left allow.
    fn zero_bytes(&mut self, addr: Value, slot: crate::ir::StackSlotData) {
        use crate::ir::Scalar;
        let mut at = 0u32;
        while at < slot.size {
            let (width, scalar) = [(8, Scalar::I64), (4, Scalar::I32), (2, Scalar::I16)]
                .into_iter()
                .find(|&(w, _)| w <= slot.align && at.is_multiple_of(w) && at + w <= slot.size)
                .unwrap_or((1, Scalar::I8));
            let place = if at == 0 {
                addr
            } else {
                let off = self.push(
                    InstData::Iconst {
                        ty: Type::PTR,
                        bits: u64::from(at),
                    },
                    Type::PTR,
                );
                self.push(
                    InstData::Binary {
                        op: crate::ir::BinaryOp::Iadd,
                        args: [addr, off],
                    },
                    Type::PTR,
                )
            };
            let z = self.zero(Type::uniform(scalar));
            self.store(place, z);
            at += width;
        }
    }

    /// A copy of the pure expression computing `v` in `callee` (the lane offset of a
    /// per-lane slot: `lane_index`, conversions, constants, splats, products), or `None`
    /// if it reads anything else or is deeper than `depth`.
    fn clone_expr(
        &mut self,
        callee: &Function,
        v: Value,
        memo: &mut FxHashMap<Value, Value>,
        depth: u32,
    ) -> Option<Value> {
        if let Some(&c) = memo.get(&v) {
            return Some(c);
        }
        let ValueDef::Result(inst) = callee.values.get(v)?.def else {
            return None;
        };
        let mut data = callee.insts.get(inst)?.clone();
        let pure = matches!(
            data,
            InstData::Iconst { .. }
                | InstData::Special { .. }
                | InstData::Splat { .. }
                | InstData::Convert { .. }
                | InstData::Binary { .. }
        );
        if !pure || depth == 0 {
            return None;
        }
        let mut ok = true;
        for op in data.operands() {
            match self.clone_expr(callee, op, memo, depth - 1) {
                Some(c) => {
                    memo.insert(op, c);
                }
                None => ok = false,
            }
        }
        if !ok {
            return None;
        }
        data.map_operands(|x| memo.get(&x).copied().unwrap_or(x));
        let c = self.push(data, callee.values[v].ty);
        memo.insert(v, c);
        Some(c)
    }
}
