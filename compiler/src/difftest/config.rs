//! The configurations a program runs under: a target and its switches, written as
//! the options of `spmdc run` (`nyuzi --no-uniformity --timing`), so that a failure's
//! configuration is the command that reproduces it.
//!
//! Each configuration is compared with its reference: the interpreter, optimized,
//! at the configuration's gang width (16 for nyuzi, 32 for dac-gpu, the interpreter's
//! own `--program-count` otherwise). Cross-lane operations see the gang, so a
//! program's results depend on the width; at equal width they must be equal.

use crate::gen::rng::Rng;
use crate::passes::{ShuffleMode, Switches};

/// Where a configuration runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The reference interpreter with this gang width.
    Interp {
        program_count: u32,
    },
    Nyuzi,
    DacGpu,
}

/// One way of compiling and running a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub target: Target,
    /// Run the optimization passes (`--no-opt` clears it).
    pub optimize: bool,
    pub switches: Switches,
    /// `--timing`: the cycle model (nyuzi, dac-gpu).
    pub timing: bool,
    /// nyuzi: `--cores` and `--threads`.
    pub cores: u32,
    pub threads: u32,
    /// dac-gpu: `--no-dac`.
    pub no_dac: bool,
    /// dac-gpu: `--max-regs`.
    pub max_regs: Option<u32>,
    /// dac-gpu: `--regalloc` (`local`, `shared`, `mixed` or `auto`).
    pub regalloc: &'static str,
    /// dac-gpu timing: `--sched lrr` instead of `gto`.
    pub lrr: bool,
    /// dac-gpu: `--config maxwell` instead of `gtx480`.
    pub maxwell: bool,
}

impl Config {
    /// The target's defaults.
    pub fn new(target: Target) -> Config {
        Config {
            target,
            optimize: true,
            switches: Switches::default(),
            timing: false,
            cores: 1,
            threads: 4,
            no_dac: false,
            max_regs: None,
            regalloc: "local",
            lrr: false,
            maxwell: false,
        }
    }

    /// The gang width the program is checked and run with.
    pub fn program_count(&self) -> u32 {
        match self.target {
            Target::Interp { program_count } => program_count,
            Target::Nyuzi => crate::back::nyuzi::TARGET.program_count,
            Target::DacGpu => crate::back::dac_gpu::TARGET.program_count,
        }
    }

    /// The reference this configuration is compared with.
    pub fn reference(&self) -> Config {
        Config::new(Target::Interp {
            program_count: self.program_count(),
        })
    }

    pub fn is_reference(&self) -> bool {
        *self == self.reference()
    }

    /// The configuration as `spmdc run` options.
    pub fn spelled(&self) -> String {
        let mut words: Vec<String> = Vec::new();
        match self.target {
            Target::Interp { program_count } => {
                words.push("interp".into());
                if program_count != 16 {
                    words.push(format!("--program-count {program_count}"));
                }
            }
            Target::Nyuzi => words.push("nyuzi".into()),
            Target::DacGpu => words.push("dac-gpu".into()),
        }
        let flags = [
            (!self.optimize, "--no-opt"),
            (self.switches.no_uniformity, "--no-uniformity"),
            (self.switches.no_skip_empty, "--no-skip-empty"),
            (self.switches.force_cfg_opts, "--force-cfg-opts"),
            (self.switches.no_inline, "--no-inline"),
            (self.switches.no_scalar_datapath, "--no-scalar-datapath"),
            (self.switches.unroll, "--unroll"),
            (self.timing, "--timing"),
            (self.no_dac, "--no-dac"),
            (self.lrr, "--sched lrr"),
            (self.maxwell, "--config maxwell"),
        ];
        words.extend(
            flags
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, f)| f.to_string()),
        );
        if self.switches.shuffle.is_on() {
            words.push(format!("--shuffle {}", self.switches.shuffle.name()));
        }
        if self.cores != 1 || self.threads != 4 {
            words.push(format!("--cores {} --threads {}", self.cores, self.threads));
        }
        if let Some(r) = self.max_regs {
            words.push(format!("--max-regs {r}"));
        }
        if self.regalloc != "local" {
            words.push(format!("--regalloc {}", self.regalloc));
        }
        words.join(" ")
    }

    /// Reads what [`Config::spelled`] writes: a target name, then `spmdc run` options.
    pub fn parse(text: &str) -> Result<Config, String> {
        let mut words = text.split_whitespace();
        let target = match words.next() {
            Some("interp") => Target::Interp { program_count: 16 },
            Some("nyuzi") => Target::Nyuzi,
            Some("dac-gpu") => Target::DacGpu,
            other => {
                return Err(format!(
                    "a configuration starts with `interp`, `nyuzi` or `dac-gpu`, not `{}`",
                    other.unwrap_or_default()
                ))
            }
        };
        let mut c = Config::new(target);
        while let Some(w) = words.next() {
            let mut value = |what: &str| {
                words
                    .next()
                    .ok_or_else(|| format!("`{w}` needs {what}"))
                    .map(str::to_string)
            };
            let number = |v: String| {
                v.parse::<u32>()
                    .map_err(|_| format!("`{w} {v}`: not a count"))
            };
            match w {
                "--no-opt" => c.optimize = false,
                "--no-uniformity" => c.switches.no_uniformity = true,
                "--no-skip-empty" => c.switches.no_skip_empty = true,
                "--force-cfg-opts" => c.switches.force_cfg_opts = true,
                "--no-inline" => c.switches.no_inline = true,
                "--unroll" => c.switches.unroll = true,
                "--no-scalar-datapath" => {
                    c.switches.no_scalar_datapath = true;
                    c.switches.no_uniformity = true;
                }
                "--timing" => c.timing = true,
                "--no-dac" => c.no_dac = true,
                "--shuffle" => {
                    c.switches.shuffle = match value("`off`, `all` or `auto`")?.as_str() {
                        "off" => ShuffleMode::Off,
                        "all" => ShuffleMode::All,
                        "auto" => ShuffleMode::Auto,
                        // The ablations give wrong results by design.
                        other => return Err(format!("`--shuffle {other}`: not a checked mode")),
                    }
                }
                "--sched" => c.lrr = value("`gto` or `lrr`")? == "lrr",
                "--config" => c.maxwell = value("`gtx480` or `maxwell`")? == "maxwell",
                "--cores" => c.cores = number(value("a count")?)?,
                "--threads" => c.threads = number(value("a count")?)?,
                "--max-regs" => c.max_regs = Some(number(value("a count")?)?),
                "--program-count" => {
                    let n = number(value("a count")?)?;
                    if !(1..=64).contains(&n) {
                        return Err("`--program-count` is 1 to 64".into());
                    }
                    c.target = Target::Interp { program_count: n };
                }
                "--regalloc" => {
                    c.regalloc = match value("a placement")?.as_str() {
                        "local" => "local",
                        "shared" => "shared",
                        "mixed" => "mixed",
                        "auto" => "auto",
                        other => return Err(format!("`--regalloc {other}`: not a placement")),
                    }
                }
                other => return Err(format!("unknown option `{other}` in a configuration")),
            }
        }
        if c.switches.no_scalar_datapath {
            c.switches.no_uniformity = true;
        }
        Ok(c)
    }
}

