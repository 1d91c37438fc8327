//! Replaying a captured call on spmdc: the arguments ISPC's export received, read from
//! the capture directory, passed to the same function compiled by spmdc for a target,
//! and every output compared with what ISPC's function left.

use std::path::{Path, PathBuf};

use crate::driver::{self, FrontResult, RunError, RunRequest};
use crate::front::sema;
use crate::launch::elem::format_float;
use crate::launch::{self, ElemType, KernelSignature, ParamKind, Value};
use crate::profile::run::Machine;

use super::compare::{compare, Comparison};
use super::manifest::Rule;

/// Where a call is replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The interpreter, at this gang width.
    Interp(u32),
    Nyuzi,
    DacGpu,
}

impl Target {
    /// The gang width, which the ISPC build compared with must share.
    pub fn width(self) -> u32 {
        match self {
            Target::Interp(w) => w,
            Target::Nyuzi => crate::back::nyuzi::TARGET.program_count,
            Target::DacGpu => crate::back::dac_gpu::TARGET.program_count,
        }
    }

    /// `interp x16`, `nyuzi`, `dac-gpu`.
    pub fn label(self) -> String {
        match self {
            Target::Interp(w) => format!("interp x{w}"),
            Target::Nyuzi => "nyuzi".into(),
            Target::DacGpu => "dac-gpu".into(),
        }
    }

    fn sema_target(self) -> sema::Target {
        match self {
            Target::Interp(w) => sema::Target {
                program_count: w,
                ..driver::FrontOptions::default().target
            },
            Target::Nyuzi => crate::back::nyuzi::TARGET,
            Target::DacGpu => crate::back::dac_gpu::TARGET,
        }
    }
}

/// Compiles `file` for `target`; the error is the first compile error.
pub fn compile(file: &Path, target: Target) -> Result<FrontResult, String> {
    compile_with(file, target, &[])
}

/// [`compile`] with `include_dirs` on the `#include` path.
pub fn compile_with(
    file: &Path,
    target: Target,
    include_dirs: &[PathBuf],
) -> Result<FrontResult, String> {
    let (name, path, text) = driver::read_input(&file.to_string_lossy()).map_err(|d| d.message)?;
    let options = driver::FrontOptions {
        target: target.sema_target(),
        include_dirs: include_dirs.to_vec(),
        ..driver::FrontOptions::default()
    };
    let front = driver::run_front(&name, path, text, &options, driver::Stage::Check);
    if let Some(d) = front.diags.iter().find(|d| d.is_error()) {
        return Err(format!(
            "spmdc does not compile {}: {}",
            file.display(),
            d.message
        ));
    }
    Ok(front)
}

/// The launcher's signature of export `name` in `front`.
pub fn signature(front: &FrontResult, name: &str) -> Result<KernelSignature, String> {
    let checked = front
        .checked
        .as_ref()
        .ok_or("the program was not checked")?;
    let func = launch::find_entry(checked, &front.interner, name).map_err(|e| e.to_string())?;
    launch::signature_of(checked, func, &front.interner).map_err(|e| e.to_string())
}

/// The file of one captured argument or output.
pub fn capture_file(dir: &Path, function: &str, part: &str, name: &str) -> PathBuf {
    dir.join(format!("{function}.{part}.{name}.bin"))
}

/// Whether the capture of `function` in `dir` is complete (the host called it and the
/// wrapper wrote everything).
pub fn captured(dir: &Path, function: &str) -> bool {
    dir.join(format!("{function}.done")).is_file()
}

/// The `--arg` literal of a scalar, parsing back to the same bits.
fn literal(v: Value) -> String {
    match v {
        // Through `f64`, whose digits give the `float` exactly (the launcher reads
        // float literals as `f64` and rounds).
        Value::F32(x) => format_float(f64::from(x)),
        other => other.to_string(),
    }
}

