//! A coarser camera for ISPC's `volume_rendering` example, whose host renders the
//! image size its `camera.dat` gives (896 x 1184) and has no option to change it: at
//! that size the replay takes the simulators longer than a session.
//!
//! The camera file (`loadCamera` in the example's `volume.cpp`, read with `fscanf`) is
//! text: the width and height as integers, then the 4x4 `raster2camera` matrix and the
//! 4x4 `camera2world` matrix, row by row. The kernel maps pixel `(x, y)` to camera space
//! by `raster2camera[i][0] * x + raster2camera[i][1] * y + raster2camera[i][3]`; dividing
//! the width and height by a factor and multiplying the matrix's `x` and `y` columns by
//! it renders the same view with fewer, larger pixels. With a power of two for the
//! factor the scaled columns are exact, and so each coarse pixel `(x, y)` is exactly the
//! fine pixel `(factor x, factor y)` of the original view.

use std::path::Path;

/// The factor the runner divides the image's width and height by: 896 x 1184 becomes
/// 224 x 296, a sixteenth of the pixels, which each simulator replays in minutes.
pub const FACTOR: u32 = 4;

/// The name of the camera file the runner writes into the build directory.
pub const CAMERA: &str = "camera.dat";

/// The kernel renders 4 x 4 blocks of pixels (`volume_tile`), writing past the image
/// unless its width and height are multiples of this.
const BLOCK: u32 = 4;

/// A camera file's contents.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
    pub width: u32,
    pub height: u32,
    pub raster2camera: [[f32; 4]; 4],
    pub camera2world: [[f32; 4]; 4],
}

impl Camera {
    /// Reads a camera file's text as the host does: whitespace-separated numbers, the
    /// floats rounded to `f32` as `fscanf("%f")` rounds them. Anything after the 34
    /// numbers is refused, a sign the format is not the one expected.
    pub fn parse(text: &str) -> Result<Camera, String> {
        let mut words = text.split_whitespace();
        let mut size = |what: &str| -> Result<u32, String> {
            let w = words
                .next()
                .ok_or_else(|| format!("the camera file ends before its {what}"))?;
            match w.parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!(
                    "the camera's {what} `{w}` is not a positive integer"
                )),
            }
        };
        let (width, height) = (size("width")?, size("height")?);
        let mut matrix = |what: &str| -> Result<[[f32; 4]; 4], String> {
            let mut m = [[0.0; 4]; 4];
            for (i, row) in m.iter_mut().enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    let w = words
                        .next()
                        .ok_or_else(|| format!("the camera file ends before {what}[{i}][{j}]"))?;
                    *v = w.parse().map_err(|_| {
                        format!("the camera's {what}[{i}][{j}] `{w}` is not a number")
                    })?;
                }
            }
            Ok(m)
        };
        let raster2camera = matrix("raster2camera")?;
        let camera2world = matrix("camera2world")?;
        if let Some(w) = words.next() {
            return Err(format!(
                "the camera file goes on after its two matrices (`{w}`)"
            ));
        }
        Ok(Camera {
            width,
            height,
            raster2camera,
            camera2world,
        })
    }

    /// The same view at `1 / factor` of the width and height: the factor must divide
    /// both, leaving multiples of the kernel's 4-pixel blocks.
    pub fn scaled(&self, factor: u32) -> Result<Camera, String> {
        let (w, h) = (self.width, self.height);
        if factor == 0 || w % factor != 0 || h % factor != 0 {
            return Err(format!("{w} x {h} cannot be divided by {factor}"));
        }
        let (width, height) = (w / factor, h / factor);
        if width % BLOCK != 0 || height % BLOCK != 0 {
            return Err(format!(
                "{w} x {h} divided by {factor} is {width} x {height}, not in whole {BLOCK} x {BLOCK} blocks"
            ));
        }
        let mut raster2camera = self.raster2camera;
        for row in &mut raster2camera {
            row[0] *= factor as f32;
            row[1] *= factor as f32;
        }
        Ok(Camera {
            width,
            height,
            raster2camera,
            camera2world: self.camera2world,
        })
    }

    /// The camera file's text, each float in the fewest digits that read back as the
    /// same `f32`.
    pub fn text(&self) -> String {
        let mut s = format!("{} {}\n", self.width, self.height);
        for m in [&self.raster2camera, &self.camera2world] {
            s.push('\n');
            for row in m {
                let row: Vec<String> = row.iter().map(|v| format!("{v:e}")).collect();
                s.push_str(&row.join(" "));
                s.push('\n');
            }
        }
        s
    }
}