/// The configurations every program runs under: the two references and each
/// machine target with its defaults.
pub fn base_configs() -> Vec<Config> {
    vec![
        Config::new(Target::Interp { program_count: 16 }),
        Config::new(Target::Interp { program_count: 32 }),
        Config::new(Target::Nyuzi),
        Config::new(Target::DacGpu),
    ]
}

/// A random variant: a target with one to three of its switches changed.
pub fn random_variant(rng: &mut Rng) -> Config {
    let target = match rng.below(8) {
        0 => Target::Interp {
            program_count: *rng.pick(&[16, 32]),
        },
        1..=3 => Target::Nyuzi,
        _ => Target::DacGpu,
    };
    let mut c = Config::new(target);
    for _ in 0..rng.range(1, 3) {
        apply_random_switch(rng, &mut c);
    }
    c
}

fn apply_random_switch(rng: &mut Rng, c: &mut Config) {
    let common = 7;
    let extra = match c.target {
        Target::Interp { .. } => 0,
        Target::Nyuzi => 4,
        Target::DacGpu => 8,
    };
    match rng.below(common + extra) {
        0 => c.optimize = false,
        1 => c.switches.no_uniformity = true,
        2 => c.switches.no_skip_empty = true,
        3 => c.switches.force_cfg_opts = true,
        4 => c.switches.no_inline = true,
        5 => {
            c.switches.no_scalar_datapath = true;
            c.switches.no_uniformity = true;
        }
        6 => c.switches.unroll = true,
        7 => c.timing = true,
        8 if c.target == Target::Nyuzi => {
            c.cores = rng.range(1, 2) as u32;
            c.threads = rng.range(1, 4) as u32;
        }
        8 => c.no_dac = true,
        9 if c.target == Target::Nyuzi => c.timing = true,
        9 => {
            // Halo vectors are built without DAC only; both are checked.
            c.no_dac = rng.chance(50);
            c.switches.shuffle = *rng.pick(&[ShuffleMode::All, ShuffleMode::Auto]);
        }
        10 if c.target == Target::Nyuzi => {
            c.switches.shuffle = *rng.pick(&[ShuffleMode::All, ShuffleMode::Auto]);
        }
        10 => c.max_regs = Some(*rng.pick(&[16, 20, 24, 32])),
        11 => {
            c.max_regs = Some(*rng.pick(&[16, 24]));
            c.regalloc = *rng.pick(&["shared", "mixed"]);
        }
        12 => c.regalloc = "auto",
        13 => {
            c.timing = true;
            c.lrr = rng.chance(50);
            c.maxwell = rng.chance(50);
        }
        _ => c.timing = true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelled_configurations_read_back() {
        let mut rng = Rng::new(3);
        for _ in 0..200 {
            let c = random_variant(&mut rng);
            assert_eq!(
                Config::parse(&c.spelled()),
                Ok(c.clone()),
                "{}",
                c.spelled()
            );
        }
    }

    #[test]
    fn only_the_checked_shuffle_modes_are_configurations() {
        let c = Config::parse("nyuzi --shuffle auto").expect("a configuration");
        assert_eq!(c.switches.shuffle, ShuffleMode::Auto);
        assert_eq!(c.spelled(), "nyuzi --shuffle auto");
        assert!(Config::parse("dac-gpu --shuffle noload").is_err());
        assert!(Config::parse("dac-gpu --shuffle nocorner").is_err());
    }

    #[test]
    fn references_match_the_gang_width() {
        assert_eq!(Config::new(Target::DacGpu).reference().program_count(), 32);
        assert_eq!(Config::new(Target::Nyuzi).reference().program_count(), 16);
    }
}