/// The `--arg NAME=SPEC` list of a captured call.
pub fn captured_args(dir: &Path, sig: &KernelSignature) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    for p in &sig.params {
        let file = capture_file(dir, &sig.name, "in", &p.name);
        match p.kind {
            ParamKind::Scalar(t) => {
                let bytes = std::fs::read(&file)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
                let v = Value::from_le_bytes(t, &bytes)
                    .filter(|_| bytes.len() == t.size())
                    .ok_or_else(|| {
                        format!(
                            "{} holds {} bytes, not one {t}",
                            file.display(),
                            bytes.len()
                        )
                    })?;
                args.push(format!("{}={}", p.name, literal(v)));
            }
            ParamKind::Buffer { .. } | ParamKind::Records { .. } => {
                if !file.is_file() {
                    return Err(format!("{} is missing", file.display()));
                }
                args.push(format!("{}=@{}", p.name, file.display()));
            }
        }
    }
    Ok(args)
}

/// Limits of one replay.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Interpreter and nyuzi steps, dac-gpu warp instructions.
    pub max_steps: u64,
}

fn run_error(e: RunError) -> String {
    match e {
        RunError::Compile(d) => d
            .first()
            .map_or("does not compile".into(), |d| d.message.clone()),
        RunError::Launch(errs) => errs
            .first()
            .map_or("launch refused".into(), |e| e.to_string()),
        RunError::Trap(t) => format!("trapped: {t}"),
    }
}

/// Runs `sig`'s function of `front` (compiled for `target`) on the call captured in
/// `dir`, and compares each output with ISPC's: every buffer the function may change,
/// then the returned value (`return`).
pub fn replay(
    front: &FrontResult,
    sig: &KernelSignature,
    dir: &Path,
    target: Target,
    rule: Rule,
    limits: Limits,
) -> Result<Vec<(String, Comparison)>, String> {
    let args = captured_args(dir, sig)?;
    let req = RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry: &sig.name,
        args: &args,
        grid: None,
        block: None,
        dynamic_shared: None,
        limits: crate::interp::Limits {
            max_steps: limits.max_steps,
            ..Default::default()
        },
    };
    let machine = match target {
        Target::Interp(_) => Machine::Interp,
        Target::Nyuzi => Machine::Nyuzi(crate::back::nyuzi::run::NyuziRunOptions {
            image: crate::back::nyuzi::image::ImageOptions {
                gang_stack: NYUZI_GANG_STACK,
                ..Default::default()
            },
            ..Default::default()
        }),
        Target::DacGpu => Machine::DacGpu(Box::new(crate::back::dac_gpu::DacRunOptions {
            max_warp_insts: limits.max_steps,
            ..Default::default()
        })),
    };
    let result = machine.run_plain(front, &req).map_err(run_error)?;
    let mut out = Vec::new();
    for p in sig.buffer_params().filter(|p| !p.kind.read_only()) {
        let theirs_file = capture_file(dir, &sig.name, "out", &p.name);
        let theirs = std::fs::read(&theirs_file)
            .map_err(|e| format!("cannot read {}: {e}", theirs_file.display()))?;
        let ours = result
            .buffers
            .iter()
            .find(|(n, _)| *n == p.name)
            .map(|(_, b)| b.bytes())
            .ok_or_else(|| format!("the run left no buffer `{}`", p.name))?;
        let elem = match p.kind {
            ParamKind::Buffer { elem, .. } => elem,
            _ => ElemType::U8,
        };
        out.push((p.name.clone(), compare(elem, ours, &theirs, rule)));
    }
    if let Some(t) = sig.ret {
        let theirs_file = capture_file(dir, &sig.name, "out", "return");
        let theirs = std::fs::read(&theirs_file)
            .map_err(|e| format!("cannot read {}: {e}", theirs_file.display()))?;
        let mut ours = Vec::new();
        if let Some(v) = result.ret {
            v.write_le(&mut ours);
        }
        out.push(("return".into(), compare(t, &ours, &theirs, rule)));
    }
    Ok(out)
}

