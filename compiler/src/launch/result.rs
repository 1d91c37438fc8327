//! What a run reports: the buffers after the launch, the returned value, what the
//! kernel printed and the target's statistics, as JSON (`--json`) or as the
//! `--print NAME` text. The JSON schema is documented in
//! [run.md](../../../lang-spec/run.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::launch::buffer::Buffer;
use crate::launch::config::LaunchConfig;
use crate::launch::elem::{format_float, Value};
use crate::launch::error::{did_you_mean, ErrorKind, LaunchError};
use crate::launch::files;
use crate::launch::materialize::ArgValue;
use crate::launch::Launch;

/// One statistic: a count, or a ratio/average.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatValue {
    Count(u64),
    Ratio(f64),
}

impl From<u64> for StatValue {
    fn from(v: u64) -> Self {
        StatValue::Count(v)
    }
}

impl From<f64> for StatValue {
    fn from(v: f64) -> Self {
        StatValue::Ratio(v)
    }
}

impl StatValue {
    pub fn to_json(self) -> serde_json::Value {
        match self {
            StatValue::Count(v) => serde_json::Value::from(v),
            StatValue::Ratio(v) => Value::F64(v).to_json(),
        }
    }
}

impl std::fmt::Display for StatValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            StatValue::Count(v) => write!(f, "{v}"),
            StatValue::Ratio(v) => f.write_str(&format_float(v)),
        }
    }
}

/// A target's statistics, by `snake_case` name, sorted. Every target reports at least
/// [`Stats::DYNAMIC_INSTRUCTIONS`]; targets that model time also report
/// [`Stats::CYCLES`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    map: BTreeMap<String, StatValue>,
}

impl Stats {
    /// Instructions executed (per gang/warp issue, summed over the launch).
    pub const DYNAMIC_INSTRUCTIONS: &'static str = "dynamic_instructions";
    /// Simulated clock cycles from launch to completion.
    pub const CYCLES: &'static str = "cycles";

    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&mut self, key: &str, v: impl Into<StatValue>) -> &mut Self {
        self.map.insert(key.to_string(), v.into());
        self
    }

    pub fn get(&self, key: &str) -> Option<StatValue> {
        self.map.get(key).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, StatValue)> {
        self.map.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Checks the convention: `snake_case` keys, `dynamic_instructions` present, and
    /// `cycles` present when `timing`. For targets' tests.
    pub fn check_convention(&self, timing: bool) -> Result<(), String> {
        if let Some(k) = self.map.keys().find(|k| !is_snake_case(k)) {
            return Err(format!("statistic `{k}` is not snake_case"));
        }
        let mut required = vec![Self::DYNAMIC_INSTRUCTIONS];
        if timing {
            required.push(Self::CYCLES);
        }
        match required.iter().find(|k| !self.map.contains_key(**k)) {
            Some(k) => Err(format!("statistic `{k}` is missing")),
            None => Ok(()),
        }
    }

    /// The `--stats` text: the statistics grouped in sections under readable names,
    /// figures rounded ([`super::stats_text`]).
    pub fn format_text(&self) -> String {
        super::stats_text::render(self)
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.map
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect(),
        )
    }
}

/// The statistics of the parts of a run, for `--stats=full`: per SM (dac-gpu) or
/// core (nyuzi), and per function of the code that ran. Each part's statistics use
/// the names of the totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
    /// What `units` are: `SM` or `core`.
    pub unit_kind: String,
    pub units: Vec<Stats>,
    /// Per function (the kernel, its callees, runtime routines, and the work with no
    /// function), in code order.
    pub functions: Vec<(String, Stats)>,
}

impl Breakdown {
    pub fn is_empty(&self) -> bool {
        self.units.is_empty() && self.functions.is_empty()
    }

    pub fn to_json(&self) -> serde_json::Value {
        let functions: Vec<serde_json::Value> = self
            .functions
            .iter()
            .map(|(name, s)| serde_json::json!({"function": name, "stats": s.to_json()}))
            .collect();
        serde_json::json!({
            "unit_kind": self.unit_kind,
            "units": self.units.iter().map(Stats::to_json).collect::<Vec<_>>(),
            "functions": functions,
        })
    }
}

/// What a run was made with, for the record: the machine (a dac-gpu configuration's
/// every key, Nyuzi's cores and timing parameters) and the compiler's switches.
pub type Settings = serde_json::Map<String, serde_json::Value>;

/// `lower_snake_case`: lowercase ASCII letters and digits in words joined by single
/// underscores, starting with a letter.
pub fn is_snake_case(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('_')
        && !s.contains("__")
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The outcome of one launch on one target.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// The entry point's name.
    pub entry: String,
    /// `interp`, `nyuzi` or `dac-gpu`.
    pub target: String,
    pub config: LaunchConfig,
    /// Every buffer argument after the launch, in parameter order.
    pub buffers: Vec<(String, Buffer)>,
    /// What an `export` function returned (the first gang of block 0's value).
    pub ret: Option<Value>,
    /// Everything the kernel printed, in order.
    pub output: String,
    pub stats: Stats,
    /// Per SM or core and per function, when the run counted them.
    pub breakdown: Breakdown,
    /// The machine the run ran on (empty for the interpreter but its gang width).
    pub machine: Settings,
    /// The compiler's switches the code was built with.
    pub compiler: Settings,
}

