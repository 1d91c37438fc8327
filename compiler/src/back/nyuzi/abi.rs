//! The Nyuzi ABI of spmdc's generated code: register roles, the calling convention,
//! the per-gang context record and the memory map of launch images. The code
//! generator and the image builder both read these constants; nothing else may
//! assume them.
//!
//! # Registers and calls (notes §7)
//!
//! * Arguments: uniform scalars in `s0`–`s7`, varying values in `v0`–`v7`, in order of
//!   the parameters per class; a 64-bit value takes two consecutive registers of its
//!   class (low word first). A varying `bool` (a mask) is a scalar register. A callee
//!   that takes a mask receives it as its last scalar argument. Arguments that do not
//!   fit go on the stack. Results come back in `s0`(`s1`) or `v0`(`v1`).
//! * Callee-saved: `s24`–`s27` and `v26`–`v31`, plus `gp`, `fp`, `sp` and `ra` (a
//!   function that calls saves `ra`). Everything else is caller-saved.
//! * `gp` (`s28`) holds the address of the running gang's [context record](ctx) for
//!   the whole launch; generated code never writes it. `sp` (`s30`) is the gang's own
//!   stack pointer, 64-byte aligned at calls, growing down. `fp` (`s29`) is not
//!   allocated: the code generator uses it as the scratch register for frame offsets
//!   beyond an instruction's immediate, and a function that does saves and restores it
//!   (it stays callee-saved). Only a function that calls `alloca`, whose `sp` moves,
//!   uses it as a frame pointer (and `ra` as its scratch; see [`super::emit`]).
//! * `barrier()` is a call to the runtime routine [`RuntimeFn::Barrier`], which
//!   switches to the next gang of the block (see the image builder). It preserves
//!   only `gp`, `sp` and returns to `ra`: every other register is clobbered, so
//!   values live across a barrier are spilled to the gang's own stack.

use crate::back::common::mach::{PReg, RegClass};

/// Scalar registers `s0`–`s31`: 32-bit, also holding 16-lane masks in their low bits.
pub const SCALAR: RegClass = RegClass(0);
/// Vector registers `v0`–`v31`: 16 lanes of 32 bits.
pub const VECTOR: RegClass = RegClass(1);

/// Lanes of a vector register: `programCount` on this target.
pub const LANES: u32 = 16;

pub const fn s(index: u8) -> PReg {
    PReg {
        class: SCALAR,
        index,
    }
}

pub const fn v(index: u8) -> PReg {
    PReg {
        class: VECTOR,
        index,
    }
}

/// The gang context pointer (`gp`).
pub const GP: PReg = s(28);
pub const FP: PReg = s(29);
pub const SP: PReg = s(30);
/// The link register: `call` writes the return address here, `ret` is `b s31`.
pub const RA: PReg = s(31);

/// Scalar argument and result registers.
pub const SCALAR_ARGS: [PReg; 8] = [s(0), s(1), s(2), s(3), s(4), s(5), s(6), s(7)];
pub const VECTOR_ARGS: [PReg; 8] = [v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7)];
pub const CALLEE_SAVED_SCALAR: [PReg; 4] = [s(24), s(25), s(26), s(27)];
pub const CALLEE_SAVED_VECTOR: [PReg; 6] = [v(26), v(27), v(28), v(29), v(30), v(31)];

/// Routines the image builder provides and generated code calls by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuntimeFn {
    /// `barrier()`: wait until every gang of the block that has not returned arrives.
    /// `s0` holds the barrier's identifier (the IR instruction's index in its function
    /// plus the function's symbol index × 65536), so gangs waiting at different barriers
    /// are reported as a deadlock, as the interpreter does.
    Barrier,
}

impl RuntimeFn {
    pub fn symbol(self) -> &'static str {
        match self {
            RuntimeFn::Barrier => "__spmdc_barrier",
        }
    }
}

/// The per-gang context record at `gp`, 64-byte aligned; offsets in bytes.
///
/// The image builder fills it before the gang starts; generated code reads it (and
/// the runtime writes its scheduling fields).
pub mod ctx {
    /// `threadIdx.x` of each lane (16 words; a `load_v`).
    pub const THREAD_IDX_X: i32 = 0;
    pub const THREAD_IDX_Y: i32 = 64;
    pub const THREAD_IDX_Z: i32 = 128;
    /// `programIndex`: the words 0, 1, ..., 15.
    pub const LANE_INDEX: i32 = 192;
    /// The lanes that exist (threads of the block; low 16 bits). Every mask that
    /// guards an effect, a reduction or a call's hidden mask is ANDed with it, as
    /// the interpreter limits masks to existing lanes.
    pub const EXISTS: i32 = 256;
    /// The gang's index within its block.
    pub const GANG_INDEX: i32 = 260;
    pub const BLOCK_IDX_X: i32 = 264;
    pub const BLOCK_IDX_Y: i32 = 268;
    pub const BLOCK_IDX_Z: i32 = 272;
    pub const BLOCK_DIM_X: i32 = 276;
    pub const BLOCK_DIM_Y: i32 = 280;
    pub const BLOCK_DIM_Z: i32 = 284;
    pub const GRID_DIM_X: i32 = 288;
    pub const GRID_DIM_Y: i32 = 292;
    pub const GRID_DIM_Z: i32 = 296;
    /// Address of the block's shared memory (every `shared` variable at its offset
    /// from [`crate::back::nyuzi::object::Object::shared_size`]'s layout).
    pub const SHARED_BASE: i32 = 300;
    /// Runtime scheduling fields (the image builder's; generated code never reads
    /// them): saved `sp`, saved `ra`, state, barrier identifier.
    pub const SAVED_SP: i32 = 304;
    pub const SAVED_RA: i32 = 308;
    pub const STATE: i32 = 312;
    pub const BARRIER_ID: i32 = 316;
    /// Address of the next gang's record in the block (a ring), and of the hardware
    /// thread's scheduler record.
    pub const NEXT: i32 = 320;
    pub const SCHEDULER: i32 = 324;
    /// Bytes of dynamic shared memory per block (the launch's), which follow the
    /// static shared variables ([`crate::back::nyuzi::shared_layout`]).
    pub const DYN_SHARED_BYTES: i32 = 328;
    /// The lowest address `sp` may reach through `alloca` (`stack_alloc`): the
    /// gang's stack bottom plus its canary, so an allocation that does not fit traps
    /// before it moves `sp`.
    pub const STACK_LIMIT: i32 = 332;
    /// Bytes of one record (a multiple of 64).
    pub const SIZE: u32 = 384;
}

/// Memory map of a launch image (byte addresses). Code starts at 0 (execution starts
/// there on thread 0); data, parameters, buffers and per-thread areas follow, each
/// 64-byte aligned; everything fits in [`MEMORY_SIZE`], the upstream emulator's
/// default memory.
pub const MEMORY_SIZE: u32 = 0x0100_0000;
/// Default bytes of each gang's stack.
pub const DEFAULT_GANG_STACK: u32 = 16 * 1024;
/// Serial output (`store_32` of a character prints it on the upstream emulator).
pub const SERIAL_OUTPUT: u32 = 0xffff_0048;