/// Writes to `to` the camera of file `from` scaled down by `factor`.
pub fn write_scaled_camera(from: &Path, to: &Path, factor: u32) -> Result<(), String> {
    let text = std::fs::read_to_string(from)
        .map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    let camera = Camera::parse(&text)
        .and_then(|c| c.scaled(factor))
        .map_err(|e| format!("{}: {e}", from.display()))?;
    std::fs::write(to, camera.text()).map_err(|e| format!("cannot write {}: {e}", to.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checkout's `camera.dat` of ISPC v1.30.
    const CAMERA_DAT: &str = "896 1184

0.000155 0.000000 0.000000 -0.069927
0.000000 -0.000155 0.000000 0.093236
0.000000 0.000000 0.000000 1.000000
0.000000 0.000000 -99.999001 100.000000

1.000000 0.000000 0.000000 1.000000
0.000000 0.980129 -0.198360 2.900000
0.000000 0.198360 0.980129 -10.500000
0.000000 0.000000 0.000000 1.000000
";

    #[test]
    fn parses_a_camera_file_as_fscanf_does() {
        let c = Camera::parse(CAMERA_DAT).unwrap();
        assert_eq!((c.width, c.height), (896, 1184));
        assert_eq!(c.raster2camera[0][0], 0.000155f32);
        assert_eq!(c.raster2camera[1][1], -0.000155f32);
        // -99.999001 rounds to the float nearest -99.999.
        assert_eq!(c.raster2camera[3][2], -99.999f32);
        assert_eq!(c.camera2world[2][3], -10.5);
    }

    #[test]
    fn scaling_divides_the_size_and_multiplies_the_x_and_y_columns() {
        let c = Camera::parse(CAMERA_DAT).unwrap();
        let s = c.scaled(4).unwrap();
        assert_eq!((s.width, s.height), (224, 296));
        for i in 0..4 {
            assert_eq!(s.raster2camera[i][0], 4.0 * c.raster2camera[i][0]);
            assert_eq!(s.raster2camera[i][1], 4.0 * c.raster2camera[i][1]);
            assert_eq!(s.raster2camera[i][2..], c.raster2camera[i][2..]);
        }
        assert_eq!(s.camera2world, c.camera2world);
        // A coarse pixel's camera coordinate is the fine pixel's at 4 times its position,
        // to the bit.
        let cam = |m: &[[f32; 4]; 4], x: f32, y: f32| m[0][0] * x + m[0][1] * y + m[0][3];
        for (x, y) in [(0.0, 0.0), (17.0, 5.0), (223.0, 295.0)] {
            assert_eq!(
                cam(&s.raster2camera, x, y).to_bits(),
                cam(&c.raster2camera, 4.0 * x, 4.0 * y).to_bits()
            );
        }
        assert_eq!(s.scaled(1).unwrap(), s);
    }

    #[test]
    fn the_text_reads_back_to_the_same_floats() {
        let s = Camera::parse(CAMERA_DAT).unwrap().scaled(4).unwrap();
        let text = s.text();
        assert!(
            text.starts_with("224 296\n\n6.2e-4 0e0 0e0 -6.9927e-2\n"),
            "{text}"
        );
        let back = Camera::parse(&text).unwrap();
        let bits = |c: &Camera| {
            c.raster2camera
                .iter()
                .chain(&c.camera2world)
                .flatten()
                .map(|v| v.to_bits())
                .collect::<Vec<u32>>()
        };
        assert_eq!(bits(&back), bits(&s));
        assert_eq!((back.width, back.height), (224, 296));
    }

    #[test]
    fn bad_files_and_factors_are_errors() {
        let err = |text: &str| Camera::parse(text).unwrap_err();
        assert!(err("").contains("ends before its width"));
        assert!(err("896").contains("ends before its height"));
        assert!(err("-896 1184").contains("width `-896` is not a positive integer"));
        assert!(err("896 0").contains("height `0` is not a positive integer"));
        assert!(err("896.5 1184").contains("not a positive integer"));
        let e = err("896 1184 1 2 3");
        assert!(e.contains("ends before raster2camera[0][3]"), "{e}");
        let e = err(&CAMERA_DAT.replace("-10.500000", "x"));
        assert!(e.contains("camera2world[2][3] `x` is not a number"), "{e}");
        let e = err(&format!("{CAMERA_DAT} 7"));
        assert!(e.contains("goes on after its two matrices (`7`)"), "{e}");
        let c = Camera::parse(CAMERA_DAT).unwrap();
        assert!(c.scaled(0).is_err());
        let e = c.scaled(3).unwrap_err();
        assert!(e.contains("896 x 1184 cannot be divided by 3"), "{e}");
        let e = c.scaled(16).unwrap_err();
        assert!(e.contains("is 56 x 74, not in whole 4 x 4 blocks"), "{e}");
    }

    #[test]
    fn writes_the_scaled_camera_and_names_a_missing_file() {
        let dir = std::env::temp_dir().join(format!("spmdc-volume-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("in.dat"), CAMERA_DAT).unwrap();
        write_scaled_camera(&dir.join("in.dat"), &dir.join("out.dat"), 2).unwrap();
        let out = Camera::parse(&std::fs::read_to_string(dir.join("out.dat")).unwrap()).unwrap();
        assert_eq!((out.width, out.height), (448, 592));
        let e = write_scaled_camera(&dir.join("none.dat"), &dir.join("out.dat"), 2).unwrap_err();
        assert!(e.contains("cannot read") && e.contains("none.dat"), "{e}");
        std::fs::write(dir.join("bad.dat"), "896 1184 oops").unwrap();
        let e = write_scaled_camera(&dir.join("bad.dat"), &dir.join("out.dat"), 2).unwrap_err();
        assert!(e.contains("bad.dat: ") && e.contains("`oops`"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
