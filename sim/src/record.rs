//! What a profiled or traced run records: per-instruction counters ([`Profile`]) and
//! the instruction-by-instruction path of one gang or warp with its active lanes
//! ([`Trace`]).
//!
//! Both are plain data keyed by the machine's own coordinates, a *code* (a kernel on
//! the GPU, a function in the interpreter, the one memory image on Nyuzi) and an
//! *index* within it (an instruction number, or a word address / 4 on Nyuzi). The
//! simulators fill them and know nothing of source lines; the compiler maps the
//! coordinates back through its line tables, so this crate keeps knowing nothing of
//! the compiler. A machine only records when it was given a [`Recorder`]: the
//! unrecorded paths pay at most one branch.

/// The most stall causes a machine reports (Nyuzi's timing model has 8).
pub const MAX_STALL_CAUSES: usize = 8;

/// Counters of one instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstCounters {
    /// Times it executed (once per gang or warp instruction).
    pub executed: u64,
    /// Lanes it could have used over those executions (the gang or warp width for a
    /// vector instruction, 0 for a scalar one).
    pub lane_slots: u64,
    /// Lanes that were on over those executions.
    pub active_lanes: u64,
    /// Cycles a thread or scheduler waited with this instruction next, by cause
    /// (indexed like [`Profile::stall_causes`]).
    pub stalls: [u64; MAX_STALL_CAUSES],
}

impl InstCounters {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &InstCounters) {
        self.executed += other.executed;
        self.lane_slots += other.lane_slots;
        self.active_lanes += other.active_lanes;
        for (a, b) in self.stalls.iter_mut().zip(other.stalls) {
            *a += b;
        }
    }

    /// Stall cycles over every cause.
    pub fn stall_total(&self) -> u64 {
        self.stalls.iter().sum()
    }
}

/// Per-instruction counters of a run: `codes[code][index]`, grown as instructions
/// are met. Work that no instruction can be charged with (a scheduler idle with no
/// warp to blame, an instruction outside every code) goes to `elsewhere`, so the
/// counters always add up to the run's totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    pub codes: Vec<Vec<InstCounters>>,
    pub elsewhere: InstCounters,
    /// The names of the stall causes, in the order of [`InstCounters::stalls`].
    pub stall_causes: Vec<&'static str>,
}

impl Profile {
    /// The counters of instruction `index` of `code`, created on first use. Indices
    /// past `limit` (a machine's own bound on sensible coordinates) go to `elsewhere`.
    #[inline]
    pub fn at(&mut self, code: u32, index: u32, limit: u32) -> &mut InstCounters {
        if index >= limit {
            return &mut self.elsewhere;
        }
        let (code, index) = (code as usize, index as usize);
        if self.codes.len() <= code {
            self.codes.resize_with(code + 1, Vec::new);
        }
        let insts = &mut self.codes[code];
        if insts.len() <= index {
            insts.resize(index + 1, InstCounters::default());
        }
        &mut insts[index]
    }

    /// Counts one execution with `active` of `slots` lanes on.
    #[inline]
    pub fn executed(&mut self, code: u32, index: u32, limit: u32, slots: u32, active: u32) {
        let c = self.at(code, index, limit);
        c.executed += 1;
        c.lane_slots += u64::from(slots);
        c.active_lanes += u64::from(active);
    }

    /// Charges `cycles` of stall `cause` to an instruction, or to `elsewhere`.
    #[inline]
    pub fn stalled(&mut self, at: Option<(u32, u32)>, limit: u32, cause: usize, cycles: u64) {
        let c = match at {
            Some((code, index)) => self.at(code, index, limit),
            None => &mut self.elsewhere,
        };
        if let Some(s) = c.stalls.get_mut(cause) {
            *s += cycles;
        }
    }

    /// The sum over every instruction and `elsewhere`.
    pub fn total(&self) -> InstCounters {
        let mut t = self.elsewhere;
        for c in self.codes.iter().flatten() {
            t.add(c);
        }
        t
    }
}

/// One executed instruction of the traced gang or warp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceStep {
    pub code: u32,
    pub index: u32,
    /// The lanes on (bit i = lane i); `None` for a scalar or uniform instruction,
    /// which has no lanes.
    pub mask: Option<u64>,
}

/// The path of one gang or warp: its first `limit` instructions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Which gang or warp: a Nyuzi hardware thread, the interpreter's gang or the
    /// GPU's warp, counted over the launch (block by block in launch order).
    pub unit: u64,
    /// Lanes of the gang or warp.
    pub width: u32,
    pub limit: usize,
    pub steps: Vec<TraceStep>,
    /// The unit executed more than `limit` instructions.
    pub truncated: bool,
}

impl Trace {
    pub fn new(unit: u64, width: u32, limit: usize) -> Trace {
        Trace {
            unit,
            width,
            limit,
            steps: Vec::new(),
            truncated: false,
        }
    }

    /// Appends a step, or notes that the limit cut the trace.
    #[inline]
    pub fn push(&mut self, step: TraceStep) {
        if self.steps.len() < self.limit {
            self.steps.push(step);
        } else {
            self.truncated = true;
        }
    }
}

/// What a run should record; each part is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorder {
    pub profile: Option<Profile>,
    pub trace: Option<Trace>,
}

impl Recorder {
    /// Whether anything is recorded at all.
    pub fn is_active(&self) -> bool {
        self.profile.is_some() || self.trace.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_grow_and_add_up_with_elsewhere() {
        let mut p = Profile::default();
        p.executed(1, 3, 10, 16, 5);
        p.executed(1, 3, 10, 16, 7);
        p.executed(0, 12, 10, 16, 16); // past the limit
        p.stalled(Some((1, 3)), 10, 2, 40);
        p.stalled(None, 10, 0, 9);
        assert_eq!(p.codes[1][3].executed, 2);
        assert_eq!(p.codes[1][3].active_lanes, 12);
        assert_eq!(p.codes[1][3].stalls[2], 40);
        assert_eq!(p.elsewhere.executed, 1);
        let t = p.total();
        assert_eq!((t.executed, t.lane_slots, t.active_lanes), (3, 48, 28));
        assert_eq!(t.stall_total(), 49);
    }

    #[test]
    fn a_trace_stops_at_its_limit_and_says_so() {
        let mut t = Trace::new(0, 16, 2);
        for i in 0..3 {
            t.push(TraceStep {
                code: 0,
                index: i,
                mask: Some(1),
            });
        }
        assert_eq!(t.steps.len(), 2);
        assert!(t.truncated);
    }
}
