//! The manifest of ISPC's example programs (`examples.toml`, compiled into spmdc):
//! for each example, how its unchanged host program is built and run, and for each
//! exported function it calls, how long each pointer argument is and how its outputs
//! are compared.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

/// The manifest compiled into spmdc.
pub const BUILTIN: &str = include_str!("examples.toml");

/// The whole manifest.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub example: Vec<Example>,
}

/// One example program.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// The name `--filter` matches, and the directory under `examples/cpu` unless
    /// `dir` says otherwise.
    pub name: String,
    #[serde(default)]
    pub dir: Option<String>,
    /// The ISPC sources; the host includes `STEM_ispc.h` for each.
    pub ispc: Vec<String>,
    /// The host program's C and C++ files, in the example's directory.
    pub host: Vec<String>,
    /// Whether the host also links `examples/common/tasksys.cpp` (it launches tasks).
    #[serde(default)]
    pub tasksys: bool,
    /// The host program's command line; `{src}` is the example's directory, `{build}`
    /// the directory the host runs in, where a [`Scene`] is written.
    #[serde(default)]
    pub args: Vec<String>,
    /// Files the host program reads, relative to the example's directory: a missing
    /// one makes the example "cannot run" (some are not in every checkout).
    #[serde(default)]
    pub data: Vec<String>,
    /// An input the runner writes for the host into the build directory, in place of
    /// one of the checkout's (`{build}/FILE` in `args`, FILE being [`Scene::file`]).
    #[serde(default)]
    pub scene: Option<Scene>,
    /// The exported functions whose calls are captured and replayed.
    pub function: Vec<Function>,
}

/// An input the runner writes for an example's host.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Scene {
    /// `scene.bin`, a scene of `deferred`'s own input format, for the example's data
    /// files a checkout may lack and which are too large to render ([`super::deferred`]).
    Deferred,
    /// `camera.dat`, the checkout's `volume_rendering` camera at a fraction of its
    /// resolution, which the simulators would take too long to render
    /// ([`super::volume`]).
    Volume,
}

impl Scene {
    /// The file's name in the build directory.
    pub fn file(self) -> &'static str {
        match self {
            Scene::Deferred => "scene.bin",
            Scene::Volume => super::volume::CAMERA,
        }
    }
}

/// One exported function to capture.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Function {
    pub name: String,
    /// Each pointer parameter's length in elements (structs for a pointer to structs):
    /// a C expression over the function's parameters, numbers, `+ - * / %`,
    /// parentheses, indexing (`n[0]`), and `alloc(p)`: the elements the heap block at
    /// `p` holds (for inputs whose length the call does not pass).
    #[serde(default)]
    pub lengths: BTreeMap<String, String>,
    /// Outputs may differ from ISPC's by this relative error (default: bit for bit).
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// Integer outputs may differ from ISPC's by this many units: for bytes quantized
    /// from floats, where a last-bit difference before the conversion moves a value
    /// across a step (default: bit for bit).
    #[serde(default)]
    pub units: Option<u32>,
    /// Why the comparison is not exact (required with `tolerance`).
    #[serde(default)]
    pub reason: Option<String>,
    /// A driver in the kernel language (a file of `ispc_examples/drivers/`, compiled
    /// with the example's directory on the include path), whose export `replay` spmdc
    /// runs instead of this function: for a function whose arguments the launcher
    /// cannot pass (structs holding pointers), the driver takes them apart as the host
    /// builds them. Its call is not captured but made from the scene ([`Example::scene`]).
    #[serde(default)]
    pub driver: Option<String>,
    /// The driver's export that replays this function.
    #[serde(default)]
    pub replay: Option<String>,
}

/// How an output is compared with ISPC's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// Bit for bit (NaN matches NaN).
    Exact,
    /// `|a - b| <= tol * max(|a|, |b|)` for floating-point elements; other elements
    /// exactly.
    Relative(f64),
    /// `|a - b| <= n` for integer elements; floating-point elements exactly.
    Units(u32),
}

impl Function {
    pub fn rule(&self) -> Rule {
        match (self.tolerance, self.units) {
            (Some(t), _) => Rule::Relative(t),
            (None, Some(n)) => Rule::Units(n),
            (None, None) => Rule::Exact,
        }
    }
}

impl Example {
    /// The directory under `examples/cpu`.
    pub fn dir(&self) -> &str {
        self.dir.as_deref().unwrap_or(&self.name)
    }

    /// The header the host includes for `ispc` file `file`: `STEM_ispc.h`.
    pub fn header_of(file: &str) -> String {
        let stem = file.strip_suffix(".ispc").unwrap_or(file);
        format!("{stem}_ispc.h")
    }
}

