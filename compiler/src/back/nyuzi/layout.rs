//! Where everything of a launch image lives: the [`Layout`] the image builder computes
//! and writes beside the image as `image.hex.json`, so a host (or a test) can find each
//! buffer in the emulator's memory after a run.
//!
//! The map, in increasing addresses, each region 64-byte aligned: the start-up stub
//! and runtime at 0, the module's code, its data, the parameter block (an 8-byte result
//! slot, then each argument's words in parameter order), the buffers (each followed by
//! an unused red zone, [`super::image::BUFFER_RED_ZONE`] bytes), and one area per
//! planned hardware thread (scheduler record, shared memory, context records, stacks).
//! Everything below [`Layout::image_end`] is initialized by the image (zero where
//! nothing else is), since the upstream emulator fills uncovered memory with random
//! bytes.

use serde::{Deserialize, Serialize};

/// A byte range `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    pub start: u32,
    pub end: u32,
}

impl Range {
    pub fn len(&self) -> u32 {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// One buffer argument in memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferLayout {
    pub name: String,
    /// Byte address of element 0 (64-byte aligned).
    pub address: u32,
    /// Element type as the language names it (`float`, `int`, `uint8`, ...).
    pub elem: String,
    /// Elements.
    pub length: u32,
    /// Bytes (`length` × element size).
    pub bytes: u32,
    /// Declared `const`: the kernel cannot change it.
    pub read_only: bool,
}

/// One scalar argument in the parameter block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScalarLayout {
    pub name: String,
    pub address: u32,
    #[serde(rename = "type")]
    pub ty: String,
    /// Its words as passed (low word first), zero-extended from the type's width.
    pub words: Vec<u32>,
}

/// The layout of one image, serialized as `image.hex.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Always `spmdc-nyuzi-image`.
    pub format: String,
    pub version: u32,
    pub entry: String,
    /// The machine the image was built for (`-p` cores × `-t` threads per core); it
    /// runs correctly on that machine or a larger one.
    pub cores: u32,
    pub threads_per_core: u32,
    /// Workers, the hardware threads that run blocks: `min(cores × threads_per_core,
    /// blocks)`. Worker `w` runs blocks `w, w + threads_used, ...`.
    pub threads_used: u32,
    /// The hardware thread id (`core × threads_per_core + thread`) of each worker,
    /// spread over the cores.
    pub worker_threads: Vec<u32>,
    /// Address of the thread table: 32 words, each hardware thread's scheduler record
    /// (0: the thread halts at start-up).
    pub thread_table: u32,
    /// Memory the image needs (the emulator's default, 16 MiB).
    pub memory_size: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub lanes: u32,
    pub gangs_per_block: u32,
    /// Bytes of each gang's stack.
    pub gang_stack_bytes: u32,
    /// Bytes of shared memory per block.
    pub shared_bytes: u32,
    /// The start-up stub and runtime.
    pub runtime: Range,
    /// The module's code (entry function and callees).
    pub code: Range,
    pub entry_address: u32,
    pub data: Range,
    /// The parameter block; the entry's return value (block 0, gang 0) is stored in
    /// its first 8 bytes.
    pub params: Range,
    pub result_address: u32,
    pub scalars: Vec<ScalarLayout>,
    pub buffers: Vec<BufferLayout>,
    /// Per-worker areas: worker `w`'s starts at `threads.start + w × thread_area_bytes`
    /// with its scheduler record, then shared memory, context records and stacks.
    pub threads: Range,
    pub thread_area_bytes: u32,
    /// Address of worker 0's scheduler record (the others follow `thread_area_bytes`
    /// apart).
    pub scheduler_base: u32,
    /// Stacks of worker 0's gangs (the lowest and highest addresses of all stacks are
    /// inside [`Layout::threads`]).
    pub stacks: Range,
    /// Everything below this address is in the image.
    pub image_end: u32,
}

impl Layout {
    pub const FORMAT: &'static str = "spmdc-nyuzi-image";

    pub fn buffer(&self, name: &str) -> Option<&BufferLayout> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// Address of worker `w`'s scheduler record.
    pub fn scheduler(&self, w: u32) -> u32 {
        self.scheduler_base + w * self.thread_area_bytes
    }

    /// The worker that runs on hardware thread `t`, if any.
    pub fn worker_of(&self, t: u32) -> Option<u32> {
        self.worker_threads
            .iter()
            .position(|&x| x == t)
            .map(|w| w as u32)
    }

    pub fn to_json_string(&self) -> String {
        let mut s = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }

    pub fn from_json(text: &str) -> Result<Layout, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}