/// Stack bytes per gang on nyuzi: ISPC's host threads have megabytes, and the
/// examples keep arrays in varying locals (options' binomial tree).
const NYUZI_GANG_STACK: u32 = 256 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ispc_examples::compare::Verdict;

    const KERNEL: &str = "\
export uniform float axpy(uniform float a, uniform int n, const uniform float x[],
                          uniform float y[]) {
    foreach (i = 0 ... n) { y[i] = a * x[i] + y[i]; }
    return y[n - 1];
}
";

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// A capture made by hand, as the wrapper writes one: `a = 0.1`, `n = 5`, `x`, `y`,
    /// and ISPC's outputs `y` and `return` as given.
    fn capture(dir: &Path, y_out: &[f32], ret: f32) {
        std::fs::create_dir_all(dir).unwrap();
        let w = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
        w("axpy.in.a.bin", &0.1f32.to_le_bytes());
        w("axpy.in.n.bin", &5i32.to_le_bytes());
        w("axpy.in.x.bin", &f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0]));
        w("axpy.in.y.bin", &f32_bytes(&[10.0, 20.0, 30.0, 40.0, 50.0]));
        w("axpy.out.y.bin", &f32_bytes(y_out));
        w("axpy.out.return.bin", &ret.to_le_bytes());
        w("axpy.done", b"");
    }

    fn expected() -> Vec<f32> {
        let x = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let y = [10.0f32, 20.0, 30.0, 40.0, 50.0];
        x.iter().zip(&y).map(|(x, y)| 0.1f32 * x + y).collect()
    }

    #[test]
    fn replays_a_capture_and_compares_every_output() {
        let dir = std::env::temp_dir().join(format!("spmdc-replay-test-{}", std::process::id()));
        let cap = dir.join("capture");
        let src = dir.join("axpy.ispc");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&src, KERNEL).unwrap();
        let front = compile(&src, Target::Interp(16)).unwrap();
        let sig = signature(&front, "axpy").unwrap();
        let limits = Limits {
            max_steps: 1_000_000,
        };

        // ISPC's outputs as an exact computation gives them: bit for bit.
        let want = expected();
        capture(&cap, &want, want[4]);
        assert!(captured(&cap, "axpy"));
        assert_eq!(
            captured_args(&cap, &sig).unwrap()[..2],
            ["a=0.10000000149011612".to_string(), "n=5".to_string()]
        );
        let outs = replay(&front, &sig, &cap, Target::Interp(16), Rule::Exact, limits).unwrap();
        let names: Vec<&str> = outs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["y", "return"]);
        assert!(outs.iter().all(|(_, c)| c.verdict == Verdict::Exact));
        assert_eq!(outs[0].1.elements, 5);

        // One element of ISPC's `y` one ulp away: differs exactly, passes 1e-5.
        let mut off = want.clone();
        off[2] = f32::from_bits(off[2].to_bits() + 1);
        capture(&cap, &off, want[4]);
        let outs = replay(&front, &sig, &cap, Target::Interp(16), Rule::Exact, limits).unwrap();
        assert_eq!(outs[0].1.verdict, Verdict::Differs);
        assert_eq!(outs[0].1.first_bad.as_ref().map(|f| f.0), Some(2));
        assert_eq!(outs[1].1.verdict, Verdict::Exact);
        let outs = replay(
            &front,
            &sig,
            &cap,
            Target::Interp(16),
            Rule::Relative(1e-5),
            limits,
        )
        .unwrap();
        assert_eq!(outs[0].1.verdict, Verdict::WithinTolerance);
        assert_eq!(outs[0].1.differing, 1);

        // A missing argument is an error naming the file; an unfinished capture is
        // not taken for a call.
        std::fs::remove_file(cap.join("axpy.in.x.bin")).unwrap();
        let e = replay(&front, &sig, &cap, Target::Interp(16), Rule::Exact, limits).unwrap_err();
        assert!(e.contains("axpy.in.x.bin is missing"), "{e}");
        std::fs::remove_file(cap.join("axpy.done")).unwrap();
        assert!(!captured(&cap, "axpy"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn float_scalars_pass_with_their_exact_bits() {
        for x in [0.1f32, -3.5e-30, 1.0e30, f32::MIN_POSITIVE, -0.0] {
            let lit = literal(Value::F32(x));
            let parsed = crate::launch::spec::parse_literal(&lit).unwrap();
            let back = Value::from_literal(ElemType::F32, &parsed).unwrap();
            assert_eq!(back.to_bits(), Value::F32(x).to_bits(), "{x} as {lit}");
        }
    }
}