impl Manifest {
    /// Parses and checks a manifest: unique names, a reason with every tolerance,
    /// tolerances in (0, 1), at least one source and function per example.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let m: Manifest = toml::from_str(text).map_err(|e| format!("manifest: {e}"))?;
        let mut names = BTreeSet::new();
        for ex in &m.example {
            let at = |msg: String| format!("manifest: example `{}`: {msg}", ex.name);
            if !names.insert(ex.name.as_str()) {
                return Err(at("listed twice".into()));
            }
            if ex.ispc.is_empty() || ex.host.is_empty() {
                return Err(at("needs at least one `ispc` and one `host` file".into()));
            }
            if ex.function.is_empty() {
                return Err(at("captures no function".into()));
            }
            let mut fnames = BTreeSet::new();
            for f in &ex.function {
                if !fnames.insert(f.name.as_str()) {
                    return Err(at(format!("function `{}` listed twice", f.name)));
                }
                match (f.tolerance, &f.reason) {
                    (Some(t), _) if !(t > 0.0 && t < 1.0) => {
                        return Err(at(format!(
                            "function `{}`: tolerance {t} is not between 0 and 1",
                            f.name
                        )))
                    }
                    (Some(_), None) => {
                        return Err(at(format!(
                            "function `{}`: a tolerance needs a `reason`",
                            f.name
                        )))
                    }
                    _ => {}
                }
                match (f.units, f.tolerance, &f.reason) {
                    (Some(_), Some(_), _) => {
                        return Err(at(format!(
                            "function `{}`: `units` and `tolerance` exclude each other",
                            f.name
                        )))
                    }
                    (Some(_), None, None) => {
                        return Err(at(format!(
                            "function `{}`: `units` needs a `reason`",
                            f.name
                        )))
                    }
                    _ => {}
                }
                if f.driver.is_some() != f.replay.is_some() {
                    return Err(at(format!(
                        "function `{}`: `driver` and `replay` go together",
                        f.name
                    )));
                }
                if let Some(d) = &f.driver {
                    if super::driver_source(d).is_none() {
                        return Err(at(format!("function `{}`: no driver `{d}`", f.name)));
                    }
                    if ex.scene != Some(Scene::Deferred) {
                        return Err(at(format!(
                            "function `{}`: a driver's call is made from `scene = \"deferred\"`",
                            f.name
                        )));
                    }
                }
            }
            if let Some(scene) = ex.scene {
                let arg = format!("{{build}}/{}", scene.file());
                if !ex.args.contains(&arg) {
                    return Err(at(format!("the host is not given its scene, `{arg}`")));
                }
            }
        }
        Ok(m)
    }

    /// The manifest compiled into spmdc.
    pub fn builtin() -> Manifest {
        Manifest::parse(BUILTIN).expect("the built-in manifest is checked by its tests")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_manifest_parses_and_lists_the_thirteen_examples() {
        let m = Manifest::builtin();
        let names: Vec<&str> = m.example.iter().map(|e| e.name.as_str()).collect();
        for want in [
            "simple",
            "mandelbrot",
            "mandelbrot_tasks",
            "noise",
            "stencil",
            "options",
            "sgemm",
            "gmres",
            "perfbench",
            "aobench",
            "rt",
            "deferred",
            "volume_rendering",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
    }

    #[test]
    fn parses_an_example_with_lengths_and_a_tolerance() {
        let m = Manifest::parse(
            r#"
[[example]]
name = "ex"
dir = "some/dir"
ispc = ["k.ispc"]
host = ["main.cpp"]
tasksys = true
args = ["{src}/data.bin", "1"]
data = ["data.bin"]
[[example.function]]
name = "f"
lengths = { out = "w*h" }
tolerance = 1e-5
reason = "uses exp"
"#,
        )
        .unwrap();
        let ex = &m.example[0];
        assert_eq!(ex.dir(), "some/dir");
        assert!(ex.tasksys);
        assert_eq!(ex.args, ["{src}/data.bin", "1"]);
        assert_eq!(ex.function[0].lengths["out"], "w*h");
        assert_eq!(ex.function[0].rule(), Rule::Relative(1e-5));
        assert_eq!(Example::header_of("k.ispc"), "k_ispc.h");
    }

    #[test]
    fn refuses_a_tolerance_without_a_reason_and_unknown_keys() {
        let base = "[[example]]\nname = \"ex\"\nispc = [\"k.ispc\"]\nhost = [\"m.cpp\"]\n";
        let e = Manifest::parse(&format!(
            "{base}[[example.function]]\nname = \"f\"\ntolerance = 1e-5\n"
        ))
        .unwrap_err();
        assert!(e.contains("needs a `reason`"), "{e}");
        let e = Manifest::parse(&format!(
            "{base}[[example.function]]\nname = \"f\"\ntolerence = 1e-5\n"
        ))
        .unwrap_err();
        assert!(e.contains("tolerence"), "{e}");
        let e = Manifest::parse(base).unwrap_err();
        assert!(e.contains("function"), "{e}");
    }

    #[test]
    fn a_scene_is_named_given_to_the_host_and_the_one_a_driver_needs() {
        let example = |scene: &str, arg: &str, function: &str| {
            format!(
                "[[example]]\nname = \"ex\"\nispc = [\"k.ispc\"]\nhost = [\"m.cpp\"]\n\
                 scene = \"{scene}\"\nargs = [\"{arg}\", \"1\"]\n[[example.function]]\n{function}\n"
            )
        };
        let m = Manifest::parse(&example("volume", "{build}/camera.dat", "name = \"f\"")).unwrap();
        assert_eq!(m.example[0].scene, Some(Scene::Volume));
        let e =
            Manifest::parse(&example("volume", "{src}/camera.dat", "name = \"f\"")).unwrap_err();
        assert!(
            e.contains("not given its scene, `{build}/camera.dat`"),
            "{e}"
        );
        let e = Manifest::parse(&example("teapot", "{build}/x", "name = \"f\"")).unwrap_err();
        assert!(e.contains("unknown variant `teapot`"), "{e}");
        let driven = "name = \"f\"\ndriver = \"deferred.ispc\"\nreplay = \"g\"";
        let e = Manifest::parse(&example("volume", "{build}/camera.dat", driven)).unwrap_err();
        assert!(
            e.contains("a driver's call is made from `scene = \"deferred\"`"),
            "{e}"
        );
        Manifest::parse(&example("deferred", "{build}/scene.bin", driven)).unwrap();
        let builtin = Manifest::builtin();
        let volume = builtin
            .example
            .iter()
            .find(|e| e.name == "volume_rendering");
        assert_eq!(volume.and_then(|e| e.scene), Some(Scene::Volume));
    }
}