impl RunResult {
    /// A result holding the buffers of `launch` (as the target left them).
    pub fn from_launch(
        launch: &Launch,
        target: impl Into<String>,
        ret: Option<Value>,
        output: String,
        stats: Stats,
    ) -> RunResult {
        let buffers = launch
            .signature
            .params
            .iter()
            .zip(&launch.args)
            .filter_map(|(p, a)| match a {
                ArgValue::Buffer(b) => Some((p.name.clone(), b.clone())),
                ArgValue::Scalar(_) => None,
            })
            .collect();
        RunResult {
            entry: launch.signature.name.clone(),
            target: target.into(),
            config: launch.config,
            buffers,
            ret,
            output,
            stats,
            breakdown: Breakdown::default(),
            machine: Settings::new(),
            compiler: Settings::new(),
        }
    }

    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    /// The result as a JSON value (object keys sorted, as `serde_json::Value` keeps them).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The `--json` output: pretty-printed, keys in the documented order, buffers in
    /// parameter order, ending with a newline.
    pub fn to_json_string(&self) -> String {
        let mut s = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }

    /// The `--print` text for `names`, in the order given: each buffer as
    /// [`Buffer::format_print`]; the name `return` prints the returned value. An unknown
    /// name is an error that lists the buffers.
    pub fn format_print<S: AsRef<str>>(&self, names: &[S]) -> Result<String, LaunchError> {
        let mut out = String::new();
        for name in names {
            let name = name.as_ref();
            if let Some(b) = self.buffer(name) {
                out.push_str(&b.format_print(name));
            } else if name == "return" {
                match self.ret {
                    Some(v) => out.push_str(&format!("return = {v}\n")),
                    None => out.push_str("return = void\n"),
                }
            } else {
                return Err(self.unknown_buffer("--print", name, true));
            }
        }
        Ok(out)
    }

    /// Writes each `(name, path)` buffer to its file (`--save`), in the format the
    /// path's extension names, as [`files::write_buffer`] does. The first unknown name or
    /// unwritable file is the error.
    pub fn save(&self, saves: &[(String, PathBuf)]) -> Result<(), LaunchError> {
        for (name, path) in saves {
            let Some(b) = self.buffer(name) else {
                return Err(self.unknown_buffer("--save", name, false));
            };
            files::write_buffer(path, b).map_err(|e| {
                LaunchError::new(
                    ErrorKind::File,
                    format!("`--save {name}={}`: cannot write it: {e}", path.display()),
                )
            })?;
        }
        Ok(())
    }

    /// The error for `OPTION NAME` where no buffer is called `NAME`, listing the buffers.
    fn unknown_buffer(&self, option: &str, name: &str, takes_return: bool) -> LaunchError {
        let names: Vec<&str> = self.buffers.iter().map(|(n, _)| n.as_str()).collect();
        let err = LaunchError::new(
            ErrorKind::UnknownName,
            format!(
                "`{option} {name}`: `{}` has no buffer parameter named `{name}`{}",
                self.entry,
                did_you_mean(name, names.iter().copied())
            ),
        );
        if !names.is_empty() {
            err.with_note(format!("the buffers are: {}", names.join(", ")))
        } else if takes_return {
            err.with_note(format!(
                "`{}` takes no buffers; `--print return` prints the returned value",
                self.entry
            ))
        } else {
            err.with_note(format!("`{}` takes no buffers", self.entry))
        }
    }
}

/// Buffers as a JSON object in parameter order.
struct BufferMap<'a>(&'a [(String, Buffer)]);

impl Serialize for BufferMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (name, b) in self.0 {
            m.serialize_entry(name, &b.to_json())?;
        }
        m.end()
    }
}

impl Serialize for RunResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let dim = |d: sim::Dim3| [d.x, d.y, d.z];
        let mut st = s.serialize_struct("RunResult", 11)?;
        st.serialize_field("entry", &self.entry)?;
        st.serialize_field("target", &self.target)?;
        st.serialize_field("grid", &dim(self.config.grid))?;
        st.serialize_field("block", &dim(self.config.block))?;
        st.serialize_field("buffers", &BufferMap(&self.buffers))?;
        st.serialize_field("return", &self.ret.map(Value::to_json))?;
        st.serialize_field("output", &self.output)?;
        st.serialize_field("stats", &self.stats.to_json())?;
        if !self.breakdown.is_empty() {
            st.serialize_field("breakdown", &self.breakdown.to_json())?;
        }
        st.serialize_field("machine", &self.machine)?;
        st.serialize_field("compiler", &self.compiler)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_keys() {
        for ok in ["cycles", "dynamic_instructions", "l1_misses"] {
            assert!(is_snake_case(ok), "{ok}");
        }
        for bad in [
            "",
            "Cycles",
            "dynamicInstructions",
            "a__b",
            "a_",
            "_a",
            "1a",
            "a-b",
        ] {
            assert!(!is_snake_case(bad), "{bad}");
        }
    }

    #[test]
    fn stats_convention() {
        let mut s = Stats::new();
        assert!(s.check_convention(false).is_err());
        s.set(Stats::DYNAMIC_INSTRUCTIONS, 10u64);
        assert_eq!(s.check_convention(false), Ok(()));
        assert_eq!(
            s.check_convention(true),
            Err("statistic `cycles` is missing".into())
        );
        s.set(Stats::CYCLES, 40u64).set("ipc", 0.25);
        assert_eq!(s.check_convention(true), Ok(()));
        assert_eq!(
            s.to_json(),
            serde_json::json!({"cycles": 40, "dynamic_instructions": 10, "ipc": 0.25})
        );
        s.set("BadKey", 1u64);
        assert!(s.check_convention(true).is_err());
        assert_eq!(s.get("ipc").map(|v| v.to_string()), Some("0.25".into()));
        let text = s.format_text();
        assert!(text.contains("IPC") && text.contains("BadKey"), "{text}");
    }
}
